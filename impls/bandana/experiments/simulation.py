"""Bandana's simulation experiments, each returning plain data for asv, the report and CLIs.

- :func:`layout_policy_experiment`  effective bandwidth and hit rate for layout × policy ×
  cache size, layouts trained on the early trace and measured on the later one, with
  the headline ratio per table (the Bandana configuration chosen on the training trace,
  scored on the test trace, over one vector per block without prefetch);
- :func:`subcluster_sweep`  effective bandwidth and K-means time against sub-clusters
  (the paper's Figs 7–8);
  (it also sweeps the shadow-cache size and checks miniature against full simulation
  on the first table's SHP layout, reusing the layout it built);
- :func:`simulator_speed`  lookups/s per policy and the ratio to an OrderedDict LRU;
- :func:`shp_vs_kahypar`  SHP's fanout against KaHyPar's (km1) on a small instance.

Sizes come from ``[bandana_sim.<profile>]`` in ``impls/profiles.toml``; traces are the
synthetic ``datasets/bandana-*.toml`` recipes at the same profile.

The cache simulations (deterministic) are grid points mapped through
:func:`impls.harness.grid.map_points` (a local Dask cluster by default); the test
trace and each layout go to the workers once, as memory-mapped ``.npy`` files.
Layout building (timed: K-means and SHP seconds are reported) and the miniature
comparison (it reports its own speed-up) stay in this process.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from impls.bandana.sim import cache, miniature
from impls.bandana.layout import layouts
from impls.bandana.data import traces
from impls.harness import grid, profiles, registry
from impls.harness.progress import progress_bar
from impls.bandana.geometry import BLOCK_BYTES, VECTOR_BYTES  # noqa: F401 - the experiments' geometry


def sizes(profile: str | None = None) -> dict[str, Any]:
    """Return the ``[bandana_sim.<profile>]`` table of ``impls/profiles.toml``."""
    return profiles.sizes("bandana_sim", profile)


def load_table(name: str, train_fraction: float, profile: str | None = None, *,
               streamed: bool = False) -> dict[str, Any]:
    """Return a table's trace split in time: ``{"num_vectors", "vectors", "train", "test",
    "test_ids"}`` where ``train``/``test`` are ``(offsets, indices)`` and ``test_ids`` the
    test lookups in order (int64). With ``streamed`` the trace is written once to ``.npy``
    files in the dataset cache a chunk at a time (traces larger than RAM) and the arrays
    are memory maps of them; otherwise it comes from the dataset registry."""
    data = _streamed_dataset(name, profile) if streamed else registry.load(name, profile)
    arrays = data if streamed else data.arrays
    return table_from_trace(name, arrays, train_fraction, synthetic=True if streamed else data.synthetic)


def table_from_trace(name: str, arrays: Any, train_fraction: float, *, synthetic: bool | None,
                     num_vectors: int | None = None) -> dict[str, Any]:
    """:func:`load_table`'s dict for the trace ``arrays`` (a mapping with ``offsets``,
    ``indices``, optionally ``vectors``, and ``community`` unless ``num_vectors`` gives the
    table's size), split in time at ``train_fraction``; ``synthetic`` None: not known."""
    train, test = traces.split_in_time(arrays["offsets"], arrays["indices"], train_fraction)
    num_vectors = int(arrays["community"].shape[0] if num_vectors is None else num_vectors)
    return {"name": name, "num_vectors": num_vectors, "vectors": arrays.get("vectors"),
            "train": train, "test": test, "test_ids": traces.flatten(*test, num_vectors),
            "synthetic": synthetic}


def _table(name: str, s: dict[str, Any], table_of: Callable[[str], dict[str, Any]] | None) -> dict[str, Any]:
    """Table ``name`` as ``table_of(name)`` gives it, else from the registry at ``s``'s sizes."""
    if table_of is not None:
        return table_of(name)
    return load_table(name, s["train_fraction"], streamed=s.get("streamed_traces", False))


