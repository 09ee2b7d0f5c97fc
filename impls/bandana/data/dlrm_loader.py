"""Read one embedding table's lookups from FBGEMM's ``dlrm_datasets`` files.

Meta's public DLRM embedding-lookup traces (``fbgemm_t856_bs65536*.pt``, optionally
gzip-compressed as ``.pt.gz``) are ``torch.save``d tuples, read by FBGEMM's
split-table-batched-embeddings benchmark as::

    indices, offsets, lengths = torch.load(f)

* ``lengths`` — shape ``(T, B)``: the pooling factor (bag size) of every table ``t``
  and batch sample ``b``;
* ``offsets`` — flat CSR offsets over the ``T·B`` bags, table-major: bag ``(t, b)`` is
  ``indices[offsets[t·B + b] : offsets[t·B + b + 1]]``, so ``len(offsets) == T·B + 1``;
* ``indices`` — 1-D int64, every bag's row ids (ids are per table: each table has its
  own rows ``0..rows_t − 1``).

One table's ``B`` bags become ``B`` queries of a Bandana trace (in batch order). The
ids are kept as they are (``num_vectors = max id + 1``, rows never looked up stay in
the table), or with ``renumber=True`` mapped densely onto ``0..U−1`` in increasing
order of original id (``original_ids[new] = old``), which drops rows never looked up.
"""
from __future__ import annotations

import gzip
import io
import os
import pickle
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from impls.bandana.data.dense_ids import renumber as renumber_ids
from impls.bandana.data.traces import negative_id_hint, validate_trace


class DlrmFormatError(ValueError):
    """The file is not in the dlrm_datasets ``(indices, offsets, lengths)`` layout."""


def _open_payload(path: Path) -> Any:
    import torch

    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        # torch.load seeks around a GzipFile, which decompresses again from the start at each
        # backward seek (6x slower on an 800 MB file): decompress once into memory instead
        try:
            handle = io.BytesIO(gzip.decompress(raw.read())) if gzipped else raw
        except (OSError, EOFError, zlib.error) as err:
            raise DlrmFormatError(f"{path}: a damaged gzip file ({err})") from None
        if not gzipped and path.stat().st_size == 0:
            raise DlrmFormatError(f"{path}: the file is empty; expected a torch.save'd (indices, offsets, "
                                  "lengths) tuple of integer tensors")
        try:
            return torch.load(handle, map_location="cpu", weights_only=True)
        except Exception as err:  # torch raises several types for a bad file
            raise DlrmFormatError(f"{path}: {_load_failure(err)}; expected a torch.save'd (indices, offsets, "
                                  "lengths) tuple of integer tensors") from err


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _load_failure(err: Exception) -> str:
    """What ``torch.load``'s ``err`` says of the file, in one line without terminal escapes:
    objects other than tensors (numpy arrays; torch's advice to allow them does not apply to
    a trace), bytes torch.save did not write, or torch's own first line."""
    text = _ANSI.sub("", str(err))
    first = (text.strip().splitlines() or [""])[0]
    foreign = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
    if foreign:
        return (f"it holds objects other than tensors ({foreign.group(1)}; numpy arrays? save torch tensors, "
                "e.g. torch.from_numpy)")
    if (isinstance(err, (pickle.UnpicklingError, IndexError, EOFError, KeyError))   # KeyError: a stray opcode
            or re.search(r"weights[ _]only", first, re.I)):
        return "it is not a file torch.save wrote"
    return f"torch.load failed ({type(err).__name__}: {first})"


def _as_numpy(value: Any, name: str, path: Path) -> np.ndarray:
    if hasattr(value, "numpy"):
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.integer):
        raise DlrmFormatError(f"{path}: {name} must hold integers, got dtype {array.dtype}")
    return array


def read_dlrm_file(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(indices, offsets, lengths)`` of a dlrm_datasets file as int64 numpy arrays, checked."""
    path = Path(path)
    payload = _open_payload(path)
    if not isinstance(payload, (tuple, list)) or len(payload) != 3:
        kind = type(payload).__name__
        if isinstance(payload, (tuple, list)):
            kind += f" of length {len(payload)}"
        raise DlrmFormatError(f"{path}: expected a tuple (indices, offsets, lengths), got a {kind}")
    indices, offsets, lengths = (_as_numpy(v, n, path).astype(np.int64, copy=False)
                                 for v, n in zip(payload, ("indices", "offsets", "lengths")))
    if indices.ndim != 1 or offsets.ndim != 1:
        raise DlrmFormatError(f"{path}: indices and offsets must be 1-D, got shapes "
                              f"{indices.shape} and {offsets.shape}")
    if lengths.ndim != 2:
        raise DlrmFormatError(f"{path}: lengths must have shape (tables, batch), got {lengths.shape}")
    tables, batch = lengths.shape
    if offsets.size != tables * batch + 1:
        raise DlrmFormatError(f"{path}: offsets has {offsets.size} entries, expected tables·batch + 1 = "
                              f"{tables}·{batch} + 1 = {tables * batch + 1}")
    if offsets[0] != 0 or offsets[-1] != indices.size:
        raise DlrmFormatError(f"{path}: offsets must run from 0 to len(indices) = {indices.size}, "
                              f"got {int(offsets[0])} … {int(offsets[-1])}")
    if not np.array_equal(np.diff(offsets), lengths.reshape(-1)):
        bag = int(np.flatnonzero(np.diff(offsets) != lengths.reshape(-1))[0])
        raise DlrmFormatError(f"{path}: offsets disagree with lengths at bag {bag} "
                              f"(table {bag // batch}, sample {bag % batch})")
    return indices, offsets, lengths


def load_dlrm_table(path: str | os.PathLike, table: int, *, renumber: bool = False) -> dict[str, Any]:
    """Return table ``table`` of a dlrm_datasets file as a Bandana trace.

    Returns ``{"offsets": int64[B+1], "indices": int64[...], "num_vectors": int}``,
    plus ``"original_ids"`` (int64[U]) when ``renumber`` is true.
    """
    path = Path(path)
    indices, offsets, lengths = read_dlrm_file(path)
    tables, batch = lengths.shape
    if not 0 <= int(table) < tables:
        have = f"{tables} tables (0..{tables - 1})" if tables else "no tables"
        raise IndexError(f"{path}: table {table} out of range; the file has {have}")
    t = int(table)
    bags = offsets[t * batch:(t + 1) * batch + 1]
    ids = indices[bags[0]:bags[-1]].copy()
    bags = bags - bags[0]
    if ids.size and ids.min() < 0 and not renumber:   # signed hashes are fine to renumber
        bad = int(np.argmax(ids < 0))
        raise DlrmFormatError(f"{path}: table {t} has a negative id {int(ids[bad])} at lookup {bad}"
                              f"{negative_id_hint(ids)}")
    result: dict[str, Any] = {"offsets": bags}
    if renumber:
        dense, original = renumber_ids(ids)
        result["indices"] = dense
        result["num_vectors"] = int(original.size)
        result["original_ids"] = original.astype(np.int64)
    else:
        result["indices"] = ids
        result["num_vectors"] = int(ids.max()) + 1 if ids.size else 0
    validate_trace(result["offsets"], result["indices"], result["num_vectors"], name=f"{path} table {t}")
    return result
