"""The retrieval recall computed by one kernel over all evaluation points gives exactly what
the per-point Python loop it replaced gave (kept below as the oracle), bit for bit."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impls.slide.core import retrieval
from impls.slide.core.lsh import make_lsh
from impls.slide.core.retrieval import clustered_interval, wrong_top, wrong_top_recall
from impls.slide.core.tables import HashTables
from impls.slide.data.dataset import XCData


# --- the per-point Python implementation the kernel replaced (the oracle) -----------------

def old_wrong_top(ranked, truth, k):
    return np.array([j for j in ranked if j >= 0 and j not in truth][:k], np.int64)


def old_wrong_top_recall(tables, hidden, ranked, data, rows, k=10):
    codes = tables.lsh.hash(np.ascontiguousarray(hidden, np.float32), 1)
    recalls, sizes = [], []
    hits = trials = 0
    trial_labels, trial_points, trial_found = [], [], []
    for i, r in enumerate(rows):
        truth = data.labels[data.label_indptr[r]:data.label_indptr[r + 1]]
        wrong = old_wrong_top(ranked[i], truth, k)
        got = tables.retrieve(codes[i])
        sizes.append(got.size)
        if wrong.size:
            found = np.isin(wrong, got)
            recalls.append(found.mean())
            hits += int(found.sum())
            trials += wrong.size
            trial_labels += wrong.tolist()
            trial_points += [i] * wrong.size
            trial_found += found.astype(np.uint8).tolist()
    retrieved = float(np.mean(sizes)) if sizes else 0.0
    low, high, n_eff = clustered_interval(np.array(trial_labels, np.int64), np.array(trial_points, np.int64),
                                          np.array(trial_found, np.uint8))
    return {"recall": float(np.mean(recalls)) if recalls else float("nan"), "retrieved": retrieved,
            "random_recall": retrieved / tables.n_items, "hits": hits, "trials": trials,
            "labels": len(set(trial_labels)), "effective_trials": n_eff,
            "ci_low": low, "ci_high": high}


def same_bits(a: dict, b: dict) -> bool:
    """Same keys, same types, same values; floats compared by their exact repr (nan == nan)."""
    return a.keys() == b.keys() and all(type(a[x]) is type(b[x]) and repr(a[x]) == repr(b[x]) for x in a)


# --- inputs --------------------------------------------------------------------------------

N_LABELS, DIM = 300, 16


@functools.lru_cache(maxsize=None)
def tables_for(family: str, capacity: int, moved: bool) -> HashTables:
    """Small tables over N_LABELS random neurons; ``moved``: some neurons re-bucketed through the delta."""
    rng = np.random.default_rng(capacity)
    W = rng.standard_normal((N_LABELS, DIM)).astype(np.float32)
    tables = HashTables.create(make_lsh(family, 3, 6, DIM, seed=capacity, range_pow=6), N_LABELS,
                               capacity=capacity, delta_rows=64 if moved else 0)
    tables.insert_all(W, 2)
    if moved:
        rows = rng.choice(N_LABELS, 40, replace=False)
        W[rows] = rng.standard_normal((40, DIM)).astype(np.float32)
        tables.move(W, rows, 2)
    return tables


label_id = st.integers(-1, N_LABELS - 1)


@st.composite
def recall_case(draw):
    n_points = draw(st.integers(0, 12))
    width = draw(st.integers(0, 14))
    truth_sets = [draw(st.lists(st.integers(0, N_LABELS - 1), max_size=5)) for _ in range(n_points + 2)]
    label_indptr = np.concatenate([[0], np.cumsum([len(t) for t in truth_sets])]).astype(np.int64)
    labels = np.array([j for t in truth_sets for j in t], np.int32)
    n = len(truth_sets)
    data = XCData(np.arange(n + 1), np.zeros(n, np.int32), np.ones(n, np.float32), label_indptr, labels, 1, N_LABELS)
    rows = np.array(draw(st.lists(st.integers(0, n - 1), min_size=n_points, max_size=n_points)), np.int64)
    ranked = np.full((n_points, width), -1, np.int64)
    for i, r in enumerate(rows):
        # the point's own labels, duplicates and -1 padding mixed in, as well as other labels
        pool = st.one_of(label_id, st.sampled_from(truth_sets[r])) if truth_sets[r] else label_id
        row = draw(st.lists(pool, min_size=width, max_size=width))
        ranked[i, :len(row)] = row
    seed = draw(st.integers(0, 2 ** 16))
    hidden = np.random.default_rng(seed).standard_normal((n_points + draw(st.integers(0, 2)), DIM)).astype(np.float32)
    if draw(st.booleans()):
        hidden = np.abs(hidden)
    k = draw(st.integers(-3, width + 3))
    tables = tables_for(draw(st.sampled_from(["dwta", "simhash"])), draw(st.sampled_from([2, 8, 128])),
                        draw(st.booleans()))
    return tables, hidden, ranked, data, rows, k


# --- tests ---------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(recall_case())
def test_recall_matches_the_per_point_loop_bit_for_bit(case):
    tables, hidden, ranked, data, rows, k = case
    assert same_bits(wrong_top_recall(tables, hidden, ranked, data, rows, k),
                     old_wrong_top_recall(tables, hidden, ranked, data, rows, k))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-2, 30), max_size=20), st.lists(st.integers(0, 30), max_size=6), st.integers(-25, 25),
       st.sampled_from([np.int64, np.int32]))
def test_wrong_top_matches_the_list_comprehension(ranked, truth, k, truth_dtype):
    ranked, truth = np.array(ranked, np.int64), np.array(truth, truth_dtype)
    got, want = wrong_top(ranked, truth, k), old_wrong_top(ranked, truth, k)
    assert got.dtype == want.dtype == np.int64 and got.tolist() == want.tolist()


def test_edge_cases_of_the_recall():
    tables = tables_for("dwta", 8, True)
    h = np.abs(np.random.default_rng(0).standard_normal((4, DIM))).astype(np.float32)
    # point 0: no labels; 1: every ranked label its own (no wrong one); 2: repeats; 3: k past the row
    label_indptr = np.array([0, 0, 3, 5, 5], np.int64)
    labels = np.array([4, 9, 9, 1, 1], np.int32)
    data = XCData(np.arange(5), np.zeros(4, np.int32), np.ones(4, np.float32), label_indptr, labels, 1, N_LABELS)
    ranked = np.array([[3, -1, 3, 7, 2, 1],
                       [9, 4, -1, 9, 4, -1],
                       [1, 5, 5, 1, 6, 5],
                       [-1, -1, 8, -1, -1, -1]], np.int64)
    rows = np.arange(4)
    for k in (0, 1, 2, 3, 10, -1):
        assert same_bits(wrong_top_recall(tables, h, ranked, data, rows, k),
                         old_wrong_top_recall(tables, h, ranked, data, rows, k))
    empty = wrong_top_recall(tables, h[:0], ranked[:0], data, rows[:0], 10)
    assert same_bits(empty, old_wrong_top_recall(tables, h[:0], ranked[:0], data, rows[:0], 10))
    assert math.isnan(empty["recall"]) and empty["retrieved"] == 0.0 and empty["trials"] == 0


def test_the_recall_makes_no_per_point_python_calls(monkeypatch):
    """All points in one kernel call: no per-point ``tables.retrieve`` or ``np.isin``."""
    tables = tables_for("simhash", 8, False)
    h = np.random.default_rng(1).standard_normal((30, DIM)).astype(np.float32)
    rng = np.random.default_rng(2)
    data = XCData(np.arange(31), np.zeros(30, np.int32), np.ones(30, np.float32), np.arange(0, 61, 2),
                  rng.integers(0, N_LABELS, 60).astype(np.int32), 1, N_LABELS)
    ranked = np.argsort(-(h @ rng.standard_normal((DIM, N_LABELS))), axis=1)[:, :14].astype(np.int64)
    want = old_wrong_top_recall(tables, h, ranked, data, np.arange(30), 10)

    def per_point(*_a, **_k):
        raise AssertionError("called once per point")

    monkeypatch.setattr(HashTables, "retrieve", per_point)
    monkeypatch.setattr(retrieval.np, "isin", per_point)
    assert same_bits(wrong_top_recall(tables, h, ranked, data, np.arange(30), 10), want)


def test_rows_outside_the_data_are_an_error_not_a_wrapped_index():
    tables = tables_for("dwta", 8, False)
    h = np.ones((2, DIM), np.float32)
    data = XCData(np.arange(3), np.zeros(2, np.int32), np.ones(2, np.float32), np.array([0, 1, 2]),
                  np.array([3, 4], np.int32), 1, N_LABELS)
    ranked = np.array([[3, 5, 6], [4, 5, 6]])
    for rows in ([0, -1], [0, 2]):         # -1 once read the row "indptr[-1]:indptr[0]", empty
        with pytest.raises(IndexError, match="rows must lie in 0..1"):
            wrong_top_recall(tables, h, ranked, data, np.array(rows), 2)
    with pytest.raises(IndexError, match="2 rows need"):
        wrong_top_recall(tables, h[:1], ranked, data, np.array([0, 1]), 2)


def test_wrong_top_with_no_k_gives_every_wrong_label():
    from impls.slide.core.retrieval import wrong_top

    assert wrong_top(np.array([5, 1, -1, 7, 3]), np.array([1, 3]), None).tolist() == [5, 7]
