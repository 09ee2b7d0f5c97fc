"""Input the Salus executor, lane executor, simulator and command lines refuse before running
anything, and how they report what they do run (failed jobs' JCTs, negative switch times)."""
from __future__ import annotations

import json

import pytest

from impls.salus.core.executor import Executor, Submission
from impls.salus.core.policies import FIFO, get_policy
from impls.salus.core.simulator import simulate
from impls.salus.memory.lane_executor import LaneExecutor
from salus_fakes import FakeClock, FakeJob


def Job(clock, job_id, iterations=3, ms=10.0, workload="w", fail_at=None):
    """A fake job of ``iterations`` of ``ms`` each, of ``workload``; ``steps`` counts those run."""
    return FakeJob(clock, job_id, ms, iterations, fail_at=fail_at, workload=workload)


def executor(policy="fifo", **kwargs):
    clock = FakeClock()
    return Executor(policy, "cpu", clock=clock, sleep=clock.sleep, **kwargs), clock


def lane_executor(capacity=1000, memory=None):
    clock = FakeClock()
    memory = {"w": {"persistent_bytes": 100, "ephemeral_bytes": 500}} if memory is None else memory
    return LaneExecutor("pack", "cpu", capacity_bytes=capacity, memory=memory, clock=clock, sleep=clock.sleep), clock


# ---------------------------------------------------------------- 1. repeated job ids

def test_the_executor_refuses_a_repeated_job_id_before_any_job_runs():
    ex, clock = executor()
    jobs = [Job(clock, 0), Job(clock, 0)]
    with pytest.raises(ValueError, match="job id 0 appears twice"):
        ex.run([Submission(j) for j in jobs])
    assert [j.steps for j in jobs] == [0, 0] and not ex.records
    ex, clock = executor()   # a default id (the index, 1) meeting an explicit one
    with pytest.raises(ValueError, match="job id 1 appears twice"):
        ex.run([Submission(lambda: None, job_id=1, iterations=1), Submission(lambda: None, iterations=1)])


def test_the_lane_executor_refuses_a_repeated_job_id_in_run_and_admit_now():
    # 600 B each on a 1000 B device: admitted twice under one name they would over-commit it
    ex, clock = lane_executor()
    jobs = [Job(clock, 7), Job(clock, 7)]
    with pytest.raises(ValueError, match="job id 7 appears twice"):
        ex.run([Submission(j, peak_bytes=600) for j in jobs])
    assert [j.steps for j in jobs] == [0, 0] and not ex.manager.placement
    ex, clock = lane_executor()
    ex.start()
    with pytest.raises(ValueError, match="job id 7 appears twice"):
        ex.admit_now([Submission(Job(clock, 7)), Submission(Job(clock, 7))])
    assert not ex.manager.placement and ex.used_bytes == 0
    ex.admit_now([Submission(Job(clock, 7))])
    with pytest.raises(ValueError, match="job id 7 appears twice"):   # already admitted
        ex.admit_now([Submission(Job(clock, 7))])
    assert ex.manager.snapshot()["lanes"][0]["jobs"] == ["7"]
    ex, clock = lane_executor()          # 1 and "1": one name to the lane manager
    with pytest.raises(ValueError, match="job id '1' appears twice"):
        ex.run([Submission(Job(clock, 1), peak_bytes=600), Submission(Job(clock, "1"), arrival=1.0, peak_bytes=600)])


# ---------------------------------------------------------------- 2. iteration counts

@pytest.mark.parametrize("iterations, message", [
    (-3, "iterations -3"), (2.7, "iterations 2.7"), (float("nan"), "iterations nan"), ("3", "iterations '3'"),
])
def test_the_executor_checks_iteration_counts_as_the_simulator_does(iterations, message):
    with pytest.raises(ValueError, match=f"{message}; expected a whole number >= 0"):
        simulate([{"job_id": 0, "workload": "w", "arrival_s": 0.0, "iterations": iterations}], "fifo", {"w": 10.0})
    ex, clock = executor()
    job = Job(clock, 0)
    with pytest.raises(ValueError, match=f"{message}; expected a whole number >= 0"):
        ex.run([Submission(job, iterations=iterations)])
    assert job.steps == 0
    ex, clock = executor()
    job = Job(clock, 0, iterations=iterations)     # a built job's own count, checked the same way
    with pytest.raises(ValueError, match=message):
        ex.run([Submission(job)])


