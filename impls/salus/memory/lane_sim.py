"""Lane packing on recorded memory profiles: many random job mixes, Salus's rule vs baselines.

A *mix* is ``n`` jobs drawn from recorded workload profiles (persistent and
ephemeral bytes, iteration time), all submitted at time 0 in a random order, each
with a random number of iterations. For each rule of :mod:`impls.salus.memory.lanes` it
reports:

- ``admitted``: jobs admitted at once (arrival order, no departures: the CLI's case);
- ``fragmentation``: bytes no admitted job can use at that moment (unassigned memory
  + each lane's spare room) / capacity;
- ``makespan_s``: the time until every job is done, replaying departures (a finished
  job leaves its lane, waiting jobs are retried) on a simple device model: the jobs
  of one lane take turns (FIFO, one at a time); lanes run side by side, and when more
  than ``parallel_lanes`` run at once they share the device equally (processor
  sharing, rate ``min(1, parallel_lanes / running)``). ``no-lanes`` runs every admitted
  job at once. The model is idealised and labelled so in the report.

:func:`lane_experiment` runs many mixes and lists where Salus's greedy rule loses
(fewer jobs admitted, or a longer makespan) to a baseline or a variant.
"""
from __future__ import annotations

import collections
import heapq
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from impls.salus.memory.lanes import BASELINES, RULES, LaneJob, check_safety, make_manager

ALL_RULES = RULES + BASELINES


def draw_mix(profiles: Mapping[str, Mapping], n_jobs: int, rng: np.random.Generator,
             duration_s: Sequence[float] = (1.0, 60.0)) -> list[dict]:
    """Return ``n_jobs`` jobs drawn uniformly from ``profiles`` (workload -> {persistent_bytes,
    ephemeral_bytes, iteration_ms}): dicts {name, workload, persistent, ephemeral (bytes),
    work_s (seconds of device time, log-uniform in ``duration_s``)}."""
    names = sorted(profiles)
    if not names:
        raise ValueError("no workload profiles to draw a mix from")
    picks = rng.integers(0, len(names), n_jobs)
    lo, hi = math.log(duration_s[0]), math.log(duration_s[1])
    works = np.exp(rng.uniform(lo, hi, n_jobs))
    jobs = []
    for i, (k, work) in enumerate(zip(picks, works)):
        p = profiles[names[k]]
        it_ms = float(p.get("iteration_ms") or 1.0)
        iterations = max(1, int(round(work * 1e3 / it_ms)))
        jobs.append({"name": f"j{i}", "workload": names[k], "persistent": int(p["persistent_bytes"]),
                     "ephemeral": int(p["ephemeral_bytes"]), "work_s": iterations * it_ms / 1e3})
    return jobs


def admit_all(jobs: Sequence[Mapping], capacity: int, rule: str, partitions: int = 4) -> dict:
    """Admit ``jobs`` in order with no departures under ``rule``; return {admitted, waiting,
    lanes, fragmentation (fraction of capacity), violations (list of sentences)}."""
    manager = make_manager(rule, capacity, partitions)
    for j in jobs:
        manager.submit(LaneJob(j["name"], j["persistent"], j["ephemeral"]))
    return {"admitted": len(manager.placement), "waiting": manager.n_waiting(), "lanes": len(manager.lanes),
            "fragmentation": manager.free_bytes() / capacity if capacity else 0.0,
            "violations": check_safety(manager)}


