"""The command-line convention every engine's ``main()`` follows.

Longer than 400 lines: the convention is one contract (how a command reports an error,
removes what it made, and checks its flags and paths before any work), and a command
follows all of it through this one module.

- Bad input is found before any work and reported on one line,
  ``error: <what>, <where>, <what was expected>``, with exit status 2
  (:class:`UsageError`, or any ``ValueError``/``OSError``/``KeyError`` that escapes; one
  that a call raised rather than a check, numpy's C code or another package, also says
  where, and that it is a defect if the input is right).
  ``--debug`` on the command line or ``DLSYSBENCH_DEBUG=1`` shows the traceback instead.
  A ``MemoryError`` (an input too large for this machine) is reported the same way, as
  "not enough memory", also with exit status 2; any other exception is an internal
  error, exit status 1.
  A thread variable numba or OpenMP would refuse or misread (``NUMBA_NUM_THREADS=0``,
  ``NUMBA_THREADING_LAYER=tbb`` without tbb: :func:`impls.harness.cpus.thread_variable_problem`,
  checked once when ``impls`` is imported) is bad input too, refused before ``main`` runs.
- Whatever a command creates is registered (:func:`register`) and removed on any exit
  it can catch: an exception, SIGINT (exit 130), SIGTERM (exit 143). A signal that
  arrived while ``main`` ran but Python code could not act on it (inside a ctypes or
  numba callback) is still honoured when ``main`` returns: the run does not report
  success after one; one that lands where an exception cannot unwind through native
  code is held until it can (:mod:`impls.harness.interrupts`).
- What it cannot catch (SIGKILL) is found by the next run: temporary names carry the
  creating pid (:func:`pid_tag`), and :func:`sweep_stale` removes those whose pid is
  no longer alive (a live pid's files are left alone).

Use::

    @cli.command("python -m impls.x")
    def main(argv=None) -> int:
        parser = cli.parser(prog=..., description=...)   # adds --debug
        ...
        cli.check_file(args.trace, "--trace", "an .npy file")
"""
from __future__ import annotations

import argparse
import errno
import functools
import io
import linecache
import math
import os
import re
import shutil
import signal
import sys
import sysconfig
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Callable, Iterable

from impls.harness import atomic, cpus, interrupts, paths
from impls.harness.interrupts import EXIT_SIGINT, EXIT_SIGTERM, Interrupted, exit_status  # noqa: F401

EXIT_USAGE = 2
EXIT_SIGPIPE = 141            # 128 + SIGPIPE: the output's reader closed the pipe
DEBUG_ENV = "DLSYSBENCH_DEBUG"


class UsageError(ValueError):
    """Bad input: ``what`` is wrong, ``where`` (a flag, file:line), ``expected`` what was wanted."""

    def __init__(self, what: str, where: str = "", expected: str = ""):
        self.what, self.where, self.expected = what, where, expected
        super().__init__(", ".join(p for p in (what, where, expected) if p))


