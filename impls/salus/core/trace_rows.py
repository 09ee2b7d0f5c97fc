"""The fields of a CSV trace's rows, for :func:`impls.salus.core.trace_files.read_csv`: which
header columns it reads, how a row's fields line up with them, and what each field holds.
"""
from __future__ import annotations

import csv
import dataclasses
import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ARRIVAL_COLUMNS = ("submit_time", "arrival_s", "arrival", "submitted_time")
DURATION_COLUMNS = ("duration", "duration_s", "runtime", "run_time")
ID_COLUMNS = ("job_id", "jobid", "id")
# start_time / end_time fields that hold no time (compared without case): pandas, SQL and
# spreadsheet exports write a missing time so
NO_TIME = frozenset({"", "none", "null", "nan", "nat", "na", "n/a", "\\n"})
UNIT_NAMES = {"s": "seconds", "ms": "milliseconds", "min": "minutes", "h": "hours"}
DECIMAL_COMMA = re.compile(r"^\s*([-+]?\d*),(\d+)\s*$")


def header_column(header: Sequence[str], names: Sequence[str]) -> str | None:
    """The column of ``header`` named by the first of ``names`` it has (compared without case
    and surrounding spaces), as the header spells it; None when it has none of them."""
    lowered = {h.strip().lower(): h for h in header if h is not None}
    return next((lowered[n] for n in names if n in lowered), None)


def delimiter(header: str) -> str:
    """The header line's field separator, of a comma, ``;``, tab or ``|`` (those three: a
    spreadsheet's export in a locale whose decimal mark is a comma): the first of them in
    that order that splits ``header`` into fields with an arrival column (a label may hold
    another, as ``note (s, approx)`` in a tab-separated file); where none does, the first of
    them it holds, else a comma."""
    held = [d for d in (",", ";", "\t", "|") if d in header]
    for separator in held:
        try:
            fields = next(csv.reader([header], delimiter=separator), [])
        except csv.Error:          # a quote this separator leaves open: not this one
            continue
        if header_column(fields, ARRIVAL_COLUMNS) is not None:
            return separator
    return held[0] if held else ","


def epoch_hint(at: float, unit: str) -> str:
    """What an arrival of ``at`` seconds (thousands of years), read in ``unit``, likely is."""
    if unit == "s" and abs(at) < 1e14:      # 1e11-1e14: milliseconds since 1970 (1.5e12 in 2017)
        return "milliseconds since 1970? --time-unit ms reads every number of the file, durations too, as milliseconds"
    finer = "microseconds or nanoseconds since 1970" if unit in ("s", "ms") else "a time in a finer unit"
    return f"{finer}? this reader takes s, ms, min or h, one unit for every number of the file"


def no_time(text: str | None) -> bool:
    """Whether a ``start_time`` or ``end_time`` field holds no time (:data:`NO_TIME`)."""
    return (text or "").strip().lower() in NO_TIME


def fitted(fields: list[str], header: list[str], where: str, used: Sequence[str]) -> list[str]:
    """A row's ``fields``, one per column of ``header``. A trailing separator is read as no
    field (empty fields past the last named column are dropped, on the header's line and on
    the row's); a short row whose fields reach every column of ``used`` (those the reader
    reads) has its missing trailing columns empty. Any other count raises ValueError naming
    ``where`` and both counts (a misaligned or mis-separated file, such as decimal commas in a
    comma-separated one)."""
    named = len(header)
    while named and not header[named - 1].strip():
        named -= 1
    if len(fields) > named and not any(f.strip() for f in fields[named:]):
        fields = fields[:named]
    reach = max(header.index(c) for c in used) + 1
    if reach <= len(fields) < named:
        fields = fields + [""] * (named - len(fields))
    if len(fields) != named:
        raise BadRow("fields: other than the header's", f"{where}: a row of {len(fields)} fields under a header of "
                     f"{named}; expected as many fields on every row as the header names (a misaligned or "
                     "mis-separated file?)")
    return fields


HEADER_SHOWN = 120   # characters of a header line a message repeats


