"""The NVM target file the suite writes and reads: random bytes the suite can recognise.

Every 4 KiB block of the file starts with a 16-byte header, ``MAGIC`` and the block's index
(little-endian uint64), followed by random bytes. :func:`is_suite_file` samples blocks and
checks their headers, so the file is recognised by its content alone: a copy, a remount or
a run killed just after the write is still the suite's, while a user's file, a sparse one or
one preallocated with ``fallocate`` (both read as zeros without reaching the drive) is not.
The headers are 0.4% of the bytes; the rest stays incompressible. The replay's store goes
beside that file (a block device is only read: then to the cache), :func:`store_location`.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import time
from pathlib import Path

import numpy as np

from impls.harness import atomic, paths
from impls.harness.mounts import is_device_target

MAGIC = b"DLSYSBNV"
BLOCK = 4096
HEADER = 16
SAMPLES = 8  # blocks checked besides the first and the last
_CHUNK_BLOCKS = 2048  # 8 MiB written at a time
_SEED = 0x0BA7DA7A


def _headers(first: int, count: int) -> np.ndarray:
    """The (count, 16) uint8 headers of blocks ``first`` .. ``first + count - 1``."""
    out = np.empty((count, HEADER), np.uint8)
    out[:, :8] = np.frombuffer(MAGIC, np.uint8)
    out[:, 8:] = np.arange(first, first + count, dtype="<u8")[:, None].view(np.uint8).reshape(count, 8)
    return out


FREE_SPACE_HEADROOM_BYTES = 64 << 20   # left free beside a target being written


def space_shortfall(target: Path, size_bytes: int) -> str | None:
    """Why ``target`` (a file to write, ``size_bytes`` long) does not fit where it goes: "not
    enough free space to create ..." with the bytes needed (the file + :data:`FREE_SPACE_HEADROOM_BYTES`)
    and free on the filesystem of its nearest existing directory; None where it fits."""
    directory = next((p for p in Path(target).absolute().parents if p.is_dir()), Path("/"))
    free_bytes = shutil.disk_usage(directory).free
    needed_bytes = size_bytes + FREE_SPACE_HEADROOM_BYTES
    if free_bytes >= needed_bytes:
        return None
    return (f"not enough free space to create {target}: needs {needed_bytes} bytes ({size_bytes} for the file + "
            f"{FREE_SPACE_HEADROOM_BYTES} headroom), {free_bytes} bytes free on its filesystem")


def device_bytes(device: Path) -> int:
    """The size of block device ``device`` in bytes, found by seeking to its end (read-only open)."""
    descriptor = os.open(device, os.O_RDONLY)
    try:
        return os.lseek(descriptor, 0, os.SEEK_END)
    finally:
        os.close(descriptor)


# what a killed write of the target left before its temporaries carried a pid (tempfile's names)
_LEGACY_TEMPORARY_AGE_S = 3600.0   # older than any write of a target: its writer is gone


def sweep_killed_writes(target: Path) -> None:
    """Remove the temporaries killed writers of ``target`` left beside it: those whose pid is
    gone (:func:`atomic.sweep_temporaries`), and the pid-less ``.<name>.XXXXXXXX.tmp`` of the
    suite's earlier versions once an hour old."""
    atomic.sweep_temporaries(target)
    legacy = re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}\.tmp")
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    for entry in entries:
        try:
            if legacy.fullmatch(entry.name) and entry.is_file(follow_symlinks=False) \
                    and time.time() - entry.stat(follow_symlinks=False).st_mtime > _LEGACY_TEMPORARY_AGE_S:
                os.unlink(entry.path)
        except OSError:
            continue


