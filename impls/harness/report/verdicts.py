"""Compare each claim's measured value with the paper's: ratio and verdict.

Longer than 400 lines: the band, the verdict rules, bounds, intervals and the CUDA run's
choice are one judgement sharing the band helpers; split, each part would import the others.

Verdicts, for a paper value p (or range [low, high]) and relative tolerance t:

- "reproduced": low - t*|low| <= measured <= high + t*|high| (the tolerance band), where
  a claim with a ``baseline`` has its band cut at the baseline and open there: the "no
  effect" value never reproduces a claim of an effect, so a tie does not "beat", and a
  tolerance does not stretch "up to 7× faster" down to "slower".
- "partly": outside that band, but on the paper's side of the claim's ``baseline``
  (the "no effect" value, e.g. 1 for a speed-up): with the paper above the baseline,
  measured > baseline; below it, measured < baseline. A claim without a baseline
  has no direction and is never "partly".
- "not reproduced": anything else.
- "not measured: <reason>" / "not measured yet": no number (see :func:`evaluate_claim`).

A measured value that is only a lower bound (the claim's ``lower_bound_when`` point is 1)
is "reproduced" when it reaches a band without a finite top, and judged as its value above
a band with one (the true value is higher still) where the paper lies above the baseline;
inside such a band, below the band on the paper's side of the baseline, and above the band
but below the baseline where the paper lies below it (partly or not reproduced), the true
value may lie in more than one verdict's range, so it is "inconclusive" (the detail keeps
the point estimate); else "not measured".
A value that is only an upper bound (``upper_bound_when`` is 1) is judged where the true
value, lower still, has one verdict: below the band, "not reproduced" when the bound is
also on the wrong side of the baseline (or there is none), "partly" when the paper lies
below the baseline (the true value is then further on the paper's side); where it leaves
two (inside the band: reproduced or below; between the baseline and a band above it:
partly or not reproduced) the verdict is "inconclusive"; inside a band without a bottom
("at most x"), "reproduced"; above the band, "not measured".
A value whose bound flag cannot be told (failed, skipped, absent, or of another run than the
value: another commit or environment, or a partial rerun, :func:`_another_run`) may be a bound
of either kind, so nothing is judged: "not measured".
A trend (a rank correlation over a sweep) whose claim names bound flags (``bounds`` of its
``measured``) is "not measured" where any point it ranks is only a bound, or its flag cannot
be told: a rank correlation of bounds measures nothing (:func:`_trend_bounds`).
A value in a unit of a factor (``x``, ``ratio``) below 0 is no value to judge,
as a ratio of signed sides is none (:func:`~impls.harness.report.measure.as_factor`).

Uncertainty (:mod:`intervals`): when the measured value has an interval (repeats, or a
bootstrap over the points it comes from) that lies partly inside and partly outside the
tolerance band, or that holds the baseline and a value on the paper's side of it (so even
the direction is uncertain; the baseline itself counts as no effect, as in the band, so an
interval that reaches it from the paper's side holds it), the verdict is "inconclusive" —
the data cannot tell the verdicts apart — and the detail keeps the point estimate's verdict.
So is one whose interval lies wholly in another place (a verdict and side of the band) than
the point estimate: the numbers disagree with each other (:mod:`intervals` joins the value
into each interval it returns; this holds whatever interval is given). "partly" keeps its
meaning above (right direction, outside the band), so the two never mix.

A claim with ``measured_cuda`` (the same measurement in the run on a CUDA device, the
papers' setting) is judged on that run wherever it has a value, and on ``measured`` (the
CPU run) elsewhere; the detail says which, and names a CUDA run that failed, recorded no
value, or was skipped or not run on a machine with CUDA beside the CPU run's verdict. A
``measured_cuda`` that does not fit the data gives the claims file's error. A CUDA value of
another commit than the CPU run's value says so in the detail ("older" where the results
order the two commits).

A value whose run's artifact records real input data (``data.source.real`` with the file's
``sha256``) carries the digests in ``real_data`` and names them in the detail
(:func:`real_sources`).

Ratio = measured / paper value; for a range, measured / the nearest end of the
range, and exactly 1 inside it. None where that end is 0.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from impls.harness.registry import is_sha256
from impls.harness.report.claims import BenchmarkSource, Claim, MeasuredSource, PointRef, RatioSource, TrendSource
from impls.harness.report.directions import class_of
from impls.harness.report.intervals import (Interval, claim_benchmarks, claim_commit, claim_interval, claim_run,
                                            lacks_run_to_run)
from impls.harness.report.machine_state import MachineState
from impls.harness.report.measure import (ABSENT, INVALID, Measurement, artifact_mismatch, artifact_text, as_factor,
                                          check_setting, measure, same_commit, select_points)
from impls.harness.report.noise import Noise
from impls.harness.report.provenance import data_kind
from impls.harness.report.results import HISTORY, STATUS_FAILED, STATUS_OK, STATUS_SKIPPED, flag_meaning
from impls.harness.report.setting import measured_on
from impls.harness.report.value_run import ValueRun

REPRODUCED = "reproduced"
PARTLY = "partly"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"  # the interval straddles the tolerance band
NOT_MEASURED = "not measured"  # every "not measured..." verdict starts with this
NOT_MEASURED_YET = "not measured yet"
# asv records a skip and a benchmark that had no value (NaN, e.g. a target never reached) alike
SKIPPED_HERE = "not measured: benchmark skipped or without a value on this machine"
FAILED_HERE = "not measured: benchmark failed on this machine"
# the start of the verdict on a claims.toml reference the data do not fit (build.py tells an
# older run's or benchmark version's data apart from a wrong reference)
DOES_NOT_FIT = f"{NOT_MEASURED}: claims.toml points at data that do not fit"


def with_unit(text: str, unit: str) -> str:
    """Return ``text`` followed by ``unit`` ("x" becomes the × sign)."""
    if unit in ("x", "×"):
        return f"{text}×"
    return f"{text} {unit}" if unit else text


@dataclasses.dataclass(frozen=True)
class ClaimResult:
    """A claim with its measured value (None if none), ratio and verdict."""

    claim: Claim
    verdict: str
    measured: float | None = None
    ratio: float | None = None
    in_range: bool = False  # the measured value lies inside the paper's range
    detail: str = ""  # where the measured value came from, or why there is none
    lower_bound: bool = False  # the measured value is only a lower bound
    upper_bound: bool = False  # the measured value is only an upper bound
    interval: Interval | None = None  # the measured value's uncertainty, None when not known
    benchmarks: tuple[str, ...] = ()  # asv benchmarks (or "artifact:<name>") it comes from
    commit: str | None = None  # the commit it was measured at
    coverage: str = ""  # what part of the data the value rests on when not all ("3 of 5 points")
    data: str | None = None  # "synthetic" / "not synthetic" (:mod:`provenance`), None when not known
    # no run-to-run interval: read from benchmark points the noise thresholds in use hold none
    # for, or from an artifact, which no thresholds cover (:func:`intervals.lacks_run_to_run`)
    no_noise: bool = False
    # sha256 (hex) of the real data file(s) the value was measured on, where the artifact of its
    # run records a real source with a checksum (:func:`real_sources`); () otherwise
    real_data: tuple[str, ...] = ()
    # the hardware the value was measured on where that shapes it ("CPU run, not the paper's GPU",
    # "drive /dev/vda (ext4, rotational)"; :func:`setting.measured_on`), "" otherwise
    setting: str = ""
    # why a "not measured" verdict has no judgement (:func:`unmeasured_kind`); "" for the others
    unmeasured: str = ""


# why a claim is not measured, as the report's summary counts them
UNMEASURED_YET, UNMEASURED_LACKS, UNMEASURED_SETTING, UNMEASURED_OTHER = "yet", "lacks", "setting", "other"
OTHER_SETTING_WORDS = "this profile's run has"  # every verdict of a run of another setting holds these


def unmeasured_kind(claim: Claim, verdict: str, state: MachineState) -> str:
    """Why ``verdict`` judges nothing: :data:`UNMEASURED_YET` (no experiment measures the claim),
    :data:`UNMEASURED_LACKS` (a capability the claim requires is missing here, or the
    benchmark's own skip says what it needs), :data:`UNMEASURED_SETTING` (the run is of
    another setting), :data:`UNMEASURED_OTHER` (no value, only a bound, data that do not
    fit: the verdict says which); "" for a verdict that judges."""
    if not verdict.startswith(NOT_MEASURED):
        return ""
    if verdict == NOT_MEASURED_YET:
        return UNMEASURED_YET
    if state.missing_reason(claim.requires) is not None or verdict.startswith(f"{NOT_MEASURED}: needs "):
        return UNMEASURED_LACKS
    return UNMEASURED_SETTING if OTHER_SETTING_WORDS in verdict else UNMEASURED_OTHER


def ratio_to_paper(claim: Claim, measured: float) -> tuple[float | None, bool]:
    """Return (measured / paper value or nearest end of its range, whether inside the range)."""
    low, high = claim.paper_range
    if low == high:
        return (measured / low if low else None), False
    if measured == claim.baseline:   # an end the claim excludes (:func:`band_open`): not in range
        end = low if measured <= low else high   # the nearest end: the baseline may lie outside
        return (measured / end if end else None), False
    if low <= measured <= high:
        return 1.0, True
    end = low if measured < low else high  # high is finite here: nothing exceeds inf
    return (measured / end if end else None), False


def tolerance_band(claim: Claim) -> tuple[float, float]:
    """Return the (lowest, highest) measured value that reproduces ``claim``.

    An end equal to the claim's baseline is open (:func:`band_open`): that value itself
    does not reproduce. The band never reaches past the baseline.
    """
    low, high = claim.paper_range
    # an infinite end stays infinite (inf * 0 would be nan); a finite one is rounded to 12
    # significant digits, so that 0.7 with 0% tolerance, or 0.35 + 10%, ends where it reads
    lowest = low if math.isinf(low) else _decimal(low - claim.tolerance * abs(low))
    highest = high if math.isinf(high) else _decimal(high + claim.tolerance * abs(high))
    baseline = claim.baseline
    if baseline is not None:   # the baseline lies outside the paper range (claims.py checks it)
        if baseline <= low:
            lowest = max(lowest, baseline)
        else:
            highest = min(highest, baseline)
    return lowest, highest


def band_open(claim: Claim) -> tuple[bool, bool]:
    """Return whether the tolerance band's (lowest, highest) end is excluded: it is the baseline."""
    lowest, highest = tolerance_band(claim)
    baseline = claim.baseline
    return (baseline is not None and baseline == lowest, baseline is not None and baseline == highest)