def test_a_zero_iteration_job_counts_in_avg_jct_in_both_with_its_wait_for_admission():
    # job 0 (10 x 10 ms, 100 B) holds the 150 B budget; job 1 (0 iterations) waits 0.1 s for it
    ex, clock = executor(memory_budget_bytes=150)
    run = ex.run([Submission(Job(clock, 0, 10), peak_bytes=100), Submission(Job(clock, 1, 0), peak_bytes=100)])
    sim = simulate([{"job_id": 0, "workload": "w", "arrival_s": 0.0, "iterations": 10},
                    {"job_id": 1, "workload": "w", "arrival_s": 0.0, "iterations": 0}],
                   "fifo", {"w": 10.0}, memory_budget_bytes=150, peak_bytes={"w": 100})
    for res in (run, sim):
        assert res["done"] == 2 and res["jobs"][1]["jct_s"] == pytest.approx(0.1)
        assert res["avg_jct_s"] == pytest.approx(0.1)


# ---------------------------------------------------------------- 3. iteration times

def test_a_jobs_own_iteration_time_of_zero_is_refused_not_replaced_by_the_workloads():
    trace = [{"job_id": 0, "workload": "w", "arrival_s": 0.0, "iterations": 2, "iteration_ms": 0}]
    with pytest.raises(ValueError, match="iteration time 0.0 ms"):
        simulate(trace, "fifo", {"w": 100.0})
    own_none = simulate([{**trace[0], "iteration_ms": None}], "fifo", {"w": 100.0})   # None: the workload's
    assert own_none["makespan_s"] == pytest.approx(0.2)


@pytest.mark.parametrize("overhead_ms, warm", [(-150.0, None), (-100.0, None), (-50.0, {"w": 40.0})])
def test_an_overhead_that_leaves_no_positive_iteration_time_is_refused(overhead_ms, warm):
    trace = [{"job_id": 0, "workload": "w", "arrival_s": 0.0, "iterations": 3}]
    with pytest.raises(ValueError, match="expected a finite number > 0"):
        simulate(trace, "fifo", {"w": 100.0}, overhead_ms=overhead_ms, warm_iteration_ms=warm)
    assert simulate(trace, "fifo", {"w": 100.0}, overhead_ms=-50.0)["makespan_s"] == pytest.approx(0.15)


# ---------------------------------------------------------------- 4. unknown workloads under lanes

def test_the_lane_executor_refuses_an_unknown_workload_before_any_job_runs():
    ex, clock = lane_executor()
    first, late = Job(clock, 0), Job(clock, 1, workload="mystery")
    with pytest.raises(ValueError, match=r"job 1: no memory profile for workload 'mystery'; known: w"):
        ex.run([Submission(first), Submission(late, arrival=5.0)])
    assert first.steps == 0 and not ex.records


def test_the_lane_executor_refuses_a_memory_profile_with_negative_bytes():
    ex, clock = lane_executor(memory={"w": {"persistent_bytes": -100, "ephemeral_bytes": 500}})
    with pytest.raises(ValueError, match="persistent_bytes -100; expected a number of bytes >= 0"):
        ex.run([Submission(Job(clock, 0))])


# ---------------------------------------------------------------- 5. negative switch times

def switching_result(inprocess_p50):
    cell = {"p50": 1.0, "p99": 2.0, "n": 3}
    row = {c: dict(cell) for c in ("iteration_ms", "inprocess_gap_ms", "to_host_ms", "to_disk_ms", "restart_ms")}
    row["inprocess_ms"] = {"p50": inprocess_p50, "p99": 439.647, "n": 3}
    return {"device_name": "cpu", "to_host_method": "cpu_copy", "workloads": {"vae_b32": row}}


