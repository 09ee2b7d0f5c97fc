"""Philly's ``cluster_job_log`` (Microsoft's public trace, github.com/msr-fiddle/philly-traces)
read as a :class:`~impls.salus.core.trace_files.JobTrace`.

The log is a JSON list of jobs with ``submitted_time``, ``attempts`` (``start_time``,
``end_time``, ``detail[].gpus``), ``status``, ``vc``, ``jobid``. A job's duration is the time
its attempts ran, in any order, overlapping attempts counted once (the union of their
intervals: a killed or failed job held its GPUs too); its GPU count is the largest any
attempt held. Its times name no zone and are read in US Pacific time (:data:`PHILLY_ZONE`,
inferred: the trace's utilisation files write PDT / PST); a job with a time that zone shows
twice or never, a time in another form (``10/07/2017 ...``, a number) or a ``gpus`` field
that is not a list is left out and counted, as are jobs still running at the snapshot, jobs
whose run time is unknown (an attempt that ends before it starts, or one without an end that
is not the last to start), jobs that started before they were submitted, a listing of a
``jobid`` that repeats an earlier one, and one that a later, different listing of its
``jobid`` replaces (the later snapshot is read).
"""
from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from collections.abc import Sequence
from datetime import tzinfo
from pathlib import Path
from typing import Any

from impls.salus.core.trace_files import JobTrace, job_trace, listed_before, other_gpus_note
from impls.salus.core.trace_text import open_text, reading
from impls.salus.core.trace_rows import JITTER_S, STARTED_BEFORE_SUBMITTED, jitter_note, not_on
from impls.salus.core.trace_times import (DATE_EXAMPLE, PHILLY_ZONE, RepeatedTime, SkippedTime, clock_change,
                                          date_seconds, time_zone, zone_name)


def _philly_time(value: Any, zone: tzinfo, where: str, column: str) -> float | None:
    """A Philly time as seconds, read in ``zone``; None for a missing one (null, "", "None");
    :class:`SkippedTime` / :class:`RepeatedTime` for one the zone does not show once;
    ValueError naming ``where`` and ``column`` for any other value that is no date (a number,
    or another form of date such as 10/07/2017)."""
    if value is None or isinstance(value, str) and value.strip() in ("", "None"):
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: {column} {value!r}; expected a date such as {DATE_EXAMPLE}")
    return date_seconds(value, where, column, zone)


