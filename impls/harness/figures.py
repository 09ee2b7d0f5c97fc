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


def discover() -> dict[str, FigureSpec]:
    """Import every ``impls.<system>.figures`` module; return the registry by name."""
    import impls

    for module in pkgutil.iter_modules(impls.__path__):
        if module.ispkg and module.name != "harness":
            try:
                importlib.import_module(f"impls.{module.name}.figures")
            except ModuleNotFoundError as err:
                if err.name != f"impls.{module.name}.figures":
                    raise
    return dict(_REGISTRY)
