"""Numba kernels for the synthetic XC generator (see xc_data). Counter-based RNG per point,
so the output depends only on the seed, never on the thread count."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from impls.slide._rng import mix64, uniform


@njit(cache=True, inline="always")
def _hash_feature(a, b, salt, n_features):
    return np.int32(mix64(np.uint64(a) * np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(b) ^ salt)
                    % np.uint64(n_features))


@njit(cache=True, inline="always")
def _hash_unit(a, b, salt):
    return (mix64(np.uint64(a) * np.uint64(0xD6E8FEB86659FD93) ^ np.uint64(b) ^ salt) >> np.uint64(11)) \
        * (1.0 / 9007199254740992.0)


@njit(cache=True, inline="always")
def _search(cdf, lo, hi, u):
    """Smallest index i in [lo, hi) with cdf[i] > u (cdf increasing)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if cdf[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always")
def _poisson(state, lam):
    # Knuth for small means, normal approximation above 30
    if lam <= 0.0:
        return 0, state
    if lam > 30.0:
        state, u1 = uniform(state)
        state, u2 = uniform(state)
        z = np.sqrt(-2.0 * np.log(max(u1, 1e-300))) * np.cos(2.0 * np.pi * u2)
        k = int(lam + np.sqrt(lam) * z + 0.5)
        return max(k, 0), state
    limit = np.exp(-lam)
    k = 0
    p = 1.0
    while True:
        state, u = uniform(state)
        p *= u
        if p <= limit:
            return k, state
        k += 1


@njit(cache=True, parallel=True)
def generate_points(seed, first_point, n_points, n_features, label_cdf, topic_of, topic_ptr,
                    topic_labels, topic_cdf, labels_per_point, max_labels, nnz_per_point, max_nnz,
                    p_same_topic, topic_pool, prototype_size, frac_label, frac_topic,
                    out_labels, out_nlab, out_feat, out_val, out_nnz):
    """Generate points [first_point, first_point + n_points) into fixed-width row buffers."""
    salt_f = np.uint64(0x5851F42D4C957F2D)
    salt_t = np.uint64(0x14057B7EF767814F)
    salt_w = np.uint64(0x2545F4914F6CDD1D)
    for i in prange(n_points):
        state = mix64(np.uint64(seed) * np.uint64(0x100000001B3) + np.uint64(first_point + i) + np.uint64(1))
        # labels
        extra, state = _poisson(state, labels_per_point - 1.0)
        k = min(1 + extra, max_labels)
        state, u = uniform(state)
        first = min(_search(label_cdf, 0, label_cdf.shape[0], u * label_cdf[-1]), label_cdf.shape[0] - 1)
        topic = topic_of[first]
        out_labels[i, 0] = first
        nl = 1
        tries = 0
        while nl < k and tries < 8 * k:
            tries += 1
            state, u = uniform(state)
            state, v = uniform(state)
            if u < p_same_topic:
                lo = topic_ptr[topic]
                hi = topic_ptr[topic + 1]
                base = topic_cdf[lo - 1] if lo > 0 else 0.0
                lab = topic_labels[min(_search(topic_cdf, lo, hi, base + v * (topic_cdf[hi - 1] - base)), hi - 1)]
            else:
                lab = min(_search(label_cdf, 0, label_cdf.shape[0], v * label_cdf[-1]), label_cdf.shape[0] - 1)
            dup = False
            for q in range(nl):
                if out_labels[i, q] == lab:
                    dup = True
                    break
            if not dup:
                out_labels[i, nl] = lab
                nl += 1
        out_nlab[i] = nl
        # features: label prototypes, topic pool, uniform noise
        m, state = _poisson(state, nnz_per_point)
        m = max(4, min(m, max_nnz))
        for j in range(m):
            state, u = uniform(state)
            state, r = uniform(state)
            if u < frac_label:
                state, w = uniform(state)
                lab = out_labels[i, min(int(w * nl), nl - 1)]
                slot = min(int(r * prototype_size), prototype_size - 1)
                f = _hash_feature(lab, slot, salt_f, n_features)
                val = 0.5 + _hash_unit(lab, slot, salt_w)
            elif u < frac_label + frac_topic:
                slot = min(int(r * topic_pool), topic_pool - 1)
                f = _hash_feature(topic, slot, salt_t, n_features)
                val = 0.25 + 0.5 * _hash_unit(topic, slot, salt_w ^ salt_t)
            else:
                f = np.int32(min(int(r * n_features), n_features - 1))
                state, w = uniform(state)
                val = 0.1 + 0.3 * w
            out_feat[i, j] = f
            out_val[i, j] = val
        # sort by feature (insertion sort, m ~ 100), merge duplicates, L2-normalise
        for a in range(1, m):
            fa = out_feat[i, a]
            va = out_val[i, a]
            b = a - 1
            while b >= 0 and out_feat[i, b] > fa:
                out_feat[i, b + 1] = out_feat[i, b]
                out_val[i, b + 1] = out_val[i, b]
                b -= 1
            out_feat[i, b + 1] = fa
            out_val[i, b + 1] = va
        w_ = 0
        for a in range(m):
            if w_ > 0 and out_feat[i, w_ - 1] == out_feat[i, a]:
                out_val[i, w_ - 1] += out_val[i, a]
            else:
                out_feat[i, w_] = out_feat[i, a]
                out_val[i, w_] = out_val[i, a]
                w_ += 1
        norm = 0.0
        for a in range(w_):
            norm += out_val[i, a] * out_val[i, a]
        norm = 1.0 / np.sqrt(norm)
        for a in range(w_):
            out_val[i, a] = out_val[i, a] * norm
        out_nnz[i] = w_


@njit(cache=True)
def compact_rows(rows, counts, out_ptr, out):
    """Pack the first counts[i] entries of each row of ``rows`` into CSR (``out_ptr`` given)."""
    for i in range(rows.shape[0]):
        base = out_ptr[i]
        for j in range(counts[i]):
            out[base + j] = rows[i, j]
