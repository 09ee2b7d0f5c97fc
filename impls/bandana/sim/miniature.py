"""Miniature simulation: estimate Bandana's DRAM cache by simulating small caches on a sample.

Bandana picks its cache sizes "by simulating dozens of small caches" — the
miniature simulation of Waldspurger et al. (ATC 2017): keep only the lookups of
keys with ``hash(key) mod P < T`` and simulate a cache scaled by ``R = T/P`` on
them; a cache of ``R * C`` entries sees, on the sample, about the hit rate a
cache of ``C`` entries sees on the full trace.

**What is sampled: blocks, not vectors.** Bandana's cache prefetches the other
vectors of a block on a miss, and its benefit (``prefetch_used``, effective
bandwidth) comes from co-located vectors being requested later. Sampling by
vector id would keep a looked-up vector but drop the lookups of its block-mates:
they would still be prefetched into the scaled cache (taking room) but never be
requested, so prefetching would look useless and the shadow set would miss most
candidates. Here the hashed key is the *block index* under the layout: a kept
block keeps all its vectors and all their lookups, so co-location, prefetch and
shadow admission behave on the sample as on the full trace. The kept blocks are
renumbered into a compact layout (their vectors in storage order), so the small
simulation also runs on small arrays.

Scaling: the cache and the shadow set are scaled by the fraction of *vectors*
kept, ``f = n_vectors / n_vectors_full`` (``R`` up to sampling noise), rounded.

Hit-rate correction (SHARDS-adj, Waldspurger et al., FAST 2015, section 4.3),
relative to the same ``f``: the sample is expected to hold ``f * L`` of the full
trace's ``L`` lookups; when it holds more or fewer, ``L_s`` (a hot block happened
to be kept or dropped), the difference is taken to be hits on the hottest vectors.
So the estimated hits are ``hits_s - (L_s - f L)``, clamped to [0, f L], out of
``f L`` lookups, and every counter is scaled back by ``1 / f``: the estimated misses
are the sample's scaled by ``1 / f`` (at most ``L``), the hits the rest. The reference is ``f``, not
``R``: a sample that kept a few % more blocks than ``R`` has as many % more lookups
at the same hit rate when no block is hot (uniform traces, scans), and those are not
hits. With ``adjust=False`` every counter is scaled by ``L / L_s`` instead.

Invariants of the estimate, with or without ``adjust``:
- ``lookups`` is the full trace's; misses are lookups less hits; blocks read
  equal misses (each miss reads one block) and bytes read are blocks read times
  the block size; prefetch-used is at most hits and at most prefetched.
- A sample that kept every block (``f == 1``; always at ``rate=1``) gives exactly
  ``simulate``'s result.
- A sample holding exactly ``f L`` lookups (a scan, whichever blocks were kept)
  is not corrected: the estimate is its counters scaled by ``1 / f``.
- The effective bandwidth is computed from the estimated counters as the
  simulator computes it. It is the sample's own, up to rounding, unless the
  correction took more hits than the sample's hits that were not prefetch uses:
  prefetch-used is then clamped to the hits (scaling each counter apart would
  break the invariants above).

Blocks, not vectors, are the sampling unit (``V`` times fewer units at a given
rate), so a skewed trace's hottest blocks make the raw sample hit rate noisy and
the correction is what tames it; very small scaled caches (a few dozen blocks)
are noisier still. ``compare_with_full`` measures the error against full
simulations.

Known limitation, policy ``lowpri``: its prefetched vectors sit at the LRU end
and survive a fixed number of *misses*, not a fraction of the cache; the sample
has ``1/R`` times fewer lookups between two lookups of one block, so its
low-priority prefetches are used more often and the effective bandwidth is
overestimated.

Accuracy (hit-rate and effective-bandwidth errors over seeds, on skewed, uniform
and scan traces), the lowpri bias and the cost: impls/bandana/NOTES.md,
"Miniature simulation".
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from impls.bandana.sim import cache_kernels as K
from impls.bandana.sim.cache import (
    CacheConfigError,
    CacheResult,
    check_layout,
    check_policy,
    check_trace,
    simulate,
    vectors_per_block,
)

# P in "hash mod P < T".
HASH_MODULUS = 1 << 24

_U64 = np.uint64


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's output function (a bijective 64-bit mixer), elementwise on uint64."""
    with np.errstate(over="ignore"):
        x = x + _U64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> _U64(27))) * _U64(0x94D049BB133111EB)
        return x ^ (x >> _U64(31))