def band_edges(claim: Claim) -> tuple[float, ...]:
    """The values a printed number must not be rounded across: the band's ends and the baseline."""
    return (*tolerance_band(claim), *((claim.baseline,) if claim.baseline is not None else ()))


def edge_digits(value: float, edges: tuple[float, ...], digits: int = 3) -> int:
    """The fewest significant digits, at least ``digits``, at which ``value`` prints on the
    same side of (or on) every finite edge in ``edges`` as it lies: 1.79951 against an edge of
    1.8 prints "1.7995", not "1.8", which would read as inside the band."""
    def side(x: float, edge: float) -> int:
        return (x > edge) - (x < edge)

    finite = [e for e in edges if math.isfinite(e)]
    for d in range(digits, 18):
        printed = float(f"{value:.{d}g}")
        if all(side(printed, e) == side(value, e) for e in finite):
            return d
    return 17


def shown(value: float, claim: Claim) -> str:
    """``value`` with :func:`edge_digits` significant digits against ``claim``'s band edges."""
    return f"{value:.{edge_digits(value, band_edges(claim))}g}"


def shown_with_unit(value: float, claim: Claim) -> str:
    """:func:`shown` followed by ``claim``'s unit ("10×", "0.4 s")."""
    return with_unit(shown(value, claim), claim.unit)


