"""The Salus experiments as functions returning plain data (asv classes, CLIs and figures wrap them).

Longer than 400 lines: switching, policies and executor overhead share the profiling, the
thread setting and the run bracketing of the time-sharing experiments.

- :func:`switching_latency`  (re-exported from :mod:`impls.salus.core.switching`)
- :func:`policy_experiment`  FIFO/SRTF/PACK/FAIR on a Poisson trace, real run + simulator
- :func:`executor_overhead`  a job's iteration inside the executor vs alone, side by side
- :func:`profile_workloads`  measured iteration time and memory per workload

Command line: ``python -m impls.salus.experiments.scheduling {policies,switching,overhead} [--profile P]
[--device D] [--json FILE]`` runs one with the sizes of a profile and prints a summary.

Sizes come from :func:`salus_sizes`, i.e. the ``salus_*`` tables of ``impls/profiles.toml``.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from impls.harness.progress import progress_bar
from impls.salus.core.devices import get_device, torch_threads
from impls.salus.core.executor import Executor, Submission
from impls.salus.core.simulator import simulate
from impls.salus.core.switching import switching_latency
from impls.salus.core.traces import offered_load, poisson_trace
from impls.salus.core.workloads import build_job
from impls.salus.experiments.names import checked_names

__all__ = ["bracketed_iteration_ms", "executor_overhead", "overhead_experiment",
           "policy_experiment", "profile_workloads", "run_trace", "salus_sizes", "switching_experiment",
           "switching_latency"]


def salus_sizes(experiment: str, profile: str | None = None) -> dict:
    """Return the sizes of ``experiment`` (``salus_switching``, ``salus_policies``,
    ``salus_overhead``) under ``profile`` from ``impls/profiles.toml``."""
    from impls.harness import profiles

    return profiles.sizes(experiment, profile)


def _load_note() -> dict:
    try:
        import os

        return {"loadavg_1m": os.getloadavg()[0], "cpus": os.cpu_count()}
    except OSError:
        return {}


# ---------------------------------------------------------------- profiling

def profile_workloads(names: Sequence[str], device: Any = "cpu", iterations: int = 5, seed: int = 0) -> dict:
    """Measure each workload: iteration time (mean, p50; ms) and memory (bytes).

    ``iterations`` rounds, after the untimed steps of the memory measurement (one per
    job); each round runs every workload in turn, two iterations each: the first follows
    another workload's iteration, as when PACK and FAIR interleave jobs (``iteration_ms``,
    ``iteration_ms_p50``), the second follows its own, as FIFO and SRTF run a job
    (``iteration_ms_warm_p50``; on a CPU the caches then hold the job's weights). Taking
    both kinds in the same rounds spreads each over the whole profile, so drift in the
    machine's speed reaches them alike (a block of back-to-back iterations per workload
    at the end saw one moment: its median moved by up to 50% between profiles a minute apart).
    Memory: on CUDA from the allocator, on CPU estimated (see
    :func:`impls.salus.core.devices.estimate_job_memory`).
    """
    dev = get_device(device)
    names = list(dict.fromkeys(names))
    jobs = {name: build_job(name, dev.torch_device, seed=seed, iterations=10 ** 9) for name in names}
    memory = {name: dev.measure_job_memory(job) for name, job in jobs.items()}

    def timed_step(job) -> float:
        timer = dev.timer()
        timer.start()
        job.step()
        timer.stop()
        return timer.elapsed_ms()

    times: dict[str, list[float]] = {name: [] for name in names}
    warm: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(iterations):
        for name, job in jobs.items():
            times[name].append(timed_step(job))
            warm[name].append(timed_step(job))
    out = {name: {"iteration_ms": float(np.mean(times[name])), "iteration_ms_p50": float(np.median(times[name])),
                  "iteration_ms_warm_p50": float(np.median(warm[name])),
                  "state_bytes": jobs[name].state_bytes(), **memory[name]} for name in names}
    for job in jobs.values():
        job.release()
    dev.release_memory()
    return out


# ---------------------------------------------------------------- policy experiment

def _cdf(values: Sequence[float]) -> dict:
    xs = sorted(values)
    n = len(xs)
    return {"x": xs, "y": [(i + 1) / n for i in range(n)]}


def _rel_err(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return abs(a - b) / b


def _inrun_iteration_ms(result: dict, fallback: Mapping[str, float]) -> dict:
    total: dict[str, list[float]] = {}
    for job in result["jobs"]:
        if job["iterations_done"]:
            ms, n = total.setdefault(job["workload"], [0.0, 0])
            total[job["workload"]] = [ms + job["device_ms"], n + job["iterations_done"]]
    return {w: (total[w][0] / total[w][1] if w in total else fallback[w]) for w in fallback}


def bracketed_iteration_ms(before: Mapping[str, Mapping], after: Mapping[str, Mapping], key: str) -> dict:
    """Per workload, the mean of ``key`` (an iteration time in ms) in the profiles taken just
    before and just after a run: the run's speed under a drift that is linear over the run."""
    return {w: (before[w][key] + after[w][key]) / 2.0 for w in before}


