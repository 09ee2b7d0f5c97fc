"""Bandana traces: synthetic generator, CSR helpers and validation, time split, dlrm loader."""
from __future__ import annotations

import gzip
import io

import numpy as np
import pytest

from impls.bandana.data import traces
from impls.bandana.data.dlrm_loader import DlrmFormatError, load_dlrm_table, read_dlrm_file
from impls.bandana.data.traces import TraceError, flatten, generate_trace, split_in_time, validate_trace
from impls.harness import registry

SMALL = dict(num_vectors=6000, num_lookups=60000, dim=8)


@pytest.fixture(scope="module")
def trace():
    return generate_trace(5, **SMALL)


def test_same_seed_same_arrays_other_seed_differs(trace):
    again = generate_trace(5, **SMALL)
    assert trace.keys() == again.keys()
    for key in trace:
        np.testing.assert_array_equal(trace[key], again[key])
    other = generate_trace(6, **SMALL)
    assert not np.array_equal(other["indices"], trace["indices"])


def test_shapes_dtypes_and_ranges(trace):
    offsets, indices = trace["offsets"], trace["indices"]
    assert offsets.dtype == np.int64 and indices.dtype == np.int64
    assert offsets[0] == 0 and offsets[-1] == indices.size == SMALL["num_lookups"]
    assert np.all(np.diff(offsets) >= 1)
    assert indices.min() >= 0 and indices.max() < SMALL["num_vectors"]
    assert trace["vectors"].shape == (SMALL["num_vectors"], SMALL["dim"])
    assert trace["vectors"].dtype == np.float32
    assert trace["community"].shape == (SMALL["num_vectors"],)
    assert trace["popularity"].sum() == pytest.approx(1.0)
    validate_trace(offsets, indices, SMALL["num_vectors"])


def test_vectors_can_be_left_out_without_changing_the_trace(trace):
    bare = generate_trace(5, **SMALL, with_vectors=False)
    assert "vectors" not in bare
    np.testing.assert_array_equal(bare["indices"], trace["indices"])
    np.testing.assert_array_equal(bare["offsets"], trace["offsets"])


def test_query_sizes_follow_the_mean():
    t = generate_trace(1, num_vectors=5000, num_lookups=100000, mean_query_size=30, with_vectors=False)
    assert np.diff(t["offsets"]).mean() == pytest.approx(30, rel=0.1)
    t = generate_trace(1, num_vectors=5000, num_lookups=100000, mean_query_size=12,
                       query_size_dist="poisson", with_vectors=False)
    assert np.diff(t["offsets"]).mean() == pytest.approx(12, rel=0.1)


