"""Statistics of an extreme-classification set beside the real sets' published figures.

``python -m impls.slide.xc_stats FILE_OR_DATASET [--test FILE] [--profile P] [--like SET]``
prints, for an XC text file or a registry dataset, the counts and per-point / per-label
means the real sets' sources publish (the Extreme Classification Repository; the non-zero
features per point from the SLIDE paper's feature density), and the distribution shapes known
of such data qualitatively (heavy-tailed label frequency, Zipf feature document
frequency, TF-IDF values, co-occurring labels, random points sharing few features), each
with its tolerance and whether it holds. The published means judge only a set that is meant
to be the published one: a registry dataset shaped like it, a file whose header has its shape,
or ``--like``; any other file is shown beside the nearest published set, its means not judged.
Exit status 1 when a check fails or none can be judged, 2 (one line on stderr) when the input cannot be read.

:func:`measure` returns the statistics as a dict, :func:`check` the rows of the table.
"""
from __future__ import annotations

import dataclasses
import math
import sys
from typing import Any

import numpy as np

from impls.harness import cli
from impls.slide.data.dataset import XCData
from impls.slide.data.xc_format import row_norms, sum_repeated_features

SOURCE = "Extreme Classification Repository, http://manikvarma.org/downloads/XC/XMLRepository.html"
DENSITY_SOURCE = "SLIDE paper (MLSys 2020, arXiv 1903.03129), Table 1: feature sparsity"
# The SLIDE paper's feature density (non-zero features / features), given to two digits;
# the repository's table has no per-point feature count.
FEATURE_DENSITY = {"amazon-670k": 0.055e-2, "delicious-200k": 0.038e-2}
# Published figures of the real sets: counts and label means from SOURCE (the counts also in
# the SLIDE paper's Table 1); non-zeros per point = FEATURE_DENSITY x features (DENSITY_SOURCE),
# whose two-digit rounding alone leaves +-0.9% (Amazon) and +-1.3% (Delicious).
PUBLISHED = {
    "amazon-670k": {"features": 135909, "labels": 670091, "train_points": 490449, "test_points": 153025,
                    "points_per_label": 3.99, "labels_per_point": 5.45},
    "delicious-200k": {"features": 782585, "labels": 205443, "train_points": 196606, "test_points": 100095,
                       "points_per_label": 72.29, "labels_per_point": 75.54},
}
for _set, _density in FEATURE_DENSITY.items():
    PUBLISHED[_set]["nnz_per_point"] = round(_density * PUBLISHED[_set]["features"], 2)
DATASET_LIKE = {"slide-amazon670k": "amazon-670k", "slide-amazon67k": "amazon-670k",
                "slide-delicious200k": "delicious-200k"}
COUNTS = ("features", "labels", "train_points", "test_points")
# Relative tolerance of each published mean (checked at every profile: scaled profiles keep them).
MEAN_TOLERANCE = {"labels_per_point": 0.03, "points_per_label": 0.05, "nnz_per_point": 0.03}
# Distribution shapes: (statistic, comparison, bound, what it stands for). Not published as
# numbers for the real sets; the bounds say what "heavy-tailed", "Zipf", ... mean here.
# The label-frequency shape is judged over the labels with a training point (a header's unused
# labels would make any few labels look heavy-tailed); the real sets use nearly all of theirs, so
# the bounds read as over all labels: Amazon-670K's 3.99 points a label, most on a handful.
SHAPE_CHECKS = (
    ("label_freq_median_over_mean", "<=", 0.75, "label frequency heavy-tailed: median well below the mean "
                                                "(labels in use)"),
    ("label_share_below_mean", ">=", 0.6, "most labels in use have fewer training points than their mean"),
    ("label_freq_max_over_mean", ">=", 10.0, "a few labels have very many points (over the mean of labels in use)"),
    ("label_zipf_slope", "<=", -0.3, "label frequency falls with rank, a power law (log-log slope, labels in use)"),
    ("df_zipf_slope", "in", (-1.6, -0.6), "feature document frequency Zipf (log-log slope vs rank)"),
    ("df_zipf_r2", ">=", 0.9, "Zipf fit quality (R^2 over ranks 10 .. features seen / 10)"),
    ("idf_value_spearman", ">=", 0.3, "TF-IDF: rarer features carry larger values"),
    ("random_pair_cosine", "<=", 0.05, "two random points are nearly orthogonal"),
    ("random_pair_shared_fraction", "<=", 0.15, "two random points share few features (of a point's)"),
    ("cooccurrence_lift", ">=", 2.0, "label pairs recur more than with the labels shuffled across points"),
)
LABEL_SHAPE_MIN = 100   # labels with a training point, at the fewest, for the label shape checks to judge
# Points, at the fewest, for the statistics sampled over points (random pairs, TF-IDF ordering):
# fewer give under 435 distinct pairs and idf under 30 values, too few to stand for a set.
POINTS_MIN = 30
# A log-log rank fit (_rank_fit) is over ranks 11 .. seen / 10: at least 3 ranks, 130 seen.
RANK_FIT_FIRST, RANK_FIT_LEAST = 10, 130


