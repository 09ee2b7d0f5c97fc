"""SLIDE training: generator, determinism, learning on a tiny set, the CLI, the registry recipes."""
from __future__ import annotations

import json

import numpy as np
import pytest

from impls.harness import registry
from impls.slide.data import xc_data
from impls.slide.core.config import SlideConfig
from impls.slide.data.dataset import XCData, from_registry
from impls.slide.core.network import SlideNetwork, log_uniform_distinct
from impls.slide.core.tables import HashTables
from impls.slide.training.trainer import set_threads, train
from impls.slide.data.xc_format import write_xc


@pytest.fixture(scope="module")
def small():
    arrays = xc_data.generate(seed=11, n_train=3000, n_test=600, n_features=5000, n_labels=1500,
                              labels_per_point=3.0, nnz_per_point=40)
    return XCData.from_arrays(arrays, "train_"), XCData.from_arrays(arrays, "test_")


def test_generator_is_deterministic_and_shaped():
    a = xc_data.generate(seed=5, n_train=2000, n_test=100, n_features=8000, n_labels=3000)
    b = xc_data.generate(seed=5, n_train=2000, n_test=100, n_features=8000, n_labels=3000)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    s = XCData.from_arrays(a, "train_").stats()
    assert 4.9 < s["labels_per_point"] < 6.0 and 68 < s["nnz_per_point"] < 84
    tr = XCData.from_arrays(a, "train_")
    norms = np.sqrt(np.add.reduceat(tr.values.astype(np.float64) ** 2, tr.indptr[:-1]))
    np.testing.assert_allclose(norms, 1.0, rtol=1e-5)
    assert tr.indices.max() < 8000 and tr.labels.max() < 3000


def test_recipes_keep_the_real_sets_ratios(monkeypatch):
    from impls.slide.xc_stats import DATASET_LIKE, PUBLISHED
    m = registry.manifests()
    for name, like in DATASET_LIKE.items():
        pub = PUBLISHED[like]
        for profile in ("smoke", "quick", "full"):
            p = registry.recipe_params(m[name], profile)
            assert p["labels_per_point"] == pub["labels_per_point"]
            assert p["nnz_per_point"] == pub["nnz_per_point"]
            ppl = p["n_train"] * p["labels_per_point"] / p["n_labels"]
            assert abs(ppl - pub["points_per_label"]) < 0.01 * pub["points_per_label"], (name, profile, ppl)
    # quick keeps the real Amazon-670K's counts but the test split
    quick = registry.recipe_params(m["slide-amazon670k"], "quick")
    pub = PUBLISHED["amazon-670k"]
    assert (quick["n_features"], quick["n_labels"], quick["n_train"]) == (
        pub["features"], pub["labels"], pub["train_points"])


def _weights_after(data, threads, steps=4, **kw):
    set_threads(threads)
    cfg = SlideConfig(batch=64, K=4, L=10, min_active=64, rehash_every=2, seed=3, threads=threads, **kw)
    net = SlideNetwork(cfg, data.n_features, data.n_labels, 16, label_counts=data.label_counts())
    rng = np.random.default_rng(0)
    for _ in range(steps):
        net.step(data, rng.integers(0, data.n_points, 64))
    return net.weights()


@pytest.mark.parametrize("padding,padding_sampler", [("batch", "uniform"), ("sample", "uniform"),
                                                     ("batch", "log-uniform")])
def test_one_thread_is_deterministic(small, padding, padding_sampler):
    a = _weights_after(small[0], 1, padding=padding, padding_sampler=padding_sampler)
    b = _weights_after(small[0], 1, padding=padding, padding_sampler=padding_sampler)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("adam", ["lazy", "dense"])
def test_sample_padding_takes_the_same_steps_at_any_thread_count(small, threads, adam):
    """Without the batch pool's torch products, every sum of a step is split in parts fixed
    by the batch, not by the threads (README, "Gradient reduction without races"). Three
    threads run on at most numba's pool, but split the work (row ranges, chunks) in three."""
    a = _weights_after(small[0], 1, padding="sample", adam=adam)
    b = _weights_after(small[0], threads, padding="sample", adam=adam)
    set_threads(1)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("pairs, batch, parts", [(0, 256, 1), (32 * 256 - 1, 256, 1), (32 * 256 * 5, 256, 5),
                                                 (1_070_000, 256, 128), (10**9, 1, 128), (500, 0, 15)])
