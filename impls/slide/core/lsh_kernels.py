"""Numba kernels for the LSH families (see lsh). One code path for all three families:

``idx[h, :]`` are the coordinates hash function ``h`` reads (SimHash: the non-zeros of
its sparse ±1 projection, with signs ``sgn[h, :]``; WTA/DWTA: the ``binsize``
coordinates of its bin). Table ``t`` combines hash functions ``t*K .. t*K+K-1`` into
``sum_k h_k << ((K-1-k) * shift)`` (Horner: ``raw = (raw << shift) + h``): with ``shift``
equal to a hash's bit width that is their concatenation; a smaller ``shift`` overlaps them as
the reference code's ``hashesToIndex`` does. A raw code wider than ``range_pow`` bits
(``raw_bits`` is the width of the largest) is folded.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

SIMHASH, WTA, DWTA = 0, 1, 2
MAX_DENSIFY_ATTEMPTS = 100


@njit(cache=True, inline="always")
def _fold(raw, raw_bits, range_pow):
    if raw_bits <= range_pow:
        return np.int32(raw)
    # Fibonacci hashing: the top range_pow bits of raw * golden ratio (mod 2^64)
    z = np.uint64(raw) * np.uint64(0x9E3779B97F4A7C15)
    return np.int32(z >> np.uint64(64 - range_pow))


@njit(cache=True, inline="always")
def _rank_key(v, absent, low_mask):
    """Order-preserving int32 key of float32 ``v`` with the low bits cleared (they carry the
    position inside the bin, so one integer max gives the argmax, ties to the lowest position)."""
    if absent:
        return np.int32(-2147483648) & ~low_mask
    b = np.float32(v).view(np.int32)
    if b < 0:
        b = b ^ np.int32(0x7FFFFFFF)
    return b & ~low_mask


@njit(cache=True, inline="always")
def _densify_probe(h, attempt, n_hashes):
    z = np.uint64(h) * np.uint64(0xBF58476D1CE4E5B9) + np.uint64(attempt) * np.uint64(0x94D049BB133111EB)
    z = (z ^ (z >> np.uint64(31))) * np.uint64(0xD6E8FEB86659FD93)
    return np.int64((z ^ (z >> np.uint64(29))) % np.uint64(n_hashes))


@njit(cache=True, fastmath=True)
def hash_dense(x, family, idx, proj, K, L, shift, raw_bits, range_pow, scratch, xs, codes):
    """Write the L bucket codes of dense vector ``x`` into ``codes``.

    SimHash uses ``proj``, the projections as a dense (K*L, dim) matrix (a vectorised
    mat-vec); WTA/DWTA use ``idx`` (K*L, binsize), one bin per hash, with the running max
    computed as one integer max over order-preserving keys (see ``_rank_key``). ``scratch``
    (K*L int32) and ``xs`` (dim int32) are per-thread working space (no allocation). For DWTA, zero coordinates are "absent": a
    bin with no non-zero entry is empty and borrows the value of another bin chosen by a
    fixed probe sequence (densification).
    """
    n_hashes = K * L
    empty = 0
    if family == SIMHASH:
        dim = x.shape[0]
        for h in range(n_hashes):
            ph = proj[h]
            s = np.float32(0.0)
            for d in range(dim):
                s += ph[d] * x[d]
            scratch[h] = 1 if s >= 0.0 else 0
    else:
        m = idx.shape[1]
        low = np.int32(m - 1)
        dw = family == DWTA
        empty_key = np.int32(-2147483648) & ~low
        for d in range(x.shape[0]):
            xs[d] = _rank_key(x[d], dw and x[d] == 0.0, low)
        for h in range(n_hashes):
            ih = idx[h]
            mx = xs[ih[0]] | low
            for j in range(1, m):
                mx = max(mx, xs[ih[j]] | np.int32(m - 1 - j))
            if dw and (mx & ~low) == empty_key:
                scratch[h] = -1
                empty += 1
            else:
                scratch[h] = m - 1 - (mx & low)
    if empty > 0:
        for h in range(n_hashes):
            if scratch[h] != -1:
                continue
            val = 0
            for attempt in range(1, MAX_DENSIFY_ATTEMPTS + 1):
                b = scratch[_densify_probe(h, attempt, n_hashes)]
                if b >= 0:
                    val = b
                    break
            scratch[h] = -2 - val  # stays negative ("empty") while the others probe
        for h in range(n_hashes):
            if scratch[h] < 0:
                scratch[h] = -2 - scratch[h]
    for t in range(L):
        raw = np.int64(0)
        for k in range(K):
            raw = (raw << shift) + scratch[t * K + k]
        codes[t] = _fold(raw, raw_bits, range_pow)


BLOCK = 64


@njit(cache=True, fastmath=True)
def _hash_block(XT, KT, nb, family, idx, sgn, K, L, shift, raw_bits, range_pow, hv, codes, cols):
    """Hash ``nb`` vectors held transposed in XT[:, :nb] (SimHash) or as rank keys in KT (WTA,
    DWTA), SIMD across vectors (no branches); vector ``r``'s codes go to ``codes[:, cols[r]]``."""
    n_hashes = K * L
    m = idx.shape[1]
    tmp = np.empty(BLOCK, np.float32)  # fresh arrays: LLVM knows they alias nothing (vectorises)
    mx = np.empty(BLOCK, np.int32)
    for h in range(n_hashes):
        if family == SIMHASH:
            for r in range(BLOCK):
                tmp[r] = 0.0
            for j in range(m):
                s = sgn[h, j]
                col = XT[idx[h, j]]
                for r in range(BLOCK):
                    tmp[r] += s * col[r]
            for r in range(nb):
                hv[h, r] = 1 if tmp[r] >= 0.0 else 0
        else:
            low = np.int32(m - 1)
            empty_key = np.int32(-2147483648) & ~low
            r0 = KT[idx[h, 0]]
            for r in range(BLOCK):
                mx[r] = r0[r] | low
            for j in range(1, m):
                row = KT[idx[h, j]]
                tag = np.int32(m - 1 - j)
                for r in range(BLOCK):
                    mx[r] = max(mx[r], row[r] | tag)
            for r in range(nb):
                v = mx[r]
                hv[h, r] = -1 if (family == DWTA and (v & ~low) == empty_key) else m - 1 - (v & low)
    if family == DWTA:  # densification: rare for dense weight rows, so count first
        n_empty = 0
        for h in range(n_hashes):
            row = hv[h]
            for r in range(nb):
                n_empty += row[r] == -1
        if n_empty > 0:
            for r in range(nb):
                for h in range(n_hashes):
                    if hv[h, r] != -1:
                        continue
                    val = 0
                    for attempt in range(1, MAX_DENSIFY_ATTEMPTS + 1):
                        b = hv[_densify_probe(h, attempt, n_hashes), r]
                        if b >= 0:
                            val = b
                            break
                    hv[h, r] = -2 - val
                for h in range(n_hashes):
                    if hv[h, r] < 0:
                        hv[h, r] = -2 - hv[h, r]
    raw = np.empty(BLOCK, np.int64)
    for t in range(L):  # codes, vectorised across the block's vectors
        for r in range(BLOCK):
            raw[r] = 0
        for k in range(K):
            row = hv[t * K + k]
            for r in range(BLOCK):
                raw[r] = (raw[r] << shift) + row[r]
        out = codes[t]
        for r in range(nb):
            out[cols[r]] = _fold(raw[r], raw_bits, range_pow)


