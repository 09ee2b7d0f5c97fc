"""A value no run can measure (a timing of 0, a memory size of -1, an infinite rate) is a
broken measurement, not the best result ever: ``make compare`` lists it as ``NOT A
MEASUREMENT`` and counts it as a failure."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from compare_fixtures import BASE, HEAD, MACHINE, RATE, base_values, run_compare, write_benchmarks_json, write_run
from impls.harness.report import compare, noise, runs

TIMING = "bench_salus_lanes.LaneManagerDecisionTime.time_decisions"
RSS = "bench_slide.SlideTimeToAccuracy.track_peak_rss"
SPEED = "bench_bandana_sim.SimulatorSpeed.track_lookups_per_second"
TO_TARGET = "bench_slide.SlideTimeToAccuracy.track_time_to_target"
OVERHEAD = "bench_salus.ExecutorOverhead.track_paired_overhead_percent"


@pytest.mark.parametrize("benchmark, unit, value, scale, impossible", [
    (TIMING, "seconds", 0.0, noise.RELATIVE, True),
    (TIMING, "seconds", -0.5, noise.RELATIVE, True),
    (TIMING, "seconds", 0.02, noise.RELATIVE, False),
    (RSS, "GiB", 0.0, noise.RELATIVE, True),
    (RSS, "GiB", -1.0, noise.RELATIVE, True),
    (SPEED, "lookups/s", math.inf, noise.RELATIVE, True),
    (SPEED, "lookups/s", 0.0, noise.RELATIVE, True),
    ("bench_bandana_device.FioRandomRead.track_iops", "IO/s", -1.0, noise.RELATIVE, True),
    (TO_TARGET, "s", 0.0, noise.RELATIVE, False),          # reached the target at the first evaluation, at 0 s
    (TO_TARGET, "s", -1.0, noise.RELATIVE, True),
    ("bench_salus_lanes.LanePacking.track_makespan", "s (simulated; mean over the capacities)", -2.0,
     noise.RELATIVE, True),
    (OVERHEAD, "% of iteration time", -3.0, noise.ABSOLUTE, False),   # a difference: any sign
    (OVERHEAD, "% of iteration time", -math.inf, noise.ABSOLUTE, True),
    ("bench_slide.SlideSpeedup.track_ratio", "x", math.inf, noise.RELATIVE, True),
    ("bench_slide.SlideSpeedup.track_ratio", "x", 0.0, noise.RELATIVE, False),
])
def test_values_no_run_can_measure(benchmark, unit, value, scale, impossible):
    assert bool(compare.not_a_measurement(benchmark, unit, value, scale)) == impossible


def _frame(values: dict[str, float], units: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({"benchmark": list(values), "param_label": [""] * len(values),
                         "value": list(values.values()), "status": ["ok"] * len(values),
                         "type": ["time" if ".time_" in b else "track" for b in values],
                         "version": ["1"] * len(values), "unit": [units[b] for b in values]})


def test_a_broken_timing_or_a_sentinel_is_a_failure_not_an_improvement():
    units = {TIMING: "seconds", RSS: "GiB", SPEED: "lookups/s"}
    base = _frame({TIMING: 0.018, RSS: 2.4, SPEED: 8.3e6}, units)
    head = _frame({TIMING: 0.0, RSS: -1.0, SPEED: math.inf}, units)
    declared = {TIMING: "lower", RSS: "lower", SPEED: "higher"}
    measured = noise.Noise(MACHINE, "t", [], {(b, "*"): noise.Threshold(b, "*", 5, 0.05, 0.1) for b in units})
    result = compare.compare_runs(base, head, declared, measured)
    lines = compare.format_comparison(result)
    assert result.regressed and not result.of_kind(compare.IMPROVEMENT), lines
    flagged = [line for line in lines if line.startswith("NOT A MEASUREMENT ")]
    assert len(flagged) == 3 and all("counted as a failure" in line for line in flagged), lines
    assert "3 not a measurement (counted as failures)" in lines[-1], lines[-1]


def test_an_infinite_value_fails_compare(tmp_path):
    results = tmp_path / ".asv" / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, BASE, 100, base_values())
    runs.archive_run(results, MACHINE, BASE)
    write_run(results / MACHINE, HEAD, 200, base_values(rate=math.inf))
    thresholds = tmp_path / "noise.json"
    thresholds.write_text('{"schema": 1, "machine": "%s", "numbers": [{"benchmark": "%s", "threshold": 0.1}]}'
                          % (MACHINE, RATE))
    done = run_compare(results, thresholds, "--base", BASE[:8], "--head", HEAD[:8], "--default-threshold=10%")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"NOT A MEASUREMENT {RATE} [policy='lru'] 1000 -> inf (inf is not a finite value" in done.stdout
    assert "IMPROVEMENT" not in done.stdout


def test_a_base_value_that_is_no_measurement_leaves_its_number_unjudged():
    """A base timing of 0 (a broken timer) against a sound 0.02 s is no infinite slowdown, nor a
    negative RSS against a sound one an improvement: listed, counted, no regression."""
    units = {TIMING: "seconds", RSS: "GiB", SPEED: "lookups/s"}
    base = _frame({TIMING: 0.0, RSS: -1.0, SPEED: 8.3e6}, units)
    head = _frame({TIMING: 0.018, RSS: 2.4, SPEED: 8.2e6}, units)
    declared = {TIMING: "lower", RSS: "lower", SPEED: "higher"}
    measured = noise.Noise(MACHINE, "t", [], {(b, "*"): noise.Threshold(b, "*", 5, 0.05, 0.1) for b in units})
    result = compare.compare_runs(base, head, declared, measured)
    lines = compare.format_comparison(result)
    assert not result.regressed and not result.of_kind(compare.IMPROVEMENT), lines
    flagged = [line for line in lines if line.startswith("BASE NOT A MEASUREMENT ")]
    assert len(flagged) == 2 and all("nothing to compare with; not judged" in line for line in flagged), lines
    assert any(line.startswith(f"BASE NOT A MEASUREMENT {TIMING} [] 0 -> 0.018 (in the base run, a time benchmark "
                               "measured 0:") for line in flagged), flagged
    assert "2 with no measurement in the base run" in lines[-1] and len(result.of_kind("same")) == 1, lines[-1]
