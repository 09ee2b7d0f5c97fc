"""The CPUs this process may keep busy: its affinity mask capped by the cgroup CPU quota.

Light (the standard library only), so that ``impls/__init__.py`` can size the numba and
OpenMP thread pools from it before either library is imported (:func:`cap_thread_pools`),
and check the user's thread variables there (:func:`thread_variable_problem`).
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")


def read_text(path: Path) -> str | None:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _positive(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def _quota_v2(cpu_max: str | None) -> float | None:
    """CPUs of a cgroup v2 ``cpu.max`` ("QUOTA PERIOD"; QUOTA "max": none); None when none or malformed."""
    fields = (cpu_max or "").split()
    if len(fields) not in (1, 2) or fields[0] == "max":
        return None
    quota, period = _positive(fields[0]), _positive(fields[1] if len(fields) == 2 else "100000")
    return quota / period if quota and period else None


def _quota_v1(quota_us: str | None, period_us: str | None) -> float | None:
    """CPUs of cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (quota -1: none); None
    when none, missing or malformed."""
    quota, period = _positive((quota_us or "").strip()), _positive((period_us or "").strip())
    return quota / period if quota and period else None


def own_cgroups() -> dict[str, str]:
    """This process's cgroup path per controller, from ``/proc/self/cgroup`` ("" is cgroup v2)."""
    found: dict[str, str] = {}
    for line in (read_text(PROC_SELF_CGROUP) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                found[controller] = parts[2].strip()
    return found


def up_to_root(base: Path, relative: str | None) -> list[Path]:
    """``base / relative`` and each folder above it up to ``base`` (just ``base`` when
    ``relative`` is unknown or leaves it)."""
    parts = [p for p in (relative or "").split("/") if p and p not in (".", "..")]
    return [base.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]


def cpu_quota() -> float | None:
    """The cgroup CPU quota on this process, in CPUs (quota / period, e.g. 1.5): the smallest
    of its cgroup's and its ancestors' (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` /
    ``cpu.cfs_period_us``); None when none is set. A file missing, unreadable or malformed
    counts as no quota."""
    own = own_cgroups()
    quotas = [_quota_v2(read_text(d / "cpu.max")) for d in up_to_root(CGROUP_ROOT, own.get(""))]
    for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        for d in up_to_root(CGROUP_ROOT / mount, own.get("cpu")):
            quotas.append(_quota_v1(read_text(d / "cpu.cfs_quota_us"), read_text(d / "cpu.cfs_period_us")))
    quotas = [q for q in quotas if q is not None]
    return min(quotas) if quotas else None


def effective_cpus(cpus: int | None = None) -> int:
    """How many CPUs this process may keep busy (>= 1): those of its affinity mask
    (``cpus``, else :func:`affinity_cpus`), capped by the cgroup CPU quota rounded up
    (:func:`cpu_quota`)."""
    cpus = affinity_cpus() if cpus is None else cpus
    quota = cpu_quota()
    return min(cpus, max(1, math.ceil(quota - 1e-9))) if quota is not None else cpus


def crowded_threads(threads: int) -> str | None:
    """"<threads> threads, and this process may use <n> CPU(s) (its affinity or cgroup quota)"
    where ``threads`` exceeds :func:`effective_cpus` (they share the CPUs, and every rate they
    measure shows it); None where they fit."""
    usable = effective_cpus()
    return (f"{threads} threads, and this process may use {usable} CPU(s) (its affinity or cgroup quota)"
            if threads > usable else None)


def affinity_cpus() -> int:
    """The CPUs of this process's affinity mask (``os.cpu_count()`` where the OS has none; >= 1)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = 0
    return cpus or os.cpu_count() or 1


POOL_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")

capped: dict[str, str] = {}   # what :func:`cap_thread_pools` set in this process's environment
CAPPED_ENV = "DLSYSBENCH_CAPPED_THREADS"  # the variables it set, for child processes (comma-separated)


def cap_thread_pools(environ=os.environ, names: tuple[str, ...] = POOL_VARIABLES) -> dict[str, str]:
    """Set each of ``names`` (:data:`POOL_VARIABLES`) that ``environ`` lacks or has empty to
    :func:`effective_cpus` when a cgroup quota leaves fewer CPUs than the affinity mask:
    numba, and the OpenMP of faiss and torch, size their pools by the mask alone and would run
    more threads than the quota lets run at once. Returns the variables set (none without such
    a quota), also kept in :data:`capped` when ``environ`` is this process's; a value the user
    set is kept. Takes effect for a library imported after it (and for child processes)."""
    mask = affinity_cpus()
    usable = effective_cpus(mask)
    if usable >= mask:
        return {}
    made = {name: str(usable) for name in names if not environ.get(name, "").strip()}
    environ.update(made)
    if made:        # child processes (asv's benchmarks) inherit the values and this note of them
        environ[CAPPED_ENV] = ",".join(sorted(set(filter(None, environ.get(CAPPED_ENV, "").split(","))) | set(made)))
    if environ is os.environ:
        capped.update(made)
    return made


def set_by_suite(environ=os.environ) -> list[str]:
    """The thread variables the suite set (:func:`cap_thread_pools`), here or in a parent
    process whose environment this one inherited, sorted."""
    return sorted(set(capped) | set(filter(None, environ.get(CAPPED_ENV, "").split(","))))


# NUMBA_THREADING_LAYER values that name one layer, with the module of numba that loads it
NUMBA_LAYERS = {"tbb": "tbbpool", "safe": "tbbpool", "omp": "omppool", "workqueue": "workqueue"}
NUMBA_LAYER_CHOICES = ("default", "safe", "threadsafe", "forksafe", "tbb", "omp", "workqueue")
COUNT_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

problem: str | None = None    # :func:`thread_variable_problem` when ``impls`` was imported (commands refuse it)


def thread_variable_problem(environ=os.environ) -> str | None:
    """One line naming the first thread variable of ``environ`` that numba, faiss's OpenMP or
    torch would refuse or misread, and what is expected, e.g. "NUMBA_NUM_THREADS=0: expected a
    positive integer (or unset it)"; None where all are usable or unset. A count must be a
    positive integer (OpenMP's comma list, e.g. "4,2", too); ``NUMBA_THREADING_LAYER`` one of
    numba's names, and a layer it names (tbb, omp, workqueue) must load: only then is numba
    imported."""
    for name in COUNT_VARIABLES:
        value = environ.get(name, "").strip()
        counts = value.split(",") if name == "OMP_NUM_THREADS" else [value]
        if value and not all(re.fullmatch(r"[0-9]+", c.strip()) and int(c) > 0 for c in counts):
            return f"{name}={value}: expected a positive integer (or unset it)"
    layer = environ.get("NUMBA_THREADING_LAYER", "").strip().lower()   # numba reads it in any case
    if not layer:
        return None
    if layer not in NUMBA_LAYER_CHOICES:
        return f"NUMBA_THREADING_LAYER={layer}: expected one of {', '.join(NUMBA_LAYER_CHOICES)} (or unset it)"
    if layer in NUMBA_LAYERS:
        import importlib
        try:
            importlib.import_module(f"numba.np.ufunc.{NUMBA_LAYERS[layer]}")
        except ImportError as err:
            needs = "tbb (pip install tbb)" if NUMBA_LAYERS[layer] == "tbbpool" else f"the {layer} layer"
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            return (f"NUMBA_THREADING_LAYER={layer}, and {needs} does not load here ({first}): install it, "
                    "or unset the variable")
    return None