def test_d_hidden_parts_follow_the_batch_and_cost_at_most_a_32nd_of_its_pairs(pairs, batch, parts):
    from impls.slide.core import network_kernels as NK

    assert NK.dh_parts(pairs, batch) == parts
    assert parts == 1 or parts * max(batch, 1) * NK.PAIRS_PER_PART_SAMPLE <= pairs


@pytest.mark.parametrize("padding,padding_sampler", [("sample", "uniform"), ("batch", "uniform"),
                                                     ("batch", "log-uniform")])
def test_training_beats_the_most_popular_label(small, padding, padding_sampler):
    train_data, test_data = small
    cfg = SlideConfig(batch=128, K=5, L=16, seed=1, threads=2, min_active=60, lr=1e-2,
                      padding=padding, padding_sampler=padding_sampler)
    result = train(cfg, train_data, test_data, time_budget_s=None, max_iterations=120, eval_every=60,
                   eval_points=600)
    baseline = result["baseline_p_at_1"]
    assert baseline < 0.2
    assert result["final_p_at_1"] >= max(0.5, 3 * baseline), result["curve"]
    assert result["curve"][0]["iteration"] == 0 and result["curve"][-1]["iteration"] == 120
    assert 0 < result["active_fraction"] < 0.2
    for key in ("samples_per_second", "final_p_at_1", "active_fraction", "params", "curve"):
        assert key in result
    # every evaluation records the tables' recall of the best-scoring wrong labels
    assert all(0.0 <= p["lsh_recall"] <= 1.0 and p["lsh_retrieved"] > 0 for p in result["curve"])
    assert result["final_lsh_recall"] == result["curve"][-1]["lsh_recall"]
    assert result["final_lsh_random_recall"] == pytest.approx(result["final_lsh_retrieved"] / train_data.n_labels)


@pytest.mark.parametrize("mode", ["topk", "threshold"])
def test_other_sampling_modes_learn(small, mode):
    train_data, test_data = small
    cfg = SlideConfig(batch=128, K=4, L=16, seed=1, threads=2, mode=mode, topk=100, threshold=2,
                      min_active=60, lr=1e-2)
    result = train(cfg, train_data, test_data, time_budget_s=None, max_iterations=80, eval_every=0,
                   eval_points=300, eval_at_start=False)
    assert result["final_p_at_1"] >= 2 * result["baseline_p_at_1"]


def test_cli_on_files_and_on_a_registry_name(small, tmp_path):
    from impls.slide.train import main

    train_data, test_data = small
    f_train = write_xc(tmp_path / "train.txt", train_data.to_arrays())
    f_test = write_xc(tmp_path / "test.txt", test_data.to_arrays())
    out = tmp_path / "r.json"
    assert main(["--train", str(f_train), "--test", str(f_test), "--method", "slide", "--threads", "2",
                 "--batch", "64", "--max-iterations", "6", "--eval-every", "3", "--eval-points", "100",
                 "--K", "4", "--L", "8", "--json", str(out), "--quiet"]) == 0
    r = json.loads(out.read_text())
    assert [p["iteration"] for p in r["curve"]] == [0, 3, 6]
    assert {"seconds", "iteration", "p_at_1"} <= set(r["curve"][0])
    assert r["params"]["batch"] == 64 and r["load_seconds"] >= 0 and r["samples_per_second"] > 0
    out2 = tmp_path / "r2.json"
    assert main(["--dataset", "slide-amazon670k", "--profile", "smoke", "--max-iterations", "2",
                 "--eval-every", "0", "--eval-points", "50", "--json", str(out2), "--quiet"]) == 0
    assert json.loads(out2.read_text())["source"]["dataset"] == "slide-amazon670k"


def test_registry_smoke_set_loads(monkeypatch):
    train_data, test_data, info = from_registry("slide-amazon670k", "smoke")
    assert train_data.n_labels == 5450 and test_data.n_points == 1000 and info["synthetic"]


def test_log_uniform_padding_draws_distinct_labels_favouring_frequent_ones():
    n, p = 1000, 50
    rank_to_label = np.random.default_rng(0).permutation(n)  # label of each frequency rank
    seen = np.zeros(n, np.int64)
    for t in range(200):
        pool = log_uniform_distinct(np.random.default_rng([1, t]), rank_to_label, p)
        assert pool.dtype == np.int32 and pool.size == p and np.all(np.diff(pool) > 0)
        seen[pool] += 1
    by_rank = seen[rank_to_label]
    assert by_rank[:10].min() > 5 * by_rank[-100:].mean()  # the head is drawn far more often
    again = log_uniform_distinct(np.random.default_rng([1, 0]), rank_to_label, p)
    np.testing.assert_array_equal(again, log_uniform_distinct(np.random.default_rng([1, 0]), rank_to_label, p))
    assert log_uniform_distinct(np.random.default_rng(2), rank_to_label, 5000).size == n


