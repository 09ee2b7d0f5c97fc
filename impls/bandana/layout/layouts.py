"""Bandana block layouts: which vectors share a 4 KB NVM block.

Longer than 400 lines: every builder and the fanout that measures them share one
permutation contract and its checks, read together.

A layout is an int64 permutation of ``0..N-1``: storage position ``i`` holds vector
``permutation[i]``; block ``b`` holds positions ``b·V … (b+1)·V − 1`` with
``V = block_bytes // vector_bytes`` (:func:`vectors_per_block`). Builders:

* :func:`identity_layout`, :func:`random_layout` (seeded) — no locality;
* :func:`kmeans_layout` — faiss K-means on the vector values with ``k = ceil(N/V)``
  clusters, vectors packed by cluster id (same-cluster vectors adjacent);
* :func:`kmeans_two_level_layout` — Bandana's sub-clusters: ``clusters`` K-means
  clusters, each split by K-means into ``subclusters`` sub-clusters, vectors packed by
  (cluster, sub-cluster);
* :func:`shp_layout` — Social Hash Partitioner on the training trace (:mod:`.shp`);
* :func:`kahypar_layout` — KaHyPar (km1) on the training trace, an optional quality
  reference for small instances (needs ``pip install kahypar``; not a dependency).

:func:`fanout` is the quality measure: the mean number of distinct blocks a query
touches (lower is better; the effective bandwidth of a query is its distinct vectors
over ``V ×`` its fanout).
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import tempfile
import time
from typing import Any

import numba
import numpy as np

from impls.bandana.layout import shp as _shp
from impls.bandana.layout import fanout_kernels as F
from impls.bandana.data.traces import stream, validate_trace
from impls.harness.progress import progress_bar

BLOCK_BYTES = 4096
MAX_BLOCK_BYTES = 1 << 26    # 64 MiB: the command lines' bound on one device block


@dataclasses.dataclass(frozen=True)
class Layout:
    permutation: np.ndarray   # int64[N]: position i holds vector permutation[i]
    name: str
    build_seconds: float
    params: dict[str, Any]

    @property
    def num_vectors(self) -> int:
        return int(self.permutation.size)


def vectors_per_block(vector_bytes: int = 128, block_bytes: int = BLOCK_BYTES) -> int:
    """Return ``V = block_bytes // vector_bytes`` (32 for 128-byte vectors in 4 KB blocks)."""
    if vector_bytes <= 0 or block_bytes < vector_bytes:
        raise ValueError(f"need 0 < vector_bytes <= block_bytes, got {vector_bytes}, {block_bytes}")
    return block_bytes // vector_bytes


def _check_permutation(perm: np.ndarray, num_vectors: int | None = None) -> np.ndarray:
    perm = np.asarray(perm)
    if perm.ndim != 1 or not np.issubdtype(perm.dtype, np.integer):
        raise ValueError(f"a layout must be a 1-D integer permutation, "
                         f"got shape {perm.shape} dtype {perm.dtype}")
    if num_vectors is not None and perm.size != num_vectors:
        raise ValueError(f"layout holds {perm.size} vectors, expected {num_vectors}")
    seen = np.zeros(perm.size, dtype=bool)
    ok = perm.size == 0 or (perm.min() >= 0 and perm.max() < perm.size)
    if ok:
        seen[perm] = True
    if not ok or not seen.all():
        raise ValueError(f"layout is not a permutation of 0..{perm.size - 1}")
    return perm.astype(np.int64, copy=False)


def block_of_vector(layout: Layout | np.ndarray, vectors_per_block: int) -> np.ndarray:
    """Return the block holding each vector (int64 per vector id)."""
    perm = layout.permutation if isinstance(layout, Layout) else np.asarray(layout, dtype=np.int64)
    blocks = np.empty(perm.size, dtype=np.int64)
    blocks[perm] = np.arange(perm.size, dtype=np.int64) // int(vectors_per_block)
    return blocks


