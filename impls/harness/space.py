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

from impls.harness import paths, registry


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        try:
            if candidate.exists():
                return candidate
        except OSError:
            continue
    return Path("/")


def _trace_bytes(params: dict) -> int:
    """Bytes of a Bandana trace of these generator parameters: int64 ids and offsets, an
    int64 community and a float64 popularity per vector, float32 vectors when written."""
    lookups, vectors = int(params.get("num_lookups", 0)), int(params.get("num_vectors", 0))
    queries = lookups / max(float(params.get("mean_query_size", 1.0)), 1.0)
    values = 4 * vectors * int(params.get("dim", 0)) if params.get("with_vectors", True) else 0
    return int(8 * lookups + 8 * (queries + 1) + 16 * vectors + values)


def _nvm_target_bytes(profile: str) -> tuple[int, Path] | None:
    """(bytes, folder) the NVM target file of ``profile`` will be written with, as
    ``device.prepare_target`` writes it: the whole :func:`nvm_file.profile_bytes` plus headroom,
    beside the target, unless it is the suite's own file and large enough already; None for
    a block device (only read), a path that is neither a file nor missing, a file the writer
    refuses (:func:`nvm_file.is_foreign`), or one that cannot be looked at (said there)."""
    from impls.harness import nvm_file

    size = nvm_file.profile_bytes(profile)
    target = paths.nvm_target_path()
    try:
        target = target.resolve() if target.is_symlink() else target
        if target.exists():
            if not target.is_file() or nvm_file.is_foreign(target):
                return None        # refused there, never written over
            if nvm_file.is_ready(target, size):
                return None
    except OSError:
        return None
    return size + nvm_file.FREE_SPACE_HEADROOM_BYTES, target.parent


def pending(profile: str) -> list[tuple[str, int, Path]]:
    """``(what, bytes, folder)`` of the large files a run of ``profile`` would write that are
    not written yet: the NVM target file (:func:`_nvm_target_bytes`) and each ``bandana-*``
    trace not cached."""
    out = []
    nvm = _nvm_target_bytes(profile)
    if nvm is not None:
        out.append(("the NVM target file", *nvm))
    for name in registry.made_by("impls.bandana.data.traces:"):
        manifest = registry.manifests()[name]
        params, key = registry.recipe_key(manifest, profile)
        folder = paths.cache_dir() / name
        npz, npy = folder / f"{profile}-{key}.npz", folder / f"{profile}-{key}-npy"
        for copy in _trace_copies(name, profile):
            if not (npz.is_file() if copy == "npz" else npy.is_dir()):
                out.append((f"trace {name}" + (" (streamed copy)" if copy == "npy" else ""), _trace_bytes(params),
                            folder))
    return out


def _trace_copies(name: str, profile: str) -> list[str]:
    """Which copies of Bandana trace ``name`` a run of ``profile`` writes: ``"npy"`` (a folder
    of .npy files, which the simulator and the replay stream where their profile table says
    ``streamed_traces``) and ``"npz"`` (the registry's archive, which each loads otherwise);
    at least one."""
    from impls.harness import profiles

    try:
        sim, replay = profiles.sizes("bandana_sim", profile), profiles.sizes("bandana_replay", profile)
    except (KeyError, ValueError):
        return ["npz"]
    readers = [(sim, name in sim.get("tables", ())), (replay, replay.get("table") == name)]
    modes = {bool(sizes.get("streamed_traces", False)) for sizes, reads in readers if reads}
    return (["npy"] if True in modes else []) + (["npz"] if False in modes or not modes else [])


def shortfall(profile: str) -> str | None:
    """One line saying where the files :func:`pending` lists would not fit (their estimate
    against the free bytes of each filesystem they go to); None when they fit."""
    by_device: dict[int, tuple[Path, list[tuple[str, int]]]] = {}
    for what, size, folder in pending(profile):
        existing = _nearest_existing(folder)
        try:
            device = os.stat(existing).st_dev
        except OSError:            # cannot be looked at: the run itself says so where it writes
            continue
        by_device.setdefault(device, (existing, []))[1].append((what, size))
    short = []
    for existing, items in by_device.values():
        try:
            free = shutil.disk_usage(existing).free
        except OSError:
            continue
        needed = sum(size for _, size in items)
        if needed > free:
            listed = ", ".join(f"{what} {size / 2**30:.1f}" for what, size in items)
            short.append(f"about {needed / 2**30:.1f} GiB to write under {existing} ({listed} GiB) and "
                         f"{free / 2**30:.1f} GiB free there")
    if not short:
        return None
    return (f"the {profile} profile needs {'; '.join(short)}: free space, or point DLSYSBENCH_CACHE or "
            "DLSYSBENCH_NVM_PATH at a larger disk (smaller files come on top)")
