"""python -m impls.salus.jct and scripts/salus_trace_sensitivity.py: the Salus JCT claim on any
job trace, and how it moves with the suite's trace assumptions."""
from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from impls.harness.report import verdicts
from impls.salus import jct
from impls.salus.core import philly_log, trace_files
from impls.salus.core.simulator import simulate
from impls.salus.core.traces import offered_load, poisson_trace

ROOT = Path(__file__).resolve().parents[2]


def _csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "impls.salus.jct", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def _philly_job(jobid, submitted, attempts, vc="vc1", status="Pass"):
    return {"status": status, "vc": vc, "jobid": jobid, "submitted_time": submitted, "user": "u",
            "attempts": [{"start_time": s, "end_time": e, "detail": [{"ip": "m1", "gpus": [f"gpu{k}" for k in range(g)]}]}
                         for s, e, g in attempts]}


# ---------------------------------------------------------------- reading traces

def test_salus_repository_form_reads_as_is(tmp_path):
    path = _csv(tmp_path / "t.csv", "model_name,iterations,submit_time,duration,job_id\n"
                                    "vgg11_25,565,0,67.059,a\nresnet50_50,900,30,120,b\nalexnet_100,10,10,5,c\n")
    trace = trace_files.read_csv(path)
    assert trace.ids == ["a", "c", "b"]                      # sorted by arrival
    assert trace.arrival_s.tolist() == [0.0, 10.0, 30.0]
    assert trace.duration_s.tolist() == [67.059, 5.0, 120.0]


def test_bom_crlf_case_gzip_and_dates(tmp_path):
    text = "\ufeffSubmitted_Time,Start_Time,End_Time\r\n" \
           "2017-10-07 01:11:39,2017-10-07 01:12:00,2017-10-07 01:22:00\r\n" \
           "2017-10-07 01:13:39,2017-10-07 01:22:00,2017-10-07 01:23:30\r\n"
    path = tmp_path / "t.csv.gz"
    with gzip.open(path, "wt", newline="") as f:
        f.write(text)
    trace = trace_files.read_csv(path)
    assert trace.arrival_s.tolist() == [0.0, 120.0]
    assert trace.duration_s.tolist() == [600.0, 90.0]


@pytest.mark.parametrize("text", ["submit_time;duration\n0;10,5\n5;3\n", "submit_time\tduration\n0\t10.5\n5\t3\n",
                                  "submit_time|duration\n0|10.5\n5|3\n"])
def test_other_separators_and_decimal_commas(tmp_path, text):
    trace = trace_files.read_csv(_csv(tmp_path / "t.csv", text))
    assert trace.duration_s.tolist() == [10.5, 3.0]


def test_zero_lengths_left_out_and_counted(tmp_path):
    trace = trace_files.read_csv(_csv(tmp_path / "t.csv", "arrival_s,duration_s\n0,0\n1,5\n\n2,0\n3,7\n"))
    assert trace.duration_s.tolist() == [5.0, 7.0]
    assert trace.arrival_s.tolist() == [0.0, 2.0]           # from the first kept arrival
    assert trace.left_out == {"zero duration": 2}


@pytest.mark.parametrize("text, words", [
    ("a,b\n1,2\n", "expected an arrival column"),
    ("submit_time,duration\n0,10\n5,abc\n", ":3: duration 'abc'"),
    ("submit_time,duration\n0,10\n5,-1\n", ":3: duration '-1'; expected seconds >= 0"),
    ("submit_time,duration\n0,10\n,4\n", ":3: submit_time is empty"),
    ("submit_time,duration\n0,inf\n", "expected a finite number"),
    ("submit_time,duration\n0,nan\n", "no job to simulate (1 no duration"),      # NaN: as a missing end
    ("arrival,start_time,end_time\n0,10,5\n", "before start_time"),
    ("submit_time,duration\n", "no job to simulate"),
    ("submit_time,duration\n0,0\n", "no job to simulate (1 zero duration)"),
    # a date as a length, a column mixing seconds and dates, lengths past any clock
    ("submit_time,duration\n2017-10-07 00:00:00,2017-10-07 00:00:10\n",
     ":2: duration '2017-10-07 00:00:10' is not a number"),
    ("submit_time,duration\n0,10\n2017-10-07 00:00:01,2\n",
     ":3: submit_time '2017-10-07 00:00:01' is a date, but"),
    ("submit_time,start_time,end_time\n0,0,2017-10-07 00:00:10\n",
     ":2: end_time '2017-10-07 00:00:10' is a date, but"),
    ("submit_time,duration\n0,1\nabc,2\n", ":3: submit_time 'abc'; expected seconds or a date"),
    ("submit_time,duration\n0,1e300\n1,2\n", ":2: duration '1e300'; expected seconds >= 0 and below 1e+12"),
    ("submit_time,start_time,end_time\n0,0,1e13\n", "expected a job shorter than 1e+12 s"),
])
def test_bad_csv_named_with_its_line(tmp_path, text, words):
    with pytest.raises(ValueError) as err:
        trace_files.read_csv(_csv(tmp_path / "t.csv", text))
    assert words in str(err.value)


