"""How well the hash tables find the output neurons that matter: recall of the highest-scoring
wrong labels.

SLIDE's premise is that the L buckets a sample's hidden activation hashes to hold the
neurons with the largest logits, so a softmax over them (plus the true labels) pushes down
the labels the model wrongly ranks first. :func:`wrong_top_recall` measures that on
evaluation points: of each point's ``k`` highest-scoring labels that are not its true
labels, the fraction the tables retrieve; beside it, the recall a uniformly random set of
the same size would have (its size over the label count), and a 95% interval of the recall
(:func:`clustered_interval`) so that a recall near 0 can be read against the random rate.

The interval must not count the trials as independent: the best-scoring wrong labels are
often the same few popular labels for every point, and points whose hidden vectors are
nearly parallel hash alike, so one label's trials tend to come out alike. It is Wilson's
interval on an effective number of trials: the trials over the larger design effect of the
two ways they cluster (by label, by point), as survey statistics treats clustered samples,
and no more than the distinct labels among them.
"""
from __future__ import annotations

import math

import numpy as np

from impls.slide.data.dataset import XCData
from impls.slide.core import retrieval_kernels as RK
from impls.slide.core.tables import HashTables

Z95 = 1.959963984540054


def wilson_interval(hits: float, trials: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval (two-sided, ``z`` standard errors; 95% by default) of a
    proportion ``hits / trials``; (0, 1) when ``trials`` is 0. It treats the trials as
    independent; :func:`clustered_interval` gives it an effective number of trials where
    they are not. Non-integer counts (effective trials) are allowed."""
    if trials <= 0:
        return 0.0, 1.0
    p = hits / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    low = 0.0 if hits <= 0 else max(0.0, centre - half)      # exact at the ends, not by rounding
    high = 1.0 if hits >= trials else min(1.0, centre + half)
    return low, high


def design_effect(groups: np.ndarray, found: np.ndarray) -> float:
    """How many times the variance of the proportion ``found.mean()`` exceeds the binomial
    variance when the trials are independent only between ``groups`` (one group id per trial;
    ``found`` 0/1 per trial): the linearised cluster variance
    ``m / (m - 1) * sum_g (h_g - p t_g)^2 / T^2`` over ``p (1 - p) / T``, at least 1
    (``m / (m - 1)`` for one trial a group). With one
    group it is ``T`` (the trials count as one); with no trials, or all trials alike (p 0
    or 1, where the data show no spread between groups), 1."""
    found = np.asarray(found, np.float64).reshape(-1)
    trials = found.size
    if trials == 0:
        return 1.0
    p = float(found.mean())
    if p in (0.0, 1.0):
        return 1.0
    _, idx = np.unique(np.asarray(groups).reshape(-1), return_inverse=True)
    m = int(idx.max()) + 1
    if m == 1:
        return float(trials)
    h = np.bincount(idx, weights=found, minlength=m)
    t = np.bincount(idx, minlength=m).astype(np.float64)
    var = m / (m - 1) * float(np.sum((h - p * t) ** 2)) / trials ** 2
    return max(1.0, var / (p * (1 - p) / trials))


def clustered_interval(labels: np.ndarray, points: np.ndarray, found: np.ndarray,
                       z: float = Z95) -> tuple[float, float, float]:
    """``(low, high, effective_trials)``: the Wilson interval (:func:`wilson_interval`) of
    the proportion ``found.mean()`` (0/1 per trial) on an effective number of trials, ``T /
    deff`` with ``deff`` the larger :func:`design_effect` of the trials grouped by ``labels``
    and by ``points`` (one entry per trial each), and at most the number of distinct labels.
    The cap is the conservative side: a label's trials share its
    weights and, where the points' hidden vectors are nearly parallel, its buckets, and a few
    groups cannot show how alike they are (a proportion of 0 or 1 shows no spread at all), so
    no more trials count than there are labels. It is about Wilson's on ``T`` trials for
    independent trials of distinct labels and points (``T - 1``: the variance estimate's
    ``m / (m - 1)``), and never narrower. ``(0, 1, 0)`` without trials."""
    found = np.asarray(found, np.float64).reshape(-1)
    trials = found.size
    if trials == 0:
        return 0.0, 1.0, 0.0
    cap = float(np.unique(labels).size)
    deff = max(design_effect(labels, found), design_effect(points, found))
    n_eff = min(trials / deff, cap)
    low, high = wilson_interval(float(found.sum()) / trials * n_eff, n_eff, z)
    return low, high, n_eff


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
    descending logit (m >= k + the most true labels a point has; -1 past the label count), or
    their best-scoring wrong labels alone (m >= k; :func:`evaluate.topk_and_wrong`);
    ``rows``: the points' rows in ``data``. Returns ``recall`` (mean over points, 0-1),
    ``retrieved`` (mean retrieved set size, neurons), ``random_recall`` (the recall a
    uniform random set of that size would have: retrieved / labels), ``hits`` and ``trials``
    (wrong labels found / looked for, over all points), ``labels`` (how many distinct labels
    those trials are), ``effective_trials`` and ``ci_low`` / ``ci_high`` (the 95%
    :func:`clustered_interval` of hits / trials, the trials grouped by label and by point).
    The retrieved set is the union of the L buckets,
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
    wrong = np.zeros(n, np.int64)
    sizes = np.zeros(n, np.int64)
    trial_label = np.zeros((n, ranked.shape[1]), np.int64)
    trial_found = np.zeros((n, ranked.shape[1]), np.uint8)
    RK.recall_counts(ranked, rows, data.label_indptr, data.labels, int(k), codes, *tables.kernel_args(),
                     np.zeros(tables.n_items, np.uint8), wrong, sizes, trial_label, trial_found)
    found = trial_found.sum(axis=1, dtype=np.int64)       # entries past wrong[i] stay 0
    some = wrong > 0
    recalls = found[some] / wrong[some]       # per point, as the mean of its found flags
    hits, trials = int(found.sum()), int(wrong.sum())
    retrieved = float(np.mean(sizes)) if n else 0.0
    kept = np.arange(ranked.shape[1]) < wrong[:, None]          # each point's trials
    labels = trial_label[kept]
    low, high, n_eff = clustered_interval(labels, np.nonzero(kept)[0], trial_found[kept])
    return {"recall": float(np.mean(recalls)) if recalls.size else float("nan"), "retrieved": retrieved,
            "random_recall": retrieved / tables.n_items, "hits": hits, "trials": trials,
            "labels": int(np.unique(labels).size), "effective_trials": n_eff,
            "ci_low": low, "ci_high": high}
