"""Find the measured number a claim points at, in the asv results or an artifact."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from impls.harness.report.claims import (
    ArtifactSource,
    BenchmarkSource,
    MeasuredSource,
    PointRef,
    RatioSource,
    TrendSource,
)
from impls.harness.report.record_path import walk
from impls.harness.report.results import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED
from impls.harness.report.value_run import ValueRun, other_run

# A rank correlation over 2 points is always +-1: a trend over part of a sweep (points
# skipped or failed) needs at least this many; a whole sweep of 2 points says the sign of one change.
MIN_TREND_POINTS = 3

# Measurement.status values besides the result statuses ok / skipped / failed:
ABSENT = "absent"  # nothing measured it yet (no such benchmark, point or artifact)
INVALID = "invalid"  # the claims file points at something that does not fit the data
NO_VALUE = "no value"  # the data hold the number, but as null or a value that is not finite


@dataclasses.dataclass(frozen=True)
class Measurement:
    """A measured number (``value``) or why there is none (``status`` != "ok", ``detail``)."""

    status: str
    value: float | None = None
    detail: str = ""  # where the number came from, or what is wrong
    coverage: str = ""  # what part of the data it rests on, when not all ("3 of 5 points")
    commit: str = ""  # the commit it was measured at ("" when unknown or two)
    too_few_points: bool = False  # a trend over fewer than MIN_TREND_POINTS points: only a sign
    reason: str = ""  # why there is no number, when more is known than the status says (the verdict's text)
    missing: str = ""  # a skipped point's NaN: what its benchmark declares that NaN means ("" where it declares none)

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK


def _same(a: Any, b: Any) -> bool:
    return a == b or repr(a) == repr(b)


def select_points(points: pd.DataFrame, benchmark: str,
            params: Mapping[str, Any]) -> tuple[pd.DataFrame | None, Measurement | None]:
    """Return the rows of ``benchmark`` matching ``params``, or the Measurement saying why not."""
    rows = points[points["benchmark"] == benchmark]
    if rows.empty:
        return None, Measurement(ABSENT, detail=f"no results for {benchmark}")
    names = set().union(*(p.keys() for p in rows["params"]))
    unknown = sorted(set(params) - names)
    if unknown:
        return None, Measurement(
            INVALID, detail=f"{benchmark} has no parameter(s) {', '.join(unknown)}; "
                            f"its parameters: {', '.join(sorted(names)) or 'none'}")
    mask = rows["params"].map(lambda p: all(_same(p.get(k), v) for k, v in params.items()))
    rows = rows[mask]
    if rows.empty:
        wanted = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return None, Measurement(ABSENT, detail=f"{benchmark} has no point {wanted} in the results")
    return rows, None


def _label(point: PointRef) -> str:
    params = ", ".join(f"{k}={v!r}" for k, v in point.params.items())
    return f"{point.benchmark}({params})" if params else point.benchmark


def nan_meaning(benchmark: str) -> str:
    """What a NaN of ``benchmark`` means where its track declares it (``missing=`` of
    ``benchmarks.common.track``: a failed job, no mix drawn, ...), as ``make compare`` reads
    it; "" where it declares none or the benchmark code does not import. asv stores such a
    NaN as it stores a skip, so a "skipped" point of it may be either."""
    from impls.harness.report.directions import declared_missing
    try:
        return declared_missing().get(benchmark, "")
    except Exception:  # noqa: BLE001 - benchmark code that does not import: no meaning known
        return ""


def skipped_words(benchmark: str) -> str:
    """How a point of ``benchmark`` that asv stored as NaN reads: "no value: <what its NaN
    means>; or skipped" where the benchmark declares the meaning (:func:`nan_meaning`),
    else "skipped"."""
    meaning = nan_meaning(benchmark)
    return f"no value: {meaning}; or skipped" if meaning else "skipped"


def measure_point(points: pd.DataFrame, point: PointRef) -> Measurement:
    """Return the value of one benchmark point in ``points`` (see :func:`results.latest_points`).
    A point asv stored as NaN is :data:`STATUS_SKIPPED`; its detail says what that NaN means
    where the benchmark declares it (:func:`nan_meaning`, kept in ``missing``), since asv
    stores a skip and a declared NaN alike, else that it was skipped."""
    rows, failure = select_points(points, point.benchmark, point.params)
    if failure:
        return failure
    if len(rows) > 1:
        names = sorted(set().union(*(p.keys() for p in rows["params"])))
        return Measurement(INVALID, detail=f"params select {len(rows)} points of {point.benchmark}; "
                                           f"name every one of its parameters: {', '.join(names)}")
    row = rows.iloc[0]
    where = f"{_label(point)} at {row['commit'][:8]}"
    if row["status"] == STATUS_SKIPPED:
        meaning = nan_meaning(point.benchmark)
        detail = (f"{where} has no value: {meaning}; or it was skipped (asv stores both as NaN)" if meaning
                  else f"{where} was skipped")
        return Measurement(STATUS_SKIPPED, detail=detail, commit=str(row["commit"]), missing=meaning)
    if row["status"] == STATUS_FAILED:
        return Measurement(STATUS_FAILED, detail=f"{where} failed", commit=str(row["commit"]))
    return Measurement(STATUS_OK, float(row["value"]), where, commit=str(row["commit"]))


NO_FACTOR = "a ratio of signed numbers is no factor"
RATIO_UNITS = ("x", "×", "ratio")  # a claim in one of these units is a factor: a value <= 0 is none


def as_factor(found: Measurement, unit: str) -> Measurement:
    """``found``, or, where ``unit`` is one of :data:`RATIO_UNITS` and its value is below 0,
    a :data:`NO_VALUE` measurement saying so: a factor below 0 (a point that is itself a ratio,
    of a side that went negative) is refused as :func:`measure_ratio` refuses a ratio of
    negative sides; 0 is a factor (one side took no time or made no progress) and is judged."""
    if not found.ok or unit not in RATIO_UNITS or found.value >= 0:
        return found
    return Measurement(NO_VALUE, detail=f"{found.detail} is {found.value:g}, below 0: {NO_FACTOR}")


def measure_ratio(points: pd.DataFrame, source: RatioSource) -> Measurement:
    """Return numerator / denominator, or the first side's reason for having no value."""
    top = measure_point(points, source.numerator)
    bottom = measure_point(points, source.denominator)
    for side in (top, bottom):
        if not side.ok:
            return side
    if bottom.value == 0:      # the data's, not the claims file's: no ratio to judge
        return Measurement(NO_VALUE, detail=f"denominator {bottom.detail} is zero: no ratio")
    if top.value < 0 or bottom.value < 0:
        return Measurement(NO_VALUE, detail=f"{top.detail} / {bottom.detail}: a side is negative, and {NO_FACTOR}")
    if top.commit and bottom.commit and top.commit != bottom.commit:
        return Measurement(NO_VALUE, detail=f"{top.detail} / {bottom.detail}: the two sides come from different "
                                            "commits (a partial run), so their ratio measures no one version")
    return Measurement(STATUS_OK, top.value / bottom.value, f"{top.detail} / {bottom.detail}",
                       commit=top.commit if top.commit == bottom.commit else "")


