"""The memory a cgroup (a container's ``--memory``, a systemd or batch job's limit) lets this process use.

A process over its cgroup's limit is killed by the out-of-memory killer (SIGKILL, no message),
however much memory the host has free; the host's ``MemTotal`` / ``MemAvailable`` do not show
the limit. Light (the standard library only); finds the process's cgroups the way
:mod:`impls.harness.cpus` does for the CPU quota.
"""
from __future__ import annotations

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
