"""Bandana's NVM device characterization: fio random-read sweeps.

The first engine sweeps every block size at every queue depth (bandwidth vs block
size); the other engines sweep queue depth at a few block sizes only, so io_uring
and libaio are compared at 4 KB without doubling the run time. The 4 KB / QD32
read rate of the first engine is the *ceiling* later experiments are compared
against (Bandana reads 4 KB blocks from NVM).
"""
from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any


from impls.bandana.nvm import fio
from impls.harness import nvm_file, paths, profiles
from impls.harness.fingerprint import nvm_target_info
from impls.harness.progress import progress_bar

CEILING_BLOCK_BYTES = 4096
CEILING_QUEUE_DEPTH = 32

SIZES_KEYS = (
    "file_bytes",
    "block_sizes",
    "queue_depths",
    "engines",
    "secondary_engine_block_sizes",
    "runtime_s",
    "ramp_s",
)


def prepare_target(path: str | os.PathLike, size_bytes: int) -> dict[str, Any]:
    """Make ``path`` ready to be read over its first ``size_bytes`` bytes.

    A block device is never written: it is only checked to be at least
    ``size_bytes`` long. A missing file is made to hold ``size_bytes`` of the suite's
    random, incompressible content (:mod:`impls.harness.nvm_file`: recognised by its
    block headers), written beside it and renamed over it. A file with that content is
    reused untouched when large enough and rewritten when not; either way the temporary files
    that killed writes of it left beside it (their pid dead) are removed. Any other existing file is
    refused (ValueError): the suite would overwrite it, and a sparse or preallocated file
    reads as zeros without reaching the drive; only the suite's default target
    (``DLSYSBENCH_NVM_PATH`` unset) is rewritten. A symbolic link is followed: the file is
    written where it points.

    Returns ``{"path", "kind": "file" | "block_device", "size_bytes", "created"}``
    where ``size_bytes`` is the number of bytes the sweep reads over and
    ``created`` says whether this call wrote the file.
    """
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes <= 0:
        raise ValueError(f"size_bytes must be a positive integer, got {size_bytes!r}")
    target = Path(path).expanduser().absolute()
    if target.is_symlink():  # write where it points, on the drive the capability check judged
        target = target.resolve()
    try:
        status = os.stat(target)
    except FileNotFoundError:
        status = None
    mode = status.st_mode if status is not None else None

    if mode is not None and stat.S_ISBLK(mode):
        device_bytes = nvm_file.device_bytes(target)
        if device_bytes < size_bytes:
            raise ValueError(
                f"block device {target} holds {device_bytes} bytes, fewer than the {size_bytes} bytes the "
                f"sweep reads over ({_file_bytes_key()}); point DLSYSBENCH_NVM_PATH at a larger device or "
                "a file on a disk, or run a smaller profile (DLSYSBENCH_PROFILE, --profile)"
            )
        return {"path": str(target), "kind": "block_device", "size_bytes": size_bytes, "created": False}

    if mode is not None and not stat.S_ISREG(mode):
        raise ValueError(f"{target} is neither a regular file nor a block device")
    nvm_file.sweep_killed_writes(target)   # a killed write's half file: not counted as used space, not left
    if status is not None:
        if nvm_file.is_foreign(target):
            raise ValueError(nvm_file.foreign_reason(target))
        if nvm_file.is_ready(target, size_bytes):
            return {"path": str(target), "kind": "file", "size_bytes": size_bytes, "created": False}

    paths.ensure_directory_of(target, "DLSYSBENCH_NVM_PATH")
    shortfall = nvm_file.space_shortfall(target, size_bytes)
    if shortfall:
        raise OSError(shortfall)
    nvm_file.write_suite_file(target, size_bytes)
    nvm_file.marker_of(target).unlink(missing_ok=True)
    return {"path": str(target), "kind": "file", "size_bytes": size_bytes, "created": True}


def _file_bytes_key() -> str:
    """Where the bytes the fio sweep reads are set: "file_bytes of [fio_sweep.<profile>] in
    impls/profiles.toml", the current profile named when it can be read."""
    try:
        profile = profiles.current_profile()
    except ValueError:
        profile = "<profile>"
    return f"file_bytes of [fio_sweep.{profile}] in impls/profiles.toml"


