"""L LSH hash tables of capacity-bounded buckets over the output neurons, and the
schedules that refresh them.

Memory is sized from the label count: each table is a CSR (``offsets`` of
``2**range_pow + 1`` and ``items`` of ``n_items`` int32), i.e. ``L × (n_items + 2**range_pow)``
int32 in all, instead of the reference code's fixed ``L × 2**18 × 128`` slots.
``range_pow`` defaults to about log2(n_items / 2.5) (18 at 670k labels, the reference code's
``RangePow`` for Amazon-670K), capped at the width of the widest code the hashes make (14 bits
for the reference index at K=6, whose codes run 0..9,555: see :mod:`impls.slide.core.lsh`).

Refreshing, on a :class:`Schedule`:
- *rehash*: re-insert every neuron with its current weights (same hash functions);
- *rebuild*: draw new hash functions, then re-insert.

Between refreshes, :meth:`HashTables.move` re-inserts a few neurons (the trainer's upkeep)
without touching the CSR: a moved neuron gets a slot that holds its current code per table,
linked (doubly) into a per-table chain hashed by code; a query reads a bucket's chain (most
recently moved first), then the CSR's items that have not moved, last inserted first
(``table_kernels.bucket_into``). A bucket still yields at most ``capacity`` neurons, the
newest: a re-inserted neuron is the newest of its bucket whether or not its code changed, as
in a FIFO ring buffer. When the slots run out, the moved codes are folded into the CSR by one
build (no hashing) that re-inserts every neuron in the order they were last inserted, so FIFO
keeps the recently moved ones; a rehash or rebuild re-inserts all in id order.
``delta_rows`` slots cost ``L × delta_rows × 3`` int32 plus ``L ×`` (``delta_rows`` rounded
up to a power of two) int32 chain heads: 154 MB at 670,091 labels and L = 50 with the default
``n_items // 4``.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from impls.slide.core import table_kernels as K
from impls.slide.core.lsh import LSH, make_lsh

POLICIES = {"fifo": K.FIFO, "reservoir": K.RESERVOIR}


def auto_range_pow(n_items: int, load: float = 2.5) -> int:
    """Bucket-count exponent for ``n_items`` neurons at ~``load`` neurons per bucket."""
    return max(4, int(round(math.log2(max(n_items / load, 16)))))


@dataclasses.dataclass
class HashTables:
    lsh: LSH
    n_items: int
    capacity: int
    policy: str
    offsets: np.ndarray   # int32 (L, n_buckets + 1)
    items: np.ndarray     # int32 (L, n_items)
    seed: int
    builds: int = 0
    codes: np.ndarray | None = None   # int32 (L, n_items): every neuron's bucket per table at the last build
    delta_rows: int = 0               # slots for neurons moved since the last build (0: no moves)
    moves: int = 0                    # neurons re-bucketed by move(), in all
    folds: int = 0                    # builds forced by a full delta

    def __post_init__(self):
        D, L = self.delta_rows, self.lsh.L
        heads = 1 << max(1, (max(D, 1) - 1).bit_length())  # >= D: chains of about one entry
        self.slot_of = np.full(self.n_items, -1, np.int32)
        self.n_slots = np.zeros(1, np.int64)
        self.slot_row = np.zeros(max(D, 1), np.int32)       # the neuron in each slot
        self.moved = np.zeros((L, max(D, 1)), np.int32)      # current codes of moved neurons, by slot
        self.dhead = np.full((L, heads), -1, np.int32)       # per table: newest slot of each chain
        self.dnext = np.zeros((L, max(D, 1)), np.int32)
        self.dprev = np.zeros((L, max(D, 1)), np.int32)
        self.inserted_at = np.zeros(self.n_items, np.int64)  # move() call that last inserted each neuron
        self._moves_made = 0
        self._stamp = np.zeros(self.n_items, np.uint8)

    @classmethod
    def create(cls, lsh: LSH, n_items: int, capacity: int = 128, policy: str = "fifo",
               seed: int = 0, delta_rows: int | None = 0) -> "HashTables":
        """Empty tables; ``delta_rows``: room for neurons moved between builds (None: ``n_items // 4``,
        at least 1,024 and at most ``n_items``; 0: :meth:`move` folds every time, i.e. rebuilds
        the CSR)."""
        if policy not in POLICIES:
            raise ValueError(f"unknown bucket policy {policy!r}; expected one of {', '.join(POLICIES)}")
        if delta_rows is None:
            delta_rows = min(n_items, max(1024, n_items // 4))
        if delta_rows < 0:
            raise ValueError(f"delta_rows must be >= 0, got {delta_rows}")
        offsets = np.zeros((lsh.L, lsh.n_buckets + 1), np.int32)
        items = np.zeros((lsh.L, n_items), np.int32)
        return cls(lsh, n_items, capacity, policy, offsets, items, seed, delta_rows=int(delta_rows))

    @property
    def nbytes(self) -> int:
        """Bytes of the CSR and the delta."""
        delta = (self.slot_of, self.slot_row, self.moved, self.dhead, self.dnext, self.dprev, self.inserted_at)
        return self.offsets.nbytes + self.items.nbytes + sum(a.nbytes for a in delta)

    def kernel_args(self) -> tuple:
        """What ``table_kernels.bucket_into`` takes after the table and code:
        (offsets, items, slot_of, moved, dhead, dnext, slot_row, capacity)."""
        return (self.offsets, self.items, self.slot_of, self.moved, self.dhead, self.dnext, self.slot_row,
                self.capacity)

    @property
    def n_moved(self) -> int:
        """Neurons whose codes the delta holds (moved since the last build)."""
        return int(self.n_slots[0])

    def current_codes(self) -> np.ndarray:
        """int32 (L, n_items): every neuron's bucket per table now (the build's, or its move's)."""
        codes = self.codes.copy()
        rows = np.flatnonzero(self.slot_of >= 0)
        codes[:, rows] = self.moved[:, self.slot_of[rows]]
        return codes

    def move(self, vectors: np.ndarray, rows: np.ndarray, n_chunks: int = 8) -> None:
        """Re-bucket neurons ``rows`` by their weights (rows of ``vectors``, (n_items, dim)) under the
        current hash functions, through the delta; a full delta is first folded by a build."""
        if self.codes is None:
            raise ValueError("move() before the first insert_all()")
        rows = np.unique(np.asarray(rows, np.int64))
        if rows.size == 0:
            return
        if rows[0] < 0 or rows[-1] >= self.n_items:
            raise ValueError(f"rows must lie in [0, {self.n_items})")
        self.moves += rows.size
        self._moves_made += 1
        sub = np.ascontiguousarray(vectors[rows], np.float32)
        new = self.lsh.hash_table_major(sub, n_chunks)
        room = self.delta_rows - self.n_moved
        if int((self.slot_of[rows] < 0).sum()) > room:   # rows already in the delta keep their slots
            # full: fold the moved codes into the build's (and, past the delta's size, these too)
            K.fold_moved(self.codes, self.slot_of, self.moved)
            self.folds += 1
            if rows.size > self.delta_rows:
                self.codes[:, rows] = new
                self.inserted_at[rows] = self._moves_made
                self._build(self.codes, by_recency=True)
                return
            self._build(self.codes, by_recency=True)
        self.inserted_at[rows] = self._moves_made
        K.move_rows(rows.astype(np.int32), new, self.slot_of, self.n_slots, self.slot_row,
                    self.moved, self.dhead, self.dnext, self.dprev)

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) ``fold_moved``, which only a full delta or a
        rehash after moves calls, on copies of these tables' arrays (the types training
        passes); the tables are left unchanged. Returns None; nothing before the first
        insertion."""
        if self.codes is not None:
            K.fold_moved(self.codes.copy(), self.slot_of.copy(), self.moved.copy())

    def _clear_delta(self) -> None:
        self.slot_of[:] = -1
        self.n_slots[0] = 0
        self.dhead[:] = -1

    def insert_all(self, vectors: np.ndarray, n_chunks: int = 8, changed: np.ndarray | None = None) -> None:
        """(Re)insert every neuron: row ``i`` of ``vectors`` is neuron ``i``'s weights.

        ``changed``: ids of the only rows whose weights changed since the last insertion; the
        others keep their codes (same hash functions), so only these are hashed again.
        """
        if vectors.shape[0] != self.n_items:
            raise ValueError(f"{vectors.shape[0]} vectors for tables of {self.n_items} items")
        if changed is None or self.codes is None:
            self.codes = self.lsh.hash_table_major(vectors, n_chunks)
        else:
            if self.n_moved:
                K.fold_moved(self.codes, self.slot_of, self.moved)
            if changed.size:
                self.lsh.hash_into(vectors, changed, self.codes, n_chunks)
        self._build(self.codes)

    def insert_codes(self, codes: np.ndarray) -> None:
        """Insert items by their precomputed codes, (n_items, L)."""
        self.codes = np.array(np.asarray(codes, np.int32).T, order="C")  # a copy: moves write into it
        self._build(self.codes)

    def _build(self, codes_lm: np.ndarray, by_recency: bool = False) -> None:
        """Build the CSR from ``codes_lm`` (L, n_items), inserting the neurons in id order, or with
        ``by_recency`` in the order they were last inserted (ties in id order); empties the delta."""
        self._clear_delta()
        self.builds += 1
        if by_recency:
            order = np.argsort(self.inserted_at, kind="stable").astype(np.int32)
        else:
            self.inserted_at[:] = 0
            order = np.arange(self.n_items, dtype=np.int32)
        K.build(codes_lm, order, self.lsh.n_buckets, self.capacity,
                POLICIES[self.policy], self.seed * 1_000_003 + self.builds, self.offsets, self.items)

    def rebuild(self, vectors: np.ndarray, seed: int, n_chunks: int = 8) -> None:
        """Draw new hash functions (same family and shape), then re-insert everything."""
        old = self.lsh
        shape = {"ratio": old.idx.shape[1] / old.dim} if old.family == "simhash" else {"binsize": old.idx.shape[1]}
        self.lsh = make_lsh(old.family, old.K, old.L, old.dim, seed, old.range_pow, index=old.index,
                            zeros=old.zeros, **shape)
        self.insert_all(vectors, n_chunks)

    def bucket(self, table: int, code: int) -> np.ndarray:
        """The neurons (int32) bucket ``code`` of table ``table`` holds now, delta included, newest first."""
        out = np.empty(self.capacity, np.int32)
        n = K.bucket_into(table, code, *self.kernel_args(), out)
        return out[:n]

    def query(self, x: np.ndarray) -> np.ndarray:
        """Return the sorted union of the L buckets vector ``x`` hashes to (plain API; the
        trainer does this inside its kernel)."""
        return self.retrieve(self.lsh.hash(x[None, :], 1)[0])

    def retrieve(self, codes: np.ndarray) -> np.ndarray:
        """Return the sorted union (int32) of the buckets ``codes[t]`` of every table ``t``."""
        return K.retrieve_union(np.ascontiguousarray(codes, np.int32), *self.kernel_args(), self._stamp)

    def occupancy(self) -> dict:
        sizes = np.diff(self.offsets, axis=1)
        return {"mean_bucket": float(sizes[sizes > 0].mean()) if (sizes > 0).any() else 0.0,
                "max_bucket": int(sizes.max()), "full_buckets": float((sizes >= self.capacity).mean()),
                "stored": int(sizes.sum()) // self.lsh.L}


@dataclasses.dataclass
class Schedule:
    """When to refresh the tables. ``fixed``: every ``every`` iterations (reference code:
    rehash 50, rebuild 1000). ``exponential``: first after ``every``, then each interval
    ``growth`` times the previous (the paper's exponentially growing intervals). ``first``:
    the first refresh at that iteration instead of ``every`` (the intervals after it as
    without it: fixed ``first + every``, ...; the reference code rebuilds at 50, 1050, ...)."""

    every: int
    kind: str = "fixed"
    growth: float = 1.5
    first: int | None = None
    next_at: float = dataclasses.field(init=False)
    interval: float = dataclasses.field(init=False)

    def __post_init__(self):
        if self.kind not in ("fixed", "exponential"):
            raise ValueError(f"schedule kind must be 'fixed' or 'exponential', got {self.kind!r}")
        self.interval = float(self.every)
        self.next_at = float(self.every) if self.every > 0 else math.inf
        if self.first is not None and self.every > 0:
            self.next_at = float(max(1, self.first))

    def due(self, iteration: int) -> bool:
        """True (and advance) when ``iteration`` (1-based, completed) reaches the next refresh."""
        if iteration < self.next_at:
            return False
        if self.kind == "exponential":
            self.interval *= self.growth
        self.next_at = iteration + max(1.0, self.interval) if self.kind == "exponential" else self.next_at + self.every
        return True
