"""`make compare` and `make noise` on the stored results users actually have: bumped benchmark
versions, numbers that failed or vanished, results copied without benchmarks.json, hand-edited
thresholds files, other machines' files, revisions by name, and arguments typed as users type them.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from compare_fixtures import (add_earlier_runs, BASE, FLAG, HEAD, LATENCY, MACHINE, RATE, ROOT, base_values, measure,
                              run_compare, script, write_run)
from impls.harness import paths
from impls.harness.report import compare, noise, runs
from impls.harness.report.history import series_steps
from impls.harness.report.asv_files import read_benchmark_info
from impls.harness.report.results import read_result_file


@pytest.fixture()
def results(results):  # noqa: F811 - the shared fixture, with more runs
    """The shared fixture with more runs (:func:`compare_fixtures.add_earlier_runs`)."""
    return add_earlier_runs(results)


def head_run(results, **changes) -> None:
    write_run(results / MACHINE, HEAD, 300, {**base_values(rate=1020.0, latency=102.0, steady=515.0), **changes})


def lines_of(output: str, kind: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(kind + " ")]


def test_a_number_whose_benchmark_version_changed_is_listed_not_judged(results):
    thresholds = measure(results)
    write_run(results / MACHINE, HEAD, 300, base_values(rate=500.0), versions={RATE: "2"})
    done = run_compare(results, thresholds, "--base", BASE, "--head", HEAD)
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines_of(done.stdout, "REGRESSION") == []
    [line] = lines_of(done.stdout, compare.NEW_VERSION)
    assert RATE in line and "not compared" in line


def test_runs_of_two_profiles_under_one_machine_are_named_not_judged(results):
    """A plain `asv run` under quick, then under smoke, filed under one machine name: the
    smoke run's smaller numbers must not read as regressions, and the line says why."""
    thresholds = measure(results)
    write_run(results / MACHINE, HEAD, 300, base_values(rate=50.0, latency=900.0),
              versions={RATE: "1+smoke", LATENCY: "1+smoke"})
    done = run_compare(results, thresholds, "--base", BASE, "--head", HEAD)
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines_of(done.stdout, "REGRESSION") == []
    lines = lines_of(done.stdout, compare.NEW_VERSION)
    assert {RATE, LATENCY} <= {line.split()[2] for line in lines}, done.stdout
    for line in lines:
        assert "one run is smoke's, the older quick's or from before versions carried the profile" in line
        assert "a one-time step" in line and "--machine <host>-<profile>" in line


def test_a_run_of_another_profile_than_the_machine_names_is_refused(results):
    """asv files a plain `asv run` under the only machine ~/.asv-machine.json holds: a full run
    under box-smoke. The report leaves such a run out; compare must not judge it as box-smoke's."""
    thresholds = measure(results)
    write_run(results / MACHINE, HEAD, 300, base_values(rate=50.0), versions={RATE: "1+full", LATENCY: "1+full"})
    done = run_compare(results, thresholds, "--base", BASE, "--head", HEAD)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"a run of the 'full' profile, filed under '{MACHINE}'" in done.stderr
    assert "--machine box-full" in done.stderr and "REGRESSION" not in done.stdout


@pytest.mark.parametrize("env", ["existing-py", "virtualenv-py3.11-torch2.13.0"])   # alone in asv's own one
def test_the_default_pair_leaves_a_newest_run_of_another_profile_out(results, env):
    """A stray plain `asv run` of another profile as the newest run must not block `make
    compare` of the machine's own runs: it is left out of the default pair, saying so."""
    thresholds = measure(results)
    write_run(results / MACHINE, HEAD, 300, base_values(rate=500.0))
    runs.archive_run(results, MACHINE, HEAD)
    stray = write_run(results / MACHINE, HEAD, 400, base_values(rate=50.0), name="stray.json",
                      versions={RATE: "1+full", LATENCY: "1+full"}, env=env)
    done = run_compare(results, thresholds)
    assert f"left out: {stray}: a run of the 'full' profile, filed under '{MACHINE}'" in done.stderr
    assert done.returncode == 1, done.stdout + done.stderr                # the halved rate, not the stray's
    assert "stray.json" not in done.stdout.splitlines()[0]


