"""Salus policies, executor failure handling and admission, on hand-built fake jobs (no training)."""
from __future__ import annotations

import dataclasses
import re

import pytest

from impls.salus.core.executor import Executor, Submission
from impls.salus.core.policies import FAIR, FIFO, PACK, SRTF, get_policy, remaining_ms
from impls.salus.core.simulator import simulate
from salus_fakes import FakeClock, FakeJob


@dataclasses.dataclass
class View:
    job_id: int
    arrival: float
    remaining_iterations: int = 10
    iteration_ms_estimate: float = 1.0
    device_ms_used: float = 0.0


def ids(chosen):
    return [j.job_id for j in chosen]


def test_fifo_picks_earliest_arrival_whatever_the_remaining_time():
    jobs = [View(0, arrival=2.0, remaining_iterations=1), View(1, arrival=1.0, remaining_iterations=1000),
            View(2, arrival=3.0)]
    assert ids(FIFO().choose(jobs)) == [1]


def test_srtf_picks_least_remaining_time_not_least_iterations():
    jobs = [View(0, 0.0, remaining_iterations=10, iteration_ms_estimate=50.0),   # 500 ms
            View(1, 1.0, remaining_iterations=100, iteration_ms_estimate=2.0),   # 200 ms
            View(2, 2.0, remaining_iterations=20, iteration_ms_estimate=20.0)]   # 400 ms
    assert ids(SRTF().choose(jobs)) == [1]
    assert remaining_ms(jobs[1]) == 200.0


def test_srtf_ties_fall_to_earliest_arrival():
    jobs = [View(5, 2.0, 10, 1.0), View(3, 1.0, 5, 2.0)]
    assert ids(SRTF().choose(jobs)) == [3]


def test_fair_picks_least_device_time_used():
    jobs = [View(0, 0.0, device_ms_used=300.0), View(1, 1.0, device_ms_used=50.0), View(2, 2.0, device_ms_used=50.0)]
    assert ids(FAIR().choose(jobs)) == [1]


def test_pack_runs_every_admitted_job_in_arrival_order():
    jobs = [View(2, 3.0), View(0, 1.0), View(1, 2.0)]
    assert ids(PACK().choose(jobs)) == [0, 1, 2]
    assert PACK.concurrent and not SRTF.concurrent


def test_empty_and_unknown():
    for p in ("fifo", "srtf", "pack", "fair"):
        assert get_policy(p).choose([]) == []
    with pytest.raises(KeyError, match="unknown policy"):
        get_policy("lottery")


# ---------------------------------------------------------------- fake executor runs

def run_fake(policy, specs, budget=None):
    clock = FakeClock()
    subs, jobs = [], []
    for job_id, arrival, ms, iters, fail_at, peak in specs:
        job = FakeJob(clock, job_id, ms, iters, fail_at)
        jobs.append(job)
        subs.append(Submission(job, arrival=arrival, peak_bytes=peak, iteration_ms_prior=ms))
    ex = Executor(policy, "cpu", memory_budget_bytes=budget, clock=clock, sleep=clock.sleep)
    return ex.run(subs), jobs


def test_a_failing_job_is_reported_released_and_the_others_finish():
    specs = [(0, 0.0, 10.0, 5, None, 100), (1, 0.0, 10.0, 5, 2, 100), (2, 0.0, 10.0, 5, None, 100)]
    for policy in ("fifo", "srtf", "pack", "fair"):
        res, jobs = run_fake(policy, specs, budget=300)
        by_id = {j["job_id"]: j for j in res["jobs"]}
        assert res["failed"] == [1], policy
        assert by_id[1]["status"] == "failed" and "boom" in by_id[1]["error"]
        assert by_id[1]["iterations_done"] == 2
        assert by_id[0]["status"] == by_id[2]["status"] == "done"
        assert jobs[1].released and jobs[0].released


def test_oom_frees_the_budget_for_a_waiting_job():
    # budget fits two jobs; job 1 OOMs at its first iteration, so job 2 gets admitted.
    clock = FakeClock()
    a = FakeJob(clock, 0, 10.0, 20)
    b = FakeJob(clock, 1, 10.0, 5, fail_at=0, error=MemoryError("out of memory"))
    c = FakeJob(clock, 2, 10.0, 3)
    ex = Executor("pack", "cpu", memory_budget_bytes=200, clock=clock, sleep=clock.sleep)
    res = ex.run([Submission(j, arrival=0.0, peak_bytes=100) for j in (a, b, c)])
    by_id = {j["job_id"]: j for j in res["jobs"]}
    assert by_id[1]["status"] == "failed" and by_id[1]["error"].startswith("out of memory")
    assert by_id[2]["status"] == "done" and by_id[2]["admitted_s"] == pytest.approx(0.01)  # at the end of job 0's first iteration
    assert ex.used_bytes == 0


