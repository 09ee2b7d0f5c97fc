"""`make compare` at its edges: numbers too noisy to judge that still moved a lot, a stale or
partial thresholds file, an absolute-scale number without a threshold (which a relative
default cannot judge), a new run that measured nothing again, a threshold typed as a
negative percentage, and what the summary counts as unchanged."""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess

import pandas as pd
import pytest

import compare_fixtures
from compare_fixtures import (BASE, FLAG, HEAD, LATENCY, MACHINE, RATE, ROOT, STEADY, base_values, run_compare,
                              script, write_benchmarks_json, write_run)
from impls.harness.report import compare, noise, runs

DECLARED = {RATE: "higher", LATENCY: "lower", FLAG: "flag", STEADY: "higher"}
LATENCY_POINT = "block_bytes=4096, queue_depth=1"
OVERHEAD = "bench_salus.ExecutorOverhead.track_paired_overhead_percent"  # absolute scale: percentage points


def frame(values: dict[str, float]) -> pd.DataFrame:
    labels = {RATE: "policy='lru'", LATENCY: LATENCY_POINT, FLAG: "comparison='slide-vs-dense'",
              STEADY: "threads=2, padding=True"}
    return pd.DataFrame({"benchmark": list(values), "param_label": [labels[b] for b in values],
                         "value": list(values.values()), "status": ["ok"] * len(values),
                         "type": ["track"] * len(values), "version": ["1"] * len(values)})


def thresholds(**by_benchmark: float) -> noise.Noise:
    names = {"rate": RATE, "steady": STEADY, "latency": LATENCY}
    return noise.Noise(MACHINE, "t", [], {(names[k], "*"): noise.Threshold(names[k], "*", 2, v / 3, v)
                                          for k, v in by_benchmark.items()})


def two_runs(tmp_path, head_values: dict, head_started: int = 200, old_values: dict | None = None):
    """A result folder with an archived run of BASE (``old_values``, by default the fixtures'
    base values) and one of HEAD."""
    results = tmp_path / ".asv" / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, BASE, 100, old_values or base_values())
    runs.archive_run(results, MACHINE, BASE)
    write_run(results / MACHINE, HEAD, head_started, head_values)
    runs.archive_run(results, MACHINE, HEAD)
    return results


def noise_file(results, numbers: list[dict]):
    path = results.parent / "noise.json"
    path.write_text(json.dumps({"schema": 1, "machine": MACHINE, "numbers": numbers}))
    return path


def test_a_too_noisy_number_that_moved_beyond_the_too_noisy_level_is_listed_with_both_values():
    base = frame({RATE: 1000.0, STEADY: 500.0})
    head = frame({RATE: 500.0, STEADY: 600.0})          # the rate halved, within x2.2; steady moved 1.2x
    result = compare.compare_runs(base, head, DECLARED, thresholds(rate=1.2, steady=1.2))
    lines = compare.format_comparison(result)
    noisy = [line for line in lines if line.startswith("TOO NOISY ")]
    assert len(noisy) == 1, lines
    assert noisy[0].startswith(f"TOO NOISY {RATE} [policy='lru'] 1000 -> 500 (0.5x, higher is better; "), noisy
    assert "not judged" in noisy[0] and "120%" in noisy[0]
    assert not result.regressed and "2 too noisy to judge here" in lines[-1]


def test_a_default_threshold_is_said_to_be_one_not_a_measured_threshold():
    base = frame({RATE: 1000.0, STEADY: 500.0})
    head = frame({RATE: 800.0, STEADY: 400.0})
    measured = thresholds(steady=0.05)                  # the rate has none: the default judges it
    lines = compare.format_comparison(compare.compare_runs(base, head, DECLARED, measured, default_threshold=0.05))
    (rate,) = [line for line in lines if RATE in line]
    (steady,) = [line for line in lines if STEADY in line]
    assert rate.startswith("REGRESSION ") and rate.endswith("threshold x1.05 either way (5%; default, not measured)")
    assert steady.startswith("REGRESSION ") and steady.endswith("threshold x1.05 either way (5%)"), steady


def test_the_summary_counts_unchanged_numbers_without_a_threshold_as_unchanged_not_within_noise():
    base = frame({RATE: 1000.0, FLAG: 0.0, STEADY: 500.0})
    head = frame({RATE: 1000.0, FLAG: 0.0, STEADY: 510.0})
    summary = compare.format_comparison(compare.compare_runs(base, head, DECLARED, thresholds(steady=0.1)))[-1]
    assert "1 within noise, 2 unchanged" in summary, summary


