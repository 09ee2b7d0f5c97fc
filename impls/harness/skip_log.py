"""Why a benchmark point has no value: a line written where the point is skipped, read by
the report and ``make compare``.

asv stores a point skipped in ``setup`` and a number that came out NaN alike (NaN), and a
failure as null, and keeps no reason for any of them. The benchmark classes
(``benchmarks.common.explain_skips``) therefore append one JSON line per such event to
``<artifacts root>/<machine>/<commit>/skips.jsonl``, beside the run's artifacts:
``{"benchmark", "params", "outcome", "reason", "at"}``, where ``benchmark`` is asv's name
of the class (``bench_x.Class``: a ``setup`` skip holds for all its methods) or of the
method, ``params`` asv's label of the point (``"name=value, ..."`` with each value's
``repr``, as asv stores it), ``outcome`` one of :data:`OUTCOMES`, and ``at`` the time in
seconds since the epoch.

A line is an explanation, never a measurement: writing one never fails a benchmark (an
unwritable folder loses the line), and a reader takes a line only for the run that wrote
it (written while asv ran the benchmark: from its ``started_at`` to that plus its
``duration``), so a reason left by another run of the same commit is never shown for it.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from impls.harness import paths

FILE_NAME = "skips.jsonl"
SKIPPED = "skipped"    # the benchmark raised NotImplementedError (asv's skip)
NO_VALUE = "no value"  # the number came out NaN or None
FAILED = "failed"      # the benchmark raised another exception
OUTCOMES = (SKIPPED, NO_VALUE, FAILED)
MAX_REASON = 1000      # characters of a reason kept (one short line each)
_SLACK_S = 2.0         # clock rounding between asv's started_at (ms) and a line's time


@dataclasses.dataclass(frozen=True)
class Entry:
    benchmark: str  # asv name of the class ("bench_x.Class") or of the method
    params: str     # asv's param label, "" for an unparameterised benchmark
    outcome: str    # one of OUTCOMES
    reason: str
    at: float       # seconds since the epoch


def log_path(machine: str, commit: str, root: Path | None = None) -> Path:
    """The file the skips of ``machine``'s run of ``commit`` go to (under the artifacts root)."""
    return Path(root or paths.artifacts_root()) / machine / commit / FILE_NAME


def param_label(names: Iterable[str], values: Iterable[object]) -> str:
    """asv's label of one point: ``"name=repr(value), ..."``; "" without parameters."""
    return ", ".join(f"{name}={value!r}" for name, value in zip(names, values))


