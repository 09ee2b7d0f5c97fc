"""How the trace readers take jobs listed twice (the same listing, or another one later), Philly
jobs still running or with an attempt without an end, attempts out of order, overlapping or
before the submission, CSV rows that start before they arrive, and non-finite busy intervals."""
from __future__ import annotations

import json
import math

import pytest

from impls.salus import jct
from impls.salus.core import philly_log, trace_files
from impls.salus.memory.utilisation import busy_timeline

DAY = "2017-10-07"


def _philly(path, jobs):
    path.write_text(json.dumps(jobs))
    return path


def _job(jobid, submitted, *attempts, status="Pass"):
    """A one-GPU Philly job; ``attempts`` are (start, end) as times of day (None: no time);
    ``status`` None: the job has none."""
    job = {"vc": "vc1", "status": status, "submitted_time": f"{DAY} {submitted}",
           "attempts": [{"start_time": start and f"{DAY} {start}", "end_time": end and f"{DAY} {end}",
                         "detail": [{"ip": "m", "gpus": ["gpu0"]}]} for start, end in attempts]}
    if jobid is not None:
        job["jobid"] = jobid
    if status is None:
        del job["status"]
    return job


def _other(jobid="b"):
    return _job(jobid, "00:00:10", ("00:00:10", "00:10:10"))


# ---------------------------------------------------------------- a job id listed again

def test_a_philly_job_listed_again_is_read_once_and_counted(tmp_path, capsys):
    one = _job("j1", "00:00:00", ("00:00:00", "01:00:00"))
    path = _philly(tmp_path / "log", [one, _other("j2"), one, _other("j2")])
    trace = philly_log.read_philly(path, vc="vc1")
    assert trace.ids == ["j1", "j2"]
    assert trace.left_out == {trace_files.LISTED_BEFORE: 2}
    assert jct.main(["--philly", str(path)]) == 0
    assert f"2 jobs over 10 s (dates read in America/Los_Angeles); left out 2 {trace_files.LISTED_BEFORE}" \
        in capsys.readouterr().out


def test_two_philly_snapshots_concatenated_read_each_job_from_the_later(tmp_path):
    """Older snapshot first: j1 running then finished, j2 finished once then run again, j3 the
    same in both. The first listing of j1 / j2 must not be read before the later is seen."""
    older = [_job("j1", "00:00:00", ("00:00:00", None)), _job("j2", "00:00:05", ("00:00:05", "00:00:10")),
             _other("j3")]
    newer = [_job("j1", "00:00:00", ("00:00:00", "01:00:00")),
             _job("j2", "00:00:05", ("00:00:05", "00:00:10"), ("00:01:00", "00:02:00")), _other("j3")]
    trace = philly_log.read_philly(_philly(tmp_path / "log", older + newer))
    assert dict(zip(trace.ids, trace.duration_s.tolist())) == {"j1": 3600.0, "j2": 65.0, "j3": 600.0}
    assert trace.left_out == {philly_log.LISTED_AGAIN_LATER: 2, trace_files.LISTED_BEFORE: 1}


def test_a_philly_listing_between_two_copies_of_the_last_is_the_one_left_out(tmp_path):
    one, other = _job("j1", "00:00:00", ("00:00:00", "01:00:00")), _job("j1", "00:00:00", ("00:00:00", None))
    trace = philly_log.read_philly(_philly(tmp_path / "log", [one, other, one, _other()]))
    assert trace.ids == ["j1", "b"] and trace.duration_s.tolist() == [3600.0, 600.0]
    assert trace.left_out == {philly_log.LISTED_AGAIN_LATER: 1, trace_files.LISTED_BEFORE: 1}


def test_philly_jobs_without_a_jobid_are_not_taken_for_one_job(tmp_path):
    one = _job(None, "00:00:00", ("00:00:00", "01:00:00"))
    trace = philly_log.read_philly(_philly(tmp_path / "log", [one, one, _other()]))
    assert len(trace) == 3 and trace.left_out == {}


