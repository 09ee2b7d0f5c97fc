"""impls.harness.fresh_process: a fresh child per call, with this process's environment."""
from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from multiprocessing import forkserver
from pathlib import Path

import pytest

from impls.harness import fresh_process

PROBE = "DLSYSBENCH_FRESH_PROCESS_PROBE"
ROOT = Path(__file__).resolve().parents[2]


def test_call_runs_in_another_process_and_returns_its_value():
    assert fresh_process.call(os.getpid) != os.getpid()
    assert fresh_process.call(divmod, 17, 5) == (3, 2)


def test_call_raises_what_the_function_raises():
    with pytest.raises(ZeroDivisionError):
        fresh_process.call(divmod, 1, 0)


def test_child_sees_the_environment_of_the_call_not_of_the_server(monkeypatch):
    monkeypatch.delenv(PROBE, raising=False)
    fresh_process.call(os.getpid)  # the fork server (where there is one) runs from here on
    monkeypatch.setenv(PROBE, "after the server started")
    assert fresh_process.call(os.getenv, PROBE) == "after the server started"
    monkeypatch.delenv(PROBE)
    assert fresh_process.call(os.getenv, PROBE) is None


def test_context_forks_only_from_a_server_it_started_with_this_environment(monkeypatch):
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork server on this platform")
    monkeypatch.setattr(fresh_process, "_server_environ", None)
    monkeypatch.setattr(fresh_process, "_server_running", lambda: True)
    assert fresh_process.context().get_start_method() == "spawn"  # someone else's server
    monkeypatch.setattr(fresh_process, "_server_environ", dict(os.environ))
    assert fresh_process.context().get_start_method() == "forkserver"
    monkeypatch.setenv(PROBE, "changed")
    assert fresh_process.context().get_start_method() == "spawn"


def test_context_spawns_where_there_is_no_fork_server(monkeypatch):
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert fresh_process.context().get_start_method() == "spawn"


def test_a_child_that_dies_without_an_answer_is_an_error():
    with pytest.raises(ChildProcessError, match="exit code 3"):
        fresh_process.call(os._exit, 3)


def _kill_self(signum: int) -> None:
    os.kill(os.getpid(), signum)


@pytest.mark.parametrize("signum, says", [
    (signal.SIGKILL, "killed by signal 9 (SIGKILL), most often the out-of-memory killer"),
    (signal.SIGSEGV, f"killed by signal {int(signal.SIGSEGV)} (SIGSEGV))"),
])
def test_a_child_killed_by_a_signal_is_named_with_the_signal_and_its_usual_cause(signum, says):
    with pytest.raises(ChildProcessError) as caught:
        fresh_process.call(_kill_self, signum)
    message = str(caught.value)
    assert says in message and "exit code" not in message and "\n" not in message, message
    assert "out-of-memory" not in message or signum == signal.SIGKILL


class _Unrebuildable(Exception):
    def __init__(self, a, b):  # pickles as (msg,): unpickling calls __init__ with one argument
        super().__init__(f"{a}/{b}")


def _raise_unrebuildable():
    raise _Unrebuildable(1, 2)


def test_an_exception_that_does_not_travel_back_is_reported_as_such():
    with pytest.raises(RuntimeError, match="could not be sent back.*_Unrebuildable"):
        fresh_process.call(_raise_unrebuildable)


def test_the_childs_traceback_comes_back_as_a_note():
    with pytest.raises(ZeroDivisionError) as caught:
        fresh_process.call(divmod, 1, 0)
    assert any("in the child process" in note for note in caught.value.__notes__)


def _write_pid_and_sleep(path: str) -> None:
    with open(path, "w") as out:
        out.write(str(os.getpid()))
    time.sleep(60)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_interrupted_caller_stops_the_child(tmp_path):
    pid_file = tmp_path / "pid"
    fresh_process.call(os.getpid)  # the fork server is up: the child below starts at once

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    def once_the_child_runs():
        deadline = time.monotonic() + 120
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, interrupt)
    watcher = threading.Thread(target=once_the_child_runs, daemon=True)
    started = time.monotonic()
    try:
        watcher.start()
        with pytest.raises(KeyboardInterrupt):
            fresh_process.call(_write_pid_and_sleep, str(pid_file))
    finally:
        watcher.join()
        signal.signal(signal.SIGUSR1, previous)
    assert time.monotonic() - started < 50  # not the child's 60 s
    assert not _alive(int(pid_file.read_text()))


