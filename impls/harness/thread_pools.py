"""The thread pools the suite's libraries run on: the variables that size them, and the sizes taken.

K-means (faiss's OpenMP), SHP and SLIDE (numba's ``parallel`` kernels) and the torch baselines
size their pools from these variables, so a shell or HPC module that sets one changes the
timings; the fingerprint records them (:func:`thread_settings`) beside every result. Light at
import (the standard library only): numba and faiss are imported when asked.
"""
from __future__ import annotations

import os
import sys

from impls.harness import cpus

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER")


def _numba_pool() -> int | None:
    """numba's pool size (``numba.config.NUMBA_NUM_THREADS``, fixed when numba was first
    imported); None where numba does not import."""
    try:
        import numba
        return int(numba.config.NUMBA_NUM_THREADS)
    except Exception:  # noqa: BLE001 - absent, or refusing a variable: the variables show which
        return None


def _faiss_pool() -> int | None:
    """faiss's OpenMP thread count (``omp_get_max_threads``); None where faiss does not import."""
    try:
        import faiss
        return int(faiss.omp_get_max_threads())
    except Exception:  # noqa: BLE001 - absent or broken: not known
        return None


def thread_settings(environ=os.environ) -> dict:
    """Return ``{"variables": {name: value, or None when unset}`` for each of
    :data:`THREAD_VARIABLES`, ``"set_by_suite"``: those of them :func:`cpus.cap_thread_pools`
    set (a cgroup quota), ``"pools": {"numba", "faiss_openmp", "torch"}``: the threads each
    runs with (None where not known; torch's only where torch is already imported)}``."""
    torch = sys.modules.get("torch")
    return {
        "variables": {name: environ.get(name) for name in THREAD_VARIABLES},
        "set_by_suite": [name for name in cpus.set_by_suite() if name in THREAD_VARIABLES],
        "pools": {"numba": _numba_pool(), "faiss_openmp": _faiss_pool(),
                  "torch": int(torch.get_num_threads()) if hasattr(torch, "get_num_threads") else None},
    }


def variables_text(threads: dict) -> str:
    """E.g. "OMP_NUM_THREADS=1, MKL_NUM_THREADS unset, NUMBA_NUM_THREADS=2 (set by the suite: cgroup
    quota), NUMBA_THREADING_LAYER unset"; "not recorded" for a fingerprint without them."""
    variables = threads.get("variables") if isinstance(threads, dict) else None
    if not isinstance(variables, dict):
        return "not recorded"
    by_suite = set(threads.get("set_by_suite") or [])
    return ", ".join(f"{name} unset" if value is None else
                     f"{name}={value}{' (set by the suite: cgroup quota)' if name in by_suite else ''}"
                     for name, value in variables.items())


def pools_text(threads: dict) -> str:
    """E.g. "numba 2, faiss OpenMP 1, torch 2" ("?" where not known); "not recorded" for a
    fingerprint without them."""
    pools = threads.get("pools") if isinstance(threads, dict) else None
    if not isinstance(pools, dict):
        return "not recorded"
    names = {"numba": "numba", "faiss_openmp": "faiss OpenMP", "torch": "torch"}
    return ", ".join(f"{names.get(key, key)} {'?' if value is None else value}" for key, value in pools.items())
