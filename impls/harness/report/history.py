"""History figures: every tracked scalar (track_* and time_* benchmarks) across commits.

The x axis holds every commit of the machine in git's order (by date where git cannot tell); each
parameter combination is a line. Up to ``MAX_SERIES_PER_PANEL`` lines share one
plot; beyond that the combinations are split into small multiples by the first
parameter (a single parameter: into consecutive runs of its values), at most
``MAX_PANELS`` panels of ``MAX_SERIES_PER_PANEL`` lines each, and the titles say
how many series were left out. Series with a step (below) are drawn first, and panels holding
one are kept first, so a cut leaves out quiet series before it leaves out a step.

Steps (:mod:`history_steps`): every series, drawn or not, goes through asv's ``step_detect``; every
boundary between two fitted levels is a step, marked at the first commit of the new level
and judged with the benchmark's declared direction (:mod:`directions`): a regression (red)
when the level moved the worse way, an improvement (green) the better way, a change (grey)
for flags, context and undeclared numbers. asv's own ``detect_regressions`` only looks
upward. Steps are looked for within one benchmark version and one environment only: where
the version changes (the numbers mean something else from there on) or the environment
does (a plain ``asv run``'s virtualenv beside the project's ``.venv``), the series is cut
and a "new version" or "new environment" line drawn, never a regression or an improvement.

Bounds: a point of a benchmark declaring ``bounded_by`` whose flag says it is only a bound
(:func:`compare.bound_kind`, the flags ``make compare`` reads) is drawn with its own marker,
an upward triangle for a lower bound (">= value"), a downward one for an upper bound, a
diamond where the flags were not measured, each named in the legend with the flag's unit.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from impls.harness.report import compare, history_lost, plotting
from impls.harness.report.directions import JUDGED, direction_of
from impls.harness.report.history_steps import (CUTS, KIND_ORDER, NEW_ENVIRONMENT, NEW_VERSION,  # noqa: F401
                                                STEP_COLOURS, Step, kind_rank, series_steps)
from impls.harness.report.noise import RELATIVE, Noise
from impls.harness.report.runs import environment
from impls.harness.report.paper_figures import (MEASURED_LABEL, NOT_KNOWN_LABEL, SYNTHETIC_LABEL, safe_file_stem,
                                                 stamp_caption)
from impls.harness.report.provenance import NOT_SYNTHETIC, SYNTHETIC, data_kind
from impls.harness.report.results import commits as commit_table
from impls.harness.report.results import flag_meaning, newest_per_point

HISTORY_TYPES = ("track", "time")
MAX_SERIES_PER_PANEL = 8
MAX_PANELS = 12
MAX_TICK_LABELS = 24


BOUND_MARKERS = {compare.LOWER_BOUND: "^", compare.UPPER_BOUND: "v", compare.UNKNOWN_BOUND: "d"}


@dataclasses.dataclass(frozen=True)
class HistoryFigure:
    """One benchmark's history: the PNG, the commits on its x axis, and how many lines it drew."""

    benchmark: str
    unit: str
    commits: tuple[str, ...]
    series: int
    shown: int
    png: bytes
    direction: str = "unknown"
    steps: tuple[Step, ...] = ()
    svg: bytes | None = None
    data: str | None = None  # synthetic / not synthetic / None (not known): :mod:`provenance`

    @property
    def file_name(self) -> str:
        return f"history-{safe_file_stem(self.benchmark)}.png"


@dataclasses.dataclass(frozen=True)
class _Series:
    label: str
    params: dict[str, Any]
    values: list[float]  # one per commit on the x axis, NaN where absent
    param_label: str = ""  # asv's, as the noise thresholds are keyed ("" when unparameterised)
    versions: list[str] | None = None  # the benchmark version of each point ("" where unknown)
    bounds: list[str] | None = None  # per point: its bound kind (compare.LOWER_BOUND, ...; "" a value)
    environments: list[str] | None = None  # each point's environment (runs.environment; "" unknown)


