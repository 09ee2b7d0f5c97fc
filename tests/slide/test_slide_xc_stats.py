"""The synthetic XC sets against the real sets' published figures and known shapes
(impls.slide.xc_stats), and the checks' power to fail."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from impls.harness import registry
from impls.slide.data import xc_data, xc_shape
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
    assert np.isnan(xc_shape.spearman(idf, np.ones(6)))                    # binary values: no order
    assert np.isnan(xc_shape.spearman(idf[:2], np.ones(2)))
    assert xc_shape.spearman(idf, idf * 2) == pytest.approx(1.0)
    a, b = np.array([1.0, 2.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 2.0, 4.0, 4.0])
    ra, rb = [0, 1.5, 1.5, 3, 4], [0, 2, 1, 3.5, 3.5]                        # mean ranks, by hand
    assert xc_shape.spearman(a, b) == pytest.approx(np.corrcoef(ra, rb)[0, 1])


def test_the_rank_fit_label_names_the_first_rank_the_fit_reads():
    """RANK_FIT_FIRST is 0-based: the fit starts at rank 11, as the README says; the table said 10.
    Counts off the line at ranks 1-10 and a power law from rank 11 on fit it exactly."""
    ranks = np.arange(1, 2001, dtype=np.float64)
    counts = np.round(1e6 * ranks ** -1.0)
    counts[:10] = 1e9 + np.arange(10)[::-1]                  # ranks 1-10: far above the line
    slope, r2, _ = xc_shape.rank_fit(counts)
    assert slope == pytest.approx(-1.0, abs=1e-3) and r2 == pytest.approx(1.0, abs=1e-6)
    first = xc_shape.RANK_FIT_FIRST + 1
    [note] = [what for name, *_, what in xc_stats.SHAPE_CHECKS if name == "df_zipf_r2"]
    assert f"R^2 over ranks {first} .. features seen / 10" in note, note


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
    assert ("(guessed: its labels a point, points a label and non-zeros a point are each within 2x of "
            "amazon-670k's; pass --like") in out and "scaled x" in out
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


def _label_sets(label_sets, n_labels):
    """A split of the points' ``label_sets`` (one feature each, all value 1) over ``n_labels`` labels."""
    n = len(label_sets)
    labels = [np.array(sorted(s), np.int32) for s in label_sets]
    label_indptr = np.r_[0, np.cumsum([a.size for a in labels])].astype(np.int64)
    return XCData(np.arange(n + 1, dtype=np.int64), (np.arange(n) % 50).astype(np.int32), np.ones(n, np.float32),
                  label_indptr, np.concatenate(labels), 50, n_labels)


def _independent_zipf_labels(seed, points=1000, n_labels=2000):
    """Label k on round(400 / k) points drawn independently of every other label's: no co-occurrence."""
    rng = np.random.default_rng(seed)
    sets = [set() for _ in range(points)]
    for k, count in enumerate(np.maximum(np.round(400 / np.arange(1, n_labels + 1)).astype(int), 1)):
        for i in rng.choice(points, count, replace=False):
            sets[i].add(k)
    return _label_sets([s or {int(rng.integers(n_labels))} for s in sets], n_labels)


def test_the_shuffled_baseline_keeps_each_points_labels_distinct_and_every_count():
    split = _independent_zipf_labels(0)
    ptr, labels = xc_shape.shuffled_labels(split.label_indptr, split.labels, split.n_labels,
                                            np.random.default_rng(1))
    np.testing.assert_array_equal(ptr, split.label_indptr)
    np.testing.assert_array_equal(np.bincount(labels, minlength=split.n_labels), split.label_counts())
    assert all(np.unique(labels[a:b]).size == b - a for a, b in zip(ptr[:-1], ptr[1:]))
    assert not np.array_equal(labels, split.labels)


def test_independent_labels_read_a_lift_near_one_and_planted_pairs_far_above_it():
    """A shuffle that may give a point one label twice counted its pairs twice: 0.55-0.63 here."""
    lifts = [xc_stats.measure(_independent_zipf_labels(seed), seed=seed, pairs=10)["cooccurrence_lift"]
             for seed in range(4)]
    assert all(abs(lift - 1.0) <= 0.2 for lift in lifts) and abs(np.mean(lifts) - 1.0) <= 0.1, lifts
    rng = np.random.default_rng(5)          # every point one pair (2j, 2j + 1), j Zipf over 1,000 pairs
    weights = 1.0 / np.arange(1, 1001)
    pair = rng.choice(1000, 1000, p=weights / weights.sum())
    planted = xc_stats.measure(_label_sets([{2 * j, 2 * j + 1} for j in pair], 2000), pairs=10)
    assert planted["cooccurrence_lift"] > 3.0


