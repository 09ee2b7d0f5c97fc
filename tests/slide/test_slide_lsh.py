"""LSH families: collision probabilities against theory; tables and schedules."""
from __future__ import annotations

from math import comb

import numpy as np
import pytest

from impls.slide.core import lsh_kernels as K
from impls.slide.core.lsh import make_lsh
from impls.slide.core.tables import HashTables, Schedule, auto_range_pow


def pair(rng, dim, rho):
    x = rng.standard_normal(dim)
    y = rho * x + np.sqrt(1 - rho ** 2) * rng.standard_normal(dim)
    return x.astype(np.float32), y.astype(np.float32)


def lsh_of(family, *args, **kw):
    """make_lsh, where "dwta-absent" is DWTA reading zeros as missing (its own kernel path:
    with zeros present, DWTA runs WTA's kernel)."""
    if family == "dwta-absent":
        return make_lsh("dwta", *args, zeros="absent", **kw)
    return make_lsh(family, *args, **kw)


def collision_rate(lsh, x, y):
    codes = lsh.hash(np.stack([x, y]))
    return float(np.mean(codes[0] == codes[1]))


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_simhash_bit_collision_is_one_minus_angle_over_pi(rho):
    rng = np.random.default_rng(1)
    rates, theory = [], []
    for trial in range(20):
        x, y = pair(rng, 128, rho)
        lsh = make_lsh("simhash", 1, 500, 128, seed=trial, ratio=1 / 3)  # 500 one-bit tables
        rates.append(collision_rate(lsh, x, y))
        cos = x @ y / np.linalg.norm(x) / np.linalg.norm(y)
        theory.append(1 - np.arccos(np.clip(cos, -1, 1)) / np.pi)
    # 10,000 bits: binomial sd <= 0.005; sparse ±1 projections are close to Gaussian ones
    assert abs(np.mean(rates) - np.mean(theory)) < 0.025


def wta_theory(x, y, m):
    """P[argmax over a uniform random m-subset agrees] = Σ_i C(c_i, m-1) / C(n, m),
    c_i = #{j: x_j < x_i and y_j < y_i}."""
    n = x.size
    below = (x[None, :] < x[:, None]) & (y[None, :] < y[:, None])
    return sum(comb(int(c), m - 1) for c in below.sum(1)) / comb(n, m)


@pytest.mark.parametrize("family", ["wta", "dwta-absent"])
@pytest.mark.parametrize("rho,m", [(0.3, 8), (0.8, 8), (0.8, 4)])
def test_wta_collision_matches_rank_theory(family, rho, m):
    rng = np.random.default_rng(2)
    rates, theory = [], []
    for trial in range(10):
        x, y = pair(rng, 128, rho)  # dense: no zeros, so no bin is densified
        lsh = lsh_of(family, 1, 800, 128, seed=100 + trial, binsize=m)
        rates.append(collision_rate(lsh, x, y))
        theory.append(wta_theory(x, y, m))
    assert abs(np.mean(rates) - np.mean(theory)) < 0.03


def test_dwta_with_absent_zeros_densifies_sparse_vectors():
    rng = np.random.default_rng(3)
    x = np.zeros(128, np.float32)
    x[rng.choice(128, 6, replace=False)] = rng.random(6).astype(np.float32) + 0.1
    lsh = make_lsh("dwta", 4, 50, 128, seed=4, binsize=8, range_pow=30, zeros="absent")
    codes = lsh.hash(np.stack([x, x, 2 * x]))
    assert (codes[0] == codes[1]).all() and (codes[0] == codes[2]).all()  # rank-based, scale-free
    # every bin is filled: with 6 non-zeros most bins are empty before densification
    sc, xs, out = np.empty(200, np.int32), np.empty(128, np.int32), np.empty(50, np.int32)
    K.hash_dense(x, *lsh.kernel_args(), sc, xs, out)
    assert (sc >= 0).all() and (sc < 8).all()
    np.testing.assert_array_equal(out, codes[0])
    # similar sparse vectors collide more often than unrelated ones
    y = x.copy()
    y[np.flatnonzero(x)[0]] *= 0.5
    z = np.zeros(128, np.float32)
    z[rng.choice(128, 6, replace=False)] = 1 + rng.random(6).astype(np.float32)
    many = make_lsh("dwta", 1, 2000, 128, seed=5, binsize=8, zeros="absent")
    assert collision_rate(many, x, y) > collision_rate(many, x, z) + 0.2


