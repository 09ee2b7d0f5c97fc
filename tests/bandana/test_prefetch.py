"""The software-prefetch intrinsic: compiles, changes nothing, rejects what it cannot address."""
import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from impls.bandana.sim.prefetch import prefetch


@njit
def _sum_with_prefetch(values, ahead):
    total = 0
    for i in range(values.shape[0]):
        prefetch(values, i + ahead)      # past the end near the last iterations: only a hint
        total += values[i]
    return total


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64, np.float64])
def test_prefetch_leaves_results_unchanged(dtype):
    values = np.arange(1000, dtype=dtype)
    assert _sum_with_prefetch(values, 16) == values.sum()
    assert _sum_with_prefetch(values, -1) == values.sum()


def test_prefetch_rejects_a_non_array():
    @njit
    def bad(x):
        prefetch(x, 0)

    with pytest.raises(TypingError):
        bad(3)
