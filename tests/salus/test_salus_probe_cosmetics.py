"""The Salus command lines on a user's own inputs, the probe's smaller findings: a tar archive
named as one, one warning for many jobs no static partition holds, torch's ``cpu:0``, a start
a fraction of a second before its submission (clock jitter, kept), and a CSV named as Philly's
log read in UTC."""
from __future__ import annotations

import io
import json
import tarfile

import pytest

from impls.salus import jct
from impls.salus.core import philly_log, trace_files
from impls.salus.core.trace_rows import JITTER_S, STARTED_BEFORE_SUBMITTED
from impls.salus.core.trace_times import PHILLY_ZONE


def _tar(path, member, text, mode):
    data = text.encode()
    with tarfile.open(path, mode) as archive:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return path


# ---------------------------------------------------------------- a tar archive

@pytest.mark.parametrize("mode, packed", [("w:gz", "a gzipped tar archive"), ("w", "a tar archive")])
def test_a_tar_archive_is_named_with_the_file_to_extract(tmp_path, mode, packed, capsys):
    csv_tar = _tar(tmp_path / "jobs.tar", "trace/jobs.csv", "submit_time,duration\n0,1\n", mode)
    log_tar = _tar(tmp_path / "trace-data.tar", "trace-data/cluster_job_log", "[]", mode)
    with pytest.raises(ValueError) as err:
        trace_files.read_csv(csv_tar)
    assert str(err.value) == (f"{csv_tar}: {packed} (its first file: 'trace/jobs.csv'); expected a CSV file "
                              f"(or gzip of one): extract the CSV first (tar -xf {csv_tar}) and pass that file")
    with pytest.raises(ValueError) as err:
        philly_log.read_philly(log_tar)
    assert f"{packed} (its first file: 'trace-data/cluster_job_log'); expected Philly's cluster_job_log: " \
           "extract cluster_job_log first" in str(err.value)
    for flag, path in (("--trace", csv_tar), ("--philly", log_tar)):
        assert jct.main([flag, str(path)]) == 2
        assert "tar archive" in capsys.readouterr().err


# ---------------------------------------------------------------- lanes: one warning

