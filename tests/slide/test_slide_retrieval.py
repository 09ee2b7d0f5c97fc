"""The retrieval-recall measurement: its interval and what counts as "after the first rebuild"
(the recall itself: tests/slide/test_slide_lsh.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from impls.slide.core.retrieval import clustered_interval, design_effect, wilson_interval
from impls.slide.training.trainer import recall_ratios


def test_wilson_interval_matches_known_values():
    # 0 hits in 3000 trials (300 points x 10 labels): the 95% upper bound is z^2 / (n + z^2)
    low, high = wilson_interval(0, 3000)
    assert low == 0.0 and high == pytest.approx(1.959964 ** 2 / (3000 + 1.959964 ** 2), rel=1e-6)
    # a textbook value: 10 of 100 -> (0.0552, 0.1744)
    low, high = wilson_interval(10, 100)
    assert low == pytest.approx(0.05523, abs=1e-4) and high == pytest.approx(0.17437, abs=1e-4)
    assert wilson_interval(5, 5)[1] == 1.0 and wilson_interval(0, 0) == (0.0, 1.0)
    # the interval holds the estimate and narrows with more trials
    for hits, n in ((3, 50), (30, 500), (300, 5000)):
        lo, hi = wilson_interval(hits, n)
        assert lo < hits / n < hi
    assert np.diff([np.subtract(*wilson_interval(n // 10, n)[::-1]) for n in (50, 500, 5000)]).max() < 0


def test_design_effect_is_the_cluster_variance_over_the_binomial():
    found = np.array([1, 1, 1, 0, 0, 0, 1, 0, 0, 0], np.uint8)
    groups = np.array([5, 5, 5, 7, 7, 7, 9, 9, 9, 9])
    p, T, m = 0.4, 10, 3
    h, t = np.array([3, 0, 1]), np.array([3, 3, 4])
    want = m / (m - 1) * np.sum((h - p * t) ** 2) / T ** 2 / (p * (1 - p) / T)
    assert design_effect(groups, found) == pytest.approx(want)
    assert design_effect(np.arange(10), found) == pytest.approx(10 / 9)   # one trial a group: m / (m - 1)
    assert design_effect(np.zeros(10), found) == 10.0          # one group: the trials count as one
    assert design_effect(groups, np.zeros(10)) == 1.0 and design_effect(groups[:0], found[:0]) == 1.0


def test_clustered_interval_is_wilson_for_independent_trials_and_counts_alike_ones_once():
    rng = np.random.default_rng(0)
    found = (rng.random(3000) < 0.2).astype(np.uint8)
    each = np.arange(3000)
    assert clustered_interval(each, each, found) == pytest.approx((*wilson_interval(found.sum() * 2999 / 3000, 2999), 2999))
    # 16 labels whose trials all come out alike: about 16 effective trials, not 3,000
    labels = rng.integers(0, 16, 3000)
    alike = (np.arange(16) % 3 == 0)[labels].astype(np.uint8)
    low, high, n_eff = clustered_interval(labels, each // 10, alike)
    assert 10 < n_eff < 20 and high - low > 5 * np.subtract(*wilson_interval(int(alike.sum()), 3000)[::-1])
    # no trial found: the data show no spread, each distinct label counts as one trial
    assert clustered_interval(labels, each // 10, np.zeros(3000)) == (*wilson_interval(0, 16), 16.0)
    assert clustered_interval(labels[:0], labels[:0], np.zeros(0)) == (0.0, 1.0, 0.0)


def test_clustered_interval_covers_where_wilson_does_not():
    """3,000 trials over 16 labels, half of which are found or missed as a whole (probability
    0.05) and half trial by trial: the grouped interval holds the true rate in at least 90%
    of draws (0.99 measured), Wilson's on all trials in under a tenth."""
    rng = np.random.default_rng(7)
    covered = {"clustered": 0, "wilson": 0}
    for _ in range(300):
        labels = rng.integers(0, 16, 3000)
        alike = (rng.random(16) < 0.05)[labels]
        found = np.where(labels < 8, alike, rng.random(3000) < 0.05).astype(np.uint8)
        low, high, _ = clustered_interval(labels, np.arange(3000) // 10, found)
        covered["clustered"] += low <= 0.05 <= high
        low, high = wilson_interval(int(found.sum()), 3000)
        covered["wilson"] += low <= 0.05 <= high
    assert covered["clustered"] >= 0.9 * 300 and covered["wilson"] < 0.1 * 300


def test_one_more_hit_does_not_shrink_the_bound_a_hundredfold():
    labels = np.repeat(np.arange(16), 188)[:3000]
    points = np.arange(3000) // 10
    none = clustered_interval(labels, points, np.zeros(3000))
    one = clustered_interval(labels, points, np.eye(1, 3000, 1500)[0])
    assert none[2] == one[2] == 16.0 and none[1] / 2 < one[1] < none[1] * 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9), st.booleans()), min_size=1, max_size=80))