def _series(rows: pd.DataFrame, order: list[str]) -> list[_Series]:
    position = {commit: i for i, commit in enumerate(order)}
    found = []
    for label, group in rows.groupby("param_label", sort=False):
        values = [math.nan] * len(order)
        versions, envs = [""] * len(order), [""] * len(order)
        group_versions = group["version"] if "version" in group else [""] * len(group)
        group_envs = group["env_name"] if "env_name" in group else [""] * len(group)
        for commit, value, version, env in zip(group["commit"], group["value"], group_versions, group_envs):
            values[position[commit]] = value
            versions[position[commit]] = str(version or "")
            envs[position[commit]] = environment(str(env)) if env else ""
        found.append(_Series(label or "value", group["params"].iloc[0], values, label, versions, None, envs))
    return found


def _panels(series: list[_Series], stepped: Callable[[_Series], bool] = lambda item: False
            ) -> list[tuple[str, list[_Series]]]:
    """Return (panel title, its series) pairs; one untitled panel when few enough series. Of
    more than ``MAX_PANELS`` panels, those holding a series ``stepped`` says has a step are kept
    first (then the others, each kind in order)."""
    if len(series) <= MAX_SERIES_PER_PANEL:
        return [("", series)]
    names = list(series[0].params)
    first = names[0] if names else None
    if len(names) >= 2 and len({repr(item.params.get(first)) for item in series}) > 1:
        groups: dict[str, list[_Series]] = {}
        for item in series:
            groups.setdefault(f"{first}={item.params.get(first)!r}", []).append(item)
        panels = list(groups.items())
    else:   # one parameter: consecutive runs of its values, one panel each
        size = MAX_SERIES_PER_PANEL
        panels = [(f"series {start + 1}–{min(start + size, len(series))} of {len(series)}",
                   series[start:start + size]) for start in range(0, len(series), size)]
    if len(panels) > MAX_PANELS:
        kept = set(sorted(range(len(panels)), key=lambda i: not any(map(stepped, panels[i][1])))[:MAX_PANELS])
        panels = [panel for i, panel in enumerate(panels) if i in kept]
    return panels


def _strip(label: str, panel: str) -> str:
    parts = [p for p in label.split(", ") if p != panel]
    return ", ".join(parts) or label


def _bound_kinds(item: _Series, flag_rows: pd.DataFrame, flags: tuple[str | None, str | None],
                 order: list[str]) -> list[str]:
    """Per commit of ``order``, :func:`compare.bound_kind` of ``item``'s value there from its
    bound flags (``flags``, asv names; their rows in ``flag_rows``); "" where it has no value."""
    mine = flag_rows[(flag_rows["param_label"] == item.param_label) & flag_rows["value"].notna()]
    value_at = {(b, c): v for b, c, v in zip(mine["benchmark"], mine["commit"], mine["value"])}
    return [compare.bound_kind(lambda flag, commit=commit: value_at.get((flag, commit)), flags)
            if np.isfinite(v) else "" for commit, v in zip(order, item.values)]


def bound_labels(flag_rows: pd.DataFrame, flags: tuple[str | None, str | None] | None) -> dict[str, str]:
    """The legend text of each bound kind: "lower bound (≥ value: <why>)" with <why> the lower
    flag's unit in ``flag_rows`` less its "1 = " (the newest row's), the same for the upper
    flag, and one for a point whose flags were not measured."""
    found = {compare.UNKNOWN_BOUND: "bound of either kind (its bound flags were not measured)"}
    for flag, kind, sign in zip(flags or (), (compare.LOWER_BOUND, compare.UPPER_BOUND), ("≥", "≤")):
        why = flag_meaning(flag_rows, flag)
        found[kind] = f"{kind} bound ({sign} value" + (f": {why})" if why else ")")
    return found


