"""Edges of SLIDE's data command lines: the join given its files the wrong way round or packed,
lines that end in CR alone, 1-based files, warnings in the command lines' form, --eval-first."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from impls.slide.data import xc_join
from impls.slide.data.xc_format import XCFormatError, parse_xc_bytes, read_xc

ROOT = Path(__file__).resolve().parents[2]

FEATURES = "3 20\n1:0.5 4:1 9:0.25\n0:1 3:2\n2:1 7:0.25 11:3\n"
LABELS = "3 8\n0,3\n5\n6,1\n"


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def run_join(capsys, *paths: Path) -> tuple[int, str]:
    code = xc_join.main([str(p) for p in paths])
    return code, capsys.readouterr().err


def test_the_join_refuses_a_labels_file_given_first_and_writes_nothing(tmp_path, capsys):
    features = write(tmp_path / "feats.txt", FEATURES)
    labels = write(tmp_path / "labs.txt", LABELS)
    out = tmp_path / "train.txt"
    code, err = run_join(capsys, labels, features, out)
    assert code == 2 and not out.exists()
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert f"{labels}:2: the features file (the first argument) has '0,3'" in err
    assert "the arguments are FEATURES LABELS OUT" in err
    assert f"run python -m impls.slide.data.xc_join {features} {labels} {out}" in err


def test_the_join_refuses_a_features_file_given_second_by_its_values(tmp_path, capsys):
    """Labels written 'l:1.0' look like features; the features file's values other than 1 say which is which."""
    features = write(tmp_path / "feats.txt", FEATURES)
    labels = write(tmp_path / "labs.txt", "3 8\n0:1.0 3:1.0\n5:1\n6:1 1:1.0\n")
    out = tmp_path / "train.txt"
    code, err = run_join(capsys, labels, features, out)
    assert code == 2 and not out.exists()
    assert f"{features}:2: the labels file (the second argument) has '1:0.5', a value other than 1" in err, err


@pytest.mark.parametrize("first, second", [("trn_X_Y.txt", "other.txt"), ("other.txt", "trn_X_Xf.txt")])
def test_the_join_refuses_files_whose_repository_names_say_they_are_swapped(tmp_path, capsys, first, second):
    """Binary features and 'l:1.0' labels look alike: the names the repository gives them decide."""
    a = write(tmp_path / first, "2 10\n1:1.0 4:1.0\n0:1.0\n")
    b = write(tmp_path / second, "2 10\n1:1.0 3:1.0 7:1.0\n2:1.0 5:1.0\n")
    code, err = run_join(capsys, a, b, tmp_path / "train.txt")
    assert code == 2 and not (tmp_path / "train.txt").exists()
    assert "named like a" in err and "the arguments are FEATURES LABELS OUT" in err, err


@pytest.mark.parametrize("labels", ["3 8\n0,3\n5\n6,1\n", "3 8\n0 3\n5\n6 1\n", "3 8\n0:1.0 3:1.0\n5:1\n6:1e0 1:1.0\n",
                                    "3 8\n0,3\n\n6,1\n"])
def test_the_documented_labels_forms_still_join(tmp_path, capsys, labels):
    features = write(tmp_path / "trn_X_Xf.txt", FEATURES)
    labels_file = write(tmp_path / "trn_X_Y.txt", labels)
    code, err = run_join(capsys, features, labels_file, tmp_path / "train.txt")
    assert code == 0 and "warning" not in err, err
    joined = read_xc(tmp_path / "train.txt", allow_empty_labels=True)
    expected = [0, 3, 5, 6, 1] if "\n5" in labels else [0, 3, 6, 1]
    assert joined["labels"].tolist() == expected
    np.testing.assert_allclose(joined["values"][:3], [0.5, 1, 0.25])


def _subprocess(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120)