def read_philly(path: str | Path, vc: str | None = None, gpus: int | None = 1,
                zone: str | None = PHILLY_ZONE) -> JobTrace:
    """The jobs of a Philly ``cluster_job_log`` at ``path`` that ran on ``gpus`` GPUs (None:
    any; the trace's ``notes`` then count the jobs on other than one, as a CSV's do) in
    virtual cluster ``vc`` (None: any). Its times name no zone; they are read in IANA
    zone ``zone``, by default US Pacific time: the trace's README gives its utilisation files'
    times in PDT and PST and says nothing of the job log's, so that zone is inferred, and an
    attempt across the change of 2017-11-05 is read at its true length, not an hour short.
    Left out and counted: a listing of a ``jobid`` the same as an earlier one (the same JSON
    object: :data:`~impls.salus.core.trace_files.LISTED_BEFORE`); one of a ``jobid`` listed
    again later with other content (:data:`LISTED_AGAIN_LATER`: two snapshots concatenated, a
    job running in the first and finished in the second; the last listing is read); jobs of
    another virtual cluster; with a time in the hour the zone shows twice (clocks went back:
    its length or arrival is unknown by an hour) or in one it never shows (clocks went forward:
    the zone is likely not the file's); with no attempt that has both times (never ran); still
    running (:func:`_running`: :data:`STILL_RUNNING`); with an attempt that has no end (null, ""
    or "None") in a job that is not running (:data:`OPEN_ATTEMPT`: its run time is unknown); with
    an attempt that ends before it starts (its run time is unknown); started before it was submitted (an
    attempt starts :data:`~impls.salus.core.trace_rows.JITTER_S`, 1 s, or more before
    ``submitted_time``: :data:`STARTED_BEFORE_SUBMITTED`, its arrival is unknown; less is clock
    jitter, kept and counted in the notes); with a time that is no date as the log writes
    them (:data:`UNREADABLE_DATE`);
    with an ``attempts`` field that is not a list (:data:`MALFORMED_ATTEMPTS`), or a ``detail``
    or ``gpus`` field that is not one (:data:`MALFORMED_GPUS`); of another GPU count, or
    of zero run time. A job's run time is the union of its attempts' intervals in seconds
    (attempts that overlap held their GPUs once). ValueError for a file that is not a JSON list
    of jobs with ``submitted_time`` and ``attempts``, and, when no job is left, one that names
    the first value that could not be read."""
    path = Path(path)
    zone = zone_name(zone)
    tz = time_zone(zone)
    expected = "Philly's cluster_job_log"
    with open_text(path, expected, "cluster_job_log") as handle, reading(path, expected):
        try:
            jobs = json.load(handle)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{err.lineno}: not JSON ({err.msg}); expected Philly's "
                             "cluster_job_log (a JSON list of jobs)") from None
    if not isinstance(jobs, list) or (jobs and not all(isinstance(j, dict) for j in jobs)):
        raise ValueError(f"{path}: a JSON {type(jobs).__name__}; expected a list of jobs as in Philly's "
                         "cluster_job_log")
    keys = ["" if job.get("jobid") is None else str(job["jobid"]) for job in jobs]
    last = {key: index for index, key in enumerate(keys)}      # each jobid's last listing
    left: Counter = Counter()
    rows, unreadable, seen, other_gpus, clusters, jittered = [], "", {}, 0, Counter(), []
    for index, (job, key) in enumerate(zip(jobs, keys)):
        if "submitted_time" not in job or "attempts" not in job:
            raise ValueError(f"{path}: job {index} ({job.get('jobid', 'no jobid')}) has no submitted_time or "
                             "attempts; expected Philly's cluster_job_log")
        if listed_before(seen, key, job, index, left):
            continue
        if key and job != jobs[last[key]]:
            left[LISTED_AGAIN_LATER] += 1
            continue
        clusters[job.get("vc")] += 1
        if vc is not None and job.get("vc") != vc:
            left["another virtual cluster"] += 1
            continue
        if not isinstance(job["attempts"], (list, type(None))):
            left[MALFORMED_ATTEMPTS] += 1
            continue
        attempts = [a for a in (job["attempts"] or []) if isinstance(a, dict)]
        where = f"job {job.get('jobid', index)!r}"
        try:
            submitted = _philly_time(job["submitted_time"], tz, where, "submitted_time")
            times = [(_philly_time(a.get("start_time"), tz, where, "start_time"),
                      _philly_time(a.get("end_time"), tz, where, "end_time")) for a in attempts]
        except (RepeatedTime, SkippedTime) as err:
            left[clock_change(zone, err)] += 1
            continue
        except ValueError as err:
            left[UNREADABLE_DATE] += 1
            unreadable = unreadable or str(err)
            continue
        if submitted is None:
            left["no submitted_time"] += 1
            continue
        if _running(job.get("status"), times):
            left[STILL_RUNNING] += 1
            continue
        if any(begin is not None and finish is None for begin, finish in times):
            left[OPEN_ATTEMPT] += 1
            continue
        spans = [(begin, finish) for begin, finish in times if begin is not None and finish is not None]
        if any(finish < begin for begin, finish in spans):
            left["an attempt ends before it starts"] += 1
            continue
        if not spans:
            left["never ran (no attempt with both times)"] += 1
            continue
        early = submitted - min(begin for begin, _ in spans)
        if early >= JITTER_S:
            left[STARTED_BEFORE_SUBMITTED] += 1
            continue
        length = _covered(spans)
        held = _gpus_held(attempts)
        if held is None:
            left[MALFORMED_GPUS] += 1
            continue
        if gpus is not None and held != gpus:
            left[not_on(gpus)] += 1
            continue
        other_gpus += gpus is None and held != 1
        rows.append((submitted, length, str(job.get("jobid", index))))
        if early > 0 and length > 0:        # clock jitter, kept (a zero length is left out by job_trace)
            jittered.append(where)
    if vc is not None and vc not in clusters:
        raise ValueError(no_such_cluster(path, vc, clusters))
    trace = job_trace(rows, left, path, zone, f"; the first unreadable: {unreadable}" if unreadable else "")
    return dataclasses.replace(trace, notes=other_gpus_note(other_gpus, len(rows), "the attempts' gpus")
                               + jitter_note(len(jittered), jittered[0] if jittered else None))