def _rank_fit(counts: np.ndarray) -> tuple[float, float, int]:
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


def _fit_why(prefix: str, slope: float, r2: float, seen: int, what: str) -> dict[str, str]:
    """Why the ``prefix``_slope / _r2 of a :func:`_rank_fit` over ``seen`` ``what`` are NaN."""
    few = f"{seen:,} {what} in use, fewer than the {RANK_FIT_LEAST} the fit over ranks 11 .. {what} in use / 10 needs"
    why = {f"{prefix}_slope": few} if math.isnan(slope) else {}
    if math.isnan(r2):
        why[f"{prefix}_r2"] = few if math.isnan(slope) else f"the fit's {what} all have equally many points"
    return why


def _label_frequency(train: XCData) -> tuple[dict[str, float], dict[str, str]]:
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
    slope, r2, _ = _rank_fit(counts)
    stats = {"label_freq_median_over_mean": float(np.median(used) / mean) if shown else math.nan,
             "label_share_below_mean": float(np.mean(used < mean)) if shown else math.nan,
             "label_share_at_most_5": float(np.mean(used <= 5)) if used.size else math.nan,
             "label_freq_max_over_mean": float(used.max() / mean) if shown else math.nan,
             "label_zipf_slope": slope, "label_zipf_r2": r2,
             "labels_used": used.size / max(counts.size, 1),
             "top1pct_label_share": float(top.sum() / total)}
    why = _fit_why("label_zipf", slope, r2, used.size, "labels")
    if not shown:
        few = f"{used.size} labels in use, fewer than the {LABEL_SHAPE_MIN} a heavy tail needs to show"
        why |= {k: few for k in ("label_freq_median_over_mean", "label_share_below_mean", "label_freq_max_over_mean")}
    return stats, why


def _df_zipf(train: XCData) -> tuple[dict[str, float], dict[str, str]]:
    """Log-log fit of feature document frequency against rank (:func:`_rank_fit`) over the
    features seen, and why it is NaN where it is."""
    df = np.bincount(train.indices, minlength=train.n_features)
    slope, r2, seen = _rank_fit(df)
    return ({"df_zipf_slope": slope, "df_zipf_r2": r2, "features_seen": seen,
             "df_max_fraction": float(df.max() / max(train.n_points, 1)) if df.size else math.nan},
            _fit_why("df_zipf", slope, r2, seen, "features"))


def _average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 of ``a``, tied values sharing their mean rank (float64)."""
    order = np.argsort(a, kind="stable")
    sorted_a = a[order]
    starts = np.flatnonzero(np.r_[True, sorted_a[1:] != sorted_a[:-1]])
    ends = np.r_[starts[1:], a.size]
    ranks = np.empty(a.size, np.float64)
    ranks[order] = np.repeat((starts + ends - 1) / 2.0, ends - starts)
    return ranks


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho of ``a`` and ``b`` with tied values at their mean rank; NaN with fewer
    than 3 pairs or when either is constant (no order to correlate)."""
    if a.size < 3:
        return math.nan
    ra, rb = _average_ranks(a), _average_ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])


