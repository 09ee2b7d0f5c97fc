"""Many-model inference sharing (Salus: 42 models = 14 models x 3 batch sizes on one GPU).

``K`` inference workloads each get a Poisson stream of requests (one request = one
forward pass at the workload's batch size). Three ways to serve them:

- ``shared``: one process, every model resident, admitted through GPU lanes, one
  request at a time chosen by FAIR (the model with the least device time so far among
  those with a request waiting), at iteration (request) granularity: Salus.
- ``one_per_device``: each model alone on a device of its own (no sharing): its own
  stream replayed with nothing else running; needs ``K`` devices.
- ``processes``: ``K`` OS processes, one model each, all at once on the one device (the
  MPS-like baseline: the device time-slices processes; NVIDIA MPS itself is not used). Run
  on the CPU only: its processes build their models on the CPU, so a CUDA run has no such
  setup (and its benchmark points skip saying so).

Latency = finish - arrival per request (ms): p50 and p99 per model. *Devices needed*
for a p99 target: for ``shared``, the fewest devices over which the models (split by
load, largest first) all meet the target, found with a discrete-event replay of the
same FAIR loop on the service times measured in the shared run, taken in turn. The real
runs overrule the replay: 1 when the real one-device run met the target with every model,
at least 2 when it missed, and None when a model alone missed it (no split does better);
``one_per_device`` needs ``K`` (None when a model alone misses the target). Arrivals are
synthetic (Poisson, seeded).
"""
from __future__ import annotations

import collections
import heapq
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from impls.harness.progress import progress_bar
from impls.salus.core.devices import get_device
from impls.salus.memory.lanes import LaneJob, make_manager
from impls.salus.core.workloads import build_job


def request_streams(service_ms: Mapping[str, float], load: float, duration_s: float, seed: int = 0,
                    min_requests: int = 5) -> dict[str, list[float]]:
    """Return per model sorted Poisson arrival times (s) in [0, duration_s].

    Each of the K models offers ``load / K`` of one device: rate = load / (K * service time).
    At least ``min_requests`` per model (the first ones spread over the duration if the
    rate gives fewer).
    """
    if not 0 < load:
        raise ValueError(f"load must be > 0, got {load}")
    rng = np.random.default_rng(seed)
    k = len(service_ms)
    streams = {}
    for name in sorted(service_ms):
        rate = load / (k * service_ms[name] / 1e3)
        n = max(min_requests, int(rng.poisson(rate * duration_s)))
        streams[name] = sorted(rng.uniform(0.0, duration_s, n).tolist())
    return streams


def _stats(latencies_ms: Sequence[float]) -> dict:
    xs = np.asarray(latencies_ms, dtype=float)
    return {"p50_ms": float(np.percentile(xs, 50)), "p99_ms": float(np.percentile(xs, 99)),
            "mean_ms": float(xs.mean()), "n": int(xs.size)}


def serve_fair(jobs: Mapping[str, Any], streams: Mapping[str, Sequence[float]], device,
               clock=time.perf_counter, sleep=time.sleep) -> dict:
    """Serve every request of ``streams`` with ``jobs`` (name -> built inference Job) in this process.

    At each request boundary the model with the least device time so far among those
    with a waiting request runs its oldest request (FAIR). Returns {name: {"latencies_ms":
    [...], "service_ms": [...]}, "_busy_s": time inside forwards, "_wall_s"}.
    """
    arrivals = sorted((t, name) for name, ts in streams.items() for t in ts)
    queues: dict[str, collections.deque[float]] = {name: collections.deque() for name in streams}
    used = {name: 0.0 for name in streams}
    out = {name: {"latencies_ms": [], "service_ms": []} for name in streams}
    i, busy = 0, 0.0
    t0 = clock()
    while i < len(arrivals) or any(queues.values()):
        now = clock() - t0
        while i < len(arrivals) and arrivals[i][0] <= now:
            queues[arrivals[i][1]].append(arrivals[i][0])
            i += 1
        ready = [name for name, q in queues.items() if q]
        if not ready:
            sleep(max(0.0, arrivals[i][0] - (clock() - t0)))
            continue
        name = min(ready, key=lambda n: (used[n], queues[n][0], n))
        arrival = queues[name].popleft()
        timer = device.timer()
        start = clock()
        timer.start()
        jobs[name].step()
        timer.stop()
        ms = timer.elapsed_ms()
        end = clock()
        busy += end - start
        used[name] += ms
        out[name]["latencies_ms"].append((end - t0 - arrival) * 1e3)
        out[name]["service_ms"].append(ms)
    out["_busy_s"] = busy
    out["_wall_s"] = clock() - t0
    return out


