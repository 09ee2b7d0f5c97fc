"""Locality-sensitive hash families producing L bucket codes per vector.

- ``simhash``: K sign bits of sparse ±1 projections (each coordinate kept with
  probability ``ratio``, as the reference code's ``samSize``); per bit
  P[collide] = 1 − θ/π for Gaussian-like projections.
- ``wta``: winner-take-all; each hash is the argmax position within a bin of
  ``binsize`` coordinates (bins are consecutive chunks of random permutations, as the
  reference code), ``log2(binsize)`` bits each. The argmax compares the float32 values with
  their lowest ``log2(binsize)`` bits cleared (one integer max carries the position), so
  values within a few units in the last place of each other tie, and a tie goes to the
  lowest position in the bin; -0.0 ranks below +0.0.
- ``dwta``: densified WTA. With ``zeros="present"`` (the reference code: its
  ``DensifiedWtaHash::getHashEasy`` over a weight row and ``getHash`` over a dense layer's
  every node, ReLU zeros included) a zero is a value like any other, so no bin is ever
  empty and on a dense vector the hash is WTA's: an all-zero bin's winner is a fixed
  position (here the bin's first, unless it mixes -0.0 and +0.0; in the reference the
  position of its lowest coordinate, which over random bins has the same distribution). With ``zeros="absent"`` (Chen &
  Shrivastava's DWTA for sparse data) zero coordinates are missing and an all-zero bin
  borrows the value of another bin (densification).

A table's code combines its K hashes ``h_0 .. h_{K-1}`` as ``sum_k h_k << ((K-1-k) * shift)``:

- ``index="concat"``: ``shift`` is a hash's width (1 bit for SimHash, ``log2(binsize)`` for
  (D)WTA), so the code is the hashes' concatenation, ``K * bits`` bits;
- ``index="reference"``: the reference code's ``LSH::hashesToIndex``, whose (D)WTA shift is
  ``floor(ln(binsize))`` (2 for bins of 8): the 3-bit hashes overlap and carry, so the codes
  are fewer (K=6: 0..9,555; K=8: 0..152,915) and unevenly used, and buckets are coarser
  (SimHash: the same as ``concat``).

A code wider than ``range_pow`` bits is folded by Fibonacci hashing.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from impls.slide.core import lsh_kernels as K_
from impls.slide.core.choices import INDEXES, ZEROS

FAMILIES = {"simhash": K_.SIMHASH, "wta": K_.WTA, "dwta": K_.DWTA}


@dataclasses.dataclass
class LSH:
    family: str
    K: int
    L: int
    dim: int
    range_pow: int
    idx: np.ndarray   # int32 (K*L, m)
    sgn: np.ndarray   # float32 (K*L, m)
    bits: int         # width of one hash's value
    index: str = "concat"   # how a table combines its K hashes (see module doc)
    zeros: str = "present"  # DWTA: a zero coordinate is a value ("present") or missing ("absent")

    @property
    def family_id(self) -> int:
        """The kernels' family: DWTA with every coordinate present is WTA (nothing to densify)."""
        if self.family == "dwta" and self.zeros == "present":
            return FAMILIES["wta"]
        return FAMILIES[self.family]

    @property
    def n_buckets(self) -> int:
        return 1 << self.range_pow

    def __post_init__(self):
        self.shift = index_shift(self.family, self.bits, self.idx.shape[1], self.index)  # bits between hashes
        self.raw_bits = code_bits(self.K, self.bits, self.shift)                        # widest unfolded code
        # SimHash's sparse ±1 projections as a dense matrix (zeros elsewhere) for mat-vecs
        self.proj = np.zeros((self.K * self.L, self.dim), np.float32)
        if self.family == "simhash":
            np.put_along_axis(self.proj, self.idx.astype(np.int64), self.sgn, axis=1)

    def kernel_args(self) -> tuple:
        """What ``lsh_kernels.hash_dense`` takes after the vector:
        (family, idx, proj, K, L, shift, raw_bits, range_pow)."""
        return (self.family_id, self.idx, self.proj, self.K, self.L, self.shift, self.raw_bits, self.range_pow)

    def hash(self, X: np.ndarray, n_chunks: int = 8) -> np.ndarray:
        """Return int32 codes (n, L) for the rows of dense ``X`` (n, dim)."""
        return self.hash_table_major(X, n_chunks).T

    def hash_table_major(self, X: np.ndarray, n_chunks: int = 8) -> np.ndarray:
        """Return int32 codes (L, n), C-contiguous: row ``t`` holds every vector's bucket in table ``t``."""
        X = self._checked(X)
        codes = np.empty((self.L, X.shape[0]), np.int32)
        self.hash_into(X, np.arange(X.shape[0], dtype=np.int64), codes, n_chunks)
        return codes

    def hash_into(self, X: np.ndarray, rows: np.ndarray, codes: np.ndarray, n_chunks: int = 8) -> None:
        """Set ``codes[:, i]`` (int32, (L, >= len(X))) to the L codes of ``X[i]`` for each ``i`` in
        ``rows``, reading the rows in place (no copy of ``X[rows]``)."""
        X = self._checked(X)
        rows = np.ascontiguousarray(rows, np.int64)
        if codes.dtype != np.int32 or codes.shape[0] != self.L or codes.shape[1] < X.shape[0] \
                or not codes.flags.c_contiguous:
            raise ValueError(f"codes must be C-contiguous int32 ({self.L}, >= {X.shape[0]})")
        if rows.size and (rows.min() < 0 or rows.max() >= X.shape[0]):
            raise ValueError(f"rows must lie in [0, {X.shape[0]})")
        K_.hash_rows(X, rows, self.family_id, self.idx, self.sgn, self.K, self.L, self.shift, self.raw_bits,
                     self.range_pow,
                     max(1, min(n_chunks, rows.shape[0])), codes)

    def hash_values(self, X: np.ndarray) -> np.ndarray:
        """int32 (n, K*L): each hash function's value for each row of ``X``, before a table
        combines its K (SimHash: 0/1; WTA/DWTA: the winner's position in its bin, 0 to
        binsize-1, after DWTA's densification). Hash function ``t*K + k`` is table ``t``'s
        ``k``-th. A diagnostic (one row at a time), not a hot path."""
        X = self._checked(X)
        out = np.empty((X.shape[0], self.K * self.L), np.int32)
        xs, codes = np.empty(self.dim, np.int32), np.empty(self.L, np.int32)
        for i in range(X.shape[0]):
            K_.hash_dense(X[i], *self.kernel_args(), out[i], xs, codes)
        return out

    def _checked(self, X: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(np.atleast_2d(X), np.float32)
        if X.shape[1] != self.dim:
            raise ValueError(f"vectors have {X.shape[1]} coordinates, the hash expects {self.dim}")
        return X


def index_shift(family: str, bits: int, binsize: int, index: str) -> int:
    """Bits between successive hashes in a table's code (see the module doc); "reference"
    (D)WTA: ``floor(ln(binsize))`` as LSH.cpp, but at least 1 (at bins of 2 the reference's 0
    would add every hash into one 0..K code)."""
    if index == "concat" or family == "simhash":
        return bits
    return max(1, int(math.floor(math.log(binsize))))


def code_bits(K: int, bits: int, shift: int) -> int:
    """Width in bits of the largest code ``sum_k (2**bits - 1) << (k * shift)``, k < K."""
    return (((1 << bits) - 1) * sum(1 << (k * shift) for k in range(K))).bit_length()


class HashParamError(ValueError):
    """Hash functions that cannot be drawn; ``param`` names the parameter at fault
    ("binsize" or "K"), ``bits`` the codes' width where K is."""

    def __init__(self, param: str, message: str, bits: int = 0):
        self.param, self.bits = param, bits
        super().__init__(message)


def check_hash_params(family: str, K: int, dim: int, binsize: int = 8, ratio: float = 1 / 3,
                      index: str = "concat") -> int:
    """Return the width in bits of the widest table code :func:`make_lsh` would draw for these
    parameters; raise :class:`HashParamError` when (D)WTA's ``binsize`` is not a power of two
    in [2, dim], or when the codes would not fit 63 bits."""
    if family == "simhash":
        bits, width = 1, max(1, int(round(dim * ratio)))
    else:
        if binsize < 2 or binsize & (binsize - 1) or binsize > dim:
            raise HashParamError("binsize", f"binsize must be a power of two in [2, dim={dim}], got {binsize}")
        bits, width = int(binsize).bit_length() - 1, binsize
    raw_bits = code_bits(K, bits, index_shift(family, bits, width, index))
    if raw_bits > 63:
        raise HashParamError("K", f"K={K} hashes make {raw_bits}-bit codes; at most 63 bits fit", raw_bits)
    return raw_bits


def draw_bytes(family: str, K: int, L: int, dim: int, binsize: int = 8, ratio: float = 1 / 3) -> int:
    """Return the most bytes :func:`make_lsh` and the :class:`LSH` it returns hold at once for
    these parameters (a lower bound of the peak; no allocation is made): the float64 random
    keys with their int64 argsort, ``(K*L, dim)`` for SimHash and (permutations, ``dim``) for
    (D)WTA, or what the LSH keeps (int32 indices and float32 signs of ``(K*L, dim * ratio)``
    for SimHash, ``(K*L, binsize)`` for (D)WTA, and the dense float32 ``(K*L, dim)``
    projections), whichever is more."""
    n = K * L
    width = max(1, int(round(dim * ratio))) if family == "simhash" else binsize
    keys = dim * (n if family == "simhash" else -(-n // max(1, dim // binsize)))
    return max(16 * keys, 4 * n * dim + 8 * n * width)


def make_lsh(family: str, K: int, L: int, dim: int, seed: int, range_pow: int | None = None,
             binsize: int = 8, ratio: float = 1 / 3, index: str = "concat", zeros: str = "present") -> LSH:
    """Draw the hash functions of ``family`` (simhash / wta / dwta) for ``dim``-vectors; tables
    combine each K of them by ``index`` ("concat" / "reference", see the module doc) into codes
    of at most ``range_pow`` bits (default and ceiling: the widest code, 30 at most). ``zeros``
    ("present" / "absent"): how DWTA reads a zero coordinate (module doc; other families
    ignore it)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown LSH family {family!r}; expected one of {', '.join(FAMILIES)}")
    if index not in INDEXES:
        raise ValueError(f"unknown table index {index!r}; expected one of {', '.join(INDEXES)}")
    if zeros not in ZEROS:
        raise ValueError(f"unknown DWTA zeros {zeros!r}; expected one of {', '.join(ZEROS)}")
    raw_bits = check_hash_params(family, K, dim, binsize, ratio, index)
    rng = np.random.default_rng(seed)
    n_hashes = K * L
    if family == "simhash":
        m = max(1, int(round(dim * ratio)))
        idx = np.argsort(rng.random((n_hashes, dim)), axis=1)[:, :m].astype(np.int32)
        idx.sort(axis=1)
        sgn = rng.choice(np.array([-1.0, 1.0], np.float32), size=(n_hashes, m))
        bits = 1
    else:
        per_perm = dim // binsize
        n_perm = -(-n_hashes // per_perm)
        perms = np.argsort(rng.random((n_perm, dim)), axis=1)[:, : per_perm * binsize]
        idx = perms.reshape(n_perm * per_perm, binsize)[:n_hashes].astype(np.int32)
        sgn = np.ones((n_hashes, binsize), np.float32)
        bits = int(binsize).bit_length() - 1
    if range_pow is None:
        range_pow = raw_bits
    range_pow = int(min(range_pow, raw_bits, 30))
    return LSH(family, K, L, dim, range_pow, np.ascontiguousarray(idx), np.ascontiguousarray(sgn, np.float32), bits,
               index, zeros)
