"""Discrete-event simulator of :class:`~impls.salus.core.executor.Executor`, for paper-sized traces.

It replays the executor's loop with virtual time, counted in whole picoseconds so that
sums of iterations are exact at any clock time (an iteration takes its time rounded to the
picosecond, an arrival its time rounded to the nanosecond): arrivals are noticed at the
first iteration boundary at or after them; admission is head-of-line in arrival order under the
same memory budget; the *same* policy objects choose; one iteration of a job takes
``iteration_ms[workload]`` (measured on this device) plus ``overhead_ms`` of executor
bookkeeping, or ``warm_iteration_ms[workload]`` when the device's previous iteration
was the same job's (run back to back, a job finds its weights in the CPU's caches).
PACK rounds take the sum of their iterations (``pack="interleave"``, the CPU executor) or,
as an idealised upper bound for stream lanes, their maximum (``pack="concurrent"``).

Decisions that cannot change are advanced in one step, so hundreds of long jobs
simulate in seconds, with the same result as iteration by iteration: FIFO runs the
chosen job to the next arrival boundary or its completion, and SRTF as well unless the
job's own remaining time, ranked like the executor's by its mean iteration so far (a job
with a known iteration time: by that, and it only falls), overtakes another's first
(:func:`srtf_lead`); PACK repeats identical rounds until a job
completes or an arrival is noticed. FAIR, whose choice changes nearly every iteration, runs
iteration by iteration in a numba kernel (:mod:`~impls.salus.core.simulator_kernels`),
least-used first from a heap, to a job's completion or an arrival. The keyed policies' choices
(:attr:`~impls.salus.core.policies.Policy.keyed`: FIFO, SRTF, and FAIR outside its kernel) come
from a heap of the admitted jobs by the policy's key, which changes only for the job that ran, so a
decision costs the log of the queue, not its length.
"""
from __future__ import annotations

import dataclasses
import heapq
from collections import deque
from collections.abc import Mapping, Sequence

import numpy as np

from impls.salus.core import simulator_kernels
from impls.salus.core.policies import FAIR, FIFO, SRTF, Policy, get_policy
from impls.salus.core.trace_entries import check_job

TICKS_PER_S = 10 ** 12       # the clock counts whole picoseconds
TICKS_PER_MS = 10 ** 9


def _ticks(seconds: float) -> int:
    """An arrival of ``seconds`` on the simulator's clock (whole picoseconds), taken to the
    nearest nanosecond: a float arrival carries its own rounding (about 15 ps at 18 h of
    virtual time), which must not move it across an iteration boundary it lies on."""
    return round(seconds * 10 ** 9) * 1000


def _ms_ticks(ms: float) -> int:
    """An iteration of ``ms`` ms on the clock: whole picoseconds, at least 1 (time always advances)."""
    return max(1, round(ms * 10 ** 9))


