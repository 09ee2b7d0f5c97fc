#!/usr/bin/env python
"""Run every asv benchmark of the current profile on this environment, then render the report.

Results are saved under .asv/results/<machine>-<profile>/ for the checked-out commit
(asv with --python=same saves results only with --set-commit-hash), the artifacts under
the same name, and a copy of the run in .asv/runs/ (asv overwrites a commit's results when
it runs again; `make compare` and `make noise` read the copies). A failing benchmark does
not lose the others' results; the exit status is asv's, else the report's (1 when a result
or artifact file could not be read, or a figure failed to draw: scripts/render_report.py).

One suite run at a time per checkout and machine: a second one exits 2 naming the first's
pid (or, when the first was killed and its asv runs on, asv's). Ctrl-C, SIGTERM and SIGHUP
stop asv (it gets SIGINT, so it also stops the benchmark it runs in its own process group),
print one line saying whether asv had saved the commit's results, and exit 128 + the
signal's number; during the report's rendering they stop the renderer the same way, and
the line says the results are kept. asv and the renderer start with SIGINT at its default
whatever this process inherited (a background job of a non-interactive shell, as CI starts
one, inherits it ignored), and get SIGINT when this process dies, SIGKILL included (Linux).
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from impls.harness import cli, paths, registry, space, tethered  # noqa: E402
from impls.harness.atomic import pid_alive  # noqa: E402
from impls.harness.commands import check_settings, no_commit_advice  # noqa: E402
from impls.harness.profiles import current_profile  # noqa: E402
from impls.harness.report.asv_files import result_files  # noqa: E402
from impls.harness.report.runs import archive_run, machine_for_profile  # noqa: E402


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
GRACE_S = 60.0


def hold_run_lock(machine: str, folder: Path | None = None) -> IO[str]:
    """Return the open file ``<folder>/run-<machine>.lock`` (folder: ``.asv/``, created if
    missing), exclusively ``flock``-ed by this process, with this process's pid written in it.

    The lock lasts while the file is open in any process: close it when the run ends; asv
    keeps it open too (:func:`note_asv`), so a run killed while its asv runs on stays locked
    until asv ends, and the OS releases it once neither lives: nothing stale is left. Raises
    ValueError with one line if another process holds it, naming the other run's pid, or,
    when that run is gone, its asv's (the file records both).
    """
    folder = folder if folder is not None else paths.asv_dir()
    path = folder / f"run-{machine}.lock"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+", encoding="utf-8")
    except OSError as err:
        raise ValueError(f"cannot create the suite's lock file {path}: {err.strerror}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        pids = [int(word) for word in handle.read().split() if word.isdigit()]
        handle.close()
        runner, asv = (pids + [0, 0])[:2]
        if runner and not pid_alive(runner) and asv and pid_alive(asv):
            raise ValueError(f"the asv (pid {asv}) of a suite run that was killed (pid {runner}) is still "
                             f"running for {machine} (it holds {path}); wait for it or stop it") from None
        who = f" (pid {runner})" if runner and pid_alive(runner) else ""
        raise ValueError(f"another suite run{who} is running for {machine} (it holds {path}); "
                         "wait for it or stop it") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def note_asv(lock: IO[str], pid: int) -> None:
    """Record asv's ``pid`` in the run's ``lock`` file (after the runner's own), for the
    message :func:`hold_run_lock` gives while that asv holds the lock."""
    lock.write(f"{pid}\n")
    lock.flush()


class _Stopped(Exception):
    """Raised in the main thread by a SIGTERM or SIGHUP handler; ``signum`` is the signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def wait_for(start: Callable[[], subprocess.Popen], grace_s: float = GRACE_S) -> tuple[int, int | None]:
    """Start the child with ``start()`` and wait for it; return ``(its exit status, the signal
    that stopped this run or None)``.

    Ctrl-C reaches the child from the terminal (one process group; where this process
    ignores SIGINT, :func:`impls.harness.tethered.start` gives the child a group of its own,
    and a Ctrl-C reaches neither), so it is only waited for;
    SIGTERM and SIGHUP, which reach this process alone, are forwarded to the child as SIGINT
    (asv stops like on Ctrl-C and stops the benchmark it runs in its own process group; on
    SIGTERM it would die at once and leave that benchmark running). A stopping child gets
    ``grace_s`` seconds, then is killed; a second signal kills it at once. The child has
    ended when this returns, and the previous handlers are back; an ignored signal (SIGHUP
    under nohup) stays ignored.
    """
    pending: list[int] = []
    armed = False

    def stop(signum, frame):
        pending.append(signum)
        if armed:
            raise _Stopped(signum)

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:   # one ignored (nohup's SIGHUP) stays ignored
            if signal.getsignal(signum) is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, stop)
    try:
        child = start()   # a signal while it starts is only recorded, then acted on below
        armed = True
        try:
            if pending:
                raise _Stopped(pending[0])
            return child.wait(), None
        except KeyboardInterrupt:
            signum = signal.SIGINT
        except _Stopped as stopped:
            signum = stopped.signum
            armed = False   # a second signal while forwarding is only recorded
            try:
                child.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass
            armed = True
        try:
            status = child.wait(timeout=grace_s)
        except (subprocess.TimeoutExpired, KeyboardInterrupt, _Stopped):
            child.kill()
            status = child.wait()
        return status, int(signum)
    finally:
        armed = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def commit_results(machine: str, commit: str) -> dict[Path, int]:
    """Return asv's live result files of ``commit`` on ``machine`` with their modification
    times (ns): the files asv saves the commit's results in (named by its first 8 digits)."""
    stamps = {}
    try:
        for path in result_files(paths.results_dir(), machine):
            if path.name.startswith(f"{commit[:8]}-"):
                stamps[path] = path.stat().st_mtime_ns
    except OSError:   # unreadable: the closing line then says what it can
        pass
    return stamps


