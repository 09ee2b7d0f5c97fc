"""Numba kernels of Bandana's DRAM-cache simulator (see ``impls.bandana.sim.cache`` for the spec).

Longer than 400 lines: numba inlines the helpers of the lookup kernels only from the same
module, and the four policies share them.

Data structure: a *log-structured LRU* rather than a doubly linked list. The LRU
order of the cache is kept as a circular log of keys, LRU end at the tail, MRU
end at the head:

* a miss appends at the head (``lowpri`` prefetches are written just below the
  tail instead: the LRU end);
* a hit on an entry that is not already the newest turns its log entry into a
  hole (-1) and appends the key again at the head;
* eviction takes keys from the tail, skipping holes;
* when the log is full (holes included), it is compacted in place, tail to head,
  keeping the order; the log holds at least twice as many entries as the cache,
  so a compaction of at most ``C`` live entries frees at least ``C`` entries and
  every operation is amortized O(1).

The order of the live entries is exactly the order a linked list would hold, but
a hit writes one hole instead of relinking two random neighbours and eviction
reads memory sequentially. The shadow set is a second log of the same kind.

Keys: for policy ``none`` the key of a vector is its id (blocks play no part);
for the other policies it is its storage position ``pos[id]``, so the vectors of
a block are consecutive keys. Arrays (``I`` = int32 when every index fits,
else int64):

* ``kmap`` (I[stride * N]): ``kmap[stride*k]`` = ``2 * (log index) + flag`` of key
  ``k`` in the cache log (flag 1: prefetched and not yet requested), -1 when not
  cached; with the shadow policy (stride 2) ``kmap[2*k + 1]`` = its index in the
  shadow log, or -1 — both in one cache line. It is the only array besides
  ``pos`` indexed by key.
* ``clog`` (I[L], L a power of two >= 2 C), ``slog`` (I[Ls], Ls >= 2 S): keys or
  -1 (hole).
* ``sbits`` (uint64[n_blocks * ceil(V / 64)], shadow policy only): per block, a
  bitmap of which of its keys are in the shadow set, so a miss visits only the
  block's shadow members (count-trailing-zeros over the set bits) instead of
  reading all V entries of ``kmap``.
* ``counters`` (int64[N_COUNTERS]): see the ``C_*`` names; log heads and tails
  are monotonic counters, the physical index is ``counter & (L - 1)``.

Lookups are processed in batches of ``BATCH``. A first pass maps ids to keys and
prefetches each key's ``kmap`` entry (``impls.bandana.sim.prefetch``: a hint that
retires at once, so the misses of a whole batch overlap). The second pass, whose
loads depend on each other, asks ``AHEAD`` lookups early for the lines that
lookup will touch: the log entry a hit turns into a hole, the shadow-log entry,
the block bitmap (or the block's ``kmap`` entries) a miss scans, and the ``kmap``
entries of the keys next to be evicted from either log (not for policy
``none``, whose hits touch one line). The look-ahead uses prefetch hints, not
loads, which would hold a register until the line arrives. Indices
are never negative where they are dereferenced (a prefetch of a hole's index
-1 is a harmless hint) and numba does no bounds checks, so the hot loop
carries no checks. The policy is compiled in as a constant (``lookup_kernel``),
so a kernel carries no branches of the other policies.
"""
from __future__ import annotations

import functools

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from impls.harness.kernel_cache import drop_stale
from impls.bandana.sim.prefetch import prefetch

# numba's cache does not see edits to the kernels called from here: drop it when they change
drop_stale(__file__, ["impls.bandana.sim.prefetch"])

POLICY_NONE = 0
POLICY_PREFETCH = 1
POLICY_LOWPRI = 2
POLICY_SHADOW = 3

(C_LOOKUPS, C_HITS, C_MISSES, C_BLOCKS, C_PREFETCHED, C_USED, C_SIZE, C_SHADOW_SIZE,
 C_HEAD, C_TAIL, C_SHEAD, C_STAIL, C_COMPACTIONS) = range(13)
N_COUNTERS = 13

RECORD_NOTHING = 0
RECORD_OUTCOMES = 1
RECORD_INSERTED = 2

BATCH = 1024
AHEAD = 32


def log_length(entries: int) -> int:
    """Log size for a cache of ``entries``: the smallest power of two >= 2 * entries (>= 16)."""
    length = 16
    while length < 2 * entries:
        length *= 2
    return length


