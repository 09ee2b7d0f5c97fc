"""SLIDE's command lines and trainers on the inputs users bring: points without labels, sets
smaller than a batch, splits of different shapes, tiny or odd XC files, compressed files."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from impls.slide import xc_stats
from impls.slide.core.config import SlideConfig
from impls.slide.data import xc_data
from impls.slide.data.dataset import XCData, trainable_rows
from impls.slide.data.xc_format import XCFormatError, parse_xc_bytes
from impls.slide.training import loop


def small_pair(unlabelled: float = 0.0) -> tuple[XCData, XCData]:
    arrays = xc_data.generate(seed=1, n_train=400, n_test=60, n_features=300, n_labels=200, labels_per_point=2.0,
                              nnz_per_point=10, labels_per_topic=8, topic_pool=8, words_per_label=4)
    train, test = XCData.from_arrays(arrays, "train_"), XCData.from_arrays(arrays, "test_")
    if unlabelled:
        drop = np.random.default_rng(0).random(train.n_points) < unlabelled
        lengths = np.where(drop, 0, np.diff(train.label_indptr))
        keep = np.repeat(~drop, np.diff(train.label_indptr))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        train = XCData(train.indptr, train.indices, train.values, indptr, train.labels[keep],
                       train.n_features, train.n_labels)
    return train, test


def test_points_without_labels_are_never_trained_on():
    train, test = small_pair(unlabelled=0.25)
    rows = trainable_rows(train, test)
    assert rows is not None and 0 < rows.size < train.n_points
    assert (np.diff(train.label_indptr)[rows] > 0).all()
    assert train.stats()["unlabelled_points"] == train.n_points - rows.size
    assert trainable_rows(*small_pair()) is None  # every point labelled: draw from all


@pytest.mark.parametrize("method", ["slide", "dense", "sampled"])
def test_each_trainer_draws_its_batches_from_the_labelled_points_only(method, monkeypatch):
    pytest.importorskip("torch")
    from impls.slide.core.network import SlideNetwork
    from impls.slide.training import dense_torch
    from impls.slide.training.trainer import train as train_slide

    train, test = small_pair(unlabelled=0.25)
    empty = set(np.flatnonzero(np.diff(train.label_indptr) == 0).tolist())
    drawn: list[np.ndarray] = []
    if method == "slide":
        real_step = SlideNetwork.step
        monkeypatch.setattr(SlideNetwork, "step",  # (the compile warm-up steps a set of its own)
                            lambda self, d, r: (d is train and drawn.append(np.array(r))) or real_step(self, d, r))
        result = train_slide(SlideConfig(threads=1, batch=32), train, test, time_budget_s=None,
                             max_iterations=12, eval_every=0, eval_points=20)
    else:
        real_step = dense_torch._Trainer.step
        monkeypatch.setattr(dense_torch._Trainer, "step",
                            lambda self, d, r: (d is train and drawn.append(np.array(r))) or real_step(self, d, r))
        result = dense_torch.train_dense(SlideConfig(threads=1, batch=32), train, test, time_budget_s=None,
                                         max_iterations=12, eval_every=0, eval_points=20, method=method)
        assert result["final_loss"] >= 0  # a cross-entropy: a row without a target would make it negative
    assert drawn and not empty & set(np.concatenate(drawn).tolist())
    assert result["data"]["train"]["unlabelled_points"] == len(empty)


@pytest.mark.parametrize("method", ["slide", "dense", "sampled"])
def test_each_trainer_cuts_a_batch_larger_than_the_trainable_points(method):
    pytest.importorskip("torch")
    from impls.slide.training import dense_torch
    from impls.slide.training.trainer import train as train_slide

    train, test = small_pair(unlabelled=0.25)
    trainable = trainable_rows(train, test).size
    config = SlideConfig(threads=1, batch=10**9)      # buffers of a billion rows would not fit
    common = dict(time_budget_s=None, max_iterations=2, eval_every=0, eval_points=20)
    result = (train_slide(config, train, test, **common) if method == "slide"
              else dense_torch.train_dense(config, train, test, method=method, **common))
    assert result["params"]["batch"] == trainable and result["samples"] == 2 * trainable


@pytest.mark.parametrize("method", ["slide", "sampled"])
def test_values_too_large_for_float32_stop_training_with_the_reason(method):
    """Feature values of 1e22 overflow float32 within a few batches: training stops with a
    TrainingDiverged (one line, exit 2 on the command line), never a crash or a P@1 of NaNs."""
    pytest.importorskip("torch")
    from impls.slide.core.config import TrainingDiverged
    from impls.slide.training import dense_torch
    from impls.slide.training.trainer import train as train_slide

    train, test = small_pair()
    train = XCData(train.indptr, train.indices, train.values * np.float32(1e22), train.label_indptr,
                   train.labels, train.n_features, train.n_labels)
    common = dict(time_budget_s=None, max_iterations=200, eval_every=0, eval_points=20)
    config = SlideConfig(threads=1, batch=32)
    with pytest.raises(TrainingDiverged, match="training diverged at batch [0-9]+: .* lower --lr"):
        if method == "slide":
            train_slide(config, train, test, **common)
        else:
            dense_torch.train_dense(config, train, test, method=method, **common)


def test_the_curve_counts_the_samples_actually_trained_when_the_set_is_smaller_than_a_batch():
    run = loop.run(lambda rows: 0.0, lambda it, s, loss: {"iteration": it}, n_points=5, batch=256, seed=0,
                   timer=loop.WallTimer(), schedule=loop.EvalSchedule(2), time_budget_s=None, max_iterations=4)
    assert run.samples == 20 and [p["samples"] for p in run.curve] == [0, 10, 20]


def test_train_rows_restrict_the_loop():
    seen = []
    loop.run(lambda rows: seen.append(rows.copy()) or 0.0, lambda it, s, loss: {"iteration": it}, n_points=10,
             batch=2, seed=0, timer=loop.WallTimer(), schedule=loop.EvalSchedule(), time_budget_s=None,
             max_iterations=9, train_rows=np.array([1, 4, 7]))
    assert set(np.concatenate(seen).tolist()) == {1, 4, 7}


@pytest.mark.parametrize("change, message", [
    ("features", "train has 300 features and 200 labels, test 301 and 200"),
    ("no test labels", "no test point has a label"),
    ("no train labels", "no training point has a label"),
    ("no train features", "no training point has a feature"),
])
def test_pairs_that_cannot_be_trained_or_scored_are_refused(change, message):
    train, test = small_pair()
    if change == "features":
        test = XCData(test.indptr, test.indices, test.values, test.label_indptr, test.labels, 301, test.n_labels)
    elif change == "no test labels":
        test = XCData(test.indptr, test.indices, test.values, np.zeros_like(test.label_indptr), test.labels[:0],
                      test.n_features, test.n_labels)
    elif change == "no train features":
        train = XCData(np.zeros_like(train.indptr), train.indices[:0], train.values[:0], train.label_indptr,
                       train.labels, train.n_features, train.n_labels)
    else:
        train = XCData(train.indptr, train.indices, train.values, np.zeros_like(train.label_indptr),
                       train.labels[:0], train.n_features, train.n_labels)
    with pytest.raises(ValueError, match=message):
        trainable_rows(train, test)


def test_a_finite_but_absurd_loss_is_divergence_for_every_method():
    """A loss of 1e26 (values of 1e30 through a dense layer) is not a model: training stops."""
    from impls.slide.core.config import TrainingDiverged

    with pytest.raises(TrainingDiverged, match=r"at batch 3: the loss \(1.5e\+26\) is above 1e\+06"):
        loop.run(lambda rows, out=iter([2.0, 5.0, 1.5e26]): next(out), lambda it, s, loss: {"iteration": it},
                 n_points=10, batch=2, seed=0, timer=loop.WallTimer(), schedule=loop.EvalSchedule(),
                 time_budget_s=None, max_iterations=9)


def _train_two_dense_batches(tmp_path, capsys, train: Path, test: Path) -> str:
    """What ``python -m impls.slide.train`` prints on stderr for two dense batches on the files."""
    from impls.slide.train import main

    main(["--train", str(train), "--test", str(test), "--json", str(tmp_path / "o.json"), "--quiet",
          "--method", "dense", "--max-iterations", "2", "--threads", "1"])
    return capsys.readouterr().err


@pytest.mark.parametrize("train, test, said, unsaid", [
    ("4 20 3\n0 0:1\n1\n2 2:1e9\n1 3:1\n", "2 20 3\n0 0:1\n1 1:1\n",
     ["1 of 4 training points have no features", "the training file holds a feature value of 1e+09"],
     ["test points have no features", "test file holds"]),
    # a row of zero values is the same all-zero input as a row without features
    ("3 20 3\n0 0:0 4:0\n1 1:1\n2 2:1\n", "2 20 3\n0 0:1\n1 1:0\n",
     ["1 of 3 training points have no features (or only zero values)",
      "1 of 2 test points have no features (or only zero values)"], []),
])
def test_train_warns_of_points_without_features_and_of_values_far_above_tf_idf(tmp_path, capsys, train, test,
                                                                               said, unsaid):
    err = _train_two_dense_batches(tmp_path, capsys, write(tmp_path / "train.txt", train),
                                   write(tmp_path / "test.txt", test))
    assert all(text in err for text in said) and not any(text in err for text in unsaid), err


def test_train_warns_of_test_points_whose_labels_no_training_point_carries(tmp_path, capsys):
    """Labels seen only in the test file cap P@1: the warning gives the cap."""
    train = write(tmp_path / "train.txt", "3 20 6\n0 0:1\n1 1:1\n0,1 2:1\n")
    test = write(tmp_path / "test.txt", "4 20 6\n3 0:1\n4,5 1:1\n1,5 2:1\n0 3:1\n")
    err = _train_two_dense_batches(tmp_path, capsys, train, test)
    assert "2 of 4 test points carry only labels that no training point carries" in err
    assert "P@1 is at most 0.5 (are the two files of one set, with the same label ids?)" in err
    few = write(tmp_path / "few.txt", "30 20 6\n" + "0 0:1\n" * 29 + "5 1:1\n")    # 1 in 30: a tail label
    err = _train_two_dense_batches(tmp_path, capsys, train, few)
    assert "1 of 30 test points carry only labels" in err and "one set" not in err, err
    shared = write(tmp_path / "shared.txt", "2 20 6\n0 0:1\n1,5 1:1\n")
    assert "carry only labels" not in _train_two_dense_batches(tmp_path, capsys, train, shared)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_train_names_both_files_when_their_shapes_differ_before_parsing(tmp_path, capsys):
    from impls.slide.train import main

    train = write(tmp_path / "train.txt", "2 20 3\n0 0:1\n1 1:1\n")
    test = write(tmp_path / "test.txt", "1 30 3\n0 25:1\n")
    assert main(["--train", str(train), "--test", str(test), "--json", str(tmp_path / "o.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "train.txt:1 has 20 features and 3 labels" in err and "test.txt:1 has 30 and 3" in err


def test_trailing_blank_lines_beyond_n_are_not_points_but_a_blank_line_inside_still_counts():
    arrays = parse_xc_bytes(b"2 4 3\n0 0:1\n1 1:1\n\n\r\n  \n")
    assert arrays["indptr"].size == 3
    with pytest.raises(XCFormatError, match=r":3: empty label list"):
        parse_xc_bytes(b"2 4 3\n0 0:1\n\n1 1:1\n")


def test_a_blank_line_inside_read_as_a_point_is_named_when_the_count_is_off():
    arrays = parse_xc_bytes(b"3 4 3\n0 0:1\n\n1 1:1\n", allow_empty_labels=True)
    np.testing.assert_array_equal(arrays["label_indptr"], [0, 1, 1, 2])
    with pytest.raises(XCFormatError, match=r":5: more data lines than the header's N=3 \(line 3 is blank"):
        parse_xc_bytes(b"3 4 3\n0 0:1\n\n1 1:1\n2 2:1\n", allow_empty_labels=True)
    with pytest.raises(XCFormatError, match=r":5: more data lines than the header's N=3$"):
        parse_xc_bytes(b"3 4 3\n0 0:1\n1 3:1\n1 1:1\n2 2:1\n", allow_empty_labels=True)


def test_a_line_that_starts_with_a_feature_has_no_labels():
    with pytest.raises(XCFormatError, match=r":3: empty label list"):
        parse_xc_bytes(b"2 4 3\n0 0:1\n1:0.5 3:2\n")
    arrays = parse_xc_bytes(b"2 4 3\n0 0:1\n1:0.5 3:2\n", allow_empty_labels=True)
    np.testing.assert_array_equal(arrays["label_indptr"], [0, 1, 1])
    np.testing.assert_array_equal(arrays["indices"], [0, 1, 3])
    np.testing.assert_allclose(arrays["values"], [1, 0.5, 2])
    with pytest.raises(XCFormatError, match=r":3: expected a label list"):   # a label list, then a colon
        parse_xc_bytes(b"2 4 3\n0 0:1\n1,2:1 3:2\n", allow_empty_labels=True)


def test_a_huge_first_token_is_named_a_feature_or_a_label_by_what_follows_it():
    with pytest.raises(XCFormatError, match=r":3: feature index out of range"):
        parse_xc_bytes(b"2 4 3\n0 0:1\n99999999999:0.5\n", allow_empty_labels=True)
    with pytest.raises(XCFormatError, match=r":3: label index out of range"):
        parse_xc_bytes(b"2 4 3\n0 0:1\n99999999999 1:0.5\n")
    with pytest.raises(XCFormatError, match=r":3: label index out of range"):
        parse_xc_bytes(b"2 4 3\n0 0:1\n0,99999999999 1:0.5\n")


@pytest.mark.parametrize("header, name", [(b"1 4 3000000000", "L"), (b"1 3000000000 3", "D")])
def test_a_header_beyond_32_bit_indices_fails_at_line_1(header, name):
    with pytest.raises(XCFormatError, match=rf":1: header's {name}=3000000000 is above 2,147,483,647"):
        parse_xc_bytes(header + b"\n0 0:1\n")


def test_the_line_count_of_a_short_file_leaves_out_blank_lines_at_its_end():
    """Short even with its blank lines as points: the count to write is that of the lines before them."""
    with pytest.raises(XCFormatError, match=r":1: header says N=6 points but the file has 3 data lines: .*"
                                            r"write the real count, 3, as N"):
        parse_xc_bytes(b"6 4 3\n0 0:1\n1 1:1\n2 2:1\n\n \r\n")


def test_an_exponent_too_large_for_any_float_is_not_a_finite_value():
    with pytest.raises(XCFormatError, match=r":2: feature value inf is not a finite float32"):
        parse_xc_bytes(b"1 4 3\n0 0:1e18446744073709551617\n")


def test_a_zero_with_any_exponent_is_zero():
    arrays = parse_xc_bytes(b"1 4 3\n0 0:0e400 1:-0.0e-999 2:0.5e1\n")
    np.testing.assert_array_equal(arrays["values"], [0.0, 0.0, 5.0])


def test_a_label_listed_twice_on_a_line_is_kept_once_and_the_repeat_is_logged(caplog):
    text = b"3 5 6\n4,1,4 0:1\n2 1:1\n5,5,5,0 2:1 2:2\n"
    with caplog.at_level("WARNING"):
        arrays = parse_xc_bytes(text, "dup.txt")
    assert arrays["label_indptr"].tolist() == [0, 2, 3, 5]
    assert arrays["labels"].tolist() == [4, 1, 2, 5, 0]      # the file's order, first of each
    assert arrays["indices"].tolist() == [0, 1, 2, 2]       # a repeated feature is kept
    assert "dup.txt: 2 of 3 points list a label more than once" in caplog.text
    split = XCData(*(arrays[f] for f in ("indptr", "indices", "values", "label_indptr", "labels")), 5, 6)
    assert split.stats()["labels_per_point"] == 5 / 3


def test_the_repeated_label_warning_comes_again_when_the_parsed_cache_is_read(tmp_path, caplog):
    from impls.slide.data.xc_format import read_xc_cached

    path = write(tmp_path / "dup.txt", "3 5 6\n4,1,4 0:1\n2 1:1\n5,5,5,0 2:1 2:2\n")
    for read in ("parsed", "from the cache"):
        caplog.clear()
        with caplog.at_level("WARNING"):
            arrays = read_xc_cached(path, cache_dir=tmp_path / "cache")
        assert "dup.txt: 2 of 3 points list a label more than once" in caplog.text, read
        assert set(arrays) == {"indptr", "indices", "values", "label_indptr", "labels", "shape"}
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1


def test_a_file_without_repeated_labels_parses_to_the_same_arrays_and_logs_nothing(caplog):
    text = b"2 4 6\n5,0 0:1 3:0.5\n1,2,3 1:2\n"
    with caplog.at_level("WARNING"):
        arrays = parse_xc_bytes(text, "plain.txt")
    assert arrays["labels"].tolist() == [5, 0, 1, 2, 3] and arrays["label_indptr"].tolist() == [0, 2, 5]
    assert caplog.text == ""


def test_a_header_promising_more_points_than_lines_fails_before_allocating():
    with pytest.raises(XCFormatError, match=r":1: header says N=40000000000 points but the file has 1 data lines"):
        parse_xc_bytes(b"40000000000 4 3\n0 0:1\n")


def _zipped(text: bytes) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("train.txt", text)
    return buffer.getvalue()


def _packed(kind: str, text: bytes) -> bytes:
    import bz2
    import lzma

    return {"gzip": gzip.compress, "zip": _zipped, "bz2": bz2.compress, "xz": lzma.compress,
            "bom": lambda t: b"\xef\xbb\xbf" + t}[kind](text)


@pytest.mark.parametrize("kind, hint", [("gzip", "looks gzip-compressed"), ("zip", "looks a zip archive"),
                                        ("bz2", "looks bzip2-compressed"), ("xz", "looks xz-compressed"),
                                        ("bom", "byte-order mark")])
def test_a_compressed_file_or_a_bom_is_named(kind, hint):
    with pytest.raises(XCFormatError, match=hint) as caught:
        parse_xc_bytes(_packed(kind, b"2 4 3\n0 0:1\n1 1:1\n"))
    assert not set(str(caught.value)) & set("\x1f\x8b\xef\xbb\xbf\ufffd\x03\x04"), str(caught.value)  # no raw bytes


@pytest.mark.parametrize("token", ["1." + "0" * 350, "1" + "0" * 30 + ".5", "0." + "0" * 30 + "25",
                                   "3" * 40 + "e-39", "0.1234567890123456789012345", "9" * 25])
def test_a_value_with_more_digits_than_a_double_holds_is_read_to_float32(token):
    arrays = parse_xc_bytes(f"1 4 3\n0 0:{token}\n".encode())
    assert arrays["values"][0] == np.float32(float(token))


def test_the_label_stamp_is_sized_by_the_labels_in_the_file_not_the_header(monkeypatch):
    from impls.slide.data import xc_format

    widths = []
    real = xc_format.K.merge_repeated_rows
    monkeypatch.setattr(xc_format.K, "merge_repeated_rows",
                        lambda p, i, v, width: (widths.append(width), real(p, i, v, width))[1])
    arrays = parse_xc_bytes(b"2 4 2000000000\n0,3,3 0:1\n1 1:1\n")
    assert widths == [4] and arrays["labels"].tolist() == [0, 3, 1]


def test_xc_stats_counts_a_repeated_feature_once_with_its_values_summed():
    arrays = parse_xc_bytes(b"2 10 5\n0 0:1 0:2\n1 1:1\n")
    assert arrays["indices"].tolist() == [0, 0, 1]             # the parser keeps both entries
    split = XCData(*(arrays[f] for f in ("indptr", "indices", "values", "label_indptr", "labels")), 10, 5)
    stats = xc_stats.measure(split)
    assert stats["nnz_per_point"] == 1.0 and stats["points_with_a_repeated_feature"] == 1
    assert stats["df_max_fraction"] == 0.5 and stats["row_norm_mean"] == pytest.approx(2.0)
    assert split.indices.tolist() == [0, 0, 1]                 # the caller's arrays are left as they were


def test_a_header_beyond_32_bit_indices_is_refused_before_parsing(tmp_path):
    from impls.slide.data.dataset import RealDataMismatch, check_same_shape

    small = write(tmp_path / "a.txt", "1 4 3\n0 0:1\n")
    huge = write(tmp_path / "b.txt", "1 4 3000000000\n0 0:1\n")
    with pytest.raises(RealDataMismatch, match=r"b.txt:1: header's L=3000000000 is above 2,147,483,647"):
        check_same_shape(small, huge)


@pytest.mark.parametrize("text", [
    "4 6 3\n0,1 0:1 1:2\n2 2:0.5 3:1.5\n1 0:3\n0,2 4:1 5:1 0:1\n",   # fewer features than the Zipf fit's ranks
    "2 6 3\n0 0:1 1:1\n1\n",                                         # the last point has no features
    "2 6 3\n0\n1\n",                                                 # no point has features
    "3 6 3\n0 0:1 0:2\n1 0:1\n2 1:1\n",                              # a row repeats a feature
])
def test_xc_stats_measures_tiny_and_odd_files(tmp_path, text, capsys):
    path = write(tmp_path / "t.txt", text)
    status = xc_stats.main([str(path)])
    out = capsys.readouterr()
    assert status in (0, 1) and "Traceback" not in out.err and "features" in out.out
    for line in out.out.splitlines():     # a statistic the set is too small for is not a failure
        if line.split()[:1] in (["df_zipf_slope"], ["df_zipf_r2"]) and " nan " in f" {line} ":
            assert " NO " not in line and "not measurable" in line


def test_xc_stats_refuses_with_one_line(tmp_path, capsys):
    cases = [
        ([str(write(tmp_path / "h0.txt", "0 20 3\n"))], "no points"),
        (["no-such-file.txt"], "no such file, and no extreme-classification dataset of that name"),
        (["bandana-post"], "no extreme-classification dataset of that name"),
        ([str(tmp_path / "h0.txt"), "--profile", "smoke"], "--profile only with a registry dataset"),
        (["slide-amazon670k", "--test", str(tmp_path / "h0.txt")], "--test only beside an XC text file"),
        ([str(tmp_path / "h0.txt"), "--seed", "-1"], "--seed"),
        ([str(write(tmp_path / "e.txt", "2 4 3\n0 0:1\n 1:1\n"))], "--allow-empty-labels"),
        ([str(tmp_path / "e.txt"), "--test", str(write(tmp_path / "w.txt", "1 5 3\n0 0:1\n"))], "w.txt:1 has 5"),
        ([str(tmp_path)], "is a directory"),
    ]
    for argv, message in cases:
        assert xc_stats.main(argv + (["--allow-empty-labels"] if "--test" in argv else [])) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith("error: ") and message in err, err
    assert xc_stats.main([str(tmp_path / "e.txt"), "--allow-empty-labels"]) in (0, 1)


def test_xc_stats_reads_a_real_shaped_file_with_unlabelled_points(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(xc_stats.PUBLISHED, "tiny-8", {
        "features": 20, "labels": 8, "train_points": 3, "test_points": 1, "points_per_label": 1.0,
        "labels_per_point": 1.0, "nnz_per_point": 2.0})
    path = write(tmp_path / "train.txt", "3 20 8\n1 0:1 3:1\n 2:1\n4 5:1\n")
    assert xc_stats.main([str(path)]) in (0, 1)
    assert "compared with tiny-8" in capsys.readouterr().out


def test_a_pipe_is_refused_before_it_is_consumed(tmp_path):
    import os

    from impls.harness import cli

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(cli.UsageError, match="not a regular file"):
        cli.check_file(fifo, "--train", regular=True)
    assert cli.check_file(fifo, "--jobs") == fifo  # a reader that reads once may take a pipe


def test_a_link_to_nothing_is_named_as_a_link_not_as_a_missing_file(tmp_path):
    from impls.harness import cli

    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "gone").symlink_to(tmp_path / "moved" / "train.txt")
    with pytest.raises(cli.UsageError, match=r"a symbolic link that resolves to no file \(a loop of links\)"):
        cli.check_file(tmp_path / "a", "--train")
    with pytest.raises(cli.UsageError, match=r"resolves to no file \(it leads to .*moved/train.txt, which does not"):
        cli.check_file(tmp_path / "gone", "--train")
    (tmp_path / "chain").symlink_to(tmp_path / "gone")       # a link to the dangling link: its end is named
    with pytest.raises(cli.UsageError, match=rf"it leads to {tmp_path}/moved/train.txt, which does not exist"):
        cli.check_file(tmp_path / "chain", "--train")
    with pytest.raises(cli.UsageError, match=r"absent.txt does not exist"):
        cli.check_file(tmp_path / "absent.txt", "--train")


def test_a_cache_that_cannot_be_written_does_not_stop_the_read(tmp_path, caplog):
    from impls.slide.data.xc_format import read_xc_cached

    path = write(tmp_path / "t.txt", "2 4 3\n0 0:1\n1 1:1\n")
    blocked = write(tmp_path / "file", "")  # a file where the cache directory would go
    arrays = read_xc_cached(path, cache_dir=blocked / "sub")
    assert arrays["indptr"].size == 3 and "cannot keep the parsed cache" in caplog.text


def test_train_refuses_to_write_its_result_over_an_input(tmp_path, capsys):
    from impls.slide.train import main

    train = write(tmp_path / "train.txt", "2 20 3\n0 0:1\n1 1:1\n")
    test = write(tmp_path / "test.txt", "1 20 3\n0 5:1\n")
    before = test.read_bytes()
    assert main(["--train", str(train), "--test", str(test), "--json", str(test), "--quiet"]) == 2
    assert test.read_bytes() == before
    assert "is the file --test reads" in capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [
    (["--profile", "full"], "--profile full with --train/--test, --profile, expected --profile only with --dataset"),
    (["--K", "64"], "got 64, --K, expected fewer hashes a table: 64 make 130-bit codes"),
    (["--hidden", "1"], "got 1 with --lsh dwta, --hidden, expected 2 or more"),       # no --binsize fits
    (["--hidden", "1", "--lsh", "wta"], "got 1 with --lsh wta, --hidden, expected 2 or more"),
    (["--binsize", "3"], "got 3 with --hidden 128, --binsize, expected a power of two"),
])
def test_hash_flags_the_engine_cannot_draw_are_refused_before_the_files_are_read(tmp_path, capsys, flags, message):
    from impls.slide.train import main

    missing = str(tmp_path / "not-there.txt")      # refused first: the files are never opened
    assert main(["--train", missing, "--test", missing, "--json", str(tmp_path / "o.json"), *flags]) == 2
    assert message in capsys.readouterr().err


def test_a_dataset_that_is_not_an_xc_set_is_refused_before_it_is_made(tmp_path, monkeypatch, capsys):
    from impls.harness import registry
    from impls.slide.data.dataset import from_registry, xc_datasets
    from impls.slide.train import main

    monkeypatch.setattr(registry, "load", lambda *a, **k: pytest.fail("a dataset was made"))
    assert "slide-amazon670k" in xc_datasets() and "bandana-post" not in xc_datasets()
    with pytest.raises(KeyError, match="'bandana-post' is not an extreme-classification dataset"):
        from_registry("bandana-post", "smoke")
    assert main(["--dataset", "bandana-post", "--profile", "smoke", "--quiet", "--json", str(tmp_path / "o.json")]) == 2
    assert "unknown extreme-classification dataset 'bandana-post'" in capsys.readouterr().err


def test_an_explicit_profile_must_be_a_profile(monkeypatch):
    from impls.harness import profiles, registry
    from impls.harness.profiles import ProfileError

    monkeypatch.setattr(registry, "_resolve", lambda ref: pytest.fail(f"would have run {ref}"))
    for profile in ("", "huge", " "):
        with pytest.raises(ProfileError, match=f"unknown profile {profile!r} for dataset 'slide-amazon670k'"):
            registry.load("slide-amazon670k", profile)
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "full")
    assert profiles.resolve(" Smoke ") == "smoke" and profiles.resolve(None) == "full"


@pytest.mark.parametrize("module", ["impls.slide.train", "impls.slide.experiments.recall_probe",
                                    "impls.slide.xc_stats", "impls.slide.experiments.lr_select",
                                    "impls.bandana.prepare", "impls.bandana.headline"])
def test_every_profile_flag_reads_a_name_as_the_environment_does(module, monkeypatch):
    import argparse
    import importlib

    seen = {}
    real = argparse.ArgumentParser.parse_args

    def capture(self, args=None, namespace=None):
        out = real(self, args, namespace)
        seen["profile"] = out.profile
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    main = importlib.import_module(module).main
    argv = {"impls.slide.xc_stats": ["slide-amazon670k"], "impls.bandana.prepare": ["--layout", "identity", "--out", "x"],
            "impls.slide.train": ["--json", "-"]}.get(module, [])
    with pytest.raises(SystemExit):
        main([*argv, "--profile", " Smoke"])
    assert seen["profile"] == "smoke"


def test_the_slide_scripts_take_their_profile_from_the_environment(monkeypatch, tmp_path, load_script, capsys):
    """slide_threads_pair and slide_reference_check default --profile to DLSYSBENCH_PROFILE, as
    every other command does, and refuse a bad one in one line before any work."""
    pair, check = load_script("slide_threads_pair"), load_script("slide_reference_check")
    seen = {}

    def sweep(profile, progress, s):
        seen["sweep"] = profile
        raise SystemExit(0)

    monkeypatch.setattr(pair.sweeps, "sizes", lambda profile, experiment: seen.setdefault("sizes", profile) and {})
    monkeypatch.setattr(pair.sweeps, "time_to_accuracy_sweep", sweep)
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    with pytest.raises(SystemExit):
        pair.main(["--threads", "1", "--out", str(tmp_path / "t.json")])
    assert seen == {"sizes": "smoke", "sweep": "smoke"}
    monkeypatch.setattr(check, "build_reference", lambda *a: pytest.fail("built before the profile was checked"))
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "bogus")
    for main, argv in ((pair.main, ["--threads", "1", "--out", str(tmp_path / "t.json")]),
                       (check.main, [str(tmp_path / "ref"), str(tmp_path / "out")])):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        err = capsys.readouterr().err
        assert stop.value.code == 2 and "unknown profile 'bogus'" in err and "DLSYSBENCH_PROFILE" in err, err
    assert not (tmp_path / "out").exists()


def test_train_says_where_a_flag_asks_for_more_than_there_is(tmp_path, capsys):
    from impls.slide.train import main

    pair = write(tmp_path / "train.txt", "3 20 3\n0 0:1\n1 1:1\n2 2:1\n")
    assert main(["--train", str(pair), "--test", str(pair), "--batch", "8", "--eval-points", "50",
                 "--threads", "1000", "--max-iterations", "1", "--eval-every", "0", "--quiet",
                 "--json", str(tmp_path / "o.json")]) == 0
    err = capsys.readouterr().err
    assert "--batch 8 is more than the 3 labelled training points" in err
    assert "--eval-points 50 is more than the 3 test points" in err
    assert "--threads 1000: numba's pool has" in err
    assert "3 of 3 test points are also training points (the same features, values and labels)" in err
    import json
    result = json.loads((tmp_path / "o.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert result["curve"][0]["loss"] is None      # no loss before the first batch: null, not NaN


def test_train_uses_a_default_larger_than_the_data_quietly(tmp_path, capsys):
    from impls.slide.train import main

    train = write(tmp_path / "train.txt", "3 20 3\n0 0:1\n1 1:1\n2 2:1\n")
    test = write(tmp_path / "test.txt", "2 20 3\n0 0:1\n1 1:1\n")
    assert main(["--train", str(train), "--test", str(test), "--max-iterations", "1", "--eval-every", "0",
                 "--quiet", "--json", str(tmp_path / "o.json")]) == 0
    err = capsys.readouterr().err
    assert "is more than the" not in err
    import json
    result = json.loads((tmp_path / "o.json").read_text())
    assert result["params"]["batch"] == 3          # the default 256, capped at the 3 training points
    assert result["eval_points"] == 2              # all the test points


def test_train_caps_the_batch_at_the_trainable_points_and_takes_a_large_seed(tmp_path, capsys):
    from impls.slide.train import main

    train = write(tmp_path / "train.txt", "3 20 3\n0 0:1\n1 1:1\n2 2:1\n")
    assert main(["--train", str(train), "--test", str(train), "--batch", str(10**12), "--seed", str(2**32 - 1),
                 "--max-iterations", "2", "--eval-every", "0", "--quiet", "--json", str(tmp_path / "o.json")]) == 0
    import json
    assert json.loads((tmp_path / "o.json").read_text())["params"]["batch"] == 3
    assert main(["--train", str(train), "--test", str(train), "--seed", str(2**32), "--max-iterations", "1",
                 "--quiet", "--json", str(tmp_path / "p.json")]) == 2
    assert "--seed" in capsys.readouterr().err


def test_train_help_names_each_default_once(capsys, monkeypatch):
    from impls.slide.train import main

    monkeypatch.setenv("COLUMNS", "300")     # argparse wraps to the terminal's width
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "(default: None)" not in out
    assert "(default 3)" in out and "(default 3) (default" not in out
    assert "samples per batch (default 256)" in out


@pytest.mark.parametrize("argv, message", [
    (["--batches", "5", "--at", ""], "no batch count given"),
    (["--batches", "5", "--threads", "100000"], "--threads"),
    (["--batches", "5", "--seed", str(2**64)], "--seed"),
    (["--batches", "30", "--at", "20,49"], "[49] not within 1..30"),
    (["--batches", "10", "--at", "0,3"], "[0] not within 1..10"),
    (["--batches", "10", "--at", "5", "--rehash-every", "0"], "--rehash-every"),
    (["--batches", "10", "--at", "5", "--lr", "1e30"], "--lr"),
    (["--batches", "10", "--at", "5", "--seed", "-1"], "--seed"),
    (["--batches", "10", "--at", "5", "--eps", "0"], "--eps"),
    (["--batches", "10", "--at", "5", "--eps", "nan"], "--eps"),
])
def test_recall_probe_refuses_what_would_probe_nothing_or_crash(argv, message, tmp_path, capsys):
    from impls.slide.experiments.recall_probe import main

    pair = write(tmp_path / "train.txt", "3 20 3\n0 0:1\n1 1:1\n2 2:1\n")
    assert main(["--train", str(pair), "--test", str(pair), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err, err


def test_recall_probe_trains_with_the_epsilon_it_is_given(tmp_path, monkeypatch):
    from impls.slide.core import network
    from impls.slide.experiments import recall_probe

    seen = []
    built = network.SlideNetwork.__init__

    def spy(self, cfg, *args, **kwargs):
        seen.append(cfg.eps)
        built(self, cfg, *args, **kwargs)

    monkeypatch.setattr(network.SlideNetwork, "__init__", spy)
    pair = write(tmp_path / "train.txt", "3 20 3\n0 0:1\n1 1:1\n2 2:1\n")
    assert recall_probe.main(["--train", str(pair), "--test", str(pair), "--batches", "2", "--at", "2",
                              "--batch", "2", "--eps", "1"]) == 0
    assert seen == [1.0]


def test_recall_probe_reads_files_with_unlabelled_points_when_asked(tmp_path, capsys):
    from impls.slide.experiments.recall_probe import main

    pair = write(tmp_path / "train.txt", "4 20 3\n0 0:1\n1 1:1\n 2:1\n2 3:1\n")
    assert main(["--train", str(pair), "--test", str(pair), "--batches", "2", "--at", "2", "--batch", "2"]) == 2
    assert "--allow-empty-labels" in capsys.readouterr().err
    assert main(["--train", str(pair), "--test", str(pair), "--batches", "2", "--at", "2", "--batch", "2",
                 "--points", "4", "--threads", "1", "--allow-empty-labels"]) == 0
    import json
    assert json.loads(capsys.readouterr().out)["iteration"] == 2


def test_recall_probe_with_few_batches_probes_the_last_and_caps_the_batch(tmp_path, capsys):
    from impls.slide.experiments.recall_probe import main

    pair = write(tmp_path / "train.txt", "3 20 3\n0 0:1\n1 1:1\n2 2:1\n")
    assert main(["--train", str(pair), "--test", str(pair), "--batches", "3", "--batch", str(10**12),
                 "--threads", "1"]) == 0
    import json
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["iteration"] for line in lines] == [3]


def test_recall_probe_refuses_files_where_no_point_has_a_label(tmp_path, capsys):
    from impls.slide.experiments.recall_probe import main

    pair = write(tmp_path / "train.txt", "2 20 3\n 0:1\n 1:1\n")
    assert main(["--train", str(pair), "--test", str(pair), "--batches", "2", "--at", "2", "--batch", "2",
                 "--allow-empty-labels"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no training point has a label" in err and str(pair) in err, err


@pytest.mark.parametrize("argv, message", [
    (["--lrs", "nan"], "--lrs"), (["--lrs", "1e-2,inf"], "--lrs"), (["--lrs", "0"], "--lrs"),
    (["--json", "/nonexistent-dir/x.json"], "does not exist"),
])
def test_lr_select_refuses_bad_rates_and_outputs_before_training(argv, message, monkeypatch, capsys):
    from impls.slide.experiments import lr_select

    monkeypatch.setattr(lr_select, "select", lambda *a, **k: pytest.fail("trained before checking"))
    assert lr_select.main(["--profile", "smoke", "--runs", "slide", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err, err


def test_train_warns_of_rows_far_from_unit_norm_and_of_a_model_no_better_than_popularity(tmp_path, capsys):
    """Raw term counts (row norm ~10) kept SLIDE at the popular label at the default rate, silently;
    a final P@1 no better than always predicting the most popular label is said too."""
    train = write(tmp_path / "train.txt", "3 20 2\n0 0:6 1:8\n0 2:6 3:8\n0 4:6 5:8\n")
    test = write(tmp_path / "test.txt", "1 20 2\n0 0:6 1:8\n")
    err = _train_two_dense_batches(tmp_path, capsys, train, test)
    assert "the training rows' median L2 norm is 10 (raw counts?)" in err
    assert "no better than always predicting the most popular training label (1.0000)" in err
    unit = write(tmp_path / "unit.txt", "3 20 2\n0 0:0.6 1:0.8\n1 2:0.6 3:0.8\n0 4:0.6 5:0.8\n")
    assert "median L2 norm" not in _train_two_dense_batches(tmp_path, capsys, unit, test)


@pytest.mark.parametrize("name, joined", [
    ("trn_X_Xf.txt", "train.txt"), ("tst_X_Y.txt", "test.txt"),
    ("amazon_trn_X_Xf.txt", "amazon_train.txt"), ("amazon_tst_X_Xf.txt", "amazon_test.txt"),
    ("Eurlex_test_X_Y.txt", "Eurlex_test.txt"), ("mine_X_Xf.txt", "mine_joined.txt"),
])
def test_the_join_hint_names_each_split_apart(name, joined):
    """Both splits of a prefixed pair used to be told to write joined.txt, the second over the first."""
    from impls.slide.data.xc_format import join_command

    assert join_command(Path("/d") / name).endswith(f" /d/{joined}")


def test_an_evaluation_before_any_step_prints_no_nan_loss(capsys):
    loop.print_point({"iteration": 0, "seconds": 0.0, "p_at_1": 0.0, "p_at_5": 0.0, "loss": float("nan")})
    assert capsys.readouterr().err.rstrip().endswith("loss -")


def test_train_says_when_its_threads_share_fewer_usable_cpus(tmp_path, capsys, monkeypatch):
    # a container's cgroup quota (or a narrow affinity) leaves fewer CPUs than numba's pool:
    # the threads asked for run, but share them, and the default takes only the usable ones
    import numba

    from impls.harness import capabilities, cpus
    from impls.slide.train import main
    from impls.slide.training import trainer

    monkeypatch.setattr(capabilities, "effective_cpus", lambda: 1)
    monkeypatch.setattr(cpus, "effective_cpus", lambda: 1)
    pair = write(tmp_path / "train.txt", "3 20 3\n0 0:1\n1 1:1\n2 2:1\n")
    threads = min(2, numba.config.NUMBA_NUM_THREADS)
    assert main(["--train", str(pair), "--test", str(pair), "--threads", str(threads), "--max-iterations", "1",
                 "--eval-every", "0", "--quiet", "--json", str(tmp_path / "o.json")]) == 0
    err = capsys.readouterr().err
    if threads > 1:
        assert f"{threads} threads, and this process may use 1 CPU(s)" in err
    assert main(["--train", str(pair), "--test", str(pair), "--threads", "1000", "--max-iterations", "1",
                 "--eval-every", "0", "--quiet", "--json", str(tmp_path / "o.json")]) == 0
    err = capsys.readouterr().err
    assert "numba's pool has" in err                      # clamped to numba's pool, and then...
    if numba.config.NUMBA_NUM_THREADS > 1:
        assert "this process may use 1 CPU(s)" in err    # ...still more than the quota allows: both said
    assert trainer.set_threads(None) == 1
    trainer.set_threads(numba.config.NUMBA_NUM_THREADS)


def test_threads_cut_by_the_suites_quota_cap_name_the_quota(tmp_path, capsys, monkeypatch):
    """Where impls capped numba's pool to a cgroup quota, a larger --threads is blamed on the
    quota and says how to run more, not on "this machine"."""
    import numba

    from impls.harness import cpus
    from impls.slide.train import main

    pool = numba.config.NUMBA_NUM_THREADS
    monkeypatch.setitem(cpus.capped, "NUMBA_NUM_THREADS", str(pool))
    pair = write(tmp_path / "train.txt", "3 20 3\n0 0:1\n1 1:1\n2 2:1\n")
    assert main(["--train", str(pair), "--test", str(pair), "--threads", str(pool + 1), "--max-iterations", "1",
                 "--eval-every", "0", "--quiet", "--json", str(tmp_path / "o.json")]) == 0
    err = capsys.readouterr().err
    assert f"--threads {pool + 1}: the cgroup CPU quota allows {pool}" in err
    assert "set it yourself to run more threads" in err


def test_a_dataset_whose_manifest_is_broken_is_named_with_its_error(monkeypatch, capsys):
    """Not 'unknown dataset': the manifest's own file-and-line error, as registry.load gives."""
    from impls.harness import registry
    from impls.slide.data import dataset

    error = registry.ManifestError("datasets/slide-mine.toml:5: unknown key(s) sed in [synthetic]")
    monkeypatch.setattr(registry, "manifests", lambda directory=None: registry.Manifests({}, {"slide-mine": error}))
    with pytest.raises(registry.ManifestError, match=r"slide-mine.toml:5: unknown key\(s\) sed"):
        dataset.from_registry("slide-mine", "smoke")
    from impls.slide.train import main

    for command in (lambda: main(["--dataset", "slide-mine", "--json", "-"]), lambda: xc_stats.main(["slide-mine"])):
        assert command() == 2
        err = capsys.readouterr().err
        assert "slide-mine.toml:5: unknown key(s) sed" in err and "unknown extreme-classification" not in err


