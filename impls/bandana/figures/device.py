"""Report figures for Bandana's device characterization (artifact ``fio_sweep``).

``data`` is what :func:`impls.bandana.experiments.device.characterize_device`
returned. Figures are built on ``matplotlib.figure.Figure`` directly, so no
pyplot state or display backend is involved.
"""
from __future__ import annotations

import math
from typing import Any

from impls.harness.figures import figure, finite, new_axes
from impls.harness.report.setting import drive_words

NO_FINITE = "no finite measurement"
REASON_CHARS = 40


def _value(value: Any, scale: float) -> float:
    """``value / scale``, or NaN (a gap in a line, never 0) when ``value`` is not finite."""
    return value / scale if finite(value) else math.nan


def _shortened(reason: str) -> str:
    """``reason`` on one line, without the "fio cannot use ioengine=...: " preamble, at most
    REASON_CHARS characters (cut with an ellipsis)."""
    text = " ".join(str(reason).split())
    if text.startswith("fio cannot use ioengine=") and ": " in text:
        text = text.split(": ", 1)[1]
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1].rstrip() + "…"


def _skipped_note(data: dict[str, Any]) -> str:
    """"not run: <engine> (<reason, shortened>); ..." for the configured engines the sweep
    skipped (``data["skipped_engines"]``), or "" when none was."""
    skipped = data.get("skipped_engines") if isinstance(data, dict) else None
    if not isinstance(skipped, dict) or not skipped:
        return ""
    return "not run: " + "; ".join(f"{engine} ({_shortened(reason)})" for engine, reason in skipped.items())


def _on_drive(data: dict[str, Any]) -> str:
    """" on <device> (<filesystem>, rotational)": the drive the sweep read (its target's, where
    the artifact records it); "" for an older artifact without it."""
    target = data.get("target") or {}
    words = drive_words(target.get("device"), target.get("filesystem"), target.get("rotational"))
    return f" on {words}" if words else ""


def _mark_empty(ax, xs: list[int]) -> None:
    """Say NO_FINITE across ``ax`` (which has nothing finite to draw) and keep its log x axis
    to the span of ``xs``, so the tick labels do not pile up at one end."""
    if xs:
        ax.set_xlim(min(xs) / 1.5, max(xs) * 1.5)
    ax.set_ylim(0, 1)
    ax.text(0.5, 0.5, NO_FINITE, transform=ax.transAxes, ha="center", va="center", fontsize="large",
            color="grey")


def _block_size_label(block_bytes: int) -> str:
    if block_bytes >= 1024 and block_bytes % 1024 == 0:
        return f"{block_bytes // 1024} KB"
    return f"{block_bytes} B"


def _points(data: dict[str, Any]) -> list[dict[str, Any]]:
    points = data.get("points") if isinstance(data, dict) else None
    if not points:
        raise ValueError("fio_sweep data has no 'points'; expected characterize_device()'s result")
    return points


def _primary_engine(data: dict[str, Any], points: list[dict[str, Any]]) -> str:
    return data.get("primary_engine") or data.get("ceiling", {}).get("engine") or points[0]["engine"]


def _one_sample(data: dict) -> str:
    """A legend note that every point is one fio run of ``runtime_s`` seconds, which a stall or
    the drive's drift moves (the replay compares with its own fio run, not this one)."""
    runtime = (data.get("sizes") or {}).get("runtime_s")
    return f"\n(one {runtime:g}-s fio run a point; the replay runs its own)" if finite(runtime) else ""


