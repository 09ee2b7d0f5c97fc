"""The replay's DRAM copy: a cache of C vectors in about C vectors' bytes.

Vectors live in *slots* (rows of ``bytes``, ``slots × vector_bytes``); ``slot_of[id]``
(one int per table vector) maps an id to its slot, -1 for none. The replay is
pipelined — while the I/O thread copies chunk k's inserted vectors into their slots,
the main thread decides chunk k+1 and then serves chunk k from the slots — so a
slot is never handed out again as soon as its vector leaves the cache:

* after chunk k's decisions, :meth:`DramSlots.assign` gives a free slot to every
  inserted vector without one that chunk k looks up or that is still cached after
  it (vectors that still hold one keep it, and are not copied again: their bytes
  are already there; prefetched vectors evicted unused within the chunk get none);
* :meth:`DramSlots.serve` maps chunk k's lookups to slots and stamps those slots
  "served by k";
* :meth:`DramSlots.reclaim` then unmaps slots whose vector the cache no longer
  holds (read-only look at the :class:`~impls.bandana.sim.cache.CacheState`). A slot
  last served by chunk j <= k - 2 is free at once; one served by k - 1 or k is
  parked until :meth:`DramSlots.release` ``(j + 2)``. The replay serves chunk j
  before it decides chunk j + 2, and copies into a slot only in the chunk that
  handed it out, which serves from it (or keeps the vector cached, so it is not
  reclaimed), so a slot is never written while a chunk still to be served maps
  to it.

Reclaiming scans all slots, so it runs only when the free slots would not cover
the next two chunks' insertions; ``slack`` extra slots (a fraction of the
capacity) make that every few chunks rather than every chunk. When a chunk
inserts more than there are free slots, the caller drains its pipeline, releases
everything parked and, if that is still short, grows the store (:meth:`grow`).
"""
from __future__ import annotations

from collections import deque

import numpy as np

from impls.bandana.nvm.dram_slots_kernels import _assign, _reclaim, _serve

SLACK = 0.25     # extra slots, as a fraction of the capacity, so reclaiming is not per chunk


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
        self.last_served = np.full(slots, -10, dtype=np.int64)
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
            + self.last_served.nbytes + self.free.nbytes + self._scratch.nbytes

    def clear(self) -> None:
        """Empty every slot (nothing may be in flight)."""
        self.slot_of[:] = -1
        self._allocate(self.slots)

    def assign(self, ins_ids: np.ndarray, looked_up: np.ndarray, state) -> np.ndarray | None:
        """Slots for a chunk's inserted ids, given its lookups and the cache ``state`` after
        it (see :func:`~impls.bandana.nvm.dram_slots_kernels._assign`: -1 = no copy), or None when the free slots are too few
        (nothing changed then; ``self.last_need`` says how many it needed)."""
        ins_slot = np.empty(ins_ids.shape[0], dtype=np.int64)
        got = _assign(ins_ids, looked_up, state.kmap, state.stride, state.pos, state.use_pos,
                      self.slot_of, self.owner, self.filled, self.free, self.n_free, ins_slot)
        if got < 0:
            self.last_need = -got - 1
            return None
        self.n_free = got
        return ins_slot

    def compile_kernels(self, ids: np.ndarray, state) -> None:
        """Compile (or load from numba's cache) :func:`~impls.bandana.nvm.dram_slots_kernels._assign`, :func:`~impls.bandana.nvm.dram_slots_kernels._serve` and
        :func:`~impls.bandana.nvm.dram_slots_kernels._reclaim` for lookups of ``ids``'s type and ``state``'s arrays, so that no
        compilation falls in a timed replay. Each runs on no id and no slot: nothing changes."""
        none = ids[:0]
        _assign(np.empty(0, dtype=np.int64), none, state.kmap, state.stride, state.pos, state.use_pos,
                self.slot_of, self.owner, self.filled, self.free, self.n_free, np.empty(0, dtype=np.int64))
        _serve(none, self.slot_of, self.last_served, 0, np.empty(0, dtype=np.int64))
        _reclaim(self.owner[:0], self.slot_of, state.kmap, state.stride, state.pos, state.use_pos,
                 self.last_served, 0, self.free, self.n_free, self._scratch)

    def serve(self, ids: np.ndarray, chunk: int) -> np.ndarray:
        """The slot each of ``ids`` (chunk ``chunk``'s lookups) is served from (-1: none),
        as mapped now."""
        out = np.empty(ids.shape[0], dtype=np.int64)
        _serve(ids, self.slot_of, self.last_served, chunk, out)
        return out

    def reclaim(self, chunk: int, state, upcoming_inserts: int) -> int:
        """After chunk ``chunk``'s decisions (and :meth:`serve`): when the free slots (plus
        those parked for the previous chunk) fall short of two chunks of ``upcoming_inserts``,
        unmap the slots of vectors ``state`` no longer caches (see :func:`~impls.bandana.nvm.dram_slots_kernels._reclaim`).
        Returns how many were unmapped."""
        soon = self.n_free + sum(s.shape[0] for c, s in self.parked if c >= chunk - 1)
        if soon >= 2 * upcoming_inserts:
            return 0
        before = self.n_free
        self.n_free, n, n_prev = _reclaim(self.owner, self.slot_of, state.kmap, state.stride, state.pos,
                                          state.use_pos, self.last_served, chunk, self.free, self.n_free,
                                          self._scratch)
        self.reclaims += 1
        for key, lo, hi in ((chunk - 1, 0, n_prev), (chunk, n_prev, n)):
            if hi > lo:
                self.parked.append((key, self._scratch[lo:hi].copy()))
        return self.n_free - before + n

    def release(self, chunk: int | None = None) -> None:
        """Free the slots parked for chunks ``<= chunk - 2`` (all of them when ``chunk`` is
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
        for name, fill in (("bytes", 0), ("owner", -1), ("filled", 0), ("last_served", -10)):
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