def test_a_look_alike_pair_with_more_labels_than_features_a_point_is_warned_of_as_swapped(tmp_path):
    """'l:1.0' labels first and binary features second pass every token check; the counts warn."""
    labels = write(tmp_path / "a.txt", "2 10\n1:1.0\n0:1.0\n")
    features = write(tmp_path / "b.txt", "2 10\n1:1.0 3:1.0 7:1.0\n2:1.0 5:1.0 8:1.0\n")
    done = _subprocess("import sys; from impls.slide.data.xc_join import main; sys.exit(main(sys.argv[1:]))",
                       str(labels), str(features), str(tmp_path / "o.txt"))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: {features}: its first lines hold 3.0 labels"), lines
    assert "may be swapped" in lines[0]


JOIN_MAIN = "import sys; from impls.slide.data.xc_join import main; sys.exit(main(sys.argv[1:]))"


def test_repository_names_in_order_join_title_features_and_many_labels_without_a_swap_warning(tmp_path):
    """Title sets have fewer features a point than labels: names X_Xf then X_Y settle the order."""
    features = write(tmp_path / "a_X_Xf.txt", "2 10\n1:1 3:1\n2:1\n")
    labels = write(tmp_path / "a_X_Y.txt", "2 50\n0:1 2:1 3:1 5:1 7:1 8:1\n4:1 9:1 10:1 11:1 12:1\n")
    done = _subprocess(JOIN_MAIN, str(features), str(labels), str(tmp_path / "o.txt"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    joined = read_xc(tmp_path / "o.txt")
    assert joined["labels"].tolist() == [0, 2, 3, 5, 7, 8, 4, 9, 10, 11, 12]


@pytest.mark.parametrize("names", [("trn_X_Xf.txt", "trn_X_Y.txt"), ("feats.txt", "labs.txt")])
def test_label_weights_are_dropped_with_one_counted_warning_when_the_order_is_clear(tmp_path, names):
    """Names X_Xf then X_Y, or features with values other than 1, say the pair is in order:
    weighted labels ('l:0.5') are then labels, not a swapped features file."""
    features = write(tmp_path / names[0], FEATURES)
    labels = write(tmp_path / names[1], "3 8\n0:0.5 3:1\n5:2.0\n6,1\n")
    done = _subprocess(JOIN_MAIN, str(features), str(labels), str(tmp_path / "o.txt"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"warning: {labels}: 2 label values other than 1 are dropped; each label is kept\n"
    assert read_xc(tmp_path / "o.txt")["labels"].tolist() == [0, 3, 5, 6, 1]


def test_weighted_labels_beside_binary_features_without_repository_names_are_still_refused(tmp_path, capsys):
    """All-1 features and weighted labels look like a swapped pair; the error says how to confirm the order."""
    features = write(tmp_path / "feats.txt", "2 10\n1:1 4:1\n0:1\n")
    labels = write(tmp_path / "labs.txt", "2 8\n0:0.5\n5:1\n")
    code, err = run_join(capsys, features, labels, tmp_path / "o.txt")
    assert code == 2 and not (tmp_path / "o.txt").exists() and err.count("\n") == 1, err
    assert f"{labels}:2: the labels file (the second argument) has '0:0.5', a value other than 1" in err
    assert "name the files like the repository, *X_Xf* then *X_Y*): the arguments are FEATURES LABELS OUT" in err


def test_a_label_list_in_a_file_named_as_features_is_refused_without_advice_the_names_would_refuse(tmp_path, capsys):
    features = write(tmp_path / "trn_X_Xf.txt", LABELS)
    labels = write(tmp_path / "trn_X_Y.txt", LABELS)
    code, err = run_join(capsys, features, labels, tmp_path / "o.txt")
    assert code == 2 and not (tmp_path / "o.txt").exists() and err.count("\n") == 1, err
    assert f"{features}:2: the features file (the first argument) has '0,3'" in err
    assert "the names say features (X_Xf) then labels (X_Y)" in err and "run python -m" not in err, err


def _zipped(text: bytes) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("trn_X_Xf.txt", text)
    return buffer.getvalue()


@pytest.mark.parametrize("pack, hint", [(gzip.compress, "looks gzip-compressed: decompress it first"),
                                        (_zipped, "looks a zip archive: decompress it first"),
                                        (lambda t: b"\xef\xbb\xbf" + t, "after a UTF-8 byte-order mark"),
                                        (lambda t: t.replace(b"\n", b"\r"), "lines end in CR alone"),
                                        (lambda t: b"3 20 8\n" + t.split(b"\n", 1)[1], "already joined")])
def test_the_join_names_a_packed_or_odd_features_file_without_printing_its_bytes(tmp_path, capsys, pack, hint):
    features = write(tmp_path / "f.txt", pack(FEATURES.encode()))
    labels = write(tmp_path / "l.txt", LABELS)
    code, err = run_join(capsys, features, labels, tmp_path / "o.txt")
    assert code == 2 and err.count("\n") == 1 and hint in err, err
    assert f"{features}:1: expected the features file's header 'N D'" in err
    assert err.isascii() and err[:-1].isprintable(), repr(err)


def test_data_lines_that_end_in_cr_alone_are_named_not_called_a_cut_file():
    with pytest.raises(XCFormatError) as caught:
        parse_xc_bytes(b"3 4 3\n0 1:0.5\r1 2:1.0\r2 3:1\r", "mixed.txt")
    message = str(caught.value)
    assert "lines end in CR alone" in message and "convert them to LF" in message
    assert "cut file" not in message
    with pytest.raises(XCFormatError, match="a cut file"):      # a CRLF file cut short is still a cut file
        parse_xc_bytes(b"3 4 3\r\n0 1:0.5\r\n1 2:1.0\r", "cut.txt")


@pytest.mark.parametrize("text, said", [
    (b"2 10 5\n1 1:1\n5 2:1\n", ":3: label index out of range: expected 0 <= label < L=5, got 5: ids are 0-based; "
                                "is the file 1-based?"),
    (b"2 10 5\n1 1:1\n2 3:1 10:1\n", ":3: feature index out of range: expected 0 <= feature < D=10, got 10: ids are "
                                     "0-based; is the file 1-based?"),
])
def test_an_id_equal_to_the_header_count_asks_whether_the_file_is_1_based(text, said):
    with pytest.raises(XCFormatError) as caught:
        parse_xc_bytes(text, "one.txt")
    assert str(caught.value) == "one.txt" + said


def test_an_id_far_above_the_count_is_not_called_1_based():
    with pytest.raises(XCFormatError) as caught:
        parse_xc_bytes(b"2 10 5\n1 1:1\n3,9 2:1\n", "far.txt")
    assert str(caught.value).endswith("< L=5, got 9") and "1-based" not in str(caught.value)


def test_the_repeated_label_warning_is_a_warning_line_like_every_cli_warning():
    done = _subprocess("from impls.slide.data.xc_format import parse_xc_bytes; "
                       "parse_xc_bytes(b'2 4 6\\n1,1 0:1\\n2 1:1\\n', 'dup.txt')")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "warning: dup.txt: 1 of 2 points list a label more than once; each label is kept once\n"


def test_train_warns_of_repeated_features_and_of_an_eval_first_past_the_budget(tmp_path, capsys):
    from impls.slide.train import main

    train = write(tmp_path / "train.txt", "3 20 3\n0 0:1 0:2\n1 1:1\n2 2:1 5:1 2:1\n")
    test = write(tmp_path / "test.txt", "2 20 3\n0 0:1\n1 1:1\n")
    assert main(["--train", str(train), "--test", str(test), "--json", str(tmp_path / "o.json"), "--quiet",
                 "--method", "dense", "--max-iterations", "2", "--threads", "1", "--time-budget", "1",
                 "--eval-first", "2"]) == 0
    err = capsys.readouterr().err
    assert "warning: 2 of 3 training points list a feature more than once: the model sums their values" in err
    assert "test points list a feature" not in err
    eval_first = [line for line in err.splitlines() if "--eval-first" in line]
    assert eval_first == ["warning: --eval-first 2 s is not below --time-budget 1 s: no log-spaced evaluation "
                          "falls inside the run (only --eval-every's and the end's); give a smaller --eval-first"]
