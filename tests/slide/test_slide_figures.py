"""The SLIDE time-to-accuracy figure draws each comparison's own target P@1 (the one its
verdict names) and where each run reaches it, read from the artifact; an artifact without
per-pair targets draws the sweep-wide one as before. Runs, rates and hash results with nothing
finite to draw are named or noted rather than raising or vanishing, notes wrap whole, and many
runs put the legend below the panels. Checked on the matplotlib objects."""
from __future__ import annotations

import io
import math

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
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
    assert "no target" in fig.axes[0].get_title() and "None" not in fig.axes[0].get_title()
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


def _drawn(fig):
    """``fig`` after a full draw (what the report's PNG does), with its renderer."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    fig.savefig(io.BytesIO(), format="png")
    return canvas.get_renderer()


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


@pytest.mark.parametrize("empty", ["no points", "all NaN"])
def test_runs_without_a_finite_point_draw_a_note_not_an_error(empty):
    data = _artifact()
    for run in data["runs"]:
        if "curve" in run:
            if empty == "no points":
                run["curve"] = []
            else:
                for point in run["curve"]:
                    point["p_at_1"] = math.nan
    fig = figures.time_to_accuracy(data)
    _drawn(fig)                                           # a log axis with no data raised here
    for ax in fig.axes:
        assert "no measured points" in _texts(ax)
    assert "slide, dense-cpu, sampled-cpu" in fig.axes[1].get_title()


def test_a_run_without_points_is_named_and_the_others_are_drawn():
    data = _artifact()
    data["runs"][1]["curve"] = []                         # dense-cpu
    fig = figures.time_to_accuracy(data)
    _drawn(fig)
    ax_time, ax_iter = fig.axes
    labels = [t.get_text() for t in ax_time.get_legend().get_texts()]
    assert [t.split(" ")[0] for t in labels] == ["slide", "sampled"], labels
    assert "no finite P@1 (not drawn): dense-cpu" in ax_iter.get_title()
    assert not any("no measured points" in t for ax in fig.axes for t in _texts(ax))


def test_the_skipped_runs_note_is_wrapped_whole_and_clear_of_the_left_title():
    data = _artifact(with_pairs=False)
    data["target_p_at_1"] = None
    data["runs"] = [{"name": f"a-rather-long-run-name-{k}", "method": "slide", "threads": 2,
                     "skipped": "needs CUDA" if k % 2 else "needs the real Amazon-670K"} for k in range(8)]
    fig = figures.time_to_accuracy(data)
    renderer = _drawn(fig)
    ax_time, ax_iter = fig.axes
    title = ax_iter.get_title()
    assert all(f"a-rather-long-run-name-{k}" in title.replace("\n", " ") for k in range(8)), title
    assert max(len(line) for line in title.split("\n")) <= figures.NOTE_WIDTH
    left, right = (ax.title.get_window_extent(renderer) for ax in (ax_time, ax_iter))
    assert not left.overlaps(right)
    assert "no target" in ax_time.get_title() and "None" not in ax_time.get_title()


def _scaling_run(method: str, threads: int, rate: float, ttt: float | None) -> dict:
    return {"name": f"{method}-{threads}", "method": method, "device": "cpu", "threads": threads,
            "padding": "batch", "curve": [{"seconds": 1.0, "iteration": 10, "p_at_1": 0.1}],
            "samples_per_second": rate, "time_to_target_s": ttt, "cpu_utilization": 0.5}


def test_core_scaling_keeps_a_zero_time_and_names_a_rate_the_log_axis_cannot_show():
    data = {"runs": [_scaling_run("slide", 1, 100.0, 0.0), _scaling_run("slide", 2, 150.0, None),
                     _scaling_run("dense", 1, 0.0, 4.0), _scaling_run("dense", 2, 20.0, 3.0)]}
    fig = figures.core_scaling(data)
    _drawn(fig)
    ax_tp, ax_ttt, _ = fig.axes
    ttt = {line.get_label(): list(line.get_ydata()) for line in ax_ttt.lines}
    assert ttt["slide cpu"][0] == 0.0 and math.isnan(ttt["slide cpu"][1])
    assert "not on the log axis (samples/s <= 0): dense cpu 1T (0)" in ax_tp.get_title().replace("\n", " ")


def test_core_scaling_with_no_positive_rate_still_draws():
    data = {"runs": [_scaling_run("slide", 1, 0.0, None), _scaling_run("dense", 1, 0.0, None)]}
    fig = figures.core_scaling(data)
    _drawn(fig)
    assert "dense cpu 1T (0), slide cpu 1T (0)" in fig.axes[0].get_title().replace("\n", " ")


def _hash(lsh: str, k: int, p_at_1: float) -> dict:
    return {"lsh": lsh, "K": k, "L": 50, "active_fraction": 0.01 * k, "final_p_at_1": p_at_1,
            "samples_per_second": 1000.0 * k, "lsh_recall": 0.1, "lsh_random_recall": 0.01}


def test_hash_family_says_when_a_panel_has_no_finite_value():
    fig = figures.hash_family({"hash": [_hash("dwta", 6, math.nan), _hash("simhash", 9, math.nan)]})
    _drawn(fig)
    ax_acc, ax_tp, ax_rec = fig.axes
    assert _texts(ax_acc) == ["no finite values"] and _texts(ax_tp) == ["no finite values"]
    assert _texts(ax_rec) == [] and ax_acc.get_legend() is None


def test_hash_family_marks_the_legend_entry_of_a_point_it_cannot_draw():
    fig = figures.hash_family({"hash": [_hash("dwta", 6, math.nan), _hash("simhash", 9, 0.2)]})
    _drawn(fig)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["dwta K=6 L=50 (no finite value)", "simhash K=9 L=50"]
    assert not any(_texts(ax) for ax in fig.axes)


def test_more_runs_than_a_legend_holds_put_it_below_the_panels():
    data = _artifact(with_pairs=False)
    template = data["runs"][0]
    data["runs"] = [{**template, "name": f"run{k}", "threads": k + 1} for k in range(figures.LEGEND_INSIDE_MAX + 2)]
    fig = figures.time_to_accuracy(data)
    _drawn(fig)
    assert fig.axes[0].get_legend() is None
    assert len(fig.legends) == 1 and len(fig.legends[0].get_texts()) == figures.LEGEND_INSIDE_MAX + 2
    few = figures.time_to_accuracy(_artifact(with_pairs=False))
    assert not few.legends and few.axes[0].get_legend() is not None


def test_core_scaling_compares_thread_counts_over_the_same_batches():
    """The 1-thread run trained 16 batches in 8 s, the 2-thread one 174 in 30 s, its first 16
    in ~4.3 s: over the same work 2 threads are ~1.9x, not the 2.9x of each run's own rate
    (early batches cost more, and only they are in the shorter run)."""
    one = {**_scaling_run("slide", 1, 510.0, None), "iterations": 16, "samples": 4096,
           "curve": [{"seconds": s, "iteration": i, "p_at_1": 0.02} for i, s in ((6, 3.43), (9, 4.81), (16, 8.03))]}
    two = {**_scaling_run("slide", 2, 1481.0, None), "iterations": 174, "samples": 44544,
           "curve": [{"seconds": s, "iteration": i, "p_at_1": 0.02} for i, s in ((11, 3.06), (17, 4.53), (174, 30.08))]}
    fig = figures.core_scaling({"runs": [one, two]})
    _drawn(fig)
    (line,) = fig.axes[0].lines
    rates = list(line.get_ydata())
    assert line.get_label() == "slide cpu (first 16 batches)"
    assert rates[0] == pytest.approx(4096 / 8.03)
    assert rates[1] / rates[0] == pytest.approx(8.03 / (3.06 + 5 / 6 * (4.53 - 3.06)), rel=1e-6)
    assert 1.8 < rates[1] / rates[0] < 2.0


def test_batch_size_joins_exact_ratios_only_and_marks_bounds_apart():
    run = {"samples_per_second": 100.0}
    data = {"batch": {"64": {"slide": run, "dense": run, "speedup": {"value": 1.2, "lower_bound": True}},
                      "128": {"slide": run, "dense": run, "speedup": {"value": 1.1}},
                      "256": {"slide": run, "dense": run, "speedup": {"value": 1.4, "lower_bound": True}}}}
    fig = figures.batch_size(data)
    _drawn(fig)
    joined, *others = fig.axes[1].lines
    assert [v for v in joined.get_ydata() if not math.isnan(v)] == [1.1]
    marks = [(m.get_marker(), [float(y) for y in m.get_ydata()]) for m in others if m.get_marker() in ("^", "v")]
    assert marks == [("^", [1.2]), ("^", [1.4])]
