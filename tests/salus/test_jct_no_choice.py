"""python -m impls.salus.jct on a trace where no policy has a choice (one job, or each job
arriving once the one before it has begun its last iteration): every policy runs one schedule,
so FIFO/SRTF is 1 by construction and the claim is not judged on it."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impls.salus import jct
from impls.salus.core import trace_files
from impls.salus.core.simulator import simulate


def _trace(arrivals, durations) -> trace_files.JobTrace:
    return trace_files.JobTrace([str(i) for i in range(len(arrivals))], np.asarray(arrivals, float),
                                np.asarray(durations, float), {})


def _replayed_choice(jobs, ms, warm) -> bool:
    """The oracle: replay FIFO's iteration timing by hand; a job arriving at or before the start
    of the last iteration of the job before it (arrival order; ties: two at one time) found
    two jobs ready at that decision."""
    from impls.salus.core.simulator import sim_jobs

    sim = sorted(sim_jobs(jobs, ms, None, 0.0, "interleave", warm), key=lambda j: (j.arrival_ticks, j.job_id))
    free, last_start = 0, None
    for job in sim:
        if last_start is not None and job.arrival_ticks <= last_start:
            return True
        start, n = max(free, job.arrival_ticks), job.total_iterations
        first, rest = job.iteration_ticks, job.warm_ticks or job.iteration_ticks
        last_start = start if n <= 1 else start + first + (n - 2) * rest
        free = last_start + (first if n <= 1 else rest)
    return False


def _choice(arrivals, durations, iteration_ms=100.0, switch_ms=0.0) -> bool:
    """The simulator's ``had_a_choice`` under every policy, checked against the replay."""
    jobs, ms, warm = jct.simulator_jobs(_trace(arrivals, durations), iteration_ms, switch_ms)
    flags = {simulate(jobs, name, ms, warm_iteration_ms=warm)["had_a_choice"] for name in ("fifo", "srtf", "fair")}
    assert flags == {_replayed_choice(jobs, ms, warm)}
    return flags.pop()


def test_a_one_job_trace_is_not_judged(tmp_path, capsys):
    path = tmp_path / "one.csv"
    path.write_text("submit_time,duration\n5,100\n")
    assert jct.main(["--trace", str(path)]) == 0
    out = capsys.readouterr().out
    assert ": 1 job over 0 s" in out
    assert f"(claim {jct.CLAIM}): not judged on this trace: no job was ever ready while another was" in out
    assert "not reproduced" not in out
    assert jct.main(["--trace", str(path), "--json", "-"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["verdict"] == "not judged" and result["not_judged"] == jct.NO_CHOICE
    assert result["had_a_choice"] is False and result["fifo_over_srtf"] == 1.0


def test_a_trace_with_a_choice_is_judged(tmp_path, capsys):
    """hand3: 10 s at 0, 2 s at 1, 1 s at 2: SRTF runs the short ones first."""
    path = tmp_path / "hand3.csv"
    path.write_text("submit_time,duration\n0,10\n1,2\n2,1\n")
    assert jct.main(["--trace", str(path), "--json", "-"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["had_a_choice"] is True and result["not_judged"] is None
    assert result["verdict"] != "not judged" and result["fifo_over_srtf"] > 1


@pytest.mark.parametrize("arrivals, durations, choice", [
    ([0.0], [3.0], False),
    ([0.0, 5.0, 20.0], [3.0, 10.0, 1.0], False),     # each after the one before is done
    ([0.0, 2.95], [3.0, 1.0], False),     # during the last iteration (2.9-3.0 s): it waits, no choice
    ([0.0, 2.9], [3.0, 1.0], True),       # at the last iteration's start: both ready there
    ([0.0, 2.85], [3.0, 1.0], True),
    ([0.0, 0.0], [1.0, 1.0], True),       # two at one time
    ([0.0, 0.05], [0.05, 1.0], False),    # at the one iteration's end
    ([0.0, 0.04], [0.05, 1.0], False),    # during a one-iteration job: no boundary before its end
])
def test_a_choice_is_two_jobs_ready_at_one_decision(arrivals, durations, choice):
    assert _choice(arrivals, durations) is choice


def test_a_switch_cost_moves_the_last_iteration():
    """1 s per switch: the first job's only switched iteration is its first, so its last
    iteration starts at 1 + 2.9 = 3.9 s; a job arriving at 3.5 s is ready there."""
    assert _choice([0.0, 3.5], [3.0, 1.0], switch_ms=1000.0) is True
    assert _choice([0.0, 3.95], [3.0, 1.0], switch_ms=1000.0) is False


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.integers(0, 40), min_size=1, max_size=8),
       lengths=st.lists(st.integers(1, 30), min_size=8, max_size=8),
       switch=st.sampled_from([0.0, 50.0]))
def test_without_a_choice_every_policy_runs_one_schedule(gaps, lengths, switch):
    """Arrivals and lengths in tenths of a second (iterations of 100 ms, so boundaries fall on
    arrivals): every policy's ``had_a_choice`` is the hand replay's, and where it says no,
    FIFO, SRTF and FAIR finish every job at one time."""
    arrivals = np.cumsum([g / 10 for g in gaps]) - gaps[0] / 10
    durations = [x / 10 for x in lengths[:len(gaps)]]
    if _choice(arrivals, durations, switch_ms=switch):
        return
    jobs, ms, warm = jct.simulator_jobs(_trace(arrivals, durations), 100.0, switch)
    finishes = [[j["finish_s"] for j in simulate(jobs, name, ms, warm_iteration_ms=warm)["jobs"]]
                for name in ("fifo", "srtf", "fair")]
    assert finishes[0] == finishes[1] == finishes[2]


def test_a_job_waiting_for_memory_is_no_choice():
    """Two jobs at one time: a choice, unless the memory budget admits one at a time (the
    other waits, not ready); FAIR's Python path says the same as its kernel."""
    jobs = [{"job_id": i, "workload": "w", "arrival_s": 0.0, "iterations": 3} for i in range(2)]
    ms, peaks = {"w": 10.0}, {"w": 100}
    assert simulate(jobs, "fifo", ms, peak_bytes=peaks)["had_a_choice"] is True
    assert simulate(jobs, "fair", ms, peak_bytes=peaks, fast=False)["had_a_choice"] is True
    for name in ("fifo", "srtf", "fair"):
        assert simulate(jobs, name, ms, memory_budget_bytes=150, peak_bytes=peaks)["had_a_choice"] is False