def is_missing(value: object) -> bool:
    """Whether a benchmark's return ``value`` is one asv stores without a number (None, NaN)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def record(benchmark: str, params: str, outcome: str, reason: str) -> Path | None:
    """Append one line for the current machine and commit; return the file, or None when it
    could not be written (the line is lost; the benchmark goes on)."""
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome {outcome!r}: expected one of {', '.join(OUTCOMES)}")
    text = " ".join(str(reason).split())[:MAX_REASON]   # json escapes a lone surrogate; _entry makes it readable
    line = json.dumps({"benchmark": benchmark, "params": params, "outcome": outcome, "reason": text,
                       "at": round(time.time(), 3)}) + "\n"
    try:
        path = log_path(paths.suite_machine(), paths.git_commit())
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:   # one write: lines of parallel writers stay whole
            handle.write(line)
    except (OSError, ValueError):
        return None
    return path


def read(machine: str, root: Path | None = None) -> dict[str, list[Entry]]:
    """Return commit -> the entries of ``machine``'s skip logs, oldest first. A line that is
    not an entry (a torn or foreign line) is left out; an unreadable file gives none."""
    found: dict[str, list[Entry]] = {}
    base = Path(root or paths.artifacts_root()) / machine
    for file in sorted(base.glob(f"*/{FILE_NAME}")):
        try:
            lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        entries = [entry for entry in map(_entry, lines) if entry is not None]
        if entries:
            found[file.parent.name] = sorted(entries, key=lambda e: e.at)
    return found


def _entry(line: str) -> Entry | None:
    try:
        raw = json.loads(line)
        entry = Entry(str(raw["benchmark"]), str(raw["params"]), str(raw["outcome"]), str(raw["reason"]),
                      float(raw["at"]))
    except (ValueError, KeyError, TypeError):
        return None
    if entry.outcome not in OUTCOMES or not math.isfinite(entry.at):
        return None
    return dataclasses.replace(entry, reason=readable(entry.reason))


def readable(text: str) -> str:
    """``text`` with what UTF-8 cannot encode (a lone surrogate from undecodable bytes in an
    exception's message) as backslash escapes, so that a page or a terminal can print it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def why(logs: Mapping[str, list[Entry]], benchmark: str, params: str, commit: str,
        started_at: float | None, ended_at: float | None = None, asv_failed: bool | None = None) -> Entry | None:
    """The newest entry explaining point ``params`` of asv benchmark ``benchmark``
    (``module.Class.method``) in the run of ``commit`` that ran it from ``started_at`` to
    ``ended_at`` (seconds since the epoch; asv's ``started_at`` and that plus its
    ``duration``; None: unbounded on that side): the method's own entry, else its class's
    (a ``setup`` skip). With ``asv_failed`` (asv stored the point as a failure, or else as
    NaN), only an entry that can explain that (:func:`fits`). None when that run wrote none."""
    klass = benchmark.rsplit(".", 1)[0]
    since = started_at - _SLACK_S if started_at is not None and math.isfinite(started_at) else -math.inf
    until = ended_at + _SLACK_S if ended_at is not None and math.isfinite(ended_at) else math.inf
    best = None
    for entry in logs.get(commit, ()):
        if (entry.params != params or entry.benchmark not in (benchmark, klass) or not since <= entry.at <= until
                or (asv_failed is not None and not fits(entry, asv_failed))):
            continue
        if best is None or (entry.benchmark == benchmark, entry.at) >= (best.benchmark == benchmark, best.at):
            best = entry
    return best


def run_window(started_at: object, duration: object) -> tuple[float | None, float | None]:
    """When asv ran a benchmark, from its result's ``started_at`` (a datetime; None or NaT:
    unknown) and ``duration`` (seconds, all its points): (start, end) in seconds since the
    epoch, (None, None) when the start is unknown. A start without a duration gives end =
    start: asv leaves the duration out only where it ran none of the benchmark's methods (its
    setup cache failed or timed out), so that run wrote no line to find."""
    try:
        start = float(started_at.timestamp())
    except (AttributeError, TypeError, ValueError):   # None, NaT
        return None, None
    ok = isinstance(duration, (int, float)) and not isinstance(duration, bool) and math.isfinite(duration)
    return start, start + float(duration) if ok else start


def for_point(logs: Mapping[str, list[Entry]], benchmark: str, params: str, commit: str,
              started_at: object, duration: object, asv_failed: bool) -> Entry | None:
    """What the run of ``commit`` logged for one point of an asv result (its benchmark's
    ``started_at`` and ``duration``, :func:`run_window`) that fits how asv stored it
    (``asv_failed``: null, else NaN); None where it logged nothing that does."""
    return why(logs, benchmark, params, commit, *run_window(started_at, duration), asv_failed=asv_failed)


def describe(entry: Entry) -> str:
    """An entry's reason as one phrase: a skip's text as it is, ``no value: ...`` for a NaN or
    None, ``raised ...`` for an exception."""
    return {SKIPPED: "", NO_VALUE: "no value: ", FAILED: "raised "}[entry.outcome] + entry.reason


def fits(entry: Entry, asv_failed: bool) -> bool:
    """Whether ``entry`` can explain a point that asv stored as a failure (``asv_failed``:
    null) or as NaN: a skip explains only a NaN, an exception only a failure, and a missing
    number either (asv stores a NaN as NaN and a None as null)."""
    return entry.outcome == NO_VALUE or (entry.outcome == FAILED) == asv_failed