def _reference_dwta_easy(lsh, x: np.ndarray) -> np.ndarray:
    """DensifiedWtaHash::getHashEasy of the reference code on dense ``x`` over this LSH's bins
    (``idx[h, j]``: the coordinate at position j of hash h's bin): every coordinate is a value
    (> INT_MIN), the first coordinate in index order with the largest value wins, the hash is
    its position; a bin is never empty, so nothing is densified."""
    out = np.empty(lsh.idx.shape[0], np.int32)
    for h, bin_ in enumerate(lsh.idx):
        best, val = None, -np.inf
        for d in sorted(bin_.tolist()):
            if x[d] > val:
                best, val = d, x[d]
        out[h] = int(np.flatnonzero(bin_ == best)[0])
    return out


def test_dwta_with_present_zeros_hashes_relu_vectors_as_the_reference_code():
    rng = np.random.default_rng(21)
    lsh = make_lsh("dwta", 6, 20, 128, seed=22, binsize=8, index="reference")        # the default zeros
    assert lsh.zeros == "present"
    X = np.maximum(rng.standard_normal((40, 128)) - 0.85, 0).astype(np.float32)     # ReLU: ~80% zero
    got = lsh.hash_values(X)
    for x, values in zip(X, got):
        want = _reference_dwta_easy(lsh, x)
        all_zero = (x[lsh.idx] == 0).all(axis=1)
        assert all_zero.any() and not all_zero.all()
        # a bin with a positive coordinate: exactly the reference's winner
        np.testing.assert_array_equal(values[~all_zero], want[~all_zero])
        # an all-zero bin is not densified from another bin: a fixed position (ours the bin's first;
        # the reference's that of its lowest coordinate), whatever the rest of the vector holds
        np.testing.assert_array_equal(values[all_zero], 0)
    # the codes (bulk path, as the weights are hashed) are LSH.cpp's sum of these values
    assert lsh.range_pow == lsh.raw_bits                                             # nothing folded
    shifts = lsh.shift * np.arange(lsh.K - 1, -1, -1)
    np.testing.assert_array_equal((got.reshape(40, lsh.L, lsh.K).astype(np.int64) << shifts).sum(axis=2),
                                  lsh.hash(X))
    absent = make_lsh("dwta", 6, 20, 128, seed=22, binsize=8, index="reference", zeros="absent")
    assert (absent.hash_values(X) != got).any()                                      # densified bins differ
    with pytest.raises(ValueError, match="DWTA zeros"):
        make_lsh("dwta", 6, 20, 128, seed=22, zeros="missing")


@pytest.mark.parametrize("family", ["simhash", "wta", "dwta", "dwta-absent"])
def test_single_vector_and_block_kernels_agree(family):
    """Also on a dead ReLU layer (every unit 0) and one of 3 units, where a SimHash
    projection is exactly 0: training's queries and the tables must hash it alike."""
    rng = np.random.default_rng(6)
    X = np.maximum(rng.standard_normal((300, 128)), 0).astype(np.float32)
    X[1] = 0.0
    X[2] = 0.0
    X[2, :3] = 1.0
    lsh = lsh_of(family, 6, 20, 128, seed=7, range_pow=12)
    codes = lsh.hash(X)
    sc, xs, out = np.empty(120, np.int32), np.empty(128, np.int32), np.empty(20, np.int32)
    for i in (0, 1, 2, 63, 64, 299):
        K.hash_dense(X[i], *lsh.kernel_args(), sc, xs, out)
        np.testing.assert_array_equal(out, codes[i])
    assert codes.min() >= 0 and codes.max() < 2 ** 12
    if family == "simhash":     # a projection of 0 is the sign bit 1 (s >= 0): every bit set, folded
        np.testing.assert_array_equal(lsh.hash_values(X[1:2]), np.ones((1, 6 * 20), np.int64))


