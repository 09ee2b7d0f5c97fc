"""evaluate.topk: the exact top k of every row, best first, ties to the lower label id,
whatever k and the chunking (the heap merge against a full sort)."""
from __future__ import annotations

import numpy as np
import pytest

from impls.slide.core import evaluate as ev


def _reference(scores: np.ndarray, k: int) -> np.ndarray:
    n, labels = scores.shape
    out = np.full((n, k), -1, np.int64)
    for i in range(n):
        order = np.lexsort((np.arange(labels), -scores[i]))[:k]   # score down, then id up
        out[i, :order.size] = order
    return out


@pytest.mark.parametrize("k", [1, 5, 15, 64, 199, 200, 260])
@pytest.mark.parametrize("chunk", [7, 64, 16384])
@pytest.mark.parametrize("seed", range(3))
def test_topk_is_a_full_sorts_first_k_with_ties_to_the_lower_id(k, chunk, seed):
    rng = np.random.default_rng(seed)
    hidden = rng.integers(-2, 3, (6, 4)).astype(np.float32)        # small integers: many tied scores
    W2 = rng.integers(-2, 3, (200, 4)).astype(np.float32)
    b2 = rng.integers(-1, 2, 200).astype(np.float32)
    scores = hidden @ W2.T + b2
    assert len(np.unique(scores[0])) < 60                             # the ties are there to break
    assert np.array_equal(ev.topk(hidden, W2, b2, k, chunk), _reference(scores, k))


def test_a_wide_list_in_rising_order_comes_out_exact():
    """k of 30,000 over 60,000 labels whose scores rise with the id: every label enters and
    becomes the best, so every label enters the heap and the last k come out, reversed."""
    n, labels, k = 4, 60_000, 30_000
    W2 = np.zeros((labels, 1), np.float32)
    b2 = np.arange(labels, dtype=np.float32)
    ranked = ev.topk(np.zeros((n, 1), np.float32), W2, b2, k, chunk=8192)
    assert np.array_equal(ranked, np.tile(np.arange(labels - 1, labels - 1 - k, -1), (n, 1)))


@pytest.mark.parametrize("row_chunk", [1, 4, 2048])
@pytest.mark.parametrize("chunk", [7, 64, 16384])
@pytest.mark.parametrize("seed", range(3))
def test_the_wrong_labels_read_in_one_pass_are_those_a_wide_top_list_gives(seed, chunk, row_chunk):
    """topk_and_wrong's top is topk's, and its wrong labels are the first ones of a top list as
    wide as the row's labels plus ``wrong_k`` that are not the row's own (what the recall
    ranking read before): the same labels in the same order, ties to the lower id, rows with
    no labels, with many, and with more than the list can hold past them (-1 fill)."""
    from impls.slide.core.retrieval import wrong_top

    rng = np.random.default_rng(seed)
    n, labels, wrong_k = 9, 200, 10
    hidden = rng.integers(-2, 3, (n, 4)).astype(np.float32)          # small integers: many tied scores
    W2 = rng.integers(-2, 3, (labels, 4)).astype(np.float32)
    b2 = rng.integers(-1, 2, labels).astype(np.float32)
    own = [rng.choice(labels, size, replace=False) for size in (0, 1, 3, 40, 120, 195, 2, 5, 17)]
    indptr = np.concatenate([[0], np.cumsum([len(o) for o in own])]).astype(np.int64)
    truth = np.concatenate([np.sort(o) for o in own]).astype(np.int64)
    top, wrong = ev.topk_and_wrong(hidden, W2, b2, 5, wrong_k, indptr, truth, chunk, row_chunk)
    assert np.array_equal(top, ev.topk(hidden, W2, b2, 5, chunk))
    wide = ev.topk(hidden, W2, b2, wrong_k + max(len(o) for o in own), chunk)
    for i, o in enumerate(own):
        want = wrong_top(wide[i], o, wrong_k)
        assert np.array_equal(wrong[i, :want.size], want), i
        assert (wrong[i, want.size:] == -1).all()
    assert (wrong[5, 5:] == -1).all()                                # 195 own of 200: 5 wrong at most


def test_row_labels_are_each_rows_own_sorted():
    from impls.slide.data.dataset import XCData

    data = XCData(np.zeros(4, np.int64), np.zeros(0), np.zeros(0), np.array([0, 3, 3, 5]), np.array([9, 2, 4, 7, 1]),
                  n_features=1, n_labels=10)
    indptr, labels = ev.row_labels(data, np.array([2, 0, 1]))
    assert indptr.tolist() == [0, 2, 5, 5] and labels.tolist() == [1, 7, 2, 4, 9]


def test_precision_at_k_counts_as_a_row_by_row_membership_test_does():
    """P@1, P@5 and the per-row hits against np.isin row by row (the -1 fill never a hit, a
    row without labels all misses, predictions narrower than 5 divided by 5 still)."""
    from impls.slide.data.dataset import XCData

    rng = np.random.default_rng(5)
    n, labels = 40, 30
    own = [rng.choice(labels, int(rng.integers(0, 6)), replace=False) for _ in range(n)]
    indptr = np.concatenate([[0], np.cumsum([len(o) for o in own])])
    data = XCData(np.zeros(n + 1, np.int64), np.zeros(0), np.zeros(0), indptr,
                  np.concatenate(own).astype(np.int64), n_features=1, n_labels=labels)
    rows = rng.permutation(n)[:25]
    for width in (5, 3):
        pred = rng.integers(-1, labels, (25, width))
        got = ev.precision_at_k(pred, data, rows)
        hits = [np.isin(p, own[r]) & (p >= 0) for p, r in zip(pred, rows)]
        p5 = 0.0
        for h in hits:
            p5 += h.sum() / 5
        assert got["hits_at_1"].tolist() == [bool(h[0]) for h in hits]
        assert got["p_at_1"] == sum(bool(h[0]) for h in hits) / 25 and got["p_at_5"] == p5 / 25
    assert ev.precision_at_k(np.zeros((0, 5), np.int64), data, rows[:0])["p_at_1"] == 0.0


def test_rows_outside_the_data_and_an_empty_list_are_refused():
    from impls.slide.data.dataset import XCData

    data = XCData(np.zeros(3, np.int64), np.zeros(0), np.zeros(0), np.array([0, 1, 2]), np.array([0, 1]),
                  n_features=1, n_labels=2)
    with pytest.raises(IndexError, match=r"rows must lie in 0..1"):
        ev.precision_at_k(np.zeros((2, 5), np.int64), data, np.array([0, 7]))
    W2, b2 = np.zeros((4, 2), np.float32), np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="at least 1"):
        ev.topk(np.zeros((1, 2), np.float32), W2, b2, 0)
    with pytest.raises(ValueError, match="at least 1"):
        ev.topk_and_wrong(np.zeros((1, 2), np.float32), W2, b2, 5, 0, np.array([0, 0]), np.zeros(0, np.int64))


def test_a_label_listed_twice_is_one_hit_at_p5_and_p1():
    """In-memory data may list a point's label twice (XCData.repeats_labels): a prediction of it
    is one hit of five, not two."""
    from impls.slide.core.eval_kernels import topk_hits

    first = np.zeros(2, np.bool_)
    pred = np.array([[3, -1, -1, -1, -1], [7, 3, -1, -1, -1]])
    p5 = topk_hits(pred, np.array([0, 1]), np.array([0, 2, 4]), np.array([3, 3, 3, 9]), first)
    assert p5 == pytest.approx(0.2 + 0.2) and first.tolist() == [True, False]