@dataclasses.dataclass(eq=False)   # a job is itself: found and removed by identity
class SimJob:
    job_id: int
    workload: str
    arrival: float
    total_iterations: int
    iteration_ms: float
    peak_bytes: int = 0
    warm_ms: float = 0.0     # an iteration right after one of its own (0: iteration_ms)
    known_ms: float = 0.0    # SRTF's fixed iteration time for this job (0: its mean so far)
    iterations_done: int = 0
    device_ms_used: float = 0.0   # ``device_ticks_used`` in ms: equal tick sums give equal floats
    device_ticks_used: int = 0
    admitted_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    status: str = "pending"
    arrival_ticks: int = 0   # ``arrival`` on the clock (set from it)
    iteration_ticks: int = 0  # ``iteration_ms`` on the clock (set from it)
    warm_ticks: int = 0      # ``warm_ms`` on the clock (set from it; 0: none)
    known_ticks: int = 0     # ``known_ms`` on the clock (set from it; 0: none)

    def __post_init__(self) -> None:
        self.arrival_ticks = _ticks(self.arrival)
        self.iteration_ticks = _ms_ticks(self.iteration_ms)
        self.warm_ticks = _ms_ticks(self.warm_ms) if self.warm_ms else 0
        self.known_ticks = _ms_ticks(self.known_ms) if self.known_ms else 0

    def use(self, ticks: int) -> None:
        """Add ``ticks`` of device time (whole picoseconds, summed exactly; FAIR ranks by it)."""
        self.device_ticks_used += ticks
        self.device_ms_used = self.device_ticks_used / TICKS_PER_MS

    @property
    def exact_remaining_ms(self) -> float:
        """:attr:`iteration_ms_estimate` x iterations left, computed from the exact tick sums
        (SRTF ranks by it: two jobs with the same remaining time get the same float)."""
        left, done = self.remaining_iterations, self.iterations_done
        if self.known_ticks:
            return self.known_ticks * left / TICKS_PER_MS
        return (self.device_ticks_used * left / done if done else self.iteration_ticks * left) / TICKS_PER_MS

    def cost_ticks(self, previous: "SimJob | None") -> int:
        """One iteration on the clock after ``previous``'s: the warm time right after its own, where given."""
        return self.warm_ticks if previous is self and self.warm_ticks else self.iteration_ticks

    def seconds(self, ticks: int) -> float:
        """Clock ``ticks`` as seconds for this job's record: never before its arrival (the
        tick of its arrival can print a unit in the last place below the arrival given)."""
        return max(ticks / TICKS_PER_S, self.arrival)

    @property
    def remaining_iterations(self) -> int:
        return self.total_iterations - self.iterations_done

    @property
    def iteration_ms_estimate(self) -> float:
        """What SRTF ranks by (ms): the job's ``known_ms`` where given (its length is known, and
        the switches it pays are not counted); else, as in the executor, the mean of its
        iterations so far, or its iteration time before it has run one."""
        if self.known_ms:
            return self.known_ms
        return self.device_ms_used / self.iterations_done if self.iterations_done else self.iteration_ms


class _FairRun:
    """FAIR's iterations for :func:`simulate`, run by :func:`simulator_kernels.fair_run` over
    arrays of every job (slot = position in ``jobs``). The jobs' own usage fields are stale
    while it runs; :meth:`sync_all` writes them back (exact: the arrays hold the same ints)."""

    INT64_MAX = 2 ** 63 - 1

    @classmethod
    def fits(cls, jobs: Sequence[SimJob]) -> bool:
        """Whether the kernel's int64 arrays hold every value the run can reach: job ids, and
        every elapsed and used time, which are at most all the jobs' iterations at their dearer
        cost (picoseconds). Else :func:`simulate` steps FAIR one iteration at a time in Python."""
        work = sum(j.total_iterations * max(j.iteration_ticks, j.warm_ticks) for j in jobs)
        return work < cls.INT64_MAX and all(-cls.INT64_MAX <= j.job_id <= cls.INT64_MAX for j in jobs)

    def __init__(self, jobs: Sequence[SimJob]) -> None:
        self.jobs, self.slot, self.last, self.n_fresh = list(jobs), {id(j): k for k, j in enumerate(jobs)}, -1, 0
        self.heap, self.fresh, self.used, self.done, self.started_slot, self.started_at = (
            np.zeros(len(jobs), np.int64) for _ in range(6))
        self.size, self.ms, self.started = np.zeros(1, np.int64), np.zeros(len(jobs)), np.zeros(len(jobs), np.bool_)
        self.total, self.cost, self.warm, self.job_id = (np.array([getattr(j, name) for j in jobs], np.int64) for name in
                                                         ("total_iterations", "iteration_ticks", "warm_ticks", "job_id"))
        self.arrival = np.array([j.arrival for j in jobs], np.float64)

    def admit(self, job: SimJob) -> None:
        """Queue ``job`` (admitted, with iterations to run) for the heap at the next :meth:`run`."""
        self.fresh[self.n_fresh] = self.slot[id(job)]
        self.n_fresh += 1

    def run(self, t: int, next_arrival: int | None) -> tuple[int, SimJob | None, int]:
        """Run from clock ``t`` until a job completes or the clock reaches ``next_arrival``
        (None: no more arrivals), both whole picoseconds; sets the started jobs' ``started_at``.
        Returns (the clock then, the job that completed or None, iterations run)."""
        until = self.INT64_MAX if next_arrival is None else min(next_arrival - t, self.INT64_MAX)
        elapsed, self.last, ran, finished, n_started = simulator_kernels.fair_run(
            self.heap, self.size, self.fresh, self.n_fresh, self.used, self.ms, self.done, self.total,
            self.cost, self.warm, self.arrival, self.job_id, self.started, self.started_slot,
            self.started_at, until, self.last)
        self.n_fresh = 0
        for k in range(n_started):
            job = self.jobs[self.started_slot[k]]
            job.started_at = job.seconds(t + int(self.started_at[k]))
        return t + int(elapsed), None if finished < 0 else self.jobs[finished], int(ran)

    def sync_all(self) -> None:
        """Write the kernel's usage and iteration counts back to the jobs."""
        for k, job in enumerate(self.jobs):
            job.device_ticks_used = int(self.used[k])
            job.device_ms_used = job.device_ticks_used / TICKS_PER_MS
            job.iterations_done = int(self.done[k])