def replay(jobs: Sequence[Mapping], capacity: int, rule: str, partitions: int = 4,
           parallel_lanes: float = math.inf, check_every: int = 0) -> dict:
    """Run ``jobs`` (all arriving at 0, in order) to completion under ``rule``; return
    {makespan_s, avg_jct_s (seconds), finish_s (job name -> its finish, seconds, for each job
    that ran), never_admitted (jobs larger than any lane could be), max_lanes_running,
    decisions (submits + releases), violations}.

    Jobs that finish at the same instant are released one at a time, in the order they
    started, and the waiting jobs are retried (in arrival order) after each release, before
    the next one: which jobs a release admits, and so their JCTs, depend on that order.

    ``check_every`` > 0 checks the safety invariants every that many events (tests).
    """
    manager = make_manager(rule, capacity, partitions)
    work = {j["name"]: float(j["work_s"]) for j in jobs}
    lane_queue: dict[int, collections.deque] = collections.defaultdict(collections.deque)
    running_lane: dict[int, str] = {}     # lane id -> job running in it
    heap: list[tuple[float, int, str]] = []  # (virtual finish, seq, job)
    seq = 0
    virtual = 0.0
    now = 0.0
    finish: dict[str, float] = {}
    violations: list[str] = []
    max_running = 0

    def start_lane(lane_id: int) -> None:
        nonlocal seq
        if lane_id in running_lane or not lane_queue[lane_id]:
            return
        name = lane_queue[lane_id].popleft()
        running_lane[lane_id] = name
        heapq.heappush(heap, (virtual + work[name], seq, name))
        seq += 1

    def enqueue(names: Sequence[str]) -> None:
        touched = []
        for name in names:
            lane_id = manager.placement[name]
            lane_queue[lane_id].append(name)
            touched.append(lane_id)
        for lane_id in touched:
            start_lane(lane_id)

    admitted_now = []
    for j in jobs:
        if manager.submit(LaneJob(j["name"], j["persistent"], j["ephemeral"])):
            admitted_now.append(j["name"])
    enqueue(admitted_now)
    decisions = len(jobs)
    events = 0
    while heap:
        running = len(heap)
        max_running = max(max_running, running)
        rate = min(1.0, parallel_lanes / running)
        v_next, _, name = heapq.heappop(heap)
        now += (v_next - virtual) / rate
        virtual = v_next
        finish[name] = now
        lane_id = manager.placement[name]
        del running_lane[lane_id]
        admitted = manager.release(name)
        decisions += 1
        if lane_id in manager.lanes:
            start_lane(lane_id)
        else:
            lane_queue.pop(lane_id, None)
        enqueue([a.name for a in admitted])
        events += 1
        if check_every and events % check_every == 0:
            violations += check_safety(manager)
    never = [j.name for j in manager.waiting]
    done = list(finish.values())
    return {"makespan_s": max(done) if done else 0.0, "avg_jct_s": float(np.mean(done)) if done else None,
            "finish_s": dict(finish), "never_admitted": never, "max_lanes_running": max_running, "decisions": decisions,
            "violations": violations + check_safety(manager)}


def _fits_alone(job: Mapping, capacity: int, rule: str, partitions: int) -> bool:
    if rule == "static":
        return job["persistent"] + job["ephemeral"] <= capacity // partitions
    return job["persistent"] + job["ephemeral"] <= capacity


def _mean_if_whole(makespans: Sequence[float | None]) -> float:
    """Mean of the mixes' makespans (seconds); NaN when a mix has none (a job never ran)."""
    if not makespans or any(m is None for m in makespans):
        return math.nan
    return float(np.mean(makespans))