def test_the_child_starts_with_sigint_and_sigterm_deliverable_and_the_callers_handlers_stay():
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    blocked = fresh_process.call(signal.pthread_sigmask, signal.SIG_BLOCK, [])
    assert signal.SIGINT not in blocked and signal.SIGTERM not in blocked
    assert {s: signal.getsignal(s) for s in handlers} == handlers


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not _alive(pid) or _zombie(pid):  # a fork server's child: the server reaps it
            return True
        time.sleep(0.05)
    return False


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def test_a_sigint_between_the_childs_creation_and_its_pid_stops_the_child(monkeypatch, tmp_path):
    """The signal lands as the parent reads the new child's pid from the fork server, inside
    Process.start(): raised there, it would leave the child running unattended. (A spawned
    child gets its work only after its pid is known, and without it ends by itself.)"""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork server here")
    ctx = multiprocessing.get_context("forkserver")
    monkeypatch.setattr(fresh_process, "context", lambda: ctx)
    fresh_process.call(os.getpid)  # the fork server is up
    original, pids = forkserver.read_signed, []

    def created(fd):
        value = original(fd)
        if not pids:  # the first read is the child's pid
            pids.append(value)
            signal.raise_signal(signal.SIGINT)
        return value

    monkeypatch.setattr(forkserver, "read_signed", created)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            fresh_process.call(_write_pid_and_sleep, str(tmp_path / "pid"))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(pids) == 1 and _gone(pids[0])


def test_a_large_result_comes_back_whole():
    assert fresh_process.call(bytes, 8 * 2 ** 20) == bytes(8 * 2 ** 20)  # far more than a pipe holds


def _make_lambda():
    return lambda: None


def test_a_result_that_does_not_pickle_is_reported_as_such():
    with pytest.raises(RuntimeError, match="the result of '_make_lambda'.*could not be sent back"):
        fresh_process.call(_make_lambda)


def test_a_function_that_does_not_pickle_is_refused_before_a_child_starts():
    with pytest.raises(Exception, match="pickle|Pickl"):
        fresh_process.call(lambda: None)


def test_sys_exit_in_the_child_is_an_error_not_an_exit():
    with pytest.raises(ChildProcessError, match=r"sys.exit\(4\)"):
        fresh_process.call(sys.exit, 4)


_FRESH_INTERPRETER = """
import os, sys, multiprocessing
sys.path[:0] = [{tests!r}, {root!r}]
from impls.harness import fresh_process
import test_fresh_process as t

def main():
    method = sys.argv[1]
    if method == "spawn":
        fresh_process.context = lambda: multiprocessing.get_context("spawn")
    else:
        assert not fresh_process._server_running()
        assert fresh_process.context().get_start_method() == "forkserver"
        assert fresh_process._server_running()
    big = bytearray(600 * 2 ** 20)            # this process's peak: 600 MB more than the child's
    big[::4096] = b"x" * len(big[::4096])
    del big
    print(*fresh_process.call(t._child_state))

if __name__ == "__main__":
    main()
"""


def _child_state() -> tuple[bool, int]:
    from impls.harness.process_memory import peak_rss_bytes
    return "torch" in sys.modules, peak_rss_bytes()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_child_has_its_own_peak_rss_and_a_forked_one_has_torch_loaded(tmp_path, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    script = tmp_path / "probe.py"
    script.write_text(_FRESH_INTERPRETER.format(tests=str(Path(__file__).parent), root=str(ROOT)))
    out = subprocess.run([sys.executable, str(script), method], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    torch_loaded, peak = out.stdout.split()
    assert int(peak) < 400 * 2 ** 20   # the parent's 600 MB are not the child's
    assert torch_loaded == str(method == "forkserver")