def test_make_noise_leaves_out_runs_of_another_profile_than_the_machine_names(results):
    from compare_fixtures import script

    full = {RATE: "1+full", LATENCY: "1+full"}
    for started in (300, 400):
        write_run(results / MACHINE, HEAD, started, base_values(rate=50.0), versions=full)
        runs.archive_run(results, MACHINE, HEAD)
    out = results.parent / "noise-profiles.json"
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"a run of the 'full' profile, filed under '{MACHINE}'" in done.stderr
    written = json.loads(out.read_text())
    assert {r["commit"] for r in written["runs"]} == {BASE}
    assert all("+full" not in (n.get("version") or "") for n in written["numbers"])


def test_a_run_is_named_by_the_file_name_compare_prints(results):
    thresholds = measure(results)
    path = write_run(results / MACHINE, HEAD, 300, base_values(rate=500.0))
    done = run_compare(results, thresholds, "--base", BASE, "--head", path.name)
    assert done.returncode == 1, done.stdout + done.stderr          # the halved rate: a regression
    assert f"({path.name})" in done.stdout.splitlines()[0]


def test_a_version_change_says_whether_the_profile_or_the_measure_changed():
    assert compare.version_change("1", "2") == "the benchmark's version changed"
    assert compare.version_change("1+smoke", "2+smoke") == "the benchmark's version changed"
    assert compare.version_change("1+smoke", "1+full").startswith("the runs used different profiles, smoke then full")
    assert compare.version_change("1+full", "1").startswith("the runs used different profiles, full then quick:")
    assert compare.version_change("1", "1+full").startswith("one run is full's, the older quick's or from before")
    assert compare.version_change("1+x", "1") == "the benchmark's version changed"  # not a profile


def test_a_threshold_measured_on_another_version_does_not_judge_the_new_one(results):
    measured = noise.load_noise(measure(results))
    assert measured.get(RATE, "policy='lru'").version == "1"
    info = read_benchmark_info(results)
    old = read_result_file(write_run(results.parent / "x", BASE, 1, base_values()), MACHINE, info)
    new = read_result_file(write_run(results.parent / "y", HEAD, 2, base_values(rate=500.0),
                                     versions={RATE: "2"}), MACHINE, info)
    old["version"] = "2"  # both runs on version 2, the thresholds measured on 1
    [change] = [c for c in compare.compare_runs(old, new, {RATE: "higher"}, measured).changes
                if c.benchmark == RATE]
    assert change.kind == compare.NO_THRESHOLD
    assert "measured on another version" in change.line()


def test_an_unwritable_thresholds_path_is_refused_before_measuring(results):
    for out in (results, results / "no-such-dir" / "n.json"):
        done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out))
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--out" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_thresholds_path_among_the_runs_it_measures_is_refused_and_left_intact(results):
    """--out on a stored run (the archive's copy is the only one of that repeat), asv's live
    file, machine.json or benchmarks.json would replace what it reads: refused, nothing written."""
    archived = sorted((results.parent / "runs" / MACHINE).glob("*.json"))[0]
    live = sorted(p for p in (results / MACHINE).glob("*.json") if p.name != "machine.json")[0]
    for target in (archived, live, results / MACHINE / "machine.json", results / "benchmarks.json",
                   results / MACHINE / "new.json"):
        before = target.read_bytes() if target.exists() else None
        done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(target))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "--out" in done.stderr and "writing there would replace what the command reads" in done.stderr
        assert (target.read_bytes() if target.exists() else None) == before
    assert measure(results).is_file()                      # beside the results: written


def test_a_measured_number_that_fails_in_the_new_run_is_a_breakage(results):
    thresholds = measure(results)
    head_run(results, **{RATE: None})
    done = run_compare(results, thresholds, "--base", BASE, "--head", HEAD)
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = lines_of(done.stdout, compare.FAILED)
    assert RATE in line and "failed in the new run" in line


