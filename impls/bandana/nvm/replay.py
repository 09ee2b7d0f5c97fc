"""Replay a lookup trace through Bandana's DRAM cache against an O_DIRECT block store.

Longer than 400 lines: one class, :class:`ReplaySession`, is the whole replay loop (reads in
flight, DRAM slots, the cache state, latency bookkeeping); splitting it would split one state machine.

The cache logic is the simulator's own: :class:`impls.bandana.sim.cache.CacheState`
decides, chunk of queries by chunk of queries (``process(..., record="inserted")``),
which lookups hit, which block each miss reads and which vectors each miss inserts
(the looked-up one and the prefetched ones). This module only does what the
simulator cannot: it reads those blocks from the store with ``queue_depth`` reads
in flight (:mod:`impls.bandana.nvm.direct_io`), copies every inserted vector from the
block just read into the DRAM copy (:class:`impls.bandana.nvm.dram_slots.DramSlots`: about
capacity + two chunks' insertions vectors' bytes; a slot is reused only two chunks
after the last chunk served from it, so the pipeline never overwrites a vector still
to be served), and serves every lookup of the chunk from that DRAM copy once the
chunk's reads are done. A lookup whose vector has no DRAM copy is an error, and
served vectors are compared byte for byte with the table (all of them, or a sample).

Because the decisions are the simulator's, the reads issued equal the simulator's
``blocks_read`` and the lookups served without a read its ``hits``; :func:`replay`
counts both from what actually happened (completed reads, lookups served from DRAM).

Command line (same inputs as ``python -m impls.bandana.cache``)::

    python -m impls.bandana.replay --trace T.npy --layout P.npy --capacity C \\
        --policy shadow --shadow S --queue-depth 32 --json

builds a random table stored in that layout at ``--path`` (default: beside
``DLSYSBENCH_NVM_PATH``), replays the trace, runs fio's 4 KB random reads on the
same file at the same queue depth, prints one JSON object and removes the store.
"""
from __future__ import annotations

import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from impls.bandana.nvm import block_store, direct_io, dram_slots
from impls.bandana.sim import cache
from impls.harness import atomic, capabilities, cli, paths
from impls.harness.nvm_file import nvm_target, store_location

RESULT_KEYS = cache.RESULT_KEYS + (
    "lookups_per_second", "blocks_per_second", "useful_bytes_per_second", "p50_query_us",
    "p99_query_us", "verified_vectors", "fio_iops", "dram_bytes")


_SWITCH_INTERVAL_S = 1e-4


class ReplayError(RuntimeError):
    """The replay served a vector it should not have (no DRAM copy, or wrong bytes)."""


def _chunk_bounds(offsets: np.ndarray, chunk_lookups: int) -> list[tuple[int, int]]:
    """Query ranges ``[q0, q1)`` of about ``chunk_lookups`` lookups each (at least one query)."""
    q = offsets.shape[0] - 1
    bounds = []
    q0 = 0
    while q0 < q:
        q1 = int(np.searchsorted(offsets, offsets[q0] + chunk_lookups, side="right")) - 1
        q1 = min(q, max(q1, q0 + 1))
        bounds.append((q0, q1))
        q0 = q1
    return bounds


