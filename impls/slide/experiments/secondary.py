"""SLIDE's secondary sweep on ``[slide_sweep.<profile>].dataset``: batch size (SLIDE and dense
CPU at each of ``batches``: SLIDE Fig. 8) and hash family / K / L (SLIDE with each of
``hash_families``).

Each run trains in a fresh process of its own, as the time-to-accuracy sweep's do: a run
that ends for want of resources is kept as failed (:mod:`.run_failures`) and the runs that
finished stand. Each question has its own target P@1 (the batch runs' best, the hash runs'
best), so a failed hash run leaves the batch runs' times to target comparable, and the
other way round.
"""
from __future__ import annotations

import time
from typing import Any

from impls.slide.core.config import SlideConfig
from impls.slide.experiments.crowding import warn_crowded
from impls.slide.experiments.run_failures import FAILED, TARGET_WITHOUT, mark_partial_targets, raise_if_all_failed
from impls.slide.experiments.sweeps import data, make_data, run_or_fail, run_spec_on, sizes
from impls.slide.experiments.targets import add_targets, speedup

EXPERIMENT = "slide_sweep"


def default_hash(s: dict[str, Any]) -> tuple[str, int, int]:
    """(lsh, K, L) of the sweep's own runs: its ``base``'s, else ``SlideConfig``'s."""
    base = s.get("base", {})
    return base.get("lsh", SlideConfig.lsh), base.get("K", SlideConfig.K), base.get("L", SlideConfig.L)


def hash_names(s: dict[str, Any]) -> list[str]:
    """The run that measures each of ``s["hash_families"]``, in order: the batch sweep's SLIDE run
    at ``hash_batch`` for the sweep's own hash setting where that batch is swept, else
    ``slide-<lsh>-K<K>-L<L>``."""
    own = default_hash(s) if s["hash_batch"] in s["batches"] else None
    return [f"slide-b{s['hash_batch']}" if (lsh, K, L) == own else f"slide-{lsh}-K{K}-L{L}"
            for lsh, K, L in s["hash_families"]]


