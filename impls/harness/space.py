"""Disk space a profile's run will need for its largest files, estimated before it starts.

A full run writes tens of GB (the NVM target file, the Bandana traces at paper scale) over
hours; running out partway loses the work. :func:`shortfall` compares the estimate of what is
not written yet with the free space of each filesystem it goes to, so that the suite's runner
can say so in one line before asv starts. Estimates, not measurements: the smaller files (the
SLIDE sets, grid results, the replay stores) come on top.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from impls.harness import paths, profiles, registry


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def _trace_bytes(params: dict) -> int:
    """Bytes of a Bandana trace of these generator parameters: int64 ids and offsets, an
    int64 community and a float64 popularity per vector, float32 vectors when written."""
    lookups, vectors = int(params.get("num_lookups", 0)), int(params.get("num_vectors", 0))
    queries = lookups / max(float(params.get("mean_query_size", 1.0)), 1.0)
    values = 4 * vectors * int(params.get("dim", 0)) if params.get("with_vectors", True) else 0
    return int(8 * lookups + 8 * (queries + 1) + 16 * vectors + values)


def pending(profile: str) -> list[tuple[str, int, Path]]:
    """``(what, bytes, folder)`` of the large files a run of ``profile`` would write that are
    not written yet: the suite's own NVM target file (``[fio_sweep].file_bytes``; none when
    ``DLSYSBENCH_NVM_PATH`` names a block device) and each ``bandana-*`` trace not cached."""
    out = []
    target = paths.nvm_target_path()
    size = int(profiles.sizes("fio_sweep", profile)["file_bytes"])
    if not target.is_block_device():
        have = target.stat().st_size if target.is_file() else 0
        if have < size:
            out.append(("the NVM target file", size - have, target.parent))
    for name in registry.made_by("impls.bandana.data.traces:"):
        manifest = registry.manifests()[name]
        params, key = registry.recipe_key(manifest, profile)
        folder = paths.cache_dir() / name
        if not ((folder / f"{profile}-{key}.npz").is_file() or (folder / f"{profile}-{key}-npy").is_dir()):
            out.append((f"trace {name}", _trace_bytes(params), folder))
    return out


def shortfall(profile: str) -> str | None:
    """One line saying where the files :func:`pending` lists would not fit (their estimate
    against the free bytes of each filesystem they go to); None when they fit."""
    by_device: dict[int, tuple[Path, list[tuple[str, int]]]] = {}
    for what, size, folder in pending(profile):
        existing = _nearest_existing(folder)
        device = os.stat(existing).st_dev
        by_device.setdefault(device, (existing, []))[1].append((what, size))
    short = []
    for existing, items in by_device.values():
        needed, free = sum(size for _, size in items), shutil.disk_usage(existing).free
        if needed > free:
            listed = ", ".join(f"{what} {size / 2**30:.1f}" for what, size in items)
            short.append(f"about {needed / 2**30:.1f} GiB to write under {existing} ({listed} GiB) and "
                         f"{free / 2**30:.1f} GiB free there")
    if not short:
        return None
    return (f"the {profile} profile needs {'; '.join(short)}: free space, or point DLSYSBENCH_CACHE or "
            "DLSYSBENCH_NVM_PATH at a larger disk (smaller files come on top)")
