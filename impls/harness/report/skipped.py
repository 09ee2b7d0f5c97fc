"""Benchmark points without a value in their newest run, with the reason where it is known;
and those whose value is not a finite number (±inf), which no figure can draw.

asv does not store why a point was skipped, or that its number came out NaN. The reason is
the one the benchmark logged when it ran (:mod:`impls.harness.skip_log`, written by
``benchmarks.common.explain_skips``) where that run's log has it. Else (a run from before
the log, or one whose log was lost) it is inferred: a benchmark skips when its experiment
needs a capability this machine lacks: the capabilities are read from ``require(...)``
calls in its source (benchmarks.json keeps it), else from the experiment its class's
``setup_cache`` runs (``run_and_store("<experiment>"[, "<device>"])`` in
``benchmarks/runs``: the registry's ``requires``, and ``cuda`` for a CUDA run), and the
fingerprint says which of them is missing and why.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping

import pandas as pd

from impls.harness import skip_log
from impls.harness.report.machine_state import MachineState
from impls.harness.report.provenance import experiment_of
from impls.harness.report.asv_files import BenchmarkInfo
from impls.harness.report.results import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED

_REQUIRE_CALL = re.compile(r"\brequire\(([^)]*)\)")
_STRING = re.compile(r"""["']([A-Za-z_][A-Za-z0-9_]*)["']""")

UNKNOWN_SKIP = "skipped in setup, or without a value (asv records both alike, and not why)"
FAILURE = "raised an error or timed out; the `asv run` output says why"
NOT_FINITE = "not finite"  # a SkippedPoint's status: asv stored ±inf


@dataclasses.dataclass(frozen=True)
class SkippedPoint:
    benchmark: str
    params: str  # "name=value, ..." as asv stores them; "" for an unparameterized benchmark
    status: str  # "skipped", "failed" or NOT_FINITE (±inf)
    commit: str
    reason: str


def required_capabilities(code: str) -> tuple[str, ...]:
    """Return the capability names passed to ``require(...)`` in benchmark source ``code``."""
    names: list[str] = []
    for call in _REQUIRE_CALL.finditer(code):
        names.extend(_STRING.findall(call.group(1)))
    return tuple(dict.fromkeys(names))


def skip_reason(benchmark: BenchmarkInfo | None, status: str, state: MachineState) -> str:
    """Return the best known reason a point of ``benchmark`` has ``status`` skipped or failed."""
    if status == STATUS_FAILED:
        return FAILURE
    reason = state.missing_reason(required_capabilities(benchmark.code)) if benchmark else None
    if reason is None and benchmark is not None:
        reason = state.missing_reason(experiment_requirements(benchmark.name))
    return reason or UNKNOWN_SKIP


def experiment_requirements(name: str) -> tuple[str, ...]:
    """The capabilities the experiment behind asv benchmark ``name`` (``module.Class.method``)
    needs, read from its class's ``setup_cache`` in this checkout; () when it cannot be told."""
    from impls.harness import experiments

    found = experiment_of(name)
    try:
        return experiments.get(found[0]).requirements(found[1]) if found else ()
    except Exception:      # noqa: BLE001 - another checkout's experiment: reason unknown
        return ()


def point_reason(row, info: Mapping[str, BenchmarkInfo], state: MachineState,
                 logs: Mapping[str, list[skip_log.Entry]]) -> str:
    """Why ``row`` (a point of :func:`results.latest_points`, skipped or failed) has no value:
    the reason its run logged (:func:`skip_log.for_point`), else :func:`skip_reason`'s."""
    entry = skip_log.for_point(logs, row.benchmark, row.param_label, str(row.commit),
                               getattr(row, "started_at", None), getattr(row, "duration", None),
                               row.status == STATUS_FAILED)
    return skip_log.describe(entry) if entry else skip_reason(info.get(row.benchmark), row.status, state)


def skipped_points(points: pd.DataFrame, info: Mapping[str, BenchmarkInfo],
                   state: MachineState, logs: Mapping[str, list[skip_log.Entry]] | None = None
                   ) -> list[SkippedPoint]:
    """Return every skipped or failed point in ``points`` (newest run of each point), and
    every one whose value is ±inf (status :data:`NOT_FINITE`: its history figure cannot draw
    it), by benchmark name. ``logs``: the machine's skip logs (:func:`skip_log.read`), which
    give each point the reason its run logged."""
    infinite = (points["status"] == STATUS_OK) & points["value"].map(lambda v: isinstance(v, float) and math.isinf(v))
    missing = points[points["status"].isin((STATUS_SKIPPED, STATUS_FAILED)) | infinite]
    missing = missing.sort_values(["benchmark"], kind="stable")
    return [
        SkippedPoint(row.benchmark, row.param_label, NOT_FINITE, row.commit,
                     f"its value is {row.value}, not a finite number: its history figure does not draw it")
        if row.status == STATUS_OK else
        SkippedPoint(row.benchmark, row.param_label, row.status, row.commit,
                     point_reason(row, info, state, logs or {}))
        for row in missing.itertuples(index=False)
    ]
