"""Social Hash Partitioner: gain formula, exact balance, quality, placement of unseen vectors."""
from __future__ import annotations

import numpy as np
import pytest

from impls.bandana.layout import layouts as L
from impls.bandana.layout import shp
from impls.bandana.data.traces import TraceError, generate_trace, split_in_time


def _tiny_hypergraph(seed, n=40, queries=30):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 8, queries)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    indices = rng.integers(0, n, offsets[-1])
    return offsets, indices, shp.build_hypergraph(offsets, indices, n)


def _brute_p_fanout(hg, bucket, p):
    total = 0.0
    for e in range(hg.num_edges):
        members = hg.pin_vertex[hg.qoff[e]:hg.qoff[e + 1]]
        _, n_b = np.unique(bucket[members], return_counts=True)
        total += np.sum(1 - (1 - p) ** n_b)
    return total


def test_p_fanout_by_hand():
    hg = shp.build_hypergraph(np.array([0, 3]), np.array([0, 1, 2]), 3)
    # two vertices in bucket 0, one in bucket 1: (1 - 0.5^2) + (1 - 0.5) = 1.25
    assert shp.p_fanout(hg, np.array([0, 0, 1]), 0.5) == pytest.approx(1.25)
    assert shp.p_fanout(hg, np.array([0, 0, 0]), 0.5) == pytest.approx(0.875)