def interrupted(signum: int, machine: str, commit: str, since: float, before: dict[Path, int],
                status: int = 1) -> int:
    """Print the one line saying what a run stopped by ``signum`` left behind; return its exit
    status, 128 + ``signum``. ``since``: the run's start (``time.time()``, seconds), to count
    the artifacts it wrote under ``<artifacts>/<machine>/<commit>/``; ``before``: the
    commit's result files as :func:`commit_results` found them before asv started (a file
    new or changed since was saved by this run); ``status``: asv's exit status (-SIGINT: a
    KeyboardInterrupt it did not catch, outside a benchmark, whose traceback it printed)."""
    folder = paths.artifacts_root() / machine / commit
    try:
        written = sum(1 for file in folder.glob("*.json") if file.stat().st_mtime >= since - 1.0)
    except OSError:
        written = 0
    left = (f"the {written} artifact(s) it wrote stay in {folder} and a report made now shows them "
            "beside the older results" if written else "it wrote no artifacts")
    saved = sorted(str(path) for path, stamp in commit_results(machine, commit).items() if before.get(path) != stamp)
    results = (f"asv saved its results for commit {commit[:12]} before it stopped, in {', '.join(saved)} (the live "
               "results `make report` reads)" if saved else
               f"asv saved no results from it for commit {commit[:12]} (it saves a commit's results only once all "
               "its benchmarks ran)")
    how = " (the KeyboardInterrupt traceback above is asv's own, not an error)" if status == -signal.SIGINT else ""
    return _stopped(signum, f"interrupted: asv stopped{how}; this run is not archived (make compare and make noise "
                            f"never see it) and {results}; {left}")


def _stopped(signum: int, line: str) -> int:
    """Print ``dlsysbench: <line>`` on stderr, where the terminal is still there; return 128 +
    ``signum``, the exit status of a run a signal stopped."""
    try:
        print(f"dlsysbench: {line}", file=sys.stderr, flush=True)
    except OSError:   # SIGHUP: the terminal may be gone
        pass
    return 128 + signum


def run_line(profile: str, machine: str, commit: str, patterns: list[str]) -> str:
    """The line that opens a run: its profile, machine, commit (12 hex) and each ``--bench``
    pattern quoted as a shell reads it back (a pasted regex matches what this run did)."""
    selected = "".join(f" --bench {shlex.quote(pattern)}" for pattern in patterns)
    return f"dlsysbench: profile={profile} machine={machine} commit={commit[:12]}{selected}"


