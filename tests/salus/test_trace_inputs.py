"""Inputs of the Salus JCT command and its sensitivity script that a probe found read wrongly:
short jobs, unreadable or misplaced dates, absurd lengths, malformed Philly fields, and the
sensitivity script's flags."""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from impls.salus import jct
from impls.salus.core import philly_log, trace_files, trace_times
from impls.salus.core.simulator import simulate


def _csv(path, text):
    path.write_text(text)
    return path


def _philly(path, jobs):
    path.write_text(json.dumps(jobs))
    return path


def _job(jobid, submitted, start, end, gpus=("gpu0",)):
    return {"jobid": jobid, "vc": "vc1", "status": "Pass", "submitted_time": submitted,
            "attempts": [{"start_time": start, "end_time": end, "detail": [{"ip": "m", "gpus": gpus}]}]}


def _ok(jobid, second):
    t = f"2017-10-07 00:00:0{second}"
    return _job(jobid, t, t, f"2017-10-07 00:01:0{second}")


# ---------------------------------------------------------------- 1: jobs shorter than an iteration

def test_jobs_shorter_than_one_iteration_are_counted_and_warned_about(tmp_path, capsys):
    path = _csv(tmp_path / "t.csv", "job_id,submit_time,duration\nA,0,10\nB,1,2\nC,2,0.5\n")
    assert jct.main(["--trace", str(path), "--time-unit", "ms", "--json", str(tmp_path / "r.json")]) == 0
    err = capsys.readouterr().err
    assert "3 of 3 jobs are shorter than one iteration (100 ms)" in err
    assert "SRTF cannot preempt" in err and "--iteration-ms" in err and "--time-unit" in err
    assert json.loads((tmp_path / "r.json").read_text())["shorter_than_iteration"] == 3
    assert jct.main(["--trace", str(path)]) == 0                 # seconds: 0.5 s is 5 iterations
    out = capsys.readouterr()
    assert "warning" not in out.err and "(125 iterations)" in out.out
    assert jct.main(["--trace", str(path), "--iteration-ms", "1000"]) == 0
    out = capsys.readouterr()
    assert "1 of 3 jobs are shorter than one iteration (1000 ms)" in out.err
    assert "(13 iterations; 1 job shorter, one iteration each)" in out.out


# ---------------------------------------------------------------- 2, 8: Philly fields

def test_philly_dates_in_another_form_are_their_own_reason_and_named(tmp_path):
    path = _philly(tmp_path / "log", [_job("a", "10/07/2017 00:00:00", "10/07/2017 00:00:00", "10/07/2017 00:00:10"),
                                      _job("b", 1507338699, "2017-10-07 00:00:01", "2017-10-07 00:00:03")])
    with pytest.raises(ValueError) as err:
        philly_log.read_philly(path)
    text = str(err.value)
    assert f"2 {philly_log.UNREADABLE_DATE}" in text and "no submitted_time" not in text
    assert "job 'a': submitted_time '10/07/2017 00:00:00'; expected a date such as 2017-10-07 01:11:39" in text


def test_one_job_with_another_date_form_is_counted_not_said_never_to_have_run(tmp_path):
    path = _philly(tmp_path / "log", [_ok("a", 0), _ok("b", 1),
                                      _job("c", "2017-10-07 00:00:02", "2017/10/07 00:00:02", "2017/10/07 00:00:09")])
    trace = philly_log.read_philly(path)
    assert trace.ids == ["a", "b"]
    assert trace.left_out == {philly_log.UNREADABLE_DATE: 1}


def test_missing_philly_times_still_read_as_missing(tmp_path):
    path = _philly(tmp_path / "log", [_ok("a", 0), _job("b", None, "2017-10-07 00:00:02", "2017-10-07 00:00:09"),
                                      _job("c", "2017-10-07 00:00:02", "2017-10-07 00:00:02", "None")])
    assert philly_log.read_philly(path).left_out == {"no submitted_time": 1, "still running at the snapshot": 1}


@pytest.mark.parametrize("gpus", ["gpu0", 1, {"gpu0": 1}])
def test_a_gpus_field_that_is_not_a_list_is_malformed(tmp_path, gpus):
    path = _philly(tmp_path / "log", [_ok("a", 0), _ok("b", 1),
                                      _job("c", "2017-10-07 00:00:02", "2017-10-07 00:00:02", "2017-10-07 00:00:09",
                                           gpus=gpus)])
    for wanted in (1, None):
        trace = philly_log.read_philly(path, gpus=wanted)
        assert "c" not in trace.ids
        assert trace.left_out[philly_log.MALFORMED_GPUS] == 1


