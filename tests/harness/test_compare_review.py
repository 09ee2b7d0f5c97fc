"""Regression tracking on stored runs a normal workflow can leave behind: a damaged newest
run, a run of another machine or environment, a parameter-level rerun, an infinite value,
a change below six digits, and thresholds files written by hand."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from compare_fixtures import (add_earlier_runs, BASE, HEAD, MACHINE, RATE, base_values, measure, results, run_compare,  # noqa: F401
                              script, write_run)
from impls.harness.report import compare, noise, runs
from impls.harness.report.results import ResultsError, read_result_file


@pytest.fixture()
def results(results):  # noqa: F811 - the shared fixture, with more runs
    """The shared fixture with more runs (:func:`compare_fixtures.add_earlier_runs`)."""
    return add_earlier_runs(results)


def test_a_damaged_newest_run_is_named_and_never_skipped_over(results):
    noise_file = measure(results)
    live = write_run(results / MACHINE, HEAD, 300, base_values(rate=500.0))     # a halved rate
    live.write_text(live.read_text()[:300])                                     # asv killed mid-write
    done = run_compare(results, noise_file)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{live}" in done.stderr and "the two newest runs are unknown" in done.stderr
    named = run_compare(results, noise_file, "--base", BASE, "--head", BASE)    # what it can read, said
    assert named.returncode == 0 and f"left out: {live}" in named.stderr


@pytest.mark.parametrize("damage, why", [
    (lambda d: d.update(results=[]), "malformed"),
    (lambda d: d["results"][RATE].__setitem__(3, "noon"), "not a time"),
    (lambda d: d.update(version=3), "format 3"),
    (lambda d: d.update(version=1), "format 1"),
])
def test_a_result_file_that_is_not_asv_0_6s_is_not_a_run(results, damage, why):
    path = write_run(results / MACHINE, HEAD, 300, base_values())
    document = json.loads(path.read_text())
    damage(document)
    path.write_text(json.dumps(document))
    skipped: list = []
    assert HEAD not in {r.commit for r in runs.stored_runs(results, MACHINE, skipped)}
    assert [(p, w) for p, w in skipped if why in w] and skipped[0][0] == path


def test_a_result_value_of_the_wrong_type_is_a_results_error_naming_the_file(results, tmp_path):
    path = write_run(results / MACHINE, HEAD, 300, base_values())
    document = json.loads(path.read_text())
    document["results"][RATE][0] = 5.0          # a number where asv writes a list
    path.write_text(json.dumps(document))
    with pytest.raises(ResultsError, match=str(path)):
        read_result_file(path, MACHINE)
    done = run_compare(results, measure_or_empty(tmp_path), "--base", BASE, "--head", HEAD)
    assert done.returncode == 2 and "Traceback" not in done.stderr and str(path) in done.stderr


def measure_or_empty(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"schema": 1, "machine": MACHINE, "numbers": []}))
    return empty


def test_a_run_of_another_machine_filed_under_this_one_is_left_out(results):
    noise_file = measure(results)
    write_run(results / MACHINE, HEAD, 300, base_values(rate=500.0), machine="other-box")
    done = run_compare(results, noise_file, "--base", BASE, "--head", HEAD)
    assert done.returncode == 2 and "a run of machine 'other-box'" in done.stderr
    assert "no stored run of commit" in done.stderr


def test_runs_of_two_environments_are_not_repeats_of_each_other(tmp_path):
    from compare_fixtures import write_benchmarks_json

    results = tmp_path / ".asv" / "results"
    write_benchmarks_json(results)
    for env, rate in (("virtualenv-py3.11", 1000.0), ("existing-py", 1600.0)):
        for started, wobble in ((100, 0.0), (200, 10.0)):
            write_run(results / MACHINE, BASE, started + (0 if env == "existing-py" else 1000),
                      base_values(rate=rate + wobble), env=env)
            runs.archive_run(results, MACHINE, BASE)
    out = results.parent / "noise.json"
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out))
    assert done.returncode == 0, done.stderr
    rate = next(n for n in json.loads(out.read_text())["numbers"] if n["benchmark"] == RATE)
    assert rate["spread"] < 0.02                 # 1% within each environment, not 60% across them
    same = run_compare(results, out, "--base", BASE, "--head", BASE)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "IMPROVEMENT" not in same.stdout and "two environments" not in same.stdout


def _frame(values: dict[str, float], started: int) -> pd.DataFrame:
    return pd.DataFrame({"benchmark": "b.track_x", "param_label": list(values), "status": "ok",
                         "started_at": pd.Timestamp(started, unit="s", tz="UTC"), "version": "1",
                         "value": list(values.values()), "type": "track"})


def test_points_a_parameter_level_rerun_kept_do_not_set_a_zero_threshold():
    # asv re-measured point a only and stamped the whole benchmark with the new start time
    first = _frame({"a": 100.0, "b": 200.0, "c": 300.0}, 100)
    rerun = _frame({"a": 104.0, "b": 200.0, "c": 300.0}, 300)
    measured = noise.measure_noise(MACHINE, {"A": [first, rerun]})
    sigma = math.log(104 / 100) / math.sqrt(2)       # the moved point's sd of logs, one pair: 1 df
    assert {p: (t.sigma, t.df) for (_, p), t in measured.thresholds.items()} == {
        p: (pytest.approx(sigma), 1) for p in "abc"}
    assert [t.threshold for t in measured.thresholds.values()] == pytest.approx([noise.two_run_threshold(sigma, 1)] * 3)
    deterministic = noise.measure_noise(MACHINE, {"A": [first, _frame({"a": 100.0, "b": 200.0, "c": 300.0}, 300)]})
    assert {t.threshold for t in deterministic.thresholds.values()} == {0.0}     # any change is real


@pytest.mark.parametrize("old, new, expected", [(math.inf, 1.0, compare.REGRESSION),
                                                (1.0, math.inf, compare.IMPROVEMENT),
                                                (-math.inf, 1.0, compare.IMPROVEMENT)])
def test_a_change_to_or_from_infinity_is_judged(old, new, expected):
    assert compare.judge_change(old, new, compare.HIGHER, 0.05) == expected


def test_a_regression_line_shows_the_digits_that_changed():
    change = compare.Change("b.track_x", "", 0.81234561, 0.81234559, compare.HIGHER, 0.0, compare.REGRESSION)
    line = change.line()
    assert "0.81234561 -> 0.81234559" in line and "(0.99999998x" in line


@pytest.mark.parametrize("entries, message", [
    ([{"benchmark": RATE, "params": None, "threshold": 0.05}], "'params' is None"),
    ([{"benchmark": RATE, "threshold": 0.05}, {"benchmark": RATE, "params": "*", "threshold": 0.1}],
     "a second threshold for"),
])
def test_a_hand_written_thresholds_file_says_what_is_wrong(tmp_path, entries, message):
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({"schema": 1, "machine": MACHINE, "numbers": entries}))
    with pytest.raises(noise.NoiseError, match=message):
        noise.load_noise(path)


def test_a_commit_named_twice_is_measured_once(results):
    out = results.parent / "twice.json"
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out),
                  "--commit", BASE[:4], "--commit", BASE)
    assert done.returncode == 0, done.stderr
    assert "from 8 runs of 1 commit(s)" in done.stdout and len(json.loads(out.read_text())["runs"]) == 8


def test_the_report_leaves_out_a_result_file_of_another_machine(results):
    from impls.harness.report.results import read_results

    path = write_run(results / MACHINE, HEAD, 300, base_values(rate=5000.0), machine="gpu-box")
    unreadable: list = []
    frame = read_results(results, MACHINE, unreadable)
    assert HEAD not in set(frame["commit"])
    assert unreadable == [(str(path), f"{path}: a run of machine 'gpu-box', filed under {MACHINE!r}: left out")]
