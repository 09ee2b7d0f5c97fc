"""Run one function in a fresh child process: its memory, peak RSS and thread pools are its own.

The child is forked from multiprocessing's fork server, which imported torch and numba
once (their import is most of a spawned child's start-up), where the platform has a fork
server, this module started it, and this process's environment is still the one it
started with: the server's children inherit its environment, and torch and numba read
theirs at import. Anywhere else the child is spawned. Either way the child starts with
no thread pool running and sees this process's current working directory and
``sys.path``; a forked child also inherits what else the server fixed when it started:
its standard streams, resource limits, umask and CPU affinity.

If this process is interrupted while it waits (an exception, e.g. a signal's), the child
is terminated before the exception goes on.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import traceback
from multiprocessing import forkserver
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
        try:
            forkserver.ensure_running()
        except OSError:
            return multiprocessing.get_context("spawn")
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
    returns and raises what it raises, with the child's traceback as a note. ``fn`` must
    be a module-level function, ``args`` and the result picklable. Raises
    :class:`ChildProcessError` when the child ends without an answer (killed, crashed)."""
    ctx = context()
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_run_in_child, args=(send, fn, args), name=getattr(fn, "__name__", "call"))
    try:
        child.start()
        send.close()
        try:
            outcome, value = receive.recv()
        except EOFError:
            child.join()
            raise ChildProcessError(f"the child process running {child.name} ended without an answer "
                                    f"(exit code {child.exitcode})") from None
        child.join()
    except BaseException:
        if child.is_alive():
            child.terminate()
            child.join()
        raise
    finally:
        send.close()
        receive.close()
    if outcome == "error":
        raise value
    return value


def _run_in_child(send, fn: Callable[..., Any], args: tuple) -> None:
    """The child's side of :func:`call`: send ``("ok", result)`` or ``("error", exception)``."""
    try:
        answer = ("ok", fn(*args))
    except BaseException as err:  # noqa: BLE001 - every ending goes back to the caller
        err.add_note("in the child process:\n" + "".join(traceback.format_exception(err)).rstrip())
        answer = ("error", err)
    try:
        if answer[0] == "error":
            pickle.loads(pickle.dumps(answer))  # an exception whose class will not rebuild it
        send.send(answer)
    except Exception as err:  # noqa: BLE001 - a result or exception that does not pickle
        send.send(("error", RuntimeError(f"{answer[0]} of {getattr(fn, '__name__', fn)!r} in the child "
                                         f"process could not be sent back ({type(err).__name__}: {err}): "
                                         f"{answer[1]!r}"[:2000])))
    finally:
        send.close()