def _service_of(service: float | Sequence[float], k: int) -> float:
    """The ``k``-th served request's service time (ms): a fixed time, or the measured times in turn."""
    if isinstance(service, (int, float)):
        return float(service)
    return float(service[k % len(service)])


def simulate_fair(service_ms: Mapping[str, float | Sequence[float]],
                  streams: Mapping[str, Sequence[float]]) -> dict[str, list[float]]:
    """Discrete-event replay of :func:`serve_fair`; return latencies (ms) per model. A model's
    service time (ms) is fixed, or a sequence of measured times that its requests take in turn
    (so the replay keeps their spread: a fixed mean gives too short a tail)."""
    arrivals = sorted((t, name) for name, ts in streams.items() for t in ts)
    queues: dict[str, collections.deque[float]] = {name: collections.deque() for name in streams}
    used = {name: 0.0 for name in streams}
    lat: dict[str, list[float]] = {name: [] for name in streams}
    now, i = 0.0, 0
    while i < len(arrivals) or any(queues.values()):
        while i < len(arrivals) and arrivals[i][0] <= now:
            queues[arrivals[i][1]].append(arrivals[i][0])
            i += 1
        ready = [name for name, q in queues.items() if q]
        if not ready:
            now = arrivals[i][0]
            continue
        name = min(ready, key=lambda n: (used[n], queues[n][0], n))
        arrival = queues[name].popleft()
        took = _service_of(service_ms[name], len(lat[name]))
        now += took / 1e3
        used[name] += took
        lat[name].append((now - arrival) * 1e3)
    return lat


def split_by_load(load: Mapping[str, float], devices: int) -> list[list[str]]:
    """Split models over ``devices`` by load, largest first onto the least loaded device (LPT)."""
    bins: list[tuple[float, int]] = [(0.0, d) for d in range(devices)]
    groups: list[list[str]] = [[] for _ in range(devices)]
    for name in sorted(load, key=lambda n: (-load[n], n)):
        total, d = heapq.heappop(bins)
        groups[d].append(name)
        heapq.heappush(bins, (total + load[name], d))
    return groups


def devices_needed(service_ms: Mapping[str, float | Sequence[float]], streams: Mapping[str, Sequence[float]],
                   target_p99_ms: float, min_devices: int = 1) -> dict:
    """Return {"devices": fewest devices (>= ``min_devices``) whose simulated FAIR sharing meets
    ``target_p99_ms`` for every model (None if even one model per device misses it),
    "worst_p99_ms": per device count tried}. Service times as :func:`simulate_fair` takes
    them; a model without requests has no latency and bounds nothing."""
    load = {n: len(streams[n]) * float(np.mean(service_ms[n])) for n in streams}
    tried = {}
    for d in range(max(1, min_devices), len(streams) + 1):
        worst = 0.0
        for group in split_by_load(load, d):
            if not group:
                continue
            lat = simulate_fair({n: service_ms[n] for n in group}, {n: streams[n] for n in group})
            worst = max([worst, *(float(np.percentile(lat[n], 99)) for n in group if lat[n])])
        tried[d] = worst
        if worst <= target_p99_ms:
            return {"devices": d, "worst_p99_ms": tried}
    return {"devices": None, "worst_p99_ms": tried}


def _serve_one(name: str, stream: Sequence[float], seed: int, threads: int, stdin, stdout) -> list[float]:
    """One model in its own process (the MPS-like baseline): build it, say READY on ``stdout``, read
    the common wall-clock start from ``stdin``, replay ``stream``; return latencies (ms)."""
    torch.set_num_threads(max(1, threads))
    job = build_job(name, "cpu", seed=seed, iterations=10 ** 9)
    print("READY", file=stdout, flush=True)
    start_at = float(stdin.readline())
    lat = []
    for arrival in stream:
        wait = start_at + arrival - time.time()
        if wait > 0:
            time.sleep(wait)
        job.step()
        lat.append((time.time() - start_at - arrival) * 1e3)
    return lat