@njit(cache=True, parallel=True, fastmath=True)
def hash_rows(X, rows, family, idx, sgn, K, L, shift, raw_bits, range_pow, n_chunks, codes):
    """codes[:, i] = the L codes of X[i], for every row ``i`` in ``rows`` (table-major output, so
    that each table's build reads its codes sequentially); blocks of 64 rows, SIMD across rows.
    Reads the rows in place: no gathered copy of ``X[rows]``."""
    n = rows.shape[0]
    dim = X.shape[1]
    n_blocks = (n + BLOCK - 1) // BLOCK
    n_chunks = min(n_chunks, n_blocks)
    for c in prange(n_chunks):
        XT = np.zeros((dim, BLOCK), np.float32)
        KT = np.zeros((dim, BLOCK), np.int32)
        hv = np.zeros((K * L, BLOCK), np.int32)
        low = np.int32(idx.shape[1] - 1)
        for b in range(n_blocks * c // n_chunks, n_blocks * (c + 1) // n_chunks):
            r0 = b * BLOCK
            nb = min(BLOCK, n - r0)
            cols = rows[r0:r0 + nb]
            for r in range(nb):
                x = X[cols[r]]
                for d in range(dim):
                    v = x[d]
                    if family == SIMHASH:
                        XT[d, r] = v
                    else:
                        KT[d, r] = _rank_key(v, family == DWTA and v == 0.0, low)
            _hash_block(XT, KT, nb, family, idx, sgn, K, L, shift, raw_bits, range_pow, hv, codes, cols)
