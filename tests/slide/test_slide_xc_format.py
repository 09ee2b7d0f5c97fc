"""XC text format: round trip, validation errors that name the line, .npz cache."""
from __future__ import annotations

import numpy as np
import pytest

from impls.slide.data import xc_data
from impls.slide.data.dataset import XCData, from_file
from impls.slide.data.xc_format import XCFormatError, format_xc, read_xc, read_xc_cached, write_xc

GOOD = "3 10 5\n0,4 1:0.5 9:1e-2\n2 0:1 3:-2.5E+1\n1,2,3 7:.25\n"


def write(tmp_path, text, name="f.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_the_format(tmp_path):
    a = read_xc(write(tmp_path, GOOD))
    np.testing.assert_array_equal(a["indptr"], [0, 2, 4, 5])
    np.testing.assert_array_equal(a["indices"], [1, 9, 0, 3, 7])
    np.testing.assert_allclose(a["values"], [0.5, 0.01, 1.0, -25.0, 0.25])
    np.testing.assert_array_equal(a["label_indptr"], [0, 2, 3, 6])
    np.testing.assert_array_equal(a["labels"], [0, 4, 2, 1, 2, 3])
    np.testing.assert_array_equal(a["shape"], [10, 5])


def test_the_features_are_the_parsers_own_arrays_not_copies(tmp_path, monkeypatch):
    """A file's features (its biggest arrays, counted exactly by their colons) are returned as
    the parser filled them: a copy would hold them twice at the parse's peak (~0.5 GB more at
    Amazon-670K's size). The smaller arrays, over-allocated, are trimmed to owned copies."""
    from impls.slide.data import xc_format

    filled = {}
    real = xc_format.K.parse_body

    def parse_body(buf, start, n, d, l, allow, indptr, indices, values, label_indptr, labels):
        filled.update(indices=indices, values=values, labels=labels)
        return real(buf, start, n, d, l, allow, indptr, indices, values, label_indptr, labels)

    monkeypatch.setattr(xc_format.K, "parse_body", parse_body)
    a = read_xc(write(tmp_path, GOOD))
    assert a["indices"] is filled["indices"] and a["values"] is filled["values"]
    assert all(array.base is None for array in a.values())      # nothing holds a bigger buffer alive
    np.testing.assert_array_equal(a["labels"], [0, 4, 2, 1, 2, 3])
    np.testing.assert_array_equal(a["indices"], [1, 9, 0, 3, 7])


def test_the_parse_holds_the_file_once_its_arrays_and_a_chunk(tmp_path, monkeypatch):
    """The text is read once and compared a chunk at a time (header, line and colon counts):
    the parse's heap peak is the file, its arrays and one chunk, whatever the file's size (a
    comparison over the whole file, or a copy of the arrays, would add its size)."""
    import tracemalloc

    from impls.slide.data import xc_format

    rng = np.random.default_rng(0)
    n, nnz = 20000, 40
    indptr = np.arange(n + 1, dtype=np.int64) * nnz
    arrays = {"indptr": indptr, "indices": rng.integers(0, 100000, n * nnz).astype(np.int32),
              "values": rng.random(n * nnz).astype(np.float32), "label_indptr": np.arange(n + 1, dtype=np.int64),
              "labels": rng.integers(0, 1000, n).astype(np.int32), "shape": np.array([100000, 1000])}
    path = write_xc(tmp_path / "big.txt", arrays)
    monkeypatch.setattr(xc_format, "_COUNT_CHUNK", 1 << 20)
    read_xc(path)                                            # compiled before it is measured
    tracemalloc.start()
    try:
        parsed = read_xc(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    held, size = sum(a.nbytes for a in parsed.values()), path.stat().st_size
    assert size > 2 * held                                  # a comparison over the file would show
    assert peak < size + 1.25 * held + 2 * (1 << 20), (peak, held, size)
    np.testing.assert_array_equal(parsed["indices"], arrays["indices"])


@pytest.mark.parametrize("text,line,words", [
    ("2 10 5\n0 1:1\n5 2:1\n", 3, "label index out of range"),
    ("2 10 5\n0 1:1\n1 10:1\n", 3, "feature index out of range"),
    ("2 10 5\n0 1:1 4\n1 2:1\n", 2, "no ':'"),
    ("2 10 5\n0 1:x\n1 2:1\n", 2, "not a number"),
    ("2 10 5\n0,,1 1:1\n1 2:1\n", 2, "label list"),
    ("2 10 5\n0 1:1\n 2:1\n", 3, "empty label list"),
    ("2 10 5\n0 1:1\n1 2:1\n1 3:1\n", 4, "more data lines"),
    ("3 10 5\n0 1:1\n1 2:1\n", 1, "header says N=3"),
    ("3 10\n0 1:1\n", 1, "header"),
    ("2 10 5\n1:0.5 2:1\n1 2:1\n", 2, "label list"),
])
def test_errors_name_the_line(tmp_path, text, line, words):
    path = write(tmp_path, text)
    with pytest.raises(XCFormatError) as err:
        read_xc(path)
    assert f"{path}:{line}:" in str(err.value)
    assert words in str(err.value)


@pytest.mark.parametrize("row,sep", [("109 80 3:1", "spaces"), ("109, 80 3:1", "', '"), ("109 80", "spaces"),
                                     ("109 , 80 3:1", "', '"), ("109,80 7 3:1", "spaces")])
def test_labels_separated_by_spaces_or_comma_space_are_named_as_the_likely_cause(tmp_path, row, sep):
    path = write(tmp_path, f"2 10 200\n0 1:1\n{row}\n")
    with pytest.raises(XCFormatError) as err:
        read_xc(path)
    message = str(err.value)
    assert message.count("\n") == 0 and message.startswith(f"{path}:3: expected ")
    joined = "109,80,7" if "7" in row else "109,80"
    assert message.endswith(f": labels separated by {sep}? join them with commas, no spaces: {joined}"), message


def test_a_bad_token_after_the_features_gets_no_label_separator_hint(tmp_path):
    for row in ("0 1:1 4", "0 x 1:1", "0,,1 1:1", "7 3:1 8 9"):
        with pytest.raises(XCFormatError) as err:
            read_xc(write(tmp_path, f"2 10 200\n0 1:1\n{row}\n"))
        assert "labels separated" not in str(err.value), row


def test_empty_label_list_allowed_when_asked(tmp_path):
    a = read_xc(write(tmp_path, "2 10 5\n0 1:1\n 2:1\n"), allow_empty_labels=True)
    np.testing.assert_array_equal(a["label_indptr"], [0, 1, 1])


def test_round_trip_of_generated_data(tmp_path):
    arrays = xc_data.generate(seed=1, n_train=300, n_test=10, n_features=500, n_labels=200)
    train = XCData.from_arrays(arrays, "train_")
    path = write_xc(tmp_path / "train.txt", train.to_arrays())
    back = XCData.from_arrays(read_xc(path))
    for f in ("indptr", "indices", "label_indptr", "labels"):
        np.testing.assert_array_equal(getattr(back, f), getattr(train, f))
    np.testing.assert_array_equal(back.values, train.values)
    assert format_xc(train.to_arrays()).startswith(b"300 500 200\n")


def test_written_values_read_back_as_the_same_float32(tmp_path):
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**32, 20_000, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    values = values[np.isfinite(values)]    # every finite float32: subnormals, extremes, both signs
    n = values.size
    arrays = {"indptr": np.arange(n + 1), "indices": np.zeros(n, np.int32), "values": values,
              "label_indptr": np.arange(n + 1), "labels": np.zeros(n, np.int32), "shape": (1, 1)}
    back = read_xc(write_xc(tmp_path / "values.txt", arrays))
    np.testing.assert_array_equal(back["values"], values)   # exact; -0.0 is written as 0


def test_cache_is_used_and_keyed_by_content(tmp_path):
    path = write(tmp_path, GOOD)
    first = read_xc_cached(path, cache_dir=tmp_path / "c")
    assert len(list((tmp_path / "c").glob("*.npz"))) == 1
    second = read_xc_cached(path, cache_dir=tmp_path / "c")
    np.testing.assert_array_equal(first["indices"], second["indices"])
    path.write_text(GOOD.replace("7:.25", "7:.5"))
    third = from_file(path)  # default cache dir (DLSYSBENCH_CACHE), file changed -> re-parsed
    assert third.values[-1] == pytest.approx(0.5)


@pytest.mark.parametrize("stem", ["a" * 240, "数据" * 38])
def test_a_file_with_a_long_name_is_parsed_and_cached(tmp_path, stem):
    """The cache file is named after the source's stem; a long stem must not push that name
    past the file system's 255 bytes (the source itself is a legal name)."""
    from impls.slide.data.xc_format import read_xc_cached

    source = tmp_path / f"{stem}_train.txt"
    source.write_text("2 4 3\n0 1:0.5\n1,2 3:1.0\n")
    arrays = read_xc_cached(source, cache_dir=tmp_path / "cache")
    assert arrays["indptr"].tolist() == [0, 1, 2]
    cached = list((tmp_path / "cache").glob("*.npz"))
    assert len(cached) == 1 and len(cached[0].name.encode()) <= 255
    assert read_xc_cached(source, cache_dir=tmp_path / "cache")["indptr"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("content, hint", [
    ("2 4 3\r0 1:0.5\r1 2:1.0\r".encode(), "lines end in CR alone"),
    ("2 4 3\n0 1:0.5\n1 2:1.0\n".encode("utf-16"), "looks UTF-16"),
    ("2 4 3\n0 1:0.5\n1 2:1.0\n".encode("utf-16-le"), "looks UTF-16"),
])
def test_a_header_in_another_encoding_or_line_ending_says_which(tmp_path, content, hint):
    path = tmp_path / "train.txt"
    path.write_bytes(content)
    with pytest.raises(XCFormatError, match=hint):
        read_xc(path)
    ok = tmp_path / "crlf.txt"
    ok.write_bytes(b"2 4 3\r\n0 1:0.5\r\n1 2:1.0\r\n")           # CRLF is read as it is
    assert read_xc(ok)["indptr"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("body", [b"0 0:1\r\r\n1 1:1\r\r\n2 2:1\r\r\n", b"0 0:1\n1 1:1 \r2:1\n2 2:1\n"])
def test_a_cut_file_with_stray_carriage_returns_is_still_called_cut(tmp_path, body):
    """CR CR LF line ends, or one CR inside a line, do not make the missing lines CR-ended ones."""
    path = tmp_path / "cut.txt"
    path.write_bytes(b"5 6 4\n" + body)
    with pytest.raises(XCFormatError, match=r"header says N=5 points but the file has 3 data lines: a cut file"):
        read_xc(path)
    mac = tmp_path / "mac.txt"
    mac.write_bytes(b"5 6 4\n0 0:1\r1 1:1\r2 2:1\r3 3:1\r4 4:1\r")
    with pytest.raises(XCFormatError, match=r"has 1 data lines: its lines end in CR alone"):
        read_xc(mac)


def test_two_numbers_above_a_one_file_line_say_the_header_lacks_l(tmp_path):
    path = write(tmp_path, "3 6\n0,1 0:1 2:0.5\n2 1:2 3:1 5:1\n1,3 0:3\n", "data.txt")
    with pytest.raises(XCFormatError, match=r"data.txt:1: .*got '3 6': two numbers, above a line of this format "
                                            r"\('labels f:v ...'\): the header lacks L") as err:
        read_xc(path)
    assert "join" not in str(err.value)


def test_a_cut_file_says_its_count_and_how_to_mend_it(tmp_path):
    """The first lines of a file under its whole header: the error says it looks cut and what to do."""
    path = write(tmp_path, "490449 20 8\n0 1:1\n1 2:1\n\n", "small.txt")
    with pytest.raises(XCFormatError, match=r"small.txt:1: header says N=490449 points but the file has 2 data "
                                            r"lines: a cut file .*write the real count, 2, as N in the header, "
                                            r"or use the whole file$"):
        read_xc(path)


def test_the_newer_format_s_two_files_are_named_and_the_join_command_in_the_error_works(tmp_path):
    """Features ('N D', then 'f:v ...') and labels ('N L', then 'l1,l2', 'l1 l2' or 'l:1.0' a line)
    in separate files: the error gives a command that joins them, and it does."""
    import os
    import re
    import subprocess
    import sys

    features = write(tmp_path, "3 20\n1:0.5 4:1\n0:1\n2:1 7:0.25\n", "trn_X_Xf.txt")
    labels = write(tmp_path, "3 8\n0,3\n\n5:1.0 1:1.0\n", "trn_X_Y.txt")
    for given in (features, labels):
        with pytest.raises(XCFormatError) as err:
            read_xc(given)
        message = str(err.value)
        assert message.count("\n") == 0 and f"{given}:1: expected the header 'N D L'" in message
        assert "newer XC format, features and labels in separate files" in message
        command = re.search(r"join them with: (.*)$", message).group(1)
        assert command.endswith(f"{features} {labels} {tmp_path / 'train.txt'}")
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", command], check=True, env=env, cwd=tmp_path)
    joined = read_xc(tmp_path / "train.txt", allow_empty_labels=True)
    np.testing.assert_array_equal(joined["shape"], [20, 8])
    np.testing.assert_array_equal(joined["label_indptr"], [0, 2, 2, 4])
    np.testing.assert_array_equal(joined["labels"], [0, 3, 5, 1])
    np.testing.assert_array_equal(joined["indices"], [1, 4, 0, 2, 7])
    np.testing.assert_allclose(joined["values"], [0.5, 1, 1, 1, 0.25])


def test_the_readme_gives_the_join_command_the_error_gives():
    from pathlib import Path

    from impls.slide.data.xc_format import JOIN_COMMAND

    readme = (Path(__file__).parents[2] / "impls" / "slide" / "README.md").read_text()
    assert f"    {JOIN_COMMAND} trn_X_Xf.txt trn_X_Y.txt train.txt\n" in readme


def test_the_join_refuses_a_pair_of_other_lengths_and_writes_nothing(tmp_path, capsys):
    from impls.slide.data import xc_join

    features = write(tmp_path, "3 20\n1:0.5\n0:1\n2:1\n", "trn_X_Xf.txt")
    short = write(tmp_path, "3 8\n0\n1\n", "trn_X_Y.txt")     # one point short: zip would drop it
    other = write(tmp_path, "4 8\n0\n1\n2\n3\n", "other_Y.txt")
    for labels, said in ((short, "2 point lines after the header, which says 3"), (other, "holds 4")):
        assert xc_join.main([str(features), str(labels), str(tmp_path / "out.txt")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and said in err and err.count("\n") == 1, err
        assert not (tmp_path / "out.txt").exists()
    assert xc_join.main([str(features), str(short), str(features)]) == 2
    assert "overwrite an input" in capsys.readouterr().err
    assert features.read_text().startswith("3 20\n")


def test_the_join_keeps_empty_points_at_the_end_and_reads_crlf(tmp_path, capsys):
    """An empty last point is a blank last line, which the reader takes as the point N counts."""
    from impls.slide.data import xc_join

    features = write(tmp_path, "4 20\r\n1:0.5 3:0.25\r\n\r\n2:1\r\n\r\n", "trn_X_Xf.txt")
    labels = write(tmp_path, "4 5\r\n0:1.0 4:1.0\r\n2\r\n\r\n\r\n", "trn_X_Y.txt")
    assert xc_join.main([str(features), str(labels), str(tmp_path / "train.txt")]) == 0
    assert "warning" not in capsys.readouterr().err
    joined = read_xc(tmp_path / "train.txt", allow_empty_labels=True)
    np.testing.assert_array_equal(joined["label_indptr"], [0, 2, 3, 3, 3])
    np.testing.assert_array_equal(joined["labels"], [0, 4, 2])
    np.testing.assert_array_equal(joined["indices"], [1, 3, 2])


def test_the_join_takes_trailing_blank_lines_and_refuses_extra_points(tmp_path, capsys):
    from impls.slide.data import xc_join

    features = write(tmp_path, "3 10\n1:0.5 2:1\n3:1\n4:2\n\n\n", "trn_X_Xf.txt")     # blank lines after N
    labels = write(tmp_path, "3 5\n0\n1\n2\n", "trn_X_Y.txt")
    assert xc_join.main([str(features), str(labels), str(tmp_path / "train.txt")]) == 0
    assert read_xc(tmp_path / "train.txt")["labels"].tolist() == [0, 1, 2]
    assert oct((tmp_path / "train.txt").stat().st_mode & 0o777) != oct(0o600)
    extra = write(tmp_path, "3 5\n0\n1\n2\n3\n", "more_Y.txt")
    assert xc_join.main([str(features), str(extra), str(tmp_path / "o.txt")]) == 2
    assert "1 more non-blank lines after the 3 points" in capsys.readouterr().err


def test_the_join_refuses_inputs_it_cannot_read_twice_and_a_missing_folder(tmp_path, capsys):
    import os

    from impls.slide.data import xc_join

    features = write(tmp_path, "2 10\n1:0.5\n3:1\n", "trn_X_Xf.txt")
    labels = write(tmp_path, "2 5\n0\n1\n", "trn_X_Y.txt")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = ((fifo, labels, tmp_path / "o.txt", "must be a regular file"),
             (features, features, tmp_path / "o.txt", "both the features and the labels file"),
             (features, labels, tmp_path / "no-such" / "o.txt", "does not exist"),
             (features, tmp_path / "typo.txt", tmp_path / "o.txt", "typo.txt: the labels file does not exist"),
             (features, tmp_path, tmp_path / "o.txt", "the labels file is a folder"))
    for x, y, out, said in cases:
        assert xc_join.main([str(x), str(y), str(out)]) == 2          # returns at once: the fifo is never opened
        err = capsys.readouterr().err
        assert err.startswith("error: ") and said in err and err.count("\n") == 1, err
        assert "pipe" not in err or x == fifo, err                      # a typo is no pipe problem


def test_the_join_takes_debug_and_says_a_flag_error_in_one_line(tmp_path, capsys):
    from impls.slide.data import xc_join

    with pytest.raises(SystemExit) as stop:
        xc_join.main(["--no-such-flag"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert xc_join.main([str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "o"), "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_an_interrupted_join_leaves_no_output(tmp_path, monkeypatch, capsys):
    from impls.slide.data import xc_join

    features = write(tmp_path, "3 10\n1:0.5\n3:1\n4:2\n", "trn_X_Xf.txt")
    labels = write(tmp_path, "3 5\n0\n1\n2\n", "trn_X_Y.txt")
    out = write(tmp_path, "an older file\n", "train.txt")
    calls = []

    def interrupted(line):
        calls.append(line)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return line

    monkeypatch.setattr(xc_join, "_labels", interrupted)
    assert xc_join.main([str(features), str(labels), str(out)]) == 130
    assert "no partial output was left" in capsys.readouterr().err
    assert out.read_text() == "an older file\n"                        # untouched: no half-written file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.txt", "trn_X_Xf.txt", "trn_X_Y.txt"]


@pytest.mark.parametrize("text", ["44 21:1 72:1 82:1\n3,9 1:1\n", "44,3 21:0.5 72:1\n3 1:1\n", " 21:1 72:1\n3 1:1\n"])
def test_a_file_without_a_header_is_named_as_such(tmp_path, text):
    """Line 1 is a data line (labels, or none, then f:v): the error says the header is missing and
    what to write, from the reader and from the header check train and xc_stats run first."""
    from impls.slide.data.dataset import RealDataMismatch, read_header

    path = write(tmp_path, text, "nohdr.txt")
    said = (r"nohdr.txt:1: expected the header 'N D L' .*: line 1 is a data line \(labels, then feature:value\), "
            r"so the file has no header; add 'N D L' \(points, features, labels: .*\) as its first line$")
    with pytest.raises(XCFormatError, match=said) as err:
        read_xc(path)
    assert str(err.value).count("\n") == 0
    with pytest.raises(RealDataMismatch, match=said):
        read_header(path)


def test_a_header_that_is_not_a_data_line_gets_no_missing_header_hint(tmp_path):
    for text in ("two 40 12\n0 0:1\n", "3 10 5 7\n0 0:1\n", "3 x:1 5\n0 0:1\n"):
        with pytest.raises(XCFormatError) as err:
            read_xc(write(tmp_path, text))
        assert "no header" not in str(err.value), text


@pytest.mark.parametrize("row, token", [
    (b"1 0:0,5", "'0:0,5': a decimal comma? write the value with '.'"),
    (b"1 0:1\xc2\xa02:1", r"'0:1\\xc2\\xa02:1'"),          # a non-breaking space from copy-paste
    (b"1 0:1\x0b2:1", r"'0:1\x0b2:1'"), (b"1 0:0x1", "'0:0x1'"),
    (b"1 :1", "':1'"), (b"1 a:1", "'a:1'"), (b"1 0:1 7", "'7'"), (b"\t7 0:1", "'7'"),
])
def test_a_syntax_error_in_a_feature_token_quotes_the_token(tmp_path, row, token):
    """On a line of hundreds of tokens the bad one was left to the user to find."""
    path = tmp_path / "f.txt"
    path.write_bytes(b"2 10 3\n0 1:1\n" + row + b"\n")
    with pytest.raises(XCFormatError) as err:
        read_xc(path, allow_empty_labels=True)
    message = str(err.value)
    assert message.startswith(f"{path}:3: ") and message.endswith(f", got {token}"), message
    assert message.count("\n") == 0


def test_an_empty_file_is_called_empty_by_the_reader_and_the_header_check(tmp_path):
    from impls.slide.data.dataset import RealDataMismatch, read_header

    path = write(tmp_path, "", "zero_test.txt")
    said = r"zero_test.txt: the file is empty \(expected the header 'N D L', then a line per point\)$"
    with pytest.raises(XCFormatError, match=said):
        read_xc(path)
    with pytest.raises(RealDataMismatch, match=said):
        read_header(path)


@pytest.mark.parametrize("end", ["\n", " \n", "\r\n", "  "])
def test_a_last_point_with_nothing_is_a_point_like_the_same_line_inside(tmp_path, end):
    """It was called a cut file (and N-1 advised, dropping a test point) while the same line
    inside the data was read as a point; blank lines beyond N are still no points."""
    from impls.slide.data.xc_format import data_lines

    last = write(tmp_path, "3 4 3\n0 0:1\n1 1:1\n" + end, "last.txt")
    inside = write(tmp_path, "3 4 3\n0 0:1\n" + end.rstrip("\n") + "\n1 1:1\n", "inside.txt")
    assert data_lines(last) == 3
    with pytest.raises(XCFormatError, match=r"last.txt:4: empty label list"):
        read_xc(last)
    a, b = read_xc(last, allow_empty_labels=True), read_xc(inside, allow_empty_labels=True)
    np.testing.assert_array_equal(a["label_indptr"], [0, 1, 2, 2])
    np.testing.assert_array_equal(a["indptr"], [0, 1, 2, 2])
    np.testing.assert_array_equal(b["label_indptr"], [0, 1, 1, 2])
    assert read_xc(write(tmp_path, "2 4 3\n0 0:1\n1 1:1\n" + end + "\n\n"))["indptr"].size == 3


def test_a_set_whose_last_point_is_empty_reads_back_as_written(tmp_path):
    arrays = {"indptr": np.array([0, 1, 1]), "indices": np.array([2]), "values": np.array([0.5], np.float32),
              "label_indptr": np.array([0, 1, 1]), "labels": np.array([3]), "shape": np.array([4, 5])}
    back = read_xc(write_xc(tmp_path / "w.txt", arrays), allow_empty_labels=True)
    for key in ("indptr", "indices", "label_indptr", "labels"):
        np.testing.assert_array_equal(back[key], arrays[key])
