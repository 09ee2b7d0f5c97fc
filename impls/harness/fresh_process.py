"""Run one function in a fresh child process: its memory, peak RSS and thread pools are its own.

The child is forked from multiprocessing's fork server, which imported torch and numba
once (their import is most of a spawned child's start-up), where the platform has a fork
server, this module started it, and this process's environment is still the one it
started with: the server's children inherit its environment, and torch and numba read
theirs at import. Anywhere else the child is spawned. Either way the child starts with
no thread pool running and sees this process's current working directory and
``sys.path``; a forked child also inherits what else the server fixed when it started:
its standard streams, resource limits, umask and CPU affinity.

If this process is interrupted while it waits (any exception, e.g. a signal handler's),
the child is stopped before the exception goes on. A SIGINT or SIGTERM that comes while
the child starts is recorded and raised again once its pid is known, so that it cannot
land between the child's creation and that moment; a second one while it starts is
raised at once.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import reprlib
import signal
import threading
import traceback
from multiprocessing import forkserver
from typing import Any, Callable

PRELOAD = ("torch", "numba")
EXIT_GRACE_S = 30.0  # how long a child that has answered may take to exit before it is stopped
STOP_GRACE_S = 5.0   # how long a child has between SIGTERM and SIGKILL
# how long a child has to exit by itself when this process is interrupted (a Ctrl-C reaches the
# whole process group): stopped at once, it left its semaphores for the resource tracker to warn of
INTERRUPT_GRACE_S = 2.0
_HELD = (signal.SIGINT, signal.SIGTERM)

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
    :class:`ChildProcessError` when the child ends without an answer (killed, crashed) or
    by ``sys.exit`` (its ``exitcode``: the child's, None where it had not exited), and
    RuntimeError when its result or exception cannot come back."""
    ctx = context()
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_run_in_child, args=(send, fn, args), name=getattr(fn, "__name__", "call"))
    try:
        _start(child)
        send.close()
        try:
            outcome, value = receive.recv()
        except (EOFError, OSError):  # no answer, or half of one
            child.join(STOP_GRACE_S)
            how = (ending(child.exitcode) if child.exitcode is not None else   # not a signal of ours
                   f"it closed the pipe and had not exited {STOP_GRACE_S:g} s later: stopped")
            exitcode = child.exitcode
            _stop(child, 0)
            err = ChildProcessError(f"the child process running {child.name} ended without an answer ({how})")
            err.exitcode = exitcode      # None where it had not exited; -N: killed by signal N
            raise err from None
        _stop(child, EXIT_GRACE_S)
    except BaseException:
        if child.pid is not None:
            _stop(child, INTERRUPT_GRACE_S)
        raise
    finally:
        send.close()
        receive.close()
    if outcome == "error":
        raise value
    return value


def ending(exitcode: int | None) -> str:
    """How a child ended, from its ``exitcode``: "exit code N"; "killed by signal 9 (SIGKILL),
    most often the out-of-memory killer ..." for a negative one (other signals by name);
    "still running" for None."""
    if exitcode is None:
        return "still running"
    if exitcode >= 0:
        return f"exit code {exitcode}"
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        name = "unknown signal"
    said = f"killed by signal {-exitcode} ({name})"
    if -exitcode == signal.SIGKILL:
        said += (", most often the out-of-memory killer: dmesg says 'Out of memory' or 'Memory cgroup out "
                 "of memory' if so, and make doctor shows the RAM and any cgroup limit")
    return said


def _start(child: multiprocessing.process.BaseProcess) -> None:
    """``child.start()``; in the main thread, a SIGINT or SIGTERM meanwhile only recorded and
    raised again after it (a second one: at once, through the handler it would have met)."""
    if threading.current_thread() is not threading.main_thread():
        child.start()
        return
    caught: list[int] = []
    previous: dict[int, Any] = {}

    def record(signum, frame):
        caught.append(signum)
        if len(caught) > 1:
            _restore(previous)
            signal.raise_signal(signum)

    for signum in _HELD:
        previous[signum] = signal.signal(signum, record)
    try:
        child.start()
    finally:
        _restore(previous)
        for signum in dict.fromkeys(caught[:1]):
            signal.raise_signal(signum)


def _restore(handlers: dict[int, Any]) -> None:
    for signum, handler in handlers.items():
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def _stop(child: multiprocessing.process.BaseProcess, grace_s: float) -> None:
    """Wait ``grace_s`` for ``child`` to exit, then SIGTERM it, then SIGKILL it (also when
    this is interrupted meanwhile); reap it."""
    try:
        child.join(grace_s)
        if child.exitcode is None:
            child.terminate()
            child.join(STOP_GRACE_S)
    finally:
        if child.exitcode is None:
            child.kill()
            child.join()


def _run_in_child(send, fn: Callable[..., Any], args: tuple) -> None:
    """The child's side of :func:`call`: send ``("ok", result)`` or ``("error", exception)``."""
    try:
        answer = ("ok", fn(*args))
    except SystemExit as err:
        answer = ("error", ChildProcessError(f"{getattr(fn, '__name__', fn)!r} called sys.exit({err.code!r})"))
    except BaseException as err:  # noqa: BLE001 - every ending goes back to the caller
        try:
            err.add_note("in the child process:\n" + "".join(traceback.format_exception(err)).rstrip())
        except Exception:  # noqa: BLE001 - the note is a courtesy
            pass
        answer = ("error", err)
    try:
        if answer[0] == "error":
            pickle.loads(pickle.dumps(answer))  # an exception whose class will not rebuild it
        send.send(answer)
    except BrokenPipeError:
        pass  # the caller is gone
    except Exception as err:  # noqa: BLE001 - a result or exception that does not pickle
        what = "the result" if answer[0] == "ok" else "the exception"
        with contextlib.suppress(BrokenPipeError):
            send.send(("error", RuntimeError(
                f"{what} of {getattr(fn, '__name__', fn)!r} in the child process could not be sent back "
                f"({type(err).__name__}: {err}): {reprlib.repr(answer[1])}")))
    finally:
        send.close()
