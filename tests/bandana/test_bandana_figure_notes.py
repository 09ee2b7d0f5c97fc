"""Bandana's replay and fio figures say what was not measured (no fio, a skipped engine, no
finite value) instead of drawing it as 0 or leaving it out without a word.

The artifacts are built here in the shape the experiments write, and drawn through the
report's figure registry (:func:`impls.harness.figures.discover` and
:func:`impls.harness.report.paper_figures.captioned_figure`)."""
from __future__ import annotations

import math

import pytest

from impls.harness.figures import discover
from impls.harness.report.paper_figures import DRAWN, NO_DATA, captioned_figure, render_figure

PREDICTED = "simulated eff. bandwidth × fio bandwidth"
MEASURED = "replay: measured useful bytes/s"
NO_FIO = "fio not installed or not run"


def draw(name: str, experiment: str, data: dict, status: str = DRAWN):
    """The figure ``name`` as the report draws it from an artifact holding ``data``; the
    report's status for it must be ``status`` (NO_DATA: the report shows its reason, no image)."""
    spec = discover()[0][name]
    record = {"name": spec.artifact, "experiment": experiment, "synthetic": False, "data": data}
    result = render_figure(spec, {spec.artifact: record}, None)
    assert result.status == status
    if status == NO_DATA:
        assert "no finite measurement" in result.caption         # the figure's own note, quoted
    return captioned_figure(spec, record)


def replay_data(fio_iops, predicted) -> dict:
    """A replay_experiment()-shaped dict: layouts "identity" and "random" (policy lru) at
    queue depths 1 and 4; ``fio_iops[layout]`` and ``predicted[layout]`` give each point's
    fio IOPS and predicted useful bytes/s (None: fio did not run there)."""
    sweep, cross = [], []
    for k, layout in enumerate(("identity", "random")):
        for j, qd in enumerate((1, 4)):
            sweep.append({"layout": layout, "policy": "lru", "queue_depth": qd,
                          "blocks_per_second": 1000.0 * (k + 1) * (j + 1),
                          "fio_iops": fio_iops[layout][j], "lookups_per_second": 5000.0 * (j + 1),
                          "useful_bytes_per_second": 2e6 * (k + 1) * (j + 1)})
            cross.append({"layout": layout, "policy": "lru", "queue_depth": qd, "match": True,
                          "predicted_useful_bytes_per_second": predicted[layout][j],
                          "replay_useful_bytes_per_second": 2e6 * (k + 1) * (j + 1)})
    return {"sweep": sweep, "cross_check": cross, "raw_loop": [], "shadow": {}, "capacity": 100,
            "mechanism": "libaio", "table": "toy"}


def bars(ax) -> dict[str, list[float]]:
    """Bar heights by series label."""
    return {c.get_label(): [bar.get_height() for bar in c] for c in ax.containers}


