"""Numba kernels for the LSH hash tables (see tables): bulk (re)insertion into
capacity-bounded buckets stored as one CSR per table."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from impls.slide.core.rng import below, stream

FIFO, RESERVOIR = 0, 1


@njit(cache=True, parallel=True)
def build(codes, n_buckets, capacity, policy, seed, offsets, items):
    """Insert items 0..n-1 (in id order) into every table's buckets.

    ``codes`` (L, n) int32: bucket of each item in each table (table-major). A full bucket keeps,
    under FIFO, the ``capacity`` most recently inserted items (a ring buffer as the
    reference code); under reservoir sampling a uniform sample of ``capacity`` of them
    (Algorithm R, per-bucket random stream from ``seed``). Output: per table ``t`` the
    bucket ``b`` holds ``items[t, offsets[t, b]:offsets[t, b + 1]]``.
    """
    L, n = codes.shape
    for t in prange(L):
        count = np.zeros(n_buckets + 1, np.int64)
        for i in range(n):
            count[codes[t, i] + 1] += 1
        for b in range(n_buckets):
            count[b + 1] += count[b]
        full = np.empty(n, np.int32)
        fill = count[:-1].copy()
        for i in range(n):
            b = codes[t, i]
            full[fill[b]] = i
            fill[b] += 1
        out = 0
        offsets[t, 0] = 0
        for b in range(n_buckets):
            lo = count[b]
            hi = count[b + 1]
            size = hi - lo
            if size <= capacity:
                for q in range(lo, hi):
                    items[t, out] = full[q]
                    out += 1
            elif policy == FIFO:
                for q in range(hi - capacity, hi):
                    items[t, out] = full[q]
                    out += 1
            else:
                for q in range(capacity):
                    items[t, out + q] = full[lo + q]
                state = stream(seed, np.int64(t) * n_buckets + b)
                for q in range(capacity, size):
                    state, r = below(state, q + 1)
                    if r < capacity:
                        items[t, out + r] = full[lo + q]
                out += capacity
            offsets[t, b + 1] = out