def test_admission_waits_for_memory_and_a_too_big_job_fails():
    specs = [(0, 0.0, 10.0, 10, None, 150), (1, 0.0, 10.0, 10, None, 100), (2, 0.0, 1.0, 1, None, 500)]
    res, _ = run_fake("pack", specs, budget=200)
    by_id = {j["job_id"]: j for j in res["jobs"]}
    assert by_id[2]["status"] == "failed" and "budget" in by_id[2]["error"]
    assert by_id[1]["admitted_s"] == pytest.approx(0.1)  # after job 0's 10 iterations of 10 ms


def test_average_jct_is_over_the_done_jobs_only():
    """FIFO, all at t=0: job 0 runs 5 x 10 ms (done at 0.05 s), job 1 fails at its third
    iteration (0.07 s), job 2 runs 5 x 10 ms (done at 0.12 s), and job 3 never fits the budget.
    The average JCT is over the two done jobs: (0.05 + 0.12) / 2."""
    specs = [(0, 0.0, 10.0, 5, None, 100), (1, 0.0, 10.0, 5, 2, 100), (2, 0.0, 10.0, 5, None, 100),
             (3, 0.0, 10.0, 5, None, 10_000)]
    res, _ = run_fake("fifo", specs, budget=300)
    assert res["done"] == 2 and res["failed"] == [1, 3]
    assert [j["jct_s"] for j in res["jobs"] if j["status"] == "done"] == [pytest.approx(0.05), pytest.approx(0.12)]
    assert res["avg_jct_s"] == pytest.approx((0.05 + 0.12) / 2)


def test_the_executors_overhead_leaves_out_the_time_it_slept_waiting_for_arrivals():
    """Two 1-iteration jobs of 10 ms, 10 s apart, on a fake clock that moves only in steps and
    sleeps: the executor slept 9.99 s waiting for the second one, ran 20 ms, and spent nothing
    else, so its per-iteration overhead is 0 (not the 10 s gap spread over 2 iterations)."""
    res, _ = run_fake("fifo", [(0, 0.0, 10.0, 1, None, 0), (1, 10.0, 10.0, 1, None, 0)])
    assert res["wall_s"] == pytest.approx(10.01)
    assert res["busy_s"] == pytest.approx(0.02) and res["idle_s"] == pytest.approx(9.99)
    assert res["overhead_s"] == pytest.approx(0.0, abs=1e-9)
    assert res["overhead_us_per_iteration"] == pytest.approx(0.0, abs=1e-3)


def test_srtf_preempts_a_long_job_when_a_short_one_arrives():
    specs = [(0, 0.0, 10.0, 100, None, 0), (1, 0.105, 10.0, 3, None, 0)]
    res, _ = run_fake("srtf", specs)
    by_id = {j["job_id"]: j for j in res["jobs"]}
    assert by_id[1]["start_s"] == pytest.approx(0.11)   # the next boundary after its arrival
    assert by_id[1]["finish_s"] == pytest.approx(0.14)
    assert by_id[0]["finish_s"] == pytest.approx(1.03)
    fifo, _ = run_fake("fifo", specs)
    assert {j["job_id"]: j for j in fifo["jobs"]}[1]["finish_s"] == pytest.approx(1.03)


@pytest.mark.parametrize("policy", ["fifo", "srtf", "pack", "fair"])
def test_simulator_reproduces_the_executor_exactly_on_fake_time(policy):
    specs = [(0, 0.0, 7.0, 40, None, 100), (1, 0.05, 3.0, 30, None, 100), (2, 0.12, 11.0, 5, None, 100),
             (3, 0.2, 2.0, 60, None, 100), (4, 2.0, 5.0, 10, None, 100)]
    res, _ = run_fake(policy, specs, budget=300)
    trace = [{"job_id": i, "workload": f"w{i}", "arrival_s": a, "iterations": n, "peak_bytes": p}
             for i, a, ms, n, _, p in specs]
    sim = simulate(trace, policy, {f"w{i}": ms for i, _, ms, *_ in specs}, memory_budget_bytes=300)
    for real_job, sim_job in zip(res["jobs"], sim["jobs"]):
        assert sim_job["finish_s"] == pytest.approx(real_job["finish_s"], abs=1e-9), (policy, real_job, sim_job)
        assert sim_job["admitted_s"] == pytest.approx(real_job["admitted_s"], abs=1e-9)
    assert sim["avg_jct_s"] == pytest.approx(res["avg_jct_s"])


