"""L LSH hash tables of capacity-bounded buckets over the output neurons, and the
schedules that refresh them.

Memory is sized from the label count: each table is a CSR (``offsets`` of
``2**range_pow + 1`` and ``items`` of ``n_items`` int32), i.e. ``L × (n_items + 2**range_pow)``
int32 in all, instead of the reference code's fixed ``L × 2**18 × 128`` slots.
``range_pow`` defaults to about log2(n_items / 2.5) (2**18 buckets at 670k labels,
as the reference code uses for Amazon-670K).

Refreshing, on a :class:`Schedule`:
- *rehash*: re-insert every neuron with its current weights (same hash functions);
- *rebuild*: draw new hash functions, then re-insert.
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
    codes: np.ndarray | None = None   # int32 (L, n_items): every neuron's current bucket per table

    @classmethod
    def create(cls, lsh: LSH, n_items: int, capacity: int = 128, policy: str = "fifo",
               seed: int = 0) -> "HashTables":
        if policy not in POLICIES:
            raise ValueError(f"unknown bucket policy {policy!r}; expected one of {', '.join(POLICIES)}")
        offsets = np.zeros((lsh.L, lsh.n_buckets + 1), np.int32)
        items = np.zeros((lsh.L, n_items), np.int32)
        return cls(lsh, n_items, capacity, policy, offsets, items, seed)

    @property
    def nbytes(self) -> int:
        return self.offsets.nbytes + self.items.nbytes

    def insert_all(self, vectors: np.ndarray, n_chunks: int = 8, changed: np.ndarray | None = None) -> None:
        """(Re)insert every neuron: row ``i`` of ``vectors`` is neuron ``i``'s weights.

        ``changed``: ids of the only rows whose weights changed since the last insertion; the
        others keep their codes (same hash functions), so only these are hashed again.
        """
        if vectors.shape[0] != self.n_items:
            raise ValueError(f"{vectors.shape[0]} vectors for tables of {self.n_items} items")
        if changed is None or self.codes is None:
            self.codes = self.lsh.hash_table_major(vectors, n_chunks)
        elif changed.size:
            self.lsh.hash_into(vectors, changed, self.codes, n_chunks)
        self._build(self.codes)

    def insert_codes(self, codes: np.ndarray) -> None:
        """Insert items by their precomputed codes, (n_items, L)."""
        self._build(np.ascontiguousarray(np.asarray(codes, np.int32).T))

    def _build(self, codes_lm: np.ndarray) -> None:
        self.builds += 1
        K.build(codes_lm, self.lsh.n_buckets, self.capacity,
                POLICIES[self.policy], self.seed * 1_000_003 + self.builds, self.offsets, self.items)

    def rebuild(self, vectors: np.ndarray, seed: int, n_chunks: int = 8) -> None:
        """Draw new hash functions (same family and shape), then re-insert everything."""
        old = self.lsh
        shape = {"ratio": old.idx.shape[1] / old.dim} if old.family == "simhash" else {"binsize": old.idx.shape[1]}
        self.lsh = make_lsh(old.family, old.K, old.L, old.dim, seed, old.range_pow, **shape)
        self.insert_all(vectors, n_chunks)

    def bucket(self, table: int, code: int) -> np.ndarray:
        return self.items[table, self.offsets[table, code]:self.offsets[table, code + 1]]

    def query(self, x: np.ndarray) -> np.ndarray:
        """Return the sorted union of the L buckets vector ``x`` hashes to (plain API; the
        trainer does this inside its kernel)."""
        return self.retrieve(self.lsh.hash(x[None, :], 1)[0])

    def retrieve(self, codes: np.ndarray) -> np.ndarray:
        """Return the sorted union of the buckets ``codes[t]`` of every table ``t``."""
        return np.unique(np.concatenate([self.bucket(t, c) for t, c in enumerate(codes)]))

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
