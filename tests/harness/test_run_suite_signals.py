"""The suite's runner (scripts/run_suite.py) under signals and a second run: one run per
checkout and machine, and a SIGTERM or SIGHUP stops asv instead of orphaning it.

No asv runs here: a small Python script stands in for it.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from impls.harness.atomic import pid_alive

ROOT = Path(__file__).resolve().parents[2]
COMMIT = "ab" * 20

# Stands in for asv: writes one artifact where the runner's environment says, writes its
# process group to "group", says it is ready with its pid, then sleeps; on SIGINT (asv's
# Ctrl-C) records it and ends. "obliging" handles SIGINT itself; "stubborn" ignores it like
# a child stuck in a call; "asv" and "saving" keep the SIGINT disposition Python started
# with, as asv does: "asv" dies of the KeyboardInterrupt, as asv in a set-up step, and
# "saving" has saved the commit's results first, as asv does once all its benchmarks ran.
FAKE_ASV = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path

    record, mode = Path(sys.argv[1]), sys.argv[2]

    def on_int(signum, frame):
        record.write_text("SIGINT")
        sys.exit(1)

    if mode in ("stubborn", "obliging"):
        signal.signal(signal.SIGINT, signal.SIG_IGN if mode == "stubborn" else on_int)
    folder = Path(os.environ["DLSYSBENCH_ARTIFACTS"], os.environ["DLSYSBENCH_MACHINE"], os.environ["ASV_COMMIT"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "toy.json").write_text("{}")
    if mode == "saving":
        results = Path(os.environ["DLSYSBENCH_ROOT"], ".asv", "results", os.environ["DLSYSBENCH_MACHINE"])
        results.mkdir(parents=True, exist_ok=True)
        (results / (os.environ["ASV_COMMIT"][:8] + "-fake.json")).write_text("{}")
    (record.parent / "group").write_text(str(os.getpgid(0)))
    (record.parent / "ready").write_text(str(os.getpid()))
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        record.write_text("SIGINT")
        if mode == "asv":
            raise    # as asv in a set-up step: a traceback, and death by SIGINT
        sys.exit(1)  # as asv in a benchmark: one line, exit status 1
""")

# Runs the runner's main() with asv replaced by FAKE_ASV; as make reproduce does, in a
# process whose SIGTERM and SIGHUP are Python's defaults.
DRIVER = textwrap.dedent("""
    import importlib.util, signal, subprocess, sys

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    script, fake, record, mode, grace = sys.argv[1:]
    spec = importlib.util.spec_from_file_location("run_suite", script)
    run_suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_suite)
    real = subprocess.Popen
    run_suite.subprocess.Popen = lambda command, **kw: real([sys.executable, fake, record, mode], **kw)
    run_suite.ensure_machine = lambda machine: None
    run_suite.archive_run = lambda *args: print("archived", flush=True)
    run_suite.paths.git_commit = lambda short=False: "%s"
    run_suite.GRACE_S = float(grace)
    sys.exit(run_suite.main(["--no-report"]))
""" % COMMIT)


@pytest.fixture
def machine(monkeypatch):
    """A machine name of this test's own (DLSYSBENCH_MACHINE); its lock and progress log in
    .asv/ and its results folder are removed afterwards. Returns the suite's machine name
    (``-smoke`` added)."""
    name = f"sigtest{os.getpid()}x{time.monotonic_ns() % 10**6}"
    monkeypatch.setenv("DLSYSBENCH_MACHINE", name)
    yield f"{name}-smoke"
    for leftover in (f"run-{name}-smoke.lock", f"progress-{name}-smoke.log"):
        (ROOT / ".asv" / leftover).unlink(missing_ok=True)
    shutil.rmtree(ROOT / ".asv" / "results" / f"{name}-smoke", ignore_errors=True)


def _wait_for_file(path: Path, process: subprocess.Popen, timeout_s: float = 120.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"exited {process.returncode} before {path.name}: {out}{err}")
        time.sleep(0.2)
    raise AssertionError(f"no {path.name} after {timeout_s} s")


