"""A paper-scale Bandana trace, generated to .npy in chunks and simulated from memory maps on the grid.

1. Writes (once; reused when present) the synthetic trace of ``--table``'s recipe
   (its shared parameters with the ``full`` profile's overrides) at ``--vectors``
   vectors and ``--lookups`` lookups to ``<dataset cache>/<table>/stream-...``
   with :func:`impls.bandana.data.traces.write_trace` (lookups a chunk at a time;
   vector values are not written: the simulation needs ids only).
2. On the grid (``impls.harness.grid``: the local cluster by default), simulates
   the whole trace from its memory map a chunk at a time
   (:func:`impls.bandana.sim.cache.simulate_npy`) for each ``--policies`` under a
   random layout with a cache of ``--fraction`` of the vectors, then the first
   ``--prefix`` lookups both streamed and loaded in memory
   (:func:`impls.bandana.sim.cache.simulate`), which must give the same counters.
   Each point reports its worker's pid and peak resident memory (``VmHWM``,
   the process's high-water mark so far: the streamed points run first, so a
   worker's peak after them is the peak of the streaming).
Prints one JSON object (generation rate, per-point counters, seconds, peak RSS per
worker, whether the prefix counters agree, load average). Exit status 1 when the prefix
counters differ; 2, with one line, when the grid cannot run it (a remote cluster that cannot
be reached or cannot read this machine's files: checked before generating, and again on the
trace itself).

    python scripts/stream_full_scale.py --vectors 20000000 --lookups 300000000
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's impls


def streamed_point(path: str, layout, capacity: int, policy: str, shadow: int,
                   lookups: int | None) -> dict:
    """Counters of the trace at ``path`` (its first ``lookups``) simulated from memory maps."""
    from impls.bandana.sim import cache
    from impls.harness import grid, process_memory
    start = time.perf_counter()
    result = cache.simulate_npy(path, grid.array(layout), capacity, policy, shadow, lookups=lookups)
    return {"mode": "streamed", "policy": policy, "lookups_limit": lookups, **result.to_dict(),
            "seconds": time.perf_counter() - start, "pid": os.getpid(),
            "peak_rss_bytes": process_memory.peak_rss_bytes()}


def in_memory_point(path: str, layout, capacity: int, policy: str, shadow: int,
                    lookups: int) -> dict:
    """Counters of the first ``lookups`` of the trace at ``path``, loaded into memory whole."""
    import numpy as np
    from impls.bandana.sim import cache
    from impls.harness import grid, process_memory
    start = time.perf_counter()
    ids = np.array(np.load(path, mmap_mode="r")[:lookups])
    result = cache.simulate(ids, grid.array(layout), capacity, policy, shadow)
    return {"mode": "in memory", "policy": policy, "lookups_limit": lookups, **result.to_dict(),
            "seconds": time.perf_counter() - start, "pid": os.getpid(),
            "peak_rss_bytes": process_memory.peak_rss_bytes()}


def _require_shared_directory(directory: Path) -> None:
    """Raise grid.GridError unless every worker of a remote cluster can read a file written in
    ``directory`` (nothing to check for serial and local runs): the trace, which may be larger
    than memory, is read by path, never sent."""
    from impls.harness import grid
    if grid.scheduler_setting() in ("serial", "local"):
        return
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / f".shared-check.pid{os.getpid()}"
    marker.write_bytes(b"dlsysbench shared file system check\n")
    try:
        grid.require_shared_file(marker)
    finally:
        marker.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default="bandana-user",
                        help="the bandana-* dataset whose recipe (with the full profile's overrides) makes the "
                             "trace (default bandana-user)")
    parser.add_argument("--vectors", type=int, default=20_000_000,
                        help="vectors in the table, the ids' range (default 20,000,000)")
    parser.add_argument("--lookups", type=int, default=300_000_000,
                        help="lookups in the trace, 8 bytes each on disk (default 300,000,000: 2.4 GB); "
                             "above the memory in bytes / 8 for a trace larger than memory")
    parser.add_argument("--prefix", type=int, default=50_000_000,
                        help="lookups simulated both streamed and in memory (default 50M)")
    parser.add_argument("--policies", nargs="+", default=["none", "prefetch", "shadow"],
                        help="cache policies each simulated over the whole trace, streamed "
                             "(none, prefetch, lowpri, shadow; default none prefetch shadow)")
    parser.add_argument("--prefix-policy", default="prefetch",
                        help="the policy of the prefix run, streamed and in memory (default prefetch)")
    parser.add_argument("--fraction", type=float, default=0.05,
                        help="cache size / vectors (default 0.05)")
    parser.add_argument("--shadow-factor", type=float, default=4.0,
                        help="shadow-set size / cache size, for policy shadow (default 4)")
    parser.add_argument("--generate-only", action="store_true",
                        help="write the trace (or find it written) and stop before simulating")
    args = parser.parse_args(argv)

    import numpy as np
    from impls.bandana.data import traces
    from impls.harness import grid, paths, process_memory, registry

    manifest = registry.manifests()[args.table]
    params = registry.recipe_params(manifest, "full")
    params.update(num_vectors=args.vectors, num_lookups=args.lookups, with_vectors=False)
    key = hashlib.sha256(json.dumps([manifest.spec["seed"], params], sort_keys=True).encode())
    directory = paths.cache_dir() / args.table / f"stream-{args.vectors}-{args.lookups}-{key.hexdigest()[:12]}"
    report: dict = {"table": args.table, "vectors": args.vectors, "lookups": args.lookups,
                    "directory": str(directory), "load_average_before": os.getloadavg()}
    if not args.generate_only:     # before minutes of generating: the workers read the trace by path
        _require_shared_directory(directory.parent)
    if (directory / "indices.npy").exists():
        report["generation"] = "reused"
    else:
        start = time.perf_counter()
        traces.write_trace(directory, manifest.spec["seed"], **params)
        seconds = time.perf_counter() - start
        report["generation"] = {"seconds": seconds, "lookups_per_second": args.lookups / seconds,
                                "peak_rss_bytes": process_memory.peak_rss_bytes(),
                                "indices_bytes": (directory / "indices.npy").stat().st_size}
    print(json.dumps(report), file=sys.stderr)
    if args.generate_only:
        print(json.dumps(report, indent=1))
        return 0

    path = str(directory / "indices.npy")
    grid.require_shared_file(path)      # and the trace itself, whole (its size as here), after the writing
    layout = grid.share(np.random.default_rng(0).permutation(args.vectors))
    capacity = int(args.fraction * args.vectors)
    shadow = int(args.shadow_factor * capacity)
    streamed = [(path, layout, capacity, p, shadow, None) for p in args.policies]
    streamed.append((path, layout, capacity, args.prefix_policy, shadow, args.prefix))
    rows = grid.map_points(streamed_point, streamed, label="stream full scale", store=False)
    report["where"] = grid.runs()[-1]["where"]
    memory = grid.map_points(in_memory_point, [(path, layout, capacity, args.prefix_policy, shadow,
                                                args.prefix)], label="stream prefix", store=False)
    rows += memory
    drop = ("mode", "seconds", "pid", "peak_rss_bytes")
    a, b = rows[-2], rows[-1]
    report["prefix_counters_equal"] = ({k: v for k, v in a.items() if k not in drop}
                                       == {k: v for k, v in b.items() if k not in drop})
    report["points"] = rows
    report["peak_rss_per_worker_streaming"] = {
        str(pid): max(r["peak_rss_bytes"] for r in rows[:-1] if r["pid"] == pid)
        for pid in {r["pid"] for r in rows[:-1]}}
    report["load_average_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    return 0 if report["prefix_counters_equal"] else 1


if __name__ == "__main__":
    from impls.harness.grid import GridError
    try:
        sys.exit(main())
    except GridError as err:       # a cluster that cannot run this: one line, not a traceback
        print(f"stream_full_scale: {err}", file=sys.stderr)
        sys.exit(2)
