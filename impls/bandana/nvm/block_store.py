"""An embedding table on block storage, laid out for Bandana: 4 KB-aligned blocks of V vectors.

File format (little-endian), ``block_bytes`` (B) per block:

* block 0, the header: ``magic`` (8 bytes, ``DLSBNDV1``), ``version`` (u32),
  ``block_bytes`` (u32), ``n_vectors`` (u64), ``dim`` (u32), ``dtype`` (8 bytes,
  numpy's ``str``, e.g. ``<f4``), ``vector_bytes`` (u32), ``per_block`` (u32: V),
  ``n_blocks`` (u64), ``layout_sha256`` (32 bytes: SHA-256 of the layout as int64
  little-endian), ``crc32`` (u32) of the fields before it; zeros up to B bytes;
* blocks 1 .. n_blocks: data block ``b`` holds storage positions ``b*V .. b*V+V-1``,
  i.e. vectors ``layout[b*V + j]`` at byte ``j * vector_bytes`` of the block, with
  ``V = B // vector_bytes``; the bytes after the V-th vector (when vector_bytes does not
  divide B) and the last block's unused positions are zeros. Data block ``b`` starts at
  byte ``(b + 1) * B``.

The file is exactly ``(1 + n_blocks) * B`` bytes. :func:`write_store` writes a temp
file beside the target, fsyncs it, renames it over the target and fsyncs the
directory, so an interrupted write never leaves a half-written store under the
target's name. :func:`open_store` rejects a foreign or damaged file (bad magic,
version, header checksum, size, or a layout other than the one expected) before
anything is read as vectors, and reads with ``O_DIRECT`` into page-aligned buffers
(:class:`AlignedBuffers`, one ``mmap`` allocation), so the page cache never serves a
read. Only regular files are written; a block device, a directory this user cannot write, a
path on an in-memory filesystem (tmpfs) or a filesystem that refuses ``O_DIRECT`` is refused
with the reason, naming the setting that chose the path.
"""
from __future__ import annotations

import dataclasses
import hashlib
import mmap
import os
import shutil
import stat
import struct
import zlib
from pathlib import Path

import numpy as np

from impls.harness import atomic, capabilities, cli, nvm_file, paths

MAGIC = b"DLSBNDV1"
VERSION = 1
_HEADER = struct.Struct("<8sII Q I 8s II Q 32s")
_CRC = struct.Struct("<I")
_WRITE_CHUNK_BYTES = 8 << 20          # about this much a write, whatever the block size (one block at least)


class StoreError(ValueError):
    """A store file is missing, foreign, damaged or does not match what was asked for."""


class DirectIOUnavailable(OSError):
    """The store cannot be measured where it is asked for: its directory is not this user's to
    write, or O_DIRECT reads there would not reach a drive (tmpfs, a refusing filesystem)."""


@dataclasses.dataclass(frozen=True)
class StoreHeader:
    """What a store holds: ``n_vectors`` vectors of ``dim`` values of ``dtype``
    (``vector_bytes`` bytes each), ``per_block`` per ``block_bytes``-byte block,
    ``n_blocks`` data blocks, stored in the layout whose SHA-256 is ``layout_sha256``."""

    n_vectors: int
    dim: int
    dtype: str
    vector_bytes: int
    block_bytes: int
    per_block: int
    n_blocks: int
    layout_sha256: bytes

    @property
    def file_bytes(self) -> int:
        """Size of the store file in bytes: the header block plus the data blocks."""
        return (1 + self.n_blocks) * self.block_bytes

    def block_offset(self, block: int) -> int:
        """Byte offset of data block ``block`` in the file."""
        return (1 + int(block)) * self.block_bytes

    def pack(self) -> bytes:
        """The header block: ``block_bytes`` bytes."""
        fields = _HEADER.pack(MAGIC, VERSION, self.block_bytes, self.n_vectors, self.dim,
                              self.dtype.encode().ljust(8, b"\0"), self.vector_bytes,
                              self.per_block, self.n_blocks, self.layout_sha256)
        packed = fields + _CRC.pack(zlib.crc32(fields))
        return packed.ljust(self.block_bytes, b"\0")


def layout_digest(layout) -> bytes:
    """SHA-256 (32 bytes) of ``layout`` as little-endian int64."""
    return hashlib.sha256(np.ascontiguousarray(layout, dtype="<i8").tobytes()).digest()


