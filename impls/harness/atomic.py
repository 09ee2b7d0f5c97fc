"""Write files so that a reader never sees half of one: temp file, fsync, rename."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_bytes(path: Path, payload: bytes) -> Path:
    """Write ``payload`` to ``path`` atomically; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


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