def test_clustered_interval_holds_the_rate_and_is_never_narrower_than_wilson(trials):
    labels, points, found = (np.array(x) for x in zip(*trials))
    low, high, n_eff = clustered_interval(labels, points, found.astype(np.uint8))
    p = found.mean()
    w_low, w_high = wilson_interval(int(found.sum()), found.size)
    assert 0 <= low <= p <= high <= 1 and 0 < n_eff <= min(found.size, np.unique(labels).size)
    if 0 < p < 1:
        assert low <= w_low + 1e-12 and high >= w_high - 1e-12


def test_min_ratio_counts_from_the_first_rebuild_not_the_first_rehash():
    curve = [
        {"lsh_recall": 0.5, "lsh_random_recall": 0.01, "lsh_recall_ci": [0.4, 0.6], "refreshes": 0, "rebuilds": 0},
        {"lsh_recall": 0.0, "lsh_random_recall": 0.01, "lsh_recall_ci": [0.0, 0.002], "refreshes": 1, "rebuilds": 0},
        {"lsh_recall": 0.2, "lsh_random_recall": 0.01, "lsh_recall_ci": [0.1, 0.3], "refreshes": 2, "rebuilds": 1},
        {"lsh_recall": math.nan, "lsh_random_recall": 0.01, "refreshes": 3, "rebuilds": 1},
        {"lsh_recall": 0.3, "lsh_random_recall": 0.0, "refreshes": 3, "rebuilds": 1},
    ]
    after_rebuild = recall_ratios(curve, "rebuilds")
    assert [r for r, _ in after_rebuild] == [pytest.approx(20.0)]
    assert after_rebuild[0][1] == (pytest.approx(10.0), pytest.approx(30.0))
    assert [r for r, _ in recall_ratios(curve, "refreshes")] == [0.0, pytest.approx(20.0)]



def test_recall_probe_sees_fresh_tables_as_fresh():
    from impls.slide.core.config import SlideConfig
    from impls.slide.core.network import SlideNetwork
    from impls.slide.data import xc_data
    from impls.slide.data.dataset import XCData
    from impls.slide.experiments.recall_probe import probe_point

    arrays = xc_data.generate(seed=2, n_train=300, n_test=60, n_features=500, n_labels=400,
                              labels_per_point=2.0, nnz_per_point=20)
    train, test = XCData.from_arrays(arrays, "train_"), XCData.from_arrays(arrays, "test_")
    net = SlideNetwork(SlideConfig(K=3, L=8, batch=32, min_active=20, padding="batch", threads=1),
                       train.n_features, train.n_labels, 8)
    rows = np.arange(40)
    out = probe_point(net, test, rows, 0)
    # just built: every stored code is its fresh code, so the tables find exactly what fresh codes would
    assert out["stored_codes_fresh"] == 1.0
    assert out["full"]["recall"] == pytest.approx(out["full"]["recall_if_fresh"])
    for _ in range(3):                                       # after steps without a rehash they go stale
        net.step(train, np.random.default_rng(0).integers(0, train.n_points, 32))
    assert probe_point(net, test, rows, 3)["stored_codes_fresh"] < 1.0


def test_recall_probe_scores_k_wrong_labels_even_when_the_true_ones_rank_first(monkeypatch):
    """The probe ranks k + (true labels) so that k wrong ones remain when the model puts the
    true labels on top, late in training, the regime the probe is for."""
    from impls.slide.core import retrieval
    from impls.slide.core.config import SlideConfig
    from impls.slide.core.network import SlideNetwork
    from impls.slide.data import xc_data
    from impls.slide.data.dataset import XCData
    from impls.slide.experiments.recall_probe import probe_point

    arrays = xc_data.generate(seed=2, n_train=300, n_test=60, n_features=500, n_labels=400,
                              labels_per_point=2.0, nnz_per_point=20)
    test = XCData.from_arrays(arrays, "test_")
    net = SlideNetwork(SlideConfig(K=3, L=8, batch=32, min_active=20, threads=1), test.n_features, test.n_labels, 8)
    rows = np.arange(20)
    net.b2[np.unique(test.labels)] = 100.0                   # every true label outranks every wrong one
    scored = []
    real = retrieval.wrong_top

    def recording(ranked, truth, k):
        wrong = real(ranked, truth, k)
        scored.append(wrong.size)
        return wrong

    monkeypatch.setattr(retrieval, "wrong_top", recording)
    probe_point(net, test, rows, 0)
    assert scored and set(scored) == {10}


