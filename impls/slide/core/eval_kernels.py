"""Numba kernels for exact top-k over dense score blocks (see evaluate)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _enter(hv, hi, v, label):
    """Put (``v``, ``label``) into the heap ``hv``/``hi`` (worst first, as :func:`merge_topk`
    keeps it) if it beats the worst entry; a later label loses a tie."""
    k = hv.shape[0]
    if not v > hv[0]:
        return
    p = 0
    while True:
        c = 2 * p + 1
        if c >= k:
            break
        if c + 1 < k and (hv[c + 1] < hv[c] or (hv[c + 1] == hv[c] and hi[c + 1] > hi[c])):
            c += 1         # the worse child
        if hv[c] < v:      # an equal score has a lower id than this later label: it stays above
            hv[p] = hv[c]
            hi[p] = hi[c]
            p = c
        else:
            break
    hv[p] = v
    hi[p] = label


@njit(cache=True, parallel=True)
def merge_topk(scores, offset, heap_v, heap_i):
    """Merge the columns of ``scores`` (labels ``offset + j``, offsets increasing from call
    to call) into each row's running top k, kept as a heap whose first entry is the worst
    (``heap_v``/``heap_i``: k columns, initialised to -inf / -1; :func:`sort_topk` orders
    them best first). A label beats another on a higher score, or on an equal score with a
    lower id. Each column costs O(1), and O(log k) when it enters: a row's cost does not grow
    with k squared however wide the list."""
    n, m = scores.shape
    for i in prange(n):
        row = scores[i]
        hv = heap_v[i]
        hi = heap_i[i]
        for j in range(m):
            if row[j] > hv[0]:     # later labels lose ties, so only a strictly higher score enters
                _enter(hv, hi, row[j], offset + j)


@njit(cache=True, parallel=True)
def sort_topk(heap_v, heap_i):
    """Order each row of the heaps :func:`merge_topk` left, best first (higher score, then
    lower id; the -inf / -1 fill last), in place."""
    for i in prange(heap_v.shape[0]):
        by_id = np.argsort(heap_i[i])
        order = by_id[np.argsort(-heap_v[i][by_id], kind="mergesort")]
        heap_v[i] = heap_v[i][order]
        heap_i[i] = heap_i[i][order]


@njit(cache=True, parallel=True)
def merge_topk_wrong(scores, offset, top_v, top_i, wrong_v, wrong_i, truth_indptr, truth):
    """:func:`merge_topk` of ``scores`` (labels ``offset + j``) into two heaps a row: ``top``
    over every label, ``wrong`` over the labels that are not row ``i``'s own (its labels
    ``truth[truth_indptr[i]:truth_indptr[i + 1]]``, ascending). One pass over the block; the
    heaps stay as wide as asked however many labels a row has (its own labels in the block's
    range cost a step each)."""
    n, m = scores.shape
    for i in prange(n):
        row = scores[i]
        tv, ti, wv, wi = top_v[i], top_i[i], wrong_v[i], wrong_i[i]
        p, end = truth_indptr[i], truth_indptr[i + 1]
        p += np.searchsorted(truth[p:end], offset)    # its first label in this block's range
        gate = min(tv[0], wv[0])           # below both heaps' worst: enters neither
        for j in range(m):
            v = row[j]
            if not v > gate:
                continue
            label = offset + j
            _enter(tv, ti, v, label)
            while p < end and truth[p] < label:
                p += 1
            if not (p < end and truth[p] == label):
                _enter(wv, wi, v, label)
            gate = min(tv[0], wv[0])


@njit(cache=True)
def topk_hits(pred, rows, label_indptr, labels, first):
    """For each row ``i`` of predictions ``pred`` (n, >= 1; -1: none), the point ``rows[i]`` of
    the label CSR: ``first[i]`` = whether ``pred[i, 0]`` is one of its labels; returns P@5's
    sum, the rows' hits among ``pred[i, :5]`` over 5 added in row order."""
    p5 = 0.0
    width = min(5, pred.shape[1])
    for i in range(rows.shape[0]):
        a, b = label_indptr[rows[i]], label_indptr[rows[i] + 1]
        hits = 0
        first[i] = False
        for q in range(width):
            j = pred[i, q]
            if j < 0:
                continue
            for t in range(a, b):
                if labels[t] == j:
                    hits += 1
                    if q == 0:
                        first[i] = True
                    break
        p5 += hits / 5
    return p5
