"""Independent, deterministic grid points: run serially, on a local Dask cluster, or on an existing one.

Longer than 400 lines: the executors, the result store and the array sharing are one
mechanism (a point's key, where it runs and how its arrays travel decide together whether a
stored result is reused), and splitting them would spread one contract over three modules.

:func:`map_points` applies a module-level function to each point (a tuple of
positional arguments, or a dict of keyword arguments) and returns the results in
input order; equal points (the same key, :func:`point_key`) are computed once. Where
the points run is chosen by ``DLSYSBENCH_DASK_SCHEDULER``:

* unset (default): a ``distributed.LocalCluster`` of worker processes, one thread
  each, as many as this process may use cores; started on first use, kept for
  the process's life;
* ``tcp://host:port``: the cluster whose scheduler listens there;
* ``serial``: in this process, in input order (tests, debugging).

**Only deterministic computations belong here.** Inside :func:`timed` (which
the experiment registry enters around an experiment that measures the machine:
fio, replay, training, switching), ``map_points`` raises AssertionError.

**Data moves once.** Large arrays are passed as :class:`ArrayRef` (from
:func:`share`: a content-addressed ``.npy`` in the dataset cache), and a point
function turns its arguments into arrays with :func:`array`, which memory-maps the
file. A remote cluster whose workers do not see the file (checked once per array)
gets the array scattered once to every worker instead; the bytes and seconds of
that are in the run's record (:func:`runs`).

**Results are kept.** Each point's result is stored (pickle with a sha256 of its key and
bytes, written atomically; a file that does not match its digest is computed again)
under ``DLSYSBENCH_GRID_RESULTS`` (default ``<dataset cache>/grid/results``) keyed
by a hash of the function's identity, the code version (the sources of the
function's top-level package) and the arguments (arrays by content), so a rerun
after a lost scheduler or an interruption recomputes only the missing points.
A worker that dies has its points rerun elsewhere by Dask's scheduler; a lost
scheduler raises :class:`GridError` saying how many points were kept. A point whose
function raises stops the grid with a :class:`GridPointError` naming the point (chained
from the point's exception); the points finished before it are kept.

**A remote cluster runs this code.** Before it computes anything, its scheduler (which
unpickles every task) and each worker must import this package at this process's
:func:`code_version`; :func:`check_remote_cluster` makes the same checks once, before a
suite run starts. Each result comes back with the code version of the worker that computed
it, and a result from other code (a worker that joined later, or restarted on an edited
checkout) raises :class:`GridError` before it is kept or stored.
"""
from __future__ import annotations

import atexit
import contextlib
import contextvars
import functools
import hashlib
import json
import logging
import os
import pickle
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np

from impls.harness import atomic, paths
from impls.harness.interrupts import Interrupted
from impls.harness.progress import progress_bar

ENV_SCHEDULER = "DLSYSBENCH_DASK_SCHEDULER"
ENV_RESULTS = "DLSYSBENCH_GRID_RESULTS"
CONNECT_TIMEOUT = "20s"  # how long to try to reach a remote scheduler, and to wait for its first worker
PREFLIGHT_TIMEOUT = "5s"  # how long the check before a suite run tries to reach a remote scheduler
HANDSHAKE_GRACE_S = 5.0   # after a connect timeout, for Dask's own error to arrive before ours
NO_WORKER_GRACE_S = 30.0  # how long a running grid waits for a worker after the last one left
SCHEDULER_SILENT_S = 60.0  # how long a running grid waits for a scheduler that stopped answering (frozen)
SCHEDULER_ANSWER_S = 10.0  # how long one question to the scheduler may take before it counts as unanswered
_SCHEMES = ("tcp", "tls")  # the addresses of a Dask scheduler's network (tls: with Dask's TLS config)

_timed: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("grid_timed", default=())
_runs: list[dict[str, Any]] = []
_local: dict[str, Any] = {}


class GridError(RuntimeError):
    """The grid could not finish for its setting's sake (the scheduler was lost or cannot be
    reached, a worker ran other code); finished points are kept."""


class GridPointError(RuntimeError):
    """A point's function raised: the code's failure, not the setting's (so not a
    :class:`GridError`, which command lines read as bad input); finished points are kept."""


# ----------------------------------------------------------------------------- shared arrays

class ArrayRef(NamedTuple):
    """A large array stored once as ``.npy`` at ``path`` (content hash ``sha256``, the
    array's ``shape`` and ``dtype`` string); it pickles as these few fields."""

    path: str
    sha256: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def load(self) -> np.ndarray:
        """The array, memory-mapped read-only."""
        return np.load(self.path, mmap_mode="r", allow_pickle=False)


def _array_digest(a: np.ndarray) -> str:
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(memoryview(np.ascontiguousarray(a)).cast("B"))
    return h.hexdigest()


def arrays_dir() -> Path:
    """The folder :func:`share` stores arrays in: ``<cache>/grid/arrays``."""
    return paths.cache_dir() / "grid" / "arrays"