def test_jobs_no_partition_holds_are_counted_in_one_warning(tmp_path, capsys):
    from impls.salus.lanes import main

    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([{"name": f"j{i}", "persistent": 500 + i, "ephemeral": 200} for i in range(12)]
                               + [{"name": "ok", "persistent": 10, "ephemeral": 10}]))
    assert main(["--jobs", str(jobs), "--capacity", "1200", "--rule", "static", "--partitions", "2"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert ("12 jobs need more than a static partition of 600 B at their peak, so they can never be admitted: "
            "'j0' (700 B), 'j1' (701 B), 'j2' (702 B), 'j3' (703 B), 'j4' (704 B) and 7 more") in err


# ---------------------------------------------------------------- switching: cpu:0

def test_switching_takes_torchs_cpu_0(monkeypatch, capsys):
    from impls.salus.core import switching as engine
    from impls.salus.switching import main

    asked = []
    monkeypatch.setattr(engine, "switching_latency", lambda device, *a: asked.append(device) or {})
    monkeypatch.setattr(engine, "print_table", lambda result: None)
    assert main(["--device", "cpu:0", "--repeats", "1"]) == 0, capsys.readouterr().err
    assert asked == ["cpu:0"]
    assert main(["--device", "cpu:1", "--repeats", "1"]) == 2
    assert "expected 'cpu' (or 'cpu:0')" in capsys.readouterr().err


# ---------------------------------------------------------------- a start a fraction of a second early

def test_a_start_a_fraction_of_a_second_before_its_submission_is_kept_and_counted(tmp_path, capsys):
    path = tmp_path / "noise.csv"
    path.write_text("job_id,submit_time,start_time,end_time\n"
                    "a,1506998281.5005,1506998281.5004,1506998881.5\n"     # 100 us early: jitter
                    f"d,1506998290,{1506998290 - JITTER_S},1506998600\n"   # 1 s early: left out
                    + "".join(f"n{i},{1506998300 + i},{1506998301 + i},1506998400\n" for i in range(9)))
    trace = trace_files.read_csv(path)
    assert trace.ids == ["a"] + [f"n{i}" for i in range(9)]
    assert trace.duration_s[0] == pytest.approx(599.9996)                  # start to end, unchanged
    assert trace.left_out == {STARTED_BEFORE_SUBMITTED: 1} and trace.left_out_first == {
        STARTED_BEFORE_SUBMITTED: f"{path}:3"}
    assert trace.notes == [f"1 job starts less than 1 s before its submission (the first at {path}:2): read as clock "
                           "jitter and kept, arriving at its submission and running from start to end (a start 1 s "
                           f"or more before it is left out: {STARTED_BEFORE_SUBMITTED})"]
    assert jct.main(["--trace", str(path)]) == 0
    err = capsys.readouterr().err
    assert "1 job starts less than 1 s before its submission" in err and "other zones or units" not in err


def test_a_philly_start_a_fraction_of_a_second_early_is_kept_as_in_a_csv(tmp_path):
    def job(jobid, submitted, start, end):
        return {"jobid": jobid, "vc": "v", "status": "Pass", "submitted_time": f"2017-10-07 {submitted}",
                "attempts": [{"start_time": f"2017-10-07 {start}", "end_time": f"2017-10-07 {end}",
                              "detail": [{"ip": "m", "gpus": ["gpu0"]}]}]}

    path = tmp_path / "log"
    path.write_text(json.dumps([job("a", "00:00:00.5", "00:00:00.2", "00:10:00"),
                                job("b", "00:01:00", "00:00:59", "00:20:00"),
                                job("c", "00:02:00", "00:02:00", "00:30:00")]))
    trace = philly_log.read_philly(path)
    assert trace.ids == ["a", "c"] and trace.left_out == {STARTED_BEFORE_SUBMITTED: 1}
    assert trace.notes[0].startswith("1 job starts less than 1 s before its submission (the first at job 'a')")


# ---------------------------------------------------------------- a CSV named as Philly's log

PHILLY_CSV = ("jobid,submitted_time,start_time,end_time,num_gpus\n"
              "J1,2017-11-04 23:50:00,2017-11-04 23:50:00,2017-11-05 00:20:00,1\n"
              "J7,2017-11-05 00:40:00,2017-11-05 00:40:00,2017-11-05 03:30:00,1\n")


def test_a_csv_named_as_phillys_log_read_in_utc_by_default_says_so_once(tmp_path, capsys):
    path = tmp_path / "philly.csv"
    path.write_text(PHILLY_CSV)
    notes = trace_files.read_csv(path).notes
    assert len(notes) == 1 and "(submitted_time, jobid)" in notes[0]
    assert f"--philly reads in {PHILLY_ZONE}" in notes[0] and f"pass --time-zone {PHILLY_ZONE}" in notes[0]
    assert trace_files.read_csv(path, zone="UTC").notes == []                  # a zone asked for
    assert trace_files.read_csv(path, zone=PHILLY_ZONE).notes == []
    assert jct.main(["--trace", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.err.count(f"--time-zone {PHILLY_ZONE}") == 1 and "(dates read in UTC)" in captured.out
    assert jct.main(["--trace", str(path), "--time-zone", "UTC"]) == 0
    assert "--time-zone" not in capsys.readouterr().err


@pytest.mark.parametrize("text", [
    "job_id,submit_time,start_time,end_time\nJ1,2017-11-04 23:50:00,2017-11-04 23:50:00,2017-11-05 00:20:00\n",
    "jobid,submitted_time,duration\nJ1,0,10\n",                                  # no dates
])
def test_other_csvs_get_no_zone_note(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    assert trace_files.read_csv(path).notes == []