def _streamed_dataset(name: str, profile: str | None) -> dict[str, np.ndarray]:
    """The synthetic dataset ``name`` at ``profile`` as memory-mapped ``.npy`` files under
    ``<dataset cache>/<name>/<profile>-<recipe hash>-npy/`` (written once; written again, with
    a warning, where :func:`~impls.bandana.data.traces.read_trace` finds the files damaged)."""
    from impls.harness import paths
    from impls.harness.profiles import resolve

    manifest = registry.manifests()[name]
    profile = resolve(profile, f"for dataset {name!r}")
    params, key = registry.recipe_key(manifest, profile)     # keyed as the registry's own caches
    directory = paths.cache_dir() / name / f"{profile}-{key}-npy"
    if directory.is_dir():
        try:
            return traces.read_trace(directory, with_vectors=True)
        except ValueError as err:
            from impls.harness import cli
            cli.warn(f"{err}; writing it again")
    return traces.write_trace(directory, manifest.spec["seed"], **params)


def build_layout(kind: str, table: dict[str, Any], s: dict[str, Any],
                 per_block: int = BLOCK_BYTES // VECTOR_BYTES) -> layouts.Layout:
    """Build layout ``kind`` (identity / random / kmeans / kmeans-two-level / shp / kahypar) for
    ``table``, packing ``per_block`` vectors into a block (the suite's: 32 of 128 B in 4 KB)."""
    n = table["num_vectors"]
    if kind == "identity":
        return layouts.identity_layout(n)
    if kind == "random":
        return layouts.random_layout(n, seed=s["seed"])
    if kind == "kmeans":
        return layouts.kmeans_layout(table["vectors"], vectors_per_block=per_block,
                                     niter=s["kmeans_niter"], seed=s["seed"])
    if kind == "kmeans-two-level":
        return layouts.kmeans_two_level_layout(table["vectors"], clusters=s["kmeans_clusters"],
                                               subclusters=max(s["subclusters"]),
                                               niter=s["kmeans_niter"], seed=s["seed"])
    if kind == "shp":
        return layouts.shp_layout(*table["train"], n, vectors_per_block=per_block,
                                  iterations=s["shp_iterations"], seed=s["seed"])
    if kind == "kahypar":
        return layouts.kahypar_layout(*table["train"], n, vectors_per_block=per_block, seed=s["seed"])
    raise ValueError(f"unknown layout {kind!r}; known: identity, random, kmeans, kmeans-two-level, shp, "
                     "kahypar")


def _capacity(table: dict[str, Any], fraction: float) -> int:
    return capacity_of(table["num_vectors"], fraction)


def capacity_of(num_vectors: int, fraction: float) -> int:
    """The cache's capacity in vectors for ``fraction`` of a table of ``num_vectors``: rounded,
    and at least one block's vectors."""
    return max(BLOCK_BYTES // VECTOR_BYTES, int(round(fraction * num_vectors)))


def simulate_point(trace, permutation, num_vectors: int, fraction: float, policy: str,
                   shadow_factor: float) -> dict[str, Any]:
    """One grid point: the cache counters of ``trace`` under ``permutation`` (arrays or
    :class:`~impls.harness.grid.ArrayRef`), cache ``fraction`` of ``num_vectors``, plus
    ``hit_rate``, ``capacity`` and ``cache_fraction``. A trace given as a reference is
    streamed from its file (:func:`cache.simulate_npy`: the same counters)."""
    capacity = capacity_of(num_vectors, fraction)
    args = (grid.array(permutation), capacity, policy, int(shadow_factor * capacity),
            VECTOR_BYTES, BLOCK_BYTES)
    if isinstance(trace, grid.ArrayRef):
        result = cache.simulate_npy(trace.path, *args)
    else:
        result = cache.simulate(trace, *args)
    return {**result.to_dict(), "hit_rate": result.hit_rate, "capacity": capacity,
            "cache_fraction": fraction}


def _simulate_grid(table, settings: list[tuple], label: str, progress, ids=None) -> list[dict[str, Any]]:
    """:func:`simulate_point` over ``settings`` = [(layout, fraction, policy, shadow_factor)],
    on the grid, with the lookups ``ids`` (default: the table's test trace)."""
    trace = grid.share(table["test_ids"] if ids is None else ids)
    shared = {}
    points = []
    for layout, fraction, policy, factor in settings:
        if id(layout) not in shared:
            shared[id(layout)] = grid.share(layout.permutation)
        points.append((trace, shared[id(layout)], table["num_vectors"], fraction, policy, factor))
    return grid.map_points(simulate_point, points, label=label, progress=progress)


def layout_policy_experiment(s: dict[str, Any] | None = None, progress: bool | None = None,
                             table_of: Callable[[str], dict[str, Any]] | None = None,
                             side_studies: bool = True) -> dict:
    """Layout × policy × cache fraction on each table's test trace; plain data. ``table_of(name)``,
    if given, returns a table as :func:`load_table` does (default: the registry's set).
    ``side_studies=False`` leaves out ``shadow_sweep`` and ``miniature``.

    Returns ``{"tables": {name: {"layouts": {kind: layout_report}, "points": [{layout,
    policy, cache_fraction, effective_bandwidth, hit_rate, ...}], "headline": {...}}},
    "headline_ratio", "shadow_sweep", "miniature"}``; the last two use the first table's
    SHP layout (shadow size sweep; miniature vs full simulation over the cache grid).
    The headline compares, at ``headline_cache_fraction``, the effective bandwidth of a
    Bandana configuration (a trained layout with prefetch, low-priority or shadow admission;
    which one is said below) with the baseline that reads one vector per block (identity layout, no
    prefetch: vector_bytes / block_bytes); ``best_blocks_read_over_baseline`` says what that
    configuration's NVM blocks read are over the baseline's (the traffic, which effective
    bandwidth alone does not show: it counts every miss as useful). The best is chosen on the
    training trace (the one the layouts were built from; the Bandana configurations simulated
    on it at the headline fraction, ``chosen_on``) and scored on the test trace, so no test
    lookup picks the configuration that is scored on it; ``best_on_test`` is the configuration
    the test trace itself would pick, and ``selection_gain`` its ratio over the chosen one's
    (1 when they agree; the optimism a choice on the test trace would add).
    ``input_order`` is the identity layout with the chosen policy (the ids' own order, read
    the same way), and ``gain_over_input_order`` the chosen configuration's effective
    bandwidth over it: the trained layout's own gain, 1 or less where the trace's numbering
    already puts the ids one query reads in one block (the suite's synthetic traces number
    their ids at random, so there the two ratios differ only by what the policy does alone).
    """
    s = s or sizes()
    out: dict[str, Any] = {"sizes": s, "tables": {}}
    per_block = BLOCK_BYTES // VECTOR_BYTES
    for name in s["tables"]:
        table = _table(name, s, table_of)
        if table["train"][1].size == 0:       # before any layout is built or simulated
            raise ValueError(f"{name}: the training trace is empty (train_fraction {s['train_fraction']}): "
                             f"no lookups to build the layouts or choose the headline's configuration on")
        built = {kind: build_layout(kind, table, s) for kind in s["layouts"]}
        reports = {kind: layouts.layout_report(layout, table["train"], table["test"], per_block)
                   for kind, layout in built.items()}
        combos = [(k, p, f) for k in built for p in s["policies"] for f in s["cache_fractions"]]
        results = _simulate_grid(table, [(built[k], f, p, s["headline_shadow_factor"])
                                         for k, p, f in combos], f"{name}: simulate", progress)
        points = [{"layout": k, "policy": p, **r} for (k, p, _), r in zip(combos, results)]
        at = [p for p in points if p["cache_fraction"] == s["headline_cache_fraction"]]
        baseline = next(p for p in at if (p["layout"], p["policy"]) == ("identity", "none"))
        bandana = [p for p in at if p["layout"] not in ("identity", "random") and p["policy"] != "none"]
        best, on_train = _chosen_on_train(table, built, bandana, s, name, progress)
        oracle = max(bandana, key=lambda p: p["effective_bandwidth"])
        random_prefetch = next((p for p in at if (p["layout"], p["policy"]) == ("random", "prefetch")), None)
        input_order = next(p for p in at if (p["layout"], p["policy"]) == ("identity", best["policy"]))
        out["tables"][name] = {
            "num_vectors": table["num_vectors"], "test_lookups": int(table["test_ids"].size),
            "layouts": reports, "points": points,
            "headline": {
                "cache_fraction": s["headline_cache_fraction"],
                "baseline": {"layout": "identity", "policy": "none",
                             "effective_bandwidth": baseline["effective_bandwidth"],
                             "blocks_read": baseline["blocks_read"]},
                "best": {k: best[k] for k in ("layout", "policy", "effective_bandwidth", "hit_rate", "blocks_read")},
                "chosen_on": "train",
                "train_effective_bandwidth": on_train,
                "best_on_test": {k: oracle[k] for k in ("layout", "policy", "effective_bandwidth")},
                "selection_gain": (oracle["effective_bandwidth"] / best["effective_bandwidth"]
                                   if best["effective_bandwidth"] else None),
                # NVM traffic: effective bandwidth counts misses as useful, so it can rise with the reads
                "best_blocks_read_over_baseline": (best["blocks_read"] / baseline["blocks_read"]
                                                   if baseline["blocks_read"] else None),
                "ratio": best["effective_bandwidth"] / baseline["effective_bandwidth"],
                # the ids' own order with the chosen policy: what the trained layout adds to it
                "input_order": {k: input_order[k] for k in ("layout", "policy", "effective_bandwidth")},
                "gain_over_input_order": (best["effective_bandwidth"] / input_order["effective_bandwidth"]
                                          if input_order["effective_bandwidth"] else None),
                "random_prefetch_effective_bandwidth":
                    random_prefetch["effective_bandwidth"] if random_prefetch else None,
            },
        }
        if side_studies and name == s["tables"][0] and "shp" in built:
            out["shadow_sweep"] = _shadow_sweep(table, built["shp"], s, progress)
            out["miniature"] = _miniature_accuracy(table, built["shp"], s)
    ratios = [t["headline"]["ratio"] for t in out["tables"].values()]
    out["headline_ratio"] = float(np.mean(ratios)) if ratios else None
    return out


def _chosen_on_train(table, built, candidates: list[dict], s: dict, name: str,
                     progress) -> tuple[dict[str, Any], dict[str, float]]:
    """The candidate (a test-trace grid point) whose configuration has the highest effective
    bandwidth on the table's training trace, at the same cache fraction; and every
    candidate's training-trace effective bandwidth by ``"layout/policy"`` (fraction of bytes
    read). Ties go to the first candidate in grid order."""
    train_ids = traces.flatten(*table["train"], table["num_vectors"])
    if train_ids.size == 0:
        raise ValueError(f"{name}: the training trace is empty (train_fraction {s['train_fraction']}): "
                         f"no lookups to choose the headline's configuration on")
    fraction = s["headline_cache_fraction"]
    results = _simulate_grid(table, [(built[p["layout"]], fraction, p["policy"], s["headline_shadow_factor"])
                                     for p in candidates], f"{name}: choose on train", progress, ids=train_ids)
    scores = [r["effective_bandwidth"] for r in results]
    pick = int(np.argmax(scores))
    return candidates[pick], {f"{p['layout']}/{p['policy']}": v for p, v in zip(candidates, scores)}


def subcluster_sweep(s: dict[str, Any] | None = None, progress: bool | None = None,
                     table_of: Callable[[str], dict[str, Any]] | None = None) -> dict:
    """Effective bandwidth and K-means seconds against sub-clusters per cluster (Figs 7–8);
    ``table_of`` as in :func:`layout_policy_experiment`.

    Two-level K-means (``kmeans_clusters`` clusters, each split into k sub-clusters),
    measured with policy ``prefetch`` at the headline cache fraction on the test trace.
    Returns ``{"tables": {name: [{"subclusters", "groups", "kmeans_seconds", "effective_bandwidth",
    "hit_rate", "fanout_test", "blocks_read", "blocks_read_over_lru"}]}, "lru": {name:
    {"effective_bandwidth", "hit_rate", "blocks_read"}}}``. ``lru`` is plain LRU at the same
    cache (identity layout, no prefetch); ``groups`` is the number of non-empty sub-clusters the
    point's K-means made over all clusters (``subclusters`` is the number asked of each cluster;
    a small cluster gives fewer); ``blocks_read_over_lru`` is a point's NVM blocks read
    over LRU's: effective bandwidth counts every miss as useful, so a point can read more
    from the NVM than LRU and still show the higher effective bandwidth.
    ``kmeans_seconds`` excludes faiss's first-call set-up (one untimed build first).
    """
    s = s or sizes()
    per_block = BLOCK_BYTES // VECTOR_BYTES
    out: dict[str, Any] = {"sizes": s, "tables": {}, "lru": {}}
    for name in s["subcluster_tables"]:
        table = _table(name, s, table_of)
        built = []
        warm = table["vectors"][:4096]      # faiss and its OpenMP pool start here, not in the first timing
        layouts.kmeans_two_level_layout(warm, clusters=min(s["kmeans_clusters"], len(warm)), subclusters=1,
                                        niter=1, seed=s["seed"])
        with progress_bar(len(s["subclusters"]), f"{name}: sub-clusters", "k", progress) as bar:
            for k in s["subclusters"]:  # K-means is timed (Fig 8): built here, not on the grid
                built.append(layouts.kmeans_two_level_layout(table["vectors"], clusters=s["kmeans_clusters"],
                                                             subclusters=k, niter=s["kmeans_niter"],
                                                             seed=s["seed"]))
                bar.update()
        fraction = s["headline_cache_fraction"]
        *points, lru = _simulate_grid(table, [(layout, fraction, "prefetch", 1) for layout in built]
                                      + [(layouts.identity_layout(table["num_vectors"]), fraction, "none", 1)],
                                      f"{name}: sub-cluster simulations", progress)
        out["lru"][name] = {k: lru[k] for k in ("effective_bandwidth", "hit_rate", "blocks_read")}
        out["tables"][name] = [
            {"subclusters": k, "groups": layout.params["groups"], "kmeans_seconds": layout.build_seconds,
             "effective_bandwidth": point["effective_bandwidth"], "hit_rate": point["hit_rate"],
             "fanout_test": layouts.fanout(layout, *table["test"], per_block),
             "blocks_read": point["blocks_read"],
             "blocks_read_over_lru": point["blocks_read"] / lru["blocks_read"] if lru["blocks_read"] else None}
            for k, layout, point in zip(s["subclusters"], built, points)]
    return out


def _shadow_sweep(table, layout, s, progress=None) -> dict:
    fraction = s["headline_cache_fraction"]
    settings = [(layout, fraction, "shadow", f) for f in s["shadow_factors"]]
    *shadow, prefetch = _simulate_grid(table, settings + [(layout, fraction, "prefetch", 1)],
                                       f"{table['name']}: shadow sweep", progress)
    rows = [{"shadow_factor": f, **r} for f, r in zip(s["shadow_factors"], shadow)]
    return {"table": table["name"], "layout": layout.name, "rows": rows, "prefetch": prefetch}


def _miniature_accuracy(table, layout, s) -> dict:
    capacities = [_capacity(table, f) for f in s["cache_fractions"]]
    shadows = sorted({int(f * c) for c in capacities for f in s["shadow_factors"]})
    result = miniature.compare_with_full(table["test_ids"], layout.permutation, capacities, shadows,
                                         "shadow", rate=s["miniature_rate"], seed=s["seed"],
                                         vector_bytes=VECTOR_BYTES, block_bytes=BLOCK_BYTES)
    return {**result, "table": table["name"], "layout": layout.name, "rate": s["miniature_rate"]}


def simulator_speed(s: dict[str, Any] | None = None) -> dict:
    """Lookups/s of the simulator per policy and of an OrderedDict LRU, same trace, one run."""
    s = s or sizes()
    return cache.measure_throughput(n_vectors=s["speed_vectors"], n_lookups=s["speed_lookups"],
                                    repeats=s["speed_repeats"],
                                    baseline_max_lookups=s["speed_baseline_lookups"])


def shp_vs_kahypar(s: dict[str, Any] | None = None, progress: bool | None = None) -> dict:
    """SHP against KaHyPar (km1) on the small instance of each ``kahypar_tables`` table.

    The instance is the table's trace at profile ``kahypar_instance_profile`` (smoke:
    20k vectors). Returns ``{"tables": {name: {"num_vectors", "shp": {...}, "kahypar":
    {...}, "identity": {...}, "fanout_ratio_train", "fanout_ratio_test"}}}`` where each
    layout gives ``build_seconds`` and ``fanout_train``/``fanout_test`` (blocks per query)
    and a ratio is SHP's fanout over KaHyPar's (≤ 1.10: within 10%). Raises ImportError
    when the optional package ``kahypar`` is missing.
    """
    s = s or sizes()
    per_block = BLOCK_BYTES // VECTOR_BYTES
    out: dict[str, Any] = {"sizes": s, "tables": {}}
    with progress_bar(len(s["kahypar_tables"]), "SHP vs KaHyPar", "table", progress) as bar:
        for name in s["kahypar_tables"]:
            table = load_table(name, s["train_fraction"], s["kahypar_instance_profile"])
            row: dict[str, Any] = {"num_vectors": table["num_vectors"], "synthetic": table["synthetic"]}
            for kind in ("shp", "kahypar", "identity"):
                row[kind] = layouts.layout_report(build_layout(kind, table, s), table["train"],
                                                  table["test"], per_block)
            for split in ("train", "test"):
                row[f"fanout_ratio_{split}"] = (row["shp"][f"fanout_{split}"]
                                                / row["kahypar"][f"fanout_{split}"])
            out["tables"][name] = row
            bar.update()
    return out
