"""The replay's DRAM copy: a cache of C vectors in about C vectors' bytes.

Vectors live in *slots* (rows of ``bytes``, ``slots × vector_bytes``); ``slot_of[id]``
(one int per table vector) maps an id to its slot, -1 for none. The replay is
pipelined — while the I/O thread copies chunk k's inserted vectors into their slots,
the main thread decides chunk k+1 and then serves chunk k from the slots — so a
slot is never handed out again as soon as its vector leaves the cache:

* after chunk k's decisions, :meth:`DramSlots.assign` gives every inserted vector
  without a slot a free one (vectors that still hold one keep it, and are not
  copied again: their bytes are already there);
* :meth:`DramSlots.reclaim` then finds slots whose vector the cache no longer
  holds (read-only look at the :class:`~impls.bandana.cache.CacheState`) and
  parks them as chunk k's;
* :meth:`DramSlots.release` ``(k + 2)`` makes them free again. By then chunk k's
  copies are done and chunk k is served (the replay serves chunk j before it
  decides chunk j + 2), and no later chunk's lookups were mapped to them.

Reclaiming scans all slots, so it runs only when the free slots would not cover
the next two chunks' insertions; ``slack`` extra slots (a fraction of the
capacity) make that every few chunks rather than every chunk. When a chunk
inserts more than there are free slots, the caller drains its pipeline, releases
everything parked and, if that is still short, grows the store (:meth:`grow`).
"""
from __future__ import annotations

from collections import deque

import numpy as np
from numba import njit

SLACK = 0.25     # extra slots, as a fraction of the capacity, so reclaiming is not per chunk


@njit(cache=True)
def _assign(ins_ids, slot_of, owner, filled, free, n_free, ins_slot):
    """Give each id of ``ins_ids`` without a slot one from ``free[:n_free]`` (top first).

    ``ins_slot[k]`` = the slot to copy ``ins_ids[k]`` into, or -1 (it already has one,
    or an earlier entry of ``ins_ids`` copies it). Returns the new free count, or
    -(slots needed) - 1 when there are too few (then nothing changed).
    """
    need = 0
    for k in range(ins_ids.shape[0]):
        v = ins_ids[k]
        if slot_of[v] == -1:
            slot_of[v] = -2
            need += 1
    if need > n_free:
        for k in range(ins_ids.shape[0]):
            if slot_of[ins_ids[k]] == -2:
                slot_of[ins_ids[k]] = -1
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
    return n_free


@njit(cache=True)
def _reclaim(owner, slot_of, kmap, stride, pos, use_pos, out):
    """Unmap every slot whose vector is not cached (``kmap[stride * key] < 0``, key its
    storage position or, when not ``use_pos``, its id); their numbers go to ``out``.
    Returns how many."""
    n = 0
    for s in range(owner.shape[0]):
        v = owner[s]
        if v >= 0:
            key = pos[v] if use_pos else v
            if kmap[stride * key] < 0:
                owner[s] = -1
                slot_of[v] = -1
                out[n] = s
                n += 1
    return n