def in_band(claim: Claim, measured: float) -> bool:
    """Whether ``measured`` lies in ``claim``'s tolerance band (open ends excluded)."""
    lowest, highest = tolerance_band(claim)
    open_low, open_high = band_open(claim)
    above = measured > lowest if open_low else measured >= lowest
    below = measured < highest if open_high else measured <= highest
    return above and below


def below_band(claim: Claim, measured: float) -> bool:
    """Whether ``measured`` lies below ``claim``'s whole tolerance band."""
    lowest = tolerance_band(claim)[0]
    return measured <= lowest if band_open(claim)[0] else measured < lowest


def _decimal(x: float) -> float:
    return float(f"{x:.12g}")


def judge(claim: Claim, measured: float) -> str:
    """Return "reproduced", "partly" or "not reproduced" for ``measured`` (see module doc)."""
    if in_band(claim, measured):
        return REPRODUCED
    low, high = claim.paper_range
    baseline = claim.baseline
    if baseline is not None:
        if low >= baseline and measured > baseline:
            return PARTLY
        if high <= baseline and measured < baseline:
            return PARTLY
    return NOT_REPRODUCED


_CLAIMS_IN_USE: contextvars.ContextVar[Path | None] = contextvars.ContextVar("claims_in_use", default=None)


@contextlib.contextmanager
def claims_in_use(path: Path | None) -> Iterator[None]:
    """Within the block, :func:`suite_claim` reads the claims file ``path`` (the one a report
    is rendered with, so that what a figure quotes is what the report judges by); ``None``
    leaves the file as it was."""
    token = _CLAIMS_IN_USE.set(Path(path)) if path is not None else None
    try:
        yield
    finally:
        if token is not None:
            _CLAIMS_IN_USE.reset(token)


def suite_claim(claim_id: str) -> Claim:
    """Claim ``claim_id`` of the claims file in use (:func:`claims_in_use`), else of the
    suite's ``reports/claims.toml``; KeyError for an unknown id, ClaimsError for a file that
    cannot be read or breaks the schema."""
    from impls.harness.report import claims, render

    path = _CLAIMS_IN_USE.get() or render.default_claims_path()
    found = [c for c in claims.load_claims(path) if c.id == claim_id]
    if not found:
        raise KeyError(f"no claim {claim_id!r} in {path}")
    return found[0]