def test_label_shape_is_judged_over_the_labels_in_use_not_the_headers():
    """200 labels on 10 points each: flat under any header; 100,000 unused labels made it pass."""
    occurrences = np.random.default_rng(1).permutation(np.repeat(np.arange(200), 10))
    flat = _label_sets([{int(a), int(b)} for a, b in occurrences.reshape(-1, 2)], 200)
    label_checks = {"label_freq_median_over_mean", "label_share_below_mean", "label_freq_max_over_mean",
                    "label_zipf_slope"}
    for n_labels in (200, 100_000):
        stats = xc_stats.measure(dataclasses.replace(flat, n_labels=n_labels), pairs=10)
        assert label_checks <= set(_failed(stats, "amazon-670k")), n_labels
    assert stats["labels_used"] == pytest.approx(200 / 100_000)
    zipf = xc_stats.measure(_independent_zipf_labels(0), pairs=10)
    assert not label_checks & set(_failed(zipf, "amazon-670k")) and zipf["label_zipf_slope"] < -0.8


def _rows_note(stats, name):
    return next(r for r in xc_stats.check(stats, "amazon-670k") if r["name"] == name)


def test_points_without_features_have_no_cosine_and_identical_rows_are_not_called_small():
    train, _ = _small(n_train=300)
    bare = dataclasses.replace(train, indptr=np.zeros_like(train.indptr), indices=train.indices[:0],
                               values=train.values[:0])
    stats = xc_stats.measure(bare)
    for name in ("random_pair_cosine", "random_pair_shared_fraction"):
        row = _rows_note(stats, name)
        assert np.isnan(stats[name]) and row["ok"] is None
        assert row["note"].startswith("not measurable: no sampled pair of points both has a feature"), row
    same = xc_stats.measure(train.subset(np.zeros(300, np.int64)))
    assert _rows_note(same, "idf_value_spearman")["note"].startswith(
        "not measurable: every sampled feature is in equally many points (idf constant)")
    seen = same["features_seen"]
    assert _rows_note(same, "df_zipf_slope")["note"].startswith(f"not measurable: {seen} features in use, fewer than")
    assert not any("too small" in r["note"] for r in xc_stats.check(same, "amazon-670k"))


def test_a_handful_of_points_is_not_judged_whatever_they_read(tmp_path, capsys):
    """Four points of 20 private features and one shared: cosine, overlap and TF-IDF order all
    read as a text set's would, but four points stand for no set."""
    rng = np.random.default_rng(0)
    rows = "\n".join(f"{i} 0:0.01 " + " ".join(f"{1 + 20 * i + k}:{v:.3f}" for k, v in
                                                 enumerate(rng.uniform(0.3, 1.0, 20))) for i in range(4))
    four = tmp_path / "four.txt"
    four.write_text(f"4 100 50\n{rows}\n")
    assert xc_stats.main([str(four)]) == 1
    out = capsys.readouterr().out
    assert " yes " not in out and "nothing judged" in out
    line = next(line for line in out.splitlines() if line.startswith("random_pair_cosine"))
    assert f"4 points, fewer than the {xc_stats.POINTS_MIN}" in line


def test_a_point_with_thousands_of_labels_does_not_blow_the_pair_sample():
    """The sample is sized from the mean labels per point; one point of 3,000 labels alone
    has 4.5M pairs, which a bound of 20,000 leaves out (counted), and the rest stay within
    twice the bound."""
    rng = np.random.default_rng(0)
    sets = [set(rng.choice(5000, 3, replace=False).tolist()) for _ in range(1999)] + [set(range(3000))]
    split = _label_sets(sets, 5000)
    out = xc_shape.cooccurrence(split, np.random.default_rng(1), 20_000)
    assert out["cooccurrence_wide_points"] == 1
    assert out["cooccurrence_points"] == 1999
    assert out["cooccurrence_pair_occurrences"] == 1999 * 3 <= 2 * 20_000
    tight = xc_shape.cooccurrence(split, np.random.default_rng(1), 300)   # the 3-label points' pairs cut at 600
    assert tight["cooccurrence_pair_occurrences"] <= 600 and tight["cooccurrence_points"] == 200
    [row] = [r for r in xc_stats.check(xc_stats.measure(split, max_label_pairs=20_000), "amazon-670k")
             if r["name"] == "cooccurrence_lift"]
    assert "1 sampled point(s) left out" in row["note"]


