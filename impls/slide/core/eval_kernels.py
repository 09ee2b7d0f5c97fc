"""Numba kernel for exact top-k over dense score blocks (see evaluate)."""
from __future__ import annotations

from numba import njit, prange


@njit(cache=True, parallel=True)
def merge_topk(scores, offset, best_v, best_i):
    """Merge the columns of ``scores`` (labels ``offset + j``) into the running top-k lists
    ``best_v``/``best_i`` (k columns, best first, initialised to -inf / -1). Ties keep the
    lower label id first."""
    n, m = scores.shape
    k = best_v.shape[1]
    for i in prange(n):
        row = scores[i]
        bv = best_v[i]
        bi = best_i[i]
        for j in range(m):
            v = row[j]
            if v > bv[k - 1]:
                p = k - 1
                while p > 0 and v > bv[p - 1]:
                    bv[p] = bv[p - 1]
                    bi[p] = bi[p - 1]
                    p -= 1
                bv[p] = v
                bi[p] = offset + j
