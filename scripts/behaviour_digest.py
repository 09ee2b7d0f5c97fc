#!/usr/bin/env python
"""Print what the deterministic engines compute on fixed inputs, to show a refactor changed nothing.

    python scripts/behaviour_digest.py --out digest.json        # on one commit
    python scripts/behaviour_digest.py --compare digest.json    # on another: exit 1 on any difference

Three parts, each on inputs made here from fixed seeds (not from the suite's generators,
so that a change of a generator is not mistaken for a change of an engine):

- ``bandana``: hits and blocks read of the cache simulator for every layout (identity,
  random, K-means, SHP) x policy x cache size on a trace drawn here;
- ``lanes``: the lane assignment of every rule on random mixes of fixed job profiles;
- ``slide``: SLIDE's P@1, P@5 and loss at every evaluation of 30 batches at ``threads=1``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def bandana() -> dict:
    from impls.bandana.sim import cache
    from impls.bandana.layout import layouts

    rng = np.random.default_rng(7)
    n, per_block = 4096, 32
    communities = rng.integers(0, 128, n)
    members = [np.flatnonzero(communities == c) for c in range(128)]
    queries = [rng.choice(members[c], size=min(12, members[c].size), replace=False)
               for c in rng.integers(0, 128, 3000) if members[c].size]
    offsets = np.concatenate([[0], np.cumsum([q.size for q in queries])]).astype(np.int64)
    indices = np.concatenate(queries).astype(np.int64)
    vectors = (rng.normal(size=(128, 16))[communities] + rng.normal(scale=0.5, size=(n, 16))).astype(np.float32)
    cut = offsets[1500]
    built = {"identity": layouts.identity_layout(n), "random": layouts.random_layout(n, seed=1),
             "kmeans": layouts.kmeans_layout(vectors, vectors_per_block=per_block, niter=5, seed=1),
             "shp": layouts.shp_layout(offsets[:1501], indices[:cut], n, vectors_per_block=per_block,
                                       iterations=4, seed=1)}
    out = {}
    for name, layout in built.items():
        for policy in ("none", "prefetch", "lowpri", "shadow"):
            for capacity in (128, 512):
                r = cache.simulate(indices[cut:], layout.permutation, capacity, policy, 4 * capacity)
                out[f"{name}/{policy}/{capacity}"] = [int(r.hits), int(r.blocks_read)]
    return out


def lanes() -> dict:
    from impls.salus.memory import lane_sim
    from impls.salus.memory import lanes as lane_rules

    profiles = {"a": {"persistent_bytes": 300, "ephemeral_bytes": 900, "iteration_ms": 5.0},
                "b": {"persistent_bytes": 50, "ephemeral_bytes": 2000, "iteration_ms": 20.0},
                "c": {"persistent_bytes": 700, "ephemeral_bytes": 100, "iteration_ms": 2.0}}
    out = {}
    for seed in range(5):
        jobs = lane_sim.draw_mix(profiles, 12, np.random.default_rng(seed))
        for rule in ("salus", "salus-grow", "shared-first", "no-lanes", "static"):
            try:
                snapshot = lane_rules.assign(lane_rules.jobs_from_json(jobs), 6000, rule)
            except (ValueError, KeyError) as err:
                snapshot = {"error": str(err)}
            out[f"{seed}/{rule}"] = json.loads(json.dumps(snapshot, default=str))
    return out


def slide() -> dict:
    from impls.slide.core.config import SlideConfig
    from impls.slide.data.dataset import XCData
    from impls.slide.training.trainer import train

    rng = np.random.default_rng(3)

    def split(points: int) -> XCData:
        nnz = rng.integers(5, 30, points)
        indptr = np.concatenate([[0], np.cumsum(nnz)])
        features = rng.zipf(1.3, int(indptr[-1])) % 2000
        counts = rng.integers(1, 4, points)
        label_indptr = np.concatenate([[0], np.cumsum(counts)])
        labels = (features[indptr[:-1]][np.repeat(np.arange(points), counts)] * 7 + rng.integers(0, 3, counts.sum())) % 5000
        return XCData(indptr, features, rng.random(int(indptr[-1])), label_indptr, labels, 2000, 5000)

    train_split, test_split = split(6000), split(1000)
    result = train(SlideConfig(threads=1, batch=128, seed=5), train_split, test_split, time_budget_s=None,
                   max_iterations=30, eval_every=10, eval_points=500, eval_at_start=True)
    return {"curve": [[p["iteration"], round(p["p_at_1"], 9), round(p["p_at_5"], 9), (round(p["loss"], 6) if np.isfinite(p["loss"]) else None)]
                      for p in result["curve"]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the digest here")
    parser.add_argument("--compare", help="a digest from another commit: exit 1 on any difference")
    parser.add_argument("--part", action="append", choices=("bandana", "lanes", "slide"))
    args = parser.parse_args(argv)
    parts = {"bandana": bandana, "lanes": lanes, "slide": slide}
    digest = {name: parts[name]() for name in (args.part or parts)}
    if args.out:
        Path(args.out).write_text(json.dumps(digest, indent=1, sort_keys=True))
    if args.compare:
        before = json.loads(Path(args.compare).read_text())
        diffs = [f"{part}/{key}: {before[part].get(key)} -> {value}"
                 for part, values in digest.items() for key, value in values.items()
                 if before.get(part, {}).get(key) != value]
        diffs += [f"{part}/{key}: missing now" for part in digest for key in before.get(part, {})
                  if key not in digest[part]]
        print("\n".join(diffs) or f"identical: {', '.join(f'{p} ({len(v)} values)' for p, v in digest.items())}")
        return 1 if diffs else 0
    if not args.out:
        print(json.dumps(digest, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