@pytest.mark.parametrize("policy", ["fair", "pack"])
@pytest.mark.parametrize("pack_mode", ["interleave", "concurrent"])
@pytest.mark.parametrize("with_warm", [False, True])
def test_fast_simulation_equals_iteration_by_iteration(policy, pack_mode, with_warm):
    import numpy as np

    rng = np.random.default_rng(7)
    ms = {f"w{i}": float(v) for i, v in enumerate(rng.uniform(1, 30, size=5))}
    warm = {w: v * float(rng.uniform(0.5, 1.0)) for w, v in ms.items()} if with_warm else None
    trace = [{"job_id": i, "workload": f"w{rng.integers(5)}", "arrival_s": float(a),
              "iterations": int(rng.integers(1, 300)), "peak_bytes": int(rng.integers(1, 100))}
             for i, a in enumerate(np.cumsum(rng.exponential(0.5, size=30)))]
    fast = simulate(trace, policy, ms, memory_budget_bytes=250, pack=pack_mode, warm_iteration_ms=warm)
    slow = simulate(trace, policy, ms, memory_budget_bytes=250, pack=pack_mode, fast=False,
                    warm_iteration_ms=warm)
    for a, b in zip(fast["jobs"], slow["jobs"]):
        assert a["finish_s"] == pytest.approx(b["finish_s"], rel=1e-9, abs=1e-9), (a, b)
        assert a["device_ms"] == pytest.approx(b["device_ms"], rel=1e-9, abs=1e-9), (a, b)
    assert fast["iterations"] == slow["iterations"]
    if with_warm and pack_mode == "interleave":
        assert fast["avg_jct_s"] < simulate(trace, policy, ms, memory_budget_bytes=250)["avg_jct_s"]


def test_warm_iterations_follow_an_iteration_of_the_same_job():
    trace = [{"job_id": 0, "workload": "a", "arrival_s": 0.0, "iterations": 4},
             {"job_id": 1, "workload": "b", "arrival_s": 0.0, "iterations": 2}]
    ms, warm = {"a": 10.0, "b": 20.0}, {"a": 4.0, "b": 5.0}
    fifo = {j["job_id"]: j for j in simulate(trace, "fifo", ms, warm_iteration_ms=warm)["jobs"]}
    assert fifo[0]["finish_s"] == pytest.approx((10 + 4 + 4 + 4) / 1e3)      # a a a a
    assert fifo[1]["finish_s"] == pytest.approx((22 + 20 + 5) / 1e3)         # then b b
    pack = {j["job_id"]: j for j in simulate(trace, "pack", ms, warm_iteration_ms=warm)["jobs"]}
    assert pack[1]["finish_s"] == pytest.approx((10 + 20 + 10 + 20) / 1e3)  # a b a b: never warm
    assert pack[0]["finish_s"] == pytest.approx((60 + 10 + 4) / 1e3)         # then a after b, a warm
    lanes = simulate(trace, "pack", ms, warm_iteration_ms=warm, pack="concurrent")
    assert lanes["makespan_s"] == pytest.approx((20 + 20 + 10 + 10) / 1e3)  # streams: no warm times


def test_factories_are_built_at_admission_and_a_failing_build_fails_alone():
    clock = FakeClock()

    def broken():
        raise RuntimeError("cannot build")

    subs = [Submission(lambda: FakeJob(clock, 0, 5.0, 4), arrival=0.0, job_id=0, workload="ok"),
            Submission(broken, arrival=0.0, job_id=1, workload="broken"),
            Submission(lambda: FakeJob(clock, 2, 5.0, 2), arrival=0.5, job_id=2, workload="late")]
    res = Executor("srtf", "cpu", clock=clock, sleep=clock.sleep).run(subs)
    by_id = {j["job_id"]: j for j in res["jobs"]}
    assert by_id[1]["status"] == "failed" and "cannot build" in by_id[1]["error"]
    assert by_id[0]["iterations_done"] == 4 and by_id[2]["status"] == "done"
    assert by_id[2]["admitted_s"] == pytest.approx(0.5) and res["idle_s"] == pytest.approx(0.48)