def device_time_ratio(real: Mapping, sim: Mapping, overhead_ms: float) -> float | None:
    """Device time the real run's iterations took over the time the simulation gave the same
    iterations, the executor's bookkeeping (``overhead_ms`` per iteration) left out of both;
    1.0 when the machine ran the jobs exactly as fast as the times driving the simulation."""
    real_ms = sum(j["device_ms"] for j in real["jobs"])
    sim_ms = sum(j["device_ms"] - j["iterations_done"] * overhead_ms for j in sim["jobs"])
    return real_ms / sim_ms if sim_ms > 0 else None


def run_trace(trace: Sequence[Mapping], policy: str, device: Any, profile: Mapping[str, Mapping],
              memory_budget_bytes: int | None) -> dict:
    """Run ``trace`` for real in one :class:`Executor` (jobs built before the clock starts)."""
    dev = get_device(device)
    subs = []
    for j in trace:
        job = build_job(j["workload"], dev.torch_device, seed=j["seed"], iterations=j["iterations"],
                        job_id=j["job_id"])
        subs.append(Submission(job, arrival=j["arrival_s"], peak_bytes=profile[j["workload"]]["peak_bytes"],
                               iteration_ms_prior=profile[j["workload"]]["iteration_ms_p50"]))
    result = Executor(policy, dev, memory_budget_bytes=memory_budget_bytes).run(subs)
    del subs
    dev.release_memory()
    return result


def _policy_row(result: dict) -> dict:
    """A run's row: average JCT (s) and makespan (s: the latest finish of a done job) over the
    finished jobs, their CDF, each job's JCT (None for a job that failed: its time to failure
    is no completion time) and the failed jobs."""
    done = [j["jct_s"] for j in result["jobs"] if j["status"] == "done"]
    return {"avg_jct_s": result["avg_jct_s"], "makespan_s": result["makespan_s"], "jct_cdf": _cdf(done),
            "jct_s": {j["job_id"]: j["jct_s"] if j["status"] == "done" else None for j in result["jobs"]},
            "failed": result["failed"]}


def _fifo_over_srtf(fifo: Mapping, srtf: Mapping) -> float | None:
    """FIFO's average JCT over SRTF's, two runs' rows (``avg_jct_s``, ``failed``); None where
    a job failed under either (the averages would be over different jobs) or one is 0 or none."""
    if fifo.get("failed") or srtf.get("failed") or not fifo["avg_jct_s"] or not srtf["avg_jct_s"]:
        return None
    return fifo["avg_jct_s"] / srtf["avg_jct_s"]