def test_log_uniform_padding_needs_label_counts_and_a_known_name(small):
    data = small[0]
    cfg = SlideConfig(batch=64, K=4, L=10, min_active=64, padding="batch", padding_sampler="log-uniform")
    with pytest.raises(ValueError, match="label_counts"):
        SlideNetwork(cfg, data.n_features, data.n_labels, 16)
    with pytest.raises(ValueError, match="padding_sampler"):
        SlideNetwork(SlideConfig(padding_sampler="zipf"), data.n_features, data.n_labels, 16)


def test_recall_ratio_counts_from_the_first_rebuild(small, monkeypatch):
    from impls.slide.core import retrieval
    from impls.slide.training import trainer

    calls = []

    def recall_zero_before_the_rebuild(tables, *args, **kw):   # evaluations at 0, 5, ..., 40
        out = retrieval.wrong_top_recall(tables, *args, **kw)
        calls.append(1)
        recall = 0.0 if 3 <= len(calls) <= 6 else 0.5     # batches 10-25: rehashed, not rebuilt
        return {**out, "recall": recall, "ci_low": recall / 2, "ci_high": recall * 1.5 + 0.01}

    monkeypatch.setattr(trainer, "wrong_top_recall", recall_zero_before_the_rebuild)
    train_data, test_data = small
    cfg = SlideConfig(batch=64, K=3, L=8, seed=2, threads=2, min_active=40, padding="batch", schedule="fixed",
                      rehash_every=10, rebuild_every=30, rebuild_at_first_rehash=False)
    result = train(cfg, train_data, test_data, time_budget_s=None, max_iterations=40, eval_every=5,
                   eval_points=200)
    curve = result["curve"]
    assert [p["rebuilds"] for p in curve if p["iteration"] in (25, 30, 35)] == [0, 1, 1]
    assert [p["refreshes"] for p in curve if p["iteration"] in (5, 10, 25)] == [0, 1, 2]

    def ratios(after):
        return [p["lsh_recall"] / p["lsh_random_recall"] for p in curve if p[after] and p["lsh_random_recall"]]
    assert result["lsh_recall_min_ratio"] == min(ratios("rebuilds")) > 0
    assert result["lsh_recall_min_ratio_after_rehash"] == min(ratios("refreshes")) == 0
    low, high = result["lsh_recall_min_ratio_ci"]
    assert low <= result["lsh_recall_min_ratio"] <= high


def test_a_run_that_stops_before_its_first_rebuild_says_so_in_place_of_the_ratio(small):
    """No evaluation after a rebuild: the ratio is None and the record says why in words that
    are this run's (the asv point's skip reason), not "not a SLIDE run"."""
    train_data, test_data = small
    cfg = SlideConfig(batch=64, K=3, L=8, seed=2, threads=1, min_active=40, padding="batch", schedule="fixed",
                      rehash_every=10, rebuild_every=30, rebuild_at_first_rehash=False)
    result = train(cfg, train_data, test_data, time_budget_s=None, max_iterations=15, eval_every=5,
                   eval_points=100)
    assert result["rebuilds"] == 0 and result["rehashes"] == 1 and result["lsh_recall_min_ratio"] is None
    assert result["lsh_recall_no_value"] == ("the run's tables had no rebuild in its 15 batches (it stopped before the "
                                             "first, or its schedule has none)")
    assert result["lsh_recall_min_ratio_after_rehash"] is not None and result["lsh_recall_after_rehash_no_value"] is None
    early = train(cfg, train_data, test_data, time_budget_s=None, max_iterations=5, eval_every=5, eval_points=100)
    assert "no refresh in its 5 batches" in early["lsh_recall_after_rehash_no_value"]
    from impls.slide.training.trainer import recall_gap
    assert "no hash tables" in recall_gap("rebuild", 0, 9, "all")
    assert recall_gap("rebuild", 2, 9, "union").startswith("no evaluation after the run's first table rebuild gave a "
                                                           "recall ratio")


