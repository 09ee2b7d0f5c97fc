"""Registry of report figures.

An experiment declares its figures in its system's ``catalog.toml`` (name, title, paper
figure); the module ``impls.<system>.figures`` draws each with the :func:`figure` decorator.
The report discovers both, so a new experiment adds figures without touching the harness.

A figure function takes the ``data`` of its experiment's artifact (plain dicts and lists,
as the experiment returned them) and returns a matplotlib ``Figure``.
The report adds the caption that says whether the data were synthetic and where
they were measured.
"""
from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil
from pathlib import Path
from typing import Callable


@dataclasses.dataclass(frozen=True)
class FigureSpec:
    name: str
    artifact: str
    title: str
    system: str
    paper_figure: str
    requires: tuple[str, ...]
    draw: Callable


_DRAW: dict[str, Callable] = {}


def figure(name: str):
    """Register ``draw(data) -> matplotlib.figure.Figure`` as the drawing of report figure
    ``name``, which an experiment declares in its system's ``catalog.toml``
    (``["<system>.<what>".figures.<name>]``: title, paper figure). The figure is drawn from
    that experiment's artifact; the experiment's requirements say why it may be missing.
    """

    def register(draw: Callable) -> Callable:
        if name in _DRAW and _DRAW[name] is not draw:
            raise ValueError(f"figure {name!r} is registered twice")
        _DRAW[name] = draw
        return draw

    return register


def discover() -> tuple[dict[str, FigureSpec], dict[str, str]]:
    """Import every ``impls.<system>.figures`` module and join its drawings with the figures
    the experiments declare.

    Returns ``(figures by name, errors)``: a module that fails to import or lies in a folder
    that is not a package, a drawing no experiment declares and a declared figure nothing
    draws are reported in ``errors`` (by module or figure name); the other figures are still
    returned. A broken catalog raises :class:`impls.harness.experiments.ExperimentError`.
    """
    import impls
    from impls.harness import experiments

    errors: dict[str, str] = {}
    for stray in experiments.not_packages("figures", "figures.py"):
        errors[f"impls.{stray.parent.name}.figures"] = (
            f"{stray} is never imported: impls/{stray.parent.name} is not a package; "
            f"expected {stray.parent / '__init__.py'} (an empty file will do)")
    for module in pkgutil.iter_modules(impls.__path__):
        if not module.ispkg or module.name == "harness":
            continue
        name = f"impls.{module.name}.figures"
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:
                errors[name] = f"{type(err).__name__}: {err}"
        except Exception as err:  # noqa: BLE001 - one broken module must not hide the others
            errors[name] = f"{type(err).__name__}: {err}"
    declared = experiments.figure_declarations()
    known = experiments.discover()
    specs: dict[str, FigureSpec] = {}
    for name, draw in _DRAW.items():
        decl = declared.get(name)
        if decl is None:
            errors[name] = f"figure {name!r} is drawn in {draw.__module__} but no catalog.toml declares it"
            continue
        entry = known[decl.experiment]
        specs[name] = FigureSpec(name, entry.artifact, decl.title, entry.system, decl.paper_figure,
                                 entry.requires, draw)
    for name, decl in declared.items():
        if name not in _DRAW and f"impls.{decl.experiment.split('.')[0]}.figures" not in errors:
            errors[name] = (f"figure {name!r} is declared by {decl.experiment} but nothing draws it "
                            f"({_drawing_hint(name, decl.experiment.split('.')[0])})")
    return specs, errors


def _drawing_hint(name: str, system: str) -> str:
    """Where a drawing of figure ``name`` of ``system`` is looked for, as a question."""
    import impls

    if any((Path(root) / system / "figures" / "__init__.py").is_file() for root in impls.__path__):
        return f"is its module imported in impls/{system}/figures/__init__.py?"
    return f"is it drawn with @figure({name!r}) in impls/{system}/figures.py?"


def finite(value: object) -> bool:
    """True when ``value`` is a finite number: what a figure can draw (None, NaN, infinities
    and booleans are not; a drawing shows them as a gap, never as 0)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def new_axes(width: float = 5.0, height: float = 3.4, ncols: int = 1):
    """Return ``(figure, axes)`` in the suite's style: no pyplot state, light grid, despined.

    ``axes`` is one Axes for ``ncols == 1``, else a list of them.
    """
    import seaborn as sns
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    for ax in axes:
        ax.grid(True, which="major", linewidth=0.5, alpha=0.5)
        sns.despine(ax=ax)
    return fig, axes[0] if ncols == 1 else axes


def plain_log_x(ax) -> None:
    """Put ``ax``'s x axis on a log scale with ticks at 1, 2 and 5 × 10^k labelled as plain
    numbers (matplotlib's default labels the minor ticks of a short range in overlapping
    scientific notation)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def grouped_bars(ax, groups: list, series: list[tuple], **tick_kw):
    """Draw each of ``series`` as one bar per group, side by side within each group (together
    0.8 of the space between groups), and label the x ticks with ``groups``.

    ``series``: ``(label, values)`` or ``(label, values, bar_kwargs)``, one value per group
    (NaN: no bar). ``tick_kw`` goes to ``set_xticks`` (e.g. ``fontsize``, ``rotation``).
    Returns the groups' x positions (0, 1, ...), for annotations.
    """
    import numpy as np

    x = np.arange(len(groups))
    width = 0.8 / max(len(series), 1)
    for i, (label, values, *extra) in enumerate(series):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=label, **(extra[0] if extra else {}))
    ax.set_xticks(x, [str(g) for g in groups], **tick_kw)
    return x
