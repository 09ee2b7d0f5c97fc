"""The suite's own synthetic XC sets written out as text are known as such, never labelled real
data (impls/slide/data/own_synthetic.py): the smoke profile's slide-amazon670k set exported as
scripts/slide_reference_check.py exports it, under a header that stands in for Amazon-670K's."""
from __future__ import annotations

import argparse
import shutil

import numpy as np
import pytest

from impls.harness import registry
from impls.slide import xc_stats
from impls.slide.data import dataset
from impls.slide.data.xc_format import write_xc

SET, PROFILE = "slide-amazon670k", "smoke"
TEST_POINTS = 200      # the test points the export writes


def _means(data: dataset.XCData) -> dict:
    return {"labels_per_point": data.labels.size / data.n_points, "nnz_per_point": data.indices.size / data.n_points,
            "points_per_label": data.labels.size / data.n_labels}


@pytest.fixture
def smoke_as_amazon(monkeypatch):
    """Amazon-670K's published shape and means replaced by the smoke set's (its sizes, its
    own means), as the real-data tests let a small file stand in for the real set."""
    train, _, _ = dataset.from_registry(SET, PROFILE)
    monkeypatch.setitem(xc_stats.PUBLISHED, "amazon-670k", {
        "features": train.n_features, "labels": train.n_labels, "train_points": train.n_points,
        "test_points": TEST_POINTS, **_means(train)})
    return train


@pytest.fixture
def exported(tmp_path, load_script, smoke_as_amazon):
    """(train.txt, test.txt): the smoke set's training split and TEST_POINTS of its test
    points, written by the reference check's export (the test file renamed to lie beside)."""
    script = load_script("slide_reference_check")
    a = argparse.Namespace(train=None, test=None, dataset=SET, profile=PROFILE, points=TEST_POINTS, seed=0)
    train, test_points = script.export(a, tmp_path / "out")
    test = train.with_name("test.txt")
    shutil.copy(test_points, test)
    return train, test


def test_generate_rows_are_the_generated_sets_rows():
    """The rows redrawn from the seed alone are the set's, at both splits' starts (what the
    check leans on): feature ids, term counts' positions and labels."""
    from impls.slide.data.xc_data import generate_rows

    params = registry.recipe_params(registry.manifests()[SET], PROFILE)
    seed = registry.manifests()[SET].spec["seed"]
    train, test, _ = dataset.from_registry(SET, PROFILE)
    for split, first in ((train, 0), (test, params["n_train"])):
        rows = generate_rows(seed, first, 40, **params)
        head = split.subset(np.arange(40))
        for field in ("indptr", "indices", "label_indptr", "labels"):
            np.testing.assert_array_equal(getattr(rows, field), getattr(head, field), err_msg=field)


def test_the_exported_smoke_set_is_not_called_real_data(exported):
    """Its header is the (stand-in) real set's and its contents meet every published check:
    before, it was labelled real data with its sha256."""
    train, test = exported
    data, _, info = dataset.real_pair(train, test)
    assert info["real"] is False and info["synthetic"] is True and "like" not in info
    assert info["own_synthetic"] == (f"{train} is the suite's own synthetic slide-amazon670k set (the training "
                                     "split of profile smoke), not real data")
    assert data.n_points == 4000 and info["sha256"] == registry.sha256_of(train)
    assert dataset.files_info(train, test)["synthetic"] is True      # read as ordinary files too (--real no)


def test_the_exported_smoke_set_given_as_the_real_amazon_is_refused(exported, monkeypatch):
    """DLSYSBENCH_AMAZON670K at the suite's own set: the capability is missing, so the real run
    is skipped and the claim reads "not measured: needs the real Amazon-670K"."""
    from impls.harness import capabilities
    from impls.slide.experiments import sweeps

    monkeypatch.setenv("DLSYSBENCH_AMAZON670K", str(exported[0]))
    reason = dataset.real_data_reason("slide-amazon670k-real")
    assert reason and reason.startswith("needs the real Amazon-670K") and (
        "is the suite's own synthetic slide-amazon670k set (the training split of profile smoke), not real data"
        in reason) and "--dataset slide-amazon670k --profile smoke" in reason, reason
    with pytest.raises(dataset.RealDataMismatch, match="suite's own synthetic slide-amazon670k"):
        dataset.from_registry("slide-amazon670k-real", PROFILE)
    capabilities._cached.cache_clear()
    try:
        out = sweeps.real_amazon_run(PROFILE, isolate=False)
    finally:
        capabilities._cached.cache_clear()
    assert out["source"] is None and "suite's own synthetic" in out["runs"][0]["skipped"]


