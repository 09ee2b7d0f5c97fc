"""The distribution shapes of an extreme-classification split, as :mod:`impls.slide.xc_stats`
judges them: label frequency over the labels in use, feature document frequency's log-log
rank fit, TF-IDF ordering of values, random point pairs' overlap, and label co-occurrence
against a shuffle. Each returns plain numbers (NaN where the split cannot show one, with the
reason beside it where the caller prints one)."""
from __future__ import annotations

import math

import numpy as np

from impls.slide.data.dataset import XCData
from impls.slide.data.xc_format import row_norms

LABEL_SHAPE_MIN = 100   # labels with a training point, at the fewest, for the label shape checks to judge
# Points, at the fewest, for the statistics sampled over points (random pairs, TF-IDF ordering):
# fewer give under 435 distinct pairs and idf under 30 values, too few to stand for a set.
POINTS_MIN = 30
# A log-log rank fit (rank_fit) is over ranks 11 .. seen / 10: at least 3 ranks, 130 seen.
RANK_FIT_FIRST, RANK_FIT_LEAST = 10, 130


def rank_fit(counts: np.ndarray) -> tuple[float, float, int]:
    """(slope, R^2, non-zero counts) of the least-squares line of log count against log rank
    (1-based, largest count first) over ranks 11 .. non-zero / 10; slope and R^2 NaN with fewer
    than :data:`RANK_FIT_LEAST` non-zero counts (under 3 ranks in the fit), R^2 NaN too where
    the counts in those ranks are all equal (slope 0)."""
    ranked = np.sort(counts[counts > 0])[::-1]
    seen = int(ranked.size)
    lo, hi = RANK_FIT_FIRST, seen // 10
    slope = r2 = math.nan
    if seen >= RANK_FIT_LEAST:
        rank = np.arange(lo, hi) + 1.0
        x, y = np.log(rank), np.log(ranked[lo:hi].astype(np.float64))
        slope, intercept = np.polyfit(x, y, 1)
        resid = y - (slope * x + intercept)
        r2 = 1.0 - resid.var() / y.var() if y.var() > 0 else math.nan
    return float(slope), float(r2), seen


def fit_why(prefix: str, slope: float, r2: float, seen: int, what: str) -> dict[str, str]:
    """Why the ``prefix``_slope / _r2 of a :func:`rank_fit` over ``seen`` ``what`` are NaN."""
    few = f"{seen:,} {what} in use, fewer than the {RANK_FIT_LEAST} the fit over ranks 11 .. {what} in use / 10 needs"
    why = {f"{prefix}_slope": few} if math.isnan(slope) else {}
    if math.isnan(r2):
        why[f"{prefix}_r2"] = few if math.isnan(slope) else f"the fit's {what} all have equally many points"
    return why


def label_frequency(train: XCData) -> tuple[dict[str, float], dict[str, str]]:
    """The label-frequency shape over the labels in use (with a training point), and why each
    statistic is NaN: the ratios and the log-log rank slope SHAPE_CHECKS judge are NaN below
    :data:`LABEL_SHAPE_MIN` labels in use (no tail to show), the slope also below
    :data:`RANK_FIT_LEAST`. ``labels_used`` is the fraction of the header's labels in use (0..1),
    ``top1pct_label_share`` the share of label occurrences on the 1% most frequent labels."""
    counts = train.label_counts()
    used = counts[counts > 0]
    mean = used.mean() if used.size else math.nan
    total = max(int(counts.sum()), 1)
    top = np.sort(counts)[::-1][: max(1, counts.size // 100)]
    shown = used.size >= LABEL_SHAPE_MIN
    slope, r2, _ = rank_fit(counts)
    stats = {"label_freq_median_over_mean": float(np.median(used) / mean) if shown else math.nan,
             "label_share_below_mean": float(np.mean(used < mean)) if shown else math.nan,
             "label_share_at_most_5": float(np.mean(used <= 5)) if used.size else math.nan,
             "label_freq_max_over_mean": float(used.max() / mean) if shown else math.nan,
             "label_zipf_slope": slope, "label_zipf_r2": r2,
             "labels_used": used.size / max(counts.size, 1),
             "top1pct_label_share": float(top.sum() / total)}
    why = fit_why("label_zipf", slope, r2, used.size, "labels")
    if not shown:
        few = f"{used.size} labels in use, fewer than the {LABEL_SHAPE_MIN} a heavy tail needs to show"
        why |= {k: few for k in ("label_freq_median_over_mean", "label_share_below_mean", "label_freq_max_over_mean")}
    return stats, why


def df_zipf(train: XCData) -> tuple[dict[str, float], dict[str, str]]:
    """Log-log fit of feature document frequency against rank (:func:`rank_fit`) over the
    features seen, and why it is NaN where it is."""
    df = np.bincount(train.indices, minlength=train.n_features)
    slope, r2, seen = rank_fit(df)
    return ({"df_zipf_slope": slope, "df_zipf_r2": r2, "features_seen": seen,
             "df_max_fraction": float(df.max() / max(train.n_points, 1)) if df.size else math.nan},
            fit_why("df_zipf", slope, r2, seen, "features"))


def _average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 of ``a``, tied values sharing their mean rank (float64)."""
    order = np.argsort(a, kind="stable")
    sorted_a = a[order]
    starts = np.flatnonzero(np.r_[True, sorted_a[1:] != sorted_a[:-1]])
    ends = np.r_[starts[1:], a.size]
    ranks = np.empty(a.size, np.float64)
    ranks[order] = np.repeat((starts + ends - 1) / 2.0, ends - starts)
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho of ``a`` and ``b`` with tied values at their mean rank; NaN with fewer
    than 3 pairs or when either is constant (no order to correlate)."""
    if a.size < 3:
        return math.nan
    ra, rb = _average_ranks(a), _average_ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])