def history_figure(rows: pd.DataFrame, commits: pd.DataFrame,
                   direction: str = "unknown", noise: Noise | None = None,
                   data: str | None = None, flag_rows: pd.DataFrame | None = None,
                   flags: tuple[str | None, str | None] | None = None,
                   lost: tuple[dict[str, frozenset[str]], str] | None = None,
                   scale: str = RELATIVE) -> tuple[Figure, int, int]:
    """Return (figure, number of series, number drawn) for one benchmark's ``rows``, stamped
    with the kind of its ``data`` (:mod:`provenance`: synthetic, not, or None: not known).
    A value of a judged ``direction`` that no run can measure on ``scale``
    (:func:`compare.not_a_measurement`: a time of 0, a negative size) is neither drawn nor
    judged for steps, as ``make compare`` judges no move to or from it; the title counts such
    values and says the first one's why.

    ``commits`` (see :func:`results.commits`) fixes the x axis; every commit in it
    gets a tick position even where this benchmark has no value. Detected steps
    (:func:`series_steps`) are marked; ``figure.steps`` lists them as :class:`Step`. A commit
    git does not know (``placed`` False) is drawn but left out of the steps: its place
    in the order is not known.
    ``lost``: (the commits where each point lost its value the worst way, by param label;
    the benchmark's words for it), drawn as crosses (:func:`history_lost.mark_lost`).
    ``flags``: the benchmark's (lower, upper) bound-flag benchmarks (``bounded_by``) and
    ``flag_rows`` their rows: a step from or to a bound is judged on what the bounds prove, and
    a point that is only a bound is drawn with its own marker (:data:`BOUND_MARKERS`; the legend
    says what each means, :func:`bound_labels`).
    """
    order = commits["commit"].tolist()
    placed = (commits["placed"].astype(bool).tolist() if "placed" in commits.columns
              else [True] * len(order))
    rows = newest_per_point(rows, ("commit", "benchmark", "param_label"))
    rows, impossible = _measurements_only(rows, scale) if direction in JUDGED else (rows, [])
    all_series = _series(rows, order)
    if flags is not None:
        flag_rows = (newest_per_point(flag_rows, ("commit", "benchmark", "param_label"))
                     if flag_rows is not None and not flag_rows.empty else rows.iloc[0:0])
        all_series = [dataclasses.replace(item, bounds=_bound_kinds(item, flag_rows, flags, order))
                      for item in all_series]
    marks = bound_labels(flag_rows, flags) if flags is not None else {}
    benchmark = str(rows["benchmark"].iloc[0])
    found_of: dict[int, list] = {}      # every series' steps, drawn or not
    for item in all_series:
        measured = noise.get(benchmark, item.param_label) if noise else None
        judged = [v if known else math.nan for v, known in zip(item.values, placed)]
        found_of[id(item)] = series_steps(judged, direction, measured, item.versions, item.bounds,
                                          item.environments)

    def stepped(item: _Series) -> bool:
        return any(kind not in CUTS for _, _, _, kind in found_of[id(item)])

    def worst(item: _Series) -> int:      # a regression drawn before an improvement, then a change
        return min((kind_rank(kind) for _, _, _, kind in found_of[id(item)]), default=len(KIND_ORDER))

    steps = [Step(item.label, order[at], before, after, kind)
             for item in all_series for at, before, after, kind in found_of[id(item)]]
    panels = _panels(all_series, stepped)
    divisor, unit_label = plotting.display_scale(str(rows["unit"].iloc[0]), rows["value"])
    columns = min(3, len(panels))
    lines = math.ceil(len(panels) / columns)
    figure = plotting.new_figure(4.4 * columns if len(panels) > 1 else 7.5, 3.2 * lines + 0.5)
    axes = figure.subplots(lines, columns, squeeze=False, sharey=True)
    shown = 0
    drawn_ids: set[int] = set()
    x = np.arange(len(order))
    for ax, (panel, members) in zip(axes.flat, panels):
        first = {id(item) for item in sorted(members, key=worst)[:MAX_SERIES_PER_PANEL]}
        drawn = [item for item in members if id(item) in first]     # in parameter order
        drawn_ids |= {id(item) for item in drawn}
        bound_kinds: set[str] = set()
        labelled: set[int] = set()      # one line and one label per axis and place of a cut
        for item in drawn:
            y = np.asarray(item.values, dtype=float) / divisor
            label = _strip(item.label, panel) + ("" if np.isfinite(y).any() else " (no values)")
            found = found_of[id(item)]
            cuts = [at for at, _, _, kind in found if kind in CUTS]   # no line joins two versions or environments
            bound_kinds |= plotting.plot_marked(ax, x, y, label, item.bounds, BOUND_MARKERS, cuts)
            if lost and lost[0].get(item.param_label) and history_lost.mark_lost(   # (commits by point, meaning)
                    ax, list(item.values), order, lost[0][item.param_label], divisor, ax.lines[-1].get_color(),
                    item.versions):
                bound_kinds.add(history_lost.LOST_MARKER)
            for at, before, after, kind in found:
                if kind not in CUTS:     # at the series' new level
                    ax.axvline(at - 0.5, color=STEP_COLOURS[kind], linestyle="--", linewidth=1)
                    ax.annotate(kind, (at - 0.5, after / divisor), fontsize=6, color=STEP_COLOURS[kind])
                elif at not in labelled:    # at the top, whichever series it cuts
                    labelled.add(at)
                    ax.axvline(at - 0.5, color=STEP_COLOURS[kind], linestyle=":", linewidth=1)
                    ax.annotate(kind, (at - 0.5, 0.98), xycoords=("data", "axes fraction"), fontsize=6,
                                color=STEP_COLOURS[kind], va="top")
        shown += len(drawn)
        left_out = len(members) - len(drawn)
        title = panel + (f" (showing {len(drawn)} of {len(members)})" if left_out else "")
        if title:
            ax.set_title(title, fontsize=8)
        plotting.commit_axis(ax, commits, MAX_TICK_LABELS)
        named = len(drawn) > 1 or bool(panel) or drawn[0].label != "value"
        if named or bound_kinds:
            handles, labels = ax.get_legend_handles_labels() if named else ([], [])
            for kind in (k for k in BOUND_MARKERS if k in bound_kinds):
                handles.append(plotting.marker_handle(BOUND_MARKERS[kind]))
                labels.append(marks[kind])
            if history_lost.LOST_MARKER in bound_kinds:
                handles.append(plotting.marker_handle(history_lost.LOST_MARKER))
                labels.append(f"no value: {lost[1] or 'its NaN'} (the worst outcome; at the level it had)")
            ax.legend(handles, [plotting.wrapped(label) for label in labels], fontsize=7,   # too wide: no axes
                      loc="center left" if len(panels) == 1 else "best",
                      bbox_to_anchor=(1.01, 0.5) if len(panels) == 1 else None, frameon=False)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(unit_label, fontsize=8)
    hidden = sum(1 for item in all_series if stepped(item) and id(item) not in drawn_ids)
    more = f" — {len(all_series) - shown} more series not shown" if shown < len(all_series) else ""
    if hidden:
        more += f", {hidden} of them with a step (listed with the figure)"
    if impossible:
        more += f"\n{len(impossible)} value(s) not drawn, not measurements: {impossible[0]}"
    figure.suptitle(f"{benchmark}{more}", fontsize=10)
    stamp_caption(figure, data_caption(data), data != NOT_SYNTHETIC)   # not known: marked as synthetic is
    figure.steps = steps
    return figure, len(all_series), shown


