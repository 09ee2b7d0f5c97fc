"""The grid executor's edges: repeated points, a point that raises, a result from other code,
Ctrl-C while the local cluster starts, and `python -m impls run` reaching a remote scheduler
before any work. Points are stdlib ``json`` calls: the local workers import them as they are."""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from impls.harness import cli, commands, experiments, grid


@pytest.fixture(scope="module")
def two_local_workers():
    """The embedded local cluster, two workers at most, closed after this module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grid, "usable_cores", lambda: min(2, len(grid.os.sched_getaffinity(0))))
        grid.close_local_cluster()
        yield
        grid.close_local_cluster()


@pytest.fixture(params=["serial", "local"])
def setting(request, monkeypatch, tmp_path):
    """Each test runs serially and on the local cluster, its results under ``tmp_path``."""
    if request.param == "local":
        request.getfixturevalue("two_local_workers")
    monkeypatch.setenv(grid.ENV_SCHEDULER, request.param)
    monkeypatch.setenv(grid.ENV_RESULTS, str(tmp_path / "results"))
    return request.param


def test_repeated_points_each_get_the_result(setting):
    """One Dask key per distinct point: a repeated point once came back as None on a cluster."""
    out = grid.map_points(json.loads, [("[1]",), ("[1]",), ("[2]",)], label="repeated", progress=False)
    assert out == [[1], [1], [2]]
    assert out[0] is not out[1]                              # each its own copy
    record = grid.runs()[-1]
    assert (record["computed"], record["reused"]) == (3, 0)
    assert len(list(grid.results_dir("repeated").glob("*.pkl"))) == 2
    again = grid.map_points(json.loads, [("[1]",), ("[2]",), ("[1]",)], label="repeated", progress=False)
    assert again == [[1], [2], [1]] and grid.runs()[-1]["reused"] == 3


def test_a_point_that_raises_is_named_and_chained(setting):
    points = [("[1]",), ("{bad",), ("[3]",)]
    with pytest.raises(grid.GridPointError) as caught:
        grid.map_points(json.loads, points, label="bad json", progress=False)
    message = str(caught.value)
    assert message.startswith("grid 'bad json': point 2 of 3 ('{bad',) failed: JSONDecodeError: Expecting "), message
    assert "\n" not in message
    assert isinstance(caught.value.__cause__, json.JSONDecodeError)


def test_a_failed_point_is_a_failed_run_not_a_usage_error(monkeypatch, capsys):
    """A ValueError from a point's function is the code's failure: not exit 2 ("bad input")."""
    monkeypatch.setenv(grid.ENV_SCHEDULER, "serial")

    @cli.command("probe", user_errors=(grid.GridError,))   # as `python -m impls` reads the setting's errors
    def main(argv=None) -> int:
        grid.map_points(json.loads, [("{bad",)], label="bad json", store=False, progress=False)
        return 0

    assert main([]) == 1
    err = capsys.readouterr().err
    assert "grid 'bad json': point 1 of 1 ('{bad',) failed: JSONDecodeError" in err and err.count("\n") == 1


def test_a_point_is_shown_short_with_arrays_by_shape():
    import numpy as np

    points = [(np.zeros((3, 4), dtype=np.float32), "x" * 500)]
    message = str(grid._point_failed("g", 0, points, ValueError("two\nlines")))
    assert message.startswith("grid 'g': point 1 of 1 (<array (3, 4) float32>, 'xxx") and len(message) < 300
    assert message.endswith("... failed: ValueError: two lines")


def test_a_result_from_other_code_is_refused_before_it_is_kept(monkeypatch, tmp_path, two_local_workers):
    """A worker on other code (one that joined after the check, or restarted on an edited
    checkout) answers with its code version: this process refuses the result, stores nothing."""
    monkeypatch.setenv(grid.ENV_SCHEDULER, "local")
    monkeypatch.setenv(grid.ENV_RESULTS, str(tmp_path / "results"))
    real = grid.code_version
    monkeypatch.setattr(grid, "code_version", lambda package: "0" * 16 if package == "json" else real(package))
    with pytest.raises(grid.GridError, match=r"^local cluster of \d+ workers: worker \S+ runs other code than this "
                                             r"process \(json version [0-9a-f]{16}, here 0{16}\); its result for "
                                             r"point \d of 2 of 'other code' is not kept"):
        grid.map_points(json.loads, [("[1]",), ("[2]",)], label="other code", progress=False)
    assert not list(grid.results_dir("other code").glob("*.pkl"))


def test_local_workers_leave_a_failed_point_to_the_grid_error(two_local_workers, monkeypatch):
    """The worker's own "Compute Failed" block (with the task and traceback) is dropped."""
    monkeypatch.setenv(grid.ENV_SCHEDULER, "local")
    grid.map_points(json.loads, [("[1]",)], label="start", store=False, progress=False)
    installed = grid._local["client"].run(
        lambda: grid._not_compute_failed in logging.getLogger("distributed.worker").filters)
    assert set(installed.values()) == {True}
    failed = logging.LogRecord("distributed.worker", logging.ERROR, "", 0, "Compute Failed\nKey: %s", ("k",), None)
    other = logging.LogRecord("distributed.worker", logging.ERROR, "", 0, "Worker stream died", (), None)
    assert not grid._not_compute_failed(failed) and grid._not_compute_failed(other)


