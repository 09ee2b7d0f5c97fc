"""Numba kernels of the retrieval-recall measurement (see retrieval): each evaluation point's
best-scoring wrong labels, and how many of them the union of its L buckets holds, for all
points in one call."""
from __future__ import annotations

import numpy as np
from numba import njit

from impls.harness.kernel_cache import drop_stale
from impls.slide.core.table_kernels import retrieve_union

# numba's cache does not see edits to the kernels called from here: drop it when they change
drop_stale(__file__, ["impls.slide.core.table_kernels"])


@njit(cache=True)
def wrong_top_into(ranked, truth, k, out):
    """Write into ``out`` (length >= ``ranked.size``) the entries ``j`` of ``ranked`` with
    ``j >= 0`` that equal no entry of ``truth``, in rank order, and return how many of them
    a Python slice ``[:k]`` keeps: at most ``k`` for ``k >= 0``, all but the last ``-k`` for
    ``k < 0``. Repeated entries of ``ranked`` are kept each time."""
    limit = k if k >= 0 else ranked.shape[0]
    n = 0
    for q in range(ranked.shape[0]):
        if n >= limit:
            break
        j = ranked[q]
        if j < 0:
            continue
        known = False
        for t in range(truth.shape[0]):
            if truth[t] == j:
                known = True
                break
        if not known:
            out[n] = j
            n += 1
    if k < 0:
        n = max(n + k, 0)
    return n


@njit(cache=True)
def _holds(sorted_ids, j):
    """Whether ascending ``sorted_ids`` holds ``j`` (binary search)."""
    lo = 0
    hi = sorted_ids.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_ids[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo < sorted_ids.shape[0] and sorted_ids[lo] == j


@njit(cache=True)
def recall_counts(ranked, rows, label_indptr, labels, k, codes, offsets, items, slot_of, moved, dhead, dnext,
                  slot_row, capacity, stamp, wrong, sizes, trial_label, trial_found):
    """For each point ``i`` (row ``rows[i]`` of the label CSR ``label_indptr`` / ``labels``):
    ``wrong[i]`` = how many wrong labels ``wrong_top_into(ranked[i], its labels, k)`` keeps,
    ``trial_label[i, :wrong[i]]`` = those wrong labels and ``trial_found[i, :wrong[i]]`` = 1
    where the union of buckets ``codes[i]`` holds it, 0 where not (a label kept twice is two
    trials; both (n, >= ranked.shape[1]); entries past ``wrong[i]`` are left as given),
    ``sizes[i]`` = that union's size (neurons). The union is
    ``table_kernels.retrieve_union`` of the tables' arrays passed after ``codes``; ``stamp``
    (n_items,) uint8 must be 0 on entry and is left 0. ``rows`` must index the CSR."""
    buf = np.empty(ranked.shape[1], ranked.dtype)
    for i in range(rows.shape[0]):
        r = rows[i]
        truth = labels[label_indptr[r]:label_indptr[r + 1]]
        n = wrong_top_into(ranked[i], truth, k, buf)
        got = retrieve_union(codes[i], offsets, items, slot_of, moved, dhead, dnext, slot_row, capacity, stamp)
        for q in range(n):
            trial_label[i, q] = buf[q]
            trial_found[i, q] = 1 if _holds(got, buf[q]) else 0
        wrong[i] = n
        sizes[i] = got.shape[0]