def share(a: np.ndarray) -> ArrayRef:
    """Store ``a`` as ``<cache>/grid/arrays/<sha256>.npy`` and return its reference. A stored
    file is checked against the digest once per process before it is used (a damaged or
    edited one is written again, with a warning), so a run never reads another array. Written
    by :func:`atomic.replacing`: a full disk is an ``OSError`` naming the file."""
    a = np.asarray(a)
    digest = _array_digest(a)
    path = arrays_dir() / f"{digest[:32]}.npy"
    if path.exists() and str(path) not in _verified and not _holds(path, digest):
        print(f"warning: {path} does not hold the array it is named after (damaged or edited): "
              "writing it again", file=sys.stderr)
        path.unlink()
    if not path.exists():      # a killed run's half-written copy is swept; a full disk named
        with atomic.replacing(path) as handle:
            np.save(handle, np.ascontiguousarray(a), allow_pickle=False)
    _verified.add(str(path))
    return ArrayRef(str(path), digest, tuple(a.shape), a.dtype.str)


_verified: set[str] = set()   # stored arrays this process has checked or written


def _holds(path: Path, digest: str) -> bool:
    """Whether the ``.npy`` at ``path`` is an array whose content digest is ``digest``."""
    try:
        return _array_digest(np.load(path, mmap_mode="r", allow_pickle=False)) == digest
    except (OSError, ValueError, EOFError):
        return False


def array(x: Any) -> np.ndarray:
    """``x`` as an array: an :class:`ArrayRef` memory-mapped, an array (scattered) as is."""
    return x.load() if isinstance(x, ArrayRef) else np.asarray(x)


# ----------------------------------------------------------------------------- timed guard

@contextlib.contextmanager
def timed(name: str) -> Iterator[None]:
    """Mark the enclosed code as a timed experiment ``name``: :func:`map_points` refuses to run."""
    token = _timed.set(_timed.get() + (name,))
    try:
        yield
    finally:
        _timed.reset(token)


# ----------------------------------------------------------------------------- keys and store

