"""Bandana's DRAM cache in front of block NVM: an exact, fast trace-driven simulator.

Longer than 400 lines: the simulator's one public state (:class:`CacheState`) with its
in-memory, streamed and throughput entry points, which must agree counter for counter.

Embedding vectors live on NVM in blocks of ``V = block_bytes // vector_bytes``
vectors; a layout (storage-order permutation) says which vectors share a block:
position ``i`` holds vector ``layout[i]``, block ``b`` holds positions
``b*V .. (b+1)*V - 1`` (the last block may be partial). DRAM caches ``capacity``
vectors in LRU order. Policies:

``none``      a miss reads the block and caches the looked-up vector only;
``prefetch``  a miss also caches the block's other (uncached) vectors, at MRU;
``lowpri``    ... but at the LRU end, the first one in storage order evicted first;
``shadow``    ... only those that are in the shadow set: an LRU of the ids of the
              last ``shadow`` (>= capacity) distinct vectors looked up.

For each looked-up vector ``v``, in trace order:

* hit: ``v`` moves to MRU; if a prefetch brought it in and it was not requested
  since, ``prefetch_used += 1`` and it is now requested.
* miss: ``blocks_read += 1``; the candidates are the other vectors of ``v``'s
  block, in storage order, that are not cached (``none``: no candidates;
  ``shadow``: only those in the shadow set). Vectors are evicted from the LRU end
  until ``size + 1 + len(candidates) <= capacity`` (maybe none). ``prefetch`` and
  ``shadow`` then insert the candidates at MRU in storage order, then ``v`` at
  MRU; ``lowpri`` inserts ``v`` at MRU, then the candidates at the LRU end so that
  the first candidate in storage order is the next to be evicted.
  ``prefetched += len(candidates)``. ``v`` is inserted as requested, candidates as
  not requested; a prefetched vector evicted unrequested just disappears, and an
  evicted vector is a candidate again on a later miss of its block.
* ``shadow`` only: after the lookup (hit or miss), ``v`` is touched in the shadow
  set (moved or inserted at its MRU end, its LRU end dropped when over ``shadow``).

Results: ``lookups, hits, misses, blocks_read, prefetched, prefetch_used``,
``effective_bandwidth = (misses + prefetch_used) * vector_bytes / bytes_read``
(the fraction of the bytes read from NVM that lookups used; 0.0 when nothing was
read) and ``bytes_read = blocks_read * block_bytes``.

The state (``CacheState``) is a handful of arrays — one indexed by vector id or
storage position, the others as small as the cache — updated by numba kernels
(``impls.bandana.sim.cache_kernels``: a log-structured LRU, amortized O(1) work per
operation, no per-lookup allocation).
``CacheState.process`` takes lookups a chunk at a time and can report, per
lookup, whether it hit, which block a miss read and which vectors it inserted:
the O_DIRECT replay engine drives the same state with it. ``simulate`` runs a
whole trace; ``simulate_npy`` runs one stored as ``.npy`` and larger than RAM,
from a memory map a chunk at a time with the state carried over (the same
counters as ``simulate`` on the loaded array). Command line: ``python -m impls.bandana.cache --help``.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np

from impls.bandana.sim import cache_kernels as K

POLICIES = ("none", "prefetch", "lowpri", "shadow")
_POLICY_CODES = {"none": K.POLICY_NONE, "prefetch": K.POLICY_PREFETCH,
                 "lowpri": K.POLICY_LOWPRI, "shadow": K.POLICY_SHADOW}
RESULT_KEYS = ("lookups", "hits", "misses", "blocks_read", "prefetched", "prefetch_used",
               "effective_bandwidth", "bytes_read")

# record="inserted" splits a chunk so the inserted-ids buffer stays under this many entries.
_MAX_INSERTED_BUFFER = 1 << 24


class CacheConfigError(ValueError):
    """The simulator's input is invalid (the message names the value)."""