def test_a_second_run_for_the_same_machine_is_refused_naming_the_first_runs_pid(
        machine, monkeypatch, load_script, capsys):
    """Two runs at once garbled each other's progress, lost an archive and timed each other's
    load; the second one now stops before asv with one line naming the first's pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import importlib.util, sys
            spec = importlib.util.spec_from_file_location("run_suite", {str(ROOT / "scripts" / "run_suite.py")!r})
            run_suite = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(run_suite)
            lock = run_suite.hold_run_lock({machine!r})
            print("held", flush=True)
            sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline()
        assert line == "held\n", holder.stderr.read() if holder.poll() is not None else line
        run_suite = load_script("run_suite")
        started = []
        monkeypatch.setattr(run_suite.subprocess, "Popen", lambda command, **_: started.append(command))
        monkeypatch.setattr(run_suite, "ensure_machine", lambda name: None)
        monkeypatch.setattr(run_suite.paths, "git_commit", lambda short=False: COMMIT)
        assert run_suite.main(["--no-report"]) == 2
        assert started == []
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("dlsysbench: error: "), err
        assert f"another suite run (pid {holder.pid}) is running for {machine}" in err
        assert f"run-{machine}.lock" in err and "wait for it or stop it" in err
    finally:
        holder.kill()
        holder.communicate()
    # the holder died without unlocking: the OS released its lock, nothing stale is left
    with run_suite.hold_run_lock(machine) as lock:
        assert Path(lock.name).read_text() == f"{os.getpid()}\n"


def test_a_finished_run_releases_its_lock(machine, monkeypatch, load_script):
    run_suite = load_script("run_suite")

    class FakeAsv:
        pid = 12345

        def __init__(self, command, **_):
            pass

        def wait(self, timeout=None):
            lock = ROOT / ".asv" / f"run-{machine}.lock"
            assert lock.read_text() == f"{os.getpid()}\n{self.pid}\n", "asv started without the run's lock"
            return 0

    monkeypatch.setattr(run_suite.subprocess, "Popen", FakeAsv)
    monkeypatch.setattr(run_suite, "ensure_machine", lambda name: None)
    monkeypatch.setattr(run_suite, "archive_run", lambda *args: None)
    monkeypatch.setattr(run_suite.paths, "git_commit", lambda short=False: COMMIT)
    assert run_suite.main(["--no-report"]) == 0
    assert run_suite.main(["--no-report"]) == 0   # the first one's lock is gone with it


@pytest.mark.parametrize("signum, mode", [(signal.SIGTERM, "obliging"), (signal.SIGHUP, "stubborn")])
def test_a_terminated_run_stops_asv_says_so_once_and_exits_128_plus_the_signal(
        signum, mode, machine, tmp_path):
    """A SIGTERM or SIGHUP to the runner ends asv too, never leaving it running with no
    parent: asv gets SIGINT (it stops its benchmark's process group on that, not on
    SIGTERM), and one that does not stop within the grace period is killed; the runner says
    so in one line and exits 128 + the signal."""
    record = tmp_path / "signal.txt"
    returncode, out, err = _signalled_run(tmp_path, DRIVER, signum, [str(record), mode, "1"], "asv")
    assert returncode == 128 + signum, (returncode, out, err)
    assert record.exists() == (mode == "obliging")   # the obliging one got SIGINT, the stubborn one was killed
    assert "archived" not in out
    assert err.count("\n") == 1 and err.startswith("dlsysbench: interrupted: "), err
    assert "not archived" in err and f"for commit {COMMIT[:12]}" in err
    assert f"the 1 artifact(s) it wrote stay in {tmp_path / 'artifacts' / machine / COMMIT}" in err
    assert f"asv saved no results from it for commit {COMMIT[:12]}" in err
    assert "stays in .asv/results" not in err
    assert int((tmp_path / "group").read_text()) == os.getpgid(0)   # a Ctrl-C at the terminal reaches it


def test_a_run_started_with_sigint_ignored_still_stops_asv_on_sigterm(machine, tmp_path):
    """A background job of a non-interactive shell (as CI starts one) inherits SIGINT
    ignored, and asv inherited it too: the SIGINT a SIGTERM is forwarded as did nothing, and
    asv ran on and saved its results. asv now starts with SIGINT at its default and stops on
    it, in a process group of its own (the terminal's Ctrl-C, which the runner ignores, does
    not reach it either)."""
    record = tmp_path / "signal.txt"
    returncode, out, err = _signalled_run(tmp_path, DRIVER, signal.SIGTERM, [str(record), "asv", "10"], "asv",
                                          sigint_ignored=True)
    assert returncode == 128 + signal.SIGTERM, (returncode, out, err)
    assert record.exists(), "asv ignored the SIGINT and was killed after the grace period"
    assert record.read_text() == "SIGINT"
    assert int((tmp_path / "group").read_text()) == int((tmp_path / "ready").read_text())
    # asv's own traceback comes first: the runner's one line says whose it is
    assert err.splitlines()[-2] == "KeyboardInterrupt", err
    assert err.splitlines()[-1].startswith("dlsysbench: interrupted: asv stopped (the KeyboardInterrupt traceback "
                                           "above is asv's own, not an error); "), err


def test_the_closing_line_says_so_when_asv_had_saved_the_commits_results(machine, tmp_path):
    """The line said "asv saved no results" while asv had rewritten the commit's live result
    file, the one `make report` reads: it now names that file."""
    record = tmp_path / "signal.txt"
    returncode, out, err = _signalled_run(tmp_path, DRIVER, signal.SIGTERM, [str(record), "saving", "10"], "asv")
    assert returncode == 128 + signal.SIGTERM, (returncode, out, err)
    saved = ROOT / ".asv" / "results" / machine / f"{COMMIT[:8]}-fake.json"
    assert err.count("\n") == 1, err
    assert f"asv saved its results for commit {COMMIT[:12]} before it stopped, in {saved} (the live results" in err
    assert "saved no results" not in err and "traceback" not in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_the_asv_of_a_killed_run_gets_sigint_and_stops(machine, tmp_path):
    """A SIGKILLed runner left asv running with no parent, beside the next run, and it later
    overwrote the live results with contended numbers; asv now gets SIGINT when its parent
    dies (it stops its benchmark the Ctrl-C way and saves nothing)."""
    record = tmp_path / "signal.txt"
    run, child = _start_run(tmp_path, DRIVER, [str(record), "asv", "10"])
    try:
        run.kill()
        try:
            run.communicate(timeout=30)   # the fake holds the runner's pipes open until it ends
        except subprocess.TimeoutExpired:
            raise AssertionError("asv outlived its killed runner") from None
        assert record.read_text() == "SIGINT"
    finally:
        _end(run, child)


def test_the_asv_of_a_killed_run_keeps_its_lock_while_it_lives_and_is_named(machine, tmp_path, load_script):
    """An asv that outlives its runner (here one that ignores SIGINT) keeps the run's lock, so
    the next run is refused instead of timing beside it; the refusal names asv, since the pid
    of the runner it would otherwise name is gone."""
    record = tmp_path / "signal.txt"
    run, child = _start_run(tmp_path, DRIVER, [str(record), "stubborn", "10"])
    try:
        run.kill()
        run.wait(timeout=30)
        run_suite = load_script("run_suite")
        with pytest.raises(ValueError) as refused:
            run_suite.hold_run_lock(machine)
        lock = ROOT / ".asv" / f"run-{machine}.lock"
        assert str(refused.value) == (f"the asv (pid {child}) of a suite run that was killed (pid {run.pid}) is still "
                                      f"running for {machine} (it holds {lock}); wait for it or stop it")
        os.kill(child, signal.SIGKILL)
        run.communicate(timeout=30)   # returns once the fake, which holds the runner's pipes, has ended
        with run_suite.hold_run_lock(machine) as held:   # released with asv
            assert Path(held.name).read_text() == f"{os.getpid()}\n"
    finally:
        _end(run, child)


def _start_run(tmp_path: Path, driver_text: str, args: list[str], sigint_ignored: bool = False
               ) -> tuple[subprocess.Popen, int]:
    """Start the runner through ``driver_text`` with FAKE_ASV standing in for its child (SIGINT
    ignored when ``sigint_ignored``, as a non-interactive shell's background job starts) and
    return it and the child's pid once the child is ready."""
    fake, driver = tmp_path / "fake.py", tmp_path / "driver.py"
    fake.write_text(FAKE_ASV)
    driver.write_text(driver_text)
    env = {**os.environ, "DLSYSBENCH_ARTIFACTS": str(tmp_path / "artifacts")}
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    run = subprocess.Popen([sys.executable, str(driver), str(ROOT / "scripts" / "run_suite.py"), str(fake), *args],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=ignore)
    try:
        return run, int(_wait_for_file(tmp_path / "ready", run))
    except BaseException:
        _end(run, None)
        raise


def _end(run: subprocess.Popen, child: int | None) -> None:
    """Kill the runner and the child (pid ``child``) if they still run."""
    if run.poll() is None:
        run.kill()
        run.communicate()
    if child is not None and pid_alive(child):
        os.kill(child, signal.SIGKILL)


def _signalled_run(tmp_path: Path, driver_text: str, signum: int, args: list[str], child_name: str,
                   sigint_ignored: bool = False) -> tuple[int, str, str]:
    """Run the runner through ``driver_text`` with FAKE_ASV standing in for its child, send it
    ``signum`` once the child is ready, and return (exit status, stdout, stderr); fails if the
    child (``child_name`` in the message) outlived the runner."""
    run, child = _start_run(tmp_path, driver_text, args, sigint_ignored)
    try:
        run.send_signal(signum)
        run.wait(timeout=60)   # a child left running would hold the pipes open: look before reading them
        orphaned = pid_alive(child)
        if orphaned:
            os.kill(child, signal.SIGKILL)
        out, err = run.communicate(timeout=30)
        assert not orphaned, f"{child_name} outlived the runner (exit {run.returncode}): {err}"
        return run.returncode, out, err
    finally:
        _end(run, child)


def test_an_ignored_sighup_stays_ignored_and_handlers_come_back(load_script):
    """Under nohup the run must survive the terminal's hangup; after the wait the process's
    own handlers are back."""
    run_suite = load_script("run_suite")
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    term = signal.getsignal(signal.SIGTERM)
    try:
        assert run_suite.wait_for(lambda: subprocess.Popen([sys.executable, "-c", "pass"]), 5.0) == (0, None)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is term
    finally:
        signal.signal(signal.SIGHUP, before)


# Runs the runner's main() with a report: asv stands in as a script that ends at once, and
# the renderer as FAKE_ASV (ready, then sleeping until SIGINT).
RENDER_DRIVER = textwrap.dedent("""
    import importlib.util, signal, subprocess, sys

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    script, fake, record = sys.argv[1:]
    spec = importlib.util.spec_from_file_location("run_suite", script)
    run_suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_suite)
    real = subprocess.Popen

    def popen(command, **kw):
        if any(str(part).endswith("render_report.py") for part in command):
            import os
            kw["env"] = {**(kw.get("env") or os.environ), "ASV_COMMIT": "render"}
            return real([sys.executable, fake, record, "obliging"], **kw)
        return real([sys.executable, "-c", "pass"], **kw)

    run_suite.subprocess.Popen = popen
    run_suite.ensure_machine = lambda machine: None
    run_suite.archive_run = lambda *args: print("archived", flush=True)
    run_suite.paths.git_commit = lambda short=False: "%s"
    run_suite.GRACE_S = 5.0
    sys.exit(run_suite.main([]))
""" % COMMIT)


def test_a_run_terminated_while_rendering_stops_the_renderer_and_says_the_results_are_kept(machine, tmp_path):
    record = tmp_path / "signal.txt"
    returncode, out, err = _signalled_run(tmp_path, RENDER_DRIVER, signal.SIGTERM, [str(record)], "the renderer")
    assert returncode == 128 + signal.SIGTERM, (returncode, out, err)
    assert record.read_text() == "SIGINT"            # stopped the Ctrl-C way
    assert "archived" in out
    assert err.count("\n") == 1 and err.startswith("dlsysbench: interrupted while rendering the report: "), err
    assert "`make report` renders it again" in err
