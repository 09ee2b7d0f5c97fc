"""Compare two stored runs number by number: direction-aware, against each number's measured noise.

Longer than 400 lines: the verdict of each number (bounds, scales, versions, carried values),
the lines that print them and the notes read off them all together (a machine-wide shift)
share one Change record and its invariants.

For a number with old value ``a`` and new value ``b``, both positive, the change is the
factor ``b / a``: a lower-is-better number got *worse* when ``b / a`` exceeds ``1 + t``
(``t`` its relative threshold, :mod:`noise`), a higher-is-better one when ``a / b`` does;
better the other way round by the same factor, so a rate and the time it inverts get the
same verdict. Otherwise (0, a sign change) the relative change ``(b - a) / |a|`` is
judged against ``t``; for a number declared on the absolute scale (an error, a
difference, an overhead in percent) it is ``b - a`` in the number's unit. A nearer-0 number
(a paired difference that crosses 0) is judged as a lower-is-better one by its size
``|a| -> |b|``, so ``2 -> -4`` is worse by 2, not better by 6. A regression is
a number worse beyond its threshold, an improvement one better beyond it, however wide the
threshold: a number *too noisy to track here* (a relative threshold above
:data:`noise.TOO_NOISY`) is judged only on a move beyond it, and one whose threshold is
infinite on none. A threshold measured on the other scale than
the one declared now is not used (``make noise`` again), and ``default_threshold``, being
relative, does not apply to absolute-scale numbers. Flags
that changed are listed apart and never count as regressions; context numbers and
numbers without a declared direction are not judged, only listed where they moved (a context
number beyond its measured threshold, where it has one); nor is a number whose threshold
is not measured (unless a default is given), nor one too noisy to track that moved within
its threshold, nor one whose benchmark version differs between the runs (it measures
something else now); one too noisy that moved within its threshold but beyond
:data:`noise.TOO_NOISY` of its value, or beyond the range two runs of it are expected to
span (:attr:`noise.Threshold.floored_spread`), is listed (``TOO NOISY``), not judged.

When most of the speed-like numbers (a unit of time or of a rate: s, ms, µs, .../s, IOPS)
that the machine's speed can move moved the same way, or most of those beyond their
thresholds did across several benchmark modules, :func:`machine_shift` says so in one note:
a slow day or another load on the machine looks like that. It changes no verdict.

A number its benchmark declares only a bound where a flag says so (``bounded_by``: a
speed-up over a run that never reached its target is ">= value") is judged only on what
the bounds prove: a regression when even the new bound's best case is worse beyond noise
than the old value's worst case, an improvement the other way round; otherwise it is
listed as a BOUND, not judged.

A number measured in the base run that *failed* in the new one is a breakage and counts
like a regression; one skipped or without a value in the new one (asv stores both as NaN;
the benchmark may declare what its NaN means, e.g. "no target to time") is listed, never
silently dropped, and counts like a regression where its benchmark declares that NaN the
worst outcome (``worst_missing``: a job that failed) and the benchmark's version did not
change (under a new version it is listed as such, not compared). A run's time to a target
it never reached is no NaN: its training time, flagged a lower bound, judged as bounds are.

A new value no run can measure (:func:`not_a_measurement`: not finite, a timing, memory
size or rate of 0 or less, a time below 0) is a broken timer or a sentinel, not the best
result ever: :data:`INVALID`, counted like a failure. A base value that is none
(:data:`NO_BASE`) leaves its number unjudged, listed and counted: a head value could only
move against a broken timer there.

A number whose value the new run carried over from the base run (the same ``started_at``:
asv keeps the numbers a partial rerun did not measure) is counted as not measured again,
never as "within noise": a rerun of a few benchmarks says nothing of the others.
"""
from __future__ import annotations

import collections
import dataclasses
import math
import re
import statistics
from collections.abc import Callable, Mapping

import pandas as pd

from impls.harness import profiles, skip_log
from impls.harness.report.asv_files import type_from_name
from impls.harness.report.directions import (CONTEXT, FLAG, HIGHER, JUDGED, LOWER, NEARER_ZERO, UNKNOWN, better,
                                             class_of, direction_of)
from impls.harness.report.noise import (ABSOLUTE, RELATIVE, TOO_NOISY, Noise, change, factor, moved_beyond,
                                        percent_text, too_noisy)
from impls.harness.report.results import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED

REGRESSION, IMPROVEMENT, FLIPPED = "REGRESSION", "IMPROVEMENT", "CHANGED"
NEW_VERSION, NO_THRESHOLD, BOUND = "NEW VERSION", "NO THRESHOLD", "BOUND"
LOWER_BOUND, UPPER_BOUND = "lower", "upper"  # a number that is only ">= value" / "<= value"
UNKNOWN_BOUND = "unknown"  # its bound flags were not measured in that run: it may be either
FAILED, SKIPPED, GONE = "FAILED", "SKIPPED", "GONE"  # measured in the base run, not in the new one
INVALID = "NOT A MEASUREMENT"  # a new value no run can measure (not_a_measurement): counts as a failure
NO_BASE = "BASE NOT A MEASUREMENT"  # the base run's value is none (not_a_measurement): nothing to judge it against
CARRIED = "not measured again"  # the new run holds the base run's measurement itself
NOISY = "too noisy"  # a move within a threshold above the too-noisy level (or an infinite one): not judged


