"""Keep numba's on-disk cache of a kernel module in step with the modules it calls into.

numba keys the cache of an ``@njit(cache=True)`` function on its own source file only: when a
function it calls lives in another module and that module changes (a ``git pull`` that edits
only the callee), the caller's cached machine code still embeds the old callee, and runs
it, silently or into a crash. :func:`drop_stale` is called at the top of such a kernel module,
before its functions are defined: it fingerprints the source of the modules named, and when
the fingerprint differs from the one recorded beside the cache, deletes the module's cache
entries so that numba compiles them again.

Only the in-tree cache (``__pycache__`` beside the source, numba's default where the tree is
writable) is handled; with ``NUMBA_CACHE_DIR`` set, nothing is touched.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path


def fingerprint(modules: list[str]) -> str:
    """sha256 (hex) of the sources of ``modules`` (dotted names, in the order given)."""
    h = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError(name)
        h.update(name.encode() + b"\0" + Path(spec.origin).read_bytes() + b"\0")
    return h.hexdigest()


def drop_stale(module_file: str, depends_on: list[str]) -> int:
    """Delete the numba cache entries of the module at ``module_file`` when the sources of
    ``depends_on`` changed since they were recorded; returns how many files were deleted
    (0 also when the cache is elsewhere or cannot be written)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return 0
    source = Path(module_file)
    cache = source.parent / "__pycache__"
    stamp = cache / f"{source.stem}.deps"
    want = fingerprint(depends_on)
    try:
        if stamp.read_text() == want:
            return 0
    except OSError:
        pass
    dropped = 0
    try:
        for entry in cache.glob(f"{source.stem}.*.nb[ic]"):
            entry.unlink(missing_ok=True)
            dropped += 1
        cache.mkdir(exist_ok=True)
        tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}")
        tmp.write_text(want)
        tmp.replace(stamp)
    except OSError:
        return dropped
    return dropped
