"""Statistics of an extreme-classification set, beside a real set's published figures where it is like one.

``python -m impls.slide.xc_stats FILE_OR_DATASET [--test FILE] [--profile P] [--like SET|none]``
prints, for an XC text file or a registry dataset, the counts and per-point / per-label
means the real sets' sources publish (the Extreme Classification Repository; the non-zero
features per point from the SLIDE paper's feature density), and the distribution shapes known
of such data qualitatively (heavy-tailed label frequency, Zipf feature document
frequency, TF-IDF values, co-occurring labels, random points sharing few features), each
with its tolerance and whether it holds. The published means judge only a set that is meant
to be the published one: a registry dataset shaped like it, a file whose header has its shape,
or ``--like``. Any other file is shown beside the published set whose per-point and per-label
means are all within :data:`NEAR_FACTOR` of its own (a scaled copy: its means not judged, its
shapes judged); a set near neither (another XC set: Bibtex, EURLex, Wiki10, ...), or any set
with ``--like none``, is shown alone, its shape checks a description (like or unlike the
text/TF-IDF sets SLIDE was measured on), not judged. Exit status: :data:`EXIT_STATUS`.

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
from impls.slide.data.xc_format import sum_repeated_features
from impls.slide.data.xc_shape import POINTS_MIN, cooccurrence, df_zipf, label_frequency, random_pairs, value_order

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
# A set is near a published set, a scaled copy of it, when each of these means is within a
# factor NEAR_FACTOR of the published one (the suite's profiles keep them and scale the counts).
NEAR_MEANS, NEAR_FACTOR = ("labels_per_point", "points_per_label", "nnz_per_point"), 2.0
EXIT_STATUS = ("0 when the set is measured and every judged check holds; 1 when a check of the comparison fails "
               "(with the published set of --like, of a registry set, of a file with a published set's header, or "
               f"the one whose means are all within {NEAR_FACTOR:g}x of the set's) or the set is too small for any "
               "check; 2 when the input cannot be read (one line on stderr). A set compared with no published set "
               "(--like none, or near neither) exits 0 unless too small: its shape checks only describe it")
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
    ("df_zipf_r2", ">=", 0.9, "Zipf fit quality (R^2 over ranks 11 .. features seen / 10)"),
    ("idf_value_spearman", ">=", 0.3, "TF-IDF: rarer features carry larger values"),
    ("random_pair_cosine", "<=", 0.05, "two random points are nearly orthogonal"),
    ("random_pair_shared_fraction", "<=", 0.15, "two random points share few features (of a point's)"),
    ("cooccurrence_lift", ">=", 2.0, "label pairs recur more than with the labels shuffled across points"),
)
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
    for stats, reasons in (label_frequency(train), df_zipf(train), value_order(train, rng, value_sample)):
        out.update(stats)
        why.update(reasons)
    out.update(random_pairs(train, rng, pairs))
    for name in ("random_pair_cosine", "random_pair_shared_fraction"):
        if math.isnan(out[name]) and train.n_points > 1:
            why[name] = "no sampled pair of points both has a feature"
    if train.n_points < POINTS_MIN:     # too few points to stand for a set, whatever they read
        few = f"{train.n_points} points, fewer than the {POINTS_MIN} a statistic sampled over points needs"
        for name in ("idf_value_spearman", "random_pair_cosine", "random_pair_shared_fraction"):
            out[name], why[name] = math.nan, few
    out.update(cooccurrence(train, rng, max_label_pairs))
    out["not_measurable"] = why
    return out


def _holds(value: float, op: str, bound) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return value <= bound if op == "<=" else value >= bound if op == ">=" else bound[0] <= value <= bound[1]


def _log_ratio(measured, published: float) -> float:
    """|log(measured / published)|; inf where either is not a positive number."""
    ok = measured is not None and not math.isnan(measured) and measured > 0 and published > 0
    return abs(math.log(measured / published)) if ok else math.inf


def is_near(stats: dict[str, Any], like: str) -> bool:
    """Whether the set's :data:`NEAR_MEANS` are each within :data:`NEAR_FACTOR` of published
    set ``like``'s: a copy of it scaled in its counts, as the suite's profiles are."""
    return all(_log_ratio(stats[k], PUBLISHED[like][k]) <= math.log(NEAR_FACTOR) for k in NEAR_MEANS)


def guess_like(stats: dict[str, Any]) -> str | None:
    """The published set the set is near (:func:`is_near`), the nearer in its means' log
    ratios if both; None when it is near neither (another kind of set)."""
    near = [k for k in PUBLISHED if is_near(stats, k)]
    return min(near, key=lambda k: sum(_log_ratio(stats[m], PUBLISHED[k][m]) for m in NEAR_MEANS), default=None)


def _shape_row(stats: dict[str, Any], name: str, op: str, bound, what: str, like: str | None) -> dict[str, Any]:
    """A :data:`SHAPE_CHECKS` row: ``ok`` whether it holds (None: not measurable); beside no
    published set (``like`` None), ``ok`` None and ``shape`` the same verdict, a description."""
    tol = f"in [{bound[0]}, {bound[1]}]" if op == "in" else f"{op} {bound}"
    measured, ok = stats[name], _holds(stats[name], op, bound)
    if name == "cooccurrence_lift" and stats.get("cooccurrence_saturated"):
        ok, what = None, "not measurable: too few labels for their pairs not to recur by chance"
    elif name == "cooccurrence_lift" and stats.get("cooccurrence_pair_occurrences") == 0:
        ok, what = None, "not measurable: no point (of those sampled) has two labels"
    elif measured is None or (isinstance(measured, float) and math.isnan(measured)):
        reason = stats.get("not_measurable", {}).get(name, "the set is too small for it")
        ok, what = None, f"not measurable: {reason} ({what})"
    elif name == "idf_value_spearman" and stats.get("values_all_equal"):
        if like is None:     # no IDF-vs-value relation to measure; a TF-IDF set's figures would fail it
            measured, ok, what = math.nan, None, f"not measurable: every value is equal (binary), no order ({what})"
        else:
            what += f"; every value here is equal (binary), {like}'s are TF-IDF"
    if name == "cooccurrence_lift" and stats.get("cooccurrence_wide_points"):
        what += (f"; {stats['cooccurrence_wide_points']:,} sampled point(s) left out, each with more "
                 f"label pairs than the sample's bound")
    if like is None:
        return {"name": name, "measured": measured, "published": None, "tolerance": tol, "ok": None,
                "shape": ok, "note": what}
    return {"name": name, "measured": measured, "published": None, "tolerance": tol, "ok": ok, "note": what}


def check(stats: dict[str, Any], like: str | None, judge_means: bool = True, subsample: bool = False,
          test_split: bool = False) -> list[dict[str, Any]]:
    """Rows ``{name, measured, published, tolerance, ok, note}``: the counts (``ok`` None: a
    scaled profile may change them; ``note`` says kept or the ratio, "scaled" where the set is
    near ``like`` (:func:`is_near`)), the published means within :data:`MEAN_TOLERANCE` (``ok``
    None without ``judge_means``: a set only guessed to be ``like``'s kind, a ``subsample`` of
    it or its ``test_split``, is shown beside its means, not judged by them), and the
    :data:`SHAPE_CHECKS` (text-like TF-IDF sets meet them; others may not). With ``like`` None
    (no published set) nothing is judged: the counts and means stand alone and each shape row
    carries its verdict as ``shape`` (:func:`_shape_row`)."""
    pub = PUBLISHED[like] if like is not None else {}
    scaled = like is not None and is_near(stats, like)
    rows = []
    for name in COUNTS:
        m = stats.get(name)
        note = ("" if like is None else "kept" if m == pub[name] else "not given" if m is None
                else f"{m - pub[name]:+,} ({m / pub[name]:.3g}x)" if round(m / pub[name], 2) == 1
                else f"scaled x{m / pub[name]:.3g}" if scaled
                else f"x{m / pub[name]:.3g}, not a scaled copy (means over {NEAR_FACTOR:g}x apart)")
        rows.append({"name": name, "measured": m, "published": pub.get(name), "tolerance": "count", "ok": None,
                     "note": note})
    for name, tol in MEAN_TOLERANCE.items():
        m = stats[name]
        if like is None:
            rows.append({"name": name, "measured": m, "published": None, "tolerance": "-", "ok": None, "note": ""})
            continue
        note = (f"{FEATURE_DENSITY[like]:.3%} of the real set's {pub['features']:,} features ({DENSITY_SOURCE})"
                if name == "nnz_per_point" and like in FEATURE_DENSITY else "")
        ok = abs(m - pub[name]) <= tol * pub[name] if judge_means else None
        if not judge_means:
            note = ("not judged: the test split's mean; the published one is the training split's" if test_split
                    else f"not judged: a subsample's means are not {like}'s (--like to judge)" if subsample
                    else f"not judged: {like} is only the nearest shape (--like to judge)")
        rows.append({"name": name, "measured": m, "published": pub[name], "tolerance": f"±{tol:.0%}",
                     "ok": ok, "note": note})
    rows += [_shape_row(stats, name, op, bound, what, like) for name, op, bound, what in SHAPE_CHECKS]
    return rows


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    return f"{v:,.4g}"


def _alone_table(rows: list[dict[str, Any]], why: str) -> list[str]:
    """The header and rows of a set shown beside no published set (``why``: the reason)."""
    known = ", ".join(PUBLISHED)
    lines = [f"no published set to compare with ({why}); published sets known here: {known} (--like SET "
             f"compares with one and judges the set's means by its published figures)",
             "shape: like / unlike the text/TF-IDF sets SLIDE was measured on; a description of the set, not a failure",
             f"{'statistic':30s} {'measured':>12s}  {'bound':16s} {'shape':6s} note"]
    for r in rows:
        shape = {None: "-", True: "like", False: "unlike", "": ""}[r.get("shape", "")]
        tol = "" if r["tolerance"] in ("count", "-") else r["tolerance"]
        lines.append(f"{r['name']:30s} {_fmt(r['measured']):>12s}  {tol:16s} {shape:6s} {r['note']}".rstrip())
    return lines


def format_table(rows: list[dict[str, Any]], like: str | None, extra: dict[str, Any] | None = None,
                 guessed: bool = False, subsample: bool = False, test_split: bool = False,
                 alone_why: str = "--like none") -> str:
    """The table of :func:`check`'s rows; with ``like`` None, the set alone (``alone_why``)."""
    how = (f" (guessed: its labels a point, points a label and non-zeros a point are each within "
           f"{NEAR_FACTOR:g}x of {like}'s; pass --like to judge a set against it)" if guessed else
           " (the set's test split: its header is the published test split's, so its means, which are the "
           "training split's in the published table, are shown beside them, not judged)" if test_split and subsample
           else " (a subsample: its header has the set's features and labels but not its training split's point "
           "count, so its means are shown beside the set's, not judged; pass --like to judge them)" if subsample
           else "")
    if like is None:
        lines = _alone_table(rows, alone_why)
    else:
        lines = [f"compared with {like}{how} (counts and label means: {SOURCE}; non-zeros: {DENSITY_SOURCE})",
                 f"{'statistic':30s} {'measured':>12s} {'published':>12s}  {'tolerance':16s} {'ok':4s} note"]
        for r in rows:
            ok = "-" if r["ok"] is None else ("yes" if r["ok"] else "NO")
            lines.append(f"{r['name']:30s} {_fmt(r['measured']):>12s} {_fmt(r['published']):>12s}  "
                         f"{r['tolerance']:16s} {ok:4s} {r['note']}")
    for k, v in (extra or {}).items():
        lines.append(f"{k:30s} {_fmt(v):>12s}")
    return "\n".join(lines)


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
    ap = cli.parser(prog="python -m impls.slide.xc_stats", description=__doc__.split("\n\n")[0],
                    epilog=f"Exit status: {EXIT_STATUS}.")
    ap.add_argument("source", metavar="FILE_OR_DATASET", help="XC text file (training split) or registry dataset name")
    ap.add_argument("--test", help="the test split's XC file (for a file source)")
    cli.add_profile_option(ap, "profile of a registry dataset (default: DLSYSBENCH_PROFILE, else quick)")
    ap.add_argument("--like", choices=[*sorted(PUBLISHED), "none"],
                    help="published set to compare with, its means judged, or none: the set's own statistics alone "
                         "(default: a registry set's or a real header's set, else the published set whose means are "
                         f"all within {NEAR_FACTOR:g}x of the set's, else none)")
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
    stats = measure(train, test, seed=args.seed)
    guessed = not (args.like or like)
    like = None if args.like == "none" else args.like or like or guess_like(stats)
    if test_split:      # the set's whole test split given alone: its points are the test points
        stats["test_points"], stats["train_points"] = stats["train_points"], None
    rows = check(stats, like, judge_means=not (guessed or subsample), subsample=subsample,
                 test_split=test_split and subsample)
    extra = {k: v for k, v in stats.items() if k not in {r["name"] for r in rows} | {"not_measurable"}}
    means = ", ".join(f"{k.replace('_per_', ' a ').replace('nnz', 'non-zeros')} {_fmt(stats[k])}" for k in NEAR_MEANS)
    alone = "--like none" if args.like else f"{means}: not all within {NEAR_FACTOR:g}x of either's"
    print(format_table(rows, like, extra, guessed, subsample, test_split, alone))
    if like is None:    # shown alone: the shape checks describe the set; only a set too small for all fails
        if all(r.get("shape") is None for r in rows):
            print("nothing judged: the set is too small for every check (and there is no published set to compare)")
            return 1
        return 0
    if all(r["ok"] is None for r in rows):
        print("nothing judged: the set is too small for every check (and its means are not judged)")
    return 0 if any(r["ok"] for r in rows) and all(r["ok"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
