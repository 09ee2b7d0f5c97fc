"""Write files so that a reader never sees half of one: temp file, fsync, rename."""
from __future__ import annotations

import glob
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_STANDARD = {"/dev/stdout": 1, "/dev/stderr": 2}
_FD = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")


def descriptor_of(path: Path) -> int | None:
    """The open descriptor a path names (``/dev/stdout``, ``/dev/fd/N``), or None."""
    text = os.path.normpath(str(path))
    if text in _STANDARD:
        return _STANDARD[text]
    found = _FD.fullmatch(text)
    return int(found.group(1)) if found else None


def write_bytes(path: Path, payload: bytes) -> Path:
    """Write ``payload`` to ``path`` atomically; return the path.

    A path naming an open descriptor (``/dev/stdout``, ``/dev/fd/N``) is written to that
    descriptor, so a shell's ``>> log`` keeps its log; a path that exists and is not a regular
    file (``/dev/null``, a pipe) is written through, never replaced; a symbolic link is followed, so the file it names is
    replaced and the link kept. The file gets an existing file's mode, else 0666 less the umask.
    """
    given = path = Path(path)
    descriptor = descriptor_of(path)
    if descriptor is not None:  # /dev/stdout into `>> log`: append to what the shell opened
        view = memoryview(payload if payload.endswith(b"\n") else payload + b"\n")
        while view:
            view = view[os.write(descriptor, view):]
        return given
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "wb") as handle:
            handle.write(payload)
        return given
    if path.is_symlink():
        path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
    sweep_temporaries(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.pid{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return given


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists (ours, or another user's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_temporaries(path: Path) -> list[Path]:
    """Remove the temporary files that :func:`write_bytes` runs killed before their rename
    left beside ``path`` (``.<name>.pid<N>.<random>.tmp`` of a dead pid ``N``); return them.
    Nothing else is touched: another name, a live pid, or a name of another form stays."""
    path = Path(path)
    own = re.compile(rf"\.{re.escape(path.name)}\.pid(\d+)\.[A-Za-z0-9_]+\.tmp")
    removed = []
    try:
        entries = list(path.parent.glob(f".{glob.escape(path.name)}.pid*.tmp"))
    except OSError:
        return removed
    for entry in entries:
        found = own.fullmatch(entry.name)
        if found and not pid_alive(int(found.group(1))):
            try:
                entry.unlink()
                removed.append(entry)
            except OSError:
                continue
    return removed


def strict_json(obj: Any) -> Any:
    """``obj`` with every float that is not finite (NaN, ±inf) replaced by None, so that any
    JSON parser reads it (Python's ``json`` would write NaN, which the JSON standard lacks)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    if hasattr(obj, "dtype") and hasattr(obj, "tolist"):    # numpy scalars and arrays
        return strict_json(obj.tolist())
    return obj


def write_json(path: Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically; return the path."""
    return write_bytes(path, json.dumps(obj, indent=1, sort_keys=True, default=str).encode())


def fsync_directory(directory: Path) -> None:
    """Make a rename inside ``directory`` durable (fsync the directory itself)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