def test_skipped_and_gone_numbers_are_named_but_do_not_fail_the_gate(results):
    thresholds = measure(results)
    values = base_values(rate=1020.0, latency=102.0, steady=515.0)
    values[RATE] = math.nan
    del values[LATENCY]
    write_run(results / MACHINE, HEAD, 300, values)
    done = run_compare(results, thresholds, "--base", BASE, "--head", HEAD)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line.split()[1] for line in lines_of(done.stdout, compare.SKIPPED)] == [RATE]
    assert [line.split()[1] for line in lines_of(done.stdout, compare.GONE)] == [LATENCY]
    assert "2 only in the base run (0 failed, 1 skipped or without a value, 1 gone)" in done.stdout


def test_nothing_in_common_is_a_refusal_not_a_pass(results):
    thresholds = measure(results)
    write_run(results / MACHINE, HEAD, 300, {RATE: math.nan})
    write_run(results / MACHINE, "d" * 40, 400, {LATENCY: 100.0})
    done = run_compare(results, thresholds, "--base", HEAD, "--head", "d" * 8)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "nothing was compared" in done.stderr


def test_a_number_without_a_threshold_that_moved_is_named(results):
    thresholds = json.loads(measure(results).read_text())
    thresholds["numbers"] = [n for n in thresholds["numbers"] if n["benchmark"] != RATE]
    edited = results.parent / "edited.json"
    edited.write_text(json.dumps(thresholds))
    head_run(results, **{RATE: 510.0})
    done = run_compare(results, edited, "--base", BASE, "--head", HEAD)
    # a halving with no threshold cannot pass as "no regression": exit 2, cannot compare
    assert done.returncode == 2 and "cannot compare" in done.stderr, done.stdout + done.stderr
    [line] = lines_of(done.stdout, compare.NO_THRESHOLD)
    assert RATE in line and "make noise" in line


@pytest.mark.parametrize("typed, ok", [("5", False), ("-1", False), ("nan", False), ("five", False),
                                       ("0.6", False), ("5%", True), ("0.05", True), ("0", True)])
def test_the_default_threshold_is_a_fraction_or_a_percentage(results, tmp_path, typed, ok):
    head_run(results, **{RATE: 500.0})
    empty = tmp_path / "none.json"      # a thresholds file without a number: the default judges all
    empty.write_text(json.dumps({"schema": 1, "machine": MACHINE, "numbers": []}))
    done = run_compare(results, empty, "--base", BASE, "--head", HEAD, "--default-threshold", typed)
    if ok:
        assert done.returncode == 1, done.stdout + done.stderr  # the halved rate is a regression
        assert lines_of(done.stdout, "REGRESSION")[0].split()[1] == RATE
    else:
        assert done.returncode == 2, done.stdout + done.stderr
        assert "--default-threshold" in done.stderr


def test_a_hand_written_threshold_entry_needs_only_benchmark_and_threshold(results):
    edited = results.parent / "hand.json"
    edited.write_text(json.dumps({"schema": 1, "machine": MACHINE, "numbers": [
        {"benchmark": RATE, "params": "policy='lru'", "threshold": 0.05}]}))
    head_run(results, **{RATE: 500.0})
    done = run_compare(results, edited, "--base", BASE, "--head", HEAD)
    assert done.returncode == 1, done.stdout + done.stderr
    assert lines_of(done.stdout, "REGRESSION")[0].split()[1] == RATE


@pytest.mark.parametrize("entry, why", [
    ({"benchmark": RATE}, "needs 'benchmark'"),
    ({"benchmark": RATE, "threshold": "5%"}, "'threshold' is '5%'"),
    ({"benchmark": RATE, "threshold": -0.1}, "'threshold' is -0.1"),
    ("oops", "not an object"),
])
def test_a_broken_thresholds_entry_is_a_refusal_naming_it(results, entry, why):
    edited = results.parent / "broken.json"
    edited.write_text(json.dumps({"schema": 1, "machine": MACHINE, "numbers": [entry]}))
    done = run_compare(results, edited, "--base", BASE, "--head", BASE)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "entry 1 of 'numbers'" in done.stderr and why in done.stderr
    assert "Traceback" not in done.stderr