def serve_processes(streams: Mapping[str, Sequence[float]], threads: int = 1, seed: int = 0,
                    timeout_s: float = 600.0) -> dict:
    """Serve each model's stream from its own process, all at once; return {name: latencies (ms)}.

    Each process (``python -m impls.salus.experiments.inference --serve-file SPEC``) imports torch
    and builds its model, then says READY; when all are ready they get one common wall-clock
    start time. A stream travels in a file, not on the command line: Linux refuses one
    argument over 128 KiB, which a stream of ~10,000 arrivals passes.
    """
    import json
    import subprocess
    import sys
    import tempfile

    procs = {}
    specs = tempfile.TemporaryDirectory(prefix="dlsysbench-serve-")
    try:
        for k, (name, stream) in enumerate(streams.items()):
            spec = Path(specs.name) / f"{k}.json"
            spec.write_text(json.dumps({"name": name, "stream": list(stream), "seed": seed, "threads": threads}))
            procs[name] = subprocess.Popen([sys.executable, "-m", "impls.salus.experiments.inference",
                                            "--serve-file", str(spec)],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True)
        for name, proc in procs.items():
            line = proc.stdout.readline()
            if line.strip() != "READY":
                raise RuntimeError(f"inference process for {name} did not start: {proc.stderr.read()[-2000:]}")
        start_at = time.time() + 0.2
        for proc in procs.values():
            proc.stdin.write(f"{start_at}\n")
            proc.stdin.flush()
        out = {}
        for name, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=timeout_s)
            if proc.returncode != 0:
                raise RuntimeError(f"inference process for {name} failed ({proc.returncode}): {stderr[-2000:]}")
            out[name] = json.loads(stdout.strip().splitlines()[-1])
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        specs.cleanup()
    return out


