"""The grid executor: same bytes serially, on the local cluster and on a CLI-started cluster;
a killed worker, a lost scheduler, the result store and the timed guard."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from impls.bandana.experiments import simulation as experiments
from impls.bandana.data import traces
from impls.harness import grid

ROOT = Path(__file__).resolve().parents[2]


def _grid_points(lookups: int = 200_000):
    """A small layout x policy x cache grid over a synthetic trace, arrays shared once."""
    data = traces.generate_trace(3, num_vectors=20_000, num_lookups=lookups, noise=1.25,
                                 with_vectors=False)
    trace = grid.share(data["indices"])
    layouts = [grid.share(np.arange(20_000)),
               grid.share(np.random.default_rng(1).permutation(20_000))]
    return [(trace, layout, 20_000, fraction, policy, 4.0)
            for layout in layouts for policy in ("none", "prefetch", "lowpri", "shadow")
            for fraction in (0.02, 0.2)]


def _run(points, setting, monkeypatch, store=False, label="test grid"):
    monkeypatch.setenv(grid.ENV_SCHEDULER, setting)
    out = grid.map_points(experiments.simulate_point, points, label=label, store=store)
    return _bytes(out), grid.runs()[-1]


def _bytes(results) -> bytes:
    """The results as an artifact stores them (JSON; floats by their shortest exact repr)."""
    return json.dumps(results, sort_keys=True).encode()


_WITHOUT_IMPLS = """
import importlib.abc, sys
class Without(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "impls":
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Without())
from distributed.cli import dask_scheduler
sys.argv[1:2] = []
dask_scheduler.main()
"""


class CliCluster:
    """``dask scheduler`` plus ``dask worker`` processes on localhost (no nanny: a kill is final)."""

    def __init__(self, tmp: Path, workers: int, scheduler_without_impls: bool = False):
        self.file = tmp / "scheduler.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(Path(__file__).resolve().parent)])}
        quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
        dask = [sys.executable, "-m", "dask"]
        self.scheduler = None
        self.workers: list[subprocess.Popen] = []
        try:
            self._start(scheduler_without_impls, workers, quiet, dask)
        except BaseException:           # a start cut short leaves no scheduler or worker behind
            self.close()
            raise

    def _start(self, scheduler_without_impls: bool, workers: int, quiet: dict, dask: list[str]) -> None:
        # as a scheduler started outside any checkout: `impls` cannot be imported there
        scheduler = [sys.executable, "-c", _WITHOUT_IMPLS] if scheduler_without_impls else dask
        self.scheduler = subprocess.Popen(
            # its HTTP server (health, metrics) runs without the dashboard too: a free port, not
            # 8787, which the local cluster's scheduler of the same test asks for
            scheduler + ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                    "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(self.file)], **quiet)
        deadline = time.monotonic() + 30
        while not self._address():          # the file can exist before the scheduler has written it
            assert time.monotonic() < deadline, "dask scheduler did not start"
            time.sleep(0.1)
        for i in range(workers):            # each kept as it starts, for close() to end
            self.workers.append(subprocess.Popen(
                dask + ["worker", "--scheduler-file", str(self.file), "--nthreads", "1", "--no-nanny",
                        "--no-dashboard", "--name", f"w{i}"], **quiet))
        self.address = self._address()
        from distributed import Client
        if workers:
            with Client(self.address, timeout="30s") as client:
                client.wait_for_workers(workers, timeout=60)

    def _address(self) -> str | None:
        """The scheduler's address from its file, None while the file is missing or partly written."""
        try:
            return json.loads(self.file.read_text())["address"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            return None

    def close(self):
        for proc in [*self.workers, *([self.scheduler] if self.scheduler is not None else [])]:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    """One ``dask scheduler`` + two ``dask worker`` processes for this module's tests
    (the kill test, which ends one worker, comes last among its users)."""
    cluster = CliCluster(tmp_path_factory.mktemp("dask"), 2)
    yield cluster
    cluster.close()


@pytest.fixture
def one_worker(tmp_path):
    cluster = CliCluster(tmp_path, 1)
    yield cluster
    cluster.close()


def _in_thread(fn):
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    return thread, box


def _wait_for_results(folder: Path, count: int, thread, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while len(list(folder.glob("*.pkl"))) < count:
        assert thread.is_alive(), "the grid finished before the fault could be injected"
        assert time.monotonic() < deadline, "no grid point finished"
        time.sleep(0.02)


def test_serial_local_and_cli_cluster_give_identical_bytes(monkeypatch, two_workers):
    points = _grid_points()
    serial, rec_serial = _run(points, "serial", monkeypatch)
    local, rec_local = _run(points, "", monkeypatch)
    cluster = two_workers
    remote, rec_remote = _run(points, cluster.address, monkeypatch)
    assert serial == local == remote
    assert rec_serial["where"] == "serial"
    assert rec_local["where"] == f"local cluster of {grid.usable_cores()} workers"
    # a Ctrl-C reaches the whole process group: the local workers leave it to this process,
    # also those their nannies start again
    client = grid._local["client"]
    assert set(client.run(lambda: signal.getsignal(signal.SIGINT)).values()) == {signal.SIG_IGN}
    client.restart()
    assert set(client.run(lambda: signal.getsignal(signal.SIGINT)).values()) == {signal.SIG_IGN}
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert rec_remote["where"] == f"cluster at {cluster.address} with 2 workers"
    assert len(serial) > 1000
    assert "scattered_bytes" not in rec_remote  # the workers read the shared .npy files
    # the results are the simulator's, in input order
    first = json.loads(serial)[0]
    assert first["cache_fraction"] == 0.02 and first["lookups"] == 200_000


def test_a_fresh_process_uses_a_remote_scheduler_without_a_default_client(two_workers, tmp_path):
    """The client of DLSYSBENCH_DASK_SCHEDULER is not the default one: nothing else in a user's
    process has started a client (the test above had, through the local cluster)."""
    code = ("import json; from impls.harness import grid; "
            "print(grid.map_points(json.dumps, [([2, 3],), ([4],)], label='fresh', store=False))")
    env = {**os.environ, grid.ENV_SCHEDULER: two_workers.address, "DLSYSBENCH_CACHE": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "['[2, 3]', '[4]']"


@pytest.mark.parametrize("value, expected", [("Serial", "serial"), (" LOCAL ", "local"), ("", "local"),
                                             ("tcp://10.0.0.1:8786", "tcp://10.0.0.1:8786"),
                                             ("scheduler:8786", "scheduler:8786"),
                                             ("tcp://[::1]:8786", "tcp://[::1]:8786"),
                                             ("TCP://h:1", "tcp://h:1"), ("Tls://H:1", "tls://H:1")])
def test_the_scheduler_setting_is_read_as_users_write_it(monkeypatch, value, expected):
    monkeypatch.setenv(grid.ENV_SCHEDULER, value)
    assert grid.scheduler_setting() == expected


@pytest.mark.parametrize("value", ["Serial2", "tcp://host", "http://host:8787/status", "8786",
                                   "http://127.0.0.1:8786", "ws://h:1", "tcp://127.0.0.1:99999", "h:0"])
def test_a_mistyped_scheduler_setting_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(grid.ENV_SCHEDULER, value)
    with pytest.raises(grid.GridError, match=rf"{grid.ENV_SCHEDULER}=.*expected serial, local or"):
        grid.scheduler_setting()


def test_a_scheduler_without_workers_is_an_error_not_a_hang(monkeypatch, tmp_path):
    cluster = CliCluster(tmp_path, 0)
    try:
        monkeypatch.setattr(grid, "CONNECT_TIMEOUT", "2s")
        monkeypatch.setenv(grid.ENV_SCHEDULER, cluster.address)
        started = time.monotonic()
        with pytest.raises(grid.GridError, match=r"no Dask worker joined that scheduler within 2s; start one "
                                                 r"with `dask worker tcp://"):
            grid.map_points(experiments.simulate_point, _grid_points()[:1], label="x", store=False)
        assert time.monotonic() - started < 30
    finally:
        cluster.close()


def test_workers_on_other_code_are_refused_before_they_compute(monkeypatch, two_workers, tmp_path):
    monkeypatch.setenv(grid.ENV_RESULTS, str(tmp_path / "results"))
    monkeypatch.setenv(grid.ENV_SCHEDULER, two_workers.address)
    real = grid.code_version
    monkeypatch.setattr(grid, "code_version", lambda package: "0" * 16 if package == "impls" else real(package))
    with pytest.raises(grid.GridError, match=r"2 of 2 workers run other code than this process \(.*impls "
                                             r"version [0-9a-f]{16}, here 0{16}\).*same local changes, or "
                                             r"restart them: a worker keeps the code it loaded when it started; "
                                             r"the scheduler runs other code too \(impls version [0-9a-f]{16}\): "
                                             r"restart it as well$"):
        grid.map_points(experiments.simulate_point, _grid_points()[:2], label="other code")
    assert not list(grid.results_dir("other code").glob("*.pkl"))     # nothing stored under our key


def test_a_scheduler_on_other_code_is_refused_before_it_unpickles_a_task(monkeypatch, two_workers, tmp_path):
    """Recent Dask unpickles the task graph on the scheduler: its code must be this code too."""
    from distributed import Client

    monkeypatch.setenv(grid.ENV_RESULTS, str(tmp_path / "results"))
    monkeypatch.setenv(grid.ENV_SCHEDULER, two_workers.address)
    monkeypatch.setattr(Client, "run_on_scheduler", lambda self, function, *args, **kwargs: "f" * 16)
    with pytest.raises(grid.GridError, match=r"the Dask scheduler runs other code than this process \(impls "
                                             r"version f{16}, here [0-9a-f]{16}\).* or restart it"):
        grid.map_points(experiments.simulate_point, _grid_points()[:2], label="other scheduler")
    assert not list(grid.results_dir("other scheduler").glob("*.pkl"))


def test_a_scheduler_that_cannot_import_the_suite_is_one_clear_error(monkeypatch, tmp_path):
    """Not Dask's "Error during deserialization of the task graph" once a worker has joined:
    the scheduler is checked first, so this needs no worker."""
    cluster = CliCluster(tmp_path, 0, scheduler_without_impls=True)
    try:
        monkeypatch.setattr(grid, "CONNECT_TIMEOUT", "2s")
        monkeypatch.setenv(grid.ENV_SCHEDULER, cluster.address)
        with pytest.raises(grid.GridError) as caught:
            grid.map_points(experiments.simulate_point, _grid_points()[:1], label="x", store=False)
        message = str(caught.value)
        assert "the Dask scheduler cannot load this suite's code" in message, message
        assert "No module named 'impls'" in message and "PYTHONPATH=<that checkout>" in message
        assert "\n" not in message
    finally:
        cluster.close()


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_suite_refuses_a_scheduler_nobody_answers_on_before_asv_starts(monkeypatch, load_script, capsys):
    """Else asv starts and every grid experiment's set-up fails after its own connect timeout."""
    run_suite = load_script("run_suite")
    started = []

    def asv(command, **_):
        started.append(command)
        raise AssertionError("asv started")

    monkeypatch.setattr(run_suite.subprocess, "Popen", asv)
    monkeypatch.setattr(run_suite, "ensure_machine", lambda machine: None)
    monkeypatch.setattr(run_suite.paths, "git_commit", lambda: "0" * 40)
    monkeypatch.setattr(grid, "PREFLIGHT_TIMEOUT", "1s", raising=False)
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    monkeypatch.setenv(grid.ENV_SCHEDULER, f"tcp://127.0.0.1:{_closed_port()}")
    begun = time.monotonic()
    assert run_suite.main(["--no-report"]) == 2
    assert started == [] and time.monotonic() - begun < 15
    err = capsys.readouterr().err
    assert err.startswith("dlsysbench: error: ") and err.count("\n") == 1, err
    assert f"{grid.ENV_SCHEDULER}=tcp://127.0.0.1:" in err and "cannot reach a Dask scheduler" in err


def test_a_tls_address_without_tls_settings_says_so_not_that_nobody_answers(monkeypatch):
    import pytest

    monkeypatch.setenv(grid.ENV_SCHEDULER, "tls://127.0.0.1:1")
    with pytest.raises(grid.GridError) as err:
        grid.check_remote_cluster()
    message = str(err.value)
    assert "needs Dask's TLS settings" in message and "cannot reach" not in message and "\n" not in message


def test_the_pre_run_check_reaches_only_a_remote_scheduler(monkeypatch, two_workers):
    from impls.harness import commands

    reached = []
    real = grid._remote_client

    def remote_client(address, *args, **kwargs):
        reached.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(grid, "_remote_client", remote_client)
    for setting in ("serial", "local", ""):
        monkeypatch.setenv(grid.ENV_SCHEDULER, setting)
        commands.check_settings(reach_scheduler=True)
        commands.check_settings()
    assert reached == []                                   # no network for serial and local
    monkeypatch.setenv(grid.ENV_SCHEDULER, two_workers.address)
    commands.check_settings()
    assert reached == []                                   # `python -m impls run` does not connect
    commands.check_settings(reach_scheduler=True)          # scheduler and workers answer, on this code
    assert reached == [two_workers.address]


def test_an_input_read_by_path_must_be_visible_to_every_worker(monkeypatch, two_workers, tmp_path):
    shared = tmp_path / "trace.npy"
    np.save(shared, np.arange(10))
    monkeypatch.setenv(grid.ENV_SCHEDULER, "serial")
    grid.require_shared_file(tmp_path / "absent.npy")          # this machine's files: nothing to check
    monkeypatch.setenv(grid.ENV_SCHEDULER, two_workers.address)
    grid.require_shared_file(shared)                           # the workers run here: they see it
    monkeypatch.setattr(grid, "_has_file", lambda path, size: False)   # as workers elsewhere would answer
    with pytest.raises(grid.GridError, match=r"2 of 2 workers cannot read .*trace\.npy .*shared with this machine"):
        grid.require_shared_file(shared)


def test_a_grid_whose_points_are_all_stored_says_it_ran_nowhere(monkeypatch, tmp_path):
    monkeypatch.setenv(grid.ENV_RESULTS, str(tmp_path / "results"))
    points = _grid_points()[:2]
    _run(points, "serial", monkeypatch, store=True, label="kept")
    _, record = _run(points, "tcp://127.0.0.1:9", monkeypatch, store=True, label="kept")   # not reached
    assert record["where"] == "nowhere: every point reused" and record["reused"] == 2


def test_a_port_that_is_no_scheduler_is_an_error_not_a_hang(monkeypatch):
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held = []
    threading.Thread(target=lambda: held.append(server.accept()), daemon=True).start()  # accepts, says nothing
    monkeypatch.setattr(grid, "CONNECT_TIMEOUT", "2s")
    monkeypatch.setenv(grid.ENV_SCHEDULER, f"tcp://127.0.0.1:{server.getsockname()[1]}")
    started = time.monotonic()
    with pytest.raises(grid.GridError, match=r"cannot reach a Dask scheduler there \(no Dask handshake within 7 s\)"):
        grid.map_points(experiments.simulate_point, _grid_points()[:1], label="x", store=False)
    assert time.monotonic() - started < 30
    server.close()


def test_a_port_where_something_else_answers_says_so(monkeypatch):
    """An HTTP server's reply read as a Dask frame gave numpy's "Unable to allocate 3.07 EiB"
    as the reason; the error says something answers there, not in Dask's protocol."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer() -> None:
        conn, _ = server.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4)
        time.sleep(3)
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    monkeypatch.setattr(grid, "CONNECT_TIMEOUT", "2s")
    monkeypatch.setenv(grid.ENV_SCHEDULER, f"tcp://127.0.0.1:{server.getsockname()[1]}")
    with pytest.raises(grid.GridError, match="something answers there, but not in Dask.s protocol"):
        grid.map_points(experiments.simulate_point, _grid_points()[:1], label="x", store=False)
    server.close()


def test_dict_keys_of_another_type_make_another_point():
    assert grid.point_key(slow_point, ({1: "a"},)) != grid.point_key(slow_point, ({"1": "a"},))
    assert grid.point_key(slow_point, ({"b": 1, "a": 2},)) == grid.point_key(slow_point, ({"a": 2, "b": 1},))


def test_floats_that_differ_at_all_are_two_points():
    """A learning rate of 1e-7 against 2e-7, or 0.1 + 0.2 against 0.3: a rounded key would serve
    one point's stored result for the other."""
    assert grid.point_key(slow_point, (1e-7,)) != grid.point_key(slow_point, (2e-7,))
    assert grid.point_key(slow_point, (0.1 + 0.2,)) != grid.point_key(slow_point, (0.3,))
    assert grid.point_key(slow_point, (0.3,)) == grid.point_key(slow_point, (np.float64(0.3),))


def slow_point(*point):
    """``simulate_point`` after a pause, so that a fault lands while the grid runs."""
    time.sleep(0.25)
    return experiments.simulate_point(*point)


def _grid_under_way(monkeypatch, cluster, tmp_path, label):
    """Start a grid of :func:`slow_point` on ``cluster`` in a thread; return once its first
    point is stored."""
    points = _grid_points()
    monkeypatch.setenv(grid.ENV_RESULTS, str(tmp_path / "results"))
    monkeypatch.setenv(grid.ENV_SCHEDULER, cluster.address)
    thread, box = _in_thread(lambda: grid.map_points(slow_point, points, label=label))
    _wait_for_results(grid.results_dir(label), 1, thread)
    return points, thread, box


def test_killed_worker_still_gives_complete_identical_result(monkeypatch, two_workers, tmp_path):
    expected, _ = _run(_grid_points(), "serial", monkeypatch)
    cluster = two_workers
    points, thread, box = _grid_under_way(monkeypatch, cluster, tmp_path, "kill")
    cluster.workers[0].send_signal(signal.SIGKILL)
    thread.join(timeout=120)
    assert cluster.workers[0].wait(timeout=10) == -signal.SIGKILL
    assert "error" not in box, box.get("error")
    assert _bytes(box["value"]) == expected
    assert grid.runs()[-1]["computed"] == len(points)


def test_a_grid_whose_last_worker_died_stops_with_an_error(monkeypatch, one_worker, tmp_path):
    monkeypatch.setattr(grid, "NO_WORKER_GRACE_S", 2.0)
    points, thread, box = _grid_under_way(monkeypatch, one_worker, tmp_path, "orphaned")
    one_worker.workers[0].send_signal(signal.SIGKILL)
    thread.join(timeout=120)
    assert not thread.is_alive(), "the grid waits for a worker for ever"
    assert isinstance(box.get("error"), grid.GridError), box
    assert "no Dask worker left" in str(box["error"]) and "finished points are kept" in str(box["error"])


def test_lost_scheduler_raises_and_rerun_reuses_finished_points(monkeypatch, one_worker, tmp_path):
    cluster = one_worker
    points, thread, box = _grid_under_way(monkeypatch, cluster, tmp_path, "lost")
    cluster.scheduler.send_signal(signal.SIGKILL)
    thread.join(timeout=120)
    assert isinstance(box.get("error"), grid.GridError), box
    assert "lost the Dask scheduler" in str(box["error"])
    kept = len(list(grid.results_dir("lost").glob("*.pkl")))
    assert 1 <= kept < len(points)
    monkeypatch.setenv(grid.ENV_SCHEDULER, "serial")
    again = grid.map_points(slow_point, points, label="lost")
    record = grid.runs()[-1]
    assert record["reused"] == kept and record["computed"] == len(points) - kept
    assert _bytes(again) == _run(points, "serial", monkeypatch)[0]


def test_unreachable_scheduler_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(grid, "CONNECT_TIMEOUT", "1s")
    monkeypatch.setenv(grid.ENV_SCHEDULER, "tcp://127.0.0.1:9")
    with pytest.raises(grid.GridError, match="cannot reach a Dask scheduler"):
        grid.map_points(experiments.simulate_point, _grid_points()[:1], label="x", store=False)


def test_results_are_kept_by_inputs_and_code(monkeypatch, tmp_path):
    monkeypatch.setenv(grid.ENV_RESULTS, str(tmp_path / "results"))
    points = _grid_points()[:3]
    first, rec1 = _run(points, "serial", monkeypatch, store=True)
    again, rec2 = _run(points + _grid_points()[3:4], "serial", monkeypatch, store=True)
    assert (rec1["computed"], rec2["reused"], rec2["computed"]) == (3, 3, 1)
    assert json.loads(again)[:3] == json.loads(first)
    key = grid.point_key(experiments.simulate_point, points[0])
    assert key != grid.point_key(experiments.simulate_point, (*points[0][:4], "lowpri", 4.0))
    changed = np.asarray(grid.array(points[0][0])).copy()
    changed[0] = (changed[0] + 1) % 20_000
    assert key != grid.point_key(experiments.simulate_point, (grid.share(changed), *points[0][1:]))


@pytest.mark.parametrize("damage", ["edit", "truncate", "old format", "another point's"])
def test_a_stored_result_that_is_not_what_was_stored_is_computed_again(monkeypatch, tmp_path, damage):
    """An edited byte in a stored result would otherwise unpickle into other numbers."""
    monkeypatch.setenv(grid.ENV_RESULTS, str(tmp_path / "results"))
    points = _grid_points()[:1]
    first, _ = _run(points, "serial", monkeypatch, store=True)
    [stored] = list(grid.results_dir("test grid").glob("*.pkl"))
    raw = stored.read_bytes()
    payload = raw[len(grid._RESULT_MAGIC) + 32:]
    value = json.loads(first)[0]
    key = next(k for k, v in value.items() if isinstance(v, float) and v not in (0.0, 1.0))
    import pickle
    if damage == "edit":        # another number, same length: a pickle that still loads
        edited = pickle.loads(payload)
        edited[key] = value[key] * 0.5
        tampered = pickle.dumps(edited, protocol=4)
        stored.write_bytes(raw[:len(grid._RESULT_MAGIC) + 32] + tampered)
    elif damage == "truncate":
        stored.write_bytes(raw[:-10])
    elif damage == "old format":    # the format before the digest: a bare pickle
        stored.write_bytes(payload)
    else:                       # a whole, valid result of another point copied under this name
        other = dict(value, **{key: value[key] * 0.5})
        stored.write_bytes(grid._pack("0" * 32, other))
    again, record = _run(points, "serial", monkeypatch, store=True)
    assert record["computed"] == 1 and again == first
    ok, kept = grid._load(stored)                       # written again, whole
    assert ok and json.loads(json.dumps(kept)) == value


def test_timed_experiments_refuse_the_grid(monkeypatch):
    monkeypatch.setenv(grid.ENV_SCHEDULER, "serial")
    with grid.timed("fio_sweep"):
        with pytest.raises(AssertionError, match="fio_sweep measures this machine's hardware; "
                                                 "it must not run on the grid"):
            grid.map_points(experiments.simulate_point, _grid_points()[:1], label="t", store=False)
    assert grid.map_points(experiments.simulate_point, _grid_points()[:1], label="t", store=False)


def test_environment_table_says_where_points_ran(monkeypatch):
    from impls.harness.report.environment_table import environment_tables
    from impls.harness.report.machine_state import MachineState

    monkeypatch.setenv(grid.ENV_SCHEDULER, "serial")
    grid.map_points(experiments.simulate_point, _grid_points()[:2], label="t", store=False)
    fp = {"machine": "m", "grid": {"bandana_layout_policy": grid.runs()[-1:],
                                   "bandana_subclusters": "cluster at tcp://h:8786 with 8 workers"}}
    tables = environment_tables(MachineState("m", fp, "test", {}), {})
    table = next(t for t in tables if t.title == "Where grid points ran")
    assert table.rows[0][:4] == ("bandana_layout_policy", "t", "serial", "2 (2 computed, 0 kept)")
    assert table.rows[1][2] == "cluster at tcp://h:8786 with 8 workers"


def test_a_stored_array_that_is_not_its_content_is_written_again(tmp_path, monkeypatch, capsys):
    """A damaged (truncated) or edited array file is found by its digest and replaced, so no
    grid point reads another array, and no run fails forever on it."""
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(grid, "_verified", set())
    a = np.arange(10_000, dtype=np.int64)
    ref = grid.share(a)
    path = Path(ref.path)
    np.save(path, a[::-1].copy())                       # same shape and dtype, other content
    grid._verified.clear()                              # a new run
    again = grid.share(a)
    assert "does not hold the array" in capsys.readouterr().err
    assert np.array_equal(again.load(), a)
    with open(path, "r+b") as handle:
        handle.truncate(1000)
    grid._verified.clear()
    assert np.array_equal(grid.share(a).load(), a)
    assert not list(path.parent.glob(".*.tmp"))