def _validated_sizes(sizes: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(sizes, dict):
        raise TypeError(f"sizes must be a dict, got {type(sizes).__name__}")
    missing = [key for key in SIZES_KEYS if key not in sizes]
    unknown = sorted(set(sizes) - set(SIZES_KEYS))
    if missing or unknown:
        raise ValueError(f"sizes: missing keys {missing}, unknown keys {unknown}; expected {list(SIZES_KEYS)}")

    def int_list(key: str, *, allow_empty: bool = False) -> list[int]:
        values = sizes[key]
        if not isinstance(values, (list, tuple)) or (not values and not allow_empty):
            raise ValueError(f"sizes[{key!r}] must be a non-empty list of positive integers, got {values!r}")
        for value in values:
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"sizes[{key!r}] holds {value!r}; expected positive integers")
        return sorted(set(values))

    block_sizes = int_list("block_sizes")
    secondary_block_sizes = int_list("secondary_engine_block_sizes", allow_empty=True)
    for block_bytes in block_sizes + secondary_block_sizes:
        if block_bytes % 512:
            raise ValueError(f"block size {block_bytes} is not a multiple of 512 (direct I/O alignment)")
    if CEILING_BLOCK_BYTES not in block_sizes:
        raise ValueError(f"sizes['block_sizes'] must include {CEILING_BLOCK_BYTES} (the ceiling's block size)")
    queue_depths = int_list("queue_depths")
    if min(queue_depths) > CEILING_QUEUE_DEPTH:
        raise ValueError(f"sizes['queue_depths'] needs one queue depth <= {CEILING_QUEUE_DEPTH} for the ceiling")
    engines = sizes["engines"]
    if not isinstance(engines, (list, tuple)) or not engines or not all(isinstance(e, str) and e for e in engines):
        raise ValueError(f"sizes['engines'] must be a non-empty list of fio engine names, got {engines!r}")
    if len(set(engines)) != len(engines):
        raise ValueError(f"sizes['engines'] lists an engine twice: {engines!r}")
    file_bytes = sizes["file_bytes"]
    if isinstance(file_bytes, bool) or not isinstance(file_bytes, int) or file_bytes < max(block_sizes):
        raise ValueError(f"sizes['file_bytes'] must be an integer >= the largest block size, got {file_bytes!r}")
    for key, minimum in (("runtime_s", 0.001), ("ramp_s", 0.0)):
        value = sizes[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < minimum:
            raise ValueError(f"sizes[{key!r}] must be a number of seconds >= {minimum}, got {value!r}")
    return {
        "file_bytes": file_bytes,
        "block_sizes": block_sizes,
        "queue_depths": queue_depths,
        "engines": list(engines),
        "secondary_engine_block_sizes": secondary_block_sizes,
        "runtime_s": float(sizes["runtime_s"]),
        "ramp_s": float(sizes["ramp_s"]),
    }


def pick_ceiling(points: list[dict[str, Any]], engine: str) -> dict[str, Any]:
    """The ceiling among ``points`` (FioPoint dicts) of ``engine``: the 4 KB read
    at QD32, or at the highest queue depth below 32 when 32 was not measured.

    Returns ``{"engine", "block_bytes", "queue_depth", "iops",
    "bandwidth_bytes_per_s", "target_queue_depth"}`` (IO/s and bytes/s);
    ``queue_depth`` is the one measured, ``target_queue_depth`` is 32.
    """
    candidates = [
        point
        for point in points
        if point["engine"] == engine
        and point["block_bytes"] == CEILING_BLOCK_BYTES
        and point["queue_depth"] <= CEILING_QUEUE_DEPTH
    ]
    if not candidates:
        raise ValueError(
            f"no {CEILING_BLOCK_BYTES} B point at queue depth <= {CEILING_QUEUE_DEPTH} for engine {engine!r}"
        )
    chosen = max(candidates, key=lambda point: point["queue_depth"])
    return {
        "engine": engine,
        "block_bytes": CEILING_BLOCK_BYTES,
        "queue_depth": chosen["queue_depth"],
        "iops": chosen["iops"],
        "bandwidth_bytes_per_s": chosen["bandwidth_bytes_per_s"],
        "target_queue_depth": CEILING_QUEUE_DEPTH,
    }


def characterize_device(
    path: str | os.PathLike, sizes: dict[str, Any], progress: bool | None = None
) -> dict[str, Any]:
    """Sweep fio random reads over ``path`` and return the measurements.

    ``sizes`` (all keys required, no others):

    - ``file_bytes``: bytes read over; a file target is created this large
      (random data), a block device must be at least this large.
    - ``block_sizes``: bytes per read for the first engine's full grid
      (multiples of 512, must include 4096).
    - ``queue_depths``: reads in flight, swept for every engine (one must be <= 32).
    - ``engines``: fio ioengines in order; the first available one gets the
      full ``block_sizes`` x ``queue_depths`` grid, the rest only
      ``secondary_engine_block_sizes`` x ``queue_depths``. Engines fio cannot
      use here are skipped and listed with the reason.
    - ``secondary_engine_block_sizes``: block sizes for the other engines (may be empty).
    - ``runtime_s`` / ``ramp_s``: measured and warm-up seconds per point.

    ``progress``: show a tqdm bar; None means only on a terminal, not under asv or CI.

    Returns ``{"fio_version", "target" (see prepare_target; with the drive's "device",
    "filesystem" and "rotational", :func:`impls.harness.fingerprint.nvm_target_info`), "sizes" (as used),
    "primary_engine", "points" (FioPoint dicts: IO/s, bytes/s, microseconds),
    "skipped_engines" ({engine: reason}), "ceiling" (see pick_ceiling)}``.
    Raises FioNotFoundError without fio, NotImplementedError (asv: skip) naming each engine's
    reason when none of ``engines`` works here, FioError when a run fails.
    """
    sizes = _validated_sizes(sizes)
    version = fio.fio_version()
    if version is None:
        raise fio.FioNotFoundError("fio is not installed (no `fio` on PATH); the device characterization needs it")

    skipped_engines: dict[str, str] = {}
    usable_engines: list[str] = []
    for engine in sizes["engines"]:
        reason = fio.engine_unavailable_reason(engine)
        if reason is None:
            usable_engines.append(engine)
        else:
            skipped_engines[engine] = reason
    if not usable_engines:
        reasons = "; ".join(f"{engine}: {reason}" for engine, reason in skipped_engines.items())
        raise NotImplementedError(f"no fio ioengine of {', '.join(sizes['engines'])} works here ({reasons})")

    target = prepare_target(path, sizes["file_bytes"])
    drive = nvm_target_info(Path(target["path"]))       # what the figures name: the drive read
    target.update({key: drive.get(key) for key in ("device", "filesystem", "rotational")})
    primary_engine = usable_engines[0]
    runs = [
        (engine, block_bytes, queue_depth)
        for engine in usable_engines
        for block_bytes in (sizes["block_sizes"] if engine == primary_engine else sizes["secondary_engine_block_sizes"])
        for queue_depth in sizes["queue_depths"]
    ]

    points: list[dict[str, Any]] = []
    with progress_bar(len(runs), "fio sweep", "run", progress) as bar:
        for engine, block_bytes, queue_depth in runs:
            bar.set_postfix_str(f"{engine} {block_bytes} B QD{queue_depth}")
            point = fio.run_fio(
                target["path"],
                engine=engine,
                block_bytes=block_bytes,
                queue_depth=queue_depth,
                runtime_s=sizes["runtime_s"],
                ramp_s=sizes["ramp_s"],
                size_bytes=sizes["file_bytes"],
            )
            points.append(point.to_dict())
            bar.update()

    return {
        "fio_version": version,
        "target": target,
        "sizes": sizes,
        "primary_engine": primary_engine,
        "points": points,
        "skipped_engines": skipped_engines,
        "ceiling": pick_ceiling(points, primary_engine),
    }
