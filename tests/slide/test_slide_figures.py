"""The SLIDE time-to-accuracy figure draws each comparison's own target P@1 (the one its
verdict names) and where each run reaches it, read from the artifact; an artifact without
per-pair targets draws the sweep-wide one as before. Checked on the matplotlib objects."""
from __future__ import annotations

import math

from matplotlib.colors import to_rgba

from impls.slide import figures


def _run(name: str, method: str, rise: float, sweep_time: float | None) -> dict:
    """A measured run whose P@1 climbs linearly to ``rise`` over 1-16 s (iterations 10-160)."""
    curve = [{"seconds": s, "iteration": 10 * s, "p_at_1": 0.02 + rise * s / 16} for s in (1.0, 2.0, 4.0, 8.0, 16.0)]
    return {"name": name, "method": method, "device": "cpu", "threads": 2, "curve": curve,
            "samples_per_second": 100.0, "time_to_target_s": sweep_time, "baseline_p_at_1": 0.02,
            "final_p_at_1": curve[-1]["p_at_1"]}


def _artifact(with_pairs: bool = True, sweep: float = 0.15) -> dict:
    data = {"runs": [_run("slide", "slide", 0.14, 15.0), _run("dense-cpu", "dense", 0.10, None),
                     _run("sampled-cpu", "sampled", 0.12, None), {"name": "dense-cuda", "skipped": "no CUDA"}],
            "target_p_at_1": sweep, "source": {"synthetic": True}}
    if with_pairs:
        data["speedups"] = {
            "dense-cpu/slide": {"fast": "slide", "slow": "dense-cpu", "target_p_at_1": 0.092, "value": 1.5,
                                "lower_bound": False, "upper_bound": False,
                                "fast_time_to_target_s": 6.0, "slow_time_to_target_s": 9.0},
            "sampled-cpu/slide": {"fast": "slide", "slow": "sampled-cpu", "target_p_at_1": 0.11, "value": 2.0,
                                  "lower_bound": True, "upper_bound": False,
                                  "fast_time_to_target_s": 8.0, "slow_time_to_target_s": None},
            # an older pair entry without a target draws nothing of its own
            "dense-cuda/slide": {"fast": "slide", "slow": "dense-cuda", "value": None},
        }
    return data


def _horizontal(ax) -> dict[float, list]:
    """Lines spanning the axes at one P@1 (axhline), by that P@1."""
    found: dict[float, list] = {}
    for line in ax.lines:
        x, y = line.get_xdata(), line.get_ydata()
        if len(y) == 2 and y[0] == y[1] and list(x) == [0, 1]:
            found.setdefault(round(float(y[0]), 6), []).append(line)
    return found


def _crosses(ax) -> dict[tuple[float, float], object]:
    return {(float(line.get_xdata()[0]), float(line.get_ydata()[0])): line
            for line in ax.lines if line.get_marker() == "X" and len(line.get_xdata())}


def test_each_pair_draws_its_own_target_with_a_label_naming_it():
    fig = figures.time_to_accuracy(_artifact())
    ax_time, ax_iter = fig.axes
    for ax in (ax_time, ax_iter):
        lines = _horizontal(ax)
        assert {0.092, 0.11, 0.15} <= set(lines)          # both pairs' targets and the sweep's
        assert lines[0.092][0].get_color() != lines[0.11][0].get_color()   # one style per target
    labels = [t.get_text() for t in ax_iter.get_legend().get_texts()]   # the runs' legend is the left one
    assert any(t.startswith("target P@1 0.092 of dense-cpu/slide") for t in labels), labels
    assert any("sampled-cpu/slide (sampled-cpu never did)" in t for t in labels), labels
    assert any(t.startswith("sweep target P@1 0.150") for t in labels), labels
    assert not any("dense-cuda/slide" in t for t in labels)
    assert "each pair's own target" in ax_time.get_title()


