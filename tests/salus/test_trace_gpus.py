"""A CSV trace's GPU column counts as Philly's GPUs do: the jobs on ``--gpus`` GPUs (default 1)
are kept, the others left out and counted, so one set of jobs gives one result whether it
comes as Philly's JSON log or as a CSV."""
from __future__ import annotations

import json

import pytest

from impls.salus import jct
from impls.salus.core import philly_log, trace_files, trace_rows

PHILLY_ROWS = [  # jobid, GPUs, submitted, start, end
    ("a", 1, "2017-10-07 01:00:00", "2017-10-07 01:00:10", "2017-10-07 01:01:10"),
    ("b", 8, "2017-10-07 01:00:05", "2017-10-07 01:00:10", "2017-10-07 02:00:00"),
    ("c", 1, "2017-10-07 01:10:00", "2017-10-07 01:20:00", "2017-10-07 01:20:45"),
    ("d", 2, "2017-10-07 01:11:00", "2017-10-07 01:20:00", "2017-10-07 01:30:00"),
]


def _csv(path, text):
    path.write_text(text)
    return path


def _both_forms(tmp_path):
    jobs = [{"jobid": j, "vc": "vc1", "status": "Pass", "submitted_time": s,
             "attempts": [{"start_time": b, "end_time": e,
                           "detail": [{"ip": "m", "gpus": [f"gpu{k}" for k in range(g)]}]}]}
            for j, g, s, b, e in PHILLY_ROWS]
    (tmp_path / "log").write_text(json.dumps(jobs))
    text = "jobid,num_gpus,submitted_time,start_time,end_time\n" + "".join(
        f"{j},{g},{s},{b},{e}\n" for j, g, s, b, e in PHILLY_ROWS)
    return tmp_path / "log", _csv(tmp_path / "t.csv", text)


def test_a_csv_gpu_count_keeps_the_jobs_philly_keeps(tmp_path):
    log, table = _both_forms(tmp_path)
    for gpus in (1, 2, 8, None):
        philly = philly_log.read_philly(log, gpus=gpus, zone="UTC")
        csv = trace_files.read_csv(table, gpus=gpus)
        assert csv.ids == philly.ids and csv.duration_s.tolist() == philly.duration_s.tolist(), gpus
        assert csv.arrival_s.tolist() == philly.arrival_s.tolist() and csv.left_out == philly.left_out, gpus
    default = trace_files.read_csv(table, zone="UTC")      # a zone given: no note of Philly's zone
    assert default.ids == ["a", "c"] and default.left_out == {"not on 1 GPU": 2}
    assert default.gpu_column == "num_gpus" and default.notes == []
    anything = trace_files.read_csv(table, gpus=None, zone="UTC")        # --gpus 0: said, not silent
    assert anything.notes == ["2 of the 4 jobs kept ask for other than one GPU (num_gpus); each runs on the one "
                              "simulated device for its full length"]


@pytest.mark.parametrize("name", ["num_gpus", "gpu_num", "gpus", "num_gpu", "n_gpus", "ngpus", "gpu_count"])
def test_every_gpu_count_column_is_read(tmp_path, name):
    trace = trace_files.read_csv(_csv(tmp_path / "t.csv", f"submit_time,duration,{name.upper()}\n0,5,1\n1,6,4\n"))
    assert trace.duration_s.tolist() == [5.0] and trace.left_out == {"not on 1 GPU": 1}


def test_plan_gpu_is_percent_of_a_gpu_per_instance(tmp_path):
    path = _csv(tmp_path / "t.csv", "job_id,submit_time,duration,plan_gpu,inst_num\n"
                                    "whole,0,10,100,1\nhalf,1,10,50,1\ntwo-halves,2,10,50,2\neight,3,10,100,8\n"
                                    "cpu,4,10,,1\nnan,5,10,NaN,1\nquarter-of-four,6,10,25,4\n")
    trace = trace_files.read_csv(path)
    assert trace.ids == ["whole", "two-halves", "quarter-of-four"]
    assert trace.gpu_column == "plan_gpu x inst_num / 100"
    assert trace.left_out == {trace_rows.PART_OF_A_GPU: 1, "not on 1 GPU": 1, trace_rows.NO_GPU_COUNT: 2}
    assert trace_files.read_csv(path, gpus=8).ids == ["eight"]
    assert len(trace_files.read_csv(path, gpus=None)) == 7
    alone = _csv(tmp_path / "p.csv", "submit_time,duration,plan_gpu\n0,10,100\n1,10,50\n2,10,200\n")
    assert trace_files.read_csv(alone).ids == ["1"] and trace_files.read_csv(alone).gpu_column == "plan_gpu / 100"


@pytest.mark.parametrize("value, words", [("abc", "num_gpus 'abc'; expected a number of GPUs >= 0"),
                                          ("-1", "num_gpus '-1'"), ("inf", "num_gpus 'inf'")])
def test_a_gpu_count_that_is_no_count_is_refused_with_its_line(tmp_path, value, words):
    path = _csv(tmp_path / "t.csv", f"submit_time,duration,num_gpus\n0,5,1\n1,6,{value}\n")
    with pytest.raises(ValueError, match=":3: " + words.split(";")[0]):
        trace_files.read_csv(path)


def test_the_command_takes_gpus_with_a_csv_that_has_a_gpu_column(tmp_path, capsys):
    _, table = _both_forms(tmp_path)
    utc = ["--time-zone", "UTC"]        # no note of Philly's zone (test_salus_probe_cosmetics)
    assert jct.main(["--trace", str(table), *utc, "--json", str(tmp_path / "r.json")]) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["jobs"] == 2 and result["gpu_column"] == "num_gpus" and result["left_out"] == {"not on 1 GPU": 2}
    assert jct.main(["--trace", str(table), "--gpus", "8", *utc]) == 0
    out = capsys.readouterr()
    assert "1 job over 0 s (dates read in UTC); GPUs from num_gpus; left out 3 not on 8 GPUs" in out.out
    assert "warning" not in out.err
    assert jct.main(["--trace", str(table), "--gpus", "0"]) == 0
    out = capsys.readouterr()
    assert "4 jobs over" in out.out and "warning: 2 of the 4 jobs kept ask for other than one GPU" in out.err
    plain = _csv(tmp_path / "p.csv", "submit_time,duration\n0,5\n1,6\n")
    assert jct.main(["--trace", str(plain)]) == 0 and "GPUs from" not in capsys.readouterr().out
    assert jct.main(["--trace", str(plain), "--gpus", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "p.csv:1: header submit_time, duration; expected a GPU column to choose jobs by their GPUs (num_gpus" in err
