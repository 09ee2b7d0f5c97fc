"""Hyper-parameter exploration (Salus: 300 identical jobs x {vae, superres, resnet50} x 500 iterations).

``n_jobs`` copies of one workload that differ only in their learning rate (log-spaced)
run (a) one at a time (FIFO: each to completion, then the next) and (b) all together
under PACK with GPU lanes (:class:`~impls.salus.memory.lane_executor.LaneExecutor`; on CUDA one
stream + memory pool per lane; on the CPU one host thread per lane, up to
``host_workers``, or interleaved iterations). The
headline is the makespan ratio serial / packed (the paper's 2.38x "utilisation"). Beside
it, utilisation over time: the executor's lanes busy on average from its iteration log
(above 1 when lanes overlap, on a GPU's streams or on host threads), the machine's CPU
busy fraction (/proc/stat) on the CPU, NVML busy % on a GPU.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from impls.harness.capabilities import effective_cpus
from impls.harness.progress import progress_bar
from impls.salus.core.devices import get_device
from impls.salus.core.executor import Executor, Submission
from impls.salus.memory.lane_executor import LaneExecutor
from impls.salus.memory.memory_profile import profile_memory
from impls.salus.memory.utilisation import CpuSampler, NvmlSampler, busy_timeline, nvml_uuid_of_cuda_device
from impls.salus.core.workloads import build_job
from impls.salus.experiments.names import checked_names


def learning_rates(n: int, lo: float, hi: float) -> list[float]:
    """Return ``n`` learning rates log-spaced over [lo, hi] (one each for n = 1: lo)."""
    if n < 1 or lo <= 0 or hi < lo:
        raise ValueError(f"need n >= 1 and 0 < lo <= hi, got n={n}, lo={lo}, hi={hi}")
    return [float(x) for x in np.geomspace(lo, hi, n)] if n > 1 else [float(lo)]


def finished_makespan(run: Mapping[str, Any]) -> float:
    """Return a run's makespan in seconds, or NaN when any of its jobs failed: the time
    until the survivors stopped is no time to finish the workload."""
    return float("nan") if run["failed"] else float(run["makespan_s"])


def _jobs(workload: str, lrs: Sequence[float], iterations: int, device) -> list:
    jobs = []
    for i, lr in enumerate(lrs):
        job = build_job(workload, device.torch_device, seed=i, iterations=iterations, job_id=i)
        for group in job.optimizer.param_groups:
            group["lr"] = lr
        jobs.append(job)
    return jobs


NVML_KIND = "nvml busy %"
# NVML's utilization.gpu is the share of a trailing window (1/6 s to 1 s, by GPU) in which some
# kernel ran: a run shorter than the longest window cannot be told apart from idle time before it.
NVML_WINDOW_S = (1 / 6, 1.0)


def _sampler(device):
    """``(sampler, kind)`` of utilisation over time on ``device`` (NVML on CUDA, /proc/stat on the
    CPU), ``(None, None)`` on any other device. The sampler is returned even where it cannot
    work (no NVML, no /proc/stat): its ``start`` then raises with why, which :func:`_run`
    records as the sampler's "not measured: <reason>" status, never a silent ``None``."""
    if device.kind == "cuda":
        index = getattr(device, "index", 0) or 0
        return (NvmlSampler(index, 0.05, uuid=nvml_uuid_of_cuda_device(index)),   # NVML's numbering is not CUDA's
                NVML_KIND)
    if device.kind == "cpu":
        return CpuSampler(0.1), "cpu busy fraction (/proc/stat, all cores)"
    return None, None


def _sampled(sampler, kind: str, samples: dict | None, start_error: str | None, wall_s: float) -> dict:
    """The run's sampler record: {"kind", "interval_s" (seconds between samples), "status"
    ("measured", or "not measured: <reason>": the sampler did not start, a sample failed, or,
    for NVML, the run was shorter than its averaging window), "too_short" (NVML only: the run's
    wall time < ``NVML_WINDOW_S[1]``), "averaging_window_s" (NVML only), <metric>: [...]}."""
    out = {"kind": kind, "interval_s": sampler.interval_s, **(samples or {})}
    reason = start_error or sampler.error
    if kind == NVML_KIND:
        out["averaging_window_s"] = list(NVML_WINDOW_S)
        out["too_short"] = wall_s < NVML_WINDOW_S[1]
        if out["too_short"] and reason is None:
            reason = (f"run of {wall_s:.3g} s too short for NVML's averaging window "
                      f"({NVML_WINDOW_S[0]:.3g} to {NVML_WINDOW_S[1]:.3g} s)")
    out["status"] = "measured" if reason is None else f"not measured: {reason}"
    return out


