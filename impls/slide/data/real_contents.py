"""Whether an XC file with a real set's header holds that set's contents: the published means
and bounds any bag-of-words XC set meets (:func:`check_real_contents`), so that a file of
repeated or made-up rows under a real header is never labelled real data; whether it holds
the points its header says and the bytes they take (:func:`check_whole_file`: a cut file is
refused before it is parsed); and what a header that is no published shape is instead
(:func:`refuse_header`)."""
from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import NoReturn

import numpy as np

from impls.slide.data.dataset import RealDataMismatch, XCData

# How far a real set's file may lie from each published mean before it is refused as not
# that set: labels per point as :data:`impls.slide.xc_stats.MEAN_TOLERANCE` (the repository
# gives it to two decimals); non-zeros per point loosely, since it comes from the SLIDE paper's
# two-digit feature density and a genuine file must never be refused on that rounding. A test
# split is judged on the training split's published means, with the loose tolerance for both.
REAL_CONTENTS_TOLERANCE = {"labels_per_point": None, "nnz_per_point": 0.25}
TEST_CONTENTS_TOLERANCE = 0.25
# What any bag-of-words XC file holds and a file of repeated or made-up rows does not, with
# bounds far wider than the real sets' (xc_stats' SHAPE_CHECKS are the tight ones): two
# random points nearly orthogonal, most features and labels in use, no label on most points,
# a few labels with many points, over the mean of the labels in use (the real sets' label
# frequency is heavy-tailed over the labels they use: Amazon-670K's 3.99 points a label, most
# on a handful; labels drawn uniformly, over all of L or only a tenth of it, give a most
# frequent label at most about 4x that mean at a real set's size), and feature document
# frequency falling with rank as words' does (feature ids drawn uniformly give a slope near
# 0, text about -1). (statistic, comparison, bound, what it is), as xc_stats' SHAPE_CHECKS. A
# statistic the file is too small to show (NaN: fewer than xc_shape's LABEL_SHAPE_MIN labels in
# use, too few features for the Zipf fit) is not judged; no file with a real set's whole
# header is that small.
REAL_SHAPE_CHECKS = (
    ("random_pair_cosine", "<=", 0.3, "mean cosine of random point pairs"),
    ("features_used", ">=", 0.1, "fraction of the features any point uses"),
    ("labels_used", ">=", 0.1, "fraction of the labels any point carries"),
    ("top_label_share", "<=", 0.5, "share of points with the most frequent label"),
    ("label_freq_max_over_mean", ">=", 8.0,
     "points of the most frequent label over the mean per label in use"),
    ("df_zipf_slope", "<=", -0.3, "log-log slope of feature document frequency against rank"),
)


def real_shape(data: XCData, seed: int = 0, pairs: int = 2000) -> dict[str, float]:
    """The statistics :data:`REAL_SHAPE_CHECKS` bounds, of split ``data``: the mean cosine of
    ``pairs`` random point pairs, the fractions of the header's features and labels that some
    point uses, the share of points that carry the most frequent label (each in 0..1), the
    most frequent label's points over the mean per label in use, and the log-log slope of
    feature document frequency against rank (both NaN where the split is too small to show them)."""
    from impls.slide.data.xc_shape import df_zipf, label_frequency, random_pairs

    points = max(data.n_points, 1)
    counts = data.label_counts() if data.labels.size else np.zeros(1)
    zipf = df_zipf(data)[0]      # its document frequencies also count the features in use
    labels = label_frequency(data)[0]
    return {"random_pair_cosine": random_pairs(data, np.random.default_rng(seed), pairs)["random_pair_cosine"],
            "features_used": zipf["features_seen"] / max(data.n_features, 1),
            "labels_used": labels["labels_used"],
            "top_label_share": float(counts.max()) / points,
            "label_freq_max_over_mean": labels["label_freq_max_over_mean"],
            "df_zipf_slope": zipf["df_zipf_slope"]}


