"""Where a path lives: the mount and filesystem holding it, whether a filesystem or a block
device is in memory, whether a path is a device the suite only reads, and what kind of
special file it is. Facts of this machine, read from /proc and /sys; no check, no policy.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

# Filesystems in memory: recent kernels accept O_DIRECT on tmpfs, but no read
# reaches a drive there, so a measurement would flatter the "NVM".
MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"}

SYS_BLOCK = Path("/sys/block")    # the kernel's block devices: <name>/loop/backing_file for a loop device


def memory_block_device(device: Path) -> str:
    """Why block device ``device`` lives in memory (zram, a RAM disk, a loop device over a file
    in memory), or "" when it does not."""
    name = Path(os.path.realpath(device)).name
    if name.startswith(("zram", "ram")):
        return "is a RAM disk"
    backing = SYS_BLOCK / name / "loop" / "backing_file"
    try:
        file = backing.read_text().strip()
    except OSError:
        return ""
    fs = filesystem_type(Path(file)) if file else "unknown"
    return f"is a loop device over {file}, on {fs}, in memory" if fs in MEMORY_FILESYSTEMS else ""


def memory_filesystem(path: Path) -> str:
    """Why the filesystem holding ``path`` lives in memory, as a predicate of ``path`` ("is on
    tmpfs, in memory", or "is on ext4 at /mnt, mounted from /dev/loop1, which is a loop device
    over /dev/shm/img, on tmpfs, in memory" for a filesystem on a RAM disk, zram or a loop
    device over a file in memory: :func:`memory_block_device` of the mount's source device);
    "" when it does not, or when its mount cannot be read."""
    mount = mount_of(path)
    if mount is None:
        return ""
    if mount["fstype"] in MEMORY_FILESYSTEMS:
        return f"is on {mount['fstype']}, in memory"
    source = mount["source"]
    memory = memory_block_device(Path(source)) if source.startswith("/dev/") else ""
    if not memory:
        return ""
    return f"is on {mount['fstype']} at {mount['mount_point']}, mounted from {source}, which {memory}"


def special_kind(target: Path) -> str:
    """What ``target`` is when it exists and is neither a regular file, a directory nor a
    block device ("a character device", "a FIFO (named pipe)", "a socket", "a special
    file"); "" otherwise (missing or unreadable included)."""
    try:
        mode = target.stat().st_mode
    except (OSError, RuntimeError):
        return ""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISBLK(mode):
        return ""
    for test, kind in ((stat.S_ISCHR, "a character device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a special file"


def is_device_target(target: Path) -> bool:
    """Whether ``target`` (a link's target) is a block device, or a name in /dev/: a target
    the suite only reads, so the replay's store cannot go beside it. False where it cannot be
    read (a file still to be created)."""
    try:
        target = target.resolve() if target.is_symlink() else target
        return stat.S_ISBLK(target.stat().st_mode) or target.parent == Path("/dev")
    except (OSError, RuntimeError):      # missing, unreadable, a symlink loop
        return target.parent == Path("/dev")


def filesystem_type(path: Path) -> str:
    """Return the filesystem type of the mount holding ``path`` (e.g. ``ext4``, ``tmpfs``)."""
    mount = mount_of(path)
    return mount["fstype"] if mount else "unknown"


def mount_of(path: Path) -> dict | None:
    """Return ``{"mount_point", "source", "fstype"}`` for the mount holding ``path`` (None
    when not found, or for a symlink loop)."""
    try:
        path = Path(path).resolve()
    except RuntimeError:  # a symlink loop
        return None
    while not path.exists() and path != path.parent:
        path = path.parent
    best = None
    try:
        with open("/proc/self/mounts") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) < 3:      # not a mount line: skip it rather than fail every check
                    continue
                source, mount_point, fstype = (_unescape_mount(f) for f in fields[:3])
                if path == Path(mount_point) or Path(mount_point) in path.parents:
                    if best is None or len(mount_point) >= len(best["mount_point"]):
                        best = {"mount_point": mount_point, "source": source, "fstype": fstype}
    except OSError:
        return None
    return best


def _unescape_mount(field: str) -> str:
    """A field of /proc/self/mounts as the name it stands for: the kernel writes a space, tab,
    newline or backslash in it as an octal escape (``\\040``, ``\\011``, ``\\012``, ``\\134``)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)
