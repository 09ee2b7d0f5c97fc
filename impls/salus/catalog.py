"""Salus's experiments: the sizes schemas of their profile tables and the ``run`` adapters.

The experiments themselves (name, artifact, requirements, paper figure) are declared as
data in ``catalog.toml`` beside this file (see impls.harness.experiments).

Light on purpose: torch is imported only when an experiment runs. The experiment
functions already have the registry's signature ``run(sizes, *, device, progress)``.
"""
from __future__ import annotations

from impls.harness.experiments import sizes_schema

sizes_schema("salus_switching", {"workloads": list[str], "repeats": int, "restart_repeats": int, "threads": int},
             positive=("workloads", "repeats"))
sizes_schema("salus_policies", {
    "mix": list[str], "n_jobs": int, "mean_interarrival_s": float, "duration_s": list[float], "seed": int,
    "policies": list[str], "memory_budget_mb": int, "profile_iterations": int, "threads": int,
    "sim_jobs": int, "sim_mean_interarrival_s": float, "sim_duration_s": list[float], "repeat_policy": str,
}, positive=("mix", "n_jobs", "mean_interarrival_s", "duration_s", "policies", "profile_iterations", "sim_jobs",
             "sim_mean_interarrival_s", "sim_duration_s"), pairs=("duration_s", "sim_duration_s"))
sizes_schema("salus_overhead", {"workloads": list[str], "iterations": int, "blocks": int, "threads": int},
             positive=("workloads", "iterations", "blocks"))
sizes_schema("salus_lanes", {
    "workloads": list[str], "profile_iterations": int, "capacity_peaks": list[int], "rules": list[str],
    "n_mixes": int, "jobs_per_mix": int, "decision_jobs": int, "partitions": int, "parallel_lanes": int,
    "replay_jobs": int, "duration_s": list[float], "seed": int, "threads": int,
}, positive=("workloads", "profile_iterations", "capacity_peaks", "rules", "n_mixes", "jobs_per_mix",
             "decision_jobs", "partitions", "parallel_lanes", "duration_s"), pairs=("duration_s",))
sizes_schema("salus_hyperparam", {
    "workloads": list[str], "n_jobs": int, "iterations": int, "lr": list[float], "rule": str,
    "capacity_peaks": int, "bins": int, "host_workers": int, "packed_threads": int, "threads": int,
}, positive=("workloads", "n_jobs", "iterations", "lr", "capacity_peaks", "bins"), pairs=("lr",))
sizes_schema("salus_inference", {
    "models": list[str], "load": float, "duration_s": float, "latency_target_ms": float,
    "capacity_peaks": float, "processes": bool, "seed": int, "threads": int,
}, positive=("models", "load", "duration_s", "latency_target_ms", "capacity_peaks"))