def judge_one(claim_id: str, measured: float) -> tuple[str, str, str]:
    """(the verdict word :func:`judge` gives ``measured`` on claim ``claim_id`` of the claims
    file in use (:func:`suite_claim`), the claim's paper value as text: "3.19x", "2-3x", ``measured``
    with enough digits to fall on its own side of every band edge, as :func:`shown`): one
    value judged alone, without the interval the report also weighs (run-to-run noise, and
    the sampling of the claim's data where it has a ``sampling_interval``). KeyError for an
    unknown claim id."""
    claim = suite_claim(claim_id)
    low, high = claim.paper_range
    paper = f"{low:g}x" if low == high else f"{low:g}-{high:g}x"
    return judge(claim, measured), paper, shown(measured, claim)


def _unmeasured_verdict(claim: Claim, measurement: Measurement, state: MachineState,
                        points: pd.DataFrame, artifacts: Mapping[str, Mapping[str, Any]]) -> str:
    reason = state.missing_reason(claim.requires)
    if reason is not None:
        return f"{NOT_MEASURED}: {reason}"
    if measurement.reason:
        return f"{NOT_MEASURED}: {measurement.reason}"
    if measurement.status == STATUS_SKIPPED:
        why = None
        if claim.unmeasured_reason is not None:  # only an artifact of the skipped point's own run
            run = claim_run(claim, points, artifacts)
            why = artifact_text(artifacts, claim.unmeasured_reason, run) if run else None
        return f"{NOT_MEASURED}: {why}" if why else SKIPPED_HERE
    if measurement.status == STATUS_FAILED:
        return FAILED_HERE
    if measurement.status == INVALID:
        return f"{DOES_NOT_FIT} ({measurement.detail})"
    # no value (null, not finite), or an experiment measures it but this machine has no result
    # of it: say which (the README keeps "not measured yet" for a claim that nothing measures)
    return f"{NOT_MEASURED}: {measurement.detail}" if measurement.detail else NOT_MEASURED_YET


def evaluate_claim(claim: Claim, points: pd.DataFrame, artifacts: Mapping[str, Mapping[str, Any]],
                   state: MachineState, noise: Noise | None = None) -> ClaimResult:
    """Return the :class:`ClaimResult` of ``claim`` with its interval, benchmarks and commit.

    ``noise`` (the machine's measured run-to-run spread) gives single points an interval;
    the result's ``no_noise`` is set where a measured value has none from it (read from
    benchmarks it holds no thresholds for, or from an artifact).
    The result's ``claim`` is the one judged: with ``measured`` replaced by ``measured_cuda``
    where the CUDA run has a value.
    """
    claim, note = _on_the_papers_device(claim, points, artifacts, state)
    result = _evaluate_claim(claim, points, artifacts, state)
    if note:
        result = dataclasses.replace(result, detail=f"{note}: {result.detail}" if result.detail else note)
    benchmarks = claim_benchmarks(claim)
    extra: dict[str, Any] = {"benchmarks": benchmarks, "commit": claim_commit(claim, points, artifacts),
                             "data": data_kind(benchmarks) if benchmarks else None}
    if result.measured is not None:
        extra["setting"] = measured_on(claim, note, benchmarks, artifacts)
        run = claim_run(claim, points, artifacts)
        real, said = real_sources(benchmarks, artifacts, run)
        if real:
            extra["real_data"] = real
            result = dataclasses.replace(result, detail=f"{result.detail}; {said}" if result.detail else said)
        interval = claim_interval(claim, result.measured, points, noise, artifacts, run)
        extra["interval"] = interval
        extra["no_noise"] = lacks_run_to_run(claim, result.measured, points, noise)
        if claim.sampling_interval is not None and (interval is None or interval.lacks):
            mismatch = artifact_mismatch(artifacts, claim.sampling_interval.artifact, run)
            result = dataclasses.replace(result, detail=(
                f"{result.detail}; {claim.sampling_interval.error} is not in "
                f"{'its interval' if interval else 'any interval'}: the newest artifact holds none for this run "
                f"({claim.sampling_interval.path}; " + (f"not read: {mismatch})" if mismatch
                                                         else "an older run's, or one of another commit)")))
        if interval is not None and result.verdict in (REPRODUCED, PARTLY, NOT_REPRODUCED):
            across = ("the tolerance band" if interval.straddles(*tolerance_band(claim), *band_open(claim))
                      else "the baseline" if holds_baseline(claim, interval) else None)
            high = shown(interval.high, claim)
            span = f"interval {shown(interval.low, claim)}..{high if interval.unbounded else with_unit(high, claim.unit)}"
            span += f" ({interval.why_unbounded})" if interval.unbounded else ""
            apart = None if across else _interval_elsewhere(claim, interval, result.measured)
            if across:
                extra["verdict"] = INCONCLUSIVE
                extra["detail"] = f"{result.detail}; {span} straddles {across} (point estimate: {result.verdict})"
            elif apart:
                extra["verdict"] = INCONCLUSIVE
                extra["detail"] = (f"{result.detail}; {span} lies wholly {apart}, apart from the point estimate "
                                   f"{shown_with_unit(result.measured, claim)}: the numbers disagree with each "
                                   f"other (point estimate: {result.verdict}; interval: "
                                   f"{judge(claim, interval.low)})")
    extra["unmeasured"] = unmeasured_kind(claim, extra.get("verdict", result.verdict), state)
    return dataclasses.replace(result, **extra)