def test_another_machines_thresholds_or_run_are_refused(results, tmp_path):
    thresholds = json.loads(measure(results).read_text())
    thresholds["machine"] = "other-box"
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps(thresholds))
    done = run_compare(results, foreign, "--base", BASE, "--head", BASE)
    assert done.returncode == 2 and "other-box" in done.stderr
    other_run = write_run(tmp_path / "elsewhere", HEAD, 300, base_values(), machine="other-box")
    done = run_compare(results, measure(results), "--base", BASE, "--head", str(other_run))
    assert done.returncode == 2 and "other-box" in done.stderr


def test_an_ambiguous_prefix_is_refused_with_the_candidates(results):
    write_run(results / MACHINE, "ab" + "1" * 38, 300, base_values())
    write_run(results / MACHINE, "ab" + "2" * 38, 400, base_values(), name="ab222222-x.json")
    with pytest.raises(ValueError, match="2 commits.*ab1111111111.*ab2222222222"):
        runs.runs_named(runs.stored_runs(results, MACHINE), "ab", MACHINE)


def test_a_revision_name_is_resolved_to_its_commit(results):
    stored = runs.stored_runs(results, MACHINE)
    found = runs.runs_named(stored, "main~1", MACHINE, {"main~1": BASE}.get)
    assert {r.commit for r in found} == {BASE}
    with pytest.raises(ValueError, match=rf"no stored run of commit 'main~2'.*{BASE[:8]}"):
        runs.runs_named(stored, "main~2", MACHINE, {"main~1": BASE}.get)


def test_git_resolves_this_checkouts_head():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    assert paths.resolve_commit("HEAD") == paths.git_commit()
    assert paths.resolve_commit("no-such-branch-xyz") is None
    assert paths.resolve_commit("--help") is None


def test_an_unknown_machine_is_named_with_the_ones_that_exist(results, tmp_path):
    done = script("compare.py", "--results", str(results), "--machine", "nosuch",
                  "--noise", str(tmp_path / "n.json"))
    assert done.returncode == 2
    assert "nosuch" in done.stderr and MACHINE in done.stderr


def test_results_copied_without_benchmarks_json_keep_their_parameter_names(results):
    (results / "benchmarks.json").unlink()
    frame = read_result_file(runs.stored_runs(results, MACHINE)[-1].path, MACHINE)
    labels = dict(zip(frame["benchmark"], frame["param_label"]))
    assert labels[RATE] == "policy='lru'"
    assert labels[LATENCY] == "block_bytes=4096, queue_depth=1"
    assert labels[FLAG] == "comparison='slide-vs-dense'"
    units = dict(zip(frame["benchmark"], frame["unit"]))      # and their units (a history's axis)
    assert units[RATE] == "lookups/s" and units[LATENCY] == "us", units


def test_a_point_around_zero_does_not_make_its_steady_sibling_untrackable():
    def frame(values):
        return pd.DataFrame({"benchmark": ["b"] * 2, "param_label": ["w=1", "w=2"], "value": values,
                             "status": ["ok"] * 2})

    measured = noise.measure_noise("m", {"c": [frame([-1.0, 2.0]), frame([1.0, 2.0])]})
    assert math.isinf(measured.get("b", "w=1").threshold)
    assert measured.get("b", "w=2").threshold == 0.0


def test_noise_with_no_number_measured_twice_is_a_refusal(tmp_path):
    results = tmp_path / "results"
    write_run(results / MACHINE, BASE, 100, base_values())
    runs.archive_run(results, MACHINE, BASE)
    write_run(results / MACHINE, BASE, 200, {k: math.nan for k in base_values()})
    runs.archive_run(results, MACHINE, BASE)
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE,
                  "--out", str(tmp_path / "n.json"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "measured in two runs" in done.stderr
    assert not (tmp_path / "n.json").exists()


def test_noise_names_an_unknown_commit(results, tmp_path):
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE,
                  "--commit", "feedbee", "--out", str(tmp_path / "n.json"))
    assert done.returncode == 2
    assert "'feedbee'" in done.stderr and BASE[:8] in done.stderr


