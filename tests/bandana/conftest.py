"""Fixtures of the replay tests."""
from __future__ import annotations

import numpy as np
import pytest

from impls.bandana.nvm import block_store as bs
from impls.bandana.sim import cache

N = 4000          # vectors of the replay tests' table
PER_QUERY = 5     # lookups a query of their trace


@pytest.fixture
def stored(store_dir):
    """A 4000-vector table in a random layout, a Zipf trace in queries of 5, the open store."""
    table = bs.random_table(N, 128, 7)
    layout = np.random.default_rng(2).permutation(N)
    path = store_dir / "r.store"
    bs.write_store(path, table, layout)
    trace = cache.zipf_trace(N, 6000, 0.9, PER_QUERY)
    offsets = np.arange(0, trace.size + 1, PER_QUERY, dtype=np.int64)
    with bs.open_store(path, layout) as store:
        yield store, table, layout, offsets, trace