@njit(cache=True, inline="always")
def _compact(log, kmap, stride, off, shift, tail, head):
    """Squeeze the holes out of ``log[tail:head]`` in place, keeping the order; the new head.

    ``kmap[stride*key + off]`` holds ``(index << shift) | flag``; the flag is kept.
    """
    mask = log.shape[0] - 1
    low = (1 << shift) - 1
    w = tail
    for i in range(tail, head):
        key = log[i & mask]
        if key >= 0:
            if i != w:
                log[w & mask] = key
                e = stride * key + off
                kmap[e] = ((w & mask) << shift) | (kmap[e] & low)
            w += 1
    return w


@njit(cache=True, inline="always")
def _block_of(k, per_block, shift):
    if shift >= 0:
        return k >> shift
    return k // per_block


@njit(cache=True, inline="always")
def _set_bit(sbits, k, per_block, shift, words, value):
    """Set (or clear) the bit of key ``k`` in its block's bitmap."""
    b = _block_of(k, per_block, shift)
    off = k - b * per_block
    w = b * words + (off >> 6)
    bit = np.uint64(1) << np.uint64(off & 63)
    if value:
        sbits[w] |= bit
    else:
        sbits[w] &= ~bit


@njit(cache=True)
def init_state(kmap, clog, slog):
    """Empty cache and shadow set."""
    kmap[:] = -1
    clog[:] = -1
    slog[:] = -1


