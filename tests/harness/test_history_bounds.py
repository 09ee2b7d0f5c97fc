"""History figures draw a point that is only a bound (its ``bounded_by`` flag is 1, as
``make compare`` and the verdicts read it) with its own marker and say so in the legend, so
a series of bounds does not read as a measured one. Checked on the matplotlib Axes."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from impls.harness.report import directions, history
from impls.harness.report.results import commits as commit_table

RATIO = "bench_slide.SlideSpeedup.track_time_to_target_ratio"
LOWER_FLAG = "bench_slide.SlideSpeedup.track_ratio_is_lower_bound"
UPPER_FLAG = "bench_slide.SlideSpeedup.track_ratio_is_upper_bound"
UNITS = {RATIO: "x", LOWER_FLAG: "1 = the slower run never reached the target",
         UPPER_FLAG: "1 = the faster run never reached the target (the slower did)"}
DENSE, SAMPLED = "comparison='dense-cpu/slide'", "comparison='sampled-cpu/slide'"
COMMITS = [c * 40 for c in "abcd"]


def _frame(series: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    """Rows of ``{param_label: {benchmark: value per commit}}`` (NaN: not measured there)."""
    rows = []
    for label, benches in series.items():
        for bench, values in benches.items():
            for i, (commit, value) in enumerate(zip(COMMITS, values)):
                if math.isnan(value):
                    continue
                rows.append({"machine": "m", "commit": commit, "env_name": "e", "benchmark": bench,
                             "date": pd.Timestamp(1_700_000_000 + 86400 * i, unit="s", tz="UTC"),
                             "type": "track", "unit": UNITS[bench],
                             "params": {"comparison": label.split("=")[1].strip("'")} if label else {},
                             "param_label": label, "value": float(value), "status": "ok",
                             "started_at": pd.Timestamp(1_700_000_000 + i, unit="s", tz="UTC"), "version": "1"})
    return pd.DataFrame(rows)


def _draw(frame: pd.DataFrame, flags=True):
    """The Axes of the history figure of RATIO in ``frame``, drawn the way history_figures
    draws it (its flag rows and the declared flags)."""
    bounds = directions.declared_bounds() if flags else {}
    declared = bounds.get(RATIO)
    flag_rows = frame[frame["benchmark"].isin([f for f in declared or () if f])] if declared else None
    figure, _, _ = history.history_figure(frame[frame["benchmark"] == RATIO], commit_table(frame), "higher",
                                          None, None, flag_rows, declared)
    return figure.axes[0]


def _marked(ax, marker: str) -> list[tuple[float, float]]:
    return sorted((float(x), float(y)) for line in ax.lines if line.get_marker() == marker
                  and line.get_linestyle() == "None" for x, y in zip(line.get_xdata(), line.get_ydata()))


def _legend(ax) -> dict[str, str]:
    """Legend text (its lines joined by spaces) -> the entry's marker."""
    legend = ax.get_legend()
    assert legend is not None
    return {" ".join(text.get_text().split()): handle.get_marker()
            for text, handle in zip(legend.get_texts(), legend.legend_handles)}


@pytest.fixture()
def bounded() -> pd.DataFrame:
    # dense: 8x measured twice, then only ">= 1.1" and ">= 1.2"; sampled: "<= 0.8" once, then 3x
    return _frame({DENSE: {RATIO: [8, 8, 1.1, 1.2], LOWER_FLAG: [0, 0, 1, 1], UPPER_FLAG: [0, 0, 0, 0]},
                   SAMPLED: {RATIO: [0.8, 3, 3, 3], LOWER_FLAG: [0, 0, 0, 0], UPPER_FLAG: [1, 0, 0, 0]}})


def test_lower_and_upper_bounds_get_their_own_markers_in_the_series_colour(bounded):
    ax = _draw(bounded)
    assert _marked(ax, "^") == [(2.0, 1.1), (3.0, 1.2)]
    assert _marked(ax, "v") == [(0.0, 0.8)]
    series = {line.get_label(): line for line in ax.lines if not line.get_label().startswith("_")}
    [up] = [line for line in ax.lines if line.get_marker() == "^"]
    [down] = [line for line in ax.lines if line.get_marker() == "v"]
    assert up.get_color() == series[DENSE].get_color()
    assert down.get_color() == series[SAMPLED].get_color()
    # the series' own round markers stand only at its measured values
    assert series[DENSE].get_markevery() == [0, 1]
    assert series[SAMPLED].get_markevery() == [1, 2, 3]


