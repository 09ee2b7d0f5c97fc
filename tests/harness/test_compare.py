"""Regression tracking: directions, noise thresholds, stored runs and `make compare`.

Stored results are written here in asv 0.6's result format (version 2) under the
real benchmark names, so the script judges them with the suite's own declarations.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import statistics
import subprocess
from pathlib import Path

import pytest

from compare_fixtures import (BASE, FLAG, HEAD, LATENCY, MACHINE, RATE, ROOT, STEADY, base_values, kinds, measure,
                              run_compare, script, write_benchmarks_json, write_run)
from impls.harness.report import compare, directions, noise, runs
from impls.harness.report.asv_files import read_benchmark_info
from impls.harness.report.results import read_result_file

REPEATS = 6  # runs of BASE added before the shared fixture's two


@pytest.fixture()
def results(results):
    """The shared fixture's two runs of BASE and REPEATS more at the same spread, started
    before them (so its two newest runs stay the newest): 7 degrees of freedom, where the
    two runs' one leaves every number too noisy to judge."""
    for i in range(REPEATS):
        write_run(results / MACHINE, BASE, 10 + 10 * i,
                  base_values() if i % 2 else base_values(rate=1020.0, latency=102.0, steady=515.0))
        runs.archive_run(results, MACHINE, BASE)
    write_run(results / MACHINE, BASE, 200, base_values(rate=1020.0, latency=102.0, steady=515.0))  # asv's live file
    return results


def test_only_the_fallen_rate_is_a_regression_and_the_exit_status_says_so(results):
    thresholds = measure(results)
    write_run(results / MACHINE, HEAD, 300, base_values(
        rate=0.7 * 1020.0, latency=0.7 * 102.0, flag=1.0, steady=530.0))
    runs.archive_run(results, MACHINE, HEAD)
    done = run_compare(results, thresholds, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 1, done.stdout + done.stderr
    assert kinds(done.stdout) == [("REGRESSION", RATE), ("IMPROVEMENT", LATENCY), ("CHANGED", FLAG)]
    line = next(x for x in done.stdout.splitlines() if x.startswith("REGRESSION"))
    assert re.fullmatch(rf"REGRESSION {re.escape(RATE)} \[policy='lru'\] 1020 -> 714 \(0\.7x, .*", line)


def test_with_only_the_improvement_the_exit_status_is_0(results):
    thresholds = measure(results)
    write_run(results / MACHINE, HEAD, 300, base_values(rate=1020.0, latency=0.7 * 102.0, steady=515.0))
    done = run_compare(results, thresholds, "--base", BASE, "--head", HEAD)
    assert done.returncode == 0, done.stdout + done.stderr
    assert kinds(done.stdout) == [("IMPROVEMENT", LATENCY)]


def test_two_runs_of_one_commit_compare_within_their_own_noise(results):
    done = run_compare(results, measure(results), "--base", BASE[:8], "--head", BASE[:8])
    assert done.returncode == 0, done.stdout + done.stderr
    assert kinds(done.stdout) == []
    assert "4 numbers compared" in done.stdout


def test_without_measured_thresholds_compare_refuses_to_guess(results, tmp_path):
    done = run_compare(results, tmp_path / "absent.json")
    assert done.returncode == 2
    assert "make noise" in done.stderr


def test_noise_prints_a_huge_threshold_as_over_1000_percent(tmp_path):
    """Two runs 10% apart: one degree of freedom, t = 637, a threshold near 2e28 %: said so."""
    results = tmp_path / "results"
    write_benchmarks_json(results)
    for started, rate in ((100, 1000.0), (200, 1100.0)):
        write_run(results / MACHINE, BASE, started, base_values(rate=rate, latency=100.0 + started / 10))
        runs.archive_run(results, MACHINE, BASE)
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(tmp_path / "n.json"))
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.strip().startswith(RATE)]
    assert "threshold up to over 1000% over 1 point(s)" in line, line