def test_philly_lengths_gpus_and_left_out(tmp_path):
    jobs = [
        _philly_job("a", "2017-10-07 01:00:00", [("2017-10-07 01:00:10", "2017-10-07 01:01:10", 1),
                                                 ("2017-10-07 01:02:00", "2017-10-07 01:02:30", 1)]),
        _philly_job("eight", "2017-10-07 01:00:05", [("2017-10-07 01:00:10", "2017-10-07 02:00:00", 8)]),
        _philly_job("never", "2017-10-07 01:00:06", []),
        _philly_job("running", "2017-10-07 01:00:07", [("2017-10-07 01:00:10", None, 1)]),
        _philly_job("other", "2017-10-07 01:00:08", [("2017-10-07 01:00:10", "2017-10-07 01:00:20", 1)], vc="vc2"),
        _philly_job("b", "2017-10-07 01:10:00", [("2017-10-07 01:20:00", "2017-10-07 01:20:45", 1)],
                    status="Killed"),
    ]
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps(jobs))
    trace = philly_log.read_philly(path, vc="vc1")
    assert trace.ids == ["a", "b"]
    assert trace.duration_s.tolist() == [90.0, 45.0]         # attempts summed; killed jobs count
    assert trace.arrival_s.tolist() == [0.0, 600.0]
    assert trace.left_out == {"not on 1 GPU": 1, "never ran (no attempt with both times)": 1,
                              "still running at the snapshot": 1, "another virtual cluster": 1}
    assert philly_log.read_philly(path, gpus=8).ids == ["eight"]
    assert len(philly_log.read_philly(path, gpus=None)) == 4


@pytest.mark.parametrize("content, words", [("[1, 2]", "expected a list of jobs"),
                                            ('{"a": 1}', "a JSON dict"),
                                            ("submit_time,duration\n", "not JSON"),
                                            ('[{"jobid": "x"}]', "has no submitted_time")])
def test_bad_philly_file(tmp_path, content, words):
    path = tmp_path / "log"
    path.write_text(content)
    with pytest.raises(ValueError) as err:
        philly_log.read_philly(path)
    assert words in str(err.value)


def test_window_and_load():
    trace = trace_files.JobTrace(["a", "b", "c", "d"], np.array([0.0, 10.0, 30.0, 60.0]),
                                 np.array([10.0, 20.0, 30.0, 40.0]), {})
    assert trace.offered_load() == pytest.approx(3 / 60 * 25)
    part = trace.window(1, 2)
    assert part.ids == ["b", "c"] and part.arrival_s.tolist() == [0.0, 20.0]
    scaled = trace.at_load(0.5)
    assert scaled.offered_load() == pytest.approx(0.5)
    assert scaled.duration_s.tolist() == trace.duration_s.tolist()
    with pytest.raises(ValueError, match="no job in the window"):
        trace.window(4)
    with pytest.raises(ValueError, match="no arrival rate"):
        trace.window(0, 1).at_load(1.0)
    stats = trace.duration_stats()
    assert stats["scv"] == pytest.approx(np.var([10, 20, 30, 40]) / 25 ** 2)


# ---------------------------------------------------------------- simulation

