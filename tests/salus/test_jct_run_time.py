"""The JCT command says before it runs when a trace will take long (FAIR outside its compiled
kernel), and a long queue does not make it long (no decision scans the jobs waiting)."""
from __future__ import annotations

import pytest

from impls.salus import jct
from impls.salus.core import simulator, trace_files

DAYS_60 = 60 * 86400


def _csv(path, text):
    path.write_text(text)
    return path


# ---------------------------------------------------------------- FAIR outside its kernel

def test_fair_past_its_kernel_is_said_before_it_runs_with_the_way_back(tmp_path, capsys):
    """Two jobs of 60 days hold 120 days of device time, past the 106.75 days FAIR's kernel
    counts in int64 picoseconds: the run steps in Python, and says so first."""
    path = _csv(tmp_path / "t.csv", f"submit_time,duration\n0,{DAYS_60}\n1,{DAYS_60}\n")
    assert jct.main(["--trace", str(path), "--policies", "fifo,fair", "--iteration-ms", "1e7"]) == 0
    err = capsys.readouterr().err
    assert ("warning: FAIR on this trace: its 120 days of device time pass the 106.75 days its compiled kernel "
            "counts (int64 picoseconds), so FAIR steps every iteration in Python, 1036 iterations at 1 us or more "
            "each") in err
    assert "--first 1 keeps it in the kernel" in err and "leave fair out of --policies" in err
    assert jct.main(["--trace", str(path), "--policies", "fifo,fair", "--iteration-ms", "1e7", "--first", "1"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert jct.main(["--trace", str(path), "--policies", "fifo,srtf", "--iteration-ms", "1e7"]) == 0
    assert "warning" not in capsys.readouterr().err                      # no fair: nothing to say


def test_the_step_limit_does_not_advise_a_larger_iteration_where_fair_stays_in_python(tmp_path, monkeypatch, capsys):
    path = _csv(tmp_path / "t.csv", f"submit_time,duration\n0,{DAYS_60}\n1,{DAYS_60}\n")
    monkeypatch.setattr(jct, "FAIR_MAX_ITERATIONS", 100)
    assert jct.main(["--trace", str(path), "--policies", "fair", "--iteration-ms", "1e7"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "raise --iteration-ms" not in err
    assert "1036 iterations with fair, --policies, expected at most 100 for FAIR" in err
    assert "a larger --iteration-ms cuts the iterations but not that; --first 1 keeps it in the kernel" in err
    short = _csv(tmp_path / "s.csv", "submit_time,duration\n0,100\n50,10\n")    # in the kernel: as before
    assert jct.main(["--trace", str(short), "--policies", "fair"]) == 2
    assert "raise --iteration-ms or take fewer jobs with --first" in capsys.readouterr().err


def test_the_kernel_test_is_the_simulators_own(tmp_path, monkeypatch):
    """:func:`jct.fair_kernel` says the kernel is used exactly where :func:`simulate` uses it."""
    ran = []
    real = simulator._FairRun.run
    monkeypatch.setattr(simulator._FairRun, "run", lambda self, *a: ran.append(1) or real(self, *a))
    for days, switch, fits in ((50, 0.0, True), (50, 5e6, False), (53.3, 0.0, True), (54, 0.0, False)):
        path = _csv(tmp_path / "t.csv", f"submit_time,duration\n0,{days * 86400}\n1,{days * 86400}\n")
        trace = trace_files.read_csv(path)
        ran.clear()
        jobs, ms, warm = jct.simulator_jobs(trace, 1e7, switch)
        simulator.simulate(jobs, "fair", ms, warm_iteration_ms=warm)
        assert jct.fair_kernel(trace, 1e7, switch)[0] == bool(ran) == fits, (days, switch)


# ---------------------------------------------------------------- long queues

@pytest.mark.parametrize("policy", ["fifo", "srtf", "fair"])
def test_a_long_queue_is_never_scanned_at_a_decision(monkeypatch, policy):
    """FIFO, SRTF and FAIR outside its kernel take each decision from a heap of keys: no
    decision looks at every waiting job (each did until a burst of 20,000 took minutes)."""
    from impls.salus.core import policies

    monkeypatch.setattr(policies.POLICIES[policy], "choose", lambda self, jobs: pytest.fail(f"{len(jobs)} jobs scanned"))
    trace = [{"job_id": i, "workload": "a", "arrival_s": 0.0, "iterations": 3 + i % 5} for i in range(200)]
    result = simulator.simulate(trace, policy, {"a": 1.0}, fast=False, warm_iteration_ms={"a": 1.5})
    assert result["done"] == 200 and result["iterations"] == sum(3 + i % 5 for i in range(200))