def no_such_cluster(path: Path, vc: str, clusters: Counter) -> str:
    """The error for a ``vc`` that no job of the log at ``path`` names: the log's virtual
    clusters (``clusters``: jobs per ``vc`` value), the first 20 by name, and the one it meant
    where ``vc`` matches one without case (names are compared with case)."""
    names = sorted(str(n) for n in clusters if n is not None)
    alike = [n for n in names if n.lower() == vc.lower()]
    meant = f" (names are compared with case: {alike[0]!r}?)" if len(alike) == 1 else ""
    shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "") if names else "none (no job names one)"
    return f"{path}: no job of virtual cluster {vc!r}{meant}; the log's virtual clusters: {shown}"


LISTED_AGAIN_LATER = "job id listed again later (the later listing is read)"
STILL_RUNNING = "still running at the snapshot"
OPEN_ATTEMPT = "an attempt without an end in a finished job (run time unknown)"
UNREADABLE_DATE = f"an unreadable date (not of the form {DATE_EXAMPLE})"
MALFORMED_GPUS = "a detail or gpus field that is not a list"
MALFORMED_ATTEMPTS = "an attempts field that is not a list of attempts"


def _running(status: Any, times: Sequence[tuple[float | None, float | None]]) -> bool:
    """Whether a job of ``status`` whose attempts ran ``times`` (start, end in seconds; None:
    no time) was still running at the snapshot: its status is "Running", or the attempt that
    started last (a tie: any of them) has no end, as the trace's README gives a running job.
    Microsoft's README names "Pass", "Killed" and "Failed" as the status upon completion; an
    earlier attempt without an end does not make a job running."""
    if status == "Running":
        return True
    started = [(begin, finish) for begin, finish in times if begin is not None]
    if not started:
        return False
    latest = max(begin for begin, _ in started)
    return any(finish is None for begin, finish in started if begin == latest)


def _covered(spans: Sequence[tuple[float, float]]) -> float:
    """Seconds inside at least one of ``spans`` (begin, end; end >= begin), in any order."""
    total, reach = 0.0, -math.inf
    for begin, finish in sorted(spans):
        if finish > reach:
            total += finish - max(begin, reach)
            reach = finish
    return total


def _gpus_held(attempts: Sequence[dict]) -> int | None:
    """The most GPUs any of ``attempts`` held (each attempt: the lengths of its ``detail``
    entries' ``gpus`` lists summed; a missing or null list holds none), or None when a
    ``detail`` or ``gpus`` field is not a list (a string such as "gpu0" would count its
    characters, and a single detail object would read as no GPU)."""
    most = 0
    for attempt in attempts:
        held = 0
        detail = attempt.get("detail")
        if not isinstance(detail, (list, type(None))):
            return None
        for d in detail or []:
            if not isinstance(d, dict) or d.get("gpus") is None:
                continue
            if not isinstance(d["gpus"], list):
                return None
            held += len(d["gpus"])
        most = max(most, held)
    return most
