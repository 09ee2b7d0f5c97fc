"""Embedding lookup traces for Bandana: a synthetic generator with planted structure, CSR helpers.

Longer than 400 lines: the generator's chunked model and the writer that streams it to disk
(:func:`write_trace`) share its state, and split they would reach into each other.

A trace is CSR over queries: ``offsets`` (int64, length Q+1, ``offsets[0] == 0``,
non-decreasing, ``offsets[-1] == len(indices)``) and ``indices`` (int64 vector ids in
``[0, N)``); query ``q`` looks up ``indices[offsets[q]:offsets[q+1]]``. Queries are in
time order, so :func:`split_in_time` trains layouts on the past and evaluates them on
the future.

The synthetic generator (:func:`generate_trace`, a registry generator) plants the
structure Bandana exploits and the structure that makes it hard:

* **communities** — each vector belongs to one latent community (log-normal sizes
  around ``community_size``, members a random subset of ids, so the identity layout
  has no locality);
* **popularity** — community ``c`` has weight ``rank(c) ** -zipf_exponent`` (random
  ranking), and within it the member of rank ``r`` (random) has weight
  ``r ** -member_exponent``; a vector's popularity is the product (normalized), a
  heavy-tailed (Zipf-like) law with ids carrying no popularity order;
* **queries** — ``1 + Poisson(communities_per_query - 1)`` communities are picked by
  community popularity and each lookup is drawn (by member weight) from one of them,
  except a ``global_fraction`` of lookups drawn from the whole table by popularity;
  query sizes are geometric (or ``1 + Poisson``) with mean ``mean_query_size``; ids may
  repeat within a query;
* **drift** — community popularity moves along the trace: at time ``t`` in [0, 1]
  community ``c`` is weighted by ``exp(drift * t * z_c)``, ``z_c ~ N(0, 1)``, in
  ``drift_segments`` steps; the future differs from the training past;
* **values** — ``vectors[v] = centroid[community[v]] + noise * N(0, I)`` (centroids
  ``N(0, I)`` in ``dim`` dimensions), so value similarity (what K-means sees) predicts
  co-access only as far as ``noise`` lets it. ``noise ≈ 0`` makes K-means see the
  communities exactly, and more noise hides them, the more so the more communities
  there are (``impls/bandana/NOTES.md`` gives where K-means lands at each noise).

Every parameter is an assumption: Bandana released no trace, and no published statistic
of its tables fixes them. The manifests use one value of each at every profile.

Everything is vectorized numpy, processed in fixed-size chunks, over independent
streams derived from ``seed`` (:func:`stream`), so the same seed gives the same arrays
and e.g. ``with_vectors`` does not change the trace.
"""
from __future__ import annotations

import errno
import re
import zlib

import numpy as np

_CHUNK_LOOKUPS = 1 << 22  # lookups generated per vectorized chunk (bounds temporary memory)
_MAX_COMMUNITIES_PER_QUERY = 16


def stream(seed: int, purpose: str) -> np.random.Generator:
    """Return a Generator for ``purpose`` seeded by ``seed``, independent of every other purpose.

    numpy's Fisher–Yates shuffles from two PCG64 streams that are mere offsets of one
    another come out strongly correlated (``default_rng(1).permutation(n)`` and the
    same generator's permutation after a few hundred draws share most of their
    structure), so every random component here draws from its own stream, keyed by
    ``(seed, crc32(purpose))``.
    """
    return np.random.default_rng([int(seed), zlib.crc32(purpose.encode())])


class TraceError(ValueError):
    """A trace's arrays are inconsistent; the message says which array and what was expected."""


# ----------------------------------------------------------------------------- validation

def check_one_dimensional(offsets: np.ndarray, indices: np.ndarray, *, name: str = "trace") -> None:
    """Raise :class:`TraceError` unless ``offsets`` and ``indices`` are 1-D; a 2-D ``indices``
    (a batch of fixed-size bags, as an EmbeddingBag takes them without offsets) is told how to
    flatten it. Cheap: a caller checks it before any check of the ids' values."""
    if offsets.ndim != 1:
        raise TraceError(f"{name}: offsets must be 1-D, got shape {offsets.shape}")
    if indices.ndim == 2:
        rows, bag = indices.shape
        raise TraceError(f"{name}: indices must be 1-D, got shape {indices.shape}: for {rows} bags of "
                         f"{bag} ids each, flatten them (indices.reshape(-1)) and pass offsets "
                         f"0, {bag}, {2 * bag}, ... (np.arange({rows} + 1) * {bag})")
    if indices.ndim != 1:
        raise TraceError(f"{name}: indices must be 1-D, got shape {indices.shape}")