def _run(executor, jobs, device, bins: int, peak_bytes: int = 0) -> dict:
    sampler, kind = _sampler(device)
    start_error = None
    if sampler:
        try:
            sampler.start()
        except Exception as err:  # noqa: BLE001 - a sampler that cannot start leaves utilisation unmeasured
            start_error = str(err) or type(err).__name__
    try:
        result = executor.run([Submission(job, peak_bytes=peak_bytes) for job in jobs])
    finally:
        samples = sampler.stop() if sampler and start_error is None else None
    intervals = [(e["start_s"], e["end_s"]) for e in executor.iteration_log]
    makespan = result["makespan_s"]
    # the span the device time fell in: to the last iteration, a failed job's included (the
    # makespan is the done jobs' only)
    span = max([makespan, *(end for _, end in intervals)])
    out = {"makespan_s": makespan, "wall_s": result["wall_s"], "done": result["done"],
           "failed": result["failed"], "errors": sorted({j["error"] for j in result["jobs"] if j["error"]}),
           "iterations": result["iterations"],
           "device_ms": sum(j["device_ms"] for j in result["jobs"]),
           # device time in iterations (CUDA events on a GPU, wall clock on the CPU) per second of
           # that span: lanes busy on average (above 1 when lanes overlap, on a GPU's streams or on
           # host threads)
           "event_busy": (sum(j["device_ms"] for j in result["jobs"]) / 1e3 / span) if span else None,
           "busy": busy_timeline(intervals, span, bins) if span > 0 else None,
           "sampler": _sampled(sampler, kind, samples, start_error, result["wall_s"]) if sampler else None}
    if "lanes" in result:
        out["lanes"] = {k: v for k, v in result["lanes"].items() if k != "log"}
    return out


def hyperparam_experiment(sizes: Mapping[str, Any], device: Any = "cpu", progress: bool | None = None) -> dict:
    """Serial vs PACK-with-lanes makespan for each workload in ``sizes["workloads"]``.

    ``sizes`` keys (``[salus_hyperparam.*]``): workloads, n_jobs, iterations, lr [lo, hi],
    capacity_peaks (device memory for the lanes, as a multiple of one job's peak), rule,
    threads (torch threads of the serial run; 0: torch's default), packed_threads (torch
    threads of the PACK run, default ``threads``), host_workers (PACK on a CPU: lanes run
    at once on that many host threads, 0 = one per usable core (affinity and CPU quota:
    :func:`impls.harness.capabilities.effective_cpus`); default 1: interleaved), bins.
    Both runs get the whole machine when threads = cores = packed_threads x host_workers.
    Returns {"device", "device_name", "workloads": {name: {"memory" (persistent,
    ephemeral, peak bytes), "serial", "packed" ({makespan_s, done, failed (job ids), errors
    (each failed job's error, once each), busy{t_s, busy (lanes busy on average per bin:
    above 1 when lanes overlap, on a GPU's streams or on host threads), busy_mean}, sampler
    (None without one; else see :func:`_sampled`: its "status" says whether its numbers
    measure the run), lanes, ...}), "ratio" (serial / packed makespan; None unless both runs
    finished every job), "lrs"}}, "smallest" (the workload with the smallest peak), "ratio_smallest"}.
    """
    from impls.salus.core.devices import torch_threads

    sizes = checked_names(sizes, "salus_hyperparam")
    dev = get_device(device)
    names = list(sizes["workloads"])
    lo, hi = sizes.get("lr", [1e-4, 1e-1])
    lrs = learning_rates(int(sizes["n_jobs"]), lo, hi)
    bins = int(sizes.get("bins", 40))
    out: dict = {"device": dev.kind, "device_name": dev.describe(), "n_jobs": len(lrs),
                 "iterations": int(sizes["iterations"]), "rule": sizes.get("rule", "salus"),
                 "workloads": {}}
    workers = int(sizes.get("host_workers", 1)) or effective_cpus()
    out["host_workers"] = workers if dev.kind == "cpu" else None
    packed_threads = sizes.get("packed_threads", sizes.get("threads"))
    with torch_threads(sizes.get("threads")) as threads:
        out["torch_threads"] = threads
        memory = profile_memory(names, dev, iterations=3, timing_iterations=2)["workloads"]
        bar = progress_bar(2 * len(names), "salus hyper-parameter runs", "run", progress)
        for name in names:
            mem = {k: memory[name][k] for k in ("persistent_bytes", "ephemeral_bytes", "peak_bytes")}
            if float(sizes["capacity_peaks"]) < 1:
                raise ValueError(f"capacity_peaks must be >= 1 (one job must fit), got {sizes['capacity_peaks']}")
            capacity = int(float(sizes["capacity_peaks"]) * mem["peak_bytes"])
            serial = _run(Executor("fifo", dev, log_iterations=True),
                          _jobs(name, lrs, int(sizes["iterations"]), dev), dev, bins)
            bar.update(1)
            packed_ex = LaneExecutor("pack", dev, capacity, {name: mem}, rule=out["rule"], log_iterations=True,
                                     host_workers=workers if dev.kind == "cpu" else 1)
            with torch_threads(packed_threads) as n_threads:
                out["packed_torch_threads"] = n_threads
                packed = _run(packed_ex, _jobs(name, lrs, int(sizes["iterations"]), dev), dev, bins,
                              mem["peak_bytes"])
            bar.update(1)
            dev.release_memory()
            complete = not serial["failed"] and not packed["failed"] and packed["makespan_s"]
            ratio = serial["makespan_s"] / packed["makespan_s"] if complete else None
            out["workloads"][name] = {"memory": mem, "capacity_bytes": capacity, "lrs": lrs,
                                      "serial": serial, "packed": packed, "ratio": ratio}
        bar.close()
    smallest = min(names, key=lambda n: out["workloads"][n]["memory"]["peak_bytes"])
    out["smallest"] = smallest
    out["ratio_smallest"] = out["workloads"][smallest]["ratio"]
    return out