class ReplaySession:
    """A DRAM cache over an open store, kept across calls: warm it, then replay segments.

    ``store`` must hold the table in ``layout``; ``capacity``/``policy``/``shadow`` as
    for :func:`impls.bandana.sim.cache.simulate` (vector and block bytes come from the
    store). ``mechanism``: see :mod:`.direct_io` (default: libaio where it works).
    ``table`` (N × dim, the stored values) enables byte-for-byte verification of
    served vectors. ``chunk_lookups``: the chunk size :meth:`run` uses by default, which
    sizes the DRAM copy (``dram``). ``close()`` releases the buffers and the AIO context.
    """

    def __init__(self, store: block_store.BlockStore, layout, capacity: int, policy: str,
                 shadow: int | None = None, *, mechanism: str | None = None,
                 table: np.ndarray | None = None, seed: int = 0, max_queue_depth: int = 64,
                 chunk_lookups: int = 16384):
        h = self.header = store.header
        self.store = store
        layout = cache.check_layout(layout)
        if layout.shape[0] != h.n_vectors:
            raise ValueError(f"layout has {layout.shape[0]} vectors, the store {h.n_vectors}")
        if layout_digest_mismatch(store, layout):
            raise block_store.StoreError(f"{store.path}: written in another layout than the one replayed")
        self.mechanism = mechanism or direct_io.default_mechanism()
        if self.mechanism not in direct_io.MECHANISMS:
            raise ValueError(f"unknown I/O mechanism {self.mechanism!r}; known: {', '.join(direct_io.MECHANISMS)}")
        self.state = cache.CacheState(layout, capacity, policy, shadow, h.vector_bytes, h.block_bytes,
                                      _checked_layout=True)
        n, vb = h.n_vectors, h.vector_bytes
        self.table_bytes = None
        if table is not None:
            table = np.ascontiguousarray(table)
            if table.shape[0] != n or table.dtype.itemsize * (table.size // n) != vb:
                raise ValueError(f"table of shape {table.shape} / {table.dtype} does not match the store "
                                 f"({n} vectors of {vb} bytes)")
            self.table_bytes = table.view(np.uint8).reshape(n, vb)
        self.rng = np.random.default_rng(seed)
        self.chunk_lookups = int(chunk_lookups)
        # policy none inserts only the looked-up vector; the others start from the same
        # guess and grow the DRAM copy when a chunk inserts more (see run)
        self.dram = dram_slots.DramSlots(n, vb, self.state.slots, self.chunk_lookups)
        self.max_queue_depth = int(max_queue_depth)
        self.buffers = block_store.AlignedBuffers(2 * self.max_queue_depth, h.block_bytes)
        self.contexts: dict[int, direct_io.AioContext] = {}
        self.last_latencies_ns = np.zeros(0, dtype=np.int64)
        direct_io.warm_up(self.mechanism)

    def close(self) -> None:
        """Release the AIO contexts and read buffers."""
        for context in self.contexts.values():
            context.close()
        self.contexts.clear()
        if self.buffers is not None:
            self.buffers.close()
            self.buffers = None

    def __enter__(self) -> "ReplaySession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _job(self, blocks, ins_lo, ins_hi, ins_ids, ins_slots) -> dict[str, Any]:
        r = blocks.shape[0]
        return {"blocks": blocks, "ins_lo": ins_lo, "ins_hi": ins_hi, "ins_ids": ins_ids,
                "ins_slots": ins_slots, "pos": self.state.pos, "per_block": self.header.per_block,
                "vector_bytes": self.header.vector_bytes, "dram": self.dram.bytes,
                "filled": self.dram.filled, "submit_ns": np.zeros(r, dtype=np.int64),
                "done_ns": np.zeros(r, dtype=np.int64)}

    def _slots_for(self, ins_ids: np.ndarray, ids: np.ndarray, drain) -> np.ndarray:
        """DRAM slots for a chunk's inserted ids, given its lookups ``ids`` (see
        :meth:`DramSlots.assign`). When too few are free, ``drain()`` (serve every chunk
        decided before), free all parked slots, and if still short grow the copy."""
        d = self.dram
        slots = d.assign(ins_ids, ids, self.state)
        if slots is None:
            drain()
            d.release()
            slots = d.assign(ins_ids, ids, self.state)
        if slots is None:
            d.chunk_inserts = max(d.last_need, d.chunk_inserts + d.chunk_inserts // 2)
            d.grow(max(d.target_slots(), d.slots - d.n_free + d.last_need))
            slots = d.assign(ins_ids, ids, self.state)
        return slots

    def _read(self, job: dict[str, Any], queue_depth: int) -> None:
        if job["blocks"].shape[0] == 0:
            return
        context = None
        if self.mechanism == "libaio":
            context = self.contexts.get(queue_depth)
            if context is None:
                context = self.contexts[queue_depth] = direct_io.AioContext(queue_depth)
        direct_io.run_job(self.mechanism, self.store.fd, job, queue_depth, self.buffers, context=context)

    def warm(self, ids, queue_depth: int = 32) -> dict[str, Any]:
        """Run ``ids`` through the cache without timing, then load what it holds.

        The cache decisions are the simulator's (``process``); afterwards every block
        holding a cached vector is read once from the store and those vectors are
        copied into DRAM, so the DRAM copy matches the cache. Returns ``{"lookups",
        "blocks_read", "seconds"}`` (reads issued to load the cache).
        """
        start = time.perf_counter()
        ids = cache.check_trace(ids, self.header.n_vectors, "warm-up ids")
        self.state.process(ids, check=False)
        cached = self.state.cached_ids()
        self.dram.clear()
        positions = self.state.pos[cached].astype(np.int64)
        order = np.argsort(positions, kind="stable")
        cached, positions = cached[order].astype(np.int64), positions[order]
        block_of = positions // self.header.per_block
        starts = np.flatnonzero(np.diff(block_of, prepend=-1))
        ends = np.append(starts[1:], block_of.shape[0])
        job = self._job(block_of[starts].copy(), starts.astype(np.int64), ends.astype(np.int64), cached,
                        self.dram.assign(cached, cached[:0], self.state))
        self._read(job, min(queue_depth, self.max_queue_depth))
        if np.any(job["done_ns"] == 0):
            raise ReplayError("a read was submitted but never completed")
        return {"lookups": int(ids.shape[0]), "blocks_read": int(starts.shape[0]),
                "seconds": time.perf_counter() - start}

    def run(self, offsets, indices, *, queue_depth: int = 1, verify: str | int = "all",
            chunk_lookups: int | None = None, max_seconds: float | None = None) -> dict[str, Any]:
        """Replay queries ``offsets``/``indices`` (CSR) from the cache's current state.

        With ``max_seconds``, stops after the chunk (about ``chunk_lookups`` lookups,
        whole queries; default: the session's) during which that much time has passed:
        the result then covers the first ``queries`` queries only.

        ``queue_depth`` reads in flight (at most ``max_queue_depth``). ``verify``:
        ``"all"`` compares every served vector with the table, an int ``k`` that
        many random lookups per chunk, ``"none"`` none (every served lookup must
        still have a DRAM copy, else :class:`ReplayError`).

        Returns, for these lookups, the simulator's counter names (``lookups, hits,
        misses, blocks_read, prefetched, prefetch_used, effective_bandwidth,
        bytes_read``: hits and blocks_read as observed) plus ``hit_rate``, ``seconds``
        (wall time: cache decisions, reads, copies, serving), ``lookups_per_second``,
        ``blocks_per_second`` (reads/s), ``useful_bytes_per_second`` ((misses +
        prefetch_used) × vector_bytes / seconds, bytes/s), ``p50_query_us`` /
        ``p99_query_us`` (over the queries that look up at least one id: last read's
        completion minus first read's submission, µs; 0 for a query served wholly from
        DRAM), ``empty_queries`` (queries of no lookup, e.g. empty bags: counted in
        ``queries``, left out of the percentiles), ``verified_vectors``, ``queue_depth``,
        ``mechanism``, ``queries``, ``dram_bytes`` (held by the DRAM copy at the end: slots,
        id → slot map and bookkeeping), ``dram_slots``. The latencies (ns) of the queries
        that look up at least one id are left in ``last_latencies_ns``.
        """
        h = self.header
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        indices = cache.check_trace(indices, h.n_vectors, "indices")
        if offsets.ndim != 1 or offsets.size == 0 or offsets[0] != 0 or offsets[-1] != indices.size \
                or np.any(np.diff(offsets) < 0):
            raise ValueError("offsets must be non-decreasing, start at 0 and end at len(indices)")
        if isinstance(queue_depth, bool) or not isinstance(queue_depth, (int, np.integer)) \
                or not 1 <= queue_depth <= self.max_queue_depth:
            raise ValueError(f"queue_depth must be an integer in [1, {self.max_queue_depth}], got {queue_depth!r}")
        vb = h.vector_bytes
        chunk_lookups = self.chunk_lookups if chunk_lookups is None else int(chunk_lookups)
        if chunk_lookups > self.dram.chunk_inserts:
            self.dram.chunk_inserts = chunk_lookups
            self.dram.grow(self.dram.target_slots())
        self.dram.release()                   # the last run left nothing in flight
        before = self.state.result()
        latencies = np.zeros(offsets.shape[0] - 1, dtype=np.int64)
        totals = {"hits": 0, "reads": 0, "verified": 0, "inserted": 0}

        def finish(chunk) -> None:
            """Wait for a chunk's reads, then serve its lookups from DRAM and verify them."""
            lo, ids, miss, out, job, serve, future = chunk
            future.result()
            if np.any(job["done_ns"] == 0):
                raise ReplayError("a read was submitted but never completed")
            r = miss.shape[0]
            totals["reads"] += r
            totals["hits"] += ids.shape[0] - r
            totals["inserted"] += int(out.inserted_ptr[-1])
            # serve the chunk from DRAM: every lookup needs a copy written at insertion,
            # in the slot it was mapped to when the chunk was decided
            dram = self.dram
            served_ok = (serve >= 0) & (dram.filled[serve] == 1)
            if not np.all(served_ok):
                bad = int(ids[np.flatnonzero(~served_ok)[0]])
                raise ReplayError(f"vector {bad} was looked up but never inserted into the DRAM cache")
            if self.table_bytes is not None and verify != "none":
                pick = (np.arange(ids.shape[0]) if verify == "all"
                        else self.rng.integers(0, ids.shape[0], size=min(int(verify), ids.shape[0])))
                served = dram.bytes[serve[pick]]
                expected = self.table_bytes[ids[pick]]
                if not np.array_equal(served, expected):
                    row = int(np.flatnonzero(np.any(served != expected, axis=1))[0])
                    raise ReplayError(f"lookup of vector {int(ids[pick][row])} served bytes that differ "
                                      f"from the table")
                totals["verified"] += pick.shape[0]
            if r:
                # reads are in lookup order, so each query's reads are one run
                query = np.searchsorted(offsets, lo + miss, side="right") - 1
                starts = np.flatnonzero(np.diff(query, prepend=-1))
                last = np.maximum.reduceat(job["done_ns"], starts)
                latencies[query[starts]] = last - job["submit_ns"][starts]

        def drain() -> None:
            """Serve the chunk in flight, if any (the pipeline is then empty)."""
            nonlocal pending
            if pending is not None:
                finish(pending)
                pending = None

        # Pipelined: while one I/O thread reads chunk k's blocks (the AIO loop runs
        # without the GIL), this thread decides chunk k+1 and serves chunk k-1.
        # Chunk k's decisions map its lookups to DRAM slots; a slot is reused only two
        # chunks after the last chunk served from it (dram_slots), so neither the copies
        # of chunk k nor those of chunk k+1 land in a slot chunk k-1 or k is served from.
        # The I/O thread needs the GIL for a moment between two chunks' reads; with
        # Python's default 5 ms switch interval it could wait that long behind this
        # thread's numpy work while no read is in flight (measured: -10..20% reads/s).
        self.state.process(indices[:0], check=False)     # compiled off the clock; no lookup, no change
        self.dram.compile_kernels(indices, self.state)
        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(_SWITCH_INTERVAL_S)
        start = time.perf_counter()
        q_end = 0
        pending = None
        with ThreadPoolExecutor(max_workers=1) as io_thread:
            try:
                for k, (q0, q1) in enumerate(_chunk_bounds(offsets, chunk_lookups)):
                    if max_seconds is not None and q0 > 0 and time.perf_counter() - start >= max_seconds:
                        break
                    q_end = q1
                    lo, hi = int(offsets[q0]), int(offsets[q1])
                    ids = indices[lo:hi]
                    out = self.state.process(ids, record="inserted", check=False)
                    miss = np.flatnonzero(~out.hit)
                    self.dram.release(k)
                    ins_slots = self._slots_for(out.inserted_ids, ids, drain)
                    serve = self.dram.serve(ids, k)
                    job = self._job(out.block[miss], out.inserted_ptr[miss], out.inserted_ptr[miss + 1],
                                    out.inserted_ids, ins_slots)
                    future = io_thread.submit(self._read, job, int(queue_depth))
                    new = int(np.count_nonzero(ins_slots >= 0))
                    self.dram.chunk_inserts = max(self.dram.chunk_inserts, new)
                    self.dram.reclaim(k, self.state, self.dram.chunk_inserts)
                    if pending is not None:
                        finish(pending)
                    pending = (lo, ids, miss, out, job, serve, future)
                if pending is not None:
                    finish(pending)
                    pending = None
            finally:
                if pending is not None:      # an error: let the queued reads finish before unwinding
                    pending[-1].exception()
                sys.setswitchinterval(switch_interval)
        hits, reads = totals["hits"], totals["reads"]
        verified, inserted = totals["verified"], totals["inserted"]
        seconds = time.perf_counter() - start
        prefetch_used = self.state.result().prefetch_used - before.prefetch_used
        lookups = int(offsets[q_end])
        looked_up = np.diff(offsets[:q_end + 1]) > 0       # an empty query has no latency to count
        empty_queries = q_end - int(np.count_nonzero(looked_up))
        latencies = self.last_latencies_ns = latencies[:q_end][looked_up]
        useful = (reads + prefetch_used) * vb
        bytes_read = reads * h.block_bytes
        return {
            "lookups": lookups, "hits": hits, "misses": reads, "blocks_read": reads,
            "prefetched": inserted - reads, "prefetch_used": prefetch_used,
            "effective_bandwidth": useful / bytes_read if reads else 0.0, "bytes_read": bytes_read,
            "hit_rate": hits / lookups if lookups else 0.0, "seconds": seconds,
            "lookups_per_second": lookups / seconds, "blocks_per_second": reads / seconds,
            "useful_bytes_per_second": useful / seconds,
            "p50_query_us": float(np.percentile(latencies, 50)) / 1e3 if latencies.size else 0.0,
            "p99_query_us": float(np.percentile(latencies, 99)) / 1e3 if latencies.size else 0.0,
            "verified_vectors": verified, "queue_depth": int(queue_depth), "mechanism": self.mechanism,
            "queries": q_end, "empty_queries": empty_queries, "dram_bytes": self.dram.nbytes,
            "dram_slots": self.dram.slots,
        }


def merge_results(parts: list[dict[str, Any]], latencies_ns: list[np.ndarray]) -> dict[str, Any]:
    """One result for consecutive :meth:`ReplaySession.run` calls: counters and seconds
    summed, rates and percentiles recomputed (``latencies_ns``: each call's
    ``last_latencies_ns``, which leaves out empty queries)."""
    if not parts:
        raise ValueError("nothing to merge")
    out = dict(parts[-1])
    for key in ("lookups", "hits", "misses", "blocks_read", "prefetched", "prefetch_used", "bytes_read",
                "seconds", "verified_vectors", "queries", "empty_queries"):
        out[key] = sum(p[key] for p in parts)
    useful = sum(p["useful_bytes_per_second"] * p["seconds"] for p in parts)
    out["effective_bandwidth"] = useful / out["bytes_read"] if out["bytes_read"] else 0.0
    seconds = out["seconds"]
    out["hit_rate"] = out["hits"] / out["lookups"] if out["lookups"] else 0.0
    out["lookups_per_second"] = out["lookups"] / seconds
    out["blocks_per_second"] = out["blocks_read"] / seconds
    out["useful_bytes_per_second"] = useful / seconds
    lat = np.concatenate(latencies_ns) if latencies_ns else np.zeros(0)
    out["p50_query_us"] = float(np.percentile(lat, 50)) / 1e3 if lat.size else 0.0
    out["p99_query_us"] = float(np.percentile(lat, 99)) / 1e3 if lat.size else 0.0
    return out


def replay(store: block_store.BlockStore, offsets, indices, layout, capacity: int, policy: str,
           shadow: int | None = None, *, queue_depth: int = 1, mechanism: str | None = None,
           table: np.ndarray | None = None, verify: str | int = "all", chunk_lookups: int = 16384,
           seed: int = 0) -> dict[str, Any]:
    """Replay queries ``offsets``/``indices`` (CSR) through a fresh, cold cache over ``store``.

    One :class:`ReplaySession` (see it for the arguments), one :meth:`ReplaySession.run`;
    returns its result.
    """
    with ReplaySession(store, layout, capacity, policy, shadow, mechanism=mechanism, table=table,
                       seed=seed, chunk_lookups=chunk_lookups, max_queue_depth=max(1, int(queue_depth))
                       if isinstance(queue_depth, (int, np.integer)) and not isinstance(queue_depth, bool)
                       else 1) as session:
        return session.run(offsets, indices, queue_depth=queue_depth, verify=verify,
                           chunk_lookups=chunk_lookups)


def layout_digest_mismatch(store: block_store.BlockStore, layout: np.ndarray) -> bool:
    """True when ``store`` was not written in ``layout``."""
    return block_store.layout_digest(layout) != store.header.layout_sha256


def cross_check(result: dict[str, Any], indices, layout, capacity: int, policy: str,
                shadow: int | None, vector_bytes: int, block_bytes: int) -> dict[str, Any]:
    """Simulate the replayed lookups with :func:`cache.simulate` and compare counters.

    Returns ``{"simulated": CacheResult dict, "match": bool}``: match is True when
    the replay's ``blocks_read``, ``hits``, ``misses`` and ``prefetched`` equal the
    simulator's exactly.
    """
    sim = cache.simulate(indices, layout, capacity, policy, shadow, vector_bytes, block_bytes)
    keys = ("blocks_read", "hits", "misses", "prefetched")
    return {"simulated": sim.to_dict(), "match": all(result[k] == getattr(sim, k) for k in keys)}


def default_store_path(tag: str = "replay") -> Path:
    """Where a temporary store goes: beside ``DLSYSBENCH_NVM_PATH`` when that is a file
    (its directory), else — a block device, which is only ever read — in the cache
    directory (``DLSYSBENCH_CACHE``, default ``datasets/cache/``); ``--path`` overrides
    both. Named ``bandana-<tag>-pid<pid>.store``: a store left by a killed run is found by
    its dead pid and removed by the next run (:func:`sweep_stale_stores`)."""
    return store_directory() / f"bandana-{tag}-pid{os.getpid()}.store"


def store_directory() -> Path:
    """The directory :func:`default_store_path` uses (see there); :func:`store_location`'s."""
    return store_location()[0]


def store_record(directory: str | os.PathLike, setting: str) -> dict[str, Any]:
    """Where a replay's store lies, for its artifact: ``{"directory", "setting"`` (what chose
    it, :func:`store_location`), ``"filesystem", "device", "mount_point"`` (of the mount
    holding it; "unknown"/None where not found), ``"nvm_target"`` (``DLSYSBENCH_NVM_PATH``'s
    path, which fio's device characterization reads), ``"note"}``: None, or, when the NVM
    target is a block device and the store therefore lies in the cache, a sentence saying so."""
    directory = Path(directory)
    mount = capabilities.mount_of(directory) or {}
    target, device = nvm_target()
    record = {"directory": str(directory), "setting": setting,
              "filesystem": mount.get("fstype", "unknown"), "device": mount.get("source"),
              "mount_point": mount.get("mount_point"), "nvm_target": str(target), "note": None}
    if device and directory == paths.cache_dir():
        record["note"] = (f"DLSYSBENCH_NVM_PATH={target} is a block device, which the suite only reads: the "
                          f"replay cannot write its store there and writes it to DLSYSBENCH_CACHE={directory}, "
                          f"on {record['device'] or 'an unknown device'} ({record['filesystem']}), so it measures "
                          f"that drive, not {target}; to replay on {target}'s drive, point DLSYSBENCH_NVM_PATH "
                          "at a file on a filesystem of that drive")
    return record


def sweep_stale_stores(directory: str | os.PathLike, store_name: str | None = None) -> list[Path]:
    """Remove, from ``directory``, what killed runs left of the replay's own files: stores
    named by :func:`default_store_path` and their temporary files, and the temporary files
    of a store named ``store_name`` (a ``--path``'s; the store itself, a name the user chose,
    is never removed). Returns the paths removed; nothing else in the directory is touched."""
    stores = re.compile(r"bandana-[^/]*-pid(\d+)\.store")
    removed = cli.sweep_stale(directory, "bandana-*-pid*.store", stores)
    names = [r"bandana-[^/]*-pid\d+\.store"] + ([re.escape(store_name)] if store_name else [])
    for stem in names:                      # block_store.write_store's temporary names
        removed += cli.sweep_stale(directory, ".*.pid*.tmp", atomic.temporary_pattern(stem))
    return removed


def fio_iops(path: str | os.PathLike, queue_depth: int, runtime_s: float, ramp_s: float,
             size_bytes: int, block_bytes: int = 4096) -> dict[str, Any] | None:
    """fio's random-read point on ``path`` at ``queue_depth`` (:func:`fio_iops_why`'s point:
    a FioPoint dict, or None where fio is not installed or no engine runs at that depth)."""
    return fio_iops_why(path, queue_depth, runtime_s, ramp_s, size_bytes, block_bytes)[0]


def fio_iops_why(path: str | os.PathLike, queue_depth: int, runtime_s: float, ramp_s: float,
                 size_bytes: int, block_bytes: int = 4096) -> tuple[dict[str, Any] | None, str]:
    """``(point, why)``: fio's random-read point on ``path`` at ``queue_depth`` (libaio, else
    io_uring, else psync at QD1: the first that runs) as a FioPoint dict (IO/s, bytes/s, µs)
    and ``""``; or None and why not (fio not installed, or each engine's reason at that
    depth), also said as a warning (once a process for each reason, naming the first queue
    depth it stopped, whatever the depths asked later): fio is the replay's ceiling, not
    its measure."""
    from impls.bandana.nvm import fio

    if fio.fio_executable() is None:
        reasons = ["fio is not installed (`make setup` installs it)"]
    else:
        reasons = []
        for engine in ("libaio", "io_uring", "psync"):
            unavailable = (f"{engine} reads at queue depth 1 only" if engine == "psync" and queue_depth != 1
                           else fio.engine_unavailable_reason(engine))
            if unavailable:
                reasons.append(unavailable)
                continue
            try:
                return fio.run_fio(path, engine=engine, block_bytes=block_bytes, queue_depth=queue_depth,
                                   runtime_s=runtime_s, ramp_s=ramp_s, size_bytes=size_bytes).to_dict(), ""
            except fio.FioError as err:
                reasons.append(f"{engine}: {err}")
    why = "; ".join(reasons)
    if why not in _FIO_WARNED:        # asked at every depth and round: once a process for each reason
        _FIO_WARNED.add(why)
        cli.warn(f"fio's ceiling not measured ({why}) at queue depth {queue_depth} (nor, not said again, at any "
                 "other depth that fails the same way); the replay's own numbers stand, its ratios over fio there "
                 "are skipped")
    return None, why


_FIO_WARNED: set[str] = set()     # the reasons already said