def test_popularity_is_skewed(trace):
    counts = np.sort(np.bincount(trace["indices"], minlength=SMALL["num_vectors"]))[::-1]
    top_share = counts[: SMALL["num_vectors"] // 100].sum() / counts.sum()
    assert top_share > 0.15  # 15x the 1% a uniform table would give


def test_queries_concentrate_in_few_communities(trace):
    offsets, indices, community = trace["offsets"], trace["indices"], trace["community"]
    shuffled = np.random.default_rng(0).permutation(indices)  # same popularity, no co-access

    def mean_communities(ids):
        return np.mean([np.unique(community[ids[a:b]]).size for a, b in zip(offsets[:-1], offsets[1:])])

    planted, chance = mean_communities(indices), mean_communities(shuffled)
    assert planted < 0.6 * chance


def test_a_query_reads_about_as_many_communities_as_it_draws():
    """``1 + Poisson(communities_per_query - 1)`` communities a query, each lookup from one of
    them: a query of 10 lookups or more reads nearly all it drew (popular communities drawn
    twice lose a little), so about ``communities_per_query``; the one-sided test above passes
    a generator that reads fewer."""
    t = generate_trace(0, num_vectors=20000, num_lookups=100000, communities_per_query=2.0, global_fraction=0.0,
                       with_vectors=False)
    o, i, c = t["offsets"], t["indices"], t["community"]
    read = [np.unique(c[i[a:b]]).size for a, b in zip(o[:-1], o[1:]) if b - a >= 10]
    assert np.mean(read) == pytest.approx(2.0, abs=0.15)     # the draws' own mean varies by ~0.02


def test_communities_are_about_community_size_on_average():
    """Log-normal sizes around ``community_size``: their mean is it (the -sigma^2/2 in the
    log-mean), not e^(sigma^2/2) times it."""
    t = generate_trace(0, num_vectors=20000, num_lookups=20000, community_size=64, with_vectors=False)
    assert np.bincount(t["community"]).mean() == pytest.approx(64, rel=0.1)


def _community_share(t, lo, hi):
    ids = t["indices"][int(lo * t["indices"].size):int(hi * t["indices"].size)]
    share = np.bincount(t["community"][ids], minlength=t["community"].max() + 1)
    return share / share.sum()


def test_community_popularity_drifts():
    kwargs = dict(num_vectors=6000, num_lookups=200000, with_vectors=False)
    drifting = generate_trace(3, drift=2.0, **kwargs)
    steady = generate_trace(3, drift=0.0, **kwargs)

    def tv(t):
        return 0.5 * np.abs(_community_share(t, 0, 0.25) - _community_share(t, 0.75, 1)).sum()

    assert tv(drifting) > 0.15
    assert tv(drifting) > 2 * tv(steady)


def test_low_noise_values_track_communities():
    t = generate_trace(2, num_vectors=3000, num_lookups=3000, dim=16, noise=0.1)
    x, c = t["vectors"], t["community"]
    same = c[:-1] == c[1:]
    order = np.argsort(c, kind="stable")
    xs, cs = x[order], c[order]
    near = np.linalg.norm(xs[1:] - xs[:-1], axis=1)
    assert near[cs[1:] == cs[:-1]].mean() < 0.2 * near[cs[1:] != cs[:-1]].mean()
    assert same.mean() < 0.2  # ids are not grouped by community


@pytest.mark.parametrize("offsets, indices, message", [
    ([1, 2], [0, 1], "offsets\\[0\\] is 1"),
    ([0, 2, 1, 3], [0, 1, 2], "non-decreasing"),
    ([0, 2], [0, 1, 2], "offsets\\[-1\\] is 2, expected len\\(indices\\) = 3"),
    ([0, 2], [0, 10], "indices\\[1\\] = 10 is outside \\[0, 10\\)"),
    ([0, 2], [-1, 3], "indices\\[0\\] = -1"),
    ([], [], "offsets is empty"),
    ([[0, 1]], [0], "offsets must be 1-D"),
    ([0, 1], [0.5], "must hold integers"),
])
def test_validation_errors_say_what_is_wrong(offsets, indices, message):
    with pytest.raises(TraceError, match=message):
        validate_trace(np.array(offsets), np.array(indices), 10)


def test_flatten_is_lookup_order(trace):
    flat = flatten(trace["offsets"], trace["indices"], SMALL["num_vectors"])
    assert flat.dtype == np.int64 and flat.flags.c_contiguous
    np.testing.assert_array_equal(flat, trace["indices"])
    with pytest.raises(TraceError):
        flatten([0, 1], [7], 5)


def test_split_in_time_boundaries():
    offsets = np.array([0, 2, 5, 6, 9, 10])
    indices = np.arange(10)
    (tr_off, tr_idx), (te_off, te_idx) = split_in_time(offsets, indices, 0.5)
    np.testing.assert_array_equal(tr_off, [0, 2, 5])  # floor(5 * 0.5) = 2 queries
    np.testing.assert_array_equal(tr_idx, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(te_off, [0, 1, 4, 5])
    np.testing.assert_array_equal(te_idx, [5, 6, 7, 8, 9])
    (a_off, a_idx), (b_off, b_idx) = split_in_time(offsets, indices, 0.0)
    assert a_off.tolist() == [0] and a_idx.size == 0 and b_off.tolist() == offsets.tolist()
    (a_off, a_idx), (b_off, b_idx) = split_in_time(offsets, indices, 1.0)
    assert a_idx.size == 10 and b_off.tolist() == [0] and b_idx.size == 0
    with pytest.raises(ValueError, match="train_fraction"):
        split_in_time(offsets, indices, 1.5)


def test_split_pieces_reassemble(trace):
    (tr_off, tr_idx), (te_off, te_idx) = split_in_time(trace["offsets"], trace["indices"], 0.8)
    validate_trace(tr_off, tr_idx)
    validate_trace(te_off, te_idx)
    np.testing.assert_array_equal(np.concatenate([tr_idx, te_idx]), trace["indices"])
    np.testing.assert_array_equal(np.concatenate([tr_off[:-1], te_off + tr_off[-1]]), trace["offsets"])
    assert tr_off.size - 1 == int(0.8 * (trace["offsets"].size - 1))


def test_recipes_load_at_smoke_size_and_differ_as_designed():
    user = registry.load("bandana-user", "smoke")
    post = registry.load("bandana-post", "smoke")
    for ds in (user, post):
        n = ds.params["num_vectors"]
        validate_trace(ds["offsets"], ds["indices"], n)
        assert ds["vectors"].shape == (n, 32) and ds["vectors"].dtype == np.float32
    assert np.diff(user["offsets"]).mean() > np.diff(post["offsets"]).mean()

    def top_share(ds):
        counts = np.sort(np.bincount(ds["indices"]))[::-1]
        return counts[: ds.params["num_vectors"] // 100].sum() / counts.sum()

    assert top_share(post) > top_share(user)


# ----------------------------------------------------------------------------- dlrm loader

def _write_dlrm(path, lengths, rng, gz=False, rows=50):
    torch = pytest.importorskip("torch")
    lengths = torch.as_tensor(lengths, dtype=torch.int64)
    offsets = torch.zeros(lengths.numel() + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths.reshape(-1), 0)
    indices = torch.as_tensor(rng.integers(0, rows, int(offsets[-1])), dtype=torch.int64)
    buffer = io.BytesIO()
    torch.save((indices, offsets, lengths), buffer)
    path.write_bytes(gzip.compress(buffer.getvalue()) if gz else buffer.getvalue())
    return indices.numpy(), offsets.numpy()


@pytest.mark.parametrize("gz", [False, True])
def test_dlrm_table_selection(tmp_path, gz):
    lengths = [[1, 2, 0, 3], [2, 2, 1, 1], [0, 0, 4, 1]]  # T = 3 tables, B = 4 samples
    path = tmp_path / ("fbgemm_t3_bs4.pt" + (".gz" if gz else ""))
    indices, offsets = _write_dlrm(path, lengths, np.random.default_rng(0), gz=gz)
    table = load_dlrm_table(path, 1)
    np.testing.assert_array_equal(table["offsets"], [0, 2, 4, 5, 6])
    np.testing.assert_array_equal(table["indices"], indices[offsets[4]:offsets[8]])
    assert table["num_vectors"] == int(table["indices"].max()) + 1
    last = load_dlrm_table(path, 2)
    np.testing.assert_array_equal(last["offsets"], [0, 0, 0, 4, 5])
    np.testing.assert_array_equal(last["indices"], indices[offsets[8]:])


def test_dlrm_renumber_is_dense_and_reversible(tmp_path):
    path = tmp_path / "t.pt"
    _write_dlrm(path, [[3, 3], [2, 5]], np.random.default_rng(1), rows=1000)
    raw = load_dlrm_table(path, 1)
    dense = load_dlrm_table(path, 1, renumber=True)
    np.testing.assert_array_equal(dense["offsets"], raw["offsets"])
    np.testing.assert_array_equal(dense["original_ids"][dense["indices"]], raw["indices"])
    assert dense["num_vectors"] == np.unique(raw["indices"]).size
    assert np.all(np.diff(dense["original_ids"]) > 0)


def test_dlrm_errors_name_the_file(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "t.pt"
    _write_dlrm(path, [[1, 1], [1, 1]], np.random.default_rng(2))
    with pytest.raises(IndexError, match="2 tables"):
        load_dlrm_table(path, 2)
    bad = tmp_path / "bad.pt"
    torch.save((torch.arange(4), torch.tensor([0, 1, 2, 4]), torch.tensor([[1, 1], [1, 1]])), bad)
    with pytest.raises(DlrmFormatError, match=r"bad\.pt: offsets has 4 entries, expected"):
        read_dlrm_file(bad)
    mismatch = tmp_path / "mismatch.pt"
    torch.save((torch.arange(4), torch.tensor([0, 2, 2, 3, 4]), torch.tensor([[1, 1], [1, 1]])), mismatch)
    with pytest.raises(DlrmFormatError, match="disagree with lengths at bag 0"):
        read_dlrm_file(mismatch)
    two = tmp_path / "two.pt"
    torch.save((torch.arange(4), torch.tensor([0, 4])), two)
    with pytest.raises(DlrmFormatError, match="expected a tuple"):
        read_dlrm_file(two)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a torch file")
    with pytest.raises(DlrmFormatError, match="junk.pt: it is not a file torch.save wrote"):
        read_dlrm_file(junk)
    stray = tmp_path / "stray.pt"          # text: torch.load raises KeyError(101) on its first byte
    stray.write_bytes(b"hello world" * 3)
    with pytest.raises(DlrmFormatError, match="stray.pt: it is not a file torch.save wrote"):
        read_dlrm_file(stray)


def test_dlrm_file_of_numpy_arrays_or_empty_says_what_it_holds(tmp_path):
    torch = pytest.importorskip("torch")
    arrays = tmp_path / "arrays.pt"
    torch.save((np.arange(16) % 5, np.arange(17), np.ones((2, 8), np.int64)), arrays)
    with pytest.raises(DlrmFormatError) as err:
        read_dlrm_file(arrays)
    message = str(err.value)
    assert "objects other than tensors" in message and "numpy" in message
    assert "\x1b" not in message and "\n" not in message and "trust" not in message   # no torch advice, no escapes
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(DlrmFormatError, match="empty.pt: the file is empty"):
        read_dlrm_file(empty)


def test_stream_purposes_are_independent():
    a = traces.stream(1, "layout/random").permutation(1000)
    b = traces.stream(1, "trace/communities").permutation(1000)
    assert abs(np.corrcoef(np.argsort(a), np.argsort(b))[0, 1]) < 0.1


@pytest.mark.parametrize("offsets, indices, said", [
    ([2, 1, 3], np.arange(6), "(they sum to len(indices) = 6: bag lengths? offsets are np.concatenate"),
    ([0, 2, 3], np.arange(6), "(torch EmbeddingBag's offsets leave the last out: append 6)"),
    ([0, 2, 6], np.array([1.0, 2, 3, np.nan, 5, 6]), "holding NaN at [3] (pandas makes an integer column"),
    ([0, 2, 6], np.array([1.0, 2, 3, 4, 5, 6]), "whose values are all whole numbers (.astype(np.int64) them)"),
])
def test_common_mixups_are_named(offsets, indices, said):
    """Bag lengths for offsets, EmbeddingBag's offsets without the total, float ids from pandas."""
    with pytest.raises(TraceError) as err:
        validate_trace(np.asarray(offsets), indices)
    assert said in str(err.value)


def test_other_wrong_offsets_get_no_hint():
    with pytest.raises(TraceError) as err:
        validate_trace(np.array([1, 2, 9]), np.arange(6))
    assert str(err.value) == "trace: offsets[0] is 1, expected 0"
    with pytest.raises(TraceError) as err:
        validate_trace(np.array([0, 2, 9]), np.arange(6))
    assert str(err.value) == "trace: offsets[-1] is 9, expected len(indices) = 6"
    with pytest.raises(TraceError) as err:
        validate_trace(np.array([0, 6]), np.array([0.5, 1, 2, 3, 4, 5]))
    assert str(err.value) == "trace: indices must hold integers, got dtype float64"