@functools.cache
def code_version(package: str) -> str:
    """sha256 (16 hex) over the ``.py`` sources of top-level ``package`` (paths and contents)."""
    module = sys.modules.get(package) or __import__(package)
    root = Path(module.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _canonical(x: Any) -> Any:
    if isinstance(x, ArrayRef):
        return ["array", x.sha256]
    if isinstance(x, np.ndarray):
        return ["array", _array_digest(x)]
    if isinstance(x, (bool, type(None), str)):
        return x
    if isinstance(x, (int, np.integer)):
        return ["int", int(x)]
    if isinstance(x, (float, np.floating)):
        return ["float", float(x).hex()]
    if isinstance(x, (list, tuple)):
        return [type(x).__name__, [_canonical(v) for v in x]]
    if isinstance(x, dict):   # keys keyed like values: {1: v} and {"1": v} are two points
        return ["dict", sorted(([_canonical(k), _canonical(v)] for k, v in x.items()), key=json.dumps)]
    raise TypeError(f"grid point argument of type {type(x).__name__} cannot be keyed; pass plain "
                    "data (numbers, strings, lists, dicts) or arrays via grid.share()")


def point_key(fn: Callable, point: Any) -> str:
    """The hex key of ``fn`` applied to ``point`` under the current code version: of ``fn``'s
    package (:func:`code_package`), and for a function of a script run as ``__main__`` of the
    script's folder too."""
    identity = f"{fn.__module__}:{fn.__qualname__}"
    version = code_version(code_package(fn))
    if fn.__module__ == "__main__":
        version += code_version("__main__")
    blob = json.dumps([identity, version, _canonical(point)])
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def results_dir(label: str) -> Path:
    base = paths.env_path(ENV_RESULTS) or paths.cache_dir() / "grid" / "results"
    return base / "".join(c if c.isalnum() or c in "-_." else "_" for c in label)


_RESULT_MAGIC = b"dlsysbench-grid-result-1\n"    # then the sha256 of key and pickle (32 bytes), the pickle


def _digest(key: str, payload: bytes) -> bytes:
    return hashlib.sha256(key.encode() + b"\0" + payload).digest()


def _pack(key: str, value: Any) -> bytes:
    """A stored result of the point ``key``: a header, the sha256 of the key and the pickle,
    the pickle (protocol 4)."""
    return _packed(key, pickle.dumps(value, protocol=4))


def _packed(key: str, payload: bytes) -> bytes:
    """:func:`_pack` of a result already pickled as ``payload``."""
    return _RESULT_MAGIC + _digest(key, payload) + payload


def _load(path: Path) -> tuple[bool, Any]:
    """``(True, result)`` from a file :func:`_pack` wrote for the point its name is the key of,
    whose pickle still has its digest; ``(False, None)`` for a missing, truncated, edited or
    older-format file, or another point's result under this name (the point is then computed
    again and the file rewritten), never a result that is not this point's."""
    try:
        raw = path.read_bytes()
    except OSError:
        return False, None
    head = len(_RESULT_MAGIC)
    digest, payload = raw[head:head + 32], raw[head + 32:]
    if not raw.startswith(_RESULT_MAGIC) or _digest(path.stem, payload) != digest:
        return False, None
    try:
        return True, pickle.loads(payload)
    except Exception:  # noqa: BLE001 - intact bytes this code cannot unpickle: compute again
        return False, None


# ----------------------------------------------------------------------------- executors

def usable_cores() -> int:
    """How many CPUs this process may keep busy (>= 1): its affinity capped by the cgroup CPU
    quota (:func:`impls.harness.capabilities.effective_cpus`); the local cluster's worker count."""
    from impls.harness.capabilities import effective_cpus

    return effective_cpus()


_ADDRESS = re.compile(r"([a-z][a-z0-9+.-]*://)?(\[[0-9a-f:.%\w]+\]|[^\s:/\[\]]+):(\d+)", re.IGNORECASE)


def scheduler_setting() -> str:
    """``serial``, ``local`` (any case) or a scheduler address ``[tcp://]HOST:PORT`` (its scheme
    in lower case, as Dask reads it), from ``DLSYSBENCH_DASK_SCHEDULER``; raises
    :class:`GridError` naming the variable otherwise."""
    value = os.environ.get(ENV_SCHEDULER, "").strip()
    if not value or value.lower() in ("serial", "local"):
        return value.lower() or "local"
    address = _ADDRESS.fullmatch(value)
    if not address or not 0 < int(address.group(3)) < 65536:     # a port out of range reads as a timeout
        raise GridError(f"{ENV_SCHEDULER}={value!r}: expected serial, local or a scheduler address "
                        "tcp://HOST:PORT (a port from 1 to 65535)")
    scheme = value.partition("://")[0].lower() if "://" in value else "tcp"
    if scheme not in _SCHEMES:
        raise GridError(f"{ENV_SCHEDULER}={value!r}: {scheme}:// is not a Dask scheduler's address; expected "
                        "serial, local or a scheduler address tcp://HOST:PORT (tls:// with Dask's TLS settings)")
    return f"{scheme}://{value.partition('://')[2]}" if "://" in value else value


def _in_worker() -> bool:
    try:
        from distributed import get_worker
        get_worker()
        return True
    except (ImportError, ValueError):
        return False


def _not_compute_failed(record: logging.LogRecord) -> bool:
    """False for the worker's "Compute Failed" block: :func:`map_points` reports the point."""
    return not str(record.msg).startswith("Compute Failed")


def _not_closed_heartbeat(record: logging.LogRecord) -> bool:
    """False for the worker's heartbeat that found its scheduler's connection closed (Dask's
    "Failed to communicate with scheduler during heartbeat." with a ``CommClosedError``): the
    local cluster closing after a run, in the race between its scheduler and its workers.
    The scheduler is this process's, so a connection lost mid-run fails the run here."""
    from distributed.comm.core import CommClosedError

    error = record.exc_info[1] if record.exc_info else None
    return not (str(record.msg).startswith("Failed to communicate with scheduler during heartbeat")
                and isinstance(error, CommClosedError))


def dask_setup(worker) -> None:
    """Run by Dask in each local worker process as it starts (the module is the workers'
    ``preload``, so a worker its nanny restarts runs it too): ignore SIGINT (a Ctrl-C on the
    terminal reaches the whole process group; this process alone acts on it and closes the
    cluster on exit, instead of every worker printing a traceback), and drop the worker's
    "Compute Failed" log block for a point that raised (the :class:`GridPointError` of
    :func:`map_points` names the point and chains its exception) and its traceback of a
    heartbeat that met the closing cluster (:func:`_not_closed_heartbeat`)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = logging.getLogger("distributed.worker")
    for quiet in (_not_compute_failed, _not_closed_heartbeat):
        if quiet not in log.filters:
            log.addFilter(quiet)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT in this process for the block, then put its handler back. Processes
    started in the block inherit the ignored SIGINT from their first instruction, so a Ctrl-C
    while they import does not print a traceback from each; one pressed in the block itself
    is lost (press it again). Nothing outside the main thread, or when the current handler
    was not set from Python (it could not be put back)."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is None:
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


_MAIN_GUARD = ("a script that calls map_points must keep its top-level code under "
               "`if __name__ == \"__main__\":`, since each worker process imports the script")


def _local_client():
    if "client" not in _local:
        import multiprocessing

        from distributed import Client, LocalCluster
        if getattr(multiprocessing.current_process(), "_inheriting", False):
            # a worker process importing the main script, which calls map_points unguarded
            raise GridError(f"map_points was called while a worker process was starting: {_MAIN_GUARD}")
        try:
            with _sigint_ignored():     # the worker processes start in here; the preload covers restarts
                cluster = LocalCluster(n_workers=usable_cores(), threads_per_worker=1, processes=True,
                                       # ":0": a free port. None still serves its HTTP routes on :8787,
                                       # and a second run at once warned that the port was taken
                                       dashboard_address=":0", silence_logs=logging.ERROR, preload=[__name__])
        except RuntimeError as exc:     # distributed: "Nanny failed to start."
            raise GridError(f"the local grid's worker processes did not start ({exc}; their errors are above); "
                            f"if a script called map_points, {_MAIN_GUARD}") from exc
        try:
            client = Client(cluster)
        except BaseException:
            cluster.close()
            raise
        _local["cluster"], _local["client"] = cluster, client
        atexit.register(close_local_cluster)
    return _local["client"]


def close_local_cluster(quiet: bool = False) -> None:
    """Shut the embedded local cluster down (started again on the next :func:`map_points`).
    ``quiet`` (a run stopped by a signal): Dask's loggers in this process are kept to
    CRITICAL while it closes, and the shutdown's own errors are dropped: the command says it
    was interrupted in one line. Closing here, in the main thread before the interpreter's exit,
    keeps the scheduler from logging "cannot schedule new futures after interpreter shutdown"
    and the workers from losing it mid-heartbeat."""
    client, cluster = _local.pop("client", None), _local.pop("cluster", None)
    with _quiet_log(quiet, "distributed"):
        try:
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()
        except BaseException:       # noqa: BLE001 - a second Ctrl-C, or a worker already gone
            if not quiet:
                raise


def _remote_client(address: str, timeout: str | None = None):
    """A client of the scheduler at ``address``, connected within ``timeout`` (default
    ``CONNECT_TIMEOUT``; the handshake too: a port that accepts but is no Dask scheduler, as
    the dashboard's, must not hang); raises :class:`GridError` naming the variable."""
    from distributed import Client
    timeout = timeout or CONNECT_TIMEOUT
    box: dict[str, Any] = {}

    def connect() -> None:
        client = Client.__new__(Client)   # held, so that a failed start can be put away
        try:
            client.__init__(address, timeout=timeout, set_as_default=False)
            box["client"] = client
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
            _discard(client)

    thread = threading.Thread(target=connect, daemon=True, name="dask-connect")
    thread.start()
    waited = _seconds(timeout) + HANDSHAKE_GRACE_S
    thread.join(waited)
    error = box.get("error")
    if thread.is_alive() or error is not None or "client" not in box:
        why = f"no Dask handshake within {waited:g} s" if thread.is_alive() else f"{error}"
        if "ssl_context" in why or "TLS" in why:      # a tls:// address without Dask's TLS settings
            raise GridError(f"{ENV_SCHEDULER}={address}: a tls:// scheduler needs Dask's TLS settings "
                            f"(distributed.comm.tls in Dask's configuration: CA file, certificate, key), which "
                            f"this process does not have ({why}); set them, or use a tcp:// address")
        if error is not None and not isinstance(error, (OSError, TimeoutError)):
            raise GridError(f"{ENV_SCHEDULER}={address}: something answers there, but not in Dask's protocol "
                            f"({type(error).__name__}: {_short(why)}); expected a Dask scheduler's port (8786 by "
                            "default, not the dashboard's), or unset the variable")
        raise GridError(f"{ENV_SCHEDULER}={address}: cannot reach a Dask scheduler there ({why}); "
                        "start one with `dask scheduler` (its port, 8786 by default, not the "
                        "dashboard's) or unset the variable")
    return box["client"]


def _discard(client) -> None:
    """Put away a client whose start failed: its ``__del__`` would otherwise wait 40 s at
    exit to close a connection that never was."""
    with contextlib.suppress(BaseException):
        client.close(timeout=2)
    with contextlib.suppress(BaseException):
        client.status = "closed"
        client._loop_runner.stop()


def _seconds(text: str) -> float:
    return float(text.rstrip("s"))


def _short(text: str, most: int = 160) -> str:
    return text if len(text) <= most else text[:most] + "..."


def _workers(client) -> int:
    return len(client.scheduler_info(n_workers=-1)["workers"]) if hasattr(client, "scheduler_info") else 0


def _workers_within(client, seconds: float) -> int:
    """The number of workers the scheduler reports, asked with a limit of ``seconds``; raises
    :class:`TimeoutError` (asyncio's or Dask's, both subclasses) where it does not answer in
    time: a scheduler process that is stopped or hung keeps its connection open, so only a
    question with a limit notices."""
    info = client.sync(client.scheduler.identity, callback_timeout=seconds)   # no n_workers: older schedulers lack it
    return len(info.get("workers", {}))


def where(client=None) -> str:
    """Where points run now: ``serial``, ``local cluster of N workers``, ``cluster at ADDR with N workers``."""
    setting = scheduler_setting()
    if setting == "serial" or _in_worker():
        return "serial"
    if setting == "local":
        n = _workers(client) if client is not None else usable_cores()
        return f"local cluster of {n} workers"
    n = _workers(client) if client is not None else "?"
    return f"cluster at {setting} with {n} workers"


def runs() -> list[dict[str, Any]]:
    """One record per :func:`map_points` call in this process: label, where, points, computed,
    reused, seconds, and scattered bytes/seconds when arrays had to be sent to a remote cluster."""
    return [dict(r) for r in _runs]


def _has_file(path: str, size: int) -> bool:
    return os.path.isfile(path) and os.path.getsize(path) == size


def _substitute(x: Any, table: dict[str, Any]) -> Any:
    if isinstance(x, ArrayRef):
        return table.get(x.sha256, x)
    if isinstance(x, tuple):
        return tuple(_substitute(v, table) for v in x)
    if isinstance(x, list):
        return [_substitute(v, table) for v in x]
    if isinstance(x, dict):
        return {k: _substitute(v, table) for k, v in x.items()}
    return x


def _refs(x: Any, found: dict[str, ArrayRef]) -> dict[str, ArrayRef]:
    if isinstance(x, ArrayRef):
        found[x.sha256] = x
    elif isinstance(x, (tuple, list)):
        for v in x:
            _refs(v, found)
    elif isinstance(x, dict):
        for v in x.values():
            _refs(v, found)
    return found


def _blind_workers(client, path: str | os.PathLike) -> tuple[list[str], int]:
    """(the workers that cannot read ``path`` as it is here, the number of workers)."""
    seen = client.run(_has_file, str(path), os.path.getsize(path))
    return [worker for worker, ok in seen.items() if not ok], len(seen)


def require_shared_file(path: str | os.PathLike) -> None:
    """Raise :class:`GridError` unless every worker where grid points run now can read
    ``path`` (the same size as here): for inputs passed by path, too large to send. Serial
    and local runs share this machine's files."""
    with _checked_remote() as remote:
        if remote is None:
            return
        client, setting = remote
        blind, workers = _blind_workers(client, path)
        if blind:
            raise GridError(f"{ENV_SCHEDULER}={setting}: {len(blind)} of {workers} workers cannot read "
                            f"{path} ({blind[0]}); this input is read by path, not sent: the workers need "
                            "a file system shared with this machine, at the same path")


@contextlib.contextmanager
def _checked_remote(timeout: str | None = None) -> Iterator[tuple[Any, str] | None]:
    """Yield ``(client, setting)`` of the remote ``DLSYSBENCH_DASK_SCHEDULER``, connected within
    ``timeout`` (:func:`_remote_client`) and checked as a grid checks it before its first point
    (:func:`_check_cluster`, with this package's code version), closed after the block; None for
    serial and local settings and inside a worker (no network). Raises :class:`GridError`."""
    setting = scheduler_setting()
    if setting in ("serial", "local") or _in_worker():
        yield None
        return
    client = _remote_client(setting, timeout)
    with _quiet_log(True):
        try:
            _check_cluster(client, setting, __name__.partition(".")[0])
            yield client, setting
        finally:
            client.close()


def _scatter_missing(client, points: list, record: dict) -> list:
    """Scatter (once, to every worker) each shared array some worker cannot read; new points."""
    refs: dict[str, ArrayRef] = {}
    for p in points:
        _refs(p, refs)
    futures = {}
    start = time.perf_counter()
    for digest, ref in refs.items():
        blind, workers = _blind_workers(client, ref.path)
        if blind:
            futures[digest] = client.scatter(np.load(ref.path, allow_pickle=False), broadcast=True,
                                             hash=False)
            record["scattered_bytes"] = record.get("scattered_bytes", 0) + ref.nbytes * workers
    if futures:
        record["scattered_arrays"] = len(futures)
        record["scatter_seconds"] = time.perf_counter() - start
    return [_substitute(p, futures) for p in points] if futures else points


def _call(fn: Callable, point: Any) -> Any:
    return fn(**point) if isinstance(point, dict) else fn(*point)


class _Shown(str):
    def __repr__(self) -> str:
        return str(self)


def _shown(x: Any) -> Any:
    """``x`` with each array (shared or not) replaced by a short ``<array SHAPE DTYPE>``."""
    if isinstance(x, ArrayRef):
        return _Shown(f"<array {x.shape} {np.dtype(x.dtype)}>")
    if isinstance(x, np.ndarray):
        return _Shown(f"<array {x.shape} {x.dtype}>")
    if isinstance(x, (tuple, list)):
        return type(x)(_shown(v) for v in x)
    if isinstance(x, dict):
        return {k: _shown(v) for k, v in x.items()}
    return x


def _point_failed(label: str, i: int, points: Sequence[Any], exc: BaseException) -> GridPointError:
    """The one-line error for point ``i`` (0-based) of ``points`` whose function raised ``exc``:
    the grid, the point's 1-based position, the point (arrays shown by shape, at most 200
    characters) and the exception's type and message; the caller chains ``exc``."""
    point = repr(_shown(points[i]))
    if len(point) > 200:
        point = point[:197] + "..."
    message = " ".join(str(exc).split())
    return GridPointError(f"grid {label!r}: point {i + 1} of {len(points)} {point} failed: "
                     f"{type(exc).__name__}: {message}")


def map_points(fn: Callable, points: Sequence[Any], *, label: str, store: bool = True,
               progress: bool | None = None) -> list[Any]:
    """``[fn(*p) for p in points]`` (``fn(**p)`` for dict points), run where
    ``DLSYSBENCH_DASK_SCHEDULER`` says, results in input order.

    ``fn`` must be a module-level function whose result depends only on its
    arguments (and the code); ``label`` names the grid in the result store and
    the run record. Equal points (one :func:`point_key`) are computed once, and
    each gets its own copy of the result. With ``store``, finished points are read
    back instead of computed. Raises AssertionError inside :func:`timed`;
    :class:`GridError` when a remote scheduler cannot be reached or is lost, when the local
    workers cannot start (a script must call this under ``if __name__ == "__main__":``, as
    each worker imports it), or when a worker returns a result computed by other code
    (nothing of it is kept);
    :class:`GridPointError` when ``fn`` raises on a point (chained from ``fn``'s
    exception; a MemoryError is raised as it is).
    """
    if _timed.get():
        name = _timed.get()[-1]
        raise AssertionError(f"{name} measures this machine's hardware; it must not run on the grid "
                             f"(map_points({fn.__qualname__}, label={label!r}) inside grid.timed)")
    points = list(points)
    start = time.perf_counter()
    keys = [point_key(fn, p) for p in points]
    folder = results_dir(label)
    results: list[Any] = [None] * len(points)
    pending = []
    for i, key in enumerate(keys):
        ok, value = _load(folder / f"{key}.pkl") if store else (False, None)
        if ok:
            results[i] = value
        else:
            pending.append(i)

    groups: dict[str, list[int]] = {}     # each distinct pending key: the points that have it
    for i in pending:
        groups.setdefault(keys[i], []).append(i)

    def keep(same: list[int], value: Any) -> None:
        """Hand ``value``, the result of the points ``same`` (one key), to each of them."""
        payload = pickle.dumps(value, protocol=4) if store or len(same) > 1 else b""
        results[same[0]] = value
        for j in same[1:]:
            results[j] = pickle.loads(payload)    # its own copy, as a stored result would be
        if store:
            atomic.write_bytes(folder / f"{keys[same[0]]}.pkl", _packed(keys[same[0]], payload))

    setting = scheduler_setting()
    serial = setting == "serial" or _in_worker() or not pending
    client = None if serial else (_local_client() if setting == "local" else _remote_client(setting))
    record: dict[str, Any] = {"label": label, "where": where(client) if pending else "nowhere: every point reused",
                              "points": len(points),
                              "computed": len(pending), "reused": len(points) - len(pending)}
    remote = client is not None and setting != "local"
    with _quiet_log(remote):
        try:
            with progress_bar(len(pending), label, "pt", progress) as bar:
                if serial:
                    for same in groups.values():
                        try:
                            value = _call(fn, points[same[0]])
                        except MemoryError:
                            raise
                        except Exception as exc:
                            raise _point_failed(label, same[0], points, exc) from exc
                        keep(same, value)
                        bar.update(len(same))
                else:
                    _run_on(client, setting, fn, points, groups, keep, bar, record, label)
        except (KeyboardInterrupt, Interrupted):
            if client is not None and not remote:
                close_local_cluster(quiet=True)
            raise
        finally:
            if remote:
                client.close()
    record["seconds"] = time.perf_counter() - start
    _runs.append(record)
    return results


@contextlib.contextmanager
def _quiet_log(quiet: bool, name: str = "distributed.client") -> Iterator[None]:
    """With ``quiet``, keep Dask's logger ``name`` (and those below it) to CRITICAL for the
    block, then put its level back. Its client logger logs a lost scheduler as an ERROR with a
    35-line traceback, which the :class:`GridError` says in one line."""
    log = logging.getLogger(name)
    level = log.level
    if quiet:
        log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def _worker_code_version(package: str) -> str:
    """Run on each worker and on the scheduler: the :func:`code_version` of ``package`` there."""
    return code_version(package)


def _scheduler_code_version(client, setting: str, package: str) -> str:
    """The :func:`code_version` of ``package`` on the scheduler; :class:`GridError` when the
    scheduler cannot import it (recent Dask unpickles the task graph there, and failed with
    "Error during deserialization of the task graph" once a worker had joined)."""
    try:
        return client.run_on_scheduler(_worker_code_version, package)
    except Exception as exc:    # the scheduler's error, re-raised bare: ModuleNotFoundError, mostly
        raise GridError(f"{ENV_SCHEDULER}={setting}: the Dask scheduler cannot load this suite's code "
                        f"({type(exc).__name__}: {exc}); it unpickles every task, so it too must start from "
                        "a checkout of the same commit: `dask scheduler` from that checkout's .venv after "
                        "make setup there, or with PYTHONPATH=<that checkout>") from None


def _check_cluster(client, setting: str, package: str) -> None:
    """Before a remote cluster computes anything: the scheduler imports ``package``, at least
    one worker joins within ``CONNECT_TIMEOUT``, and the scheduler and every worker run this
    code (the same :func:`code_version` of ``package``: a result is stored under this
    process's code version, so a worker on other code would store wrong results for it, and
    a scheduler on other code could unpickle the tasks differently); :class:`GridError`
    saying what to start how. The scheduler is asked first: it answers without a worker."""
    scheduler = _scheduler_code_version(client, setting, package)
    try:
        client.wait_for_workers(1, timeout=_seconds(CONNECT_TIMEOUT))
    except TimeoutError:
        raise GridError(f"{ENV_SCHEDULER}={setting}: no Dask worker joined that scheduler within "
                        f"{CONNECT_TIMEOUT}; start one with `dask worker {setting}` where this suite is "
                        "installed (make setup, or PYTHONPATH=<checkout>)") from None
    try:
        theirs = client.run(_worker_code_version, package)
    except Exception as exc:    # a worker cannot import the suite: Dask re-raises its error bare
        raise GridError(f"{ENV_SCHEDULER}={setting}: the workers cannot run this suite's code ({exc}); "
                        "start `dask worker` where the suite is installed (make setup in a checkout of "
                        "the same commit) or with PYTHONPATH=<that checkout>") from None
    ours = code_version(package)
    other = {worker: version for worker, version in theirs.items() if version != ours}
    # a process hashes its code once, when first asked: one started before a local edit here
    # runs the code from before it, though it is this checkout's
    if other:
        worker, version = next(iter(other.items()))
        also = (f"; the scheduler runs other code too ({package} version {scheduler}): restart it as well"
                if scheduler != ours else "")
        raise GridError(f"{ENV_SCHEDULER}={setting}: {len(other)} of {len(theirs)} workers run other code "
                        f"than this process ({worker}: {package} version {version}, here {ours}); their "
                        "results would be stored as this code's: start the workers from a checkout of "
                        "the same commit, with the same local changes, or restart them: a worker keeps "
                        f"the code it loaded when it started{also}")
    if scheduler != ours:
        raise GridError(f"{ENV_SCHEDULER}={setting}: the Dask scheduler runs other code than this process "
                        f"({package} version {scheduler}, here {ours}); it unpickles every task, and other "
                        "code can unpickle them differently: start it from a checkout of the same commit, "
                        "with the same local changes, or restart it: a scheduler keeps the code it loaded "
                        "when it started")


def check_remote_cluster() -> None:
    """For a remote ``DLSYSBENCH_DASK_SCHEDULER``: connect once, within ``PREFLIGHT_TIMEOUT``,
    and make the checks a grid makes before its first point (:func:`_check_cluster`, with
    this package's code version), so that a run stops at once instead of at each grid after
    ``CONNECT_TIMEOUT``; raises :class:`GridError` (a bad setting too, as
    :func:`scheduler_setting`). Serial and local settings: nothing, no network."""
    with _checked_remote(PREFLIGHT_TIMEOUT):
        pass


class _WorkerWatch:
    """A thread that cancels ``futures`` when the cluster has had no worker for
    ``NO_WORKER_GRACE_S``, or its scheduler has not answered for ``SCHEDULER_SILENT_S`` (Dask
    would wait for either for ever); ``gone`` / ``silent`` say which it did."""

    def __init__(self, client, futures: list) -> None:
        self.client, self.futures, self.gone, self.silent = client, futures, False, False
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True, name="grid-worker-watch")
        self.thread.start()

    def _watch(self) -> None:
        since, answered = None, time.monotonic()
        while not self.stop.wait(min(5.0, NO_WORKER_GRACE_S / 3)):
            left = SCHEDULER_SILENT_S - (time.monotonic() - answered)   # asked so that the wait ends on time
            try:
                count = _workers_within(self.client, max(0.1, min(SCHEDULER_ANSWER_S, left)))
            except TimeoutError:
                if time.monotonic() - answered >= SCHEDULER_SILENT_S:
                    self.silent = True
                    self._cancel()
                    return
                continue
            except Exception:       # the scheduler is gone: the main loop reports that
                return
            answered = time.monotonic()
            if count:
                since = None
                continue
            since = since or time.monotonic()
            if time.monotonic() - since >= NO_WORKER_GRACE_S:
                self.gone = True
                self._cancel()
                return

    def _cancel(self) -> None:
        """Cancel the unfinished futures here (the message to the scheduler is only queued, so
        this returns with a scheduler that does not answer); the main loop then stops."""
        with contextlib.suppress(Exception):
            self.client.cancel([f for f in self.futures if not f.done()])

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def code_package(fn: Callable) -> str:
    """The top-level package whose :func:`code_version` a worker computing ``fn`` must share:
    ``fn``'s own, or this suite's for a function of a script run as ``__main__`` (Dask sends
    such a function by value, so its code travels with it; the suite's code it calls does
    not, and a worker's ``__main__`` is Dask's own command)."""
    package = fn.__module__.partition(".")[0]
    return __name__.partition(".")[0] if package == "__main__" else package


def _versioned(fn: Callable, package: str, args: tuple, kwargs: dict) -> tuple[str, str, Any]:
    """Run on a worker: (its address, its :func:`code_version` of ``package``, ``fn(*args, **kwargs)``)."""
    from distributed import get_worker
    return get_worker().address, code_version(package), fn(*args, **kwargs)


def _run_on(client, setting, fn, points, groups, keep, bar, record, label) -> None:
    """Compute one point of each of ``groups`` (key: the indices into ``points`` that have it)
    on ``client``'s cluster and ``keep`` its result for the group as it arrives; raises
    :class:`GridError` before keeping a result that a worker computed with other code than
    this process's, and :class:`GridPointError` when a point raised (chained from its
    exception)."""
    from distributed import as_completed
    package = code_package(fn)
    ours = code_version(package)
    firsts = [same[0] for same in groups.values()]
    sent = [points[i] for i in firsts]
    if setting != "local":
        _check_cluster(client, setting, package)
        sent = _scatter_missing(client, sent, record)
    index = {}
    futures = []
    for key, same, point in zip(groups, groups.values(), sent):
        args, kwargs = ((), point) if isinstance(point, dict) else (tuple(point), {})
        future = client.submit(_versioned, fn, package, args, kwargs, key=f"{label}-{key}", pure=False)
        index[future.key] = same
        futures.append(future)
    pending = record["computed"]
    done = 0
    watch = _WorkerWatch(client, futures)
    try:
        for future in as_completed(futures, loop=client.loop):  # the client need not be the default
            same = index[future.key]
            if future.status == "error":            # the point's function raised (or killed its workers)
                try:
                    future.result()
                except MemoryError:
                    raise
                except FileNotFoundError as exc:
                    if setting != "local" and _is_shared_array(getattr(exc, "filename", None)):
                        raise GridError(
                            f"{record['where']}: a worker cannot read the shared array {exc.filename} that point "
                            f"{same[0] + 1} of {len(points)} of {label!r} needs: every worker there when the "
                            f"grid started read it from this machine's file system, so it was not sent, and a "
                            f"worker that joined later without that file system cannot; give every worker the "
                            f"file system (the data cache), or start them all before the run; the "
                            f"{record['reused'] + done} finished points are kept under {results_dir(label)} "
                            f"and a rerun computes only the rest") from exc
                    raise _point_failed(label, same[0], points, exc) from exc
                except Exception as exc:
                    raise _point_failed(label, same[0], points, exc) from exc
            worker, version, value = future.result()
            if version != ours:
                what = ("this checkout's sources changed after this process read them: rerun once the edits "
                        "are done" if setting == "local" else
                        "start the workers from a checkout of the same commit, with the same local changes, "
                        "or restart them: a worker keeps the code it loaded when it started")
                raise GridError(
                    f"{record['where']}: worker {worker} runs other code than this process ({package} version "
                    f"{version}, here {ours}); its result for point {same[0] + 1} of {len(points)} of {label!r} "
                    f"is not kept (it would be stored as this code's), the {record['reused'] + done} finished "
                    f"points are kept under {results_dir(label)}; {what}")
            keep(same, value)
            done += len(same)
            bar.update(len(same))
    except (GridError, GridPointError):
        raise
    except Exception as exc:
        if watch.silent:
            raise GridError(
                f"the Dask scheduler ({record['where']}) has not answered for {SCHEDULER_SILENT_S:.0f} s (a "
                f"stopped or hung process keeps its connection open), after {done} of {pending} points of "
                f"{label!r}; the {record['reused'] + done} finished points are kept under "
                f"{results_dir(label)} and a rerun computes only the rest: restart the scheduler") from None
        if watch.gone:
            raise GridError(
                f"no Dask worker left ({record['where']} when the grid started) for "
                f"{NO_WORKER_GRACE_S:.0f} s, after {done} of "
                f"{pending} points of {label!r}; the {record['reused'] + done} finished points are kept "
                f"under {results_dir(label)} and a rerun computes only the rest") from None
        forgotten = _cancelled_by_scheduler(client, exc) if setting != "local" else ""
        if forgotten:
            raise GridError(
                f"the Dask scheduler ({record['where']}) cancelled a point of {label!r} ({forgotten}) after "
                f"{done} of {pending} points: most often the input arrays sent to the workers (which could "
                f"not read them) were lost with the workers that held them; the {record['reused'] + done} "
                f"finished points are kept under {results_dir(label)} and a rerun computes only the rest; "
                f"workers that share this machine's file system (the data cache) need no array sent") from exc
        if _scheduler_lost(client, exc):
            raise GridError(
                f"lost the Dask scheduler ({record['where']}) after {done} of {pending} points of "
                f"{label!r}; the {record['reused'] + done} finished points are kept under "
                f"{results_dir(label)} and a rerun computes only the rest") from exc
        raise
    finally:
        watch.close()
        for future in futures:
            future.release()


def _is_shared_array(filename: object) -> bool:
    """Whether ``filename`` names an array :func:`share` stored (a worker reads it at the path
    this process wrote it to)."""
    return isinstance(filename, str) and Path(filename).suffix == ".npy" and Path(filename).parent == arrays_dir()


def _cancelled_by_scheduler(client, exc: BaseException) -> str:
    """The reason a point was cancelled while this client still holds its scheduler (the
    future's ``reason``, e.g. "already forgotten"); "" where the scheduler's connection is
    what was lost, or for any other exception."""
    from concurrent.futures import CancelledError
    if not isinstance(exc, CancelledError) or getattr(client, "status", "running") not in ("running",):
        return ""
    reason = str(getattr(exc, "reason", "") or "")
    if reason in ("", "unknown") or reason.startswith("scheduler-"):   # scheduler-connection-lost, -restart
        return ""
    return reason


def _scheduler_lost(client, exc: BaseException) -> bool:
    from concurrent.futures import CancelledError
    from distributed.comm.core import CommClosedError
    if isinstance(exc, (CancelledError, CommClosedError)):
        return True
    return getattr(client, "status", "running") not in ("running", "connecting")