def test_the_legend_says_what_each_bound_marker_means(bounded):
    legend = _legend(_draw(bounded))
    assert legend["lower bound (≥ value: the slower run never reached the target)"] == "^"
    assert legend["upper bound (≤ value: the faster run never reached the target (the slower did))"] == "v"
    assert {DENSE, SAMPLED} <= set(legend)
    assert not any("either kind" in text for text in legend)


def test_a_single_unnamed_series_gets_a_legend_for_its_bounds_alone():
    frame = _frame({"": {RATIO: [2, 2, 1.5, 2], LOWER_FLAG: [0, 0, 1, 0], UPPER_FLAG: [0, 0, 0, 0]}})
    ax = _draw(frame)
    assert _marked(ax, "^") == [(2.0, 1.5)]
    assert list(_legend(ax)) == ["lower bound (≥ value: the slower run never reached the target)"]


def test_points_whose_flags_were_not_measured_are_marked_as_unknown_bounds():
    frame = _frame({DENSE: {RATIO: [8, 8, 1.1, 1.2], LOWER_FLAG: [0, 0, math.nan, math.nan],
                            UPPER_FLAG: [0, 0, math.nan, math.nan]}})
    ax = _draw(frame)
    assert _marked(ax, "d") == [(2.0, 1.1), (3.0, 1.2)] and not _marked(ax, "^")
    assert _legend(ax)["bound of either kind (its bound flags were not measured)"] == "d"


def test_without_declared_flags_every_point_is_drawn_as_a_value(bounded):
    ax = _draw(bounded, flags=False)
    assert not any(line.get_marker() in ("^", "v", "d") for line in ax.lines)
    assert all(line.get_markevery() is None for line in ax.lines)
    assert set(_legend(ax)) == {DENSE, SAMPLED}
    single = _draw(_frame({"": {RATIO: [2, 2, 1.5, 2]}}), flags=False)
    assert single.get_legend() is None                  # one unnamed series, no bounds: no legend, as before


def test_history_figures_passes_the_declared_flags_to_the_drawing(bounded, monkeypatch):
    drawn = []
    original = history.history_figure

    def keep(*args, **kw):
        figure, series, shown = original(*args, **kw)
        drawn.append(figure)
        return figure, series, shown

    monkeypatch.setattr(history, "history_figure", keep)
    history.history_figures(bounded, directions.declared_directions(), None, workers=1,
                            bounds=directions.declared_bounds())
    [ax] = [f.axes[0] for f in drawn if f._suptitle.get_text().startswith(RATIO)]
    assert _marked(ax, "^") == [(2.0, 1.1), (3.0, 1.2)] and _marked(ax, "v") == [(0.0, 0.8)]
    assert np.isfinite([y for _, y in _marked(ax, "^")]).all()


def test_long_bound_entries_wrap_so_the_axes_keep_their_room():
    """The suite's own flag units made one legend line wider than the figure: matplotlib's
    constrained layout gave up ("axes sizes collapsed to zero") and the plot was squeezed."""
    import warnings

    from impls.harness.report import plotting

    # one commit, as in a fresh clone's first report
    frame = _frame({DENSE: {RATIO: [1.1], LOWER_FLAG: [1], UPPER_FLAG: [0]},
                    SAMPLED: {RATIO: [0.8], LOWER_FLAG: [0], UPPER_FLAG: [1]}})
    long = ", or the faster was past it at its first evaluation"
    frame.loc[frame["benchmark"] == LOWER_FLAG, "unit"] = UNITS[LOWER_FLAG] + long
    frame.loc[frame["benchmark"] == UPPER_FLAG, "unit"] = UNITS[UPPER_FLAG] + long
    ax = _draw(frame)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert all(len(line) <= plotting.LEGEND_LINE for text in texts for line in text.splitlines())
    assert "lower bound (≥ value: the slower run never reached the target" + long + ")" in _legend(ax)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        plotting.to_png(ax.figure)


def test_a_long_series_name_wraps_in_the_legend_too():
    name = "comparison='dense-cpu/slide, a run name long enough to be wider than the figure on its own line'"
    ax = _draw(_frame({name: {RATIO: [1.1], LOWER_FLAG: [0], UPPER_FLAG: [0]}}))
    [text] = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "\n" in text and " ".join(text.split()) == name


