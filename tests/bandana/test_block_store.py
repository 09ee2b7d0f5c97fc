"""The O_DIRECT embedding store: alignment, byte-identical reads, integrity checks, safety."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from impls.bandana.nvm import block_store as bs
from impls.harness import capabilities


def _table(n=1000, vector_bytes=128, seed=3):
    return bs.random_table(n, vector_bytes, seed)


def test_layout_alignment_and_byte_identical_blocks(store_dir):
    n = 1000
    table = _table(n)
    layout = np.random.default_rng(0).permutation(n)
    path = store_dir / "t.store"
    header = bs.write_store(path, table, layout)
    assert header.per_block == 32 and header.n_blocks == -(-n // 32)
    assert path.stat().st_size == header.file_bytes == (1 + header.n_blocks) * 4096
    assert header.file_bytes % 4096 == 0
    assert all(header.block_offset(b) % 4096 == 0 for b in range(header.n_blocks))
    buffers = bs.AlignedBuffers(2, 4096)
    assert buffers.address % 4096 == 0 and (buffers.address + 4096) % 4096 == 0
    with bs.open_store(path, layout) as store:
        assert os.O_DIRECT & __import__("fcntl").fcntl(store.fd, __import__("fcntl").F_GETFL)
        for b in range(header.n_blocks):
            store.read_block(b, buffers.array[b % 2])
            got = store.vectors_of_block(buffers.array[b % 2])
            ids = layout[b * 32:(b + 1) * 32]
            assert np.array_equal(got[:ids.size], table[ids])
            assert not got[ids.size:].any()          # the last block is zero-padded
        with pytest.raises(IndexError):
            store.read_block(header.n_blocks, buffers.array[0])
    buffers.close()


@pytest.mark.parametrize("vector_bytes", [50, 400])
def test_vectors_that_do_not_divide_a_block_leave_zeros_at_its_end(store_dir, vector_bytes):
    n = 700
    table = bs.random_table(n, vector_bytes, 5)
    layout = np.random.default_rng(1).permutation(n)
    header = bs.write_store(store_dir / "odd.store", table, layout)
    per_block = 4096 // vector_bytes                 # 81 of 50 bytes (46 spare), 10 of 400 (96 spare)
    assert header.per_block == per_block and header.n_blocks == -(-n // per_block)
    assert bs.read_header(store_dir / "odd.store") == header
    buffers = bs.AlignedBuffers(1, 4096)
    with bs.open_store(store_dir / "odd.store", layout) as store:
        for b in range(header.n_blocks):
            store.read_block(b, buffers.array[0])
            ids = layout[b * per_block:(b + 1) * per_block]
            got = store.vectors_of_block(buffers.array[0])
            assert np.array_equal(got[:ids.size], table[ids])
            assert not buffers.array[0][ids.size * vector_bytes:].any()
    buffers.close()


def test_uint8_vectors_and_other_block_size(store_dir):
    table = _table(300, vector_bytes=64)
    assert table.dtype == np.float32
    raw = bs.random_table(300, 50, 1)
    assert raw.dtype == np.uint8
    with pytest.raises(bs.StoreError, match="a vector of 1024 bytes .* does not fit block_bytes=512"):
        bs.write_store(store_dir / "x.store", bs.random_table(30, 1024, 1), np.arange(30), block_bytes=512)
    header = bs.write_store(store_dir / "y.store", table, np.arange(300), block_bytes=8192)
    assert header.per_block == 128 and header.file_bytes % 8192 == 0
    assert bs.read_header(store_dir / "y.store") == header


@pytest.mark.parametrize("damage, message", [
    ("magic", "not an embedding store"),
    ("crc", "header checksum mismatch"),
    ("truncate", "truncated"),
    ("extend", "truncated or not this store"),
    ("empty", "too short"),
])
def test_damaged_store_is_rejected(store_dir, damage, message):
    path = store_dir / "d.store"
    bs.write_store(path, _table(200), np.arange(200))
    data = bytearray(path.read_bytes())
    if damage == "magic":
        data[:8] = b"NOTASTOR"
    elif damage == "crc":
        data[16] ^= 0x01                       # n_vectors changes, the CRC no longer matches
    elif damage == "truncate":
        data = data[:-100]
    elif damage == "extend":
        data += b"\0" * 4096
    elif damage == "empty":
        data = data[:10]
    path.write_bytes(bytes(data))
    with pytest.raises(bs.StoreError, match=message):
        bs.open_store(path)
    with pytest.raises(bs.StoreError):
        bs.remove_store(path)                  # never deletes what is not a valid store
    assert path.exists()


def test_layout_checksum_mismatch_is_rejected(store_dir):
    path = store_dir / "l.store"
    layout = np.random.default_rng(1).permutation(500)
    bs.write_store(path, _table(500), layout)
    other = layout.copy()
    other[[0, 1]] = other[[1, 0]]
    with pytest.raises(bs.StoreError, match="layout checksum mismatch"):
        bs.open_store(path, other)
    with pytest.raises(bs.StoreError, match="holds 500 vectors"):
        bs.open_store(path, np.arange(400))
    bs.open_store(path, layout).close()


def test_bad_input_is_refused(store_dir):
    with pytest.raises(bs.StoreError, match="permutation"):
        bs.write_store(store_dir / "p.store", _table(100), np.zeros(100, dtype=np.int64))
    with pytest.raises(bs.StoreError, match="multiple of 512"):
        bs.write_store(store_dir / "p.store", _table(100), np.arange(100), block_bytes=1000)
    with pytest.raises(bs.StoreError, match="2-D"):
        bs.write_store(store_dir / "p.store", np.zeros(10, dtype=np.float32), np.arange(10))
    assert not list(store_dir.glob("*"))


def test_interrupted_write_leaves_nothing(store_dir, monkeypatch):
    path = store_dir / "i.store"

    def fail(_fd):
        raise OSError("simulated power cut before fsync completed")

    monkeypatch.setattr(bs.os, "fsync", fail)
    with pytest.raises(OSError, match="power cut"):
        bs.write_store(path, _table(400), np.arange(400))
    assert not list(store_dir.glob("*")), "a temp file or a half-written store was left behind"


def test_an_existing_store_is_replaced_atomically(store_dir):
    path = store_dir / "a.store"
    bs.write_store(path, _table(100, seed=1), np.arange(100))
    table = _table(100, seed=2)
    bs.write_store(path, table, np.arange(100)[::-1])
    with bs.open_store(path, np.arange(100)[::-1]) as store:
        buffers = bs.AlignedBuffers(1, 4096)
        store.read_block(0, buffers.array[0])
        assert np.array_equal(store.vectors_of_block(buffers.array[0]), table[99 - np.arange(32)])
        buffers.close()


def _a_block_device() -> Path | None:
    for name in sorted(os.listdir("/sys/block")) if os.path.isdir("/sys/block") else []:
        device = Path("/dev") / name
        if device.exists() and stat.S_ISBLK(device.stat().st_mode):
            return device
    return None


def test_never_writes_to_a_block_device():
    device = _a_block_device()
    if device is None:
        pytest.skip("no block device visible")
    before = device.stat().st_mtime_ns
    with pytest.raises(bs.StoreError, match="block device"):
        bs.write_store(device, _table(64), np.arange(64))
    assert device.stat().st_mtime_ns == before


def test_refuses_tmpfs():
    shm = Path("/dev/shm")
    if not shm.is_dir() or capabilities.filesystem_type(shm) not in capabilities.MEMORY_FILESYSTEMS:
        pytest.skip("no tmpfs at /dev/shm")
    target = shm / f"dlsysbench-test-{os.getpid()}.store"
    with pytest.raises(bs.DirectIOUnavailable, match="in memory"):
        bs.write_store(target, _table(64), np.arange(64))
    assert not target.exists()


def test_a_store_is_whole_when_the_kernel_takes_each_write_in_part(store_dir, monkeypatch):
    """Linux takes at most 2,147,479,552 bytes a write() (more than one chunk's 2 GiB at
    --block-bytes above 1 MiB on a large table) and returns the short count: the store must
    still hold every byte, where it used to be written short and read as 'truncated'."""
    opened = os.fdopen

    class Short:
        def __init__(self, handle):
            self.handle, self.name = handle, handle.name

        def write(self, data):
            return self.handle.write(memoryview(data)[:1000])     # a partial write, as the kernel may

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.handle.__exit__(*exc)

        def fileno(self):
            return self.handle.fileno()

    monkeypatch.setattr(bs.os, "fdopen", lambda *a, **k: Short(opened(*a, **k)))
    n = 300
    table = _table(n)
    layout = np.random.default_rng(2).permutation(n)
    header = bs.write_store(store_dir / "short.store", table, layout)
    monkeypatch.undo()
    assert (store_dir / "short.store").stat().st_size == header.file_bytes
    buffers = bs.AlignedBuffers(1, 4096)
    with bs.open_store(store_dir / "short.store", layout) as store:
        for b in range(header.n_blocks):
            store.read_block(b, buffers.array[0])
            ids = layout[b * 32:(b + 1) * 32]
            assert np.array_equal(store.vectors_of_block(buffers.array[0])[:ids.size], table[ids])
    buffers.close()


def test_a_write_that_takes_nothing_is_an_error_not_a_loop():
    class Stuck:
        name = "stuck"

        def write(self, data):
            return 0

    with pytest.raises(OSError, match="wrote nothing of 5 bytes to stuck"):
        bs.write_all(Stuck(), memoryview(b"12345"))
