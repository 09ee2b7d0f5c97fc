"""A figure with nothing finite to draw says "no data" instead of showing empty axes; a
legend names no series that has no point; ±inf points are listed with the skipped ones;
a history caption without a unit has no empty parentheses."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from impls.harness.figures import FigureSpec, discover
from impls.harness.report import plotting
from impls.harness.report.history import HistoryFigure
from impls.harness.report.machine_state import MachineState
from impls.harness.report.markdown_page import render_markdown
from impls.harness.report.model import Report
from impls.harness.report.paper_figures import DRAWN, NO_DATA, captioned_figure, render_figure
from impls.harness.report.skipped import NOT_FINITE, skipped_points

STATE = MachineState("m", None, "", {})
NAN = math.nan


def record(name: str, data) -> dict:
    return {"name": name, "experiment": "x", "synthetic": True, "profile": "quick", "machine": "m",
            "created": "2026-01-01T00:00:00+00:00", "commit": "e0085384d075", "data": data}


def toy_spec(draw) -> FigureSpec:
    return FigureSpec("toy", "toy_artifact", "Toy", "slide", "Fig. 1", (), draw)


def render_toy(draw, data=None):
    return render_figure(toy_spec(draw), {"toy_artifact": record("toy_artifact", data)}, STATE)


def nan_line(data) -> Figure:
    figure = Figure()
    ax = figure.add_subplot()
    ax.plot([1, 2, 3], [NAN, math.inf, NAN], label="series")
    ax.axhline(1.0, label="reference")                  # across the axes: no data
    ax.legend()
    return figure


def nan_bars(data) -> Figure:
    figure = Figure()
    ax = figure.add_subplot()
    ax.bar([0, 1], [NAN, NAN], yerr=[[0, 0], [NAN, NAN]], label="bars")
    ax.axvspan(0, 1)
    return figure


def empty_axes(data) -> Figure:
    figure = Figure()
    figure.add_subplot().set_yscale("log")
    return figure


def nan_scatter_with_note(data) -> Figure:
    figure = Figure()
    ax = figure.add_subplot()
    ax.scatter([NAN], [1.0])
    ax.text(0.5, 0.5, "no job\nfinished", transform=ax.transAxes)
    return figure


@pytest.mark.parametrize("draw", [nan_line, nan_bars, empty_axes, nan_scatter_with_note])
def test_a_figure_without_a_finite_point_is_no_data_not_drawn(draw):
    result = render_toy(draw)
    assert result.status == NO_DATA and result.png is None and result.svg is None     # old: "drawn"
    assert result.caption.startswith("no data: artifact 'toy_artifact' holds no finite value")
    assert result.synthetic is True


def test_the_no_data_reason_carries_the_figures_own_note():
    assert render_toy(nan_scatter_with_note).caption.endswith("(the figure says: no job finished)")


def test_one_finite_point_is_drawn():
    def one_point(data) -> Figure:
        figure = Figure()
        figure.add_subplot().plot([1, 2], [NAN, 0.0])
        return figure

    assert render_toy(one_point).status == DRAWN


def _subclusters(rows) -> dict:
    return {"tables": {"bandana-user": rows}, "sizes": {"kmeans_clusters": 8}}


def _row(k, bandwidth, seconds) -> dict:
    return {"subclusters": k, "effective_bandwidth": bandwidth, "kmeans_seconds": seconds, "groups": None}


def _switching(n: dict) -> dict:
    """salus_switching_latency's data: one workload; ``n[method]`` runs (0: no value) of each method."""
    return {"device": "cpu", "workloads": {"mlp_b64": {
        f"{m}_ms": ({"n": n[m], "p50": 2.0, "p99": 3.0} if n[m] else {"n": 0, "p50": None, "p99": None})
        for m in n}}}


METHODS = ("inprocess", "inprocess_gap", "to_host", "to_disk", "restart")


@pytest.mark.parametrize("name, data", [
    ("bandana_subclusters", _subclusters([_row(1, NAN, NAN), _row(4, NAN, NAN)])),
    ("bandana_subclusters", _subclusters([])),
    ("bandana_subclusters", {"tables": {}, "sizes": {"kmeans_clusters": 8}}),
    ("salus_switching_latency", _switching(dict.fromkeys(METHODS, 0))),
    ("salus_switching_latency", {"workloads": {}, "device": "cpu"}),
    ("bandana_miniature", {"miniature": {"points": [], "rate": 0.1, "speedup": NAN, "max_abs_error_hit_rate": NAN,
                                         "max_abs_error_effective_bandwidth": NAN}}),   # no valid grid point
])
def test_registered_figures_without_data_are_no_data(name, data):
    spec = discover()[0][name]
    result = render_figure(spec, {spec.artifact: record(spec.artifact, data)}, STATE)
    assert result.status == NO_DATA, result.caption


