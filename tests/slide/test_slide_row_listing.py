"""list_rows: the batch's touched output rows in row order, each with its pairs in sample
order, whatever the number of ranges it splits the rows into; by_pair lays values out in
that order."""
from __future__ import annotations

import numpy as np
import pytest

from impls.slide.core import network_kernels as NK


def _batch(seed: int, B: int = 9, n_rows: int = 40, width: int = 12, pool_size: int = 5):
    rng = np.random.default_rng(seed)
    n_act = rng.integers(0, width + 1, B).astype(np.int64)
    act = np.full((B, width), -7, np.int32)   # unused positions hold junk the kernel must not read
    for i in range(B):
        act[i, :n_act[i]] = rng.choice(n_rows, n_act[i], replace=False)
    pool = rng.choice(n_rows, pool_size, replace=False)
    shared = act[n_act > 0][:, 0]
    if shared.size:   # a pool row that is also a sample's own
        pool[0] = shared[0] if shared[0] not in pool else pool[0]
    return act, n_act, np.sort(pool).astype(np.int32), n_rows


def _expected(act, n_act, pool, n_rows):
    pairs: dict[int, list[int]] = {}
    for i in range(act.shape[0]):          # samples in order: each row's pairs in sample order
        for k in range(n_act[i]):
            pairs.setdefault(int(act[i, k]), []).append((i << 32) | k)
    rows = sorted(set(pairs) | set(pool.tolist()))
    where = {int(j): q for q, j in enumerate(pool)}
    return rows, [pairs.get(j, []) for j in rows], [where.get(j, -1) for j in rows]


def _list(act, n_act, pool, n_rows, parts):
    in_pool = np.full(n_rows, -1, np.int32)
    in_pool[pool] = np.arange(pool.size, dtype=np.int32)
    slot = np.full(n_rows, -1, np.int32)
    touched = np.zeros(n_rows + 1, np.int32)
    cursor = np.zeros(n_rows + 1, np.int64)
    starts = np.zeros(n_rows + 2, np.int64)
    contrib = np.zeros(act.size, np.int64)
    pool_of_slot = np.zeros(n_rows + 1, np.int32)
    m = NK.list_rows(act, n_act, in_pool, slot, touched, cursor, starts, contrib, pool_of_slot,
                     np.zeros(2 * parts, np.int64))
    return m, slot, touched, starts, contrib, pool_of_slot


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("parts", [1, 2, 3, 7, 64])
def test_rows_come_in_row_order_with_their_pairs_in_sample_order(seed, parts):
    act, n_act, pool, n_rows = _batch(seed)
    m, slot, touched, starts, contrib, pool_of_slot = _list(act, n_act, pool, n_rows, parts)
    rows, pairs, pool_pos = _expected(act, n_act, pool, n_rows)
    assert m == len(rows)
    assert touched[:m].tolist() == rows
    assert [contrib[starts[s]:starts[s + 1]].tolist() for s in range(m)] == pairs
    assert pool_of_slot[:m].tolist() == pool_pos
    assert any(p >= 0 and c for p, c in zip(pool_pos, pairs))   # a pool row with pairs of its own
    assert starts[m] == n_act.sum()
    expected_slot = np.full(n_rows, -1, np.int32)
    expected_slot[rows] = np.arange(m)
    np.testing.assert_array_equal(slot, expected_slot)


def test_an_empty_batch_lists_only_the_pool():
    act, n_act, pool, n_rows = _batch(0)
    n_act[:] = 0
    m, slot, touched, starts, contrib, pool_of_slot = _list(act, n_act, pool, n_rows, 2)
    assert touched[:m].tolist() == pool.tolist() and pool_of_slot[:m].tolist() == list(range(pool.size))
    assert (starts[:m + 1] == 0).all()
    assert slot[pool].tolist() == list(range(pool.size)) and (np.delete(slot, pool) == -1).all()


def test_by_pair_reads_each_pairs_value_in_listing_order():
    act, n_act, pool, n_rows = _batch(5)
    m, slot, touched, starts, contrib, _ = _list(act, n_act, pool, n_rows, 2)
    z = np.random.default_rng(1).standard_normal(act.shape).astype(np.float32)
    out = np.full(act.size, np.nan, np.float32)
    NK.by_pair(m, starts, contrib, z, out, 3)
    n = int(starts[m])
    np.testing.assert_array_equal(out[:n], [z[e >> 32, e & 0xFFFFFFFF] for e in contrib[:n]])
    assert np.isnan(out[n:]).all()