@pytest.mark.parametrize("old, new, text", [(-5.0, -2.0, "+3"), (0.0, 0.5, "+0.5"), (2.0, 1.0, "0.5x")])
def test_a_change_of_negative_or_zero_values_reads_as_a_difference(old, new, text):
    change = compare.Change("b", "", old, new, "lower", 0.1, compare.REGRESSION)
    assert f"({text}, lower is better)" in change.line()


def test_history_is_cut_at_a_version_change_not_called_a_regression():
    values = [10.0, 10.0, 10.0, 5.0, 5.0, 5.0]
    assert [s[3] for s in series_steps(values, "higher")] == ["regression"]
    steps = series_steps(values, "higher", versions=["1", "1", "1", "2", "2", "2"])
    assert steps == [(3, 10.0, 5.0, "new version")]
    # a real step inside the new version is still found
    values = [10.0] * 3 + [5.0] * 3 + [2.0] * 3
    steps = series_steps(values, "higher", versions=["1"] * 3 + ["2"] * 6)
    assert [(s[0], s[3]) for s in steps] == [(3, "new version"), (6, "regression")]


def test_noise_over_two_versions_keeps_the_newest_versions_own_spread(tmp_path):
    results = tmp_path / "results"
    from compare_fixtures import write_benchmarks_json

    write_benchmarks_json(results)
    for started, rate, version, commit in ((100, 1000.0, "1", BASE), (200, 1400.0, "1", BASE),
                                           (300, 10.0, "2", HEAD), (400, 10.1, "2", HEAD)):
        write_run(results / MACHINE, commit, started, base_values(rate=rate), versions={RATE: version})
        runs.archive_run(results, MACHINE, commit)
    for order in ((), ("--commit", HEAD[:8], "--commit", BASE[:8])):
        out = tmp_path / "n.json"
        done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out), *order)
        assert done.returncode == 0, done.stderr
        rate = noise.load_noise(out).get(RATE, "policy='lru'")
        sigma = math.log(10.1 / 10.0) / math.sqrt(2)          # version 2's two runs alone: one degree of freedom
        assert rate.version == "2" and rate.spread == pytest.approx(0.1 / 10.05)
        assert (rate.sigma, rate.df) == (pytest.approx(sigma), 1)
        assert rate.threshold == pytest.approx(noise.two_run_threshold(sigma, 1))


def test_a_new_run_that_measured_none_of_the_base_numbers_compared_nothing(results):
    thresholds = measure(results)
    write_run(results / MACHINE, HEAD, 300, {k: math.nan for k in base_values()})
    done = run_compare(results, thresholds, "--base", BASE, "--head", HEAD)
    assert done.returncode == 2 and "nothing was compared" in done.stderr
    assert len(lines_of(done.stdout, compare.SKIPPED)) == 4


def test_a_threshold_written_without_params_holds_for_every_point(results):
    edited = results.parent / "hand.json"
    edited.write_text(json.dumps({"schema": 1, "machine": MACHINE, "numbers": [
        {"benchmark": RATE, "threshold": 0.05, "version": "1"}]}))
    head_run(results, **{RATE: 500.0})
    done = run_compare(results, edited, "--base", BASE, "--head", HEAD)
    assert done.returncode == 1 and lines_of(done.stdout, "REGRESSION")[0].split()[1] == RATE
    assert "record no benchmark version" not in done.stdout


def test_thresholds_without_versions_are_pointed_out(results):
    document = json.loads(measure(results).read_text())
    for entry in document["numbers"]:
        entry.pop("version")
    old = results.parent / "old.json"
    old.write_text(json.dumps(document))
    done = run_compare(results, old, "--base", BASE, "--head", BASE)
    assert "4 thresholds" in done.stdout and "record no benchmark version" in done.stdout


def test_a_point_of_unknown_version_does_not_hide_a_version_change():
    steps = series_steps([1.0, 1.0, 1.0, 5.0, 5.0, 5.0], "higher", noise.Threshold("b", "", 2, 0.0, 0.0),
                         ["a", "a", "", "b", "b", "b"])
    assert steps == [(3, 1.0, 5.0, "new version")]


