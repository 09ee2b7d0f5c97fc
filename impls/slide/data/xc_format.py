"""The extreme-classification repository's text format: validated reader, writer, .npz cache.

Longer than 400 lines: the reader's error messages (each names the file, the line and the
mend) read the same bytes the parse does, and stay beside it and the writer of the same grammar.

Format (0-based indices)::

    N D L
    l1,l2,... f:v f:v ...
    ...

The reader streams the file through a numba byte parser into CSR arrays and fails
with :class:`XCFormatError` naming the file, the line and what was expected. A line
without a label list (it starts with whitespace or directly with a ``f:v`` token) is
an error unless ``allow_empty_labels=True`` (some repository files contain such
points); so is a blank line inside the data, read as a point with neither labels nor
features. Blank lines at the end of a file are points only where the header's N counts
them (a last point with neither labels nor features), and never beyond it. D and L must fit the
32-bit indices the arrays hold. A label listed twice on one line is kept once (a point's
labels are a set; the count of such points is a warning, :func:`warn`); a feature listed twice
is kept twice, and every product sums its values. A file with fewer data lines than its
header's N (the first lines of a file, cut under its whole header) fails before the parse,
naming both counts; a first line of two numbers (the newer repository format, features and
labels in separate files) fails with the command that joins the two (:func:`join_command`),
and a first line that is a data line says the file has no header.
"""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np

from impls.harness import atomic
from impls.slide.data import xc_parse_kernels as K


log = logging.getLogger(__name__)


class XCFormatError(ValueError):
    """An XC text file is malformed; the message names the file, the line and the expectation."""


_MESSAGES = {
    K.E_LABEL_SYNTAX: "expected a label list 'l1,l2,...' (non-negative integers separated by commas) "
                      "as the first token",
    K.E_LABEL_RANGE: "label index out of range: expected 0 <= label < L={L}",
    K.E_EMPTY_LABELS: "empty label list (the line is blank or starts with whitespace or a 'feature:value'); "
                      "allow them with --allow-empty-labels (allow_empty_labels=True in Python) if this file's "
                      "format has points without labels",
    K.E_MISSING_COLON: "expected 'feature:value' but a token has no ':'",
    K.E_FEATURE_SYNTAX: "feature index must be a non-negative integer before ':'",
    K.E_FEATURE_RANGE: "feature index out of range: expected 0 <= feature < D={D}",
    K.E_VALUE_SYNTAX: "feature value after ':' is not a number",
}