def holds_baseline(claim: Claim, interval: Interval) -> bool:
    """Whether ``interval`` holds ``claim``'s baseline and a value on the paper's side of it: the
    baseline itself counts on the other side, as :func:`judge` and the band's open end at the
    baseline count it (a tie is no effect), so an interval that only touches the baseline from
    the paper's side holds it, and one that reaches it from the other side does not."""
    baseline = claim.baseline
    if baseline is None:
        return False
    if baseline <= claim.paper_range[0]:     # the paper lies above the baseline (as tolerance_band tells)
        return interval.low <= baseline < interval.high
    return interval.low < baseline <= interval.high


def real_sources(benchmarks: tuple[str, ...], artifacts: Mapping[str, Mapping[str, Any]],
                 run: ValueRun | None) -> tuple[tuple[str, ...], str]:
    """The sha256 digests (hex; of the training file where a test file is beside it) of the
    real data behind ``benchmarks`` (asv names, or ``artifact:<name>``) measured by ``run``
    (the value's, :func:`intervals.claim_run`), and a phrase naming them ("real data slide-amazon670k-real, sha256 <train>
    (test file <test>), artifact slide_real_amazon"):
    every benchmark's artifact (its experiment's, :mod:`provenance`) must be of ``run`` and
    record ``data.source`` with ``real`` true and a 64-hex ``sha256``; else ((), "") — one
    synthetic or unknown input, or an artifact of another run, makes none of it real."""
    from impls.harness.report.provenance import artifact_of

    digests: list[str] = []
    said: list[str] = []
    for name in benchmarks:
        artifact = artifact_of(name)
        record = artifacts.get(artifact) if artifact else None
        data = record.get("data") if isinstance(record, Mapping) else None
        source = data.get("source") if isinstance(data, Mapping) else None
        if (not isinstance(source, Mapping) or source.get("real") is not True or not is_sha256(source.get("sha256"))
                or not run or artifact_mismatch(artifacts, artifact, run)):
            return (), ""
        if source["sha256"] not in digests:
            digests.append(source["sha256"])
        test = f" (test file {source['test_sha256']})" if is_sha256(source.get("test_sha256")) else ""
        said.append(f"real data {source.get('dataset') or '?'}, sha256 {source['sha256']}{test}, artifact {artifact}")
    return tuple(digests), "; ".join(dict.fromkeys(said))


def _interval_elsewhere(claim: Claim, interval: Interval, value: float) -> str | None:
    """Where ``interval`` lies when all of it is in one place (:func:`_place`) other than the
    point estimate ``value``'s: "inside the tolerance band", "below it", "above it", or "at
    or past the no-effect value" (the baseline); None where it holds the point estimate's
    place, or more than one place (straddling is told apart before)."""
    at_low, at_high = _place(claim, interval.low), _place(claim, interval.high)
    if at_low != at_high or at_low == _place(claim, value):
        return None
    verdict, side = at_low
    if verdict == NOT_REPRODUCED and claim.baseline is not None:
        return "at or past the no-effect value (the baseline)"
    return {0: "inside the tolerance band", -1: "below the tolerance band", 1: "above the tolerance band"}[side]


def _place(claim: Claim, x: float) -> tuple[str, int]:
    """``x``'s verdict (:func:`judge`) and side of the tolerance band: -1 below, 0 in, 1 above."""
    side = 0 if in_band(claim, x) else -1 if below_band(claim, x) else 1
    return judge(claim, x), side


def _on_the_papers_device(claim: Claim, points: pd.DataFrame, artifacts: Mapping[str, Mapping[str, Any]],
                          state: MachineState) -> tuple[Claim, str]:
    """The claim to judge and a note on which run it reads: ``measured_cuda`` where that run
    has a value ("CUDA run"), or where it does not fit the data (the claims file's error is
    then the verdict); else ``claim`` as it is, with a note naming a CUDA run that failed,
    recorded no value, or was skipped on a machine that has CUDA; "CPU run (no CUDA device on
    this machine)" where it was skipped, or never run, for want of one."""
    if claim.measured_cuda is None:
        return claim, ""
    found = measure(claim.measured_cuda, points, artifacts)
    if found.ok:
        cpu = measure(claim.measured, points, artifacts) if claim.measured is not None else None
        note = "CUDA run"
        if cpu is not None and cpu.ok and found.commit and cpu.commit and not same_commit(found.commit, cpu.commit):
            older = _older(points, found.commit, cpu.commit)
            note = (f"CUDA run, {'older than' if older else 'of another commit than'} the CPU run's value "
                    f"({shown_with_unit(cpu.value, claim)} at {cpu.commit[:8]}; not judged: the CUDA run is the "
                    "papers' setting)")
        return dataclasses.replace(claim, measured=claim.measured_cuda,
                                   sampling_interval=claim.sampling_interval_cuda), note
    if found.status == INVALID:
        return dataclasses.replace(claim, measured=claim.measured_cuda,
                                   sampling_interval=claim.sampling_interval_cuda), ""
    has_cuda = state.missing_reason(("cuda",)) is None
    if found.status in (STATUS_SKIPPED, ABSENT) and not has_cuda:
        return claim, "CPU run (no CUDA device on this machine)"
    if found.missing:       # a NaN its benchmark gives a meaning: the detail says it (or a skip)
        return claim, f"CPU run (the CUDA run: {found.detail})"
    what = {STATUS_SKIPPED: "was skipped here", ABSENT: "was not run here"}.get(found.status, "has no value")
    return claim, f"CPU run (the CUDA run {what}: {found.detail})"


