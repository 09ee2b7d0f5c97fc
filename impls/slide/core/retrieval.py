"""How well the hash tables find the output neurons that matter: recall of the highest-scoring
wrong labels.

SLIDE's premise is that the L buckets a sample's hidden activation hashes to hold the
neurons with the largest logits, so a softmax over them (plus the true labels) pushes down
the labels the model wrongly ranks first. :func:`wrong_top_recall` measures that on
evaluation points: of each point's ``k`` highest-scoring labels that are not its true
labels, the fraction the tables retrieve; beside it, the recall a uniformly random set of
the same size would have (its size over the label count), and a 95% Wilson interval of the
recall (:func:`wilson_interval`) so that a recall of 0 can be read against the random rate.
"""
from __future__ import annotations

import math

import numpy as np

from impls.slide.data.dataset import XCData
from impls.slide.core.tables import HashTables

Z95 = 1.959963984540054


def wilson_interval(hits: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval (two-sided, ``z`` standard errors; 95% by default) of a
    proportion ``hits / trials``; (0, 1) when ``trials`` is 0. It treats the trials as
    independent: the k wrong labels of one point and those shared across points are not, so
    the interval is narrower than the truth when few distinct labels recur."""
    if trials <= 0:
        return 0.0, 1.0
    p = hits / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def wrong_top(ranked: np.ndarray, truth: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` label ids of ``ranked`` (one point's labels by descending logit, -1
    padding ignored) that are not in ``truth``, in rank order (int64; fewer when ``ranked``
    runs out)."""
    return np.array([j for j in ranked if j >= 0 and j not in truth][:k], np.int64)


def wrong_top_recall(tables: HashTables, hidden: np.ndarray, ranked: np.ndarray, data: XCData,
                     rows: np.ndarray, k: int = 10) -> dict[str, float]:
    """Recall of the ``k`` best-scoring wrong labels in the tables' retrieved sets.

    ``hidden`` (n, d): the points' hidden activations; ``ranked`` (n, m): their label ids by
    descending logit (m >= k + the most true labels a point has; -1 past the label count);
    ``rows``: the points' rows in ``data``. Returns ``recall`` (mean over points, 0-1),
    ``retrieved`` (mean retrieved set size, neurons), ``random_recall`` (the recall a
    uniform random set of that size would have: retrieved / labels), ``hits`` and ``trials``
    (wrong labels found / looked for, over all points) and ``ci_low`` / ``ci_high`` (95%
    Wilson interval of hits / trials). The retrieved set is the union of the L buckets,
    what mode "union" trains on; "topk" / "threshold" keep a subset of it.
    """
    codes = tables.lsh.hash(np.ascontiguousarray(hidden, np.float32), 1)
    recalls, sizes = [], []
    hits = trials = 0
    for i, r in enumerate(rows):
        truth = data.labels[data.label_indptr[r]:data.label_indptr[r + 1]]
        wrong = wrong_top(ranked[i], truth, k)
        got = tables.retrieve(codes[i])
        sizes.append(got.size)
        if wrong.size:
            found = np.isin(wrong, got)
            recalls.append(found.mean())
            hits += int(found.sum())
            trials += wrong.size
    retrieved = float(np.mean(sizes)) if sizes else 0.0
    low, high = wilson_interval(hits, trials)
    return {"recall": float(np.mean(recalls)) if recalls else float("nan"), "retrieved": retrieved,
            "random_recall": retrieved / tables.n_items, "hits": hits, "trials": trials,
            "ci_low": low, "ci_high": high}
