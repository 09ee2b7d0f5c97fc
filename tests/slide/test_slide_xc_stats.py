"""The synthetic XC sets against the real sets' published figures and known shapes
(impls.slide.xc_stats), and the checks' power to fail."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from impls.harness import registry
from impls.slide.data import xc_data
from impls.slide import xc_stats
from impls.slide.data.dataset import XCData, from_registry
from impls.slide.core.evaluate import mean_cosine


def _failed(stats, like):
    return sorted(r["name"] for r in xc_stats.check(stats, like) if r["ok"] is False)


@pytest.mark.parametrize("name", sorted(xc_stats.DATASET_LIKE))
def test_smoke_sets_are_within_every_tolerance(name):
    train, test, _ = from_registry(name, "smoke")
    stats = xc_stats.measure(train, test)
    assert _failed(stats, xc_stats.DATASET_LIKE[name]) == [], xc_stats.format_table(
        xc_stats.check(stats, xc_stats.DATASET_LIKE[name]), name)


def test_quick_amazon_set_is_within_every_tolerance_and_keeps_the_real_counts():
    """The quick profile's Amazon-670K-shaped recipe, generated in memory (as make reproduce does)."""
    params = registry.recipe_params(registry.manifests()["slide-amazon670k"], "quick")
    arrays = xc_data.generate(seed=670091, **params)
    train, test = XCData.from_arrays(arrays, "train_"), XCData.from_arrays(arrays, "test_")
    stats = xc_stats.measure(train, test)
    rows = {r["name"]: r for r in xc_stats.check(stats, "amazon-670k")}
    assert _failed(stats, "amazon-670k") == [], xc_stats.format_table(list(rows.values()), "amazon-670k")
    assert [rows[c]["note"] for c in ("features", "labels", "train_points")] == ["kept"] * 3


def _small(**kw):
    base = dict(seed=2, n_train=4000, n_test=200, n_features=20000, n_labels=5450)
    arrays = xc_data.generate(**{**base, **kw})
    return XCData.from_arrays(arrays, "train_"), XCData.from_arrays(arrays, "test_")


@pytest.mark.parametrize("change,fails", [
    (dict(word_zipf=0.0, content_zipf=0.0), "df_zipf_slope"),           # uniform words: no Zipf
    (dict(label_zipf=0.0), "label_freq_max_over_mean"),                  # uniform label popularity
    (dict(p_same_topic=0.0), "cooccurrence_lift"),                       # independent labels
    (dict(labels_per_point=4.0), "labels_per_point"),
    (dict(nnz_per_point=60.0), "nnz_per_point"),
])
def test_a_generator_without_the_property_fails_its_check(change, fails):
    assert fails in _failed(xc_stats.measure(*_small(**change)), "amazon-670k")


def test_flat_values_and_parallel_points_fail():
    train, test = _small()
    flat = XCData(train.indptr, train.indices, np.ones_like(train.values), train.label_indptr, train.labels,
                  train.n_features, train.n_labels)
    assert "idf_value_spearman" in _failed(xc_stats.measure(flat, test), "amazon-670k")
    same = train.subset(np.zeros(train.n_points, np.int64))
    assert {"random_pair_cosine", "random_pair_shared_fraction"} <= set(_failed(xc_stats.measure(same), "amazon-670k"))


def test_values_are_tfidf_rows_of_unit_norm():
    train, _ = _small()
    stats = xc_stats.measure(train)
    assert stats["row_norm_max_deviation"] < 1e-5 and stats["idf_value_spearman"] > 0.3


def test_generator_refuses_another_version():
    with pytest.raises(ValueError, match="version"):
        xc_data.generate(seed=1, n_train=10, n_test=2, n_features=50, n_labels=20, version=1)