def _binary_set_of_another_kind(tmp_path):
    """A Bibtex-like file: 159 labels, 2.4 a point (about 30 points a label), every value 1: near
    neither published set's means, and binary, as a bag-of-words set of another kind is."""
    from impls.slide.data.xc_format import write_xc

    train, _ = _small(n_train=2000, n_features=1800, n_labels=159, labels_per_point=2.4, nnz_per_point=55.0)
    flat = dataclasses.replace(train, values=np.ones_like(train.values))
    return write_xc(tmp_path / "bib_train.txt", flat.to_arrays())


def test_a_set_near_neither_published_set_is_shown_alone_and_its_shapes_only_describe_it(tmp_path, capsys):
    """Nearest by features and labels, it was set beside Amazon-670K, its counts "scaled x0.0002",
    its binary values read as a Spearman of 0 judged NO, and it exited 1 on shapes of TF-IDF sets."""
    path = str(_binary_set_of_another_kind(tmp_path))
    assert xc_stats.main([path]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[0]
    assert head.startswith("no published set to compare with (labels a point ") and "within 2x of either's" in head
    assert "amazon-670k, delicious-200k (--like SET compares with one" in head
    assert "unlike the text/TF-IDF sets SLIDE was measured on; a description of the set, not a failure" in out
    assert "scaled x" not in out and "compared with" not in out and " NO " not in out and " yes " not in out
    idf = next(line for line in out.splitlines() if line.startswith("idf_value_spearman"))
    assert " nan " in idf and "not measurable: every value is equal (binary)" in idf, idf
    assert xc_stats.main([path, "--like", "amazon-670k"]) == 1        # the comparison asked for still judges
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()[2:] if line.split()}
    assert " NO " in rows["idf_value_spearman"] and " NO " in rows["points_per_label"]
    assert "scaled x" not in out and "not a scaled copy" in rows["labels"]


