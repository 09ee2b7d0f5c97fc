"""Checks of a simulator trace entry: what :func:`~impls.salus.core.simulator.simulate` (and the
executor, for iteration counts) refuses before it runs anything."""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

LONGEST_S = 1e15             # no arrival, and no job's device time, reaches this many seconds


def check_iterations(job, value) -> int:
    """Return ``value``, job ``job``'s iteration count, as an int; ValueError unless it is a
    whole number >= 0 (0: the job is done at admission)."""
    try:
        whole = int(value) == value and int(value) >= 0
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole:
        raise ValueError(f"job {job!r}: iterations {value!r}; expected a whole number >= 0")
    return int(value)


def check_job(j: Mapping, iteration_ms: Mapping[str, float], seen: set[int], overhead_ms: float = 0.0,
               warm_ms: float | None = None, peak: float = 0) -> None:
    """Raise ValueError for a trace entry the simulation cannot mean anything for: a job id not
    a whole number (digits in a string count) or repeating another as one, an arrival not a
    finite number >= 0, a negative or non-integer iteration count, an iteration time (its own,
    else the workload's) not a finite number > 0 (NaN would never advance), one that with
    ``overhead_ms`` (and warm time ``warm_ms``, ms, where used) is not > 0, :data:`LONGEST_S` s
    or more of device time (a float rank would overflow), a ``known_iteration_ms`` (SRTF's
    fixed rank per iteration) not None or a finite number >= 0, or a negative ``peak``."""
    job = j["job_id"]
    number = int(job) if isinstance(job, str) and job.strip().lstrip("+-").isdigit() else job
    if isinstance(number, bool) or not isinstance(number, (int, np.integer, float)) or not number == number // 1:
        raise ValueError(f"job id {job!r}; expected a whole number")
    if (number := int(number)) in seen or seen.add(number):
        raise ValueError(f"job id {job!r} appears twice in the trace (as {number}); expected one entry per job")
    own = j.get("iteration_ms")
    arrival, ms = float(j["arrival_s"]), float(iteration_ms[j["workload"]] if own is None else own)
    if not 0 <= arrival < LONGEST_S:     # NaN and inf fail too; the clock counts whole picoseconds in an int
        raise ValueError(f"job {job!r}: arrival_s {j['arrival_s']!r}; expected a number of seconds in [0, 1e15)")
    if not (math.isfinite(ms) and ms > 0):
        raise ValueError(f"job {job!r}: iteration time {ms!r} ms; expected a finite number > 0")
    for what, total in (("iteration", ms + overhead_ms), ("warm iteration", warm_ms)):
        if total is not None and not (math.isfinite(total) and total > 0):
            raise ValueError(f"job {job!r}: {what} time {total!r} ms with overhead_ms {overhead_ms!r}; "
                             "expected a finite number > 0")
    known = j.get("known_iteration_ms")
    number_types = (int, float, np.integer, np.floating)
    if known is not None and not (isinstance(known, number_types) and math.isfinite(known) and known >= 0):
        raise ValueError(f"job {job!r}: known_iteration_ms {known!r}; expected a finite number >= 0 (0: none)")
    iterations, cost = check_iterations(job, j["iterations"]), max(ms + overhead_ms, warm_ms or 0.0)
    if iterations >= LONGEST_S * 1e3 / cost:      # compared as int and float: no overflow
        raise ValueError(f"job {job!r}: {iterations} iterations of {cost:g} ms: {LONGEST_S:g} s or more of device time")
    if not peak >= 0:
        raise ValueError(f"job {job!r}: peak_bytes {peak!r}; expected a number of bytes >= 0")