def sim_jobs(trace: Sequence[Mapping], iteration_ms: Mapping[str, float], peak_bytes: Mapping[str, int] | None,
             overhead_ms: float, pack: str, warm_iteration_ms: Mapping[str, float] | None) -> list[SimJob]:
    """The :class:`SimJob` of each trace entry, in trace order, as :func:`simulate` takes its
    arguments; ValueError (:func:`check_job`) or KeyError (a workload with no iteration time)."""
    peak_bytes = peak_bytes or {}
    warm = dict(warm_iteration_ms or {}) if pack == "interleave" else {}
    jobs = []
    seen: set[int] = set()
    for j in trace:
        own = j.get("iteration_ms")
        if own is None and j["workload"] not in iteration_ms:
            raise KeyError(f"no iteration time for workload {j['workload']!r} (job {j['job_id']})")
        warm_ms = None if own is not None or j["workload"] not in warm else float(warm[j["workload"]]) + overhead_ms
        peak = j.get("peak_bytes", peak_bytes.get(j["workload"], 0))
        check_job(j, iteration_ms, seen, overhead_ms, warm_ms, peak)
        jobs.append(SimJob(int(j["job_id"]), j["workload"], float(j["arrival_s"]), int(j["iterations"]),
                           float(iteration_ms[j["workload"]] if own is None else own) + overhead_ms,
                           int(peak), warm_ms=warm_ms or 0.0, known_ms=float(j.get("known_iteration_ms") or 0.0)))
    return jobs


