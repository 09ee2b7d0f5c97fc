"""The Salus command lines on a user's own inputs, where a probe found them wrong or unclear."""
from __future__ import annotations

import json

import pytest

from impls.salus import jct, lanes, switching

HUGE = "9" * 400        # an integer far beyond a float's range


def _csv(path, text):
    path.write_text(text)
    return path


# ---------------------------------------------------------------- numbers the tools cannot hold

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
