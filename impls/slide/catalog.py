"""SLIDE's experiments and the sizes their profile tables hold (see impls.harness.experiments).

Light on purpose: torch and numba are imported only when an experiment runs.
"""
from __future__ import annotations

from impls.harness.experiments import experiment, sizes_schema

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


_HERE = "impls.slide.catalog"

experiment("slide.time_to_accuracy", sizes="slide_train", artifact="slide_time_to_accuracy",
           run=f"{_HERE}:time_to_accuracy",
           summary="P@1 against seconds for SLIDE, dense and sampled-softmax training (CPU; CUDA runs "
                   "where present), time-to-target ratios, core scaling",
           paper_figure="SLIDE Fig. 5 (time-to-accuracy, Amazon-670K), Fig. 9 (cores)", timed=True)
experiment("slide.sweeps", sizes="slide_sweep", artifact="slide_sweeps", run=f"{_HERE}:sweeps",
           summary="batch size (SLIDE and dense) and hash family / K / L",
           paper_figure="SLIDE Fig. 8 (batch sizes 64-256); SimHash vs DWTA (text)", timed=True)
experiment("slide.delicious", sizes="slide_delicious", artifact="slide_delicious", run=f"{_HERE}:delicious",
           summary="SLIDE (SimHash, batch 128) against dense training on the Delicious-200K-shaped set",
           paper_figure="SLIDE: Delicious-200K, 1.8x over TF-GPU (text)", timed=True)
experiment("slide.real_amazon", sizes="slide_real", artifact="slide_real_amazon", run=f"{_HERE}:real_amazon",
           summary="SLIDE on the real Amazon-670K files, where the user has them (labelled with their sha256)",
           paper_figure="SLIDE: final P@1 on Amazon-670K", requires=("real_amazon670k",), synthetic=False,
           timed=True)