def _measured_run(trace: Sequence[Mapping], policy: str, *, device: Any, before: Mapping[str, Mapping],
                  profile_now: Callable[[], dict], budget: int | None, peaks: Mapping[str, int],
                  fallback_ms: Mapping[str, float]) -> tuple[dict, dict]:
    """Run ``trace`` under ``policy``, profile again, and simulate it twice: with the mean
    of the profiles before and after it, and with the iteration times the jobs had in the run
    (where PACK's rounds are the maximum of their iterations on a device with streams, whose
    per-stream times include the overlap, and their sum elsewhere).

    ``before``: the profile taken just before (a :func:`profile_workloads` result, as
    ``profile_now()`` returns); ``fallback_ms``: per workload, the iteration time (ms) the
    in-run simulation uses for a workload with no iteration in the run.
    Returns (the policy's row of :func:`policy_experiment`, the profile taken after the run).
    """
    real = run_trace(trace, policy, device, before, budget)
    after = profile_now()
    bracket_ms = bracketed_iteration_ms(before, after, "iteration_ms_p50")
    bracket_warm = bracketed_iteration_ms(before, after, "iteration_ms_warm_p50")
    overhead_ms = (real["overhead_us_per_iteration"] or 0.0) / 1e3
    sim = simulate(trace, policy, bracket_ms, budget, peaks, overhead_ms=overhead_ms,
                   warm_iteration_ms=bracket_warm)
    # on a device with streams PACK's iterations overlap, and the run's per-job times (events
    # on each stream) already include that overlap: a round is their maximum, not their sum
    pack = "concurrent" if getattr(get_device(device), "has_streams", False) else "interleave"
    inrun_ms = _inrun_iteration_ms(real, fallback_ms)
    per_job = {j["job_id"]: j["mean_iteration_ms"] for j in real["jobs"]}
    inrun_trace = [{**j, "iteration_ms": per_job.get(j["job_id"])} for j in trace]
    sim_inrun = simulate(inrun_trace, policy, inrun_ms, budget, peaks, overhead_ms=overhead_ms, pack=pack)
    row = {
        "real": {**_policy_row(real), "overhead_us_per_iteration": real["overhead_us_per_iteration"],
                 "wall_s": real["wall_s"], "idle_s": real["idle_s"]},
        "sim": _policy_row(sim), "sim_inrun": _policy_row(sim_inrun),
        "profiled_iteration_ms": bracket_ms, "profiled_warm_iteration_ms": bracket_warm,
        "profiled_before_iteration_ms": {w: p["iteration_ms_p50"] for w, p in before.items()},
        "profiled_after_iteration_ms": {w: p["iteration_ms_p50"] for w, p in after.items()},
        "inrun_iteration_ms": inrun_ms,
        "sim_error": _rel_err(sim["avg_jct_s"], real["avg_jct_s"]),
        "device_time_over_profile": device_time_ratio(real, sim, overhead_ms),
        "sim_inrun_error": _rel_err(sim_inrun["avg_jct_s"], real["avg_jct_s"]),
    }
    return row, after


def simulated_fifo_over_srtf(trace: Sequence[Mapping], ms: Mapping[str, float], warm: Mapping[str, float] | None,
                             budget: int | None = None, peaks: Mapping[str, int] | None = None) -> float | None:
    """FIFO's average JCT over SRTF's, both simulated on ``trace`` (iteration times ``ms``,
    warm times ``warm``, the memory budget and peaks); None where a job failed under either."""
    rows = [_policy_row(simulate(trace, name, ms, budget, peaks, warm_iteration_ms=warm)) for name in ("fifo", "srtf")]
    return _fifo_over_srtf(*rows)


TRACE_DRAWS = 1000         # other draws of the trace whose simulated ratios bound the measured one's
DRAW_SEED_OFFSET = 1000   # their seeds: the trace's + 1000 + k (the paper-sized trace has + 1)


