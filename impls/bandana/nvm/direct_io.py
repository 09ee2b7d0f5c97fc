"""Block reads with many in flight, for the replay engine: Linux AIO from numba, or threads.

Both mechanisms run one *read job*: read data blocks ``blocks[0..R)`` of an open
O_DIRECT store, at most ``queue_depth`` in flight, submitted in order; when read
``i`` completes, the vectors it inserted into the DRAM cache
(``ins_ids[ins_lo[i]:ins_hi[i]]``, all in block ``blocks[i]``) are copied from the
read buffer into their DRAM slots ``dram[ins_slots[k]]`` (see
:mod:`impls.bandana.nvm.dram_slots`; slot -1: no copy) and flagged in ``filled[slot]``.
Submit and completion times of every read are recorded (``time.perf_counter_ns`` clock,
nanoseconds).

* ``"libaio"``: the kernel's native AIO (``io_setup``/``io_submit``/``io_getevents``)
  called through libc's ``syscall`` from a numba loop, so no Python runs per read:
  one iocb per ``io_submit`` (a larger batch plugs the block queue; see
  :mod:`~impls.bandana.nvm.direct_io_kernels`), and after each
  ``io_getevents`` the queue is refilled (from a pool of 2 × queue_depth buffers)
  before the completed blocks are copied, so the drive never waits for the copies.
  The loop runs without the GIL. Needs only libc (no libaio package); O_DIRECT
  makes the reads truly asynchronous.
* ``"threads"``: ``queue_depth`` Python threads, each looping ``os.preadv`` (which
  releases the GIL) and a nogil numba copy; the portable fallback.

Both are measured against fio in the replay experiment's ``mechanisms`` record
(:mod:`impls.bandana.experiments.replay`); ``"libaio"`` won clearly on the 2-core VM
this was written on, most at queue depth 32, and is the default where the syscalls work.
"""
from __future__ import annotations

import ctypes
import errno
import functools
import os
import threading
import time

import numpy as np

from impls.bandana.nvm.direct_io_kernels import (_DONE, _ERR_GETEVENTS, _ERR_SHORT_READ, _ERR_SUBMIT, _EVENT_WORDS,
                                                  _IOCB_WORDS, _NR_IO_DESTROY, _NR_IO_SETUP, _aio_loop, _syscall,
                                                  copy_one)

MECHANISMS = ("libaio", "threads")


class DirectIOError(OSError):
    """A block read failed (the message names the call and the block)."""


def _monotonic_offset_ns() -> int:
    """perf_counter_ns() - CLOCK_MONOTONIC in ns (0 on Linux, where they are the same clock)."""
    return time.perf_counter_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class AioContext:
    """A Linux AIO context for ``queue_depth`` reads in flight (``io_setup``), with iocbs for
    2 × queue_depth buffers; ``close()`` destroys it."""

    def __init__(self, queue_depth: int):
        self.queue_depth = int(queue_depth)
        ctx = np.zeros(1, dtype=np.uint64)
        if _syscall(_NR_IO_SETUP, self.queue_depth, ctx.ctypes.data, 0, 0, 0) < 0:
            err = ctypes.get_errno()
            raise DirectIOError(err, f"io_setup({self.queue_depth}) failed: {os.strerror(err)}")
        self.ctx = int(ctx[0])
        self.iocbs = np.zeros(2 * self.queue_depth * _IOCB_WORDS, dtype=np.int64)   # one per buffer
        self.batch = np.zeros(1, dtype=np.int64)        # the one iocb pointer io_submit takes
        self.events = np.zeros(self.queue_depth * _EVENT_WORDS, dtype=np.int64)
        self.slot_read = np.zeros(2 * self.queue_depth, dtype=np.int64)
        self.ts = np.zeros(2, dtype=np.int64)

    def close(self) -> None:
        """Destroy the context (waits for reads still in flight)."""
        if self.ctx:
            _syscall(_NR_IO_DESTROY, self.ctx, 0, 0, 0, 0)
            self.ctx = 0


