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
from impls.slide.core import retrieval_kernels as RK
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
    runs out; all of them when ``k`` is None)."""
    ranked = np.ascontiguousarray(ranked).reshape(-1)
    out = np.empty(ranked.size, np.int64)
    n = RK.wrong_top_into(ranked, np.ascontiguousarray(truth).reshape(-1), ranked.size if k is None else int(k), out)
    return out[:n].copy()


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
    what mode "union" trains on; "topk" / "threshold" keep a subset of it. All points go
    through one kernel call (:func:`retrieval_kernels.recall_counts`). IndexError when
    ``ranked`` or ``hidden`` has fewer rows than ``rows``, or a row lies outside ``data``.
    """
    codes = np.ascontiguousarray(tables.lsh.hash(np.ascontiguousarray(hidden, np.float32), 1), np.int32)
    ranked = np.ascontiguousarray(ranked)
    rows = np.ascontiguousarray(rows, np.int64).reshape(-1)
    n = rows.size
    if ranked.ndim != 2 or ranked.shape[0] < n or codes.shape[0] < n:
        raise IndexError(f"{n} rows need as many rows of ranked labels (got shape {ranked.shape}) "
                         f"and of hidden activations (got {codes.shape[0]})")
    if n and (rows.min() < 0 or rows.max() >= data.n_points):
        raise IndexError(f"rows must lie in 0..{data.n_points - 1}, got {rows.min()}..{rows.max()}")
    found = np.zeros(n, np.int64)
    wrong = np.zeros(n, np.int64)
    sizes = np.zeros(n, np.int64)
    RK.recall_counts(ranked, rows, data.label_indptr, data.labels, int(k), codes, *tables.kernel_args(),
                     np.zeros(tables.n_items, np.uint8), found, wrong, sizes)
    some = wrong > 0
    recalls = found[some] / wrong[some]       # per point, as the mean of its found flags
    hits, trials = int(found.sum()), int(wrong.sum())
    retrieved = float(np.mean(sizes)) if n else 0.0
    low, high = wilson_interval(hits, trials)
    return {"recall": float(np.mean(recalls)) if recalls.size else float("nan"), "retrieved": retrieved,
            "random_recall": retrieved / tables.n_items, "hits": hits, "trials": trials,
            "ci_low": low, "ci_high": high}