def ensure_machine(machine: str) -> None:
    """Register ``machine`` with asv (~/.asv-machine.json) with asv's own description of this
    machine (os, arch, cpu, num_cpu, ram; ``asv machine --yes --machine NAME`` would record the
    name alone), unless it is there with one; raises ValueError naming that file when it
    cannot be read or written."""
    machine_file = Path.home() / ".asv-machine.json"
    try:
        known = json.loads(machine_file.read_text()) if machine_file.exists() else {}
        if not isinstance(known, dict) or not all(isinstance(v, (dict, int)) for v in known.values()):
            raise ValueError("expected asv's object of machines")
    except (OSError, ValueError) as err:     # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{machine_file}: asv's machine file cannot be read ({' '.join(str(err).split())}); "
                         "repair or remove it (asv writes it again)") from None
    entry = known.get(machine)
    if isinstance(entry, dict) and entry.get("cpu"):
        return
    from asv.machine import Machine, MachineCollection

    try:
        facts = {key: value for key, value in Machine.get_defaults().items() if value}
    except Exception:        # noqa: BLE001 - asv reads the platform its own way; the name still works
        facts = {}
    try:
        MachineCollection.save(machine, {**facts, **(entry if isinstance(entry, dict) else {}), "machine": machine},
                               _path=str(machine_file))
    except OSError as err:
        home = (not machine_file.parent.is_dir() or not os.access(machine_file.parent, os.W_OK | os.X_OK)
                or isinstance(err, PermissionError) or err.errno == errno.EROFS)
        raise ValueError(f"asv could not register machine {machine!r} in {machine_file} "
                         f"({type(err).__name__}: {' '.join(str(err).split())})"
                         + ("; HOME must name a folder this user can write" if home else "")) from None


