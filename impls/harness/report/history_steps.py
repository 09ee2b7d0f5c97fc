"""Steps in one history series: where its level moved, judged as ``make compare`` judges.

Each series goes through asv's ``step_detect.detect_steps`` (a piecewise-constant fit with
automatic penalty); every boundary between two fitted levels is a step at the first commit of
the new level, judged with the benchmark's declared direction (:mod:`directions`), its
measured threshold (:mod:`noise`) and, where a level holds bounds, what the bounds prove.
Steps are looked for within one benchmark version and one environment only: where either
changes, the series is cut (:data:`CUTS`) and nothing is judged across the cut.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from asv.step_detect import detect_steps

from impls.harness.report import compare
from impls.harness.report.directions import JUDGED
from impls.harness.report.noise import RELATIVE, Threshold, moved_beyond

NEW_VERSION = "new version"
NEW_ENVIRONMENT = "new environment"
CUTS = (NEW_VERSION, NEW_ENVIRONMENT)   # where a series is cut: no step is judged across one
STEP_COLOURS = {"regression": "#cf222e", "improvement": "#1a7f37", "change": "#6e7781",
                NEW_VERSION: "#6e7781", NEW_ENVIRONMENT: "#6e7781"}


@dataclasses.dataclass(frozen=True)
class Step:
    """A level shift in one series: from ``before`` to ``after`` at commit ``commit``."""

    params: str
    commit: str
    before: float
    after: float
    kind: str  # regression / improvement / change / new version / new environment


KIND_ORDER = ("regression", "improvement", "change")   # how a list of steps is ordered: the worst first


def kind_rank(kind: str) -> int:
    """A step kind's place in :data:`KIND_ORDER` (a cut after them)."""
    return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)


def step_lines(steps: tuple[Step, ...] | list[Step]) -> list[str]:
    """One plain-text line per judged step, regressions first ("regression at 1a2b3c4d: n=1
    10 → 20"), then one line per cut (a new version or environment) and commit, counting the
    series it cuts ("new version at 1a2b3c4d: 140 series"), in commit order within each kind."""
    judged = sorted((s for s in steps if s.kind not in CUTS), key=lambda s: kind_rank(s.kind))
    lines = [f"{s.kind} at {s.commit[:8]}: {s.params} {s.before:.4g} → {s.after:.4g}" for s in judged]
    cuts: dict[tuple[str, str], int] = {}
    for s in steps:
        if s.kind in CUTS:
            cuts[(s.kind, s.commit)] = cuts.get((s.kind, s.commit), 0) + 1
    return lines + [f"{kind} at {commit[:8]}: {n} series" for (kind, commit), n in cuts.items()]


def series_steps(values: list[float], direction: str, threshold: Threshold | None = None,
                 versions: list[str] | None = None,
                 bounds: list[str] | None = None,
                 environments: list[str] | None = None) -> list[tuple[int, float, float, str]]:
    """Return (index of the first point of the new level, before, after, kind) for each step.

    ``values`` is one series along the commits (NaN where absent); ``versions`` the
    benchmark version of each point ("" where unknown), ``environments`` the environment of
    each (:func:`runs.environment`; "" where unknown). The series is cut before a point whose
    version differs from the last known one, each cut a step of kind "new version", and
    before one whose environment does (a plain ``asv run``'s virtualenv after the project's
    ``.venv``: thresholds measured in one do not cover the change), a "new environment";
    steps are looked for within each piece alone. A piece of fewer than 3 values has
    none. With the number's measured ``threshold`` (:mod:`noise`; used only on the piece of
    the version it was measured on, or everywhere when it records none), a step within the
    threshold for two levels of that many commits found among the series' places to cut
    (:meth:`noise.Threshold.level_threshold`) is noise and left out, however wide that
    threshold (a number too noisy to compare run against run still shows a step beyond it;
    an infinite one shows none).
    ``bounds`` gives each point's bound kind (:data:`compare.LOWER_BOUND`, ``UPPER_BOUND``,
    ``UNKNOWN_BOUND``, "" for a value): a step from or to a level holding bounds is judged
    as ``make compare`` judges it (:func:`compare.judge_bounded`), a "change" where the
    bounds prove neither way.
    """
    cuts = []  # (last point of one version and environment, first point of the next, kind)
    last, last_env, before = "", "", None
    for j in (i for i, v in enumerate(values) if np.isfinite(v)):
        version, env = versions[j] if versions else "", environments[j] if environments else ""
        if version and last and version != last:
            cuts.append((before, j, NEW_VERSION))
        elif env and last_env and env != last_env:
            cuts.append((before, j, NEW_ENVIRONMENT))
        last, last_env, before = version or last, env or last_env, j
    found = []
    start = 0
    for before, first, cut in [*cuts, (None, len(values), None)]:
        version = next((versions[i] for i in range(start, first)    # of a plotted point, as the cuts
                        if versions and versions[i] and np.isfinite(values[i])), "")
        applies = threshold if threshold is None or threshold.applies_to(version) else None
        found += [(start + at, old, new, kind) for at, old, new, kind
                  in _steps_within(values[start:first], direction, applies,
                                   None if bounds is None else bounds[start:first])]
        if before is not None:
            found.append((first, float(values[before]), float(values[first]), cut))
        start = first
    return found


def _level_bound(bounds: list[str] | None, start: int, end: int) -> str:
    """The bound kind of a level made of points ``start:end``: "" when none is a bound, the
    kind when all its bounds share one, else :data:`compare.UNKNOWN_BOUND`."""
    kinds = {b for b in (bounds or [])[start:end] if b}
    return "" if not kinds else kinds.pop() if len(kinds) == 1 else compare.UNKNOWN_BOUND


def _steps_within(values: list[float], direction: str, threshold: Threshold | None,
                  bounds: list[str] | None = None) -> list[tuple[int, float, float, str]]:
    """:func:`series_steps` of a series of one version."""
    present = [v for v in values if np.isfinite(v)]
    if len(present) < 3:
        return []
    found = []
    segments = detect_steps([v if np.isfinite(v) else None for v in values])
    for left, right in zip(segments, segments[1:]):
        before, after = left[2], right[2]
        if before == after:
            continue
        limit, scale = 0.0, RELATIVE
        if threshold is not None:    # two levels of many commits resolve less than two runs
            scale = threshold.scale
            limit = threshold.level_threshold(*(sum(1 for v in values[s[0]:s[1]] if np.isfinite(v))
                                                for s in (left, right)), candidates=len(present) - 1)
            if not moved_beyond(before, after, limit, scale):    # an infinite limit: never beyond it
                continue
        old_bound, new_bound = _level_bound(bounds, left[0], left[1]), _level_bound(bounds, right[0], right[1])
        if direction not in JUDGED:
            kind = "change"
        elif old_bound or new_bound:   # step_detect found the step; the bounds decide what it proves
            verdict = compare.judge_bounded(before, after, old_bound, new_bound, direction, limit, scale)
            kind = {compare.REGRESSION: "regression", compare.IMPROVEMENT: "improvement"}.get(verdict, "change")
        else:
            worse = compare.worsening(before, after, direction, scale) > 0
            kind = "regression" if worse else "improvement"
        found.append((right[0], float(before), float(after), kind))
    return found