def header_message(path: Path, header: Sequence[str]) -> str:
    """What :func:`~impls.salus.core.trace_files.read_csv` says of a ``header`` without the
    columns it needs, the header cut to :data:`HEADER_SHOWN` characters."""
    return (f"{path}:1: header {_shown(header)}; expected an arrival column ({' or '.join(ARRIVAL_COLUMNS)}) and "
            f"a duration column ({' or '.join(DURATION_COLUMNS)}) or start_time and end_time")


def _shown(header: Sequence[str]) -> str:
    shown = ", ".join(h.strip() for h in header if h) or "(none)"
    return shown[:HEADER_SHOWN] + "..." if len(shown) > HEADER_SHOWN else shown


def one_kind(kinds: dict, text: str, where: str, name: str, key: str) -> None:
    """Record in ``kinds`` (key: (is a number, where first seen)) whether ``text`` of column
    ``name`` is a number or a date; ValueError when the columns under ``key`` have held the
    other kind (seconds from 0 beside dates since 1970 would read as a span of decades)."""
    number = is_number(text)
    seen = kinds.setdefault(key, (number, where))
    if seen[0] != number:
        kind, other = ("a number", "a date") if number else ("a date", "a number")
        raise BadRow(f"{key}: numbers and dates", f"{where}: {name} {text!r} is {kind}, but {seen[1]} holds {other} "
                     f"in {key}; expected seconds on every row or dates on every row")


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# A job's GPUs: a count column, else plan_gpu (Alibaba PAI: percent of one GPU per instance,
# 50 is half a GPU) times inst_num (its instances; 1 without the column) over 100
GPU_COLUMNS = ("num_gpus", "gpu_num", "gpus", "num_gpu", "n_gpus", "ngpus", "gpu_count", "gpus_requested")
PERCENT_GPU_COLUMNS = ("plan_gpu",)
INSTANCE_COLUMNS = ("inst_num",)
NO_GPU_COUNT = "no GPU count (an empty field)"
PART_OF_A_GPU = "on part of a GPU (a count that is not whole; the simulated device is whole)"


def not_on(gpus: int) -> str:
    """The reason a job on another count than ``gpus`` GPUs is left out (as Philly's reader says it)."""
    return f"not on {gpus} GPU{'s' if gpus != 1 else ''}"


@dataclasses.dataclass(frozen=True)
class GpuColumns:
    """Where a CSV header gives each job's GPUs: ``count`` (a column of :data:`GPU_COLUMNS`),
    else ``percent`` (``plan_gpu``) times ``instances`` (``inst_num``, None: one) over 100;
    all None when the header names none of them."""

    count: str | None = None
    percent: str | None = None
    instances: str | None = None

    @classmethod
    def of(cls, header: Sequence[str]) -> "GpuColumns":
        count = header_column(header, GPU_COLUMNS)
        if count is not None:
            return cls(count)
        percent = header_column(header, PERCENT_GPU_COLUMNS)
        return cls(None, percent, header_column(header, INSTANCE_COLUMNS) if percent else None)

    @property
    def name(self) -> str | None:
        """The columns as a message names them (None: none)."""
        if self.count or not self.percent:
            return self.count
        return f"{self.percent} x {self.instances} / 100" if self.instances else f"{self.percent} / 100"

    @property
    def used(self) -> list[str]:
        return [c for c in (self.count, self.percent, self.instances) if c is not None]

    def gpus(self, row: dict, where: str) -> float | None:
        """The GPUs row ``row`` asked for; None when a field it needs is empty (or one of
        :data:`NO_TIME`, as pandas writes NaN). ValueError naming ``where`` for a field that is
        not a finite number >= 0."""
        total = 1.0
        for name, per in ((self.count, 1.0), (self.percent, 100.0), (self.instances, 1.0)):
            if name is None:
                continue
            text = row.get(name)
            if no_time(text):
                return None
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not (math.isfinite(value) and value >= 0):
                raise BadRow(f"{name}: not a GPU count", f"{where}: {name} {text!r}; expected a number of GPUs >= 0"
                             + (" (in percent of one GPU: 50 is half a GPU)" if name == self.percent else ""))
            total *= value / per
        return total