def check_real_contents(data: XCData, path: str | Path, like: str, split: str = "train") -> None:
    """Raise :class:`RealDataMismatch` when split ``data`` (read from ``path``) has the header of
    published set ``like`` but not its contents: mean labels per point or non-zero features per
    point away from :data:`impls.slide.xc_stats.PUBLISHED` (within :data:`REAL_CONTENTS_TOLERANCE`;
    :data:`TEST_CONTENTS_TOLERANCE` for a test split), or a shape outside
    :data:`REAL_SHAPE_CHECKS` (rows that repeat one another, features or labels mostly unused,
    one label on most points, labels or features drawn uniformly). A file of random points under a real header is not the real
    set. (A checksum would be proof; the files' sha256 is recorded beside every result for that.)"""
    from impls.slide.xc_stats import MEAN_TOLERANCE, PUBLISHED, _holds

    points = max(data.n_points, 1)
    contents = "contents" if split == "train" else f"{split} contents"
    measured = {"labels_per_point": data.labels.size / points, "nnz_per_point": data.indices.size / points}
    for name, tolerance in REAL_CONTENTS_TOLERANCE.items():
        published = PUBLISHED[like][name]
        allowed = (TEST_CONTENTS_TOLERANCE if split == "test" else
                   MEAN_TOLERANCE[name] if tolerance is None else tolerance)
        if not abs(measured[name] - published) <= allowed * published:
            raise RealDataMismatch(f"{path}: the header is {like}'s but the {contents} are not ("
                                   f"{name.replace('_', ' ')} {measured[name]:.2f}, published {published}); "
                                   + AS_ORDINARY)
    shape = real_shape(data)
    for name, op, bound, what in REAL_SHAPE_CHECKS:
        if not math.isnan(shape[name]) and not _holds(shape[name], op, bound):
            side = "at most" if op == "<=" else "at least"
            raise RealDataMismatch(f"{path}: the header is {like}'s but the {contents} are not: {what} "
                                   f"{shape[name]:.3f}, where any bag-of-words XC set has {side} {bound}; "
                                   + AS_ORDINARY)


# what a file with a real set's header but not its contents is read as, and how
AS_ORDINARY = ("read it as an ordinary XC file: python -m impls.slide.train --train FILE --test FILE --real no "
               "--allow-empty-labels (points without labels, as the real sets have, need the second flag; "
               "python -m impls.slide.xc_stats FILE needs neither)")


def published_header(name: str, split: str) -> tuple[int, int, int]:
    """The header (N, D, L) of published set ``name``'s ``split`` ("train" / "test") file."""
    from impls.slide.xc_stats import PUBLISHED

    pub = PUBLISHED[name]
    return pub[f"{split}_points"], pub["features"], pub["labels"]


def check_not_swapped(path: str | Path, header: tuple[int, int, int], split: str, candidates: list[str],
                      expected: str) -> None:
    """Raise :class:`RealDataMismatch` when ``header`` (N, D, L) of ``path``, given as ``split``, is
    the other split's published shape of one of the sets ``candidates``: the training and test
    files given the other way round (``expected``: the headers the split would take)."""
    flip = "test" if split == "train" else "train"
    for name in candidates:
        if header == published_header(name, flip):
            raise RealDataMismatch(f"{path}:1: header '{' '.join(map(str, header))}' is {name}'s published {flip} "
                                   f"shape, given as its {split} split (expected {expected}): are the training and "
                                   "test files given the other way round?")


