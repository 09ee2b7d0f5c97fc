"""Job traces read from files: when each job arrived and how long it ran alone.

Two forms are read:

- **CSV** with a header (the Salus repository's own trace form, ``model_name, iterations,
  submit_time, duration``, reads as it is): an arrival column (``submit_time``,
  ``arrival_s``, ``arrival``, ``submitted_time``) and either a duration column
  (``duration``, ``duration_s``, ``runtime``, ``run_time``) or ``start_time`` and
  ``end_time`` (with both, the duration is read, and refused where the median over the rows
  of ``end_time - start_time`` over it is off by more than a factor of 2, a unit slip:
  :class:`~impls.salus.core.trace_rows.Agreement`; a few rows off are warned of). Times are
  seconds, or dates (``2017-10-07 01:11:39``, ISO 8601) taken as
  seconds from the first arrival; an optional ``job_id`` / ``jobid`` / ``id`` column names
  the jobs; numbers are in seconds unless a unit is given (:data:`UNITS`, one for every
  number), and an arrival of 3,170 years (1e11 s) or more in that unit is refused as what it
  likely is, an epoch in a finer unit (milliseconds since 1970, for seconds). Column names are
  matched without case; a UTF-8 BOM, CRLF line ends, gzip and a
  header separated by ``;``, tabs or ``|`` instead of commas (then ``1,5`` is 1.5) are read.
  Every row has as many fields as the header names columns, or fewer where only columns
  after the last one read are left off; a trailing separator (an empty field past the last
  named column) is read as no field. A GPU column (:data:`~impls.salus.core.trace_rows.GPU_COLUMNS`,
  such as ``num_gpus`` or ``gpu_num``, else ``plan_gpu``, percent of one GPU per instance,
  times ``inst_num``, over 100) keeps the jobs on the count of GPUs asked for, one by
  default, as Philly's reader does: the others (and those with no count) are left out and counted.
- **Philly** ``cluster_job_log`` (Microsoft's public trace): read by
  :func:`impls.salus.core.philly_log.read_philly`, with this module's :class:`JobTrace` and
  the same gzip, UTF-8, tar and damaged-file handling (:mod:`impls.salus.core.trace_text`).

:func:`read_csv` and ``read_philly`` return a :class:`JobTrace`: jobs sorted by arrival
(ties in file order), arrivals in seconds from the first (so the first is 0), durations in
seconds > 0, and the count of rows left out per reason. CSV rows a run cannot mean
anything for (a duration that is negative, not a number, a date, or :data:`LONGEST_S` or
more; a column holding seconds on one row and dates on another; more or fewer fields than
the header; a job id on two rows with other times, a row per attempt or task, both lines
named) are refused, all of them in one ValueError that gives the count of each kind, its first
row's message and the lines of the next few; a quote that opens a field and is not closed as
CSV closes it stops the reading there, named by the line its row begins on. Rows that held no
device time (zero duration; a job with no start, which never started; with ``start_time``
and ``end_time``, a start and no end, still running; with a ``duration``, none, as pandas
writes a running job's NaN: an empty field or one of :data:`NO_TIME`; a ``duration`` of 0
beside no start, or no end, counts as never started, or still running, as Helios writes
them) are left out and
counted, and so are the rows Philly's reader leaves out for the same reasons (an end before
its start; a start :data:`~impls.salus.core.trace_rows.JITTER_S` (1 s) or more before its
arrival, where both are numbers or both dates; a date the zone shows twice or never), and a
row that repeats an earlier row of its job id with the same arrival and length
(:data:`LISTED_BEFORE`: a log concatenated or appended twice would otherwise load its jobs
twice). The first line of each reason is kept (``left_out_first``); where more than a tenth
of the rows are left out for times that disagree, the trace's ``notes`` say so (columns in
other zones or units, more likely than dirty rows). A start less than 1 s before its arrival
is jitter between the clocks that wrote the two: the job is kept (arriving at its
submission, running from start to end) and the ``notes`` count such jobs. Where dates were
read in UTC by default and the header names columns as Philly's log does (``jobid``,
``submitted_time``), the ``notes`` say that ``--philly`` reads that log in US Pacific time.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import itertools
import math
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from impls.salus.core.trace_rows import (ARRIVAL_COLUMNS, DECIMAL_COMMA, DURATION_COLUMNS,  # noqa: F401
                                         ENDS_BEFORE_START, ID_COLUMNS, NEVER_STARTED, NO_DURATION, NO_TIME,
                                         JITTER_S, STARTED_BEFORE_SUBMITTED, STILL_RUNNING, UNIT_NAMES, Agreement,
                                         BadRow, GpuColumns, Refused, delimiter, dirty_note, epoch_hint, fitted,
                                         gpu_reason, header_column, header_message, is_number, jitter_note,
                                         no_gpu_column_message, no_time, one_kind)
from impls.salus.core.trace_text import open_text, reading
from impls.salus.core.trace_times import (PHILLY_ZONE, RepeatedTime, SkippedTime, clock_change, time_seconds,
                                          time_zone, zone_name)
from impls.salus.core.traces import arrival_load

UNITS = {"s": 1.0, "ms": 1e-3, "min": 60.0, "h": 3600.0}   # seconds per unit of a number in a trace
EPOCH_MS = 1e11   # seconds: 3,170 years; an arrival this large is an epoch in a finer unit
LONGEST_S = 1e12  # no trace spans more seconds than this (31,700 years)


@dataclasses.dataclass
class JobTrace:
    """Jobs of one trace: ``ids`` (as the file names them), ``arrival_s`` (seconds from the
    first arrival, sorted, first 0), ``duration_s`` (> 0), ``left_out`` (reason: rows),
    ``zone``: the time zone its dates without one were read in (None when it held no date),
    ``gpu_column``: the column(s) a CSV's GPU counts came from (None: it had none), ``notes``:
    what the reader found that a command should warn of, ``left_out_first``: where the first
    row left out for a reason is (``FILE:LINE``; not every reason has one)."""

    ids: list[str]
    arrival_s: np.ndarray
    duration_s: np.ndarray
    left_out: dict[str, int]
    zone: str | None = None
    gpu_column: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    left_out_first: dict[str, str] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def window(self, skip: int = 0, first: int | None = None) -> "JobTrace":
        """The jobs ``skip`` to ``skip + first`` in arrival order (all after ``skip`` when
        ``first`` is None), arrivals again from 0. ValueError when that leaves no job."""
        end = None if first is None else skip + first
        ids, arrivals, durations = self.ids[skip:end], self.arrival_s[skip:end], self.duration_s[skip:end]
        if not ids:
            raise ValueError(f"no job in the window (skip {skip}, first {first}) of a trace of {len(self)} jobs")
        return dataclasses.replace(self, ids=list(ids), arrival_s=arrivals - arrivals[0],
                                   duration_s=durations.copy(), left_out=dict(self.left_out))

    def offered_load(self) -> float | None:
        """Arrival rate times mean duration (:func:`~impls.salus.core.traces.arrival_load`;
        > 1: jobs arrive faster than one device serves them); None for one job or all at
        one time."""
        return arrival_load(self.arrival_s, self.duration_s)

    def at_load(self, load: float) -> "JobTrace":
        """The same jobs with every gap between arrivals scaled so that :meth:`offered_load`
        is ``load`` (> 0). ValueError when the trace has no rate (one job, one instant)."""
        own = self.offered_load()
        if own is None:
            raise ValueError("the trace has no arrival rate to scale (one job, or all arrive at once)")
        if not (math.isfinite(load) and load > 0):
            raise ValueError(f"load {load!r}; expected a finite number > 0")
        arrivals = self.arrival_s * (own / load)
        if not float(arrivals[-1]) < LONGEST_S:
            raise ValueError(f"load {load!r} spreads the arrivals over more than {LONGEST_S:g} s (31,700 years); "
                             "expected a larger load")
        return dataclasses.replace(self, ids=list(self.ids), arrival_s=arrivals, duration_s=self.duration_s.copy(),
                                   left_out=dict(self.left_out))

    def duration_stats(self) -> dict[str, float]:
        """Seconds: ``mean``, ``median``, ``p90``, ``min``, ``max``; and ``scv``, the squared
        coefficient of variation (variance over mean squared: 0 when every job is as long,
        1 for exponential lengths; FIFO's queueing delay grows with 1 + scv)."""
        d = self.duration_s
        mean = float(d.mean())
        return {"mean": mean, "median": float(np.median(d)), "p90": float(np.quantile(d, 0.9)),
                "min": float(d.min()), "max": float(d.max()), "scv": float(d.var() / mean ** 2)}


def read_csv(path: str | Path, unit: str = "s", zone: str | None = None, gpus: int | None = 1,
             gpu_column_needed: bool = False) -> JobTrace:
    """The jobs of CSV file ``path`` (see the module docstring), numbers read in ``unit``
    (one of :data:`UNITS`), dates without a zone in IANA zone ``zone`` (default UTC: a
    daylight-saving change within the trace then reads an hour off). Where the header has a
    GPU column (:class:`~impls.salus.core.trace_rows.GpuColumns`) only the jobs on ``gpus``
    GPUs are kept (None: any count; the others are left out and counted, as Philly's reader
    does); ``gpu_column_needed``: a header without one is refused. ValueError naming the
    file and line for a header without the columns, and for the rows it refuses, every one of
    them in one message gathered by kind (:class:`~impls.salus.core.trace_rows.Refused`): a
    row of more or fewer fields than the header (:func:`~impls.salus.core.trace_rows.fitted`),
    a value that is not a time, an arrival that, read in ``unit``, lies beyond :data:`EPOCH_MS`
    seconds (an epoch in a finer unit: the message says which), and a job id on a row whose
    arrival or length differs from an earlier row's of that id (both lines named; a row that
    repeats one is left out and counted under :data:`LISTED_BEFORE`). Rows that Philly's
    reader leaves out for the same reasons are left out and counted, the first line of each
    reason named in ``left_out_first``: a date ``zone`` shows twice or never, a start 1 s or
    more before the arrival (less is clock jitter: kept, and counted in the ``notes``), an end
    before the start, and no duration (as no end). ``zone`` None (UTC) with dates and a header
    that names columns as Philly's log does adds a note (:func:`philly_zone_note`)."""
    path = Path(path)
    zone, default_zone = zone_name(zone), zone is None
    tz, dated = time_zone(zone), False
    if unit not in UNITS:
        raise ValueError(f"time unit {unit!r}; expected one of {', '.join(UNITS)}")
    unit_s = UNITS[unit]
    refused, left, first, explained = Refused(path), Counter(), {}, {}
    jittered: list[str] = []        # the kept rows that start less than JITTER_S before their arrival

    def leave(reason: str, where: str, why: str = "") -> None:
        left[reason] += 1
        first.setdefault(reason, where)
        explained.setdefault(reason, why or where)

    def read_time(text: str, where: str, name: str) -> float:
        try:
            return time_seconds(text, where, name, unit_s, tz)
        except (RepeatedTime, SkippedTime):
            raise
        except ValueError as err:
            raise BadRow(f"{name}: not a time", str(err)) from None

    expected = "a CSV file (or gzip of one)"
    with open_text(path, expected, "the CSV") as handle, reading(path, expected):
        try:
            first_line = handle.readline()
            if first_line.lstrip().startswith(("[", "{")):
                raise ValueError(f"{path}:1: starts with {first_line.strip()[:40]!r}..., which looks like JSON; "
                                 "expected a CSV with a header (Philly's cluster_job_log is read with --philly)")
            separator = delimiter(first_line)
            reader = csv.reader(itertools.chain([first_line], handle), delimiter=separator, strict=True)
            begun = [1]     # the line the row being read begins on: a csv.Error names it

            def rows_read():
                for fields in reader:
                    yield fields
                    begun[0] = reader.line_num + 1
            header = next(reader, [])
            begun[0] = reader.line_num + 1
            arrival = header_column(header, ARRIVAL_COLUMNS)
            duration = header_column(header, DURATION_COLUMNS)
            start, end = header_column(header, ("start_time",)), header_column(header, ("end_time",))
            name = header_column(header, ID_COLUMNS)
            if arrival is None or (duration is None and (start is None or end is None)):
                raise ValueError(header_message(path, header))
            gpu = GpuColumns.of(header)
            if gpu_column_needed and gpu.name is None:
                raise ValueError(no_gpu_column_message(path, header))
            used = [c for c in (arrival, duration, start, end) if c is not None] + gpu.used  # a job_id may be left off
            rows, kinds, seen, other_gpus = [], {}, {}, 0
            agreement = Agreement(duration) if duration is not None and start is not None and end is not None else None
            for number, fields in enumerate((f for f in rows_read() if f), start=2):
                if not any(f.strip() for f in fields):
                    continue                     # a blank line
                where, early = f"{path}:{reader.line_num}", False
                try:
                    row = dict(zip(header, fitted(fields, header, where, used)))
                    if not (row.get(arrival) or "").strip():
                        raise BadRow(f"{arrival}: empty", f"{where}: {arrival} is empty; expected a value on every row")
                    if separator != ",":     # a decimal comma, as such exports write numbers
                        row = {k: DECIMAL_COMMA.sub(r"\1.\2", v) if isinstance(v, str) else v for k, v in row.items()}
                    at = read_time(row[arrival], where, arrival)
                    dated = dated or not is_number(row[arrival])
                    if abs(at) >= EPOCH_MS and is_number(row[arrival]):
                        raise BadRow(f"{arrival}: an epoch", f"{where}: {arrival} {row[arrival]!r} read as "
                                     f"{UNIT_NAMES[unit]} is thousands of years; expected {UNIT_NAMES[unit]} "
                                     f"({epoch_hint(at, unit)})")
                    if duration is None and (no_time(row[start]) or no_time(row[end])):
                        leave(NEVER_STARTED if no_time(row[start]) else STILL_RUNNING, where)
                        continue
                    if duration is not None:
                        if no_time(row[duration]):
                            leave(NO_DURATION, where)
                            continue
                        if not is_number(row[duration]):
                            raise BadRow(f"{duration}: not a number", f"{where}: {duration} {row[duration]!r} is "
                                         "not a number; expected a job's length in seconds (for dates: start_time "
                                         "and end_time columns)")
                        length = read_time(row[duration], where, duration)
                        if not 0 <= length < LONGEST_S:
                            raise BadRow(f"{duration}: out of range", f"{where}: {duration} {row[duration]!r}; "
                                         f"expected seconds >= 0 and below {LONGEST_S:g} (31,700 years)")
                        if length == 0 and start is not None and (no_time(row[start]) or
                                                                  (end is not None and no_time(row[end]))):
                            leave(NEVER_STARTED if no_time(row[start]) else STILL_RUNNING, where)  # Helios writes 0
                            continue
                        if agreement is not None and not (no_time(row[start]) or no_time(row[end])):
                            with contextlib.suppress(ValueError):      # not read: only compared where readable
                                agreement.add(length, time_seconds(row[start], where, start, unit_s, tz),
                                              time_seconds(row[end], where, end, unit_s, tz), where,
                                              not is_number(row[start]))
                    else:
                        begin, finish = read_time(row[start], where, start), read_time(row[end], where, end)
                        dated = dated or not (is_number(row[start]) and is_number(row[end]))
                        if finish < begin:
                            leave(ENDS_BEFORE_START, where, f"{where}: end_time {row[end]!r} is before start_time "
                                  f"{row[start]!r}; expected a job's end after its start")
                            continue
                        if is_number(row[start]) == is_number(row[arrival]) and begin < at:
                            if at - begin >= JITTER_S:
                                leave(STARTED_BEFORE_SUBMITTED, where, f"{where}: start_time {row[start]!r} is "
                                      f"before {arrival} {row[arrival]!r}; expected a job to start after it was "
                                      "submitted")
                                continue
                            early = True
                        length = finish - begin
                        if not length < LONGEST_S:
                            raise BadRow("start_time to end_time: out of range", f"{where}: start_time "
                                         f"{row[start]!r} to end_time {row[end]!r} is {length:.3g} s; expected a "
                                         f"job shorter than {LONGEST_S:g} s (31,700 years)")
                    for column in (arrival,) if duration is not None else (arrival, start, end):
                        one_kind(kinds, row[column], where, column, "start_time and end_time"
                                 if column in (start, end) else column)
                    label = (row.get(name) or "").strip() if name else ""
                    if listed_before(seen, label, (at, length), reader.line_num, left):
                        continue
                    if len(seen.get(label, ())) > 1:
                        raise BadRow(f"{name}: on two rows", f"{where}: {name} {label!r} also on line "
                                     f"{seen[label][0][1]} with other times; expected one row per job, not one "
                                     "per attempt or task")
                    if gpu.name is not None:
                        held = gpu.gpus(row, where)
                        if why := gpu_reason(held, gpus):
                            left[why] += 1
                            continue
                        other_gpus += gpus is None and held != 1
                except (RepeatedTime, SkippedTime) as err:
                    leave(clock_change(zone, err), where, str(err))
                    continue
                except ValueError as err:
                    refused.add(err, reader.line_num)
                    continue
                rows.append((at, length, label or str(number - 1)))
                if early and length > 0:        # a zero length is left out by job_trace
                    jittered.append(where)
        except csv.Error as err:
            through = f", read through line {reader.line_num}" if reader.line_num > begun[0] else ""
            raise ValueError(f"{path}:{begun[0]}: not a CSV row this reader can read ({err}{through}); expected "
                             "a field that opens with a quote to close with one, and a quote inside it "
                             "written twice") from None
    refused.check()
    notes = agreement.check(path, unit) if agreement is not None else []
    notes += other_gpus_note(other_gpus, len(rows), gpu.name)
    notes += dirty_note(left, first, len(rows) + sum(left.values()))
    notes += philly_zone_note(path, header) if dated and default_zone else []
    notes += jitter_note(len(jittered), jittered[0] if jittered else None)
    detail = "; the first of each: " + "; ".join(explained.values()) if explained else ""
    return dataclasses.replace(job_trace(rows, left, path, zone if dated else None, detail), gpu_column=gpu.name,
                               notes=notes, left_out_first=first)


PHILLY_COLUMNS = ("submitted_time", "jobid")   # Philly's cluster_job_log's names (others write submit_time, job_id)


def philly_zone_note(path: Path, header: list[str]) -> list[str]:
    """The notes of a CSV at ``path`` whose dates were read in UTC by default: none, or, where
    ``header`` names a column as Philly's cluster_job_log does (:data:`PHILLY_COLUMNS`), that
    ``--philly`` reads that log's dates in :data:`~impls.salus.core.trace_times.PHILLY_ZONE`
    and ``--time-zone`` reads these so."""
    named = [c for c in PHILLY_COLUMNS if header_column(header, (c,)) is not None]
    if not named:
        return []
    return [f"{path}: its dates were read in UTC, the default for a CSV, but its columns are named as in "
            f"Philly's cluster_job_log ({', '.join(named)}), whose dates --philly reads in {PHILLY_ZONE}: a job "
            "across a daylight-saving change then differs by an hour, and one in the hour the clocks go back is "
            f"kept here and left out there; pass --time-zone {PHILLY_ZONE} to read it as --philly does"]


LISTED_BEFORE = "job id listed before"


def listed_before(seen: dict[str, list[tuple[Any, Any]]], label: str, content: Any, where: Any,
                  left: Counter) -> bool:
    """Whether an earlier listing of job id ``label`` held the same ``content`` (compared with
    ``==``: a CSV row's arrival and length, a Philly job's JSON object), counted in ``left``
    under :data:`LISTED_BEFORE` when it did. Otherwise (``content``, ``where``) is appended to
    ``seen[label]``, which so holds one entry per different content of ``label``, in file order.
    An empty ``label`` (the file names no id) is never listed before and is not recorded."""
    if not label:
        return False
    earlier = seen.setdefault(label, [])
    if any(content == other for other, _ in earlier):
        left[LISTED_BEFORE] += 1
        return True
    earlier.append((content, where))
    return False


def other_gpus_note(other: int, kept: int, source: str | None) -> list[str]:
    """The trace's notes: none, or that ``other`` (> 0) of the ``kept`` jobs, read with any GPU
    count, ask for other than one GPU (counted from ``source``) and each runs on one device."""
    return [f"{other} of the {kept} jobs kept ask for other than one GPU ({source}); each runs on the one "
            "simulated device for its full length"] if other else []


def job_trace(rows: Iterable[tuple[float, float, str]], left: Counter, path: Path, zone: str | None = None,
           detail: str = "") -> JobTrace:
    """Rows (arrival, duration, id) as a :class:`JobTrace` whose dates were read in ``zone``
    (None: it held none): zero durations left out and counted, sorted by arrival (stable),
    arrivals from the first. ValueError when no job is left, its message the counts of what
    was left out, then ``detail``."""
    kept = []
    for at, length, label in rows:
        if length == 0:
            left["zero duration"] += 1
        else:
            kept.append((at, length, label))
    if not kept:
        reasons = "; ".join(f"{n} {why}" for why, n in left.items()) or "no rows"
        raise ValueError(f"{path}: no job to simulate ({reasons}){detail}")
    kept.sort(key=lambda r: r[0])
    arrivals = np.array([r[0] for r in kept], dtype=float)
    return JobTrace([r[2] for r in kept], arrivals - arrivals[0], np.array([r[1] for r in kept], dtype=float),
                    dict(left), zone)

