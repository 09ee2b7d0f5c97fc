"""Counter-based random numbers for numba kernels (splitmix64): a stream per (seed, item),
so results never depend on which thread ran which item."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def mix64(z):
    z = np.uint64(z)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def next_u64(state):
    """Advance ``state``; return (new_state, 64 random bits)."""
    state = np.uint64(state) + np.uint64(0x9E3779B97F4A7C15)
    return state, mix64(state)


@njit(cache=True, inline="always")
def uniform(state):
    """Return (new_state, u) with u uniform in [0, 1)."""
    state, r = next_u64(state)
    return state, (r >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, inline="always")
def below(state, n):
    """Return (new_state, k) with k uniform in [0, n)."""
    state, r = next_u64(state)
    return state, np.int64((r >> np.uint64(1)) % np.uint64(n))


@njit(cache=True, inline="always")
def stream(seed, item):
    """Return the initial state of the stream for (seed, item)."""
    return mix64(np.uint64(seed) * np.uint64(0x100000001B3) + np.uint64(item) + np.uint64(0x632BE59BD9B4E019))