def test_nothing_judged_is_a_refusal(results):
    measure_file = measure(results)
    document = json.loads(measure_file.read_text())
    for entry in document["numbers"]:
        entry["version"] = "0"      # measured on a version neither run has
    other = results.parent / "other.json"
    other.write_text(json.dumps(document))
    head_run(results, **{RATE: 500.0})
    done = run_compare(results, other, "--base", BASE, "--head", HEAD)
    assert done.returncode == 2 and "nothing was judged" in done.stderr


def test_thresholds_all_too_noisy_judge_nothing(results):
    document = json.loads(measure(results).read_text())
    for entry in document["numbers"]:
        entry["threshold"] = 0.9
    noisy = results.parent / "noisy.json"
    noisy.write_text(json.dumps(document))
    head_run(results, **{RATE: 600.0})      # within x1.9: a move beyond it would be judged
    done = run_compare(results, noisy, "--base", BASE, "--head", HEAD)
    assert done.returncode == 2 and "too noisy" in done.stderr
    # measuring the same runs again gives the same thresholds: the remedy is more runs
    assert "more runs of one commit narrow them" in done.stderr and "run `make noise` on" not in done.stderr


def test_no_thresholds_file_asks_for_the_runs_the_readme_asks_for(results):
    head_run(results, **{RATE: 600.0})
    assert not noise.default_noise_path(MACHINE).exists()
    done = script("compare.py", "--results", str(results), "--machine", MACHINE, "--base", BASE, "--head", HEAD)
    assert done.returncode == 2 and "3 to 5 times on one commit" in done.stderr and "twice" not in done.stderr


def test_a_run_can_be_left_out_of_the_noise_measurement_by_name(results):
    stored = sorted((results.parent / "runs" / MACHINE).glob("*.json"))
    out = results.parent / "left.json"
    left_out = [arg for run in stored[:-1] for arg in ("--leave-out", run.name)]
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out), *left_out)
    # the runs of BASE less all but the newest: one run, no spread to measure
    assert done.returncode == 2 and "two stored runs" in done.stderr, done.stderr
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out),
                  "--leave-out", "no-such-run")
    assert done.returncode == 2 and "--leave-out" in done.stderr and stored[0].name in done.stderr


# ---------------------------------------------------------------- inputs a review found (session 61)