_MARKS = {LOWER_BOUND: ">= ", UPPER_BOUND: "<= ", UNKNOWN_BOUND: "(bound?) ", "": ""}


@dataclasses.dataclass(frozen=True)
class Change:
    """One number of both runs, with its verdict."""

    benchmark: str
    params: str
    old: float
    new: float
    direction: str
    threshold: float | None
    # REGRESSION / IMPROVEMENT / CHANGED (a flag) / NEW VERSION / NO THRESHOLD / BOUND (a
    # change the bounds do not prove) / "same" / "unjudged" / NOISY / CARRIED / INVALID / NO_BASE
    kind: str
    scale: str = RELATIVE
    why: str = ""  # for NO THRESHOLD: why none applies; for NEW VERSION: why the versions differ
    old_bound: str = ""  # LOWER_BOUND / UPPER_BOUND where the old value is only a bound
    new_bound: str = ""
    spread: float | None = None  # the range two runs are expected to span (floored_spread), where measured
    unit: str = ""  # the number's unit, as its benchmark declares it
    unusual: float | None = None  # a too-noisy number is listed past this move (Threshold.unusual_move)
    sides: str = ""  # a ratio of two runs: where its sides are tracked (directions.declared_sides)
    default: bool = False  # the threshold is compare's default_threshold, not one measured for the number

    @property
    def ratio(self) -> float:
        if self.old == 0:
            return 1.0 if self.new == 0 else math.copysign(math.inf, self.new)
        return self.new / self.old

    def _change_text(self) -> str:
        """``<new/old>x`` where both are positive (or new is 0), else the signed difference:
        a ratio of negative numbers, or over 0, reads the wrong way. The ratio shows enough
        digits to differ from 1 when the numbers differ."""
        if self.scale == RELATIVE and self.old > 0 and self.new >= 0:
            return f"{distinct(self.ratio, 1.0, 3)[0]}x"
        return f"{self.new - self.old:+.6g}"

    def line(self) -> str:
        """``REGRESSION <benchmark> <params> <old> -> <new> (<change>)`` and the threshold."""
        params = f"[{self.params.replace(', ', ',')}]" if self.params else "[]"
        old, new = distinct(self.old, self.new)
        values = (f"{self.kind} {self.benchmark} {params} {_MARKS[self.old_bound]}{old} -> "
                  f"{_MARKS[self.new_bound]}{new}")
        if self.direction == FLAG:
            return f"{values} (flag)"
        if self.kind == NEW_VERSION:
            return f"{values} ({self.why or 'the benchmark' + chr(39) + 's version changed'}: not compared)"
        if self.kind == INVALID:
            return f"{values} ({self.why}: a broken timer or a sentinel, not a measurement; counted as a failure)"
        if self.kind == NO_BASE:
            return f"{values} (in the base run, {self.why}: not a measurement, nothing to compare with; not judged)"
        if self.direction == CONTEXT:
            return (f"CONTEXT{values[len(self.kind):]} ({self._change_text()}; context: describes the data or "
                    "setup, not judged)")
        if self.direction == UNKNOWN:
            return (f"NOT DECLARED{values[len(self.kind):]} ({self._change_text()}; no direction declared: a "
                    "benchmark removed or renamed since, or a track without one; not judged)")
        if self.kind == NO_THRESHOLD:
            why = self.why or "no threshold measured for this number"
            return f"{values} ({self._change_text()}, {better(self.direction)}; {why}: not judged, run `make noise`)"
        if self.kind == NOISY:
            limit = (f"threshold {percent_text(self.threshold)} over {100 * TOO_NOISY:.3g}%, too noisy to judge a "
                     "move within it here" if math.isfinite(self.threshold or math.inf)
                     else "too noisy to track here, an unbounded spread")
            if self.spread is not None and math.isfinite(self.spread):
                limit += (f"; two runs of one commit differ by about {100 * self.spread:.3g}%" if self.scale == RELATIVE
                          else f"; two runs of one commit differ by about {self.spread:.3g} in its unit")
            return (f"TOO NOISY{values[len(self.kind):]} ({self._change_text()}, {better(self.direction)}; "
                    f"{limit}: not judged)")
        if self.kind == BOUND:
            unknown = [run for run, bound in (("base", self.old_bound), ("new", self.new_bound))
                       if bound == UNKNOWN_BOUND]
            known = [run for run, bound in (("base", self.old_bound), ("new", self.new_bound))
                     if bound in (LOWER_BOUND, UPPER_BOUND)]
            why = (f"the {' and '.join(unknown)} run{'s' if len(unknown) > 1 else ''} recorded no bound flags for it "
                   "(a run from before they existed, or one whose flag failed), so it may be a bound (>=, <=)"
                   + (f", and the {known[0]} run's is one" if known else "")
                   if unknown else "a bound (>=, <=) at either run")
            return (f"{values} ({self._change_text()}, {better(self.direction)}; {why}: "
                    "the values prove neither a regression nor an improvement, not judged)")
        noise = ("" if self.threshold is None
                 else f"  threshold {self.threshold:.3g} (absolute, in the number's unit)" if self.scale == ABSOLUTE
                 else f"  threshold x{distinct(1 + self.threshold, 1.0, 3)[0]} either way ({100 * self.threshold:.3g}%)"
                 if self.old > 0 and self.new > 0
                 else f"  threshold {100 * self.threshold:.3g}%")
        if self.default and noise:     # a guess, not this number's noise: the reader must tell them apart
            noise = _annotated(noise, "default, not measured")
        if self.threshold is not None and too_noisy(self.threshold, self.scale):   # judged all the same: beyond it
            noise = _annotated(noise, "too noisy to judge a smaller move")
        sides = (f"; a ratio of two runs, so either side may have moved: see {self.sides}" if self.sides
                 and self.kind in (REGRESSION, IMPROVEMENT) else "")
        return f"{values} ({self._change_text()}, {better(self.direction)}{sides}){noise}"