def value_order(train: XCData, rng: np.random.Generator, sample: int) -> tuple[dict[str, float], dict[str, str]]:
    """Spearman(idf, value) over up to ``sample`` feature entries (0 for values all equal: a
    binary bag of words, rarer features no larger; ``values_all_equal`` says so), the row
    norms' mean and largest distance from 1, and why the first is NaN where it is."""
    df = np.bincount(train.indices, minlength=train.n_features)
    pick = rng.choice(train.indices.size, min(sample, train.indices.size), replace=False)
    idf = np.log((1.0 + train.n_points) / (1.0 + df[train.indices[pick]]))
    norms = row_norms(train)
    values = train.values[pick]
    flat = bool(values.size > 2 and np.all(values == values[0]))
    rho = 0.0 if flat else spearman(idf, values)
    why = {}
    if math.isnan(rho):
        why["idf_value_spearman"] = ("fewer than 3 feature entries" if values.size < 3 else
                                     "every sampled feature is in equally many points (idf constant): no order")
    return {"idf_value_spearman": rho, "values_all_equal": flat,
            "row_norm_mean": float(norms.mean()) if norms.size else math.nan,
            "row_norm_max_deviation": float(np.abs(norms - 1.0).max()) if norms.size else math.nan}, why


def random_pairs(train: XCData, rng: np.random.Generator, pairs: int) -> dict[str, float]:
    """Over ``pairs`` random pairs of distinct points: the mean features shared, the mean share of
    the smaller point's features shared (0..1) and the mean cosine (-1..1), the last two over the
    pairs of points that both have a non-zero feature (NaN where none does: undefined)."""
    a = rng.integers(0, train.n_points, pairs)
    b = rng.integers(0, train.n_points, pairs)
    keep = a != b
    shared, cos, frac = [], [], []
    for i, j in zip(a[keep], b[keep]):
        fi, vi = train.indices[train.indptr[i]:train.indptr[i + 1]], train.values[train.indptr[i]:train.indptr[i + 1]]
        fj, vj = train.indices[train.indptr[j]:train.indptr[j + 1]], train.values[train.indptr[j]:train.indptr[j + 1]]
        common, ii, jj = np.intersect1d(fi, fj, return_indices=True)  # a row may repeat a feature
        shared.append(common.size)
        frac.append(common.size / min(fi.size, fj.size) if min(fi.size, fj.size) else math.nan)
        vi, vj = vi.astype(np.float64), vj.astype(np.float64)     # float32 squares overflow past ~1e19
        den = float(np.linalg.norm(vi) * np.linalg.norm(vj))
        cos.append(float(vi[ii] @ vj[jj]) / den if den > 0 else math.nan)
    if not shared:  # fewer than two points
        return {"random_pair_shared": math.nan, "random_pair_shared_fraction": math.nan,
                "random_pair_cosine": math.nan}
    frac_a, cos_a = np.array(frac), np.array(cos)
    return {"random_pair_shared": float(np.mean(shared)),
            "random_pair_shared_fraction": float(frac_a[~np.isnan(frac_a)].mean()) if np.isfinite(frac_a).any()
            else math.nan,
            "random_pair_cosine": float(cos_a[~np.isnan(cos_a)].mean()) if np.isfinite(cos_a).any() else math.nan}


