"""numba kernels of the Social Hash Partitioner's inner loops (block fanout's are in
:mod:`impls.bandana.layout.fanout_kernels`).

Kept apart from the plain-Python API in :mod:`impls.bandana.layout.shp`, which validates
input and calls these.

Vocabulary (SHP): a *query* is a hyperedge; a *pin* is one (query, vertex) incidence,
stored query-major (``qoff``/``pin_vertex``) and reachable vertex-major through
``vstart``/``vpins`` (pin numbers per vertex). At every level of the recursive
bisection each vertex sits in a *part* (named by its first block) and on a *side*
(0 or 1) of that part's current split; the pins of one query that fall in the same
part form a *sub-edge*, named by its first pin (``rep``). ``n0[rep]``/``n1[rep]``
count the sub-edge's vertices on each side.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from impls.bandana.layout.fanout_kernels import distinct_count
from impls.harness.kernel_cache import drop_stale

# numba's cache does not see edits to the kernels called from here: drop it when they change
drop_stale(__file__, ["impls.bandana.layout.fanout_kernels"])


# ----------------------------------------------------------------------------- hypergraph build

@njit(cache=True)
def distinct_queries(offsets, indices, min_size):
    """Deduplicate every query's ids and drop queries left with fewer than ``min_size``.

    Returns ``(qoff, pins)``: the kept queries' sorted distinct ids in CSR form.
    """
    nq = offsets.size - 1
    distinct = np.zeros(nq, dtype=np.int64)
    for q in range(nq):
        distinct[q] = distinct_count(indices[offsets[q]:offsets[q + 1]])
    kept = 0
    total = 0
    for q in range(nq):
        if distinct[q] >= min_size:
            kept += 1
            total += distinct[q]
    qoff = np.zeros(kept + 1, dtype=np.int64)
    pins = np.empty(total, dtype=np.int64)
    e = 0
    w = 0
    for q in range(nq):
        if distinct[q] < min_size:
            continue
        a, b = offsets[q], offsets[q + 1]
        s = np.sort(indices[a:b])
        pins[w] = s[0]
        w += 1
        for k in range(1, s.size):
            if s[k] != s[k - 1]:
                pins[w] = s[k]
                w += 1
        e += 1
        qoff[e] = w
    return qoff, pins


@njit(cache=True)
def vertex_pins(pin_vertex, num_vertices):
    """Counting sort of pins by vertex: return ``(vstart, vpins)`` (CSR, pins ascending per vertex)."""
    vstart = np.zeros(num_vertices + 1, dtype=np.int64)
    for p in range(pin_vertex.size):
        vstart[pin_vertex[p] + 1] += 1
    for v in range(num_vertices):
        vstart[v + 1] += vstart[v]
    fill = vstart[:-1].copy()
    vpins = np.empty(pin_vertex.size, dtype=np.int64)
    for p in range(pin_vertex.size):
        v = pin_vertex[p]
        vpins[fill[v]] = p
        fill[v] += 1
    return vstart, vpins


# ----------------------------------------------------------------------------- per level

@njit(cache=True, parallel=True)
def subedge_ids(qoff, pin_vertex, part, num_parts, nchunks, sub):
    """Number the sub-edges (a query's pins within one part) that hold >= 2 pins.

    Writes ``sub[p]``, the sub-edge of pin ``p`` (-1 when the pin is alone in its part
    within its query: no move can change such a sub-edge), and returns the number of
    sub-edges. Ids are ordered by part (then by query), so the vertices of one part
    touch one contiguous range of sub-edge counters. Queries are cut into ``nchunks``
    parallel chunks, each with its own per-part scratch stamped by query (linear time).
    """
    nq = qoff.size - 1
    nchunks = max(1, min(nq, nchunks))
    per_chunk = np.zeros((nchunks, num_parts), dtype=np.int64)
    for c in prange(nchunks):
        stamp = np.full(num_parts, -1, dtype=np.int64)
        size = np.zeros(num_parts, dtype=np.int64)
        for q in range(c * nq // nchunks, (c + 1) * nq // nchunks):
            for p in range(qoff[q], qoff[q + 1]):
                b = part[pin_vertex[p]]
                if stamp[b] != q:
                    stamp[b] = q
                    size[b] = 0
                size[b] += 1
            for p in range(qoff[q], qoff[q + 1]):
                b = part[pin_vertex[p]]
                if size[b] >= 2:
                    per_chunk[c, b] += 1
                    size[b] = -1  # counted
    # ids by (part, chunk): base[c, b] = kept sub-edges of parts < b, plus of part b in chunks < c
    base = np.empty((nchunks, num_parts), dtype=np.int64)
    total = 0
    for b in range(num_parts):
        for c in range(nchunks):
            base[c, b] = total
            total += per_chunk[c, b]
    for c in prange(nchunks):
        stamp = np.full(num_parts, -1, dtype=np.int64)
        size = np.zeros(num_parts, dtype=np.int64)
        ident = np.empty(num_parts, dtype=np.int64)
        following = base[c].copy()
        for q in range(c * nq // nchunks, (c + 1) * nq // nchunks):
            for p in range(qoff[q], qoff[q + 1]):
                b = part[pin_vertex[p]]
                if stamp[b] != q:
                    stamp[b] = q
                    size[b] = 0
                    ident[b] = -1
                size[b] += 1
            for p in range(qoff[q], qoff[q + 1]):
                b = part[pin_vertex[p]]
                if size[b] < 2:
                    sub[p] = -1
                    continue
                if ident[b] < 0:
                    ident[b] = following[b]
                    following[b] += 1
                sub[p] = ident[b]
    return total


@njit(cache=True, parallel=True)
def position_csr(vorder, vstart, slot_sub, out_start, out_sub):
    """Per position ``i`` (vertex ``vorder[i]``), the kept sub-edges (``>= 0``) among its slots.

    ``slot_sub`` is vertex-major (``slot_sub[vstart[v]:vstart[v+1]]`` for vertex ``v``).
    Two calls: with ``out_sub`` of size 0 it only writes the per-position counts into
    ``out_start[1:]``; after the caller's prefix sum it fills ``out_sub``.
    """
    n = vorder.size
    fill = out_sub.size > 0
    for i in prange(n):
        v = vorder[i]
        w = out_start[i] if fill else 0
        for k in range(vstart[v], vstart[v + 1]):
            e = slot_sub[k]
            if e >= 0:
                if fill:
                    out_sub[w] = e
                w += 1
        if not fill:
            out_start[i + 1] = w


@njit(cache=True)
def side_counts(pin_vertex, sub, side, counts):
    """Count every sub-edge's vertices per side: ``counts[2 s + side]`` for sub-edge ``s``.

    ``sub[p]`` is the sub-edge of pin ``p`` (-1: pin ignored); ``side`` is indexed by
    ``pin_vertex`` (vertex ids or positions alike).
    ``counts`` must start at zero. Runs once per level, so it stays serial.
    """
    for p in range(pin_vertex.size):
        s = sub[p]
        if s >= 0:
            counts[2 * s + side[pin_vertex[p]]] += 1


@njit(cache=True, parallel=True)
def move_gains(vstart, vsub, side, active, counts, pw, gains):
    """Gain in p-fanout of moving every active vertex to the other side of its part's split.

    ``gain(v) = Σ_{e ∋ v} [p (1-p)^(n_own(e) - 1) - p (1-p)^(n_other(e))]`` with
    ``pw[k] = p (1-p)^k``, over the sub-edges ``vsub[vstart[v]:vstart[v+1]]`` of ``v``
    (side counts in ``counts[2 s]``, ``counts[2 s + 1]``); positive means the move
    lowers the probabilistic fanout. Inactive vertices get 0.
    """
    nv = vstart.size - 1
    top = pw.size - 1
    for v in prange(nv):
        if not active[v]:
            gains[v] = 0.0
            continue
        g = 0.0
        s = side[v]
        for k in range(vstart[v], vstart[v + 1]):
            e = 2 * vsub[k]
            own = counts[e + s]
            other = counts[e + 1 - s]
            g += pw[min(own - 1, top)] - pw[min(other, top)]
        gains[v] = g


@njit(cache=True)
def _kth_smallest(a, k):
    """The ``k``-th smallest value of ``a`` (0-based), reordering ``a`` in place.

    Quickselect with a median-of-three pivot and a three-way partition, so runs of equal
    values (common among gains) cost nothing extra. Written out because numba's
    ``np.partition`` takes ~12 s to compile.
    """
    lo = 0
    hi = a.size - 1
    while lo < hi:
        x, y, z = a[lo], a[(lo + hi) // 2], a[hi]
        pivot = max(min(x, y), min(max(x, y), z))
        lt = lo
        i = lo
        gt = hi
        while i <= gt:
            if a[i] < pivot:
                a[lt], a[i] = a[i], a[lt]
                lt += 1
                i += 1
            elif a[i] > pivot:
                a[i], a[gt] = a[gt], a[i]
                gt -= 1
            else:
                i += 1
        if k < lt:
            hi = lt - 1
        elif k > gt:
            lo = gt + 1
        else:
            return pivot
    return a[lo]


@njit(cache=True)
def _ranked_top(positions, gains, k):
    """The first ``k`` of ``positions`` ranked by decreasing gain, ties by position
    (``positions`` ascending), without sorting all of them."""
    m = positions.size
    g = np.empty(m, dtype=np.float64)
    for i in range(m):
        g[i] = -gains[positions[i]]
    if k < m:
        threshold = _kth_smallest(g.copy(), k - 1)  # k-th smallest of -gain
        strict = 0
        for i in range(m):
            if g[i] < threshold:
                strict += 1
        ties = k - strict  # of those equal to the threshold, the lowest positions
        chosen = np.empty(k, dtype=np.int64)
        chosen_g = np.empty(k, dtype=np.float64)
        c = 0
        for i in range(m):  # keeps position order (no sort: numba's quicksort is slow on runs)
            if g[i] < threshold or (g[i] == threshold and ties > 0):
                if g[i] == threshold:
                    ties -= 1
                chosen[c] = positions[i]
                chosen_g[c] = g[i]
                c += 1
        positions, g = chosen, chosen_g
    return positions[np.argsort(g, kind="mergesort")]


@njit(cache=True, parallel=True)
def pair_swaps(bounds, side, active, gains, move, moved_before, coin):
    """Mark the vertices to swap across every part's split; return (pairs proposed, pairs
    marked).

    Positions are grouped by part: part ``k`` holds positions ``bounds[k]:bounds[k+1]``.
    In each active part, each side's positions are ranked by decreasing gain (ties by
    position) and the i-th of side 0 is paired with the i-th of side 1 while the two
    gains sum to more than zero: a proposed pair. A pair with a vertex that moved the round
    before (``moved_before``) is marked only if its left vertex's ``coin`` (uniform in [0, 1))
    is below 0.5 (this breaks the two-cycle of synchronous swaps); every other proposed pair
    is marked. ``move`` is set for both vertices of a marked pair (cleared elsewhere). A
    pair needs one positive gain, so only the top ``max(#positive per side)`` of each side
    are ranked.
    """
    nparts = bounds.size - 1
    pairs = np.zeros(nparts, dtype=np.int64)
    proposed = np.zeros(nparts, dtype=np.int64)
    for k in prange(nparts):
        a, b = bounds[k], bounds[k + 1]
        for i in range(a, b):
            move[i] = False
        if b - a < 2 or not active[a]:
            continue
        n0 = 0
        pos0 = 0
        pos1 = 0
        for i in range(a, b):
            if side[i] == 0:
                n0 += 1
                if gains[i] > 0:
                    pos0 += 1
            elif gains[i] > 0:
                pos1 += 1
        top = min(max(pos0, pos1), n0, b - a - n0)
        if top == 0:
            continue
        left = np.empty(n0, dtype=np.int64)
        right = np.empty(b - a - n0, dtype=np.int64)
        l = 0
        r = 0
        for i in range(a, b):
            if side[i] == 0:
                left[l] = i
                l += 1
            else:
                right[r] = i
                r += 1
        left = _ranked_top(left, gains, top)
        right = _ranked_top(right, gains, top)
        count = 0
        offered = 0
        for i in range(top):
            if gains[left[i]] + gains[right[i]] <= 0:
                break
            offered += 1
            if (moved_before[left[i]] or moved_before[right[i]]) and coin[left[i]] >= 0.5:
                continue
            move[left[i]] = True
            move[right[i]] = True
            count += 1
        pairs[k] = count
        proposed[k] = offered
    return proposed.sum(), pairs.sum()


@njit(cache=True)
def apply_moves(movers, vstart, vsub, side, counts):
    """Flip the side of every vertex in ``movers`` and update its sub-edges' side counts."""
    for i in range(movers.size):
        v = movers[i]
        s = side[v]
        for k in range(vstart[v], vstart[v + 1]):
            e = 2 * vsub[k]
            counts[e + s] -= 1
            counts[e + 1 - s] += 1
        side[v] = 1 - s


@njit(cache=True)
def pfanout_total(qoff, pin_vertex, block, p):
    """Σ over queries of Σ_b [1 - (1-p)^{n_b(q)}] for a given vertex → bucket map (serial, for checks)."""
    total = 0.0
    nq = qoff.size - 1
    for q in range(nq):
        a, b = qoff[q], qoff[q + 1]
        m = b - a
        if m == 0:
            continue
        blocks = np.empty(m, dtype=np.int64)
        for k in range(m):
            blocks[k] = block[pin_vertex[a + k]]
        blocks.sort()
        run = 1
        for k in range(1, m + 1):
            if k == m or blocks[k] != blocks[k - 1]:
                total += 1.0 - (1.0 - p) ** run
                run = 1
            else:
                run += 1
    return total