def _annotated(text: str, words: str) -> str:
    """``text`` with ``words`` added inside its closing parenthesis ("; words"), or after it
    in one of their own where it ends without one."""
    return f"{text[:-1]}; {words})" if text.endswith(")") else f"{text} ({words})"


def distinct(a: float, b: float, digits: int = 6) -> tuple[str, str]:
    """``a`` and ``b`` in ``g`` format with ``digits`` significant digits, or more (up to
    17) until two different numbers print differently."""
    for d in range(digits, 18):
        left, right = f"{a:.{d}g}", f"{b:.{d}g}"
        if left != right or a == b:
            return left, right
    return left, right


@dataclasses.dataclass(frozen=True)
class Lost:
    """A number measured in the base run that the new run did not measure."""

    benchmark: str
    params: str
    old: float
    kind: str  # FAILED / SKIPPED / GONE
    missing: str = ""  # what a NaN of this number means, where its benchmark declares it
    old_bound: str = ""  # LOWER_BOUND / UPPER_BOUND / UNKNOWN_BOUND where the old value was only a bound
    worst: bool = False  # SKIPPED where its benchmark declares that NaN the worst outcome: a regression
    logged: skip_log.Entry | None = None  # what the new run's benchmark logged for the point, if it did
    new_version: str = ""  # a NaN under a new benchmark version: why the versions differ (not compared)
    unlogged: bool = False  # the new run's commit has a skip log that names nothing for the point: no logged skip

    def line(self) -> str:
        params = f"[{self.params.replace(', ', ',')}]" if self.params else "[]"
        if self.new_version:
            what = "no value in the new run"
            if self.logged is not None:     # what the run said of it, as for any skip
                what = (f"skipped in the new run: {self.logged.reason}" if self.logged.outcome == skip_log.SKIPPED
                        else f"{what}: {self.logged.reason}")
            return (f"{NEW_VERSION} {self.benchmark} {params} {_MARKS[self.old_bound]}{self.old:.6g} -> ({what}; "
                    f"{self.new_version}: not compared)")
        worst = "; the worst outcome, so a regression" if self.worst else ""
        if self.logged is not None and self.kind == FAILED:   # an exception, or a None: asv stores both as failed
            why = f"failed in the new run: {skip_log.describe(self.logged)}"
        elif self.logged is not None:   # a skip or a NaN, which asv stores alike: the run said which, and why
            why = (f"skipped in the new run: {skip_log.describe(self.logged)}" if self.logged.outcome == skip_log.SKIPPED
                   else f"no value in the new run: {self.logged.reason}{worst}")
        elif self.unlogged and self.missing and self.kind == SKIPPED:
            why = f"no value in the new run: {self.missing}; the new run's skip log names no skip of it{worst}"
        else:
            skipped = (f"no value in the new run: {self.missing}" + (f"{worst} (or skipped there)" if self.worst
                                                                     else "; or skipped there")
                       if self.missing else "skipped in the new run, or no value there (asv stores both as NaN)")
            why = {FAILED: "failed in the new run", SKIPPED: skipped,
                   GONE: "not in the new run (removed, renamed or not run)"}[self.kind]
        no_value = (self.logged.outcome == skip_log.NO_VALUE if self.logged is not None
                    else bool(self.missing)) and self.kind == SKIPPED
        label = REGRESSION if self.worst else "NO VALUE" if no_value else self.kind
        return f"{label} {self.benchmark} {params} {_MARKS[self.old_bound]}{self.old:.6g} -> ({why})"


@dataclasses.dataclass(frozen=True)
class Comparison:
    changes: list[Change]
    lost: list[Lost]  # numbers measured in the base run only (failed, skipped or gone now)
    new_only: tuple[tuple[str, str], ...] = ()  # (benchmark, params) of the numbers only the new run has

    @property
    def only_in_head(self) -> int:
        return len(self.new_only)

    @property
    def only_in_base(self) -> int:
        return len(self.lost)

    def of_kind(self, kind: str) -> list[Change]:
        return [c for c in self.changes if c.kind == kind]

    def lost_of_kind(self, kind: str) -> list[Lost]:
        return [item for item in self.lost if item.kind == kind]

    @property
    def worse_without_value(self) -> list[Lost]:
        """The numbers measured in the base run whose new run has the NaN their benchmark
        declares the worst outcome."""
        return [item for item in self.lost if item.worst]

    @property
    def regressed(self) -> bool:
        """A number got worse beyond its noise, a measured number failed in the new run (or
        holds there a value no run can measure, :data:`INVALID`), or one has the NaN its
        benchmark declares the worst outcome there."""
        return bool(self.of_kind(REGRESSION) or self.of_kind(INVALID) or self.lost_of_kind(FAILED)
                    or self.worse_without_value)