def test_hash_agreement_is_one_for_a_label_whose_weights_are_the_query():
    from impls.slide.core.config import SlideConfig
    from impls.slide.core.network import SlideNetwork
    from impls.slide.data import xc_data
    from impls.slide.data.dataset import XCData
    from impls.slide.experiments.recall_probe import hash_agreement

    arrays = xc_data.generate(seed=4, n_train=200, n_test=40, n_features=300, n_labels=500,
                              labels_per_point=2.0, nnz_per_point=15)
    test = XCData.from_arrays(arrays, "test_")
    net = SlideNetwork(SlideConfig(lsh="dwta", K=4, L=10, batch=32, min_active=20, padding="batch", threads=1),
                       test.n_features, test.n_labels, 8)
    h = np.ascontiguousarray(net.hidden(test, np.arange(5)), np.float32)
    assert 0.2 < (h == 0).mean() < 0.8     # ReLU zeros: values to DWTA, as in the reference code
    tops = [np.array([10 * i, 10 * i + 1]) for i in range(5)]
    for i, top in enumerate(tops):
        net.W2[top] = 3.0 * h[i]           # a scaled copy: the same ranks, the same zeros
    out = hash_agreement(net, h, tops, np.random.default_rng(0))
    assert out["top"] == 1.0 and out["cos_top"] == pytest.approx(1.0, abs=1e-5)
    assert out["random"] < 0.3              # random N(0, 0.01) rows: about 1/binsize per function
    assert out["winner_on_zero_top"] == 0.0 and out["winner_rank_top"] == 0.0    # the query's own winner
    assert out["winner_on_zero_random"] > 0.2 and 0.2 < out["winner_rank_random"] < 0.8
    for i, top in enumerate(tops):
        net.W2[top] = -3.0 * h[i]          # reversed ranks: a zero of the query wins where it has one
    reversed_ = hash_agreement(net, h, tops, np.random.default_rng(0))
    assert reversed_["top"] < 0.3 and reversed_["cos_top"] == pytest.approx(-1.0, abs=1e-5)


