"""Salus's experiments: the sizes schemas of their profile tables and the ``run`` adapters.

The experiments themselves (name, artifact, requirements, paper figure) are declared as
data in ``catalog.toml`` beside this file (see impls.harness.experiments).

Light on purpose: torch is imported only when an experiment runs. The experiment
functions already have the registry's signature ``run(sizes, *, device, progress)``.
"""
from __future__ import annotations

from impls.harness.experiments import sizes_schema

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