def moved_beyond_tracking(old: float, new: float) -> bool:
    """Whether ``new`` moved from ``old`` beyond the too-noisy level, relative whatever the
    number's scale: a factor beyond ``1 + TOO_NOISY`` either way for two positive values,
    else a relative change beyond ``TOO_NOISY`` (any change from 0)."""
    return moved_beyond(old, new, TOO_NOISY, RELATIVE)


def listed_as_noisy(c: "Change") -> bool:
    """Whether a too-noisy change is listed: it moved beyond :data:`noise.TOO_NOISY` of its
    value, or beyond what two runs of it differ by 1 time in 20 (its ``unusual`` move, where
    finite; else its ``spread``): a large move of a number too noisy to judge (within its wide
    threshold: one beyond it is judged) is not passed over in silence, and its ordinary
    run-to-run moves are not listed."""
    limit = c.unusual if c.unusual is not None else c.spread
    beyond_range = limit is not None and math.isfinite(limit) and moved_beyond(c.old, c.new, limit, c.scale)
    return moved_beyond_tracking(c.old, c.new) or beyond_range


def context_moved(c: "Change") -> bool:
    """Whether a context number is listed: it moved beyond its measured threshold (on its
    scale), or changed at all where none is measured; identical reruns stay quiet."""
    if c.threshold is None:
        return c.new != c.old
    return moved_beyond(c.old, c.new, c.threshold, c.scale)


_TIME_UNITS = {"s", "sec", "secs", "second", "seconds", "ms", "us", "µs", "μs", "ns", "min", "minutes", "h", "hours"}
SHIFT_SHARE = 0.75  # the share of the speed-like numbers that must move one way for a machine-wide shift
SHIFT_CHANCE = 0.05  # ... and how unlikely so lopsided a split must be were each a fair coin (6 of 6: 0.031)
SHIFT_MODULES = 3  # the benchmark modules the flagged numbers moving that way must span (one system's slowdown spans one)


