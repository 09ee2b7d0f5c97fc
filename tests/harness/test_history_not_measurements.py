"""A history figure draws no value that no run can measure (a timing of 0, a negative memory
size) and judges no step to or from it, as ``make compare`` judges no move there: a broken
timer is no improvement followed by a regression. Checked on the matplotlib figure."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from impls.harness.report import history, noise
from impls.harness.report.results import commits as commit_table

TIMING = "bench_salus_lanes.LaneManagerDecisionTime.time_decisions"
OVERHEAD = "bench_salus.ExecutorOverhead.track_paired_overhead_percent"
COMMITS = [c * 40 for c in "abcdefgh"]


def _rows(benchmark: str, unit: str, values: list[float]) -> pd.DataFrame:
    return pd.DataFrame([{"machine": "m", "commit": commit, "env_name": "e", "benchmark": benchmark,
                          "date": pd.Timestamp(1_700_000_000 + 86400 * i, unit="s", tz="UTC"),
                          "type": "time" if ".time_" in benchmark else "track", "unit": unit, "params": {},
                          "param_label": "", "value": value, "status": "ok",
                          "started_at": pd.Timestamp(1_700_000_000 + i, unit="s", tz="UTC"), "version": "1"}
                         for i, (commit, value) in enumerate(zip(COMMITS, values))])


def _threshold(benchmark: str, scale: str = noise.RELATIVE) -> noise.Noise:
    return noise.Noise("m", "t", [], {(benchmark, "*"): noise.Threshold(benchmark, "*", 5, 0.02, 0.05, scale=scale)})


def test_a_time_of_0_is_not_drawn_and_makes_no_step():
    rows = _rows(TIMING, "seconds", [0.020, 0.0201, 0.0199, 0.0, 0.0, 0.0, 0.0200, 0.0201])
    figure, series, shown = history.history_figure(rows, commit_table(rows), "lower", _threshold(TIMING))
    y = figure.axes[0].lines[0].get_ydata()
    assert np.isnan(y[3:6]).all() and np.isfinite(y[[0, 1, 2, 6, 7]]).all()
    assert figure.steps == [], figure.steps
    assert "3 value(s) not drawn, not measurements: a time benchmark measured 0" in figure._suptitle.get_text()


def test_without_the_mask_the_same_series_would_step():
    """The check above can fail: a real move of that size is a step."""
    rows = _rows(TIMING, "seconds", [0.020, 0.0201, 0.0199, 0.010, 0.010, 0.010, 0.0200, 0.0201])
    figure, _, _ = history.history_figure(rows, commit_table(rows), "lower", _threshold(TIMING))
    assert [s.kind for s in figure.steps] == ["improvement", "regression"], figure.steps
    assert "not drawn" not in figure._suptitle.get_text()


def test_a_negative_difference_on_the_absolute_scale_is_drawn():
    rows = _rows(OVERHEAD, "% of iteration time", [1.0, -2.0, 1.5, math.nan, 1.0, 1.1, 0.9, 1.0])
    figure, _, _ = history.history_figure(rows, commit_table(rows), "lower", None, scale=noise.ABSOLUTE)
    assert figure.axes[0].lines[0].get_ydata()[1] == -2.0
    assert "not drawn" not in figure._suptitle.get_text()


def test_a_context_number_of_0_is_drawn_as_compare_lists_it():
    """make compare judges no context number, so none is masked: 0 samples/s of a context track is drawn."""
    rows = _rows("bench_x.Setup.track_rate", "samples/s", [5.0, 0.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0])
    figure, _, _ = history.history_figure(rows, commit_table(rows), "context", None)
    assert figure.axes[0].lines[0].get_ydata()[1] == 0.0 and "not drawn" not in figure._suptitle.get_text()