@functools.cache
def lookup_kernel(policy: int):
    """The kernel for one policy, compiled in as a constant.

    ``kernel(ids, pos, layout, per_block, shift, capacity, shadow_capacity, kmap,
    clog, slog, sbits, counters, keys, scratch, record, out_hit, out_block,
    ins_ptr, ins_ids)`` returns ``len(ids)``. One specialization per policy,
    compiled on first use and cached on disk by numba (closure constants are
    part of its cache key). ``record`` stays a run-time argument (its branches
    are perfectly predicted).
    """
    use_pos = policy != POLICY_NONE
    stride = 2 if policy == POLICY_SHADOW else 1

    @njit(cache=True)
    def run_lookups(ids, pos, layout, per_block, shift, capacity, shadow_capacity,
                    kmap, clog, slog, sbits, counters, keys, scratch,
                    record, out_hit, out_block, ins_ptr, ins_ids):
        """Process every id of ``ids`` in order, updating the state arrays in place.

        ``shift`` = log2(per_block) when that is a power of two, else -1.
        ``capacity`` and ``shadow_capacity`` are at most N. ``keys`` (I[BATCH])
        and ``scratch`` (I[per_block]) are work space. ``record``: 0 writes
        nothing; 1 writes ``out_hit[i]`` (1 = hit) and ``out_block[i]`` (block
        read, -1 on a hit); 2 also writes the vectors miss ``i`` inserted — the
        looked-up vector first, then the prefetched ones in storage order — to
        ``ins_ids[ins_ptr[i]:ins_ptr[i + 1]]`` (``ins_ptr[0]`` is set by the caller
        and ``ins_ids`` must have room for ``len(ids) * per_block`` more).
        """
        cmask = clog.shape[0] - 1
        clen = clog.shape[0]
        smask = slog.shape[0] - 1
        slen = slog.shape[0]
        n_keys = kmap.shape[0] // stride
        words = (per_block + 63) >> 6     # sbits words per block
        hits = counters[C_HITS]
        blocks = counters[C_BLOCKS]
        prefetched = counters[C_PREFETCHED]
        used = counters[C_USED]
        size = counters[C_SIZE]
        ssize = counters[C_SHADOW_SIZE]
        head = counters[C_HEAD]
        tail = counters[C_TAIL]
        shead = counters[C_SHEAD]
        stail = counters[C_STAIL]
        compactions = counters[C_COMPACTIONS]
        cursor = ins_ptr[0] if record == RECORD_INSERTED else 0
        n = ids.shape[0]

        for b0 in range(0, n, BATCH):
            b1 = min(n, b0 + BATCH)
            # pass 1: keys, and their kmap entries prefetched
            for i in range(b0, b1):
                if use_pos:
                    k = pos[ids[i]]
                else:
                    k = ids[i]
                keys[i - b0] = k
                prefetch(kmap, stride * k)
            # pass 2: the cache, asking AHEAD lookups early for the lines that
            # lookup will write: its log entry (a hit leaves a hole there), its
            # block (a miss scans it) and the kmap entries of the keys about to
            # be evicted from both logs
            for i in range(b0, b1):
                if policy != POLICY_NONE:
                    if i + AHEAD < b1:
                        k2 = keys[i + AHEAD - b0]
                        prefetch(clog, (kmap[stride * k2] >> 1) & cmask)
                        if policy == POLICY_SHADOW:
                            prefetch(slog, kmap[2 * k2 + 1] & smask)
                            prefetch(sbits, _block_of(k2, per_block, shift) * words)
                        else:
                            first = _block_of(k2, per_block, shift) * per_block
                            prefetch(kmap, first)
                            prefetch(kmap, first + per_block - 1)
                    prefetch(kmap, stride * clog[(tail + AHEAD) & cmask])
                    if policy == POLICY_SHADOW:
                        y = slog[(stail + AHEAD) & smask]
                        prefetch(kmap, 2 * y + 1)
                        prefetch(sbits, _block_of(y, per_block, shift) * words)
                k = keys[i - b0]
                e = kmap[stride * k]
                if e >= 0:
                    hits += 1
                    if e & 1:
                        used += 1
                    j = e >> 1
                    if j != ((head - 1) & cmask) or (e & 1):
                        # not the newest entry (or its flag must change): re-append
                        if j != ((head - 1) & cmask):
                            clog[j] = -1
                            if head - tail == clen:
                                head = _compact(clog, kmap, stride, 0, 1, tail, head)
                                compactions += 1
                            clog[head & cmask] = k
                            kmap[stride * k] = (head & cmask) << 1
                            head += 1
                        else:
                            kmap[stride * k] = e & ~1
                    if record != RECORD_NOTHING:
                        out_hit[i] = 1
                        out_block[i] = -1
                        if record == RECORD_INSERTED:
                            ins_ptr[i + 1] = cursor
                else:
                    blocks += 1
                    nc = 0
                    if policy == POLICY_SHADOW:
                        # the block's shadow members, from its bitmap, not cached
                        b = _block_of(k, per_block, shift)
                        start = b * per_block
                        for w in range(words):
                            bits = sbits[b * words + w]
                            while bits != 0:     # set bits, lowest (first in storage) first
                                j = start + 64 * w + trailing_zeros(bits)
                                if j != k and kmap[2 * j] < 0:
                                    scratch[nc] = j
                                    nc += 1
                                bits &= bits - np.uint64(1)
                    elif policy != POLICY_NONE:
                        start = _block_of(k, per_block, shift) * per_block
                        stop = min(start + per_block, n_keys)
                        for j in range(start, stop):
                            if kmap[j] < 0 and j != k:
                                scratch[nc] = j
                                nc += 1
                    if record != RECORD_NOTHING:
                        out_hit[i] = 0
                        if use_pos:
                            out_block[i] = _block_of(k, per_block, shift)
                        else:
                            out_block[i] = _block_of(pos[k], per_block, shift)
                        if record == RECORD_INSERTED:
                            ins_ids[cursor] = ids[i]
                            cursor += 1
                            for j in range(nc):
                                ins_ids[cursor] = layout[scratch[j]]
                                cursor += 1
                            ins_ptr[i + 1] = cursor
                    # evict from the LRU end (skipping holes) until k and the candidates fit
                    need = nc + 1
                    while size + need > capacity:
                        x = clog[tail & cmask]
                        if x >= 0:
                            kmap[stride * x] = -1
                            clog[tail & cmask] = -1
                            size -= 1
                        tail += 1
                    if policy == POLICY_LOWPRI:
                        # k at MRU, then the candidates at the LRU end, last one first
                        if head - tail == clen:
                            head = _compact(clog, kmap, stride, 0, 1, tail, head)
                            compactions += 1
                        clog[head & cmask] = k
                        kmap[stride * k] = (head & cmask) << 1
                        head += 1
                        for j in range(nc - 1, -1, -1):
                            if head - tail == clen:
                                head = _compact(clog, kmap, stride, 0, 1, tail, head)
                                compactions += 1
                            tail -= 1
                            c = scratch[j]
                            clog[tail & cmask] = c
                            kmap[stride * c] = ((tail & cmask) << 1) | 1
                    else:
                        # the candidates at MRU in storage order, then k
                        for j in range(nc + 1):
                            if head - tail == clen:
                                head = _compact(clog, kmap, stride, 0, 1, tail, head)
                                compactions += 1
                            if j < nc:
                                c = scratch[j]
                                flag = 1
                            else:
                                c = k
                                flag = 0
                            clog[head & cmask] = c
                            kmap[stride * c] = ((head & cmask) << 1) | flag
                            head += 1
                    size += need
                    prefetched += nc
                if policy == POLICY_SHADOW:
                    s = kmap[2 * k + 1]
                    if s != ((shead - 1) & smask) or s < 0:
                        if s >= 0:
                            slog[s] = -1
                        elif ssize == shadow_capacity:
                            x = slog[stail & smask]
                            while x < 0:
                                stail += 1
                                x = slog[stail & smask]
                            kmap[2 * x + 1] = -1
                            _set_bit(sbits, x, per_block, shift, words, False)
                            slog[stail & smask] = -1
                            stail += 1
                        else:
                            ssize += 1
                        if shead - stail == slen:
                            shead = _compact(slog, kmap, 2, 1, 0, stail, shead)
                            compactions += 1
                        slog[shead & smask] = k
                        kmap[2 * k + 1] = shead & smask
                        shead += 1
                        if s < 0:
                            _set_bit(sbits, k, per_block, shift, words, True)

        counters[C_LOOKUPS] += n
        counters[C_HITS] = hits
        counters[C_MISSES] = counters[C_LOOKUPS] - hits
        counters[C_BLOCKS] = blocks
        counters[C_PREFETCHED] = prefetched
        counters[C_USED] = used
        counters[C_SIZE] = size
        counters[C_SHADOW_SIZE] = ssize
        counters[C_HEAD] = head
        counters[C_TAIL] = tail
        counters[C_SHEAD] = shead
        counters[C_STAIL] = stail
        counters[C_COMPACTIONS] = compactions
        return n

    return run_lookups