def check_target(path: str | os.PathLike, setting: str = "DLSYSBENCH_NVM_PATH") -> Path:
    """Return ``path`` as an absolute Path after checking a store may be written there.

    Raises :class:`StoreError` for a block device or an existing non-regular file
    (a store is only ever written to a regular file) or a missing directory outside the
    suite's cache (:func:`impls.harness.paths.ensure_directory_of`: never created), and
    :class:`DirectIOUnavailable` when this user may not create files in the directory, or
    it is on an in-memory filesystem or refuses O_DIRECT. ``setting``: what chose ``path``
    (``DLSYSBENCH_NVM_PATH``, ``DLSYSBENCH_CACHE``, ``--path``), which a refusal names.
    """
    target = Path(path).expanduser().absolute()
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISBLK(mode):
        raise StoreError(f"{target} is a block device: the store is only written to a regular file it "
                         f"creates; point DLSYSBENCH_NVM_PATH (or --path) at a file on that drive's filesystem")
    if mode is not None and not stat.S_ISREG(mode):
        raise StoreError(f"{target} exists and is not a regular file")
    try:
        paths.ensure_directory_of(target, setting)
    except ValueError as err:
        raise StoreError(str(err)) from None
    capability = capabilities.check_o_direct(target.parent / ".store-probe", setting)
    if not capability.available:
        raise DirectIOUnavailable(capability.reason)
    return target


