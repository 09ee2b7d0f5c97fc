"""Switching latency: Salus's in-process switch vs checkpoint-based suspend/resume.

For each workload two instances A and B are built (different seeds) and four ways
of switching the device from A to B are timed:

``inprocess``
    Both jobs resident in one :class:`~impls.salus.core.executor.Executor`; per repeat the
    executor runs B, B, A, B (a scripted policy picks, the real ``run_round`` runs)
    and the switch cost is (end of A -> end of the B after it) minus (end of B ->
    end of the B after it): B's iteration when it follows A vs when it follows
    itself, measured the same way in the same repeat. ``inprocess_gap_ms`` is the
    raw gap between A's end and B's start (the executor's own bookkeeping).
``to_host``
    Gandiva-style suspend/resume: A's parameters, buffers and optimizer state are
    copied to host memory and their device copies freed, then B's are brought back
    from host. On CUDA that is device<->pinned host; on the CPU, which has no device
    memory, it is a copy out to a separate buffer and back (``to_host_method`` says so).
``to_disk``
    ``torch.save`` of A's checkpoint (flushed and fsynced) + ``torch.load`` of B's and
    ``load_state_dict`` into B (the page cache is not dropped: loads may be cached).
``restart``
    A's checkpoint saved as above, then a fresh Python process that imports torch,
    builds B and loads B's checkpoint (:mod:`impls.salus.core.restart_child`), timed
    until it says READY.

Iterations and the in-process switch are timed with the device timer (CUDA events,
synchronised); the checkpoint methods too, the restart with the host wall clock.
Every method reports p50 and p99 over its repeats.

Command line::

    python -m impls.salus.switching --device {cpu,cuda} [--workloads a,b] [--repeats N] --json
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from impls.harness import cli
from impls.salus.core.devices import TO_HOST_METHOD, get_device
from impls.salus.core.executor import Executor, Submission
from impls.salus.core.policies import Policy
from impls.salus.core.workloads import Job, build_job

DEFAULT_WORKLOADS = ("mlp_b64", "resnet_b8", "lstm_b16")


def percentiles(values: Sequence[float]) -> dict:
    """``{"p50", "p99", "n"}`` of ``values`` (linear interpolation; ``None`` when empty)."""
    if not len(values):
        return {"p50": None, "p99": None, "n": 0}
    arr = np.asarray(values, dtype=float)
    return {"p50": float(np.percentile(arr, 50)), "p99": float(np.percentile(arr, 99)), "n": int(arr.size)}


# ---------------------------------------------------------------- in-process

class ScriptedPolicy(Policy):
    """Picks the jobs named by a script of job ids, one per call (for latency measurement)."""
    name = "scripted"

    def __init__(self, script: Sequence[int]):
        self.script = list(script)
        self.position = 0

    def choose(self, jobs):
        want = self.script[self.position % len(self.script)]
        self.position += 1
        return [j for j in jobs if j.job_id == want]


def measure_inprocess(job_a: Job, job_b: Job, device: Any, repeats: int, warmup: int = 2) -> dict:
    """In-process switch A -> B inside the executor; see the module docstring.

    Returns ``{"inprocess_ms": [...], "inprocess_gap_ms": [...], "iteration_ms": [...]}``
    (one value per repeat; iteration_ms is B's device time when it follows itself).
    """
    a_id, b_id = job_a.job_id, job_b.job_id
    big = 10 ** 9
    policy = ScriptedPolicy([b_id, b_id, a_id, b_id])
    ex = Executor(policy, device, log_iterations=True)
    ex.start()
    ex.admit_now([Submission(job_a, iterations=big), Submission(job_b, iterations=big)])
    out = {"inprocess_ms": [], "inprocess_gap_ms": [], "iteration_ms": []}
    for rep in range(warmup + repeats):
        start = len(ex.iteration_log)
        for _ in range(4):
            ex.run_round(policy.choose(ex.active))
        if rep < warmup:
            continue
        e0, e1, e2, e3 = ex.iteration_log[start:start + 4]
        assert (e0["job_id"], e1["job_id"], e2["job_id"], e3["job_id"]) == (b_id, b_id, a_id, b_id)
        alone = e1["end_s"] - e0["end_s"]
        switched = e3["end_s"] - e2["end_s"]
        out["inprocess_ms"].append((switched - alone) * 1e3)
        out["inprocess_gap_ms"].append((e3["start_s"] - e2["end_s"]) * 1e3)
        out["iteration_ms"].append(e1["device_ms"])
    failed = [r for r in ex.records if r.status == "failed"]
    if failed:
        raise RuntimeError(f"job failed during the in-process measurement: {failed[0].error}")
    for record in ex.active:
        record.job = None  # the caller still owns the jobs: do not release them
    return out


# ---------------------------------------------------------------- checkpoint to host

def _get(owner, key):
    return owner.data if key == "data" else owner[key]


def _set(owner, key, value):
    if key == "data":
        owner.data = value
    else:
        owner[key] = value


class HostCheckpoint:
    """Suspend a job's state to (preallocated, pinned on CUDA) host buffers and resume it."""

    def __init__(self, job: Job, device: Any):
        self.job = job
        self.device = device
        self.slots = job.state_slots()
        self.buffers = [device.host_buffer(_get(o, k)) for o, k in self.slots]
        self.meta = [(_get(o, k).shape, _get(o, k).dtype) for o, k in self.slots]
        self.suspended = False

    def suspend(self) -> None:
        """Copy every state tensor to host, then free the device copies."""
        target = self.device.torch_device
        for (owner, key), buf in zip(self.slots, self.buffers):
            buf.copy_(_get(owner, key), non_blocking=True)
        self.device.synchronize()  # the copies must land before the device memory goes
        for owner, key in self.slots:
            t = _get(owner, key)
            _set(owner, key, torch.empty(0, dtype=t.dtype, device=target))
            if key == "data":
                owner.grad = None  # gradients are ephemeral: the next iteration recomputes them
        self.suspended = True

    def resume(self) -> None:
        """Allocate device tensors again and copy the state back from host."""
        target = self.device.torch_device
        for (owner, key), buf, (shape, dtype) in zip(self.slots, self.buffers, self.meta):
            fresh = torch.empty(shape, dtype=dtype, device=target)
            fresh.copy_(buf, non_blocking=True)
            _set(owner, key, fresh)
        self.device.synchronize()
        self.suspended = False


def measure_to_host(job_a: Job, job_b: Job, device: Any, repeats: int) -> list[float]:
    """Per repeat: suspend the running job to host and resume the other one (roles alternate)."""
    ck = {0: HostCheckpoint(job_a, device), 1: HostCheckpoint(job_b, device)}
    ck[1].suspend()
    running = 0
    times = []
    for _ in range(repeats + 1):
        timer = device.timer()
        device.synchronize()
        timer.start()
        ck[running].suspend()
        ck[1 - running].resume()
        timer.stop()
        times.append(timer.elapsed_ms())
        running = 1 - running
    for checkpoint in ck.values():
        if checkpoint.suspended:
            checkpoint.resume()
    return times[1:]  # the first switch pays one-off allocator warm-up


# ---------------------------------------------------------------- checkpoint to disk

def save_checkpoint(job: Job, path: Path) -> None:
    """``torch.save`` the job's state to ``path``, flushed and fsynced (a real disk write)."""
    with open(path, "wb") as handle:
        torch.save(job.state_dict(), handle)
        handle.flush()
        os.fsync(handle.fileno())


def load_checkpoint(job: Job, path: Path, device: Any) -> None:
    job.load_state_dict(torch.load(path, map_location=device.torch_device, weights_only=True))


def measure_to_disk(job_a: Job, job_b: Job, device: Any, repeats: int, directory: Path) -> list[float]:
    paths = {0: directory / "a.pt", 1: directory / "b.pt"}
    jobs = {0: job_a, 1: job_b}
    save_checkpoint(job_b, paths[1])
    running, times = 0, []
    for _ in range(repeats + 1):
        timer = device.timer()
        device.synchronize()
        timer.start()
        save_checkpoint(jobs[running], paths[running])
        load_checkpoint(jobs[1 - running], paths[1 - running], device)
        device.synchronize()
        timer.stop()
        times.append(timer.elapsed_ms())
        running = 1 - running
    return times[1:]


# ---------------------------------------------------------------- process restart

RESTART_PARTS = ("save_a", "interpreter", "import", "build", "load")


def measure_restart(job_a: Job, job_b: Job, device: Any, repeats: int, directory: Path,
                    timeout_s: float = 300.0, parts: dict[str, list[float]] | None = None) -> list[float]:
    """Save A, then start a fresh process that builds B and loads its checkpoint (until READY);
    return each repeat's milliseconds. ``parts``, when given, gets each repeat's milliseconds of
    :data:`RESTART_PARTS` appended: saving A, the interpreter's start (the rest of the total),
    and the child's import of torch and the registry, build of B and load of its checkpoint
    (:mod:`impls.salus.core.restart_child`); within a repeat they sum to its total (their
    medians over repeats need not sum to the total's median)."""
    save_checkpoint(job_b, directory / "b.pt")
    env = dict(os.environ)
    env["SALUS_CHILD_THREADS"] = str(torch.get_num_threads())
    root = str(Path(__file__).resolve().parents[3])   # the folder holding the impls package
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else root
    device_arg = str(device.torch_device)
    times = []
    for _ in range(repeats):
        device.synchronize()
        t0 = time.perf_counter()
        save_checkpoint(job_a, directory / "a.pt")
        saved = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "impls.salus.core.restart_child", job_b.workload, device_arg, str(directory / "b.pt")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root)
        try:
            said = []       # a library may print before READY: read up to it (or the end)
            while (line := proc.stdout.readline()) and not line.startswith("READY"):
                said.append(line.strip())
            elapsed = (time.perf_counter() - t0) * 1e3
            _, err = proc.communicate(timeout=timeout_s)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        words = line.split()
        if not words or words[0] != "READY" or len(words) != 4 or proc.returncode != 0:
            shown = line.strip() or " | ".join(said)
            raise RuntimeError(f"restart child for {job_b.workload} failed (rc={proc.returncode}, said "
                               f"{shown[:80]!r}): {err.strip()[-2000:]}")
        times.append(elapsed)
        if parts is not None:
            child = [float(w) for w in words[1:]]
            save_ms = (saved - t0) * 1e3
            for name, value in zip(RESTART_PARTS, (save_ms, elapsed - save_ms - sum(child), *child)):
                parts.setdefault(name, []).append(value)
    return times


