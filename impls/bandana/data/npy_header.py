"""A user's ``.npy`` header checked against the file's size before anything is loaded: a
header that claims more data than the file holds (a truncated copy, a hand-edited or foreign
header) is named as such, rather than read as a request for that much memory."""
from __future__ import annotations

import math
import os

import numpy as np

_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def claims_beyond_file(path: str | os.PathLike) -> str | None:
    """Why the ``.npy`` header of ``path`` cannot describe the file (its shape times its
    item size, in bytes, is more than the bytes after the header), in words; None where it
    can, and where the header itself cannot be read or is not of a plain array (``np.load``
    then says what is wrong: a pickle, a version-3 header, no magic string)."""
    try:
        with open(path, "rb") as handle:
            read = _READERS.get(np.lib.format.read_magic(handle))
            if read is None:
                return None
            shape, _, dtype = read(handle)
            held = os.fstat(handle.fileno()).st_size - handle.tell()
    except (OSError, ValueError, EOFError):
        return None
    if dtype.hasobject:
        return None
    claimed = math.prod(int(n) for n in shape) * dtype.itemsize
    if claimed <= held:
        return None
    return (f"its header claims shape {tuple(int(n) for n in shape)} of {dtype} ({claimed:,} bytes) but the file "
            f"holds {held:,} bytes after the header: a truncated file, or a header that does not describe it")