@functools.cache
def libaio_unavailable_reason() -> str | None:
    """Why the AIO syscalls cannot be used here, or None when they work."""
    if os.uname().machine != "x86_64":
        return f"syscall numbers are for x86_64, this is {os.uname().machine}"
    try:
        AioContext(1).close()
    except DirectIOError as err:
        return str(err)
    return None


def run_libaio(fd: int, job: dict, queue_depth: int, buffers, header_blocks: int = 1,
               context: AioContext | None = None) -> None:
    """Run ``job`` (see :func:`run_job`) with Linux AIO; ``buffers`` an AlignedBuffers of
    at least 2 × ``queue_depth`` rows. Raises :class:`DirectIOError` on a failed or short read."""
    if buffers.count < 2 * queue_depth:
        raise ValueError(f"libaio needs 2 x queue_depth = {2 * queue_depth} buffers, got {buffers.count}")
    own = context is None
    ctx = AioContext(queue_depth) if own else context
    offset = _monotonic_offset_ns()
    vb = job["vector_bytes"]
    word = 8 if vb % 8 == 0 else 1
    pool = buffers.array.view(np.uint64) if word == 8 else buffers.array
    dram = job["dram"].view(np.uint64) if word == 8 else job["dram"]
    try:
        slots = 2 * queue_depth
        free = np.arange(slots, dtype=np.int64)
        state = np.array([0, 0, 0, slots, -1, 0], dtype=np.int64)
        block_bytes = buffers.block_bytes
        while True:
            status = _aio_loop(ctx.ctx, fd, queue_depth, block_bytes, header_blocks, pool,
                               buffers.address, ctx.iocbs, ctx.batch, ctx.events, free,
                               ctx.slot_read, state, ctx.ts, job["blocks"], job["ins_lo"],
                               job["ins_hi"], job["ins_ids"], job["ins_slots"], job["pos"],
                               job["per_block"], vb // word, dram, job["filled"], job["submit_ns"],
                               job["done_ns"])
            if status == _DONE:
                job["io_submit_calls"] = int(state[5])
                break
            err = ctypes.get_errno() if status != _ERR_SHORT_READ else 0
            if status in (_ERR_SUBMIT, _ERR_GETEVENTS) and err in (errno.EINTR, errno.EAGAIN):
                continue
            if status == _ERR_SHORT_READ:
                i = int(state[4])
                raise DirectIOError(errno.EIO, f"short or failed read of block {int(job['blocks'][i])}")
            call = "io_submit" if status == _ERR_SUBMIT else "io_getevents"
            raise DirectIOError(err, f"{call} failed: {os.strerror(err) if err else 'unknown error'}")
        if offset:
            job["submit_ns"] += offset
            job["done_ns"] += offset
    finally:
        if own:
            ctx.close()


def run_threads(fd: int, job: dict, queue_depth: int, buffers, header_blocks: int = 1) -> None:
    """Run ``job`` with ``queue_depth`` threads around ``os.preadv`` (one buffer row each)."""
    blocks = job["blocks"]
    n = blocks.shape[0]
    block_bytes = buffers.block_bytes
    counter = iter(range(n))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(slot: int) -> None:
        buf = buffers.array[slot]
        view = memoryview(buf)
        try:
            while not errors:
                with lock:
                    i = next(counter, -1)
                if i < 0:
                    return
                job["submit_ns"][i] = time.perf_counter_ns()
                got = os.preadv(fd, [view], (int(blocks[i]) + header_blocks) * block_bytes)
                if got != block_bytes:
                    raise DirectIOError(errno.EIO, f"short read of block {int(blocks[i])}: {got} bytes")
                job["done_ns"][i] = time.perf_counter_ns()
                copy_one(buf, i, blocks, job["ins_lo"], job["ins_hi"], job["ins_ids"], job["ins_slots"],
                         job["pos"], job["per_block"], job["vector_bytes"], job["dram"], job["filled"])
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(err)

    if queue_depth == 1:
        worker(0)
    else:
        threads = [threading.Thread(target=worker, args=(s,), daemon=True) for s in range(queue_depth)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]