def test_like_none_shows_a_published_sets_copy_alone(capsys):
    assert xc_stats.main(["slide-amazon670k", "--profile", "smoke", "--like", "none"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no published set to compare with (--like none)") and "670,091" not in out


def test_only_a_set_near_a_published_one_is_guessed_to_be_like_it():
    pub = xc_stats.PUBLISHED["amazon-670k"]
    stats = {k: pub[k] for k in xc_stats.NEAR_MEANS}
    assert xc_stats.guess_like(stats) == "amazon-670k"
    assert xc_stats.guess_like({**stats, "points_per_label": pub["points_per_label"] * 1.9}) == "amazon-670k"
    assert xc_stats.guess_like({**stats, "points_per_label": pub["points_per_label"] * 2.1}) is None
    assert xc_stats.guess_like({**stats, "nnz_per_point": 0.0}) is None
    delicious = {k: xc_stats.PUBLISHED["delicious-200k"][k] * 1.5 for k in xc_stats.NEAR_MEANS}
    assert xc_stats.guess_like(delicious) == "delicious-200k"


def test_binary_values_are_not_measurable_alone_and_fail_beside_a_tfidf_set():
    train, _ = _small(n_train=300)
    stats = xc_stats.measure(dataclasses.replace(train, values=np.ones_like(train.values)))
    [alone] = [r for r in xc_stats.check(stats, None) if r["name"] == "idf_value_spearman"]
    assert alone["ok"] is None and alone["shape"] is None and alone["note"].startswith(
        "not measurable: every value is equal (binary)")
    [beside] = [r for r in xc_stats.check(stats, "delicious-200k") if r["name"] == "idf_value_spearman"]
    assert beside["ok"] is False and "delicious-200k's are TF-IDF" in beside["note"]


def test_the_help_says_what_each_exit_status_means(capsys):
    with pytest.raises(SystemExit):
        xc_stats.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Exit status: 0 when the set is measured and every judged check holds; 1 when a check of the " \
           "comparison fails" in text and "--like none, or near neither) exits 0" in text


# -- found by a mutation probe: statistics no test read ------------------------------------------

def _set(indptr, indices, label_indptr, labels, n_features, n_labels):
    from impls.slide.data.dataset import XCData

    return XCData(np.asarray(indptr), np.asarray(indices), np.ones(len(indices)), np.asarray(label_indptr),
                  np.asarray(labels), n_features, n_labels)


def test_a_label_distribution_without_a_tail_fails_the_heavy_tail_row():
    """200 labels on exactly 2 points each: no label is below the mean, none above it."""
    from impls.slide.data import xc_shape

    flat = _set(np.arange(401), np.arange(400) % 50, np.arange(401), np.repeat(np.arange(200), 2), 50, 200)
    assert xc_shape.label_frequency(flat)[0]["label_share_below_mean"] == 0.0
    skewed = _set(np.arange(150), np.arange(149) % 50, np.arange(150), np.r_[np.zeros(50, int), np.arange(1, 100)],
                  50, 100)                                  # one label on 50 points, 99 on one each
    stats = xc_shape.label_frequency(skewed)[0]
    assert stats["top1pct_label_share"] == pytest.approx(50 / 149)


def test_random_pairs_are_of_distinct_points_and_share_over_the_smaller():
    from impls.slide.data import xc_shape

    rng = np.random.default_rng(0)
    apart = _set([0, 1, 2], [0, 1], [0, 1, 2], [0, 1], 2, 2)            # two orthogonal one-feature points
    out = xc_shape.random_pairs(apart, rng, 2000)
    assert out["random_pair_cosine"] == 0.0 and out["random_pair_shared_fraction"] == 0.0
    inside = _set([0, 2, 10], [0, 1, 0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2], [0, 1], 8, 2)  # 2 features inside 8
    assert xc_shape.random_pairs(inside, rng, 2000)["random_pair_shared_fraction"] == 1.0


def test_the_most_popular_baseline_predicts_five_labels():
    from impls.slide.core.evaluate import most_popular_baseline

    train = _set(np.arange(6), np.zeros(5, int), np.arange(6), np.arange(5), 1, 6)       # labels 0..4 once each
    test = _set([0, 1], [0], [0, 1], [4], 1, 6)
    assert most_popular_baseline(train, test, np.arange(1))["p_at_5"] == pytest.approx(0.2)


def test_the_evaluation_subset_is_the_first_points_of_its_seeded_shuffle():
    """Every point when no count is given; else the first n of the documented shuffle, so a
    run's P@1 is on the same points as an older run's of the same seed."""
    from impls.slide.core.evaluate import eval_rows

    d = _set(np.arange(11), np.zeros(10, int), np.arange(11), np.zeros(10, int), 1, 1)
    assert np.array_equal(eval_rows(d, None, 0), np.arange(10))
    assert np.array_equal(eval_rows(d, 3, 0), np.sort(np.random.default_rng(104729).permutation(10)[:3]))


def test_co_occurrence_is_measured_below_a_tenth_of_all_pairs_and_saturated_above():
    """200 labels have 19,900 possible pairs. 500 points of 3 labels hold 1,500 pair occurrences
    (7.5%): measured, a finite lift. 1,000 points of 5 labels hold 10,000 (50%): saturated."""
    rng = np.random.default_rng(0)
    below = _label_sets([set(rng.choice(200, 3, replace=False).tolist()) for _ in range(500)], 200)
    got = xc_shape.cooccurrence(below, np.random.default_rng(1), max_pairs=20_000)
    assert got["cooccurrence_pair_occurrences"] == 1500
    assert got["cooccurrence_saturated"] is False and np.isfinite(got["cooccurrence_lift"])
    above = _label_sets([set(rng.choice(200, 5, replace=False).tolist()) for _ in range(1000)], 200)
    got = xc_shape.cooccurrence(above, np.random.default_rng(1), max_pairs=20_000)
    assert got["cooccurrence_saturated"] is True and np.isnan(got["cooccurrence_lift"])


@pytest.mark.parametrize("factor, ok", [(1.0295, True), (1.0305, False), (0.9705, True), (0.9695, False)])
def test_a_mean_is_judged_against_the_published_one_not_the_measured(factor, ok):
    """±3% of the published labels a point: 3.05% above it fails, though it is within 3% of
    the measured value itself."""
    stats = dict(xc_stats.measure(_small(n_train=400)[0]))
    stats["labels_per_point"] = xc_stats.PUBLISHED["amazon-670k"]["labels_per_point"] * factor
    [row] = [r for r in xc_stats.check(stats, "amazon-670k") if r["name"] == "labels_per_point"]
    assert row["ok"] is ok, row


def test_a_published_set_that_judges_nothing_is_not_a_pass(tmp_path, capsys, monkeypatch):
    """With ``--like``, every row unjudged (a set too small, its means not judged): exit 1."""
    rows = "\n".join(f"{i} {i}:1 {i + 1}:1" for i in range(5))
    five = tmp_path / "five.txt"
    five.write_text(f"5 100 50\n{rows}\n")
    real = xc_stats.check
    monkeypatch.setattr(xc_stats, "check", lambda *a, **k: [dict(r, ok=None) for r in real(*a, **k)])
    assert xc_stats.main([str(five), "--like", "amazon-670k"]) == 1
    assert "nothing judged" in capsys.readouterr().out