def _restart(name: str, job_a: Job, job_b: Job, dev, repeats: int, directory: Path,
             parts: dict[str, list[float]]) -> tuple[list[float], str | None]:
    """``(measure_restart's times, None)``; on a CUDA device whose restart child fails (a GPU
    in exclusive-process mode refuses a second process), ``([], why)``, said as a warning, so
    that the other methods' numbers stand: ``why`` keeps the message's first line and its
    last (the child's error). On the CPU no device can refuse the child: a failure there is
    a defect, raised."""
    try:
        return measure_restart(job_a, job_b, dev, repeats, directory, parts=parts), None
    except RuntimeError as err:
        if dev.kind != "cuda":
            raise
        lines = [" ".join(line.split()) for line in str(err).splitlines() if line.strip()]
        why = lines[0][:200] + (f" ... {lines[-1][-300:]}" if len(lines) > 1 else "")
        parts.clear()
        cli.warn(f"switching: {name}: the restart child failed ({why}); the other methods' numbers stand")
        return [], f"the restart child failed: {why}"


# ---------------------------------------------------------------- the experiment

def switching_latency(device: str | Any = "cpu", workloads: Sequence[str] = DEFAULT_WORKLOADS,
                      repeats: int = 10, restart_repeats: int | None = None,
                      directory: str | Path | None = None, seed: int = 0) -> dict:
    """Measure the four switching methods for each workload on ``device``; return plain data.

    ``{"device": "cpu", "device_name": ..., "to_host_method": ..., "workloads": {NAME:
    {"iteration_ms": {"p50","p99","n"}, "inprocess_ms": {...}, "inprocess_gap_ms": {...},
    "to_host_ms": {...}, "to_disk_ms": {...}, "restart_ms": {...}, "restart_parts_p50_ms":
    {part: ms or None} (:data:`RESTART_PARTS`, each part's own median), "restart_no_value": why
    the restart has no numbers (its child failed, or 0 repeats; None where it has), "state_bytes":
    int}}}``. ``restart_repeats`` (default ``min(repeats, 5)``) bounds the slow restart method.
    On a CUDA device a restart child that fails (:func:`measure_restart`'s RuntimeError: a GPU
    in exclusive-process mode refuses it) costs the restart's numbers only (:func:`_restart`).
    """
    from impls.harness import paths

    dev = get_device(device)
    restart_repeats = min(repeats, 5) if restart_repeats is None else restart_repeats
    if directory is None:      # the suite's scratch folder: made on demand, swept of killed runs' folders
        base = paths.cache_dir() / "salus"
        cli.register_new_dir(base)
        cli.sweep_stale(base, "switch-pid*")
    result: dict = {"device": dev.kind, "device_name": dev.describe(),
                    "to_host_method": TO_HOST_METHOD[dev.kind],
                    "to_disk_method": "torch.save (flush+fsync) of A + torch.load of B; page cache not dropped",
                    "restart_method": "save A + fresh python process: import torch, build B, load checkpoint",
                    "torch_threads": torch.get_num_threads(), "workloads": {}}
    for name in workloads:
        job_a = build_job(name, dev.torch_device, seed=seed, iterations=10 ** 9)
        job_b = build_job(name, dev.torch_device, seed=seed + 7, iterations=10 ** 9)
        with tempfile.TemporaryDirectory(dir=directory or base, prefix=f"switch-pid{os.getpid()}-") as tmp:
            tmp = Path(tmp)
            cli.fault_point("switching")
            inproc = measure_inprocess(job_a, job_b, dev, repeats)
            to_host = measure_to_host(job_a, job_b, dev, repeats)
            to_disk = measure_to_disk(job_a, job_b, dev, repeats, tmp)
            parts: dict[str, list[float]] = {}
            restart, restart_why = (_restart(name, job_a, job_b, dev, restart_repeats, tmp, parts)
                                    if restart_repeats > 0 else
                                    ([], "no restart measured: the profile's restart_repeats is 0"))
        result["workloads"][name] = {
            "iteration_ms": percentiles(inproc["iteration_ms"]),
            "inprocess_ms": percentiles(inproc["inprocess_ms"]),
            "inprocess_gap_ms": percentiles(inproc["inprocess_gap_ms"]),
            "to_host_ms": percentiles(to_host),
            "to_disk_ms": percentiles(to_disk),
            "restart_ms": percentiles(restart),
            "restart_no_value": restart_why,
            "restart_parts_p50_ms": {name: percentiles(parts.get(name, []))["p50"] for name in RESTART_PARTS},
            "state_bytes": job_a.state_bytes(),
        }
        job_a.release()
        job_b.release()
        dev.release_memory()
    return result