@pytest.mark.parametrize("case", ["a NaN row", "every logit below the softmax's floor"])
def test_a_step_without_a_softmax_raises_before_any_update_and_leaves_the_network_usable(case):
    """A NaN output row makes its logits NaN, a bias of -1e31 puts every logit below the
    softmax's floor (-1e30, a normaliser of 0): the step raises TrainingDiverged having changed
    no weight, no Adam moment and no step count, and the row bookkeeping is as a step finds it."""
    from impls.slide.core.config import TrainingDiverged
    from impls.slide.core.network import SlideNetwork

    train, _ = small_pair()
    net = SlideNetwork(SlideConfig(threads=1, batch=16), train.n_features, train.n_labels,
                       int(np.diff(train.label_indptr).max()))
    rows = np.arange(16)
    saved = net.W2.copy(), net.b2.copy()
    if case == "a NaN row":
        net.W2[train.labels[train.label_indptr[0]]] = np.nan     # a true label of the first point
    else:
        net.b2[:] = -1e31
    before = {k: v.copy() for k, v in net.weights().items()}
    moments = {k: (net.adam_state[k].copy(), net.adam_v[k].copy()) for k in net.adam_state}
    with pytest.raises(TrainingDiverged, match="at batch 1: (the loss|a logit) is not a finite"):
        net.step(train, rows)
    assert net.t == 0 and (net.slot_out == -1).all()
    for k, v in net.weights().items():
        np.testing.assert_array_equal(v, before[k])
        np.testing.assert_array_equal(net.adam_state[k], moments[k][0])
        np.testing.assert_array_equal(net.adam_v[k], moments[k][1])
    net.W2[:], net.b2[:] = saved
    assert np.isfinite(net.step(train, rows)) and net.t == 1 and (net.slot_out == -1).all()


