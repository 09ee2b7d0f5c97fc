"""Salus (Yu & Chowdhury, MLSys 2020): many DL jobs sharing one device.

Modules:

- :mod:`~impls.salus.workloads`  the job registry (training + inference variants)
- :mod:`~impls.salus.devices`    device abstraction: timers, streams, memory, OOM (CPU/CUDA)
- :mod:`~impls.salus.policies`   FIFO / SRTF / PACK / FAIR choices at iteration boundaries
- :mod:`~impls.salus.executor`   one process, every admitted job resident, one iteration at a time
- :mod:`~impls.salus.switching`  switching latency vs checkpoint/restore (+ CLI)
- :mod:`~impls.salus.traces`     Poisson job traces over the workload mix
- :mod:`~impls.salus.simulator`  discrete-event simulator of the executor
- :mod:`~impls.salus.experiments` the experiment functions asv and the report wrap
- :mod:`~impls.salus.restart_child` the fresh process of the "process restart" baseline
- :mod:`~impls.salus.gpu_check`  the prepared CUDA check for a session lent a GPU
"""
