"""Bandana's layout x policy x cache grid: the default local Dask cluster against serial, side by side.

Builds the profile's layouts once per table (not timed here), then runs the same
grid of cache simulations (every table, layout, policy and cache fraction of
``[bandana_sim.<profile>]``) alternately serially in this process and on the
embedded local cluster (``impls.harness.grid``; the result store is off, so every
point is computed), ``--rounds`` times in the order serial, cluster, cluster,
serial, ... Both are warmed once first (numba's compiled kernels loaded, workers
started; the start-up is reported apart). Prints one JSON object: the seconds
and CPU seconds of every run, the median speed-up, the load average before and
after, the cores, whether every run gave the same results, and how much faster two processes run a
pure-Python loop than one right now (the parallelism the machine offers).

    DLSYSBENCH_PROFILE=quick python scripts/grid_speedup.py --rounds 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's impls


def _spin(n: int) -> None:
    x = 0
    for i in range(n):
        x += i


def spin_speedup(work: int = 20_000_000) -> float:
    """How much faster two processes do a pure-Python loop than one (2.0 on two idle cores):
    the parallelism this machine offers right now, whatever else runs on it."""
    from multiprocessing import get_context
    ctx = get_context("spawn")

    def timed(parts: int) -> float:
        procs = [ctx.Process(target=_spin, args=(work // parts,)) for _ in range(parts)]
        start = time.perf_counter()
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        return time.perf_counter() - start

    return min(timed(1) for _ in range(2)) / min(timed(2) for _ in range(2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="serial/cluster pairs (default 3)")
    args = parser.parse_args(argv)

    from impls.bandana.experiments import simulation as E
    from impls.harness import grid

    s = E.sizes()
    points = []
    build_s = time.perf_counter()
    for name in s["tables"]:
        table = E.load_table(name, s["train_fraction"])
        trace = grid.share(table["test_ids"])
        for kind in s["layouts"]:
            layout = grid.share(E.build_layout(kind, table, s).permutation)
            points += [(trace, layout, table["num_vectors"], f, p, s["headline_shadow_factor"])
                       for p in s["policies"] for f in s["cache_fractions"]]
    build_s = time.perf_counter() - build_s

    def cpu_seconds(setting: str) -> float:
        """CPU seconds so far of the processes that compute the points."""
        if setting == "serial":
            return time.process_time()
        return sum(grid._local["client"].run(time.process_time).values())

    def run(setting: str) -> tuple[float, float, str]:
        os.environ[grid.ENV_SCHEDULER] = setting
        cpu = cpu_seconds(setting) if setting == "serial" or "client" in grid._local else None
        start = time.perf_counter()
        out = grid.map_points(E.simulate_point, points, label="grid speed-up", store=False,
                              progress=False)
        wall = time.perf_counter() - start
        cpu = cpu_seconds(setting) - cpu if cpu is not None else float("nan")
        return wall, cpu, json.dumps(out, sort_keys=True)

    load_before = os.getloadavg()
    spin_before = spin_speedup()
    run("serial")  # numba kernels loaded in this process
    start = time.perf_counter()
    run("")        # workers started and warmed
    startup_s = time.perf_counter() - start
    times = {"serial": [], "local": []}
    cpu = {"serial": [], "local": []}
    outputs = set()
    for r in range(args.rounds):
        order = ("serial", "local") if r % 2 == 0 else ("local", "serial")
        for mode in order:
            seconds, cpu_s, text = run("serial" if mode == "serial" else "")
            times[mode].append(seconds)
            cpu[mode].append(cpu_s)
            outputs.add(text)
    ratios = [a / b for a, b in zip(times["serial"], times["local"])]
    report = {
        "profile": os.environ.get("DLSYSBENCH_PROFILE", "quick"), "points": len(points),
        "where": grid.runs()[-1]["where"] if times["local"] else None,
        "cores_usable": grid.usable_cores(), "layout_build_seconds": build_s,
        "first_cluster_run_seconds (start-up + warm-up)": startup_s,
        "serial_seconds": times["serial"], "local_cluster_seconds": times["local"],
        "speedup_per_round": ratios, "speedup_median": statistics.median(ratios),
        # CPU seconds the computing processes spent (this process serially; all workers on
        # the cluster): equal totals mean the grid adds no work, so on an idle machine the
        # speed-up is limited only by the cores and the balance of the points
        "serial_cpu_seconds": cpu["serial"], "local_cluster_worker_cpu_seconds": cpu["local"],
        "identical_results": len(outputs) == 1,
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        # the same ratio for a pure-Python loop in 1 vs 2 processes (spawn start-up included):
        # about 2 on an idle 2-core machine; near 1 means the cores are taken by others
        "spin_loop_speedup_2_processes_before_after": [spin_before, spin_speedup()],
    }
    print(json.dumps(report, indent=1))
    return 0 if len(outputs) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