@dataclasses.dataclass(frozen=True)
class CacheResult:
    """Counters of one simulation (see the module docstring for their meaning)."""

    lookups: int
    hits: int
    misses: int
    blocks_read: int
    prefetched: int
    prefetch_used: int
    effective_bandwidth: float
    bytes_read: int

    @property
    def hit_rate(self) -> float:
        """hits / lookups (0.0 with no lookups)."""
        return self.hits / self.lookups if self.lookups else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON-ready), exactly ``RESULT_KEYS``."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class LookupOutcomes:
    """Per-lookup outcomes of one ``CacheState.process`` call.

    ``hit[i]``: lookup ``i`` hit. ``block[i]``: the block its miss read, -1 on a
    hit. With ``record="inserted"``, the vectors miss ``i`` put in the cache are
    ``inserted_ids[inserted_ptr[i]:inserted_ptr[i + 1]]``: the looked-up vector
    first, then the prefetched ones in storage order (empty on a hit).
    """

    hit: np.ndarray
    block: np.ndarray
    inserted_ptr: np.ndarray | None = None
    inserted_ids: np.ndarray | None = None


# --------------------------------------------------------------------------- validation

def _as_id_array(name: str, values) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise CacheConfigError(f"{name} must be a 1-D array of vector ids, got shape {arr.shape}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise CacheConfigError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.max() > np.iinfo(np.int64).max:
        raise CacheConfigError(f"{name} holds {arr.max()}, too large for int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise CacheConfigError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def vectors_per_block(vector_bytes: int, block_bytes: int) -> int:
    """``V = block_bytes // vector_bytes`` (at least 1): a block holds V whole vectors, and
    ``block_bytes - V * vector_bytes`` bytes of it are slack when vector_bytes does not
    divide it (400-byte vectors fill 4000 of a 4096-byte block). Raises CacheConfigError
    when a vector is larger than a block."""
    vector_bytes = _positive_int("vector_bytes", vector_bytes)
    block_bytes = _positive_int("block_bytes", block_bytes)
    if vector_bytes > block_bytes:
        raise CacheConfigError(
            f"vector_bytes={vector_bytes} is larger than block_bytes={block_bytes}: a block must hold a vector")
    return block_bytes // vector_bytes


def check_policy(policy: str) -> int:
    """The kernel code of ``policy``; an error listing the known ones otherwise."""
    try:
        return _POLICY_CODES[policy]
    except (KeyError, TypeError):
        raise CacheConfigError(
            f"unknown policy {policy!r}; known policies: {', '.join(POLICIES)}") from None


def check_layout(layout) -> np.ndarray:
    """``layout`` as contiguous int64, after checking it is a permutation of 0..N-1."""
    arr = _as_id_array("layout", layout)
    index, kind = K.permutation_problem(arr)
    if index >= 0:
        n = arr.shape[0]
        if kind == 1:
            raise CacheConfigError(
                f"layout is not a permutation of 0..{n - 1}: layout[{index}] = {arr[index]} "
                f"is outside [0, {n})")
        first = int(np.flatnonzero(arr[:index] == arr[index])[0])
        raise CacheConfigError(
            f"layout is not a permutation of 0..{n - 1}: layout[{index}] = {arr[index]} "
            f"repeats layout[{first}]")
    return arr


def check_trace(trace, n_vectors: int, name: str = "trace") -> np.ndarray:
    """``trace`` as contiguous int64, after checking every id is in [0, n_vectors)."""
    arr = _as_id_array(name, trace)
    index = K.first_out_of_range(arr, n_vectors)
    if index >= 0:
        raise CacheConfigError(
            f"{name}[{index}] = {arr[index]} is not a vector id: ids must be in [0, {n_vectors}) "
            f"(the layout has {n_vectors} vectors)")
    return arr


def check_sizes(capacity, policy: str, shadow, per_block: int) -> tuple[int, int]:
    """Validated ``(capacity, shadow)``; shadow is 0 unless the policy is ``shadow``."""
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)):
        raise CacheConfigError(f"capacity must be an integer, got {capacity!r}")
    capacity = int(capacity)
    if capacity < per_block:
        raise CacheConfigError(
            f"capacity={capacity} vectors is less than one block's {per_block} vectors "
            f"(block_bytes // vector_bytes)")
    if policy != "shadow":
        return capacity, 0
    if shadow is None:
        raise CacheConfigError("policy 'shadow' needs a shadow size (shadow >= capacity)")
    if isinstance(shadow, bool) or not isinstance(shadow, (int, np.integer)):
        raise CacheConfigError(f"shadow must be an integer, got {shadow!r}")
    shadow = int(shadow)
    if shadow < capacity:
        raise CacheConfigError(f"shadow={shadow} is less than capacity={capacity}; "
                               f"the shadow set must be at least as large as the cache")
    return capacity, shadow


