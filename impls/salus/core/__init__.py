"""Salus's time sharing: workloads, devices, the executor and its policies, the simulator, job switching."""
