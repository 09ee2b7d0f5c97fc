"""Write files so that a reader never sees half of one: temp file, fsync, rename."""
from __future__ import annotations

import contextlib
import errno
import glob
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Iterator


def umask() -> int:
    """The process's umask (read without changing it)."""
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
    with replacing(path) as handle:
        handle.write(payload)
    return given


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[BinaryIO]:
    """Yield a binary file whose bytes replace the file at ``path`` once the block ends without
    an exception (a temporary file beside it, fsync, rename); after an exception, or a kill,
    ``path`` is as it was. A symbolic link is followed, so the file it names is replaced and the
    link kept; missing folders are made. The file gets an existing file's mode, else 0666 less
    the umask. An ``OSError`` while writing is raised as :func:`unwritten` of it: naming
    ``path``, and a full disk as "No space left on device"."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~umask()
    sweep_temporaries(path)
    fd, tmp = temporary_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raised = unwritten(err, path, tmp)
        if raised is err:
            raise
        raise raised from err
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")   # numpy's tofile: a write that stopped short


# errors a write, fsync or rename gives where the file system refuses it, named without a path
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


def unwritten(err: OSError, path: Path, temporary: str | None = None) -> OSError:
    """``err``, an error met while writing ``path`` (through ``temporary``, its temporary
    file), as one that names ``path`` as its filename where it is the writing's: one naming
    ``temporary``, or none with a write's errno (a full disk or quota, a file too large, a read-only
    file system). A short write (numpy's ``tofile``: "N requested and M written", no errno)
    is a full disk or quota: ``ENOSPC``, "No space left on device" with numpy's words in
    brackets. Any other (one naming another file, or one the block's own reading raised, as a
    damaged gzip input) is returned as it is."""
    if err.errno is None and err.filename is None and _SHORT_WRITE.search(str(err)):
        return OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} ({err}: the disk or a quota is full)", str(path))
    ours = (temporary is not None and err.filename == temporary) or (
        err.filename is None and err.errno in _WRITE_ERRNOS)
    if not ours:
        return err
    if err.errno is None:
        return OSError(None, str(err) or type(err).__name__, str(path))
    return OSError(err.errno, err.strerror or os.strerror(err.errno), str(path))


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


_PID_RE = re.compile(r"pid(\d+)")


def remove_stale(directory: str | os.PathLike, pattern: str, name: re.Pattern | None = None) -> list[Path]:
    """Remove entries of ``directory`` matching glob ``pattern`` whose ``pid<N>`` tag names a
    dead process (files left by a killed run); return what was removed. Entries without a
    tag, or whose pid is alive, are left alone. ``name``, when given, must match the whole
    entry name, its first group being the pid (a tag elsewhere in the name is not read)."""
    base = Path(directory)
    removed = []
    try:
        entries = list(base.glob(pattern)) if base.is_dir() else []
    except OSError:
        return removed
    for entry in entries:
        match = name.fullmatch(entry.name) if name is not None else _PID_RE.search(entry.name)
        if not match or pid_alive(int(match.group(1))):
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry)
        except OSError:
            continue
    return removed


def temporary_pattern(stem: str) -> re.Pattern:
    """The names :func:`temporary_beside` gives a target whose name matches the regular
    expression ``stem``: ``.<name>.pid<N>.<random>.tmp``, the pid ``N`` as group 1."""
    return re.compile(rf"\.{stem}\.pid(\d+)\.[A-Za-z0-9_]+\.tmp")


def temporary_beside(path: Path) -> tuple[int, str]:
    """``(descriptor, name)`` of a new temporary file beside ``path`` for writing it whole and
    renaming it over ``path``; its name carries this process's pid (:func:`temporary_pattern`),
    so a killed writer's can be told by it and removed (:func:`sweep_temporaries`)."""
    path = Path(path)
    return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.pid{os.getpid()}.", suffix=".tmp")


def sweep_temporaries(path: Path) -> list[Path]:
    """Remove the temporary files of ``path`` (:func:`temporary_beside`) that writers killed
    before their rename left; return them. Nothing else is touched: another name, a live
    pid, or a name of another form stays."""
    path = Path(path)
    return remove_stale(path.parent, f".{glob.escape(path.name)}.pid*.tmp", temporary_pattern(re.escape(path.name)))


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


def json_default(obj: Any) -> Any:
    """``json``'s ``default``: a numpy scalar or array as the Python number, bool or list it
    holds, a path as its text. TypeError for any other value: written as its ``str()`` it
    would read back as text (an ``np.int64`` 6 as ``"6"``), which readers take for data."""
    if hasattr(obj, "dtype") and hasattr(obj, "tolist"):    # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"a {type(obj).__module__}.{type(obj).__qualname__} is not JSON data (numbers, strings, "
                    "booleans, None, lists, dicts)")


def _first_not_json(obj: Any, where: str) -> str | None:
    """Where in ``obj`` (``where`` its name) the first value :func:`json_default` refuses is."""
    if isinstance(obj, dict):
        return next((found for k, v in obj.items() if (found := _first_not_json(v, f"{where}.{k}"))), None)
    if isinstance(obj, (list, tuple)):
        return next((found for i, v in enumerate(obj) if (found := _first_not_json(v, f"{where}[{i}]"))), None)
    if obj is None or isinstance(obj, (str, int, float)):
        return None
    try:
        json_default(obj)
    except TypeError:
        return where
    return None


def write_json(path: Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically; return the path. Values as
    :func:`json_default` writes them; TypeError naming where in ``obj`` one it refuses is,
    before anything is written."""
    try:
        text = json.dumps(obj, indent=1, sort_keys=True, default=json_default)
    except TypeError as err:
        where = _first_not_json(obj, "the record")
        raise TypeError(f"{path}: {where + ' ' if where else ''}{err}") from None
    return write_bytes(path, text.encode())


def fsync_directory(directory: Path) -> None:
    """Make a rename inside ``directory`` durable (fsync the directory itself)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
