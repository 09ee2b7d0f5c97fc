"""The user's thread variables: recorded with the pool sizes they gave (impls.harness.thread_pools),
and refused, naming the variable, where numba or OpenMP would refuse or misread them (impls.harness.cpus)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from impls.harness import cpus, fingerprint, thread_pools

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


@pytest.mark.parametrize("environ, says", [
    ({"NUMBA_NUM_THREADS": "0"}, "NUMBA_NUM_THREADS=0: expected a positive integer"),
    ({"OMP_NUM_THREADS": "two"}, "OMP_NUM_THREADS=two: expected a positive integer"),
    ({"OMP_NUM_THREADS": "4,0"}, "OMP_NUM_THREADS=4,0: expected a positive integer"),
    ({"MKL_NUM_THREADS": "-1"}, "MKL_NUM_THREADS=-1: expected a positive integer"),
    ({"NUMBA_THREADING_LAYER": "gnu"}, "NUMBA_THREADING_LAYER=gnu: expected one of default, safe, threadsafe"),
    ({"NUMBA_NUM_THREADS": "2", "OMP_NUM_THREADS": "4,2", "NUMBA_THREADING_LAYER": "workqueue"}, None),
    ({"NUMBA_NUM_THREADS": " ", "NUMBA_THREADING_LAYER": "default"}, None),   # empty: unset
])
def test_a_thread_variable_numba_or_openmp_would_refuse_is_named(environ, says):
    problem = cpus.thread_variable_problem(environ)
    assert (problem is None) if says is None else problem.startswith(says), problem


def test_a_layer_that_does_not_load_is_named_with_what_to_install(monkeypatch):
    import importlib

    real = importlib.import_module

    def without_tbb(name, *args):
        if name == "numba.np.ufunc.tbbpool":
            raise ImportError("libtbb.so.12: cannot open shared object file")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_tbb)
    problem = cpus.thread_variable_problem({"NUMBA_THREADING_LAYER": "tbb"})
    assert problem.startswith("NUMBA_THREADING_LAYER=tbb, and tbb (pip install tbb) does not load here "
                              "(libtbb.so.12"), problem


@pytest.mark.parametrize("variable", ["NUMBA_NUM_THREADS=0", "OMP_NUM_THREADS=x"])
def test_a_command_refuses_a_bad_thread_variable_in_one_line(variable):
    env = {k: v for k, v in os.environ.items() if k not in thread_pools.THREAD_VARIABLES}
    name, _, value = variable.partition("=")
    env.update({name: value, "PYTHONPATH": str(ROOT)})
    done = subprocess.run([sys.executable, "-m", "impls.slide.train", "--dataset", "slide-amazon670k",
                           "--time-budget", "1"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: {variable}: expected a positive integer (or unset it)"], done.stderr


def test_a_script_command_refuses_what_the_import_found(monkeypatch, capsys):
    # scripts/*.py import impls without ``-m``: their command wrapper refuses instead
    monkeypatch.setattr(cpus, "problem", "NUMBA_NUM_THREADS=0: expected a positive integer (or unset it)")
    assert fingerprint.main([]) == 2
    assert capsys.readouterr().err == "error: NUMBA_NUM_THREADS=0: expected a positive integer (or unset it)\n"


@pytest.mark.parametrize("environ", [{"NUMBA_THREADING_LAYER": "Workqueue"}, {"NUMBA_THREADING_LAYER": "DEFAULT"},
                                     {"NUMBA_THREADING_LAYER": "ForkSafe"}, {"OMP_NUM_THREADS": "8,4"}])
def test_values_numba_and_openmp_accept_pass_in_any_case(environ):
    """numba lowercases NUMBA_THREADING_LAYER: 'Workqueue' is its workqueue layer."""
    assert cpus.thread_variable_problem(environ) is None


def test_a_digit_that_is_not_a_decimal_number_is_refused_not_a_crash():
    assert cpus.thread_variable_problem({"NUMBA_NUM_THREADS": "\u00b2"}) == (
        "NUMBA_NUM_THREADS=\u00b2: expected a positive integer (or unset it)")


def test_what_the_suite_set_is_known_in_its_child_processes(monkeypatch):
    """cap_thread_pools notes what it set in the environment, so an asv benchmark process,
    which inherits the values, still records them as the suite's, not the user's."""
    environ = {}
    monkeypatch.setattr(cpus, "affinity_cpus", lambda: 8)
    monkeypatch.setattr(cpus, "effective_cpus", lambda mask=None: 2)
    made = cpus.cap_thread_pools(environ, names=("NUMBA_NUM_THREADS", "OMP_NUM_THREADS"))
    assert made == {"NUMBA_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    monkeypatch.setattr(cpus, "capped", {})                       # the child: nothing set in it
    assert cpus.set_by_suite(environ) == ["NUMBA_NUM_THREADS", "OMP_NUM_THREADS"]
    assert cpus.cap_thread_pools(environ, names=("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")) == {}
    assert cpus.set_by_suite(environ) == ["NUMBA_NUM_THREADS", "OMP_NUM_THREADS"]
    assert cpus.set_by_suite({}) == []