def follow(log: Path, stop: threading.Event, every_s: float = 10.0) -> None:
    """Print what experiments append to ``log`` (asv holds their own output until they end):
    every whole line, and the newest progress-bar state at most every ``every_s`` seconds."""
    offset, last_bar, shown = 0, "", 0.0
    while not stop.wait(1.0):
        try:
            with open(log, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read()
        except OSError:
            continue
        offset += len(chunk)
        for piece in chunk.decode("utf-8", "replace").replace("\r", "\n").split("\n"):
            piece = piece.strip()
            if piece.startswith("["):
                print(f"dlsysbench: {piece}", flush=True)
            elif piece:
                last_bar = piece
        if last_bar and time.monotonic() - shown >= every_s:
            print(f"dlsysbench:   {last_bar}", flush=True)
            last_bar, shown = "", time.monotonic()


def main(argv: list[str] | None = None) -> int:
    parser = cli.OneLineParser(prog="python scripts/run_suite.py", description=__doc__.splitlines()[0])
    parser.add_argument("--bench", "-b", action="append", default=[],
                        help="only benchmarks matching this regex (asv --bench); repeatable")
    parser.add_argument("--no-report", action="store_true", help="run asv only")
    args = parser.parse_args(argv)
    for pattern in args.bench:
        try:
            re.compile(pattern)
        except re.error as err:
            parser.error(f"--bench {shlex.quote(pattern)} is not a regular expression ({err})")

    commit = paths.git_commit()
    try:
        machine = machine_for_profile(paths.machine_name(), current_profile())
        # asv runs each benchmark's set-up in a temporary directory it deletes: a relative path
        # means the directory the user ran this from (the real data sets' variables too)
        where = {name: str(paths.env_path(name)) for name in
                 ("DLSYSBENCH_NVM_PATH", "DLSYSBENCH_CACHE", "DLSYSBENCH_ARTIFACTS", "DLSYSBENCH_GRID_RESULTS")
                 if os.environ.get(name)}
        # the cache, grid results and Dask scheduler, before any benchmark: a remote scheduler
        # is reached once here, not by each grid experiment's set-up after its own timeout
        check_settings(reach_scheduler=True)
    except ValueError as err:  # a bad DLSYSBENCH_PROFILE, DLSYSBENCH_MACHINE, path or Dask variable
        print(f"dlsysbench: error: {err}", file=sys.stderr)
        return 2
    if commit == "unknown":
        parser.error(f"no git commit to file results under: {no_commit_advice()}")
    print(run_line(current_profile(), machine, commit, args.bench), flush=True)
    try:
        short = space.shortfall(current_profile())     # an estimate: said, not refused
    except (OSError, ValueError):
        short = None                                   # never a reason not to run
    if short:
        print(f"dlsysbench: warning: {short}", file=sys.stderr, flush=True)
    try:
        lock = hold_run_lock(machine)
    except ValueError as err:
        print(f"dlsysbench: error: {err}", file=sys.stderr)
        return 2
    with lock:
        return _run(args, machine, commit, where, lock)


def _run(args, machine: str, commit: str, where: dict[str, str], lock: IO[str]) -> int:
    """Run asv for ``commit`` on ``machine``, archive the run and render the report; return the
    exit status (asv's, else the report's; 128 + the signal when a signal stopped the run).
    asv holds the run's ``lock`` too, for as long as it lives."""
    root = paths.repo_root()
    try:
        ensure_machine(machine)
    except ValueError as err:
        print(f"dlsysbench: error: {err}", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "asv", "run", "--python=same", "--set-commit-hash", commit,
               "--machine", machine, "--show-stderr"]
    for pattern in args.bench:
        command += ["--bench", pattern]
    log = paths.repo_root() / ".asv" / f"progress-{machine}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    stop = threading.Event()
    follower = threading.Thread(target=follow, args=(log, stop), daemon=True)
    follower.start()
    started, since = time.monotonic(), time.time()
    # asv --python=same exports neither the commit nor the checkout to the benchmarks: without
    # these, artifacts went to the installed checkout under whatever commit it had checked out,
    # and the benchmarks imported the installed impls (asv passes only ASV_PYTHONPATH on)
    pythonpath = os.pathsep.join(filter(None, [str(root), os.environ.get("ASV_PYTHONPATH")]))
    identity = {"DLSYSBENCH_MACHINE": machine, "DLSYSBENCH_ROOT": str(root), "ASV_COMMIT": commit,
                "ASV_PYTHONPATH": pythonpath, "DLSYSBENCH_PROGRESS_LOG": str(log), **where}
    real_data = [m.spec["env"] for m in registry.manifests().values() if not m.synthetic and "env" in m.spec]
    for name in real_data:   # a missing real set is reported as missing, by its path as typed
        if os.environ.get(name):
            identity[name] = str(paths.typed_path(os.environ[name]))
    env = {**os.environ, **identity}

    def start_asv() -> subprocess.Popen:
        child = tethered.start(command, cwd=root, env=env, pass_fds=(lock.fileno(),))
        note_asv(lock, child.pid)
        return child

    before = commit_results(machine, commit)
    try:
        status, signum = wait_for(start_asv, GRACE_S)
    finally:
        stop.set()
        follower.join(timeout=5)
    if signum is not None:
        return interrupted(signum, machine, commit, since, before, status)
    archive_run(paths.results_dir(), machine, commit)
    print(f"dlsysbench: asv finished in {time.monotonic() - started:.0f} s (exit {status})", flush=True)

    if not args.no_report:
        rendered, signum = wait_for(lambda: tethered.start([sys.executable, str(root / "scripts" / "render_report.py"),
                                                   "--machine", machine], cwd=root), GRACE_S)
        if signum is not None:
            return interrupted_render(signum, machine)
        status = status or rendered
    return status


def interrupted_render(signum: int, machine: str) -> int:
    """Print the one line saying what a signal ``signum`` during the report's rendering left
    (the run's results are saved and archived; the report may be partly written); return
    128 + ``signum``."""
    return _stopped(signum, f"interrupted while rendering the report: the run's results are saved and archived; "
                            f"the report in {paths.reports_dir() / 'out' / machine} may be incomplete: "
                            "`make report` renders it again from them")


if __name__ == "__main__":
    sys.exit(main())