def test_jobs_sum_to_their_lengths():
    trace = trace_files.JobTrace(["a", "b"], np.array([0.0, 1.0]), np.array([0.03, 12.345]), {})
    jobs, ms, warm = jct.simulator_jobs(trace, 100.0, switch_ms=2.0)
    assert [j["iterations"] for j in jobs] == [1, 123]
    assert warm["job1"] * 123 == pytest.approx(12345.0)
    assert ms["job1"] - warm["job1"] == pytest.approx(2.0)
    assert jct.simulator_jobs(trace, 100.0)[2] is None      # no switch cost: no warm times


def test_hand_computed_ratio():
    """Two jobs at 0 (10 s, then 1 s): FIFO finishes them at 10 and 11 (mean 10.5), SRTF runs
    the short one first, at 1 and 11 (mean 6): 1.75x."""
    trace = trace_files.JobTrace(["long", "short"], np.array([0.0, 0.0]), np.array([10.0, 1.0]), {})
    result = jct.measure(trace, ["fifo", "srtf"])
    assert result["policies"]["fifo"]["avg_jct_s"] == pytest.approx(10.5)
    assert result["policies"]["srtf"]["avg_jct_s"] == pytest.approx(6.0)
    assert result["fifo_over_srtf"] == pytest.approx(1.75)
    switched = jct.measure(trace, ["fifo", "srtf"], switch_ms=100.0)  # each job's first iteration pays 0.1 s
    assert switched["policies"]["fifo"]["avg_jct_s"] == pytest.approx(10.6 + 0.1 / 2)


def test_same_ratio_as_the_experiments_simulation(tmp_path):
    """The suite's own trace, read back from a CSV of its arrivals and lengths, gives the ratio
    the experiment's simulation gives it (iterations of one length per workload)."""
    ms = {"a": 7.0, "b": 31.0}
    trace = poisson_trace(40, 2.0, ["a", "b"], ms, (0.5, 20.0), seed=3)
    direct = simulate(trace, "fifo", ms)["avg_jct_s"] / simulate(trace, "srtf", ms)["avg_jct_s"]
    rows = "".join(f"{j['arrival_s']!r},{j['iterations'] * ms[j['workload']] / 1e3!r}\n" for j in trace)
    read = trace_files.read_csv(_csv(tmp_path / "t.csv", "arrival_s,duration_s\n" + rows))
    assert read.offered_load() == pytest.approx(offered_load(trace, ms))
    assert jct.measure(read, ["fifo", "srtf"], iteration_ms=7.0)["fifo_over_srtf"] == pytest.approx(direct, rel=0.02)


# ---------------------------------------------------------------- the command line

