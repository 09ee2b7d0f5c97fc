"""Where a history loses a number whose NaN its benchmark declares the worst outcome.

``make compare`` calls such a number, measured before and NaN now (a job that failed), a
regression; a history figure would only show its line ending. :func:`lost_points` finds
those NaNs as compare reads them (what the run logged for the point, else another track of
the same class and point with a value at that commit: its setup ran, so the NaN is the
track's own, not a skip), and :func:`mark_lost` draws each after a value of the same
version as a cross at the level the series last had.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from impls.harness import skip_log
from impls.harness.report.directions import class_of
from impls.harness.report.results import STATUS_OK, STATUS_SKIPPED, newest_per_point

LOST_MARKER = "X"


def lost_points(frame: pd.DataFrame, worst: frozenset[str] | set[str],
                logs: Mapping[str, list[skip_log.Entry]] | None = None) -> dict[str, dict[str, frozenset[str]]]:
    """``{benchmark: {param_label: commits}}``: the points of the benchmarks of ``worst``
    that asv stored as NaN (not as a failure) in the newest run of a commit, where the run
    logged "no value" for it (``logs``: :func:`skip_log.read`) or, where it logged nothing
    that fits, another track of the same class and point has a value there (its setup ran);
    a logged skip is none. Empty where none is."""
    if not worst or frame.empty:
        return {}
    frame = newest_per_point(frame, ("commit", "benchmark", "param_label"))
    values = pd.to_numeric(frame["value"], errors="coerce")
    ran = {(class_of(b), p, c) for b, p, c, v, st in zip(frame["benchmark"], frame["param_label"], frame["commit"],
                                                           values, frame["status"])
           if st == STATUS_OK and math.isfinite(v)}
    started = frame["started_at"] if "started_at" in frame else [None] * len(frame)
    durations = frame["duration"] if "duration" in frame else [None] * len(frame)
    found: dict[str, dict[str, set[str]]] = {}
    for b, p, c, st, at, took in zip(frame["benchmark"], frame["param_label"], frame["commit"], frame["status"],
                                     started, durations):
        if b not in worst or st != STATUS_SKIPPED:
            continue
        entry = skip_log.for_point(logs, b, p, str(c), at, took, False) if logs else None
        if (entry.outcome == skip_log.NO_VALUE) if entry is not None else (class_of(b), p, c) in ran:
            found.setdefault(b, {}).setdefault(p, set()).add(c)
    return {b: {p: frozenset(commits) for p, commits in by_point.items()} for b, by_point in found.items()}


def mark_lost(ax, values: list[float], order: list[str], lost: frozenset[str], divisor: float, colour,
              versions: list[str] | None = None) -> bool:
    """Draw on ``ax`` a cross, in ``colour``, at each commit of ``order`` in ``lost`` where the
    series ``values`` (one per commit, NaN or None where absent) is NaN after a finite value of the
    same benchmark version (``versions``, per commit, "" unknown: under a new version nothing
    is compared), at that value's level (over ``divisor``); return whether any was drawn."""
    at, last, last_version = [], None, ""
    for i, (commit, value, version) in enumerate(zip(order, values, versions or [""] * len(order))):
        value = math.nan if value is None else float(value)
        if math.isfinite(value):
            last, last_version = value, version
        elif commit in lost and last is not None and not (version and last_version and version != last_version):
            at.append((i, last / divisor))
    if at:
        ax.plot(*np.asarray(at, dtype=float).T, linestyle="none", marker=LOST_MARKER, markersize=8,
                color=colour, label="_lost")
    return bool(at)