def _visible_legend(legend) -> list[str]:
    return [t.get_text() for t in legend.get_texts() if t.get_visible()]


def test_a_series_without_a_finite_point_has_no_legend_entry():
    spec = discover()[0]["salus_switching_latency"]
    data = _switching({**dict.fromkeys(METHODS, 5), "to_disk": 0, "restart": 0})
    figure = captioned_figure(spec, record(spec.artifact, data))
    labels = _visible_legend(figure.axes[0].get_legend())
    assert labels[0] == "1 s" and len(labels) == 4                       # old: all five methods listed
    assert not any("disk" in label or "restart" in label for label in labels)


def test_hidden_entries_take_no_room_and_an_entry_that_says_so_stays():
    figure = Figure()
    ax = figure.add_subplot()
    ax.plot([1, 2], [1.0, 2.0], label="drawn")
    ax.plot([1, 2], [NAN, NAN], label="empty")
    ax.plot([1, 2], [NAN, NAN], label="named (no finite value)")
    ax.legend()
    figure.legend()                                     # a figure legend: judged over all axes
    renderer = FigureCanvasAgg(figure).get_renderer()
    before = figure.legends[0].get_window_extent(renderer).height
    plotting.drop_empty_legend_entries(figure)
    assert _visible_legend(ax.get_legend()) == ["drawn", "named (no finite value)"]
    assert _visible_legend(figure.legends[0]) == ["drawn", "named (no finite value)"]
    after = figure.legends[0].get_window_extent(renderer).height
    assert after < before * 0.8                          # the entry's row is gone, not just blank


def test_a_legend_of_empty_series_only_is_hidden():
    figure = Figure()
    ax = figure.add_subplot()
    ax.plot([1, 2], [1.0, 2.0])
    ax.bar([0], [NAN], label="empty bars")
    ax.legend()
    plotting.drop_empty_legend_entries(figure)
    assert not ax.get_legend().get_visible()
    assert plotting.finite_count(figure) == 2


# ------------------------------------------------------------------ non-finite points, captions


def _points(*rows) -> pd.DataFrame:
    return pd.DataFrame([{"benchmark": b, "param_label": "", "params": {}, "status": s, "value": v,
                          "commit": "c" * 40, "type": "track"} for b, s, v in rows])


def test_infinite_points_are_listed_with_the_skipped_ones():
    points = _points(("b.A.track_nan", "skipped", NAN), ("b.B.track_inf", "ok", math.inf),
                     ("b.C.track_minus_inf", "ok", -math.inf), ("b.D.track_ok", "ok", 2.0))
    found = {p.benchmark: p for p in skipped_points(points, {}, STATE)}
    assert set(found) == {"b.A.track_nan", "b.B.track_inf", "b.C.track_minus_inf"}    # old: NaN only
    assert found["b.B.track_inf"].status == NOT_FINITE and "inf, not a finite number" in found["b.B.track_inf"].reason
    assert "-inf" in found["b.C.track_minus_inf"].reason


def _report(figures=(), history=()) -> Report:
    commits = pd.DataFrame({"commit": ["c" * 40], "date": [pd.Timestamp("2026-01-01", tz="UTC")],
                            "env_names": ["py"], "points": [1]})
    return Report("m", "2026-01-01", "quick", commits, [], [], [], list(figures), list(history), [], [])


@pytest.mark.parametrize("unit, caption", [("", "*b.A.track_ratio*. Data"), ("s", "*b.A.track_ratio* (s). Data")])
def test_a_history_caption_has_parentheses_only_around_a_unit(unit, caption):
    history = HistoryFigure("b.A.track_ratio", unit, ("c" * 40,), 1, 1, b"png")
    markdown = render_markdown(_report(history=[history]))
    assert caption in markdown and "()" not in markdown                # old: "*b.A.track_ratio* ()"


def test_the_markdown_shows_a_no_data_figure_by_its_reason_not_an_image():
    markdown = render_markdown(_report(figures=[render_toy(nan_line)]))
    assert "**Toy (paper Fig. 1)**: no data: artifact 'toy_artifact'" in markdown
    assert "figures/toy.png" not in markdown


def test_a_legend_key_drawn_from_no_point_keeps_its_entry():
    """``plot([], [], label=...)`` is how a figure puts a key or a reason in its legend (the
    SLIDE time-to-accuracy marker key, the lanes figure's "(no latency recorded)"): it is no
    series without data, so its entry stays; a line of NaN points is one, and goes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from impls.harness.report import plotting

    figure, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], label="data")
    ax.plot([], [], marker="x", linestyle="none", label="X: the run reaches its target")
    ax.plot([1, 2], [float("nan")] * 2, label="all NaN")
    ax.legend()
    plotting.drop_empty_legend_entries(figure)
    shown = [t.get_text() for t in ax.get_legend().texts if t.get_visible()]
    assert shown == ["data", "X: the run reaches its target"]
    plt.close(figure)