def test_local_workers_drop_the_heartbeat_that_meets_the_closing_cluster(two_local_workers, monkeypatch):
    """A worker's heartbeat racing the cluster's close logged a CommClosedError traceback after
    a finished run (probe E: 1 run in 9); other heartbeat failures and errors are kept."""
    from distributed.comm.core import CommClosedError

    monkeypatch.setenv(grid.ENV_SCHEDULER, "local")
    grid.map_points(json.loads, [("[1]",)], label="start", store=False, progress=False)
    installed = grid._local["client"].run(
        lambda: grid._not_closed_heartbeat in logging.getLogger("distributed.worker").filters)
    assert set(installed.values()) == {True}

    def record(msg, error):
        exc_info = (type(error), error, None) if error is not None else None
        return logging.LogRecord("distributed.worker", logging.ERROR, "", 0, msg, (), exc_info)

    beat = "Failed to communicate with scheduler during heartbeat."
    assert not grid._not_closed_heartbeat(record(beat, CommClosedError("in <TCP (closed) ConnectionPool."
                                                                       "heartbeat_worker>: Stream is closed")))
    assert grid._not_closed_heartbeat(record(beat, OSError("Timed out trying to connect")))
    assert grid._not_closed_heartbeat(record("Worker stream died", CommClosedError("closed")))
    assert grid._not_closed_heartbeat(record(beat, None))


@pytest.mark.parametrize("fails", [False, True])
def test_the_local_workers_start_with_sigint_ignored(monkeypatch, fails):
    """A Ctrl-C while the worker processes import would print a traceback from each: they are
    started with SIGINT ignored (inherited), and this process's handler is put back after."""
    import distributed

    seen = []

    class Cluster:
        def __init__(self, **kwargs):
            seen.append(signal.getsignal(signal.SIGINT))
            if fails:
                raise OSError("no ports")

        def close(self):
            pass

    monkeypatch.setattr(distributed, "LocalCluster", Cluster)
    monkeypatch.setattr(distributed, "Client", lambda cluster: object())
    monkeypatch.setattr(grid, "_local", {})
    before = signal.getsignal(signal.SIGINT)
    if fails:
        with pytest.raises(OSError):
            grid._local_client()
    else:
        grid._local_client()
    assert seen == [signal.SIG_IGN]
    assert signal.getsignal(signal.SIGINT) is before


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("name, reaches", [("bandana.subclusters", True), ("bandana.speed", False)])
def test_run_reaches_a_remote_scheduler_before_building_anything(monkeypatch, capsys, tmp_path, name, reaches):
    """An untimed (grid) experiment with nobody at DLSYSBENCH_DASK_SCHEDULER stops in about a
    second, before its data are built; a timed one never uses the grid and is not held up."""
    ran = []
    monkeypatch.setattr(commands.experiments, "run", lambda name, **kwargs: ran.append(name) or {"ok": 1})
    monkeypatch.setattr(grid, "PREFLIGHT_TIMEOUT", "1s")
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(grid.ENV_SCHEDULER, f"tcp://127.0.0.1:{_closed_port()}")
    assert experiments.get(name).timed is not reaches
    begun = time.monotonic()
    status = commands.main(["run", name, "--profile", "smoke", "--json", "-"])
    err = capsys.readouterr().err
    if reaches:
        assert status == 2 and ran == [] and time.monotonic() - begun < 15
        assert err.count("\n") == 1 and "cannot reach a Dask scheduler" in err, err
    else:
        assert status == 0 and ran == [name], err


