#!/usr/bin/env python
"""Run every asv benchmark of the current profile on this environment, then render the report.

Results are saved under .asv/results/<machine>-<profile>/ for the checked-out commit
(asv with --python=same saves results only with --set-commit-hash), the artifacts under
the same name, and a copy of the run in .asv/runs/ (asv overwrites a commit's results when
it runs again; `make compare` and `make noise` read the copies). A failing benchmark does
not lose the others' results; the exit status is asv's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from impls.harness import cli, paths, registry  # noqa: E402
from impls.harness.commands import check_settings  # noqa: E402
from impls.harness.profiles import current_profile  # noqa: E402
from impls.harness.report.runs import archive_run, machine_for_profile  # noqa: E402


def ensure_machine(machine: str) -> None:
    """Register ``machine`` with asv (~/.asv-machine.json) unless it is already there."""
    machine_file = Path.home() / ".asv-machine.json"
    if machine_file.exists() and machine in json.loads(machine_file.read_text()):
        return
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", machine],
                   cwd=paths.repo_root(), check=True)


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

    root, commit = paths.repo_root(), paths.git_commit()
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
        parser.error("no git commit to file results under: run inside a git checkout with a commit")
    print(f"dlsysbench: profile={current_profile()} machine={machine} commit={commit[:12]}", flush=True)
    ensure_machine(machine)
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
    started = time.monotonic()
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
    child = subprocess.Popen(command, cwd=root, env={**os.environ, **identity})
    try:
        status = child.wait()
    except KeyboardInterrupt:   # Ctrl-C reached asv too (one process group): let it stop, then say so once
        try:
            child.wait(timeout=60)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            child.kill()
            child.wait()
        print("dlsysbench: interrupted: asv stopped; this run is not archived (make compare and make noise "
              "never see it), and what asv saved before it stopped stays in .asv/results until the next run",
              file=sys.stderr, flush=True)
        return 130
    finally:
        stop.set()
        follower.join(timeout=5)
    archive_run(paths.results_dir(), machine, commit)
    print(f"dlsysbench: asv finished in {time.monotonic() - started:.0f} s (exit {status})", flush=True)

    if not args.no_report:
        render = subprocess.run([sys.executable, str(root / "scripts" / "render_report.py"),
                                 "--machine", machine], cwd=root)
        status = status or render.returncode
    return status


if __name__ == "__main__":
    sys.exit(main())