class WarmFakeJob(FakeJob):
    """An iteration costs ``ms`` after another job's and ``warm_ms`` right after its own."""

    last = None

    def __init__(self, clock, job_id, ms, warm_ms, iterations):
        super().__init__(clock, job_id, ms, iterations)
        self.warm_ms = warm_ms

    def step(self):
        self.steps += 1
        self.clock.t += (self.warm_ms if WarmFakeJob.last is self else self.ms) / 1e3
        WarmFakeJob.last = self


@pytest.mark.parametrize("policy", ["fifo", "srtf", "pack", "fair"])
def test_simulator_reproduces_the_executor_when_back_to_back_iterations_are_faster(policy):
    """SRTF ranks by each job's measured mean iteration time, which falls towards its warm
    time while it runs back to back. Job 0 (10 ms cold, 4 ms warm, 100 iterations) has run
    about 30 when job 1 arrives (10 ms, 50 iterations): measured, job 0 has about 4.2 x 70 =
    290 ms left against job 1's 500, so it keeps the device; ranked at 10 ms an iteration it
    would have 700 left and give way."""
    WarmFakeJob.last = None
    clock = FakeClock()
    specs = [(0, 0.0, 10.0, 4.0, 100), (1, 0.13, 10.0, 10.0, 50), (2, 0.5, 6.0, 3.0, 20)]
    subs = [Submission(WarmFakeJob(clock, i, ms, warm, n), arrival=a, iteration_ms_prior=ms)
            for i, a, ms, warm, n in specs]
    res = Executor(policy, "cpu", clock=clock, sleep=clock.sleep).run(subs)
    trace = [{"job_id": i, "workload": f"w{i}", "arrival_s": a, "iterations": n} for i, a, _, _, n in specs]
    sim = simulate(trace, policy, {f"w{i}": ms for i, _, ms, _, _ in specs},
                   warm_iteration_ms={f"w{i}": warm for i, _, _, warm, _ in specs})
    for real_job, sim_job in zip(res["jobs"], sim["jobs"]):
        assert sim_job["finish_s"] == pytest.approx(real_job["finish_s"], abs=1e-9), (policy, real_job, sim_job)
    if policy == "srtf":
        finish = {j["job_id"]: j["finish_s"] for j in res["jobs"]}
        assert finish[0] < finish[1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_simulated_srtf_follows_the_executor_when_warm_iterations_are_faster_or_slower(seed):
    """Random jobs whose back-to-back iterations are 0.5-1.5x their first: where they are
    slower, a running job's mean rises and its remaining time can overtake another's
    mid-run (the case srtf_lead checks one iteration at a time)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    WarmFakeJob.last = None
    clock = FakeClock()
    arrivals = np.cumsum(rng.exponential(0.08, size=12))
    specs = [(i, float(a), float(rng.uniform(2, 12)), 0.0, int(rng.integers(1, 60))) for i, a in enumerate(arrivals)]
    specs = [(i, a, ms, ms * float(rng.uniform(0.5, 1.5)), n) for i, a, ms, _, n in specs]
    subs = [Submission(WarmFakeJob(clock, i, ms, warm, n), arrival=a, iteration_ms_prior=ms)
            for i, a, ms, warm, n in specs]
    res = Executor("srtf", "cpu", clock=clock, sleep=clock.sleep).run(subs)
    trace = [{"job_id": i, "workload": f"w{i}", "arrival_s": a, "iterations": n} for i, a, _, _, n in specs]
    sim = simulate(trace, "srtf", {f"w{i}": ms for i, _, ms, _, _ in specs},
                   warm_iteration_ms={f"w{i}": warm for i, _, _, warm, _ in specs})
    for real_job, sim_job in zip(res["jobs"], sim["jobs"]):
        assert sim_job["finish_s"] == pytest.approx(real_job["finish_s"], abs=1e-9), (real_job, sim_job)


def test_pack_on_streams_gives_every_running_job_a_stream_of_its_own():
    """A job admitted after another finished takes the freed stream, never a running job's."""
    import contextlib
    import itertools

    from impls.salus.core.devices import WallTimer
    from impls.salus.core.executor import Executor, Submission

    class StreamedDevice:                    # the CUDA device's stream logic, without CUDA
        kind, has_streams, torch_device = "cuda", True, "fake"

        def __init__(self):
            self.made = itertools.count()

        def new_lane(self):
            return [f"stream{next(self.made)}"]  # a new object each time, as a torch.cuda.Stream is

        def timer(self, lane=None):
            return WallTimer()

        def lane_context(self, lane):
            return contextlib.nullcontext()

        def order_lane(self, lane):
            pass

        def synchronize_lane(self, lane):
            pass

        def synchronize(self):
            pass

        def is_oom(self, error):
            return False

        def release_memory(self):
            pass

    class Job:
        def __init__(self, job_id, iterations):
            self.job_id, self.workload, self.total_iterations = job_id, "j", iterations

        def step(self):
            pass

    device = StreamedDevice()
    executor = Executor("pack", device, memory_budget_bytes=3)
    rounds = []
    run_round = executor.run_round
    executor.run_round = lambda chosen: (rounds.append([(r.job_id, r.lane[0]) for r in chosen]),
                                         run_round(chosen))
    executor.run([Submission(Job(0, 1), peak_bytes=1), Submission(Job(1, 20), peak_bytes=1),
                  Submission(Job(2, 20), peak_bytes=1), Submission(Job(3, 5), peak_bytes=1)])
    assert rounds and all(len({lane for _, lane in chosen}) == len(chosen) for chosen in rounds)
    assert any(job == 3 for chosen in rounds for job, _ in chosen)       # job 3 ran, after job 0 left
    assert dict(next(c for c in rounds if any(j == 3 for j, _ in c)))[3] == "stream0"   # job 0's stream
    assert next(device.made) == 3                                        # no fourth stream was made


@pytest.mark.parametrize("streams, inrun_pack", [(True, "concurrent"), (False, "interleave")])
def test_the_in_run_simulation_of_pack_overlaps_iterations_only_on_a_device_with_streams(
        monkeypatch, streams, inrun_pack):
    import types

    from impls.salus.experiments import scheduling

    result = {"jobs": [{"job_id": 0, "workload": "w", "iterations_done": 2, "device_ms": 4.0, "status": "done",
                        "jct_s": 1.0, "mean_iteration_ms": 2.0}],
              "avg_jct_s": 1.0, "makespan_s": 1.0, "failed": 0, "overhead_us_per_iteration": 0.0,
              "wall_s": 1.0, "idle_s": 0.0}
    packs = []
    monkeypatch.setattr(scheduling, "run_trace", lambda *args, **kwargs: result)
    monkeypatch.setattr(scheduling, "simulate",
                        lambda *args, pack="interleave", **kwargs: packs.append(pack) or result)
    profile = {"w": {"iteration_ms_p50": 2.0, "iteration_ms_warm_p50": 2.0}}
    device = types.SimpleNamespace(has_streams=streams)
    scheduling._measured_run([{"job_id": 0}], "pack", device=device, before=profile, profile_now=lambda: profile,
                             budget=None, peaks={"w": 1}, fallback_ms={"w": 2.0})
    assert packs == ["interleave", inrun_pack]   # profiled times: the sum (no overlap assumed)


def test_the_simulation_adds_the_runs_overhead_per_iteration_in_milliseconds(monkeypatch):
    """The executor reports its overhead in microseconds per iteration; the simulator takes
    ``overhead_ms``. A run with 500 us per iteration: one job of 4 iterations of 2 ms is
    simulated at 4 x (2 + 0.5) ms = 10 ms, in both simulations."""
    import types

    from impls.salus.experiments import scheduling

    result = {"jobs": [{"job_id": 0, "workload": "w", "iterations_done": 4, "device_ms": 8.0, "status": "done",
                        "jct_s": 0.010, "mean_iteration_ms": 2.0}],
              "avg_jct_s": 0.010, "makespan_s": 0.010, "failed": [], "overhead_us_per_iteration": 500.0,
              "wall_s": 0.010, "idle_s": 0.0}
    monkeypatch.setattr(scheduling, "run_trace", lambda *args, **kwargs: result)
    profile = {"w": {"iteration_ms_p50": 2.0, "iteration_ms_warm_p50": 2.0}}
    trace = [{"job_id": 0, "workload": "w", "arrival_s": 0.0, "iterations": 4, "peak_bytes": 1}]
    row, _ = scheduling._measured_run(trace, "fifo", device=types.SimpleNamespace(has_streams=False),
                                      before=profile, profile_now=lambda: profile, budget=None, peaks={"w": 1},
                                      fallback_ms={"w": 2.0})
    assert row["sim"]["avg_jct_s"] == pytest.approx(4 * (2.0 + 0.5) / 1e3)
    assert row["sim_inrun"]["avg_jct_s"] == pytest.approx(4 * (2.0 + 0.5) / 1e3)
    assert row["sim_error"] == pytest.approx(0.0, abs=1e-9)


def test_offered_load_is_the_arrival_rate_times_the_mean_work():
    from impls.salus.core.traces import offered_load

    ms = {"w": 100.0}
    jobs = [{"workload": "w", "iterations": 10, "arrival_s": t} for t in (100.0, 101.0, 102.0)]
    # 2 gaps over 2 s: 1 job/s, each 1 s of work: load 1, wherever the trace starts
    assert offered_load(jobs, ms) == pytest.approx(1.0)
    assert offered_load(jobs[:1], ms) is None
    assert offered_load([{**j, "arrival_s": 5.0} for j in jobs], ms) is None


@pytest.mark.parametrize("change, message", [
    ({"arrival_s": float("nan")}, "arrival_s nan"),
    ({"arrival_s": -1.0}, "arrival_s -1.0"),
    ({"iteration_ms": 0.0}, "expected a finite number > 0"),       # the workload's time of 0
    ({"iterations": -3}, "iterations -3"),
])
def test_the_simulator_refuses_a_trace_it_cannot_mean_anything_for(change, message):
    from impls.salus.core.simulator import simulate

    trace = [{"job_id": 0, "workload": "w", "arrival_s": 0.0, "iterations": 3},
             {"job_id": 1, "workload": "w", "arrival_s": 0.5, "iterations": 2}]
    ms = {"w": 0.0} if "iteration_ms" in change else {"w": 10.0}
    bad = [trace[0], {**trace[1], **{k: v for k, v in change.items() if k != "iteration_ms"}}]
    for policy in ("fifo", "srtf", "fair", "pack"):
        with pytest.raises(ValueError, match=re.escape(message)):
            simulate(bad, policy, ms)
    with pytest.raises(ValueError, match="appears twice"):
        simulate([trace[0], {**trace[1], "job_id": 0}], "fair", {"w": 10.0})


def test_the_executor_refuses_an_arrival_that_would_never_come():
    from impls.salus.core.executor import Executor, Submission

    with pytest.raises(ValueError, match="arrival nan"):
        Executor("fifo").run([Submission(job=lambda: None, arrival=float("nan"), job_id=7)])


@pytest.mark.parametrize("fast", [True, False])
def test_an_arrival_on_an_iteration_boundary_is_noticed_at_that_boundary(fast):
    """Seven 3-ms iterations sum to 0.020999999999999998 s in floats: a job arriving at 0.021 s
    is still noticed at that boundary, in one step or iteration by iteration."""
    trace = [{"job_id": 0, "workload": "A", "arrival_s": 0.0, "iterations": 10},
             {"job_id": 1, "workload": "B", "arrival_s": 0.021, "iterations": 1}]
    r = simulate(trace, "fair", {"A": 3.0, "B": 0.5}, fast=fast)
    b = r["jobs"][1]
    assert b["start_s"] == pytest.approx(0.021, abs=1e-12) and b["start_s"] >= 0.021
    assert r["avg_jct_s"] == pytest.approx((0.0305 + 0.0005) / 2)


def test_pack_in_one_step_matches_pack_iteration_by_iteration_on_boundary_arrivals():
    trace = [{"job_id": 0, "workload": "c", "arrival_s": 0.022, "iterations": 20},
             {"job_id": 1, "workload": "a", "arrival_s": 0.028, "iterations": 10},
             {"job_id": 2, "workload": "a", "arrival_s": 0.0, "iterations": 1}]
    fast, slow = (simulate(trace, "pack", {"a": 5.0, "c": 2.0}, fast=f) for f in (True, False))
    for x, y in zip(fast["jobs"], slow["jobs"]):
        assert x["start_s"] == pytest.approx(y["start_s"], abs=1e-12)
        assert x["finish_s"] == pytest.approx(y["finish_s"], abs=1e-12)
    assert fast["jobs"][1]["start_s"] == pytest.approx(0.030) and fast["jobs"][1]["finish_s"] == pytest.approx(0.098)


@pytest.mark.parametrize("offset", [0.0, 65536.1, 123456.789])
@pytest.mark.parametrize("policy", ["srtf", "fifo", "fair", "pack"])
def test_a_boundary_arrival_is_noticed_there_at_any_clock_time(offset, policy):
    """The clock's rounding grows with it: at 18 h of virtual time a chunk of iterations must
    still stop at the boundary an arrival lies on, as one iteration at a time does."""
    trace = [{"job_id": 0, "workload": "A", "arrival_s": offset, "iterations": 100},
             {"job_id": 1, "workload": "B", "arrival_s": offset + 0.051, "iterations": 1}]
    fast, slow = (simulate(trace, policy, {"A": 3.0, "B": 0.5}, fast=f) for f in (True, False))
    for x, y in zip(fast["jobs"], slow["jobs"]):
        assert x["start_s"] == pytest.approx(y["start_s"], abs=1e-6)
        assert x["finish_s"] == pytest.approx(y["finish_s"], abs=1e-6)
    if policy == "srtf":       # B (0.5 ms) preempts A at the boundary it arrives on
        assert fast["jobs"][1]["start_s"] - offset == pytest.approx(0.051, abs=1e-6)


@pytest.mark.parametrize("policy", ["fifo", "srtf", "fair", "pack"])
def test_a_trace_late_in_virtual_time_has_the_jcts_of_the_same_trace_at_zero(policy):
    """The clock must neither merge arrivals nor idle the device late in virtual time: 100 jobs
    1 ms apart give the same JCTs at 30 years as at 0."""
    def run(offset):
        trace = [{"job_id": i, "workload": "w", "arrival_s": offset + i * 1e-3, "iterations": 1} for i in range(100)]
        return simulate(trace, policy, {"w": 10.0})

    early, late = run(0.0), run(1e9)
    assert late["avg_jct_s"] == pytest.approx(early["avg_jct_s"], abs=1e-5)
    assert [j["jct_s"] for j in late["jobs"]] == pytest.approx([j["jct_s"] for j in early["jobs"]], abs=1e-5)



@pytest.mark.parametrize("policy", ["fair", "pack", "srtf"])
@pytest.mark.parametrize("fast", [True, False])
def test_a_boundary_arrival_after_thousands_of_iterations_is_noticed_there(policy, fast):
    """5,000 additions of 3 ms at 1e5 s drift a float clock past any tolerance; the job arriving
    on A's 5,000th boundary starts there, as it does at 0."""
    def b_jct(offset):
        trace = [{"job_id": 0, "workload": "A", "arrival_s": offset, "iterations": 6000},
                 {"job_id": 1, "workload": "B", "arrival_s": offset + 15.0, "iterations": 1}]
        return simulate(trace, policy, {"A": 3.0, "B": 0.5}, fast=fast)["jobs"][1]

    early, late = b_jct(0.0), b_jct(1e5)
    assert late["start_s"] - 1e5 == pytest.approx(early["start_s"], abs=1e-6)
    assert late["jct_s"] == pytest.approx(early["jct_s"], abs=1e-6)
    if policy == "fair":
        assert early["jct_s"] == pytest.approx(0.0005)


@pytest.mark.parametrize("fast", [True, False])
def test_fair_ties_in_decimal_milliseconds_fall_to_arrival_and_id(fast):
    """2 x 2.1 ms and 6 x 0.7 ms are the same device time; as float sums 0.7+0.7+0.7 is below
    2.1, which let job 1 keep the device past a tie job 0 should have won."""
    trace = [{"job_id": 0, "workload": "b", "arrival_s": 0.0, "iterations": 2},
             {"job_id": 1, "workload": "a", "arrival_s": 0.0, "iterations": 5}]
    for ms, ends in (({"a": 1.0, "b": 3.0}, (9.0, 11.0)), ({"a": 0.7, "b": 2.1}, (6.3, 7.7))):
        finish = {j["job_id"]: j["finish_s"] for j in simulate(trace, "fair", ms, fast=fast)["jobs"]}
        assert (finish[0], finish[1]) == pytest.approx((ends[0] / 1e3, ends[1] / 1e3))   # one schedule


@pytest.mark.parametrize("fast", [True, False])
def test_srtf_ties_in_decimal_milliseconds_fall_to_arrival_and_id(fast):
    trace = [{"job_id": 0, "workload": "b", "arrival_s": 0.0, "iterations": 1},
             {"job_id": 1, "workload": "a", "arrival_s": 0.0, "iterations": 3}]     # 2.1 ms each
    jobs = {j["job_id"]: j for j in simulate(trace, "srtf", {"a": 0.7, "b": 2.1}, fast=fast)["jobs"]}
    assert jobs[0]["start_s"] == 0.0 and jobs[1]["start_s"] == pytest.approx(0.0021)


def test_a_submission_of_zero_iterations_finishes_at_admission_as_in_the_simulator():
    class Clock:
        t = 0.0

        def __call__(self):
            return self.t

        def sleep(self, seconds):
            self.t += seconds

    clock = Clock()

    class Job:
        job_id, workload, total_iterations = 0, "w", 5

        def step(self):
            clock.t += 0.01

    run = Executor("fifo", "cpu", clock=clock, sleep=clock.sleep).run(
        [Submission(Job(), iterations=0, job_id=0, workload="w")])
    sim = simulate([{"job_id": 0, "workload": "w", "arrival_s": 0.0, "iterations": 0}], "fifo", {"w": 10.0})
    keys = ("iterations", "iterations_done", "finish_s")
    assert {k: run["jobs"][0][k] for k in keys} == {k: sim["jobs"][0][k] for k in keys} == dict.fromkeys(keys, 0)
    unsaid = Executor("fifo", "cpu", clock=clock, sleep=clock.sleep).run([Submission(Job(), job_id=0, workload="w")])
    assert unsaid["jobs"][0]["iterations_done"] == 5          # no count given: the job's own


def test_the_simulator_admits_a_job_that_exactly_fits_the_budget():
    """Peak equal to the budget fits; a second such job waits for the first rather than failing."""
    from impls.salus.core.simulator import simulate

    one = [{"job_id": 0, "workload": "w", "arrival_s": 0.0, "iterations": 3}]
    out = simulate(one, "fifo", {"w": 10.0}, memory_budget_bytes=1000, peak_bytes={"w": 1000})
    assert out["failed"] == []
    two = one + [{"job_id": 1, "workload": "w", "arrival_s": 0.0, "iterations": 3}]
    out = simulate(two, "pack", {"w": 10.0}, memory_budget_bytes=1000, peak_bytes={"w": 1000})
    assert out["failed"] == []


@pytest.mark.parametrize("policy", ["fifo", "srtf", "pack", "fair"])
@pytest.mark.parametrize("iterations", [0, 1])
def test_a_job_is_never_admitted_or_started_before_it_arrives(policy, iterations):
    """An arrival of 0.1 + 0.2 s lands on a clock tick that prints one unit in the last place
    below it; the record keeps admission, start and finish at or after the arrival given, and
    the JCT non-negative."""
    [job] = simulate([{"job_id": 0, "workload": "w", "arrival_s": 0.1 + 0.2, "iterations": iterations}],
                     policy, {"w": 1.0})["jobs"]
    assert job["status"] == "done"
    assert job["admitted_s"] >= job["arrival_s"] and job["finish_s"] >= job["arrival_s"], job
    assert job["start_s"] is None or job["start_s"] >= job["arrival_s"], job
    assert job["jct_s"] >= 0.0, job


def test_the_policy_runs_memory_budget_is_read_in_mebibytes(monkeypatch):
    """``memory_budget_mb`` is MiB, as the jobs' peak bytes are counted: 3 of them admit
    3 x 2**20 bytes, not 3 x 10**6."""
    from impls.salus.experiments import scheduling

    class Stop(Exception):
        pass

    seen = {}

    def first_run(trace, policy, **kwargs):
        seen["budget"] = kwargs["budget"]
        raise Stop

    monkeypatch.setattr(scheduling, "profile_workloads", lambda mix, device="cpu", iterations=5, seed=0: {
        w: {"iteration_ms_p50": 1.0, "iteration_ms_warm_p50": 1.0, "peak_bytes": 1} for w in mix})
    monkeypatch.setattr(scheduling, "_measured_run", first_run)
    sizes = {**scheduling.salus_sizes("salus_policies", "smoke"), "memory_budget_mb": 3}
    with pytest.raises(Stop):
        scheduling.policy_experiment(sizes, "cpu", progress=False)
    assert seen["budget"] == 3 * 2 ** 20