class _ClosedStdout(io.TextIOBase):
    """``sys.stdout`` of a process started with standard output closed (``>&-``), where Python
    leaves None and every print vanishes: its first write raises UsageError instead."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise UsageError("standard output is closed", ">&-", "expected it open: the result is printed there")


def _hold_descriptor(fd: int) -> None:
    """Point descriptor ``fd`` at /dev/null where it is closed, so that the next file this
    process opens does not take its number (a child inheriting it would write into that file)."""
    try:
        os.fstat(fd)
    except OSError:
        held = os.open(os.devnull, os.O_WRONLY)
        if held != fd:
            os.dup2(held, fd)
            os.close(held)


# --------------------------------------------------------------------------- cleanup registry

_registered: list[Path] = []
_empty_only: set[Path] = set()


def register(path: str | os.PathLike, *, empty_only: bool = False) -> Path:
    """Remove ``path`` (file or directory tree) if the command exits abnormally; return it.
    ``empty_only``: a directory the command created to hold things, removed only if empty."""
    p = Path(path)
    _registered.append(p)
    if empty_only:
        _empty_only.add(p)
    return p


def register_new_dir(path: str | os.PathLike) -> Path:
    """Create directory ``path`` (and parents) and register every directory this created,
    to be removed on an abnormal exit if still empty; return ``path``."""
    p = Path(path)
    new = [d for d in (p, *p.parents) if not d.exists()]
    for d in reversed(new):
        d.mkdir(exist_ok=True)
        register(d, empty_only=True)
    return p


def unregister(path: str | os.PathLike) -> None:
    """Keep ``path``: the command finished it (e.g. renamed it into place)."""
    p = Path(path)
    while p in _registered:
        _registered.remove(p)


def _remove(p: Path) -> bool:
    try:
        if p in _empty_only:
            _empty_only.discard(p)
            p.rmdir()                 # OSError when not empty: kept
            return True
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        elif p.exists() or p.is_symlink():
            p.unlink()
        else:
            return False
        return True
    except OSError:
        return False


def run_cleanup(mark: int = 0) -> list[Path]:
    """Remove the paths registered after the first ``mark`` now (last registered first);
    return those removed."""
    tail = _registered[mark:]
    del _registered[mark:]
    return [p for p in reversed(tail) if _remove(p)]


def interrupted_message(signum: int, prog: str, removed: list[Path]) -> str:
    """The one line an interrupted command prints: the signal, the command, and the partial
    files it removed (by name, up to three), or that it left none (files it had finished,
    such as a written ``--json``, are kept)."""
    head = f"error: interrupted by {signal.Signals(signum).name}, in {prog}"
    if not removed:
        return f"{head}; no partial output was left (outputs it had finished are kept)"
    return f"{head}; removed {len(removed)} partial output(s) it had created: {first_few(removed, 3)}"


def first_few(items, most: int) -> str:
    """The first ``most`` of ``items`` as text, ", "-joined, then " and N more" for the rest."""
    items = list(items)
    rest = f" and {len(items) - most} more" if len(items) > most else ""
    return ", ".join(str(x) for x in items[:most]) + rest


def pid_tag() -> str:
    """The marker temporary names carry so a later run can tell whose they are: ``pid<N>``."""
    return f"pid{os.getpid()}"


pid_alive = atomic.pid_alive


def sweep_stale(directory: str | os.PathLike, pattern: str, name: re.Pattern | None = None) -> list[Path]:
    """:func:`atomic.remove_stale` (entries of ``directory`` matching glob ``pattern`` that
    killed runs left, told by a dead pid), saying on stderr what it removed; return it."""
    removed = atomic.remove_stale(directory, pattern, name)
    if removed:
        warn(f"removed {len(removed)} file(s) left in {directory} by killed runs: "
             + ", ".join(p.name for p in removed[:5]))
    return removed


# --------------------------------------------------------------------------- fault points

FAULT_ENV = "DLSYSBENCH_FAULT_AT"


def fault_point(name: str) -> None:
    """A place the fault-injection tests stop at: when ``DLSYSBENCH_FAULT_AT`` equals
    ``name``, print ``fault-point: <name> pid <pid>`` to stderr and sleep
    ``DLSYSBENCH_FAULT_SLEEP`` seconds (default 30) so that a signal can be sent there.
    Otherwise (always, outside the tests) does nothing."""
    if os.environ.get(FAULT_ENV) != name:
        return
    import time

    print(f"fault-point: {name} pid {os.getpid()}", file=sys.stderr, flush=True)
    time.sleep(float(os.environ.get("DLSYSBENCH_FAULT_SLEEP", "30")))


# --------------------------------------------------------------------------- messages

def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _message(exc: BaseException) -> str:
    if isinstance(exc, UsageError):
        return str(exc)
    if isinstance(exc, KeyError):
        text = exc.args[0] if exc.args else ""
        return str(text)
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start}: {exc.reason})"
    if isinstance(exc, OSError) and exc.strerror:
        where = exc.filename if exc.filename is not None else ""
        return ", ".join(str(p) for p in (exc.strerror, where, _chosen_by(where)) if p != "")
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())        # one line


# the suite's own code (the impls package; in a checkout, its scripts and benchmarks too),
# and Python's standard library (json, csv, tomllib: parsers whose errors are the input's)
_OURS = tuple({Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[2] / "scripts",
               Path(__file__).resolve().parents[2] / "benchmarks"})
_STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()
_WRAPPERS = ("numba",)                               # calls into our kernels pass through these


def _raised_outside(exc: BaseException) -> str:
    """"" for an error a ``raise`` of the suite's own code or Python's standard library
    raised, or a file-system or decoding error (these are about the input). Else, for a
    ``ValueError``/``LookupError``/``NotImplementedError`` that a call raised (numpy's
    C code, a third-party package), a clause saying where and that, if the input is right,
    it is a defect. Frames of :data:`_WRAPPERS` are passed over: a kernel's own raise
    surfaces through them."""
    if isinstance(exc, (UsageError, OSError, UnicodeError)):
        return ""
    tb, innermost = exc.__traceback__, None
    while tb is not None:
        if (tb.tb_frame.f_globals.get("__name__") or "").split(".")[0] not in _WRAPPERS:
            innermost = tb
        tb = tb.tb_next
    if innermost is None:
        return ""
    where = Path(innermost.tb_frame.f_code.co_filename)
    if (_STDLIB == where or _STDLIB in where.parents) and not {"site-packages", "dist-packages"} & set(where.parts):
        return ""                   # the standard library's own, not a package installed beside it
    ours = any(d == where or d in where.parents for d in _OURS)
    if ours and linecache.getline(str(where), innermost.tb_lineno).lstrip().startswith("raise"):
        return ""
    module = innermost.tb_frame.f_globals.get("__name__") or where.name
    return (f" (not one of the suite's checks of its input: raised in {module}, line "
            f"{innermost.tb_lineno}; if the input is right, this is a defect: rerun with --debug "
            f"for the traceback)")


# the variables that choose where the suite reads and writes: an error at a path under one
# names it, since the user typed the variable, not the path
PATH_VARIABLES = ("DLSYSBENCH_CACHE", "DLSYSBENCH_GRID_RESULTS", "DLSYSBENCH_NVM_PATH", "DLSYSBENCH_ARTIFACTS")


def _chosen_by(filename) -> str:
    """"under <VAR>=<path>" for the variable of :data:`PATH_VARIABLES` whose path is
    ``filename`` or a folder above it (the deepest such), else ""."""
    if filename in (None, ""):
        return ""
    try:
        target = Path(os.fsdecode(filename)).absolute()
    except (TypeError, ValueError):
        return ""
    found = []
    for var in PATH_VARIABLES:
        try:
            chosen = paths.env_path(var)
        except ValueError:
            continue
        if chosen is not None and (target == chosen or chosen in target.parents):
            found.append((len(chosen.parts), var, chosen))
    if not found:
        return ""
    _, var, chosen = max(found)
    kind = "file or device" if var == "DLSYSBENCH_NVM_PATH" else "folder"
    return f"under {var}={chosen}, expected {var} to name a usable {kind}"


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Adds "(default: X)" to a flag's help unless X is None or False, or the help already
    names its default."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default is None or action.default is False or "default" in text:
            return text
        return super()._get_help_string(action)


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors follow the convention: one line, exit 2, the usage
    left to ``--help`` (its subcommands' parsers are of this class too)."""

    def error(self, message: str):
        text = " ".join(message.split())
        self.exit(EXIT_USAGE, f"error: {text}, in {self.prog}; see {self.prog} --help\n")