def trace_draws(sizes: Mapping[str, Any], ms: Mapping[str, float], warm: Mapping[str, float],
                budget: int | None, peaks: Mapping[str, int], real: float | None,
                draws: int = TRACE_DRAWS) -> dict:
    """How far the ratio FIFO / SRTF moves with the draw of the synthetic trace.

    Simulates FIFO and SRTF (iteration times ``ms``, warm times ``warm``, the memory budget)
    on the measured trace (seed ``sizes["seed"]``) and on ``draws`` others drawn with the
    same sizes (seeds ``seed + DRAW_SEED_OFFSET + k``). Returns ``{"draws", "sim_at_trace"
    (the measured trace's simulated ratio), "sim_ratios" (one per draw whose jobs all
    finished), "sim_interval" [2.5th, 97.5th percentile] of them, "real_draw_interval",
    "real_over_sim"}``: the real run's ratio ``real`` scaled by that interval over
    ``sim_at_trace`` (where another draw's ratio would lie, had the suite drawn it, by the
    simulator's account, taking its error on this draw, ``real_over_sim``, as a factor that
    holds for the others). ``sim_interval`` is None when fewer than half the draws had every
    job finish; ``real_draw_interval`` also without ``real`` or when the measured trace's
    own simulation had a job fail (``sim_at_trace`` None).
    """
    seed = sizes.get("seed", 0)

    def ratio_of(trace_seed: int) -> float | None:
        trace = poisson_trace(sizes["n_jobs"], sizes["mean_interarrival_s"], sizes["mix"], ms,
                              tuple(sizes["duration_s"]), seed=trace_seed)
        return simulated_fifo_over_srtf(trace, ms, warm, budget, peaks)

    at_trace = ratio_of(seed)
    ratios = [r for r in (ratio_of(seed + DRAW_SEED_OFFSET + k) for k in range(draws)) if r is not None]
    sim_interval = real_interval = None
    if ratios and 2 * len(ratios) >= draws:
        low, high = (float(q) for q in np.percentile(ratios, [2.5, 97.5]))
        sim_interval = [low, high]
        if real is not None and at_trace:
            real_interval = [real * low / at_trace, real * high / at_trace]
    return {"draws": draws, "sim_at_trace": at_trace, "sim_ratios": ratios, "sim_interval": sim_interval,
            "real_draw_interval": real_interval,
            "real_over_sim": real / at_trace if real is not None and at_trace else None}