def test_cross_check_without_fio_draws_no_predicted_bars():
    none = {"identity": [None, None], "random": [None, None]}
    (ax,) = draw("bandana_replay_cross_check", "bandana.replay", replay_data(none, none)).axes
    heights = bars(ax)
    assert list(heights) == [MEASURED]                         # old: a 0-height predicted bar per point
    assert heights[MEASURED] == [2.0, 4.0, 4.0, 8.0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [MEASURED]
    title = ax.get_title()
    assert "replay = simulator in 4 of 4 points" in title      # read and hit counts: no fio needed
    assert "no fio prediction" in title and NO_FIO in title


def test_cross_check_draws_the_predicted_points_and_counts_the_missing():
    predicted = {"identity": [1.5e6, None], "random": [None, 9e6]}
    some = {"identity": [1e4, 2e4], "random": [1e4, 2e4]}
    (ax,) = draw("bandana_replay_cross_check", "bandana.replay", replay_data(some, predicted)).axes
    heights = bars(ax)
    assert heights[MEASURED] == [2.0, 4.0, 4.0, 8.0]           # old: the unpredicted points vanished
    shown = heights[PREDICTED]
    assert shown[0] == 1.5 and shown[3] == 9.0
    assert math.isnan(shown[1]) and math.isnan(shown[2])       # no bar, never a 0 one
    assert "no fio prediction for 2 of 4 points" in ax.get_title()


def test_replay_vs_fio_names_the_layouts_without_a_fio_line():
    fio = {"identity": [1e4, None], "random": [None, None]}
    figure = draw("bandana_replay_vs_fio", "bandana.replay", replay_data(fio, fio))
    ax_io = figure.axes[0]
    lines = {line.get_label(): line for line in ax_io.get_lines()}
    assert "fio on random's file" not in lines
    ydata = list(lines["fio on identity's file"].get_ydata())  # old: the whole line was dropped
    assert ydata[0] == 10.0 and math.isnan(ydata[1])           # a gap, not 0
    title = ax_io.get_title()
    assert "no fio line" in title and NO_FIO in title
    assert "random" in title and "identity at QD 4" in title


def test_replay_vs_fio_without_fio_at_all_says_so():
    none = {"identity": [None, None], "random": [None, None]}
    ax_io = draw("bandana_replay_vs_fio", "bandana.replay", replay_data(none, none)).axes[0]
    assert not [line for line in ax_io.get_lines() if line.get_label().startswith("fio on")]
    title = ax_io.get_title()
    assert "no fio line for any layout (identity, random)" in title and NO_FIO in title


def fio_point(engine: str, block_bytes: int, queue_depth: int, iops: float) -> dict:
    return {"engine": engine, "block_bytes": block_bytes, "queue_depth": queue_depth, "iops": iops,
            "bandwidth_bytes_per_s": iops * block_bytes, "clat_mean_us": 50.0, "clat_p50_us": 48.0,
            "clat_p99_us": 140.0, "runtime_ms": 500}


def fio_sweep(iops: float = 2e4, skipped: dict | None = None) -> dict:
    """A characterize_device()-shaped dict: libaio over 512 B..64 KB at QD 1, 4, 32; every
    point ``iops`` (scaled by queue depth)."""
    points = [fio_point("libaio", block, qd, iops * qd ** 0.5)
              for block in (512, 4096, 65536) for qd in (1, 4, 32)]
    ceiling = {"engine": "libaio", "block_bytes": 4096, "queue_depth": 32, "iops": points[5]["iops"],
               "bandwidth_bytes_per_s": points[5]["bandwidth_bytes_per_s"], "target_queue_depth": 32}
    return {"fio_version": "fio-3.33", "primary_engine": "libaio", "points": points,
            "skipped_engines": skipped or {}, "ceiling": ceiling,
            "target": {"path": "/tmp/t.bin", "kind": "file", "size_bytes": 16 << 20, "created": False}}


def test_iops_figure_names_a_skipped_engine_and_why():
    reason = ("fio cannot use ioengine=io_uring: fio: io_uring_setup: Operation not permitted "
              "(seccomp) and a long tail of further detail from fio's standard error")
    (ax,) = draw("fio_iops_vs_queue_depth", "bandana.fio", fio_sweep(skipped={"io_uring": reason})).axes
    title = ax.get_title()
    assert "fio cannot use ioengine" not in title              # the preamble goes, fio's words stay
    assert "not run: io_uring (fio: io_uring_setup: Operation not" in title
    note = title.split("not run: ", 1)[1]
    assert note.endswith("…)") and len(note) < len(reason)   # shortened
    assert [line.get_label() for line in ax.get_lines()][0] == "libaio"
    (ax,) = draw("fio_iops_vs_queue_depth", "bandana.fio", fio_sweep()).axes
    assert "not run" not in ax.get_title()                     # nothing skipped: no note


@pytest.mark.parametrize("name", ["fio_bandwidth_vs_block_size", "fio_iops_vs_queue_depth"])
def test_all_nan_fio_values_say_no_finite_measurement(name):
    (ax,) = draw(name, "bandana.fio", fio_sweep(iops=math.nan), NO_DATA).axes
    assert "no finite measurement" in [t.get_text() for t in ax.texts]   # old: an empty axes
    for line in ax.get_lines():
        assert all(math.isnan(v) for v in line.get_ydata())    # NaN stays NaN, never 0
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    left, right = ax.get_xlim()
    assert min(ticks) / left < 2 and right / max(ticks) < 2    # old: the axis ran down to 1
    assert not any("ceiling" in line.get_label() for line in ax.get_lines())


def test_a_line_without_any_finite_value_says_so_in_the_legend():
    data = fio_sweep()
    for point in data["points"]:
        if point["queue_depth"] == 4:
            point["bandwidth_bytes_per_s"] = math.nan
    (ax,) = draw("fio_bandwidth_vs_block_size", "bandana.fio", data).axes
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["QD 1", "QD 4 (no finite measurement)", "QD 32"]
    assert not ax.texts                                        # the other lines are drawn


@pytest.mark.filterwarnings("error::UserWarning")       # a legend too long collapses the axes: matplotlib warns
def test_the_fio_ceiling_is_named_as_the_replays_not_the_drives():
    (ax,) = draw("fio_iops_vs_queue_depth", "bandana.fio", fio_sweep()).axes
    [star] = [line for line in ax.get_lines() if "ceiling" in line.get_label()]
    assert star.get_label().startswith("the replay's ceiling: fio libaio at its QD 32")
    # one short fio run a point: a stall or the drive's drift moves it, and the replay's own fio run judges it
    data = fio_sweep()
    data["sizes"] = {**data.get("sizes", {}), "runtime_s": 0.6}
    (ax,) = draw("fio_iops_vs_queue_depth", "bandana.fio", data).axes
    [star] = [line for line in ax.get_lines() if "ceiling" in line.get_label()]
    assert "one 0.6-s fio run a point; the replay runs its own" in star.get_label()


def test_each_axis_shows_its_values_in_the_unit_its_label_names():
    """MB/s is 10^6 bytes/s, thousand IOPS 10^3 reads/s: the plotted points are the
    artifact's values in those units (not MiB/s, kB/s)."""
    sweep = fio_sweep()
    (ax,) = draw("fio_bandwidth_vs_block_size", "bandana.fio", sweep).axes
    assert ax.get_ylabel() == "Bandwidth (MB/s)"
    qd1 = sorted((p for p in sweep["points"] if p["queue_depth"] == 1), key=lambda p: p["block_bytes"])
    assert list(ax.get_lines()[0].get_ydata()) == pytest.approx([p["bandwidth_bytes_per_s"] / 1e6 for p in qd1])
    (ax,) = draw("fio_iops_vs_queue_depth", "bandana.fio", sweep).axes
    assert ax.get_ylabel() == "Throughput (thousand IOPS)"
    at_4k = sorted((p for p in sweep["points"] if p["block_bytes"] == 4096), key=lambda p: p["queue_depth"])
    assert list(ax.get_lines()[0].get_ydata()) == pytest.approx([p["iops"] / 1e3 for p in at_4k])

    data = replay_data({"identity": [1e4, 2e4], "random": [1e4, 2e4]}, {"identity": [1e6, 1e6], "random": [1e6, 1e6]})
    ax_io, ax_lookups, ax_useful = draw("bandana_replay_vs_fio", "bandana.replay", data).axes
    assert ax_useful.get_ylabel() == "useful MB/s" and ax_lookups.get_ylabel() == "thousand lookups/s"
    identity = [p for p in data["sweep"] if p["layout"] == "identity"]
    assert list(ax_useful.get_lines()[0].get_ydata()) == pytest.approx(
        [p["useful_bytes_per_second"] / 1e6 for p in identity])
    assert list(ax_lookups.get_lines()[0].get_ydata()) == pytest.approx(
        [p["lookups_per_second"] / 1e3 for p in identity])
    assert list(ax_io.get_lines()[0].get_ydata()) == pytest.approx([p["blocks_per_second"] / 1e3 for p in identity])