def test_a_new_version_cuts_every_line_and_is_labelled_once_per_axes():
    """Numbers of two versions mean different things: no line joins them (8.6 -> 5.2 across a
    bump read as a gain), and the several series cut at one commit get one label there."""
    frame = _frame({DENSE: {RATIO: [8.6, 8.5, 5.2, 5.3]}, SAMPLED: {RATIO: [1.0, 1.1, 2.0, 2.1]}})
    frame["version"] = ["1" if c in COMMITS[:2] else "2" for c in frame["commit"]]
    ax = _draw(frame, flags=False)
    joined = [line for line in ax.lines if line.get_linestyle() == "-"]       # not the cut's dotted line
    spans = sorted((float(min(line.get_xdata())), float(max(line.get_xdata()))) for line in joined)
    assert spans == [(0.0, 1.0), (0.0, 1.0), (2.0, 3.0), (2.0, 3.0)], spans   # two pieces a series
    assert [t.get_text() for t in ax.texts].count("new version") == 1
    assert len({line.get_color() for line in joined}) == 2                   # a series keeps its colour
    assert len(ax.get_legend().get_texts()) == 2                              # and one legend entry


def test_a_value_lost_the_worst_way_is_marked_where_compare_calls_it_a_regression():
    """A job that failed: the JCT is NaN where its sibling track has a value (its setup ran).
    The history draws a cross there, at the level the series last had, and says why; a
    skip (every track of the point NaN) gets none."""
    jct, error = "bench_salus.SchedulingPolicies.track_average_jct", "bench_salus.SchedulingPolicies.track_simulator_error"
    rows = []
    for i, commit in enumerate(COMMITS):
        for bench, values in ((jct, [5.0, 5.1, math.nan, math.nan]), (error, [0.1, 0.1, 0.2, math.nan])):
            for policy in ("fifo", "srtf"):
                value = values[i] if policy == "fifo" else 2.0
                rows.append({"machine": "m", "commit": commit, "env_name": "e", "benchmark": bench,
                             "date": pd.Timestamp(1_700_000_000 + 86400 * i, unit="s", tz="UTC"), "type": "track",
                             "unit": "s", "params": {"policy": policy}, "param_label": f"policy='{policy}'",
                             "value": value, "status": "ok" if math.isfinite(value) else "skipped",
                             "started_at": pd.Timestamp(1_700_000_000 + i, unit="s", tz="UTC"), "version": "1"})
    frame = pd.DataFrame(rows)
    lost = history.history_lost.lost_points(frame, directions.declared_worst_missing())
    assert lost == {jct: {"policy='fifo'": frozenset({COMMITS[2]})}}     # COMMITS[3]: a skip (both NaN)
    figure, _, _ = history.history_figure(frame[frame["benchmark"] == jct], commit_table(frame), "lower",
                                          lost=(lost[jct], directions.declared_missing()[jct]))
    ax = figure.axes[0]
    assert _marked(ax, "X") == [(2.0, 5.1)]
    assert any(text.startswith("no value: a job failed in this policy's run") for text in _legend(ax)), _legend(ax)
    figure, _, _ = history.history_figure(frame[frame["benchmark"] == jct], commit_table(frame), "lower")
    assert _marked(figure.axes[0], "X") == []                               # without it: nothing drawn
    # a failure (asv's null) is listed as FAILED by compare, not as this NaN: no cross
    failed = frame.assign(status=["failed" if (b == jct and c == COMMITS[2] and l == "policy='fifo'") else st
                                  for b, c, l, st in zip(frame["benchmark"], frame["commit"], frame["param_label"],
                                                         frame["status"])])
    assert history.history_lost.lost_points(failed, directions.declared_worst_missing()) == {}
    # what the run logged decides where it logged something: a skip is no loss
    from impls.harness import skip_log
    at = pd.Timestamp(1_700_000_002, unit="s", tz="UTC")
    skipped = {COMMITS[2]: [skip_log.Entry(jct, "policy='fifo'", skip_log.SKIPPED, "no capacity", at.timestamp())]}
    assert history.history_lost.lost_points(frame.assign(duration=1.0), directions.declared_worst_missing(),
                                            skipped) == {}
    # under a new benchmark version nothing is compared: no cross at the old version's level
    bumped = frame.assign(version=["2" if c in COMMITS[2:] else "1" for c in frame["commit"]])
    figure, _, _ = history.history_figure(bumped[bumped["benchmark"] == jct], commit_table(bumped), "lower",
                                          lost=(lost[jct], "a job failed"))
    assert _marked(figure.axes[0], "X") == []
    # values as a hand-built frame may hold them (None for absent) draw the same cross
    import matplotlib.pyplot as plt
    figure, ax = plt.subplots()
    assert history.history_lost.mark_lost(ax, [5.0, None, None], COMMITS[:3], frozenset({COMMITS[1]}), 1.0, "r")
    plt.close(figure)