def refuse_header(path: str | Path, header: tuple[int, int, int], split: str, candidates: list[str]) -> NoReturn:
    """Raise :class:`RealDataMismatch` for ``path``, given as ``split`` of one of the published
    sets ``candidates``, whose ``header`` (N, D, L) is none of their ``split`` shapes: naming
    line 1 and the expected headers, and what the file is instead (the other split, another
    published set's file, a subsample) and how to read it."""
    from impls.slide.data.dataset import REAL_SETS, _env_of
    from impls.slide.xc_stats import PUBLISHED

    n, d, l = header
    expected = "; ".join(f"{k}: '{PUBLISHED[k][split + '_points']} {PUBLISHED[k]['features']} "
                         f"{PUBLISHED[k]['labels']}'" for k in candidates)
    check_not_swapped(path, (n, d, l), split, candidates, expected)
    other = next((k for k in PUBLISHED if k not in candidates and (n, d, l) == published_header(k, split)), None)
    if other is not None:      # the right files for the wrong set: say which set they are
        registry_set = {v: k for k, v in REAL_SETS.items()}.get(other)
        where = f" (the registry set {registry_set}: {_env_of(registry_set)})" if registry_set else ""
        raise RealDataMismatch(f"{path}:1: header '{n} {d} {l}' is {other}'s published {split} shape, not "
                               f"{' or '.join(candidates)}'s (expected {expected}); give these files as "
                               f"{other}{where}")
    subsample = any((d, l) == (PUBLISHED[k]["features"], PUBLISHED[k]["labels"]) and n < PUBLISHED[k][f"{split}_points"]
                    for k in candidates)
    what = ("fewer points than the real set's, so a subsample of it" if subsample
            else f"so not {candidates[0]}'s files" if len(candidates) == 1 else "so not the files of any of them")
    raise RealDataMismatch(f"{path}:1: header '{n} {d} {l}' is not the published {split} shape of "
                           f"{' or '.join(candidates)} (expected {expected}): {what}; a file that is not a "
                           "real set's own is an ordinary XC file: give it by path (python -m impls.slide.train "
                           "--train FILE --test FILE --real no --allow-empty-labels, the second flag for points without "
                           "labels, as the real sets have; python -m impls.slide.xc_stats FILE --test FILE)")


BYTES_PER_ENTRY = 3     # the shortest 'f:v' token; with its separator a feature entry takes 4 bytes


def least_file_bytes(like: str, split: str, points: int) -> int:
    """The fewest bytes a file of ``points`` points of published set ``like`` can hold and still
    pass :func:`check_real_contents` for ``split``: :data:`BYTES_PER_ENTRY` per non-zero feature,
    at the lowest mean non-zeros per point that check allows (header and labels not counted, so
    every genuine file is larger)."""
    from impls.slide.xc_stats import PUBLISHED

    tolerance = TEST_CONTENTS_TOLERANCE if split == "test" else REAL_CONTENTS_TOLERANCE["nnz_per_point"]
    return int(BYTES_PER_ENTRY * points * PUBLISHED[like]["nnz_per_point"] * (1 - tolerance))


def check_whole_file(path: str | Path, points: int, like: str, split: str = "train") -> None:
    """Raise :class:`RealDataMismatch` when the file at ``path``, whose header says ``points``
    points of set ``like``, holds fewer data lines (a cut file: the error names both counts), or
    is too small to hold that many points' contents (:func:`least_file_bytes`: rows far sparser
    than the set's). Counts the file's lines once per file version (path, size, mtime), a
    newline count over a memory map (about a second for a real file of 500 MB)."""
    from impls.slide.xc_stats import PUBLISHED

    stat = os.stat(path)
    lines = _data_lines_of(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
    if lines < points:
        from impls.slide.data.xc_format import short_file_message

        raise RealDataMismatch(f"{short_file_message(path, points, lines)} (a part of {like}: "
                               f"{AS_ORDINARY})")
    least = least_file_bytes(like, split, points)
    if stat.st_size < least:
        raise RealDataMismatch(f"{path}: the header is {like}'s but its {stat.st_size:,} bytes cannot hold the "
                               f"{split} contents (at least {least:,} bytes for {points:,} points of about "
                               f"{PUBLISHED[like]['nnz_per_point']:g} non-zero features each); "
                               + AS_ORDINARY)


@functools.lru_cache(maxsize=16)
def _data_lines_of(path: str, size: int, mtime_ns: int) -> int:
    """:func:`impls.slide.data.xc_format.data_lines` of ``path``, cached by its size and mtime."""
    from impls.slide.data.xc_format import XCFormatError, data_lines

    try:
        return data_lines(path)
    except XCFormatError as err:
        raise RealDataMismatch(str(err)) from None