def test_noise_checks_its_thresholds_on_each_run_held_out(tmp_path):
    """With three runs of a commit, make noise holds each out, measures the thresholds from
    the other two and compares it with the newer of them: the rate a user would meet."""
    results = tmp_path / "results"
    write_benchmarks_json(results)
    for started, rate in ((100, 1000.0), (200, 1010.0)):
        write_run(results / MACHINE, BASE, started, base_values(rate=rate, latency=100.0))
        runs.archive_run(results, MACHINE, BASE)
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(tmp_path / "n.json"))
    assert done.returncode == 0 and "held out:" not in done.stdout, done.stdout     # two runs: none to hold out
    write_run(results / MACHINE, BASE, 300, base_values(rate=500.0, latency=100.0))   # a stalled third run
    runs.archive_run(results, MACHINE, BASE)
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(tmp_path / "n.json"))
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("held out:")]
    assert line.startswith("held out: each of 3 runs compared with the newest other run of its commit"), line
    assert "where the thresholds are set for 1" in line


def test_noise_writes_its_file_where_a_held_out_run_leaves_too_few_to_measure(tmp_path):
    """Three runs, the first failed at every benchmark: holding out either good run leaves no
    number measured twice. The thresholds from all three are written, and the check says it
    could not run, rather than a traceback and exit 1."""
    results = tmp_path / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, BASE, 100, {k: None for k in base_values()})
    runs.archive_run(results, MACHINE, BASE)
    for started, rate in ((200, 1000.0), (300, 1010.0)):
        write_run(results / MACHINE, BASE, started, base_values(rate=rate, latency=100.0 + started / 100))
        runs.archive_run(results, MACHINE, BASE)
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(tmp_path / "n.json"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "n.json").exists()
    assert "held out: not checked: " in done.stdout, done.stdout


def test_compare_says_a_huge_threshold_as_measure_noise_does():
    change = compare.Change(RATE, "policy='lru'", 1000.0, 400.0, "higher", 3.85e48, compare.NOISY)
    assert "threshold over 1000% over 50%" in change.line(), change.line()
    assert "threshold 60% over 50%" in dataclasses.replace(change, threshold=0.6).line()


def test_noise_needs_two_runs_of_one_commit(tmp_path):
    results = tmp_path / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, BASE, 100, base_values())
    write_run(results / MACHINE, HEAD, 200, base_values())
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE,
                  "--out", str(tmp_path / "n.json"))
    assert done.returncode == 2
    assert "two stored runs" in done.stderr


def test_noise_refuses_to_drop_thresholds_its_runs_do_not_measure_again(results, tmp_path):
    out = measure(results)
    held = noise.load_noise(out).thresholds
    # two runs of another commit, without LATENCY: its thresholds would be lost
    fewer = tmp_path / "fewer"
    write_benchmarks_json(fewer)
    for started, rate in ((100, 1000.0), (200, 1010.0)):
        values = {k: v for k, v in base_values(rate=rate).items() if k != LATENCY}
        write_run(fewer / MACHINE, HEAD, started, values)
        runs.archive_run(fewer, MACHINE, HEAD)
    done = script("measure_noise.py", "--results", str(fewer), "--machine", MACHINE, "--out", str(out))
    assert done.returncode == 2 and noise.load_noise(out).thresholds == held, done.stderr
    assert f"{out} holds thresholds for 1 number(s) these runs do not measure again (e.g. {LATENCY} " in done.stderr
    assert "--replace" in done.stderr
    done = script("measure_noise.py", "--results", str(fewer), "--machine", MACHINE, "--out", str(out), "--replace")
    assert done.returncode == 0, done.stderr
    assert noise.load_noise(out).get(LATENCY, "block_bytes=4096, queue_depth=1") is None
    # the same runs again: nothing dropped, no flag needed
    assert script("measure_noise.py", "--results", str(fewer), "--machine", MACHINE, "--out", str(out)).returncode == 0