def _log2_ticks(ax, values: list[int], labels: list[str]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(values, labels)
    ax.minorticks_off()


@figure("fio_bandwidth_vs_block_size")
def bandwidth_vs_block_size(data: dict[str, Any]):
    """Bandwidth (MB/s, 10^6 bytes/s) against block size, one line per queue depth,
    for the engine that swept the full grid. A value that is not finite is a gap, never 0;
    a line without any finite value says so in the legend, and a figure without any says
    "no finite measurement" across the axes."""
    import seaborn as sns

    points = _points(data)
    engine = _primary_engine(data, points)
    grid = [point for point in points if point["engine"] == engine]
    queue_depths = sorted({point["queue_depth"] for point in grid})
    block_sizes = sorted({point["block_bytes"] for point in grid})
    colors = sns.color_palette("viridis", n_colors=len(queue_depths))

    fig, ax = new_axes()
    drawn = 0
    for color, queue_depth in zip(colors, queue_depths):
        line = sorted((p for p in grid if p["queue_depth"] == queue_depth), key=lambda p: p["block_bytes"])
        values = [_value(p["bandwidth_bytes_per_s"], 1e6) for p in line]
        shown = sum(not math.isnan(v) for v in values)
        drawn += shown
        ax.plot(
            [p["block_bytes"] for p in line],
            values,
            marker="o",
            markersize=3.5,
            color=color,
            label=f"QD {queue_depth}" + ("" if shown else f" ({NO_FINITE})"),
        )
    _log2_ticks(ax, block_sizes, [_block_size_label(size) for size in block_sizes])
    ax.set_xlabel("Block size (bytes per read)")
    ax.set_ylabel("Bandwidth (MB/s)")
    if drawn:
        ax.set_ylim(bottom=0)
        ax.legend(fontsize="small", frameon=False)
    else:
        _mark_empty(ax, block_sizes)
    ax.set_title(f"fio randread{_on_drive(data)}, direct I/O, {engine}", fontsize="medium")
    return fig


@figure("fio_iops_vs_queue_depth")
def iops_vs_queue_depth(data: dict[str, Any]):
    """Thousands of 4 KB reads per second against queue depth, one line per engine,
    with the 4 KB ceiling point (QD32 or the nearest below) marked. The title names each
    configured engine the sweep skipped, with its reason shortened ("not run: ..."); values
    that are not finite are handled as in :func:`bandwidth_vs_block_size`."""
    import seaborn as sns

    points = _points(data)
    engines = list(dict.fromkeys(point["engine"] for point in points if point["block_bytes"] == 4096))
    if not engines:
        raise ValueError("fio_sweep data has no 4096-byte points to plot IOPS against queue depth")
    colors = sns.color_palette("colorblind", n_colors=len(engines))

    fig, ax = new_axes()
    queue_depths: set[int] = set()
    drawn = 0
    for color, engine in zip(colors, engines):
        line = sorted(
            (p for p in points if p["engine"] == engine and p["block_bytes"] == 4096),
            key=lambda p: p["queue_depth"],
        )
        queue_depths.update(p["queue_depth"] for p in line)
        values = [_value(p["iops"], 1e3) for p in line]
        shown = sum(not math.isnan(v) for v in values)
        drawn += shown
        ax.plot(
            [p["queue_depth"] for p in line],
            values,
            marker="o",
            markersize=3.5,
            color=color,
            label=engine + ("" if shown else f" ({NO_FINITE})"),
        )
    ceiling = data.get("ceiling")
    if ceiling and finite(ceiling.get("iops")):
        ax.plot(
            [ceiling["queue_depth"]],
            [ceiling["iops"] / 1e3],
            marker="*",
            markersize=12,
            linestyle="none",
            color="black",
            label=f"the replay's ceiling: fio {ceiling['engine']} at its QD {ceiling['queue_depth']}, "
                  f"{ceiling['iops'] / 1e3:.1f} k" + _one_sample(data),
        )
    ticks = sorted(queue_depths)
    _log2_ticks(ax, ticks, [str(depth) for depth in ticks])
    ax.set_xlabel("Queue depth (reads in flight)")
    ax.set_ylabel("Throughput (thousand IOPS)")
    if drawn:
        ax.set_ylim(bottom=0)
        ax.legend(fontsize="small", frameon=False)
    else:
        _mark_empty(ax, ticks)
    note = _skipped_note(data)
    ax.set_title(f"fio randread{_on_drive(data)}, 4 KB blocks, direct I/O" + (f"\n{note}" if note else ""),
                 fontsize="medium" if not note else "small")
    return fig