def pair_repeat(lab_ptr: np.ndarray, labels: np.ndarray, n_labels: int) -> tuple[float, int, int]:
    """(fraction of the distinct label pairs found in the points that occur in two or more
    points, pair occurrences, distinct pairs)."""
    lengths = np.diff(lab_ptr)
    keys = []
    for k in np.unique(lengths[lengths > 1]):
        rows = np.flatnonzero(lengths == k)
        block = np.sort(labels[lab_ptr[rows][:, None] + np.arange(k)], axis=1).astype(np.int64)
        u, v = np.triu_indices(int(k), 1)
        keys.append((block[:, u] * n_labels + block[:, v]).ravel())
    if not keys:
        return math.nan, 0, 0
    keys = np.concatenate(keys)
    _, counts = np.unique(keys, return_counts=True)
    return float(np.mean(counts >= 2)), int(keys.size), int(counts.size)


def shuffled_labels(lab_ptr: np.ndarray, labels: np.ndarray, n_labels: int, rng: np.random.Generator,
                     rounds: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """(label_indptr, labels): ``labels`` permuted across the points with each point's labels
    kept distinct, as in a real set. After the permutation, each label a point holds again is
    swapped with one at a random other place, in rounds until none repeats; every label keeps
    its count and every point its length, except that a repeat left after ``rounds`` rounds
    is dropped (its point is one label shorter)."""
    point = np.repeat(np.arange(lab_ptr.size - 1, dtype=np.int64), np.diff(lab_ptr))
    out = rng.permutation(labels)
    for done in range(rounds + 1):
        key = point * n_labels + out
        order = np.argsort(key, kind="stable")
        repeat = order[1:][key[order[1:]] == key[order[:-1]]]
        if repeat.size == 0 or done == rounds:
            break
        partner, first = np.unique(rng.integers(0, out.size, repeat.size), return_index=True)
        swap = ~np.isin(partner, repeat)          # disjoint swaps only; the rest go again next round
        here, there = repeat[first][swap], partner[swap]
        out[here], out[there] = out[there], out[here]
    if repeat.size == 0:
        return lab_ptr, out
    kept = np.ones(out.size, bool)
    kept[repeat] = False
    return np.r_[0, np.cumsum(np.bincount(point[kept], minlength=lab_ptr.size - 1))], out[kept]


def cooccurrence(train: XCData, rng: np.random.Generator, max_pairs: int) -> dict[str, float]:
    """Label pairs recurring, against the same labels shuffled across the points with each
    point's kept distinct (lift; :func:`shuffled_labels`: about 1 for labels drawn independently);
    NaN when the sampled pair occurrences cover over a tenth of all possible pairs (then
    pairs recur by chance and co-occurrence cannot be told apart at this size).

    The points are sampled for about ``max_pairs`` pair occurrences at the mean labels per
    point (at least 1,000 points drawn), and their pairs never exceed ``2 * max_pairs``: a point
    with more than ``max_pairs`` pairs alone is left out (``cooccurrence_wide_points``
    counts them), and the sample stops where the pairs would pass the bound."""
    lpp = max(train.labels.size / max(train.n_points, 1), 1.0)
    n = int(min(train.n_points, max(1000, max_pairs / max(lpp * (lpp - 1) / 2, 1))))
    drawn = rng.choice(train.n_points, n, replace=False)
    width = np.diff(train.label_indptr)[drawn].astype(np.int64)
    pairs = width * (width - 1) // 2
    wide = pairs > max_pairs
    drawn = drawn[~wide][np.cumsum(pairs[~wide]) <= 2 * max_pairs]
    rows = np.sort(drawn)
    n = int(rows.size)
    sub = train.subset(rows)
    observed, occurrences, _ = pair_repeat(sub.label_indptr, sub.labels, train.n_labels)
    shuffled, _, _ = pair_repeat(*shuffled_labels(sub.label_indptr, sub.labels, train.n_labels, rng),
                                  train.n_labels)
    saturated = occurrences > 0.1 * train.n_labels * (train.n_labels - 1) / 2
    lift = math.nan if saturated or not shuffled else observed / shuffled
    return {"cooccurrence_repeat": observed, "cooccurrence_repeat_shuffled": shuffled, "cooccurrence_lift": lift,
            "cooccurrence_points": n, "cooccurrence_wide_points": int(wide.sum()),
            "cooccurrence_pair_occurrences": occurrences,
            "cooccurrence_saturated": bool(saturated)}