def test_thresholds_follow_the_measured_spread(results):
    measured = noise.load_noise(measure(results))
    rate = measured.get(RATE, "policy='lru'")
    assert rate.runs == REPEATS + 2 and rate.df == REPEATS + 1
    assert rate.spread == pytest.approx(20 / 1010)          # the observed range
    # the benchmark's only point sets its floor too; t_{0.9995}(7) = 5.408 (a t table)
    sigma = statistics.stdev([math.log(v) for v in [1000.0, 1020.0] * 4])   # of the logs
    assert rate.sigma == pytest.approx(sigma)
    assert rate.threshold == pytest.approx(math.expm1(5.408 * math.sqrt(2) * sigma), rel=1e-3)
    assert measured.get(FLAG, "comparison='slide-vs-dense'").threshold == 0.0


def partial_rerun(tmp_path: Path, rate: float) -> Path:
    """Two archived runs of BASE: the second reran only RATE (at 300 s); asv kept the rest."""
    results = tmp_path / "results"
    write_benchmarks_json(results)
    path = write_run(results / MACHINE, BASE, 100, base_values())
    runs.archive_run(results, MACHINE, BASE)
    document = json.loads(path.read_text())
    document["results"][RATE][3], document["results"][RATE][0] = 300_000, [rate]
    path.write_text(json.dumps(document))
    runs.archive_run(results, MACHINE, BASE)
    return results


def test_a_result_kept_through_a_partial_rerun_is_not_a_repeat(tmp_path):
    results = partial_rerun(tmp_path, 1010.0)
    info = read_benchmark_info(results)
    frames = [read_result_file(r.path, MACHINE, info) for r in runs.stored_runs(results, MACHINE)]
    measured = noise.measure_noise(MACHINE, {BASE: frames})
    assert measured.get(RATE, "policy='lru'").spread == pytest.approx(10 / 1005)
    assert measured.get(LATENCY, "block_bytes=4096, queue_depth=1") is None  # measured once


def test_compare_counts_what_a_partial_rerun_kept_as_not_measured_again(tmp_path):
    """`make bench BENCH=x; make compare`: the numbers asv carried over are the base run's own
    measurement, not a second one within noise. (Thresholds written by hand: measured from
    these two runs, the one rerun number rests on one degree of freedom and is too noisy.)"""
    results = partial_rerun(tmp_path, 1010.0)
    thresholds = tmp_path / "noise.json"
    thresholds.write_text(json.dumps({"schema": 1, "machine": MACHINE, "numbers": [
        {"benchmark": name, "threshold": 0.05} for name in (RATE, LATENCY, FLAG, STEADY)]}))
    done = run_compare(results, thresholds, "--base", BASE[:8], "--head", BASE[:8])
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert "4 numbers compared" in summary and "1 within noise" in summary, summary
    assert "3 not measured again" in summary, summary


def test_a_lost_lower_bound_keeps_its_mark():
    assert compare.Lost("b.S.track_ratio", "", 2.66625, compare.SKIPPED, "no target",
                        compare.LOWER_BOUND).line().startswith("NO VALUE b.S.track_ratio [] >= 2.66625 -> ")


def test_a_point_that_agreed_by_chance_takes_its_benchmarks_typical_spread():
    import pandas as pd

    def frame(values):
        return pd.DataFrame({"benchmark": ["b"] * 3, "param_label": ["p=1", "p=2", "p=3"],
                             "value": values, "status": ["ok"] * 3})

    measured = noise.measure_noise("m", {"c": [frame([1.0, 10.0, 100.0]), frame([1.0, 11.0, 110.0])]})
    exact = measured.get("b", "p=1")
    assert exact.spread == 0.0
    # the sigma of the two points that moved, pooled (1 degree of freedom each): 2 df
    moved = math.sqrt(statistics.stdev([math.log(10.0), math.log(11.0)]) ** 2
                      + statistics.stdev([math.log(100.0), math.log(110.0)]) ** 2) / math.sqrt(2)
    assert (exact.sigma, exact.df) == (pytest.approx(moved), 2)
    assert exact.threshold == pytest.approx(noise.two_run_threshold(moved, 2)) and exact.threshold > 0


