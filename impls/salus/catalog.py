"""Salus's experiments and the sizes their profile tables hold (see impls.harness.experiments).

Light on purpose: torch is imported only when an experiment runs. The experiment
functions already have the registry's signature ``run(sizes, *, device, progress)``.
"""
from __future__ import annotations

from impls.harness.experiments import experiment, sizes_schema

sizes_schema("salus_switching", {"workloads": list[str], "repeats": int, "restart_repeats": int, "threads": int})
sizes_schema("salus_policies", {
    "mix": list[str], "n_jobs": int, "mean_interarrival_s": float, "duration_s": list[float], "seed": int,
    "policies": list[str], "memory_budget_mb": int, "profile_iterations": int, "threads": int,
    "sim_jobs": int, "sim_mean_interarrival_s": float, "sim_duration_s": list[float], "repeat_policy": str,
})
sizes_schema("salus_overhead", {"workloads": list[str], "iterations": int, "blocks": int, "threads": int})
sizes_schema("salus_lanes", {
    "workloads": list[str], "profile_iterations": int, "capacity_peaks": list[int], "rules": list[str],
    "n_mixes": int, "jobs_per_mix": int, "decision_jobs": int, "partitions": int, "parallel_lanes": int,
    "replay_jobs": int, "duration_s": list[float], "seed": int, "threads": int,
})
sizes_schema("salus_hyperparam", {
    "workloads": list[str], "n_jobs": int, "iterations": int, "lr": list[float], "rule": str,
    "capacity_peaks": int, "bins": int, "host_workers": int, "packed_threads": int, "threads": int,
})
sizes_schema("salus_inference", {
    "models": list[str], "load": float, "duration_s": float, "latency_target_ms": float,
    "capacity_peaks": float, "processes": bool, "seed": int, "threads": int,
})

_EXP, _LANES = "impls.salus.experiments.scheduling", "impls.salus.experiments.lanes"
_CPU_CUDA = ("cpu", "cuda")

experiment("salus.switching", sizes="salus_switching", artifact="salus_switching",
           run=f"{_EXP}:switching_experiment", printer="impls.salus.core.switching:print_table",
           summary="job-switch latency: in-process at iteration boundaries vs checkpoint to host, "
                   "to disk, process restart", paper_figure="Salus: fast job switching (sub-second vs second-scale)", devices=_CPU_CUDA)
experiment("salus.policies", sizes="salus_policies", artifact="salus_policies",
           run=f"{_EXP}:policy_experiment", printer=f"{_EXP}:print_policies",
           summary="FIFO/SRTF/PACK/FAIR run for real, the simulator beside each, the first policy again",
           paper_figure="Salus: FIFO / SRTF / PACK / FAIR job completion times", devices=_CPU_CUDA)
experiment("salus.overhead", sizes="salus_overhead", artifact="salus_overhead",
           run=f"{_EXP}:overhead_experiment", printer=f"{_EXP}:print_overhead",
           summary="the executor's overhead per iteration, paired with alone blocks on either side",
           paper_figure="Salus: executor overhead")
experiment("salus.lanes", sizes="salus_lanes", artifact="salus_lanes", run=f"{_LANES}:lanes_experiment",
           printer=f"{_LANES}:print_lanes",
           summary="memory profiles, lane packing against baselines, lane-manager decision time",
           paper_figure="Salus: GPU lanes (memory sharing)", devices=_CPU_CUDA)
experiment("salus.hyperparam", sizes="salus_hyperparam", artifact="salus_hyperparam",
           run=f"{_LANES}:hyperparam", printer=f"{_LANES}:print_hyperparam",
           summary="hyper-parameter exploration makespan and utilisation under PACK",
           paper_figure="Salus: hyper-parameter exploration (2.38x)", devices=_CPU_CUDA)
experiment("salus.inference", sizes="salus_inference", artifact="salus_inference",
           run=f"{_LANES}:inference", printer=f"{_LANES}:print_inference",
           summary="many inference models sharing one device against one per device",
           paper_figure="Salus: inference sharing (42x / 7x)", devices=_CPU_CUDA)