def _measurements_only(rows: pd.DataFrame, scale: str) -> tuple[pd.DataFrame, list[str]]:
    """``rows`` (one benchmark's) with every finite value no run can measure set to NaN, and why
    each was, in row order (:func:`compare.not_a_measurement`; an infinite value is not drawn
    either way)."""
    unit = str(rows["unit"].iloc[0]) if "unit" in rows and len(rows) else ""
    whys = [(i, compare.not_a_measurement(str(b), unit, float(v), scale))
            for i, b, v in zip(rows.index, rows["benchmark"], rows["value"]) if np.isfinite(v)]
    whys = [(i, why) for i, why in whys if why]
    if not whys:
        return rows, []
    rows = rows.copy()
    rows.loc[[i for i, _ in whys], "value"] = math.nan
    return rows, [why for _, why in whys]


def data_caption(data: str | None) -> str:
    """The line under a history figure that says on which data its numbers were measured."""
    return {SYNTHETIC: f"{SYNTHETIC_LABEL}: the experiment's inputs are generated",
            None: f"{NOT_KNOWN_LABEL} to this checkout (its benchmark names no experiment here)"}.get(
                data, f"{MEASURED_LABEL}: this machine, or a real data set")


def rendered_history(rows: pd.DataFrame, commits: pd.DataFrame, direction: str,
                     noise: Noise | None, data: str | None = None,
                     flag_rows: pd.DataFrame | None = None,
                     flags: tuple[str | None, str | None] | None = None,
                     lost: tuple[dict[str, frozenset[str]], str] | None = None,
                     scale: str = RELATIVE) -> tuple[bytes, bytes, int, int, tuple[Step, ...]]:
    """Return (PNG, SVG, series, drawn, steps) of :func:`history_figure` for one benchmark.

    Module-level and free of shared state, so a worker process can draw it.
    """
    figure, series, shown = history_figure(rows, commits, direction, noise, data, flag_rows, flags, lost, scale)
    try:
        return plotting.to_png(figure), plotting.to_svg(figure), series, shown, tuple(figure.steps)
    finally:
        plotting.close(figure)


