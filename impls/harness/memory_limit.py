"""The memory a cgroup (a container's ``--memory``, a systemd or batch job's limit) lets this process use.

A process over its cgroup's limit is killed by the out-of-memory killer (SIGKILL, no message),
however much memory the host has free; the host's ``MemTotal`` / ``MemAvailable`` do not show
the limit. Light (the standard library only); finds the process's cgroups the way
:mod:`impls.harness.cpus` does for the CPU quota. :func:`available_bytes` is what a command
compares its estimate with before it allocates: the least of that room, the host's available
memory and the address-space limit.
"""
from __future__ import annotations

import resource
from pathlib import Path

from impls.harness import cpus

UNLIMITED_V1 = 2 ** 60   # cgroup v1 writes "no limit" as a page-rounded 2**63 - 1


def _bytes(text: str | None) -> int | None:
    """A limit or usage file's byte count; None for "max", an empty, malformed or missing file."""
    word = (text or "").strip()
    return int(word) if word.isdigit() else None


def _stat(text: str | None, key: str) -> int:
    """The ``key`` line of a ``memory.stat`` file (0 where absent or malformed)."""
    for line in (text or "").splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _levels() -> list[tuple[int, int | None]]:
    """``(limit, in use)`` in bytes for this process's cgroup and each ancestor that sets a memory
    limit (v2 ``memory.max`` / ``memory.current``; v1 ``memory.limit_in_bytes`` /
    ``memory.usage_in_bytes``); in use is less the page cache the kernel would drop before
    killing (``inactive_file``), None where unreadable."""
    own, found = cpus.own_cgroups(), []
    versions = [(d, "memory.max", "memory.current", "inactive_file")
                for d in cpus.up_to_root(cpus.CGROUP_ROOT, own.get(""))]
    versions += [(d, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
                 for d in cpus.up_to_root(cpus.CGROUP_ROOT / "memory", own.get("memory"))]
    for folder, limit_file, usage_file, cache_key in versions:
        limit = _bytes(cpus.read_text(Path(folder) / limit_file))
        if limit is None or limit >= UNLIMITED_V1:
            continue
        usage = _bytes(cpus.read_text(Path(folder) / usage_file))
        if usage is not None:
            usage = max(0, usage - _stat(cpus.read_text(Path(folder) / "memory.stat"), cache_key))
        found.append((limit, usage))
    return found


def memory_limit() -> int | None:
    """The smallest cgroup memory limit on this process (its cgroup's or an ancestor's), in
    bytes; None where none is set or none can be read."""
    limits = [limit for limit, _ in _levels()]
    return min(limits) if limits else None


def memory_headroom() -> int | None:
    """The bytes this process may still allocate before a cgroup memory limit kills it (>= 0):
    the least over its cgroup and ancestors of limit less what the cgroup holds (the limit
    itself where that cannot be read); None where no limit is set. Swap a cgroup may use is
    not counted."""
    rooms = [max(0, limit - (used or 0)) for limit, used in _levels()]
    return min(rooms) if rooms else None


def available_bytes() -> int | None:
    """Return the bytes this process may still allocate, at the most: the kernel's
    ``MemAvailable`` plus free swap, or less where an address-space limit (``RLIMIT_AS``, less
    this process's size) or a cgroup memory limit (less what the cgroup holds,
    :func:`memory_headroom`) leaves less; None where none can be read."""
    bounds = [] if (room := memory_headroom()) is None else [room]
    meminfo = _fields("/proc/meminfo")
    if "MemAvailable" in meminfo:
        bounds.append(meminfo["MemAvailable"] + meminfo.get("SwapFree", 0))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        bounds.append(max(0, soft - _fields("/proc/self/status").get("VmSize", 0)))
    return min(bounds) if bounds else None


def _fields(path: str) -> dict[str, int]:
    """The ``Name: N kB`` lines of a /proc file, in bytes ({} where it cannot be read)."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                name, _, rest = line.partition(":")
                words = rest.split()
                if len(words) == 2 and words[1] == "kB" and words[0].isdigit():
                    out[name] = int(words[0]) * 1024
    except OSError:
        pass
    return out