def test_an_interrupt_after_the_rows_are_listed_leaves_the_bookkeeping_as_a_step_finds_it(monkeypatch):
    """The listing marks the batch's pool (in_pool) and the listed rows' slots (slot_out);
    an exception before the update (here an interrupt just after the listing) clears both,
    so the next step lists this batch's rows, not a stale pool row's."""
    from impls.slide.core import network as network_module
    from impls.slide.core.network import SlideNetwork

    train, _ = small_pair()

    def net():
        return SlideNetwork(SlideConfig(threads=1, batch=16, padding="batch", min_active=20, seed=2),
                            train.n_features, train.n_labels, int(np.diff(train.label_indptr).max()))

    interrupted, fresh = net(), net()
    real = network_module.NK.list_rows

    def listed_then_interrupted(*args):
        real(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(network_module.NK, "list_rows", listed_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        interrupted.step(train, np.arange(16))
    monkeypatch.setattr(network_module.NK, "list_rows", real)
    assert (interrupted.in_pool == -1).all() and (interrupted.slot_out == -1).all() and interrupted.t == 0
    rows = np.arange(16, 32)
    assert interrupted.step(train, rows) == fresh.step(train, rows)
    for k, v in interrupted.weights().items():
        np.testing.assert_array_equal(v, fresh.weights()[k])


def test_initial_weights_that_are_not_finite_are_refused():
    from impls.slide.core.network import SlideNetwork

    weights = {"W1": np.zeros((30, 8), np.float32), "b1": np.zeros(8, np.float32),
               "W2": np.zeros((12, 8), np.float32), "b2": np.zeros(12, np.float32)}
    weights["W2"][3, 1] = -np.inf
    with pytest.raises(ValueError, match=r"weights\['W2'\] holds values that are not finite"):
        SlideNetwork(SlideConfig(hidden=8, K=2, L=2), 30, 12, 4, weights=weights)


def test_a_test_file_that_copies_training_points_is_warned_of(tmp_path, capsys):
    """A copy of the training file, or a part of it, as --test (another path: a copy, a hard
    link, the first rows): P@k on those points measures memorisation. Points that differ in a
    value or a label, or list their features in another order, are told apart rightly."""
    from impls.slide.data.dataset import from_file
    from impls.slide.input_warnings import data_warnings, shared_points

    rows = [f"{i % 4} {i}:0.5 {i + 1}:0.25" for i in range(40)]
    train = write(tmp_path / "train.txt", "40 50 4\n" + "\n".join(rows) + "\n")
    half = write(tmp_path / "half.txt", "20 50 4\n" + "\n".join(rows[:20]) + "\n")
    other = ["0 0:0.5 1:0.3", "2 1:0.5 2:0.25", "3 2:0.25 2:0.5", "2,1 3:0.5 4:0.25"]    # a value, a label, ids, labels
    moved = write(tmp_path / "other.txt", "5 50 4\n" + "\n".join(other + ["1 6:0.25 5:0.5"]) + "\n")
    data = {name: from_file(path) for name, path in (("train", train), ("half", half), ("other", moved))}
    assert shared_points(data["train"], data["half"]) == 20
    assert shared_points(data["train"], data["other"]) == 1                 # only the reordered row 5
    assert shared_points(data["half"], data["train"]) == 20
    line = [w for w in data_warnings(data["train"], data["half"], 1e-3, "--lr") if "also training points" in w]
    assert line == ["20 of 20 test points are also training points (the same features, values and labels): P@k on "
                    "them measures memorisation, not generalisation (is the test file a copy or a part of the training "
                    "file?)"]


def test_row_digests_are_the_same_in_chunks_of_any_size(tmp_path, monkeypatch):
    """The digest works through the entries a chunk at a time (bounded memory on a large file):
    chunks that cut rows, and rows without entries or labels, give the digests of one pass."""
    from impls.slide import input_warnings
    from impls.slide.data.dataset import from_file

    rows = ["0,1 0:0.5 3:0.25", "", "2 4:1.0", "1 1:0.5 2:0.5 3:0.5 4:0.5 5:0.5", "3", "0 6:0.125"]
    path = write(tmp_path / "t.txt", "6 8 4\n" + "\n".join(r if r else "2 7:1" for r in rows) + "\n")
    data = from_file(path, allow_empty_labels=True)
    whole = input_warnings.row_digests(data)
    for chunk in (1, 2, 3, 5):
        monkeypatch.setattr(input_warnings, "DIGEST_CHUNK", chunk)
        assert np.array_equal(input_warnings.row_digests(data), whole), chunk
    assert len(set(whole.tolist())) == len(rows)