@njit(cache=True)
def first_out_of_range(ids, n):
    """Index of the first id outside [0, n), or -1."""
    for i in range(ids.shape[0]):
        v = ids[i]
        if v < 0 or v >= n:
            return i
    return -1


@njit(cache=True)
def permutation_problem(layout):
    """Check that ``layout`` is a permutation of 0..N-1.

    Returns ``(index, kind)``: ``(-1, 0)`` when it is one; otherwise the first bad
    position and ``kind`` 1 (value out of range) or 2 (value seen before).
    """
    n = layout.shape[0]
    seen = np.zeros(n, dtype=np.uint8)
    for i in range(n):
        v = layout[i]
        if v < 0 or v >= n:
            return i, 1
        if seen[v] != 0:
            return i, 2
        seen[v] = 1
    return -1, 0


@njit(cache=True)
def inverse_permutation(layout, pos):
    """``pos[layout[i]] = i``."""
    for i in range(layout.shape[0]):
        pos[layout[i]] = i


@njit(cache=True)
def log_keys(log, tail, head):
    """Live keys of ``log[tail:head]``, LRU end first."""
    mask = log.shape[0] - 1
    out = np.empty(head - tail, dtype=np.int64)
    count = 0
    for i in range(tail, head):
        key = log[i & mask]
        if key >= 0:
            out[count] = key
            count += 1
    return out[:count]


@njit(cache=True)
def compact_ids(layout, per_block, new_block, out):
    """Miniature simulation: ``out[v]`` = the id of vector ``v`` in the layout made of the
    kept blocks only (``new_block[b]``: index of block ``b`` among them, or -1), else -1.

    The vector at position ``p`` of a kept block ``b`` becomes
    ``new_block[b] * per_block + p % per_block``.
    """
    b = 0
    offset = 0
    for p in range(layout.shape[0]):
        nb = new_block[b]
        out[layout[p]] = nb * per_block + offset if nb >= 0 else -1
        offset += 1
        if offset == per_block:
            offset = 0
            b += 1


@njit(cache=True)
def sample_trace(ids, new_id):
    """The kept lookups of ``ids`` (``new_id[v] >= 0``), renumbered by ``new_id``; one pass."""
    out = np.empty(ids.shape[0], dtype=np.int64)
    count = 0
    for i in range(ids.shape[0]):
        v = new_id[ids[i]]
        out[count] = v
        count += v >= 0
    return out[:count].copy()


@njit(cache=True)
def searchsorted_right(cdf, u, n_buckets):
    """``np.searchsorted(cdf, u, side="right")`` for a non-decreasing ``cdf`` over [0, 1]; int64.

    Each query first looks up the range of ``cdf`` that its bucket of [0, 1) (one of
    ``n_buckets``) spans, then bisects only that range, so the work stays in a few
    cache lines instead of a bisection across the whole array for every query.
    """
    n = cdf.shape[0]
    edges = np.empty(n_buckets + 1, dtype=np.int64)
    j = 0
    for b in range(n_buckets + 1):
        x = b / n_buckets
        while j < n and cdf[j] <= x:
            j += 1
        edges[b] = j            # first index with cdf > b / n_buckets
    out = np.empty(u.shape[0], dtype=np.int64)
    for i in range(u.shape[0]):
        x = u[i]
        b = min(int(x * n_buckets), n_buckets - 1)
        lo = edges[b] if x >= b / n_buckets else 0
        hi = edges[b + 1] if x < (b + 1) / n_buckets else n
        while lo < hi:
            mid = (lo + hi) >> 1
            if cdf[mid] <= x:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
    return out
