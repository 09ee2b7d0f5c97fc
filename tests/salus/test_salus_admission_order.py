"""Admission order, makespan over done jobs, trace weights and the hyper-parameter legend.

Under lanes the executor admits as Salus's ``processRequests`` (and the lane manager and
the lane simulator) do: a waiting job that does not fit does not block the ones behind it.
The plain executor's peak-sum admission stays head-of-line, as its simulator models it.
"""
from __future__ import annotations

import math

import pytest

from impls.salus.core.executor import Executor, Submission
from impls.salus.core.simulator import simulate
from impls.salus.core.traces import poisson_trace
from impls.salus.experiments.scheduling import _policy_row
from impls.salus.memory.lane_executor import LaneExecutor
from impls.salus.memory.lane_sim import replay
from impls.salus.memory.lanes import LaneJob, LaneManager
from salus_fakes import FakeClock, FakeJob

# bytes: (persistent, ephemeral); a capacity of 100 B holds two "small" jobs (40 B each) at
# once, and a "big" one (70 B) only alone
MEMORY = {"small": (10, 30), "big": (10, 60)}
MIXES = {
    # the big job waits for the first small one; the second small one runs past it at t=0
    "one skip": [("small", 5), ("big", 1), ("small", 1)],
    # ... and when that one leaves, the third small one runs past it again
    "two skips": [("small", 6), ("big", 1), ("small", 2), ("small", 1)],
}


def _lane_run(mix):
    clock = FakeClock()
    memory = {w: {"persistent_bytes": p, "ephemeral_bytes": e} for w, (p, e) in MEMORY.items()}
    ex = LaneExecutor("pack", "cpu", capacity_bytes=100, memory=memory, rule="salus", clock=clock, sleep=clock.sleep)
    # one iteration = 1 s of fake time; all arrive at t=0 in job-id order
    return ex.run([Submission(FakeJob(clock, i, 1000.0, n, workload=w), job_id=i) for i, (w, n) in enumerate(mix)])


@pytest.mark.parametrize("name", list(MIXES))
def test_the_lane_executor_admits_past_a_waiting_job_as_the_lane_simulator_does(name):
    mix = MIXES[name]
    res = _lane_run(mix)
    # the lane simulator: each job alone in its lane (the faithful rule), the lanes sharing
    # one device equally: with iterations of 1 s taken in turn, the same finishing times
    sim = replay([{"name": str(i), "persistent": MEMORY[w][0], "ephemeral": MEMORY[w][1], "work_s": float(n)}
                  for i, (w, n) in enumerate(mix)], 100, "salus", parallel_lanes=1)
    assert sim["violations"] == [] and sim["never_admitted"] == []
    assert {str(j["job_id"]): j["finish_s"] for j in res["jobs"]} == pytest.approx(sim["finish_s"], abs=1e-9)
    assert res["avg_jct_s"] == pytest.approx(sim["avg_jct_s"])
    assert res["makespan_s"] == pytest.approx(sim["makespan_s"])
    # at t=0 the executor admits exactly the jobs the lane manager admits on submission
    manager = LaneManager(100, "salus")
    at_once = {i for i, (w, _) in enumerate(mix) if manager.submit(LaneJob(str(i), *MEMORY[w]))}
    assert {j["job_id"] for j in res["jobs"] if j["admitted_s"] == 0.0} == at_once
    assert 1 not in at_once and 2 in at_once   # the big job waits; the small one behind it does not


def test_the_plain_executor_keeps_head_of_line_admission_as_its_simulator_does():
    # peak-sum budget of 100 B: job 1 (70 B) waits for job 0 (40 B), and job 2 (40 B) waits behind it
    clock = FakeClock()
    specs = [(0, 40, 5), (1, 70, 1), (2, 40, 1)]
    ex = Executor("pack", "cpu", memory_budget_bytes=100, clock=clock, sleep=clock.sleep)
    res = ex.run([Submission(FakeJob(clock, i, 1000.0, n), peak_bytes=p) for i, p, n in specs])
    sim = simulate([{"job_id": i, "workload": "w", "arrival_s": 0.0, "iterations": n, "peak_bytes": p}
                    for i, p, n in specs], "pack", {"w": 1000.0}, memory_budget_bytes=100)
    assert [(j["job_id"], j["admitted_s"], j["finish_s"]) for j in res["jobs"]] == [(0, 0, 5), (1, 5, 6), (2, 6, 7)]
    assert [j["finish_s"] for j in sim["jobs"]] == pytest.approx([j["finish_s"] for j in res["jobs"]])