@pytest.mark.parametrize("p", [0.5, 0.3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gain_equals_brute_force_p_fanout_difference(seed, p):
    _, _, hg = _tiny_hypergraph(seed)
    rng = np.random.default_rng(100 + seed)
    side = rng.integers(0, 2, hg.num_vertices).astype(np.int8)
    gains = shp.bisection_gains(hg, side, p)
    before = _brute_p_fanout(hg, side, p)
    assert shp.p_fanout(hg, side, p) == pytest.approx(before)
    for v in range(hg.num_vertices):
        moved = side.copy()
        moved[v] ^= 1
        assert gains[v] == pytest.approx(before - _brute_p_fanout(hg, moved, p), abs=1e-12)


def test_gain_counts_only_pins_in_the_vertex_part():
    _, _, hg = _tiny_hypergraph(7)
    rng = np.random.default_rng(7)
    part = rng.integers(0, 3, hg.num_vertices) * 10  # three parts, each split in two
    side = rng.integers(0, 2, hg.num_vertices).astype(np.int8)
    gains = shp.bisection_gains(hg, side, 0.5, part=part)
    bucket = part + side
    before = _brute_p_fanout(hg, bucket, 0.5)
    for v in range(hg.num_vertices):
        moved = bucket.copy()
        moved[v] = part[v] + (1 - side[v])
        assert gains[v] == pytest.approx(before - _brute_p_fanout(hg, moved, 0.5), abs=1e-12)


def _expected_part_sizes(n, V):
    """Replay the recursion: {first block: size} of the parts after every level."""
    blocks = -(-n // V)
    parts = {0: (blocks, n)}
    levels = []
    while any(nb >= 2 for nb, _ in parts.values()):
        nxt = {}
        for start, (nb, size) in parts.items():
            if nb >= 2:
                left = (nb + 1) // 2
                nxt[start] = (left, left * V)
                nxt[start + left] = (nb - left, size - left * V)
            else:
                nxt[start] = (nb, size)
        parts = nxt
        levels.append({s: size for s, (_, size) in parts.items()})
    return levels


@pytest.mark.parametrize("n_vectors, V", [(3000, 32), (1000, 7)])
def test_balance_is_exact_at_every_level(n_vectors, V):
    t = generate_trace(4, num_vectors=n_vectors, num_lookups=30000, with_vectors=False)
    result = shp.shp_partition(t["offsets"], t["indices"], n_vectors, vectors_per_block=V,
                               iterations=6, record_history=True)
    n = result.num_partitioned
    expected = _expected_part_sizes(n, V)
    assert len(result.history) == result.levels == len(expected)
    for level, (parts, sizes) in enumerate(zip(result.history, expected)):
        held = np.bincount(parts, minlength=result.num_blocks)
        want = np.zeros(result.num_blocks, dtype=np.int64)
        want[list(sizes)] = list(sizes.values())
        np.testing.assert_array_equal(held, want, err_msg=f"level {level}")
    final = np.bincount(result.history[-1], minlength=result.num_blocks)
    assert np.all(final[:-1] == V) and 1 <= final[-1] <= V
    assert sum(result.swaps_per_level) > 0


def test_order_is_a_permutation_with_unseen_vectors_last():
    n = 500
    offsets = np.array([0, 3, 6, 7, 9, 10])
    indices = np.array([1, 2, 3, 3, 4, 5, 40, 6, 1, 40])  # 40: singleton queries only
    result = shp.shp_partition(offsets, indices, n, vectors_per_block=4, iterations=4)
    order = result.order
    assert np.array_equal(np.sort(order), np.arange(n))
    assert result.num_partitioned == 6  # ids 1..6 share queries
    assert set(order[:6]) == {1, 2, 3, 4, 5, 6}
    assert order[6] == 40  # seen in training (alone), placed before never-seen ids
    np.testing.assert_array_equal(order[7:], np.setdiff1d(np.arange(n), [1, 2, 3, 4, 5, 6, 40]))


def test_seeded_and_checked():
    offsets, indices, _ = _tiny_hypergraph(3, n=200, queries=200)
    a = shp.shp_partition(offsets, indices, 200, vectors_per_block=8, seed=1).order
    b = shp.shp_partition(offsets, indices, 200, vectors_per_block=8, seed=1).order
    c = shp.shp_partition(offsets, indices, 200, vectors_per_block=8, seed=2).order
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    with pytest.raises(TraceError, match="outside"):
        shp.shp_partition(offsets, indices, 10, vectors_per_block=8)
    with pytest.raises(ValueError, match="vectors_per_block"):
        shp.shp_partition(offsets, indices, 200, vectors_per_block=0)


def test_shp_beats_random_and_kmeans_when_values_are_noisy():
    n, V = 8000, 32
    t = generate_trace(12, num_vectors=n, num_lookups=160000, dim=16, noise=3.0, global_fraction=0.05)
    train, test = split_in_time(t["offsets"], t["indices"], 0.8)
    random = L.fanout(L.random_layout(n, 0), *test, V)
    kmeans = L.fanout(L.kmeans_layout(t["vectors"], vectors_per_block=V, niter=8), *test, V)
    partitioned = L.shp_layout(*train, n, vectors_per_block=V, iterations=8)
    fan = L.fanout(partitioned, *test, V)
    assert fan < 0.6 * random
    assert fan < 0.7 * kmeans
    assert L.fanout(partitioned, *train, V) < fan * 1.05  # it fits what it trained on


def test_more_rounds_lower_training_p_fanout():
    t = generate_trace(8, num_vectors=4000, num_lookups=60000, with_vectors=False)
    hg = shp.build_hypergraph(t["offsets"], t["indices"], 4000)

    def trained_p_fanout(iterations):
        r = shp.shp_partition(t["offsets"], t["indices"], 4000, vectors_per_block=32,
                              iterations=iterations, record_history=True)
        return shp.p_fanout(hg, r.history[-1])

    assert trained_p_fanout(8) < 0.8 * trained_p_fanout(0)


def _reference_swaps(bounds, side, active, gains, moved_before=None, coin=None):
    move = np.zeros(side.size, dtype=bool)
    proposed = 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        if not active[a]:
            continue
        pos = np.arange(a, b)
        ranked = [pos[side[a:b] == s] for s in (0, 1)]
        ranked = [r[np.lexsort((r, -gains[r]))] for r in ranked]
        for left, right in zip(*ranked):
            if gains[left] + gains[right] <= 0:
                break
            proposed += 1
            if moved_before is not None and (moved_before[left] or moved_before[right]) and coin[left] >= 0.5:
                continue
            move[[left, right]] = True
    return move, proposed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_swaps_matches_a_sorted_reference(seed):
    from impls.bandana.layout import shp_kernels as K

    rng = np.random.default_rng(seed)
    n = 5000
    bounds = np.unique(np.r_[0, rng.integers(0, n, 40), n])
    side = rng.integers(0, 2, n).astype(np.int8)
    active = np.repeat(rng.random(bounds.size - 1) < 0.8, np.diff(bounds))
    gains = rng.choice([-0.5, -0.25, 0.0, 0.25, 0.5], n) + np.where(rng.random(n) < 0.3, rng.random(n), 0)
    move = np.ones(n, dtype=np.bool_)
    proposed, pairs = K.pair_swaps(bounds, side, active, gains, move, np.zeros(n, dtype=np.bool_), rng.random(n))
    expected, offered = _reference_swaps(bounds, side, active, gains)
    np.testing.assert_array_equal(move, expected)
    assert pairs == proposed == offered == expected.sum() // 2 > 0
    # pairs with a vertex that moved the round before go only on their coin
    moved_before, coin = rng.random(n) < 0.5, rng.random(n)
    proposed, pairs = K.pair_swaps(bounds, side, active, gains, move, moved_before, coin)
    expected, offered = _reference_swaps(bounds, side, active, gains, moved_before, coin)
    np.testing.assert_array_equal(move, expected)
    assert proposed == offered > pairs == expected.sum() // 2 > 0


def _planted(groups: int, size: int, queries: int, seed: int):
    """A trace of ``queries`` queries of 4 ids, each drawn from one of ``groups`` disjoint
    groups of ``size`` ids (shuffled): a layout with one group per block has fanout 1."""
    rng = np.random.default_rng(seed)
    members = rng.permutation(groups * size).reshape(groups, size)
    indices = np.concatenate([rng.choice(members[rng.integers(groups)], 4, replace=False)
                              for _ in range(queries)]).astype(np.int64)
    return np.arange(0, indices.size + 1, 4, dtype=np.int64), indices


@pytest.mark.parametrize("groups", [8, 16, 32])
def test_shp_recovers_planted_groups(groups):
    """Synchronous swaps used to mirror an evenly split group round after round (fanout
    1.4-2.4 here); with the damping SHP finds the blocks the trace was drawn from."""
    from impls.bandana.layout import layouts

    found = []
    for seed in range(4):
        offsets, indices = _planted(groups, 8, 100 * groups, seed)
        layout = layouts.shp_layout(offsets, indices, groups * 8, vectors_per_block=8, iterations=16, seed=seed)
        found.append(layouts.fanout(layout, offsets, indices, 8))
    assert np.mean(found) < 1.1, found


def test_kth_smallest_handles_ties():
    from impls.bandana.layout.shp_kernels import _kth_smallest

    rng = np.random.default_rng(0)
    for _ in range(200):
        values = rng.choice(rng.standard_normal(rng.integers(1, 8)), rng.integers(1, 60))
        k = int(rng.integers(0, values.size))
        assert _kth_smallest(values.copy(), k) == np.sort(values)[k]


def test_shp_layout_partitions_a_tiny_trace_untimed_before_its_timed_build(monkeypatch):
    """build_seconds must not include numba compiling SHP's kernels in a fresh process."""
    import time as time_module

    from impls.bandana.layout import layouts, shp

    monkeypatch.setattr(shp, "_warmed", False)
    sizes = []
    real = shp.shp_partition
    monkeypatch.setattr(shp, "shp_partition", lambda *a, **k: (sizes.append(a[2]), real(*a, **k))[1])
    clocks, clock = [], time_module.perf_counter
    monkeypatch.setattr(layouts.time, "perf_counter", lambda: (clocks.append(len(sizes)), clock())[1])
    offsets, ids = np.arange(0, 41, 2, dtype=np.int64), np.arange(40, dtype=np.int64) % 100
    layouts.shp_layout(offsets, ids, 100, vectors_per_block=4)
    assert sizes == [32, 100] and clocks[0] == 1        # the 32-vector warm-up, then the timed build
    layouts.shp_layout(offsets, ids, 100, vectors_per_block=4)
    assert sizes == [32, 100, 100]                      # once a process
