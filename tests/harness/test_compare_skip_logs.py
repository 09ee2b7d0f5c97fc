"""Where ``make compare`` finds the new run's skip logs (``--artifacts``, else the artifacts
folder beside ``--results``, else the checkout's), what it says when there are none, and a
``worst_missing`` NaN that a log of its commit does not name: not a logged skip, so the worst
outcome it is declared to be."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import compare_fixtures
from compare_fixtures import (BASE, HEAD, LATENCY, MACHINE, RATE, STEADY, base_values, run_compare,
                              write_benchmarks_json, write_run)
from impls.harness import skip_log
from impls.harness.report import compare, directions, runs

JCT = "bench_salus.SchedulingPolicies.track_average_jct"    # its NaN: a job failed, the worst outcome
POINT = "policy='fifo'"


def _frame(value: float, commit: str) -> pd.DataFrame:
    return pd.DataFrame({"benchmark": [JCT], "param_label": [POINT], "value": [value],
                         "status": ["skipped" if math.isnan(value) else "ok"], "type": ["track"],
                         "version": ["1"], "commit": [commit]})


def _entry(benchmark: str, params: str, outcome: str = skip_log.SKIPPED) -> skip_log.Entry:
    return skip_log.Entry(benchmark, params, outcome, "needs CUDA", 1.0)


def test_a_worst_missing_nan_the_commits_skip_log_does_not_name_is_a_regression():
    assert JCT in directions.declared_worst_missing()
    judge = dict(declared=directions.declared_directions(), noise=None, default_threshold=0.1,
                 missing=directions.declared_missing(), worst_missing=directions.declared_worst_missing())
    base, head = _frame(5.56, BASE), _frame(math.nan, HEAD)
    # the new run's commit logged a skip of something else: this NaN is the track's own
    result = compare.compare_runs(base, head, logs={HEAD: [_entry("bench_slide.SlideCuda", "")]}, **judge)
    assert result.regressed and [item.benchmark for item in result.worse_without_value] == [JCT]
    line = compare.format_comparison(result)[0]
    assert line.startswith(f"REGRESSION {JCT} [{POINT}] 5.56 -> (no value in the new run: a job failed"), line
    assert "the new run's skip log names no skip of it; the worst outcome, so a regression" in line, line
    # a logged skip of its class is a skip; no log of that commit cannot tell: neither is judged
    logged = compare.compare_runs(base, head, logs={HEAD: [_entry("bench_salus.SchedulingPolicies", POINT)]}, **judge)
    assert not logged.regressed
    assert not compare.compare_runs(base, head, logs={BASE: [_entry("bench_x.A", "")]}, **judge).regressed


@pytest.fixture()
def jct_runs(tmp_path, monkeypatch):
    """Results of BASE (the JCT measured) and HEAD (its NaN), the fixtures' other numbers unchanged."""
    monkeypatch.setitem(compare_fixtures.PARAMS, JCT, [["'fifo'"]])
    monkeypatch.setitem(compare_fixtures.NAMES, JCT, ["policy"])
    results = tmp_path / ".asv" / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, BASE, 100, {**base_values(), JCT: 5.56})
    runs.archive_run(results, MACHINE, BASE)
    write_run(results / MACHINE, HEAD, 200, {**base_values(), JCT: math.nan})
    runs.archive_run(results, MACHINE, HEAD)
    thresholds = tmp_path / "noise.json"
    thresholds.write_text(json.dumps({"schema": 1, "machine": MACHINE,
                                      "numbers": [{"benchmark": RATE, "threshold": 0.05}]}))
    return results, thresholds


def _log(root, outcome=skip_log.NO_VALUE):
    """A skip log of HEAD's run under artifacts root ``root``: the JCT had no value (a job failed)."""
    folder = root / MACHINE / HEAD
    folder.mkdir(parents=True)
    (folder / skip_log.FILE_NAME).write_text(json.dumps(
        {"benchmark": "bench_salus.SchedulingPolicies", "params": POINT, "outcome": outcome,
         "reason": "a job failed", "at": 200.5}) + "\n")
    return root


def test_skip_logs_beside_the_results_are_read(jct_runs):
    results, thresholds = jct_runs
    _log(results.parent / "artifacts")           # asv's layout: .asv/results beside .asv/artifacts
    done = run_compare(results, thresholds, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"REGRESSION {JCT} [{POINT}] 5.56 -> (no value in the new run: a job failed" in done.stdout


def test_skip_logs_are_read_from_artifacts_named(jct_runs, tmp_path):
    results, thresholds = jct_runs
    elsewhere = _log(tmp_path / "kept")
    done = run_compare(results, thresholds, "--base", BASE[:8], "--head", HEAD[:8], "--artifacts", str(elsewhere))
    assert done.returncode == 1 and f"REGRESSION {JCT}" in done.stdout, done.stdout + done.stderr
    missing = run_compare(results, thresholds, "--base", BASE[:8], "--head", HEAD[:8],
                          "--artifacts", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "--artifacts" in missing.stderr and "no such folder" in missing.stderr


def test_a_head_without_a_skip_log_is_noted(jct_runs, tmp_path):
    results, thresholds = jct_runs
    done = run_compare(results, thresholds, "--base", BASE[:8], "--head", HEAD[:8],
                       "--artifacts", str(tmp_path))          # a root without this machine's logs
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"NO VALUE {JCT}" in done.stdout
    assert f"no skip log of the new run's commit {HEAD[:8]}" in done.stderr, done.stderr
    assert "for the 1 number(s) without a value" in done.stderr


def test_numbers_that_lost_their_value_are_warned_of_with_their_count(tmp_path):
    """A setup that now skips everywhere leaves NaN in the new run: listed, not failures (exit
    0, as documented), but counted on stderr where a CI log shows it."""
    results = tmp_path / ".asv" / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, BASE, 100, base_values())
    runs.archive_run(results, MACHINE, BASE)
    write_run(results / MACHINE, HEAD, 200, {**base_values(), RATE: math.nan, STEADY: math.nan})
    thresholds = tmp_path / "noise.json"
    thresholds.write_text(json.dumps({"schema": 1, "machine": MACHINE,
                                      "numbers": [{"benchmark": LATENCY, "threshold": 0.05}]}))
    done = run_compare(results, thresholds, "--base", BASE[:8], "--head", HEAD[:8], "--artifacts", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: 2 of the 4 numbers measured in the base run have no value in the new run" in done.stderr, \
        done.stderr
    assert f"in 2 benchmark(s): {RATE}, {STEADY}" in done.stderr