def gpu_reason(held: float | None, gpus: int | None) -> str | None:
    """Why a job on ``held`` GPUs (None: not known) is left out when the jobs on ``gpus``
    GPUs are kept (None: any count); None when it is kept."""
    if gpus is None:
        return None
    if held is None:
        return NO_GPU_COUNT
    if held != round(held):
        return PART_OF_A_GPU
    return None if held == gpus else not_on(gpus)


def no_gpu_column_message(path: Path, header: Sequence[str]) -> str:
    """What :func:`~impls.salus.core.trace_files.read_csv` says when asked to choose jobs by
    their GPUs in a file whose ``header`` names no GPU column."""
    return (f"{path}:1: header {_shown(header)}; expected a GPU column to choose jobs by their GPUs "
            f"({', '.join(GPU_COLUMNS)}, or {PERCENT_GPU_COLUMNS[0]} in percent of one GPU per instance "
            f"times {INSTANCE_COLUMNS[0]})")


NEVER_STARTED = "never started (no start_time)"
STILL_RUNNING = "still running (a start_time and no end_time)"
NO_DURATION = "no duration (an empty field or NaN, as for a job still running: its length is unknown)"
ENDS_BEFORE_START = "ends before it starts (end_time before start_time)"
STARTED_BEFORE_SUBMITTED = "started before it was submitted"
# a start less than this many seconds before its submission is jitter between the clocks that
# wrote the two times: the job is kept (arriving at its submission, running end - start), noted
JITTER_S = 1.0
ORDINARY = (NEVER_STARTED, STILL_RUNNING, NO_DURATION)    # what a snapshot of a cluster holds


class BadRow(ValueError):
    """A row :func:`~impls.salus.core.trace_files.read_csv` refuses; ``kind`` says what is wrong
    with it in words that are the same for every such row (:class:`Refused` gathers them)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Refused:
    """The rows of file ``path`` a reader refuses, gathered by kind, so that one run names them
    all: how many of each kind, the first one's message and the lines of the next few."""

    SHOWN = 5       # lines named for each kind

    def __init__(self, path: Path) -> None:
        self.path, self.kinds = path, {}

    def add(self, err: ValueError, line: int) -> None:
        entry = self.kinds.setdefault(getattr(err, "kind", None) or str(err), [0, str(err), []])
        entry[0] += 1
        if len(entry[2]) < self.SHOWN:
            entry[2].append(line)

    def check(self) -> None:
        """ValueError naming every refused row: one row, its own message; more, the count of
        each kind, its first row's message and the lines of the next few."""
        total = sum(n for n, _, _ in self.kinds.values())
        if total == 1:
            raise ValueError(next(iter(self.kinds.values()))[1])
        if total:
            parts = []
            for n, message, lines in self.kinds.values():
                also = ", ".join(str(line) for line in lines[1:]) + (f" and {n - len(lines)} more" if n > len(lines)
                                                                     else "")
                parts.append(f"[{n} row{'s' if n != 1 else ''}: {message}" + (f" (also lines {also})" if also else "")
                             + "]")
            raise ValueError(f"{self.path}: {total} rows refused, of {len(parts)} kind{'s' if len(parts) != 1 else ''}"
                             f" (each kind's first row in full, then the lines of the next): " + " ".join(parts))


def jitter_note(count: int, first: str | None) -> list[str]:
    """The trace's notes: none, or that ``count`` (> 0) jobs start less than :data:`JITTER_S`
    before their submission (the first at ``first``) and were kept as starting at it."""
    if not count:
        return []
    return [f"{count} job{'s' if count != 1 else ''} start{'s' if count == 1 else ''} less than {JITTER_S:g} s before "
            f"{'its' if count == 1 else 'their'} submission (the first at {first}): read as clock jitter and kept, "
            f"arriving at {'its' if count == 1 else 'their'} submission and running from start to end "
            f"(a start {JITTER_S:g} s or more before it is left out: {STARTED_BEFORE_SUBMITTED})"]