def policy_experiment(sizes: Mapping[str, Any] | None = None, device: Any = "cpu", progress: bool | None = None) -> dict:
    """FIFO/SRTF/PACK/FAIR on one Poisson trace: a real run each, and the simulator beside it.

    ``sizes`` keys (see ``[salus_policies.*]`` in ``impls/profiles.toml``): mix, n_jobs,
    mean_interarrival_s, duration_s [lo, hi], seed, policies, memory_budget_mb,
    profile_iterations, threads, sim_jobs, sim_mean_interarrival_s, sim_duration_s,
    repeat_policy ("" for none).

    Returns ``{"device", "profile": {workload: {...}}, "trace": [...], "offered_load",
    "policies": {name: {"real": {avg_jct_s, makespan_s, jct_cdf{x,y}, jct_s{id: s}, failed,
    overhead_us_per_iteration}, "sim": {...}, "sim_inrun": {...}, "sim_error", "sim_inrun_error"}},
    "fifo_over_srtf": {"real", "sim", "sim_inrun", "real_draw_interval"}, "trace_draws":
    {...} (see :func:`trace_draws`), "paper_sized_sim": {...}, "load": {...}}``.
    ``sim`` is driven by iteration times profiled on this device around that policy's real
    run: the mean of a profile just before and one just after it (see
    :func:`bracketed_iteration_ms`; ``profiled_iteration_ms`` after another job's iteration,
    ``profiled_warm_iteration_ms`` after one of its own; each side's own times in
    ``profiled_before_iteration_ms`` and ``profiled_after_iteration_ms``); the real run
    itself sees only the profile before it (SRTF's prior for a job that has not run yet);
    the trace is drawn with an earlier profile, ``profile``;
    ``sim_inrun`` by the mean iteration time each job had during the real run (per
    workload: ``inrun_iteration_ms``); it checks the scheduling model alone, free of the
    load drift between profile and run on a shared machine; ``*_error`` =
    |sim - real| / real of the average JCT; ``device_time_over_profile``: the device time
    the real run's iterations took over what the profile gave them (see
    :func:`device_time_ratio`; away from 1.0 the machine ran faster or slower than when
    profiled). ``paper_sized_sim`` simulates a larger trace (sim_jobs, minutes-long jobs)
    with the first profile. ``repeat`` (None without ``repeat_policy``): that policy's run
    once more after the others, as a row of ``policies`` plus ``"policy"`` and
    ``real_difference`` = |repeat - first| / first of the real average JCT: how far this
    machine reproduces its own run, the floor under what a profile can predict; None where
    a job failed in either run (the two averages would be over different jobs).
    """
    sizes = checked_names(sizes or salus_sizes("salus_policies"), "salus_policies")
    repeat_policy = sizes.get("repeat_policy") or None
    if repeat_policy and repeat_policy not in sizes["policies"]:
        raise ValueError(f"repeat_policy {repeat_policy!r} is not one of the policies {sizes['policies']}")
    dev = get_device(device)
    budget = int(sizes["memory_budget_mb"] * 2 ** 20) if sizes.get("memory_budget_mb") else None
    with torch_threads(sizes.get("threads")) as threads:
        load_before = _load_note()

        def profile_now() -> dict:
            return profile_workloads(sizes["mix"], dev, sizes.get("profile_iterations", 5), seed=sizes.get("seed", 0))

        profile = profile_now()
        # The median, not the mean: a few profiled iterations with one descheduled outlier
        # overstated the time of a run of thousands (FIFO's prediction was once 21% high).
        ms = {w: p["iteration_ms_p50"] for w, p in profile.items()}
        peaks = {w: p["peak_bytes"] for w, p in profile.items()}
        trace = poisson_trace(sizes["n_jobs"], sizes["mean_interarrival_s"], sizes["mix"], ms,
                              tuple(sizes["duration_s"]), seed=sizes.get("seed", 0))
        policies: dict[str, dict] = {}
        runs = len(sizes["policies"]) + (1 if repeat_policy else 0)
        bar = progress_bar(runs, "salus policies", "run", progress)
        # Each real run is bracketed by profiles (the one after a run is the one before the
        # next) and the simulator gets their mean: this VM's speed wanders by +-20% over
        # seconds, and one 3-s profile before a 20-s run missed the run's speed by up to 15%
        # (the real run's device time over the profile's was 0.90-1.15; over the mean of the
        # two sides, 0.94-1.03, in one probe of five runs). FIFO's first side is not the
        # trace's profile: in 4 of 5 suite runs that first profile was 15-30% slower than
        # the FIFO run after it (the experiment's first seconds run slower on this VM).
        before = profile_now()
        runs_with = {"device": dev, "profile_now": profile_now, "budget": budget, "peaks": peaks,
                     "fallback_ms": ms}
        for name in sizes["policies"]:
            policies[name], before = _measured_run(trace, name, before=before, **runs_with)
            bar.update(1)
        repeat = None
        if repeat_policy:
            row, before = _measured_run(trace, repeat_policy, before=before, **runs_with)
            first = policies[repeat_policy]["real"]
            lost = first.get("failed") or row["real"].get("failed")     # averages over different jobs
            repeat = {"policy": repeat_policy, **row,
                      "real_difference": None if lost else _rel_err(row["real"]["avg_jct_s"], first["avg_jct_s"])}
            bar.update(1)
        bar.close()
        load_after = _load_note()

    def ratio(kind: str) -> float | None:
        if "fifo" not in policies or "srtf" not in policies:
            return None
        return _fifo_over_srtf(policies["fifo"][kind], policies["srtf"][kind])

    big_trace = poisson_trace(sizes["sim_jobs"], sizes["sim_mean_interarrival_s"], sizes["mix"], ms,
                              tuple(sizes["sim_duration_s"]), seed=sizes.get("seed", 0) + 1)
    warm = {w: p["iteration_ms_warm_p50"] for w, p in profile.items()}
    big = {name: _policy_row(simulate(big_trace, name, ms, budget, peaks, warm_iteration_ms=warm))
           for name in sizes["policies"]}
    for row in big.values():
        row.pop("jct_s")
    big_ratio = _fifo_over_srtf(big["fifo"], big["srtf"]) if "fifo" in big and "srtf" in big else None
    draws = trace_draws(sizes, ms, warm, budget, peaks, ratio("real"))
    return {
        "device": dev.kind, "device_name": dev.describe(), "torch_threads": threads,
        "sizes": sizes, "profile": profile, "trace": trace, "offered_load": offered_load(trace, ms),
        "memory_budget_bytes": budget, "policies": policies, "repeat": repeat,
        "fifo_over_srtf": {"real": ratio("real"), "sim": ratio("sim"), "sim_inrun": ratio("sim_inrun"),
                           "real_draw_interval": draws["real_draw_interval"]},
        "trace_draws": draws,
        "paper_sized_sim": {"n_jobs": sizes["sim_jobs"], "offered_load": offered_load(big_trace, ms),
                            "policies": big, "fifo_over_srtf": big_ratio},
        "load": {"before": load_before, "after": load_after},
    }