def run_specs(s: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs the sweep trains, in order: each batch size with each of ``batch_methods``
    (``<method>-b<batch>``), then each hash setting no batch run measures already."""
    base = dict(s.get("base", {}))
    specs = [{**base, "name": f"{method}-b{batch}", "method": method, "batch": batch, "threads": s["threads"]}
             for batch in s["batches"] for method in s["batch_methods"]]
    named = {spec["name"] for spec in specs}
    for (lsh, K, L), name in zip(s["hash_families"], hash_names(s)):
        if name not in named:
            named.add(name)
            specs.append({**base, "name": name, "method": "slide", "batch": s["hash_batch"],
                          "threads": s["threads"], "lsh": lsh, "K": K, "L": L})
    return specs


def _spec_in_child(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Train ``kwargs["spec"]`` on the sweep's dataset: ``{"run": the trainer's result with
    ``wall_seconds`` (s, the whole call), "source": where the data came from, "data": the
    training set's stats, or None unless ``kwargs["stats"]``}``."""
    s, spec = kwargs["sizes"], kwargs["spec"]
    train_data, test_data, info = data(kwargs["profile"], s["dataset"])
    t = time.perf_counter()
    result = run_spec_on(s, spec, train_data, test_data)
    result["wall_seconds"] = time.perf_counter() - t
    result.pop("data", None)
    return {"run": result, "source": info, "data": train_data.stats() if kwargs.get("stats") else None}


def secondary_sweep(profile: str | None = None, progress: bool | None = None,
                    isolate: bool = True, s: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train every run of :func:`run_specs` (each in a fresh process unless ``isolate`` is
    False) and return ``{"sizes", "profile", "target_p_at_1", "hash_target_p_at_1", "batch",
    "hash", "data", "source"}``.

    ``batch``: per batch size (str) the ``slide`` and ``dense`` runs and SLIDE's ``speedup``
    (:func:`~.targets.speedup`; target from the batch runs). ``hash``: per hash setting its
    ``lsh``, ``K``, ``L``, run ``name``, final P@1, active fraction, samples/s, time to the
    hash runs' target and the tables' recall of the best-scoring wrong labels at the end
    (``lsh_recall`` of the ``lsh_recall_k`` best; ``lsh_random_recall``: a random set of the
    same size). A failed run is its spec with ``failed`` (hash entries: ``failed`` and no
    numbers); the finished runs of its question carry ``target_without``. ``data``: the
    training set's stats (None where no run finished). Raises RuntimeError when every run failed.
    """
    from impls.harness.profiles import resolve
    from impls.harness.progress import progress_bar

    profile = resolve(profile)
    s = s or sizes(profile, EXPERIMENT)
    warn_crowded(EXPERIMENT, [{"name": "every run", "threads": s["threads"]}])
    make_data({s["dataset"]}, profile, isolate)
    found: dict[str, Any] = {"source": None, "data": None}

    def entry(spec: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        found["source"] = found["source"] or out["source"]
        found["data"] = found["data"] or out["data"]
        return {**spec, **out["run"], "method": spec["method"]}

    runs = []
    specs = run_specs(s)
    with progress_bar(len(specs), "SLIDE batch-size and hash-family runs", "run", progress) as bar:
        for spec in specs:
            runs.append(run_or_fail(EXPERIMENT, spec, _spec_in_child, {"sizes": s, "profile": profile, "spec": spec,
                                                                 "stats": found["data"] is None}, isolate, entry))
            bar.update()
    raise_if_all_failed(EXPERIMENT, runs)
    by_name = {r["name"]: r for r in runs}
    batch_runs = [by_name[f"{m}-b{b}"] for b in s["batches"] for m in s["batch_methods"]]
    # one target per question: the batch runs' own best, the hash runs' own best
    hash_copies = [dict(by_name[name]) for name in hash_names(s)]
    mark_partial_targets(batch_runs)
    mark_partial_targets(hash_copies)
    target = add_targets(batch_runs, s["target_fraction"])
    hash_target = add_targets(hash_copies, s["target_fraction"])
    batch = {}
    for b in s["batches"]:
        slide, dense = (by_name.get(f"{m}-b{b}") if m in s["batch_methods"] else None for m in ("slide", "dense"))
        batch[str(b)] = {"slide": slide, "dense": dense,
                         "speedup": speedup(slide, dense, s["target_fraction"]) if slide and dense else None}
    hash_runs = [_hash_entry(lsh, K, L, r) for (lsh, K, L), r in zip(s["hash_families"], hash_copies)]
    return {"sizes": s, "profile": profile, "target_p_at_1": target, "hash_target_p_at_1": hash_target,
            "batch": batch, "hash": hash_runs, "data": found["data"], "source": found["source"]}


def _hash_entry(lsh: str, K: int, L: int, r: dict[str, Any]) -> dict[str, Any]:
    """One hash setting's entry of the sweep from its run ``r`` (failed: ``failed``, no numbers)."""
    entry = {"lsh": lsh, "K": K, "L": L, "name": r["name"]}
    if FAILED in r:
        return {**entry, FAILED: r[FAILED]}
    return {**entry, "final_p_at_1": r["final_p_at_1"], "active_fraction": r["active_fraction"],
            "samples_per_second": r["samples_per_second"], "lsh_recall": r.get("final_lsh_recall"),
            "lsh_random_recall": r.get("final_lsh_random_recall"), "lsh_retrieved": r.get("final_lsh_retrieved"),
            "lsh_recall_k": r.get("lsh_recall_k"), "time_to_target_s": r.get("time_to_target_s"),
            "curve": r["curve"], **({TARGET_WITHOUT: r[TARGET_WITHOUT]} if TARGET_WITHOUT in r else {})}
