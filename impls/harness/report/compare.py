"""Compare two stored runs number by number: direction-aware, against each number's measured noise.

For a number with old value ``a`` and new value ``b`` the relative change is
``(b - a) / |a|``. A higher-is-better number got *worse* by ``-(b - a) / |a|``, a
lower-is-better one by ``(b - a) / |a|``. It is a regression when it got worse by more
than its threshold (:mod:`noise`), an improvement when it got better by more. Flags
that changed are listed apart and never count as regressions; context numbers and
numbers without a declared direction are not judged; nor is a number whose threshold
is not measured (unless a default is given) or too noisy to track here.
"""
from __future__ import annotations

import dataclasses
import math

import pandas as pd

from impls.harness.report.directions import FLAG, HIGHER, LOWER, direction_of
from impls.harness.report.noise import TOO_NOISY, Noise
from impls.harness.report.results import STATUS_OK

REGRESSION, IMPROVEMENT, FLIPPED = "REGRESSION", "IMPROVEMENT", "CHANGED"


@dataclasses.dataclass(frozen=True)
class Change:
    """One number of both runs, with its verdict."""

    benchmark: str
    params: str
    old: float
    new: float
    direction: str
    threshold: float | None
    kind: str  # REGRESSION / IMPROVEMENT / CHANGED (a flag) / "same" / "unjudged" / "too noisy"

    @property
    def ratio(self) -> float:
        if self.old == 0:
            return 1.0 if self.new == 0 else math.copysign(math.inf, self.new)
        return self.new / self.old

    def line(self) -> str:
        """``REGRESSION <benchmark> <params> <old> -> <new> (<ratio>)`` and the threshold."""
        params = f"[{self.params.replace(', ', ',')}]" if self.params else "[]"
        noise = "" if self.threshold is None else f"  threshold {100 * self.threshold:.3g}%"
        if self.direction == FLAG:
            return f"{self.kind} {self.benchmark} {params} {self.old:.6g} -> {self.new:.6g} (flag)"
        return (f"{self.kind} {self.benchmark} {params} {self.old:.6g} -> {self.new:.6g} "
                f"({self.ratio:.3g}x, {self.direction} is better){noise}")


@dataclasses.dataclass(frozen=True)
class Comparison:
    changes: list[Change]
    only_in_base: int  # numbers measured in the base run only (removed, skipped or failed now)
    only_in_head: int

    def of_kind(self, kind: str) -> list[Change]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def regressed(self) -> bool:
        return bool(self.of_kind(REGRESSION))


def worsening(old: float, new: float, direction: str) -> float:
    """Return how much worse ``new`` is than ``old`` (relative; negative = better)."""
    if new == old:
        return 0.0
    change = (new - old) / abs(old) if old else math.copysign(math.inf, new - old)
    return -change if direction == HIGHER else change


def judge_change(old: float, new: float, direction: str, threshold: float | None) -> str:
    """Return the kind of change (see :class:`Change`)."""
    if direction == FLAG:
        return FLIPPED if new != old else "same"
    if direction not in (HIGHER, LOWER) or threshold is None:
        return "unjudged"
    if threshold > TOO_NOISY:
        return "too noisy"
    worse = worsening(old, new, direction)
    if worse > threshold:
        return REGRESSION
    if -worse > threshold:
        return IMPROVEMENT
    return "same"



def _values(frame: pd.DataFrame) -> dict[tuple[str, str], float]:
    ok = frame[(frame["status"] == STATUS_OK) & frame["type"].isin(("track", "time", "peakmem", "memory"))]
    return {(b, p): float(v) for b, p, v in zip(ok["benchmark"], ok["param_label"], ok["value"])}


def compare_runs(base: pd.DataFrame, head: pd.DataFrame, declared: dict[str, str],
                 noise: Noise | None, default_threshold: float | None = None) -> Comparison:
    """Return the :class:`Comparison` of run ``head`` against run ``base`` (result frames)."""
    old, new = _values(base), _values(head)
    changes = []
    for key in sorted(old.keys() & new.keys()):
        benchmark, params = key
        direction = direction_of(benchmark, declared)
        measured = noise.get(benchmark, params) if noise else None
        threshold = measured.threshold if measured else default_threshold
        kind = judge_change(old[key], new[key], direction, threshold)
        changes.append(Change(benchmark, params, old[key], new[key], direction, threshold, kind))
    return Comparison(changes, len(old.keys() - new.keys()), len(new.keys() - old.keys()))


def format_comparison(comparison: Comparison) -> list[str]:
    """Return the lines to print: regressions, improvements, flipped flags, then a summary."""
    lines = [c.line() for c in comparison.of_kind(REGRESSION)]
    lines += [c.line() for c in comparison.of_kind(IMPROVEMENT)]
    lines += [c.line() for c in comparison.of_kind(FLIPPED)]
    counts = {kind: len(comparison.of_kind(kind))
              for kind in (REGRESSION, IMPROVEMENT, FLIPPED, "same", "too noisy", "unjudged")}
    lines.append(
        f"{len(comparison.changes)} numbers compared: {counts[REGRESSION]} regressions, "
        f"{counts[IMPROVEMENT]} improvements, {counts[FLIPPED]} flags changed, "
        f"{counts['same']} within noise, {counts['too noisy']} too noisy to track here, "
        f"{counts['unjudged']} not judged (context, undeclared or no measured threshold); "
        f"{comparison.only_in_base} only in the base run, {comparison.only_in_head} only in the new one")
    return lines
