"""What the Salus tools write that other programs read: the sensitivity script's ``--json -``
on stdout, CSV rows that do not line up with their header, and lane job names in JSON."""
from __future__ import annotations

import json

import pytest

from impls.salus import lanes
from impls.salus.core import trace_files
from impls.salus.memory.lanes import LaneError, jobs_from_json


def test_sensitivity_json_to_stdout_is_one_document_and_the_lines_go_to_stderr(load_script, monkeypatch,
                                                                                capsys):
    sensitivity = load_script("salus_trace_sensitivity")
    monkeypatch.setattr(sensitivity, "profiled_ms", lambda base: (dict.fromkeys(base["mix"], 10.0),) * 2)
    assert sensitivity.main(["--profile", "smoke", "--param", "n_jobs", "--values", "2", "3", "--seeds", "1",
                             "--json", "-"]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert [row["n_jobs"] for row in rows] == [2, 3]
    assert [line.split()[:2] for line in err.splitlines()] == [["n_jobs", "2"], ["n_jobs", "3"]]
    assert sensitivity.main(["--profile", "smoke", "--param", "n_jobs", "--values", "2", "--seeds", "1"]) == 0
    out, err = capsys.readouterr()                  # without --json -: the lines on stdout, as before
    assert out.startswith("n_jobs 2") and not err


@pytest.mark.parametrize("text, counts", [
    ("submit_time,duration\n0,10,99\n5,3\n", "a row of 3 fields under a header of 2"),
    ("submit_time,duration\n0,10,5\n5,3\n", "a row of 3 fields under a header of 2"),   # decimal comma
    ("submit_time,duration\n0,10\n,,5\n", "a row of 3 fields under a header of 2"),
    ("job_id,submit_time,duration\na,0\nb,5,3\n", "a row of 2 fields under a header of 3"),   # one it reads
])
def test_a_row_of_another_field_count_than_the_header_is_refused_with_its_line(tmp_path, text, counts):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        trace_files.read_csv(path)
    line = 3 if ",,5" in text else 2
    assert f"t.csv:{line}: {counts}" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("text, durations", [
    ("submit_time,duration,\n0,10,\n5,3,\n", [10.0, 3.0]),          # a trailing separator on every line
    ("submit_time,duration\n0,10,\n5,3, \n", [10.0, 3.0]),          # on the rows only
    ("submit_time,duration,\n0,10\n5,3\n", [10.0, 3.0]),            # on the header only
    ("submit_time;duration;\n0;10,5;\n5;3;\n", [10.5, 3.0]),        # ; with decimal commas
    ("submit_time;duration\n0;10,5\n5;3\n", [10.5, 3.0]),
    ("submit_time,duration,job_id\n0,10,\n5,3,b\n", [10.0, 3.0]),   # an empty last column is a field
])
def test_a_trailing_separator_is_no_field(tmp_path, text, durations):
    path = tmp_path / "t.csv"
    path.write_text(text)
    assert trace_files.read_csv(path).duration_s.tolist() == durations


def test_a_lane_job_name_that_is_not_unicode_text_is_refused_with_its_index(tmp_path, capsys):
    with pytest.raises(LaneError, match=r"f.json: item 1: 'name' '\\ud800' is not valid Unicode text"):
        jobs_from_json([{"name": "a", "persistent": 1, "ephemeral": 2},
                        {"name": "\ud800", "persistent": 1, "ephemeral": 2}], "f.json")
    path = tmp_path / "jobs.json"
    path.write_text('[{"name": "\\ud800", "persistent": 1, "ephemeral": 2}]')
    assert lanes.main(["--jobs", str(path), "--capacity", "100"]) == 2
    out, err = capsys.readouterr()
    assert not out and "item 0" in err and len(err.strip().splitlines()) == 1
    path.write_text('[{"name": "\\ud83d\\ude00 \\u00e9", "persistent": 1, "ephemeral": 2}]')   # a pair: text
    assert lanes.main(["--jobs", str(path), "--capacity", "100"]) == 0
    assert json.loads(capsys.readouterr().out)["lanes"][0]["jobs"][0] == "\U0001F600 \u00e9"


def test_a_short_row_that_leaves_off_only_columns_not_read_is_read(tmp_path):
    """The Salus form with a note column some rows leave off, or a job_id left off at the end:
    the columns read are all there, so the row reads as before (ids by row where none)."""
    path = tmp_path / "t.csv"
    path.write_text("model_name,iterations,submit_time,duration,note\nresnet,100,0,50\nvgg,10,5,3,slow\n")
    trace = trace_files.read_csv(path)
    assert list(trace.duration_s) == [50.0, 3.0] and list(trace.arrival_s) == [0.0, 5.0]
    path.write_text("submit_time,duration,job_id\n0,10\n5,3,b\n")
    assert trace_files.read_csv(path).ids == ["1", "b"]