def test_command_line_prints_ratio_and_verdict(tmp_path):
    path = _csv(tmp_path / "t.csv", "submit_time,duration\n0,100\n0,10\n5,1\n500,30\n")
    done = _run("--trace", str(path), "--policies", "fifo,srtf,fair")
    assert done.returncode == 0, done.stderr
    assert "4 jobs over 500 s" in done.stdout
    assert "fair  average JCT" in done.stdout
    out = _run("--trace", str(path), "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    expected = jct.measure(trace_files.read_csv(path), ["fifo", "srtf"])["fifo_over_srtf"]
    assert result["fifo_over_srtf"] == pytest.approx(expected)
    assert f"SRTF's: {result['ratio_shown']}x" in done.stdout and float(result["ratio_shown"]) == pytest.approx(expected, rel=1e-2)
    assert (result["verdict"], result["paper"], result["ratio_shown"]) == verdicts.judge_one(jct.CLAIM, expected)
    assert len(result["sha256"]) == 64


def test_load_flag_rescales(tmp_path):
    path = _csv(tmp_path / "t.csv", "submit_time,duration\n0,100\n50,10\n60,1\n500,30\n")
    out = _run("--trace", str(path), "--load", "0.5", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["offered_load"] == pytest.approx(0.5)
    assert result["trace_offered_load"] == pytest.approx(3 / 500 * 141 / 4)
    assert result["gaps_scaled_by"] == pytest.approx(result["trace_offered_load"] / 0.5)


@pytest.mark.parametrize("args, words", [
    (["--policies", "pack"], "PACK needs each job's memory"),
    (["--policies", "lifo"], "expected names of fifo, srtf, fair"),
    (["--vc", "x"], "expected it only with --philly"),
    (["--iteration-ms", "0"], "--iteration-ms"),
    (["--load", "-1"], "--load"),
    (["--first", "0"], "--first"),
    (["--skip", "9"], "no job in the window"),
])
def test_bad_flags_one_line(tmp_path, args, words):
    path = _csv(tmp_path / "t.csv", "submit_time,duration\n0,100\n50,10\n")
    done = _run("--trace", str(path), *args)
    assert done.returncode == 2
    assert words in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_fair_refused_beyond_its_step_limit(tmp_path, monkeypatch):
    path = _csv(tmp_path / "t.csv", "submit_time,duration\n0,100\n50,10\n")
    monkeypatch.setattr(jct, "FAIR_MAX_ITERATIONS", 50)
    assert jct.main(["--trace", str(path), "--policies", "fair"]) == 2
    assert jct.main(["--trace", str(path), "--policies", "fifo,srtf"]) == 0


# ---------------------------------------------------------------- the sensitivity script

@pytest.fixture
def sensitivity(load_script):
    return load_script("salus_trace_sensitivity")


def test_sensitivity_values_change_one_assumption(sensitivity):
    s = sensitivity
    base = {"n_jobs": 16, "mean_interarrival_s": 0.25, "duration_s": (0.05, 4.0), "mix": ["a", "b"], "seed": 0}
    mean = s.log_uniform_mean(0.05, 4.0)
    spread = s.with_value(base, "spread", 300)
    lo, hi = spread["duration_s"]
    assert hi / lo == pytest.approx(300) and s.log_uniform_mean(lo, hi) == pytest.approx(mean)
    assert s.with_value(base, "spread", 1)["duration_s"] == (mean, mean)
    assert s.with_value(base, "load", 2.0)["mean_interarrival_s"] == pytest.approx(mean / 2)
    assert s.with_value(base, "n_jobs", 40)["n_jobs"] == 40


def test_sensitivity_rows_match_the_simulation(sensitivity):
    s = sensitivity
    ms = {"a": 5.0, "b": 20.0}
    base = {"n_jobs": 60, "mean_interarrival_s": 1.0, "duration_s": (0.1, 10.0), "mix": ["a", "b"], "seed": 4}
    rows = s.rows(base, "spread", [1.0, 100.0], 3, ms, ms)
    assert rows[0]["ratio_median"] == pytest.approx(1.0, abs=0.05)    # equal lengths: nothing to reorder
    assert rows[1]["ratio_median"] > 1.5
    trace = poisson_trace(60, 1.0, ["a", "b"], ms, tuple(rows[1]["duration_s"]), seed=4)
    direct = simulate(trace, "fifo", ms, warm_iteration_ms=ms)["avg_jct_s"] / \
        simulate(trace, "srtf", ms, warm_iteration_ms=ms)["avg_jct_s"]
    assert rows[1]["ratio_at_seed"] == pytest.approx(direct)
    assert math.isfinite(rows[1]["offered_load_median"])


# ---------------------------------------------------------------- inputs a review found

def test_a_pipe_is_refused_before_it_is_read(tmp_path):
    import os

    fifo = tmp_path / "jobs.csv"
    os.mkfifo(fifo)
    done = _run("--trace", str(fifo))
    assert done.returncode == 2 and "not a regular file" in done.stderr


def test_epoch_milliseconds_are_refused_as_seconds_and_read_with_their_unit(tmp_path):
    path = _csv(tmp_path / "t.csv", "submit_time,duration\n1507338699000,10000\n1507338704000,1000\n")
    with pytest.raises(ValueError, match="--time-unit ms reads every number"):
        trace_files.read_csv(path)
    trace = trace_files.read_csv(path, unit="ms")
    assert trace.arrival_s.tolist() == [0.0, 5.0] and trace.duration_s.tolist() == [10.0, 1.0]
    minutes = trace_files.read_csv(_csv(tmp_path / "m.csv", "arrival,duration\n0,1\n2,5\n"), unit="min")
    assert minutes.duration_s.tolist() == [60.0, 300.0] and minutes.arrival_s.tolist() == [0.0, 120.0]
    assert trace_files.read_csv(_csv(tmp_path / "e.csv", "arrival,duration\n1507338699,10\n1507338704,1\n")
                                ).arrival_s.tolist() == [0.0, 5.0]              # epoch seconds are seconds
    done = _run("--trace", str(path), "--time-unit", "ms")
    assert done.returncode == 0, done.stderr
    philly = tmp_path / "log"
    philly.write_text("[]")
    refused = _run("--philly", str(philly), "--time-unit", "ms")
    assert refused.returncode == 2 and "expected it only with --trace" in refused.stderr


def test_the_printed_ratio_falls_on_the_side_of_the_band_edge_its_verdict_does(tmp_path):
    path = _csv(tmp_path / "t.csv", "submit_time,duration\n0,1000\n0,999.5\n")
    out = json.loads(_run("--trace", str(path), "--json").stdout)
    assert out["verdict"] == "partly" and out["fifo_over_srtf"] > 1.0
    assert float(out["ratio_shown"]) > 1.0                              # not "1.000"
    done = _run("--trace", str(path))
    assert f"SRTF's: {out['ratio_shown']}x" in done.stdout


@pytest.mark.parametrize("flag", ["--trace", "--philly"])
def test_a_cut_gzip_file_is_a_one_line_error(tmp_path, flag):
    whole = gzip.compress(b"submit_time,duration\n" + b"".join(b"%d,%d\n" % (i, i + 1) for i in range(2000)))
    path = tmp_path / "t.gz"
    path.write_bytes(whole[:60])
    done = _run(flag, str(path))
    assert done.returncode == 2 and "a damaged gzip file" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_philly_none_strings_and_backward_attempts(tmp_path):
    jobs = [
        _philly_job("ok", "2017-10-07 01:00:00", [("2017-10-07 01:00:10", "2017-10-07 01:01:10", 1)]),
        _philly_job("none-text", "2017-10-07 01:00:05", [("2017-10-07 01:00:10", "2017-10-07 01:01:10", 1),
                                                         ("2017-10-07 01:02:00", "None", 1)]),
        _philly_job("backward", "2017-10-07 01:00:06", [("2017-10-07 01:00:10", "2017-10-07 01:01:10", 1),
                                                        ("2017-10-07 03:00:00", "2017-10-07 02:00:00", 1)]),
    ]
    path = tmp_path / "log"
    path.write_text(json.dumps(jobs))
    trace = philly_log.read_philly(path)
    assert trace.ids == ["ok"]
    assert trace.left_out == {"still running at the snapshot": 1, "an attempt ends before it starts": 1}


def test_a_load_that_spreads_arrivals_past_any_time_is_refused(tmp_path):
    path = _csv(tmp_path / "t.csv", "submit_time,duration\n0,10\n5,1\n")
    done = _run("--trace", str(path), "--load", "1e-300")
    assert done.returncode == 2 and "expected a larger load" in done.stderr


def test_sensitivity_lengths_from_a_list(sensitivity):
    """Three lengths of 1, 5 and 10 (each a third), all jobs at once in effect (a tiny mean gap):
    SRTF runs them shortest first. The batch limit for these shares is 1.6x."""
    s = sensitivity
    ms = {"a": 10.0}
    base = {"n_jobs": 3000, "mean_interarrival_s": 1e-6, "duration_s": (0.05, 4.0), "mix": ["a"], "seed": 0,
            "lengths": [1.0, 5.0, 10.0]}
    ratio, _ = s.ratio_of(base, 0, ms, ms)
    assert ratio == pytest.approx(1.6, rel=0.03)
    assert s.with_value(base, "load", 2.0)["mean_interarrival_s"] == pytest.approx(16 / 3 / 2)


# ---------------------------------------------------------------- time zones

def test_philly_times_are_pacific_so_a_daylight_saving_change_adds_no_hour(tmp_path):
    jobs = [  # clocks went back from 02:00 PDT to 01:00 PST on 2017-11-05
        _philly_job("across", "2017-11-04 12:00:00", [("2017-11-05 00:30:00", "2017-11-05 03:00:00", 1)]),
        _philly_job("next-day", "2017-11-05 12:00:00", [("2017-11-05 12:00:00", "2017-11-05 12:10:00", 1)]),
    ]
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps(jobs))
    trace = philly_log.read_philly(path)
    assert trace.duration_s.tolist() == [3.5 * 3600, 600.0]       # 00:30 PDT to 03:00 PST
    assert trace.arrival_s.tolist() == [0.0, 25 * 3600.0]        # a 25-hour day
    naive = philly_log.read_philly(path, zone="UTC")             # as written, without a zone
    assert naive.duration_s.tolist() == [2.5 * 3600, 600.0]
    assert naive.arrival_s.tolist() == [0.0, 24 * 3600.0]
    summer = [_philly_job("a", "2017-10-07 01:00:00", [("2017-10-07 01:00:10", "2017-10-07 01:01:10", 1)]),
              _philly_job("b", "2017-10-07 03:00:00", [("2017-10-07 03:00:00", "2017-10-07 03:00:45", 1)])]
    path.write_text(json.dumps(summer))                          # no change inside: the zone changes nothing
    for zone in (None, "UTC"):
        kept = philly_log.read_philly(path, zone=zone) if zone else philly_log.read_philly(path)
        assert kept.duration_s.tolist() == [60.0, 45.0] and kept.arrival_s.tolist() == [0.0, 7200.0]


def test_csv_dates_are_utc_unless_a_zone_is_given(tmp_path):
    # clocks went forward from 02:00 PST to 03:00 PDT on 2018-03-11
    path = _csv(tmp_path / "t.csv", "submit_time,start_time,end_time\n"
                                    "2018-03-11 01:00:00,2018-03-11 01:30:00,2018-03-11 03:30:00\n"
                                    "2018-03-11 04:00:00,2018-03-11 04:00:00,2018-03-11 04:01:00\n")
    assert trace_files.read_csv(path).duration_s.tolist() == [7200.0, 60.0]
    pacific = trace_files.read_csv(path, zone="America/Los_Angeles")
    assert pacific.duration_s.tolist() == [3600.0, 60.0]
    assert pacific.arrival_s.tolist() == [0.0, 7200.0]
    stamped = _csv(tmp_path / "z.csv", "submit_time,duration\n2018-03-11T01:00:00-08:00,5\n2018-03-11T04:00:00-07:00,5\n")
    for zone in (None, "Asia/Tokyo"):          # a date that names its zone keeps it
        assert trace_files.read_csv(stamped, zone=zone).arrival_s.tolist() == [0.0, 7200.0]


def test_the_command_line_names_the_zone_and_refuses_an_unknown_one(tmp_path):
    jobs = [_philly_job("a", "2017-11-04 12:00:00", [("2017-11-05 00:30:00", "2017-11-05 03:00:00", 1)]),
            _philly_job("b", "2017-11-05 12:00:00", [("2017-11-05 12:00:00", "2017-11-05 12:10:00", 1)])]
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps(jobs))
    done = _run("--philly", str(path), "--json", "-")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["time_zone"] == "America/Los_Angeles" and result["span_s"] == 25 * 3600.0
    utc = json.loads(_run("--philly", str(path), "--time-zone", "UTC", "--json", "-").stdout)
    assert utc["time_zone"] == "UTC" and utc["span_s"] == 24 * 3600.0
    printed = _run("--philly", str(path))
    assert "(dates read in America/Los_Angeles)" in printed.stdout
    for zone in ("Pacific/Nowhere", "America", "localtime", "a; b", ""):
        bad = _run("--philly", str(path), "--time-zone", zone)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, zone
        assert f"got {zone!r}, --time-zone, expected an IANA name such as UTC" in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
    assert json.loads(_run("--philly", str(path), "--time-zone", "utc", "--json", "-").stdout)["time_zone"] == "UTC"
    numbers = _csv(tmp_path / "n.csv", "submit_time,duration\n0,100\n50,10\n")
    plain = _run("--trace", str(numbers), "--time-zone", "Asia/Tokyo")
    assert plain.returncode == 0 and "dates read in" not in plain.stdout    # no date was read
    assert json.loads(_run("--trace", str(numbers), "--json", "-").stdout)["time_zone"] is None
    # arrivals as seconds, lengths as dates: the dates were read in a zone, and it is named
    mixed = _csv(tmp_path / "m.csv", "submit_time,start_time,end_time\n0,2017-11-05 00:30:00,2017-11-05 03:00:00\n")
    assert trace_files.read_csv(mixed, zone="America/Los_Angeles").zone == "America/Los_Angeles"
    assert trace_files.read_csv(mixed, zone="America/Los_Angeles").duration_s.tolist() == [3.5 * 3600]
    assert trace_files.read_csv(numbers).zone is None