def _older(points: pd.DataFrame, commit: str, other: str) -> bool:
    """Whether the results in ``points`` place ``commit`` before ``other``: by git's order
    (column :data:`HISTORY`) where git knows both, else by commit date; False where they
    cannot tell (a commit without results, e.g. an artifact's)."""
    def where(c: str) -> pd.DataFrame:
        return points[points["commit"].map(lambda x: same_commit(str(x), c))] if "commit" in points else points[:0]

    a, b = where(commit), where(other)
    if a.empty or b.empty:
        return False
    if HISTORY in points and a[HISTORY].max() >= 0 and b[HISTORY].max() >= 0 and a[HISTORY].max() != b[HISTORY].max():
        return bool(a[HISTORY].max() < b[HISTORY].max())
    if "date" in points and a["date"].notna().any() and b["date"].notna().any():
        return bool(a["date"].max() < b["date"].max())
    return False


def _evaluate_claim(claim: Claim, points: pd.DataFrame, artifacts: Mapping[str, Mapping[str, Any]],
                    state: MachineState) -> ClaimResult:
    """Return the :class:`ClaimResult` of ``claim``.

    A claim without ``measured`` is "not measured yet". A measured number is always
    judged. Without one: a missing required capability gives "not measured: <its reason>"
    (followed by the run's other setting where its artifact tells one: a second thing to
    change), else a run its artifact shows is of another setting than the claim's (``applies_when``)
    says so, else a skipped or failed benchmark says so (a benchmark without a value in
    the words of the claim's ``unmeasured_reason`` artifact text, when there is one), else
    "not measured: <what this machine lacks>" (no result of that benchmark, no artifact).
    """
    if claim.measured is None:
        return ClaimResult(claim, NOT_MEASURED_YET, detail="no experiment measures this claim yet")
    measurement = as_factor(measure(claim.measured, points, artifacts), claim.unit)
    run = claim_run(claim, points, artifacts) if measurement.commit else None
    other, told = (check_setting(artifacts, claim.applies_when, run if run and same_commit(run.commit, measurement.commit)
                                 else measurement.commit) if claim.applies_when else (None, True))
    if not measurement.ok:
        if other and told and state.missing_reason(claim.requires) is None:   # a run of another setting
            return ClaimResult(claim, f"{NOT_MEASURED}: {other}", detail=measurement.detail)
        verdict = _unmeasured_verdict(claim, measurement, state, points, artifacts)
        if other and told:      # a capability this machine lacks, and a setting no run here would have
            verdict += f"; and {other}"
        return ClaimResult(claim, verdict, detail=measurement.detail)
    value = measurement.value
    flags = [_flag_set(source, points, artifacts, measurement.commit, claim.measured)
             for source in (claim.lower_bound_when, claim.upper_bound_when)]
    bounded = _trend_bounds(claim.measured, points, artifacts, measurement.commit)
    if other:       # a bound stays a bound in the words too
        shown = ("at least " if flags[0] is True else "at most " if flags[1] is True else "") + \
            shown_with_unit(value, claim)
        if bounded:         # a rank correlation of bounds is no value to show
            shown = f"the trend ({'; '.join(bounded)})"
        what = (f"{shown} is of another setting than the claim's" if told else f"cannot tell the setting of {shown}")
        return ClaimResult(claim, f"{NOT_MEASURED}: {other}", detail=f"{measurement.detail}; {what}",
                           coverage=measurement.coverage)
    if bounded:
        more = f" (and {len(bounded) - 1} more, in the detail)" if len(bounded) > 1 else ""
        return ClaimResult(claim, f"{NOT_MEASURED}: a rank correlation needs exact values, and {bounded[0]}{more}",
                           detail=f"{measurement.detail}; {'; '.join(bounded)}: rho {value:.3g} over bounds is "
                                  "no measurement", coverage=measurement.coverage)
    ratio, in_range = ratio_to_paper(claim, value)
    detail = measurement.detail
    unknown = next((why for why in flags if isinstance(why, str)), None)
    if unknown:
        return ClaimResult(claim, f"{NOT_MEASURED}: cannot tell whether {shown_with_unit(value, claim)} is exact or a "
                           f"bound ({unknown})",
                           value, ratio, in_range, detail, coverage=measurement.coverage)
    lower, upper = (flag is True for flag in flags)
    if lower and upper:      # corrupt data: a value cannot be both
        return ClaimResult(claim, f"{NOT_MEASURED}: {shown_with_unit(value, claim)} is flagged both a lower and an "
                           "upper bound",
                           value, ratio, in_range, detail, coverage=measurement.coverage)
    # the flag that is set; one read from an artifact has no benchmark whose unit says why
    flag = getattr(claim.lower_bound_when if lower else claim.upper_bound_when if upper else None, "point", None)
    verdict, said = judge_bounded(claim, value, lower, upper, flag_meaning(points, flag and flag.benchmark))
    detail = f"{detail}; {said}" if said else detail
    if measurement.too_few_points and verdict in (REPRODUCED, PARTLY, NOT_REPRODUCED):
        detail = f"{detail}: a rank correlation of two points is always ±1 (point estimate: {verdict})"
        verdict = INCONCLUSIVE
    return ClaimResult(claim, verdict, value, ratio, in_range, detail, lower_bound=lower, upper_bound=upper,
                       coverage=measurement.coverage)


