"""Hashed or sparse embedding ids numbered densely, as a table of U rows.

:func:`renumber` gives the same arrays as ``np.unique(ids, return_inverse=True)`` at a
fraction of its memory: beside the input it holds one sorted copy while it finds the
distinct ids, then the int64 output (about 2× the input for int64 ids, where numpy's
inverse path peaks near 6×: it sorts an index array and scatters it back). A 10^9-lookup
trace of int64 ids then needs ~16 GB beside its own 8 GB, not ~47 GB.
"""
from __future__ import annotations

import numpy as np

from impls.bandana.data.dense_ids_kernels import _ranks


def renumber(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dense ids 0..U-1 in lookup order as int64, the input id of each dense id in the input's
    dtype, ascending): hashed or sparse ids as a table of U rows.

    ``ids`` is any integer array (read flat). Dense id ``d`` of a lookup is the rank of its
    input id among the distinct ids, so ``original[dense] == ids`` and the order of the ids
    is kept.
    """
    flat = np.ascontiguousarray(ids).reshape(-1)
    if not np.issubdtype(flat.dtype, np.integer):
        raise TypeError(f"ids must be integers, got dtype {flat.dtype}")
    original = np.unique(flat)
    dense = np.empty(flat.size, dtype=np.int64)
    if flat.size:
        native = flat.dtype.newbyteorder("=")     # the kernel reads native byte order ('>i8' files)
        _ranks(original.astype(native, copy=False), flat.astype(native, copy=False), dense)
    return dense, original