def test_makespan_is_over_the_done_jobs_in_the_simulator_and_the_executor():
    # job 1 arrives at t=10 with a peak over the budget and fails there; job 0 finished at 1 s
    clock = FakeClock()
    ex = Executor("fifo", "cpu", memory_budget_bytes=10, clock=clock, sleep=clock.sleep)
    res = ex.run([Submission(FakeJob(clock, 0, 1000.0, 1), peak_bytes=1),
                  Submission(FakeJob(clock, 1, 1000.0, 5), arrival=10.0, peak_bytes=100)])
    sim = simulate([{"job_id": 0, "workload": "a", "arrival_s": 0.0, "iterations": 1},
                    {"job_id": 1, "workload": "big", "arrival_s": 10.0, "iterations": 5}],
                   "fifo", {"a": 1000.0, "big": 1000.0}, memory_budget_bytes=10, peak_bytes={"a": 1, "big": 100})
    for run in (res, sim):
        assert run["failed"] == [1] and run["makespan_s"] == pytest.approx(1.0)
        assert _policy_row(run)["makespan_s"] == pytest.approx(1.0)
    # a run whose every job failed finished none: makespan 0
    clock = FakeClock()
    ex = Executor("fifo", "cpu", memory_budget_bytes=10, clock=clock, sleep=clock.sleep)
    assert ex.run([Submission(FakeJob(clock, 0, 1000.0, 1), arrival=3.0, peak_bytes=100)])["makespan_s"] == 0.0


@pytest.mark.parametrize("weights", [[1, 2, 3], [1], [0, 0], [-1, 2], [1, math.nan], [1, math.inf], "ab"])
def test_poisson_trace_refuses_weights_it_cannot_draw_with_naming_them(weights):
    with pytest.raises(ValueError, match="weights"):
        poisson_trace(10, 1.0, ["a", "b"], {"a": 10.0, "b": 20.0}, (1.0, 10.0), weights=weights)


def test_poisson_trace_draws_with_valid_weights():
    trace = poisson_trace(200, 1.0, ["a", "b"], {"a": 10.0, "b": 20.0}, (1.0, 10.0), seed=1, weights=[0, 2])
    assert {j["workload"] for j in trace} == {"b"}


def _hyperparam_data(n_workloads: int) -> dict:
    row = {"serial": {"failed": [], "makespan_s": 10.0}, "packed": {"failed": [], "makespan_s": 9.0}, "ratio": 10 / 9}
    return {"workloads": {f"w{i}": dict(row) for i in range(n_workloads)}, "rule": "salus", "host_workers": 2,
            "torch_threads": 4, "packed_torch_threads": 2, "n_jobs": 4, "iterations": 10,
            "device_name": "cpu", "paper": 2.38}


@pytest.mark.parametrize("n_workloads", [1, 3])
def test_the_hyperparam_legend_covers_no_ratio_label(n_workloads):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from impls.salus.figures import lanes as lane_figures

    fig = lane_figures.hyperparam_makespan(_hyperparam_data(n_workloads))
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    legends = list(fig.legends) + ([ax.get_legend()] if ax.get_legend() is not None else [])
    assert len(legends) == 1
    box = legends[0].get_window_extent(renderer)
    labels = [t for t in ax.texts if t.get_text().endswith("×")]
    assert len(labels) == n_workloads
    assert not [t.get_text() for t in labels if t.get_window_extent(renderer).overlaps(box)]


def test_hyperparam_busy_counts_a_failed_jobs_time_in_its_span():
    """With the makespan over done jobs only, a partly failed run's device time still falls
    within the span to its last iteration: event_busy is device seconds over that span."""
    from types import SimpleNamespace

    from impls.salus.experiments import hyperparam

    class Stub:
        iteration_log = [{"start_s": 0.0, "end_s": 1.0}, {"start_s": 1.0, "end_s": 4.0}]

        def run(self, submissions):
            return {"makespan_s": 1.0, "wall_s": 4.0, "done": 1, "failed": [1], "iterations": 2,
                    "jobs": [{"device_ms": 1000.0, "error": None}, {"device_ms": 3000.0, "error": "boom"}]}

    out = hyperparam._run(Stub(), [object(), object()], SimpleNamespace(kind="none"), bins=4)
    assert out["makespan_s"] == 1.0
    assert out["event_busy"] == pytest.approx(1.0)             # 4 device-seconds over 4 s, not over 1 s
    assert out["busy"]["busy_mean"] == pytest.approx(1.0)
