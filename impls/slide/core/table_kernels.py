"""Numba kernels for the LSH hash tables (see tables): bulk (re)insertion into
capacity-bounded buckets stored as one CSR per table, and the delta beside it that re-buckets
a few neurons between builds (``move_rows``, read by ``bucket_into``)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from impls.harness.kernel_cache import drop_stale
from impls.slide.core.rng import below, stream

# numba's cache does not see edits to the kernels called from here: drop it when they change
drop_stale(__file__, ["impls.slide.core.rng"])

FIFO, RESERVOIR = 0, 1


@njit(cache=True, parallel=True)
def build(codes, order, n_buckets, capacity, policy, seed, offsets, items):
    """Insert items ``order[0], order[1], ...`` (a permutation of 0..n-1, oldest first) into
    every table's buckets.

    ``codes`` (L, n) int32: bucket of each item in each table (table-major). A full bucket keeps,
    under FIFO, the ``capacity`` most recently inserted items (a ring buffer as the
    reference code); under reservoir sampling a uniform sample of ``capacity`` of them
    (Algorithm R, per-bucket random stream from ``seed``). Output: per table ``t`` the
    bucket ``b`` holds ``items[t, offsets[t, b]:offsets[t, b + 1]]``, in insertion order.
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
        for k in range(n):
            i = order[k]
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


@njit(cache=True)
def bucket_into(t, b, offsets, items, slot_of, moved, dhead, dnext, slot_row, capacity, out):
    """Write into ``out`` the neurons bucket ``b`` of table ``t`` holds now and return how many.

    Those are the neurons moved since the base build whose code in table ``t`` is ``b`` (the
    delta's chain, most recently moved first), then the base CSR's items of ``b`` that have not
    moved (``slot_of[j] < 0``), from the end of the bucket's slice (under FIFO, last inserted
    first): at most ``capacity`` in all. Each neuron appears at most once.
    """
    n = 0
    e = dhead[t, b & (dhead.shape[1] - 1)]
    while e >= 0 and n < capacity:
        if moved[t, e] == b:
            out[n] = slot_row[e]
            n += 1
        e = dnext[t, e]
    q = offsets[t, b + 1] - 1
    lo = offsets[t, b]
    while q >= lo and n < capacity:
        j = items[t, q]
        if slot_of[j] < 0:
            out[n] = j
            n += 1
        q -= 1
    return n


@njit(cache=True)
def retrieve_union(codes, offsets, items, slot_of, moved, dhead, dnext, slot_row, capacity, stamp):
    """Sorted union (int32) of the buckets ``codes[t]`` of every table ``t`` (see ``bucket_into``).
    ``stamp`` (n_items,) uint8 must be 0 on entry and is left 0."""
    L = codes.shape[0]
    buf = np.empty(capacity, np.int32)
    got = np.empty(L * capacity, np.int32)
    n = 0
    for t in range(L):
        k = bucket_into(t, codes[t], offsets, items, slot_of, moved, dhead, dnext, slot_row, capacity, buf)
        for q in range(k):
            j = buf[q]
            if stamp[j] == 0:
                stamp[j] = 1
                got[n] = j
                n += 1
    out = np.sort(got[:n])
    for q in range(n):
        stamp[out[q]] = 0
    return out


@njit(cache=True, parallel=True)
def move_rows(rows, new_codes, slot_of, n_slots, slot_row, moved, dhead, dnext, dprev):
    """Re-insert neurons ``rows`` (distinct, in this order) at ``new_codes`` (L, len(rows))
    without a rebuild: in every table each becomes the newest neuron of its bucket, whether its
    code changed or not (a FIFO bucket keeps the last inserted).

    A row first moved since the base build gets a slot ``s`` (``slot_of[j]``, ``slot_row[s] = j``)
    and leaves the base CSR (``bucket_into`` skips it there). Slot ``s`` is also the row's entry in
    each table's delta: ``moved[t, s]`` its code, linked by ``dnext`` / ``dprev`` into the chain of
    head ``code & (heads - 1)``, newest first. Re-inserting unlinks the entry in O(1) and links it
    at the head. The caller guarantees room: ``n_slots[0] + len(rows) <= moved.shape[1]``.
    """
    L = new_codes.shape[0]
    r = rows.shape[0]
    first = np.zeros(r, np.bool_)
    for k in range(r):
        j = rows[k]
        if slot_of[j] < 0:
            s = n_slots[0]
            slot_of[j] = s
            slot_row[s] = j
            n_slots[0] += 1
            first[k] = True
    mask = dhead.shape[1] - 1
    for t in prange(L):
        for k in range(r):
            s = slot_of[rows[k]]
            if not first[k]:  # unlink from its chain
                p = dprev[t, s]
                nx = dnext[t, s]
                if p >= 0:
                    dnext[t, p] = nx
                else:
                    dhead[t, moved[t, s] & mask] = nx
                if nx >= 0:
                    dprev[t, nx] = p
            c = new_codes[t, k]
            moved[t, s] = c
            h = c & mask
            nx = dhead[t, h]
            dnext[t, s] = nx
            dprev[t, s] = -1
            if nx >= 0:
                dprev[t, nx] = s
            dhead[t, h] = s


@njit(cache=True)
def fold_moved(codes, slot_of, moved):
    """Write every moved row's current codes into ``codes`` and forget its slot; returns how many."""
    m = 0
    for j in range(slot_of.shape[0]):
        s = slot_of[j]
        if s >= 0:
            for t in range(codes.shape[0]):
                codes[t, j] = moved[t, s]
            slot_of[j] = -1
            m += 1
    return m