def test_cli_prints_the_table_and_fails_on_a_miss(capsys, tmp_path):
    from impls.slide.data.xc_format import write_xc

    assert xc_stats.main(["slide-amazon670k", "--profile", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "amazon-670k" in out and "points_per_label" in out and " NO " not in out
    train, _ = _small(labels_per_point=3.0)
    write_xc(tmp_path / "train.txt", train.to_arrays())
    assert xc_stats.main([str(tmp_path / "train.txt"), "--like", "amazon-670k"]) == 1
    assert "labels_per_point" in capsys.readouterr().out


def test_mean_cosine_matches_the_pairwise_mean():
    rng = np.random.default_rng(0)
    h = np.maximum(rng.normal(size=(30, 8)), 0)
    h[3] = 0.0
    unit = h / np.maximum(np.linalg.norm(h, axis=1, keepdims=True), 1e-300)
    pairwise = unit @ unit.T
    expected = (pairwise.sum() - np.trace(pairwise)) / (30 * 29)
    assert mean_cosine(h) == pytest.approx(expected)
    assert mean_cosine(np.tile(h[:1], (5, 1))) == pytest.approx(1.0)
    assert np.isnan(mean_cosine(h[:1]))


def test_spearman_gives_ties_their_mean_rank():
    """Ties broken by position would correlate two constant-ish columns with each other."""
    idf = np.array([3.0, 3.0, 2.0, 2.0, 1.0, 1.0])
    assert np.isnan(xc_stats._spearman(idf, np.ones(6)))                    # binary values: no order
    assert np.isnan(xc_stats._spearman(idf[:2], np.ones(2)))
    assert xc_stats._spearman(idf, idf * 2) == pytest.approx(1.0)
    a, b = np.array([1.0, 2.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 2.0, 4.0, 4.0])
    ra, rb = [0, 1.5, 1.5, 3, 4], [0, 2, 1, 3.5, 3.5]                        # mean ranks, by hand
    assert xc_stats._spearman(a, b) == pytest.approx(np.corrcoef(ra, rb)[0, 1])


def test_binary_values_do_not_pass_as_tfidf():
    train, _ = _small()
    flat = dataclasses.replace(train, values=np.ones_like(train.values))
    stats = xc_stats.measure(flat.subset(np.arange(30)))     # 30 points: ties broken by position gave 0.42
    assert stats["idf_value_spearman"] == 0.0
    row = next(r for r in xc_stats.check(stats, "amazon-670k") if r["name"] == "idf_value_spearman")
    assert row["ok"] is False


def test_a_file_of_no_published_shape_is_shown_beside_the_nearest_set_not_judged(capsys, tmp_path):
    from impls.slide.data.xc_format import write_xc

    train, _ = _small(labels_per_point=3.0)          # labels a point far from either published set's
    write_xc(tmp_path / "train.txt", train.to_arrays())
    assert xc_stats.main([str(tmp_path / "train.txt")]) == 0
    out = capsys.readouterr().out
    assert "(guessed: the published set nearest in features and labels; pass --like" in out
    assert "not judged" in out and " NO " not in out.split("labels_per_point")[1].splitlines()[0]
    assert xc_stats.main([str(tmp_path / "train.txt"), "--like", "amazon-670k"]) == 1


def test_the_cosine_of_random_pairs_does_not_depend_on_the_values_scale():
    train, _ = _small(n_train=400)
    huge = dataclasses.replace(train, values=(train.values.astype(np.float64) * 1e20).astype(np.float32))
    plain, scaled = xc_stats.measure(train), xc_stats.measure(huge)
    assert np.isfinite(scaled["random_pair_cosine"])
    assert scaled["random_pair_cosine"] == pytest.approx(plain["random_pair_cosine"], rel=1e-4)


def test_one_label_a_point_says_why_co_occurrence_is_not_measurable():
    train, _ = _small(n_train=400)
    one = dataclasses.replace(train, label_indptr=np.arange(train.n_points + 1, dtype=train.label_indptr.dtype),
                              labels=train.labels[train.label_indptr[:-1]])
    [row] = [r for r in xc_stats.check(xc_stats.measure(one), "amazon-670k") if r["name"] == "cooccurrence_lift"]
    assert row["ok"] is None and row["note"] == "not measurable: no point (of those sampled) has two labels"


def test_a_handful_of_labels_is_no_tail_and_a_set_too_small_for_every_check_is_not_a_pass(tmp_path, capsys):
    """20 points over 5 of 100,000 labels, evenly: the unused labels would pass for a heavy
    tail, so the label shape checks are not judged; one point: nothing is, exit status 1."""
    rows = "\n".join(f"{i % 5} {i}:1 {i + 1}:1" for i in range(20))
    few = tmp_path / "few.txt"
    few.write_text(f"20 100 100000\n{rows}\n")
    xc_stats.main([str(few)])
    out = capsys.readouterr().out
    for name in ("label_freq_median_over_mean", "label_share_below_mean", "label_freq_max_over_mean"):
        line = next(line for line in out.splitlines() if line.startswith(name))
        assert " NO " not in line and " yes " not in line and "not measurable" in line, line
    one = tmp_path / "one.txt"
    one.write_text("1 100 100000\n3 1:1 2:1\n")
    assert xc_stats.main([str(one)]) == 1
    assert "nothing judged: the set is too small for every check" in capsys.readouterr().out
