"""Progress of long work: bars on a terminal, a followable log under asv, quiet elsewhere.

``DLSYSBENCH_PROGRESS_LOG`` names a file that :func:`log` lines and progress bars are
appended to (``scripts/run_suite.py`` sets it and prints what arrives, since asv captures
a benchmark's own output until its setup ends). Without it, bars show on a terminal only,
outside asv and CI.
"""
from __future__ import annotations

import os
import sys
import time

LOG_VARIABLE = "DLSYSBENCH_PROGRESS_LOG"


def log_path() -> str | None:
    """The progress log named by ``DLSYSBENCH_PROGRESS_LOG``, or None."""
    return os.environ.get(LOG_VARIABLE) or None


def show_progress(progress: bool | None = None) -> bool:
    """Return whether to draw a bar: ``progress`` if given, else on a TTY outside asv/CI or into the log."""
    if progress is not None:
        return progress
    if log_path():
        return True
    return sys.stderr.isatty() and not os.environ.get("ASV") and not os.environ.get("CI")


def log(message: str) -> None:
    """Append ``[HH:MM:SS] message`` to the progress log; else print it on stderr outside asv."""
    line = f"[{time.strftime('%H:%M:%S')}] {message}\n"
    path = log_path()
    if path:
        try:
            with open(path, "a") as handle:
                handle.write(line)
        except OSError:
            pass  # progress is a courtesy: never fail the work for it
    elif not os.environ.get("ASV"):
        sys.stderr.write(line)


def _thread_lock(tqdm_class) -> None:
    """Give tqdm a thread lock in place of the multiprocessing one it makes by default: the
    suite's bars are one process's each, and a named semaphore left by a child process that
    was stopped (Ctrl-C) made the resource tracker warn of a leak after the one-line error."""
    import threading

    if not isinstance(getattr(tqdm_class, "_lock", None), type(threading.RLock())):
        tqdm_class.set_lock(threading.RLock())


def progress_bar(total: int, desc: str, unit: str = "it", progress: bool | None = None):
    """Return a tqdm bar over ``total`` steps (disabled when :func:`show_progress` says so).

    With a progress log and no explicit ``progress``, the bar is written to the log at most
    every 10 s.
    """
    from tqdm.auto import tqdm

    _thread_lock(tqdm)
    path = log_path()
    if progress is None and path:
        try:
            handle = open(path, "a")
        except OSError:
            return tqdm(total=total, desc=desc, unit=unit, disable=True)
        bar = tqdm(total=total, desc=desc, unit=unit, file=handle, mininterval=10, ascii=True)
        close = bar.close

        def close_both():
            close()
            handle.close()

        bar.close = close_both
        return bar
    return tqdm(total=total, desc=desc, unit=unit, disable=not show_progress(progress))