def _values(train: XCData, rng: np.random.Generator, sample: int) -> tuple[dict[str, float], dict[str, str]]:
    """Spearman(idf, value) over up to ``sample`` feature entries (0 for values all equal: a
    binary bag of words, rarer features no larger), the row norms' mean and largest distance
    from 1, and why the first is NaN where it is."""
    df = np.bincount(train.indices, minlength=train.n_features)
    pick = rng.choice(train.indices.size, min(sample, train.indices.size), replace=False)
    idf = np.log((1.0 + train.n_points) / (1.0 + df[train.indices[pick]]))
    norms = row_norms(train)
    values = train.values[pick]
    rho = 0.0 if values.size > 2 and np.all(values == values[0]) else _spearman(idf, values)
    why = {}
    if math.isnan(rho):
        why["idf_value_spearman"] = ("fewer than 3 feature entries" if values.size < 3 else
                                     "every sampled feature is in equally many points (idf constant): no order")
    return {"idf_value_spearman": rho,
            "row_norm_mean": float(norms.mean()) if norms.size else math.nan,
            "row_norm_max_deviation": float(np.abs(norms - 1.0).max()) if norms.size else math.nan}, why


def _random_pairs(train: XCData, rng: np.random.Generator, pairs: int) -> dict[str, float]:
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


def _pair_repeat(lab_ptr: np.ndarray, labels: np.ndarray, n_labels: int) -> tuple[float, int, int]:
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


