"""SIGINT and SIGTERM as an exception a command can unwind, and held where it cannot.

A command (:func:`impls.harness.cli.command`) runs its ``main`` through :func:`run_main`
between :func:`begin` and :func:`end`. A signal that arrives then is decided by the frames
between it and the innermost running ``main`` (:func:`state`):

- ``raise``: :class:`Interrupted` is raised there, and the command removes its files;
- ``hold``: native code called the Python code the signal landed in, and an exception
  cannot unwind through it (an import: torch's pybind11 initialisation aborts, SIGABRT;
  llvmlite: numba's object-cache callback ignores it and the process then crashes,
  SIGSEGV; a garbage-collector callback or a ``__del__``: Python prints the exception and
  drops it). The signal is recorded, and a thread of the command sends it to the main
  thread again once ``state`` says ``raise`` (a real signal: it wakes a sleeping call). A
  second signal while one is held removes every registered file and exits at once;
- ``record``: no ``main`` runs, or the command's own wrapper does; the wrapper honours a
  signal recorded (:data:`pending`) while ``main`` ran when ``main`` returns, so such a run
  does not report success. One that lands after that check, in the wrapper's own last
  steps, is recorded only. A nested command that ends with a signal recorded hands it to
  its caller.

Invariant: a held signal is sent again only while its command runs (under the lock
:func:`end` takes to restore the old handlers), so it never reaches a later command.
"""
from __future__ import annotations

import gc
import importlib.util
import os
import signal
import sys
import threading
import time
from typing import Callable

EXIT_SIGINT = 130
EXIT_SIGTERM = 143
RAISE, HOLD, RECORD = "raise", "hold", "record"
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; ``signum`` says which (BaseException: ``except Exception`` lets it pass)."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def exit_status(signum: int) -> int:
    """The exit status of a command stopped by ``signum``: 130 (SIGINT) or 143 (SIGTERM)."""
    return EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM


def _package_dir(name: str) -> str | None:
    """The directory of installed package ``name`` with a trailing separator (not imported)."""
    spec = importlib.util.find_spec(name)
    return os.path.dirname(spec.origin) + os.sep if spec is not None and spec.origin else None


IMPORT_MACHINERY = "<frozen importlib._bootstrap"
NATIVE_CALLERS = tuple(d for d in [_package_dir("llvmlite")] if d)   # file prefixes held too
pending: list[int] = []        # recorded since the latest outermost command began; kept after
_calls: list["Call"] = []      # the running commands that installed the handler, innermost last
_sending = threading.Lock()    # a held signal is re-sent only while its command runs
_wrappers: list = []           # code of command wrappers: a signal there is only recorded


def mark_wrapper(code) -> None:
    """Frames running ``code`` (a command wrapper's) only record a signal (:func:`state`).
    Kept by identity: equal code compiled in another file is another entry."""
    if not any(code is w for w in _wrappers):
        _wrappers.append(code)


def run_main(main: Callable[..., int], argv) -> int:
    """Call a command's ``main`` (the frame :func:`state` looks for) and return its status;
    in the main thread, raise :class:`Interrupted` first if a signal was recorded while the
    command was starting."""
    if pending and threading.current_thread() is threading.main_thread():
        raise Interrupted(pending[0])          # arrived while the command was starting
    return main(argv)


def _swallowing_codes() -> list:
    """The code of the garbage collector's callbacks now registered: an exception raised in
    one is printed and dropped by Python, never unwound (Dask's distributed registers one)."""
    codes = []
    for callback in list(gc.callbacks):
        code = getattr(getattr(callback, "__func__", callback), "__code__", None)
        if code is not None:
            codes.append(code)
    return codes


def state(frame) -> str:
    """``RAISE``, ``HOLD`` or ``RECORD`` for a signal arriving at ``frame`` (module docstring)."""
    unsafe = False
    swallowing = _swallowing_codes()
    while frame is not None:
        code = frame.f_code
        if code is run_main.__code__:
            return HOLD if unsafe else RAISE
        if any(code is w for w in _wrappers):
            return RECORD
        if (code.co_filename.startswith((IMPORT_MACHINERY, *NATIVE_CALLERS)) or code.co_name == "__del__"
                or any(code is c for c in swallowing)):
            unsafe = True
        frame = frame.f_back
    return RECORD


def main_thread_state() -> str:
    """:func:`state` of the main thread's current frame."""
    return state(sys._current_frames().get(threading.main_thread().ident))