def query_fanouts(layout: Layout | np.ndarray, offsets, indices, vectors_per_block: int) -> np.ndarray:
    """Return the number of distinct blocks every query touches."""
    perm = layout.permutation if isinstance(layout, Layout) else _check_permutation(layout)
    offsets, indices = validate_trace(offsets, indices, perm.size, name="fanout trace")
    V = int(vectors_per_block)
    blocks = block_of_vector(perm, V)
    return F.fanout_per_query(offsets, indices, blocks, max(1, -(-perm.size // V)),
                              4 * numba.get_num_threads())


def fanout(layout: Layout | np.ndarray, offsets, indices, vectors_per_block: int) -> float:
    """Return the mean over queries of the number of distinct blocks the query touches."""
    per_query = query_fanouts(layout, offsets, indices, vectors_per_block)
    return float(per_query.mean()) if per_query.size else 0.0


def layout_report(layout: Layout, train, test, vectors_per_block: int) -> dict[str, Any]:
    """Return ``{name, params, build_seconds, fanout_train, fanout_test, distinct_per_query_*}``.

    ``train``/``test`` are ``(offsets, indices)`` pairs. ``distinct_per_query`` is the mean
    number of distinct ids per query — the fanout a perfect layout could approach.
    """
    out: dict[str, Any] = {"name": layout.name, "params": dict(layout.params),
                           "build_seconds": layout.build_seconds, "vectors_per_block": int(vectors_per_block)}
    for label, (offsets, indices) in (("train", train), ("test", test)):
        out[f"fanout_{label}"] = fanout(layout, offsets, indices, vectors_per_block)
        out[f"distinct_per_query_{label}"] = distinct_per_query(offsets, indices, layout.num_vectors)
    return out


def distinct_per_query(offsets, indices, num_vectors: int) -> float:
    """Return the mean number of distinct ids a query holds (0.0 for no queries): the fanout
    at one vector a block, without scratch the size of the table."""
    per_query = F.distinct_per_query(*validate_trace(offsets, indices, int(num_vectors), name="fanout trace"))
    return float(per_query.mean()) if per_query.size else 0.0


# ----------------------------------------------------------------------------- trivial layouts

def identity_layout(num_vectors: int) -> Layout:
    """Vectors stored in id order."""
    t0 = time.perf_counter()
    perm = np.arange(int(num_vectors), dtype=np.int64)
    return Layout(perm, "identity", time.perf_counter() - t0, {})


def random_layout(num_vectors: int, seed: int = 0) -> Layout:
    """Vectors stored in a seeded random order."""
    t0 = time.perf_counter()
    perm = stream(seed, "layout/random").permutation(int(num_vectors)).astype(np.int64)
    return Layout(perm, "random", time.perf_counter() - t0, {"seed": seed})


# ----------------------------------------------------------------------------- K-means

@contextlib.contextmanager
def _faiss_threads(count: int | None):
    """Run faiss with ``count`` OpenMP threads (None: leave as is), restoring the setting after."""
    import faiss

    if count is None:
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(int(count))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _kmeans_assign(x: np.ndarray, k: int, niter: int, seed: int) -> np.ndarray:
    """Return faiss K-means cluster ids (int64) of the rows of ``x`` with ``min(k, len(x))`` clusters.
    faiss takes a signed 32-bit seed: ``seed`` (any non-negative integer) is used modulo 2^31."""
    import faiss

    n = x.shape[0]
    k = int(min(k, n))
    if k <= 1:
        return np.zeros(n, dtype=np.int64)
    km = faiss.Kmeans(x.shape[1], k, niter=int(niter), seed=int(seed) % 2**31, verbose=False,
                      min_points_per_centroid=1, max_points_per_centroid=max(256, -(-n // k)))
    km.train(x)
    _, assign = km.index.search(x, 1)
    return assign[:, 0].astype(np.int64)


def _as_float32(vectors) -> np.ndarray:
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"vectors must be a non-empty N x d matrix, got shape {x.shape}")
    return x


def kmeans_layout(vectors, *, vectors_per_block: int, niter: int = 10, seed: int = 0) -> Layout:
    """Flat K-means with ``k = ceil(N / V)`` clusters; vectors packed by cluster (then id).

    Its cost grows with ``N · k = N² / V``: about 1.4 s at 20 k vectors and 24 s at 100 k
    here (2 busy cores), so roughly 40 minutes at 1 M — the reason Bandana sub-clusters.
    """
    x = _as_float32(vectors)
    t0 = time.perf_counter()
    k = -(-x.shape[0] // int(vectors_per_block))
    cluster = _kmeans_assign(x, k, niter, seed)
    perm = np.argsort(cluster, kind="stable").astype(np.int64)
    return Layout(perm, "kmeans", time.perf_counter() - t0,
                  {"clusters": int(min(k, x.shape[0])), "niter": niter, "seed": seed})


def kmeans_two_level_layout(vectors, *, clusters: int, subclusters: int, niter: int = 10,
                            seed: int = 0, progress: bool | None = None) -> Layout:
    """K-means into ``clusters``, each split into ``subclusters``; packed by (cluster, sub-cluster, id).

    More sub-clusters give finer groups (better locality while there are no more groups than
    blocks; beyond, a block's vectors are neighbours only within a cluster) and cost more time.
    Sub-cluster runs are seeded ``seed + 1 + cluster``. ``params["groups"]`` is the number of
    non-empty (cluster, sub-cluster) groups made: at most ``clusters * subclusters``, fewer
    where a cluster has fewer vectors than ``subclusters`` or K-means leaves one empty.
    """
    x = _as_float32(vectors)
    if clusters < 1 or subclusters < 1:
        raise ValueError(f"clusters and subclusters must be >= 1, got {clusters}, {subclusters}")
    t0 = time.perf_counter()
    cluster = _kmeans_assign(x, clusters, niter, seed)
    order = np.argsort(cluster, kind="stable")
    bounds = np.searchsorted(cluster[order], np.arange(int(cluster.max()) + 2))
    sub = np.zeros(x.shape[0], dtype=np.int64)
    if subclusters > 1:
        # many small problems: one OpenMP thread each (thread start-up and barriers would
        # dominate, badly so on a busy machine)
        with _faiss_threads(1), progress_bar(bounds.size - 1, "sub-clusters", "cluster", progress) as bar:
            for c in range(bounds.size - 1):
                members = order[bounds[c]:bounds[c + 1]]
                if members.size > 1:
                    sub[members] = _kmeans_assign(x[members], subclusters, niter, seed + 1 + c)
                bar.update(1)
    perm = np.lexsort((np.arange(x.shape[0]), sub, cluster)).astype(np.int64)
    seconds = time.perf_counter() - t0
    groups = int(np.unique(cluster.astype(np.int64) * max(subclusters, 1) + sub).size)
    return Layout(perm, "kmeans-two-level", seconds,
                  {"clusters": clusters, "subclusters": subclusters, "niter": niter, "seed": seed, "groups": groups})


# ----------------------------------------------------------------------------- SHP

def shp_layout(train_offsets, train_indices, num_vectors: int, *, vectors_per_block: int,
               iterations: int = 16, p: float = 0.5, seed: int = 0,
               progress: bool | None = None) -> Layout:
    """Social Hash Partitioner on the training trace (see :mod:`impls.bandana.layout.shp`)."""
    _shp.warm_up()                      # build_seconds times the partition, not numba's compile
    t0 = time.perf_counter()
    result = _shp.shp_partition(train_offsets, train_indices, num_vectors,
                                vectors_per_block=vectors_per_block, iterations=iterations,
                                p=p, seed=seed, progress=progress)
    return Layout(result.order, "shp", time.perf_counter() - t0,
                  {"iterations": iterations, "p": p, "seed": seed, "levels": result.levels,
                   "partitioned": result.num_partitioned,
                   "hypergraph_seconds": result.build_seconds,
                   "phase_seconds": dict(result.phase_seconds)})


# ----------------------------------------------------------------------------- KaHyPar (optional)

# KaHyPar's "km1, direct k-way, eco" preset (kahypar config/km1_kKaHyPar_eco_sea20.ini);
# the PyPI wheel does not ship its presets, so the parameters are written out here.
_KAHYPAR_KM1_ECO = """\
mode=direct
objective=km1
seed=-1
cmaxnet=1000
vcycles=0
p-use-sparsifier=true
p-sparsifier-min-median-he-size=28
p-sparsifier-max-hyperedge-size=1200
p-sparsifier-max-cluster-size=10
p-sparsifier-min-cluster-size=2
p-sparsifier-num-hash-func=5
p-sparsifier-combined-num-hash-func=100
p-detect-communities=true
p-detect-communities-in-ip=true
p-reuse-communities=false
p-max-louvain-pass-iterations=100
p-min-eps-improvement=0.0001
p-louvain-edge-weight=hybrid
p-large-he-threshold=1000
p-smallest-maxnet-threshold=50000
p-maxnet-removal-factor=0.01
c-type=ml_style
c-s=1
c-t=160
c-rating-score=heavy_edge
c-rating-use-communities=true
c-rating-heavy_node_penalty=no_penalty
c-rating-acceptance-criterion=best_prefer_unmatched
c-fixed-vertex-acceptance-criterion=fixed_vertex_allowed
i-mode=recursive
i-technique=multi
i-c-type=ml_style
i-c-s=1
i-c-t=150
i-c-rating-score=heavy_edge
i-c-rating-use-communities=true
i-c-rating-heavy_node_penalty=no_penalty
i-c-rating-acceptance-criterion=best_prefer_unmatched
i-c-fixed-vertex-acceptance-criterion=fixed_vertex_allowed
i-algo=pool
i-runs=20
i-bp-algorithm=worst_fit
i-bp-heuristic-prepacking=false
i-bp-early-restart=true
i-bp-late-restart=true
i-r-type=twoway_fm
i-r-runs=-1
i-r-fm-stop=simple
i-r-fm-stop-i=50
r-type=kway_fm_hyperflow_cutter_km1
r-runs=-1
r-fm-stop=adaptive_opt
r-fm-stop-alpha=1
r-fm-stop-i=350
r-flow-execution-policy=exponential
r-hfc-size-constraint=pw
r-hfc-scaling=0.2
r-hfc-distance-based-piercing=true
r-hfc-mbc=true
"""


def kahypar_available() -> bool:
    """Return whether the optional ``kahypar`` package imports."""
    try:
        importlib.import_module("kahypar")
    except ImportError:
        return False
    return True


def _fill_holes(blocks: np.ndarray, rest_ids: np.ndarray) -> np.ndarray:
    """The layout (a permutation, int64) of ``blocks`` (k × V vector ids, -1 an empty slot;
    fewer than V empty in all) and the unplaced vectors ``rest_ids``, in order: the empty
    slots take the first of ``rest_ids`` and the others follow. When they are too few for
    every empty slot, the block with the most empty slots goes last and gives its
    highest-placed members to fill the others', so every block but the last is full and
    each keeps its members (a slot dropped in place would shift every later block)."""
    holes = np.flatnonzero(blocks.ravel() < 0)
    if holes.size <= rest_ids.size:
        slots = blocks.ravel().copy()
        slots[holes] = rest_ids[:holes.size]
        return np.concatenate([slots, rest_ids[holes.size:]]).astype(np.int64)
    donor = int(np.argmax((blocks < 0).sum(axis=1)))
    head = np.delete(blocks, donor, axis=0).ravel().copy()
    members = blocks[donor][blocks[donor] >= 0]
    gaps = np.flatnonzero(head < 0)
    lent = max(0, gaps.size - rest_ids.size)      # members the donor gives (< its own count)
    head[gaps] = np.concatenate([rest_ids, members[members.size - lent:][::-1]])[:gaps.size]
    left = rest_ids[min(gaps.size, rest_ids.size):]
    return np.concatenate([head, members[:members.size - lent], left]).astype(np.int64)


def kahypar_layout(train_offsets, train_indices, num_vectors: int, *, vectors_per_block: int,
                   epsilon: float = 0.1, seed: int = 0) -> Layout:
    """KaHyPar (connectivity − 1, direct k-way) on the training hypergraph; a quality reference.

    Uses the same hypergraph as SHP (deduplicated queries with ≥ 2 distinct ids) and
    ``k = ceil(n/V)`` blocks with imbalance ``epsilon`` (KaHyPar's moves need slack:
    with ``epsilon`` near 0 its blocks must be exactly full and its refinement stalls,
    giving far worse fanout than SHP's swaps; 0.1 measured best); blocks that come out over
    ``V`` vectors spill their highest-numbered members into blocks with room, so
    every block holds at most ``V``; the fewer than ``V`` slots left empty take the
    first vectors SHP would append (see :mod:`.shp`), and the rest follow; where those are
    too few, the block with the most empty slots goes last and fills the others'
    (:func:`_fill_holes`), so every block but the last is full. Raises ImportError when
    ``kahypar`` is not installed, or does not import (naming its error, e.g. a missing library).
    """
    try:
        import kahypar
    except ImportError as err:      # the capability check says why: not installed, or how its import fails
        from impls.harness.capabilities import check_kahypar
        raise ImportError(f"kahypar_layout: {check_kahypar().reason}; it is a quality reference, not a dependency") from err
    V = int(vectors_per_block)
    t0 = time.perf_counter()
    hg = _shp.build_hypergraph(train_offsets, train_indices, num_vectors)
    n = hg.num_vertices
    k = max(1, -(-n // V))
    if k >= 2:
        graph = kahypar.Hypergraph(n, hg.num_edges, hg.qoff.tolist(), hg.pin_vertex.tolist(), k)
        context = kahypar.Context()
        with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as handle:
            handle.write(_KAHYPAR_KM1_ECO)
            ini = handle.name
        try:
            context.loadINIconfiguration(ini)
        finally:
            os.unlink(ini)
        context.setK(k)
        context.setEpsilon(float(epsilon))
        context.setSeed(int(seed) % 2**31)        # a C int
        context.suppressOutput(True)
        kahypar.partition(graph, context)
        block = np.array([graph.blockID(v) for v in range(n)], dtype=np.int64)
    else:
        block = np.zeros(n, dtype=np.int64)
    # repair to exact capacity V: keep up to V members per block, spill the rest into free slots
    order = np.lexsort((np.arange(n), block))
    sorted_blocks = block[order]
    start = np.searchsorted(sorted_blocks, np.arange(k + 1))
    rank = np.arange(n) - start[sorted_blocks]
    keep = rank < V
    slots = np.full(k * V, -1, dtype=np.int64)
    slots[sorted_blocks[keep] * V + rank[keep]] = order[keep]
    spilled = order[~keep]
    slots[np.flatnonzero(slots < 0)[: spilled.size]] = spilled
    slots = np.where(slots >= 0, hg.vertex_ids[np.maximum(slots, 0)], -1)
    freq = np.bincount(np.asarray(train_indices, dtype=np.int64), minlength=int(num_vectors))
    rest = np.ones(int(num_vectors), dtype=bool)
    rest[hg.vertex_ids] = False
    rest_ids = np.flatnonzero(rest)
    rest_ids = rest_ids[np.lexsort((rest_ids, -freq[rest_ids]))]
    perm = _fill_holes(slots.reshape(k, V), rest_ids)
    return Layout(perm, "kahypar", time.perf_counter() - t0,
                  {"epsilon": epsilon, "seed": seed, "blocks": k, "spilled": int(spilled.size)})
