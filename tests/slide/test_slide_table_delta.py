"""The tables' delta: neurons re-inserted between builds (HashTables.move) are found where a
fresh build from the same codes would put them, and nowhere else; with bounded buckets, each
bucket yields the newest neurons, as a FIFO ring buffer that every move re-inserts into."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from impls.slide.core.lsh import make_lsh
from impls.slide.core.tables import HashTables


def _tables(n: int, L: int = 4, range_pow: int = 5, capacity: int = 10_000, delta_rows: int | None = 64,
            policy: str = "fifo") -> HashTables:
    return HashTables.create(make_lsh("dwta", 2, L, 8, seed=0, binsize=8, range_pow=range_pow), n,
                             capacity=capacity, policy=policy, delta_rows=delta_rows)


def _fresh_buckets(codes_lm: np.ndarray, n_buckets: int) -> list[list[set]]:
    """What each bucket holds when every neuron sits at ``codes_lm[t, j]`` (no capacity limit)."""
    out = [[set() for _ in range(n_buckets)] for _ in range(codes_lm.shape[0])]
    for t in range(codes_lm.shape[0]):
        for j, c in enumerate(codes_lm[t]):
            out[t][c].add(j)
    return out


class _Moves:
    """Drive ``move`` with explicit codes: hash_table_major is replaced by a lookup in ``target``."""

    def __init__(self, tables: HashTables, target: np.ndarray):
        self.target = target
        tables.lsh.hash_table_major = lambda sub, n_chunks=8: np.ascontiguousarray(
            self.target[:, sub[:, 0].astype(np.int64)])


def _check_chains(t: HashTables) -> None:
    """Every table's chains hold each slot in use exactly once, under its code's head, with
    ``dprev`` the inverse of ``dnext``."""
    mask = t.dhead.shape[1] - 1
    for tab in range(t.lsh.L):
        seen = []
        for h in np.flatnonzero(t.dhead[tab] >= 0):
            e, prev = t.dhead[tab, h], -1
            while e >= 0:
                assert t.dprev[tab, e] == prev and (t.moved[tab, e] & mask) == h
                seen.append(int(e))
                prev, e = e, t.dnext[tab, e]
        assert sorted(seen) == list(range(t.n_moved)), "a slot lost or linked twice"
        np.testing.assert_array_equal(t.slot_of[t.slot_row[:t.n_moved]], np.arange(t.n_moved))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 31 - 1), st.integers(1, 6), st.integers(0, 64))
def test_moved_neurons_are_found_where_a_fresh_build_puts_them(seed, rounds, delta_rows):
    rng = np.random.default_rng(seed)
    n, L, nb = 200, 4, 32
    t = _tables(n, L, delta_rows=delta_rows)
    codes = rng.integers(0, nb, (L, n)).astype(np.int32)
    t.insert_codes(codes.T)
    ids = np.arange(n, dtype=np.float32)[:, None].repeat(8, axis=1)   # row j's "weights" name j
    mover = _Moves(t, codes)
    for _ in range(rounds):
        rows = rng.choice(n, int(rng.integers(1, 40)), replace=False)
        new = codes.copy()
        # some rows move in some tables, some come back to their build code, some stay
        new[:, rows] = np.where(rng.random((L, rows.size)) < 0.6,
                                rng.integers(0, nb, (L, rows.size)), codes[:, rows]).astype(np.int32)
        codes = new
        mover.target = codes
        t.move(ids, rows)
        np.testing.assert_array_equal(t.current_codes(), codes)
        _check_chains(t)
        want = _fresh_buckets(codes, nb)
        for tab in range(L):
            for b in range(nb):
                got = t.bucket(tab, b)
                assert np.unique(got).size == got.size, "a neuron listed twice in one bucket"
                assert set(got.tolist()) == want[tab][b]
        q = rng.integers(0, nb, L).astype(np.int32)
        expect = sorted(set().union(*(want[tab][q[tab]] for tab in range(L))))
        np.testing.assert_array_equal(t.retrieve(q), expect)
    assert t.n_moved <= max(delta_rows, 0)


def test_a_full_delta_is_folded_by_one_build():
    n, L = 300, 3
    t = _tables(n, L, delta_rows=16)
    codes = np.zeros((L, n), np.int32)
    t.insert_codes(codes.T)
    mover = _Moves(t, codes)
    builds = t.builds
    moved = np.arange(10)
    mover.target = codes.copy()
    mover.target[:, moved] = 7
    t.move(np.arange(n, dtype=np.float32)[:, None].repeat(8, axis=1), moved)
    assert (t.builds, t.n_moved, t.folds) == (builds, 10, 0)        # into the delta
    more = np.arange(10, 20)
    mover.target[:, more] = 9
    t.move(np.arange(n, dtype=np.float32)[:, None].repeat(8, axis=1), more)
    assert (t.builds, t.folds) == (builds + 1, 1)                     # 20 > 16 slots: one build
    assert t.n_moved == 10                                           # the new ten sit in the fresh delta
    np.testing.assert_array_equal(t.codes[:, :10], 7)                # the first ten were folded
    assert set(t.bucket(0, 9).tolist()) == set(range(10, 20))
    assert set(t.bucket(0, 7).tolist()) == set(range(10))
    assert set(t.bucket(0, 0).tolist()) == set(range(20, n))


def test_a_bucket_yields_at_most_capacity_the_newest():
    n, L = 100, 2
    t = _tables(n, L, capacity=5, delta_rows=50)
    codes = np.zeros((L, n), np.int32)
    t.insert_codes(codes.T)                  # FIFO: bucket 0 keeps 95..99, newest first
    np.testing.assert_array_equal(t.bucket(0, 0), np.arange(99, 94, -1))
    mover = _Moves(t, codes.copy())
    mover.target[:, [3, 4]] = 1
    mover.target[:, [97]] = 1                # one of the kept five leaves bucket 0
    ids = np.arange(n, dtype=np.float32)[:, None].repeat(8, axis=1)
    t.move(ids, [3, 4, 97])
    np.testing.assert_array_equal(t.bucket(0, 1), [97, 4, 3])
    np.testing.assert_array_equal(t.bucket(0, 0), [99, 98, 96, 95])   # 97 is gone, nothing refills it
    mover.target[:, 3] = 0                  # 3 goes back to its build code: re-inserted, the newest
    t.move(ids, [3])
    np.testing.assert_array_equal(t.bucket(0, 1), [97, 4])
    np.testing.assert_array_equal(t.bucket(0, 0), [3, 99, 98, 96, 95])
    t.move(ids, [50])                        # 50 stays in bucket 0, but as the newest it displaces 95
    np.testing.assert_array_equal(t.bucket(0, 0), [50, 3, 99, 98, 96])
    mover.target[:, np.arange(40, 50)] = 1   # ten more join bucket 1: it yields the five newest
    t.move(ids, np.arange(40, 50))
    np.testing.assert_array_equal(t.bucket(0, 1), np.arange(49, 44, -1))
    assert np.unique(t.retrieve(np.array([1, 1], np.int32))).size == 5
    _check_chains(t)


def test_moving_neurons_already_in_the_delta_needs_no_fold():
    n, L = 100, 2
    t = _tables(n, L, capacity=5, delta_rows=1)
    codes = np.zeros((L, n), np.int32)
    t.insert_codes(codes.T)
    mover = _Moves(t, codes.copy())
    mover.target[:, 97] = 1
    ids = np.arange(n, dtype=np.float32)[:, None].repeat(8, axis=1)
    t.move(ids, [97])
    builds = t.builds
    for _ in range(3):                       # the one slot is 97's already: no build
        t.move(ids, [97])
    assert (t.builds, t.folds, t.n_moved) == (builds, 0, 1)
    np.testing.assert_array_equal(t.bucket(0, 0), [99, 98, 96, 95])
    t.move(ids, [3])                         # a second neuron: the delta folds first
    assert (t.builds, t.folds, t.n_moved) == (builds + 1, 1, 1)


class _FifoModel:
    """Plain-Python FIFO tables: every neuron has a code per table and the time it was last
    inserted (a build: 0, in id order; a move: the move's number); a build keeps the newest
    ``capacity`` per bucket; a moved neuron is always kept until the next build."""

    def __init__(self, codes: np.ndarray, capacity: int, delta_rows: int):
        self.codes, self.cap, self.delta_rows = codes.copy(), capacity, delta_rows
        self.stamp = np.zeros(codes.shape[1], np.int64)
        self.calls = 0
        self.build()

    def _key(self, j):
        return (self.stamp[j], j)

    def build(self):
        self.moved, self.kept = set(), []
        for tab in range(self.codes.shape[0]):
            kept = set()
            for b in np.unique(self.codes[tab]):
                members = sorted(np.flatnonzero(self.codes[tab] == b).tolist(), key=self._key)
                kept.update(members[-self.cap:])
            self.kept.append(kept)

    def move(self, rows, new):
        self.calls += 1
        if len(set(rows.tolist()) - self.moved) > self.delta_rows - len(self.moved):
            if len(rows) > self.delta_rows:
                self.codes[:, rows], self.stamp[rows] = new, self.calls
                return self.build()
            self.build()
        self.codes[:, rows], self.stamp[rows] = new, self.calls
        self.moved.update(rows.tolist())

    def bucket(self, tab, b):
        live = [j for j in np.flatnonzero(self.codes[tab] == b).tolist() if j in self.moved or j in self.kept[tab]]
        return sorted(live, key=self._key, reverse=True)[:self.cap]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 31 - 1), st.integers(1, 8), st.integers(0, 48), st.integers(1, 12))
def test_bounded_buckets_yield_what_a_fifo_model_holds(seed, rounds, delta_rows, capacity):
    rng = np.random.default_rng(seed)
    n, L, nb = 120, 3, 8
    t = _tables(n, L, capacity=capacity, delta_rows=delta_rows)
    codes = rng.integers(0, nb, (L, n)).astype(np.int32)
    t.insert_codes(codes.T)
    model = _FifoModel(codes, capacity, delta_rows)
    mover = _Moves(t, codes)
    ids = np.arange(n, dtype=np.float32)[:, None].repeat(8, axis=1)
    for _ in range(rounds):
        rows = np.unique(rng.choice(n, int(rng.integers(1, 30)), replace=False))
        target = model.codes.copy()
        target[:, rows] = np.where(rng.random((L, rows.size)) < 0.5, rng.integers(0, nb, (L, rows.size)),
                                   target[:, rows]).astype(np.int32)
        mover.target = target
        t.move(ids, rows)
        model.move(rows, target[:, rows])
        _check_chains(t)
        for tab in range(L):
            for b in range(nb):
                assert t.bucket(tab, b).tolist() == model.bucket(tab, b), (tab, b)


def test_move_checks_its_input_and_a_refresh_empties_the_delta():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((500, 16)).astype(np.float32)
    t = HashTables.create(make_lsh("dwta", 2, 6, 16, seed=1, binsize=4, range_pow=6), 500, delta_rows=None)
    with pytest.raises(ValueError, match="before the first"):
        t.move(W, [1])
    t.insert_all(W)
    with pytest.raises(ValueError, match=r"rows must lie in \[0, 500\)"):
        t.move(W, [500])
    W[:50] = rng.standard_normal((50, 16))
    t.move(W, np.arange(50))
    np.testing.assert_array_equal(t.current_codes(), t.lsh.hash_table_major(W))
    assert t.n_moved > 0
    t.insert_all(W, changed=np.zeros(0, np.int64))     # a rehash with nothing newly changed
    assert t.n_moved == 0
    np.testing.assert_array_equal(t.codes, t.lsh.hash_table_major(W))
    full = HashTables.create(t.lsh, 500)
    full.insert_all(W)
    np.testing.assert_array_equal(t.items, full.items)


def test_insert_codes_keeps_its_own_copy():
    t = _tables(20, 3, delta_rows=0)
    mine = np.zeros((3, 20), np.int32)
    t.insert_codes(mine.T)
    _Moves(t, np.full((3, 20), 7, np.int32))
    t.move(np.arange(20, dtype=np.float32)[:, None].repeat(8, axis=1), [5])
    assert not mine.any() and (t.codes[:, 5] == 7).all()
