"""numba kernels for the block fanout of a layout: the distinct blocks, or ids, each query
touches. Kept apart from the plain-Python API in :mod:`impls.bandana.layout.layouts`, which
validates input and calls these."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

@njit(cache=True, parallel=True)
def fanout_per_query(offsets, indices, block_of_vector, num_blocks, nchunks):
    """Return the number of distinct blocks each query touches (int64 per query).

    Queries are processed in ``nchunks`` parallel chunks, each with its own
    ``num_blocks`` scratch array.
    """
    nq = offsets.size - 1
    out = np.zeros(nq, dtype=np.int64)
    nchunks = max(1, min(nq, nchunks))
    for c in prange(nchunks):
        q0 = c * nq // nchunks
        q1 = (c + 1) * nq // nchunks
        stamp = np.full(num_blocks, -1, dtype=np.int64)
        for q in range(q0, q1):
            distinct = 0
            for k in range(offsets[q], offsets[q + 1]):
                b = block_of_vector[indices[k]]
                if stamp[b] != q:
                    stamp[b] = q
                    distinct += 1
            out[q] = distinct
    return out


@njit(cache=True)
def distinct_count(ids):
    """The number of distinct values in ``ids`` (a sorted copy of them is the only scratch)."""
    if ids.size <= 1:
        return ids.size
    s = np.sort(ids)
    d = 1
    for k in range(1, s.size):
        d += s[k] != s[k - 1]
    return d


@njit(cache=True, parallel=True)
def distinct_per_query(offsets, indices):
    """Return the number of distinct ids each query holds (int64 per query), with nothing the
    size of the table as scratch, whatever the thread count."""
    distinct = np.zeros(offsets.size - 1, dtype=np.int64)
    for q in prange(offsets.size - 1):
        distinct[q] = distinct_count(indices[offsets[q]:offsets[q + 1]])
    return distinct