@pytest.mark.parametrize("old, new, direction, threshold, kind", [
    (100, 70, "higher", 0.1, compare.REGRESSION),
    (100, 70, "lower", 0.1, compare.IMPROVEMENT),
    (100, 130, "lower", 0.1, compare.REGRESSION),
    (100, 105, "higher", 0.1, "same"),
    (100, 70, "higher", 0.6, "too noisy"),
    (0, 1, "flag", None, compare.FLIPPED),
    (1, 1, "flag", None, "same"),
    (100, 10, "context", 0.1, "unjudged"),
    (100, 10, "higher", None, compare.NO_THRESHOLD),
    (100, 100, "higher", None, "same"),
    (0, 1, "lower", 0.0, compare.REGRESSION),
    (1.0, 1.0, "higher", 0.0, "same"),
])
def test_judge_change(old, new, direction, threshold, kind):
    assert compare.judge_change(old, new, direction, threshold) == kind


def test_every_track_declares_a_direction_and_subclasses_inherit_it():
    declared = directions.declared_directions()
    tracks = [n for n in declared if n.rsplit(".", 1)[-1].startswith("track_")]
    assert len(tracks) >= 90
    assert set(declared.values()) <= set(directions.DIRECTIONS)
    assert declared["bench_salus.SwitchingLatencyCuda.track_p99_ms"] == directions.NEARER_ZERO  # inherited
    assert declared[RATE] == directions.HIGHER and declared[FLAG] == directions.FLAG


def test_a_track_without_a_direction_is_refused(tmp_path, monkeypatch):
    package = tmp_path / "fakebench"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "bench_x.py").write_text(
        "class A:\n    def track_y(self):\n        return 1\n    track_y.unit = 'x'\n")
    (tmp_path / "asv.conf.json").write_text("{}")
    (tmp_path / "impls").mkdir()
    monkeypatch.setenv("DLSYSBENCH_ROOT", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    directions.paths.repo_root.cache_clear()
    try:
        with pytest.raises(directions.DirectionError, match="bench_x.A.track_y"):
            directions.declared_directions.__wrapped__("fakebench")
    finally:
        directions.paths.repo_root.cache_clear()


def _asv_conf() -> dict:
    text = (ROOT / "asv.conf.json").read_text()
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE))


def test_asv_conf_switches_off_asvs_regression_detection_where_it_would_misjudge():
    conf = _asv_conf()
    expected = directions.asv_regressions_first_commits(directions.declared_directions())
    assert conf["regressions_first_commits"] == expected, (
        "asv.conf.json's regressions_first_commits is stale: rewrite it with "
        "`python scripts/compare.py --write-asv-config`")
    keys = [re.compile(k) for k in expected]
    assert any(k.match(RATE + "('lru')") for k in keys)
    assert not any(k.match(LATENCY + "(4096, 1)") for k in keys)
    assert not any(k.match("bench_slide.SlideTimeToAccuracy.track_time_to_target('slide')") for k in keys)


def test_the_asv_config_block_is_rewritten_in_place_with_its_comments():
    text = (ROOT / "asv.conf.json").read_text()
    declared = directions.declared_directions()
    assert directions.with_regressions_first_commits(text, declared) == text, (
        "asv.conf.json's regressions_first_commits is stale: rewrite it with "
        "`python scripts/compare.py --write-asv-config`")
    stale = re.sub(r'\n\s*"bench_slide[^\n]*', "", text)             # entries of a bench module lost
    assert stale != text
    fixed = directions.with_regressions_first_commits(stale, declared)
    assert fixed == text and "// higher-is-better" in fixed
    with pytest.raises(ValueError, match="no \"regressions_first_commits\""):
        directions.with_regressions_first_commits("{}", declared)
    empty_first = '{\n    "regressions_first_commits": {},\n    "matrix": {\n        "x": "}"\n    }\n}\n'
    rewritten = directions.with_regressions_first_commits(empty_first, declared)
    assert '"matrix": {\n        "x": "}"\n    }' in rewritten            # its neighbour survives
    assert json.loads(rewritten)["regressions_first_commits"] == directions.asv_regressions_first_commits(declared)