_MEMORY_UNITS = {"b", "byte", "bytes", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib"}
_POSITIVE_TYPES = ("time", "peakmem", "memory")   # asv's timings and memory sizes (type_from_name)


def _unit_word(unit: str) -> str:
    """The first word of ``unit`` ("s" of "s (simulated)", "lookups/s" of "lookups/s, ..."):
    what says whether it is a time, a rate or a size."""
    return re.split(r"[\s(;,:]", unit.strip(), maxsplit=1)[0]


def not_a_measurement(benchmark: str, unit: str, value: float, scale: str = RELATIVE) -> str:
    """Why ``value`` of ``benchmark`` (in ``unit``, on ``scale``) is no measurement, in
    words; "" where it may be one. Not finite (``inf``: a history has no point there
    either); at most 0 for an asv timing or memory size (``time_*``, ``peakmem_*``,
    ``mem_*``), and for a relative-scale number in a unit of memory (GiB, bytes) or of a
    rate (``.../s``, IOPS): a time of 0 is a broken timer, its rate infinite; below 0 for
    another relative-scale time (s, ms, simulated or not), which may read 0 (a time to a
    target reached at the first evaluation, at 0 s). An absolute-scale number (a
    difference, an error) may be any finite value."""
    if not math.isfinite(value):
        return f"{value:g} is not a finite value"
    if type_from_name(benchmark) in _POSITIVE_TYPES:
        return "" if value > 0 else f"a {benchmark.rsplit('.', 1)[-1].split('_', 1)[0]} benchmark measured {value:g}"
    if scale != RELATIVE:
        return ""
    first = _unit_word(unit)
    if first.lower() in _MEMORY_UNITS or _rate(first):
        return "" if value > 0 else f"{value:g} {first}, where only a positive value can be measured"
    if first in _TIME_UNITS and value < 0:
        return f"{value:g} {first}: a time below 0"
    return ""


def speed_like(unit: str) -> bool:
    """Whether ``unit`` is one of time (s, ms, µs, ...) or of a rate (``.../s``, IOPS): a
    number a slower or busier machine moves; not a simulated time (a unit saying so)."""
    if "simulated" in unit.lower():    # a model's time: the machine's speed does not move it
        return False
    first = _unit_word(unit)
    return first in _TIME_UNITS or _rate(first)


def _rate(first: str) -> bool:
    """Whether a unit's first word (:func:`_unit_word`) is a rate: ``.../s`` or IOPS."""
    return first.endswith("/s") or first.lower() == "iops"


def machine_shift(comparison: "Comparison") -> str | None:
    """Return one note when the speed-like numbers (:func:`speed_like`, relative scale,
    a declared direction, two positive values, exact at neither run, threshold not 0: the
    machine's speed can move them) moved mostly the same way: at least :data:`SHIFT_SHARE`
    of them slower (or faster), a split a fair coin per number gives with probability at
    most :data:`SHIFT_CHANCE` (two-sided); or, failing that, the same of those among them
    that moved beyond their thresholds, where those moving the majority's way lie in at least
    :data:`SHIFT_MODULES` benchmark modules (a slowdown of the CPUs alone leaves the disk's
    many numbers a coin toss, yet most of what it flags is slower, in every system; a change
    that slows one system flags one module's). The note gives the count and the median factor
    (slower: a time up or a rate down). None otherwise. Numbers of one
    benchmark module with the same unit and the same (old, new) pair count once: two
    benchmarks reading one run (``SlideTraining`` and ``SlideTimeToAccuracy``) report
    identical pairs."""
    worse, beyond, seen = [], [], set()      # beyond: (factor, benchmark module)
    for c in comparison.changes:
        if (c.kind in (REGRESSION, IMPROVEMENT, "same", NOISY, NO_THRESHOLD) and c.scale == RELATIVE
                and c.direction in JUDGED and speed_like(c.unit) and c.threshold != 0
                and not (c.old_bound or c.new_bound) and factor(c.old, c.new) is not None):
            one_run = (c.benchmark.split(".", 1)[0], c.unit, c.old, c.new)
            if one_run in seen:
                continue
            seen.add(one_run)
            ratio = c.new / c.old
            worse.append(1 / ratio if c.direction == HIGHER else ratio)
            if c.kind in (REGRESSION, IMPROVEMENT):
                beyond.append((worse[-1], one_run[0]))
    everywhere = _lopsided(worse)
    if everywhere:
        return _shift_note(*everywhere, "speed numbers")
    flagged = _lopsided([w for w, _ in beyond])
    if flagged and len({module for w, module in beyond if (w > 1) == (flagged[2] > 1)}) >= SHIFT_MODULES:
        return _shift_note(*flagged, f"speed numbers beyond their thresholds (of {len(worse)} compared)")
    return None


def _lopsided(worse: list[float]) -> tuple[int, int, float] | None:
    """(how many moved the majority's way, how many, the median factor) where at least
    :data:`SHIFT_SHARE` of the factors ``worse`` (> 1: slower) lie on one side of 1, a split a
    fair coin per number gives with probability at most :data:`SHIFT_CHANCE`; else None."""
    same_way, n = max(sum(w > 1 for w in worse), sum(w < 1 for w in worse)), len(worse)
    if not n or same_way < SHIFT_SHARE * n:
        return None
    if min(1.0, 2 * sum(math.comb(n, k) for k in range(same_way, n + 1)) / 2 ** n) > SHIFT_CHANCE:
        return None
    return same_way, n, statistics.median(worse)


def _shift_note(same_way: int, n: int, middle: float, what: str) -> str:
    how = f"{middle:.3g}x slower" if middle >= 1 else f"{1 / middle:.3g}x faster"
    return (f"machine-wide shift: {same_way} of {n} {what} moved the same way, median {how}: a slow day or "
            "another load on the machine looks like this (or a change that slows everything); rerun both on a "
            "quiet machine before believing these")


def worsening(old: float, new: float, direction: str, scale: str = RELATIVE) -> float:
    """Return how much worse ``new`` is than ``old`` (relative, or in the number's unit on
    the absolute scale; negative = better); a nearer-0 number by its size, ``|old| -> |new|``."""
    if direction == NEARER_ZERO:
        return change(abs(old), abs(new), scale)
    moved = change(old, new, scale)
    return -moved if direction == HIGHER else moved


def judge_change(old: float, new: float, direction: str, threshold: float | None,
                 scale: str = RELATIVE) -> str:
    """Return the kind of change (see :class:`Change`); ``threshold`` is on ``scale``.

    On the relative scale two positive values are judged by the factor between them, the
    same both ways: worse by more than ``1 + threshold`` times is a regression, better by
    more an improvement, so a rate that falls to 1/1.6 of its value and the time that rises
    1.6x get one verdict. Other relative-scale values (0, a sign change, infinities) are
    judged by their relative change; absolute-scale ones by ``new - old`` in their unit. A
    nearer-0 number is judged as a lower-is-better one of sizes ``|old|``, ``|new|``: the same
    verdict as lower-is-better where both are at least 0. A threshold too noisy to track
    (:func:`noise.too_noisy`: above :data:`noise.TOO_NOISY` relative, or infinite) judges a
    move beyond it all the same; a move within it is :data:`NOISY`, not judged (an infinite
    threshold judges none)."""
    if direction == FLAG:
        return FLIPPED if new != old else "same"
    if direction not in JUDGED:
        return "unjudged"
    if direction == NEARER_ZERO:
        old, new, direction = abs(old), abs(new), LOWER
    if threshold is None:
        return "same" if new == old else NO_THRESHOLD
    ratio = factor(old, new) if scale == RELATIVE else None
    if ratio is not None:
        worse_by = ratio if direction == LOWER else 1 / ratio
        verdict = (REGRESSION if worse_by > 1 + threshold else IMPROVEMENT if 1 / worse_by > 1 + threshold
                   else "same")
    else:
        worse = worsening(old, new, direction, scale)
        verdict = REGRESSION if worse > threshold else IMPROVEMENT if -worse > threshold else "same"
    # a wide threshold still judges a move beyond it; within it, the number is too noisy to say
    return NOISY if verdict == "same" and too_noisy(threshold, scale) else verdict


_NUMBER_TYPES = ("track", "time", "peakmem", "memory")


def _points(frame: pd.DataFrame) -> dict[tuple[str, str], tuple[str, float, str]]:
    """``{(benchmark, param_label): (status, value, version)}`` of the run's numbers."""
    rows = frame[frame["type"].isin(_NUMBER_TYPES)]
    versions = rows["version"] if "version" in rows else [""] * len(rows)
    return {(b, p): (st, float(v), str(ver or "")) for b, p, st, v, ver
            in zip(rows["benchmark"], rows["param_label"], rows["status"], rows["value"], versions)}


def _units(frame: pd.DataFrame) -> dict[str, str]:
    """``{benchmark: unit}`` of the run's numbers ("" where the frame records none)."""
    if "unit" not in frame:
        return {}
    return {b: str(u or "") for b, u in zip(frame["benchmark"], frame["unit"])}


def _runs_of(frame: pd.DataFrame) -> dict[tuple[str, str], tuple[str, object, object]]:
    """``{(benchmark, param_label): (commit, started_at, duration)}`` of the run ``frame``:
    when asv ran each point, to find what it logged (:func:`skip_log.for_point`)."""
    started = frame["started_at"] if "started_at" in frame else [None] * len(frame)
    durations = frame["duration"] if "duration" in frame else [None] * len(frame)
    commits = frame["commit"] if "commit" in frame else [""] * len(frame)
    return {(b, p): (str(c), s, d) for b, p, c, s, d
            in zip(frame["benchmark"], frame["param_label"], commits, started, durations)}


def _started(frame: pd.DataFrame) -> dict[tuple[str, str], object]:
    """``{(benchmark, param_label): started_at}`` of the run's numbers that record one."""
    if "started_at" not in frame:
        return {}
    rows = frame[frame["type"].isin(_NUMBER_TYPES) & frame["started_at"].notna()]
    return dict(zip(zip(rows["benchmark"], rows["param_label"]), rows["started_at"]))


def bound_kind(flag_value: Callable[[str], float | None], flags: tuple[str | None, str | None] | None) -> str:
    """:data:`LOWER_BOUND` / :data:`UPPER_BOUND` where a number's lower- / upper-bound flag
    (``flags``: the flag benchmarks, None for one not declared) is 1 (the lower one first),
    :data:`UNKNOWN_BOUND` where a declared flag has no value (``flag_value(flag)`` is None:
    failed, skipped, absent), else "" (an exact value)."""
    found = ""
    for flag, bound in zip(flags or (), (LOWER_BOUND, UPPER_BOUND)):
        if not flag:
            continue
        value = flag_value(flag)
        if value is None:
            return UNKNOWN_BOUND
        if value == 1:
            found = found or bound
    return found


def _bound(points: dict, flags: tuple[str | None, str | None] | None, params: str) -> str:
    """:func:`bound_kind` of the number at ``params`` in one run's ``points`` (:func:`_points`)."""
    def flag_value(flag: str) -> float | None:
        status, value, _ = points.get((flag, params), ("", 0.0, ""))
        return value if status == STATUS_OK else None

    return bound_kind(flag_value, flags)


def judge_bounded(old: float, new: float, old_bound: str, new_bound: str, direction: str,
                  threshold: float | None, scale: str = RELATIVE) -> str:
    """Return the kind of change between values that may be bounds (:data:`LOWER_BOUND`,
    :data:`UPPER_BOUND`, :data:`UNKNOWN_BOUND`: either; "" for a value): a regression only
    where even the new value's best case is worse beyond noise than the old one's worst
    case, an improvement the other way round, :data:`BOUND` where the bounds prove neither
    (:data:`NOISY` where their ranges lie apart by less than a too-noisy threshold);
    :func:`judge_change` for two values."""
    if not (old_bound or new_bound) or direction not in (HIGHER, LOWER):
        return judge_change(old, new, direction, threshold, scale)

    def worst_and_best(value: float, bound: str) -> tuple[float, float]:
        low = -math.inf if bound in (UPPER_BOUND, UNKNOWN_BOUND) else value
        high = math.inf if bound in (LOWER_BOUND, UNKNOWN_BOUND) else value
        return (low, high) if direction == HIGHER else (high, low)

    (old_worst, old_best), (new_worst, new_best) = worst_and_best(old, old_bound), worst_and_best(new, new_bound)
    overlap = min(old_worst, old_best) <= max(new_worst, new_best) and \
        min(new_worst, new_best) <= max(old_worst, old_best)
    if threshold is None:
        # ranges that meet prove nothing, whatever the noise; apart, only a threshold can judge them
        return BOUND if overlap else judge_change(old, new, direction, threshold, scale)
    if judge_change(old_worst, new_best, direction, threshold, scale) == REGRESSION:
        return REGRESSION
    if judge_change(old_best, new_worst, direction, threshold, scale) == IMPROVEMENT:
        return IMPROVEMENT
    # apart by less than a wide threshold: too noisy to say, as for two values
    return NOISY if too_noisy(threshold, scale) and not overlap else BOUND


def compare_runs(base: pd.DataFrame, head: pd.DataFrame, declared: dict[str, str],
                 noise: Noise | None, default_threshold: float | None = None,
                 scales: dict[str, str] | None = None,
                 bounds: dict[str, tuple[str | None, str | None]] | None = None,
                 missing: dict[str, str] | None = None,
                 worst_missing: frozenset[str] = frozenset(),
                 sides: dict[str, str] | None = None,
                 logs: Mapping[str, list[skip_log.Entry]] | None = None) -> Comparison:
    """Return the :class:`Comparison` of run ``head`` against run ``base`` (result frames).

    ``scales`` maps a benchmark to :data:`ABSOLUTE` where it is declared so. A measured
    threshold applies only to the benchmark version and the scale it was measured on (when
    the thresholds file records a version); ``default_threshold`` (relative) to
    relative-scale numbers without a measured one. ``bounds`` maps a benchmark to its
    lower- and upper-bound flag benchmarks (:func:`directions.declared_bounds`): where a
    run's flag is set its value is only that bound (:func:`judge_bounded`). ``missing``
    says what a benchmark's NaN means (:func:`directions.declared_missing`), and
    ``worst_missing`` names those whose NaN is the worst outcome
    (:func:`directions.declared_worst_missing`): a value then NaN, of one benchmark version
    (under a new one it is listed, not compared), is a regression where another track of the
    same class and point has a value in the new run (its setup ran: not a skip, which asv
    stores as the same NaN). ``sides`` maps a ratio of two runs to where its
    sides are tracked (:func:`directions.declared_sides`), for its line to name. ``logs``:
    the machine's skip logs (:func:`skip_log.read`); where the new run logged why a point has
    no value, its line says so, and a logged NaN (not a skip) of a ``worst_missing`` number
    of the same version is a regression whatever its siblings did; so is one the new run's
    commit has a skip log for that names nothing of the point (every skip is logged there,
    so the NaN is the track's own). Without a log for that commit a skip and such a NaN
    read alike, and only a valued sibling tells them apart.
    """
    old, new = _points(base), _points(head)
    # (class, params) with a value in the new run: its setup ran, so a NaN beside it is the
    # track's own (asv stores a skip, which leaves every track of the point NaN, alike)
    measured_sets = {(class_of(b), p) for (b, p), (status, _, _) in new.items() if status == STATUS_OK}
    old_started, new_started = _started(base), _started(head)
    ran_at = _runs_of(head) if logs else {}
    units = _units(head)
    changes, lost = [], []
    for key in sorted(k for k, (status, _, _) in old.items() if status == STATUS_OK):
        benchmark, params = key
        _, before, old_version = old[key]
        status, after, new_version = new.get(key, ("", math.nan, ""))
        flags = (bounds or {}).get(benchmark)
        if status != STATUS_OK:
            kind = FAILED if status == STATUS_FAILED else SKIPPED if status == STATUS_SKIPPED else GONE
            meaning = (missing or {}).get(benchmark, "")
            ran = ran_at.get(key) if logs and kind != GONE else None
            logged = skip_log.for_point(logs, benchmark, params, *ran, kind == FAILED) if ran else None
            # the run's commit logged its skips, none of this point: its NaN is the track's own
            unlogged = logged is None and ran is not None and bool(logs.get(ran[0]))
            track_nan = (logged.outcome == skip_log.NO_VALUE if logged is not None
                         else unlogged or (class_of(benchmark), params) in measured_sets)
            bumped = (version_change(old_version, new_version)   # a failure stays one: it counts, as FAILED
                      if kind == SKIPPED and old_version and new_version and old_version != new_version else "")
            worst = kind == SKIPPED and bool(meaning) and benchmark in worst_missing and track_nan and not bumped
            lost.append(Lost(benchmark, params, before, kind, meaning, _bound(old, flags, params), worst, logged,
                             bumped, unlogged))
            continue
        direction = direction_of(benchmark, declared)
        if key in old_started and new_started.get(key) == old_started[key]:
            changes.append(Change(benchmark, params, before, after, direction, None, CARRIED))
            continue
        scale = (scales or {}).get(benchmark, RELATIVE)
        impossible = not_a_measurement(benchmark, units.get(benchmark, ""), after, scale) \
            if direction in JUDGED else ""
        if impossible:
            changes.append(Change(benchmark, params, before, after, direction, None, INVALID, scale, impossible))
            continue
        if old_version and new_version and old_version != new_version:
            changes.append(Change(benchmark, params, before, after, direction, None, NEW_VERSION,
                                  why=version_change(old_version, new_version)))
            continue
        if direction in JUDGED and (no_base := not_a_measurement(benchmark, units.get(benchmark, ""), before, scale)):
            changes.append(Change(benchmark, params, before, after, direction, None, NO_BASE, scale, no_base))
            continue
        measured = noise.get(benchmark, params) if noise else None
        why, guessed = "", False
        if measured is not None and not measured.applies_to(new_version):
            measured = None
            why = "its threshold was measured on another version of the benchmark"
        elif measured is not None and measured.scale != scale:
            why = f"its threshold was measured on the {measured.scale} scale, the number is now {scale}"
            measured = None
        if measured is not None:
            threshold = measured.threshold
        elif scale == RELATIVE and direction in JUDGED:   # a default judges; context is listed on any move
            threshold = default_threshold
            guessed = default_threshold is not None
        else:
            threshold = None
            why = why or ("no threshold measured for this number (absolute scale: a relative "
                          "default does not apply)" if default_threshold is not None else "")
        old_bound, new_bound = _bound(old, flags, params), _bound(new, flags, params)
        kind = judge_bounded(before, after, old_bound, new_bound, direction, threshold, scale)
        changes.append(Change(benchmark, params, before, after, direction, threshold, kind, scale,
                              why if kind == NO_THRESHOLD else "", old_bound, new_bound,
                              measured.floored_spread if measured is not None else None, units.get(benchmark, ""),
                              measured.unusual_move if measured is not None else None,
                              (sides or {}).get(benchmark, ""), guessed))
    only_new = tuple(sorted(k for k, (status, _, _) in new.items()
                            if status == STATUS_OK and old.get(k, ("",))[0] != STATUS_OK))
    return Comparison(changes, lost, only_new)


def version_change(old: str, new: str) -> str:
    """Why two versions of one benchmark differ, in words: the profiles the runs were made
    under (:func:`impls.harness.profiles.versioned`) when only those differ, else a change of
    what the benchmark measures. Where one version names no profile it is quick's or from
    before versions carried the profile, so the words allow both."""
    if profiles.pin_of_version(old) != profiles.pin_of_version(new):
        return "the benchmark's version changed"
    before, after = profiles.profile_of_version(old), profiles.profile_of_version(new)
    if before:      # the older run names its profile, so a newer plain one is quick's
        return (f"the runs used different profiles, {before} then {after or profiles.DEFAULT_PROFILE}: file each "
                f"profile under its own machine, asv run --machine <host>-<profile>")
    return (f"one run is {after}'s, the older {profiles.DEFAULT_PROFILE}'s or from before versions carried the "
            f"profile: a one-time step after that change, else two profiles under one machine (file each under "
            f"its own, asv run --machine <host>-<profile>)")


def format_comparison(comparison: Comparison) -> list[str]:
    """Return the lines to print: regressions, failures and values that are not measurements,
    improvements, flipped flags, new versions, numbers skipped or gone, changed numbers without a threshold, bounds that moved
    but prove neither a regression nor an improvement, numbers that moved without a declared
    direction, too noisy ones that moved beyond :func:`listed_as_noisy`, context numbers that
    moved (:func:`context_moved`), the benchmarks with numbers only in the new run (one line
    each, ``NEW ONLY``), then a summary
    (one without a threshold that did not change, a flag too, is unchanged, not within noise)."""
    lines = [c.line() for c in comparison.of_kind(REGRESSION)]
    lines += [item.line() for item in comparison.worse_without_value]
    lines += [item.line() for item in comparison.lost_of_kind(FAILED)]
    lines += [c.line() for c in comparison.of_kind(INVALID)]
    for kind in (IMPROVEMENT, FLIPPED, NEW_VERSION, NO_BASE):
        lines += [c.line() for c in comparison.of_kind(kind)]
    lines += [item.line() for kind in (SKIPPED, GONE) for item in comparison.lost_of_kind(kind) if not item.worst]
    lines += [c.line() for c in comparison.of_kind(NO_THRESHOLD)]
    lines += [c.line() for c in comparison.of_kind(BOUND) if c.new != c.old or c.new_bound != c.old_bound]
    lines += [c.line() for c in comparison.of_kind("unjudged") if c.direction == UNKNOWN and c.new != c.old]
    lines += [c.line() for c in comparison.of_kind(NOISY) if listed_as_noisy(c)]
    lines += [c.line() for c in comparison.of_kind("unjudged") if c.direction == CONTEXT and context_moved(c)]
    per_benchmark = collections.Counter(benchmark for benchmark, _ in comparison.new_only)
    lines += [f"NEW ONLY {benchmark} ({count} point(s) with a value in the new run only: new, or no value "
              "in the base run; nothing to compare)" for benchmark, count in sorted(per_benchmark.items())]
    counts = {kind: len(comparison.of_kind(kind))
              for kind in (REGRESSION, IMPROVEMENT, FLIPPED, NEW_VERSION, NO_THRESHOLD, BOUND, "same",
                           NOISY, "unjudged", CARRIED, NO_BASE)}
    counts["same"] -= (unchanged := sum(1 for c in comparison.of_kind("same") if c.threshold is None))
    lost = {kind: len(comparison.lost_of_kind(kind)) for kind in (FAILED, SKIPPED, GONE)}
    lost_worst = len(comparison.worse_without_value)
    worst = f" ({lost_worst} of them the worst outcome, counted above)" if lost_worst else ""
    regressions = (f"{counts[REGRESSION] + lost_worst} regressions"
                   + (f" ({lost_worst} of them a number with no value now, the worst outcome)" if lost_worst else ""))
    if invalid := len(comparison.of_kind(INVALID)):
        regressions += f", {invalid} not a measurement (counted as failures)"
    lines.append(
        f"{len(comparison.changes)} numbers compared: {regressions}, "
        f"{counts[IMPROVEMENT]} improvements, {counts[FLIPPED]} flags changed, "
        f"{counts['same']} within noise, {unchanged} unchanged without a threshold, "
        f"{counts[NOISY]} too noisy to judge here (within a threshold over {100 * TOO_NOISY:.0f}%), "
        f"{counts[NEW_VERSION]} with a new benchmark version, "
        + (f"{counts[NO_BASE]} with no measurement in the base run, " if counts[NO_BASE] else "")
        + f"{counts[NO_THRESHOLD]} changed without a "
        f"measured threshold, {counts[BOUND]} bounds that prove neither (listed where they moved), "
        f"{counts['unjudged']} not judged (context or undeclared), "
        f"{counts[CARRIED]} not measured again (the new run holds the base run's value: a partial rerun); "
        f"{comparison.only_in_base} only in the base run ({lost[FAILED]} failed, {lost[SKIPPED]} skipped or "
        f"without a value{worst}, {lost[GONE]} gone), {comparison.only_in_head} only in the new one")
    return lines
