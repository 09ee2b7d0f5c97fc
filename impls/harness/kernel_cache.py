"""Keep numba's on-disk cache of a kernel module in step with the modules it calls into.

numba keys the cache of an ``@njit(cache=True)`` function on its own source file only: when a
function it calls lives in another module and that module changes (a ``git pull`` that edits
only the callee), the caller's cached machine code still embeds the old callee, and runs
it, silently or into a crash. :func:`drop_stale` is called at the top of such a kernel module,
before its functions are defined: it fingerprints the source of the modules named, and when
the fingerprint differs from the one recorded beside the cache, deletes the module's cache
entries so that numba compiles them again.

The cache is found where numba will look for it (:func:`cache_dir`): ``NUMBA_CACHE_DIR``
when set, else ``__pycache__`` beside the source when that is writable, else numba's
user-wide cache (an installed or read-only tree).
"""
from __future__ import annotations

import hashlib
import importlib
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


def _probe() -> None:
    """A stand-in function for numba's cache locators, which read only its first line number."""


def cache_dir(module_file: str) -> Path | None:
    """The folder numba caches the ``cache=True`` functions of the module at ``module_file``
    in: the first of numba's locators (``NUMBA_CACHE_LOCATOR_CLASSES`` when set, else
    ``NUMBA_CACHE_DIR``, in-tree ``__pycache__``, user-wide, ...) that accepts the file, which
    numba has checked is writable; None when none does (numba then caches nothing, or fails
    on the override itself). Falls back to ``__pycache__`` beside the source if
    this numba keeps its locators elsewhere."""
    try:
        from numba.core import caching, config
        locators = caching.CacheImpl._locator_classes
    except (ImportError, AttributeError):
        return Path(module_file).parent / "__pycache__"
    override = getattr(config, "CACHE_LOCATOR_CLASSES", None)
    if override:                                      # NUMBA_CACHE_LOCATOR_CLASSES, read as numba does
        try:
            locators = [_locator_class(name.strip(), caching) for name in str(override).split(",")]
        except (ImportError, AttributeError):
            return None
    for locator in locators:
        try:
            found = locator.from_function(_probe, str(module_file))
        except Exception:                             # a locator for other kinds of source
            continue
        if found is not None:
            return Path(found.get_cache_path())
    return None


def _locator_class(name: str, caching):
    """The locator class ``name`` of ``NUMBA_CACHE_LOCATOR_CLASSES``: ``package.module.Class``,
    or a class of numba's caching module; ImportError or AttributeError when there is none."""
    if "." in name:
        module, _, cls = name.rpartition(".")
        return getattr(importlib.import_module(module), cls)
    return getattr(caching, name)


def drop_stale(module_file: str, depends_on: list[str]) -> int:
    """Delete the numba cache entries of the module at ``module_file`` when the sources of
    ``depends_on`` changed since they were recorded; returns how many files were deleted
    (0 also when numba has nowhere to cache, or the cache cannot be written)."""
    source = Path(module_file)
    cache = cache_dir(module_file)
    if cache is None:
        return 0
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
