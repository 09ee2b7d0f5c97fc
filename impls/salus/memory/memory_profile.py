"""Per-iteration memory traces of a workload and the persistent / ephemeral split Salus uses.

Salus measured each job's memory from allocator traces: the *peak* is the curve's
maximum, the *persistent* bytes are the floor after the first iteration (weights,
optimizer state and input data stay; activations and gradients come and go), and
the *ephemeral* bytes are peak - persistent.

- CPU: ``torch.profiler`` with ``profile_memory=True`` records every allocation and
  free (``[memory]`` events, bytes signed); the curve is the job's tensors before the
  first iteration plus the running sum of those events.
- CUDA: the caching allocator's counters: per iteration ``memory_allocated`` before
  (after ``zero_grad(set_to_none=True)``, the floor) and after, and the peak in
  between (``reset_peak_memory_stats`` + ``max_memory_allocated``); the ``cuda``
  module is a parameter so the logic is unit-tested on CPU with a fake one.

The job is built *cold* (no warm-up iteration), so the first iteration creates the
optimizer state, as a fresh job on the device would. The *device* is warmed before the
CUDA baseline is read (:meth:`~impls.salus.core.devices.CudaDevice.warm`): cuBLAS's
workspaces, which stay allocated for the process, are not counted as a job's persistent bytes.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from impls.salus.core.devices import _tensor_bytes, get_device
from impls.salus.core.workloads import build_job

ITERATION_TAG = "salus_iteration_"


def levels(t_ms: Sequence[float], nbytes: Sequence[float], first_iteration_end_ms: float) -> dict:
    """Return {"peak_bytes", "persistent_bytes", "ephemeral_bytes"} of a memory curve.

    peak = max of the curve; persistent = its minimum at or after ``first_iteration_end_ms``
    (the floor after the first iteration; the whole curve's minimum if nothing follows);
    ephemeral = peak - persistent. Times in ms, sizes in bytes.
    """
    if len(t_ms) != len(nbytes) or not len(nbytes):
        raise ValueError(f"a memory curve needs as many times as sizes (>0): got {len(t_ms)} and {len(nbytes)}")
    t = np.asarray(t_ms, dtype=float)
    b = np.asarray(nbytes, dtype=float)
    after = b[t >= first_iteration_end_ms]
    floor = float(after.min()) if after.size else float(b.min())
    peak = float(b.max())
    return {"peak_bytes": int(peak), "persistent_bytes": int(floor), "ephemeral_bytes": int(peak - floor)}


def _downsample(t: np.ndarray, b: np.ndarray, max_points: int) -> tuple[list, list]:
    """Keep at most ``max_points`` points, always keeping each bucket's max and min (peaks survive)."""
    if t.size <= max_points:
        return t.tolist(), b.tolist()
    edges = np.linspace(0, t.size, max_points // 2 + 1).astype(int)
    keep = set()
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi > lo:
            keep.add(lo + int(np.argmax(b[lo:hi])))
            keep.add(lo + int(np.argmin(b[lo:hi])))
    idx = np.array(sorted(keep))
    return t[idx].tolist(), b[idx].tolist()


def cpu_trace(job, iterations: int = 3) -> dict:
    """Record ``iterations`` iterations of ``job`` under ``torch.profiler`` (CPU allocations).

    Returns {"t_ms": [...], "bytes": [...] (the job's bytes at each allocation event),
    "iterations_ms": [[start, end], ...] (relative to the first iteration's start),
    "method": "torch.profiler profile_memory"}.
    """
    from torch.profiler import ProfilerActivity, profile, record_function

    base = _tensor_bytes(job.persistent_tensors())
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for i in range(iterations):
            with record_function(f"{ITERATION_TAG}{i}"):
                job.step()
    events = prof.profiler.kineto_results.events()
    bounds = sorted((e.start_ns(), e.end_ns()) for e in events if e.name().startswith(ITERATION_TAG))
    if len(bounds) != iterations:
        raise RuntimeError(f"the profiler recorded {len(bounds)} of {iterations} iterations")
    t0 = bounds[0][0]
    mem = sorted((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]")
    t = np.array([t0] + [s for s, _ in mem], dtype=float)
    b = base + np.concatenate([[0], np.cumsum([n for _, n in mem], dtype=float)])
    return {"t_ms": ((t - t0) / 1e6).tolist(), "bytes": b.tolist(),
            "iterations_ms": [[(s - t0) / 1e6, (e - t0) / 1e6] for s, e in bounds],
            "method": "torch.profiler profile_memory"}


def cuda_trace(job, iterations: int = 3, cuda=None, device=None, baseline_bytes: int = 0,
               clock=time.perf_counter) -> dict:
    """Per-iteration allocator samples of ``job`` on CUDA: before (the floor), peak, after.

    ``baseline_bytes`` (allocated before the job was built) is subtracted, so the curve
    is the job's own memory. Returns the shape of :func:`cpu_trace` with
    ``"method": "cuda allocator (memory_allocated / max_memory_allocated)"``.
    """
    cuda = cuda if cuda is not None else torch.cuda
    t_ms, nbytes, bounds = [], [], []
    cuda.synchronize(device)
    t0 = clock()
    for _ in range(iterations):
        if job.optimizer is not None:
            job.optimizer.zero_grad(set_to_none=True)
        cuda.synchronize(device)
        start = (clock() - t0) * 1e3
        before = cuda.memory_allocated(device) - baseline_bytes
        cuda.reset_peak_memory_stats(device)
        job.step()
        cuda.synchronize(device)
        end = (clock() - t0) * 1e3
        peak = cuda.max_memory_allocated(device) - baseline_bytes
        after = cuda.memory_allocated(device) - baseline_bytes
        t_ms += [start, (start + end) / 2, end]
        nbytes += [before, peak, after]
        bounds.append([start, end])
    return {"t_ms": t_ms, "bytes": nbytes, "iterations_ms": bounds,
            "method": "cuda allocator (memory_allocated / max_memory_allocated)"}


def profile_memory(names: Sequence[str], device: Any = "cpu", iterations: int = 3, seed: int = 0,
                   timing_iterations: int = 5, max_points: int = 400) -> dict:
    """Memory trace, levels and iteration time of each workload on ``device``.

    Returns {"device", "device_name", "workloads": {name: {"persistent_bytes", "ephemeral_bytes",
    "peak_bytes", "iteration_ms" (mean of ``timing_iterations`` warm iterations, outside the
    profiler), "trace": {"t_ms", "bytes", "iterations_ms"}, "method"}}}.
    """
    dev = get_device(device)
    out: dict = {"device": dev.kind, "device_name": dev.describe(), "iterations": iterations, "workloads": {}}
    for name in dict.fromkeys(names):
        if dev.kind == "cuda":
            dev.release_memory()
            dev.warm()   # cuBLAS workspaces exist before the baseline: not the first job's bytes
            baseline = dev.cuda.memory_allocated(dev.torch_device)
            job = build_job(name, dev.torch_device, seed=seed, iterations=10 ** 9, warm=False)
            trace = cuda_trace(job, iterations, cuda=dev.cuda, device=dev.torch_device, baseline_bytes=baseline)
        else:
            job = build_job(name, dev.torch_device, seed=seed, iterations=10 ** 9, warm=False)
            trace = cpu_trace(job, iterations)
        first_end = trace["iterations_ms"][0][1]
        row = levels(trace["t_ms"], trace["bytes"], first_end)
        times = []
        for _ in range(timing_iterations):
            timer = dev.timer()
            timer.start()
            job.step()
            timer.stop()
            times.append(timer.elapsed_ms())
        t, b = _downsample(np.asarray(trace["t_ms"]), np.asarray(trace["bytes"]), max_points)
        out["workloads"][name] = {**row, "iteration_ms": float(np.mean(times)), "method": trace["method"],
                                  "trace": {"t_ms": t, "bytes": b, "iterations_ms": trace["iterations_ms"]}}
        job.release()
        del job
        dev.release_memory()
    return out
