"""Registry of report figures.

Each system declares its figures in a module named ``impls.<system>.figures`` with
the :func:`figure` decorator; the report discovers those modules, so a new
experiment adds figures without touching the harness.

A figure function takes the ``data`` of the artifact it names (plain dicts and
lists, as the experiment returned them) and returns a matplotlib ``Figure``.
The report adds the caption that says whether the data were synthetic and where
they were measured.
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
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


_REGISTRY: dict[str, FigureSpec] = {}


def figure(name: str, *, artifact: str, title: str, system: str, paper_figure: str = "",
           requires: tuple[str, ...] = ()):
    """Register ``draw(data) -> matplotlib.figure.Figure`` as report figure ``name``.

    ``requires`` names capabilities (see :mod:`impls.harness.capabilities`) without
    which the artifact cannot exist; the report gives their reason when it is missing.
    """

    def register(draw: Callable) -> Callable:
        if name in _REGISTRY and _REGISTRY[name].draw is not draw:
            raise ValueError(f"figure {name!r} is registered twice")
        _REGISTRY[name] = FigureSpec(name, artifact, title, system, paper_figure, tuple(requires), draw)
        return draw

    return register


def discover() -> tuple[dict[str, FigureSpec], dict[str, str]]:
    """Import every ``impls.<system>.figures`` module.

    Returns ``(figures by name, errors by module)``: a module that fails to import
    is reported in ``errors`` and the other systems' figures are still returned.
    """
    import impls

    errors: dict[str, str] = {}
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
    return dict(_REGISTRY), errors


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