def test_the_cli_says_so_and_labels_the_result_synthetic(exported, tmp_path, capsys):
    from impls.slide import train as cli_train

    out = tmp_path / "r.json"
    assert cli_train.main(["--train", str(exported[0]), "--test", str(exported[1]), "--method", "dense",
                           "--max-iterations", "2", "--eval-points", "20", "--quiet", "--threads", "1",
                           "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "is the suite's own synthetic slide-amazon670k set" in err and "on real data" not in err, err
    import json

    source = json.loads(out.read_text())["source"]
    assert source["real"] is False and source["synthetic"] is True


def test_a_file_of_the_same_recipe_and_shape_drawn_with_another_seed_is_still_real(smoke_as_amazon, tmp_path):
    """A real-format file the suite did not make, with a smoke profile's exact header: the rows
    are compared and differ, so it is read as real data, as before."""
    arrays = registry.draw(SET, seed=1, profile=PROFILE)
    train = dataset.XCData.from_arrays(arrays, "train_")
    test = dataset.XCData.from_arrays(arrays, "test_").subset(np.arange(TEST_POINTS))
    paths = [write_xc(tmp_path / f"{name}.txt", split.to_arrays()) for name, split in (("train", train), ("test", test))]
    from impls.slide.data import own_synthetic

    assert own_synthetic.own_set_of(paths[0]) is None and own_synthetic.own_set_of(paths[1]) is None
    _, _, info = dataset.real_pair(*paths)
    assert info["real"] is True and info["synthetic"] is False and "own_synthetic" not in info


def test_rescaled_values_and_dropped_labels_are_still_the_suites_rows_and_the_test_split_is_known(tmp_path):
    """Values ×10 and every third point's labels dropped (as a 'real-looking' copy would do):
    the rows are still the generator's; the test split is known as the test split."""
    from impls.slide.data import own_synthetic

    train, test, _ = dataset.from_registry(SET, PROFILE)
    drop = np.arange(train.n_points) % 3 == 0
    counts = np.where(drop, 0, np.diff(train.label_indptr))
    edited = dataset.XCData(train.indptr, train.indices, train.values * 10,
                            np.concatenate([[0], np.cumsum(counts)]),
                            train.labels[np.repeat(~drop, np.diff(train.label_indptr))], train.n_features, train.n_labels)
    path = write_xc(tmp_path / "edited_train.txt", edited.to_arrays())
    assert own_synthetic.own_set_of(path) == own_synthetic.OwnSet(SET, "train", (PROFILE,))
    path = write_xc(tmp_path / "split_test.txt", test.to_arrays())
    assert own_synthetic.own_set_of(path) == own_synthetic.OwnSet(SET, "test", (PROFILE,))
    other = dataset.XCData.from_arrays(registry.draw(SET, seed=1, profile=PROFILE), "train_")
    half = int(own_synthetic.SAME_SHARE * own_synthetic.HEAD_POINTS)
    for others, known in ((half - 1, True), (half + 1, False)):   # the first rows another draw's
        mixed = _concat(other.subset(np.arange(others)), train.subset(np.arange(others, train.n_points)))
        path = write_xc(tmp_path / f"mixed{others}_train.txt", mixed.to_arrays())
        assert (own_synthetic.own_set_of(path) is not None) is known, others


def _concat(a: dataset.XCData, b: dataset.XCData) -> dataset.XCData:
    """The points of ``a``, then those of ``b`` (same shape)."""
    return dataset.XCData(np.concatenate([a.indptr, b.indptr[1:] + a.indptr[-1]]), np.concatenate([a.indices, b.indices]),
                          np.concatenate([a.values, b.values]),
                          np.concatenate([a.label_indptr, b.label_indptr[1:] + a.label_indptr[-1]]),
                          np.concatenate([a.labels, b.labels]), a.n_features, a.n_labels)


def test_both_splits_tf_idf_weigh_by_the_training_splits_document_frequencies():
    """The test split's values use the training split's document frequencies, never its own
    (a test point's features must not weigh the test set); recomputed here from the raw term
    counts with numpy."""
    from impls.slide.data.xc_data import generate, generate_rows

    params = dict(n_features=20000, n_labels=5450)
    n_train, n_test = 2000, 600
    arrays = generate(2, n_train, n_test, **params)
    train = generate_rows(2, 0, n_train, n_train=n_train, n_test=n_test, **params)
    idf = np.log((1 + n_train) / (1 + np.bincount(train.indices, minlength=params["n_features"]))) + 1
    for prefix, first, n in (("train_", 0, n_train), ("test_", n_train, n_test)):
        rows = generate_rows(2, first, n, n_train=n_train, n_test=n_test, **params)
        raw = rows.values.astype(np.float64) * idf[rows.indices]
        norms = np.sqrt(np.add.reduceat(raw ** 2, rows.indptr[:-1]))
        expected = raw / np.repeat(norms, np.diff(rows.indptr))
        np.testing.assert_allclose(arrays[prefix + "values"], expected, rtol=1e-5, err_msg=prefix)