@pytest.mark.parametrize("family", ["simhash", "wta", "dwta", "dwta-absent"])
def test_hash_values_concatenate_to_the_codes(family):
    rng = np.random.default_rng(8)
    X = np.maximum(rng.standard_normal((40, 128)) - 0.8, 0).astype(np.float32)   # ~80% zeros
    lsh = lsh_of(family, 4, 10, 128, seed=9)                    # range_pow = K * bits: no folding
    values, codes = lsh.hash_values(X), lsh.hash(X)
    assert values.shape == (40, 40) and values.min() >= 0 and values.max() < 2 ** lsh.bits
    weights = 2 ** (lsh.bits * np.arange(lsh.K - 1, -1, -1))
    np.testing.assert_array_equal((values.reshape(40, lsh.L, lsh.K) * weights).sum(axis=2), codes)


@pytest.mark.parametrize("family,K,largest", [("dwta", 6, 9555), ("wta", 8, 152915), ("simhash", 9, 511)])
def test_reference_index_overlaps_hashes_as_lsh_cpp(family, K, largest):
    """LSH.cpp's hashesToIndex: index += h << ((K-1-j) * floor(log(binsize))) for (D)WTA (2-bit
    steps for 3-bit values at bins of 8, so codes carry), h << (K-1-j) for SimHash; unfolded."""
    rng = np.random.default_rng(10)
    X = np.maximum(rng.standard_normal((64, 128)), 0).astype(np.float32)
    lsh = make_lsh(family, K, 30, 128, seed=11, index="reference")
    values, codes = lsh.hash_values(X), lsh.hash(X)
    step = 1 if family == "simhash" else 2
    weights = 2 ** (step * np.arange(K - 1, -1, -1))
    np.testing.assert_array_equal((values.reshape(64, 30, K) * weights).sum(axis=2), codes)
    assert lsh.raw_bits == int(largest).bit_length() and lsh.range_pow == lsh.raw_bits   # nothing folded
    top = 2 ** lsh.bits - 1
    assert int((top * weights).sum()) == largest
    if family != "simhash":   # overlapping steps: different hash tuples share a code
        assert np.unique(codes).size < np.unique(values.reshape(-1, K), axis=0).shape[0]
        concat = make_lsh(family, K, 30, 128, seed=11)
        np.testing.assert_array_equal(concat.hash_values(X), values)   # same functions, other index
        assert concat.raw_bits == 3 * K


def test_reference_index_makes_coarser_buckets_than_concatenation():
    rng = np.random.default_rng(12)
    W = rng.standard_normal((20000, 128)).astype(np.float32)
    ref = make_lsh("dwta", 6, 4, 128, seed=13, index="reference")
    cat = make_lsh("dwta", 6, 4, 128, seed=13)
    used_ref = [np.unique(c).size for c in ref.hash_table_major(W)]
    used_cat = [np.unique(c).size for c in cat.hash_table_major(W)]
    assert min(used_cat) > 2 * max(used_ref)
    tables = HashTables.create(ref, W.shape[0], 128)
    tables.insert_all(W)
    tables.rebuild(W, seed=14)   # new functions, same way of indexing
    assert tables.lsh.index == "reference" and tables.lsh.raw_bits == ref.raw_bits
    assert tables.lsh.zeros == "present"
    absent = HashTables.create(make_lsh("dwta", 6, 4, 128, seed=13, zeros="absent"), W.shape[0], 128)
    absent.insert_all(W)
    absent.rebuild(W, seed=14)
    assert absent.lsh.zeros == "absent"
    assert not np.array_equal(tables.lsh.idx, ref.idx)
    with pytest.raises(ValueError, match="table index"):
        make_lsh("dwta", 6, 4, 128, seed=13, index="sum")
    with pytest.raises(ValueError, match="63 bits"):
        make_lsh("dwta", 22, 4, 128, seed=13)


@pytest.mark.parametrize("family", ["simhash", "dwta", "dwta-absent"])
def test_hash_into_rehashes_only_the_given_rows_in_place(family):
    rng = np.random.default_rng(9)
    X = np.maximum(rng.standard_normal((1000, 64)), 0).astype(np.float32)
    lsh = lsh_of(family, 4, 10, 64, seed=3, range_pow=10)
    codes = lsh.hash_table_major(X)
    X2 = X.copy()
    rows = np.sort(rng.choice(1000, 300, replace=False))   # not a multiple of the 64-row block
    X2[rows] = np.maximum(rng.standard_normal((300, 64)), 0)
    lsh.hash_into(X2, rows, codes)
    fresh = lsh.hash_table_major(X2)
    np.testing.assert_array_equal(codes[:, rows], fresh[:, rows])
    others = np.setdiff1d(np.arange(1000), rows)
    np.testing.assert_array_equal(codes[:, others], lsh.hash_table_major(X)[:, others])
    assert np.any(codes[:, rows] != lsh.hash_table_major(X)[:, rows])   # the rows did change
    with pytest.raises(ValueError):
        lsh.hash_into(X2, np.array([1000]), codes)