# ---------------------------------------------------------------- executor overhead

class _Borrowed:
    """Lends a job to an executor without letting it release the job at the end."""

    def __init__(self, job, iterations: int):
        self._job = job
        self.job_id = job.job_id
        self.workload = job.workload
        self.total_iterations = iterations

    def step(self):
        self._job.step()


def executor_overhead(workloads: Sequence[str] = ("mlp_b64",), iterations: int = 20, blocks: int = 6,
                      device: Any = "cpu", threads: int | None = 1, clock=time.perf_counter) -> dict:
    """A job's iteration time inside the executor vs the same job alone, in alternating blocks.

    Alone block: ``iterations`` x (``job.step()``; synchronise), wall time / iterations.
    Executor block: the same job, alone in a FIFO :class:`Executor` (timers, policy,
    bookkeeping), wall time of ``run`` / iterations. ``blocks`` executor blocks, each
    between two alone blocks (alone, executor, alone, ..., alone). Returns per workload:
    ``alone_ms`` and ``executor_ms``, the medians of each kind of block (ms);
    ``overhead_pct``, the median over executor blocks of (the block's time / the mean of
    the two alone blocks beside it - 1), in percent, so that a drift of the machine's
    speed that is linear over three blocks cancels; and the executor's own bookkeeping
    (wall - device time in steps) per iteration, in µs and % of the alone iteration.
    ``clock``: host seconds (a fake one in tests).
    """
    dev = get_device(device, clock)
    out: dict = {"device": dev.kind, "load_before": _load_note(), "workloads": {}}
    with torch_threads(threads) as n_threads:
        out["torch_threads"] = n_threads
        for name in workloads:
            job = build_job(name, dev.torch_device, seed=0, iterations=10 ** 9)
            for _ in range(3):
                job.step()
            dev.synchronize()

            def alone_block() -> float:
                dev.synchronize()
                t0 = clock()
                for _ in range(iterations):
                    job.step()
                    dev.synchronize()
                return (clock() - t0) * 1e3 / iterations

            alone, inside, bookkeeping = [alone_block()], [], []
            for _ in range(blocks):
                ex = Executor("fifo", dev, clock=clock)
                t0 = clock()
                res = ex.run([Submission(_Borrowed(job, iterations))])
                inside.append((clock() - t0) * 1e3 / iterations)
                device_ms = sum(j["device_ms"] for j in res["jobs"])
                bookkeeping.append((res["wall_s"] * 1e3 - device_ms) / iterations)
                alone.append(alone_block())
            paired = [inside[i] / ((alone[i] + alone[i + 1]) / 2.0) - 1.0 for i in range(blocks)]
            a, e, b = statistics.median(alone), statistics.median(inside), statistics.median(bookkeeping)
            out["workloads"][name] = {
                "alone_ms": a, "executor_ms": e, "overhead_pct": statistics.median(paired) * 100.0,
                "bookkeeping_us": b * 1e3, "bookkeeping_pct": b / a * 100.0,
                "alone_blocks_ms": alone, "executor_blocks_ms": inside,
            }
            job.release()
    out["load_after"] = _load_note()
    return out


# ---------------------------------------------------------------- uniform entry points

