"""numba kernel of :mod:`impls.bandana.data.dense_ids`: each id's rank among the distinct ids."""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def _ranks(sorted_unique, ids, out):  # pragma: no cover - compiled
    """out[i] = the position of ids[i] in sorted_unique (present by construction)."""
    for i in prange(ids.size):
        out[i] = np.searchsorted(sorted_unique, ids[i])
