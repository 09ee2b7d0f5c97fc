"""Numba kernels for the synthetic XC generator (see xc_data). Counter-based RNG per point,
so the output depends only on the seed and the point's index, never on the thread count
or on how the points are split into chunks."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from impls.harness.kernel_cache import drop_stale
from impls.slide.core.rng import mix64, uniform

# numba's cache does not see edits to the kernels called from here: drop it when they change
drop_stale(__file__, ["impls.slide.core.rng"])

SALT_LABEL_WORD = np.uint64(0x5851F42D4C957F2D)
SALT_TOPIC_WORD = np.uint64(0x14057B7EF767814F)


@njit(cache=True, inline="always")
def _hash_unit(a, b, salt):
    """A uniform in [0, 1) fixed by (a, b, salt)."""
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
def _draw(cdf, u):
    """Index drawn from the (unnormalised, increasing) ``cdf`` by the uniform ``u``."""
    return min(_search(cdf, 0, cdf.shape[0], u * cdf[-1]), cdf.shape[0] - 1)


@njit(cache=True, inline="always")
def _lognormal_count(state, mean, sigma, lo, hi):
    """An integer in [lo, hi] around a log-normal draw with expectation ``mean``."""
    state, u1 = uniform(state)
    state, u2 = uniform(state)
    z = np.sqrt(-2.0 * np.log(max(u1, 1e-300))) * np.cos(2.0 * np.pi * u2)
    x = np.exp(np.log(mean) - 0.5 * sigma * sigma + sigma * z)
    state, u3 = uniform(state)
    k = int(x + u3)  # randomised rounding keeps the mean
    return max(lo, min(k, hi)), state


@njit(cache=True, parallel=True)
def generate_points(seed, first_point, n_points, label_cdf, topic_of, topic_ptr, topic_labels,
                    topic_cdf, word_cdf, content_cdf, feature_of_rank,
                    labels_per_point, labels_sigma, nnz_per_point, nnz_sigma,
                    p_same_topic, words_per_label, topic_pool, frac_label, frac_topic,
                    out_labels, out_nlab, out_feat, out_tf, out_nnz):
    """Generate points [first_point, first_point + n_points) into fixed-width rows.

    Labels: a target count (log-normal, mean ``labels_per_point``, at least 1); the first
    label by global popularity (``label_cdf``), each further one with probability
    ``p_same_topic`` from the first label's topic (by popularity within it), else globally.
    Features: a target number of distinct features (log-normal, mean ``nnz_per_point``);
    word tokens are drawn until the point has that many distinct ones: with probability
    ``frac_label`` one of a label's ``words_per_label`` words, ``frac_topic`` one of its
    topic's ``topic_pool`` words, else a background word from the Zipf ``word_cdf``. A label's
    and a topic's words are fixed draws from ``content_cdf`` (over popularity ranks, mapped
    to feature ids by ``feature_of_rank``). Writes labels, term counts (``out_tf``, sorted by
    feature) and the row lengths.
    """
    max_labels = out_labels.shape[1]
    max_nnz = out_feat.shape[1]
    table_size = 1
    while table_size < 2 * max_nnz:
        table_size *= 2
    mask = table_size - 1
    for i in prange(n_points):
        state = mix64(np.uint64(seed) * np.uint64(0x100000001B3) + np.uint64(first_point + i) + np.uint64(1))
        k, state = _lognormal_count(state, labels_per_point, labels_sigma, 1, max_labels)
        state, u = uniform(state)
        first = _draw(label_cdf, u)
        topic = topic_of[first]
        out_labels[i, 0] = first
        nl = 1
        tries = 0
        while nl < k and tries < 16 * k:
            tries += 1
            state, u = uniform(state)
            state, v = uniform(state)
            if u < p_same_topic:
                lo = topic_ptr[topic]
                hi = topic_ptr[topic + 1]
                base = topic_cdf[lo - 1] if lo > 0 else 0.0
                j = min(_search(topic_cdf, lo, hi, base + v * (topic_cdf[hi - 1] - base)), hi - 1)
                lab = topic_labels[j]
            else:
                lab = _draw(label_cdf, v)
            dup = False
            for q in range(nl):
                if out_labels[i, q] == lab:
                    dup = True
                    break
            if not dup:
                out_labels[i, nl] = lab
                nl += 1
        out_nlab[i] = nl
        # features: tokens until m distinct, counted in an open-addressing table
        m, state = _lognormal_count(state, nnz_per_point, nnz_sigma, 1, max_nnz)
        keys = np.full(table_size, -1, np.int32)
        counts = np.zeros(table_size, np.float32)
        distinct = 0
        tokens = 0
        while distinct < m and tokens < 64 * m:
            tokens += 1
            state, u = uniform(state)
            state, r = uniform(state)
            if u < frac_label:
                state, w = uniform(state)
                lab = out_labels[i, min(int(w * nl), nl - 1)]
                slot = min(int(r * words_per_label), words_per_label - 1)
                rank = _draw(content_cdf, _hash_unit(lab, slot, SALT_LABEL_WORD))
            elif u < frac_label + frac_topic:
                slot = min(int(r * topic_pool), topic_pool - 1)
                rank = _draw(content_cdf, _hash_unit(topic, slot, SALT_TOPIC_WORD))
            else:
                rank = _draw(word_cdf, r)
            f = feature_of_rank[rank]
            h = (np.uint64(f) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
            pos = int(h) & mask
            while keys[pos] != -1 and keys[pos] != f:
                pos = (pos + 1) & mask
            if keys[pos] == -1:
                keys[pos] = f
                distinct += 1
            counts[pos] += 1.0
        w_ = 0
        for pos in range(table_size):
            if keys[pos] != -1:
                out_feat[i, w_] = keys[pos]
                out_tf[i, w_] = counts[pos]
                w_ += 1
        # sort the row by feature id (insertion sort; rows are ~100-300 long)
        for a in range(1, w_):
            fa = out_feat[i, a]
            va = out_tf[i, a]
            b = a - 1
            while b >= 0 and out_feat[i, b] > fa:
                out_feat[i, b + 1] = out_feat[i, b]
                out_tf[i, b + 1] = out_tf[i, b]
                b -= 1
            out_feat[i, b + 1] = fa
            out_tf[i, b + 1] = va
        out_nnz[i] = w_


@njit(cache=True, parallel=True)
def tfidf_rows(indptr, indices, tf, idf, out):
    """``out[j] = tf[j] * idf[indices[j]]``, each row then scaled to unit L2 norm."""
    for i in prange(indptr.shape[0] - 1):
        norm = 0.0
        for j in range(indptr[i], indptr[i + 1]):
            v = tf[j] * idf[indices[j]]
            out[j] = v
            norm += v * v
        if norm > 0.0:
            s = 1.0 / np.sqrt(norm)
            for j in range(indptr[i], indptr[i + 1]):
                out[j] = out[j] * s


@njit(cache=True)
def compact_rows(rows, counts, out_ptr, out):
    """Pack the first counts[i] entries of each row of ``rows`` into CSR (``out_ptr`` given)."""
    for i in range(rows.shape[0]):
        base = out_ptr[i]
        for j in range(counts[i]):
            out[base + j] = rows[i, j]