def history_figures(frame: pd.DataFrame, directions: dict[str, str] | None = None,
                    noise: Noise | None = None, workers: int | None = None,
                    bounds: dict[str, tuple[str | None, str | None]] | None = None,
                    worst_missing: frozenset[str] = frozenset(),
                    missing: dict[str, str] | None = None, logs=None,
                    scales: dict[str, str] | None = None) -> list[HistoryFigure]:
    """Return a :class:`HistoryFigure` for every track_* and time_* benchmark in ``frame``
    that has at least one measured value, in benchmark-name order.

    ``directions`` (:func:`directions.declared_directions`) judges the steps; without it
    every step is a "change" unless asv's naming says lower is better. For a benchmark of
    ``bounds`` (:func:`directions.declared_bounds`) a step from or to a point that is only a
    bound (or whose flags were not measured) is judged as ``make compare`` judges it: a
    "change" where the bounds prove neither way. ``noise`` drops steps within each number's
    measured threshold, on the benchmark version it was measured on. ``workers``: processes
    that draw the figures (:func:`plotting.draw_all`); the figures do not depend on it.
    A benchmark of ``worst_missing`` that lost its value as ``make compare`` reads it
    (:func:`history_lost.lost_points`, with the machine's skip ``logs``) gets a cross there,
    named with its ``missing`` words. ``scales`` (:func:`directions.declared_scales`; relative
    where absent) says which values are no measurement (:func:`history_figure`).
    """
    directions, bounds = directions or {}, bounds or {}
    lost = history_lost.lost_points(frame, worst_missing, logs)
    tracked = frame[frame["type"].isin(HISTORY_TYPES)]
    if tracked.empty:
        return []
    commits = commit_table(frame)
    order = tuple(commits["commit"])
    todo = [(benchmark, rows, direction_of(benchmark, directions))
            for benchmark, rows in tracked.groupby("benchmark", sort=True)
            # never measured here (e.g. skipped for want of CUDA): listed as skipped instead
            if not rows["value"].isna().all()]
    kinds = [data_kind((benchmark,)) for benchmark, _, _ in todo]

    def flag_rows(benchmark: str) -> pd.DataFrame | None:
        flags = [f for f in bounds.get(benchmark, ()) if f]
        return frame[frame["benchmark"].isin(flags)] if flags else None

    drawn = plotting.draw_all(rendered_history, [
        (rows, commits, direction, noise, kind, flag_rows(benchmark), bounds.get(benchmark),
         (lost[benchmark], (missing or {}).get(benchmark, "")) if benchmark in lost else None,
         (scales or {}).get(benchmark, RELATIVE))
        for (benchmark, rows, direction), kind in zip(todo, kinds)], workers)
    return [HistoryFigure(benchmark, str(rows["unit"].iloc[0]), order, series, shown, png, direction, steps, svg,
                          kind)
            for (benchmark, rows, direction), (png, svg, series, shown, steps), kind in zip(todo, drawn, kinds)]