def simulate(trace: Sequence[Mapping], policy: str | Policy, iteration_ms: Mapping[str, float],
             memory_budget_bytes: int | None = None, peak_bytes: Mapping[str, int] | None = None,
             overhead_ms: float = 0.0, pack: str = "interleave", fast: bool = True,
             warm_iteration_ms: Mapping[str, float] | None = None) -> dict:
    """Simulate ``trace`` (dicts with job_id, workload, arrival_s, iterations) under ``policy``.

    A job's iteration takes ``iteration_ms[workload]``, or the job's own ``"iteration_ms"``
    when its trace entry has one that is not None (then that always), plus ``overhead_ms``
    (the sum must be > 0: ValueError); right after an iteration of the
    same job it takes ``warm_iteration_ms[workload]`` where given (``pack="interleave"``
    only). Its memory is ``"peak_bytes"`` or ``peak_bytes[workload]``. SRTF ranks a job by
    its mean iteration so far (before its first, its iteration time) x iterations left, as
    the executor does, or, where its entry has a ``"known_iteration_ms"`` that is not None or
    0, by that x iterations left at every decision (a job whose length is known: the
    switches it pays do not move its rank).

    ``fast`` advances PACK by whole runs of identical decisions and FAIR in a compiled kernel
    (same result as one iteration at a time in Python, which ``fast=False`` does, to check it).

    Returns the executor's result shape: ``{"policy", "jobs": [...], "avg_jct_s",
    "makespan_s", "failed", "iterations"}`` with per-job arrival/start/finish/jct (s; jct
    None for a failed job), and ``had_a_choice``: whether some decision found two or more
    admitted jobs with iterations left. Where none did, every decision had one job to run, so
    every policy runs this schedule (the flag is the trace's, whatever the policy). ``avg_jct_s`` is over the done jobs, a 0-iteration one included
    (done at admission: its JCT is its wait for admission), as in the executor; ``makespan_s``
    is the latest finish (s) of a done job, 0.0 when none is done (a failed job's time of
    failure is no finish), as in the executor.
    """
    policy = get_policy(policy)
    if pack not in ("interleave", "concurrent"):
        raise ValueError(f"pack must be 'interleave' or 'concurrent', got {pack!r}")
    if memory_budget_bytes is not None and not memory_budget_bytes >= 0:
        raise ValueError(f"memory_budget_bytes {memory_budget_bytes!r}; expected a number of bytes >= 0 or None")
    jobs = sim_jobs(trace, iteration_ms, peak_bytes, overhead_ms, pack, warm_iteration_ms)
    pending = sorted(jobs, key=lambda s: (s.arrival, s.job_id), reverse=True)
    waiting: deque[SimJob] = deque()
    active: dict[int, SimJob] = {}      # id(job) -> job, in order of admission
    used = 0
    t = 0                       # the clock, in whole picoseconds: sums of iterations are exact
    chunkable = isinstance(policy, (FIFO, SRTF))
    iterations = 0
    had_a_choice = False
    last: SimJob | None = None      # the job whose iteration the device ran last
    fair = _FairRun(jobs) if isinstance(policy, FAIR) and fast and _FairRun.fits(jobs) else None
    # the admitted jobs with iterations left, by the policy's key (its least is what choose() picks)
    ready: list[tuple[tuple, SimJob]] | None = [] if policy.keyed and fair is None else None

    def finish(job: SimJob, when: int, status: str = "done") -> None:
        nonlocal used
        job.finished_at, job.status = job.seconds(when), status
        if active.pop(id(job), None) is not None:
            used -= job.peak_bytes

    def ready_again(job: SimJob) -> None:
        if ready is not None and job.remaining_iterations > 0:
            heapq.heappush(ready, (policy.key(job), job))

    while pending or waiting or active:
        while pending and pending[-1].arrival_ticks <= t:
            waiting.append(pending.pop())
        while waiting:
            job = waiting[0]
            if memory_budget_bytes is not None and job.peak_bytes > memory_budget_bytes:
                waiting.popleft()
                finish(job, t, "failed")
                continue
            if memory_budget_bytes is not None and used + job.peak_bytes > memory_budget_bytes:
                break
            waiting.popleft()
            job.admitted_at, job.status = job.seconds(t), "running"
            used += job.peak_bytes
            active[id(job)] = job
            if job.total_iterations <= 0:
                finish(job, t)
            elif fair is not None:
                fair.admit(job)
            else:
                ready_again(job)
        if not active:
            if pending:
                t = max(t, pending[-1].arrival_ticks)
                continue
            break
        had_a_choice |= len(active) > 1     # admitted and not finished: each has iterations left
        if fair is not None:
            # FAIR: least-used first, in the kernel, until a job completes or an arrival is noticed
            t, done_job, ran = fair.run(t, pending[-1].arrival_ticks if pending else None)
            iterations += ran
            if done_job is not None:
                finish(done_job, t)
            continue
        chosen = [heapq.heappop(ready)[1]] if ready is not None else policy.choose(list(active.values()))
        if chunkable or (policy.concurrent and fast and len(chosen) == 1):
            # the job back to back: its first iteration after ``last``'s, the others warm
            job = chosen[0]
            first_ticks, rest_ticks = job.cost_ticks(last), job.cost_ticks(job)
            k = job.remaining_iterations
            if pending:  # stop at the first boundary at or after the next arrival
                gap = pending[-1].arrival_ticks - t
                k = min(k, 1 if gap <= first_ticks else 1 + -(-(gap - first_ticks) // rest_ticks))
            if isinstance(policy, SRTF):
                k = srtf_lead(job, ready[0][0] if ready else None, first_ticks, rest_ticks, k)
            if job.started_at is None:
                job.started_at = job.seconds(t)
            t += first_ticks + (k - 1) * rest_ticks
            job.iterations_done += k
            job.use(first_ticks + (k - 1) * rest_ticks)
            iterations += k
            last = job
            if job.remaining_iterations <= 0:
                finish(job, t)
            ready_again(job)
            continue
        if policy.concurrent and fast and len(chosen) > 1:
            # PACK: identical rounds until a job completes or an arrival is noticed; each
            # iteration follows another job's (with two or more), but the very first may
            # follow its own: it is ``shift`` shorter and everything after it earlier.
            durations = [j.iteration_ticks for j in chosen]
            round_ticks = sum(durations) if pack == "interleave" else max(durations)
            rounds = min(j.remaining_iterations for j in chosen)
            shift = chosen[0].cost_ticks(last) - durations[0]
            if pending:
                gap = pending[-1].arrival_ticks - t - shift
                rounds = min(rounds, max(1, -(-gap // round_ticks)))
            last_start = t + shift + (rounds - 1) * round_ticks
            offset = 0
            for i, (job, d) in enumerate(zip(chosen, durations)):
                if job.started_at is None:
                    job.started_at = job.seconds(t + offset + (shift if i else 0) if pack == "interleave" else t)
                offset += d
                job.iterations_done += rounds
                job.use(rounds * d + (shift if i == 0 else 0))
                iterations += rounds
                if job.remaining_iterations <= 0:
                    finish(job, last_start + (offset if pack == "interleave" else d))
            t = last_start + round_ticks
            last = chosen[-1]
            continue
        start = t
        ends = []
        for job in chosen:
            if job.started_at is None:
                job.started_at = job.seconds(t if pack == "interleave" else start)
            ticks = job.cost_ticks(last)
            last = job
            if pack == "interleave":
                t += ticks
                end = t
            else:
                end = start + ticks
            job.iterations_done += 1
            job.use(ticks)
            iterations += 1
            ends.append((job, end))
        if pack == "concurrent":
            t = max(e for _, e in ends)
        for job, end in ends:
            if job.remaining_iterations <= 0:
                finish(job, end)
            ready_again(job)

    if fair is not None:
        fair.sync_all()
    return {**summarize(policy.name, jobs, iterations), "had_a_choice": had_a_choice}


def srtf_lead(job: SimJob, best: tuple | None, first_ticks: int, rest_ticks: int, limit: int) -> int:
    """How many iterations in a row ``job``, SRTF's pick now, keeps the device (1 to ``limit``),
    against ``best``, the least :meth:`SRTF.key` of the other admitted jobs (None: none).

    Its first iteration costs ``first_ticks``, the rest ``rest_ticks`` (whole picoseconds).
    While it runs only its own remaining time moves (the others' are constant until the
    next arrival), and SRTF picks again after each iteration with the same key as
    :class:`~impls.salus.core.policies.SRTF` (:attr:`SimJob.exact_remaining_ms`, computed
    here the same way). Once its mean iteration time is at or above ``rest_ticks``, its
    remaining time only falls, so it keeps the device; below, it can rise, and iterations
    are checked one by one until even ``rest_ticks`` x the iterations left is below the best other.
    """
    if limit <= 1 or best is None or job.known_ticks:    # a known rank only falls as the job runs
        return max(1, limit)
    used, done, left = job.device_ticks_used + first_ticks, job.iterations_done + 1, job.remaining_iterations - 1
    for ran in range(1, limit):
        if (used * left / done / TICKS_PER_MS, job.arrival, job.job_id) > best:
            return ran
        if rest_ticks * done <= used or rest_ticks * left / TICKS_PER_MS < best[0]:
            return limit
        used, done, left = used + rest_ticks, done + 1, left - 1
    return limit


def summarize(policy_name: str, jobs: Sequence[SimJob], iterations: int) -> dict:
    rows = [{"job_id": j.job_id, "workload": j.workload, "status": j.status, "arrival_s": j.arrival,
             "admitted_s": j.admitted_at, "start_s": j.started_at, "finish_s": j.finished_at,
             "jct_s": None if j.finished_at is None or j.status == "failed" else j.finished_at - j.arrival,
             "iterations": j.total_iterations, "iterations_done": j.iterations_done,
             "device_ms": j.device_ms_used} for j in sorted(jobs, key=lambda j: j.job_id)]
    done = [r for r in rows if r["status"] == "done"]
    finishes = [r["finish_s"] for r in done]
    return {"policy": policy_name, "jobs": rows, "done": len(done),
            "failed": [r["job_id"] for r in rows if r["status"] == "failed"],
            "avg_jct_s": sum(r["jct_s"] for r in done) / len(done) if done else None,
            "makespan_s": max(finishes) if finishes else 0.0, "iterations": iterations}
