"""Numba kernels of one SLIDE training step (see network for the order they run in).

Longer than 400 lines: the forward, backward and Adam kernels of one training step share
inlined helpers, which numba inlines only from the same module.

- ``forward_own``: HOGWILD over the batch's samples (``prange`` over work chunks, each with
  its own scratch): hidden layer, LSH query, the sample's own active neurons.
- ``list_rows`` / ``gather_features``: list the touched output rows (in row order) and
  input features and, for each, the (sample, position) pairs of its gradient.
- ``own_logits``: in parallel over touched output rows, each row's logits for the samples
  that have it: a row shared by many samples is read from memory once, not once a sample.
- (network: the batch's shared pool of random padding neurons goes through dense GEMMs.)
- ``softmax_backward``: softmax over own + pool logits, d loss / d logit; ``by_pair`` lays
  the own pairs' d logits out in the order ``update_output_rows`` reads them.
- ``update_output_rows`` / ``update_input_rows``: in parallel over touched rows, sum the
  row's gradient and apply Adam to it (lazy), or to every row (dense); the output rows
  also give, before their step, their share of d loss / d h (per part of the rows, as many
  parts as ``dh_parts`` gives the batch, summed in part order by ``add_partials``). No two
  threads write the same row, so the update is exact and the step does not depend on the
  thread count.
Shared weights are only read until the update.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from impls.harness.kernel_cache import drop_stale
from impls.slide.core.lsh_kernels import hash_dense
from impls.slide.core.rng import below, stream
from impls.slide.core.table_kernels import bucket_into

# numba's cache does not see edits to the kernels called from here: drop it when they change
drop_stale(__file__, ["impls.slide.core.lsh_kernels", "impls.slide.core.rng", "impls.slide.core.table_kernels"])

UNION, TOPK, THRESHOLD, ALL = 0, 1, 2, 3
# update_output_rows' parts (dh_parts): d loss / d h is summed per part, so their number, not
# the thread count, fixes its rounding. At most 128: 44 threads (the paper's cores) then get
# within 3% of an even share (3 parts against 128/44). Each part's buffer (batch x hidden) is
# zeroed and summed once a step, so a part also covers at least 32 pairs a sample: that work
# stays within 1/32 of the pairs' own, on small label sets and wide hidden layers too
DH_PARTS = 128
PAIRS_PER_PART_SAMPLE = 32


def dh_parts(work: int, batch: int) -> int:
    """How many parts ``update_output_rows`` splits the rows into for a batch of ``batch``
    samples whose update has ``work`` items (its (sample, own neuron) pairs; the caller
    counts every row under dense Adam, which steps them all): 1 to ``DH_PARTS``, set by the
    batch alone."""
    return min(DH_PARTS, max(1, work // (PAIRS_PER_PART_SAMPLE * max(batch, 1))))


@njit(cache=True, fastmath=True, inline="always")
def _hidden(row, Xp, Xi, Xv, W1, b1, h):
    H = h.shape[0]
    for d in range(H):
        h[d] = b1[d]
    for q in range(Xp[row], Xp[row + 1]):
        f = Xi[q]
        v = Xv[q]
        for d in range(H):
            h[d] += v * W1[f, d]
    for d in range(H):
        if h[d] < 0.0:
            h[d] = 0.0


@njit(cache=True)
def _select_by_frequency(cand, nc, freq, keep_k, min_count, L, act, n, max_active, tag, stamp):
    """Append to act[n:] the candidates with freq >= max(min_count, the keep_k-th largest)."""
    hist = np.zeros(L + 2, np.int64)
    for q in range(nc):
        hist[min(freq[cand[q]], L + 1)] += 1
    cut = L + 1
    total = 0
    while cut > 1 and total + hist[cut] < keep_k:
        total += hist[cut]
        cut -= 1
    cut = max(cut, min_count)
    total = 0
    for f in range(cut + 1, L + 2):
        total += hist[f]
    room = keep_k - total  # how many with freq == cut may still enter
    for q in range(nc):
        j = cand[q]
        f = freq[j]
        if n >= max_active:
            break
        if stamp[j] == tag:
            continue
        if f > cut or (f == cut and room > 0):
            if f == cut:
                room -= 1
            stamp[j] = tag
            act[n] = j
            n += 1
    return n


@njit(cache=True, parallel=True, fastmath=True)
def forward_own(rows, Xp, Xi, Xv, Yp, Yl, W1, b1, n_labels,
                family, idx, proj, K, L, shift, raw_bits, range_pow,
                offsets, items, slot_of, moved, dhead, dnext, slot_row, capacity,
                mode, topk, threshold, min_active, max_active, in_pool, pad_per_sample, seed, step,
                n_chunks, stamp, freq, hscratch, codes, cand, tags,
                H, act, n_act, n_true, masked, n_masked):
    """Per sample (HOGWILD over the batch): hidden layer ``H[i]``, LSH query, and the sample's
    own active neurons ``act[i, :n_act[i]]`` (true labels first, ``n_true[i]`` of them, then
    retrieved ones, then per-sample random padding when ``pad_per_sample``), each once. Their
    logits are :func:`own_logits`'s. The tables are read through ``table_kernels.bucket_into``
    (their CSR and the delta of neurons moved since). ``masked[i, :n_masked[i]]`` lists the
    positions in the batch's shared pool of neurons that are already the sample's own
    (``in_pool[j]``: pool position of neuron j or -1), so that they are not counted twice."""
    B = rows.shape[0]
    Hd = H.shape[1]
    for c in prange(n_chunks):
        st = stamp[c]
        fr = freq[c]
        hs = hscratch[c]
        xs = np.empty(Hd, np.int32)
        cd = codes[c]
        cn = cand[c]
        bk = np.empty(capacity, np.int32)
        for i in range(B * c // n_chunks, B * (c + 1) // n_chunks):
            row = rows[i]
            h = H[i]
            _hidden(row, Xp, Xi, Xv, W1, b1, h)
            tags[c] += 1
            if tags[c] >= 2147483000:  # wrap: clear the stamps
                st[:] = 0
                tags[c] = 1
            tag = tags[c]
            a = act[i]
            n = 0
            for q in range(Yp[row], Yp[row + 1]):  # true labels first, always active
                j = Yl[q]
                if st[j] != tag and n < max_active:
                    st[j] = tag
                    a[n] = j
                    n += 1
            nt = n
            if mode != ALL:
                hash_dense(h, family, idx, proj, K, L, shift, raw_bits, range_pow, hs, xs, cd)
                if mode == UNION:
                    for t in range(L):
                        nb = bucket_into(t, cd[t], offsets, items, slot_of, moved, dhead, dnext, slot_row,
                                         capacity, bk)
                        for q in range(nb):
                            j = bk[q]
                            if st[j] != tag:
                                st[j] = tag
                                a[n] = j
                                n += 1
                                if n >= max_active:
                                    break
                        if n >= max_active:
                            break
                else:
                    nc = 0
                    for t in range(L):
                        nb = bucket_into(t, cd[t], offsets, items, slot_of, moved, dhead, dnext, slot_row,
                                         capacity, bk)
                        for q in range(nb):
                            j = bk[q]
                            if fr[j] == 0:
                                cn[nc] = j
                                nc += 1
                            fr[j] += 1
                    if mode == TOPK:
                        n = _select_by_frequency(cn, nc, fr, topk, 1, L, a, n, max_active, tag, st)
                    else:
                        n = _select_by_frequency(cn, nc, fr, nc, threshold, L, a, n, max_active, tag, st)
                    for q in range(nc):
                        fr[cn[q]] = 0
                if pad_per_sample and n < min_active:
                    rs = stream(seed, step * B + i)
                    while n < min_active:
                        rs, j = below(rs, n_labels)
                        if st[j] != tag:
                            st[j] = tag
                            a[n] = j
                            n += 1
            n_act[i] = n
            n_true[i] = nt
            mk = masked[i]
            nm = 0
            for k in range(n):
                pos = in_pool[a[k]]
                if pos >= 0:
                    mk[nm] = pos
                    nm += 1
            n_masked[i] = nm


@njit(cache=True, parallel=True, fastmath=True)
def own_logits(m_rows, touched, starts, contrib, W2, b2, H, z, n_chunks):
    """The logit of every (sample, own neuron) pair, row by row: ``z[i, k] = b2[j] + W2[j]·H[i]``
    for each pair ``(i << 32) | k`` that :func:`list_rows` listed under row ``j``. Each
    touched row is read once, however many samples share it; each pair is written once."""
    Hd = W2.shape[1]
    for c in prange(n_chunks):
        for s in range(m_rows * c // n_chunks, m_rows * (c + 1) // n_chunks):
            j = touched[s]
            wj = W2[j]
            for q in range(starts[s], starts[s + 1]):
                e = contrib[q]
                i = e >> 32
                hi = H[i]
                acc = b2[j]
                for d in range(Hd):
                    acc += wj[d] * hi[d]
                z[i, e & 0xFFFFFFFF] = acc


@njit(cache=True, parallel=True, fastmath=True)
def softmax_backward(n_act, n_true, z, zp, masked, n_masked, loss, norm, n_chunks):
    """Per sample: softmax over its own logits ``z[i, :n]`` and the shared-pool logits ``zp[i]``
    (except the masked pool positions); cross-entropy against the uniform target over the
    true labels (mean over the batch); ``z``/``zp`` are overwritten by d loss / d logit
    (masked pool entries: 0). ``norm[i]``: the softmax's normaliser (sum of exp(logit - max)),
    not finite when a logit is not (a NaN or +inf logit makes it NaN). d loss / d h is
    :func:`update_output_rows`'s (own neurons) and a GEMM's (pool)."""
    B = z.shape[0]
    n_pool = zp.shape[1]
    inv_b = np.float32(1.0 / B)
    low = np.float32(-1.0e30)
    for c in prange(n_chunks):
        for i in range(B * c // n_chunks, B * (c + 1) // n_chunks):
            n = n_act[i]
            nt = n_true[i]
            zi = z[i]
            zpi = zp[i]
            mk = masked[i]
            for k in range(n_masked[i]):
                zpi[mk[k]] = low
            zmax = low
            for k in range(n):
                zmax = max(zmax, zi[k])
            for q in range(n_pool):
                zmax = max(zmax, zpi[q])
            tot = np.float32(0.0)
            for k in range(n):
                e = np.exp(zi[k] - zmax)
                zi[k] = e
                tot += e
            for q in range(n_pool):
                e = np.exp(zpi[q] - zmax)
                zpi[q] = e
                tot += e
            norm[i] = tot
            inv = np.float32(1.0) / tot
            tgt = np.float32(1.0) / max(nt, 1)
            lsum = np.float32(0.0)
            for k in range(n):
                p = zi[k] * inv
                if k < nt:
                    lsum -= tgt * np.log(max(p, np.float32(1e-30)))
                    zi[k] = (p - tgt) * inv_b
                else:
                    zi[k] = p * inv_b
            scale = inv * inv_b
            for q in range(n_pool):
                zpi[q] *= scale
            for k in range(n_masked[i]):
                zpi[mk[k]] = 0.0
            loss[i] = lsum


@njit(cache=True, fastmath=True)
def relu_backward(H, DH):
    for i in range(H.shape[0]):
        for d in range(H.shape[1]):
            if H[i, d] <= 0.0:
                DH[i, d] = 0.0


@njit(cache=True, parallel=True)
def list_rows(act, n_act, in_pool, slot, touched, cursor, starts, contrib, pool_of_slot, part_sizes):
    """List the batch's touched output rows in increasing row order, each with its
    (sample, position) pairs in sample order: a counting sort by row.

    Touched: a row in some sample's active set (``act[i, :n_act[i]]``) or in the shared pool
    (``in_pool[j]``: its pool position, -1 for the other rows). ``slot`` (n_rows,) must be -1
    on entry for every row; it is left holding the slot of each touched row
    (``update_output_rows`` resets it). Returns the number ``m`` of touched rows:
    ``touched[:m]`` are the rows (increasing), ``contrib[starts[s]:starts[s+1]]`` the pairs of
    slot ``s`` (encoded ``(sample << 32) | position``: shifts, not a division, to decode),
    ``pool_of_slot[s]`` its pool position or -1; ``cursor[s]`` ends at ``starts[s+1]``.
    Sizes: ``touched``, ``cursor``, ``pool_of_slot`` at least n_rows, ``starts`` n_rows + 1,
    ``contrib`` the batch's pairs.

    In parallel over ``part_sizes.shape[0] // 2`` ranges of rows, with ``part_sizes`` as
    scratch; the result does not depend on their number. Each range reads every pair twice
    and its own rows twice, so a step costs two passes over the pairs whatever the thread
    count, and a pass over all n_rows rows however few it touches.
    """
    B = act.shape[0]
    n_rows = slot.shape[0]
    P = part_sizes.shape[0] // 2
    for p in prange(P):   # count each row's pairs into its slot entry: -1 - count
        lo, hi = n_rows * p // P, n_rows * (p + 1) // P
        for i in range(B):
            for k in range(n_act[i]):
                j = act[i, k]
                if lo <= j < hi:
                    slot[j] -= 1
        part_rows = 0
        part_pairs = 0
        for j in range(lo, hi):
            c = -1 - slot[j]
            if c > 0 or in_pool[j] >= 0:
                part_rows += 1
                part_pairs += c
        part_sizes[2 * p] = part_rows
        part_sizes[2 * p + 1] = part_pairs
    m = 0
    n_pairs = 0
    for p in range(P):   # each range's first slot and first pair
        a, b = part_sizes[2 * p], part_sizes[2 * p + 1]
        part_sizes[2 * p], part_sizes[2 * p + 1] = m, n_pairs
        m += a
        n_pairs += b
    starts[m] = n_pairs
    for p in prange(P):
        lo, hi = n_rows * p // P, n_rows * (p + 1) // P
        s0, q0 = part_sizes[2 * p], part_sizes[2 * p + 1]
        for j in range(lo, hi):
            c = -1 - slot[j]
            if c > 0 or in_pool[j] >= 0:
                slot[j] = s0
                touched[s0] = j
                starts[s0] = q0
                cursor[s0] = q0
                pool_of_slot[s0] = in_pool[j]
                q0 += c
                s0 += 1
        for i in range(B):
            for k in range(n_act[i]):
                j = act[i, k]
                if lo <= j < hi:
                    s = slot[j]
                    contrib[cursor[s]] = (np.int64(i) << 32) | k
                    cursor[s] += 1
    return m


@njit(cache=True, parallel=True)
def by_pair(m_rows, starts, contrib, z, out, n_chunks):
    """``out[q] = z[i, k]`` for every listed pair ``q`` (``contrib[q] = (i << 32) | k``, :func:`list_rows`):
    the pairs' values in the order ``update_output_rows`` reads them."""
    n = starts[m_rows]
    for c in prange(n_chunks):
        for q in range(n * c // n_chunks, n * (c + 1) // n_chunks):
            e = contrib[q]
            out[q] = z[e >> 32, e & 0xFFFFFFFF]


@njit(cache=True)
def gather_features(rows, Xp, Xi, slot, touched, counts, starts, contrib):
    """Counting sort of the batch's (sample, non-zero) pairs by input feature, the features in
    the order the batch first meets them. ``slot`` (n_features,) must be -1 on entry for every
    feature; it is left holding each touched feature's slot (``update_input_rows`` resets
    it). Returns the number ``m`` of touched features: ``touched[:m]``;
    ``contrib[2q], contrib[2q + 1]`` (q in ``starts[s]:starts[s+1]``) are the sample and the
    non-zero's position in ``Xi`` of slot ``s``'s pairs."""
    B = rows.shape[0]
    m = 0
    for i in range(B):
        r = rows[i]
        for q in range(Xp[r], Xp[r + 1]):
            f = Xi[q]
            s = slot[f]
            if s < 0:
                s = m
                slot[f] = m
                touched[m] = f
                counts[m] = 0
                m += 1
            counts[s] += 1
    starts[0] = 0
    for s in range(m):
        starts[s + 1] = starts[s] + counts[s]
        counts[s] = starts[s]
    for i in range(B):
        r = rows[i]
        for q in range(Xp[r], Xp[r + 1]):
            s = slot[Xi[q]]
            contrib[2 * counts[s]] = i
            contrib[2 * counts[s] + 1] = q
            counts[s] += 1
    return m


@njit(cache=True, inline="always")
def _adam_row(w, m, v, g, step_size, beta1, beta2, eps):
    """Adam's update as TF's AdamOptimizer and the reference code write it, in float32:
    w -= step_size * m / (sqrt(v) + eps), ``step_size`` = lr * sqrt(bc2) / bc1 (ε is the
    paper's ε-hat, added before the bias correction; torch.optim.Adam adds it after)."""
    b1 = np.float32(beta1)
    b2 = np.float32(beta2)
    c1 = np.float32(1.0 - beta1)
    c2 = np.float32(1.0 - beta2)
    ss = np.float32(step_size)
    ep = np.float32(eps)
    for d in range(w.shape[0]):
        gd = g[d]
        md = b1 * m[d] + c1 * gd
        vd = b2 * v[d] + c2 * gd * gd
        m[d] = md
        v[d] = vd
        w[d] -= ss * md / (np.sqrt(vd) + ep)


@njit(cache=True, parallel=True, fastmath=True)
def update_output_rows(m_rows, touched, starts, contrib, H, dzq, pool_of_slot, gpool, gbpool,
                       W2, b2, mW, vW, mb, vb, step_size, beta1, beta2, eps, dense, slot,
                       train_bias, hbar, rise, DHp):
    """Gradient of each touched output row (Σ dz · h over its own pairs, plus its shared-pool
    gradient ``gpool[pool_of_slot[s]]``) and its Adam step. The rows and pairs are
    :func:`list_rows`'; ``dzq[q]``: d loss / d logit of pair ``q`` (:func:`by_pair`).

    The rows are split into ``DHp.shape[0]`` parts (:func:`dh_parts`), in parallel. ``DHp[c, i]``:
    the own neurons' share of d loss / d h of sample ``i`` (Σ dz · W2[j], the rows as they
    were before this step) from the rows of part ``c``. The parts depend on their number and
    ``m_rows`` (or the row count), not on the threads, so the sum over them
    (:func:`add_partials`) does not depend on the thread count.

    ``rise[j]``: how much the step raised row ``j``'s logit on ``hbar`` (the batch's mean hidden
    vector), for every row it stepped (other entries are left as they are).

    ``dense``: also step every untouched row with a zero gradient (fidelity with dense Adam).
    Resets ``slot`` of the touched rows to -1.
    """
    Hd = W2.shape[1]
    n_rows = W2.shape[0]
    total = n_rows if dense else m_rows
    parts = DHp.shape[0]
    for c in prange(parts):
        g = np.empty(Hd, np.float32)
        gb = np.empty(1, np.float32)
        dh = DHp[c]
        dh[:] = 0.0
        for u in range(total * c // parts, total * (c + 1) // parts):
            if dense:
                j = u
                s = slot[j]
            else:
                s = u   # slots in increasing row order: memory locality
                j = touched[s]
            wj = W2[j]
            for d in range(Hd):
                g[d] = 0.0
            gsum = np.float32(0.0)
            if s >= 0:
                for q in range(starts[s], starts[s + 1]):
                    e = contrib[q]
                    i = e >> 32
                    w = dzq[q]
                    gsum += w
                    hi = H[i]
                    dhi = dh[i]
                    for d in range(Hd):
                        g[d] += w * hi[d]
                        dhi[d] += w * wj[d]
                pq = pool_of_slot[s]
                if pq >= 0:
                    gsum += gbpool[pq]
                    for d in range(Hd):
                        g[d] += gpool[pq, d]
            gb[0] = gsum
            before = b2[j]
            for d in range(Hd):
                before += wj[d] * hbar[d]
            _adam_row(wj, mW[j], vW[j], g, step_size, beta1, beta2, eps)
            if train_bias:
                _adam_row(b2[j:j + 1], mb[j:j + 1], vb[j:j + 1], gb, step_size, beta1, beta2, eps)
            after = b2[j]
            for d in range(Hd):
                after += wj[d] * hbar[d]
            rise[j] = after - before
    for u in range(m_rows):
        slot[touched[u]] = -1


@njit(cache=True, parallel=True, fastmath=True)
def add_partials(DHp, DH):
    """``DH[i] += Σ_c DHp[c, i]``, summed in part order for every sample."""
    for i in prange(DH.shape[0]):
        for c in range(DHp.shape[0]):
            for d in range(DH.shape[1]):
                DH[i, d] += DHp[c, i, d]


@njit(cache=True, parallel=True, fastmath=True)
def update_input_rows(m_rows, touched, order, starts, contrib, Xv, DH, W1, b1, mW, vW, mb, vb,
                      step_size, beta1, beta2, eps, dense, slot, n_chunks):
    """Gradient of each touched input feature row (Σ x · dh) and its Adam step; then b1."""
    Hd = W1.shape[1]
    n_rows = W1.shape[0]
    total = n_rows if dense else m_rows
    for c in prange(n_chunks):
        g = np.empty(Hd, np.float32)
        for u in range(total * c // n_chunks, total * (c + 1) // n_chunks):
            if dense:
                f = u
                s = slot[f]
            else:
                s = order[u]
                f = touched[s]
            for d in range(Hd):
                g[d] = 0.0
            if s >= 0:
                for q in range(starts[s], starts[s + 1]):
                    i = contrib[2 * q]
                    x = Xv[contrib[2 * q + 1]]
                    dhi = DH[i]
                    for d in range(Hd):
                        g[d] += x * dhi[d]
            _adam_row(W1[f], mW[f], vW[f], g, step_size, beta1, beta2, eps)
    gb = np.zeros(Hd, np.float32)
    for i in range(DH.shape[0]):
        for d in range(Hd):
            gb[d] += DH[i, d]
    _adam_row(b1, mb, vb, gb, step_size, beta1, beta2, eps)
    for u in range(m_rows):
        slot[touched[u]] = -1


@njit(cache=True, parallel=True, fastmath=True)
def hidden_dense(rows, Xp, Xi, Xv, W1, b1, out):
    """out[i] = relu(x_rows[i] W1 + b1) for evaluation."""
    for i in prange(rows.shape[0]):
        _hidden(rows[i], Xp, Xi, Xv, W1, b1, out[i])


@njit(cache=True, parallel=True)
def zero_fill(flat):
    """Write 0 to every element of the 1-D array ``flat``, split over the thread pool, so
    that the first-touch page faults of fresh memory are taken by every thread at once."""
    for i in prange(flat.size):
        flat[i] = 0
