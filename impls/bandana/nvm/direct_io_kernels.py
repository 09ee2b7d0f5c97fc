"""numba kernels of :mod:`impls.bandana.nvm.direct_io`: the Linux AIO read loop and the copy of
a completed read's inserted vectors into their DRAM slots.

The kernels call libc's ``syscall`` and ``clock_gettime`` by symbol name, bound to this
process's libc when this module is imported, so that numba can cache them on disk (a ctypes
function pointer is a process address baked into the code, which numba refuses to cache).
Syscall numbers are x86-64's; :func:`impls.bandana.nvm.direct_io.libaio_unavailable_reason`
says where they do not hold. A kernel returns ``_DONE`` (0) or one of the ``_ERR_*`` codes.
"""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
from numba import njit, types

_NR_IO_SETUP, _NR_IO_DESTROY, _NR_IO_GETEVENTS, _NR_IO_SUBMIT = 206, 207, 208, 209  # x86-64
_IOCB_WORDS = 8       # struct iocb: 64 bytes
_EVENT_WORDS = 4      # struct io_event: 32 bytes
_CLOCK_MONOTONIC = 1

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_syscall.argtypes = [ctypes.c_long] * 6

# The kernels call libc by symbol name, resolved when their machine code is loaded, so numba
# can cache them on disk (a ctypes function pointer is a process address baked into the code,
# which numba refuses to cache). The symbols are bound to this process's libc explicitly.
for _name in ("syscall", "clock_gettime"):
    llvm.add_symbol(_name, ctypes.cast(getattr(_libc, _name), ctypes.c_void_p).value)
_nb_syscall = types.ExternalFunction("syscall", types.int64(*[types.int64] * 6))
_nb_clock_gettime = types.ExternalFunction("clock_gettime", types.int32(types.int32, types.int64))

# kernel status codes
_DONE = 0
_ERR_SUBMIT = 1
_ERR_GETEVENTS = 2
_ERR_SHORT_READ = 3


@njit(cache=True, nogil=True, inline="always")
def _copy_inserted(buf, i, blocks, ins_lo, ins_hi, ins_ids, ins_slots, pos, per_block, vb, dram,
                   filled):
    """Copy read ``i``'s inserted vectors from ``buf`` to their slots of ``dram``; ``vb`` is
    the vector size in elements of ``buf``/``dram`` (bytes, or 8-byte words)."""
    base = blocks[i] * per_block
    for k in range(ins_lo[i], ins_hi[i]):
        s = ins_slots[k]
        if s < 0:
            continue
        off = (pos[ins_ids[k]] - base) * vb
        for j in range(vb):
            dram[s, j] = buf[off + j]
        filled[s] = 1


@njit(cache=True, nogil=True)
def copy_one(buf, i, blocks, ins_lo, ins_hi, ins_ids, ins_slots, pos, per_block, vb, dram, filled):
    """Copy read ``i``'s inserted vectors from ``buf`` (its block's bytes) into their slots."""
    _copy_inserted(buf, i, blocks, ins_lo, ins_hi, ins_ids, ins_slots, pos, per_block, vb, dram, filled)


@njit(cache=True, nogil=True)
def _now_ns(ts):
    """CLOCK_MONOTONIC now, in ns; ``ts`` (int64[2]) receives the timespec."""
    _nb_clock_gettime(_CLOCK_MONOTONIC, ts.ctypes.data)
    return ts[0] * 1_000_000_000 + ts[1]


@njit(cache=True, nogil=True, inline="always")
def _fill(ctx, fd, queue_depth, block_bytes, header_blocks, pool_addr, iocbs, batch, free, slot_read,
          state, ts, blocks, submit_ns):
    """Submit reads until ``queue_depth`` are in flight or all are submitted; 0 or _ERR_SUBMIT.

    One ``io_submit`` per read, as fio does by default: the kernel plugs the block queue
    for a call of more than two iocbs and dispatches them together when the call ends,
    which costs reads/s at high queue depths (fio's own numbers: impls/bandana/NOTES.md).
    """
    n = blocks.shape[0]
    iocb_base = iocbs.ctypes.data
    while state[2] < queue_depth and state[0] < n:
        slot = free[state[3] - 1]
        i = state[0]
        w = slot * 8
        iocbs[w + 0] = slot                                   # aio_data
        iocbs[w + 1] = 0                                      # aio_key, aio_rw_flags
        iocbs[w + 2] = fd << 32                               # opcode PREAD (0), reqprio 0, fildes
        iocbs[w + 3] = pool_addr + slot * block_bytes         # aio_buf
        iocbs[w + 4] = block_bytes                            # aio_nbytes
        iocbs[w + 5] = (blocks[i] + header_blocks) * block_bytes  # aio_offset
        iocbs[w + 6] = 0
        iocbs[w + 7] = 0
        batch[0] = iocb_base + slot * 64
        slot_read[slot] = i
        submit_ns[i] = _now_ns(ts)
        got = _nb_syscall(_NR_IO_SUBMIT, ctx, 1, batch.ctypes.data, 0, 0)
        if got != 1:
            return _ERR_SUBMIT
        state[5] += 1
        state[0] += 1
        state[2] += 1
        state[3] -= 1
    return _DONE


@njit(cache=True, nogil=True)
def _aio_loop(ctx, fd, queue_depth, block_bytes, header_blocks, pool, pool_addr, iocbs,
              batch, events, free, slot_read, state, ts,
              blocks, ins_lo, ins_hi, ins_ids, ins_slots, pos, per_block, units, dram, filled, submit_ns,
              done_ns):
    """Run (or resume) a read job; state = [submitted, done, in_flight, n_free, failed_read,
    io_submit calls].

    ``pool`` holds at least 2 × queue_depth buffers, so the reads that replace the ones
    just completed are submitted before those are copied into DRAM (the device never
    waits for the copies). ``pool`` and ``dram`` are viewed in words of ``units`` per
    vector (uint64 when the vector size allows).
    """
    n = blocks.shape[0]
    while state[1] < n:
        if _fill(ctx, fd, queue_depth, block_bytes, header_blocks, pool_addr, iocbs, batch, free,
                 slot_read, state, ts, blocks, submit_ns) != _DONE:
            return _ERR_SUBMIT
        got = _nb_syscall(_NR_IO_GETEVENTS, ctx, 1, queue_depth, events.ctypes.data, 0)
        if got < 0:
            return _ERR_GETEVENTS
        now = _now_ns(ts)
        state[2] -= got
        for e in range(got):
            if events[e * 4 + 2] != block_bytes:
                state[4] = slot_read[events[e * 4 + 0]]
                return _ERR_SHORT_READ
        # refill the queue first, then copy the completed blocks
        if _fill(ctx, fd, queue_depth, block_bytes, header_blocks, pool_addr, iocbs, batch, free,
                 slot_read, state, ts, blocks, submit_ns) != _DONE:
            return _ERR_SUBMIT
        for e in range(got):
            slot = events[e * 4 + 0]
            i = slot_read[slot]
            done_ns[i] = now
            _copy_inserted(pool[slot], i, blocks, ins_lo, ins_hi, ins_ids, ins_slots, pos, per_block,
                           units, dram, filled)
            free[state[3]] = slot
            state[3] += 1
        state[1] += got
    return _DONE
