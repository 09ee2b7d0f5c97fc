"""Numba kernel for the simulator's FAIR policy (see simulator): one iteration at a time, the
job with the least device time used first, from a binary heap of job slots.

Jobs are slots ``0..n-1`` into plain arrays: ``used`` (device time used, whole picoseconds),
``ms`` (``used`` in ms as a float, the heap's first key), ``done`` and ``total`` (iterations),
``cost`` and ``warm`` (one iteration, picoseconds; ``warm`` is taken right after the same
job's own iteration, 0: none), ``arrival`` (s) and ``job_id``. The heap orders slots by
``(ms, arrival, job_id)`` compared as Python compares tuples, the order of
:class:`~impls.salus.core.policies.FAIR`; job ids are unique, so the order is total and any
heap pops the same sequence as the simulator's ``heapq`` did.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

TICKS_PER_MS = 1_000_000_000
_EXACT = 1 << 53    # every int64 below this is a float64 exactly


@njit(cache=True)
def ms_of_ticks(ticks):
    """``ticks / 10**9`` (ticks: whole picoseconds, 0 <= ticks < 2**63) as a float64 in ms,
    rounded as Python's ``int / int`` rounds it: to the nearest float, ties to even, also
    above 2**53 where converting ``ticks`` to a float first would round twice."""
    if ticks < _EXACT:
        return np.float64(ticks) / 1e9
    q = ticks // TICKS_PER_MS           # >= 2**23: the result has at most 29 fraction bits
    r = ticks - q * TICKS_PER_MS
    b = 0
    x = q
    while x > 1:
        x >>= 1
        b += 1
    s = 52 - b                          # q << s has 53 bits
    num = r << s                        # < 2**30 * 2**29
    n = num // TICKS_PER_MS
    rem = num - n * TICKS_PER_MS
    m = (q << s) + n                    # the mantissa rounded down; at most 2**53 after rounding
    if 2 * rem > TICKS_PER_MS or (2 * rem == TICKS_PER_MS and (m & 1) == 1):
        m += 1
    return math.ldexp(np.float64(m), -s)


@njit(cache=True, inline="always")
def _before(a, b, ms, arrival, job_id):
    """True when slot ``a`` comes before slot ``b``: (ms, arrival, job_id) as tuples compare."""
    if ms[a] != ms[b]:
        return ms[a] < ms[b]
    if arrival[a] != arrival[b]:
        return arrival[a] < arrival[b]
    return job_id[a] < job_id[b]


@njit(cache=True)
def _push(heap, n, slot, ms, arrival, job_id):
    """Add ``slot`` to the heap of ``n`` slots in ``heap[:n]``; returns the new size."""
    k = n
    heap[k] = slot
    while k > 0:
        parent = (k - 1) >> 1
        if not _before(heap[k], heap[parent], ms, arrival, job_id):
            break
        heap[k], heap[parent] = heap[parent], heap[k]
        k = parent
    return n + 1


@njit(cache=True)
def _sift_down(heap, n, ms, arrival, job_id):
    """Restore the order of ``heap[:n]`` after the key of its first slot grew (or it was replaced)."""
    k = 0
    while True:
        child = 2 * k + 1
        if child >= n:
            break
        if child + 1 < n and _before(heap[child + 1], heap[child], ms, arrival, job_id):
            child += 1
        if not _before(heap[child], heap[k], ms, arrival, job_id):
            break
        heap[k], heap[child] = heap[child], heap[k]
        k = child


@njit(cache=True)
def fair_run(heap, size, fresh, n_fresh, used, ms, done, total, cost, warm, arrival, job_id,
             started, started_slot, started_at, next_arrival, last):
    """Run FAIR from elapsed time 0 until a job completes or the elapsed time reaches
    ``next_arrival`` (picoseconds from now; the boundary at or after an arrival).

    First adds the ``n_fresh`` slots ``fresh[:n_fresh]`` (just admitted) to the heap
    ``heap[:size[0]]``; then, each iteration, runs the first slot, charges it ``warm`` when
    ``last`` (the slot whose iteration the device ran before; -1: none) is itself and it has
    one, else ``cost``, and puts it back in order unless it is done. Updates ``used``, ``ms``,
    ``done``, ``size[0]`` in place; a slot's first iteration sets ``started`` and is listed in
    ``started_slot``/``started_at`` (its start, picoseconds from now).

    Returns ``(elapsed, last, iterations, finished, n_started)``: picoseconds run, the slot
    that ran last, iterations run, the slot that completed (-1: none; it has left the heap),
    and how many slots started. The caller keeps ``elapsed`` below 2**63 (the sum of every
    job's iterations at its dearer cost is).
    """
    n = size[0]
    for f in range(n_fresh):
        n = _push(heap, n, fresh[f], ms, arrival, job_id)
    elapsed = 0
    count = 0
    n_started = 0
    finished = -1
    while n > 0:
        i = heap[0]                 # stays first in the heap while it runs: one sift after
        if not started[i]:
            started[i] = True
            started_slot[n_started] = i
            started_at[n_started] = elapsed
            n_started += 1
        ticks = warm[i] if last == i and warm[i] != 0 else cost[i]
        elapsed += ticks
        last = i
        used[i] += ticks
        ms[i] = ms_of_ticks(used[i])
        done[i] += 1
        count += 1
        if done[i] >= total[i]:
            finished = i
            n -= 1
            heap[0] = heap[n]
            _sift_down(heap, n, ms, arrival, job_id)
            break
        _sift_down(heap, n, ms, arrival, job_id)
        if elapsed >= next_arrival:
            break
    size[0] = n
    return elapsed, last, count, finished, n_started