def test_recall_probe_command_trains_on_xc_files(tmp_path, capsys):
    import json

    from impls.slide.data import xc_data
    from impls.slide.data.dataset import XCData
    from impls.slide.data.xc_format import write_xc
    from impls.slide.experiments import recall_probe

    arrays = xc_data.generate(seed=5, n_train=400, n_test=60, n_features=300, n_labels=300,
                              labels_per_point=2.0, nnz_per_point=15)
    f_train = write_xc(tmp_path / "train.txt", XCData.from_arrays(arrays, "train_").to_arrays())
    f_test = write_xc(tmp_path / "test.txt", XCData.from_arrays(arrays, "test_").to_arrays())
    assert recall_probe.main(["--train", str(f_train), "--test", str(f_test), "--batches", "3", "--at", "1,3",
                              "--points", "20", "--threads", "1", "--lsh", "simhash", "--K", "4", "--L", "6"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [x["iteration"] for x in lines] == [1, 3]
    for x in lines:
        assert 0 <= x["hash_agreement"]["top"] <= 1 and 0 <= x["hash_agreement"]["random"] <= 1
        assert 0 <= x["full"]["recall"] <= 1 and x["buckets"]["query_bucket_neurons"] > 0
    # the seed and the table index reach the network: another seed, another trajectory
    def probe(*extra):
        assert recall_probe.main(["--train", str(f_train), "--test", str(f_test), "--batches", "2", "--at", "2",
                                  "--points", "20", "--threads", "1", "--K", "3", "--L", "6", *extra]) == 0
        [line] = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
        return line["full"]["retrieved"], line["hidden_cosine"]

    first = probe()
    assert probe() == first                                                        # deterministic
    assert probe("--seed", "3") != first and probe("--index", "concat")[0] != first[0]
    assert probe("--dwta-zeros", "absent")[0] != first[0]
    small = probe("--batch", "4")          # a batch touches few rows, so lazy and dense Adam differ
    assert probe("--batch", "4", "--adam", "dense")[1] != small[1]
    assert probe("--batch", "4", "--min-active", "200")[1] != small[1]
    assert recall_probe.main(["--train", str(f_train), "--test", str(f_test), "--min-active", "0"]) == 2
    assert "--min-active" in capsys.readouterr().err
    assert recall_probe.main(["--train", str(f_train), "--test", str(f_test), "--at", "2,x"]) == 2
    assert "--at" in capsys.readouterr().err
    assert recall_probe.main(["--train", str(f_train), "--batches", "1"]) == 2       # --test missing
    assert "go together" in capsys.readouterr().err
    assert recall_probe.main(["--dataset", "slide-amazon670k", "--train", str(f_train), "--test", str(f_test)]) == 2
    assert "not both" in capsys.readouterr().err
    assert recall_probe.main(["--train", str(f_train), "--test", str(f_test), "--K", "0"]) == 2
    assert "--K" in capsys.readouterr().err



def test_wrong_top_skips_true_labels_and_padding_in_rank_order():
    from impls.slide.core.retrieval import wrong_top

    ranked = np.array([7, 3, -1, 9, 4, 1, 8])
    assert wrong_top(ranked, np.array([3, 4]), 3).tolist() == [7, 9, 1]
    assert wrong_top(ranked, np.array([], np.int32), 10).tolist() == [7, 3, 9, 4, 1, 8]
    assert wrong_top(np.array([2, -1]), np.array([2]), 5).size == 0


def test_bucket_loss_counts_the_colliding_labels_a_full_bucket_drops():
    from impls.slide.core.lsh import make_lsh
    from impls.slide.core.tables import HashTables
    from impls.slide.experiments.recall_probe import bucket_loss

    tables = HashTables.create(make_lsh("simhash", 1, 2, 4, seed=0), 100, capacity=10)
    codes = np.zeros((100, 2), np.int32)
    codes[50:, 1] = 1                      # table 1: 50 neurons in each of buckets 0 and 1
    tables.insert_codes(codes)             # FIFO keeps the 10 newest: 90..99 (table 1, bucket 0: 40..49)
    query = np.array([[0, 0]], np.int32)
    out = bucket_loss(tables, tables.current_codes(), query, [np.array([5, 95])])
    # table 0: 5 and 95 collide, 95 kept; table 1: only 5 collides (95 is in bucket 1), dropped
    assert out == {"query_bucket_neurons": 75.0, "over_capacity": 1.0, "colliding": 3, "colliding_kept": 1 / 3}


def test_where_a_weight_rows_winner_lies_in_the_hidden_vectors_order():
    from impls.slide.experiments.recall_probe import _winners

    h = np.array([3.0, 0.0, 1.0, 2.0])             # h's own order: coordinate 0, 3, 2; 1 is a zero
    w = np.array([[5, 0, 0, 0], [0, 5, 0, 0], [0, 0, 5, 0]], float)   # wins at h's largest, a zero, its smallest
    assert _winners(h, w, np.array([[0, 1, 2, 3]])) == pytest.approx((1 / 3, 0.5))


def test_the_recall_probe_counts_a_full_bucket_as_full_not_over_capacity():
    """recall_probe.bucket_loss: a bucket holding exactly its capacity drops nothing; one more
    neuron hashed there is over it, and the bucket keeps only as many."""
    from types import SimpleNamespace

    from impls.slide.experiments.recall_probe import bucket_loss

    def tables_of(current, capacity=2):
        return SimpleNamespace(capacity=capacity, lsh=SimpleNamespace(n_buckets=4),
                               bucket=lambda t, code: np.flatnonzero(current[t] == code)[:capacity])

    full = np.array([[0, 0, 1, 1]])
    out = bucket_loss(tables_of(full), full, np.array([[0]]), [np.array([0, 1])])
    assert out == {"query_bucket_neurons": 2.0, "over_capacity": 0.0, "colliding": 2, "colliding_kept": 1.0}
    over = np.array([[0, 0, 0, 1]])
    out = bucket_loss(tables_of(over), over, np.array([[0]]), [np.array([0, 1, 2])])
    assert out["over_capacity"] == 1.0 and out["colliding"] == 3 and out["colliding_kept"] == pytest.approx(2 / 3)
