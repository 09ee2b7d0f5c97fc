"""The Salus command lines on a user's own inputs, where a probe found them wrong or unclear:
SRTF's rank with a switch cost, iterations the clock cannot hold, integers beyond float range,
and what the trace readers take a file to be."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from impls.salus import jct, lanes, switching
from impls.salus.core import philly_log, trace_files
from impls.salus.core.simulator import simulate

HUGE = "9" * 400        # an integer far beyond a float's range


def _csv(path, text):
    path.write_text(text)
    return path


# ---------------------------------------------------------------- SRTF with a switch cost

def test_srtf_with_a_switch_cost_ranks_a_new_job_by_its_length(tmp_path, capsys):
    """A (60 s) at 0, B (10 s) at 30, iterations of 100 ms, 1 s per switch. B is shorter than
    A's 30 s left, so SRTF runs it: B ends at 30 + 1 + 10 = 41 s (JCT 11), A pays its first
    switch and one more after B and ends at 73 (JCT 73): mean 42 s (an exact-fraction reference
    that ranks by the time not yet run gives it). Ranked as 100 x (0.1 + 1) s = 110 s, B waited
    behind A, as under FIFO: 51.5 s."""
    path = _csv(tmp_path / "switch.csv", "job_id,submit_time,duration\nA,0,60\nB,30,10\n")
    trace = trace_files.read_csv(str(path), "s", zone="UTC", gpus=None, gpu_column_needed=False)
    jobs, ms, warm = jct.simulator_jobs(trace, 100.0, 1000.0)
    for fast in (True, False):
        assert simulate(jobs, "srtf", ms, warm_iteration_ms=warm, fast=fast)["avg_jct_s"] == pytest.approx(42.0)
        assert simulate(jobs, "fifo", ms, warm_iteration_ms=warm, fast=fast)["avg_jct_s"] == pytest.approx(51.5)
    assert jct.main(["--trace", str(path), "--switch-ms", "1000", "--json", "-"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["policies"]["srtf"]["avg_jct_s"] == pytest.approx(42.0)
    assert result["fifo_over_srtf"] == pytest.approx(51.5 / 42.0)


def test_without_a_known_length_srtf_still_ranks_by_the_mean_so_far():
    """The suite's own simulations give no ``known_iteration_ms``: a job not yet run is ranked
    at its cold iteration time x its iterations, as the executor ranks it (B waits)."""
    jobs = [{"job_id": 0, "workload": "a", "arrival_s": 0.0, "iterations": 600},
            {"job_id": 1, "workload": "b", "arrival_s": 30.0, "iterations": 100}]
    ms, warm = {"a": 1100.0, "b": 1100.0}, {"a": 100.0, "b": 100.0}
    assert simulate(jobs, "srtf", ms, warm_iteration_ms=warm)["avg_jct_s"] == pytest.approx(51.5)


def test_a_known_iteration_time_must_be_a_number():
    jobs = [{"job_id": 0, "workload": "a", "arrival_s": 0.0, "iterations": 3, "known_iteration_ms": float("nan")}]
    with pytest.raises(ValueError, match="known_iteration_ms"):
        simulate(jobs, "srtf", {"a": 1.0})


def test_the_rank_is_unchanged_without_a_switch_cost():
    """With no switch cost a job's mean so far is its iteration time: jct gives no known time."""
    trace = trace_files.JobTrace(["a", "b"], np.array([0.0, 1.0]), np.array([3.0, 1.0]), {})
    assert all("known_iteration_ms" not in j for j in jct.simulator_jobs(trace, 100.0)[0])
    assert all(j["known_iteration_ms"] == pytest.approx(100.0) for j in jct.simulator_jobs(trace, 100.0, 5.0)[0])


# ---------------------------------------------------------------- numbers the tools cannot hold

def test_an_iteration_the_clock_cannot_hold_is_refused(tmp_path, capsys):
    """Iterations are whole picoseconds: at 1.5e-9 ms a 10 s job used to run as 6.7 s."""
    path = _csv(tmp_path / "t.csv", "submit_time,duration\n0,10\n1,2\n2,1\n")
    assert jct.main(["--trace", str(path), "--iteration-ms", "1.5e-9"]) == 2
    err = capsys.readouterr().err
    assert "--iteration-ms" in err and "picoseconds" in err and len(err.strip().splitlines()) == 1
    assert jct.main(["--trace", str(path), "--iteration-ms", str(jct.MIN_ITERATION_MS), "--policies", "fifo"]) == 0