def test_an_offered_load_printed_as_1_is_not_said_to_be_above_1(capsys):
    result = {"source": "t", "jobs": 2, "span_s": 1.0, "time_zone": None, "left_out": {},
              "trace_offered_load": 4.0, "offered_load": 1.0000000000000004, "gaps_scaled_by": 4.0,
              "durations": dict.fromkeys(("median", "mean", "p90", "min", "max", "scv"), 1.0),
              "iteration_ms": 100.0, "switch_ms": 0.0, "iterations": 20, "shorter_than_iteration": 0,
              "policies": {}, "fifo_over_srtf": None}
    jct._print(result)
    out = capsys.readouterr().out
    assert "offered load 1 (the trace's own" in out and "above 1" not in out
    jct._print({**result, "offered_load": 1.01})
    assert "offered load 1.01 (the trace's own: 4; gaps scaled by 4); above 1 jobs queue" in capsys.readouterr().out


# ---------------------------------------------------------------- 4, 7: the CSV reader (3: test_jct_trace)

def test_a_json_file_given_as_a_csv_is_named_json_and_not_echoed(tmp_path):
    jobs = [_ok(str(i), i % 10) for i in range(2000)]
    path = _philly(tmp_path / "log.json", jobs)
    with pytest.raises(ValueError) as err:
        trace_files.read_csv(path)
    text = str(err.value)
    assert "looks like JSON" in text and "--philly" in text and len(text) < 300


def test_a_wide_header_is_cut_in_the_message(tmp_path):
    path = _csv(tmp_path / "t.csv", ",".join(f"column{i}" for i in range(400)) + "\n" + ",".join("1" * 400) + "\n")
    with pytest.raises(ValueError) as err:
        trace_files.read_csv(path)
    assert "column0, column1" in str(err.value) and "column399" not in str(err.value)
    assert len(str(err.value)) < 400


def test_the_simulator_refuses_a_job_too_long_for_its_clock():
    jobs = [{"job_id": 0, "workload": "a", "arrival_s": 0.0, "iterations": 10 ** 300}]
    with pytest.raises(ValueError, match=r"iterations of 100 ms: 1e\+15 s or more of device time"):
        simulate(jobs, "srtf", {"a": 100.0})
    jobs[0]["iterations"] = 10 ** 10                 # 1e9 s: simulated
    assert simulate(jobs, "srtf", {"a": 100.0})["avg_jct_s"] == pytest.approx(1e9)


# ---------------------------------------------------------------- 5, 6: the sensitivity script

@pytest.fixture
def sensitivity(load_script):
    return load_script("salus_trace_sensitivity")


@pytest.mark.parametrize("args, words", [
    (["--param", "load", "--values", "1e-300"], "--values (--param load), expected a number in [1e-06, 1000000]"),
    (["--param", "load", "--values", "1e300"], "expected a number in [1e-06, 1000000]"),
    (["--param", "none", "--lengths", "1e300"], "--lengths, expected seconds > 0 and <= 1e+09"),
    (["--param", "n_jobs", "--values", "1"], "expected an integer in [2, 100000]"),
    (["--param", "none", "--values", "-3"], "got --values with --param none"),
    (["--param", "spread"], "got no --values"),
    (["--param", "none", "--seeds", "0"], "--seeds"),
    (["--param", "none", "--json", "/nonexistent/x.json"], "directory /nonexistent does not exist, --json"),
])
def test_sensitivity_bad_input_is_one_line_before_any_work(sensitivity, monkeypatch, capsys, args, words):
    monkeypatch.setattr(sensitivity, "profiled_ms", lambda base: pytest.fail("worked before checking its input"))
    assert sensitivity.main(args) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_sensitivity_profile_follows_the_environment_and_json_is_written(sensitivity, monkeypatch, tmp_path,
                                                                         capsys):
    seen = []
    real = sensitivity.base_sizes
    monkeypatch.setattr(sensitivity, "base_sizes", lambda profile, trace: seen.append(profile) or real(profile, trace))
    monkeypatch.setattr(sensitivity, "profiled_ms", lambda base: (dict.fromkeys(base["mix"], 10.0),) * 2)
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    out = tmp_path / "rows.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # numpy's "All-NaN slice" among them
        assert sensitivity.main(["--param", "n_jobs", "--values", "2", "--seeds", "2", "--json", str(out)]) == 0
    assert seen == ["smoke"]
    rows = json.loads(out.read_text())
    assert rows[0]["n_jobs"] == 2 and rows[0]["seeds"] == 2
    assert sensitivity.main(["--param", "none", "--seeds", "1", "--profile", "quick"]) == 0
    assert seen[-1] == "quick"


def test_sensitivity_load_median_of_no_load_is_nan_without_a_warning(sensitivity):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(sensitivity._median(np.array([math.nan, math.nan])))
        assert sensitivity._median(np.array([math.nan, 2.0, 4.0])) == 3.0
