"""Progress bars for long work: shown on a terminal, quiet under asv, CI and pipes."""
from __future__ import annotations

import os
import sys


def show_progress(progress: bool | None = None) -> bool:
    """Return whether to draw a bar: ``progress`` if given, else only on a TTY outside asv/CI."""
    if progress is not None:
        return progress
    return sys.stderr.isatty() and not os.environ.get("ASV") and not os.environ.get("CI")


def progress_bar(total: int, desc: str, unit: str = "it", progress: bool | None = None):
    """Return a tqdm bar over ``total`` steps (disabled when :func:`show_progress` says so)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not show_progress(progress))
