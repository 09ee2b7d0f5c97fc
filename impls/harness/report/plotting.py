"""Matplotlib plumbing shared by the report's figures: Agg backend, PNG bytes, closing, and
what a drawn figure holds (its finite data points, legend entries of series with none)."""
from __future__ import annotations

import io
import math
import sys

import matplotlib
import numpy as np

if "matplotlib.pyplot" not in sys.modules:
    matplotlib.use("Agg")  # no display needed; leave a backend someone chose alone

from matplotlib.artist import Artist
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

DPI = 110
FIGURES_PER_WORKER = 8  # a worker imports matplotlib and pandas first (~2 s): give it at least this many
PARALLEL_FROM = 2 * FIGURES_PER_WORKER  # fewer figures make no two workers' worth: drawn in this process
LEGEND_LINE = 60  # characters a line of a long legend entry holds (:func:`wrapped`)
SAYS_EMPTY = "no finite"  # in a legend label: the figure names a series it has no point of ("(no finite value)")


def new_figure(width: float = 7.0, height: float = 4.0) -> Figure:
    """Return a figure that belongs to no pyplot state (nothing global to leak or close)."""
    return Figure(figsize=(width, height), layout="constrained")


_SCALES = {
    "seconds": [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")],
    "bytes": [(2.0 ** 30, "GiB"), (2.0 ** 20, "MiB"), (2.0 ** 10, "KiB"), (1.0, "B")],
}


def display_scale(unit: str, values) -> tuple[float, str]:
    """Return (divisor, unit label) that keeps times and sizes readable (1.0 and ``unit``
    otherwise) for ``values`` (a pandas Series)."""
    largest = values.abs().max()
    if unit not in _SCALES or not np.isfinite(largest) or largest == 0:
        return 1.0, unit
    for divisor, label in _SCALES[unit]:
        if largest >= divisor:
            return divisor, label
    return _SCALES[unit][-1]


def commit_axis(ax, commits, max_labels: int) -> None:
    """Give ``ax`` one x position per row of ``commits`` (a frame with ``commit`` and ``date``),
    at most ``max_labels`` of them labelled (hash and date; the last always), and a grid."""
    n = len(commits)
    step = max(1, math.ceil(n / max_labels))
    ticks = sorted(set(range(0, n, step)) | {n - 1})
    labels = [f"{commits['commit'].iloc[i][:8]}\n{commits['date'].iloc[i]:%Y-%m-%d}" for i in ticks]
    ax.set_xticks(ticks, labels, fontsize=7, rotation=45 if len(ticks) > 6 else 0,
                  ha="right" if len(ticks) > 6 else "center")
    ax.set_xlim(-0.5, n - 0.5)
    ax.grid(True, alpha=0.3)


def plot_marked(ax, x, y, label: str, kinds: list[str] | None, markers: dict[str, str],
                cuts: list[int] = ()) -> set[str]:
    """Plot one series on ``ax``: a line with round markers at its plain points and, at each
    finite point whose kind (``kinds``, per point; "" plain) is a key of ``markers``, that
    marker in the line's colour, larger (a line of its own, labelled "_<kind>" so no legend
    lists it). No line joins a point before an index of ``cuts`` to one from it on (each piece
    is a line of the series' colour; the first carries ``label``). Returns the kinds drawn;
    without ``kinds`` the series is drawn as one plain line."""
    kinds = [k if k in markers and math.isfinite(v) else "" for k, v in zip(kinds or [""] * len(y), y)]
    plain = [i for i, kind in enumerate(kinds) if not kind]
    edges = [0, *sorted(c for c in set(cuts) if 0 < c < len(y)), len(y)]
    line = None
    for start, end in zip(edges, edges[1:]):
        mine = [i - start for i in plain if start <= i < end]
        line, = ax.plot(x[start:end], y[start:end], marker="o", markersize=4, linewidth=1.2,
                        label=label if line is None else "_piece",
                        color=None if line is None else line.get_color(),
                        markevery=mine if len(mine) < end - start else None)
    drawn = set()
    for kind, marker in markers.items():
        at = [i for i, k in enumerate(kinds) if k == kind]
        if at:
            ax.plot([x[i] for i in at], [y[i] for i in at], linestyle="none", marker=marker, markersize=7,
                    color=line.get_color(), label=f"_{kind}")
            drawn.add(kind)
    return drawn


def _finite_rows(xy) -> int:
    """The number of (x, y) rows of ``xy`` with both coordinates finite (masked: not finite)."""
    xy = np.ma.filled(np.ma.asarray(xy, dtype=float), np.nan).reshape(-1, 2)
    return int(np.isfinite(xy).all(axis=1).sum())


def finite_points(artist: Artist, ax) -> int | None:
    """The finite data points ``artist`` draws on ``ax``: a line's vertices, a patch (a bar) or a
    path of a collection with a finite vertex (1 each), a scatter's markers, an image's pixels.
    None for an artist that is not placed in data coordinates (a reference line or span across
    the axes: axhline, axvspan), and for a line given no point at all (``plot([], [])``: a
    legend key that explains the figure), which show no data."""
    if isinstance(artist, AxesImage):
        return int(np.isfinite(np.ma.filled(np.ma.asarray(artist.get_array(), dtype=float), np.nan)).sum())
    in_data = Artist.get_transform(artist) == ax.transData
    if isinstance(artist, Line2D):
        return _finite_rows(artist.get_xydata()) if in_data and len(artist.get_xydata()) else None
    if isinstance(artist, Patch):
        return min(1, _finite_rows(artist.get_patch_transform().transform(artist.get_path().vertices))) \
            if in_data else None
    if isinstance(artist, Collection):
        if artist.get_offset_transform() == ax.transData:     # scatter: one marker per offset
            return _finite_rows(artist.get_offsets())
        return sum(min(1, _finite_rows(path.vertices)) for path in artist.get_paths()) if in_data else None
    return None


def _drawn_artists(ax) -> list[Artist]:
    """The visible lines, patches, collections and images of ``ax``."""
    return [a for a in (*ax.lines, *ax.patches, *ax.collections, *ax.images) if a.get_visible()]


def finite_count(figure: Figure) -> int:
    """The finite data points (:func:`finite_points`) drawn on ``figure``'s visible axes; 0
    when it shows no data at all (text, reference lines and empty axes are no data)."""
    return sum(finite_points(a, ax) or 0 for ax in figure.axes if ax.get_visible() for a in _drawn_artists(ax))


def empty_labels(axes: list) -> set[str]:
    """The legend labels on ``axes`` whose every labelled line, patch, collection or container
    (bars, error bars) was given points and has no finite one (a reference line across the
    axes, or a line given no point, a legend key, is never empty)."""
    counts: dict[str, list[int | None]] = {}
    for ax in axes:
        for artist in _drawn_artists(ax):
            counts.setdefault(artist.get_label(), []).append(finite_points(artist, ax))
        for container in ax.containers:
            found = [finite_points(c, ax) for c in container.get_children()]
            counts.setdefault(container.get_label(), []).append(None if None in found else sum(found))
    return {label for label, found in counts.items()
            if label and not str(label).startswith("_") and all(n == 0 for n in found)}


def drop_empty_legend_entries(figure: Figure) -> Figure:
    """Hide every legend entry of ``figure`` that names only series without a finite point
    (:func:`empty_labels`: of its axes for an axes' legend, of all axes for the figure's),
    unless the entry says so itself (its label holds :data:`SAYS_EMPTY`); a legend left with no entry is
    hidden. Returns ``figure``."""
    legends = [(ax.get_legend(), [ax]) for ax in figure.axes if ax.get_legend() is not None]
    legends += [(legend, figure.axes) for legend in figure.legends]
    for legend, axes in legends:
        empty = empty_labels(axes)
        entries = [entry for column in legend._legend_handle_box.get_children() for entry in column.get_children()]
        for entry, text in zip(entries, legend.texts):     # one entry per text, in order
            if text.get_text() in empty and SAYS_EMPTY not in text.get_text():
                entry.set_visible(False)
                text.set_visible(False)
        if not any(text.get_visible() for text in legend.texts):
            legend.set_visible(False)
    return figure


def marker_handle(marker: str) -> Line2D:
    """A legend entry that shows ``marker`` alone (black outline), for a legend's handles."""
    return Line2D([], [], linestyle="none", marker=marker, markersize=7, color="black", markerfacecolor="none")


def literal_text(figure: Figure) -> Figure:
    """Make every text of ``figure`` but the axes' tick labels and offsets literal: titles,
    labels, legends and notes hold data (run, dataset, device names), where a "$" is a
    dollar, never matplotlib's math notation (which would fail to parse, or drop characters).
    Tick labels keep it: a log axis writes 10^k with it. Returns ``figure``."""
    from matplotlib.text import Text

    ticks = set()
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            ticks.add(id(axis.offsetText))
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                ticks.update((id(tick.label1), id(tick.label2)))
    for text in figure.findobj(Text):
        if id(text) not in ticks:
            text.set_parse_math(False)
    return figure


def to_png(figure: Figure) -> bytes:
    """Return ``figure`` as PNG bytes, cropped to everything drawn (captions included), its
    text literal (:func:`literal_text`)."""
    literal_text(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", pad_inches=0.15,
                   metadata={"Software": None})
    return buffer.getvalue()


def to_svg(figure: Figure) -> bytes:
    """Return ``figure`` as SVG bytes (cropped and literal like :func:`to_png`; no date, so reproducible)."""
    literal_text(figure)
    buffer = io.BytesIO()
    # element ids hash the content with this salt, not a random one, so equal figures give equal bytes
    with matplotlib.rc_context({"svg.hashsalt": "dlsysbench"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight", pad_inches=0.15,
                       metadata={"Date": None, "Creator": None})
    return buffer.getvalue()


def close(figure: object) -> None:
    """Release ``figure`` if pyplot tracks it (figures drawn with plt.subplots are)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None and isinstance(figure, Figure):
        pyplot.close(figure)


def draw_all(draw, calls: list[tuple], workers: int | None = None) -> list:
    """``[draw(*call) for call in calls]``, in order: in up to ``workers`` spawned processes
    (default: one per usable core) of at least ``FIGURES_PER_WORKER`` calls each when that
    makes two or more (``PARALLEL_FROM`` calls on), else in this one. ``draw`` must be a
    module-level function and the calls picklable; what it returns must not depend on the
    process."""
    if workers is None:
        from impls.harness.grid import usable_cores
        workers = usable_cores()
    workers = min(workers, len(calls) // FIGURES_PER_WORKER)
    if workers <= 1:
        return [draw(*call) for call in calls]
    import multiprocessing
    import warnings
    from concurrent.futures import ProcessPoolExecutor

    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            return list(pool.map(draw, *zip(*calls), chunksize=max(1, len(calls) // (4 * workers))))
    except Exception as err:  # noqa: BLE001 - a broken pool (a __main__ read from stdin, which spawned
        # workers cannot import; a worker killed) or a call that does not pickle (a lambda as draw
        # function): draw here, where an error of the drawing itself is raised again
        warnings.warn(f"drawing figures in worker processes failed ({type(err).__name__}: {err}); drawing "
                      "them here", RuntimeWarning, stacklevel=2)
        return [draw(*call) for call in calls]


def wrapped(text: str, width: int = LEGEND_LINE) -> str:
    """``text`` broken into lines of at most ``width`` characters at spaces (a word longer
    than that keeps a line of its own): a legend entry that would otherwise be wider than
    the figure, which makes matplotlib's constrained layout give up."""
    import textwrap

    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)