class Call:
    """One running command that installs the handler: the signal it holds, the handlers it
    replaced and the ``cleanup`` that removes every registered file; :func:`begin` starts the
    thread that sends a held signal again (:meth:`_resend`)."""

    def __init__(self, cleanup: Callable[[], list]) -> None:
        self.cleanup = cleanup
        self.held: int | None = None
        self.ended = False
        self.previous: dict[int, object] = {}
        self.wake = threading.Event()
        self.main = threading.main_thread().ident

    def hold(self, signum: int) -> None:
        self.held = signum
        self.wake.set()

    def _resend(self) -> None:
        while self.wake.wait() and not self.ended:
            if main_thread_state() != RAISE:
                time.sleep(0.01)           # held code, or a nested command's own wrapper
                continue
            with _sending:
                if self.ended:
                    return
                if main_thread_state() != RAISE:
                    continue               # back in held code since the look above
                self.wake.clear()          # before taking it: a later hold wakes us
                signum, self.held = self.held, None
                if signum is not None:
                    signal.pthread_kill(self.main, signum)


def guard_startup() -> None:
    """Make a SIGINT that arrives while ``python -m <module>`` is still importing (the
    package, or an import statement in the module's own top level) end the process with one
    line and exit status 130, instead of a traceback from inside torch or numba: no command
    has begun, so nothing was created. Any other SIGINT raises ``KeyboardInterrupt`` as
    usual (a command's :func:`begin` installs its own handler meanwhile); a SIGINT the
    caller set to be ignored stays ignored."""
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, _while_starting)


def _starting(frame) -> bool:
    """Whether ``frame``'s stack is the start of ``python -m``: an import inside runpy's
    set-up, or one that an import statement at the top level of ``__main__`` began."""
    inner, importing = None, False
    while frame is not None:
        code = frame.f_code
        importing = importing or code.co_filename.startswith(IMPORT_MACHINERY)
        if code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
            return inner is not None and inner.f_code.co_filename.startswith(IMPORT_MACHINERY)
        inner, frame = frame, frame.f_back
    return importing     # no __main__ yet: runpy is importing the module's package


def _while_starting(signum: int, frame) -> None:
    if not _starting(frame):
        signal.default_int_handler(signum, frame)     # raises KeyboardInterrupt
    argv = getattr(sys, "orig_argv", [])
    name = "python " + " ".join(argv[argv.index("-m"):argv.index("-m") + 2]) if "-m" in argv else "the command"
    try:
        sys.stderr.write(f"error: interrupted by SIGINT while {name} was starting; "
                         f"nothing was created\n")
        sys.stderr.flush()
    finally:
        os._exit(EXIT_SIGINT)


def begin(call: Call) -> None:
    """Make ``call`` the innermost running command: start its thread, install the handler."""
    _calls.append(call)
    threading.Thread(target=call._resend, name="held-signal", daemon=True).start()
    for signum in SIGNALS:
        call.previous[signum] = signal.signal(signum, handler)


def end(call: Call | None) -> None:
    """Undo :func:`begin` (as far as it got): stop the thread, hand a recorded signal to the
    calling command, put the old handlers back."""
    if call is None:
        return
    with _sending:
        if _calls and _calls[-1] is call:
            _calls.pop()
            call.ended = True
            call.wake.set()
            if pending and _calls:         # a nested command was interrupted: so is its caller
                _calls[-1].hold(pending[-1])
        for signum, old in call.previous.items():
            signal.signal(signum, old)


def _leave(signum: int, cleanup: Callable[[], list]) -> None:
    """Remove every registered file and exit with ``signum``'s status now, without unwinding."""
    try:
        for s in SIGNALS:                  # a further signal must not cut this short
            signal.signal(s, signal.SIG_IGN)
        removed = cleanup()
        print(f"error: interrupted by {signal.Signals(signum).name} twice inside native code, "
              f"{len(removed)} file(s) it created were removed", file=sys.stderr, flush=True)
        sys.stdout.flush()
    except BaseException:                  # a broken stderr must not raise into the native code
        pass
    finally:
        os._exit(exit_status(signum))


def handler(signum, frame) -> None:
    """The SIGINT/SIGTERM handler :func:`begin` installs (see the module docstring)."""
    pending.append(signum)
    where = state(frame)
    if where == RAISE:
        raise Interrupted(signum)
    if where == HOLD and _calls:
        if _calls[-1].held is not None:    # a second signal while one is held: leave now
            _leave(signum, _calls[-1].cleanup)
        _calls[-1].hold(signum)