def judge_bounded(claim: Claim, value: float, lower: bool = False, upper: bool = False,
                  why: str = "") -> tuple[str, str]:
    """(verdict, what to add to the detail, "" when nothing) of ``value`` on ``claim`` when it is
    exact, only a lower bound (``lower``) or only an upper bound (``upper``), ``why`` saying
    what made it one (its flag's meaning, :func:`results.flag_meaning`; "" unsaid): a bound is judged
    where the true value, beyond it, has one verdict (see the module doc), "inconclusive" where
    it may have two. Without intervals, as :func:`judge`."""
    verdict = judge(claim, value)
    because = f" ({why})" if why else ""
    if lower:
        detail = f"a lower bound{because}"
        highest = tolerance_band(claim)[1]
        at_least = shown_with_unit(value, claim)
        if below_band(claim, value):
            where = ("the no-effect value the claim must exceed" if value == claim.baseline
                     else "below the paper's value")
            if verdict == PARTLY:   # right direction; the true value may lie below the band, in it or above
                return INCONCLUSIVE, (f"{detail}; at least {at_least}, below the band: the true value may lie below "
                                      f"it still, in it or above (point estimate: {PARTLY})")
            return f"{NOT_MEASURED}: only a lower bound ({at_least}), {where}", detail
        if verdict == REPRODUCED and math.isfinite(highest):   # the true value may lie above the band
            return INCONCLUSIVE, (f"{detail}; at least {at_least}, inside the band up to "
                                  f"{with_unit(f'{highest:g}', claim.unit)}: the true value may lie above it "
                                  f"(point estimate: {REPRODUCED})")
        if verdict == PARTLY and claim.baseline is not None and claim.paper_range[1] <= claim.baseline:
            # above the band, short of the baseline the paper lies below: the true value may reach it
            return INCONCLUSIVE, (f"{detail}; at least {at_least}, above the band and below the no-effect value: "
                                  f"partly or not reproduced (partly at best)")
        return verdict, detail
    if upper:
        detail = f"an upper bound{because}"
        verdict, why = _judge_upper_bound(claim, value)
        return verdict, f"{detail}; {why}" if why else detail
    return verdict, ""


def _judge_upper_bound(claim: Claim, bound: float) -> tuple[str, str]:
    """The verdict of every value at most ``bound``, and what to add to the detail:
    "inconclusive" where the bound leaves two verdicts (inside the band: reproduced or below
    it; below the band but above the baseline: partly or not reproduced), "not measured"
    where it leaves every verdict (above the band)."""
    if in_band(claim, bound):
        if math.isinf(tolerance_band(claim)[0]):     # no bottom: every value below the bound is in it
            return REPRODUCED, ""
        return INCONCLUSIVE, (f"at most {shown_with_unit(bound, claim)}, inside the band: the true value may lie in "
                              "it or below "
                              f"(point estimate: {REPRODUCED})")
    if not below_band(claim, bound):
        return f"{NOT_MEASURED}: only an upper bound ({shown_with_unit(bound, claim)}), above the paper's tolerance band", ""
    baseline = claim.baseline
    if baseline is None:
        return NOT_REPRODUCED, ""
    if claim.paper_range[1] <= baseline:
        return PARTLY, ""
    if bound <= baseline:
        return NOT_REPRODUCED, ""
    return INCONCLUSIVE, (f"at most {shown_with_unit(bound, claim)}, below the band and above the no-effect value: "
                          "partly or not "
                          f"reproduced (partly at best)")


