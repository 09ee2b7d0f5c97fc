"""impls.harness.fresh_process: a fresh child per call, with this process's environment."""
from __future__ import annotations

import multiprocessing
import os

import pytest

from impls.harness import fresh_process

PROBE = "DLSYSBENCH_FRESH_PROCESS_PROBE"


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
