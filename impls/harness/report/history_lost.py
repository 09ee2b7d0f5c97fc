"""Where a history loses a number whose NaN its benchmark declares the worst outcome.

``make compare`` calls such a number, measured before and NaN now (a job that failed), a
regression; a history figure would only show its line ending. :func:`lost_points` finds
those NaNs as compare reads them (another track of the same class and point has a value at
that commit: its setup ran, so the NaN is the track's own, not a skip), and
:func:`mark_lost` draws each after a value as a cross at the level the series last had.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from impls.harness.report.directions import class_of

LOST_MARKER = "X"


def lost_points(frame: pd.DataFrame, worst: frozenset[str] | set[str]) -> dict[str, dict[str, frozenset[str]]]:
    """``{benchmark: {param_label: commits}}``: the points of the benchmarks of ``worst``
    whose value is NaN at a commit where another track of the same class and point has a
    finite value (empty where none is)."""
    if not worst or frame.empty:
        return {}
    values = pd.to_numeric(frame["value"], errors="coerce")
    ran = {(class_of(b), p, c) for b, p, c, v in zip(frame["benchmark"], frame["param_label"], frame["commit"], values)
           if math.isfinite(v)}
    found: dict[str, dict[str, set[str]]] = {}
    for b, p, c, v in zip(frame["benchmark"], frame["param_label"], frame["commit"], values):
        if b in worst and not math.isfinite(v) and (class_of(b), p, c) in ran:
            found.setdefault(b, {}).setdefault(p, set()).add(c)
    return {b: {p: frozenset(commits) for p, commits in by_point.items()} for b, by_point in found.items()}


def mark_lost(ax, values: list[float], order: list[str], lost: frozenset[str], divisor: float, colour) -> bool:
    """Draw on ``ax`` a cross, in ``colour``, at each commit of ``order`` in ``lost`` where the
    series ``values`` (one per commit, NaN where absent) is NaN after a finite value, at that
    value's level (over ``divisor``); return whether any was drawn."""
    at, last = [], None
    for i, (commit, value) in enumerate(zip(order, values)):
        if math.isfinite(value):
            last = value
        elif commit in lost and last is not None:
            at.append((i, last / divisor))
    if at:
        ax.plot(*np.asarray(at, dtype=float).T, linestyle="none", marker=LOST_MARKER, markersize=8,
                color=colour, label="_lost")
    return bool(at)