@pytest.mark.parametrize("adam", ["lazy", "dense"])
def test_upkeep_rebuckets_exactly_the_rows_whose_logit_rose(small, adam):
    train_data, _ = small
    set_threads(1)
    cfg = SlideConfig(batch=64, K=4, L=10, min_active=64, rehash_every=1000, rebuild_every=1000,
                      rebuild_at_first_rehash=False, seed=3, threads=1, adam=adam, padding="batch")
    net = SlideNetwork(cfg, train_data.n_features, train_data.n_labels, 16, label_counts=train_data.label_counts())
    net.step(train_data, np.arange(64, 128))   # so that dense Adam's momentum moves untouched rows too
    rows = np.arange(64)
    builds = net.tables.builds
    codes0 = net.tables.current_codes()
    W_old, b_old = net.W2.copy(), net.b2.copy()
    net.step(train_data, rows)
    # the rise is measured on the forward pass's hidden vectors (``net.H``, before the step's W1 update)
    rise = (net.W2 - W_old) @ np.asarray(net.H[:64].mean(axis=0), np.float64) + (net.b2 - b_old)
    stepped = np.flatnonzero(np.any(net.W2 != W_old, axis=1) | (net.b2 != b_old))
    touched = np.sort(net.touched_out[:net.last_touched_rows])
    if adam == "lazy":
        np.testing.assert_array_equal(np.sort(stepped), touched)
    else:
        assert stepped.size > touched.size     # momentum moved rows the gradient did not touch
    np.testing.assert_allclose(net.rise[stepped], rise[stepped], atol=1e-5)
    rose = touched[net.rise[touched] > 0]     # only rows the gradient touched are moved
    assert 0 < rose.size < touched.size
    assert net.tables.builds == builds and net.tables.n_moved > 0      # through the delta, no build
    now = net.tables.current_codes()
    fresh = net.tables.lsh.hash_table_major(net.W2)
    np.testing.assert_array_equal(now[:, rose], fresh[:, rose])
    others = np.setdiff1d(np.arange(train_data.n_labels), rose)
    np.testing.assert_array_equal(now[:, others], codes0[:, others])    # pushed-down rows keep their buckets
    assert net.upkeep_seconds > 0


def test_upkeep_none_leaves_the_tables_until_the_schedule(small):
    train_data, _ = small
    set_threads(1)
    cfg = SlideConfig(batch=64, K=4, L=10, min_active=64, rehash_every=3, schedule="fixed", rebuild_every=1000,
                      rebuild_at_first_rehash=False, seed=3, threads=1, upkeep="none")
    net = SlideNetwork(cfg, train_data.n_features, train_data.n_labels, 16)
    codes0 = net.tables.current_codes()
    for i in range(2):
        net.step(train_data, np.arange(64 * i, 64 * (i + 1)))
    np.testing.assert_array_equal(net.tables.current_codes(), codes0)
    assert net.tables.moves == 0 and net.upkeep_seconds == 0
    net.step(train_data, np.arange(128, 192))                           # the rehash at 3
    np.testing.assert_array_equal(net.tables.codes, net.tables.lsh.hash_table_major(net.W2))
    with pytest.raises(ValueError, match="upkeep"):
        SlideConfig(upkeep="always").check()


def test_training_retrieves_moved_neurons_under_their_new_codes(small):
    train_data, _ = small
    set_threads(1)
    cfg = SlideConfig(batch=64, K=3, L=8, min_active=1, rehash_every=1000, rebuild_every=1000,
                      rebuild_at_first_rehash=False, seed=5, threads=1, padding="batch")
    net = SlideNetwork(cfg, train_data.n_features, train_data.n_labels, 16)
    for i in range(4):
        net.step(train_data, np.arange(64 * i, 64 * (i + 1)))
    assert net.tables.n_moved > 0
    rows = np.arange(256, 320)
    H = net.hidden(train_data, rows)
    want = [net.tables.retrieve(c) for c in net.tables.lsh.hash(H, 1)]
    # the moved neurons matter to these queries: the build's codes alone would retrieve otherwise
    stale = HashTables.create(net.tables.lsh, net.n_labels, cfg.bucket_capacity)
    stale.insert_codes(net.tables.codes.T)
    assert any(not np.array_equal(w, stale.retrieve(c)) for w, c in zip(want, net.tables.lsh.hash(H, 1)))
    net.step(train_data, rows)
    for i, r in enumerate(rows):
        truth = train_data.labels[train_data.label_indptr[r]:train_data.label_indptr[r + 1]]
        got = set(net.act[i, :net.n_act[i]].tolist())
        assert got == set(truth.tolist()) | set(want[i].tolist())