def test_a_stale_thresholds_file_is_warned_of_and_a_big_unjudged_move_cannot_pass(tmp_path):
    results = two_runs(tmp_path, {**base_values(), LATENCY: 300.0})      # p99 latency 100 -> 300
    stale = noise_file(results, [{"benchmark": RATE, "threshold": 0.05},
                                 {"benchmark": "bench_old.Gone.track_x", "params": "", "threshold": 0.05},
                                 {"benchmark": LATENCY, "params": "block_bytes=8192, queue_depth=1",
                                  "threshold": 0.05}])
    done = run_compare(results, stale, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 2, done.stdout + done.stderr
    assert "1 changed number(s) not judged" in done.stderr
    assert "2 threshold(s)" in done.stderr and "bench_old.Gone.track_x []" in done.stderr
    assert f"{LATENCY} [block_bytes=8192,queue_depth=1]" in done.stderr
    assert "cannot compare" in done.stderr and "--default-threshold" in done.stderr
    judged = run_compare(results, stale, "--base", BASE[:8], "--head", HEAD[:8], "--default-threshold=5%")
    assert judged.returncode == 1 and f"REGRESSION {LATENCY}" in judged.stdout, judged.stdout + judged.stderr


def test_thresholds_the_new_run_lacks_are_its_gaps_not_a_stale_file(tmp_path):
    """A new run without a number the base run has (a partial run) is warned of as the new
    run's gap; only a threshold neither run has is called a stale file."""
    head = {k: v for k, v in base_values().items() if k != LATENCY}            # the latency did not run
    results = two_runs(tmp_path, head)
    thresholds = noise_file(results, [{"benchmark": RATE, "threshold": 0.05},
                                      {"benchmark": LATENCY, "threshold": 0.05},
                                      {"benchmark": "bench_old.Gone.track_x", "params": "", "threshold": 0.05}])
    done = run_compare(results, thresholds, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "GONE" in done.stdout
    [gap] = [line for line in done.stderr.splitlines() if "the new run lacks" in line]
    assert "1 thresholded number(s) the base run has" in gap and LATENCY in gap and "Gone" not in gap
    [stale] = [line for line in done.stderr.splitlines() if "stale thresholds file" in line]
    assert stale.count("threshold(s)") == 1 and "1 threshold(s)" in stale and "bench_old.Gone.track_x" in stale
    assert LATENCY not in stale


def test_a_small_move_without_a_threshold_passes_but_is_counted_on_stderr(tmp_path):
    results = two_runs(tmp_path, {**base_values(), LATENCY: 120.0})
    partial = noise_file(results, [{"benchmark": RATE, "threshold": 0.05}])
    done = run_compare(results, partial, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: 1 changed number(s) not judged" in done.stderr, done.stderr
    assert "stale" not in done.stderr


@pytest.fixture()
def with_overhead(monkeypatch):
    """The fixtures' benchmarks and Salus's paired overhead (declared on the absolute scale)."""
    monkeypatch.setitem(compare_fixtures.PARAMS, OVERHEAD, [["'x'"]])
    monkeypatch.setitem(compare_fixtures.NAMES, OVERHEAD, ["case"])


@pytest.mark.parametrize("new", [0.9, 0.41])          # +0.5 and +0.01 percentage points
@pytest.mark.parametrize("extra", [[], ["--default-threshold=5%"]])
def test_an_absolute_scale_number_without_a_threshold_that_changed_cannot_pass_a_relative_default_or_none(
        tmp_path, with_overhead, new, extra):
    results = two_runs(tmp_path, {**base_values(), OVERHEAD: new}, old_values={**base_values(), OVERHEAD: 0.4})
    partial = noise_file(results, [{"benchmark": b, "threshold": 0.05} for b in (RATE, LATENCY, STEADY)])
    done = run_compare(results, partial, "--base", BASE[:8], "--head", HEAD[:8], *extra)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"cannot compare: 1 absolute-scale number(s) with no threshold changed ({OVERHEAD} [case='x'] 0.4 -> " \
        in done.stderr, done.stderr
    assert "a relative --default-threshold cannot judge absolute-scale numbers" in done.stderr
    assert "`make noise` measures their thresholds" in done.stderr and "Traceback" not in done.stderr
    # the warning of numbers not judged gives no advice that cannot help: only absolute-scale ones are
    (warning,) = [line for line in done.stderr.splitlines() if "changed number(s) not judged" in line]
    assert "pass --default-threshold" not in warning and "absolute-scale" in warning, warning


def test_an_unchanged_absolute_scale_number_without_a_threshold_does_not_block(tmp_path, with_overhead):
    values = {**base_values(), OVERHEAD: 0.4}
    results = two_runs(tmp_path, values, old_values=values)
    partial = noise_file(results, [{"benchmark": b, "threshold": 0.05} for b in (RATE, LATENCY, STEADY)])
    done = run_compare(results, partial, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 0 and "absolute-scale" not in done.stderr, done.stdout + done.stderr


def test_a_new_run_that_carried_every_number_over_says_nothing_was_measured_again(tmp_path):
    results = two_runs(tmp_path, base_values(), head_started=100)   # the base run's started_at: carried
    given = noise_file(results, [{"benchmark": b, "threshold": 0.05} for b in (RATE, LATENCY, STEADY)])
    done = run_compare(results, given, "--base", BASE[:8], "--head", HEAD[:8], "--default-threshold", "5%")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "nothing was measured again: every number carried over from the base run" in done.stderr
    assert "usable threshold" not in done.stderr and "make noise" not in done.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_compare_passes_a_negative_threshold_so_the_range_message_shows():
    planned = subprocess.run(["make", "-n", "compare", "THRESHOLD=-5%"], cwd=ROOT, capture_output=True, text=True)
    [line] = [line for line in planned.stdout.splitlines() if "scripts/compare.py" in line]
    assert "--default-threshold='-5%'" in line, line
    done = script("compare.py", *shlex.split(line.split("scripts/compare.py", 1)[1]))
    assert done.returncode == 2 and "outside 0..0.5" in done.stderr, done.stderr
    assert "expected one argument" not in done.stderr


@pytest.mark.parametrize("text, value", [("5%", 0.05), ("5% ", 0.05), (" 0.05", 0.05), ("5 %", 0.05)])
def test_a_threshold_with_spaces_around_it_reads_as_without(load_script, text, value):
    """make compare THRESHOLD='5% ' (a stray space in a CI variable) was 'not a number'."""
    assert load_script("compare").relative_threshold(text) == pytest.approx(value)