def test_tables_rehash_of_changed_rows_equals_a_full_insert():
    rng = np.random.default_rng(10)
    W = rng.standard_normal((3000, 32)).astype(np.float32)
    lsh = make_lsh("dwta", 4, 8, 32, seed=1, binsize=4, range_pow=auto_range_pow(3000))
    partial, full = HashTables.create(lsh, 3000), HashTables.create(lsh, 3000)
    partial.insert_all(W)
    changed = np.flatnonzero(rng.random(3000) < 0.3)
    W[changed] += rng.standard_normal((changed.size, 32)).astype(np.float32)
    partial.insert_all(W, changed=changed)
    full.insert_all(W)
    np.testing.assert_array_equal(partial.codes, full.codes)
    np.testing.assert_array_equal(partial.offsets, full.offsets)
    np.testing.assert_array_equal(partial.items, full.items)


def test_tables_fifo_keeps_the_last_inserted_and_reservoir_samples():
    lsh = make_lsh("simhash", 1, 2, 4, seed=0)
    codes = np.zeros((1000, 2), np.int32)  # everything in bucket 0 of both tables
    codes[::2, 1] = 1
    fifo = HashTables.create(lsh, 1000, capacity=10, policy="fifo")
    fifo.insert_codes(codes)
    np.testing.assert_array_equal(fifo.bucket(0, 0), np.arange(999, 989, -1))   # newest first
    np.testing.assert_array_equal(fifo.bucket(1, 1), np.arange(998, 978, -2))
    kept = []
    for seed in range(200):
        res = HashTables.create(lsh, 1000, capacity=10, policy="reservoir", seed=seed)
        res.insert_codes(codes)
        b = res.bucket(0, 0)
        assert b.size == 10 and np.unique(b).size == 10
        kept.append(b)
    kept = np.concatenate(kept)
    # uniform sample: each decile of the insertion order gets ~10% of the slots
    share = np.bincount(kept // 100, minlength=10) / kept.size
    assert np.all(np.abs(share - 0.1) < 0.03)


def test_reservoir_keeps_each_of_capacity_plus_one_items_with_the_same_chance():
    """Algorithm R: of 11 items into a bucket of 10, each is kept with probability 10/11,
    the newest as the first (an off-by-one keeps the first overflowing item always)."""
    lsh = make_lsh("simhash", 1, 1, 4, seed=0)
    codes = np.zeros((11, 1), np.int32)
    kept = np.zeros(11)
    for seed in range(2000):
        t = HashTables.create(lsh, 11, capacity=10, policy="reservoir", seed=seed)
        t.insert_codes(codes)
        kept[t.bucket(0, 0)] += 1
    assert np.all(np.abs(kept / 2000 - 10 / 11) < 0.03), kept / 2000


def test_tables_are_sized_from_the_label_count():
    assert auto_range_pow(670091) == 18
    lsh = make_lsh("dwta", 8, 50, 128, seed=0, range_pow=auto_range_pow(670091))
    t = HashTables.create(lsh, 670091, capacity=128)
    assert t.nbytes < 200 * 2 ** 20  # vs 6.7 GB for 50 x 2^18 x 128 fixed slots
    small = HashTables.create(make_lsh("dwta", 8, 50, 128, seed=0, range_pow=auto_range_pow(4000)), 4000)
    assert small.nbytes < 2 * 2 ** 20


def test_query_finds_the_neuron_itself():
    rng = np.random.default_rng(8)
    W = rng.standard_normal((5000, 32)).astype(np.float32)
    lsh = make_lsh("dwta", 4, 16, 32, seed=1, binsize=4, range_pow=auto_range_pow(5000))
    t = HashTables.create(lsh, 5000, capacity=64)
    t.insert_all(W)
    assert all(i in t.query(W[i]) for i in range(0, 5000, 250))


def test_schedules():
    fixed = Schedule(50, "fixed")
    assert [i for i in range(1, 301) if fixed.due(i)] == [50, 100, 150, 200, 250, 300]
    grow = Schedule(50, "exponential", growth=2.0)
    assert [i for i in range(1, 2000) if grow.due(i)] == [50, 150, 350, 750, 1550]
    # the reference code's rebuilds: at the first rehash (50), then every 1000 (iter % 1000 == 49)
    rebuild = Schedule(1000, "fixed", first=50)
    assert [i for i in range(1, 3100) if rebuild.due(i)] == [50, 1050, 2050, 3050]
    grow = Schedule(1000, "exponential", 2.0, first=50)
    assert [i for i in range(1, 5000) if grow.due(i)] == [50, 2050]


def test_network_rebuilds_at_the_first_rehash_as_the_reference_code():
    from impls.slide.core.config import SlideConfig
    from impls.slide.core.network import SlideNetwork

    for flag, first in ((True, 50), (False, 1000)):
        net = SlideNetwork(SlideConfig(K=2, L=2, rebuild_at_first_rehash=flag), 10, 40, 2)
        assert [i for i in range(1, 1200) if net.rebuild_schedule.due(i)][0] == first


def test_each_rebuild_draws_new_hash_functions_and_a_rehash_keeps_them():
    """The paper's rebuild draws new hash functions (the reference code's every 1000 batches);
    one that kept the old ones would be a rehash counted as a rebuild."""
    from impls.slide.core.config import SlideConfig
    from impls.slide.core.network import SlideNetwork

    net = SlideNetwork(SlideConfig(threads=1, batch=8, min_active=8, K=4, L=4), 50, 200, 3)
    seen = [net.tables.lsh.idx.copy()]
    net.refresh_tables(rebuild=False)
    assert np.array_equal(net.tables.lsh.idx, seen[0])
    for _ in range(2):
        net.refresh_tables(rebuild=True)
        assert not any(np.array_equal(net.tables.lsh.idx, old) for old in seen)
        seen.append(net.tables.lsh.idx.copy())
    assert net.n_rebuild == 2


def test_wrong_top_recall_counts_only_wrong_labels_the_tables_retrieve():
    from impls.slide.data.dataset import XCData
    from impls.slide.core.retrieval import wrong_top_recall

    rng = np.random.default_rng(3)
    n, dim = 4000, 32
    W = rng.standard_normal((n, dim)).astype(np.float32)
    h = np.abs(rng.standard_normal(dim)).astype(np.float32)
    W[5], W[7] = h, 3 * h                        # same ranks as h: in every bucket h hashes to
    tables = HashTables.create(make_lsh("dwta", 6, 20, dim, seed=1, range_pow=12), n)
    tables.insert_all(W, 2)
    retrieved = set(tables.query(h).tolist())
    assert {5, 7} <= retrieved
    far = [j for j in range(100, n) if j not in retrieved][:3]
    data = XCData(np.array([0, 1]), np.array([0]), np.array([1.0]), np.array([0, 1]), np.array([5]), 1, n)
    ranked = np.array([[5, 7] + far + [-1]])     # label 5 is the point's own: not a wrong label
    got = wrong_top_recall(tables, h[None, :], ranked, data, np.array([0]), k=4)
    assert got["recall"] == pytest.approx(1 / 4)                  # 7 found; the 3 far ones not
    assert (got["hits"], got["trials"]) == (1, 4) and got["ci_low"] < 0.25 < got["ci_high"]
    assert got["retrieved"] == len(retrieved) and got["random_recall"] == pytest.approx(len(retrieved) / n)
    got = wrong_top_recall(tables, h[None, :], ranked, data, np.array([0]), k=1)
    assert got["recall"] == 1.0


def test_the_knob_names_are_the_ones_the_engine_knows():
    import dataclasses

    from impls.slide.core import choices, lsh
    from impls.slide.core.config import SlideConfig
    from impls.slide.core.tables import POLICIES

    assert tuple(lsh.FAMILIES) == choices.FAMILIES and tuple(POLICIES) == choices.CHOICES["bucket_policy"]
    fields = {f.name for f in dataclasses.fields(SlideConfig)}
    assert set(choices.CHOICES) <= fields
    for name, allowed in choices.CHOICES.items():
        assert getattr(SlideConfig(), name) in allowed
        with pytest.raises(ValueError, match=name):
            SlideConfig(**{name: "no-such-value"}).check()
