"""The uncertainty of a claim's measured value: an interval around it, and where it came from.

- A benchmark point: the 95% interval of its mean on this machine from its one run,
  ``value * exp(± t * sigma)`` (``value ± t * sigma`` on the absolute scale), with the
  run-to-run sigma ``make noise`` measured from repeated runs of one commit (of the
  logarithms, on the relative scale), floored as ``make compare``'s threshold floors it,
  and Student's t at 0.975 on its degrees of freedom (:meth:`noise.Threshold.interval`; an
  older thresholds file without sigma: its range).
- A ratio of two points: the factors both intervals reach multiply (their logarithms'
  half-widths add: wider than the ratio's own 95%); unbounded where a point's interval
  holds 0.
- A trend (Spearman's rho over a parameter): the lowest and the highest rho of means
  anywhere within the points' 95% intervals (every order of the values those intervals
  allow, up to :data:`EXACT_TREND_POINTS` points), joined with the measured rho. A redraw of
  the measured values within their intervals would draw rho toward 0, as the values are
  noisy already: below the measured rho of a clean order, never above it, so a rise by steps
  within the noise would read as a firm "partly". Past that many points it falls back to
  such a redraw (BOOTSTRAP_RESAMPLES draws, fixed seed, 2.5th to 97.5th percentile), and
  says so.
- An artifact value, or a point without repeats: no interval (None). Neither has a
  run-to-run measure (``make noise`` reads asv results, never artifacts), so
  :func:`lacks_run_to_run` says so of both: the verdict is judged on the single value and
  marked as one without noise thresholds, never more confident than a benchmark value whose
  thresholds are missing.
- A claim with ``sampling_interval``: the interval its run's artifact gives for the
  sampling of its data (a bootstrap over the test points, or the spread over other draws of a
  synthetic trace: the claim's ``method`` says which; of the same commit as the value),
  joined with the run-to-run one (the smallest interval holding both), or alone where there
  are no repeats. Where the run recorded null there (nothing bounds it: too many resamples
  had no value, too few draws finished), the interval is unbounded (:data:`UNBOUNDED_SAMPLING`,
  or in the claim's own words), so the verdict is inconclusive; so it is where the run recorded
  anything else than finite numbers low <= high (a malformed interval bounds nothing, so it
  never judges more firmly than a wide one).
- A point whose interval is infinite (its measured noise or threshold infinite, or a ratio
  over a zero point): an unbounded interval (:data:`UNBOUNDED`; -1..1 for a trend), so the
  verdict is inconclusive rather than taken from the point estimate alone. A number "too
  noisy to track here" (a threshold above 50%) with a finite sigma keeps its finite, wide
  interval (:meth:`noise.Threshold.interval`).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from impls.harness.report.claims import SAMPLING_ERROR, BenchmarkSource, Claim, PointRef, RatioSource, TrendSource
from impls.harness.report.measure import (MALFORMED_INTERVAL, UNBOUNDED_BY_RUN, _sortable, artifact_interval,
                                          select_points, spearman_rows)
from impls.harness.report.noise import Noise
from impls.harness.report.results import STATUS_OK
from impls.harness.report.value_run import ValueRun, run_of

BOOTSTRAP_RESAMPLES = 2000
UNBOUNDED_PREFIX = "unbounded: "
UNBOUNDED = "unbounded: a number it rests on is too noisy to track on this machine"
UNBOUNDED_SAMPLING = "unbounded: its test points cannot bound it (too many resamples have no value)"
NO_SAMPLING = "(the newest artifact holds no interval for this run: an older run's, or one of another commit)"
_UNBOUNDED_NOTE = {UNBOUNDED: "too noisy here", UNBOUNDED_SAMPLING: "the test points cannot bound it"}
BOOTSTRAP_SEED = 20240601
EXACT_TREND_POINTS = 12   # rho_range's 2^n sets of points


@dataclasses.dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str  # how it was found: "run-to-run spread (...)", a claim's sampling method, or "unbounded: ..."
    lacks: str = ""  # what it leaves out that the claim would have it hold ("without ... (...)"), or ""

    @property
    def described(self) -> str:
        """How it was found and, after "; ", what it leaves out (:attr:`lacks`) when anything."""
        return f"{self.method}; {self.lacks}" if self.lacks else self.method

    @property
    def unbounded(self) -> bool:
        """Whether nothing bounds the value: a number it rests on is too noisy here
        (:data:`UNBOUNDED`), or its run could not bound its sampling error
        (:data:`UNBOUNDED_SAMPLING`, or the claim's own words after ``unbounded: ``)."""
        return self.method.startswith(UNBOUNDED_PREFIX)

    @property
    def why_unbounded(self) -> str:
        """A few words on why the interval is unbounded ("" when it is not)."""
        if not self.unbounded:
            return ""
        return _UNBOUNDED_NOTE.get(self.method) or self.method.removeprefix(UNBOUNDED_PREFIX)

    def straddles(self, lowest: float, highest: float, open_low: bool = False,
                  open_high: bool = False) -> bool:
        """Whether the interval lies partly inside and partly outside the band from
        ``lowest`` to ``highest`` (an end excluded from the band when ``open_low`` /
        ``open_high``)."""
        reaches_low = self.high > lowest if open_low else self.high >= lowest
        reaches_high = self.low < highest if open_high else self.low <= highest
        clear_low = self.low > lowest if open_low else self.low >= lowest
        clear_high = self.high < highest if open_high else self.high <= highest
        return reaches_low and reaches_high and not (clear_low and clear_high)


def _label(rows: pd.DataFrame) -> str:
    return str(rows["param_label"].iloc[0])


Spread = tuple[float, float, float, int, bool]   # (low, high, value, runs, a t interval of the mean)


def _spread_of(points: pd.DataFrame, point: PointRef, noise: Noise) -> Spread | None:
    """(the point's interval :meth:`noise.Threshold.interval` in its unit: low, high; the
    value; runs; whether it is the mean's t interval rather than an older file's range), or
    None without one."""
    rows, failure = select_points(points, point.benchmark, point.params)
    if failure or len(rows) != 1:
        return None
    measured = noise.get(point.benchmark, _label(rows))
    value = float(rows["value"].iloc[0])
    return (*measured.interval(value), value, measured.runs, measured.measured_sigma) if measured else None


def _reach(low: float, high: float) -> float:
    """The factor an interval ``low .. high`` of one sign reaches either side of its
    geometric middle, ``sqrt(high / low)`` (>= 1); inf where it holds 0 or is not finite."""
    if not (math.isfinite(low) and math.isfinite(high)) or low * high <= 0:
        return math.inf
    return math.sqrt(high / low)


def _from_repeats(value: float, spreads: list[Spread | None], noise: Noise) -> Interval | None:
    """``value``'s point's interval (in its unit), or that of a ratio of two points: ``value``
    times and over the product of the factors their intervals reach (:func:`_reach`; the
    logarithms' half-widths add, wider than the ratio's own 95%); unbounded where a point's
    interval holds 0."""
    if any(h is None for h in spreads):
        return None
    runs = min(h[3] for h in spreads)
    if len(spreads) == 1:
        low, high = spreads[0][0], spreads[0][1]
    else:
        reach = math.prod(_reach(lo, hi) for lo, hi, _, _, _ in spreads)
        low, high = ((-math.inf, math.inf) if not math.isfinite(reach) or value == 0
                     else sorted((value / reach, value * reach)))
    what = (("95% interval of the mean" if len(spreads) == 1 else "both means' 95% intervals, the "
             "factors they reach multiplied") if all(h[4] for h in spreads)
            else "the repeats' range (a thresholds file from before sigma)")
    return Interval(low, high,
                    f"{what}, from run-to-run noise ({runs} runs `make noise` read, {noise.repeats_of}"
                    f"{noise.sitting}{noise.when})")


def rho_range(x, low, high) -> tuple[float, float]:
    """(lowest, highest) Spearman rho over ``x`` of values ``y_i`` anywhere in
    ``[low_i, high_i]``: over every strict order of the values those ranges allow (value i may
    lie below value j where ``low_i <= high_j``). ``x`` holds distinct numbers; at most
    :data:`EXACT_TREND_POINTS` points. Returns (0, 0) for fewer than 2 points.

    Exact, by dynamic programming over the sets of points given the lowest values: a point
    may take the next-lowest value when no point left could only lie below it, and the
    squared rank differences add (O(2^n n^2))."""
    n = len(x)
    if n < 2:
        return 0.0, 0.0
    if n > EXACT_TREND_POINTS:
        raise ValueError(f"{n} points: more than the {EXACT_TREND_POINTS} whose orders are searched")
    x_rank = np.argsort(np.argsort(np.asarray(x, dtype=float)))   # 0-based rank of each point's x
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    full = (1 << n) - 1
    may_lie_below = [sum(1 << j for j in range(n) if low[i] <= high[j]) | (1 << i) for i in range(n)]
    fewest, most = [math.inf] * (1 << n), [-math.inf] * (1 << n)   # by the set of points placed
    fewest[0] = most[0] = 0.0
    for placed in range(1 << n):
        if fewest[placed] == math.inf:
            continue
        rank, left = bin(placed).count("1"), full & ~placed
        for i in range(n):
            if left >> i & 1 and left & ~may_lie_below[i] == 0:
                d2 = float(rank - x_rank[i]) ** 2
                after = placed | 1 << i
                fewest[after] = min(fewest[after], fewest[placed] + d2)
                most[after] = max(most[after], most[placed] + d2)
    scale = 6.0 / (n * (n * n - 1))
    return float(1.0 - scale * most[full]), float(1.0 - scale * fewest[full])


def trend_interval(points: pd.DataFrame, source: TrendSource, noise: Noise,
                   resamples: int = BOOTSTRAP_RESAMPLES) -> Interval | None:
    """Return the interval of Spearman's rho of ``source`` (module doc); None without repeats.

    The parameter grid is designed, not sampled: each point's mean may lie anywhere within
    its interval (:meth:`noise.Threshold.interval` around its value), and the
    interval runs from the lowest to the highest rho such values give
    (:func:`rho_range`), joined with the measured rho, so it always holds it; past
    :data:`EXACT_TREND_POINTS` points, the 2.5th to 97.5th percentile of rho over values
    redrawn uniformly within those intervals. -1..1 (:data:`UNBOUNDED`) where a point's
    interval is infinite.
    """
    rows, failure = select_points(points, source.benchmark, source.params)
    if failure:
        return None
    rows = rows[rows["status"] == STATUS_OK]
    thresholds = [noise.get(source.benchmark, label) for label in rows["param_label"]]
    if len(rows) < 2 or any(h is None for h in thresholds):
        return None
    x = _sortable([p.get(source.over) for p in rows["params"]])
    y = rows["value"].to_numpy(dtype=float)
    lows, highs = np.asarray([h.interval(v) for h, v in zip(thresholds, y)], dtype=float).T
    if not (np.isfinite(lows).all() and np.isfinite(highs).all()):     # a point could be anywhere: so could rho
        return Interval(-1.0, 1.0, UNBOUNDED)
    measured = float(spearman_rows(x, y[np.newaxis, :])[0])
    runs = min(h.runs for h in thresholds)
    if len(y) <= EXACT_TREND_POINTS:
        low, high = rho_range(x, lows, highs)
        method = (f"the lowest and highest rho of {len(y)} points anywhere within their intervals "
                  f"({runs} runs `make noise` read, {noise.repeats_of}{noise.sitting}{noise.when})")
    else:
        rng = np.random.default_rng(BOOTSTRAP_SEED)
        draws = lows + rng.uniform(0, 1, size=(resamples, len(y))) * (highs - lows)
        low, high = np.percentile(spearman_rows(x, draws), [2.5, 97.5])
        method = (f"bootstrap of {len(y)} points redrawn within their intervals ({runs} runs `make noise` "
                  f"read, {noise.repeats_of}{noise.sitting}{noise.when}, 95%; a redraw of values already noisy draws rho toward 0, so it may "
                  f"leave out a higher one)")
    return Interval(float(min(low, measured)), float(max(high, measured)), method)


def claim_interval(claim: Claim, value: float, points: pd.DataFrame, noise: Noise | None,
                   artifacts=None, commit: str | ValueRun | None = None) -> Interval | None:
    """Return the interval of ``claim``'s measured ``value`` (see the module doc): from its
    repeats, joined with its ``sampling_interval`` (read from ``artifacts`` at ``commit``, the
    value's, or of the value's own run given its :class:`ValueRun`) where it has one; None without either, or for a value that is not finite. An
    end that would not be finite (an infinite spread) gives the unbounded interval:
    -inf..inf, or -1..1 for a trend's rho. Any interval returned holds ``value``."""
    if not math.isfinite(value):
        return None
    repeats = _repeats_interval(claim, value, points, noise)
    sampled = (artifact_interval(artifacts, claim.sampling_interval, commit)
               if claim.sampling_interval is not None and artifacts is not None and commit else None)
    if repeats is not None and repeats.unbounded:
        return repeats
    if sampled == UNBOUNDED_BY_RUN:        # the run says nothing bounds its sampling error
        if claim.sampling_interval.error == SAMPLING_ERROR:
            return Interval(-math.inf, math.inf, UNBOUNDED_SAMPLING)
        return Interval(-math.inf, math.inf, f"{UNBOUNDED_PREFIX}the run could not bound {claim.sampling_interval.error}")
    if isinstance(sampled, str) and sampled.startswith(MALFORMED_INTERVAL):   # never firmer than a wide one
        return Interval(-math.inf, math.inf, f"{UNBOUNDED_PREFIX}{sampled}")
    if sampled is None:
        if repeats is not None and claim.sampling_interval is not None:
            return dataclasses.replace(repeats, lacks=f"without {claim.sampling_interval.error} {NO_SAMPLING}")
        return repeats
    low, high = min(sampled[0], value), max(sampled[1], value)
    method = claim.sampling_interval.method
    if repeats is None:
        return Interval(low, high, method)
    return Interval(min(low, repeats.low), max(high, repeats.high), f"{repeats.method}, joined with a {method}")


def lacks_run_to_run(claim: Claim, value: float, points: pd.DataFrame, noise: Noise | None) -> bool:
    """Return whether ``claim``'s finite measured ``value`` has no run-to-run interval: read
    from benchmark points (a benchmark, ratio or trend claim) for which ``noise`` (the
    thresholds the verdict uses) is None or holds none, or read from an artifact, which no
    thresholds cover (``make noise`` measures asv results only), whatever ``noise`` is. False
    for a value that is not finite, or a claim that measures nothing (no interval either way)."""
    if claim.measured is None or not math.isfinite(value):
        return False
    if not isinstance(claim.measured, (BenchmarkSource, RatioSource, TrendSource)):
        return True
    return noise is None or _repeats_interval(claim, value, points, noise) is None


def _repeats_interval(claim: Claim, value: float, points: pd.DataFrame, noise: Noise | None) -> Interval | None:
    source = claim.measured
    if noise is None:
        return None
    if isinstance(source, TrendSource):
        found = trend_interval(points, source, noise)
    elif isinstance(source, BenchmarkSource):
        found = _from_repeats(value, [_spread_of(points, source.point, noise)], noise)
    elif isinstance(source, RatioSource):
        found = _from_repeats(value, [_spread_of(points, source.numerator, noise),
                                      _spread_of(points, source.denominator, noise)], noise)
    else:
        return None
    if found is None:
        return None
    if not (math.isfinite(found.low) and math.isfinite(found.high)):
        low, high = (-1.0, 1.0) if isinstance(source, TrendSource) else (-math.inf, math.inf)
        return Interval(low, high, UNBOUNDED)
    if isinstance(source, TrendSource) and not found.unbounded:   # the bootstrap may leave the value out
        return dataclasses.replace(found, low=min(found.low, value), high=max(found.high, value))
    return found


def claim_benchmarks(claim: Claim) -> tuple[str, ...]:
    """Return the benchmarks (or ``artifact:<name>``) the claim's measured value comes from."""
    source = claim.measured
    if isinstance(source, BenchmarkSource):
        return (source.point.benchmark,)
    if isinstance(source, RatioSource):
        return tuple(dict.fromkeys((source.numerator.benchmark, source.denominator.benchmark)))
    if isinstance(source, TrendSource):
        return (source.benchmark,)
    if source is None:
        return ()
    return (f"artifact:{source.artifact}",)


def claim_commit(claim: Claim, points: pd.DataFrame, artifacts) -> str | None:
    """Return the commit the claim's measured value was measured at (None when unknown)."""
    source = claim.measured
    if source is None:
        return None
    if isinstance(source, (BenchmarkSource, RatioSource, TrendSource)):
        rows = points[points["benchmark"].isin(claim_benchmarks(claim))]
        return str(rows["commit"].iloc[0]) if not rows.empty else None
    record = artifacts.get(source.artifact)
    return str(record.get("commit")) if record and record.get("commit") else None


def claim_run(claim: Claim, points: pd.DataFrame, artifacts) -> ValueRun | None:
    """Return the run ``claim``'s measured value came from (:func:`value_run.run_of` of the
    points it reads; for a value read from an artifact, that record's commit), what an
    artifact read beside the value must be of; None when unknown."""
    source = claim.measured
    if source is None:
        return None
    if isinstance(source, (BenchmarkSource, RatioSource)):
        refs = [source.point] if isinstance(source, BenchmarkSource) else [source.numerator, source.denominator]
        found = [select_points(points, ref.benchmark, ref.params)[0] for ref in refs]
        rows = pd.concat([f for f in found if f is not None]) if any(f is not None for f in found) else None
    elif isinstance(source, TrendSource):
        rows = select_points(points, source.benchmark, source.params)[0]
    else:
        commit = claim_commit(claim, points, artifacts)
        return ValueRun(commit) if commit else None
    return run_of(rows)
