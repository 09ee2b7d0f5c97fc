"""Run-to-run noise of every tracked number on one machine, and the thresholds it sets.

Measured from two or more stored runs of the same commit (see :mod:`runs`): for each
number (benchmark and parameter point) its *spread* is the relative range of its values
over the runs of one commit, ``(max - min) / |median|``, the largest over the commits
measured. Its *threshold* — the relative change ``make compare`` must see before it
calls a change a regression or an improvement — is

    threshold = FACTOR * max(spread of the number, median spread of its benchmark's points)

With two runs the range of a normal variable averages 1.13 sigma, so FACTOR = 3 puts the
threshold near 2.4 standard deviations of the difference of two runs; taking at least
the benchmark's median spread keeps a point that agreed twice by chance from a threshold
of zero. A deterministic number (a simulation) has spread 0 and threshold 0: any change
is real. A number whose threshold exceeds TOO_NOISY (50%) cannot be tracked here at all.

Stored as JSON, by default in ``reports/noise/<machine>.json`` (committed with the
suite, since it describes a machine, not a run).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from impls.harness import atomic, paths
from impls.harness.report.results import STATUS_OK

SCHEMA = 1
FACTOR = 3.0
TOO_NOISY = 0.5


class NoiseError(ValueError):
    """Too few runs to measure noise, or a thresholds file that cannot be read."""


def default_noise_path(machine: str) -> Path:
    return paths.reports_dir() / "noise" / f"{machine}.json"


@dataclasses.dataclass(frozen=True)
class Threshold:
    """One number's measured spread and the threshold it sets (both relative, 0.05 = 5%)."""

    benchmark: str
    params: str  # asv's param_label, "" for an unparameterised benchmark
    runs: int
    spread: float
    threshold: float

    @property
    def too_noisy(self) -> bool:
        return self.threshold > TOO_NOISY


@dataclasses.dataclass(frozen=True)
class Noise:
    machine: str
    measured: str  # ISO time
    runs: list[dict]  # {"commit", "started", "file"} of every run measured from
    thresholds: dict[tuple[str, str], Threshold]
    factor: float = FACTOR

    def get(self, benchmark: str, params: str) -> Threshold | None:
        return self.thresholds.get((benchmark, params))


def relative_range(values: list[float]) -> float:
    """Return ``(max - min) / |median|`` of ``values``; 0 when all equal, inf around a 0 median."""
    low, high = min(values), max(values)
    if high == low:
        return 0.0
    middle = abs(statistics.median(values))
    return (high - low) / middle if middle else math.inf


def measure_noise(machine: str, runs_by_commit: dict[str, list[pd.DataFrame]],
                  run_ids: Iterable[dict] = (), factor: float = FACTOR) -> Noise:
    """Return the :class:`Noise` of ``machine`` from frames of repeated runs, grouped by commit.

    Each frame is one run (``results.read_result_file``). Commits with fewer than two runs
    are ignored; raises NoiseError when no commit has two. Values with the same
    ``started_at`` in two runs are one measurement (asv kept it through a partial rerun).
    """
    spreads: dict[tuple[str, str], list[float]] = {}
    counts: dict[tuple[str, str], int] = {}
    usable = {c: f for c, f in runs_by_commit.items() if len(f) >= 2}
    if not usable:
        raise NoiseError(f"no commit of {machine} has two stored runs; run the suite twice on one "
                         "commit (make bench; make bench), then measure again")
    for frames in usable.values():
        # keyed by when the benchmark started: a result a partial rerun kept is one measurement
        values: dict[tuple[str, str], dict[object, float]] = {}
        for frame in frames:
            ok = frame[frame["status"] == STATUS_OK]
            started = ok["started_at"] if "started_at" in ok else [None] * len(ok)
            for key, at, value in zip(zip(ok["benchmark"], ok["param_label"]), started, ok["value"]):
                values.setdefault(key, {})[(id(frame), at) if at is None or at != at else at] = float(value)
        for key, by_start in values.items():
            seen = list(by_start.values())
            if len(seen) >= 2:
                spreads.setdefault(key, []).append(relative_range(seen))
                counts[key] = counts.get(key, 0) + len(seen)
    point_spread = {key: max(found) for key, found in spreads.items()}
    by_benchmark: dict[str, list[float]] = {}
    for (benchmark, _), spread in point_spread.items():
        by_benchmark.setdefault(benchmark, []).append(spread)
    typical = {b: statistics.median(s) for b, s in by_benchmark.items()}
    thresholds = {
        key: Threshold(key[0], key[1], counts[key], spread,
                       factor * max(spread, typical[key[0]]))
        for key, spread in sorted(point_spread.items())
    }
    return Noise(machine, dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                 list(run_ids), thresholds, factor)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def save_noise(noise: Noise, path: Path) -> Path:
    """Write ``noise`` as JSON to ``path`` (atomically); return the path."""
    document = {
        "schema": SCHEMA,
        "machine": noise.machine,
        "measured": noise.measured,
        "factor": noise.factor,
        "too_noisy": TOO_NOISY,
        "runs": noise.runs,
        "numbers": [{"benchmark": t.benchmark, "params": t.params, "runs": t.runs,
                     "spread": _finite(t.spread), "threshold": _finite(t.threshold)}
                    for t in noise.thresholds.values()],
    }
    return atomic.write_json(Path(path), document)


def load_noise(path: Path) -> Noise:
    """Read a thresholds file written by :func:`save_noise` (null spread = infinite)."""
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise NoiseError(f"{path}: cannot read the thresholds file: {err}") from err
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise NoiseError(f"{path}: not a thresholds file of schema {SCHEMA}")
    thresholds = {}
    for entry in document.get("numbers", []):
        spread = entry["spread"] if entry["spread"] is not None else math.inf
        threshold = entry["threshold"] if entry["threshold"] is not None else math.inf
        item = Threshold(entry["benchmark"], entry["params"], int(entry["runs"]), spread, threshold)
        thresholds[(item.benchmark, item.params)] = item
    return Noise(document["machine"], document["measured"], document.get("runs", []), thresholds,
                 float(document.get("factor", FACTOR)))
