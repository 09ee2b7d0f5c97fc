"""The extreme-classification repository's text format: validated reader, writer, .npz cache.

Format (0-based indices)::

    N D L
    l1,l2,... f:v f:v ...
    ...

The reader streams the file through a numba byte parser into CSR arrays and fails
with :class:`XCFormatError` naming the file, the line and what was expected. A line
whose label list is empty (it starts with whitespace) is an error unless
``allow_empty_labels=True`` (some repository files contain such points).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from impls.harness import atomic
from impls.slide.data import xc_parse_kernels as K


class XCFormatError(ValueError):
    """An XC text file is malformed; the message names the file, the line and the expectation."""


_MESSAGES = {
    K.E_LABEL_SYNTAX: "expected a label list 'l1,l2,...' (non-negative integers separated by commas) "
                      "as the first token",
    K.E_LABEL_RANGE: "label index out of range: expected 0 <= label < L={L}",
    K.E_EMPTY_LABELS: "empty label list (the line starts with whitespace or is blank); "
                      "pass allow_empty_labels=True (--allow-empty-labels) if this file's format allows it",
    K.E_MISSING_COLON: "expected 'feature:value' but a token has no ':'",
    K.E_FEATURE_SYNTAX: "feature index must be a non-negative integer before ':'",
    K.E_FEATURE_RANGE: "feature index out of range: expected 0 <= feature < D={D}",
    K.E_VALUE_SYNTAX: "feature value after ':' is not a number",
}


def bad_header_message(path: str | Path, line: bytes) -> str:
    """The error for a first line ``line`` that is not an 'N D L' header, with a hint for a
    compressed file or a byte-order mark."""
    hint = ""
    if line.startswith(b"\x1f\x8b"):
        hint = "; the file looks gzip-compressed: decompress it first"
    elif line.startswith(b"\xef\xbb\xbf"):
        hint = "; it starts with a UTF-8 byte-order mark: remove it"
    return (f"{path}:1: expected the header 'N D L' (three non-negative integers), "
            f"got {line[:80].decode('ascii', 'replace')!r}{hint}")


def _header(buf: np.ndarray, path: Path) -> tuple[int, int, int, int]:
    nl = int(np.argmax(buf == 10)) if (buf == 10).any() else buf.size
    text = bytes(buf[:nl]).decode("ascii", "replace").split()
    if len(text) != 3 or not all(t.isdigit() for t in text):
        raise XCFormatError(bad_header_message(path, bytes(buf[:min(nl, 80)])))
    n, d, l = map(int, text)
    return n, d, l, nl + 1


_BLANK = np.array([9, 10, 13, 32], np.uint8)  # tab, newline, carriage return, space


def _fit_to_header(buf: np.ndarray, start: int, n: int, path: Path) -> np.ndarray:
    """``buf`` without blank lines after the header's N data lines; raises XCFormatError when
    the file has fewer than N lines (before any array of N rows is allocated)."""
    body = buf[start:]
    newlines = np.flatnonzero(body == 10)
    lines = newlines.size + (1 if body.size and body[-1] != 10 else 0)
    if lines < n:
        raise XCFormatError(f"{path}:1: header says N={n} points but the file has {lines} data lines")
    if lines > n:
        cut = int(newlines[n - 1]) + 1 if n else 0
        if np.isin(body[cut:], _BLANK).all():  # trailing blank lines: not points
            return buf[:start + cut]
    return buf


def parse_xc_bytes(data: bytes | np.ndarray, path: str | Path = "<bytes>",
                   allow_empty_labels: bool = False) -> dict[str, np.ndarray]:
    """Parse XC text given as bytes; return CSR arrays (see :class:`~impls.slide.data.dataset.XCData`)."""
    path = Path(path)
    buf = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) else data
    n, d, l, start = _header(buf, path)
    buf = _fit_to_header(buf, start, n, path)
    body = buf[start:]
    max_nnz = int(np.count_nonzero(body == K.COLON))
    max_labels = int(np.count_nonzero(body == K.COMMA)) + n + 1
    indptr = np.empty(n + 2, np.int64)
    label_indptr = np.empty(n + 2, np.int64)
    indices = np.empty(max_nnz, np.int32)
    values = np.empty(max_nnz, np.float32)
    labels = np.empty(max_labels, np.int32)
    code, line, nnz, nlab = K.parse_body(buf, start, n, d, l, allow_empty_labels,
                                         indptr, indices, values, label_indptr, labels)
    where = f"{path}:{line + 2}"
    if code == K.E_TOO_FEW_LINES:
        raise XCFormatError(f"{path}:1: header says N={n} points but the file has {line} data lines")
    if code == K.E_TOO_MANY_LINES:
        raise XCFormatError(f"{where}: more data lines than the header's N={n}")
    if code != K.OK:
        raise XCFormatError(f"{where}: {_MESSAGES[code].format(D=d, L=l)}")
    finite = np.isfinite(values[:nnz])
    if not finite.all():
        first = int(np.argmin(finite))
        row = int(np.searchsorted(indptr[: n + 1], first, side="right")) - 1
        raise XCFormatError(f"{path}:{row + 2}: feature value {values[first]} is not a finite float32 "
                            f"(|v| < 3.4e38 expected)")
    return {"indptr": indptr[: n + 1].copy(), "indices": indices[:nnz].copy(), "values": values[:nnz].copy(),
            "label_indptr": label_indptr[: n + 1].copy(), "labels": labels[:nlab].copy(),
            "shape": np.array([d, l], np.int64)}


def read_xc(path: str | Path, allow_empty_labels: bool = False) -> dict[str, np.ndarray]:
    """Read the XC text file at ``path`` into CSR arrays (the registry's loader signature)."""
    path = Path(path)
    return parse_xc_bytes(np.fromfile(path, np.uint8), path, allow_empty_labels)


CACHE_VERSION = 2     # bump when the parsed arrays change for the same text


def _cache_path(path: Path, allow_empty_labels: bool, cache_dir: Path | None) -> Path:
    """The cache file of ``path``: keyed by the sha256 of its bytes and the options."""
    from impls.harness import registry

    options = f"v{CACHE_VERSION}|allow_empty_labels={bool(allow_empty_labels)}"
    key = hashlib.sha256(f"{registry.sha256_of(path)}|{options}".encode()).hexdigest()[:16]
    if cache_dir is None:
        from impls.harness import paths
        cache_dir = paths.cache_dir() / "xc-parsed"
    return Path(cache_dir) / f"{path.stem}-{key}.npz"


def read_xc_cached(path: str | Path, allow_empty_labels: bool = False,
                   cache_dir: str | Path | None = None) -> dict[str, np.ndarray]:
    """Like :func:`read_xc`, but keep the parsed arrays as .npz beside a .sha256 file.

    The cache is keyed by the source's sha256 and the options (an edited file or another
    ``allow_empty_labels`` never meets an old cache) and verified on every read; a
    damaged one is rebuilt with a warning (the dataset registry's mechanism), and one that
    cannot be written is a warning too.
    """
    from impls.harness import registry

    path = Path(path)
    cache = _cache_path(path, allow_empty_labels, Path(cache_dir) if cache_dir else None)
    found = registry.load_npz_checked(cache)
    if found is not None:
        return found[0]
    arrays = read_xc(path, allow_empty_labels)
    try:
        registry.save_npz_checked(cache, arrays)
    except OSError as err:  # a read-only checkout or a full disk: the arrays are parsed all the same
        registry.log.warning("%s: cannot keep the parsed cache (%s); parsing again next time", cache, err)
    return arrays


def format_xc(arrays: dict[str, np.ndarray]) -> bytes:
    """Return the XC text (header included) of CSR ``arrays``."""
    indptr = np.asarray(arrays["indptr"], np.int64)
    label_indptr = np.asarray(arrays["label_indptr"], np.int64)
    indices = np.asarray(arrays["indices"])
    values = np.asarray(arrays["values"], np.float32)
    labels = np.asarray(arrays["labels"])
    d, l = (int(x) for x in arrays["shape"])
    n = indptr.size - 1
    cap = n + 12 * labels.size + 28 * indices.size + 16
    out = np.empty(cap, np.uint8)
    used = K.format_rows(indptr, indices, values, label_indptr, labels, out)
    return f"{n} {d} {l}\n".encode() + out[:used].tobytes()


def write_xc(path: str | Path, arrays: dict[str, np.ndarray]) -> Path:
    """Write CSR ``arrays`` as an XC text file, atomically (temp file, then rename)."""
    return atomic.write_bytes(Path(path), format_xc(arrays))