# what each column is, for the footnote under a column that prints a negative value
COLUMN_NOTES = {
    "iteration_ms": "B's iteration time",
    "inprocess_ms": "a paired difference, B's iteration after A's minus B's after B's",
    "inprocess_gap_ms": "the executor's gap between A's end and B's start",
    "to_host_ms": "a checkpoint to host memory and back",
    "to_disk_ms": "a checkpoint to disk and back",
    "restart_ms": "a process restart",
}


def print_table(result: Mapping) -> None:
    """Print :func:`switching_latency`'s result as a table (p50 / p99 ms per method), and under
    it a footnote for each column that prints a negative value."""
    print(f"device {result['device_name']}; to_host = {result['to_host_method']}")
    cols = ("iteration_ms", "inprocess_ms", "inprocess_gap_ms", "to_host_ms", "to_disk_ms", "restart_ms")
    print(f"{'workload':22s}" + "".join(f"{c[:-3]:>18s}" for c in cols) + "   (p50 / p99 ms)")
    negative: list[str] = []
    for name, row in result["workloads"].items():
        cells = ""
        for c in cols:
            if not row[c]["n"]:
                cells += f"{'-':>18s}"
                continue
            p50, p99 = f"{row[c]['p50']:.3f}", f"{row[c]['p99']:.3f}"
            cells += f"{p50:>9s}/{p99:<8s}"
            if "-" in (p50[0], p99[0]) and c not in negative:
                negative.append(c)
        print(f"{name:22s}{cells}")
    for c in negative:
        print(f"note: {c[:-3]} is {COLUMN_NOTES[c]} (ms); a negative value is below the measurement's "
              "resolution, not a measured negative time")
    for name, row in result["workloads"].items():
        parts = row.get("restart_parts_p50_ms") or {}
        if any(v is not None for v in parts.values()):
            print(f"restart of {name}, p50 of each part (ms; each part's own median, so they need not sum to "
                  "the restart's): " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items() if v is not None))
