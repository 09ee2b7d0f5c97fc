"""SLIDE's experiments: the sizes schemas of their profile tables and the ``run`` adapters.

The experiments themselves (name, artifact, requirements, paper figure) are declared as
data in ``catalog.toml`` beside this file (see impls.harness.experiments).

Light on purpose: torch and numba are imported only when an experiment runs.
"""
from __future__ import annotations

from impls.harness.experiments import sizes_schema

_EVALUATION = {
    "dataset": str, "time_budget_s": float, "eval_every": int, "eval_first_s": float,
    "eval_growth": float, "eval_at_start": bool, "eval_points": int, "target_fraction": float,
}
sizes_schema("slide_train", {**_EVALUATION, "runs": list[dict], "comparisons": list[list[str]]})
sizes_schema("slide_delicious", {**_EVALUATION, "runs": list[dict], "comparisons": list[list[str]]})
sizes_schema("slide_real", {**_EVALUATION, "runs": list[dict]})
sizes_schema("slide_sweep", {
    **_EVALUATION, "threads": int, "batches": list[int], "batch_methods": list[str], "hash_batch": int,
    "hash_families": list[list[int | str]], "base": dict,
})


def time_to_accuracy(sizes, *, device="cpu", progress=None):
    from impls.slide.experiments import sweeps as experiments

    return experiments.time_to_accuracy_sweep(progress=progress, s=sizes)


def delicious(sizes, *, device="cpu", progress=None):
    from impls.slide.experiments import sweeps as experiments

    return experiments.delicious_sweep(progress=progress, s=sizes)


def real_amazon(sizes, *, device="cpu", progress=None):
    from impls.slide.experiments import sweeps as experiments

    return experiments.real_amazon_run(progress=progress, s=sizes)


def sweeps(sizes, *, device="cpu", progress=None):
    from impls.slide.experiments import sweeps as experiments

    return experiments.secondary_sweep(progress=progress, s=sizes)
