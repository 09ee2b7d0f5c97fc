"""The lanes experiment as one function returning plain data (asv, CLI and figures wrap it).

:func:`lanes_experiment`: memory profiles of the workloads on the device (persistent /
ephemeral / peak bytes and a memory-over-time curve each), then, on those recorded
profiles, many random job mixes under Salus's lane rule, its named variants and the
two baselines (:func:`impls.salus.memory.lane_sim.lane_experiment`), the lane manager's
decision time at ``decision_jobs`` jobs and the time to replay a ``replay_jobs``-job mix.

The other two experiments of the lanes issue live in :mod:`impls.salus.experiments.hyperparam`
and :mod:`impls.salus.experiments.inference`; :func:`hyperparam` and :func:`inference` here read
their sizes from ``impls/profiles.toml`` like the rest.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from impls.harness import profiles as profile_tables
from impls.salus.memory import lane_sim
from impls.salus.core.devices import get_device
from impls.salus.experiments.names import checked_names
from impls.salus.memory.memory_profile import profile_memory


def lanes_experiment(sizes: Mapping[str, Any] | None = None, device: Any = "cpu", progress: bool | None = None) -> dict:
    """Memory profiles + lane packing over random mixes + decision and replay timing.

    ``sizes``: ``[salus_lanes.*]`` of ``impls/profiles.toml``. Returns {"device", "device_name",
    "memory": {workload: {persistent_bytes, ephemeral_bytes, peak_bytes, iteration_ms, trace}},
    "packing": :func:`lane_sim.lane_experiment`'s dict, "decision": {us_per_decision, ...},
    "replay": {seconds, n_jobs, ...}}.
    """
    from impls.salus.core.devices import torch_threads

    sizes = checked_names(sizes or profile_tables.sizes("salus_lanes"), "salus_lanes")
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
    """:func:`impls.salus.experiments.hyperparam.hyperparam_experiment` under ``[salus_hyperparam.*]``."""
    from impls.salus.experiments.hyperparam import hyperparam_experiment

    return hyperparam_experiment(dict(sizes or profile_tables.sizes("salus_hyperparam")), device, progress)


def inference(sizes: Mapping[str, Any] | None = None, device: Any = "cpu", progress: bool | None = None) -> dict:
    """:func:`impls.salus.experiments.inference.inference_experiment` under ``[salus_inference.*]``."""
    from impls.salus.experiments.inference import inference_experiment

    return inference_experiment(dict(sizes or profile_tables.sizes("salus_inference")), device, progress)


def summary(name: str, data: dict) -> dict:
    """Return the headline numbers of experiment ``name``'s ``data`` (what the closing note quotes)."""
    if name == "lanes":
        packing = data["packing"]
        return {"device": data["device_name"],
                "us_per_decision": data["decision"]["us_per_decision"], "decision_jobs": data["decision"]["n_jobs"],
                "replay_seconds": data["replay"]["seconds"], "replay_jobs": data["replay"]["n_jobs"],
                "admitted_mean": {c: {r: v["admitted_mean"] for r, v in row["rules"].items()}
                                  for c, row in packing["capacities"].items()},
                "makespan_mean_s": {c: {r: v["makespan_mean_s"] for r, v in row["rules"].items()}
                                    for c, row in packing["capacities"].items()},
                "greedy_loses": {r: {k: t[k] for k in ("admitted", "makespan", "mixes", "makespan_mixes") if k in t}
                                 for r, t in packing["greedy_loses"].items()},
                "memory": {w: {k: m[k] for k in ("persistent_bytes", "ephemeral_bytes", "iteration_ms")}
                           for w, m in data["memory"].items()},
                "violations": packing["violations"]}
    if name == "hyperparam":
        from impls.salus.experiments.hyperparam import finished_makespan

        return {"device": data["device_name"], "n_jobs": data["n_jobs"], "iterations": data["iterations"],
                "ratio": {w: r["ratio"] for w, r in data["workloads"].items()},
                "makespan_s": {w: {run: finished_makespan(r[run]) for run in ("serial", "packed")}
                               for w, r in data["workloads"].items()},   # NaN (null) where a job failed
                "smallest": data["smallest"], "ratio_smallest": data["ratio_smallest"],
                "errors": {w: {run: r[run]["errors"] for run in ("serial", "packed") if r[run].get("errors")}
                           for w, r in data["workloads"].items()
                           if r["serial"].get("errors") or r["packed"].get("errors")}}
    return {"device": data["device_name"], "models": data["models"], "latency_target_ms": data["latency_target_ms"],
            "setups": data["setups"], "devices_needed": data["devices_needed"],
            "models_per_device_gain": data["models_per_device_gain"]}


def _print(name: str, data: dict) -> None:
    import json

    from impls.harness import atomic

    print(json.dumps(atomic.strict_json(summary(name, data)), indent=1))   # NaN and inf as null


def print_lanes(data: dict) -> None:
    """The lane experiment's headline numbers as JSON."""
    _print("lanes", data)


def print_hyperparam(data: dict) -> None:
    """The hyper-parameter experiment's headline numbers as JSON."""
    _print("hyperparam", data)


def print_inference(data: dict) -> None:
    """The inference experiment's headline numbers as JSON."""
    _print("inference", data)


def main(argv=None) -> int:
    """``python -m impls.salus.experiments.lanes NAME [flags]`` is ``python -m impls run salus.NAME
    [flags]`` (kept so that older scripts keep working)."""
    from impls.salus.experiments.scheduling import run_alias

    return run_alias("python -m impls.salus.experiments.lanes", argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
