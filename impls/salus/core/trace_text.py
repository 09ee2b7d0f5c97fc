"""A trace file's bytes as text: gunzipped when it is gzip, a BOM dropped, and a clear error
naming the file, line and byte where it is not UTF-8, a damaged gzip stream, or a tar archive
(whose member must be extracted first). Used by the CSV and Philly readers alike
(:mod:`impls.salus.core.trace_files`, :mod:`impls.salus.core.philly_log`).
"""
from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import zlib
from pathlib import Path


def _gzipped(path: Path) -> bool:
    """Whether ``path`` starts with gzip's magic bytes."""
    with open(path, "rb") as head:
        return head.read(2) == b"\x1f\x8b"


def _open_bytes(path: Path) -> io.BufferedIOBase:
    """``path`` (a regular file: opened twice) as bytes, gunzipped if it starts as gzip does."""
    return gzip.open(path, "rb") if _gzipped(path) else open(path, "rb")


def open_text(path: Path, expected: str = "a text file", member: str = "the file to read") -> io.TextIOBase:
    """``path`` (a regular file: it is opened more than once) as text, gzip when it starts
    with gzip's magic bytes, a BOM dropped. ValueError when it is a tar archive (gzipped or
    not: the ``ustar`` mark of a tar header at byte 257), naming its first file and saying to
    extract ``member`` (the file meant, as a user would name it) to read it as ``expected``."""
    try:
        with _open_bytes(path) as raw:
            head = raw.read(512)
    except (EOFError, gzip.BadGzipFile, zlib.error):
        head = b""          # a damaged gzip stream: reading() says so when the text is read
    if head[257:262] == b"ustar":
        raise ValueError(tar_message(path, head, expected, member))
    return io.TextIOWrapper(_open_bytes(path), encoding="utf-8-sig", newline="")


def tar_message(path: Path, head: bytes, expected: str, member: str) -> str:
    """The error for a tar archive at ``path`` whose first 512 bytes (its first file's header,
    unpacked) are ``head``: its first file's name and how to extract ``member`` from it."""
    prefix, name = head[345:500].split(b"\0")[0], head[:100].split(b"\0")[0]
    first = (prefix + b"/" + name if prefix else name).decode("utf-8", "replace")
    packed = "a gzipped" if _gzipped(path) else "a"
    return (f"{path}: {packed} tar archive (its first file: {first!r}); expected {expected}: extract "
            f"{member} first (tar -xf {path}) and pass that file")


def not_utf8_at(path: Path) -> str:
    """Where ``path``'s text (gunzipped, for gzip) first is not UTF-8, as an error message
    begins: ``"PATH:LINE: byte 0xNN (offset N) is not UTF-8"`` (lines from 1, counted as the
    CSV reader counts them: LF, CRLF or CR; offsets from 0), or that a UTF-16 byte-order mark
    begins it; ``"PATH: not UTF-8 text"`` where a second reading finds no such byte."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, line, after_cr = 0, 1, False
    with _open_bytes(path) as raw:
        while chunk := raw.read(1 << 20):
            if offset == 0 and chunk[:2] in (b"\xff\xfe", b"\xfe\xff"):
                return f"{path}: UTF-16 text (its byte-order mark); save it as UTF-8"
            pending = len(decoder.getstate()[0])      # bytes of a character cut at the last chunk
            bad = None
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as err:
                bad = max(0, err.start - pending)
            before = chunk if bad is None else chunk[:bad]      # its line ends: LF, CRLF, CR
            line += len((before + b".").splitlines()) - 1 - (after_cr and before[:1] == b"\n")
            if bad is not None:
                return f"{path}:{line}: byte {chunk[bad]:#04x} (offset {offset + bad}) is not UTF-8"
            offset, after_cr = offset + len(chunk), chunk.endswith(b"\r")
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return f"{path}:{line}: its last bytes (offset {offset - len(decoder.getstate()[0])}) are not UTF-8"
    return f"{path}: not UTF-8 text"


@contextlib.contextmanager
def reading(path: Path, expected: str):
    """Turn what a damaged file raises while it is read (not UTF-8: :func:`not_utf8_at`, a
    cut or corrupt gzip stream) into a ValueError naming ``path`` and what was ``expected``."""
    try:
        yield
    except UnicodeDecodeError:
        raise ValueError(f"{not_utf8_at(path)}; expected {expected}") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise ValueError(f"{path}: a damaged gzip file ({err}); expected {expected}") from None