def dirty_note(left: dict[str, int], first: dict[str, str], rows: int) -> list[str]:
    """A warning where the rows left out for times that disagree (an end before its start, a
    start before its arrival, a date a clock change hides: the reasons in ``first``, the first
    line of each, other than :data:`ORDINARY`) are more than a tenth of ``rows``: columns in
    other zones or units, then, more likely than a few dirty rows."""
    odd = {why: n for why, n in left.items() if why in first and why not in ORDINARY}
    total = sum(odd.values())
    if total * 10 <= rows:
        return []
    return [f"{total} of {rows} rows were left out for times that disagree ("
            + "; ".join(f"{n} {why}, the first at {first[why]}" for why, n in odd.items())
            + "): more than a tenth, which suggests columns written in other zones or units, not a few dirty rows"]


SECONDS_PER = {"nanoseconds": 1e-9, "microseconds": 1e-6, "milliseconds": 1e-3, "seconds": 1.0, "minutes": 60.0,
               "hours": 3600.0, "days": 86400.0}
FLAGS = {"milliseconds": "ms", "seconds": "s", "minutes": "min", "hours": "h"}    # --time-unit


class Agreement:
    """A CSV's ``duration`` column against its ``end_time - start_time``, where it has both:
    the duration is read, and a unit slip in it (minutes read as seconds) would go unseen.
    :meth:`check` refuses a file whose median ratio is off by more than :data:`TOLERANCE`."""

    TOLERANCE = 2.0     # the factor the median may be off: a unit slip is 60x or 1000x, a retry's gap less

    def __init__(self, duration: str) -> None:
        self.duration, self.ratios, self.off, self.first, self.dated = duration, [], 0, None, False

    def add(self, length: float, begin: float, finish: float, where: str, dated: bool) -> None:
        """Row ``where``'s ``length`` (s, as read) against ``finish - begin`` (s); a row with
        either zero is not compared."""
        span = finish - begin
        if not (length > 0 and span > 0):
            return
        ratio = span / length
        self.ratios.append(ratio)
        self.dated = self.dated or dated
        if not 1 / self.TOLERANCE <= ratio <= self.TOLERANCE:
            self.off += 1
            self.first = self.first or f"{where}: {length:.6g} s against {span:.6g} s"

    def check(self, path: Path, unit: str) -> list[str]:
        """ValueError where the median of end - start over duration is off by more than
        :data:`TOLERANCE` (the message names the ratio, the unit it suggests and what to do);
        else a warning for the rows that are, if any (the duration is read)."""
        if not self.ratios:
            return []
        ratio = float(np.median(self.ratios))
        if 1 / self.TOLERANCE <= ratio <= self.TOLERANCE:
            return [f"{self.off} of {len(self.ratios)} rows' {self.duration} differs from end_time - start_time "
                    f"by more than a factor of {self.TOLERANCE:g} (the first at {self.first}); {self.duration} "
                    "is used"] if self.off else []
        per = ratio * SECONDS_PER[UNIT_NAMES[unit]]     # seconds per unit of the column, as end - start has it
        guess = min(SECONDS_PER, key=lambda name: abs(math.log(per / SECONDS_PER[name])))
        if not 2 / 3 <= per / SECONDS_PER[guess] <= 1.5:
            hint = "if the columns mean different things, leave start_time and end_time out of the file"
        elif guess in FLAGS and self.dated:
            hint = (f"{self.duration} in {guess}? --time-unit {FLAGS[guess]} reads it so (start and end dates "
                    "stay dates; numbers elsewhere in the file are read in it too)")
        else:
            hint = (f"{self.duration} in {guess}? the file's numbers are then in more than one unit: write it in "
                    f"the unit of start_time and end_time")
        times = f"{1 / ratio:.4g}x" if ratio < 1 else f"1/{ratio:.4g} of"
        raise ValueError(f"{path}: {self.duration} read as {UNIT_NAMES[unit]} is {times} end_time - start_time (the "
                         f"median over the {len(self.ratios)} rows that have all three; the first row off: "
                         f"{self.first}); expected them to agree within a factor of {self.TOLERANCE:g}: {hint}")
