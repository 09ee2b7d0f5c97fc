"""Matplotlib plumbing shared by the report's figures: Agg backend, PNG bytes, closing."""
from __future__ import annotations

import io
import sys

import matplotlib

if "matplotlib.pyplot" not in sys.modules:
    matplotlib.use("Agg")  # no display needed; leave a backend someone chose alone

from matplotlib.figure import Figure

DPI = 110


def new_figure(width: float = 7.0, height: float = 4.0) -> Figure:
    """Return a figure that belongs to no pyplot state (nothing global to leak or close)."""
    return Figure(figsize=(width, height), layout="constrained")


def to_png(figure: Figure) -> bytes:
    """Return ``figure`` as PNG bytes, cropped to everything drawn (captions included)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", pad_inches=0.15,
                   metadata={"Software": None})
    return buffer.getvalue()


def to_svg(figure: Figure) -> bytes:
    """Return ``figure`` as SVG bytes (cropped like :func:`to_png`; no date, so reproducible)."""
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