def write_suite_file(target: Path, size_bytes: int) -> None:
    """Write ``size_bytes`` of the suite's content to ``target``: a temp file beside it, fsynced,
    renamed over it (mode 0644), the directory fsynced. The temp file's name carries this
    process's pid (:func:`atomic.temporary_beside`); those of killed writers of ``target`` are
    removed first (:func:`sweep_killed_writes`)."""
    generator = np.random.default_rng(_SEED)
    sweep_killed_writes(target)
    descriptor, name = atomic.temporary_beside(target)
    temporary = Path(name)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            block = 0
            remaining = size_bytes
            while remaining > 0:
                blocks = min(_CHUNK_BLOCKS, -(-remaining // BLOCK))
                chunk = np.frombuffer(generator.bytes(blocks * BLOCK), np.uint8).reshape(blocks, BLOCK).copy()
                chunk[:, :HEADER] = _headers(block, blocks)
                data = chunk.reshape(-1)[:remaining]
                handle.write(data)  # contiguous: written from the array, not a copy of it
                remaining -= data.size
                block += blocks
            handle.flush()
            os.fchmod(handle.fileno(), 0o644)  # mkstemp creates 0600
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    atomic.fsync_directory(target.parent)


def is_suite_file(target: Path) -> bool:
    """Whether ``target`` holds the suite's content: the headers of its first, last and
    ``SAMPLES`` evenly spaced whole blocks are right (False for a file shorter than a block)."""
    try:
        size = os.stat(target).st_size
        whole = size // BLOCK
        if whole == 0:
            return False
        picks = sorted({0, whole - 1, *np.linspace(0, whole - 1, SAMPLES + 2).astype(int).tolist()})
        with open(target, "rb") as handle:
            for index in picks:
                handle.seek(index * BLOCK)
                if handle.read(HEADER) != _headers(index, 1).tobytes():
                    return False
    except OSError:
        return False
    return True


def profile_bytes(profile: str) -> int:
    """The bytes of the NVM target ``profile``'s fio sweep reads (``[fio_sweep.<profile>]
    file_bytes`` of impls/profiles.toml), what ``bandana.experiments.device.prepare_target``
    writes it with; ValueError or KeyError where the profile's table cannot be read."""
    from impls.harness import profiles

    size = profiles.sizes("fio_sweep", profile)["file_bytes"]
    if not isinstance(size, int) or isinstance(size, bool):
        raise ValueError(f"[fio_sweep.{profile}] file_bytes is {size!r}; expected a whole number of bytes")
    return size


def is_ready(target: Path, size_bytes: int) -> bool:
    """Whether ``target`` is the suite's file (:func:`is_suite_file`) and at least ``size_bytes``
    long: the fio sweep reads it as it lies; a shorter one is written again. False where it
    cannot be looked at."""
    try:
        return target.stat().st_size >= size_bytes and is_suite_file(target)
    except OSError:
        return False


def marker_of(target: Path) -> Path:
    """Where an earlier version of the suite marked its target (``.<name>.dlsysbench``)."""
    return Path(target).with_name(f".{Path(target).name}.dlsysbench")


def marked_by_an_earlier_version(target: Path) -> bool:
    """Whether the marker an earlier version wrote (device, inode, size, before targets carried
    block headers) vouches for ``target`` as it is now: the suite's own file, to be rewritten."""
    import json

    try:
        marked = json.loads(marker_of(target).read_text())
        status = os.stat(target)
    except (OSError, ValueError):
        return False
    return marked == {"device": status.st_dev, "inode": status.st_ino, "size": status.st_size}


def is_foreign(target: Path) -> bool:
    """Whether ``target`` is an existing regular file the suite must not write or read as its
    target: not the suite's content, not marked by an earlier version, and not the suite's
    default target (its own location, rewritten whatever it holds)."""
    target = Path(target)
    return (target.is_file() and target.absolute() != paths.default_nvm_target_path().absolute()
            and not is_suite_file(target) and not marked_by_an_earlier_version(target))


def foreign_reason(target: Path) -> str:
    """Why a foreign ``target`` (:func:`is_foreign`) is refused."""
    return (f"{target} exists ({os.stat(target).st_size} bytes) and does not hold the suite's content: it "
            "would be overwritten, and a sparse or preallocated file reads as zeros without reaching the "
            "drive; point DLSYSBENCH_NVM_PATH at a new file name (or a block device, only ever read)")


def store_location() -> tuple[Path, str]:
    """``(directory, setting)``: the directory the Bandana replay writes its store to
    (``impls.bandana.nvm.replay.default_store_path``; ``capabilities.check_replay_store``
    checks it) and the setting that chose it, for a message to name: ``DLSYSBENCH_NVM_PATH``
    when the store goes beside the file that variable names, ``DLSYSBENCH_CACHE`` when it goes
    to the cache (``DLSYSBENCH_NVM_PATH`` unset, or a block device, which is only read). Raises
    ValueError when ``DLSYSBENCH_NVM_PATH`` is a directory or a special file other than a
    block device: the store would land on some other drive than the one named."""
    target, device = nvm_target()
    if device:
        return paths.cache_dir(), "DLSYSBENCH_CACHE"
    return target.parent, "DLSYSBENCH_NVM_PATH" if paths.env_path("DLSYSBENCH_NVM_PATH") else "DLSYSBENCH_CACHE"


def nvm_target() -> tuple[Path, bool]:
    """``(target, is_device)``: the NVM target (a link's target) and whether it is a block
    device (or a name in /dev/, where the suite writes nothing); ValueError for a directory
    or another special file."""
    target = paths.nvm_target_path()
    try:
        target = target.resolve() if target.is_symlink() else target  # beside the file fio reads
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None                                    # created on first use, like fio's file
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise ValueError(f"DLSYSBENCH_NVM_PATH={target} is a directory; expected a file on the drive to "
                         "measure (the replay's store goes beside it), or a block device")
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISBLK(mode)):
        raise ValueError(f"DLSYSBENCH_NVM_PATH={target} is neither a regular file nor a block device; "
                         "expected a file on the drive to measure, or a block device")
    return target, is_device_target(target)