def lane_experiment(profiles: Mapping[str, Mapping], sizes: Mapping[str, Any], progress: bool | None = None) -> dict:
    """Many random mixes under every rule; return per rule and capacity the mean admitted jobs,
    fragmentation and makespan, and the mixes where Salus's greedy rule loses.

    ``sizes`` keys (``[salus_lanes.*]``): n_mixes, jobs_per_mix, capacity_peaks (list: capacity as
    a multiple of the mean workload peak), duration_s [lo, hi], parallel_lanes, partitions, seed,
    rules. Jobs that fit no partition (static) are counted in ``unplaceable``; a rule that cannot
    place every job of a mix has no makespan for it (``makespan_s`` None: the jobs it could place
    would be a shorter run of fewer jobs, and the others never finish), and its
    ``makespan_mean_s`` at that capacity is NaN unless it runs every mix whole
    (``makespan_mixes`` says how many it does), so every mean is over the same mixes.

    Returns ``{"rules", "capacities": {label: {"capacity_bytes", "rules": {rule: {admitted_mean,
    fragmentation_mean, makespan_mean_s, makespan_mixes, unplaceable}}}}, "greedy_loses":
    {other_rule: {"admitted": count, "makespan": count, "mixes", "makespan_mixes" (those where both
    rules ran every job: the makespan count's denominator), "examples": [...]}}, "n_mixes",
    "violations"}``.
    """
    from impls.harness.progress import progress_bar

    rules = list(sizes.get("rules", ALL_RULES))
    if "salus" not in rules:
        raise ValueError("lane_experiment needs the faithful 'salus' rule among the rules")
    rng = np.random.default_rng(sizes.get("seed", 0))
    mean_peak = float(np.mean([p["persistent_bytes"] + p["ephemeral_bytes"] for p in profiles.values()]))
    partitions = int(sizes.get("partitions", 4))
    parallel = float(sizes.get("parallel_lanes", math.inf))
    out_caps: dict[str, dict] = {}
    loses = {r: {"admitted": 0, "makespan": 0, "mixes": 0, "makespan_mixes": 0, "examples": []}
             for r in rules if r != "salus"}
    violations: list[str] = []
    caps = list(sizes["capacity_peaks"])
    bar = progress_bar(len(caps) * int(sizes["n_mixes"]), "salus lane mixes", "mix", progress)
    for cap_peaks in caps:
        capacity = int(cap_peaks * mean_peak)
        acc = {r: {"admitted": [], "fragmentation": [], "makespan": [], "unplaceable": 0} for r in rules}
        for m in range(int(sizes["n_mixes"])):
            mix = draw_mix(profiles, int(sizes["jobs_per_mix"]), rng, tuple(sizes["duration_s"]))
            rows = {}
            for rule in rules:
                placeable = [j for j in mix if _fits_alone(j, capacity, rule, partitions)]
                at_once = admit_all(mix, capacity, rule, partitions)
                run = replay(placeable, capacity, rule, partitions, parallel)
                violations += at_once["violations"] + run["violations"]
                complete = len(placeable) == len(mix)
                rows[rule] = {"admitted": at_once["admitted"],
                              "makespan_s": run["makespan_s"] if complete else None,
                              "fragmentation": at_once["fragmentation"], "lanes": at_once["lanes"]}
                acc[rule]["admitted"].append(at_once["admitted"])
                acc[rule]["fragmentation"].append(at_once["fragmentation"])
                acc[rule]["makespan"].append(rows[rule]["makespan_s"])
                acc[rule]["unplaceable"] += len(mix) - len(placeable)
            for rule, tally in loses.items():
                tally["mixes"] += 1
                fewer = rows[rule]["admitted"] > rows["salus"]["admitted"]
                same_jobs = rows[rule]["makespan_s"] is not None and rows["salus"]["makespan_s"] is not None
                slower = same_jobs and rows["salus"]["makespan_s"] > rows[rule]["makespan_s"] * (1 + 1e-9)
                tally["makespan_mixes"] += same_jobs
                tally["admitted"] += fewer
                tally["makespan"] += slower
                if (fewer or slower) and len(tally["examples"]) < 3:
                    tally["examples"].append({
                        "capacity_peaks": cap_peaks, "mix_index": m,
                        "workloads": dict(collections.Counter(j["workload"] for j in mix)),
                        "salus": rows["salus"], rule: rows[rule]})
            bar.update(1)
        out_caps[f"{cap_peaks:g}x"] = {
            "capacity_peaks": cap_peaks, "capacity_bytes": capacity,
            "rules": {r: {"admitted_mean": float(np.mean(a["admitted"])),
                          "fragmentation_mean": float(np.mean(a["fragmentation"])),
                          "makespan_mean_s": _mean_if_whole(a["makespan"]),
                          "makespan_mixes": sum(m is not None for m in a["makespan"]),
                          "admitted": a["admitted"], "makespan_s": a["makespan"],
                          "unplaceable": a["unplaceable"]} for r, a in acc.items()}}
    bar.close()
    for tally in loses.values():
        tally["admitted_fraction"] = tally["admitted"] / tally["mixes"] if tally["mixes"] else None
        tally["makespan_fraction"] = (tally["makespan"] / tally["makespan_mixes"] if tally["makespan_mixes"]
                                      else None)
    return {"rules": rules, "mean_peak_bytes": mean_peak, "partitions": partitions,
            "parallel_lanes": None if math.isinf(parallel) else parallel,
            "device_model": f"lanes side by side; above {parallel:g} running they share the device equally",
            "n_mixes": int(sizes["n_mixes"]), "jobs_per_mix": int(sizes["jobs_per_mix"]),
            "capacities": out_caps, "greedy_loses": loses, "violations": violations[:20]}


