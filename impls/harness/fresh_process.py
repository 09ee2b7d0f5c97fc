"""Run one function in a fresh child process: its memory, peak RSS and thread pools are its own.

The child is forked from multiprocessing's fork server, which imported torch and numba
once (their import is most of a spawned child's start-up), where the platform has a fork
server and this process's environment is still the one the server started with: the
server's children inherit its environment, and torch and numba read theirs at import.
Anywhere else the child is spawned. Either way the child starts with no thread pool
running and sees this process's current working directory and ``sys.path``.
"""
from __future__ import annotations

import multiprocessing
import os
from multiprocessing import forkserver
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable

PRELOAD = ("torch", "numba")

_server_environ: dict[str, str] | None = None  # os.environ when this module started the fork server


def context() -> multiprocessing.context.BaseContext:
    """The start method for the next child: "forkserver" (preloading :data:`PRELOAD`) while
    the environment is the one the server started with, else "spawn"."""
    global _server_environ
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    environ = dict(os.environ)
    if _server_environ is None:
        if _server_running():  # started by someone else: its environment and preload are unknown
            return multiprocessing.get_context("spawn")
        server = multiprocessing.get_context("forkserver")
        server.set_forkserver_preload(list(PRELOAD))
        forkserver.ensure_running()
        _server_environ = environ
        return server
    return multiprocessing.get_context("forkserver" if environ == _server_environ else "spawn")


def _server_running() -> bool:
    """Whether multiprocessing's fork server has been started in this process (its pid is
    private state: where it cannot be read, the server counts as started)."""
    server = getattr(forkserver, "_forkserver", None)
    return getattr(server, "_forkserver_pid", 0) is not None


def call(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a fresh child process (see the module docstring); returns what it
    returns and raises what it raises. ``fn`` must be a module-level function and ``args``
    picklable."""
    with ProcessPoolExecutor(max_workers=1, mp_context=context()) as pool:
        return pool.submit(fn, *args).result()