def block_hash(blocks: np.ndarray, seed: int) -> np.ndarray:
    """Seeded 64-bit hash of block indices (uint64)."""
    seed_mix = _splitmix64(np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], dtype=_U64))[0]
    return _splitmix64(np.asarray(blocks).astype(_U64) ^ seed_mix)


def _check_rate(rate) -> float:
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.floating, np.integer)) \
            or not math.isfinite(float(rate)) or not 0.0 < float(rate) <= 1.0:
        raise CacheConfigError(f"rate must be a number in (0, 1], got {rate!r}")
    return float(rate)


@dataclasses.dataclass(frozen=True)
class MiniatureSample:
    """A block-sampled trace, renumbered onto the compact layout of the kept blocks.

    ``trace`` holds the kept lookups as ids of the compact layout, whose storage
    order is the identity (``layout``: ``arange(n_vectors)``).
    """

    trace: np.ndarray
    rate: float
    threshold: int
    modulus: int
    seed: int
    vector_bytes: int
    block_bytes: int
    n_vectors_full: int
    n_vectors: int
    n_blocks_full: int
    n_blocks: int
    lookups_full: int
    lookups: int

    @property
    def layout(self) -> np.ndarray:
        """The compact layout: identity over the kept vectors."""
        return np.arange(self.n_vectors, dtype=np.int64)

    @property
    def vector_fraction(self) -> float:
        """Fraction of the vectors kept (what cache sizes are scaled by)."""
        return self.n_vectors / self.n_vectors_full if self.n_vectors_full else 0.0

    def scaled(self, size: int) -> int:
        """A cache (or shadow) size of the full trace, scaled to the sample."""
        return round(size * self.vector_fraction)

    def info(self) -> dict[str, Any]:
        """The sampling parameters and sizes, as plain data."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "trace"}
        out["vector_fraction"] = self.vector_fraction
        return out


def sample_blocks(trace, layout, rate: float, seed: int, vector_bytes: int = 128,
                  block_bytes: int = 4096) -> MiniatureSample:
    """Keep the lookups of the blocks with ``block_hash(block, seed) mod P < T``, ``T = rate * P``."""
    rate = _check_rate(rate)
    per_block = vectors_per_block(vector_bytes, block_bytes)
    layout = check_layout(layout)
    n = layout.shape[0]
    trace = check_trace(trace, n)
    threshold = round(rate * HASH_MODULUS)
    if threshold == 0:
        raise CacheConfigError(f"rate {rate:g} is below the sampling's resolution, 1/{HASH_MODULUS} "
                               f"(= {1 / HASH_MODULUS:.3g}); use a higher rate")
    n_blocks_full = -(-n // per_block)
    keep = (block_hash(np.arange(n_blocks_full), seed) % _U64(HASH_MODULUS)) < _U64(threshold)
    new_block = np.full(n_blocks_full, -1, dtype=np.int64)
    new_block[keep] = np.arange(int(keep.sum()))
    sizes = np.full(n_blocks_full, per_block, dtype=np.int64)
    if n_blocks_full and n % per_block:
        sizes[-1] = n % per_block
    new_id = np.empty(n, dtype=np.int32 if n < 2**31 else np.int64)
    K.compact_ids(layout, per_block, new_block, new_id)
    sampled = K.sample_trace(trace, new_id)
    return MiniatureSample(
        trace=sampled, rate=threshold / HASH_MODULUS, threshold=threshold,
        modulus=HASH_MODULUS, seed=int(seed), vector_bytes=int(vector_bytes),
        block_bytes=int(block_bytes), n_vectors_full=n, n_vectors=int(sizes[keep].sum()),
        n_blocks_full=n_blocks_full, n_blocks=int(keep.sum()),
        lookups_full=int(trace.shape[0]), lookups=int(sampled.shape[0]))


def simulate_sample(sample: MiniatureSample, capacity: int, policy: str,
                    shadow: int | None = None, adjust: bool = True) -> CacheResult:
    """Simulate the scaled cache on ``sample``; counters scaled back to the full trace.

    ``adjust``: apply the SHARDS-adj hit correction, relative to the kept vector
    fraction the cache is scaled by (module docstring); without it, counters are
    scaled by ``lookups_full / lookups_sampled``. A sample that kept every block gives
    exactly ``simulate``'s result.
    """
    check_policy(policy)
    if sample.lookups_full == 0:          # nothing to estimate: the full trace's own (empty) result
        return simulate(sample.trace, sample.layout, capacity, policy, shadow, sample.vector_bytes,
                        sample.block_bytes)
    if sample.lookups == 0:
        raise CacheConfigError(
            f"the sample at rate {sample.rate:g} (seed {sample.seed}) kept no lookups "
            f"({sample.n_blocks} of {sample.n_blocks_full} blocks); use a higher rate")
    per_block = vectors_per_block(sample.vector_bytes, sample.block_bytes)
    small_capacity = sample.scaled(capacity)
    if small_capacity < per_block:
        raise CacheConfigError(
            f"capacity={capacity} scales to {small_capacity} vectors at a kept fraction of "
            f"{sample.vector_fraction:.4g}, less than one block's {per_block} vectors; "
            f"use a higher rate or a larger capacity")
    small_shadow = None
    if policy == "shadow":
        if shadow is None:
            raise CacheConfigError("policy 'shadow' needs a shadow size (shadow >= capacity)")
        if shadow < capacity:
            raise CacheConfigError(f"shadow={shadow} is less than capacity={capacity}")
        small_shadow = max(sample.scaled(shadow), small_capacity)
    small = simulate(sample.trace, sample.layout, small_capacity, policy, small_shadow,
                     sample.vector_bytes, sample.block_bytes)
    if adjust:
        # relative to the fraction the cache was scaled by, not the requested rate: a sample
        # that kept more blocks than the rate's share has more lookups, not more hot ones
        kept = sample.vector_fraction
        expected = kept * sample.lookups_full
        small_hits = min(max(small.hits - (small.lookups - expected), 0.0), expected)
        factor = 1.0 / kept
    else:
        small_hits = small.hits
        factor = sample.lookups_full / sample.lookups
    hits = min(round(small_hits * factor), sample.lookups_full)
    misses = sample.lookups_full - hits
    # the simulator's invariants, which scaling each counter apart breaks once the correction
    # is clamped: every miss reads one block, and a used prefetch is a hit
    prefetch_used = min(round(small.prefetch_used * factor), hits)
    return CacheResult(
        lookups=sample.lookups_full, hits=hits, misses=misses,
        blocks_read=misses, prefetched=max(round(small.prefetched * factor), prefetch_used),
        prefetch_used=prefetch_used,
        effective_bandwidth=((misses + prefetch_used) * sample.vector_bytes / (misses * sample.block_bytes)
                             if misses else 0.0),
        bytes_read=misses * sample.block_bytes)


def miniature_simulate(trace, layout, capacity: int, policy: str, shadow: int | None = None,
                       rate: float = 0.1, seed: int = 0, vector_bytes: int = 128,
                       block_bytes: int = 4096, adjust: bool = True) -> CacheResult:
    """Estimate ``simulate(trace, layout, capacity, policy, shadow, ...)`` from a block sample.

    Counters are estimates for the full trace (scaled back to it and rounded);
    ``effective_bandwidth`` follows from them (the sample's, up to rounding, unless the
    correction leaves fewer hits than the sample's prefetch uses); the hit rate is
    corrected as the module docstring says unless ``adjust`` is false. At ``rate=1``
    the result is exactly ``simulate``'s.
    """
    check_policy(policy)
    sample = sample_blocks(trace, layout, rate, seed, vector_bytes, block_bytes)
    return simulate_sample(sample, capacity, policy, shadow, adjust)


def _grid(capacities: Sequence[int], shadows: Sequence[int] | None, policy: str):
    """Valid (capacity, shadow) points in order, and the skipped ones."""
    points, skipped = [], []
    if not capacities:
        raise CacheConfigError("capacities is empty")
    for capacity in capacities:
        if policy != "shadow":
            points.append((int(capacity), None))
            continue
        if not shadows:
            raise CacheConfigError("policy 'shadow' needs a non-empty list of shadow sizes")
        for shadow in shadows:
            if shadow < capacity:
                skipped.append({"capacity": int(capacity), "shadow": int(shadow),
                                "reason": "shadow < capacity"})
            else:
                points.append((int(capacity), int(shadow)))
    return points, skipped


_OBJECTIVES = ("effective_bandwidth", "hit_rate")


def _best_per_capacity(grid: list[dict], objective: str) -> list[dict]:
    """Per capacity, the grid point maximizing ``objective`` (ties: the other metric, then
    the smaller shadow)."""
    other = "hit_rate" if objective == "effective_bandwidth" else "effective_bandwidth"
    best: dict[int, dict] = {}
    for point in grid:
        key = (point[objective], point[other], -(point["shadow"] or 0))
        current = best.get(point["capacity"])
        if current is None or key > current[0]:
            best[point["capacity"]] = (key, point)
    return [dict(point) for _, point in best.values()]


def choose_cache_sizes(trace, layout, capacities: Sequence[int], shadows: Sequence[int] | None,
                       policy: str, rate: float = 0.1, seed: int = 0, vector_bytes: int = 128,
                       block_bytes: int = 4096,
                       objective: str = "effective_bandwidth") -> dict[str, Any]:
    """Simulate the grid of miniature caches; every estimate, and the best shadow per capacity.

    Effective bandwidth alone is maximized trivially by the largest cache, so the
    whole grid is returned: per (capacity, shadow) the estimated hit rate,
    effective bandwidth and NVM blocks read per lookup. ``best`` holds, per
    capacity, the point with the highest ``objective`` (``"effective_bandwidth"``
    or ``"hit_rate"``) — for policy ``shadow`` that is the shadow size to use with
    that cache; for the other policies ``shadows`` is ignored. Grid points with
    ``shadow < capacity`` are listed under ``skipped``.
    """
    check_policy(policy)
    if objective not in _OBJECTIVES:
        raise CacheConfigError(f"unknown objective {objective!r}; known: {', '.join(_OBJECTIVES)}")
    points, skipped = _grid(capacities, shadows, policy)
    start = time.perf_counter()
    sample = sample_blocks(trace, layout, rate, seed, vector_bytes, block_bytes)
    sample_s = time.perf_counter() - start
    grid = []
    for capacity, shadow in points:
        t0 = time.perf_counter()
        est = simulate_sample(sample, capacity, policy, shadow)
        grid.append(_point(capacity, shadow, est, sample, time.perf_counter() - t0))
    return {
        "policy": policy, "objective": objective, "sample": sample.info(),
        "sample_seconds": sample_s, "seconds": time.perf_counter() - start,
        "grid": grid, "best": _best_per_capacity(grid, objective), "skipped": skipped,
    }


def _point(capacity, shadow, res: CacheResult, sample: MiniatureSample | None,
           seconds: float) -> dict[str, Any]:
    out = {"capacity": capacity, "shadow": shadow, "hit_rate": res.hit_rate,
           "effective_bandwidth": res.effective_bandwidth,
           "blocks_read_per_lookup": res.blocks_read / res.lookups if res.lookups else 0.0,
           "seconds": seconds}
    if sample is not None:
        out["scaled_capacity"] = sample.scaled(capacity)
        out["scaled_shadow"] = None if shadow is None else max(sample.scaled(shadow),
                                                                sample.scaled(capacity))
    return out


def compare_with_full(trace, layout, capacities: Sequence[int], shadows: Sequence[int] | None,
                      policy: str, rate: float = 0.1, seed: int = 0, vector_bytes: int = 128,
                      block_bytes: int = 4096) -> dict[str, Any]:
    """Per grid point: the miniature estimate, the full simulation, their errors and times.

    ``points[i]`` has ``capacity, shadow``, ``miniature`` and ``full`` (hit rate,
    effective bandwidth, blocks read per lookup, seconds), ``abs_error_hit_rate``,
    ``abs_error_effective_bandwidth`` and ``speedup`` (full seconds / miniature
    seconds). Totals: ``sample_seconds`` (sampling, done once for the grid),
    ``miniature_seconds`` (sampling + all small simulations), ``full_seconds``,
    ``speedup``, and the largest errors: NaN where there is nothing to measure (a speed-up
    timed at 0 s; the totals of a grid without a valid point, ``skipped`` lists them).
    """
    check_policy(policy)
    points, skipped = _grid(capacities, shadows, policy)
    layout = check_layout(layout)
    trace = check_trace(trace, layout.shape[0])
    if not trace.size:
        raise CacheConfigError("the trace is empty: there is no hit rate to estimate or compare")
    if points:   # once untimed on a few lookups: no timing pays for numba's compile
        small = trace[:256]
        capacity, shadow = points[0]
        simulate_sample(sample_blocks(small, layout, 1.0, seed, vector_bytes, block_bytes), capacity, policy, shadow)
        simulate(small, layout, capacity, policy, shadow, vector_bytes, block_bytes)
    t0 = time.perf_counter()
    sample = sample_blocks(trace, layout, rate, seed, vector_bytes, block_bytes)
    sample_s = time.perf_counter() - t0
    rows = []
    mini_total = sample_s
    full_total = 0.0
    for capacity, shadow in points:
        t0 = time.perf_counter()
        est = simulate_sample(sample, capacity, policy, shadow)
        mini_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        full = simulate(trace, layout, capacity, policy, shadow, vector_bytes, block_bytes)
        full_s = time.perf_counter() - t0
        mini_total += mini_s
        full_total += full_s
        m = _point(capacity, shadow, est, sample, mini_s)
        f = _point(capacity, shadow, full, None, full_s)
        rows.append({
            "capacity": capacity, "shadow": shadow,
            "miniature": {k: v for k, v in m.items() if k not in ("capacity", "shadow")},
            "full": {k: v for k, v in f.items() if k not in ("capacity", "shadow")},
            "abs_error_hit_rate": abs(est.hit_rate - full.hit_rate),
            "abs_error_effective_bandwidth": abs(est.effective_bandwidth
                                                 - full.effective_bandwidth),
            "speedup": full_s / mini_s if mini_s > 0 else math.nan,
        })
    return {
        "policy": policy, "sample": sample.info(), "points": rows, "skipped": skipped,
        "sample_seconds": sample_s, "miniature_seconds": mini_total, "full_seconds": full_total,
        "speedup": full_total / mini_total if rows and mini_total > 0 else math.nan,
        "max_abs_error_hit_rate": max((r["abs_error_hit_rate"] for r in rows), default=math.nan),
        "max_abs_error_effective_bandwidth": max(
            (r["abs_error_effective_bandwidth"] for r in rows), default=math.nan),
    }