def decision_time(profiles: Mapping[str, Mapping], n_jobs: int = 1000, capacity_peaks: float = 100.0,
                  rule: str = "salus", seed: int = 0, repeats: int = 3) -> dict:
    """Time the lane manager: submit ``n_jobs`` jobs, then release the admitted ones in admission
    order (each release retries the waiting jobs) until none is left.

    Returns {"us_per_decision" (median over repeats, microseconds per submit or release),
    "decisions", "peak_lanes", "peak_waiting", "never_admitted"}.
    """
    rng = np.random.default_rng(seed)
    mix = draw_mix(profiles, n_jobs, rng)
    mean_peak = float(np.mean([p["persistent_bytes"] + p["ephemeral_bytes"] for p in profiles.values()]))
    capacity = int(capacity_peaks * mean_peak)
    times, lanes_peak, waiting_peak = [], 0, 0
    for _ in range(repeats):
        manager = make_manager(rule, capacity)
        jobs = [LaneJob(j["name"], j["persistent"], j["ephemeral"]) for j in mix]
        t0 = time.perf_counter()
        for job in jobs:
            manager.submit(job)
        decisions = len(jobs)
        lanes_peak = max(lanes_peak, len(manager.lanes))
        waiting_peak = max(waiting_peak, manager.n_waiting())
        while manager.placement:
            manager.release(next(iter(manager.placement)))
            decisions += 1
        times.append((time.perf_counter() - t0) / decisions * 1e6)
    return {"us_per_decision": float(np.median(times)), "decisions": decisions, "n_jobs": n_jobs,
            "rule": rule, "capacity_peaks": capacity_peaks, "peak_lanes": lanes_peak,
            "peak_waiting": waiting_peak, "never_admitted": manager.n_waiting()}


def replay_time(profiles: Mapping[str, Mapping], n_jobs: int = 10000, capacity_peaks: float = 16.0,
                rule: str = "salus", seed: int = 0, parallel_lanes: float = 4.0) -> dict:
    """Time one :func:`replay` of an ``n_jobs`` mix; return {"seconds" (wall), "makespan_s" (simulated),
    "decisions"}."""
    rng = np.random.default_rng(seed)
    mix = draw_mix(profiles, n_jobs, rng)
    mean_peak = float(np.mean([p["persistent_bytes"] + p["ephemeral_bytes"] for p in profiles.values()]))
    t0 = time.perf_counter()
    run = replay(mix, int(capacity_peaks * mean_peak), rule, parallel_lanes=parallel_lanes)
    return {"seconds": time.perf_counter() - t0, "n_jobs": n_jobs, "rule": rule,
            "makespan_s": run["makespan_s"], "decisions": run["decisions"],
            "never_admitted": len(run["never_admitted"])}
