"""PACK on a device without streams, with host_workers > 1: lanes run at once on host threads."""
import threading
import time

import pytest

from impls.salus.core.executor import Executor, Submission


class BarrierJob:
    """Each iteration waits until ``barrier.parties`` iterations are in progress at once."""

    def __init__(self, job_id, barrier, iterations, fail_at=None):
        self.job_id, self.barrier, self.total_iterations = job_id, barrier, iterations
        self.workload = "barrier"
        self.fail_at = fail_at
        self.steps = 0
        self.threads = []      # the host thread of each iteration

    def step(self):
        self.threads.append(threading.get_ident())
        if self.fail_at is not None and self.steps == self.fail_at:
            raise RuntimeError("boom")
        self.barrier.wait()
        self.steps += 1

    def release(self):
        pass


def run_barrier_jobs(host_workers, n_jobs=3, iterations=4, timeout=5.0):
    barrier = threading.Barrier(n_jobs, timeout=timeout)
    jobs = [BarrierJob(i, barrier, iterations) for i in range(n_jobs)]
    ex = Executor("pack", "cpu", host_workers=host_workers)
    return ex.run([Submission(job) for job in jobs]), jobs


def test_lanes_on_host_threads_run_their_iterations_at_once():
    res, jobs = run_barrier_jobs(host_workers=3)
    assert res["failed"] == [] and res["done"] == 3
    assert all(j.steps == 4 for j in jobs)
    used = {t for j in jobs for t in j.threads}
    assert len(used) == 3 and threading.get_ident() not in used   # three host threads, not the caller


def test_interleaved_pack_runs_one_iteration_at_a_time():
    # the same jobs on one thread never meet at the barrier: each first iteration times out
    res, _ = run_barrier_jobs(host_workers=1, timeout=0.2)
    assert res["done"] == 0 and sorted(res["failed"]) == [0, 1, 2]


def test_jobs_of_one_lane_run_in_turn_on_one_thread():
    lane = object()
    jobs = [BarrierJob(i, threading.Barrier(1), 3) for i in range(2)]
    other = BarrierJob(2, threading.Barrier(1), 3)
    ex = Executor("pack", "cpu", host_workers=2)
    ex.start()
    records = ex.admit_now([Submission(j) for j in jobs + [other]])
    records[0].lane = records[1].lane = lane
    in_lane = {"now": 0, "most": 0}
    lock = threading.Lock()

    def counted(step):
        def wrapped():
            with lock:
                in_lane["now"] += 1
                in_lane["most"] = max(in_lane["most"], in_lane["now"])
            try:
                step()
                time.sleep(0.02)     # long enough that two threads running it would overlap
            finally:
                with lock:
                    in_lane["now"] -= 1
        return wrapped

    for job in jobs:
        job.step = counted(job.step)
    while ex.active:
        ex.run_round(list(ex.active))
    ex.close()
    assert in_lane["most"] == 1
    assert jobs[0].threads == jobs[1].threads      # each round, the lane's two jobs on one thread
    assert all(r.status == "done" and r.iterations_done == 3 for r in records)


def test_a_job_failing_on_a_host_thread_fails_alone():
    barrier = threading.Barrier(1)
    jobs = [BarrierJob(0, barrier, 5), BarrierJob(1, barrier, 5, fail_at=2), BarrierJob(2, barrier, 5)]
    res = Executor("pack", "cpu", host_workers=2).run([Submission(j) for j in jobs])
    by_id = {j["job_id"]: j for j in res["jobs"]}
    assert res["failed"] == [1] and "boom" in by_id[1]["error"] and by_id[1]["iterations_done"] == 2
    assert by_id[0]["status"] == by_id[2]["status"] == "done"


def test_host_workers_must_be_positive():
    with pytest.raises(ValueError, match="host_workers"):
        Executor("pack", "cpu", host_workers=0)


class SleepJob:
    def __init__(self, job_id, seconds, iterations):
        self.job_id, self.seconds, self.total_iterations = job_id, seconds, iterations
        self.workload = "sleep"

    def step(self):
        time.sleep(self.seconds)

    def release(self):
        pass


def test_an_iteration_on_a_host_thread_ends_when_it_returns_not_with_its_round():
    # one lane sleeps 10 ms an iteration, the other 150 ms: the short one's log and finish
    # time are its own, not the round's end (the busy timeline and JCTs read them)
    jobs = [SleepJob(0, 0.01, 2), SleepJob(1, 0.15, 2)]
    ex = Executor("pack", "cpu", host_workers=2, log_iterations=True)
    res = ex.run([Submission(j) for j in jobs])
    short = [e for e in ex.iteration_log if e["job_id"] == 0]
    long_ = [e for e in ex.iteration_log if e["job_id"] == 1]
    assert len(short) == len(long_) == 2
    for s, lg in zip(short, long_):
        assert s["end_s"] - s["start_s"] < 0.1 <= lg["end_s"] - lg["start_s"]
    by_id = {j["job_id"]: j for j in res["jobs"]}
    assert by_id[0]["finish_s"] < by_id[1]["finish_s"] - 0.1