def test_a_time_the_zone_shows_twice_or_never_is_left_out_and_counted_in_both_readers(tmp_path):
    """As Philly's reader does, a CSV leaves such a row out and counts it (it was refused, one
    row a run); a file of nothing else says why, and what the date needs."""
    repeated = _csv(tmp_path / "r.csv", "submit_time,start_time,end_time\n"
                                        "2017-11-05 00:00:00,2017-11-05 01:45:00,2017-11-05 02:05:00\n")
    with pytest.raises(ValueError, match="is shown twice in America/Los_Angeles") as err:
        trace_files.read_csv(repeated, zone="America/Los_Angeles")
    assert ("r.csv: no job to simulate (1 a time America/Los_Angeles shows twice (clocks went back)); the first of "
            "each: ") in str(err.value)
    assert ("first at UTC-07:00, then again at UTC-08:00), so which of the two instants it was is not known; "
            "expected a date that names its offset (2017-11-05 01:45:00-07:00 or 2017-11-05 01:45:00-08:00)"
            ) in str(err.value)
    assert "--time-zone" not in str(err.value)          # the zone was given, and right: no advice to give it
    assert trace_files.read_csv(repeated).duration_s.tolist() == [1200.0]      # UTC: no clock change
    skipped = _csv(tmp_path / "s.csv", "submit_time,start_time,end_time\n"
                                       "2018-03-11 01:00:00,2018-03-11 02:30:00,2018-03-11 03:10:00\n")
    with pytest.raises(ValueError, match="does not exist in America/Los_Angeles"):
        trace_files.read_csv(skipped, zone="America/Los_Angeles")
    done = _run("--trace", str(skipped), "--time-zone", "America/Los_Angeles")
    assert done.returncode == 2 and "does not exist" in done.stderr and "Traceback" not in done.stderr
    both = _csv(tmp_path / "b.csv", "job_id,submit_time,start_time,end_time\n"
                                    "ok,2017-11-05 12:00:00,2017-11-05 12:00:00,2017-11-05 12:10:00\n"
                                    "twice,2017-11-05 00:30:00,2017-11-05 01:45:00,2017-11-05 02:05:00\n"
                                    "never,2018-03-11 02:30:00,2018-03-11 03:00:00,2018-03-11 03:10:00\n")
    trace = trace_files.read_csv(both, zone="America/Los_Angeles")
    assert trace.ids == ["ok"] and trace.left_out_first == {
        "a time America/Los_Angeles shows twice (clocks went back)": f"{both}:3",
        "a time America/Los_Angeles never shows (clocks went forward)": f"{both}:4"}
    jobs = [_philly_job("ok", "2017-11-05 12:00:00", [("2017-11-05 12:00:00", "2017-11-05 12:10:00", 1)]),
            _philly_job("twice", "2017-11-05 00:30:00", [("2017-11-05 01:45:00", "2017-11-05 02:05:00", 1)]),
            _philly_job("late", "2017-11-05 00:31:00", [("2017-11-05 01:50:00", "2017-11-05 01:10:00", 1)]),
            _philly_job("never", "2018-03-11 02:30:00", [("2018-03-11 03:00:00", "2018-03-11 03:10:00", 1)])]
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps(jobs))
    trace = philly_log.read_philly(path)
    assert trace.ids == ["ok"]
    assert trace.left_out == {"a time America/Los_Angeles shows twice (clocks went back)": 2,
                              "a time America/Los_Angeles never shows (clocks went forward)": 1}
