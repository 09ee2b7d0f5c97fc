"""Bandana block layouts: permutations, determinism, fanout, and quality ordering."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from impls.bandana.layout import layouts as L
from impls.bandana.data.traces import TraceError, generate_trace, split_in_time

V = 32
N = 8000


@pytest.fixture(scope="module")
def structured():
    """A trace whose vector values track its communities closely (low noise)."""
    t = generate_trace(11, num_vectors=N, num_lookups=120000, dim=16, noise=0.3,
                       community_size=64, global_fraction=0.05)
    train, test = split_in_time(t["offsets"], t["indices"], 0.8)
    return t, train, test


def _is_permutation(p, n):
    return p.dtype == np.int64 and p.shape == (n,) and np.array_equal(np.sort(p), np.arange(n))


def test_vectors_per_block():
    assert L.vectors_per_block(128) == 32
    assert L.vectors_per_block(64, 4096) == 64
    with pytest.raises(ValueError):
        L.vectors_per_block(8192)


def test_every_builder_returns_a_permutation(structured):
    t, train, _ = structured
    built = [L.identity_layout(N), L.random_layout(N, 3),
             L.kmeans_layout(t["vectors"], vectors_per_block=V, niter=4),
             L.kmeans_two_level_layout(t["vectors"], clusters=8, subclusters=4, niter=4),
             L.shp_layout(*train, N, vectors_per_block=V, iterations=4)]
    for layout in built:
        assert _is_permutation(layout.permutation, N), layout.name
        assert layout.build_seconds >= 0 and layout.num_vectors == N


def test_seeded_builders_are_deterministic(structured):
    t, train, _ = structured
    np.testing.assert_array_equal(L.random_layout(N, 4).permutation, L.random_layout(N, 4).permutation)
    assert not np.array_equal(L.random_layout(N, 4).permutation, L.random_layout(N, 5).permutation)
    a = L.kmeans_two_level_layout(t["vectors"], clusters=8, subclusters=4, niter=4, seed=2)
    b = L.kmeans_two_level_layout(t["vectors"], clusters=8, subclusters=4, niter=4, seed=2)
    np.testing.assert_array_equal(a.permutation, b.permutation)
    a = L.kmeans_layout(t["vectors"][:2000], vectors_per_block=V, niter=4, seed=2)
    b = L.kmeans_layout(t["vectors"][:2000], vectors_per_block=V, niter=4, seed=2)
    np.testing.assert_array_equal(a.permutation, b.permutation)
    a = L.shp_layout(*train, N, vectors_per_block=V, iterations=4, seed=9)
    b = L.shp_layout(*train, N, vectors_per_block=V, iterations=4, seed=9)
    np.testing.assert_array_equal(a.permutation, b.permutation)


def test_fanout_matches_hand_count():
    offsets = np.array([0, 2, 5, 8, 10])
    indices = np.array([0, 1, 0, 2, 4, 1, 1, 0, 7, 2])
    # identity, V = 2: blocks {0,1} {2,3} {4,5} {6,7}; queries touch 1, 3, 1, 2 blocks
    assert L.fanout(L.identity_layout(8), offsets, indices, 2) == pytest.approx(7 / 4)
    np.testing.assert_array_equal(L.query_fanouts(L.identity_layout(8), offsets, indices, 2), [1, 3, 1, 2])
    # storage order 0 2 4 1 | 3 5 6 7 with V = 4: {0,1}, {0,2,4}, {1,0} in block 0; {7,2} in two
    perm = np.array([0, 2, 4, 1, 3, 5, 6, 7])
    np.testing.assert_array_equal(L.query_fanouts(perm, offsets, indices, 4), [1, 1, 1, 2])
    assert L.fanout(perm, offsets, indices, 4) == pytest.approx(5 / 4)
    # V = 1: fanout is the number of distinct ids
    assert L.fanout(perm, offsets, indices, 1) == pytest.approx((2 + 3 + 2 + 2) / 4)
    np.testing.assert_array_equal(L.block_of_vector(perm, 4), [0, 0, 0, 1, 0, 1, 1, 1])


def test_fanout_checks_its_input():
    with pytest.raises(TraceError):
        L.fanout(L.identity_layout(4), np.array([0, 1]), np.array([4]), 2)
    with pytest.raises(ValueError, match="not a permutation"):
        L.fanout(np.array([0, 0, 1]), np.array([0, 1]), np.array([2]), 2)


def test_quality_ordering_on_a_structured_trace(structured):
    t, train, test = structured
    identity = L.fanout(L.identity_layout(N), *test, V)
    random = L.fanout(L.random_layout(N, 0), *test, V)
    kmeans = L.fanout(L.kmeans_layout(t["vectors"], vectors_per_block=V, niter=8), *test, V)
    shp = L.fanout(L.shp_layout(*train, N, vectors_per_block=V, iterations=8), *test, V)
    assert random >= 0.9 * identity  # ids carry no locality: random is no better than identity
    assert kmeans < 0.75 * random
    assert shp < 0.75 * random


def test_more_subclusters_do_not_hurt(structured):
    t, _, test = structured
    fan = {k: L.fanout(L.kmeans_two_level_layout(t["vectors"], clusters=4, subclusters=k, niter=8),
                       *test, V) for k in (1, 8, 64)}
    assert fan[8] <= 1.02 * fan[1]
    assert fan[64] <= 1.02 * fan[8]
    assert fan[64] < 0.8 * fan[1]


def test_two_level_kmeans_records_the_groups_it_made():
    """Clusters smaller than the sub-clusters asked give fewer groups: the count made is recorded."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(size=(5, 4)) + 50, rng.normal(size=(200, 4))]).astype(np.float32)
    small = L.kmeans_two_level_layout(x, clusters=2, subclusters=16, niter=5)
    assert small.params["subclusters"] == 16 and 16 < small.params["groups"] <= 5 + 16 < 2 * 16
    assert L.kmeans_two_level_layout(x, clusters=2, subclusters=1, niter=5).params["groups"] == 2