def test_profiles_never_share_a_machine_name():
    assert runs.machine_for_profile("host", "smoke") == "host-smoke"
    assert runs.machine_for_profile("host-quick", "quick") == "host-quick"
    assert runs.machine_for_profile("host", "quick") != runs.machine_for_profile("host", "full")


def test_a_rerun_of_one_commit_keeps_both_runs(tmp_path):
    results = tmp_path / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, BASE, 100, base_values())
    first = runs.archive_run(results, MACHINE, BASE)
    assert runs.archive_run(results, MACHINE, BASE) == first  # the same run is kept once
    write_run(results / MACHINE, BASE, 200, base_values(rate=2.0))  # asv overwrites its file
    runs.archive_run(results, MACHINE, BASE)  # the live file and its copy are one run
    stored = runs.stored_runs(results, MACHINE)
    assert [r.started for r in stored] == ["19700101T000140", "19700101T000320"]
    values = [read_result_file(r.path, MACHINE, read_benchmark_info(results))["value"].iloc[0] for r in stored]
    assert values == [1000.0, 2.0]


def test_a_partial_rerun_that_keeps_older_results_is_a_run_of_its_own(tmp_path):
    results = partial_rerun(tmp_path, 1.0)
    assert len(list((runs.runs_dir(results) / MACHINE).glob("*.json"))) == 2
    assert len(runs.stored_runs(results, MACHINE)) == 2


def test_the_makefile_passes_base_and_head_to_compare():
    done = subprocess.run(["make", "-n", "compare", "BASE=abc", "HEAD=def"],
                          cwd=ROOT, capture_output=True, text=True)
    assert "scripts/compare.py --base 'abc' --head 'def'" in done.stdout


def test_the_makefile_passes_one_benchmark_to_bench():
    done = subprocess.run(["make", "-n", "bench", "BENCH=ToyNumbers|Other"], cwd=ROOT, capture_output=True, text=True)
    assert "scripts/run_suite.py --no-report --bench 'ToyNumbers|Other'" in done.stdout
    plain = subprocess.run(["make", "-n", "bench"], cwd=ROOT, capture_output=True, text=True)
    assert "--bench" not in plain.stdout
    anchored = subprocess.run(["make", "-n", "bench", "BENCH=Speed$|Lru$.x$@"], cwd=ROOT, capture_output=True,
                              text=True)               # $| $. $@ are make's variables: taken as typed
    assert "--bench 'Speed$|Lru$.x$@'" in anchored.stdout, anchored.stdout


def test_the_makefile_runs_the_tests_in_workers_unless_told_otherwise():
    """make test spreads the test files over the cores (a file's tests on one worker);
    TEST_WORKERS on make's command line sets the count, and one exported is ignored."""
    env = {**os.environ, "TEST_WORKERS": "7"}
    plain = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert "-m pytest -q -n 'auto' --dist loadfile" in plain.stdout
    one = subprocess.run(["make", "-n", "test", "TEST_WORKERS=0"], cwd=ROOT, capture_output=True, text=True)
    assert "-m pytest -q -n '0' " in one.stdout


def test_infinite_spread_round_trips(tmp_path):
    item = noise.Threshold("b", "", 2, math.inf, math.inf)
    saved = noise.save_noise(noise.Noise("m", "t", [], {("b", ""): item}), tmp_path / "n.json")
    assert noise.load_noise(saved).get("b", "").too_noisy