def test_a_csv_job_id_listed_again_is_read_once_and_counted(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,duration\na,0,100\nb,5,10\na,0,100\n,7,1\n,8,1\n")
    trace = trace_files.read_csv(path)
    assert trace.ids == ["a", "b", "4", "5"]             # rows without an id are named by position
    assert trace.left_out == {trace_files.LISTED_BEFORE: 1}
    path.write_text("submit_time,duration\n0,100\n5,10\n0,100\n")
    assert len(trace_files.read_csv(path)) == 3          # no id column: rows are not compared


@pytest.mark.parametrize("rows", ["j1,0,100\nb,5,10\nj1,0,40\n", "j1,0,100\nb,5,10\nj1,2,100\n"])
def test_a_csv_job_id_on_two_rows_with_other_times_is_refused_naming_both_lines(tmp_path, rows):
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,duration\n" + rows)
    with pytest.raises(ValueError) as err:
        trace_files.read_csv(path)
    text = str(err.value)
    assert "t.csv:4: job_id 'j1' also on line 2 with other times; expected one row per job" in text
    assert "\n" not in text


def test_csv_rows_alike_after_reading_are_one_listing(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("JobID,submit_time,start_time,end_time\n"
                    "a,2017-10-07 00:00:00,2017-10-07 00:00:00,2017-10-07 00:10:00\n"
                    "a,2017-10-07T00:00:00,2017-10-07 00:05:00,2017-10-07 00:15:00\n")
    trace = trace_files.read_csv(path)
    assert trace.ids == ["a"] and trace.duration_s.tolist() == [600.0]
    assert trace.left_out == {trace_files.LISTED_BEFORE: 1}


# ---------------------------------------------------------------- Philly attempts

def test_a_job_is_still_running_when_its_status_says_so_or_its_last_attempt_has_no_end(tmp_path):
    path = _philly(tmp_path / "log", [
        _job("status", "00:00:00", ("00:00:00", "01:00:00"), status="Running"),
        _job("listed-first", "00:00:00", ("02:00:00", None), ("00:00:00", "01:00:00"), status=None),
        _job("pass", "00:00:00", ("00:00:00", "01:00:00"), ("02:00:00", None)),
        _other()])
    trace = philly_log.read_philly(path)
    assert trace.ids == ["b"]
    assert trace.left_out == {philly_log.STILL_RUNNING: 3}


@pytest.mark.parametrize("status", ["Pass", "Killed", "Failed", None])
def test_an_earlier_attempt_without_an_end_in_a_finished_job_is_its_own_reason(tmp_path, status):
    path = _philly(tmp_path / "log", [
        _job("a", "00:00:00", ("00:00:00", None), ("02:00:00", "03:00:00"), status=status),
        _job("c", "00:00:00", ("02:00:00", "03:00:00"), ("00:00:00", None), status=status),
        _other()])
    trace = philly_log.read_philly(path)
    assert trace.ids == ["b"]
    assert trace.left_out == {philly_log.OPEN_ATTEMPT: 2}


def test_overlapping_attempts_count_their_time_once(tmp_path):
    path = _philly(tmp_path / "log", [
        _job("overlap", "00:00:00", ("00:00:00", "01:00:00"), ("00:30:00", "01:00:00")),
        _job("apart", "00:00:01", ("02:00:00", "02:10:00"), ("00:00:01", "00:00:11"), ("00:00:05", "00:00:06")),
    ])
    trace = philly_log.read_philly(path)
    assert dict(zip(trace.ids, trace.duration_s.tolist())) == {"overlap": 3600.0, "apart": 610.0}


def test_attempts_that_overlap_in_part_count_the_time_they_cover():
    """A retry that starts before the previous attempt ended and runs on past it: the job ran
    for the union of the two intervals (0-100 and 50-150 s: 150 s, not 200 s), in any order."""
    assert philly_log._covered([(0.0, 100.0), (50.0, 150.0)]) == 150.0
    assert philly_log._covered([(50.0, 150.0), (0.0, 100.0)]) == 150.0
    assert philly_log._covered([(0.0, 100.0), (90.0, 120.0), (110.0, 200.0), (300.0, 310.0)]) == 210.0


def test_a_philly_job_whose_attempts_overlap_in_part_has_their_union_as_its_length(tmp_path):
    path = _philly(tmp_path / "log", [
        _job("retry", "00:00:00", ("00:00:00", "01:00:00"), ("00:30:00", "01:30:00")),   # 0-90 min
        _job("chain", "00:00:00", ("00:20:00", "00:40:00"), ("00:00:00", "00:30:00"), ("00:35:00", "00:50:00")),
    ])
    trace = philly_log.read_philly(path)
    assert dict(zip(trace.ids, trace.duration_s.tolist())) == {"retry": 5400.0, "chain": 3000.0}


def test_a_philly_job_started_before_it_was_submitted_is_left_out_and_counted(tmp_path):
    path = _philly(tmp_path / "log", [_job("a", "05:00:00", ("00:00:00", "01:00:00")),
                                      _job("c", "00:00:20", ("00:00:20", "00:00:30"), ("00:00:10", "00:00:15")),
                                      _other()])
    trace = philly_log.read_philly(path)
    assert trace.ids == ["b"]
    assert trace.left_out == {philly_log.STARTED_BEFORE_SUBMITTED: 2}


# ---------------------------------------------------------------- CSV: a start before the arrival (left out, as in Philly)

@pytest.mark.parametrize("rows, shown", [
    ("a,2017-10-07 10:00:00,2017-10-07 08:00:00,2017-10-07 09:00:00\n", "'2017-10-07 08:00:00'"),  # end too
    ("a,10,5,20\n", "'5'"),
])
def test_a_csv_row_that_starts_before_it_arrives_is_left_out_as_philly_leaves_it(tmp_path, rows, shown):
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,start_time,end_time\nz,0,0,1\n" + rows)
    trace = trace_files.read_csv(path)
    assert trace.ids == ["z"] and trace.left_out == {philly_log.STARTED_BEFORE_SUBMITTED: 1}
    assert trace.left_out_first == {philly_log.STARTED_BEFORE_SUBMITTED: f"{path}:3"}
    path.write_text("job_id,submit_time,start_time,end_time\n" + rows)
    with pytest.raises(ValueError) as err:                      # nothing else: the error says why
        trace_files.read_csv(path)
    text = str(err.value)
    assert f"t.csv:2: start_time {shown} is before submit_time" in text and "\n" not in text


def test_a_csv_arrival_in_seconds_beside_start_dates_is_not_compared(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,start_time,end_time\n"
                    "a,0,2017-10-07 09:00:00,2017-10-07 10:00:00\nb,5,2017-10-07 10:00:05,2017-10-07 10:10:05\n")
    assert trace_files.read_csv(path).duration_s.tolist() == [3600.0, 600.0]


# ---------------------------------------------------------------- busy_timeline

@pytest.mark.parametrize("intervals, t_end, shown", [
    ([(0.0, math.nan)], 1.0, "nan"), ([(0.0, math.inf)], 1.0, "inf"), ([(-math.inf, 0.5)], 1.0, "-inf"),
    ([(0.0, 0.5)], math.inf, "inf"), ([(0.0, 0.5)], math.nan, "nan"),
])
def test_busy_timeline_refuses_values_that_are_not_finite(intervals, t_end, shown):
    with pytest.raises(ValueError, match=shown):
        busy_timeline(intervals, t_end, 2)
