"""Plain-Python reference of Bandana's DRAM-cache simulator, and an OrderedDict LRU baseline.

``simulate_reference`` is written straight from the specification in
``impls.bandana.sim.cache`` with ``collections.OrderedDict`` (first key = LRU end,
last key = MRU end) so that it is obviously right; it is slow and is used only by
the tests, which check that the numba simulator gives *exactly* the same counters.

``ordered_dict_lru_lookups_per_second`` is the yardstick the simulator's speed is
reported against: the usual pure-Python LRU (``move_to_end`` / ``popitem``), with
no blocks and no prefetch.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

import numpy as np

POLICIES = ("none", "prefetch", "lowpri", "shadow")


def simulate_reference(trace, layout, capacity: int, policy: str, shadow: int | None = None,
                       vector_bytes: int = 128, block_bytes: int = 4096) -> dict[str, Any]:
    """Replay ``trace`` through the cache; return the result counters as a dict.

    Besides the counters: the final cache (``cache_order``, LRU end first, and
    ``cache_requested``), the final shadow set (``shadow_order``) and per lookup
    ``outcomes``: ``(hit, block read or -1, vectors inserted)``, the inserted
    vectors being the looked-up one first, then the candidates in storage order.

    No input validation beyond what the arithmetic needs: the tests give it valid
    input only (the numba path's validation is tested on its own).
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}")
    layout = [int(x) for x in layout]
    n = len(layout)
    per_block = block_bytes // vector_bytes
    position = {vector: i for i, vector in enumerate(layout)}

    cache: OrderedDict[int, bool] = OrderedDict()   # vector -> requested (False: prefetched, unused)
    shadow_set: OrderedDict[int, None] = OrderedDict()
    lookups = hits = misses = blocks_read = prefetched = prefetch_used = 0
    outcomes = []   # per lookup: (hit, block read or -1, vectors inserted: v first, then candidates)

    for v in (int(x) for x in trace):
        lookups += 1
        if v in cache:
            hits += 1
            cache.move_to_end(v)
            if not cache[v]:
                prefetch_used += 1
                cache[v] = True
            outcomes.append((True, -1, []))
        else:
            misses += 1
            blocks_read += 1
            block = position[v] // per_block
            block_vectors = layout[block * per_block:min((block + 1) * per_block, n)]
            if policy == "none":
                candidates = []
            else:
                candidates = [u for u in block_vectors if u != v and u not in cache]
                if policy == "shadow":
                    candidates = [u for u in candidates if u in shadow_set]
            while len(cache) + 1 + len(candidates) > capacity:
                cache.popitem(last=False)
            if policy == "lowpri":
                cache[v] = True
                for u in reversed(candidates):
                    cache[u] = False
                    cache.move_to_end(u, last=False)
            else:
                for u in candidates:
                    cache[u] = False
                cache[v] = True
            prefetched += len(candidates)
            outcomes.append((False, block, [v] + candidates))
        if policy == "shadow":
            if v in shadow_set:
                shadow_set.move_to_end(v)
            else:
                shadow_set[v] = None
                if len(shadow_set) > shadow:
                    shadow_set.popitem(last=False)

    bytes_read = blocks_read * block_bytes
    effective = (misses + prefetch_used) * vector_bytes / bytes_read if blocks_read else 0.0
    return {
        "lookups": lookups,
        "hits": hits,
        "misses": misses,
        "blocks_read": blocks_read,
        "prefetched": prefetched,
        "prefetch_used": prefetch_used,
        "effective_bandwidth": effective,
        "bytes_read": bytes_read,
        # Final cache contents, LRU end first, with the requested flag; and the shadow set.
        "cache_order": list(cache.keys()),
        "cache_requested": list(cache.values()),
        "shadow_order": list(shadow_set.keys()),
        "outcomes": outcomes,
    }


def ordered_dict_lru(trace, capacity: int) -> int:
    """Replay ``trace`` through a plain OrderedDict LRU of ``capacity`` keys; return the hits."""
    cache: OrderedDict[int, None] = OrderedDict()
    move_to_end = cache.move_to_end
    popitem = cache.popitem
    hits = 0
    size = 0
    for v in trace:
        if v in cache:
            move_to_end(v)
            hits += 1
        else:
            cache[v] = None
            if size == capacity:
                popitem(last=False)
            else:
                size += 1
    return hits


def ordered_dict_lru_lookups_per_second(trace, capacity: int,
                                        max_lookups: int | None = None) -> dict[str, Any]:
    """Time ``ordered_dict_lru`` on ``trace`` (or its first ``max_lookups`` ids).

    The ids are converted to Python ints before the clock starts, so the time is
    the LRU's alone. Returns ``{"lookups", "hits", "seconds", "lookups_per_second",
    "cpu_seconds", "lookups_per_cpu_second"}`` (CPU time of this thread).
    """
    ids = np.asarray(trace)
    if max_lookups is not None:
        ids = ids[:max_lookups]
    ids = ids.tolist()
    start, cpu_start = time.perf_counter(), time.thread_time()
    hits = ordered_dict_lru(ids, capacity)
    seconds = time.perf_counter() - start
    cpu_seconds = time.thread_time() - cpu_start
    return {"lookups": len(ids), "hits": hits, "seconds": seconds,
            "lookups_per_second": len(ids) / seconds if seconds > 0 else float("inf"),
            "cpu_seconds": cpu_seconds,
            "lookups_per_cpu_second": len(ids) / cpu_seconds if cpu_seconds > 0 else float("inf")}
