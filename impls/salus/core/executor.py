"""The Salus-style executor: one process, every admitted job resident, iteration-granular switching.

Longer than 400 lines: admission, the run loop, failure handling and the checks of the
submissions all read and write one executor's records; apart, they would pass them around.

:class:`Executor` keeps the model, optimizer state and data of every admitted job
on the device at once and, at every iteration boundary, asks its policy which job
(or, for PACK, which jobs) runs next. Switching jobs copies nothing: it is another ``job.step()``.

Admission: jobs arrive (``Submission.arrival``, seconds after the run starts) and
are admitted in arrival order while the sum of admitted jobs' measured peak bytes
stays within ``memory_budget_bytes`` (head-of-line, by design, as the simulator of
:mod:`impls.salus.core.simulator` models it: a job that does not fit waits, and the
jobs behind it wait too, so a large job is never starved by smaller ones behind it).
Under lanes the lane manager replaces the sum and admission follows Salus's
``processRequests`` (:attr:`Executor.head_of_line` False): the waiting jobs are tried
in arrival order and each one that fits is admitted, a waiting job not blocking those
behind it. A job that could not be admitted even on an empty device
(:meth:`Executor._never_fits`: its peak alone exceeds the budget; under lanes, no lane
could ever hold it) fails at once, alone.

Failures: an exception from a job's iteration (a CUDA ``OutOfMemoryError`` or any
other) marks that job failed with the error, waits for its lane's queued work, drops its
tensors (the traceback's frames too), frees the memory (``empty_cache`` on CUDA) and
returns its budget; the others keep running.

Streams: a job taking a PACK lane (a CUDA stream) orders that stream after the device's
current stream (``order_lane``), where the job was built and warmed.

Timing: each iteration is timed by the device's timer (CUDA events synchronised at
the iteration boundary; wall clock on CPU). JCTs are host wall-clock seconds. An
iteration ends (its log entry's ``end_s``, and its job's finish when it is the last) at
its own end, not at its round's: when the host returns from it (one at a time, or on a
host thread), or, for PACK's iterations on CUDA streams, at its device start (its host
start, or the end of the iteration before it on its stream: a lane's jobs share one) plus
its device time, never later than the moment the executor read its timer.
"""
from __future__ import annotations

import math

import dataclasses
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from impls.salus.core.devices import get_device
from impls.salus.core.policies import Policy, get_policy
from impls.salus.core.trace_entries import check_iterations


def _drop_tracebacks(error: BaseException) -> None:
    """Clear the locals of the frames ``error``'s traceback holds and drop the traceback, for
    it and every exception in its ``__cause__`` / ``__context__`` chain, so the tensors a
    failing step held are freed with the job, not when the exception object dies."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        error = todo.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        traceback.clear_frames(error.__traceback__)
        error.__traceback__ = None
        todo += [error.__cause__, error.__context__]


@dataclasses.dataclass
class Submission:
    """A job to run: ``job`` is a built :class:`~impls.salus.core.workloads.Job` or a callable making one.

    ``peak_bytes`` is the job's measured peak (admission); ``iteration_ms_prior`` is the
    profiled iteration time SRTF uses before the job has run an iteration of its own.
    """
    job: Any
    arrival: float = 0.0
    peak_bytes: int = 0
    iteration_ms_prior: float = 0.0
    workload: str | None = None
    job_id: int | None = None
    iterations: int | None = None


@dataclasses.dataclass
class JobRecord:
    """The executor's bookkeeping for one job (what policies see: :class:`~impls.salus.core.policies.JobView`)."""
    job_id: int
    workload: str
    arrival: float
    total_iterations: int
    peak_bytes: int
    iteration_ms_prior: float
    job: Any = None
    iterations_done: int = 0
    device_ms_used: float = 0.0
    status: str = "pending"  # pending | running | done | failed
    admitted_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    error_trace: str | None = None
    lane: Any = None

    @property
    def remaining_iterations(self) -> int:
        return max(0, self.total_iterations - self.iterations_done)

    @property
    def iteration_ms_estimate(self) -> float:
        if self.iterations_done:
            return self.device_ms_used / self.iterations_done
        return self.iteration_ms_prior

    def summary(self) -> dict:
        jct = None if self.finished_at is None or self.status == "failed" else self.finished_at - self.arrival
        return {
            "job_id": self.job_id, "workload": self.workload, "status": self.status,
            "error": self.error, "arrival_s": self.arrival, "admitted_s": self.admitted_at,
            "start_s": self.started_at, "finish_s": self.finished_at, "jct_s": jct,
            "iterations": self.total_iterations, "iterations_done": self.iterations_done,
            "device_ms": self.device_ms_used,
            "mean_iteration_ms": self.device_ms_used / self.iterations_done if self.iterations_done else None,
            "peak_bytes": self.peak_bytes,
        }