def test_layout_report(structured):
    _, train, test = structured
    report = L.layout_report(L.random_layout(N, 0), train, test, V)
    assert {"name", "params", "build_seconds", "fanout_train", "fanout_test",
            "distinct_per_query_train", "distinct_per_query_test"} <= set(report)
    assert 1 <= report["fanout_test"] <= report["distinct_per_query_test"]


def test_kahypar_missing_gives_a_clear_import_error(structured, monkeypatch):
    _, train, _ = structured
    monkeypatch.setitem(sys.modules, "kahypar", None)  # makes `import kahypar` fail
    assert not L.kahypar_available()
    with pytest.raises(ImportError, match="pip install kahypar"):
        L.kahypar_layout(*train, N, vectors_per_block=V)


def test_kahypar_layout_on_a_small_instance(structured):
    if not L.kahypar_available():
        pytest.skip("optional package kahypar is not installed")
    _, train, _ = structured
    small = 1200
    keep = np.flatnonzero(train[1] < small)  # queries restricted to the first ids
    ids = train[1][keep]
    counts = np.bincount(np.searchsorted(train[0], keep, side="right") - 1, minlength=train[0].size - 1)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    layout = L.kahypar_layout(offsets, ids, small, vectors_per_block=V)
    assert _is_permutation(layout.permutation, small)
    assert L.fanout(layout, offsets, ids, V) < L.fanout(L.random_layout(small, 0), offsets, ids, V)


@pytest.mark.parametrize("blocks, rest, expected", [
    # enough unplaced vectors: every empty slot takes one, in order, and the others follow
    ([[0, 1, -1], [2, -1, 3]], [7, 8, 9], [0, 1, 7, 2, 8, 3, 9]),
    # too few: the block with most holes goes last and lends its last member
    ([[0, -1, -1], [1, 2, -1], [3, 4, 5]], [], [1, 2, 0, 3, 4, 5]),
    ([[0, -1, -1], [1, 2, -1], [3, 4, 5]], [9], [1, 2, 9, 3, 4, 5, 0]),
    ([[0, 1, 6], [2, -1, -1], [3, -1, 5]], [], [0, 1, 6, 3, 2, 5]),
    ([[0, -1, -1]], [], [0]),
])
def test_holes_are_filled_without_shifting_blocks(blocks, rest, expected):
    out = L._fill_holes(np.array(blocks, dtype=np.int64), np.array(rest, dtype=np.int64))
    assert out.tolist() == expected