def parser(**kwargs) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` with ``--debug`` (show tracebacks) added; errors on one line; each
    flag's help ends with its default (:class:`DefaultsHelpFormatter`) unless it names one."""
    kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
    p = OneLineParser(**kwargs)
    add_debug(p)
    return p


def add_debug(p: argparse.ArgumentParser) -> None:
    p.add_argument("--debug", action="store_true",
                   help=f"show the Python traceback of an error (also: {DEBUG_ENV}=1)")


def _debugging(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get(DEBUG_ENV, "") not in ("", "0")


USER_ERRORS = (ValueError, OSError, KeyError, LookupError, NotImplementedError)


def command(prog: str, user_errors: tuple[type[BaseException], ...] = (),
            sizes: str = "the input's sizes (a smaller profile or file needs less)") -> Callable:
    """Decorate ``main(argv) -> int`` with the convention (see the module docstring).

    ``user_errors``: further exception types that mean bad input (exit 2). ``sizes``: what
    the out-of-memory message tells the user to check (the flags that size the work).
    """
    known = USER_ERRORS + tuple(user_errors)

    def decorate(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def wrapper(argv: Iterable[str] | None = None) -> int:
            args = list(sys.argv[1:] if argv is None else argv)
            if sys.stdout is None:
                sys.stdout = _ClosedStdout()
                _hold_descriptor(1)
            debug = _debugging(args)
            in_main_thread = threading.current_thread() is threading.main_thread()
            if in_main_thread and interrupts.state(sys._getframe().f_back) == interrupts.RECORD:
                interrupts.pending.clear()           # not inside another command's main
            call = None
            mark = len(_registered)
            try:
                if cpus.problem:            # a thread variable numba or OpenMP would refuse
                    raise UsageError(cpus.problem)
                if in_main_thread:
                    call = interrupts.Call(run_cleanup)
                    interrupts.begin(call)
                status = interrupts.run_main(main, None if argv is None else args)
                if in_main_thread and interrupts.pending:   # swallowed by a callback: not a success
                    raise Interrupted(interrupts.pending[0])
                return status
            except Interrupted as exc:
                print(interrupted_message(exc.signum, prog, run_cleanup(mark)), file=sys.stderr)
                return exit_status(exc.signum)
            except KeyboardInterrupt:
                print(interrupted_message(signal.SIGINT, prog, run_cleanup(mark)), file=sys.stderr)
                return EXIT_SIGINT
            except SystemExit:
                run_cleanup(mark)
                raise
            except BrokenPipeError:          # the reader went away (`| head`): stop quietly, as
                run_cleanup(mark)            # a tool killed by SIGPIPE does
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return EXIT_SIGPIPE
            except known as exc:
                run_cleanup(mark)
                if debug:
                    traceback.print_exc()
                print(f"error: {_message(exc)}{_raised_outside(exc)}", file=sys.stderr)
                return EXIT_USAGE
            except MemoryError as exc:     # the input's sizes, not a defect: say so plainly
                run_cleanup(mark)
                if debug:
                    traceback.print_exc()
                print(f"error: not enough memory ({_message(exc) or 'MemoryError'}), in {prog}; "
                      f"check {sizes}", file=sys.stderr)
                return EXIT_USAGE
            except Exception as exc:
                run_cleanup(mark)
                if debug:
                    traceback.print_exc()
                print(f"error: internal error {type(exc).__name__}: {_message(exc)}, in {prog}, "
                      f"rerun with --debug (or {DEBUG_ENV}=1) for the traceback", file=sys.stderr)
                return 1
            finally:
                interrupts.end(call)
                del _registered[mark:]
        interrupts.mark_wrapper(wrapper.__code__)
        return wrapper
    return decorate


# --------------------------------------------------------------------------- validators

def number(value, flag: str, *, minimum: float | None = None, maximum: float | None = None,
           integer: bool = False, exclusive_min: bool = False, allow_none: bool = True):
    """Return ``value`` after checking it is a finite number in range; raise :class:`UsageError`.
    An ``integer`` flag's value is also at most :data:`INT64_MAX` in size (the arrays and
    libraries it reaches count in int64), whatever ``maximum`` says."""
    if value is None and allow_none:
        return None
    kind = "an integer" if integer else "a number"
    expected = f"expected {kind}{_range(minimum, maximum, exclusive_min)}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or isinstance(value, float) and (
            not math.isfinite(value) or integer and not value.is_integer()):
        raise UsageError(f"got {_shown(value)}", flag, expected)
    if minimum is not None and (value <= minimum if exclusive_min else value < minimum) \
            or maximum is not None and value > maximum:
        raise UsageError(f"got {_shown(value)}", flag, expected)
    if integer and abs(value) > INT64_MAX:
        raise UsageError(f"got {_shown(value)}", flag, f"{expected}, at most {INT64_MAX} in size")
    return value


INT64_MAX = 2 ** 63 - 1


def _shown(value) -> str:
    """``value`` as an error message quotes it: its repr, or for a whole number of more than 30
    digits its sign and digit count (a 400-digit number would fill the line)."""
    digits = repr(value).lstrip("-")
    if isinstance(value, int) and len(digits) > 30:
        return f"{'a negative' if value < 0 else 'an'} integer of {len(digits)} digits"
    return repr(value)


def _bound(x) -> str:
    """A range's end as a user types it: an integral value in full (4294967295, not
    4.29497e+09), others in the shortest form."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e18 else f"{x:g}"


def _range(lo, hi, exclusive) -> str:
    if lo is not None and hi is not None:
        return f" in {'(' if exclusive else '['}{_bound(lo)}, {_bound(hi)}]"
    if lo is not None:
        return f" {'>' if exclusive else '>='} {_bound(lo)}"
    if hi is not None:
        return f" <= {_bound(hi)}"
    return ""


def _link_trouble(link: Path) -> str:
    """Why the symbolic link ``link`` resolves to nothing: a loop, or the path it names."""
    try:
        link.resolve(strict=True)
    except RuntimeError:
        return "a loop of links"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a loop of links"
    return f"it leads to {os.path.realpath(link)}, which does not exist"


def check_file(path: str | os.PathLike | None, flag: str, expected: str = "a readable file",
               regular: bool = False) -> Path | None:
    """Return ``path`` after checking it is readable (``regular``: a regular file, not a pipe or
    a device, for a reader that goes through the file twice); raise :class:`UsageError`."""
    if path is None:
        return None
    if not str(path).strip():
        raise UsageError("got an empty path", flag, f"expected {expected}")
    p = Path(path)
    if not p.exists():
        if os.path.lexists(p):      # a link to nothing: the link is there, what it names is not
            raise UsageError(f"{p} is a symbolic link that resolves to no file ({_link_trouble(p)})", flag,
                             f"expected {expected}")
        raise UsageError(f"{p} does not exist", flag, f"expected {expected}")
    if p.is_dir():
        raise UsageError(f"{p} is a directory", flag, f"expected {expected}")
    if regular and not p.is_file():  # a pipe (<(zcat ...)) is consumed by the first read
        raise UsageError(f"{p} is not a regular file (a pipe or a device)", flag,
                         f"expected {expected}; write it to a file first")
    if not os.access(p, os.R_OK):
        raise UsageError(f"{p} is not readable", flag, f"expected {expected}")
    return p


def _suite_file(path: Path, replaceable: tuple[Path, ...] = ()) -> str:
    """What ``path`` (resolved) is when it is the suite's own code or configuration, which
    no output may replace: under the ``impls`` package, the checkout's ``benchmarks/``,
    ``scripts/`` or ``tests/``, a dataset manifest, asv's configuration, git's own files or
    any other file git tracks there (claims.toml, README.md, ...) outside the folders in
    ``replaceable`` (``make noise`` replaces the committed thresholds); "" otherwise."""
    from impls.harness import paths

    homes = [Path(__file__).resolve().parents[1]]
    try:
        root = paths.repo_root()
    except RuntimeError:   # an installed copy outside a checkout: its package only
        root = None
    if root is not None:
        homes += [root / "impls", root / "benchmarks", root / "scripts", root / "tests"]
        if path.parent == root / "datasets" and path.suffix == ".toml":
            return "a dataset manifest of the suite"
        if path in (root / "asv.conf.json", root / "Makefile"):
            return f"the suite's {path.name}"
        if path.is_relative_to(root / ".git"):
            return "a file of the checkout's git repository"
    for home in homes:
        if path.is_relative_to(home):
            return f"a file of the suite itself (under {home.name}/)"
    if root is not None and path.is_relative_to(root) and path.parent not in replaceable and _tracked(root, path):
        return "a file the suite's checkout tracks (claims, docs, configuration)"
    return ""


def _tracked(root: Path, path: Path) -> bool:
    """Whether git tracks ``path`` in the checkout at ``root`` (False without git)."""
    import subprocess

    try:
        done = subprocess.run(["git", "--literal-pathspecs", "ls-files", "--error-unmatch", "--",
                               str(path.relative_to(root))],
                              cwd=root, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _within(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies in ``folder`` or below it, links resolved (a folder that does not
    exist holds nothing)."""
    try:
        if not folder.is_dir():
            return False
        return Path(os.path.realpath(path)).is_relative_to(Path(os.path.realpath(folder)))
    except (OSError, ValueError):
        return False


def check_output(path: str | os.PathLike | None, flag: str,
                 inputs: Iterable[tuple[str | os.PathLike | None, str]] = (),
                 replaceable: Iterable[str | os.PathLike] = (),
                 input_folders: Iterable[tuple[str | os.PathLike, str]] = ()) -> Path | None:
    """Return ``path`` after checking a file can be written there (parent exists and is a
    writable directory where a file can be created, path is not a directory, it is none of
    the command's ``inputs``, given as (path, flag) pairs, in none of its ``input_folders``,
    (folder, what it is) pairs of folders whose every file it may read, nor the suite's own
    code or configuration, but for tracked files in the folders ``replaceable``); leaves
    nothing behind. Raises :class:`UsageError`."""
    if path is None or str(path) == "-":
        return None if path is None else Path(path)
    if not str(path).strip():
        raise UsageError("got an empty path", flag, "expected a file path to write")
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{p} is a directory", flag, "expected a file path to write")
    for source, source_flag in inputs:
        if source is not None and p.exists() and Path(source).exists() and os.path.samefile(p, source):
            raise UsageError(f"{p} is the file {source_flag} reads", flag,
                             "expected another path: writing there would replace the input")
    for folder, what in input_folders:
        if _within(p, Path(folder)):
            raise UsageError(f"{p} is in {what} ({folder})", flag,
                             "expected a path outside it: writing there would replace what the command reads")
    descriptor = atomic.descriptor_of(p)
    if descriptor is not None:  # /dev/stdout, /dev/fd/N: written to the open descriptor
        try:
            os.fstat(descriptor)
        except OSError:
            raise UsageError(f"{p}: descriptor {descriptor} is not open", flag,
                             "expected an open output (or a file path)") from None
        return p
    if p.exists() and not p.is_file():  # /dev/null, a pipe: written through, never replaced
        if not os.access(p, os.W_OK):
            raise UsageError(f"{p} cannot be written (permission denied)", flag, "expected a writable location")
        return p
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"directory {parent} does not exist", flag, "expected a file in an existing directory")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UsageError(f"{p} cannot be written (permission denied)", flag, "expected a writable location")
    try:
        resolved = p.resolve()
    except RuntimeError as err:  # a symlink loop
        raise UsageError(f"{p}: {err}", flag, "expected a file path to write") from None
    own = _suite_file(resolved, tuple(Path(d).resolve() for d in replaceable))
    if own:
        raise UsageError(f"{p} is {own}", flag, "expected a path outside the suite's code and configuration")
    try:  # what the atomic write will do: a file beside it (os.access says yes to root anywhere)
        tempfile.NamedTemporaryFile(dir=resolved.parent, prefix=f".{p.name}.", suffix=".probe").close()
    except OSError as err:
        raise UsageError(f"{p} cannot be written ({err.strerror or err})", flag,
                         "expected a writable location") from None
    return p


def add_json_option(p: argparse.ArgumentParser, what: str = "the result") -> None:
    """``--json [FILE|-]``, the same on every command line: ``what`` as one JSON object to FILE,
    or to standard output when FILE is ``-`` or left out."""
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                   help=f"write {what} as one JSON object to FILE ('-' or no FILE: standard output)")


def add_profile_option(p, help: str, default: str | None = None) -> None:
    """``--profile NAME``, the same on every command line: one of the profiles, read as
    ``DLSYSBENCH_PROFILE`` is (stripped, lower-cased). ``p``: a parser or argument group."""
    from impls.harness import profiles

    p.add_argument("--profile", type=profiles.name_of, choices=profiles.PROFILES, default=default, help=help)


def emit_json(target: str | None, obj) -> bool:
    """Write ``obj`` where ``--json`` said (atomically for a file), as strict JSON (a value
    that is not a finite number is written as null); return whether it was asked for. A
    file that cannot be written raises :class:`UsageError` naming it and ``--json``."""
    import json

    if target is None:
        return False
    obj = atomic.strict_json(obj)
    if target == "-":
        print(json.dumps(obj, default=atomic.json_default))
        return True
    try:
        atomic.write_json(Path(target), obj)
    except OSError as err:
        raise UsageError(f"cannot write {target} ({err.strerror or err})", "--json") from err
    return True


def lines_to(target: str | None):
    """Return the stream for a command's human-readable lines: standard error when ``--json``
    (``target``) is ``-``, so that standard output holds the one JSON document alone; else
    standard output."""
    return sys.stderr if target == "-" else sys.stdout


def emit(target: str | None, result, printer: Callable) -> None:
    """``result`` where ``--json`` (``target``) said, through :func:`emit_json` (``""``: standard
    output); else on standard output as ``printer(result)`` writes it."""
    if target is not None:
        emit_json(target or "-", result)
    else:
        printer(result)
