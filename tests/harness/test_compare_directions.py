"""Which way is better for every number `make compare` reads: nearer-0 numbers (paired
differences that cross 0), context numbers that moved, the suite's declarations, and one run
read by two benchmarks counted once in the machine-wide shift note."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from benchmarks import common
from impls.harness.report import compare, directions, noise

OVERHEAD = "bench_salus.ExecutorOverhead.track_paired_overhead_percent"
SWITCH_P50 = "bench_salus.SwitchingLatency.track_p50_ms"
SELECTION_GAIN = "bench_bandana_sim.BandanaHeadline.track_selection_gain"   # context


def frame(values: dict[str, float], unit: str = "") -> pd.DataFrame:
    return pd.DataFrame({"benchmark": list(values), "param_label": ["p=0"] * len(values),
                         "value": list(values.values()), "status": ["ok"] * len(values),
                         "type": ["track"] * len(values), "version": ["1"] * len(values),
                         "unit": [unit] * len(values)})


def absolute_noise(benchmark: str, threshold: float) -> noise.Noise:
    return noise.Noise("m", "t", [], {(benchmark, "p=0"): noise.Threshold(
        benchmark, "p=0", 4, threshold / 3, threshold, "1", noise.ABSOLUTE)})


@pytest.mark.parametrize("old, new, kind", [
    (2.0, -4.0, compare.REGRESSION),     # |-4| is 2 further from 0: noise of the difference, no gain
    (-4.0, 2.0, compare.IMPROVEMENT),    # 2 nearer 0
    (0.5, -0.5, "same"),                 # as far from 0 either side
    (-1.0, -3.5, compare.REGRESSION),
    (3.0, 0.5, compare.IMPROVEMENT),
])
def test_a_nearer_zero_number_is_judged_by_its_size(old, new, kind):
    assert compare.judge_change(old, new, directions.NEARER_ZERO, 1.0, noise.ABSOLUTE) == kind


@pytest.mark.parametrize("scale, threshold", [(noise.ABSOLUTE, 1.0), (noise.RELATIVE, 0.2)])
def test_a_positive_nearer_zero_number_is_judged_exactly_as_lower_is_better(scale, threshold):
    values = [0.0, 0.3, 1.0, 1.5, 2.0, 2.4, 5.0]
    for old in values:
        for new in values:
            assert (compare.judge_change(old, new, directions.NEARER_ZERO, threshold, scale)
                    == compare.judge_change(old, new, directions.LOWER, threshold, scale)), (old, new)
            assert (compare.worsening(old, new, directions.NEARER_ZERO, scale)
                    == compare.worsening(old, new, directions.LOWER, scale))


def test_a_paired_overhead_that_goes_negative_is_a_regression_said_nearer_zero():
    declared = directions.declared_directions()
    result = compare.compare_runs(frame({OVERHEAD: 2.0}), frame({OVERHEAD: -4.0}), declared,
                                  absolute_noise(OVERHEAD, 1.0), scales=directions.declared_scales())
    [change] = result.changes
    assert change.kind == compare.REGRESSION and result.regressed
    assert "2 -> -4 (-6, nearer 0 is better)" in change.line(), change.line()


def test_the_suite_declares_its_paired_differences_nearer_zero_and_asv_does_not_judge_them():
    declared = directions.declared_directions()
    for name in (OVERHEAD, SWITCH_P50, "bench_salus.SwitchingLatency.track_p99_ms",
                 "bench_salus.SwitchingLatencyCuda.track_p50_ms"):
        assert declared[name] == directions.NEARER_ZERO, name
    keys = [re.compile(k) for k in directions.asv_regressions_first_commits(declared)]
    assert any(k.match(SWITCH_P50 + "('mlp', 'inprocess')") for k in keys)   # asv cannot see |-4| > |2|
    assert directions.better(directions.NEARER_ZERO) == "nearer 0 is better"


def test_the_suite_declares_a_fraction_of_training_time_context_and_greedy_losses_lower():
    declared = directions.declared_directions()
    assert declared["bench_slide.SlideTimeToAccuracy.track_table_time_fraction"] == directions.CONTEXT
    assert declared["bench_slide.SlideDelicious.track_table_time_fraction"] == directions.CONTEXT
    assert declared["bench_salus_lanes.LaneManagerSpeed.track_greedy_loses_fraction"] == directions.LOWER


def test_the_benchmarks_accept_every_direction_the_report_knows():
    assert common.DIRECTIONS == directions.DIRECTIONS
    assert common.field("k", unit="ms", direction="nearer_zero", scale="absolute").direction == "nearer_zero"


def _context_lines(old: float, new: float, found: noise.Noise | None = None, default=None) -> list[str]:
    result = compare.compare_runs(frame({SELECTION_GAIN: old}), frame({SELECTION_GAIN: new}),
                                  directions.declared_directions(), found, default)
    assert not result.regressed
    return [line for line in compare.format_comparison(result) if line.startswith("CONTEXT")]


def test_a_context_number_that_moved_is_listed_not_judged():
    [line] = _context_lines(1.0, 3.0)
    assert line.startswith(f"CONTEXT {SELECTION_GAIN} [p=0] 1 -> 3 (3x; context: describes the data or setup, "
                           "not judged)"), line
    assert _context_lines(1.0, 1.0) == []                           # an identical rerun stays quiet
    assert len(_context_lines(1.0, 1.01, default=0.05)) == 1        # a default is no measured threshold
    measured = noise.Noise("m", "t", [], {(SELECTION_GAIN, "p=0"): noise.Threshold(SELECTION_GAIN, "p=0", 4, 0.1,
                                                                                     0.3, "1")})
    assert _context_lines(1.0, 1.2, measured) == []                 # within its measured noise
    assert len(_context_lines(1.0, 3.0, measured)) == 1


def _speeds(pairs: list[tuple[str, float]]) -> compare.Comparison:
    """Speed numbers (s, lower is better) going from 1 to the given value, with a 15% threshold."""
    names = [name for name, _ in pairs]
    thresholds = {(b, "p=0"): noise.Threshold(b, "p=0", 5, 0.05, 0.15, "1") for b in names}
    return compare.compare_runs(frame({b: 1.0 for b in names}, "s"), frame(dict(pairs), "s"),
                                {b: directions.LOWER for b in names}, noise.Noise("m", "t", [], thresholds))


def test_one_run_read_by_two_benchmarks_of_a_module_counts_once_in_the_shift_note():
    slower = [(f"bench_x.S{i}.track_seconds", 1.1 + i / 100) for i in range(5)]
    # 5 of 5 one way is what a fair coin does 6% of the time: no note; the same run read twice is no sixth
    twice = _speeds(slower + [("bench_x.Again.track_seconds", slower[0][1])])
    assert compare.machine_shift(twice) is None
    six = _speeds(slower + [("bench_x.S5.track_seconds", 1.2), ("bench_x.Again.track_seconds", 1.2)])
    assert "6 of 6 speed numbers" in compare.machine_shift(six)
    other_module = _speeds(slower + [("bench_y.Again.track_seconds", slower[0][1])])
    assert "6 of 6 speed numbers" in compare.machine_shift(other_module)


RATIO = "bench_slide.SlideSpeedup.track_time_to_target_ratio"


def test_a_ratio_of_two_runs_that_moved_names_where_its_sides_are_tracked():
    """A faster baseline lowers a speed-up: its REGRESSION line says either side may have
    moved and where to look; a number that is no ratio of runs says nothing of sides."""
    declared, sides = directions.declared_directions(), directions.declared_sides()
    assert "track_time_to_target of the two runs" in sides[RATIO]
    assert "SchedulingPolicies.track_average_jct" in sides["bench_salus.SrtfOverFifo.track_ratio"]
    # the CUDA twin's sides are the twins' runs, not the CPU run's (probe F)
    cuda = sides["bench_salus.SrtfOverFifoCuda.track_ratio"]
    assert "SchedulingPoliciesCuda.track_average_jct" in cuda and "SchedulingPolicies.track" not in cuda
    assert RATIO.replace("Slide", "SlideDelicious", 1) in sides            # inherited by the subclasses
    result = compare.compare_runs(frame({RATIO: 8.0, OVERHEAD: 1.0}), frame({RATIO: 4.0, OVERHEAD: 3.0}), declared,
                                  None, 0.1, scales=directions.declared_scales(), sides=sides)
    lines = {c.benchmark: c.line() for c in result.changes}
    assert lines[RATIO].startswith("REGRESSION ") and f"either side may have moved: see {sides[RATIO]}" in lines[RATIO]
    assert "side" not in lines[OVERHEAD]
    assert "side" not in compare.compare_runs(frame({RATIO: 8.0}), frame({RATIO: 4.0}), declared, None, 0.1
                                              ).changes[0].line()         # no sides given: the line as before


def test_readme_names_every_direction_whose_asv_regression_detection_is_switched_off():
    """README's "Adding a benchmark" said a new track changes regressions_first_commits when its
    direction is higher, flag or context; nearer_zero does too (every direction but lower)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    said = re.search(r"A new `track_\*` whose direction is (.+?) changes\s+`regressions_first_commits`", readme, re.S)
    assert said, "README no longer says which directions change regressions_first_commits"
    named = set(re.findall(r"`(\w+)`", said.group(1))) - set(re.findall(r"but `(\w+)`", said.group(1)))
    switched_off = {d for d in directions.DIRECTIONS if directions.asv_regressions_first_commits({"m.C.track_x": d})}
    assert named == switched_off, f"README names {sorted(named)}; the code switches off {sorted(switched_off)}"