# the first bytes of the packed files an XC set is downloaded as (the repository ships zip)
COMPRESSED = ((b"\x1f\x8b", "gzip-compressed"), (b"PK\x03\x04", "a zip archive"),
              (b"BZh", "bzip2-compressed"), (b"\xfd7zXZ\x00", "xz-compressed"),
              (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"), (b"\x28\xb5\x2f\xfd", "zstd-compressed"))


# Joins the newer repository format's two files into one file of this format
# (:mod:`impls.slide.data.xc_join`); its arguments are the features file, the labels file and
# the file to write.
JOIN_COMMAND = "python -m impls.slide.data.xc_join"


def join_command(path: str | Path) -> str:
    """The shell command (one line) that joins the newer format's features and labels files into
    one XC file: :data:`JOIN_COMMAND` with the file pair ``path`` belongs to when its name says
    which it is (:func:`_joined_name`: ``trn_X_Xf.txt`` / ``trn_X_Y.txt`` -> ``train.txt``
    beside them, ``tst_...`` -> ``test.txt``), else with placeholders."""
    import shlex

    path = Path(path)
    name = path.name
    if "X_Xf" in name or "X_Y" in name:
        features = path.with_name(name.replace("X_Y", "X_Xf") if "X_Xf" not in name else name)
        labels = path.with_name(name.replace("X_Xf", "X_Y"))
        out = path.with_name(_joined_name(name))
        files = " ".join(shlex.quote(str(f)) for f in (features, labels, out))
    else:
        files = "FEATURES_FILE LABELS_FILE OUT.txt"
    return f"{JOIN_COMMAND} {files}"


def row_norms(data) -> np.ndarray:
    """The L2 norm (float64) of each feature row of ``data`` (an XCData) that holds a feature,
    in row order."""
    starts = data.indptr[:-1][np.diff(data.indptr) > 0]  # rows with features: strictly increasing
    return (np.sqrt(np.add.reduceat(data.values.astype(np.float64) ** 2, starts)) if starts.size
            else np.zeros(0))


def median_row_norm(data) -> float:
    """The median of :func:`row_norms` of ``data`` (an XCData; 0.0 where no row holds a feature):
    about 1 for TF-IDF rows scaled to unit norm, the scale the default learning rate was chosen on."""
    norms = row_norms(data)
    return float(np.median(norms)) if norms.size else 0.0


def _joined_name(name: str) -> str:
    """The joined file's name for one file of a newer-format pair: ``<prefix>train.txt`` when
    the name says training (``trn`` or ``train`` in it), ``<prefix>test.txt`` for test (``tst``,
    ``test``), where ``<prefix>`` is what precedes that word; else ``<name's stem without X_Xf
    / X_Y>_joined.txt``. Two splits of one set never get the same name."""
    import re

    stem = name.rsplit(".", 1)[0]
    for words, split in ((("train", "trn"), "train"), (("test", "tst"), "test")):
        found = re.search("|".join(words), stem, re.IGNORECASE)
        if found:
            return f"{stem[:found.start()]}{split}.txt"
    base = re.sub(r"_?X_(Xf|Y)$", "", stem) or "data"
    return f"{base}_joined.txt"


def shown(line: bytes, limit: int = 80) -> str:
    """The first ``limit`` bytes of ``line`` as a quoted ASCII string a terminal shows as it
    is: a byte outside printable ASCII is written as its ``\\xNN`` escape, never sent raw."""
    return repr(line[:limit].decode("ascii", "backslashreplace"))


def encoding_hint(line: bytes) -> str | None:
    """What is wrong with a file whose first line is ``line`` when it is not plain text of
    LF (or CRLF) lines: compressed, a UTF-8 byte-order mark, UTF-16, or lines that end in
    CR alone; one clause saying what to do, or None when none of these is the case."""
    packed = next((kind for magic, kind in COMPRESSED if line.startswith(magic)), None)
    if packed:
        return f"the file looks {packed}: decompress it first"
    if line.startswith(b"\xef\xbb\xbf"):
        return f"got {shown(line[3:])} after a UTF-8 byte-order mark: remove the mark"
    if line.startswith((b"\xff\xfe", b"\xfe\xff")) or line[1:2] == b"\0" or line[:1] == b"\0":
        return "the file looks UTF-16 (what Windows calls 'Unicode'): save it as ASCII or UTF-8"
    if b"\r" in line.rstrip(b"\r"):
        first = line.split(b"\r")[0]
        return (f"got {shown(first)} and a carriage return inside the line: the file's lines end in CR alone "
                "(old Mac); convert them to LF")
    return None


def is_data_line(words: list[bytes]) -> bool:
    """Whether the whitespace-split ``words`` of a line read as a data line of this format:
    label tokens (digits and commas; none for a point without labels), then a ``f:v`` token
    whose feature is an integer."""
    first = next((i for i, w in enumerate(words) if b":" in w), None)
    return (first is not None and words[first].split(b":", 1)[0].isdigit()
            and all(w.replace(b",", b"").isdigit() for w in words[:first]))


def bad_header_message(path: str | Path, line: bytes, second: bytes = b"") -> str:
    """The error for a first line ``line`` that is not an 'N D L' header, with a hint for a
    compressed file, a byte-order mark, UTF-16 text, lines that end in CR alone
    (:func:`encoding_hint`), a first line that is itself a data line (:func:`is_data_line`:
    the file has no header), or a header of two numbers: above a data line of this format
    (``second``, the next line, holds labels and then ``f:v`` features) the header lacks L;
    otherwise it is the newer repository format, features and labels in separate files, and
    the hint gives the command that joins them. One line; bytes outside printable ASCII are
    shown escaped (:func:`shown`)."""
    got = f"got {shown(line)}"
    parts = line.split()
    words = second.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        if words and words[0].replace(b",", b"").isdigit() and any(b":" in w for w in words[1:]):
            got += (f": two numbers, above a line of this format ('labels f:v ...'): the header lacks L, the "
                    f"label count; write 'N D L' (for instance '{parts[0].decode()} {parts[1].decode()} L' with "
                    "L above the largest label id)")
        else:
            got += (": this looks like the newer XC format, features and labels in separate files (first lines "
                    "'N D' and 'N L'); the suite reads one file of lines 'l1,l2 f:v ...', join them with: "
                    + join_command(path))
    else:
        got = encoding_hint(line) or (
            got + ": line 1 is a data line (labels, then feature:value), so the file has no header; add "
            "'N D L' (points, features, labels: N its data lines, D and L above its largest feature and "
            "label ids) as its first line" if is_data_line(parts) else got)
    return f"{path}:1: expected the header 'N D L' (three non-negative integers), {got}"


INDEX_LIMIT = 2**31 - 1     # indices are int32


def check_header_sizes(path: str | Path, n: int, d: int, l: int) -> None:
    """Raise XCFormatError at line 1 when the header's D or L cannot be an XC set's (above
    the int32 index limit of the stored feature and label indices; N is checked against
    the file's lines instead)."""
    for name, value in (("D", d), ("L", l)):
        if value > INDEX_LIMIT:
            raise XCFormatError(f"{path}:1: header's {name}={value} is above {INDEX_LIMIT:,} "
                                f"(indices are 32-bit); is the header 'N D L'?")


def empty_file_message(path: str | Path) -> str:
    """The error for an XC file of no bytes at all (no header to read)."""
    return f"{path}: the file is empty (expected the header 'N D L', then a line per point)"


def _first_newline(buf: np.ndarray) -> int:
    """The index of ``buf``'s first newline (its size when it has none), looked for in growing
    chunks from the start: the header's line, not the whole file, is compared."""
    start, step = 0, 4096
    while start < buf.size:
        found = np.flatnonzero(buf[start:start + step] == 10)
        if found.size:
            return start + int(found[0])
        start, step = start + step, min(step * 2, _COUNT_CHUNK)
    return int(buf.size)


def _header(buf: np.ndarray, path: Path) -> tuple[int, int, int, int]:
    if buf.size == 0:
        raise XCFormatError(empty_file_message(path))
    nl = _first_newline(buf)
    text = bytes(buf[:nl]).decode("ascii", "replace").split()
    if len(text) != 3 or not all(t.isdigit() for t in text):
        rest = buf[nl + 1:nl + 1 + 256]
        second = bytes(rest[:int(np.argmax(rest == 10)) if (rest == 10).any() else rest.size])
        raise XCFormatError(bad_header_message(path, bytes(buf[:min(nl, 80)]), second))
    n, d, l = map(int, text)
    check_header_sizes(path, n, d, l)
    return n, d, l, nl + 1


_BLANK = np.array([9, 10, 13, 32], np.uint8)  # tab, newline, carriage return, space


def _content_end(body: np.ndarray) -> int:
    """The index after the last byte of ``body`` that is not blank (0: all blank); reads
    only the tail, in growing chunks."""
    end, step = body.size, 4096
    while end > 0:
        chunk = body[max(0, end - step):end]
        found = np.flatnonzero(~np.isin(chunk, _BLANK))
        if found.size:
            return end - chunk.size + int(found[-1]) + 1
        end -= chunk.size
        step *= 2
    return 0


def short_file_message(path: str | Path, n: int, lines: int, bare_cr: int = 0) -> str:
    """The error for a file whose header says ``n`` points but that holds ``lines`` data lines,
    fewer: most often the first lines of a file cut off (``head -n``) under its whole header.
    When the data hold at least as many line-ending carriage returns (``bare_cr``,
    :func:`bare_cr_count`) as lines, the lines end in CR alone and are read as one, and the
    message says to convert them instead."""
    if bare_cr and bare_cr >= lines:
        return (f"{path}:1: header says N={n} points but the file has {lines} data lines: its lines end in CR "
                "alone (old Mac), read as one line; convert them to LF (e.g. tr '\\r' '\\n')")
    return (f"{path}:1: header says N={n} points but the file has {lines} data lines: a cut file (only its "
            f"first lines)? write the real count, {lines}, as N in the header, or use the whole file")


def bare_cr_count(body: np.ndarray) -> int:
    """How many carriage returns (13) in the bytes ``body`` are followed by a byte that is
    neither a newline (10) nor another CR: lines that end in CR alone (a CR as the last byte
    is not counted, since a CRLF file cut there ends so; ``\\r\\r\\n`` ends one line). One
    pass over the carriage returns' positions."""
    cr = np.flatnonzero(body[:-1] == 13)
    after = body[cr + 1]
    return int(np.count_nonzero((after != 10) & (after != 13)))


_COUNT_CHUNK = 1 << 26   # bytes compared at a time when counting newlines (bounds the temporary)


def count_byte(body: np.ndarray, byte: int) -> int:
    """How many bytes of ``body`` (uint8) equal ``byte``, compared a chunk at a time: the
    comparison's temporary is at most ``_COUNT_CHUNK`` bytes, not the file's size."""
    return sum(int(np.count_nonzero(body[i:i + _COUNT_CHUNK] == byte)) for i in range(0, body.size, _COUNT_CHUNK))


def _data_lines(body: np.ndarray, n: int) -> tuple[int, int]:
    """``(lines, stop)``: the data lines of ``body`` (the bytes after the header) and the index
    after the newline that ends the last of them. Blank lines at the end are points only as far
    as the header's ``n`` needs them (a last point with neither labels nor features is such a
    line, as it would be anywhere else); those beyond are not counted. One pass over ``body``
    (a newline count, a chunk at a time)."""
    stop = _content_end(body)
    if stop:
        newline = np.flatnonzero(body[stop:] == 10)
        stop = stop + int(newline[0]) + 1 if newline.size else body.size
    kept = body[:stop]
    newlines = count_byte(kept, 10)
    lines = newlines + (1 if kept.size and kept[-1] != 10 else 0)
    if lines < n and stop < body.size:             # blank lines follow: each is a point while N wants one
        ends = np.flatnonzero(body[stop:] == 10)[:n - lines]
        if ends.size == n - lines or body[-1] == 10:
            lines, stop = lines + int(ends.size), stop + (int(ends[-1]) + 1 if ends.size else 0)
        else:                                       # the last blank line has no newline
            lines, stop = lines + int(ends.size) + 1, body.size
    return lines, stop


def data_lines(path: str | Path) -> int:
    """The data lines of the XC text file at ``path`` (its points, when it is well formed; blank
    lines at its end left out); reads the whole file through a memory map, holding at most
    one chunk's comparison in memory. Raises XCFormatError when its first line is not an
    'N D L' header."""
    path = Path(path)
    if path.stat().st_size == 0:
        raise XCFormatError(empty_file_message(path))
    buf = np.memmap(path, np.uint8, mode="r")
    n, _, _, start = _header(buf[:1 << 16], path)
    return _data_lines(buf[start:], n)[0]


def _fit_to_header(buf: np.ndarray, start: int, n: int, path: Path) -> np.ndarray:
    """``buf`` without the blank lines at its end that are no points (:func:`_data_lines`: those
    beyond the header's N); raises XCFormatError (:func:`short_file_message`, which names lines
    that end in CR alone as the cause when the data hold such a CR) when fewer than N data lines
    remain, before any array of N rows is allocated and before the parse. More than N lines
    are the parser's to report, at the first extra line."""
    lines, stop = _data_lines(buf[start:], n)
    if lines < n:
        content = _data_lines(buf[start:], 0)[0]     # the count that reads the file, its blank end aside
        raise XCFormatError(short_file_message(path, n, content, bare_cr_count(buf[start:])))
    return buf[:start + stop]


def dedupe_labels(label_indptr: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Return (label_indptr, labels, points) with each point's repeated labels dropped
    (the first of each kept, in the file's order) and the number of points that had a
    repeat. CSR input (``label_indptr[0] == 0``, every label >= 0), modified in place; one
    pass over the labels (numba), no sort."""
    label_indptr = np.ascontiguousarray(label_indptr, np.int64)
    labels = np.ascontiguousarray(labels, np.int32)
    width = int(labels.max()) + 1 if labels.size else 1   # what the file holds, not a header's claim
    kept, repeated = K.merge_repeated_rows(label_indptr, labels, np.empty(0, np.float32), width)
    return label_indptr, labels[:kept], int(repeated)


def sum_repeated_features(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Return (indptr, indices, values, points) with each point's repeated feature indices
    merged into the first one's place with the sum of their values, as every product of
    the row reads them, and the number of points that had a repeat. New arrays; one pass
    (numba), no sort."""
    indptr = np.array(indptr, np.int64)
    indices = np.array(indices, np.int32)
    values = np.array(values, np.float32)
    width = int(indices.max()) + 1 if indices.size else 1
    kept, repeated = K.merge_repeated_rows(indptr, indices, values, width)
    return indptr, indices[:kept], values[:kept], int(repeated)


def repeated_feature_points(indptr: np.ndarray, indices: np.ndarray) -> int:
    """The number of CSR rows that list a feature index more than once (each product sums
    such a row's repeated values). Copies ``indptr`` and ``indices`` (the inputs are left as
    they are); one pass (numba), no sort."""
    indices = np.array(indices, np.int32)
    width = int(indices.max()) + 1 if indices.size else 1
    return int(K.merge_repeated_rows(np.array(indptr, np.int64), indices, np.empty(0, np.float32), width)[1])


def parse_xc_bytes(data: bytes | np.ndarray, path: str | Path = "<bytes>",
                   allow_empty_labels: bool = False) -> dict[str, np.ndarray]:
    """Parse XC text given as bytes; return CSR arrays (see :class:`~impls.slide.data.dataset.XCData`).
    Points that list a label more than once keep it once, with a warning (:func:`warn`)."""
    arrays, repeated = _parse(data, Path(path), allow_empty_labels)
    _warn_repeated(path, repeated, arrays["indptr"].size - 1)
    return arrays


def warn(message: str) -> None:
    """Say ``message`` once: as every command line's warning, one ``warning: ...`` line on
    stderr (:func:`impls.harness.cli.warn`), or, in a program that has set up logging (a
    handler on this module's logger or above it), as a WARNING record of this module's logger."""
    if log.hasHandlers():
        log.warning("%s", message)
    else:
        from impls.harness import cli

        cli.warn(message)


def _warn_repeated(path: str | Path, repeated: int, n: int) -> None:
    if repeated:
        warn(f"{path}: {repeated} of {n} points list a label more than once; each label is kept once")


ONE_BASED_HINT = "ids are 0-based; is the file 1-based?"


def _line_bytes(body: np.ndarray, line: int) -> bytes:
    """Data line ``line`` (0-based) of ``body``, without its newline (error path only)."""
    ends = np.flatnonzero(body == 10)
    begin = int(ends[line - 1]) + 1 if line > 0 else 0
    end = int(ends[line]) if line < ends.size else body.size
    return bytes(body[begin:end])


def _line_words(body: np.ndarray, line: int) -> list[bytes]:
    """The words of data line ``line`` (0-based) of ``body``, split where the parser splits
    them (spaces, tabs, carriage returns; error path only)."""
    return _words(_line_bytes(body, line))


def _words(line: bytes) -> list[bytes]:
    """The words of ``line`` as the parser splits them (spaces, tabs, carriage returns)."""
    return [w for w in line.replace(b"\t", b" ").replace(b"\r", b" ").split(b" ") if w]


def _token_detail(body: np.ndarray, line: int, code: int) -> str:
    """For a syntax error in a ``feature:value`` token at data line ``line`` (0-based) of
    ``body`` (no ':', a feature that is not digits, a value the parser cannot read): the first
    such token of the line, as ``", got TOKEN"`` (:func:`shown`), with a hint where the value
    is written with a decimal comma; "" for any other error or where no token fails."""
    if code not in (K.E_MISSING_COLON, K.E_FEATURE_SYNTAX, K.E_VALUE_SYNTAX):
        return ""
    raw = _line_bytes(body, line)
    words = _words(raw)
    if words and raw[:1] not in (b" ", b"\t", b"\r") and b":" not in words[0]:
        words = words[1:]                          # the label list
    for word in words:
        feature, colon, value = word.partition(b":")
        number = np.frombuffer(value, np.uint8)
        _, stop, ok = K._parse_float(number, 0, number.size) if number.size else (0.0, 0, False)
        if colon and feature.isdigit() and ok and stop == number.size:
            continue
        hint = (": a decimal comma? write the value with '.'"
                if colon and value.replace(b",", b"", 1).lstrip(b"+-").isdigit() and b"," in value else "")
        return f", got {shown(word)}{hint}"
    return ""


def _label_separator_hint(body: np.ndarray, line: int, code: int) -> str:
    """For a label-list or missing-':' error at data line ``line`` of ``body``: when the words
    before the first ``f:v`` are two or more of digits and commas (labels separated by spaces,
    or by ', '), the likely cause and the list as it should be written; "" otherwise."""
    if code not in (K.E_LABEL_SYNTAX, K.E_MISSING_COLON):
        return ""
    words = _line_words(body, line)
    first = next((i for i, w in enumerate(words) if b":" in w), len(words))
    head = words[:first]
    if len(head) < 2 or not all(w.replace(b",", b"").isdigit() or w == b"," for w in head):
        return ""
    ids = [i.decode() for w in head for i in w.split(b",") if i]
    joined = ",".join(ids[:6]) + (",..." if len(ids) > 6 else "")
    sep = "', '" if any(w.endswith(b",") for w in head[:-1]) or b"," in head else "spaces"
    return f": labels separated by {sep}? join them with commas, no spaces: {joined}"


def _range_detail(body: np.ndarray, line: int, code: int, d: int, l: int) -> str:
    """For an index-out-of-range error at data line ``line`` (0-based) of ``body``: the first
    index of that line at or above the header's bound, as ``", got I"``, with
    :data:`ONE_BASED_HINT` when it equals the bound (D or L: the largest id of a 1-based
    file); "" for any other error. Reads that one line (called on the error path only)."""
    if code not in (K.E_LABEL_RANGE, K.E_FEATURE_RANGE):
        return ""
    tokens = _line_words(body, line)
    if code == K.E_LABEL_RANGE:
        bound, ids = l, tokens[0].split(b",") if tokens else []
    else:
        bound, ids = d, [t.split(b":", 1)[0] for t in tokens if b":" in t]
    found = next((int(i) for i in ids if i.isdigit() and int(i) >= bound), None)
    if found is None:
        return ""
    return f", got {found}" + (f": {ONE_BASED_HINT}" if found == bound else "")


def _parse(data: bytes | np.ndarray, path: Path, allow_empty_labels: bool) -> tuple[dict[str, np.ndarray], int]:
    """:func:`parse_xc_bytes`'s arrays, and how many points listed a label more than once."""
    buf = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) else data
    n, d, l, start = _header(buf, path)
    buf = _fit_to_header(buf, start, n, path)
    body = buf[start:]
    max_nnz = count_byte(body, K.COLON)
    max_labels = count_byte(body, K.COMMA) + n + 1
    indptr = np.empty(n + 2, np.int64)
    label_indptr = np.empty(n + 2, np.int64)
    indices = np.empty(max_nnz, np.int32)
    values = np.empty(max_nnz, np.float32)
    labels = np.empty(max_labels, np.int32)
    code, line, nnz, nlab, blank = K.parse_body(buf, start, n, d, l, allow_empty_labels,
                                                indptr, indices, values, label_indptr, labels)
    where = f"{path}:{line + 2}"
    if code == K.E_TOO_FEW_LINES:
        raise XCFormatError(short_file_message(path, n, line, bare_cr_count(body)))
    if code == K.E_TOO_MANY_LINES:
        counted = (f" (line {blank + 2} is blank and was read as a point without labels or features)"
                   if blank >= 0 else "")
        raise XCFormatError(f"{where}: more data lines than the header's N={n}{counted}")
    if code != K.OK:
        raise XCFormatError(f"{where}: {_MESSAGES[code].format(D=d, L=l)}{_range_detail(body, line, code, d, l)}"
                            f"{_token_detail(body, line, code)}{_label_separator_hint(body, line, code)}")
    finite = np.isfinite(values[:nnz])
    if not finite.all():
        first = int(np.argmin(finite))
        row = int(np.searchsorted(indptr[: n + 1], first, side="right")) - 1
        raise XCFormatError(f"{path}:{row + 2}: feature value {values[first]} is not a finite float32 "
                            f"(|v| < 3.4e38 expected)")
    label_ptr, label_list, repeated = dedupe_labels(label_indptr[: n + 1], labels[:nlab])
    del finite          # nnz bools, freed before the copies below (the label arrays are views: kept)
    return {"indptr": _exact(indptr, n + 1), "indices": _exact(indices, nnz), "values": _exact(values, nnz),
            "label_indptr": _exact(label_ptr, n + 1), "labels": _exact(label_list, label_list.size),
            "shape": np.array([d, l], np.int64)}, int(repeated)


def _exact(array: np.ndarray, size: int) -> np.ndarray:
    """The first ``size`` items of ``array`` as an array that owns exactly them: ``array``
    itself where it is that already (a file's features, counted exactly by its colons, are
    not copied: at Amazon-670K's size that copy is ~0.5 GB more at the parse's peak)."""
    if array.size == size and array.base is None:
        return array
    return array[:size].copy()


def read_xc(path: str | Path, allow_empty_labels: bool = False) -> dict[str, np.ndarray]:
    """Read the XC text file at ``path`` into CSR arrays (the registry's loader signature)."""
    path = Path(path)
    return parse_xc_bytes(_file_bytes(path), path, allow_empty_labels)


def _file_bytes(path: Path) -> np.ndarray:
    """The bytes of the file at ``path`` (uint8), a private copy: the parse sizes its arrays
    from one pass and fills them in another, so the text must not change between them (a
    memory map would show another writer's edits, or die of SIGBUS on a file cut short)."""
    return np.fromfile(path, np.uint8)


CACHE_VERSION = 5     # bump when the parsed arrays change for the same text
_REPEATED = "repeated_label_points"   # kept in the cache beside the arrays: its warning is repeated on reads


def _cache_path(path: Path, allow_empty_labels: bool, cache_dir: Path | None) -> Path:
    """The cache file of ``path``: keyed by the sha256 of its bytes and the options."""
    from impls.harness import registry

    options = f"v{CACHE_VERSION}|allow_empty_labels={bool(allow_empty_labels)}"
    key = hashlib.sha256(f"{registry.sha256_of(path)}|{options}".encode()).hexdigest()[:16]
    if cache_dir is None:
        from impls.harness import paths
        cache_dir = paths.cache_dir() / "xc-parsed"
    # the stem only names the file for a reader: cut to 100 bytes, since a long name (240
    # bytes, or 80 characters of CJK) plus the key passes the file system's 255-byte limit
    stem = path.stem.encode("utf-8", "surrogateescape")[:100].decode("utf-8", "ignore")
    return Path(cache_dir) / f"{stem}-{key}.npz"


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
        arrays = found[0]
        _warn_repeated(path, int(arrays.pop(_REPEATED, 0)), arrays["indptr"].size - 1)
        return arrays
    arrays, repeated = _parse(_file_bytes(path), path, allow_empty_labels)
    _warn_repeated(path, repeated, arrays["indptr"].size - 1)
    try:
        registry.save_npz_checked(cache, {**arrays, _REPEATED: np.int64(repeated)})
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
    cap = n + 12 * labels.size + 32 * indices.size + 16
    out = np.empty(cap, np.uint8)
    used = K.format_rows(indptr, indices, values, label_indptr, labels, out)
    return f"{n} {d} {l}\n".encode() + out[:used].tobytes()


def write_xc(path: str | Path, arrays: dict[str, np.ndarray]) -> Path:
    """Write CSR ``arrays`` as an XC text file, atomically (temp file, then rename)."""
    return atomic.write_bytes(Path(path), format_xc(arrays))
