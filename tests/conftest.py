"""Test isolation: smoke profile, and caches/artifacts under pytest's tmp directory."""
from __future__ import annotations

import signal

import pytest


def pytest_configure(config):
    """A SIGINT ignored by whoever started pytest (a background job of a non-interactive
    shell starts with it ignored) would be inherited by every child the tests start, and the
    tests of what a Ctrl-C does would read the launcher, not the suite: give the session
    Python's own handler, as an interactive run has."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


MAX_WORKERS = 4   # make test's -n auto: more torch processes than this gain little and cost memory


@pytest.hookimpl(optionalhook=True)    # pytest without xdist runs the tests too
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per CPU this process may run on (its affinity: a container's or
    taskset's limit, and hyperthreads counted, where xdist would count physical cores of the
    whole host), at most :data:`MAX_WORKERS`; None (xdist's own count) when
    PYTEST_XDIST_AUTO_NUM_WORKERS sets it."""
    import os

    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, usable))


@pytest.fixture(autouse=True)
def isolated_suite_dirs(tmp_path, monkeypatch):
    """Point the dataset cache and artifact store at a fresh tmp dir for every test."""
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path / "artifacts"))
    yield tmp_path


@pytest.fixture
def load_script():
    """``load_script("name")``: the module ``scripts/name.py``, freshly imported from its file."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, root / "scripts" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load


@pytest.fixture
def store_dir(tmp_path):
    """A directory on a drive where O_DIRECT works (tmp_path, else under datasets/cache)."""
    import os

    from impls.harness import capabilities, paths

    for candidate in (tmp_path / "stores", paths.datasets_dir() / "cache" / f"test-stores-{os.getpid()}"):
        candidate.mkdir(parents=True, exist_ok=True)
        if capabilities.check_o_direct(candidate / "probe").available:
            yield candidate
            for leftover in candidate.glob("*"):
                leftover.unlink()
            candidate.rmdir()
            return
        candidate.rmdir()
    pytest.skip("no directory here supports O_DIRECT reads from a drive")