def test_kahypar_blocks_survive_when_every_vector_is_in_the_hypergraph(monkeypatch):
    """A partition with part-full blocks and no vector outside the hypergraph (so nothing to
    fill the empty slots with): all but one of the partition's blocks stay whole in one block
    of the layout, where dropping the empty slots shifted every later block off its boundary."""
    import types

    from impls.bandana.layout.shp import build_hypergraph

    n, v = 50, 8
    part = np.array([b for b in range(6) for _ in range(7)] + [6] * 8)   # six blocks of 7, one of 8
    fake = types.ModuleType("kahypar")

    class Graph:
        def __init__(self, *args):
            pass

        def blockID(self, vertex):
            return int(part[vertex])

    class Context:
        def __getattr__(self, name):
            return lambda *args: None

    fake.Hypergraph, fake.Context, fake.partition = Graph, Context, lambda graph, context: None
    monkeypatch.setitem(sys.modules, "kahypar", fake)
    ids = np.array([[i, i + 1] for i in range(n - 1)]).ravel()      # every vector in a query of two
    offsets = np.arange(0, ids.size + 1, 2)
    perm = L.kahypar_layout(offsets, ids, n, vectors_per_block=v).permutation
    assert _is_permutation(perm, n)
    vertex_ids = build_hypergraph(offsets, ids, n).vertex_ids
    members = [set(vertex_ids[part == p].tolist()) for p in range(7)]
    layout_blocks = [set(perm[i:i + v].tolist()) for i in range(0, n, v)]
    whole = [p for p in range(7) if any(members[p] <= b for b in layout_blocks)]
    assert len(whole) == 6, whole


@pytest.mark.parametrize("num_vectors, queries, seed", [(1000, 500, 0), (50, 3000, 1), (10, 0, 2), (7, 40, 3)])
def test_distinct_ids_per_query_is_the_fanout_at_one_vector_a_block(num_vectors, queries, seed):
    """Counted from each query's own ids: the same number as the fanout of any layout at one
    vector a block, which needs scratch of 8 bytes a table row on every thread."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 20, queries))]).astype(np.int64)
    indices = rng.integers(0, num_vectors, offsets[-1]).astype(np.int64)
    got = L.distinct_per_query(offsets, indices, num_vectors)
    assert got == L.fanout(rng.permutation(num_vectors), offsets, indices, 1)
    if queries:
        by_hand = np.mean([np.unique(indices[a:b]).size for a, b in zip(offsets[:-1], offsets[1:])])
        assert got == pytest.approx(by_hand, abs=0)
        with pytest.raises(TraceError):
            L.distinct_per_query(offsets, indices + num_vectors, num_vectors)


@pytest.mark.parametrize("n, clusters", [(100, 4), (40, 2), (64, 2), (65, 3), (5, 1)])
def test_flat_kmeans_has_a_cluster_per_block_rounded_up(n, clusters):
    """k = ceil(N / V): a partial last block is a cluster of its own (rounded down, 40 vectors
    at 32 a block would be one cluster, the id order: no clustering at all)."""
    x = np.random.default_rng(0).normal(size=(n, 8)).astype(np.float32)
    layout = L.kmeans_layout(x, vectors_per_block=32, niter=2)
    assert layout.params["clusters"] == clusters
    assert np.array_equal(np.sort(layout.permutation), np.arange(n))


def test_two_level_kmeans_packs_by_cluster_then_sub_cluster_then_id_with_per_cluster_seeds(monkeypatch):
    """The documented order (cluster, sub-cluster, id), so a block that straddles two groups
    holds sibling sub-clusters; and sub-cluster runs seeded seed + 1 + cluster. The K-means
    labels are fixed here, so the order is checked against them, not against faiss."""
    rng = np.random.default_rng(0)
    n = 600
    top = rng.integers(0, 5, n)
    calls = []

    def assign(x, k, niter, seed):
        calls.append((x.shape[0], k, seed))
        return top.copy() if x.shape[0] == n else np.random.default_rng(seed).integers(0, k, x.shape[0])

    monkeypatch.setattr(L, "_kmeans_assign", assign)
    layout = L.kmeans_two_level_layout(rng.normal(size=(n, 4)).astype(np.float32), clusters=5, subclusters=3,
                                       seed=10)
    assert [seed for _, _, seed in calls] == [10] + [11 + c for c in range(5)]
    perm = layout.permutation
    cluster = top[perm]
    sub = np.empty(n, np.int64)
    order = np.argsort(top, kind="stable")
    for c in range(5):
        members = order[top[order] == c]
        sub[members] = np.random.default_rng(11 + c).integers(0, 3, members.size)
    keys = list(zip(cluster.tolist(), sub[perm].tolist(), perm.tolist()))
    assert keys == sorted(keys)
