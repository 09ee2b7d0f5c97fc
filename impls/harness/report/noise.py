"""Run-to-run noise of every tracked number on one machine, and the thresholds it sets.

Longer than 400 lines: measuring the thresholds (with the Student-t quantiles they need),
writing them and reading them back (a hand-written or older file checked key by key) are
one file format with one set of invariants.

Measured from two or more stored runs of the same commit (see :mod:`runs`). For each
number (benchmark and parameter point) and each commit with ``n_c >= 2`` runs, ``s_c`` is
the sample standard deviation (ddof=1) of the logarithms of its values over those runs
where they are all positive (relative: the scale of the factor a change is judged by), else
of its values divided by their ``|median|`` (inf around a 0 median or where a value is not
finite; 0 when all are equal). The commits pool: ``df = sum(n_c - 1)`` degrees of freedom and
``sigma = sqrt(sum((n_c - 1) s_c^2) / df)`` (inf where any ``s_c`` is). Each number then
takes the larger of its own sigma and the *floor*, the sigma of its benchmark's points
pooled over those with a finite non-zero one (a point that agreed twice by chance is not
evidence of zero noise; a point around 0, whose relative sigma is infinite, does not make
its siblings untrackable). It rests on the floor's degrees of freedom (the sum of its
points') where the point is consistent with the floor: at or below it, or above it by no
more than its own few degrees of freedom make likely (:func:`consistent_ratio`, 95%), so a
point a little noisier than its siblings is not left on its own single pair; a point
noisier than that rests on its own alone. The check has little power on a point's few
degrees of freedom, so a point truly noisier than its siblings often passes it and rests on
the floor's degrees of freedom with its own (larger) sigma: its false-alarm rate is then
above :data:`FALSE_ALARM` (the README's "Thresholds are measured" gives simulated rates);
more runs per commit narrow that. A benchmark of one point has only its own (0 where its
repeats agreed exactly). On the absolute scale a number that moved and rests on fewer than
:data:`ABSOLUTE_MIN_DF` degrees of freedom (one pair of runs) is too noisy to judge: its
threshold would be some 900 standard deviations, which no change reaches, while the
relative scale's 50% limit says so by itself.

Its *threshold* ``t`` — ``make compare`` calls a change between two positive values a
regression or an improvement when they differ by a factor above ``1 + t`` either way, and
other changes when their relative change exceeds ``t`` — is set for comparing two single
runs with a per-number false-alarm rate :data:`FALSE_ALARM`:

    threshold = exp(q * sqrt(2) * sigma) - 1,   q = t_{1 - FALSE_ALARM/2}(df)

(Student's t quantile: sigma rests on ``df`` degrees of freedom, and with one — a single
pair of runs — q is 637, so such a number is almost always too noisy: a spread from one
pair says little.) More runs, or runs of more commits, raise ``df`` and narrow the
threshold; they do not widen it, as a range would. A deterministic benchmark (every
point's sigma 0) has threshold 0: any change is real. A number whose threshold exceeds
TOO_NOISY (50%) is too noisy to track here: ``make compare`` judges only a move beyond it.
The file also keeps each number's *spread*,
the largest relative range ``(max - min) / |median|`` of its values over the runs of one
commit (what was observed), beside ``sigma`` and ``df``.

A number declared on the *absolute* scale (``scale="absolute"`` beside its direction: an
error, a difference, an overhead in percent — a number whose 0 is a natural value and
whose noise adds rather than multiplies) has its spread, sigma and threshold in its own
unit: the standard deviation and the range ``max - min`` of the values themselves,
``threshold = q * sqrt(2) * sigma``, and a change is ``new - old``. Relative to a value
near 0 any change is infinite; in the number's unit it can be judged. Such a threshold is
"too noisy" only when it is infinite. Its floor is the pooled sigma of the benchmark's
points of the same size only (largest values within a factor :data:`SAME_SIZE`): a sigma
in milliseconds of a 2-s restart says nothing of a 0.01-ms switch measured beside it.
Where none of those moved, the floor is the moved points' pooled sigma relative to their
size, at this point's size; for a point that read 0 in every run, their pooled sigma.
So no point gets 0 while a sibling moved, as on the relative scale.

Files written before ``sigma`` and ``df`` were recorded (threshold = ``factor`` times the
floored range) still load and judge with the thresholds they hold.

Stored as JSON, by default in ``reports/noise/<machine>.json`` (committed with the
suite, since it describes a machine, not a run). The file also records the hardware the runs
ran on (``hardware``: asv's ``cpu``, ``num_cpu``, ``ram``, ``os`` and ``arch``), so that a
run of other hardware filed under the same machine name (a generic host name such as "vm")
is not judged by these thresholds unnoticed (:func:`machine_mismatch`); a file written
before it was recorded loads without it.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from impls.harness import atomic, paths
from impls.harness.report.results import STATUS_OK
from impls.harness.report.runs import STAMP_FORMAT

SCHEMA = 1
FACTOR = 3.0  # the older rule's threshold / floored range, kept to read files written before sigma and df
# The per-number false-alarm rate the thresholds are set for: an unchanged number, compared
# run against run, is flagged (a regression or an improvement) about once in 1000 compares.
# Every number with a finite non-zero threshold is judged (a wide one only on a move beyond
# it): with ~420 of them (vm-quick) a compare of an unchanged commit flags one or more about a
# third of the time, and a regression (half of those, exit 1) about one in 5; 1% per number
# would flag 4 numbers in every compare. `make noise` prints the rate for its file.
FALSE_ALARM = 0.001
LISTED_BEYOND = 0.05  # a too-noisy number is listed past the move two runs exceed this often
ABSOLUTE_MIN_DF = 2  # an absolute-scale number on fewer degrees of freedom is too noisy to judge
TOO_NOISY = 0.5
EXPECTED_RANGE = 2 / math.sqrt(math.pi)  # the mean range of two normal values, in standard deviations
RELATIVE, ABSOLUTE = "relative", "absolute"
SCALES = (RELATIVE, ABSOLUTE)
EVERY_POINT = "*"  # the params of a hand-written threshold that holds for every point of its benchmark
# What asv records of the machine a run ran on (its result file's ``params``, the folder's
# machine.json), kept as text as asv writes it: ``ram`` in bytes, ``num_cpu`` a count.
HARDWARE = ("cpu", "num_cpu", "ram", "os", "arch")
RAM_TOLERANCE = 0.1  # two records' RAM sizes within this fraction of the larger are one machine's


class NoiseError(ValueError):
    """Too few runs to measure noise, or a thresholds file that cannot be read."""


def default_noise_path(machine: str) -> Path:
    return paths.reports_dir() / "noise" / f"{machine}.json"


@dataclasses.dataclass(frozen=True)
class Threshold:
    """One number's measured noise and the threshold it sets: relative (0.05 = 5%), or in
    the number's own unit where ``scale`` is :data:`ABSOLUTE`. ``spread`` is the observed
    range over the runs of one commit (the largest over commits); ``sigma`` the standard
    deviation the threshold was set from (floored, see the module doc; inf: too noisy) and
    ``df`` its degrees of freedom, both None in a file written before they were recorded
    or by hand."""

    benchmark: str
    params: str  # asv's param_label, "" for an unparameterised benchmark
    runs: int
    spread: float
    threshold: float
    version: str = ""  # the benchmark's asv version it was measured on ("" when unknown)
    scale: str = RELATIVE
    factor: float = FACTOR  # an older file's threshold / floored spread (:attr:`Noise.factor`)
    sigma: float | None = None
    df: int | None = None

    @property
    def too_noisy(self) -> bool:
        return too_noisy(self.threshold, self.scale)

    @property
    def floored_spread(self) -> float:
        """The range two runs of the same commit are expected to span (relative, or in the
        number's unit on the absolute scale), never below the range its repeats did span:
        ``max(spread, EXPECTED_RANGE * sigma)`` (about 1.13 sigma; on the relative scale
        ``expm1`` of it, sigma being a spread of logarithms; infinite where sigma is) where
        ``sigma`` is known. In an older or hand-written entry,
        the range its threshold was set from, ``threshold / factor`` and never below
        ``spread`` (``spread`` itself where ``factor`` is 0 or not finite)."""
        if self.sigma is not None:
            if not math.isfinite(self.sigma):
                return math.inf
            expected = EXPECTED_RANGE * self.sigma      # on the relative scale a range of logarithms
            return max(self.spread, math.expm1(expected) if self.scale == RELATIVE else expected)
        if 0 < self.factor < math.inf:
            return max(self.spread, self.threshold / self.factor)
        return self.spread

    @property
    def unusual_move(self) -> float:
        """How far a value must move (relative, or in the number's unit) before it is unusual
        for this number's noise: past what two runs of one commit differ by 1 time in 20
        (:func:`two_run_threshold` at a false-alarm rate of :data:`LISTED_BEYOND`) where
        ``sigma`` is known, never below :attr:`floored_spread`; that range itself in an older
        or hand-written entry. ``make compare`` lists a too-noisy number that moved this far."""
        if self.sigma is None or self.df is None:
            return self.floored_spread
        return max(self.floored_spread, two_run_threshold(self.sigma, self.df, self.scale, LISTED_BEYOND))

    @property
    def measured_sigma(self) -> bool:
        """Whether ``sigma`` and its degrees of freedom are known (an older or hand-written
        entry has neither)."""
        return self.sigma is not None and bool(self.df)

    def interval(self, value: float) -> tuple[float, float]:
        """(low, high), in the number's unit: the 95% interval of the number's mean on this
        machine around ``value``, one run of it. On the relative scale with a measured sigma
        (the sd of the logarithms of positive values), ``value * exp(-+ t * sigma)`` for a
        positive ``value`` (Student's t at 0.975 and ``df``): the factor sigma measures, so a
        rate's interval never goes below 0; mirrored for a negative one. Otherwise
        ``value -+`` :meth:`range_width`. (-inf, inf) where the noise or the threshold is
        infinite. Its 95% holds where the benchmark's points are about equally noisy; a point
        1.5-2x noisier than its siblings that takes their pooled degrees of freedom (see the
        module's floor) is covered 87-93% of the time (simulated)."""
        if (self.scale == RELATIVE and self.measured_sigma and value != 0 and math.isfinite(self.sigma)
                and math.isfinite(self.threshold)):
            reach = math.exp(t_quantile(0.975, self.df) * self.sigma)
            low, high = value / reach, value * reach
            return min(low, high), max(low, high)
        width = self.range_width(value)
        return (value - width, value + width) if math.isfinite(width) else (-math.inf, math.inf)

    def range_width(self, value: float) -> float:
        """The half-width, in the number's unit, of the 95% interval of the number's mean on
        this machine around ``value``, one run of it: ``t * sigma`` (Student's t at 0.975 and
        ``df``; relative to ``|value|`` on the relative scale), from the floored sigma
        ``make compare``'s threshold is set from, so a point that repeated exactly among
        siblings that moved does not get 0, and the width does not grow with how many
        commits were repeated. Without :attr:`measured_sigma`, :attr:`floored_spread`, the
        range two runs span. Infinite where the noise or the threshold is."""
        unit = abs(value) if self.scale == RELATIVE else 1.0
        if not self.measured_sigma:
            return unit * self.floored_spread
        if not math.isfinite(self.sigma) or not math.isfinite(self.threshold):
            return math.inf
        return unit * t_quantile(0.975, self.df) * self.sigma

    def level_threshold(self, before: int, after: int, candidates: int = 1) -> float:
        """The threshold for a step between two levels of a history, each the median of
        ``before`` and ``after`` single runs (one per commit), found among ``candidates``
        places a step could have been (a fit that chose where to cut tested each of them).
        It is :func:`two_run_threshold` at the standard deviation of the difference of two
        such medians (:func:`_median_variance`) and at this threshold's false-alarm rate
        divided over the candidates, so the levels of many commits resolve a smaller step than
        two single runs, at this threshold's false-alarm rate over the whole series.
        :attr:`threshold` itself for two single runs at one candidate, without
        :attr:`measured_sigma`, or where the threshold is 0 or infinite."""
        if (not self.measured_sigma or not 0 < self.threshold < math.inf or not 0 < self.sigma < math.inf
                or (before, after, candidates) == (1, 1, 1)):
            return self.threshold
        width = math.log1p(self.threshold) if self.scale == RELATIVE else self.threshold
        q = width / (math.sqrt(2) * self.sigma)                 # the t quantile the threshold was set at
        false_alarm = _betainc(self.df / 2.0, 0.5, self.df / (self.df + q * q)) / max(candidates, 1)   # 2 tails
        if not false_alarm > 0:         # a tail past float range: keep this threshold's quantile
            return self.threshold
        sigma = self.sigma * math.sqrt((_median_variance(before) + _median_variance(after)) / 2)
        return two_run_threshold(sigma, self.df, self.scale, false_alarm)

    def applies_to(self, version: str) -> bool:
        """Whether this threshold judges numbers of benchmark ``version``: the one it was
        measured on, or any when either version is not known ("")."""
        return not self.version or not version or self.version == version


_SMALL_MEDIAN_VARIANCE = {1: 1.0, 2: 0.5, 3: 0.4487, 4: 0.3433}   # exact, normal values


def _median_variance(n: int) -> float:
    """The variance of the median of ``n`` >= 1 normal values over that of one: exact up to
    4 values, ``pi / (2 n)`` beyond (the large-n value, above the exact one), so it falls as
    ``n`` grows."""
    return _SMALL_MEDIAN_VARIANCE.get(max(n, 1)) or math.pi / (2 * n)


def _label_key(params: str) -> str:
    """``params`` with no space after its commas: asv's label and ``make compare``'s print."""
    return re.sub(r",\s+", ",", params)


def factor(old: float, new: float) -> float | None:
    """``new / old`` where both are positive and finite and so is their ratio (a change
    judged by its factor, the same both ways), else None: a ratio that overflows to inf or
    underflows to 0 (1e200 against 1e-200) is judged by its relative change instead."""
    if not (0 < old < math.inf and 0 < new < math.inf):
        return None
    ratio = new / old
    return ratio if 0 < ratio < math.inf else None


def moved_beyond(old: float, new: float, limit: float, scale: str = RELATIVE) -> bool:
    """Whether ``new`` moved from ``old`` by more than ``limit`` (any size, on ``scale``):
    a factor above ``1 + limit`` either way for two positive values on the relative scale,
    else a change (:func:`change`) larger than ``limit`` in size."""
    ratio = factor(old, new) if scale == RELATIVE else None
    if ratio is not None:
        return max(ratio, 1 / ratio) > 1 + limit
    return abs(change(old, new, scale)) > limit


def too_noisy(threshold: float, scale: str = RELATIVE) -> bool:
    """Whether a number with ``threshold`` cannot be tracked: above :data:`TOO_NOISY` on the
    relative scale; infinite (a null in the file) on either."""
    return threshold > TOO_NOISY if scale == RELATIVE else not math.isfinite(threshold)


def percent_text(threshold: float) -> str:
    """A relative ``threshold`` in percent, as compare and make noise print it: "12.3%", "over
    1000%" past 10 (one pair of runs gives thresholds like 1e+50), "inf%" for an infinite one."""
    if threshold <= 10:
        return f"{100 * threshold:.3g}%"
    return "over 1000%" if math.isfinite(threshold) else "inf%"


def change(old: float, new: float, scale: str = RELATIVE) -> float:
    """Return the signed change from ``old`` to ``new``: ``new - old`` on the absolute
    scale, ``(new - old) / |old|`` on the relative one (infinite, the way it went, from 0
    or from an infinite ``old``); 0 when they are equal."""
    if new == old:
        return 0.0
    if scale == ABSOLUTE:
        return new - old
    finite_base = old and not math.isinf(old)
    return (new - old) / abs(old) if finite_base else math.copysign(math.inf, new - old)


@dataclasses.dataclass(frozen=True)
class Noise:
    """A machine's thresholds, by (benchmark, params)."""

    machine: str
    measured: str  # ISO time
    runs: list[dict]  # {"commit", "started", "file"} of every run measured from
    thresholds: dict[tuple[str, str], Threshold]
    factor: float = FACTOR  # an older file's threshold / floored range (entries without sigma)
    false_alarm: float | None = None  # the per-number false-alarm rate the thresholds are set for (None: older file)
    # the hardware the runs ran on (:data:`HARDWARE` keys, asv's text); {}: not recorded (an older file)
    hardware: dict[str, str] = dataclasses.field(default_factory=dict)

    def get(self, benchmark: str, params: str) -> Threshold | None:
        """The threshold of one number: its own (its params as asv labels them, or written as
        ``make compare`` prints them, without the space after each comma), else one written
        for every point of the benchmark (params :data:`EVERY_POINT`)."""
        return (self.thresholds.get((benchmark, params))
                or self._by_label.get((benchmark, _label_key(params)))
                or self.thresholds.get((benchmark, EVERY_POINT)))

    @functools.cached_property
    def _by_label(self) -> dict[tuple[str, str], Threshold]:
        return {(b, _label_key(p)): t for (b, p), t in self.thresholds.items()}

    @property
    def repeats_of(self) -> str:
        """Words on what was repeated: ``"repeats of commit 76fdae5"``, ``"repeats of each of 2
        commits (76fdae5, 9862260)"``; ``"repeats of each commit"`` where the runs name none."""
        commits = list(dict.fromkeys(str(run.get("commit", ""))[:7] for run in self.runs if run.get("commit")))
        if not commits:
            return "repeats of each commit"
        if len(commits) == 1:
            return f"repeats of commit {commits[0]}"
        shown = ", ".join(commits[:4]) + (", ..." if len(commits) > 4 else "")
        return f"repeats of each of {len(commits)} commits ({shown})"

    @property
    def when(self) -> str:
        """``"; thresholds measured 2026-12-07"`` from :attr:`measured`; "" where it is no ISO time."""
        try:
            day = dt.datetime.fromisoformat(self.measured).date().isoformat()
        except (TypeError, ValueError):
            return ""
        return f"; thresholds measured {day}"

    @property
    def sitting(self) -> str:
        """Words on the time the runs measured from span (``", the runs ending within 28 min:
        drift between days is not in it"``, ``", the runs ending over 3 days"``), from their
        stamps (``20261205T164016``: the start of a run's last benchmark); "" where fewer than
        two runs carry one."""
        stamps = []
        for run in self.runs:
            try:
                stamps.append(dt.datetime.strptime(str(run.get("started", "")), STAMP_FORMAT))
            except ValueError:
                continue
        if len(stamps) < 2:
            return ""
        minutes = (max(stamps) - min(stamps)).total_seconds() / 60
        if minutes < 24 * 60:
            took = f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.0f} h"
            return f", the runs ending within {took}: drift between days is not in it"
        return f", the runs ending over {minutes / (24 * 60):.0f} days"

    def on_scales(self, scales: dict[str, str]) -> tuple["Noise", int]:
        """This noise without the thresholds measured on another scale than the benchmarks now
        declare (``scales``: benchmark -> :data:`ABSOLUTE`; others relative), and how many
        were left out: the report's history and intervals then treat them as unmeasured, as
        ``make compare`` does."""
        kept = {key: t for key, t in self.thresholds.items() if t.scale == scales.get(t.benchmark, RELATIVE)}
        return dataclasses.replace(self, thresholds=kept), len(self.thresholds) - len(kept)

    def on_versions(self, versions: dict[str, str]) -> tuple["Noise", int]:
        """This noise without the thresholds measured on another version of their benchmark
        than ``versions`` gives (benchmark -> its current asv version; a benchmark absent
        there, or a threshold that records no version, is kept), and how many were left out:
        a threshold holds for the version it was measured on, as ``make compare`` applies it."""
        kept = {key: t for key, t in self.thresholds.items() if t.applies_to(versions.get(t.benchmark, ""))}
        return dataclasses.replace(self, thresholds=kept), len(self.thresholds) - len(kept)

    @property
    def unversioned(self) -> int:
        """How many thresholds record no benchmark version (they apply to any version)."""
        return sum(1 for t in self.thresholds.values() if not t.version)


def value_range(values: list[float], scale: str = RELATIVE) -> float:
    """Return the spread of ``values``: :func:`relative_range`, or ``max - min`` on the
    absolute scale; inf (too noisy to track) where a value is not finite. Never NaN."""
    if scale == RELATIVE:
        return relative_range(values)
    return max(values) - min(values) if all(map(math.isfinite, values)) else math.inf


def relative_range(values: list[float]) -> float:
    """Return ``(max - min) / |median|`` of ``values``: 0 when all equal; inf around a 0
    median or where a value is not finite (inf or NaN). Never NaN."""
    if not all(map(math.isfinite, values)):
        return math.inf
    low, high = min(values), max(values)
    if high == low:
        return 0.0
    middle = abs(statistics.median(values))
    return (high - low) / middle if middle else math.inf


def sample_sigma(values: list[float], scale: str = RELATIVE) -> float:
    """Return the sample standard deviation (ddof=1) of two or more ``values``: on the relative
    scale that of their logarithms where all are positive (the scale :func:`factor`, which
    compare judges two positive values by, is on: a rate that falls to 1/100 of its value in
    one run counts as the factor it is, which the values' own spread, bounded by their
    median, cannot say), else divided by their ``|median|`` (inf around a 0 median; the scale
    of :func:`change`, which judges the others); in their unit on the absolute scale. 0 when
    all are equal, inf where a value is not finite. Never NaN."""
    if not all(map(math.isfinite, values)):
        return math.inf
    if max(values) == min(values):
        return 0.0
    if scale == ABSOLUTE:
        return statistics.stdev(values)
    if min(values) > 0:
        return statistics.stdev([math.log(v) for v in values])
    middle = abs(statistics.median(values))
    return statistics.stdev(values) / middle if middle else math.inf


def pooled_sigma(groups: Iterable[tuple[int, float]]) -> tuple[float, int]:
    """Return ``(sigma, df)`` pooled over ``groups`` of ``(n_c, s_c)`` (runs of one commit
    and their :func:`sample_sigma`, ``n_c >= 2``): ``df = sum(n_c - 1)`` and ``sigma =
    sqrt(sum((n_c - 1) s_c^2) / df)``; sigma is inf where any ``s_c`` is."""
    groups = list(groups)
    df = sum(n - 1 for n, _ in groups)
    if any(not math.isfinite(s) for _, s in groups):
        return math.inf, df
    return math.sqrt(sum((n - 1) * s * s for n, s in groups) / df), df


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz;
    Press et al., Numerical Recipes, 3rd ed., section 6.4)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Return P(T <= t) for Student's t with ``df`` > 0 degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """Return the ``p`` quantile (0.5 <= p < 1) of Student's t with ``df`` > 0 degrees of
    freedom (the normal one where ``df`` is infinite), by bisection on :func:`t_cdf` to a
    relative 1e-12: 12.706 for p 0.975 and df 1, 636.62 for p 0.9995 and df 1."""
    if not 0.5 <= p < 1 or not df > 0:
        raise ValueError(f"t_quantile needs 0.5 <= p < 1 and df > 0, not p={p!r}, df={df!r}")
    if math.isinf(df):
        return statistics.NormalDist().inv_cdf(p)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, 2 * high
    while high - low > 1e-12 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if t_cdf(middle, df) < p else (low, middle)
    return (low + high) / 2


def consistent_ratio(df: int, level: float = 0.95) -> float:
    """The largest ratio of a sample standard deviation on ``df`` degrees of freedom to the
    true one that normal noise gives with probability ``level``: ``sqrt(chi2_level(df) / df)``
    (Wilson-Hilferty's approximation of the chi-square quantile; 1.94 at df 1 against the exact
    1.96, 1.55 at df 4). A point whose sigma exceeds its benchmark's pooled one by more is
    judged noisier than its siblings, on its own degrees of freedom."""
    z = statistics.NormalDist().inv_cdf(level)
    k = float(df)
    chi2 = k * max(0.0, 1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3
    return math.sqrt(chi2 / k)


def two_run_threshold(sigma: float, df: float, scale: str = RELATIVE, false_alarm: float = FALSE_ALARM) -> float:
    """Return the threshold for comparing two single runs of a number whose run-to-run
    standard deviation ``sigma`` (relative, or in its unit on the absolute scale) rests on
    ``df`` degrees of freedom, so that an unchanged number exceeds it with probability
    ``false_alarm`` (normal noise; either way): ``w = q * sqrt(2) * sigma`` with ``q`` the
    ``1 - false_alarm / 2`` quantile of Student's t at ``df``, and the threshold ``w`` on the
    absolute scale, the factor ``exp(w) - 1`` on the relative one. 0 where sigma is 0 (any
    change is real), inf where sigma is inf or ``df`` is 0."""
    if sigma == 0:
        return 0.0
    if not math.isfinite(sigma) or not df > 0:
        return math.inf
    width = t_quantile(1 - false_alarm / 2, df) * math.sqrt(2) * sigma
    if scale == ABSOLUTE:
        return width
    try:
        return math.expm1(width)
    except OverflowError:
        return math.inf


def measure_noise(machine: str, runs_by_commit: dict[object, list[pd.DataFrame]],
                  run_ids: Iterable[dict] = (), false_alarm: float = FALSE_ALARM,
                  scales: dict[str, str] | None = None, hardware: Mapping[str, str] | None = None) -> Noise:
    """Return the :class:`Noise` of ``machine`` from frames of repeated runs, grouped by
    commit (or by commit and environment: any key whose runs repeat one another), its
    thresholds set for a per-number false-alarm rate ``false_alarm`` (see the module doc).
    ``scales`` maps a benchmark name to :data:`ABSOLUTE` where it is declared so (every
    other one is relative). ``hardware`` is the record of the machine the runs ran on
    (:func:`runs_hardware`), kept in the result as it is.

    Each frame is one run (``results.read_result_file``). Groups with fewer than two runs
    are ignored; raises NoiseError when no commit has two, or when no number was measured
    in two of them. Values with the same ``started_at`` in two runs are one measurement
    (asv kept it through a partial rerun); values of two benchmark versions are not
    compared, and a number's threshold comes from the version measured last (by start time)
    alone.
    """
    def scale_of(benchmark: str) -> str:
        return (scales or {}).get(benchmark, RELATIVE)

    usable = {c: f for c, f in runs_by_commit.items() if len(f) >= 2}
    if not usable:
        raise NoiseError(f"no commit of {machine} has two stored runs in one environment (repeats are runs of "
                         "one commit in one environment); run the suite on one commit 3 to 5 "
                         "times (make bench, repeated; two runs leave most numbers too noisy), then measure again")
    # per number and benchmark version: [(n_c, s_c, range_c) per commit], values seen, newest start, largest |value|
    by_version: dict[tuple[str, str, str], list] = {}
    for frames in usable.values():
        # keyed by version, then by when the benchmark started: a result a partial rerun kept
        # is one measurement
        values: dict[tuple[str, str, str], dict[object, float]] = {}
        for frame in frames:
            ok = frame[frame["status"] == STATUS_OK]
            started = ok["started_at"] if "started_at" in ok else [None] * len(ok)
            version = ok["version"] if "version" in ok else [""] * len(ok)
            for b, p, ver, at, value in zip(ok["benchmark"], ok["param_label"], version, started, ok["value"]):
                by_start = values.setdefault((b, p, str(ver or "")), {})
                by_start[(id(frame), at) if at is None or at != at else at] = float(value)
        for key, by_start in values.items():
            seen = list(by_start.values())
            if len(seen) >= 2:
                entry = by_version.setdefault(key, [[], 0, None, 0.0])
                scale = scale_of(key[0])
                entry[0].append((len(seen), sample_sigma(seen, scale), value_range(seen, scale)))
                entry[1] += len(seen)
                entry[3] = max(entry[3], *(abs(v) for v in seen))
                stamps = [at for at in by_start if not isinstance(at, tuple)]
                newest = max(stamps) if stamps else None
                if newest is not None and (entry[2] is None or newest > entry[2]):
                    entry[2] = newest
    if not by_version:
        raise NoiseError(f"no number of {machine} was measured in two runs of one commit (every "
                         "repeated number failed or was skipped); nothing to set a threshold from")
    chosen: dict[tuple[str, str], tuple[str, list]] = {}
    for (b, p, ver), entry in by_version.items():  # the version measured last sets the number's threshold
        held = chosen.get((b, p))
        if held is None or _newer(entry[2], held[1][2]):
            chosen[(b, p)] = (ver, entry)
    counts = {key: entry[1] for key, (_, entry) in chosen.items()}
    versions = {key: ver for key, (ver, _) in chosen.items()}
    point_spread = {key: max(r for _, _, r in entry[0]) for key, (_, entry) in chosen.items()}
    own = {key: pooled_sigma((n, s) for n, s, _ in entry[0]) for key, (_, entry) in chosen.items()}
    magnitude = {key: entry[3] for key, (_, entry) in chosen.items()}
    by_benchmark: dict[str, list[tuple[str, str]]] = {}
    for key in own:
        by_benchmark.setdefault(key[0], []).append(key)

    floors = {b: _pooled_finite(own[k] for k in keys) for b, keys in by_benchmark.items()}

    def typical(key: tuple[str, str]) -> tuple[float, int]:
        """The benchmark's floor for ``key``: (sigma, the degrees of freedom it rests on)."""
        siblings, floor = by_benchmark[key[0]], floors[key[0]]
        if scale_of(key[0]) != ABSOLUTE or floor[0] in (0.0, math.inf):
            return floor
        # sigmas in the unit: the points of the same size, else the moved points' sigmas
        # relative to their size at this point's size, else (a point that read 0) all of them
        same = _pooled_finite(own[k] for k in siblings if comparable(magnitude[k], magnitude[key]))
        if same[0] > 0 or magnitude[key] == 0:
            return same if same[0] > 0 else floor
        relative = [(own[k][0] / magnitude[k], own[k][1]) for k in siblings
                    if own[k][0] > 0 and 0 < magnitude[k] < math.inf and math.isfinite(own[k][0])]
        if not relative:
            return floor
        pooled, df = _pooled_finite(relative)
        return pooled * magnitude[key], df

    thresholds = {}
    for key, spread in sorted(point_spread.items()):
        (floor_sigma, floor_df), (own_sigma, own_df) = typical(key), own[key]
        sigma = max(floor_sigma, own_sigma)
        # the floor's evidence where the point is consistent with it (at or below it, or above
        # it by no more than its own few degrees of freedom make likely), else its own alone
        shared = math.isfinite(floor_sigma) and (own_sigma <= floor_sigma or (
            own_df > 0 and own_sigma <= consistent_ratio(own_df) * floor_sigma))
        df = max(floor_df, own_df) if shared else own_df
        threshold = two_run_threshold(sigma, df, scale_of(key[0]), false_alarm)
        if scale_of(key[0]) == ABSOLUTE and sigma > 0 and df < ABSOLUTE_MIN_DF:
            threshold = math.inf        # one pair of runs: ~900 sigma, never a verdict; said as too noisy
        thresholds[key] = Threshold(key[0], key[1], counts[key], spread, threshold,
                                    versions.get(key, ""), scale_of(key[0]), FACTOR, sigma, df)
    return Noise(machine, dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                 list(run_ids), thresholds, FACTOR, false_alarm, dict(hardware or {}))


SAME_SIZE = 10.0  # absolute-scale points whose largest values are within this factor floor each other


def comparable(a: float, b: float) -> bool:
    """Whether two absolute-scale points whose largest magnitudes are ``a`` and ``b`` are of
    one size (within a factor :data:`SAME_SIZE`; two zeros are), so that one's spread in
    the unit says something about the other's: a 0.01-ms difference is not floored by the
    spread of a 2-s restart measured by the same benchmark."""
    low, high = sorted((abs(a), abs(b)))
    if not math.isfinite(high):
        return low == high
    return high == 0 or (low > 0 and high <= SAME_SIZE * low)


def _newer(a, b) -> bool:
    """Whether start time ``a`` is later than ``b`` (None: unknown, never later)."""
    return a is not None and (b is None or a > b)


def _pooled_finite(sigmas: Iterable[tuple[float, int]]) -> tuple[float, int]:
    """Return the sigma pooled over the finite non-zero ones of ``sigmas`` (``(sigma, df)``
    pairs: ``sqrt(sum(df s^2) / sum(df))``) and the sum of their degrees of freedom, the
    ones it rests on; (0, the finite ones' df) when every finite one is 0; (inf, 0) when
    none is finite. A point around 0 (infinite relative sigma) does not make its siblings
    untrackable, and one that repeated exactly while its siblings moved does not pull the
    floor down: it agreed by chance, or its value was kept from an earlier run (asv keeps
    the points a parameter-level ``--bench`` rerun skipped, under the new start time of
    their benchmark), and either way it is not evidence of zero noise. Pooled, not the
    median: the median of sample sigmas of one pair each is about 0.67 sigma, and would
    claim the precision of all their degrees of freedom (five times the false alarms)."""
    finite = [(s, df) for s, df in sigmas if math.isfinite(s)]
    moved = [(s, df) for s, df in finite if s > 0 and df > 0]
    if moved:
        return pooled_sigma((df + 1, s) for s, df in moved)
    return (0.0, sum(df for _, df in finite)) if finite else (math.inf, 0)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _entry(t: Threshold) -> dict:
    """One number of the thresholds file: ``sigma`` (null: infinite) and ``df`` only where known."""
    entry = {"benchmark": t.benchmark, "params": t.params, "runs": t.runs, "spread": _finite(t.spread),
             "threshold": _finite(t.threshold), "version": t.version, "scale": t.scale}
    if t.sigma is not None:
        entry["sigma"] = _finite(t.sigma)
    if t.df is not None:
        entry["df"] = t.df
    return entry


def save_noise(noise: Noise, path: Path) -> Path:
    """Write ``noise`` as JSON to ``path`` (atomically); return the path."""
    document = {
        "schema": SCHEMA,
        "machine": noise.machine,
        **({"hardware": dict(noise.hardware)} if noise.hardware else {}),
        "measured": noise.measured,
        "factor": noise.factor,
        "too_noisy": TOO_NOISY,
        **({"false_alarm": noise.false_alarm} if noise.false_alarm is not None else {}),
        "runs": noise.runs,
        "numbers": [_entry(t) for t in noise.thresholds.values()],
    }
    return atomic.write_json(Path(path), document)


def _number(value: object, what: str) -> float:
    """A threshold or spread of a thresholds file: a number >= 0, or null (infinite)."""
    if value is None:
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{what} is {value!r}, not a number >= 0 or null")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{what} is {str(value)[:24]}..., too large for a float") from None


MAX_WRITTEN = 1.0  # the largest relative threshold a hand-written entry may give (100%)


def _threshold(value: object, scale: str, measured: bool) -> float:
    """The ``threshold`` of a thresholds file's entry: null is infinite (too noisy to track,
    as :func:`save_noise` writes it); else a finite number >= 0, and on the relative scale at
    most :data:`MAX_WRITTEN` unless ``measured`` (``make noise`` writes a too-noisy number's
    threshold as measured, which may exceed 1): a hand-written 5 is 5% typed as a percentage.
    Raises ValueError (one line, saying to write 0.05 for 5% on the relative scale) otherwise."""
    if value is None:
        return math.inf
    try:
        number = _number(value, "'threshold'")
    except ValueError as err:       # not a number at all: _number's own words, and the hint
        hint = "" if scale == ABSOLUTE else ": write 0.05 for 5% (null: too noisy to track)"
        raise ValueError(f"{err}{hint}") from None
    limit = math.inf if scale == ABSOLUTE or measured else MAX_WRITTEN
    if number <= limit and math.isfinite(number):
        return number
    if scale == ABSOLUTE:
        raise ValueError(f"'threshold' is {str(value)[:24]}, not a finite number >= 0 in the number's "
                         "unit (null: too noisy to track)")
    raise ValueError(f"'threshold' is {str(value)[:24]}, not a relative threshold from 0 to 1: write 0.05 "
                     "for 5% (null: too noisy to track)")


def load_noise(path: Path) -> Noise:
    """Read a thresholds file written by :func:`save_noise` (null spread or threshold =
    infinite). An entry needs ``benchmark`` and ``threshold``; ``params`` (left out: every
    point of the benchmark), ``spread`` (default: the threshold over the factor), ``runs``,
    ``version`` and ``scale`` (default relative) may be left out of a hand-written entry, and
    ``sigma`` (a number >= 0, null: infinite) and ``df`` (an integer >= 1) are left out of
    one written before they were recorded (both None then). ``hardware``, the record of the
    machine the runs ran on, may be left out (an older file: {}).
    A threshold is a finite number >= 0 or null; a relative one above 1 (100%) only in a
    measured entry (with its ``spread`` and ``runs`` >= 2, as :func:`save_noise` writes it).
    Raises NoiseError, one line naming the file and the first entry that is wrong (and its
    benchmark).
    """
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise NoiseError(f"{path}: cannot read the thresholds file: {err}") from err
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise NoiseError(f"{path}: not a thresholds file of schema {SCHEMA}")
    if "numbers" not in document:
        raise NoiseError(f"{path}: no 'numbers' list (the thresholds, one object a number)")
    numbers = document["numbers"]
    if not isinstance(numbers, list):
        raise NoiseError(f"{path}: 'numbers' is not a list")
    try:
        hardware = _hardware(document.get("hardware", {}))
        factor = _number(document.get("factor", FACTOR), "'factor'")
        false_alarm = document.get("false_alarm")
        if false_alarm is not None and not 0 < _number(false_alarm, "'false_alarm'") < 1:
            raise ValueError(f"'false_alarm' is {false_alarm!r}, not a probability between 0 and 1")
    except ValueError as err:
        raise NoiseError(f"{path}: {err}") from err
    thresholds = {}
    for index, entry in enumerate(numbers, 1):
        try:
            if not isinstance(entry, dict):
                raise ValueError("not an object")
            if not isinstance(entry.get("benchmark"), str) or "threshold" not in entry:
                raise ValueError("needs 'benchmark' (a name) and 'threshold' (relative, 0.05 = 5%)")
            runs = entry.get("runs", 0)
            if isinstance(runs, bool) or not isinstance(runs, int):
                raise ValueError(f"'runs' is {runs!r}, not an integer")
            scale = entry.get("scale", RELATIVE)
            if scale not in SCALES:
                raise ValueError(f"'scale' is {scale!r}, not one of {', '.join(SCALES)}")
            threshold = _threshold(entry["threshold"], scale, "spread" in entry and runs >= 2)
            spread = (_number(entry["spread"], "'spread'") if "spread" in entry
                      else threshold / factor if factor else threshold)
            params = entry.get("params", EVERY_POINT)
            if not isinstance(params, str):
                raise ValueError(f"'params' is {params!r}, not a parameter label like \"size=4096\" "
                                 f"(\"\" without parameters, \"{EVERY_POINT}\" or left out: every point)")
            sigma = _number(entry["sigma"], "'sigma'") if "sigma" in entry else None
            df = entry.get("df")
            if df is not None and (isinstance(df, bool) or not isinstance(df, int) or df < 1):
                raise ValueError(f"'df' is {df!r}, not an integer >= 1 (the degrees of freedom of sigma)")
            item = Threshold(entry["benchmark"], params, runs, spread, threshold,
                             str(entry.get("version") or ""), scale, factor, sigma, df)
            if (item.benchmark, item.params) in thresholds:
                raise ValueError(f"a second threshold for {item.benchmark} [{item.params}]")
        except ValueError as err:
            named = (f" ({entry['benchmark']})"
                     if isinstance(entry, dict) and isinstance(entry.get("benchmark"), str) else "")
            raise NoiseError(f"{path}: entry {index} of 'numbers'{named}: {err}") from err
        thresholds[(item.benchmark, item.params)] = item
    return Noise(str(document.get("machine", "")), str(document.get("measured", "")),
                 document.get("runs", []), thresholds, factor,
                 None if false_alarm is None else float(false_alarm), hardware)


def _hardware(value: object) -> dict[str, str]:
    """The ``hardware`` of a thresholds file: an object whose :data:`HARDWARE` keys hold text
    or numbers (kept as text, as asv writes them; other keys are ignored). Raises ValueError
    (one line) for anything else."""
    if not isinstance(value, dict):
        raise ValueError(f"'hardware' is {str(value)[:40]!r}, not an object like asv's machine.json "
                         "(cpu, num_cpu, ram, os, arch)")
    record = {}
    for key in HARDWARE:
        item = value.get(key)
        if item is None or item == "":
            continue
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ValueError(f"'hardware' {key!r} is {str(item)[:40]!r}, not text or a number")
        record[key] = str(item)
    return record


def hardware_of(params: object, machine_json: object = None) -> dict[str, str]:
    """Return the record of the machine a run ran on: the :data:`HARDWARE` keys of ``params``
    (an asv result file's ``params``: what asv recorded when the run ran), each one it lacks or
    leaves empty from ``machine_json`` (asv's ``machine.json`` of the folder); as text, keys
    neither holds left out. Anything that is no dict counts as empty."""
    record = {}
    for source in (machine_json, params):      # the run's own record wins
        if not isinstance(source, dict):
            continue
        for key in HARDWARE:
            item = source.get(key)
            if item not in (None, "") and not isinstance(item, (bool, dict, list)):
                record[key] = str(item)
    return record


def run_hardware(path: Path, machine_json: object = None) -> dict[str, str]:
    """Return :func:`hardware_of` the asv result file at ``path`` and ``machine_json``; a file
    that cannot be read as a JSON object gives ``machine_json``'s record alone (never raises:
    the readers of results name damaged files themselves)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        data = None
    return hardware_of(data.get("params") if isinstance(data, dict) else None, machine_json)


def runs_hardware(files: Iterable[Path], machine_json: object = None) -> dict[str, str]:
    """Return the record of the machine the runs at ``files`` (asv result files, oldest
    first) ran on, for :func:`save_noise`: each key from the newest run that records it
    (:func:`run_hardware`), else from ``machine_json``."""
    record = hardware_of(None, machine_json)
    for path in files:
        record.update(run_hardware(path))
    return record


def hardware_disagreement(files: Sequence[Path], machine_json: object = None) -> str | None:
    """One line naming the first of ``files`` (asv result files, oldest first) whose run
    records other hardware than the newest one's, by :func:`machine_mismatch`'s rules; None
    where they agree (or do not record it). Runs of one machine name on two boxes would pool
    two machines' noise into one file, which then carries the newest box's record alone."""
    files = list(files)
    if len(files) < 2:
        return None
    newest = run_hardware(files[-1], machine_json)
    for path in files[:-1]:
        differs = hardware_differences(newest, run_hardware(path, machine_json))
        if differs:
            return f"{Path(path).name} ran on other hardware than {Path(files[-1]).name}: {'; '.join(differs)}"
    return None


def _count(text: str) -> float | None:
    """``text`` as a number (asv's ``ram`` in bytes, ``num_cpu``), None where it is not one
    (a hand-typed "16GB")."""
    try:
        number = float(text)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _ram_text(text: str) -> str:
    """asv's ``ram`` (bytes) in GiB ("23.5 GiB", "1007 GiB"), or the text itself where it is no number."""
    number = _count(text)
    if number is None:
        return repr(text)
    gib = number / 2 ** 30
    return f"{gib:.0f} GiB" if gib >= 100 else f"{gib:.3g} GiB"


def machine_mismatch(noise: Noise, run_machine: Mapping[str, object]) -> str | None:
    """Return one line (no final period) saying how the hardware ``noise``'s thresholds were
    measured on (:attr:`Noise.hardware`) differs from ``run_machine``, the record of the run
    they would judge (:func:`run_hardware` of its result file, or asv's ``machine.json``: keys
    ``cpu``, ``num_cpu``, ``ram``, ``arch``); None where the two agree on every key both
    record. Compared: the CPU model (case and spacing aside), the CPU count, the
    architecture, and the RAM size (bytes; within :data:`RAM_TOLERANCE` of the larger, or
    equal as text where either is no number). The ``os`` is not compared: a kernel update
    leaves the machine what it was. None as well where either side records none of them: a
    thresholds file written before ``make noise`` recorded the hardware cannot be checked.

    Example: ``"the thresholds were measured on other hardware than this run: CPU 'AMD EPYC'
    there, 'Intel Xeon Platinum 8480' here; 2 CPUs there, 112 here"``.
    """
    differs = hardware_differences(noise.hardware or {}, run_machine)
    return "the thresholds were measured on other hardware than this run: " + "; ".join(differs) if differs else None


def hardware_differences(there: Mapping[str, object], here: Mapping[str, object]) -> list[str]:
    """How machine record ``here`` differs from ``there`` (:func:`hardware_of` records), by
    :func:`machine_mismatch`'s rules, one phrase a key ("CPU 'AMD EPYC' there, 'Intel Xeon
    Platinum 8480' here"); [] where they agree on every key both record."""
    held, run = hardware_of(there), hardware_of(here)
    differs = []
    if "cpu" in held and "cpu" in run and " ".join(held["cpu"].lower().split()) != " ".join(run["cpu"].lower().split()):
        differs.append(f"CPU {held['cpu']!r} there, {run['cpu']!r} here")
    if "num_cpu" in held and "num_cpu" in run:
        there, here = _count(held["num_cpu"]), _count(run["num_cpu"])
        if (there != here) if there is not None and here is not None else held["num_cpu"] != run["num_cpu"]:
            differs.append(f"{held['num_cpu']} CPUs there, {run['num_cpu']} here")
    if "arch" in held and "arch" in run and held["arch"].lower() != run["arch"].lower():
        differs.append(f"architecture {held['arch']} there, {run['arch']} here")
    if "ram" in held and "ram" in run:
        there, here = _count(held["ram"]), _count(run["ram"])
        if (abs(there - here) > RAM_TOLERANCE * max(abs(there), abs(here))
                if there is not None and here is not None else held["ram"].strip() != run["ram"].strip()):
            differs.append(f"RAM {_ram_text(held['ram'])} there, {_ram_text(run['ram'])} here")
    return differs
