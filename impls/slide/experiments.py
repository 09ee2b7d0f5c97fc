"""SLIDE experiments for asv classes and the report: each returns plain data.

Sizes come from ``impls/profiles.toml`` (``[slide_train.<profile>]``), so a benchmark
class only says which experiment and which threads.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from impls.slide.config import SlideConfig
from impls.slide.dataset import XCData, from_registry

def sizes(profile: str | None = None) -> dict[str, Any]:
    """Return the ``[slide_train.<profile>]`` table of ``impls/profiles.toml``."""
    from impls.harness import profiles

    return profiles.sizes("slide_train", profile)


def data(profile: str | None = None) -> tuple[XCData, XCData, dict]:
    return from_registry(sizes(profile)["dataset"], profile)


def training_run(method: str = "slide", threads: int | None = 2, profile: str | None = None,
                 time_budget_s: float | None = None, **config: Any) -> dict[str, Any]:
    """Train ``method`` (slide / dense-torch / dense-torch-cuda) on the profile's set; the
    trainer's result dict (curve, samples_per_second, final_p_at_1, peak_rss_bytes, ...)."""
    s = sizes(profile)
    train_data, test_data, info = data(profile)
    cfg = SlideConfig(threads=threads, **config)
    kw = dict(time_budget_s=time_budget_s or s["time_budget_s"], eval_every=s["eval_every"],
              eval_points=s["eval_points"])
    if method == "slide":
        from impls.slide.trainer import train
        result = train(cfg, train_data, test_data, **kw)
    else:
        from impls.slide.dense_torch import train_dense
        result = train_dense(cfg, train_data, test_data, device="cuda" if method.endswith("cuda") else "cpu", **kw)
    result["source"] = info
    return result


def table_refresh_seconds(profile: str | None = None, threads: int | None = 2, repeats: int = 3,
                          **config: Any) -> dict[str, float]:
    """Seconds per rehash (re-insert all neurons) and per rebuild (new hash functions too)."""
    from impls.slide.network import SlideNetwork
    from impls.slide.trainer import set_threads, warm_up

    train_data, _, _ = data(profile)
    cfg = SlideConfig(threads=threads, **config)
    set_threads(threads)
    warm_up(cfg)
    net = SlideNetwork(cfg, train_data.n_features, train_data.n_labels, 64)
    out = {}
    for kind in ("rehash", "rebuild"):
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            net.refresh_tables(rebuild=kind == "rebuild")
            times.append(time.perf_counter() - t)
        out[kind] = float(np.median(times))
    out["table_bytes"] = net.tables.nbytes
    return out


def _run_in_child(kwargs: dict[str, Any]) -> dict[str, Any]:
    return training_run(**kwargs)


def throughput_sweep(profile: str | None = None, progress: bool | None = None) -> dict[str, Any]:
    """Train SLIDE once per (threads, padding) of the profile, each in a fresh process.

    A fresh process per run keeps each run's peak RSS its own. Returns ``{"sizes",
    "runs": [{"threads", "padding", **training_run result}]}``.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from impls.harness.profiles import current_profile
    from impls.harness.progress import progress_bar

    profile = profile or current_profile()
    s = sizes(profile)
    grid = [(threads, padding) for threads in s["threads"] for padding in s["paddings"]]
    runs = []
    context = multiprocessing.get_context("spawn")
    with progress_bar(len(grid), "SLIDE runs", "run", progress) as bar:
        for threads, padding in grid:
            with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
                kwargs = {"method": "slide", "threads": threads, "profile": profile, "padding": padding}
                result = pool.submit(_run_in_child, kwargs).result()
            runs.append({"threads": threads, "padding": padding, **result})
            bar.update()
    return {"sizes": s, "profile": profile, "runs": runs}
