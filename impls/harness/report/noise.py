"""Run-to-run noise of every tracked number on one machine, and the thresholds it sets.

Longer than 400 lines: measuring the thresholds, writing them and reading them back (a
hand-written file checked key by key) are one file format with one set of invariants.

Measured from two or more stored runs of the same commit (see :mod:`runs`): for each
number (benchmark and parameter point) its *spread* is the relative range of its values
over the runs of one commit, ``(max - min) / |median|``, the largest over the commits
measured. Its *threshold* ``t`` — ``make compare`` calls a change between two positive
values a regression or an improvement when they differ by a factor above ``1 + t``,
either way, and other changes when their relative change exceeds ``t`` — is

    threshold = FACTOR * max(spread of the number, median spread of its benchmark's points)

With two runs the range of a normal variable averages 1.13 sigma, so FACTOR = 3 puts the
threshold near 2.4 standard deviations of the difference of two runs; taking at least
the benchmark's median spread keeps a point that agreed twice by chance from a threshold
of zero (the median of the finite spreads above 0: a point around 0, whose relative range
is infinite, does not make its siblings untrackable, and points that repeated exactly do
not pull it to 0). A deterministic benchmark (a simulation: every point spread 0) has
threshold 0: any change is real. A number whose threshold exceeds TOO_NOISY (50%) cannot be tracked here at all.

A number declared on the *absolute* scale (``scale="absolute"`` beside its direction: an
error, a difference, an overhead in percent — a number whose 0 is a natural value and
whose noise adds rather than multiplies) has its spread and threshold in its own unit:
the range ``max - min`` over the runs, and a change is ``new - old``. Relative to a value
near 0 any change is infinite; in the number's unit it can be judged. Such a threshold is
"too noisy" only when it is infinite. Its floor is the median spread of the benchmark's
points of the same size only (largest values within a factor :data:`SAME_SIZE`): a spread
in milliseconds of a 2-s restart says nothing of a 0.01-ms switch measured beside it.
Where none of those moved, the floor is the moved points' median spread relative to their
size, at this point's size; for a point that read 0 in every run, their median spread.
So no point gets 0 while a sibling moved, as on the relative scale.

Stored as JSON, by default in ``reports/noise/<machine>.json`` (committed with the
suite, since it describes a machine, not a run).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import math
import re
import statistics
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from impls.harness import atomic, paths
from impls.harness.report.results import STATUS_OK

SCHEMA = 1
FACTOR = 3.0
TOO_NOISY = 0.5
RELATIVE, ABSOLUTE = "relative", "absolute"
SCALES = (RELATIVE, ABSOLUTE)
EVERY_POINT = "*"  # the params of a hand-written threshold that holds for every point of its benchmark


class NoiseError(ValueError):
    """Too few runs to measure noise, or a thresholds file that cannot be read."""


def default_noise_path(machine: str) -> Path:
    return paths.reports_dir() / "noise" / f"{machine}.json"


@dataclasses.dataclass(frozen=True)
class Threshold:
    """One number's measured spread and the threshold it sets: relative (0.05 = 5%), or in
    the number's own unit where ``scale`` is :data:`ABSOLUTE`."""

    benchmark: str
    params: str  # asv's param_label, "" for an unparameterised benchmark
    runs: int
    spread: float
    threshold: float
    version: str = ""  # the benchmark's asv version it was measured on ("" when unknown)
    scale: str = RELATIVE
    factor: float = FACTOR  # threshold = factor * floored spread (:attr:`Noise.factor`)

    @property
    def too_noisy(self) -> bool:
        return too_noisy(self.threshold, self.scale)

    @property
    def floored_spread(self) -> float:
        """The spread the threshold was set from, ``threshold / factor``: the number's own
        spread, or its benchmark's median spread where that is larger (an exact repeat is not
        evidence of zero noise); never below ``spread``. ``spread`` itself where ``factor`` is
        0 or not finite. Relative, or in the number's unit on the absolute scale."""
        if 0 < self.factor < math.inf:
            return max(self.spread, self.threshold / self.factor)
        return self.spread

    def range_width(self, value: float) -> float:
        """The repeats' range around ``value``, in the number's unit: how far another run of
        the same commit may lie from ``value`` on either side, ``value`` being one run. Taken
        from :attr:`floored_spread`, the spread ``make compare``'s threshold is set from:
        a point that repeated exactly among siblings that moved does not get 0; infinite where
        the spread or the threshold is."""
        return (abs(value) if self.scale == RELATIVE else 1.0) * self.floored_spread

    def exceeded_by(self, old: float, new: float) -> bool:
        """Whether the change from ``old`` to ``new`` is larger than the threshold: on the
        relative scale, for two positive values, a factor above ``1 + threshold`` either way
        (as ``make compare`` judges it)."""
        ratio = factor(old, new) if self.scale == RELATIVE else None
        if ratio is not None:
            return max(ratio, 1 / ratio) > 1 + self.threshold
        return abs(change(old, new, self.scale)) > self.threshold

    def applies_to(self, version: str) -> bool:
        """Whether this threshold judges numbers of benchmark ``version``: the one it was
        measured on, or any when either version is not known ("")."""
        return not self.version or not version or self.version == version


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


