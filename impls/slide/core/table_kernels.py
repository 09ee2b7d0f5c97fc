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


@njit(cache=True)
def bucket_into(t, b, offsets, items, slot_of, moved, dhead, dnext, dcode, ditem, capacity, out):
    """Write into ``out`` the neurons bucket ``b`` of table ``t`` holds now and return how many.

    Those are the delta's entries for ``b`` (most recently moved first), then the base CSR's items of
    ``b`` whose code in table ``t`` has not moved since the base build (``slot_of[j] < 0``, or
    the row's current code ``moved[t, slot_of[j]]`` is ``b`` again), at most ``capacity`` in
    all. Each neuron appears at most once.
    """
    n = 0
    e = dhead[t, b & (dhead.shape[1] - 1)]
    while e >= 0 and n < capacity:
        if dcode[t, e] == b:
            out[n] = ditem[t, e]
            n += 1
        e = dnext[t, e]
    for q in range(offsets[t, b], offsets[t, b + 1]):
        if n >= capacity:
            break
        j = items[t, q]
        s = slot_of[j]
        if s < 0 or moved[t, s] == b:
            out[n] = j
            n += 1
    return n


@njit(cache=True)
def retrieve_union(codes, offsets, items, slot_of, moved, dhead, dnext, dcode, ditem, capacity, stamp):
    """Sorted union (int32) of the buckets ``codes[t]`` of every table ``t`` (see ``bucket_into``).
    ``stamp`` (n_items,) uint8 must be 0 on entry and is left 0."""
    L = codes.shape[0]
    buf = np.empty(capacity, np.int32)
    got = np.empty(L * capacity, np.int32)
    n = 0
    for t in range(L):
        k = bucket_into(t, codes[t], offsets, items, slot_of, moved, dhead, dnext, dcode, ditem, capacity, buf)
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
def move_rows(rows, new_codes, codes, slot_of, n_slots, moved, dentry, dhead, dnext, dcode, ditem, dcount, dfree):
    """Re-bucket neurons ``rows`` (distinct) to ``new_codes`` (L, len(rows)) without a rebuild.

    A row first moved since the base build gets a slot (``slot_of``; ``moved[:, s]`` starts as
    its base codes ``codes[:, j]``). Per table: an unchanged code does nothing; a changed one
    unlinks the row's live delta entry (``dentry[t, s]``) from its chain and, unless the new
    code is the base code again (whose CSR entry then counts again; the entry goes to the
    table's free list ``dfree[t]``), links it, or a new entry, at the head of the new code's
    chain. So a table holds at most one live entry per moved row, and ``dcount[t]`` (entries
    ever used) never exceeds the slots in use. The caller guarantees room:
    ``n_slots[0] + len(rows) <= moved.shape[1]``.
    """
    L = codes.shape[0]
    r = rows.shape[0]
    first = np.zeros(r, np.bool_)
    for k in range(r):
        j = rows[k]
        if slot_of[j] < 0:
            slot_of[j] = n_slots[0]
            n_slots[0] += 1
            first[k] = True
    mask = dhead.shape[1] - 1
    for t in prange(L):
        for k in range(r):
            j = rows[k]
            s = slot_of[j]
            if first[k]:
                moved[t, s] = codes[t, j]
                dentry[t, s] = -1
            c = new_codes[t, k]
            if c == moved[t, s]:
                continue
            moved[t, s] = c
            e = dentry[t, s]
            if e >= 0:  # unlink from the old code's chain (chains are short: about one entry per head)
                h = dcode[t, e] & mask
                if dhead[t, h] == e:
                    dhead[t, h] = dnext[t, e]
                else:
                    q = dhead[t, h]
                    while dnext[t, q] != e:
                        q = dnext[t, q]
                    dnext[t, q] = dnext[t, e]
            if c == codes[t, j]:
                if e >= 0:
                    dnext[t, e] = dfree[t]
                    dfree[t] = e
                dentry[t, s] = -1
                continue
            if e < 0:
                e = dfree[t]
                if e >= 0:
                    dfree[t] = dnext[t, e]
                else:
                    e = dcount[t]
                    dcount[t] = e + 1
            dcode[t, e] = c
            ditem[t, e] = j
            dnext[t, e] = dhead[t, c & mask]
            dhead[t, c & mask] = e
            dentry[t, s] = e


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
