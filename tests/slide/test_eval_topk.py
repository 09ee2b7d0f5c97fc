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