def _trend_bounds(source: MeasuredSource, points: pd.DataFrame, artifacts: Mapping[str, Mapping[str, Any]],
                  commit: str) -> list[str]:
    """Which measured points of the trend ``source`` its bound flags (``lower_flag``,
    ``upper_flag``, each point read as :func:`_flag_set` reads a value's) say are only bounds,
    or cannot say are exact, one phrase each ("the value at batch=64 is only a lower bound");
    [] where every one is exact, and for any other source or a trend without flags."""
    if not isinstance(source, TrendSource) or not (source.lower_flag or source.upper_flag):
        return []
    rows, _ = select_points(points, source.benchmark, source.params)
    over = [] if rows is None else [p.get(source.over) for p, st in zip(rows["params"], rows["status"])
                                     if st == STATUS_OK]
    said = []
    for at in over:
        params = {**source.params, source.over: at}
        value = BenchmarkSource(PointRef(source.benchmark, params))
        for flag, kind in ((source.lower_flag, "a lower"), (source.upper_flag, "an upper")):
            found = _flag_set(BenchmarkSource(PointRef(flag, params)) if flag else None, points, artifacts,
                              commit, value)
            if isinstance(found, str):
                said.append(f"whether the value at {source.over}={at!r} is exact is not known ({found})")
            elif found:
                said.append(f"the value at {source.over}={at!r} is only {kind} bound")
    return said


def _flag_set(source, points: pd.DataFrame, artifacts: Mapping[str, Mapping[str, Any]],
              commit: str, measured: MeasuredSource | None = None) -> bool | str:
    """Whether the bound flag ``source`` is set for a value measured at ``commit`` (from the
    points of ``measured``, the claim's source): True or False, or why it cannot be told (a
    string): the flag failed or was skipped, or comes from another run than the value (another
    commit, or :func:`_another_run`: a partial rerun), or has no result at all (a rerun of the
    value alone, or a typo in the claims file): a value whose flag is unknown may be a bound
    of either kind, so it is never judged ("not measured")."""
    if source is None:
        return False
    flag = measure(source, points, artifacts)
    if flag.status == ABSENT:
        return f"its bound flag has no result here ({flag.detail})"
    if not flag.ok:
        return f"its bound flag: {flag.detail}"
    if commit and flag.commit and not same_commit(commit, flag.commit):
        return f"its bound flag was measured at {flag.commit[:8]}, the value at {commit[:8]}"
    value_points = ((measured.point,) if isinstance(measured, BenchmarkSource)
                    else (measured.numerator, measured.denominator) if isinstance(measured, RatioSource) else ())
    other = next(filter(None, (_another_run(points, p, source.point) for p in value_points)), None)
    return other or flag.value >= 0.5


def _another_run(points: pd.DataFrame, value: PointRef, flag: PointRef) -> str | None:
    """Why the point ``flag`` comes from another asv run than the point ``value`` (both of
    one commit), or None where the rows cannot tell them apart. asv records no run id, and
    each benchmark's own ``started_at``; it runs a class's benchmarks back to back. So the two
    are of two runs where their environments differ, or, both of one class, where a benchmark
    of another class at their commit and environment started between them (asv keeps the
    numbers a partial rerun did not measure). A rerun of one of them alone right after a run
    that ended with their class cannot be told from one run, nor can two runs of points of
    two classes."""
    if "env_name" not in points or "started_at" not in points:
        return None
    found = [select_points(points, p.benchmark, p.params)[0] for p in (value, flag)]
    if any(rows is None or len(rows) != 1 for rows in found):
        return None
    (v,), (f,) = (rows.itertuples() for rows in found)
    if v.env_name != f.env_name:
        return f"its bound flag was measured in environment {f.env_name!r}, the value in {v.env_name!r}"
    cls = class_of(v.benchmark)
    if pd.isna(v.started_at) or pd.isna(f.started_at) or class_of(f.benchmark) != cls:
        return None
    first, last = sorted((v.started_at, f.started_at))
    between = points[(points["commit"] == v.commit) & (points["env_name"] == v.env_name)
                     & (points["started_at"] > first) & (points["started_at"] < last)
                     & (points["benchmark"].map(lambda b: class_of(str(b))) != cls)]
    if between.empty:
        return None
    return (f"its bound flag started at {f.started_at:%Y-%m-%d %H:%M:%S}, the value at "
            f"{v.started_at:%Y-%m-%d %H:%M:%S}, and {between['benchmark'].iloc[0]} between them: two runs "
            "(a partial rerun)")


def evaluate_claims(claims: list[Claim], points: pd.DataFrame,
                    artifacts: Mapping[str, Mapping[str, Any]], state: MachineState,
                    noise: Noise | None = None) -> list[ClaimResult]:
    """Return the :class:`ClaimResult` of every claim, in the claims' order."""
    return [evaluate_claim(claim, points, artifacts, state, noise) for claim in claims]
