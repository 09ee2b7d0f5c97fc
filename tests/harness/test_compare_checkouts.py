"""Runs of one machine from two checkouts, or from two kinds of environment: the suite's
``.venv`` of any checkout is one environment (asv names each after its path), so repeats in
two clones pool for `make noise` and pair in `make compare`; runs of one commit in two
kinds of environment are paired within the kind that has two, and where none has, the
error names the files that compare them."""
from __future__ import annotations

import json

from compare_fixtures import BASE, HEAD, MACHINE, RATE, base_values, run_compare, script, write_benchmarks_json, write_run
from impls.harness.report import runs

CLONE_A = "existing-py_tmp_a_.venv_bin_python"
CLONE_B = "existing-py_home_me_dlsysbench_.venv_bin_python3.11"
PLAIN = "virtualenv-py3.11-torch2.13.0"


def test_the_suites_venv_is_one_environment_whatever_the_checkout():
    assert runs.environment(CLONE_A) == runs.environment(CLONE_B) == runs.SUITE_VENV_KEY
    assert runs.environment(PLAIN) == PLAIN
    assert runs.environment("existing-py_usr_bin_python3") == "existing-py_usr_bin_python3"   # not a .venv


def _results(tmp_path, plan):
    results = tmp_path / ".asv" / "results"
    write_benchmarks_json(results)
    for commit, started, env, rate in plan:
        write_run(results / MACHINE, commit, started, base_values(rate=rate), env=env)
        runs.archive_run(results, MACHINE, commit)
    return results


def test_repeats_in_two_clones_pool_for_noise_and_pair_for_compare(tmp_path):
    results = _results(tmp_path, [(BASE, 100, CLONE_A, 1000.0), (BASE, 200, CLONE_A, 1010.0),
                                  (BASE, 300, CLONE_B, 1020.0), (BASE, 400, CLONE_B, 1005.0)])
    out = results.parent / "noise.json"
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out))
    assert done.returncode == 0, done.stderr
    rate = next(n for n in json.loads(out.read_text())["numbers"] if n["benchmark"] == RATE)
    assert rate["df"] == 3                        # four runs of one commit in one environment
    write_run(results / MACHINE, HEAD, 500, base_values(rate=400.0), env=CLONE_B, date_s=1_700_086_400)
    runs.archive_run(results, MACHINE, HEAD)
    done = run_compare(results, out)              # the newest run and the one before it, another clone's
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REGRESSION" in done.stdout and RATE in done.stdout
    assert "two environments" not in done.stdout
    same = run_compare(results, out, "--base", BASE, "--head", BASE)
    assert same.returncode == 0 and f"{BASE[:8]}@" in same.stdout, same.stdout + same.stderr


def test_one_commit_twice_pairs_in_the_environment_that_holds_two_runs(tmp_path):
    results = _results(tmp_path, [(BASE, 100, CLONE_A, 1000.0), (BASE, 200, CLONE_A, 1000.0),
                                  (BASE, 300, PLAIN, 500.0)])
    done = script("compare.py", "--results", str(results), "--machine", MACHINE, "--base", BASE, "--head", BASE,
                  "--default-threshold", "5%")
    assert done.returncode == 0, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert "T000140" in first and "T000320" in first and CLONE_A in first   # the .venv's two runs, not PLAIN's


def test_one_run_in_each_of_two_environments_names_the_files_that_compare_them(tmp_path):
    results = _results(tmp_path, [(BASE, 100, CLONE_A, 1000.0), (BASE, 300, PLAIN, 1000.0)])
    done = script("compare.py", "--results", str(results), "--machine", MACHINE, "--base", BASE, "--head", BASE,
                  "--default-threshold", "5%")
    assert done.returncode == 2
    assert "comparing it with itself needs two" in done.stderr
    assert CLONE_A in done.stderr and PLAIN in done.stderr and ".json" in done.stderr


def test_two_named_commits_pair_in_the_venv_both_have_across_clones(tmp_path):
    """BASE has a .venv run and a newer plain-asv virtualenv run; HEAD a .venv run of another
    clone: the pair is the two .venv runs, one environment, not virtualenv -> .venv."""
    results = _results(tmp_path, [(BASE, 100, CLONE_A, 1000.0), (BASE, 200, PLAIN, 500.0)])
    write_run(results / MACHINE, HEAD, 300, base_values(rate=1000.0), env=CLONE_B, date_s=1_700_086_400)
    runs.archive_run(results, MACHINE, HEAD)
    done = script("compare.py", "--results", str(results), "--machine", MACHINE, "--base", BASE, "--head", HEAD,
                  "--default-threshold", "5%")
    assert done.returncode == 0, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert CLONE_A in first and CLONE_B in first and PLAIN not in first
    assert "two environments" not in done.stdout
