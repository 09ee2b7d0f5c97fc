"""Numba byte-level parser for the extreme-classification text format (see xc_format)."""
from __future__ import annotations

import numpy as np
from numba import njit

# error codes returned by parse_body (xc_format turns them into messages)
OK = 0
E_LABEL_SYNTAX = 1      # label list is not integers separated by commas
E_LABEL_RANGE = 2       # label index >= L
E_EMPTY_LABELS = 3      # empty label list where the format does not allow it
E_MISSING_COLON = 4     # feature token without ':'
E_FEATURE_SYNTAX = 5    # feature index is not an integer
E_FEATURE_RANGE = 6     # feature index >= D
E_VALUE_SYNTAX = 7      # value is not a number
E_TOO_FEW_LINES = 8     # fewer data lines than the header's N
E_TOO_MANY_LINES = 9    # more data lines than the header's N

SPACE, TAB, CR, LF = 32, 9, 13, 10
COMMA, COLON, MINUS, PLUS, DOT = 44, 58, 45, 43, 46


@njit(cache=True, inline="always")
def _is_ws(c):
    return c == SPACE or c == TAB or c == CR


@njit(cache=True, inline="always")
def _is_digit(c):
    return 48 <= c <= 57


@njit(cache=True)
def _parse_float(buf, pos, end):
    """Parse a float in buf[pos:end]; return (value, next_pos, ok)."""
    start = pos
    sign = 1.0
    if pos < end and (buf[pos] == MINUS or buf[pos] == PLUS):
        if buf[pos] == MINUS:
            sign = -1.0
        pos += 1
    mant = 0.0
    digits = 0
    scale = 0
    significant = 0     # digits in mant after its leading zeros; beyond 19 they only move the point
    while pos < end and _is_digit(buf[pos]):
        if significant < 19:
            mant = mant * 10.0 + (buf[pos] - 48)
            if mant > 0.0:
                significant += 1
        else:
            scale += 1      # below float64's precision: only its place counts
        pos += 1
        digits += 1
    if pos < end and buf[pos] == DOT:
        pos += 1
        while pos < end and _is_digit(buf[pos]):
            if significant < 19:
                mant = mant * 10.0 + (buf[pos] - 48)
                scale -= 1
                if mant > 0.0:
                    significant += 1
            pos += 1
            digits += 1
    if digits == 0:
        return 0.0, start, False
    if pos < end and (buf[pos] == 101 or buf[pos] == 69):  # e / E
        pos += 1
        esign = 1
        if pos < end and (buf[pos] == MINUS or buf[pos] == PLUS):
            if buf[pos] == MINUS:
                esign = -1
            pos += 1
        e = 0
        ed = 0
        while pos < end and _is_digit(buf[pos]):
            if e < 100000:      # beyond float64's range either way; no int64 overflow
                e = e * 10 + (buf[pos] - 48)
            pos += 1
            ed += 1
        if ed == 0:
            return 0.0, start, False
        scale += esign * e
    if mant == 0.0:     # 0e400 is 0, not 0 * inf
        return sign * 0.0, pos, True
    return sign * mant * 10.0 ** scale, pos, True


@njit(cache=True)
def parse_body(buf, pos, n_points, n_features, n_labels, allow_empty,
               indptr, indices, values, label_indptr, labels):
    """Parse ``n_points`` data lines of ``buf`` from ``pos``.

    A line without a label list starts with whitespace or directly with a 'f:v' token;
    it is an error (E_EMPTY_LABELS) unless ``allow_empty``, and so is a blank line,
    which is read as a point with neither labels nor features: ``buf`` ends where the
    points end (the caller cuts off the blank lines at the end that are no points).

    Returns (code, line_index, nnz, n_label_entries, first_blank): ``line_index`` is the
    0-based data line where the error was found (the header is not counted),
    ``first_blank`` the first blank data line read as a point (-1: none).
    """
    end = buf.shape[0]
    nnz = 0
    nl = 0
    line = 0
    first_blank = -1
    indptr[0] = 0
    label_indptr[0] = 0
    while pos < end:
        # find this line's end
        eol = pos
        while eol < end and buf[eol] != LF:
            eol += 1
        blank = True
        for q in range(pos, eol):
            if not _is_ws(buf[q]):
                blank = False
                break
        if line >= n_points:
            return E_TOO_MANY_LINES, line, nnz, nl, first_blank
        if blank and first_blank < 0:
            first_blank = line
        p = pos
        # label list: first token, unless the line starts with whitespace
        if p < eol and not _is_ws(buf[p]):
            while True:
                if p >= eol or not _is_digit(buf[p]):
                    return E_LABEL_SYNTAX, line, nnz, nl, first_blank
                v = 0
                too_big = False     # reported only once the token is known to be a label
                while p < eol and _is_digit(buf[p]):
                    if not too_big:
                        v = v * 10 + (buf[p] - 48)
                        too_big = v > 2147483647
                    p += 1
                if p < eol and buf[p] == COLON:
                    if nl > label_indptr[line]:
                        return E_LABEL_SYNTAX, line, nnz, nl, first_blank
                    p = pos     # the first token is 'f:v': a point without a label list
                    break
                if too_big or v >= n_labels:
                    return E_LABEL_RANGE, line, nnz, nl, first_blank
                labels[nl] = v
                nl += 1
                if p < eol and buf[p] == COMMA:
                    p += 1
                    continue
                if p < eol and not _is_ws(buf[p]):
                    return E_LABEL_SYNTAX, line, nnz, nl, first_blank
                break
        if nl == label_indptr[line] and not allow_empty:
            return E_EMPTY_LABELS, line, nnz, nl, first_blank
        # features
        while True:
            while p < eol and _is_ws(buf[p]):
                p += 1
            if p >= eol:
                break
            tok = p
            while tok < eol and not _is_ws(buf[tok]) and buf[tok] != COLON:
                tok += 1
            if tok >= eol or buf[tok] != COLON:
                return E_MISSING_COLON, line, nnz, nl, first_blank
            if tok == p:
                return E_FEATURE_SYNTAX, line, nnz, nl, first_blank
            f = 0
            for q in range(p, tok):
                if not _is_digit(buf[q]):
                    return E_FEATURE_SYNTAX, line, nnz, nl, first_blank
                f = f * 10 + (buf[q] - 48)
                if f > 2147483647:
                    return E_FEATURE_RANGE, line, nnz, nl, first_blank
            if f >= n_features:
                return E_FEATURE_RANGE, line, nnz, nl, first_blank
            val, q, ok = _parse_float(buf, tok + 1, eol)
            if not ok or (q < eol and not _is_ws(buf[q])):
                return E_VALUE_SYNTAX, line, nnz, nl, first_blank
            indices[nnz] = f
            values[nnz] = val
            nnz += 1
            p = q
        line += 1
        indptr[line] = nnz
        label_indptr[line] = nl
        pos = eol + 1
    if line < n_points:
        return E_TOO_FEW_LINES, line, nnz, nl, first_blank
    return OK, line, nnz, nl, first_blank