def test_a_cross_marks_where_each_run_reaches_its_pairs_target_in_the_runs_colour():
    fig = figures.time_to_accuracy(_artifact())
    ax_time = fig.axes[0]
    crosses = _crosses(ax_time)
    assert set(crosses) == {(6.0, 0.092), (9.0, 0.092), (8.0, 0.11)}    # sampled-cpu never reached 0.11
    curve_colour = {line.get_label().split(" ")[0]: line.get_color() for line in ax_time.lines
                    if "samples/s" in line.get_label()}
    assert to_rgba(crosses[(6.0, 0.092)].get_color()) == to_rgba(curve_colour["slide"])
    assert to_rgba(crosses[(9.0, 0.092)].get_color()) == to_rgba(curve_colour["dense"])
    assert not _crosses(fig.axes[1])                     # no times in iterations in the artifact
    assert any(t.get_text().startswith("X (left): the run reaches its pair's target")
               for t in fig.axes[1].get_legend().get_texts())


def test_the_sweep_target_is_one_pairs_line_when_they_are_equal():
    fig = figures.time_to_accuracy(_artifact(sweep=0.11))
    ax_time = fig.axes[0]
    lines = _horizontal(ax_time)
    assert len(lines[0.11]) == 1 and lines[0.11][0].get_linestyle() != "-."
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert any("0.110 of sampled-cpu/slide" in t and "also the sweep's" in t for t in labels), labels
    assert not any(t.startswith("sweep target") for t in labels)


def test_an_artifact_without_pair_targets_draws_the_sweep_target_as_before():
    fig = figures.time_to_accuracy(_artifact(with_pairs=False))
    for ax in fig.axes:
        lines = _horizontal(ax)
        assert set(lines) == {0.02, 0.15}                 # most popular label, sweep target
        assert lines[0.15][0].get_linestyle() == "-."
        assert not _crosses(ax)
    assert "dash-dot: target P@1 0.15" in fig.axes[0].get_title()
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("target at 15.0 s" in t for t in labels) and not any("sweep target" in t for t in labels)


def test_no_target_at_all_still_draws():
    data = _artifact(with_pairs=False)
    data["target_p_at_1"] = None
    fig = figures.time_to_accuracy(data)
    assert set(_horizontal(fig.axes[0])) == {0.02}
    assert "target P@1 None" in fig.axes[0].get_title()
    assert not math.isnan(fig.axes[0].get_ylim()[0])


def test_a_pair_neither_run_reached_draws_its_target_and_no_cross():
    data = _artifact()
    for entry in data["speedups"].values():
        entry["fast_time_to_target_s"] = entry["slow_time_to_target_s"] = None
    ax_time, ax_iter = figures.time_to_accuracy(data).axes
    assert not _crosses(ax_time)
    labels = [t.get_text() for t in ax_iter.get_legend().get_texts()]
    assert any("0.092 of dense-cpu/slide (neither reached it)" in t for t in labels), labels
    assert not any(t.startswith("X:") for t in labels)


def test_nine_targets_are_told_apart_and_a_target_that_is_no_number_is_not_drawn():
    data = _artifact()
    for k in range(9):
        data["speedups"][f"p{k}/slide"] = {"fast": "slide", "slow": "dense-cpu", "target_p_at_1": 0.035 + 0.01 * k,
                                           "fast_time_to_target_s": None, "slow_time_to_target_s": None}
    data["speedups"]["nan/slide"] = {"fast": "slide", "slow": "dense-cpu", "target_p_at_1": math.nan}
    ax_iter = figures.time_to_accuracy(data).axes[1]
    styles = [(to_rgba(lines[0].get_color()), str(lines[0]._unscaled_dash_pattern))   # (offset, dashes)
              for y, lines in _horizontal(ax_iter).items() if y not in (0.02, 0.15)]
    assert len(styles) == 11 and len(set(styles)) == 11, styles      # nine, and the two pairs' own
    assert not any("nan" in t.get_text() for t in ax_iter.get_legend().get_texts())


def test_a_pair_whose_run_the_figure_does_not_draw_gets_no_cross():
    data = _artifact()
    data["speedups"]["ghost/slide"] = {"fast": "slide", "slow": "ghost", "target_p_at_1": 0.07,
                                       "fast_time_to_target_s": 3.0, "slow_time_to_target_s": 4.0}
    crosses = _crosses(figures.time_to_accuracy(data).axes[0])
    assert (3.0, 0.07) in crosses and (4.0, 0.07) not in crosses