def too_noisy(threshold: float, scale: str = RELATIVE) -> bool:
    """Whether a number with ``threshold`` cannot be tracked: above :data:`TOO_NOISY` on the
    relative scale; infinite (a null in the file) on either."""
    return threshold > TOO_NOISY if scale == RELATIVE else not math.isfinite(threshold)


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
    factor: float = FACTOR

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


def measure_noise(machine: str, runs_by_commit: dict[object, list[pd.DataFrame]],
                  run_ids: Iterable[dict] = (), factor: float = FACTOR,
                  scales: dict[str, str] | None = None) -> Noise:
    """Return the :class:`Noise` of ``machine`` from frames of repeated runs, grouped by
    commit (or by commit and environment: any key whose runs repeat one another).
    ``scales`` maps a benchmark name to :data:`ABSOLUTE` where it is declared so (every
    other one is relative).

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
        raise NoiseError(f"no commit of {machine} has two stored runs; run the suite twice on one "
                         "commit (make bench; make bench), then measure again")
    # per number and benchmark version: the spreads (one per commit), values seen, newest start
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
                entry[0].append(value_range(seen, scale_of(key[0])))
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
    spreads = {key: entry[0] for key, (_, entry) in chosen.items()}
    counts = {key: entry[1] for key, (_, entry) in chosen.items()}
    versions = {key: ver for key, (ver, _) in chosen.items()}
    point_spread = {key: max(found) for key, found in spreads.items()}
    magnitude = {key: entry[3] for key, (_, entry) in chosen.items()}
    by_benchmark: dict[str, list[tuple[str, str]]] = {}
    for key in point_spread:
        by_benchmark.setdefault(key[0], []).append(key)

    floors = {b: _median_finite([point_spread[k] for k in keys]) for b, keys in by_benchmark.items()}

    def typical(key: tuple[str, str]) -> float:
        siblings, floor = by_benchmark[key[0]], floors[key[0]]
        if scale_of(key[0]) != ABSOLUTE or floor in (0.0, math.inf):
            return floor
        # spreads in the unit: the points of the same size, else the moved points' spreads
        # relative to their size at this point's size, else (a point that read 0) all of them
        same = _median_finite([point_spread[k] for k in siblings if comparable(magnitude[k], magnitude[key])])
        if same > 0 or magnitude[key] == 0:
            return same if same > 0 else floor
        relative = [point_spread[k] / magnitude[k] for k in siblings
                    if point_spread[k] > 0 and 0 < magnitude[k] < math.inf and math.isfinite(point_spread[k])]
        return statistics.median(relative) * magnitude[key] if relative else floor

    thresholds = {
        key: Threshold(key[0], key[1], counts[key], spread,
                       factor * max(spread, typical(key)), versions.get(key, ""), scale_of(key[0]), factor)
        for key, spread in sorted(point_spread.items())
    }
    return Noise(machine, dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                 list(run_ids), thresholds, factor)


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


def _median_finite(spreads: list[float]) -> float:
    """Median of the finite ``spreads`` that are not 0 (0 when every finite one is; inf
    when none is finite). A point that repeated exactly while its siblings moved does not
    pull the floor down: it agreed by chance, or its value was kept from an earlier run
    (asv keeps the points a parameter-level ``--bench`` rerun skipped, under the new start
    time of their benchmark), and either way it is not evidence of zero noise."""
    finite = [x for x in spreads if math.isfinite(x)]
    moved = [x for x in finite if x > 0]
    return statistics.median(moved) if moved else 0.0 if finite else math.inf


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
                     "spread": _finite(t.spread), "threshold": _finite(t.threshold),
                     "version": t.version, "scale": t.scale}
                    for t in noise.thresholds.values()],
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
    ``version`` and ``scale`` (default relative) may be left out of a hand-written entry.
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
        factor = _number(document.get("factor", FACTOR), "'factor'")
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
            item = Threshold(entry["benchmark"], params, runs, spread, threshold,
                             str(entry.get("version") or ""), scale, factor)
            if (item.benchmark, item.params) in thresholds:
                raise ValueError(f"a second threshold for {item.benchmark} [{item.params}]")
        except ValueError as err:
            named = (f" ({entry['benchmark']})"
                     if isinstance(entry, dict) and isinstance(entry.get("benchmark"), str) else "")
            raise NoiseError(f"{path}: entry {index} of 'numbers'{named}: {err}") from err
        thresholds[(item.benchmark, item.params)] = item
    return Noise(str(document.get("machine", "")), str(document.get("measured", "")),
                 document.get("runs", []), thresholds, factor)
