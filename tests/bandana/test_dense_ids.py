"""dense_ids.renumber: numpy's unique-with-inverse arrays, for every integer dtype."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from impls.bandana.data.dense_ids import renumber

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(
    lambda dt: hnp.arrays(dt, st.integers(0, 300), elements=hnp.from_dtype(np.dtype(dt)))))
def test_matches_numpys_unique_with_inverse(ids):
    dense, original = renumber(ids)
    want_original, want_dense = np.unique(ids, return_inverse=True)
    assert dense.dtype == np.int64 and original.dtype == ids.dtype
    np.testing.assert_array_equal(original, want_original)
    np.testing.assert_array_equal(dense, want_dense.reshape(-1))
    np.testing.assert_array_equal(original[dense], ids)


def test_hashed_ids_past_signed_range_keep_their_order():
    ids = np.array([2**64 - 1, 5, 2**63, 5, 2**64 - 1], dtype=np.uint64)
    dense, original = renumber(ids)
    assert dense.tolist() == [2, 0, 1, 0, 2]
    assert original.tolist() == [5, 2**63, 2**64 - 1]


def test_reads_any_shape_flat_and_refuses_floats():
    dense, original = renumber(np.array([[9, -3], [9, 4]]))
    assert dense.tolist() == [2, 0, 2, 1] and original.tolist() == [-3, 4, 9]
    with pytest.raises(TypeError, match="integers"):
        renumber(np.array([1.0, 2.0]))


def test_ids_in_the_other_byte_order_are_read_as_numbers():
    """A '>i8' array (a file written on a big-endian machine, or by a tool that says so)."""
    ids = np.array([300, -7, 300, 2**40], dtype=">i8")
    dense, original = renumber(ids)
    assert dense.tolist() == [1, 0, 1, 2] and original.tolist() == [-7, 300, 2**40]
    assert original.dtype == ids.dtype