@pytest.mark.parametrize("main, argv, flag", [
    (jct.main, ["--skip", HUGE], "--skip"),
    (jct.main, ["--first", HUGE], "--first"),
    (jct.main, ["--gpus", HUGE], "--gpus"),
    (switching.main, ["--repeats", HUGE], "--repeats"),
    (switching.main, ["--threads", "-" + HUGE], "--threads"),
])
def test_an_integer_flag_beyond_float_range_is_a_usage_error(tmp_path, capsys, main, argv, flag):
    if main is jct.main:
        argv = ["--trace", str(_csv(tmp_path / "t.csv", "submit_time,duration\n0,10\n1,2\n"))] + argv
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert flag in err and "integer of 400 digits" in err and "internal error" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_lane_job_of_more_bytes_than_a_float_holds_waits(tmp_path, capsys):
    """Such a job is read as any job larger than the device: it never fits, and is said so."""
    path = tmp_path / "jobs.json"
    path.write_text(f'[{{"name": "a", "persistent": {HUGE}, "ephemeral": 1}}]')
    assert lanes.main(["--jobs", str(path), "--capacity", "1000"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == {"lanes": [], "waiting": ["a"]} and "never be admitted" in out.err
    assert lanes.main(["--jobs", str(path), "--capacity", "1000", "--rule", "static", "--partitions", HUGE]) == 2
    assert "--partitions" in capsys.readouterr().err


# ---------------------------------------------------------------- what the readers name

@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_a_byte_that_is_not_utf8_is_named_with_its_line_and_offset(tmp_path, newline):
    """The 2-byte 'é' cut at the readers' 1 MiB chunk does not count: the Latin-1 byte does."""
    rows = [b"submit_time,duration"] + [b"%d,1" % i for i in range(200_000)]
    head = newline.join(rows) + newline
    pad = b"x" * ((1 << 20) - len(head) - len(b"0,1,") - 1)     # 'é' across the chunk's end
    text = head + b"0,1," + pad + "é".encode() + newline + b"1,2,caf\xe9" + newline
    where = len(text) - len(newline) - 1
    path = tmp_path / "t.csv"
    path.write_bytes(text)
    with pytest.raises(ValueError, match=rf"t\.csv:200003: byte 0xe9 \(offset {where}\) is not UTF-8; expected"):
        trace_files.read_csv(str(path))
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress(text))
    with pytest.raises(ValueError, match=rf"gz:200003: byte 0xe9 \(offset {where}\)"):
        trace_files.read_csv(str(gz))


def test_utf16_and_a_cut_last_character_are_named(tmp_path):
    path = tmp_path / "u.csv"
    path.write_bytes("submit_time,duration\n0,1\n".encode("utf-16"))
    with pytest.raises(ValueError, match=r"u\.csv: UTF-16 text \(its byte-order mark\); save it as UTF-8"):
        trace_files.read_csv(str(path))
    path.write_bytes(b"submit_time,duration\n0,1\n1,2\xc3")
    with pytest.raises(ValueError, match=r"u\.csv:3: its last bytes \(offset 28\) are not UTF-8"):
        trace_files.read_csv(str(path))
    path.write_bytes(b'[{"jobid": "caf\xe9"}]')
    with pytest.raises(ValueError, match=r"u\.csv:1: byte 0xe9 \(offset 15\) is not UTF-8; expected Philly"):
        philly_log.read_philly(str(path))


def test_a_comma_in_a_label_of_a_tab_separated_header_does_not_make_it_comma_separated(tmp_path):
    path = _csv(tmp_path / "t.tsv", "submit_time\tduration\tnote (s, approx)\n0\t10\tx\n5\t2\ty, z\n")
    trace = trace_files.read_csv(str(path))
    assert list(trace.arrival_s) == [0.0, 5.0] and list(trace.duration_s) == [10.0, 2.0]
    semicolons = _csv(tmp_path / "s.csv", "submit_time;duration;note, a\n0;1,5;x\n")   # a decimal comma
    assert list(trace_files.read_csv(str(semicolons)).duration_s) == [1.5]
    commas = _csv(tmp_path / "c.csv", 'submit_time,duration,"note; a"\n0,1,x\n')
    assert list(trace_files.read_csv(str(commas)).duration_s) == [1.0]


def test_philly_with_any_gpu_count_warns_of_the_jobs_on_more_than_one(tmp_path, capsys):
    """As the CSV reader does: the 4-GPU job runs on the one simulated device for its length."""
    def job(jobid, gpus):
        return {"jobid": jobid, "vc": "vc1", "status": "Pass", "submitted_time": "2017-10-07 01:00:00",
                "attempts": [{"start_time": "2017-10-07 01:00:00", "end_time": "2017-10-07 02:00:00",
                              "detail": [{"ip": "m", "gpus": [f"gpu{g}" for g in range(gpus)]}]}]}
    path = tmp_path / "log.json"
    path.write_text(json.dumps([job("a", 1), job("b", 4), job("c", 2)]))
    assert philly_log.read_philly(str(path)).notes == []
    assert philly_log.read_philly(str(path), gpus=None).notes == [
        "2 of the 3 jobs kept ask for other than one GPU (the attempts' gpus); each runs on the one simulated "
        "device for its full length"]
    assert jct.main(["--philly", str(path), "--gpus", "0", "--policies", "fifo"]) == 0
    assert "warning: 2 of the 3 jobs kept ask for other than one GPU" in capsys.readouterr().err


def test_a_virtual_cluster_no_job_names_is_named_with_those_the_log_has(tmp_path):
    jobs = [{"jobid": j, "vc": vc, "status": "Pass", "submitted_time": "2017-10-07 01:00:00",
             "attempts": [{"start_time": "2017-10-07 01:00:00", "end_time": "2017-10-07 02:00:00",
                           "detail": [{"ip": "m", "gpus": ["gpu0"]}]}]}
            for j, vc in (("a", "ee9e8c"), ("b", "6214e9"), ("c", None))]
    path = tmp_path / "log.json"
    path.write_text(json.dumps(jobs))
    assert len(philly_log.read_philly(str(path), vc="ee9e8c")) == 1
    with pytest.raises(ValueError, match=r"no job of virtual cluster 'EE9E8C' \(names are compared with case: "
                                         r"'ee9e8c'\?\); the log's virtual clusters: 6214e9, ee9e8c$"):
        philly_log.read_philly(str(path), vc="EE9E8C")
    with pytest.raises(ValueError, match=r"'zz'; the log's virtual clusters: 6214e9, ee9e8c$"):
        philly_log.read_philly(str(path), vc="zz")


def test_one_job_is_one_job(tmp_path, capsys):
    assert jct.main(["--trace", str(_csv(tmp_path / "one.csv", "submit_time,duration\n0,10\n"))]) == 0
    assert ": 1 job over 0 s" in capsys.readouterr().out