class Executor:
    """Run submissions under ``policy`` on ``device`` (``"cpu"``, ``"cuda"`` or a device object).

    ``clock``/``sleep`` are injectable (host seconds) for tests; ``log_iterations``
    keeps one entry per iteration (job, start/end, device ms) for the
    switching-latency measurement. ``host_workers`` > 1 lets a concurrent policy
    (PACK) run the chosen jobs of different lanes at once on a device without
    streams (the CPU): each lane's iterations go to one of that many host threads,
    the CPU's counterpart of a lane's CUDA stream (torch releases the GIL inside
    its ops). The default, 1, interleaves them on the calling thread.

    ``head_of_line`` (class attribute): True, a waiting job that does not fit blocks
    the ones behind it (the peak-sum budget); False, they are tried past it (lanes).
    """

    head_of_line = True

    def __init__(self, policy: str | Policy = "fifo", device: Any = "cpu",
                 memory_budget_bytes: int | None = None, clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep, log_iterations: bool = False,
                 host_workers: int = 1):
        if int(host_workers) < 1:
            raise ValueError(f"host_workers must be >= 1, got {host_workers}")
        if memory_budget_bytes is not None and not memory_budget_bytes >= 0:
            raise ValueError(f"memory_budget_bytes {memory_budget_bytes!r}; expected a number of bytes >= 0 or None")
        self.host_workers = int(host_workers)
        self._pool: ThreadPoolExecutor | None = None
        self.policy = get_policy(policy)
        self.device = get_device(device, clock)
        self.memory_budget_bytes = memory_budget_bytes
        self.clock = clock
        self.sleep = sleep
        self.log_iterations = log_iterations
        self.iteration_log: list[dict] = []
        self.records: list[JobRecord] = []
        self.active: list[JobRecord] = []
        self.used_bytes = 0
        self._t0 = 0.0
        self._busy_s = 0.0
        self._idle_s = 0.0
        self._lanes: list[Any] = []

    # ------------------------------------------------------------ admission

    def _fits(self, record: JobRecord) -> bool:
        return self.memory_budget_bytes is None or self.used_bytes + record.peak_bytes <= self.memory_budget_bytes

    def _never_fits(self, record: JobRecord) -> str | None:
        """Return why ``record`` could not be admitted even with no job admitted (its error),
        or None when an empty device admits it (``_fits`` is then true with nothing admitted)."""
        if self.memory_budget_bytes is not None and record.peak_bytes > self.memory_budget_bytes:
            return f"peak {record.peak_bytes} B exceeds the memory budget {self.memory_budget_bytes} B"
        return None

    def _admit(self, record: JobRecord, sub: Submission, now: float) -> None:
        try:
            job = sub.job() if callable(sub.job) and not hasattr(sub.job, "step") else sub.job
        except Exception as err:  # noqa: BLE001 - a job that cannot even be built fails alone
            self._fail(record, err, now)
            return
        record.job = job
        if sub.iterations is None and record.total_iterations <= 0:   # a factory's count, known once built
            record.total_iterations = int(getattr(job, "total_iterations", 0))
        if self.device.has_streams and self.policy.concurrent:
            record.lane = self._free_lane()
            if record.lane is not None:   # the job was built (and warmed) on the current stream
                self.device.order_lane(record.lane)
        record.status = "running"
        record.admitted_at = now
        self.used_bytes += record.peak_bytes
        self.active.append(record)
        if record.total_iterations <= 0:
            self._finish(record, now)

    def _free_lane(self):
        """The first stream no active job runs on (a new one when every stream is taken):
        each running job has a stream of its own, whatever order earlier jobs finished in."""
        taken = {id(r.lane) for r in self.active if r.lane is not None}
        for lane in self._lanes:
            if id(lane) not in taken:
                return lane
        self._lanes.append(self.device.new_lane())
        return self._lanes[-1]

    # ------------------------------------------------------------ completion

    def _release(self, record: JobRecord) -> None:
        if record in self.active:
            self.active.remove(record)
            self.used_bytes -= record.peak_bytes
        job, record.job = record.job, None
        if job is not None and hasattr(job, "release"):
            job.release()
        del job

    def _finish(self, record: JobRecord, now: float) -> None:
        record.status = "done"
        record.finished_at = now
        self._release(record)

    def _fail(self, record: JobRecord, error: BaseException, now: float) -> None:
        """Mark ``record`` failed with ``error`` (its text in ``error``, its traceback's text in
        ``error_trace``), wait for the work queued on its lane, drop the traceback (the
        failing step's frames and the tensors their locals hold), release the job, then
        free the device's cached memory."""
        kind = "out of memory" if self.device.is_oom(error) else type(error).__name__
        record.status = "failed"
        record.error = f"{kind}: {error}"
        record.finished_at = now
        record.error_trace = "".join(traceback.format_exception(error))
        _drop_tracebacks(error)
        del error
        if record.lane is not None:   # its kernels may still be queued on the lane: do not free under them
            try:
                self.device.synchronize_lane(record.lane)
            except Exception as err:  # noqa: BLE001 - an asynchronous CUDA error surfaces here too
                record.error_trace += f"\nwaiting for its lane also failed: {type(err).__name__}: {err}\n"
                _drop_tracebacks(err)
        self._release(record)
        self.device.release_memory()

    # ------------------------------------------------------------ iterations

    def run_round(self, chosen: Sequence[JobRecord]) -> None:
        """Run one iteration of each chosen job (concurrently on lanes when the device has streams,
        or on host threads with ``host_workers`` > 1)."""
        device = self.device
        if (self.host_workers > 1 and not device.has_streams and self.policy.concurrent
                and len(chosen) > 1):
            self._run_round_on_host_threads(chosen)
            return
        launched: list[tuple[JobRecord, Any, float]] = []
        for record in chosen:
            _, timer, host_start, _, err = self._step(record)
            if err is not None:
                self._fail(record, err, self.clock() - self._t0)
                continue
            if not (device.has_streams and self.policy.concurrent):
                self._complete(record, timer, host_start)
            else:
                launched.append((record, timer, host_start))
        # each at its own end; a stream runs its jobs (a lane's) in launch order
        stream_free: dict[int | None, float] = {}
        for record, timer, host_start in launched:
            stream = None if record.lane is None else id(record.lane)
            end = self._complete(record, timer, host_start, on_stream=True, after=stream_free.get(stream))
            if end is not None:
                stream_free[stream] = end

    def _step(self, record: JobRecord) -> tuple[JobRecord, Any, float, float, Exception | None]:
        """Launch one iteration of ``record``'s job in its lane; (record, its timer, host
        start and host return in run seconds, the exception it raised or None). On a device
        without streams the host return is the iteration's end."""
        timer = self.device.timer(record.lane)
        host_start = self.clock() - self._t0
        try:
            with self.device.lane_context(record.lane):
                timer.start()
                record.job.step()
                timer.stop()
        except Exception as err:  # noqa: BLE001 - any failure (incl. OOM) fails this job only
            return record, timer, host_start, self.clock() - self._t0, err
        return record, timer, host_start, self.clock() - self._t0, None

    def _run_round_on_host_threads(self, chosen: Sequence[JobRecord]) -> None:
        """One iteration of each chosen job; the jobs of one lane in turn on one host thread,
        the lanes at once (at most ``host_workers``); completion and failure in ``chosen``'s order."""
        lanes: dict[Any, list[JobRecord]] = {}
        for i, record in enumerate(chosen):
            lanes.setdefault(i if record.lane is None else id(record.lane), []).append(record)

        def run_lane(records: list[JobRecord]) -> list[tuple[JobRecord, Any, float, float, Exception | None]]:
            return [self._step(record) for record in records]

        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.host_workers, thread_name_prefix="lane")
        futures = [self._pool.submit(run_lane, records) for records in lanes.values()]
        outcome = {id(item[0]): item for future in futures for item in future.result()}
        for record in chosen:   # each at its own iteration's end, not at the round's
            _, timer, host_start, host_end, err = outcome[id(record)]
            if err is not None:
                self._fail(record, err, host_end)
            else:
                self._complete(record, timer, host_start, host_end)

    def close(self) -> None:
        """Stop the host threads (``run`` does it at the end)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _complete(self, record: JobRecord, timer, host_start: float, host_end: float | None = None,
                  on_stream: bool = False, after: float | None = None) -> float | None:
        """Count one finished iteration of ``record`` that started at ``host_start`` (run seconds);
        return its end (run seconds), or None when reading its timer failed the job.

        Its end: ``host_end`` when given (its host return); else, with ``on_stream``
        (launched on a stream beside other lanes' iterations), ``min(now, max(host_start,
        after) + device ms / 1e3)``, since the executor may read its timer only after a
        longer iteration of another lane, and the device starts it only once the iteration
        launched before it on the same stream has ended (``after``, None when none was);
        else now, after its timer is read. The end is never before ``host_start`` (device
        ms >= 0) and never after now. The iteration log's start is when the device began it.
        """
        try:
            ms = timer.elapsed_ms()  # CUDA: waits for the iteration's end event
        except Exception as err:  # noqa: BLE001 - asynchronous CUDA errors surface here
            self._fail(record, err, self.clock() - self._t0)
            return None
        device_start, now = host_start, host_end if host_end is not None else self.clock() - self._t0
        if host_end is None and on_stream:
            device_start = host_start if after is None else max(host_start, after)
            now = min(now, device_start + ms / 1e3)
            device_start = min(device_start, now)
        record.iterations_done += 1
        record.device_ms_used += ms
        if record.started_at is None:
            record.started_at = host_start
        if self.log_iterations:
            self.iteration_log.append({"job_id": record.job_id, "start_s": device_start, "end_s": now, "device_ms": ms})
        if record.iterations_done >= record.total_iterations:
            self._finish(record, now)
        return now

    # ------------------------------------------------------------ the loop

    def _records_for(self, submissions: Sequence[Submission]) -> list[tuple[JobRecord, Submission]]:
        """Return (record, submission) pairs in arrival order. Raises ValueError, before any job
        is admitted, for an arrival that is not a finite number >= 0 (a NaN one would never
        arrive), a prior iteration time that is negative or not finite, a negative peak, an
        iteration count that is not a whole number >= 0, or a job id given twice (or already
        in :attr:`records`)."""
        pairs = []
        seen = {r.job_id for r in self.records}
        for i, sub in enumerate(submissions):
            if not (math.isfinite(float(sub.arrival)) and sub.arrival >= 0):
                raise ValueError(f"submission {sub.job_id!r}: arrival {sub.arrival!r}; expected a finite number of "
                                 "seconds >= 0")
            if not (math.isfinite(float(sub.iteration_ms_prior)) and sub.iteration_ms_prior >= 0):
                raise ValueError(f"submission {sub.job_id!r}: iteration_ms_prior {sub.iteration_ms_prior!r}; "
                                 "expected a finite number >= 0")
            job = sub.job if hasattr(sub.job, "step") else None
            job_id = sub.job_id if sub.job_id is not None else getattr(job, "job_id", i)
            if job_id in seen:
                raise ValueError(f"job id {job_id!r} appears twice in the submissions; expected one per job")
            seen.add(job_id)
            if not sub.peak_bytes >= 0:
                raise ValueError(f"job {job_id!r}: peak_bytes {sub.peak_bytes!r}; expected a number of bytes >= 0")
            iterations = sub.iterations if sub.iterations is not None else getattr(job, "total_iterations", 0)
            record = JobRecord(
                job_id=job_id, workload=sub.workload or getattr(job, "workload", "job"),
                arrival=float(sub.arrival), total_iterations=check_iterations(job_id, iterations),
                peak_bytes=int(sub.peak_bytes), iteration_ms_prior=float(sub.iteration_ms_prior))
            pairs.append((record, sub))
        pairs.sort(key=lambda p: (p[0].arrival, p[0].job_id))
        return pairs

    def start(self) -> None:
        """Start the run clock (``run`` calls it; call it yourself to drive ``run_round`` by hand),
        after the device has finished the work queued before it (jobs warmed when built: on a
        GPU that work is asynchronous, and the first timed iteration would wait for it; a
        device without ``synchronize`` queues nothing to wait for)."""
        synchronize = getattr(self.device, "synchronize", None)
        if synchronize is not None:
            synchronize()
        self._t0 = self.clock()

    def admit_now(self, submissions: Sequence[Submission]) -> list[JobRecord]:
        """Admit ``submissions`` at once, ignoring arrival times (for hand-driven runs); checked
        first as in :meth:`run`."""
        records = []
        for record, sub in self._records_for(submissions):
            self.records.append(record)
            self._admit(record, sub, self.clock() - self._t0)
            records.append(record)
        return records

    def _admit_waiting(self, waiting: list[tuple[JobRecord, Submission]], now: float) -> None:
        """Try the waiting (record, submission) pairs in arrival order at ``now`` (run seconds),
        removing from ``waiting`` each one :meth:`_never_fits` (failed) and each one that fits
        (admitted); with :attr:`head_of_line` stop at the first that does not fit, else go on
        past it. ``waiting`` keeps the rest, in arrival order."""
        i = 0
        while i < len(waiting):
            record, sub = waiting[i]
            reason = self._never_fits(record)
            if reason is not None:
                waiting.pop(i)
                self._fail(record, MemoryError(reason), now)
            elif self._fits(record):
                waiting.pop(i)
                self._admit(record, sub, now)
            elif self.head_of_line:
                return
            else:
                i += 1

    def run(self, submissions: Sequence[Submission]) -> dict:
        """Run every submission to completion or failure; return :meth:`results`. Raises
        ValueError, before anything runs, for a submission :meth:`_records_for` refuses."""
        pending = self._records_for(submissions)
        self.records.extend(r for r, _ in pending)
        waiting: list[tuple[JobRecord, Submission]] = []
        self.start()
        pending.reverse()  # pop() from the end = earliest arrival
        while pending or waiting or self.active:
            now = self.clock() - self._t0
            while pending and pending[-1][0].arrival <= now:
                waiting.append(pending.pop())
            self._admit_waiting(waiting, now)
            if not self.active:
                if pending:
                    idle_from = self.clock()
                    self.sleep(max(0.0, pending[-1][0].arrival - (idle_from - self._t0)))
                    self._idle_s += self.clock() - idle_from
                    continue
                if waiting:  # cannot happen: an empty device admits every job _never_fits let wait
                    raise RuntimeError(f"admission deadlock: job {waiting[0][0].job_id} does not fit "
                                       f"an empty device, yet _never_fits gave no reason")
                break
            chosen = self.policy.choose(self.active)
            if not chosen:
                raise RuntimeError(f"policy {self.policy.name} chose no job among {len(self.active)} admitted")
            busy_from = self.clock()
            self.run_round(chosen)
            self._busy_s += self.clock() - busy_from
        self.close()
        return self.results()

    def results(self) -> dict:
        """Plain data: per-job summaries (``jct_s`` None for a failed job), makespan, busy/idle
        time and the loop's own overhead. ``avg_jct_s`` is over the done jobs, a 0-iteration one
        included (done at admission: its JCT is its wait for admission), as in the simulator;
        ``makespan_s`` is the latest finish (run seconds) of a done job, 0.0 when none is done
        (a failed job's time of failure is no finish), as in the simulator."""
        wall = self.clock() - self._t0
        jobs = [r.summary() for r in sorted(self.records, key=lambda r: r.job_id)]
        done = [j for j in jobs if j["status"] == "done"]
        iterations = sum(j["iterations_done"] for j in jobs)
        finishes = [j["finish_s"] for j in done]
        overhead = max(0.0, wall - self._busy_s - self._idle_s)
        return {
            "policy": self.policy.name, "device": self.device.kind,
            "jobs": jobs,
            "done": len(done), "failed": [j["job_id"] for j in jobs if j["status"] == "failed"],
            "avg_jct_s": sum(j["jct_s"] for j in done) / len(done) if done else None,
            "makespan_s": max(finishes) if finishes else 0.0,
            "wall_s": wall, "busy_s": self._busy_s, "idle_s": self._idle_s,
            "overhead_s": overhead, "iterations": iterations,
            "overhead_us_per_iteration": overhead / iterations * 1e6 if iterations else None,
        }