# --------------------------------------------------------------------------- state

class CacheState:
    """The cache's state: numba-updated arrays plus counters (see ``cache_kernels``).

    Build it once per (layout, sizes, policy), then feed lookups with ``process``
    any number of times; ``result()`` gives the counters so far. Processing a
    trace in chunks gives exactly the result of processing it at once.
    """

    def __init__(self, layout, capacity: int, policy: str, shadow: int | None = None,
                 vector_bytes: int = 128, block_bytes: int = 4096, *,
                 _checked_layout: bool = False):
        self.policy_code = check_policy(policy)
        self.per_block = vectors_per_block(vector_bytes, block_bytes)
        self.layout = (np.ascontiguousarray(layout, dtype=np.int64) if _checked_layout
                       else check_layout(layout))
        self.capacity, self.shadow = check_sizes(capacity, policy, shadow, self.per_block)
        self.policy = policy
        self.vector_bytes = int(vector_bytes)
        self.block_bytes = int(block_bytes)
        n = self.n_vectors = self.layout.shape[0]
        # At most N distinct vectors can be cached: a larger cache never evicts.
        self.slots = min(self.capacity, n)
        self.shadow_slots = min(self.shadow, n)
        clen = K.log_length(self.slots)
        slen = K.log_length(self.shadow_slots) if policy == "shadow" else 16
        index_dtype = (np.int32 if max(n, 2 * clen, slen) < np.iinfo(np.int32).max
                       else np.int64)
        self.index_dtype = index_dtype
        # Keys: ids for policy none (blocks play no part), storage positions otherwise.
        self.use_pos = policy != "none"
        self.pos = np.empty(n, dtype=index_dtype)
        K.inverse_permutation(self.layout, self.pos)
        self.stride = 2 if policy == "shadow" else 1
        self.kmap = np.empty(self.stride * n, dtype=index_dtype)
        self.clog = np.empty(clen, dtype=index_dtype)
        self.slog = np.empty(slen, dtype=index_dtype)
        K.init_state(self.kmap, self.clog, self.slog)
        power_of_two = self.per_block & (self.per_block - 1) == 0
        self.shift = self.per_block.bit_length() - 1 if power_of_two else -1
        n_blocks = -(-n // self.per_block)
        words = (self.per_block + 63) // 64
        self.sbits = np.zeros(n_blocks * words if policy == "shadow" else 1, dtype=np.uint64)
        self.counters = np.zeros(K.N_COUNTERS, dtype=np.int64)
        self.keys = np.empty(K.BATCH, dtype=index_dtype)
        self.scratch = np.empty(self.per_block, dtype=index_dtype)
        self._no_u8 = np.empty(0, dtype=np.uint8)
        self._no_i64 = np.empty(1, dtype=np.int64)

    def _run(self, ids, record, hit, block, ins_ptr, ins_ids):
        kernel = K.lookup_kernel(self.policy_code)
        return kernel(ids, self.pos, self.layout, self.per_block, self.shift, self.slots,
                      self.shadow_slots, self.kmap, self.clog, self.slog, self.sbits,
                      self.counters, self.keys, self.scratch, record, hit, block, ins_ptr,
                      ins_ids)

    def process(self, ids, *, record: str | None = None,
                check: bool = True) -> LookupOutcomes | None:
        """Look up ``ids`` in order, updating the state.

        ``record``: None (default, fastest) returns None; ``"outcomes"`` returns
        ``LookupOutcomes`` with hit flags and blocks read; ``"inserted"`` also the
        vectors each miss inserted. ``check=False`` skips the id-range check (only
        for ids already checked: an out-of-range id corrupts memory).
        """
        if check:
            ids = check_trace(ids, self.n_vectors, "ids")
        else:
            ids = np.ascontiguousarray(ids, dtype=np.int64)
        n = ids.shape[0]
        if record is None:
            self._run(ids, K.RECORD_NOTHING, self._no_u8, self._no_i64, self._no_i64, self._no_i64)
            return None
        if record not in ("outcomes", "inserted"):
            raise CacheConfigError(f"record must be None, 'outcomes' or 'inserted', got {record!r}")
        hit = np.empty(n, dtype=np.uint8)
        block = np.empty(n, dtype=np.int64)
        if record == "outcomes":
            self._run(ids, K.RECORD_OUTCOMES, hit, block, self._no_i64, self._no_i64)
            return LookupOutcomes(hit.view(np.bool_), block)
        ptr = np.zeros(n + 1, dtype=np.int64)
        pieces = []
        step = max(1, _MAX_INSERTED_BUFFER // self.per_block)
        buffer = np.empty(min(n, step) * self.per_block, dtype=np.int64)
        filled = 0
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            sub_ptr = ptr[lo:hi + 1]        # a view: the kernel writes ptr in place
            base = int(sub_ptr[0])
            sub_ptr[0] = 0
            self._run(ids[lo:hi], K.RECORD_INSERTED, hit[lo:hi], block[lo:hi], sub_ptr, buffer)
            used = int(sub_ptr[-1])
            pieces.append(buffer[:used].copy())
            sub_ptr += base
            filled = base + used
        inserted = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int64)
        assert inserted.shape[0] == filled
        return LookupOutcomes(hit.view(np.bool_), block, ptr, inserted)

    def result(self) -> CacheResult:
        """The counters so far."""
        c = [int(x) for x in self.counters]
        blocks = c[K.C_BLOCKS]
        bytes_read = blocks * self.block_bytes
        useful = (c[K.C_MISSES] + c[K.C_USED]) * self.vector_bytes
        return CacheResult(
            lookups=c[K.C_LOOKUPS], hits=c[K.C_HITS], misses=c[K.C_MISSES],
            blocks_read=blocks, prefetched=c[K.C_PREFETCHED], prefetch_used=c[K.C_USED],
            effective_bandwidth=useful / bytes_read if blocks else 0.0,
            bytes_read=bytes_read)

    # inspection (tests, debugging)
    def size(self) -> int:
        """Vectors cached now."""
        return int(self.counters[K.C_SIZE])

    def _ids(self, keys: np.ndarray) -> np.ndarray:
        return self.layout[keys] if self.use_pos else keys

    def _cached_keys(self) -> np.ndarray:
        return K.log_keys(self.clog, self.counters[K.C_TAIL], self.counters[K.C_HEAD])

    def cached_ids(self) -> np.ndarray:
        """Cached vectors, LRU end first."""
        return self._ids(self._cached_keys())

    def requested_flags(self) -> np.ndarray:
        """For ``cached_ids()``, whether each was requested (False: prefetched, unused)."""
        return (self.kmap[self.stride * self._cached_keys()] & 1) == 0

    def shadow_ids(self) -> np.ndarray:
        """The shadow set, LRU end first (empty unless the policy is ``shadow``)."""
        if self.policy != "shadow":
            return np.empty(0, dtype=np.int64)
        return self._ids(K.log_keys(self.slog, self.counters[K.C_STAIL],
                                    self.counters[K.C_SHEAD]))


def simulate(trace, layout, capacity: int, policy: str, shadow: int | None = None,
             vector_bytes: int = 128, block_bytes: int = 4096) -> CacheResult:
    """Replay ``trace`` (vector ids in lookup order) through a fresh cache; the counters.

    Everything is validated before any work: ids in [0, N), ``layout`` a
    permutation of 0..N-1, ``vector_bytes <= block_bytes`` (a block holds ``block_bytes // vector_bytes``),
    ``capacity >= block_bytes // vector_bytes``, ``shadow >= capacity`` for policy
    ``shadow``, a known policy. ``shadow`` is ignored by the other policies.
    """
    check_policy(policy)
    per_block = vectors_per_block(vector_bytes, block_bytes)
    layout = check_layout(layout)
    trace = check_trace(trace, layout.shape[0])
    check_sizes(capacity, policy, shadow, per_block)
    state = CacheState(layout, capacity, policy, shadow, vector_bytes, block_bytes,
                       _checked_layout=True)
    state.process(trace, check=False)
    return state.result()


STREAM_CHUNK = 1 << 24  # lookups per memory-mapped chunk of simulate_npy (128 MiB of int64)


def npy_chunks(path, chunk: int = STREAM_CHUNK, limit: int | None = None):
    """Yield consecutive pieces of the 1-D ``.npy`` at ``path``, at most ``chunk`` elements
    each (the first ``limit`` elements only, when given), each from its own memory map
    that is closed before the next is opened, so resident memory stays one chunk."""
    chunk = _positive_int("chunk", chunk)
    with open(path, "rb") as handle:
        major, _ = np.lib.format.read_magic(handle)
        read_header = (np.lib.format.read_array_header_1_0 if major == 1
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read_header(handle)
        offset = handle.tell()
    if len(shape) != 1:
        raise CacheConfigError(f"{path}: expected a 1-D array of vector ids, got shape {shape}")
    total = shape[0] if limit is None else min(shape[0], int(limit))
    for lo in range(0, total, chunk):
        hi = min(total, lo + chunk)
        piece = np.memmap(path, dtype=dtype, mode="r", offset=offset + lo * dtype.itemsize,
                          shape=(hi - lo,))
        yield piece
        del piece


def simulate_npy(path, layout, capacity: int, policy: str, shadow: int | None = None,
                 vector_bytes: int = 128, block_bytes: int = 4096, *, lookups: int | None = None,
                 chunk: int = STREAM_CHUNK) -> CacheResult:
    """``simulate`` on the trace stored at ``path`` (a 1-D integer ``.npy``), streamed.

    The trace is read ``chunk`` lookups at a time from a memory map (only the first
    ``lookups`` with that argument); the counters are exactly those of ``simulate``
    on the whole array in memory. The layout and sizes are validated before any
    work; each chunk's ids are checked before it is processed, so a bad id fails
    with the index in the whole trace, after the chunks before it have run.
    """
    check_policy(policy)
    per_block = vectors_per_block(vector_bytes, block_bytes)
    layout = check_layout(layout)
    check_sizes(capacity, policy, shadow, per_block)
    state = CacheState(layout, capacity, policy, shadow, vector_bytes, block_bytes,
                       _checked_layout=True)
    done = 0
    for piece in npy_chunks(path, chunk, lookups):
        try:
            ids = check_trace(piece, layout.shape[0])
        except CacheConfigError as exc:
            index = int(K.first_out_of_range(_as_id_array("trace", piece), layout.shape[0]))
            raise CacheConfigError(f"{path}: trace[{done + index}] is not a vector id in "
                                   f"[0, {layout.shape[0]}) ({exc})") from None
        state.process(ids, check=False)
        done += piece.shape[0]
        del ids, piece
    return state.result()


# --------------------------------------------------------------------------- speed

def zipf_trace(n_vectors: int, n_lookups: int, alpha: float, seed: int) -> np.ndarray:
    """``n_lookups`` ids drawn i.i.d. from a Zipf(``alpha``) law over ``n_vectors`` ids.

    Rank ``r`` (1-based) has probability proportional to ``r**-alpha``; ranks are
    mapped to ids by a seeded random permutation, so hot ids are spread over the
    id space (and over blocks under the identity layout).
    """
    rng = np.random.default_rng(seed)
    weights = np.arange(1, n_vectors + 1, dtype=np.float64) ** -float(alpha)
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    ranks = K.searchsorted_right(cdf, rng.random(n_lookups), 1 << 20)
    np.minimum(ranks, n_vectors - 1, out=ranks)
    ids = rng.permutation(n_vectors).astype(np.int64)
    return ids[ranks]


def warm_up() -> float:
    """Compile (or load from numba's cache) every kernel on a tiny input; the seconds it took."""
    start = time.perf_counter()
    layout = np.arange(64, dtype=np.int64)
    trace = np.arange(64, dtype=np.int64)[::-1].copy()
    for policy in POLICIES:
        simulate(trace, layout, 8, policy, shadow=16, vector_bytes=1, block_bytes=4)
        CacheState(layout, 8, policy, 16, 1, 4).process(trace, record="inserted")
    return time.perf_counter() - start


def measure_throughput(n_vectors: int = 10_000_000, n_lookups: int = 20_000_000,
                       alpha: float = 0.9, cache_fraction: float = 0.05,
                       shadow_factor: float = 2.0, policies=POLICIES, seed: int = 0,
                       repeats: int = 3, vector_bytes: int = 128, block_bytes: int = 4096,
                       baseline: bool = True,
                       baseline_max_lookups: int | None = None) -> dict[str, Any]:
    """Lookups per second of ``simulate`` per policy on a Zipf trace; plain data.

    Identity layout over ids whose popularity ranks are randomly permuted;
    capacity = ``cache_fraction * n_vectors``, shadow = ``shadow_factor *
    capacity``. Compile time is excluded (``warm_up`` first, reported as
    ``warm_up_s``); each policy's time is the best of ``repeats`` runs (validation
    included, as ``simulate`` does it). With ``baseline``, the same trace (or its
    first ``baseline_max_lookups`` ids) also goes through a pure-Python
    OrderedDict LRU of the same capacity, and ``ratio_none_vs_ordered_dict``
    compares it with policy ``none``. Times are wall seconds (``seconds``) and
    CPU seconds of this thread (``cpu_seconds``: less disturbed by other
    processes on a busy machine); ``load_average_1min`` records how busy it was.
    """
    from impls.bandana.sim.cache_reference import ordered_dict_lru_lookups_per_second

    warm = warm_up()
    start = time.perf_counter()
    trace = zipf_trace(n_vectors, n_lookups, alpha, seed)
    trace_s = time.perf_counter() - start
    layout = np.arange(n_vectors, dtype=np.int64)
    capacity = int(cache_fraction * n_vectors)
    shadow = int(shadow_factor * capacity)
    out: dict[str, Any] = {
        "n_vectors": n_vectors, "n_lookups": n_lookups, "alpha": alpha, "capacity": capacity,
        "shadow": shadow, "vector_bytes": vector_bytes, "block_bytes": block_bytes,
        "seed": seed, "repeats": repeats, "warm_up_s": warm, "trace_generation_s": trace_s,
        "policies": {},
    }
    for policy in policies:
        best_wall = best_cpu = float("inf")
        for _ in range(repeats):
            wall0, cpu0 = time.perf_counter(), time.thread_time()
            res = simulate(trace, layout, capacity, policy, shadow, vector_bytes, block_bytes)
            best_cpu = min(best_cpu, time.thread_time() - cpu0)
            best_wall = min(best_wall, time.perf_counter() - wall0)
        out["policies"][policy] = {
            "seconds": best_wall, "lookups_per_second": n_lookups / best_wall,
            "cpu_seconds": best_cpu, "lookups_per_cpu_second": n_lookups / best_cpu,
            "hit_rate": res.hit_rate, "effective_bandwidth": res.effective_bandwidth}
    if baseline:
        base = ordered_dict_lru_lookups_per_second(trace, capacity, baseline_max_lookups)
        out["ordered_dict_lru"] = base
        if "none" in out["policies"]:
            none = out["policies"]["none"]
            out["ratio_none_vs_ordered_dict"] = (
                none["lookups_per_second"] / base["lookups_per_second"])
            out["ratio_none_vs_ordered_dict_cpu"] = (
                none["lookups_per_cpu_second"] / base["lookups_per_cpu_second"])
    out["load_average_1min"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return out