def test_the_optimizer_state_is_paged_in_before_the_first_timed_step(small, monkeypatch):
    from impls.slide.training import loop

    events = []
    real_page_in, real_step, real_timer = SlideNetwork.page_in, SlideNetwork.step, loop.WallTimer

    def page_in(self):
        assert all(not m.any() for state in (self.adam_state, self.adam_v) for m in state.values())
        events.append("page_in")
        real_page_in(self)

    def timer(*args, **kw):
        events.append("clock")
        return real_timer(*args, **kw)

    def step(self, *args, **kw):
        events.append("step")
        return real_step(self, *args, **kw)

    monkeypatch.setattr(SlideNetwork, "page_in", page_in)
    monkeypatch.setattr(SlideNetwork, "step", step)
    monkeypatch.setattr(loop, "WallTimer", timer)
    train_data, test_data = small
    train(SlideConfig(batch=64, K=3, L=8, threads=1, min_active=40), train_data, test_data,
          time_budget_s=None, max_iterations=3, eval_every=None, eval_points=50)
    # the warm-up's tiny network pages in and steps untimed; the measured one pages in before the clock
    assert events == ["page_in", "step", "page_in", "clock", "step", "step", "step"]


def test_page_in_writes_every_element_of_the_optimizer_state():
    net = SlideNetwork(SlideConfig(threads=2, K=3, L=4, min_active=8), 300, 1001, 3)
    moments = [m for state in (net.adam_state, net.adam_v) for m in state.values()]
    for m in moments:
        m[...] = np.arange(m.size, dtype=np.float32).reshape(m.shape) + 1   # odd sizes: 1001 x 128, 1001, ...
    net.page_in()
    assert all(m.dtype == np.float32 and m.flags.c_contiguous and not m.any() for m in moments)


def test_label_space_is_the_training_sets_shape_with_or_without_loading_it(monkeypatch):
    from impls.slide.experiments import sweeps

    train, _, _ = sweeps.data("smoke")
    assert sweeps.label_space("smoke") == (train.n_features, train.n_labels)
    loads = []
    monkeypatch.setattr(registry, "recipe_params", lambda manifest, profile=None: {})  # a recipe without sizes
    monkeypatch.setattr(sweeps, "data", lambda profile=None: loads.append(profile) or (train, None, None))
    assert sweeps.label_space("smoke") == (train.n_features, train.n_labels) and loads == ["smoke"]


def test_the_table_refresh_timings_refresh_an_untrained_network_of_the_profiles_label_space():
    from impls.slide.experiments import sweeps

    net = sweeps.refresh_network("smoke", threads=2)
    assert (net.n_features, net.n_labels) == sweeps.label_space("smoke") and net.t == 0
    seconds = sweeps.table_refresh_seconds("smoke", threads=2, repeats=1)
    assert seconds["rehash"] > 0 and seconds["rebuild"] > 0 and seconds["table_bytes"] == net.tables.nbytes


def test_the_timed_table_refreshes_re_hash_every_output_row(monkeypatch):
    """As after a dense-Adam step: a rehash timed on an untrained network (nothing dirty)
    must still re-hash all ``n_labels`` rows, not only rebuild the CSR."""
    from benchmarks import bench_slide
    from impls.slide.experiments import sweeps

    hashed, real = [], HashTables.insert_all

    def insert_all(self, vectors, n_chunks=8, changed=None):
        everything = changed is None or self.codes is None
        hashed.append((self.n_items, self.n_items if everything else np.unique(changed).size))
        return real(self, vectors, n_chunks, changed)

    monkeypatch.setattr(HashTables, "insert_all", insert_all)
    sweeps.table_refresh_seconds("smoke", threads=2, repeats=2)    # warm-up's and net's builds, 2 + 2 refreshes
    assert len(hashed) == 6 and all(n == rows for n, rows in hashed)
    bench = bench_slide.SlideTableRefreshTime()
    for kind in sweeps.REFRESH_KINDS:
        bench.setup(kind)
        hashed.clear()
        bench.time_refresh(kind)
        bench.time_refresh(kind)
        assert len(hashed) == 2 and all(n == rows for n, rows in hashed), kind
    with pytest.raises(ValueError, match="kind="):
        sweeps.refresh_every_row(bench.net, "rehsah")
