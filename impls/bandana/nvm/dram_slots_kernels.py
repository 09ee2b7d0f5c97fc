"""numba kernels of :mod:`impls.bandana.nvm.dram_slots`: assigning, serving and reclaiming the
replay's DRAM slots (the slot map's conventions are in that module's docstring: ``slot_of[id]``
is a slot, or -1 for none; -2 and -3 are marks a kernel sets and clears within one call).
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def _cached(v, kmap, stride, pos, use_pos):
    return kmap[stride * (pos[v] if use_pos else v)] >= 0


@njit(cache=True)
def _assign(ins_ids, looked_up, kmap, stride, pos, use_pos, slot_of, owner, filled, free, n_free,
            ins_slot):
    """Give a slot from ``free[:n_free]`` (top first) to each id of ``ins_ids`` without one
    that is looked up in the chunk (``looked_up``) or still cached after it; the others
    (prefetched, then evicted unused in the same chunk) are never served and get none.

    ``ins_slot[k]`` = the slot to copy ``ins_ids[k]`` into, or -1 (none needed, it
    already has one, or an earlier entry of ``ins_ids`` copies it). Returns the new
    free count, or -(slots needed) - 1 when there are too few (then nothing changed).
    """
    for v in looked_up:
        if slot_of[v] == -1:
            slot_of[v] = -3
    need = 0
    for k in range(ins_ids.shape[0]):
        v = ins_ids[k]
        if slot_of[v] == -3 or (slot_of[v] == -1 and _cached(v, kmap, stride, pos, use_pos)):
            slot_of[v] = -2
            need += 1
    if need > n_free:
        for k in range(ins_ids.shape[0]):
            if slot_of[ins_ids[k]] == -2:
                slot_of[ins_ids[k]] = -1
        for v in looked_up:
            if slot_of[v] == -3:
                slot_of[v] = -1
        return -need - 1
    for k in range(ins_ids.shape[0]):
        v = ins_ids[k]
        if slot_of[v] == -2:
            n_free -= 1
            s = free[n_free]
            slot_of[v] = s
            owner[s] = v
            filled[s] = 0
            ins_slot[k] = s
        else:
            ins_slot[k] = -1
    for v in looked_up:
        if slot_of[v] == -3:
            slot_of[v] = -1
    return n_free


@njit(cache=True)
def _serve(ids, slot_of, last_served, chunk, out):
    """``out[i]`` = the slot ``ids[i]`` is served from (-1: none); marks those slots as
    served by ``chunk``."""
    for i in range(ids.shape[0]):
        s = slot_of[ids[i]]
        out[i] = s
        if s >= 0:
            last_served[s] = chunk


@njit(cache=True)
def _reclaim(owner, slot_of, kmap, stride, pos, use_pos, last_served, chunk, free, n_free, out):
    """After chunk ``chunk``'s decisions, unmap every slot whose vector is not cached
    (``kmap[stride * key] < 0``, key its storage position or, when not ``use_pos``, its
    id). Slots no chunk after ``chunk - 2`` is served from go back to ``free``; the
    others to ``out``, those served by ``chunk - 1`` first. Returns (new free count,
    how many in ``out``, how many of those were served by ``chunk - 1``)."""
    n_late = 0
    for s in range(owner.shape[0]):
        v = owner[s]
        if v >= 0 and not _cached(v, kmap, stride, pos, use_pos):
            owner[s] = -1
            slot_of[v] = -1
            if last_served[s] <= chunk - 2:
                free[n_free] = s
                n_free += 1
            else:
                out[n_late] = s
                n_late += 1
    n_prev = 0
    for j in range(n_late):             # partition: served by chunk - 1 before served by chunk
        s = out[j]
        if last_served[s] == chunk - 1:
            out[j] = out[n_prev]
            out[n_prev] = s
            n_prev += 1
    return n_free, n_late, n_prev