def _shuffled_labels(lab_ptr: np.ndarray, labels: np.ndarray, n_labels: int, rng: np.random.Generator,
                     rounds: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """(label_indptr, labels): ``labels`` permuted across the points with each point's labels
    kept distinct, as in a real set. After the permutation, each label a point holds again is
    swapped with one at a random other place, in rounds until none repeats; every label keeps
    its count and every point its length. A repeat left after ``rounds`` rounds (none seen in
    practice) is dropped."""
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


def _cooccurrence(train: XCData, rng: np.random.Generator, max_pairs: int) -> dict[str, float]:
    """Label pairs recurring, against the same labels shuffled across the points with each
    point's kept distinct (lift; :func:`_shuffled_labels`: about 1 for labels drawn independently);
    NaN when the sampled pair occurrences cover over a tenth of all possible pairs (then
    pairs recur by chance and co-occurrence cannot be told apart at this size)."""
    lpp = max(train.labels.size / max(train.n_points, 1), 1.0)
    n = int(min(train.n_points, max(1000, max_pairs / max(lpp * (lpp - 1) / 2, 1))))
    rows = np.sort(rng.choice(train.n_points, n, replace=False))
    sub = train.subset(rows)
    observed, occurrences, _ = _pair_repeat(sub.label_indptr, sub.labels, train.n_labels)
    shuffled, _, _ = _pair_repeat(*_shuffled_labels(sub.label_indptr, sub.labels, train.n_labels, rng),
                                  train.n_labels)
    saturated = occurrences > 0.1 * train.n_labels * (train.n_labels - 1) / 2
    lift = math.nan if saturated or not shuffled else observed / shuffled
    return {"cooccurrence_repeat": observed, "cooccurrence_repeat_shuffled": shuffled, "cooccurrence_lift": lift,
            "cooccurrence_points": n, "cooccurrence_pair_occurrences": occurrences,
            "cooccurrence_saturated": bool(saturated)}


def _merged(data: XCData) -> tuple[XCData, int]:
    """``data`` with each point's repeated features merged (one feature, the sum of the
    values: what every product reads), and how many points had a repeat."""
    indptr, indices, values, repeats = sum_repeated_features(data.indptr, data.indices, data.values)
    if not repeats:
        return data, 0
    return dataclasses.replace(data, indptr=indptr, indices=indices, values=values), repeats


def measure(train: XCData, test: XCData | None = None, seed: int = 0, pairs: int = 2000,
            value_sample: int = 200_000, max_label_pairs: int = 2_000_000) -> dict[str, Any]:
    """Every statistic of ``train`` (and the counts of ``test``): counts, means, percentiles of
    non-zeros per point, label-frequency shape, feature document-frequency Zipf fit, TF-IDF
    ordering and row norms, random-pair overlap and label co-occurrence (sampled, seeded); a
    statistic the set cannot show is NaN, with the reason under ``not_measurable`` (name: reason;
    fewer than :data:`POINTS_MIN` points leave the statistics sampled over points NaN). A
    point's repeated feature counts once, with
    the sum of its values (``points_with_a_repeated_feature`` says how many points had one).
    Raises ValueError for a set without points."""
    if train.n_points == 0:
        raise ValueError("the training split has no points: nothing to measure")
    rng = np.random.default_rng(seed)
    train, repeats = _merged(train)
    test = _merged(test)[0] if test is not None else None
    nnz = np.diff(train.indptr)
    out: dict[str, Any] = {
        "features": train.n_features, "labels": train.n_labels, "train_points": train.n_points,
        "test_points": test.n_points if test is not None else None,
        "labels_per_point": train.labels.size / max(train.n_points, 1),
        "points_per_label": train.labels.size / max(train.n_labels, 1),
        "nnz_per_point": float(nnz.mean()) if nnz.size else math.nan,
        "nnz_p10": float(np.percentile(nnz, 10)), "nnz_p50": float(np.percentile(nnz, 50)),
        "nnz_p90": float(np.percentile(nnz, 90)),
        "points_with_a_repeated_feature": repeats,
    }
    if test is not None:
        out["test_labels_per_point"] = test.labels.size / max(test.n_points, 1)
        out["test_nnz_per_point"] = test.indices.size / max(test.n_points, 1)
    why: dict[str, str] = {}
    for stats, reasons in (_label_frequency(train), _df_zipf(train), _values(train, rng, value_sample)):
        out.update(stats)
        why.update(reasons)
    out.update(_random_pairs(train, rng, pairs))
    for name in ("random_pair_cosine", "random_pair_shared_fraction"):
        if math.isnan(out[name]) and train.n_points > 1:
            why[name] = "no sampled pair of points both has a feature"
    if train.n_points < POINTS_MIN:     # too few points to stand for a set, whatever they read
        few = f"{train.n_points} points, fewer than the {POINTS_MIN} a statistic sampled over points needs"
        for name in ("idf_value_spearman", "random_pair_cosine", "random_pair_shared_fraction"):
            out[name], why[name] = math.nan, few
    out.update(_cooccurrence(train, rng, max_label_pairs))
    out["not_measurable"] = why
    return out


def _holds(value: float, op: str, bound) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return value <= bound if op == "<=" else value >= bound if op == ">=" else bound[0] <= value <= bound[1]


def check(stats: dict[str, Any], like: str, judge_means: bool = True, subsample: bool = False,
          test_split: bool = False) -> list[dict[str, Any]]:
    """Rows ``{name, measured, published, tolerance, ok, note}``: the counts (``ok`` None: a
    scaled profile may change them; ``note`` says kept or the ratio), the published means
    within :data:`MEAN_TOLERANCE` (``ok`` None without ``judge_means``: a set only guessed to
    be ``like``'s kind, a ``subsample`` of it or its ``test_split``, is shown beside its means,
    not judged by them), and the :data:`SHAPE_CHECKS` (text-like TF-IDF sets meet them; others may not)."""
    pub = PUBLISHED[like]
    rows = []
    for name in COUNTS:
        m = stats.get(name)
        note = ("kept" if m == pub[name] else "not given" if m is None
                else f"{m - pub[name]:+,} ({m / pub[name]:.3g}x)" if round(m / pub[name], 2) == 1
                else f"scaled x{m / pub[name]:.3g}")
        rows.append({"name": name, "measured": m, "published": pub[name], "tolerance": "count", "ok": None, "note": note})
    for name, tol in MEAN_TOLERANCE.items():
        m = stats[name]
        note = (f"{FEATURE_DENSITY[like]:.3%} of the real set's {pub['features']:,} features ({DENSITY_SOURCE})"
                if name == "nnz_per_point" and like in FEATURE_DENSITY else "")
        ok = abs(m - pub[name]) <= tol * pub[name] if judge_means else None
        if not judge_means:
            note = ("not judged: the test split's mean; the published one is the training split's" if test_split
                    else f"not judged: a subsample's means are not {like}'s (--like to judge)" if subsample
                    else f"not judged: {like} is only the nearest shape (--like to judge)")
        rows.append({"name": name, "measured": m, "published": pub[name], "tolerance": f"±{tol:.0%}",
                     "ok": ok, "note": note})
    for name, op, bound, what in SHAPE_CHECKS:
        tol = f"in [{bound[0]}, {bound[1]}]" if op == "in" else f"{op} {bound}"
        ok = _holds(stats[name], op, bound)
        if name == "cooccurrence_lift" and stats.get("cooccurrence_saturated"):
            ok, what = None, "not measurable: too few labels for their pairs not to recur by chance"
        elif name == "cooccurrence_lift" and stats.get("cooccurrence_pair_occurrences") == 0:
            ok, what = None, "not measurable: no point (of those sampled) has two labels"
        elif stats[name] is None or (isinstance(stats[name], float) and math.isnan(stats[name])):
            reason = stats.get("not_measurable", {}).get(name, "the set is too small for it")
            ok, what = None, f"not measurable: {reason} ({what})"
        rows.append({"name": name, "measured": stats[name], "published": None, "tolerance": tol,
                     "ok": ok, "note": what})
    return rows


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    return f"{v:,.4g}"


def format_table(rows: list[dict[str, Any]], like: str, extra: dict[str, Any] | None = None,
                 guessed: bool = False, subsample: bool = False, test_split: bool = False) -> str:
    how = (" (guessed: the published set nearest in features and labels; pass --like to judge a set "
           "against it)" if guessed else
           " (the set's test split: its header is the published test split's, so its means, which are the "
           "training split's in the published table, are shown beside them, not judged)" if test_split and subsample
           else " (a subsample: its header has the set's features and labels but not its training split's point "
           "count, so its means are shown beside the set's, not judged; pass --like to judge them)" if subsample
           else "")
    lines = [f"compared with {like}{how} (counts and label means: {SOURCE}; non-zeros: {DENSITY_SOURCE})",
             f"{'statistic':30s} {'measured':>12s} {'published':>12s}  {'tolerance':16s} {'ok':4s} note"]
    for r in rows:
        ok = "-" if r["ok"] is None else ("yes" if r["ok"] else "NO")
        lines.append(f"{r['name']:30s} {_fmt(r['measured']):>12s} {_fmt(r['published']):>12s}  "
                     f"{r['tolerance']:16s} {ok:4s} {r['note']}")
    for k, v in (extra or {}).items():
        lines.append(f"{k:30s} {_fmt(v):>12s}")
    return "\n".join(lines)


def guess_like(n_features: int, n_labels: int) -> str:
    """The published set whose (features, labels) is nearest in log scale."""
    return min(PUBLISHED, key=lambda k: abs(math.log(PUBLISHED[k]["features"] / max(n_features, 1)))
               + abs(math.log(PUBLISHED[k]["labels"] / max(n_labels, 1))))


def load(source: str, test: str | None = None, profile: str | None = None,
         allow_empty_labels: bool = False) -> tuple[XCData, XCData | None, str | None, bool]:
    """(train, test, like, subsample) for a registry dataset name or an XC text file (and its
    test file).

    A file whose header has a real set's features and labels is read as that set (points
    without labels allowed, as ``train`` reads it); ``subsample`` is True when the training
    file's point count is not the set's published one (its means are then not the set's). Raises :class:`cli.UsageError` for a name that
    is neither a file nor a registry dataset, or a test file of another shape."""
    from pathlib import Path

    from impls.slide.data import dataset

    if not Path(source).exists() and "/" not in source:
        dataset.raise_if_broken(source)
        if source not in (known := dataset.xc_datasets()):
            raise cli.UsageError(f"{source}: no such file, and no extreme-classification dataset of that name",
                                 "FILE_OR_DATASET", f"expected an XC text file or one of {', '.join(known)}")
        if test:
            raise cli.UsageError(f"--test with the registry dataset {source}", "--test",
                                 "expected --test only beside an XC text file (a registry set has its own)")
        tr, te, info = dataset.from_registry(source, profile)
        return tr, te, DATASET_LIKE.get(source) or info.get("like"), False   # a real set: the one it was checked as
    cli.check_file(source, "FILE_OR_DATASET", "an XC text file or a registry dataset name", regular=True)
    if profile:
        raise cli.UsageError(f"--profile {profile} with the file {source}", "--profile",
                             "expected --profile only with a registry dataset (a file is read whole)")
    cli.check_file(test, "--test", "an XC text file", regular=True)
    if test:
        try:
            dataset.check_same_shape(source, test)
        except dataset.ShapeMismatch as err:
            raise cli.UsageError(str(err), "--test", "expected the training file's shape") from None
    like = dataset.claimed_real_set(source, *([test] if test else []))
    allow = allow_empty_labels or like is not None
    tr = dataset.from_file(source, allow_empty_labels=allow)
    te = dataset.from_file(test, allow_empty_labels=allow) if test else None
    return tr, te, like, like is not None and not _is_whole_set(source, like)


def _is_whole_set(source: str, like: str, split: str = "train") -> bool:
    """Whether the file's header is the published set ``like``'s whole ``split`` (its point
    count as published), not a subsample with its features and labels. For the means only the
    training file counts: :func:`measure` takes them from it alone."""
    from impls.slide.data import dataset

    try:
        dataset.check_real_header(source, split, like)
    except dataset.RealDataMismatch:
        return False
    return True


@cli.command("python -m impls.slide.xc_stats")
def main(argv: list[str] | None = None) -> int:
    ap = cli.parser(prog="python -m impls.slide.xc_stats", description=__doc__.split("\n\n")[0])
    ap.add_argument("source", metavar="FILE_OR_DATASET", help="XC text file (training split) or registry dataset name")
    ap.add_argument("--test", help="the test split's XC file (for a file source)")
    cli.add_profile_option(ap, "profile of a registry dataset (default: DLSYSBENCH_PROFILE, else quick)")
    ap.add_argument("--like", choices=sorted(PUBLISHED), help="published set to compare with (default: guessed)")
    ap.add_argument("--allow-empty-labels", action="store_true",
                    help="accept points without labels (some repository files have them; always on for a "
                         "file with a real set's published shape)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sampled statistics (random pairs, label pairs)")
    args = ap.parse_args(argv)
    cli.number(args.seed, "--seed", minimum=0, maximum=2**32 - 1, integer=True)
    train, test, like, subsample = load(args.source, args.test, args.profile, args.allow_empty_labels)
    if train.n_points == 0:
        raise cli.UsageError(f"{args.source}: the training split has no points", "FILE_OR_DATASET",
                             "expected a set with at least one point")
    test_split = subsample and test is None and _is_whole_set(args.source, like, "test")
    subsample = subsample and not args.like      # its means are not the whole set's: shown, not judged
    guessed = not (args.like or like)
    like = args.like or like or guess_like(train.n_features, train.n_labels)
    stats = measure(train, test, seed=args.seed)
    if test_split:      # the set's whole test split given alone: its points are the test points
        stats["test_points"], stats["train_points"] = stats["train_points"], None
    rows = check(stats, like, judge_means=not (guessed or subsample), subsample=subsample,
                 test_split=test_split and subsample)
    extra = {k: v for k, v in stats.items() if k not in {r["name"] for r in rows} | {"not_measurable"}}
    print(format_table(rows, like, extra, guessed, subsample, test_split))
    if all(r["ok"] is None for r in rows):
        print("nothing judged: the set is too small for every check (and its means are not judged)")
    return 0 if any(r["ok"] for r in rows) and all(r["ok"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