def switching_experiment(sizes: Mapping[str, Any] | None = None, device: Any = "cpu",
                         progress: bool | None = None) -> dict:
    """:func:`switching_latency` under ``sizes`` (keys: workloads, repeats, restart_repeats, threads).

    Adds ``"load"`` (load average before/after) and ``"largest"``: for the workload with
    the most state bytes, to_host p50 / inprocess p50 and to_host p50 / inprocess-gap p50
    (the paper's "in-process switch >= 100x faster than checkpoint-to-host" check), and
    in seconds the in-process switch p99, the to-disk p50 and the process-restart p50
    (the claims' "sub-second" vs "second-scale" switching), with the restart's parts
    (``restart_parts_p50_s``: saving A, the interpreter's start, importing torch, building
    B, loading its checkpoint).
    """
    sizes = checked_names(sizes or salus_sizes("salus_switching"), "salus_switching")
    before = _load_note()
    with torch_threads(sizes.get("threads")):
        out = switching_latency(device, sizes["workloads"], int(sizes["repeats"]),
                                sizes.get("restart_repeats"))
    out["load"] = {"before": before, "after": _load_note()}
    rows = out["workloads"]
    if rows:
        name = max(rows, key=lambda w: rows[w]["state_bytes"])
        row = rows[name]

        def over(a, b):
            return a / b if a is not None and b not in (None, 0) and b > 0 else None

        def seconds(method, stat):
            value = row[method][stat]
            return value / 1e3 if value is not None else None

        out["largest"] = {
            "workload": name,
            "to_host_over_inprocess": over(row["to_host_ms"]["p50"], row["inprocess_ms"]["p50"]),
            "to_host_over_inprocess_gap": over(row["to_host_ms"]["p50"], row["inprocess_gap_ms"]["p50"]),
            "inprocess_p99_s": seconds("inprocess_ms", "p99"),
            "to_disk_p50_s": seconds("to_disk_ms", "p50"),
            "restart_p50_s": seconds("restart_ms", "p50"),
            "restart_no_value": row.get("restart_no_value"),
            # what the restart's median is made of (each part's own median, so they need not sum to it)
            "restart_parts_p50_s": {part: (ms / 1e3 if ms is not None else None)
                                    for part, ms in (row.get("restart_parts_p50_ms") or {}).items()},
        }
    return out


def overhead_experiment(sizes: Mapping[str, Any] | None = None, device: Any = "cpu",
                        progress: bool | None = None) -> dict:
    """:func:`executor_overhead` under ``sizes`` (keys: workloads, iterations, blocks, threads)."""
    sizes = checked_names(sizes or salus_sizes("salus_overhead"), "salus_overhead")
    return executor_overhead(sizes["workloads"], int(sizes["iterations"]), int(sizes["blocks"]), device,
                             sizes.get("threads"))


# ---------------------------------------------------------------- command line

