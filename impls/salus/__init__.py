"""Salus (Yu & Chowdhury, MLSys 2020): many DL jobs sharing one device.

Main modules (every module, each with its one idea, is in impls/salus/README.md's module
map, which tests/test_module_maps.py keeps whole; this list is not):

- :mod:`~impls.salus.core.workloads`  the job registry (training + inference variants)
- :mod:`~impls.salus.core.devices`    device abstraction: timers, streams, memory, OOM (CPU/CUDA)
- :mod:`~impls.salus.core.policies`   FIFO / SRTF / PACK / FAIR choices at iteration boundaries
- :mod:`~impls.salus.core.executor`   one process, every admitted job resident, one iteration at a time
- :mod:`~impls.salus.core.switching`  switching latency vs checkpoint/restore (+ CLI)
- :mod:`~impls.salus.core.traces`     Poisson job traces over the workload mix
- :mod:`~impls.salus.core.simulator`  discrete-event simulator of the executor
- :mod:`~impls.salus.experiments.scheduling` the experiment functions asv and the report wrap
- :mod:`~impls.salus.core.restart_child` the fresh process of the "process restart" baseline
- :mod:`~impls.salus.gpu_check`  the prepared CUDA check for a session lent a GPU
- :mod:`~impls.salus.memory.lanes`      GPU lanes: Salus's assignment rule, variants, baselines (+ CLI)
- :mod:`~impls.salus.memory.lane_sim`   lane packing over random mixes of recorded profiles
- :mod:`~impls.salus.memory.memory_profile` persistent / ephemeral bytes from allocation traces
- :mod:`~impls.salus.memory.lane_executor` the executor admitting through lanes (stream + MemPool per lane)
- :mod:`~impls.salus.experiments.hyperparam` hyper-parameter exploration: serial vs PACK with lanes
- :mod:`~impls.salus.experiments.inference`  many-model inference: shared vs one per device vs processes
- :mod:`~impls.salus.memory.utilisation` NVML / CPU samplers and the executor's busy timeline
- :mod:`~impls.salus.experiments.lanes` the lanes experiments' entry points (+ CLI)
"""