def test_a_script_without_a_main_guard_is_told_to_add_one(tmp_path):
    """Each local worker imports the main script: an unguarded map_points there must end in
    one error that names the idiom, not only Dask's pages of "Nanny failed to start"."""
    script = tmp_path / "unguarded.py"
    script.write_text("import json\nfrom impls.harness import grid\n"
                      "print(grid.map_points(json.dumps, [(1,), (2,)], label='unguarded', store=False))\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "DLSYSBENCH_CACHE": str(tmp_path / "cache")}
    env.pop(grid.ENV_SCHEDULER, None)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("impls.harness.grid.GridError:") and '__name__ == "__main__"' in last, last


def test_an_interrupt_mid_grid_closes_the_local_cluster_quietly_before_exit(monkeypatch, tmp_path):
    """A Ctrl-C (or SIGTERM) while the local cluster computes closes it then, in the main
    thread, with Dask's loggers quiet: left to the interpreter's exit, its scheduler logged
    screens of "cannot schedule new futures after interpreter shutdown" after the one line."""
    closed, quiet_while_closing = [], []

    class Fake:
        def __init__(self, name):
            self.name = name

        def close(self, *args, **kwargs):
            closed.append(self.name)
            quiet_while_closing.append(logging.getLogger("distributed").level)

    monkeypatch.setenv(grid.ENV_SCHEDULER, "local")
    monkeypatch.setenv(grid.ENV_RESULTS, str(tmp_path / "results"))
    monkeypatch.setitem(grid._local, "client", Fake("client"))
    monkeypatch.setitem(grid._local, "cluster", Fake("cluster"))
    monkeypatch.setattr(grid, "where", lambda client: "fake")
    level = logging.getLogger("distributed").level
    try:
        for stop in (KeyboardInterrupt(), cli.Interrupted(signal.SIGTERM)):
            def interrupted(*args, stop=stop):
                raise stop
            monkeypatch.setattr(grid, "_run_on", interrupted)
            monkeypatch.setitem(grid._local, "client", Fake("client"))
            monkeypatch.setitem(grid._local, "cluster", Fake("cluster"))
            closed.clear()
            quiet_while_closing.clear()
            with pytest.raises(type(stop)):
                grid.map_points(json.dumps, [[1], [2]], label="interrupted", progress=False)
            assert closed == ["client", "cluster"] and "client" not in grid._local
            assert quiet_while_closing == [logging.CRITICAL, logging.CRITICAL]
            assert logging.getLogger("distributed").level == level   # Dask speaks again after
    finally:
        logging.getLogger("distributed").setLevel(level)


def _script_point(x):
    return x


def test_a_scripts_point_function_is_versioned_by_the_suites_package():
    """A function of a script run as ``__main__`` travels to the workers by value; a worker's
    ``__main__`` is Dask's command, whose (empty) sources never match this process's. So the
    code the workers must share is the suite's package the script calls."""
    assert grid.code_package(grid.code_version) == "impls"
    _script_point.__module__ = "__main__"
    try:
        assert grid.code_package(_script_point) == "impls"
    finally:
        _script_point.__module__ = __name__
    _script_point.__module__ = "mylab.points"
    try:
        assert grid.code_package(_script_point) == "mylab"
    finally:
        _script_point.__module__ = __name__


class _Client:
    def __init__(self, status: str) -> None:
        self.status = status


@pytest.mark.parametrize("status, reason, said", [
    ("running", "already forgotten", "already forgotten"),       # data lost with a worker: the scheduler lives
    ("running", "scheduler-connection-lost", ""),                # the scheduler is what was lost
    ("running", None, ""),
    ("closed", "already forgotten", ""),
])
def test_a_point_cancelled_by_a_live_scheduler_is_not_a_lost_scheduler(status, reason, said):
    from distributed.client import FutureCancelledError

    exc = FutureCancelledError(key="k", reason=reason)
    assert grid._cancelled_by_scheduler(_Client(status), exc) == said
    assert grid._cancelled_by_scheduler(_Client("running"), RuntimeError("x")) == ""


def test_a_missing_shared_array_is_told_from_a_points_own_missing_file(tmp_path):
    """A stored shared array's path is told from any other .npy path, also after the error
    naming it came back from a worker (the grid's branch is tested on a cluster below)."""
    import pickle

    stored = grid.share(np.arange(5))
    assert grid._is_shared_array(str(stored.path))
    lost = pickle.loads(pickle.dumps(FileNotFoundError(2, "No such file or directory", str(stored.path))))
    assert grid._is_shared_array(lost.filename)            # survives the trip from a worker
    assert not grid._is_shared_array(str(tmp_path / "arrays" / "x.npy"))
    assert not grid._is_shared_array(None)


def test_the_worker_count_is_asked_with_a_limit(two_local_workers, monkeypatch):
    monkeypatch.setenv(grid.ENV_SCHEDULER, "local")
    grid.map_points(json.loads, [("[1]",)], label="start", store=False, progress=False)
    client = grid._local["client"]
    assert grid._workers_within(client, 10) == grid._workers(client) >= 1


class _Scheduler:
    """A client whose scheduler answers (``workers``) or, with None, never does."""

    def __init__(self, workers: dict | None) -> None:
        self.workers, self.cancelled = workers, []
        self.scheduler = type("Rpc", (), {"identity": staticmethod(lambda **_: None)})()

    def sync(self, fn, *args, callback_timeout=None, **kwargs):
        if self.workers is None:
            time.sleep(0.02)
            raise TimeoutError(f"timed out after {callback_timeout} s.")
        return {"workers": self.workers}

    def cancel(self, futures):
        self.cancelled.extend(futures)


class _Pending:
    def done(self) -> bool:
        return False


@pytest.mark.parametrize("workers, silent", [(None, True), ({"tcp://w:1": {}}, False)])
def test_a_scheduler_that_stops_answering_cancels_the_grid(monkeypatch, workers, silent):
    """A stopped (SIGSTOP) or hung scheduler keeps its connection open: Dask's futures wait for
    ever. The watch asks with a limit, and after SCHEDULER_SILENT_S without an answer cancels
    the points so that the grid stops and says why; one that answers is left alone."""
    monkeypatch.setattr(grid, "NO_WORKER_GRACE_S", 0.3)      # the watch asks every 0.1 s
    monkeypatch.setattr(grid, "SCHEDULER_SILENT_S", 0.4)
    client, pending = _Scheduler(workers), _Pending()
    watch = grid._WorkerWatch(client, [pending])
    watch.thread.join(timeout=1.5)
    watch.close()
    assert (watch.silent, watch.gone) == (silent, False)
    assert client.cancelled == ([pending] if silent else [])


class _Kept:
    """The local cluster's client, standing in for a remote scheduler's: the grid's remote-only
    branches run on it, and the grid's closing of a remote client leaves it open."""

    def __init__(self, client) -> None:
        self._client = client

    def __getattr__(self, name):
        return getattr(self._client, name)

    def close(self, *args, **kwargs) -> None:
        pass


@pytest.fixture
def as_remote(two_local_workers, monkeypatch, tmp_path):
    monkeypatch.setenv(grid.ENV_SCHEDULER, "local")
    grid.map_points(json.loads, [("[1]",)], label="start", store=False, progress=False)
    client = _Kept(grid._local["client"])
    monkeypatch.setenv(grid.ENV_SCHEDULER, "tcp://127.0.0.1:1")
    monkeypatch.setenv(grid.ENV_RESULTS, str(tmp_path / "results"))
    monkeypatch.setattr(grid, "_remote_client", lambda *args, **kwargs: client)
    monkeypatch.setattr(grid, "_check_cluster", lambda *args, **kwargs: None)
    monkeypatch.setattr(grid, "_scatter_missing", lambda client, points, record: points)
    return client


def test_a_late_worker_without_the_shared_file_system_stops_the_grid_saying_so(as_remote, tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    missing = grid.arrays_dir() / "0123.npy"      # as a worker without the cache sees it
    with pytest.raises(grid.GridError, match=r"a worker cannot read the shared array .*0123\.npy that point 1 "
                                             r"of 1 of 'late' needs: .*give every worker the file system"):
        grid.map_points(np.load, [(str(missing),)], label="late", store=False, progress=False)
    other = tmp_path / "elsewhere.npy"                                  # a point's own input: the point's failure
    with pytest.raises(grid.GridPointError, match="elsewhere.npy"):
        grid.map_points(np.load, [(str(other),)], label="own", store=False, progress=False)


def _slow(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_a_silent_scheduler_stops_a_running_grid_saying_so(as_remote, monkeypatch):
    monkeypatch.setattr(grid, "NO_WORKER_GRACE_S", 0.3)
    monkeypatch.setattr(grid, "SCHEDULER_SILENT_S", 0.5)

    def silent(client, seconds):
        time.sleep(min(seconds, 0.05))
        raise TimeoutError("timed out")

    monkeypatch.setattr(grid, "_workers_within", silent)
    start = time.monotonic()
    with pytest.raises(grid.GridError, match=r"the Dask scheduler \(cluster at tcp://127\.0\.0\.1:1 with \d+ "
                                             r"workers\) has not answered for 0 s .*after 0 of 1 points of 'slow'"):
        grid.map_points(_slow, [(20,)], label="slow", store=False, progress=False)
    assert time.monotonic() - start < 15
