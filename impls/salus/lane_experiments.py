"""The lanes experiment as one function returning plain data (asv, CLI and figures wrap it).

:func:`lanes_experiment`: memory profiles of the workloads on the device (persistent /
ephemeral / peak bytes and a memory-over-time curve each), then, on those recorded
profiles, many random job mixes under Salus's lane rule, its named variants and the
two baselines (:func:`impls.salus.lane_sim.lane_experiment`), the lane manager's
decision time at ``decision_jobs`` jobs and the time to replay a ``replay_jobs``-job mix.

The other two experiments of the lanes issue live in :mod:`impls.salus.hyperparam`
and :mod:`impls.salus.inference`; :func:`hyperparam` and :func:`inference` here read
their sizes from ``impls/profiles.toml`` like the rest.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from impls.harness import profiles as profile_tables
from impls.salus import lane_sim
from impls.salus.devices import get_device
from impls.salus.memory_profile import profile_memory


def lanes_experiment(sizes: Mapping[str, Any] | None = None, device: Any = "cpu", progress: bool | None = None) -> dict:
    """Memory profiles + lane packing over random mixes + decision and replay timing.

    ``sizes``: ``[salus_lanes.*]`` of ``impls/profiles.toml``. Returns {"device", "device_name",
    "memory": {workload: {persistent_bytes, ephemeral_bytes, peak_bytes, iteration_ms, trace}},
    "packing": :func:`lane_sim.lane_experiment`'s dict, "decision": {us_per_decision, ...},
    "replay": {seconds, n_jobs, ...}}.
    """
    from impls.salus.experiments import torch_threads

    sizes = dict(sizes or profile_tables.sizes("salus_lanes"))
    dev = get_device(device)
    with torch_threads(sizes.get("threads")) as threads:
        memory = profile_memory(sizes["workloads"], dev, iterations=int(sizes.get("profile_iterations", 3)),
                                seed=int(sizes.get("seed", 0)))
    recorded = {w: {k: m[k] for k in ("persistent_bytes", "ephemeral_bytes", "iteration_ms")}
                for w, m in memory["workloads"].items()}
    packing = lane_sim.lane_experiment(recorded, sizes, progress)
    decision = lane_sim.decision_time(recorded, int(sizes["decision_jobs"]), capacity_peaks=100.0,
                                      seed=int(sizes.get("seed", 0)))
    replay = lane_sim.replay_time(recorded, int(sizes["replay_jobs"]), capacity_peaks=16.0,
                                  seed=int(sizes.get("seed", 0)), parallel_lanes=float(sizes.get("parallel_lanes", 4)))
    return {"device": dev.kind, "device_name": dev.describe(), "torch_threads": threads,
            "memory": memory["workloads"], "packing": packing, "decision": decision, "replay": replay}


def hyperparam(sizes: Mapping[str, Any] | None = None, device: Any = "cpu", progress: bool | None = None) -> dict:
    """:func:`impls.salus.hyperparam.hyperparam_experiment` under ``[salus_hyperparam.*]``."""
    from impls.salus.hyperparam import hyperparam_experiment

    return hyperparam_experiment(dict(sizes or profile_tables.sizes("salus_hyperparam")), device, progress)


def inference(sizes: Mapping[str, Any] | None = None, device: Any = "cpu", progress: bool | None = None) -> dict:
    """:func:`impls.salus.inference.inference_experiment` under ``[salus_inference.*]``."""
    from impls.salus.inference import inference_experiment

    return inference_experiment(dict(sizes or profile_tables.sizes("salus_inference")), device, progress)