class DramSlots:
    """Slots for the vectors of a DRAM cache of ``capacity`` vectors (of ``n_vectors``).

    ``chunk_inserts``: the most vectors one chunk is expected to insert; the store
    starts with ``capacity + 2 × chunk_inserts + slack`` slots (at most
    ``n_vectors + chunk_inserts``) and grows only through :meth:`grow`.
    """

    def __init__(self, n_vectors: int, vector_bytes: int, capacity: int, chunk_inserts: int):
        self.n_vectors, self.vector_bytes = int(n_vectors), int(vector_bytes)
        self.capacity = min(int(capacity), self.n_vectors)
        self.chunk_inserts = max(1, int(chunk_inserts))
        index = np.int32 if self.n_vectors < np.iinfo(np.int32).max else np.int64
        self.slot_of = np.full(self.n_vectors, -1, dtype=index)
        self._allocate(self.target_slots())
        self.reclaims = 0

    def target_slots(self) -> int:
        """Slots for the capacity, two chunks' insertions and the slack."""
        i = min(self.chunk_inserts, self.n_vectors)
        return min(self.capacity + 2 * i + int(np.ceil(SLACK * self.capacity)), self.n_vectors + i)

    def _allocate(self, slots: int) -> None:
        self.bytes = np.zeros((slots, self.vector_bytes), dtype=np.uint8)
        self.owner = np.full(slots, -1, dtype=np.int64)
        self.filled = np.zeros(slots, dtype=np.uint8)
        self.free = np.arange(slots - 1, -1, -1, dtype=np.int64)   # popped from the end: slot 0 first
        self.n_free = slots
        self.parked: deque[tuple[int, np.ndarray]] = deque()
        self._scratch = np.empty(slots, dtype=np.int64)

    @property
    def slots(self) -> int:
        """Slots held (rows of ``bytes``)."""
        return self.bytes.shape[0]

    @property
    def nbytes(self) -> int:
        """DRAM held for the copy, bytes: the slots plus the id → slot map and slot bookkeeping."""
        return self.bytes.nbytes + self.slot_of.nbytes + self.owner.nbytes + self.filled.nbytes \
            + self.free.nbytes + self._scratch.nbytes

    def clear(self) -> None:
        """Empty every slot (nothing may be in flight)."""
        self.slot_of[:] = -1
        self._allocate(self.slots)

    def assign(self, ins_ids: np.ndarray) -> np.ndarray | None:
        """Slots for a chunk's inserted ids (see :func:`_assign`: -1 = no copy needed), or
        None when the free slots are too few (nothing changed then)."""
        ins_slot = np.empty(ins_ids.shape[0], dtype=np.int64)
        got = _assign(ins_ids, self.slot_of, self.owner, self.filled, self.free, self.n_free, ins_slot)
        if got < 0:
            return None
        self.n_free = got
        return ins_slot

    def needed(self, ins_ids: np.ndarray) -> int:
        """Distinct ids of ``ins_ids`` without a slot."""
        unslotted = ins_ids[self.slot_of[ins_ids] < 0]
        return int(np.unique(unslotted).shape[0])

    def serve(self, ids: np.ndarray) -> np.ndarray:
        """The slot each of ``ids`` is served from (-1: none), as mapped now."""
        return self.slot_of[ids].astype(np.int64)

    def reclaim(self, chunk: int, state, upcoming_inserts: int) -> int:
        """After chunk ``chunk``'s decisions: when the free slots (plus those parked by the
        previous chunk) fall short of two chunks of ``upcoming_inserts``, unmap the slots
        of vectors ``state`` no longer caches and park them as ``chunk``'s. Returns how
        many were parked."""
        soon = self.n_free + sum(s.shape[0] for c, s in self.parked if c >= chunk - 1)
        if soon >= 2 * upcoming_inserts:
            return 0
        n = _reclaim(self.owner, self.slot_of, state.kmap, state.stride, state.pos, state.use_pos,
                     self._scratch)
        self.reclaims += 1
        if n:
            self.parked.append((chunk, self._scratch[:n].copy()))
        return n

    def release(self, chunk: int | None = None) -> None:
        """Free the slots parked by chunks ``<= chunk - 2`` (all of them when ``chunk`` is
        None: only when no copy is in flight and every decided chunk is served)."""
        while self.parked and (chunk is None or self.parked[0][0] <= chunk - 2):
            slots = self.parked.popleft()[1]
            self.free[self.n_free:self.n_free + slots.shape[0]] = slots
            self.n_free += slots.shape[0]

    def grow(self, slots: int) -> None:
        """Hold ``slots`` slots (more than now), keeping every slot's contents (nothing may
        be in flight)."""
        old = self.slots
        if slots <= old:
            return
        for name, fill in (("bytes", 0), ("owner", -1), ("filled", 0)):
            a = getattr(self, name)
            b = np.full((slots,) + a.shape[1:], fill, dtype=a.dtype)
            b[:old] = a
            setattr(self, name, b)
        free = np.empty(slots, dtype=np.int64)
        free[:self.n_free] = self.free[:self.n_free]
        free[self.n_free:self.n_free + slots - old] = np.arange(slots - 1, old - 1, -1)
        self.free, self.n_free = free, self.n_free + slots - old
        self._scratch = np.empty(slots, dtype=np.int64)

    def resident(self) -> int:
        """Slots that hold a vector's bytes now."""
        return int(np.count_nonzero((self.owner >= 0) & (self.filled == 1)))
