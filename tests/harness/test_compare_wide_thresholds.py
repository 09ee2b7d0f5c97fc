"""A number too noisy to track here (a relative threshold above 50%) is still judged on a move
beyond its own, finite threshold, in ``make compare`` and in the report's history steps; only a
move within it, or any move against an infinite threshold, goes unjudged (``TOO NOISY``)."""
from __future__ import annotations

import json
import math

import pytest

from compare_fixtures import (BASE, HEAD, LATENCY, MACHINE, RATE, STEADY, base_values, run_compare,
                              write_benchmarks_json, write_run)
from impls.harness.report import compare, noise, runs
from impls.harness.report.history_steps import series_steps


@pytest.mark.parametrize("old, new, direction, threshold, scale, kind", [
    (0.29, 2.9, "lower", 4.27, noise.RELATIVE, compare.REGRESSION),      # 10x past a x5.27 threshold
    (2.9, 0.29, "lower", 4.27, noise.RELATIVE, compare.IMPROVEMENT),
    (0.29, 1.2, "lower", 4.27, noise.RELATIVE, compare.NOISY),           # 4.1x: within it, not judged
    (3.77e7, 3.77e6, "higher", 0.59, noise.RELATIVE, compare.REGRESSION),
    (3.77e7, 1.0, "higher", 0.59, noise.RELATIVE, compare.REGRESSION),
    (3.77e7, 3.0e7, "higher", 0.59, noise.RELATIVE, compare.NOISY),
    (1.0, -5.0, "higher", 0.9, noise.RELATIVE, compare.REGRESSION),      # a sign change: -600% past 90%
    (0.29, 2.9e9, "lower", math.inf, noise.RELATIVE, compare.NOISY),     # infinite: never judged
    (0.5, 1e9, "lower", math.inf, noise.ABSOLUTE, compare.NOISY),
])
def test_a_wide_finite_threshold_judges_a_move_beyond_it(old, new, direction, threshold, scale, kind):
    assert noise.too_noisy(threshold, scale)
    assert compare.judge_change(old, new, direction, threshold, scale) == kind


def test_bounds_apart_beyond_a_wide_threshold_are_judged_and_within_it_are_too_noisy():
    # a time of 2 s, then a run that never reached the target in 30 s (>= 30): 15x past x1.9
    assert compare.judge_bounded(2.0, 30.0, "", "lower", "lower", 0.9) == compare.REGRESSION
    assert compare.judge_bounded(2.0, 3.0, "", "lower", "lower", 0.9) == compare.NOISY   # 1.5x: within x1.9
    assert compare.judge_bounded(2.0, 30.0, "", "lower", "lower", math.inf) == compare.NOISY
    assert compare.judge_bounded(2.0, 3.0, "", "upper", "lower", 0.9) == compare.BOUND  # <= 3 may be 2


def test_a_history_step_beyond_a_wide_level_threshold_is_shown():
    wide = noise.Threshold("b", "", 2, 1.0, 4.27)           # no sigma: the level threshold is 4.27 itself
    assert noise.too_noisy(wide.level_threshold(10, 10, 19))
    steps = series_steps([0.29] * 10 + [2.9] * 10, "lower", wide)
    assert [(at, kind) for at, _, _, kind in steps] == [(10, "regression")]
    assert series_steps([0.29] * 10 + [0.58] * 10, "lower", wide) == []                 # 2x: within x5.27
    unbounded = noise.Threshold("b", "", 2, math.inf, math.inf)
    assert series_steps([0.29] * 10 + [2.9] * 10, "lower", unbounded) == []


def test_a_too_noisy_number_that_moved_past_its_threshold_fails_compare(tmp_path):
    results = tmp_path / ".asv" / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, BASE, 100, base_values())
    runs.archive_run(results, MACHINE, BASE)
    write_run(results / MACHINE, HEAD, 200, base_values(rate=100.0, latency=110.0))   # the rate fell to 1/10
    runs.archive_run(results, MACHINE, HEAD)
    thresholds = results.parent / "noise.json"
    thresholds.write_text(json.dumps({"schema": 1, "machine": MACHINE, "numbers": [
        {"benchmark": b, "threshold": 0.8} for b in (RATE, LATENCY, STEADY)]}))
    done = run_compare(results, thresholds, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("REGRESSION ")]
    assert line.startswith(f"REGRESSION {RATE} [policy='lru'] 1000 -> 100 (0.1x, higher is better)"), line
    assert "(80%; too noisy to judge a smaller move)" in line, line
    noisy = [line for line in done.stdout.splitlines() if line.startswith("TOO NOISY ")]
    assert not noisy, done.stdout               # the latency moved 1.1x: within its threshold, not listed
    assert "1 regressions" in done.stdout and "too noisy to judge here" in done.stdout


def test_make_noise_counts_every_finite_threshold_as_judged():
    from importlib import util

    from compare_fixtures import ROOT

    spec = util.spec_from_file_location("measure_noise_script", ROOT / "scripts" / "measure_noise.py")
    script = util.module_from_spec(spec)
    spec.loader.exec_module(script)
    judged = [noise.Threshold("b", str(i), 5, 0.1, t, sigma=0.1, df=4)
              for i, t in enumerate((0.05, 0.6, 4.0, math.inf, 0.0))]
    [line] = [line for line in script.df_lines(judged, 0.001) if "flags one of" in line]
    assert "one of the 3 numbers judged here" in line, line   # 5%, 60% and 400%: not inf, not 0