def run_job(mechanism: str, fd: int, job: dict, queue_depth: int, buffers, header_blocks: int = 1,
            context: AioContext | None = None) -> None:
    """Run a read job with ``mechanism`` (``"libaio"`` or ``"threads"``).

    ``job`` holds: ``blocks`` (int64[R], data block of each read), ``ins_lo``/``ins_hi``
    (int64[R], the read's slice of ``ins_ids``), ``ins_ids`` (int64, vector ids),
    ``ins_slots`` (int64, each id's DRAM slot, -1: no copy), ``pos`` (storage position
    of each id), ``per_block``, ``vector_bytes``, ``dram`` (uint8[slots, vector_bytes]),
    ``filled`` (uint8[slots], set to 1 for each slot copied into), and ``submit_ns``/``done_ns``
    (int64[R], filled with perf_counter_ns times). ``"libaio"`` adds ``io_submit_calls``
    (one per read).
    """
    if mechanism == "libaio":
        run_libaio(fd, job, queue_depth, buffers, header_blocks, context)
    elif mechanism == "threads":
        run_threads(fd, job, queue_depth, buffers, header_blocks)
    else:
        raise ValueError(f"unknown I/O mechanism {mechanism!r}; known: {', '.join(MECHANISMS)}")


def _reads_only(blocks: np.ndarray, vector_bytes: int) -> dict:
    """A read job over ``blocks`` that inserts nothing (see :func:`run_job`)."""
    r = blocks.shape[0]
    zeros = np.zeros(r + 1, dtype=np.int64)
    return {"blocks": blocks, "ins_lo": zeros[:r], "ins_hi": zeros[:r], "ins_ids": zeros[:0],
            "ins_slots": zeros[:0], "pos": zeros[:1], "per_block": 1, "vector_bytes": vector_bytes,
            "dram": np.zeros((1, vector_bytes), dtype=np.uint8), "filled": np.zeros(1, dtype=np.uint8),
            "submit_ns": np.zeros(r, dtype=np.int64), "done_ns": np.zeros(r, dtype=np.int64)}


def raw_read_rate(mechanism: str, fd: int, n_blocks: int, queue_depth: int, buffers, seconds: float,
                  rng: np.random.Generator, header_blocks: int = 1, context: AioContext | None = None,
                  batch: int = 4096) -> dict:
    """The read loop alone: uniformly random data blocks of the store, ``queue_depth`` in
    flight, no cache decisions and no copies, in jobs of ``batch`` reads until ``seconds``
    have passed (fio's access pattern, through this module's loop).

    Returns ``{"reads", "seconds", "blocks_per_second"}`` (reads/s).
    """
    reads = 0
    start = time.perf_counter()
    while True:
        job = _reads_only(rng.integers(0, n_blocks, size=batch, dtype=np.int64), 8)
        run_job(mechanism, fd, job, queue_depth, buffers, header_blocks, context)
        reads += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return {"reads": reads, "seconds": elapsed, "blocks_per_second": reads / elapsed}


def warm_up(mechanism: str) -> None:
    """Compile ``mechanism``'s numba code (empty jobs), so no compile time is measured.

    Both element types the AIO loop is specialised for are compiled: bytes (vector sizes
    that are not a multiple of 8) and 8-byte words (the others).
    """
    from impls.bandana.nvm.block_store import AlignedBuffers

    buffers = AlignedBuffers(2, 4096)
    try:
        for vector_bytes in (1, 8):
            run_job(mechanism, -1, _reads_only(np.zeros(0, dtype=np.int64), vector_bytes), 1, buffers)
        one = np.zeros(1, dtype=np.int64)
        copy_one(buffers.array[0], 0, one, one, one, one, one - 1, one, 1, 1, np.zeros((1, 1), dtype=np.uint8),
                 np.zeros(1, dtype=np.uint8))
    finally:
        buffers.close()


def default_mechanism() -> str:
    """``"libaio"`` where the AIO syscalls work, else ``"threads"``."""
    return "libaio" if libaio_unavailable_reason() is None else "threads"
