"""Benchmark points without a value in their newest run, with the reason where it is known.

asv does not store why a point was skipped. The suite skips through
``require("<capability>", ...)`` in setup, and benchmarks.json keeps each
benchmark's source, so the capabilities it requires are read from there and the
fingerprint says which of them is missing and why.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

import pandas as pd

from impls.harness.report.machine_state import MachineState
from impls.harness.report.results import STATUS_FAILED, STATUS_SKIPPED, BenchmarkInfo

_REQUIRE_CALL = re.compile(r"\brequire\(([^)]*)\)")
_STRING = re.compile(r"""["']([A-Za-z_][A-Za-z0-9_]*)["']""")

UNKNOWN_SKIP = "skipped in setup (NotImplementedError); asv does not record why"
FAILURE = "raised an error or timed out; the `asv run` output says why"


@dataclasses.dataclass(frozen=True)
class SkippedPoint:
    benchmark: str
    params: str  # "name=value, ..." as asv stores them; "" for an unparameterized benchmark
    status: str  # "skipped" or "failed"
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
    return reason or UNKNOWN_SKIP


def skipped_points(points: pd.DataFrame, info: Mapping[str, BenchmarkInfo],
                   state: MachineState) -> list[SkippedPoint]:
    """Return every skipped or failed point in ``points`` (newest run of each point)."""
    missing = points[points["status"].isin((STATUS_SKIPPED, STATUS_FAILED))]
    missing = missing.sort_values(["benchmark"], kind="stable")
    return [
        SkippedPoint(row.benchmark, row.param_label, row.status, row.commit,
                     skip_reason(info.get(row.benchmark), row.status, state))
        for row in missing.itertuples(index=False)
    ]
