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


# ---------------------------------------------------------------- inputs a second review found

@pytest.mark.parametrize("late", [False, True])
def test_a_stray_quote_is_refused_at_its_line_not_read_into_later_rows(tmp_path, late):
    """An opening quote with no closing one used to swallow the rows after it into an
    ignored column, and the trace lost jobs without a word."""
    tail = "D,3,1,z\n" if late else 'D,3,1,"fine"\nE,4,1,z\n'
    path = _csv(tmp_path / "t.csv", f'job_id,submit_time,duration,note\nA,0,10,x\nB,1,1,"oops\nC,2,1,y\n{tail}')
    with pytest.raises(ValueError, match=r"t\.csv:3: not a CSV row this reader can read .*read through line"):
        trace_files.read_csv(path)


def test_quoted_fields_that_close_still_read_across_lines(tmp_path):
    path = _csv(tmp_path / "t.csv", 'job_id,submit_time,duration,note\nA,0,10,x\n'
                                    'B,1,2,"a ""quoted"" note, with a comma\nover two lines"\nC,3,1,5" screen\n')
    trace = trace_files.read_csv(path)
    assert trace.ids == ["A", "B", "C"] and trace.duration_s.tolist() == [10.0, 2.0, 1.0]


@pytest.mark.parametrize("value, unit, words", [
    ("1507338000000", "s", "milliseconds since 1970? --time-unit ms reads every number of the file, durations too"),
    ("1507338000000000", "s", "microseconds or nanoseconds since 1970"),
    ("1507338000000000", "ms", "read as milliseconds is thousands of years"),
    ("1507338000000000000", "ms", "microseconds or nanoseconds since 1970"),
    ("9000000000", "h", "a time in a finer unit"),
])
def test_an_epoch_in_a_finer_unit_is_refused_in_every_unit_with_what_the_unit_does(tmp_path, value, unit, words):
    """The hint to pass --time-unit ms says it reads durations as milliseconds too, and an
    epoch in micro- or nanoseconds is refused whatever the unit, not read as decades of gaps."""
    path = _csv(tmp_path / "t.csv", f"submit_time,duration\n{value},3600\n{value}5,600\n")
    with pytest.raises(ValueError, match=words.replace("?", r"\?")):
        trace_files.read_csv(path, unit=unit)


def test_jobs_without_a_start_or_an_end_are_left_out_and_counted(tmp_path):
    path = _csv(tmp_path / "t.csv", "job_id,submit_time,start_time,end_time\nA,0,0,10\nB,1,1,2\nC,2,3,4\n"
                                    "D,3,,\nE,4,5,\nF,5,NULL,NULL\nG,6,7,None\nH,7,\\N,nan\n")
    trace = trace_files.read_csv(path)
    assert trace.ids == ["A", "B", "C"]
    assert trace.left_out == {trace_files.NEVER_STARTED: 3, trace_files.STILL_RUNNING: 2}
    with pytest.raises(ValueError, match=r"t\.csv:2: submit_time is empty"):
        trace_files.read_csv(_csv(tmp_path / "t.csv", "submit_time,start_time,end_time\n,,2\n1,1,2\n"))


@pytest.mark.parametrize("attempts", [5, "a", {"start_time": "2017-10-07 00:00:02", "end_time": "2017-10-07 00:00:09"}])
def test_an_attempts_field_that_is_not_a_list_is_malformed_not_an_internal_error(tmp_path, attempts):
    job = _job("c", "2017-10-07 00:00:02", "2017-10-07 00:00:02", "2017-10-07 00:00:09")
    job["attempts"] = attempts
    trace = philly_log.read_philly(_philly(tmp_path / "log", [_ok("a", 0), _ok("b", 1), job]))
    assert trace.ids == ["a", "b"] and trace.left_out == {philly_log.MALFORMED_ATTEMPTS: 1}


def test_a_detail_that_is_not_a_list_is_malformed_not_a_job_on_no_gpu(tmp_path):
    job = _job("c", "2017-10-07 00:00:02", "2017-10-07 00:00:02", "2017-10-07 00:00:09")
    job["attempts"][0]["detail"] = {"ip": "m", "gpus": ["gpu0"]}
    for gpus in (1, None):
        trace = philly_log.read_philly(_philly(tmp_path / "log", [_ok("a", 0), _ok("b", 1), job]), gpus=gpus)
        assert trace.ids == ["a", "b"] and trace.left_out == {philly_log.MALFORMED_GPUS: 1}


def test_a_row_without_a_start_still_needs_a_readable_arrival(tmp_path):
    path = _csv(tmp_path / "t.csv", "job_id,submit_time,start_time,end_time\nA,0,0,10\nB,garbage,,\n")
    with pytest.raises(ValueError, match=r"t\.csv:3: .*garbage"):
        trace_files.read_csv(path)