def test_a_damaged_result_file_of_a_named_commit_is_refused_not_passed_over(results):
    """Its newest run (here a 0.6x regression) could not be read: judging the older run of
    that commit passed the gate with exit 0."""
    noise_file = measure(add_earlier_runs(results))
    write_run(results / MACHINE, HEAD, 300, base_values())
    runs.archive_run(results, MACHINE, HEAD)
    live = write_run(results / MACHINE, HEAD, 400, base_values(rate=600.0))
    live.write_text(live.read_text()[:-30])
    done = run_compare(results, noise_file, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{HEAD[:8]}: asv's result file of commit {HEAD[:8]} cannot be read" in done.stderr
    assert "it may hold its newest run" in done.stderr


def test_a_damaged_archived_copy_does_not_stop_a_named_comparison(results):
    """An archived run is named by its start, not its commit: when asv's live file of the
    named commit reads, that is its newest run, whatever an archive holds."""
    noise_file = measure(add_earlier_runs(results))
    write_run(results / MACHINE, HEAD, 300, base_values())
    [archived] = runs.archive_run(results, MACHINE, HEAD)
    write_run(results / MACHINE, HEAD, 400, base_values())            # asv's live file: a newer run
    archived.write_text("{")
    done = run_compare(results, noise_file, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_default_pair_git_does_not_have_is_said_to_be_ordered_by_dates(results):
    """Results copied from another clone: the pair's order came from author dates, which a
    rebase keeps, so compare says so."""
    noise_file = measure(add_earlier_runs(results))
    write_run(results / MACHINE, HEAD, 300, base_values(), date_s=1_700_100_000)
    done = run_compare(results, noise_file)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (f"note: commits {BASE[:8]} and {HEAD[:8]} of the pair are not in this checkout's git history"
            in done.stderr)


def test_a_ref_git_cannot_resolve_is_named_as_such():
    stored = [runs.StoredRun(Path("x.json"), MACHINE, BASE, "existing-py", "19700101T000000")]
    with pytest.raises(ValueError, match=r"no stored run of commit 'HEAD~1' \(git does not resolve 'HEAD~1' in "
                                         r"this checkout: a typo, or a commit this clone lacks"):
        runs.runs_named(stored, "HEAD~1", MACHINE, lambda name: None)
    with pytest.raises(ValueError, match=r"no stored run of commit 'cafe' for"):   # a hash: no git word
        runs.runs_named(stored, "cafe", MACHINE, lambda name: None)


def test_the_only_machine_of_another_profile_is_not_taken_for_this_ones(tmp_path, monkeypatch):
    """Profiles never mix: with only `box-quick` runs stored, a smoke-profile compare, noise
    or report names it and asks for the profile (or the machine) rather than judging it."""
    from impls.harness.report import build

    results = tmp_path / "results"
    write_run(results / "box-quick", BASE, 100, base_values(), machine="box-quick")
    (tmp_path / "artifacts").mkdir()
    with pytest.raises(ValueError, match="the only machine with runs, 'box-quick', holds the quick profile's: "
                                         "run with DLSYSBENCH_PROFILE=quick"):
        runs.choose_run_machine(None, results, "vm", "smoke")
    assert runs.choose_run_machine(None, results, "vm", "quick") == "box-quick"     # its own profile's
    assert runs.choose_run_machine("box-quick", results, "", "smoke") == "box-quick"  # named: taken
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    with pytest.raises(build.NoResultsError, match="'box-quick', holds the quick profile's"):
        build.choose_machine(None, results, tmp_path / "artifacts", "vm-smoke")
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "quick")
    assert build.choose_machine(None, results, tmp_path / "artifacts", "vm-quick") == "box-quick"
    hand = tmp_path / "hand"           # a machine named by hand says no profile: the only one is taken
    write_run(hand / "mybox", BASE, 100, base_values(), machine="mybox")
    assert runs.choose_run_machine(None, hand, "vm", "smoke") == "mybox"


def test_machines_a_changing_host_name_made_are_told_how_to_share_one(tmp_path):
    """A container or CI runner's host name changes every run, filing each run under a machine
    of its own: the refusal says so and names DLSYSBENCH_MACHINE; machines of two profiles
    are not that case."""
    results = tmp_path / "results"
    for host, started in (("3f2a1b9c0d4e", 100), ("7e6d5c4b3a21", 200)):
        write_run(results / f"{host}-quick", BASE, started, base_values(), machine=f"{host}-quick")
    with pytest.raises(ValueError, match=r"pick a machine with --machine: 3f2a1b9c0d4e-quick, 7e6d5c4b3a21-quick "
                                         r"\(several machines of the quick profile: .*DLSYSBENCH_MACHINE="):
        runs.choose_run_machine(None, results, "vm", "quick")
    other = tmp_path / "other"
    for machine in ("box-quick", "box-full"):
        write_run(other / machine, BASE, 100, base_values(), machine=machine)
    with pytest.raises(ValueError, match="pick a machine") as refused:
        runs.choose_run_machine(None, other, "vm", "quick")
    assert "DLSYSBENCH_MACHINE" not in str(refused.value)


def test_results_given_as_dot_find_and_guard_the_archive_beside_them(results, monkeypatch):
    """`--results .` from inside asv's results folder: the archive is ../runs (Path('.').parent
    is '.' itself, which took ./runs, neither reading nor guarding the real one)."""
    monkeypatch.chdir(results)
    assert runs.runs_dir(Path(".")) == results.parent / "runs"
    archived = sorted((results.parent / "runs" / MACHINE).glob("*.json"))[0]
    before = archived.read_bytes()
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(archived))
    assert done.returncode == 2 and archived.read_bytes() == before
    relative = subprocess.run([sys.executable, str(ROOT / "scripts" / "measure_noise.py"), "--results", ".",
                               "--machine", MACHINE, "--out", f"../runs/{MACHINE}/{archived.name}"],
                              cwd=results, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert relative.returncode == 2 and "the archive of stored runs" in relative.stderr, relative.stderr
    assert archived.read_bytes() == before