def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def print_policies(data: dict) -> None:
    """The policy experiment as a table: real and simulated average JCT, errors, drift, the repeat."""
    print(f"device {data['device_name']}; {len(data['trace'])} jobs, offered load {_fmt(data['offered_load'], '.2f')} "
          f"(synthetic inputs)")
    print(f"{'run':12s}{'real avg JCT':>14s}{'sim (profiles)':>16s}{'error':>8s}{'sim (in run)':>14s}{'error':>8s}"
          f"{'run/profile':>13s}")
    rows = dict(data["policies"])
    if data.get("repeat"):
        rows[f"{data['repeat']['policy']} again"] = data["repeat"]
    for name, row in rows.items():
        print(f"{name:12s}{_fmt(row['real']['avg_jct_s'], '13.2f', 's')}{_fmt(row['sim']['avg_jct_s'], '15.2f', 's')}"
              f"{_fmt(row['sim_error'], '8.1%')}{_fmt(row['sim_inrun']['avg_jct_s'], '13.2f', 's')}"
              f"{_fmt(row['sim_inrun_error'], '8.1%')}{_fmt(row['device_time_over_profile'], '12.2f', 'x')}")
    failed = {name: row["real"].get("failed") for name, row in rows.items() if row["real"].get("failed")}
    for name, jobs in failed.items():
        print(f"{name}: {len(jobs)} of {len(data['trace'])} jobs failed (job {', '.join(map(str, jobs[:5]))}"
              f"{', ...' if len(jobs) > 5 else ''}; see the artifact's errors): its average JCT is over the "
              f"jobs that finished")
    big_failed = {n: len(r["failed"]) for n, r in data["paper_sized_sim"]["policies"].items() if r.get("failed")}
    if big_failed:
        print(f"paper-sized simulation: jobs failed ({', '.join(f'{n} {k}' for n, k in big_failed.items())} of "
              f"{data['paper_sized_sim']['n_jobs']}): no FIFO / SRTF ratio over different jobs")
    ratio = data["fifo_over_srtf"]
    if failed.keys() & {"fifo", "srtf"}:
        print("average JCT FIFO / SRTF: not given, jobs failed under FIFO or SRTF (the averages would be over "
              "different jobs)")
    elif ratio.get("real"):
        from impls.salus.paper import JCT_CLAIM, paper_value

        paper = paper_value(JCT_CLAIM)      # None: no single value in reports/claims.toml
        paper_text = "" if paper is None else f" (paper {paper:g}x)"
        print(f"average JCT FIFO / SRTF: real {ratio['real']:.2f}x, simulated {_fmt(ratio['sim'], '.2f', 'x')}"
              f"{paper_text}; paper-sized simulation ({data['paper_sized_sim']['n_jobs']} jobs): "
              f"{_fmt(data['paper_sized_sim']['fifo_over_srtf'], '.2f', 'x')}")
    draws = data.get("trace_draws") or {}
    if draws.get("sim_interval"):
        low, high = draws["sim_interval"]
        scaled = draws.get("real_draw_interval")
        print(f"over {len(draws['sim_ratios'])} other draws of this trace's sizes, simulated with the first "
              f"profile: FIFO / SRTF {low:.2f}-{high:.2f}x (95%; this draw {_fmt(draws['sim_at_trace'], '.2f', 'x')}, "
              f"real over it {_fmt(draws.get('real_over_sim'), '.2f', 'x')})"
              + (f"; the real ratio at another draw: {scaled[0]:.2f}-{scaled[1]:.2f}x" if scaled else ""))
    if data.get("repeat"):
        print(f"the same {data['repeat']['policy'].upper()} run twice: real average JCT "
              f"{_fmt(data['repeat']['real_difference'], '.1%')} apart")


def print_overhead(data: dict) -> None:
    """The overhead experiment as a table: alone and executor medians, paired overhead, bookkeeping."""
    print(f"device {data['device']}; torch threads {data['torch_threads']}")
    print(f"{'workload':16s}{'alone':>10s}{'executor':>10s}{'paired overhead':>17s}{'bookkeeping':>16s}"
          "   (alone, executor: medians of the blocks)")
    for name, row in data["workloads"].items():
        print(f"{name:16s}{row['alone_ms']:8.2f}ms{row['executor_ms']:8.2f}ms{row['overhead_pct']:16.2f}%"
              f"{row['bookkeeping_us']:8.1f}us{row['bookkeeping_pct']:6.2f}%")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m impls.salus.experiments.scheduling NAME [flags]`` is ``python -m impls run salus.NAME [flags]``
    (kept so that older scripts keep working); that command reports its errors and
    interrupts, once."""
    return run_alias("python -m impls.salus.experiments.scheduling", argv)


def run_alias(prog: str, argv: Sequence[str] | None = None) -> int:
    """Run ``prog NAME [flags]`` (flags before or after NAME) as ``python -m impls run
    salus.NAME [flags]``; return its exit status."""
    import sys

    from impls.harness import commands

    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["-h"], ["--help"]) or not args:
        print(f"usage: {prog} NAME [flags of python -m impls run]\n"
              f"  is python -m impls run salus.NAME [flags]; see python -m impls run --help and "
              f"python -m impls list", file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    at = next((i for i, a in enumerate(args) if not a.startswith("-")
               and (i == 0 or args[i - 1] not in ("--profile", "--device", "--json"))), None)
    if at is not None and not args[at].startswith("salus."):
        args[at] = f"salus.{args[at]}"
    return commands.main(["run", *args])


if __name__ == "__main__":
    raise SystemExit(main())