def validate_trace(offsets, indices, num_vectors: int | None = None, *, name: str = "trace"
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(offsets, indices)`` as int64 arrays, or raise :class:`TraceError`.

    Checks: both 1-D integers; ``offsets`` non-empty, starts at 0, non-decreasing,
    ends at ``len(indices)``; with ``num_vectors``, every id in ``[0, num_vectors)``.
    """
    offsets = np.asarray(offsets)
    indices = np.asarray(indices)
    check_one_dimensional(offsets, indices, name=name)
    for label, array in (("offsets", offsets), ("indices", indices)):
        if array.size and not np.issubdtype(array.dtype, np.integer):
            raise TraceError(f"{name}: {label} must hold integers, got dtype {array.dtype}{_float_hint(array)}")
    if offsets.size == 0:
        raise TraceError(f"{name}: offsets is empty; a trace of Q queries needs Q+1 offsets starting at 0")
    offsets = offsets.astype(np.int64, copy=False)
    indices = indices.astype(np.int64, copy=False)
    lengths = (f" (they sum to len(indices) = {indices.size}: bag lengths? offsets are "
               "np.concatenate([[0], np.cumsum(lengths)]))"
               if offsets.min() >= 0 and int(offsets.sum()) == indices.size else "")
    if offsets[0] != 0:
        raise TraceError(f"{name}: offsets[0] is {int(offsets[0])}, expected 0{lengths}")
    steps = np.diff(offsets)
    if steps.size and steps.min() < 0:
        q = int(np.argmax(steps < 0))
        raise TraceError(f"{name}: offsets must be non-decreasing; offsets[{q + 1}] = "
                         f"{int(offsets[q + 1])} < offsets[{q}] = {int(offsets[q])}{lengths}")
    if offsets[-1] != indices.size:
        raise TraceError(f"{name}: offsets[-1] is {int(offsets[-1])}, expected len(indices) = {indices.size}"
                         + (f" (torch EmbeddingBag's offsets leave the last out: append {indices.size})"
                            if offsets[-1] < indices.size else ""))
    if num_vectors is not None and indices.size:
        low, high = int(indices.min()), int(indices.max())
        if low < 0 or high >= num_vectors:
            bad = int(np.argmax((indices < 0) | (indices >= num_vectors)))
            raise TraceError(f"{name}: indices[{bad}] = {int(indices[bad])} is outside [0, {num_vectors}) "
                             f"(ids span [{low}, {high}])")
    return offsets, indices


def negative_id_hint(ids: np.ndarray) -> str:
    """A hint for refused negative ``ids`` ('' unless every negative one is -1: the id FBGEMM
    and padded bags give a pruned or missing row, a lookup that reads nothing)."""
    negative = ids[ids < 0]
    if negative.size and (negative == -1).all():
        return (f" ({negative.size} lookups of id -1, the usual id of a pruned row or of padding: a lookup "
                "that reads nothing; drop them, shortening their bags, before preparing: --renumber would "
                "make -1 a row that is read)")
    return ""


def _float_hint(array: np.ndarray) -> str:
    """What a float array of ids most likely is, as a hint after the refusal ('' for none)."""
    if not np.issubdtype(array.dtype, np.floating):
        return ""
    if np.isnan(array).any():
        return (f", holding NaN at [{int(np.argmax(np.isnan(array)))}] (pandas makes an integer column with a "
                "missing value float64: drop those rows, then .astype(np.int64))")
    if np.isfinite(array).all() and (array == np.round(array)).all():
        exact = 2 ** (np.finfo(array.dtype).nmant + 1)   # every whole number up to it is held exactly
        top = float(np.abs(array).max()) if array.size else 0.0
        if top > exact:
            return (f", whose values reach {top:.0f}, beyond 2^{np.finfo(array.dtype).nmant + 1} = {exact}: above "
                    f"it {array.dtype} cannot hold every whole number, so ids there may already have been rounded "
                    "together (re-export them from their source as integers)")
        return ", whose values are all whole numbers (.astype(np.int64) them)"
    return ""


# ----------------------------------------------------------------------------- CSR helpers

def num_queries(offsets) -> int:
    """Return the number of queries of a CSR trace."""
    return len(offsets) - 1


def query_sizes(offsets) -> np.ndarray:
    """Return the number of lookups of every query (int64)."""
    return np.diff(np.asarray(offsets, dtype=np.int64))


def flatten(offsets, indices, num_vectors: int | None = None) -> np.ndarray:
    """Return the ids in lookup order as a contiguous int64 array (the cache simulator's input).

    Queries are concatenated in time order, so this is ``indices`` itself, validated.
    """
    _, indices = validate_trace(offsets, indices, num_vectors, name="flatten")
    return np.ascontiguousarray(indices, dtype=np.int64)


def split_in_time(offsets, indices, train_fraction: float
                  ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Split a trace by queries: the first ``floor(Q * train_fraction)`` queries train, the rest test.

    Returns ``((train_offsets, train_indices), (test_offsets, test_indices))``, each a
    valid CSR trace (test offsets rebased to start at 0); the indices are views.
    """
    if not 0.0 <= float(train_fraction) <= 1.0:
        raise ValueError(f"train_fraction must be in [0, 1], got {train_fraction!r}")
    offsets, indices = validate_trace(offsets, indices, name="split_in_time")
    q = num_queries(offsets)
    cut = int(np.floor(q * float(train_fraction)))
    boundary = int(offsets[cut])
    train = (offsets[: cut + 1].copy(), indices[:boundary])
    test = (offsets[cut:] - boundary, indices[boundary:])
    return train, test


def query_of_lookup(offsets) -> np.ndarray:
    """Return, for every lookup, the index of the query it belongs to (int64)."""
    sizes = query_sizes(offsets)
    return np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)


# ----------------------------------------------------------------------------- generator

def _draw_counts(rng: np.random.Generator, total: int, mean: float, dist: str) -> np.ndarray:
    """Return positive sizes (int64) summing to exactly ``total`` (the last one is trimmed)."""
    if total <= 0:
        return np.zeros(0, dtype=np.int64)
    parts = []
    drawn = 0
    while drawn < total:
        n = int(1.1 * (total - drawn) / mean) + 16
        if dist == "geometric":
            sizes = rng.geometric(min(1.0, 1.0 / mean), size=n)
        elif dist == "poisson":
            sizes = 1 + rng.poisson(max(mean - 1.0, 0.0), size=n)
        elif dist == "lognormal":  # used for community sizes: mean ``mean``, sigma 0.75
            sigma = 0.75
            sizes = np.maximum(1, np.rint(rng.lognormal(np.log(mean) - sigma ** 2 / 2, sigma, size=n)))
        else:
            raise ValueError(f"unknown size distribution {dist!r}; expected geometric, poisson or lognormal")
        parts.append(sizes.astype(np.int64))
        drawn += int(sizes.sum())
    sizes = np.concatenate(parts)
    cum = np.cumsum(sizes)
    last = int(np.searchsorted(cum, total))  # first index with cum >= total
    sizes = sizes[: last + 1].copy()
    sizes[-1] -= int(cum[last]) - total
    return sizes


def generate_trace(seed: int, *, num_vectors: int, num_lookups: int, dim: int = 32,
                   zipf_exponent: float = 1.0, member_exponent: float = 0.5,
                   community_size: float = 64.0,
                   mean_query_size: float = 30.0, query_size_dist: str = "geometric",
                   communities_per_query: float = 2.0, global_fraction: float = 0.1,
                   drift: float = 1.0, drift_segments: int = 64, noise: float = 0.75,
                   with_vectors: bool = True) -> dict[str, np.ndarray]:
    """Return a synthetic Bandana lookup trace (see the module docstring for the model).

    Returns ``{"offsets": int64[Q+1], "indices": int64[num_lookups], "community": int64[N],
    "popularity": float64[N] (each id's probability at time 0, summing to 1),
    "vectors": float32[N, dim]}`` (``vectors`` omitted when ``with_vectors`` is false).
    ``num_lookups`` is met exactly (the last query is trimmed).
    """
    params = {k: v for k, v in locals().items() if k not in ("seed", "with_vectors")}
    model = _TraceModel(seed, **params)
    indices = np.empty(model.total, dtype=np.int64)
    for a, b, out in model.lookup_chunks():
        indices[a:b] = out
    result = {"offsets": model.offsets, "indices": indices, "community": model.community,
              "popularity": model.weight}
    if with_vectors:
        vectors = np.empty((model.n, model.dim), dtype=np.float32)
        for a, b, rows in model.vector_chunks():
            vectors[a:b] = rows
        result["vectors"] = vectors
    return result


def write_trace(directory, seed: int, *, with_vectors: bool = True, **params) -> dict[str, np.ndarray]:
    """:func:`generate_trace` written to ``directory/<name>.npy``, for traces larger than RAM.

    ``indices`` and ``vectors`` are generated and written a chunk at a time
    (``_CHUNK_LOOKUPS`` lookups; the matching number of vector rows), the other
    arrays (per query or per vector id) whole. The files hold exactly the arrays
    :func:`generate_trace` returns for the same arguments. The files are written
    into a temporary sibling directory renamed to ``directory`` at the end, so a directory
    that exists is complete; a failed write removes it and raises ``OSError`` naming
    ``directory`` and the size needed, and one a killed writer left is removed by the next.
    Returns the arrays memory-mapped read-only."""
    import os
    import shutil
    from pathlib import Path

    from impls.harness import atomic

    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    atomic.remove_stale(directory.parent, f".{directory.name}.pid*.tmp",
                        re.compile(rf"\.{re.escape(directory.name)}\.pid(\d+)\.tmp"))
    tmp = directory.with_name(f".{directory.name}.pid{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model = _TraceModel(seed, **params)
    needed = 8 * (model.total + 2 * model.n + model.offsets.size) + (4 * model.n * model.dim if with_vectors else 0)
    try:
        tmp.mkdir()
        for name, array in (("offsets", model.offsets), ("community", model.community),
                            ("popularity", model.weight)):
            np.save(tmp / f"{name}.npy", array, allow_pickle=False)
        _write_rows(tmp / "indices.npy", np.int64, (model.total,), model.lookup_chunks())
        if with_vectors:
            _write_rows(tmp / "vectors.npy", np.float32, (model.n, model.dim), model.vector_chunks())
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(err, OSError) and err.errno is not None:
            size = f", about {needed / 2**30:.1f} GiB" if err.errno in (errno.ENOSPC, errno.EDQUOT) else ""
            raise type(err)(err.errno, f"writing the trace into {directory}{size}: {err.strerror}",
                            err.filename) from err
        raise
    if directory.exists():
        shutil.rmtree(directory)
    os.replace(tmp, directory)
    return read_trace(directory, with_vectors)


TRACE_FILES = ("offsets", "community", "popularity", "indices")   # and vectors, where written


def read_trace(directory, with_vectors: bool = False) -> dict[str, np.ndarray]:
    """The arrays :func:`write_trace` wrote to ``directory``, memory-mapped read-only.

    Raises ValueError naming ``directory`` where the files cannot be what it wrote: one is
    missing (the vectors too, ``with_vectors``) or shorter than its header says, or their
    lengths disagree (``offsets`` one longer than the queries and ending at ``len(indices)``;
    ``community``, ``popularity`` and the vectors' rows one per vector id). Values changed in place at the right lengths are not
    detected (that would read every lookup)."""
    from pathlib import Path

    directory = Path(directory)
    arrays = {}
    for path in sorted(directory.glob("*.npy")):
        try:
            arrays[path.stem] = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as err:
            raise ValueError(f"trace {directory}: {path.name} is unreadable ({err})") from None
    missing = [name for name in TRACE_FILES + ("vectors",) * with_vectors if name not in arrays]
    if missing:
        raise ValueError(f"trace {directory}: {', '.join(missing)} missing")
    offsets, n = arrays["offsets"], arrays["community"].shape[0]
    end = int(offsets[-1]) if offsets.ndim == 1 and offsets.size else None
    rows = {"popularity": arrays["popularity"].shape[0],
            **({"vectors": arrays["vectors"].shape[0]} if "vectors" in arrays else {})}
    if end != arrays["indices"].shape[0] or any(count != n for count in rows.values()):
        raise ValueError(f"trace {directory}: the files' lengths disagree (offsets of shape {offsets.shape} "
                         f"end at {end} of {arrays['indices'].shape[0]} lookups; {n} vector ids against {rows})")
    return arrays


def _write_rows(path, dtype, shape, chunks) -> None:
    """Write a ``.npy`` of ``shape`` whose rows ``a:b`` are the ``(a, b, rows)`` of ``chunks``."""
    header = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    offset = header.offset
    row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * np.dtype(dtype).itemsize
    del header
    with open(path, "r+b") as handle:
        for a, _, rows in chunks:
            handle.seek(offset + a * row_bytes)
            handle.write(np.ascontiguousarray(rows, dtype=dtype).data)


class _TraceModel:
    """The generator's per-vector and per-query state; lookups and vectors come in chunks."""

    def __init__(self, seed: int, *, num_vectors: int, num_lookups: int, dim: int = 32,
                 zipf_exponent: float = 1.0, member_exponent: float = 0.5,
                 community_size: float = 64.0,
                 mean_query_size: float = 30.0, query_size_dist: str = "geometric",
                 communities_per_query: float = 2.0, global_fraction: float = 0.1,
                 drift: float = 1.0, drift_segments: int = 64, noise: float = 0.75):
        n = int(num_vectors)
        total = int(num_lookups)
        if n <= 0 or total <= 0:
            raise ValueError(f"num_vectors and num_lookups must be positive, "
                             f"got {num_vectors}, {num_lookups}")
        if not 0.0 <= global_fraction <= 1.0:
            raise ValueError(f"global_fraction must be in [0, 1], got {global_fraction}")
        if communities_per_query < 1 or mean_query_size < 1 or community_size < 1:
            raise ValueError("communities_per_query, mean_query_size and community_size must be >= 1")
        for key, exponent in (("zipf_exponent", zipf_exponent), ("member_exponent", member_exponent)):
            if not np.isfinite(float(exponent)):     # a NaN or infinite exponent makes every popularity NaN
                raise ValueError(f"{key} must be a finite number, got {exponent}")
        self.n, self.total, self.dim = n, total, int(dim)
        self.noise, self.global_fraction = float(noise), float(global_fraction)
        rng_comm = stream(seed, "trace/communities")
        rng_pop = stream(seed, "trace/popularity")
        self.rng_query = rng_query = stream(seed, "trace/queries")
        self.rng_vec = stream(seed, "trace/vectors")

        # communities: random members, log-normal sizes
        csizes = _draw_counts(rng_comm, n, float(community_size), "lognormal")
        ncomm = csizes.size
        members = rng_comm.permutation(n).astype(np.int64)  # members grouped by community
        cstart = np.zeros(ncomm + 1, dtype=np.int64)
        np.cumsum(csizes, out=cstart[1:])
        community = np.empty(n, dtype=np.int64)
        community[members] = np.repeat(np.arange(ncomm, dtype=np.int64), csizes)

        # popularity: Zipf over a random ranking of communities, milder Zipf within each
        comm_weight = (rng_pop.permutation(ncomm).astype(np.float64) + 1.0) ** -float(zipf_exponent)
        rank_in = (np.arange(n, dtype=np.int64) - np.repeat(cstart[:-1], csizes)).astype(np.float64) + 1.0
        member_weight = rank_in ** -float(member_exponent)  # in ``members`` order
        member_cdf = np.cumsum(member_weight)
        member_cdf_before = np.concatenate(([0.0], member_cdf))
        comm_member_total = member_cdf_before[cstart[1:]] - member_cdf_before[cstart[:-1]]
        weight = np.empty(n, dtype=np.float64)
        weight[members] = member_weight * np.repeat(comm_weight / comm_member_total, csizes)
        weight /= weight.sum()
        global_cdf = np.cumsum(weight)

        # drift: community popularity per time segment
        segments = max(1, int(drift_segments))
        z = rng_pop.standard_normal(ncomm)
        times = (np.arange(segments) + 0.5) / segments
        log_w = np.log(comm_weight)[None, :] + float(drift) * times[:, None] * z[None, :]
        log_w -= log_w.max(axis=1, keepdims=True)
        comm_cdf = np.cumsum(np.exp(log_w), axis=1)  # segments x ncomm

        # queries
        sizes = _draw_counts(rng_query, total, float(mean_query_size), query_size_dist)
        nq = sizes.size
        offsets = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        kq = np.minimum(1 + rng_query.poisson(float(communities_per_query) - 1.0, size=nq),
                        _MAX_COMMUNITIES_PER_QUERY).astype(np.int64)
        slot_off = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(kq, out=slot_off[1:])
        slot_query = np.repeat(np.arange(nq, dtype=np.int64), kq)
        slot_segment = np.minimum(slot_query * segments // max(nq, 1), segments - 1)
        slot_comm = np.empty(slot_query.size, dtype=np.int64)
        u = rng_query.random(slot_query.size)
        bounds = np.searchsorted(slot_segment, np.arange(segments + 1))
        for s in range(segments):
            lo, hi = bounds[s], bounds[s + 1]
            if hi > lo:
                cdf = comm_cdf[s]
                picks = np.searchsorted(cdf, u[lo:hi] * cdf[-1], side="right")
                slot_comm[lo:hi] = np.minimum(picks, ncomm - 1)

        self.offsets, self.sizes, self.kq, self.slot_off = offsets, sizes, kq, slot_off
        self.slot_comm, self.members, self.member_cdf = slot_comm, members, member_cdf
        self.member_cdf_before, self.cstart, self.global_cdf = member_cdf_before, cstart, global_cdf
        self.community, self.weight, self.ncomm, self.nq = community, weight, ncomm, nq

    def lookup_chunks(self):
        """Yield ``(a, b, ids)``: lookups ``a:b`` (int64), whole queries, in order (consumes
        the query stream: iterate once)."""
        n, nq, offsets, sizes = self.n, self.nq, self.offsets, self.sizes
        kq, slot_off, slot_comm, members = self.kq, self.slot_off, self.slot_comm, self.members
        member_cdf, member_cdf_before, cstart = self.member_cdf, self.member_cdf_before, self.cstart
        global_cdf, global_fraction, rng_query = self.global_cdf, self.global_fraction, self.rng_query
        q0 = 0
        while q0 < nq:
            q1 = int(np.searchsorted(offsets, offsets[q0] + _CHUNK_LOOKUPS, side="right")) - 1
            q1 = min(max(q1, q0 + 1), nq)
            a, b = int(offsets[q0]), int(offsets[q1])
            qs = np.repeat(np.arange(q0, q1, dtype=np.int64), sizes[q0:q1])
            u_kind, u_slot, u_pick = (rng_query.random(b - a) for _ in range(3))
            out = np.empty(b - a, dtype=np.int64)
            glob = u_kind < global_fraction
            if glob.any():
                picks = np.searchsorted(global_cdf, u_pick[glob] * global_cdf[-1], side="right")
                out[glob] = np.minimum(picks, n - 1)
            loc = ~glob
            if loc.any():
                ql = qs[loc]
                slot = slot_off[ql] + (u_slot[loc] * kq[ql]).astype(np.int64)
                c = slot_comm[slot]
                lo_w, hi_w = member_cdf_before[cstart[c]], member_cdf_before[cstart[c + 1]]
                pos = np.searchsorted(member_cdf, lo_w + u_pick[loc] * (hi_w - lo_w), side="right")
                pos = np.clip(pos, cstart[c], cstart[c + 1] - 1)
                out[loc] = members[pos]
            yield a, b, out
            q0 = q1

    def vector_chunks(self):
        """Yield ``(a, b, rows)``: ``vectors[a:b]`` (float32), centroid plus noise (iterate once)."""
        centroids = self.rng_vec.standard_normal((self.ncomm, self.dim), dtype=np.float32)
        step = max(1, _CHUNK_LOOKUPS // max(self.dim, 1))
        for a in range(0, self.n, step):
            b = min(self.n, a + step)
            rows = self.rng_vec.standard_normal((b - a, self.dim), dtype=np.float32)
            rows *= np.float32(self.noise)
            rows += centroids[self.community[a:b]]
            yield a, b, rows
