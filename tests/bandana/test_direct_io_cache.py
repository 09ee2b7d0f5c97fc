"""The Linux AIO loop's numba kernels are cached on disk: a second process loads them instead
of compiling them again, and the loaded code still reads and copies the right bytes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from impls.bandana.nvm import block_store as bs
from impls.bandana.nvm import direct_io

ROOT = Path(__file__).resolve().parents[2]
BLOCK = 4096
VECTOR = 64
LIBAIO = direct_io.libaio_unavailable_reason() is None

# Run in a fresh process: compile (or load) the AIO kernels, then, where the syscalls work, read
# three blocks of a small buffered file through the libaio loop and the threads fallback.
SCRIPT = r"""
import json, os, sys
import numpy as np
from impls.bandana.nvm import direct_io, direct_io_kernels
from impls.bandana.nvm.block_store import AlignedBuffers

path, libaio = sys.argv[1], sys.argv[2] == "1"
block, vector = %(block)d, %(vector)d
per_block = block // vector
ts = np.zeros(2, dtype=np.int64)
assert direct_io_kernels._now_ns(ts) > 0
buffers = AlignedBuffers(4, block)
one = np.zeros(1, dtype=np.int64)
empty = one[:0]
state = np.array([0, 0, 0, 4, -1, 0], dtype=np.int64)
# an empty job: returns before any syscall, so this compiles the loop on any machine
assert direct_io_kernels._aio_loop(0, -1, 2, block, 1, buffers.array.view(np.uint64), buffers.address,
                                   np.zeros(32, dtype=np.int64), one.copy(), np.zeros(8, dtype=np.int64),
                                   np.arange(4, dtype=np.int64), np.zeros(4, dtype=np.int64), state, ts, empty,
                                   one, one, empty, empty, one, per_block, vector // 8,
                                   np.zeros((1, vector // 8), dtype=np.uint64), np.zeros(1, dtype=np.uint8),
                                   empty.copy(), empty.copy()) == 0
out = {}
if libaio:
    blocks = np.array([2, 0, 3], dtype=np.int64)
    ids = np.array([2 * per_block + 5, 7, 3 * per_block + per_block - 1], dtype=np.int64)
    fd = os.open(path, os.O_RDONLY)
    try:
        for mechanism in direct_io.MECHANISMS:
            job = {"blocks": blocks, "ins_lo": np.arange(3, dtype=np.int64),
                   "ins_hi": np.arange(1, 4, dtype=np.int64), "ins_ids": ids,
                   "ins_slots": np.arange(3, dtype=np.int64), "pos": np.arange(4 * per_block, dtype=np.int64),
                   "per_block": per_block, "vector_bytes": vector,
                   "dram": np.zeros((3, vector), dtype=np.uint8), "filled": np.zeros(3, dtype=np.uint8),
                   "submit_ns": np.zeros(3, dtype=np.int64), "done_ns": np.zeros(3, dtype=np.int64)}
            direct_io.run_job(mechanism, fd, job, 2, buffers)
            out[mechanism] = {"dram": job["dram"].tolist(), "filled": job["filled"].tolist(),
                              "timed": bool(np.all(job["done_ns"] >= job["submit_ns"])
                                            and np.all(job["submit_ns"] > 0))}
    finally:
        os.close(fd)
buffers.close()
for name in ("_aio_loop", "_now_ns"):
    stats = getattr(direct_io_kernels, name).stats
    out[name] = {"hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values())}
print(json.dumps(out))
""" % {"block": BLOCK, "vector": VECTOR}


def _data_file(path: Path) -> np.ndarray:
    """A header block and 4 data blocks of random bytes at ``path``; returns the data blocks."""
    data = np.random.default_rng(3).integers(0, 256, size=(5, BLOCK), dtype=np.uint8)
    path.write_bytes(data.tobytes())
    return data[1:]


def _run(tmp_path: Path, store: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(store), "1" if LIBAIO else "0"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_aio_kernels_are_loaded_from_the_disk_cache_by_a_second_process(tmp_path):
    """The loop calls libc by symbol name, not through a ctypes pointer (whose address numba
    will not cache): a second process loads both kernels and compiles neither."""
    store = tmp_path / "blocks.bin"
    data = _data_file(store)
    first = _run(tmp_path, store)
    second = _run(tmp_path, store)
    for name in ("_aio_loop", "_now_ns"):
        assert first[name]["misses"] >= 1, first
        assert second[name] == {"hits": first[name]["misses"], "misses": 0}, (name, second)
    if not LIBAIO:
        pytest.skip(f"Linux AIO syscalls unavailable here ({direct_io.libaio_unavailable_reason()}): "
                    "only the loading was checked")
    per_block = BLOCK // VECTOR
    want = [data[2, 5 * VECTOR:6 * VECTOR], data[0, 7 * VECTOR:8 * VECTOR],
            data[3, (per_block - 1) * VECTOR:]]
    for run in (first, second):                  # compiled, then loaded from the cache
        for mechanism in direct_io.MECHANISMS:
            got = run[mechanism]
            assert np.array_equal(np.array(got["dram"], dtype=np.uint8), np.stack(want)), mechanism
            assert got["filled"] == [1, 1, 1] and got["timed"], mechanism


@pytest.mark.skipif(not LIBAIO, reason="Linux AIO syscalls unavailable here")
def test_aio_loop_reads_an_o_direct_store_like_the_threads(store_dir):
    """The same reads of an O_DIRECT store through both mechanisms fill DRAM identically, with
    every read timed on the perf_counter clock (the kernel's clock_gettime)."""
    table = bs.random_table(600, 128, 4)
    layout = np.random.default_rng(5).permutation(600)
    path = store_dir / "c.store"
    bs.write_store(path, table, layout)
    dram = {}
    with bs.open_store(path, layout) as store:
        per_block = store.header.block_bytes // 128
        blocks = np.random.default_rng(6).integers(0, store.header.n_blocks, size=50, dtype=np.int64)
        pos = np.argsort(layout).astype(np.int64)          # storage position of each id
        ids = layout[blocks * per_block]                   # each read inserts its block's first vector
        buffers = bs.AlignedBuffers(16, store.header.block_bytes)
        try:
            for mechanism in direct_io.MECHANISMS:
                job = {"blocks": blocks, "ins_lo": np.arange(50, dtype=np.int64),
                       "ins_hi": np.arange(1, 51, dtype=np.int64), "ins_ids": ids.astype(np.int64),
                       "ins_slots": np.arange(50, dtype=np.int64), "pos": pos, "per_block": per_block,
                       "vector_bytes": 128, "dram": np.zeros((50, 128), dtype=np.uint8),
                       "filled": np.zeros(50, dtype=np.uint8), "submit_ns": np.zeros(50, dtype=np.int64),
                       "done_ns": np.zeros(50, dtype=np.int64)}
                before = direct_io.time.perf_counter_ns()
                direct_io.run_job(mechanism, store.fd, job, 8, buffers)
                after = direct_io.time.perf_counter_ns()
                assert np.all(job["filled"] == 1)
                assert np.all(before <= job["submit_ns"]) and np.all(job["submit_ns"] <= job["done_ns"])
                assert np.all(job["done_ns"] <= after)
                dram[mechanism] = job["dram"]
        finally:
            buffers.close()
    want = np.ascontiguousarray(table[ids]).view(np.uint8)
    assert np.array_equal(dram["libaio"], want)
    assert np.array_equal(dram["threads"], want)