def inference_experiment(sizes: Mapping[str, Any], device: Any = "cpu", progress: bool | None = None) -> dict:
    """Serve K inference models three ways; return latencies, devices needed and lanes.

    ``sizes`` keys (``[salus_inference.*]``): models, load (offered load of one device, all
    models together), duration_s, latency_target_ms (p99), capacity_peaks (device memory as a
    multiple of the models' summed peaks, for the lanes), processes (bool: run the MPS-like
    baseline), threads, seed.

    Returns {"device", "models", "service_ms" (median alone, ms), "setups": {"shared" |
    "one_per_device" | "processes": {model: {p50_ms, p99_ms, mean_ms, n}}}, "latency_cdf":
    {setup: {model: sorted latencies}}, "devices_needed": {"shared", "one_per_device", "sim_check"},
    "models_per_device_gain" (K / shared devices; None when no device count meets the target,
    one model per device included), "lanes", "busy_fraction_shared"}.
    """
    from impls.salus.core.devices import torch_threads
    from impls.salus.experiments.names import checked_names
    from impls.salus.memory.memory_profile import profile_memory

    sizes = checked_names(sizes, "salus_inference")
    if not float(sizes.get("capacity_peaks", 1.0)) >= 1.0:     # NaN too
        raise ValueError(f"capacity_peaks must be >= 1 (every model must fit the shared device, whose devices "
                         f"needed are counted for all of them), got {sizes['capacity_peaks']}")
    dev = get_device(device)
    names = list(dict.fromkeys(sizes["models"]))
    seed = int(sizes.get("seed", 0))
    setups = ["shared", "one_per_device"] + (["processes"] if sizes.get("processes", True) and dev.kind == "cpu" else [])
    bar = progress_bar(len(setups) + 1, "salus inference", "setup", progress)
    with torch_threads(sizes.get("threads")) as threads:
        memory = profile_memory(names, dev, iterations=2, timing_iterations=2)["workloads"]
        jobs = {n: build_job(n, dev.torch_device, seed=seed, iterations=10 ** 9) for n in names}
        service = {}
        for n, job in jobs.items():
            times = []
            for _ in range(7):
                timer = dev.timer()
                timer.start()
                job.step()
                timer.stop()
                times.append(timer.elapsed_ms())
            service[n] = float(np.median(times))
        bar.update(1)
        streams = request_streams(service, float(sizes["load"]), float(sizes["duration_s"]), seed)
        capacity = int(float(sizes.get("capacity_peaks", 1.0)) * sum(m["peak_bytes"] for m in memory.values()))
        manager = make_manager(sizes.get("rule", "salus"), capacity)
        admitted = [n for n in names if manager.submit(LaneJob(n, memory[n]["persistent_bytes"],
                                                               memory[n]["ephemeral_bytes"]))]
        lanes = {**manager.snapshot(), "capacity_bytes": capacity, "admitted": admitted}
        served = serve_fair({n: jobs[n] for n in admitted}, {n: streams[n] for n in admitted}, dev)
        results = {"shared": {n: served[n]["latencies_ms"] for n in admitted}}
        busy_shared = served["_busy_s"] / served["_wall_s"] if served["_wall_s"] else None
        bar.update(1)
        alone = {}
        for n in names:
            alone[n] = serve_fair({n: jobs[n]}, {n: streams[n]}, dev)[n]["latencies_ms"]
        results["one_per_device"] = alone
        bar.update(1)
        for job in jobs.values():
            job.release()
        dev.release_memory()
        if "processes" in setups:
            results["processes"] = serve_processes(streams, threads=max(1, threads or 1), seed=seed)
            bar.update(1)
    bar.close()
    target = float(sizes["latency_target_ms"])
    # The simulator replays each model's service times measured inside the shared run
    # (contention included), in turn; the alone medians are reported beside them.
    measured = {n: list(served[n]["service_ms"]) if n in served and served[n]["service_ms"] else [service[n]]
                for n in names}
    inrun = {n: float(np.mean(measured[n])) for n in names}
    # Real runs overrule the simulation: a one-device run that misses the target, and one model
    # per device missing it (no split of the models over devices then does better).
    real_p99 = max(_stats(v)["p99_ms"] for v in results["shared"].values()) if results["shared"] else None
    real_meets = real_p99 is not None and real_p99 <= target and len(admitted) == len(names)
    one_meets = all(_stats(v)["p99_ms"] <= target for v in results["one_per_device"].values())
    need = devices_needed(measured, streams, target, min_devices=1 if real_meets else 2)
    if real_meets:               # measured: every model met the target sharing one device
        need = {**need, "devices": 1}
    elif not one_meets:
        need = {**need, "devices": None}
    sim_one = simulate_fair(measured, streams)
    sim_p99 = max(float(np.percentile(v, 99)) for v in sim_one.values() if v)
    out = {
        "device": dev.kind, "device_name": dev.describe(), "torch_threads": threads, "models": names,
        "service_ms": service, "service_ms_inrun": inrun, "requests": {n: len(s) for n, s in streams.items()},
        "load": float(sizes["load"]), "duration_s": float(sizes["duration_s"]), "latency_target_ms": target,
        "memory": {n: {k: memory[n][k] for k in ("persistent_bytes", "ephemeral_bytes", "peak_bytes")} for n in names},
        "lanes": lanes, "busy_fraction_shared": busy_shared,
        "setups": {s: {n: _stats(v) for n, v in r.items()} for s, r in results.items()},
        "latency_cdf": {s: {n: sorted(v) for n, v in r.items()} for s, r in results.items()},
        "devices_needed": {"shared": need["devices"], "shared_worst_p99_ms": need["worst_p99_ms"],
                           "one_per_device": len(names) if one_meets else None,
                           "shared_one_device_meets_target": real_meets,
                           "sim_check": {"sim_worst_p99_ms": sim_p99, "real_worst_p99_ms": real_p99}},
    }
    out["models_per_device_gain"] = (len(names) / need["devices"]) if need["devices"] else None
    procs = out["setups"].get("processes")
    if procs:
        out["processes_worst_p99_ms"] = max(r["p99_ms"] for r in procs.values())
        out["processes_meet_target"] = out["processes_worst_p99_ms"] <= target
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m impls.salus.experiments.inference --serve JSON`` (or ``--serve-file PATH``, the
    same JSON in a file): one process of the MPS-like baseline."""
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(prog="python -m impls.salus.experiments.inference")
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--serve", help='JSON {"name", "stream", "seed", "threads"}')
    given.add_argument("--serve-file", type=Path, help="a file holding that JSON (for long streams)")
    args = parser.parse_args(argv)
    spec = json.loads(args.serve if args.serve is not None else args.serve_file.read_text())
    print(json.dumps(_serve_one(spec["name"], spec["stream"], int(spec["seed"]), int(spec["threads"]),
                                sys.stdin, sys.stdout)))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
