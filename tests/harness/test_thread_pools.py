"""impls.harness.thread_pools: the thread variables and pool sizes the fingerprint records."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from impls.harness import fingerprint, thread_pools

ROOT = Path(__file__).resolve().parents[2]


def _settings_in_a_fresh_interpreter(**variables: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in thread_pools.THREAD_VARIABLES}
    env.update(variables, PYTHONPATH=str(ROOT))
    code = "import json; from impls.harness import thread_pools as t; print(json.dumps(t.thread_settings()))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_variables_are_recorded_as_set_or_unset_with_the_pools_they_gave():
    one = _settings_in_a_fresh_interpreter(OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    assert one["variables"] == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": None, "NUMBA_NUM_THREADS": "1",
                                "NUMBA_THREADING_LAYER": None}
    assert one["pools"]["numba"] == 1
    assert one["pools"]["faiss_openmp"] == (1 if importlib.util.find_spec("faiss") else None)
    unset = _settings_in_a_fresh_interpreter()
    assert all(value is None for name, value in unset["variables"].items()
               if name not in unset["set_by_suite"]), unset            # only a cgroup quota sets one


def _rows(table: str) -> dict[str, str]:
    return {key: value for key, _, value in (line.partition("  ") for line in table.splitlines())
            if key.startswith("thread")}


def test_make_doctor_shows_the_variables_and_the_pools():
    threads = {"variables": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": None, "NUMBA_NUM_THREADS": "4",
                             "NUMBA_THREADING_LAYER": None},
               "set_by_suite": ["NUMBA_NUM_THREADS"], "pools": {"numba": 4, "faiss_openmp": 1, "torch": None}}
    fp = fingerprint.fingerprint()
    rows = {k: v.strip() for k, v in _rows(fingerprint.format_table({**fp, "threads": threads})).items()}
    assert rows == {"thread variables": "OMP_NUM_THREADS=1, MKL_NUM_THREADS unset, NUMBA_NUM_THREADS=4 (set by "
                                        "the suite: cgroup quota), NUMBA_THREADING_LAYER unset",
                    "thread pools": "numba 4, faiss OpenMP 1, torch ?"}, rows
    assert fp["threads"]["variables"].keys() == set(thread_pools.THREAD_VARIABLES)   # what artifacts carry
    older = {k: v for k, v in fp.items() if k != "threads"}
    assert {k: v.strip() for k, v in _rows(fingerprint.format_table(older)).items()} == {
        "thread variables": "not recorded", "thread pools": "not recorded"}