def test_the_makefile_passes_machines_to_the_report():
    done = subprocess.run(["make", "-n", "report", "MACHINES=a b"], cwd=ROOT, capture_output=True, text=True)
    assert "scripts/render_report.py --machines 'a' 'b'" in done.stdout
    one = subprocess.run(["make", "-n", "report", "MACHINE=box-quick"], cwd=ROOT, capture_output=True, text=True)
    assert "scripts/render_report.py --machine 'box-quick'" in one.stdout


def test_the_makefile_ignores_its_arguments_exported_in_the_environment():
    """MACHINE=... exported (as some build environments do) must not pick the machine of a
    report, compare or noise run, nor an exported PROFILE the profile; on make's command line
    they do."""
    env = {**os.environ, "MACHINE": "qemux86-64", "MACHINES": "x y", "BASE": "b0", "HEAD": "h0",
           "THRESHOLD": "9%", "LEAVE_OUT": "r0", "BENCH": "Nothing", "REPLACE": "1", "TEST_WORKERS": "0",
           "PROFILE": "exported", "DLSYSBENCH_PROFILE": "smoke"}
    for target, flags in (("report", ("--machine", "--machines")), ("compare", ("--machine", "--base", "--head",
                                                                                 "--default-threshold")),
                          ("noise", ("--machine", "--leave-out", "--replace")), ("bench", ("--bench",)),
                          ("test", ("-n '0'",))):
        done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, env=env)
        assert done.returncode == 0 and not any(f in done.stdout for f in flags), (target, done.stdout)
        assert "exported" not in done.stdout, (target, done.stdout)
        assert target == "test" or "DLSYSBENCH_PROFILE='smoke'" in done.stdout, (target, done.stdout)
    done = subprocess.run(["make", "-e", "-n", "compare"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert "--machine" not in done.stdout and "--base" not in done.stdout
    assert "DLSYSBENCH_PROFILE='smoke'" in done.stdout
    done = subprocess.run(["make", "-n", "compare", "MACHINE=box", "PROFILE=full"], cwd=ROOT, capture_output=True,
                          text=True, env=env)
    assert "--machine 'box'" in done.stdout and "--base" not in done.stdout
    assert "DLSYSBENCH_PROFILE='full'" in done.stdout
    done = subprocess.run(["make", "-n", "compare"], cwd=ROOT, capture_output=True, text=True,
                          env={k: v for k, v in env.items() if k != "DLSYSBENCH_PROFILE"})
    assert "DLSYSBENCH_PROFILE='quick'" in done.stdout


def test_run_suite_files_results_and_artifacts_under_one_machine_commit_and_checkout(monkeypatch, tmp_path,
                                                                                     load_script):
    run_suite = load_script("run_suite")
    calls = []

    class FakeAsv:
        pid = 2 ** 22 + 1       # a Popen's; the run's lock file records it

        def __init__(self, command, cwd=None, env=None, **_):
            calls.append((command, env))

        def wait(self, timeout=None):
            return 0

    archived = []
    monkeypatch.setattr(run_suite.subprocess, "Popen", FakeAsv)
    monkeypatch.setattr(run_suite, "ensure_machine", lambda machine: None)
    monkeypatch.setattr(run_suite, "archive_run", lambda *args: archived.append(args))
    monkeypatch.setattr(run_suite.paths, "git_commit", lambda: BASE)
    monkeypatch.setattr(run_suite.paths, "machine_name", lambda: "box")
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    assert run_suite.main(["--no-report"]) == 0
    [(command, env)] = calls
    assert command[command.index("--machine") + 1] == "box-smoke"
    assert command[command.index("--set-commit-hash") + 1] == BASE
    assert env["DLSYSBENCH_MACHINE"] == "box-smoke" and env["ASV_COMMIT"] == BASE
    assert Path(env["DLSYSBENCH_ROOT"]) == run_suite.paths.repo_root()
    assert env["ASV_PYTHONPATH"].split(os.pathsep)[0] == env["DLSYSBENCH_ROOT"]
    assert archived and archived[0][1:] == ("box-smoke", BASE)


def test_run_suite_refuses_a_bench_pattern_that_is_not_a_regex_before_asv(monkeypatch, load_script, capsys):
    run_suite = load_script("run_suite")
    monkeypatch.setattr(run_suite.subprocess, "Popen", lambda *a, **k: pytest.fail("asv started"))
    with pytest.raises(SystemExit) as stop:
        run_suite.main(["--no-report", "--bench", "Speed", "--bench", "["])
    assert stop.value.code == 2
    assert "--bench '[' is not a regular expression (unterminated character set" in capsys.readouterr().err


@pytest.mark.parametrize("why, advice", [
    ("git is not installed", "install git"),
    ("/x holds no git repository (an unpacked archive?)", "run inside a git checkout with a commit"),
    (None, "the checkout has no commit yet (commit first)")])
def test_the_advice_for_no_commit_fits_gits_reason(monkeypatch, why, advice):
    from impls.harness import commands

    monkeypatch.setattr(commands.paths, "git_absent_reason", lambda: why)
    assert advice in commands.no_commit_advice() and "safe.directory" not in commands.no_commit_advice()


def test_run_suite_says_why_git_gives_no_commit(monkeypatch, load_script, capsys):
    run_suite = load_script("run_suite")
    monkeypatch.setattr(run_suite.paths, "git_commit", lambda: "unknown")
    monkeypatch.setattr(run_suite.paths, "git_absent_reason",
                        lambda: "git refuses /x: fatal: detected dubious ownership in repository at '/x'")
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    with pytest.raises(SystemExit) as stop:
        run_suite.main(["--no-report"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "git refuses /x: fatal: detected dubious ownership" in err
    assert "git config --global --add safe.directory" in err and "run inside a git checkout" not in err, err


@pytest.mark.parametrize("home", ["truncated", "unwritable", "a list"])
def test_run_suite_names_asvs_machine_file_it_cannot_use(monkeypatch, tmp_path, load_script, capsys, home):
    """A cut ~/.asv-machine.json, or a HOME asv cannot write: one line naming the file, exit 2,
    not two tracebacks."""
    run_suite = load_script("run_suite")
    monkeypatch.setenv("HOME", str(tmp_path))
    if home != "unwritable":
        (tmp_path / ".asv-machine.json").write_text('{"version": 1, "box-sm' if home == "truncated" else "[]")
    else:
        from asv.machine import MachineCollection

        def refuse(*a, **k):
            raise PermissionError(13, "Permission denied", str(tmp_path / ".asv-machine.json"))
        monkeypatch.setattr(MachineCollection, "save", refuse)
    monkeypatch.setattr(run_suite.subprocess, "Popen", lambda *a, **k: pytest.fail("asv started"))
    monkeypatch.setattr(run_suite.paths, "git_commit", lambda: BASE)
    monkeypatch.setattr(run_suite.paths, "machine_name", lambda: "box")
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    assert run_suite.main(["--no-report"]) == 2
    err = capsys.readouterr().err
    assert "dlsysbench: error: " in err and str(tmp_path / ".asv-machine.json") in err, err
    assert {"truncated": "cannot be read (Unterminated string", "a list": "cannot be read (expected asv's object",
            "unwritable": "(PermissionError: [Errno 13] Permission denied"}[home] in err, err
    assert ("HOME must name a folder this user can write" in err) == (home == "unwritable"), err


def test_run_suite_interrupted_says_so_once_and_archives_nothing(monkeypatch, load_script, capsys):
    """Ctrl-C reaches asv and the runner (one process group): the runner waits for asv to
    stop, prints one line instead of a traceback, archives no partial run and exits 130."""
    run_suite = load_script("run_suite")
    waits = []

    class InterruptedAsv:
        pid = 2 ** 22 + 1

        def __init__(self, command, **_):
            pass

        def wait(self, timeout=None):
            waits.append(timeout)
            if len(waits) == 1:
                raise KeyboardInterrupt
            return -2

        def kill(self):
            raise AssertionError("asv stopped by itself; nothing to kill")

    archived = []
    monkeypatch.setattr(run_suite.subprocess, "Popen", InterruptedAsv)
    monkeypatch.setattr(run_suite, "ensure_machine", lambda machine: None)
    monkeypatch.setattr(run_suite, "archive_run", lambda *args: archived.append(args))
    monkeypatch.setattr(run_suite.paths, "git_commit", lambda: BASE)
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    assert run_suite.main(["--no-report"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "interrupted" in err and "not archived" in err
    assert archived == [] and waits == [None, 60]


def test_run_suite_refuses_a_path_variable_it_cannot_expand_before_running_asv(monkeypatch, load_script, capsys):
    run_suite = load_script("run_suite")
    calls = []
    monkeypatch.setattr(run_suite.subprocess, "Popen", lambda command, **_: calls.append(command))
    monkeypatch.setattr(run_suite, "ensure_machine", lambda machine: None)
    monkeypatch.setattr(run_suite.paths, "git_commit", lambda: BASE)
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    monkeypatch.setenv("DLSYSBENCH_CACHE", "~nosuchuser-dlsysbench/cache")
    assert run_suite.main(["--no-report"]) == 2
    assert calls == [] and "DLSYSBENCH_CACHE=" in capsys.readouterr().err


def test_a_moved_number_without_a_declared_direction_is_named():
    import pandas as pd

    def frame(value):
        return pd.DataFrame({"benchmark": ["bench_old.Gone.track_y", "bench_old.Gone.track_z"], "param_label": ["", ""],
                             "value": [value, 5.0], "status": ["ok", "ok"], "type": ["track", "track"]})

    result = compare.compare_runs(frame(1.0), frame(10.0), {}, None)
    lines = compare.format_comparison(result)
    named = [line for line in lines if line.startswith("NOT DECLARED")]
    assert named == ["NOT DECLARED bench_old.Gone.track_y [] 1 -> 10 (10x; no direction declared: a benchmark "
                     "removed or renamed since, or a track without one; not judged)"]
    assert "2 not judged (context or undeclared)" in lines[-1]


@pytest.mark.parametrize("before", [None, {"machine": "box-smoke"}, {"machine": "box-smoke", "cpu": "X", "ram": "1"}])
def test_run_suite_registers_its_machine_with_the_hardware_asv_sees(monkeypatch, tmp_path, load_script, before):
    """``asv machine --yes --machine NAME`` alone records only the name (asv 0.6): the suite passes
    asv's own description, and fills in an entry an earlier version left bare; a described one stays."""
    run_suite = load_script("run_suite")
    monkeypatch.setenv("HOME", str(tmp_path))
    if before is not None:
        (tmp_path / ".asv-machine.json").write_text(json.dumps({"version": 1, "box-smoke": before}))
    run_suite.ensure_machine("box-smoke")
    known = json.loads((tmp_path / ".asv-machine.json").read_text())
    if before and before.get("cpu"):
        assert known["box-smoke"] == before
        return
    entry = known["box-smoke"]
    assert entry["machine"] == "box-smoke" and known["version"] == 1
    for key in ("os", "arch", "cpu", "num_cpu", "ram"):
        assert entry.get(key), (key, entry)
    from asv.machine import Machine

    assert Machine.load(machine_name="box-smoke", _path=str(tmp_path / ".asv-machine.json")).cpu == entry["cpu"]


def test_the_run_line_quotes_each_bench_pattern_as_a_shell_reads_it_back(load_script):
    import shlex

    run_suite = load_script("run_suite")
    line = run_suite.run_line("smoke", "box-smoke", "a" * 40, [r"bench_bandana_sim\.(Layout|Cache)", "x y"])
    assert line.startswith("dlsysbench: profile=smoke machine=box-smoke commit=aaaaaaaaaaaa --bench ")
    words = shlex.split(line.partition("commit=aaaaaaaaaaaa")[2])
    assert words == ["--bench", r"bench_bandana_sim\.(Layout|Cache)", "--bench", "x y"]