def spearman(x: list[float], y: list[float]) -> float:
    """Return Spearman's rank correlation of ``y`` with ``x`` (0.0 when either is constant)."""
    return float(spearman_rows(x, [y])[0])


def spearman_rows(x: list[float], ys) -> np.ndarray:
    """Return Spearman's rank correlation of each row of the 2-D ``ys`` with ``x`` (ties get
    their mean rank; 0.0 where ``x`` or the row is constant; NaN where a row holds NaN)."""
    rx = pd.Series(x, dtype=float).rank().to_numpy()
    ry = pd.DataFrame(np.asarray(ys, dtype=float)).rank(axis=1).to_numpy()
    dx, dy = rx - rx.mean(), ry - ry.mean(axis=1, keepdims=True)
    constant = (np.ptp(rx) == 0) | (np.ptp(ry, axis=1) == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (dy @ dx) / np.sqrt((dx @ dx) * np.einsum("ij,ij->i", dy, dy))
    return np.where(constant, 0.0, rho)


def _sortable(values: list[Any]) -> list[float]:
    """Return numeric positions: the values if numeric, else their order of appearance."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values]
    order = list(dict.fromkeys(values))
    return [float(order.index(v)) for v in values]


def measure_trend(points: pd.DataFrame, source: TrendSource) -> Measurement:
    """Return Spearman's rho of the benchmark's value against parameter ``source.over``."""
    rows, failure = select_points(points, source.benchmark, source.params)
    if failure:
        return failure
    over_values = [p.get(source.over) for p in rows["params"]]
    if any(v is None for v in over_values):
        return Measurement(INVALID, detail=f"{source.benchmark} has no parameter {source.over!r}")
    if len(set(map(repr, over_values))) != len(over_values):
        others = sorted(set().union(*(p.keys() for p in rows["params"])) - {source.over})
        return Measurement(INVALID, detail=f"trend over {source.over!r} needs one point per value; "
                                           f"fix the other parameters in params: {', '.join(others)}")
    measured = rows["status"] == STATUS_OK
    count, total = int(measured.sum()), len(rows)
    missing = [f"{source.over}={v!r} ({skipped_words(source.benchmark) if st == STATUS_SKIPPED else st})"
               for v, st in zip(over_values, rows["status"]) if st != STATUS_OK]
    if count < 2 or (count < MIN_TREND_POINTS and missing):
        statuses = set(rows["status"])
        status = (STATUS_SKIPPED if STATUS_SKIPPED in statuses
                  else STATUS_FAILED if STATUS_FAILED in statuses else ABSENT)
        return Measurement(status, detail=f"{count} of {total} points of {source.benchmark} along "
                                          f"{source.over} measured; a trend over part of a sweep needs "
                                          f"{MIN_TREND_POINTS}" + (f" (not measured: {', '.join(missing)})"
                                                                    if missing else ""),
                           reason=f"{count} of {total} points of the sweep measured here; a trend over part "
                                  f"of a sweep needs {MIN_TREND_POINTS}")
    x = _sortable([v for v, ok in zip(over_values, measured) if ok])
    rho = spearman(x, rows.loc[measured, "value"].tolist())
    commit = rows["commit"].iloc[0][:8]
    detail = f"Spearman rho of {source.benchmark} over {source.over} ({count} points) at {commit}"
    if count < MIN_TREND_POINTS:
        detail += "; the sweep has 2 points: the sign of one change"
    if missing:
        detail += f"; not measured: {', '.join(missing)}"
    return Measurement(STATUS_OK, rho, detail, coverage=f"{count} of {total} points" if missing else "",
                       commit=str(rows["commit"].iloc[0]), too_few_points=count < MIN_TREND_POINTS)


def no_artifact(name: str) -> str:
    """The detail of a measurement whose artifact ``name`` this machine does not have."""
    return f"no artifact {name!r}"


def measure_artifact(artifacts: Mapping[str, Mapping[str, Any]], source: ArtifactSource) -> Measurement:
    """Return the number at ``source.path`` in the newest artifact ``source.artifact``."""
    record = artifacts.get(source.artifact)
    if record is None:
        return Measurement(ABSENT, detail=no_artifact(source.artifact))
    try:
        value = walk(record, source.path)
    except KeyError as err:
        return Measurement(INVALID, detail=f"artifact {source.artifact!r} has no {source.path!r} "
                                           f"(stopped at {err.args[0]!r})")
    if value is None:
        return Measurement(NO_VALUE, detail=f"artifact {source.artifact!r} holds no value at {source.path!r} "
                                            "(null: the run recorded none)")
    if isinstance(value, float) and math.isnan(value):
        return Measurement(NO_VALUE, detail=f"artifact {source.artifact!r} holds no value at {source.path!r} "
                                            "(NaN: the run recorded none)")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return Measurement(INVALID, detail=f"artifact {source.artifact!r} {source.path!r} is "
                                           f"{value!r}, not a number")
    commit = str(record.get("commit", ""))
    return Measurement(STATUS_OK, float(value), f"artifact {source.artifact}:{source.path} at {commit[:8]}",
                       commit=commit)


_NO_ARTIFACT, _OTHER_COMMIT, _OTHER_RUN, _NO_PATH = "no artifact", "another commit", "another run", "no path"


def _value_at(artifacts: Mapping[str, Mapping[str, Any]], artifact: str, path: str,
              run: str | ValueRun | None) -> tuple[Any, str]:
    """``(value, "")`` at dotted ``path`` of the newest artifact ``artifact``, or ``(None, why)``:
    :data:`_NO_ARTIFACT`, :data:`_NO_PATH`, or, given ``run`` (the value's commit, or its
    :class:`ValueRun`), :data:`_OTHER_COMMIT` for an artifact written at another commit and
    :data:`_OTHER_RUN` for one another run of that commit wrote (:func:`other_run`): either
    would describe a run the value is not of."""
    record = artifacts.get(artifact)
    if record is None:
        return None, _NO_ARTIFACT
    commit = run.commit if isinstance(run, ValueRun) else run
    if commit and not same_commit(str(record.get("commit") or ""), commit):
        return None, _OTHER_COMMIT
    if isinstance(run, ValueRun) and other_run(record, run):
        return None, _OTHER_RUN
    try:
        return walk(record, path), ""
    except KeyError:
        return None, _NO_PATH


def artifact_mismatch(artifacts: Mapping[str, Mapping[str, Any]], artifact: str, run: ValueRun | None) -> str:
    """Why the newest artifact ``artifact`` is not of the value's ``run``, naming both: of
    another commit, or another run of it (:func:`other_run`); "" where it is the run's, or
    where there is no such artifact or no run to match."""
    record = artifacts.get(artifact)
    if record is None or run is None:
        return ""
    commit = str(record.get("commit") or "")
    if not same_commit(commit, run.commit):
        return f"artifact {artifact} is of commit {commit[:8] or '?'}, the value of {run.commit[:8]}"
    return other_run(record, run)


def artifact_text(artifacts: Mapping[str, Mapping[str, Any]], source: ArtifactSource,
                  commit: str | ValueRun | None = None) -> str | None:
    """Return the non-empty text at ``source.path`` in the newest artifact ``source.artifact``,
    or None (no such artifact, path or text, or, given ``commit`` (or the value's
    :class:`ValueRun`), an artifact written at another commit or by another run of it: its
    text would explain another run)."""
    value, _ = _value_at(artifacts, source.artifact, source.path, commit)
    return value.strip() if isinstance(value, str) and value.strip() else None


UNBOUNDED_BY_RUN = "unbounded by the run"   # an interval the run recorded as null: nothing bounds it


MALFORMED_INTERVAL = "malformed interval"   # the start of artifact_interval's answer for a bad pair


def artifact_interval(artifacts: Mapping[str, Mapping[str, Any]], source: ArtifactSource,
                      commit: str | ValueRun | None = None) -> tuple[float, float] | str | None:
    """Return the ``[low, high]`` pair of finite numbers, low <= high, at ``source.path`` in the
    newest artifact ``source.artifact``; :data:`UNBOUNDED_BY_RUN` where the path holds null
    (the run found nothing bounds the value); a text starting with :data:`MALFORMED_INTERVAL`
    where it holds anything else (reversed ends, NaN, not a pair); None where there is no such
    artifact or path, or, given ``commit`` (or the value's :class:`ValueRun`), the artifact
    was written at another commit or by another run of it (it would be another run's)."""
    value, why = _value_at(artifacts, source.artifact, source.path, commit)
    if why:
        return None
    if value is None:
        return UNBOUNDED_BY_RUN
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
            or value[0] > value[1]):
        return f"{MALFORMED_INTERVAL} {value!r} at {source.path} (not [low, high], finite, low <= high)"
    return float(value[0]), float(value[1])


def check_setting(artifacts: Mapping[str, Mapping[str, Any]], condition,
                  commit: str | ValueRun | None) -> tuple[str | None, bool]:
    """``(why, told)``: why the run measured at ``commit`` (or the value's :class:`ValueRun`)
    is not the setting ``condition`` (a :class:`~impls.harness.report.claims.Condition`) names,
    or None when it is; ``told`` is False where the artifact cannot tell the run's setting (no
    artifact, one of another commit or written by another run of it, no such path, or, with ``at_least``, no number there), True where it tells it (the value
    differs from ``equals`` or lies below ``at_least``, or the run is at the setting)."""
    value, why = _value_at(artifacts, condition.artifact, condition.path, commit)
    if why == _NO_ARTIFACT:
        return f"no artifact {condition.artifact} to tell whether the run is at {condition.wanted}", False
    if why == _OTHER_COMMIT:
        return (f"artifact {condition.artifact} is of another commit than the value, so it cannot tell whether "
                f"the run is at {condition.wanted}"), False
    if why == _OTHER_RUN:
        return (f"{other_run(artifacts[condition.artifact], commit)}, so it cannot tell whether the value's run "
                f"is at {condition.wanted}"), False
    if why == _NO_PATH:
        return f"artifact {condition.artifact} has no {condition.path} to tell the run's setting", False
    if condition.at_least is not None:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
            return (f"artifact {condition.artifact} has {condition.path} = {value!r}, not a number, so it cannot "
                    f"tell whether the run is at {condition.wanted}"), False
        if value < condition.at_least:
            return _other_setting(condition, value), True
        return None, True
    if value != condition.equals and not (isinstance(value, (int, float)) and isinstance(condition.equals, (int, float))
                                          and float(value) == float(condition.equals)):
        return _other_setting(condition, value), True
    return None, True


def _other_setting(condition, value: Any) -> str:
    """The run's setting against the claim's, in the condition's words, with its hint."""
    hint = f" ({condition.hint})" if condition.hint else ""
    return f"this profile's run has {condition.name} = {value!r}; the claim is about {condition.wanted}{hint}"


def same_commit(a: str, b: str) -> bool:
    """Whether two commit hashes, either possibly abbreviated (7+ characters), name one commit."""
    n = min(len(a), len(b))
    return n >= 7 and a[:n] == b[:n]


def measure(source: MeasuredSource, points: pd.DataFrame,
            artifacts: Mapping[str, Mapping[str, Any]]) -> Measurement:
    """Return the measurement ``source`` describes; a value that is not finite (an
    infinite time, a ratio over one) is no value to judge (status :data:`NO_VALUE`)."""
    if isinstance(source, BenchmarkSource):
        found = measure_point(points, source.point)
    elif isinstance(source, RatioSource):
        found = measure_ratio(points, source)
    elif isinstance(source, TrendSource):
        found = measure_trend(points, source)
    else:
        found = measure_artifact(artifacts, source)
    if found.ok and not math.isfinite(found.value):
        return Measurement(NO_VALUE, detail=f"{found.detail} is {found.value}, not a finite number")
    return found