def test_the_switching_table_footnotes_a_negative_value_and_keeps_the_numbers(capsys):
    from impls.salus.core.switching import print_table

    result = switching_result(-3.712)
    before = json.dumps(result)
    print_table(result)
    lines = capsys.readouterr().out.splitlines()
    assert json.dumps(result) == before
    assert "   -3.712/439.647 " in lines[2]
    assert lines[3:] == ["note: inprocess is a paired difference, B's iteration after A's minus B's after B's "
                         "(ms); a negative value is below the measurement's resolution, not a measured negative time"]
    print_table(switching_result(3.712))
    assert len(capsys.readouterr().out.splitlines()) == 3          # nothing negative: no note


# ---------------------------------------------------------------- 6. small ones

def test_a_policy_name_with_surrounding_spaces_is_that_policy():
    assert isinstance(get_policy(" fifo "), FIFO) and isinstance(get_policy("\tFIFO\n"), FIFO)
    with pytest.raises(KeyError, match="unknown policy 'lottery'; known: fifo, srtf, pack, fair"):
        get_policy("lottery")


def test_a_failed_job_has_no_jct_in_the_executor_or_the_simulator():
    ex, clock = executor(memory_budget_bytes=100)
    res = ex.run([Submission(Job(clock, 0, fail_at=1), peak_bytes=50), Submission(Job(clock, 1), peak_bytes=500),
                  Submission(Job(clock, 2), peak_bytes=50)])
    by_id = {j["job_id"]: j for j in res["jobs"]}
    assert res["failed"] == [0, 1] and by_id[0]["jct_s"] is None and by_id[1]["jct_s"] is None
    assert by_id[0]["finish_s"] is not None and by_id[2]["jct_s"] > 0
    sim = simulate([{"job_id": 0, "workload": "w", "arrival_s": 0.0, "iterations": 1, "peak_bytes": 500},
                    {"job_id": 1, "workload": "w", "arrival_s": 0.0, "iterations": 1}],
                   "fifo", {"w": 10.0}, memory_budget_bytes=100)
    assert sim["failed"] == [0] and sim["jobs"][0]["jct_s"] is None
    assert sim["avg_jct_s"] == pytest.approx(0.01)


def test_negative_peaks_and_budgets_are_refused():
    trace = [{"job_id": 0, "workload": "w", "arrival_s": 0.0, "iterations": 1}]
    with pytest.raises(ValueError, match="memory_budget_bytes -1"):
        simulate(trace, "fifo", {"w": 10.0}, memory_budget_bytes=-1)
    with pytest.raises(ValueError, match="job 0: peak_bytes -5"):
        simulate(trace, "fifo", {"w": 10.0}, peak_bytes={"w": -5})
    with pytest.raises(ValueError, match="job 0: peak_bytes -5"):
        simulate([{**trace[0], "peak_bytes": -5}], "fifo", {"w": 10.0})
    with pytest.raises(ValueError, match="memory_budget_bytes -1"):
        executor(memory_budget_bytes=-1)
    ex, clock = executor(memory_budget_bytes=100)
    job = Job(clock, 0)
    with pytest.raises(ValueError, match="job 0: peak_bytes -5"):
        ex.run([Submission(job, peak_bytes=-5)])
    assert job.steps == 0


def test_the_lanes_command_refuses_a_job_with_an_unknown_key(tmp_path, capsys):
    from impls.salus.lanes import main

    path = tmp_path / "jobs.json"
    path.write_text(json.dumps([{"name": "a", "persistent": 1, "ephemeral": 2, "arrival": 3}]))
    assert main(["--jobs", str(path), "--capacity", "1000"]) == 2
    err = capsys.readouterr().err
    assert "item 0: unknown key(s) arrival; allowed: name, persistent, ephemeral" in err
    path.write_text(json.dumps([{"name": "a", "persistent": 1, "ephemeral": 2}]))
    assert main(["--jobs", str(path), "--capacity", "1000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lanes"][0]["jobs"] == ["a"]


def test_the_lanes_command_reads_jobs_saved_with_a_bom(tmp_path, capsys):
    """A UTF-8 BOM (Windows editors write one) is dropped, as the trace readers drop it."""
    from impls.salus.lanes import main

    path = tmp_path / "jobs.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"name": "a", "persistent": 100, "ephemeral": 50}]).encode())
    assert main(["--jobs", str(path), "--capacity", "1000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lanes"][0]["jobs"] == ["a"]