@njit(cache=True)
def merge_repeated_rows(indptr, indices, values, width):
    """Merge each CSR row's repeated indices in place: the first entry of an index keeps its
    place (the row's order is kept) and, when ``values`` is not empty, takes the sum of the
    values of its repeats. ``width`` > every index. One pass with one array: where each
    index's entry went, which is in the current row when it is at or after the row's first
    kept entry. Returns (entries kept, rows that had a repeat); ``indptr``,
    ``indices[:kept]`` and ``values[:kept]`` hold the result."""
    where = np.full(max(width, 1), -1, np.int64)
    with_values = values.shape[0] > 0
    n = indptr.shape[0] - 1
    kept = 0
    repeated = 0
    start = indptr[0]
    for i in range(n):
        stop = indptr[i + 1]
        first = kept
        had = False
        for q in range(start, stop):
            j = indices[q]
            if where[j] >= first:
                if with_values:
                    values[where[j]] += values[q]
                had = True
                continue
            where[j] = kept
            indices[kept] = j
            if with_values:
                values[kept] = values[q]
            kept += 1
        if had:
            repeated += 1
        start = stop
        indptr[i + 1] = kept
    return kept, repeated


@njit(cache=True)
def format_rows(indptr, indices, values, label_indptr, labels, out):
    """Write XC text lines (no header) into the byte buffer ``out``; return bytes used.

    Values are written with 9 significant digits in exponent notation, so a float32 reads
    back unchanged.
    """
    pos = 0
    n = indptr.shape[0] - 1
    tmp = np.empty(24, np.uint8)
    for i in range(n):
        for j in range(label_indptr[i], label_indptr[i + 1]):
            if j > label_indptr[i]:
                out[pos] = COMMA
                pos += 1
            pos = _write_int(out, pos, labels[j], tmp)
        for j in range(indptr[i], indptr[i + 1]):
            out[pos] = SPACE
            pos += 1
            pos = _write_int(out, pos, indices[j], tmp)
            out[pos] = COLON
            pos += 1
            pos = _write_float(out, pos, values[j], tmp)
        out[pos] = LF
        pos += 1
    return pos


@njit(cache=True)
def _write_int(out, pos, v, tmp):
    v = np.int64(v)
    if v < 0:
        out[pos] = MINUS
        pos += 1
        v = -v
    k = 0
    while True:
        tmp[k] = 48 + v % 10
        v //= 10
        k += 1
        if v == 0:
            break
    for q in range(k - 1, -1, -1):
        out[pos] = tmp[q]
        pos += 1
    return pos


@njit(cache=True)
def _write_float(out, pos, x, tmp):
    """Write ``x`` as d.dddddddde±XX: 9 significant digits, which read back as the same float32."""
    x = np.float64(x)
    if x == 0.0:
        out[pos] = 48
        return pos + 1
    if x < 0:
        out[pos] = MINUS
        pos += 1
        x = -x
    e = int(np.floor(np.log10(x)))
    m = int(np.round(x / 10.0 ** e * 1e8))
    if m >= 1000000000:
        m //= 10
        e += 1
    # m has 9 digits: d.dddddddd
    for q in range(8, -1, -1):
        tmp[q] = 48 + m % 10
        m //= 10
    out[pos] = tmp[0]
    out[pos + 1] = DOT
    pos += 2
    for q in range(1, 9):
        out[pos] = tmp[q]
        pos += 1
    out[pos] = 101
    pos += 1
    if e < 0:
        out[pos] = MINUS
        e = -e
    else:
        out[pos] = PLUS
    pos += 1
    out[pos] = 48 + (e // 10) % 10
    out[pos + 1] = 48 + e % 10
    return pos + 2