def data_blocks(n_vectors: int, vector_bytes: int, block_bytes: int = 4096) -> int:
    """How many data blocks :func:`write_store` writes for ``n_vectors`` vectors of
    ``vector_bytes`` bytes, ``block_bytes // vector_bytes`` a block."""
    return -(-int(n_vectors) // (int(block_bytes) // int(vector_bytes)))


def store_file_bytes(n_vectors: int, vector_bytes: int, block_bytes: int = 4096) -> int:
    """Size in bytes of the store :func:`write_store` writes for ``n_vectors`` vectors of
    ``vector_bytes`` bytes in ``block_bytes``-byte blocks (:attr:`StoreHeader.file_bytes`)."""
    return (1 + data_blocks(n_vectors, vector_bytes, block_bytes)) * int(block_bytes)


def check_free_space(target: str | os.PathLike, file_bytes: int) -> None:
    """Raise :class:`OSError` unless ``target``'s directory has ``file_bytes`` plus a headroom
    free: the check :func:`write_store` makes, which a caller can make before it builds the table."""
    target = Path(target)
    free = shutil.disk_usage(target.parent).free
    if free < file_bytes + nvm_file.FREE_SPACE_HEADROOM_BYTES:
        raise OSError(f"not enough free space for {target}: needs {file_bytes} bytes plus "
                      f"{nvm_file.FREE_SPACE_HEADROOM_BYTES} headroom, {free} free")


def write_all(handle, data: memoryview) -> None:
    """Write every byte of ``data`` to the unbuffered ``handle``: a raw write may take fewer
    (Linux takes at most 2,147,479,552 bytes a call, a signal can cut one short), and
    returns how many; OSError where one writes nothing."""
    while len(data):
        done = handle.write(data)
        if not done:
            raise OSError(f"wrote nothing of {len(data)} bytes to {getattr(handle, 'name', 'the store')}")
        data = data[done:]


def write_store(path: str | os.PathLike, vectors: np.ndarray, layout, block_bytes: int = 4096,
                setting: str = "DLSYSBENCH_NVM_PATH") -> StoreHeader:
    """Write ``vectors`` (N × dim, any fixed-size dtype) to ``path`` in ``layout`` order.

    ``layout`` is a permutation of 0..N-1 (position ``i`` holds vector
    ``layout[i]``); ``block_bytes`` is a multiple of 512 and at least ``dim * itemsize``
    (a block holds ``block_bytes // (dim * itemsize)`` vectors, zeros after them). Checks the target
    (:func:`check_target`, whose refusals name ``setting``: what chose ``path``) and the free
    space first; writes a temp file, fsyncs, renames. Returns the header written.
    """
    vectors = np.ascontiguousarray(vectors)
    if vectors.ndim != 2 or vectors.shape[0] == 0:
        raise StoreError(f"vectors must be a non-empty 2-D array (N x dim), got shape {vectors.shape}")
    n, dim = vectors.shape
    vector_bytes = dim * vectors.dtype.itemsize
    if isinstance(block_bytes, bool) or not isinstance(block_bytes, (int, np.integer)) \
            or block_bytes <= 0 or block_bytes % 512:
        raise StoreError(f"block_bytes must be a positive multiple of 512 (O_DIRECT), got {block_bytes!r}")
    block_bytes = int(block_bytes)
    if vector_bytes > block_bytes:
        raise StoreError(f"a vector of {vector_bytes} bytes ({dim} x {vectors.dtype}) does not fit "
                         f"block_bytes={block_bytes}")
    if vectors.dtype.hasobject:
        raise StoreError(f"vectors of dtype {vectors.dtype} cannot be stored")
    layout = np.asarray(layout)
    if layout.shape != (n,) or not np.issubdtype(layout.dtype, np.integer) \
            or not np.array_equal(np.sort(layout), np.arange(n)):
        raise StoreError(f"layout must be a permutation of 0..{n - 1} (one entry per vector)")
    layout = layout.astype(np.int64)
    per_block = block_bytes // vector_bytes
    header = StoreHeader(n_vectors=n, dim=dim, dtype=vectors.dtype.str, vector_bytes=vector_bytes,
                         block_bytes=block_bytes, per_block=per_block,
                         n_blocks=data_blocks(n, vector_bytes, block_bytes), layout_sha256=layout_digest(layout))
    target = check_target(path, setting)
    check_free_space(target, header.file_bytes)
    raw = vectors.view(np.uint8).reshape(n, vector_bytes)
    fd, temporary = atomic.temporary_beside(target)
    try:
        with os.fdopen(fd, "wb", buffering=0) as handle:
            write_all(handle, memoryview(header.pack()))
            step = max(1, _WRITE_CHUNK_BYTES // block_bytes) * per_block
            for lo in range(0, n, step):
                hi = min(n, lo + step)
                blocks = -(-(hi - lo) // per_block)
                rows = np.zeros((blocks * per_block, vector_bytes), dtype=np.uint8)
                rows[:hi - lo] = raw[layout[lo:hi]]
                chunk = np.zeros((blocks, block_bytes), dtype=np.uint8)
                chunk[:, :per_block * vector_bytes] = rows.reshape(blocks, per_block * vector_bytes)
                write_all(handle, memoryview(chunk).cast("B"))
                cli.fault_point("store-write")
            os.fchmod(handle.fileno(), 0o644)
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    atomic.fsync_directory(target.parent)
    return header


def read_header(path: str | os.PathLike) -> StoreHeader:
    """Read and validate the header of the store at ``path`` (buffered read of block 0).

    Raises :class:`StoreError` naming the problem: not a store (magic), another
    version, a damaged header (CRC), inconsistent fields, or a file size other than
    ``(1 + n_blocks) * block_bytes`` (truncated or extended).
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(_HEADER.size + _CRC.size)
    except OSError as err:
        raise StoreError(f"{path}: cannot read the store ({err.strerror or err})") from None
    if len(head) < _HEADER.size + _CRC.size:
        raise StoreError(f"{path}: {size} bytes, too short to hold a store header")
    fields = head[:_HEADER.size]
    (magic, version, block_bytes, n_vectors, dim, dtype, vector_bytes, per_block, n_blocks,
     digest) = _HEADER.unpack(fields)
    if magic != MAGIC:
        raise StoreError(f"{path}: not an embedding store (magic {magic!r}, expected {MAGIC!r})")
    if version != VERSION:
        raise StoreError(f"{path}: store version {version}, this code reads version {VERSION}")
    (crc,) = _CRC.unpack(head[_HEADER.size:])
    if crc != zlib.crc32(fields):
        raise StoreError(f"{path}: header checksum mismatch (damaged header)")
    try:
        dtype_str = dtype.rstrip(b"\0").decode()
        itemsize = np.dtype(dtype_str).itemsize
    except (UnicodeDecodeError, TypeError) as err:
        raise StoreError(f"{path}: header holds an unknown dtype {dtype!r}") from err
    if (block_bytes == 0 or block_bytes % 512 or vector_bytes != dim * itemsize or vector_bytes == 0
            or block_bytes // vector_bytes != per_block or n_blocks != -(-n_vectors // per_block)):
        raise StoreError(f"{path}: inconsistent header (block_bytes={block_bytes}, vector_bytes="
                         f"{vector_bytes}, dim={dim}, dtype={dtype_str}, per_block={per_block}, "
                         f"n_vectors={n_vectors}, n_blocks={n_blocks})")
    header = StoreHeader(n_vectors, dim, dtype_str, vector_bytes, block_bytes, per_block, n_blocks, digest)
    if size != header.file_bytes:
        raise StoreError(f"{path}: {size} bytes, expected {header.file_bytes} "
                         f"(1 header + {n_blocks} data blocks of {block_bytes} bytes): truncated or not this store")
    return header


class AlignedBuffers:
    """``count`` page-aligned buffers of ``block_bytes`` each, in one anonymous mmap.

    ``array`` is a uint8 view of shape (count, block_bytes); ``address`` the first
    buffer's address (page-aligned, as O_DIRECT needs). Allocated once, reused by
    every read; ``close()`` releases the memory (no view may be used after).
    """

    def __init__(self, count: int, block_bytes: int):
        if count <= 0 or block_bytes <= 0 or block_bytes % mmap.PAGESIZE:
            raise ValueError(f"need count > 0 and block_bytes a multiple of {mmap.PAGESIZE}, "
                             f"got {count}, {block_bytes}")
        self.count, self.block_bytes = int(count), int(block_bytes)
        self._map = mmap.mmap(-1, self.count * self.block_bytes)
        self.array = np.frombuffer(self._map, dtype=np.uint8).reshape(self.count, self.block_bytes)
        self.address = self.array.ctypes.data
        assert self.address % mmap.PAGESIZE == 0

    def close(self) -> None:
        """Release the memory."""
        self.array = None
        try:
            self._map.close()
        except BufferError:  # a view is still alive somewhere: the map goes with it
            pass


class BlockStore:
    """An open store: validated header and an O_DIRECT read-only descriptor.

    Use :func:`open_store`. ``read_block(b, out)`` reads data block ``b`` into
    ``out`` (a page-aligned uint8 buffer of ``block_bytes``, e.g. a row of
    :class:`AlignedBuffers`); ``vectors_of_block`` decodes one read block.
    """

    def __init__(self, path: Path, header: StoreHeader, fd: int):
        self.path, self.header, self.fd = path, header, fd

    def read_block(self, block: int, out: np.ndarray) -> None:
        """Read data block ``block`` into ``out`` with one O_DIRECT pread; raises on a short read."""
        if not 0 <= block < self.header.n_blocks:
            raise IndexError(f"block {block} is outside [0, {self.header.n_blocks})")
        got = os.preadv(self.fd, [out], self.header.block_offset(block))
        if got != self.header.block_bytes:
            raise StoreError(f"{self.path}: short read of block {block} ({got} of {self.header.block_bytes} bytes)")

    def vectors_of_block(self, raw: np.ndarray) -> np.ndarray:
        """The ``per_block`` vectors (per_block × dim, the store's dtype) in one block's bytes."""
        h = self.header
        return raw[:h.per_block * h.vector_bytes].view(np.dtype(h.dtype)).reshape(h.per_block, h.dim)

    def close(self) -> None:
        """Close the descriptor."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "BlockStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_store(path: str | os.PathLike, layout=None) -> BlockStore:
    """Open the store at ``path`` for O_DIRECT reads, after :func:`read_header`'s checks.

    With ``layout``, also checks that the store was written in exactly that layout
    (SHA-256). Raises :class:`StoreError` for a bad store, :class:`DirectIOUnavailable`
    when the file's filesystem is in memory or refuses O_DIRECT.
    """
    path = Path(path).expanduser().absolute()
    header = read_header(path)
    if layout is not None:
        layout = np.asarray(layout)
        if layout.shape != (header.n_vectors,):
            raise StoreError(f"{path}: holds {header.n_vectors} vectors, the layout has {layout.shape[0]}")
        if layout_digest(layout) != header.layout_sha256:
            raise StoreError(f"{path}: layout checksum mismatch: the store was written in another layout")
    fs = capabilities.filesystem_type(path)
    memory = capabilities.memory_filesystem(path)
    if memory:
        raise DirectIOUnavailable(f"{path} {memory}: no read would reach a drive")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as err:
        raise DirectIOUnavailable(f"{path}: O_DIRECT open failed on {fs}: {err}") from None
    return BlockStore(path, header, fd)


def random_table(n_vectors: int, vector_bytes: int, seed: int) -> np.ndarray:
    """A seeded random table of ``n_vectors`` vectors of ``vector_bytes`` bytes each:
    float32 (N × vector_bytes/4, standard normal) when 4 divides vector_bytes, else
    uint8 (N × vector_bytes)."""
    rng = np.random.default_rng([int(seed), 0xB10C])
    if vector_bytes % 4 == 0:
        return rng.standard_normal((n_vectors, vector_bytes // 4), dtype=np.float32)
    return rng.integers(0, 256, size=(n_vectors, vector_bytes), dtype=np.uint8)


def remove_store(path: str | os.PathLike) -> None:
    """Delete a store file this code wrote (refuses anything that is not a store)."""
    path = Path(path)
    read_header(path)
    path.unlink()
