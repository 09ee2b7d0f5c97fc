"""The real-data path: header checked against the published shape, checksums recorded,
registry manifest with the test file beside the training file (a tiny file in the real
XC format stands in for Amazon-670K)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from impls.harness import registry
from impls.slide.data import dataset
from impls.slide import xc_stats

FIXTURES = Path(__file__).parent.parent / "fixtures" / "slide-xc"
TINY = {"features": 20, "labels": 8, "train_points": 6, "test_points": 3,
        "points_per_label": 1.0, "labels_per_point": 1.5, "nnz_per_point": 2.17}   # the fixture's own means


@pytest.fixture
def tiny_published(monkeypatch):
    monkeypatch.setitem(xc_stats.PUBLISHED, "tiny-8", TINY)


@pytest.fixture
def files(tmp_path):
    for name in ("tiny_train.txt", "tiny_test.txt"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path / "tiny_train.txt", tmp_path / "tiny_test.txt"


def test_header_must_have_a_published_shape(files, tiny_published):
    train, test = files
    assert dataset.check_real_header(train, "train") == "tiny-8"
    assert dataset.check_real_header(test, "test", "tiny-8") == "tiny-8"
    with pytest.raises(dataset.RealDataMismatch, match=r"tiny_test.txt:1: header '3 20 8' is tiny-8's published test "
                                                      r"shape, given as its train split .*the other way round\?"):
        dataset.check_real_header(test, "train")
    with pytest.raises(dataset.RealDataMismatch, match=r"tiny_train.txt:1: header '6 20 8' is tiny-8's published train "
                                                      r"shape, given as its test split .*the other way round\?"):
        dataset.check_real_header(train, "test", "tiny-8")
    with pytest.raises(dataset.RealDataMismatch, match=r"part.txt:1: header '4 20 8' is not the published train"
                                                      r".*fewer points than the real set's, so a subsample of it"):
        dataset.check_real_header(_part_of(train, 4), "train")
    with pytest.raises(dataset.RealDataMismatch, match="490449 135909 670091"):
        dataset.check_real_header(train, "train", "amazon-670k")


def test_one_changed_count_in_the_header_is_refused(tmp_path, tiny_published):
    bad = tmp_path / "train.txt"
    bad.write_text((FIXTURES / "tiny_train.txt").read_text().replace("6 20 8", "6 20 9", 1))
    with pytest.raises(dataset.RealDataMismatch, match=":1: header '6 20 9'.*so not the files of any of them"):
        dataset.check_real_header(bad, "train")


def test_real_pair_records_checksums(files, tiny_published, tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    train, test, info = dataset.real_pair(*files)
    assert info["real"] and not info["synthetic"] and info["like"] == "tiny-8"
    assert info["sha256"] == registry.sha256_of(files[0]) and info["test_sha256"] == registry.sha256_of(files[1])
    assert (train.n_points, test.n_points, train.n_features, train.n_labels) == (6, 3, 20, 8)
    assert train.label_indptr[4] == train.label_indptr[3]  # the point without labels is kept


def test_a_file_with_a_real_header_but_other_contents_is_not_called_real(files, tiny_published, tmp_path):
    """Random points under a published header: the header alone does not make a set real."""
    lines = files[0].read_text().splitlines()
    fake = tmp_path / "fake_train.txt"
    fake.write_text("\n".join([lines[0]] + ["1 3:1.0"] * 6) + "\n")   # one label and one feature a point
    with pytest.raises(dataset.RealDataMismatch, match=r"header is tiny-8's but the contents are not "
                                                       r"\(labels per point 1.00, published 1.5\).*--real no"):
        dataset.real_pair(fake, files[1])


def test_repeated_rows_with_the_published_means_under_a_real_header_are_not_called_real(
        files, tiny_published, tmp_path):
    """The means right, every row the same features and label: no bag-of-words set looks so."""
    header = files[0].read_text().splitlines()[0]
    fake = tmp_path / "same_train.txt"
    fake.write_text("\n".join([header] + ["0 3:1.0 5:1.0", "0,1 3:1.0 5:1.0"] * 3) + "\n")
    with pytest.raises(dataset.RealDataMismatch, match=r"contents are not: mean cosine of random point "
                                                       r"pairs 1.000.*at most 0.3.*--real no"):
        dataset.real_pair(fake, files[1])
    from impls.slide.data.real_contents import real_shape

    np.testing.assert_allclose(real_shape(dataset.from_file(fake))["top_label_share"], 1.0)


def test_a_test_file_of_other_contents_under_a_real_header_is_not_called_real(files, tiny_published, tmp_path):
    """The test split is checked as the training split is (it scores the claim)."""
    header = files[1].read_text().splitlines()[0]
    fake = tmp_path / "fake_test.txt"
    fake.write_text("\n".join([header] + ["0 0:1"] * 3) + "\n")
    with pytest.raises(dataset.RealDataMismatch, match=r"fake_test.txt: the header is tiny-8's but the test "
                                                       r"contents are not \(labels per point 1.00"):
        dataset.real_pair(files[0], fake)


def test_a_real_header_with_the_labels_right_but_far_too_few_features_is_not_called_real(
        files, tiny_published, tmp_path):
    """The published labels per point, but one feature a point against 2.17: not the set."""
    lines = files[0].read_text().splitlines()
    labels = [line.split(" ", 1)[0] if not line.startswith(" ") else "" for line in lines[1:]]
    fake = tmp_path / "sparse_train.txt"
    fake.write_text("\n".join([lines[0]] + [f"{l} 3:1.0" for l in labels]) + "\n")
    with pytest.raises(dataset.RealDataMismatch, match=r"contents are not \(nnz per point 1.00, published 2.17\)"):
        dataset.real_pair(fake, files[1])
    assert dataset.real_pair(*files)[2]["real"]          # the set's own file: within the tolerance


def test_own_files_are_recorded_by_absolute_path_and_checksum(files, tmp_path, monkeypatch):
    monkeypatch.chdir(files[0].parent)
    info = dataset.files_info(files[0].name, files[1].name)
    assert info["source"] == str(files[0]) and info["test_source"] == str(files[1])
    assert info["sha256"] == registry.sha256_of(files[0]) and info["test_sha256"] == registry.sha256_of(files[1])
    assert info["real"] is False and info["synthetic"] is None     # a user's own files: not known


def test_registry_manifest_reads_the_pair_beside_the_training_file(files, tiny_published, tmp_path, monkeypatch):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "tiny-real.toml").write_text(
        'name = "tiny-real"\ndescription = "Tiny-8: a stand-in"\n[external]\nenv = "TINY_REAL"\n'
        'loader = "impls.slide.data.dataset:read_real_pair"\n')
    monkeypatch.setenv("TINY_REAL", str(files[0]))
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    ds = registry.load("tiny-real", "smoke", directory=tmp_path / "m")
    assert not ds.synthetic and ds.params["source_sha256"] == registry.sha256_of(files[0])
    assert bytes(ds.arrays["test_source_sha256"]).decode() == registry.sha256_of(files[1])
    np.testing.assert_array_equal(ds.arrays["test_labels"], [3, 7, 2, 0])


def test_split_beside_and_missing_real_data():
    assert dataset.split_beside("/d/amazon_train.txt") == Path("/d/amazon_test.txt")
    assert dataset.split_beside("/d/constrained_train.txt") == Path("/d/constrained_test.txt")
    assert dataset.split_beside("/d/Amazon_Train.txt") == Path("/d/Amazon_Test.txt")     # any case, kept
    assert dataset.split_beside("/d/AMAZON_TRAIN.TXT") == Path("/d/AMAZON_TEST.TXT")
    assert dataset.split_beside("/d/train_x_train.txt") == Path("/d/train_x_test.txt")   # the last one
    with pytest.raises(dataset.RealDataMismatch, match=r"no 'train' \(in any case\).*give the training file, named with 'train'"):
        dataset.split_beside("/d/amazon_test.txt")       # the test split given where the training file goes


def test_capability_names_the_missing_real_amazon(monkeypatch, tmp_path):
    monkeypatch.setenv("DLSYSBENCH_AMAZON670K", str(tmp_path / "absent_train.txt"))
    reason = dataset.real_data_reason("slide-amazon670k-real")
    assert reason.startswith("needs the real Amazon-670K") and "DLSYSBENCH_AMAZON670K" in reason
    wrong = tmp_path / "train.txt"
    wrong.write_text("6 20 8\n")
    monkeypatch.setenv("DLSYSBENCH_AMAZON670K", str(wrong))
    assert "is not the published train shape" in dataset.real_data_reason("slide-amazon670k-real")


def test_real_amazon_run_is_skipped_without_the_data_and_labelled_real_with_it(files, monkeypatch, tmp_path):
    from impls.harness import capabilities
    from impls.slide.experiments import sweeps as experiments

    monkeypatch.setitem(xc_stats.PUBLISHED, "amazon-670k", TINY)      # the fixture stands in for Amazon-670K
    small = {**experiments.sizes("smoke", "slide_real"), "time_budget_s": 0.3, "eval_first_s": 0.1,
             "eval_points": 3}
    monkeypatch.setattr(experiments, "sizes", lambda profile=None, experiment="slide_train": small)
    monkeypatch.setenv("DLSYSBENCH_AMAZON670K", str(tmp_path / "absent_train.txt"))
    capabilities._cached.cache_clear()
    out = experiments.real_amazon_run("smoke", isolate=False)
    assert out["runs"][0]["skipped"].startswith("needs the real Amazon-670K") and out["source"] is None
    monkeypatch.setenv("DLSYSBENCH_AMAZON670K", str(files[0]))
    capabilities._cached.cache_clear()
    try:
        out = experiments.real_amazon_run("smoke", isolate=False)
    finally:
        capabilities._cached.cache_clear()
    run = out["runs"][0]
    assert "skipped" not in run and 0 <= run["final_p_at_1"] <= 1
    assert out["source"]["real"] and out["source"]["sha256"] == registry.sha256_of(files[0])
    assert out["source"]["test_sha256"] == registry.sha256_of(files[1])


def test_the_real_amazon_run_logs_the_input_warnings_and_records_the_row_norm(files, monkeypatch, tmp_path):
    """Rows ten times unit norm (raw counts) trained there without the word the command line
    gives, and the artifact kept no figure of their scale."""
    from impls.harness import capabilities
    from impls.slide.experiments import sweeps as experiments

    monkeypatch.setitem(xc_stats.PUBLISHED, "amazon-670k", TINY)
    scaled = tmp_path / "x10"
    scaled.mkdir()
    for path in files:
        lines = path.read_text().splitlines()
        scaled.joinpath(path.name).write_text("\n".join(lines[:1] + [re.sub(
            r":([0-9.]+)", lambda m: f":{10 * float(m.group(1)):g}", line) for line in lines[1:]]) + "\n")
    small = {**experiments.sizes("smoke", "slide_real"), "time_budget_s": 0.3, "eval_first_s": 0.1, "eval_points": 3}
    monkeypatch.setattr(experiments, "sizes", lambda profile=None, experiment="slide_train": small)
    monkeypatch.setenv("DLSYSBENCH_AMAZON670K", str(scaled / files[0].name))
    log = tmp_path / "progress.log"
    monkeypatch.setenv("DLSYSBENCH_PROGRESS_LOG", str(log))
    capabilities._cached.cache_clear()
    try:
        out = experiments.real_amazon_run("smoke", isolate=False, progress=False)
    finally:
        capabilities._cached.cache_clear()
    said = log.read_text()
    assert "warning: slide-amazon670k-real: the training rows' median L2 norm is 10 (raw counts?)" in said, said
    assert "or lower the lr of run 'slide' in impls/profiles.toml (0.01 now)" in said, said
    assert "1 of 6 training points have no labels" in said                 # the fixture's unlabelled point
    assert out["runs"][0]["data"]["train"]["median_row_norm"] == pytest.approx(10, rel=1e-5)
    # under a bare asv run no progress log is shown: the artifact keeps the lines and the figure says them
    kept = out["runs"][0]["input_warnings"]
    assert any(line.startswith("the training rows' median L2 norm is 10") for line in kept), kept
    from impls.slide import figures
    shown = figures.time_to_accuracy(out).axes[1].get_title().replace("\n", " ")
    assert "input: the training rows' median L2 norm is 10" in shown, shown


def _cli(train, test, out, *extra):
    from impls.slide.train import main

    return main(["--train", str(train), "--test", str(test), "--method", "slide", "--threads", "1",
                 "--batch", "4", "--max-iterations", "2", "--eval-every", "0", "--eval-points", "3",
                 "--K", "2", "--L", "4", "--min-active", "4", "--json", str(out), "--quiet", *extra])


def test_cli_checks_files_that_claim_a_real_shape_and_labels_them_real(files, tiny_published, tmp_path,
                                                                       monkeypatch, capsys):
    import json

    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    train, test = files
    out = tmp_path / "r.json"
    assert dataset.claimed_real_set(train, test) == "tiny-8"
    assert _cli(train, test, out) == 0                       # auto: the header claims tiny-8's shape
    source = json.loads(out.read_text())["source"]
    assert source["real"] and source["like"] == "tiny-8"
    assert source["sha256"] == registry.sha256_of(train) and source["test_sha256"] == registry.sha256_of(test)
    assert "on real data (tiny-8" in capsys.readouterr().err
    # a test file whose point count is not the published one: one line naming the file and line 1
    bad = tmp_path / "bad_test.txt"
    bad.write_text(test.read_text().replace("3 20 8", "2 20 8", 1).rsplit("\n", 2)[0] + "\n")
    assert _cli(train, bad, tmp_path / "r2.json") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: ") and "bad_test.txt:1: header '2 20 8'" in err
    assert not (tmp_path / "r2.json").exists()
    # read as ordinary files on request: no check, not labelled real
    assert _cli(train, bad, tmp_path / "r3.json", "--real", "no", "--allow-empty-labels") == 0
    assert json.loads((tmp_path / "r3.json").read_text())["source"]["real"] is False


def test_cli_real_flag_demands_the_shape(files, tiny_published, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    # files of no published shape are ordinary files unless the user says they are real
    other, other_test = tmp_path / "other_train.txt", tmp_path / "other_test.txt"
    other.write_text(files[0].read_text().replace("6 20 8", "6 21 8", 1))
    other_test.write_text(files[1].read_text().replace("3 20 8", "3 21 8", 1))
    assert dataset.claimed_real_set(other, other_test) is None
    assert _cli(other, other_test, tmp_path / "a.json", "--allow-empty-labels") == 0
    assert _cli(other, other_test, tmp_path / "b.json", "--real", "amazon-670k") == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "other_train.txt:1: header '6 21 8' is not the published train shape of amazon-670k" in err


def test_an_edited_test_file_beside_the_real_set_is_parsed_again(files, tiny_published, tmp_path, monkeypatch):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "tiny-real.toml").write_text(
        'name = "tiny-real"\ndescription = "Tiny-8: a stand-in"\n[external]\nenv = "TINY_REAL"\n'
        'loader = "impls.slide.data.dataset:read_real_pair"\n'
        'also_reads = "impls.slide.data.dataset:split_beside"\n')
    monkeypatch.setenv("TINY_REAL", str(files[0]))
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    first = registry.load("tiny-real", "smoke", directory=tmp_path / "m")
    lines = files[1].read_text().split("\n")
    lines[1] = "5" + lines[1][lines[1].index(" "):]     # the first test point's label 3 -> 5
    files[1].write_text("\n".join(lines))
    again = registry.load("tiny-real", "smoke", directory=tmp_path / "m")
    assert first.arrays["test_labels"][0] == 3 and again.arrays["test_labels"][0] == 5
    assert bytes(again.arrays["test_source_sha256"]).decode() == registry.sha256_of(files[1])
    files[1].unlink()
    with pytest.raises(registry.DatasetUnavailable, match="tiny_test.txt"):
        registry.load("tiny-real", "smoke", directory=tmp_path / "m")


def test_the_suites_real_manifests_key_their_cache_by_the_test_file_too():
    for name in ("slide-amazon670k-real", "slide-delicious200k-real"):
        assert registry.manifests()[name].spec["also_reads"] == "impls.slide.data.dataset:split_beside"


def _tiny_manifest(tmp_path: Path) -> Path:
    (tmp_path / "m").mkdir(exist_ok=True)
    (tmp_path / "m" / "tiny-real.toml").write_text(
        'name = "tiny-real"\ndescription = "Tiny-8: a stand-in"\n[external]\nenv = "TINY_REAL"\n'
        'loader = "impls.slide.data.dataset:read_real_pair"\n'
        'also_reads = "impls.slide.data.dataset:split_beside"\n')
    return tmp_path / "m"


def test_the_variable_naming_a_real_set_means_what_it_means_where_it_was_typed(files, tiny_published, tmp_path,
                                                                                monkeypatch):
    manifests = _tiny_manifest(tmp_path)
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(files[0].parent)
    monkeypatch.setenv("TINY_REAL", files[0].name)                  # relative: from the current directory
    assert registry.load("tiny-real", "smoke", directory=manifests).params["source"] == str(files[0])
    monkeypatch.setenv("HOME", str(files[0].parent))
    monkeypatch.setenv("TINY_REAL", f"~/{files[0].name}")
    assert registry.load("tiny-real", "smoke", directory=manifests).params["source"] == str(files[0])
    monkeypatch.setenv("TINY_REAL", str(files[0].parent))
    with pytest.raises(registry.DatasetUnavailable, match=rf"is at {files[0].parent}, which is a directory.*"
                                                          r"set TINY_REAL=/path/to/file"):
        registry.load("tiny-real", "smoke", directory=manifests)


def test_a_real_set_from_the_registry_is_named_like_one_given_by_path(files, tiny_published, tmp_path, monkeypatch):
    manifests = _tiny_manifest(tmp_path)
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TINY_REAL", str(files[0]))
    monkeypatch.setattr(dataset, "xc_datasets", lambda: ["tiny-real"])
    monkeypatch.setattr(registry, "manifests", lambda directory=None, real=registry.manifests: real(manifests))
    _, _, info = dataset.from_registry("tiny-real", "smoke")
    assert info["real"] and info["like"] == "tiny-8"
    assert info["sha256"] == registry.sha256_of(files[0]) and info["test_sha256"] == registry.sha256_of(files[1])


def test_a_header_of_no_published_shape_says_how_to_read_a_subsample(files, tiny_published):
    with pytest.raises(dataset.RealDataMismatch, match=r"give it by path \(python -m impls.slide.train "
                                                       r"--train FILE --test FILE --real no --allow-empty-labels, "
                                                       r".*; python -m impls.slide.xc_stats"):
        dataset.check_real_header(_part_of(files[0], 4), "train")


def test_the_command_a_refused_subsample_is_given_reads_it(files, tiny_published, tmp_path, capsys):
    """A subsample of a real set keeps its points without labels: the command the refusal
    names (flags and all) reads it."""
    from impls.slide.train import main

    part = _part_of(files[0], 4)
    lines = part.read_text().splitlines()
    lines[2] = " " + lines[2].split(" ", 1)[1]          # a point without labels, as the real files have
    part.write_text("\n".join(lines) + "\n")
    args = ["--train", str(part), "--test", str(files[1]), "--json", str(tmp_path / "o.json"), "--quiet",
            "--method", "dense", "--max-iterations", "2", "--threads", "1"]
    assert main(args) == 2
    hint = re.search(r"python -m impls\.slide\.train --train FILE --test FILE ([^,;()]*)", capsys.readouterr().err)
    assert hint and main(args + hint.group(1).split()) == 0, capsys.readouterr().err


def _part_of(path, points):
    """The first ``points`` points of XC file ``path``, its header saying so, beside it as part.txt."""
    lines = path.read_text().splitlines()
    n, d, l = lines[0].split()
    part = path.parent / "part.txt"
    part.write_text("\n".join([f"{points} {d} {l}", *lines[1:1 + points]]) + "\n")
    return part


def test_each_real_manifest_takes_only_its_own_set(files, tmp_path, monkeypatch):
    """Delicious-200K's files given as Amazon-670K are refused (and would otherwise be filed
    under the Amazon claims); Amazon's are read and named Amazon."""
    monkeypatch.setenv("DLSYSBENCH_AMAZON670K", str(files[0]))
    monkeypatch.setitem(xc_stats.PUBLISHED, "delicious-200k", TINY)   # the fixture has Delicious's shape
    reason = dataset.real_data_reason("slide-amazon670k-real")
    assert reason.startswith("needs the real Amazon-670K") and "published train shape, not amazon-670k's" in reason
    with pytest.raises(dataset.RealDataMismatch, match="amazon-670k"):
        dataset.from_registry("slide-amazon670k-real", "smoke")
    monkeypatch.setenv("DLSYSBENCH_DELICIOUS200K", str(files[0]))
    assert dataset.real_data_reason("slide-delicious200k-real") is None
    assert dataset.from_registry("slide-delicious200k-real", "smoke")[2]["like"] == "delicious-200k"
    monkeypatch.setitem(xc_stats.PUBLISHED, "amazon-670k", TINY)       # now both shapes are the fixture's
    assert dataset.real_data_reason("slide-amazon670k-real") is None
    _, _, info = dataset.from_registry("slide-amazon670k-real", "smoke")
    assert info["real"] and info["like"] == "amazon-670k"


def test_real_data_needs_the_test_file_beside_it_with_the_test_shape(files, tiny_published, monkeypatch):
    monkeypatch.setitem(xc_stats.PUBLISHED, "amazon-670k", TINY)
    monkeypatch.setenv("DLSYSBENCH_AMAZON670K", str(files[0]))
    assert dataset.real_data_reason("slide-amazon670k-real") is None
    files[1].write_text(files[0].read_text())                           # the training file copied as the test file
    assert "tiny_test.txt:1: header '6 20 8' is amazon-670k's published train shape, given as its test split" in \
        dataset.real_data_reason("slide-amazon670k-real")
    files[1].unlink()
    reason = dataset.real_data_reason("slide-amazon670k-real")
    assert "tiny_test.txt: no test file beside tiny_train.txt" in reason
    from impls.harness import capabilities
    capabilities._cached.cache_clear()
    try:
        assert not capabilities.check_real_amazon670k().available     # so the real run is skipped, not failed
    finally:
        capabilities._cached.cache_clear()


def test_xc_stats_judges_a_real_registry_set_by_its_own_published_means(files, monkeypatch, capsys):
    monkeypatch.setitem(xc_stats.PUBLISHED, "amazon-670k", TINY)
    monkeypatch.setenv("DLSYSBENCH_AMAZON670K", str(files[0]))
    assert xc_stats.main(["slide-amazon670k-real"]) in (0, 1)
    out = capsys.readouterr().out
    assert out.startswith("compared with amazon-670k (counts") and "guessed" not in out and "not judged" not in out


def test_the_files_of_the_other_real_set_are_named_as_that_set(files, monkeypatch):
    monkeypatch.setitem(xc_stats.PUBLISHED, "delicious-200k", TINY)
    with pytest.raises(dataset.RealDataMismatch, match=r"header '6 20 8' is delicious-200k's published train shape, "
                                                       r"not amazon-670k's .*give these files as delicious-200k "
                                                       r"\(the registry set slide-delicious200k-real: "
                                                       r"DLSYSBENCH_DELICIOUS200K\)"):
        dataset.check_real_header(files[0], "train", "amazon-670k")


def test_xc_stats_shows_a_subsample_of_a_real_set_without_judging_its_means(files, tiny_published, tmp_path,
                                                                          capsys):
    """A subsample keeps the set's features and labels in its header, not its point counts: its
    means are not the whole set's, so they cannot fail the set's figures."""
    sub = tmp_path / "sub_train.txt"
    lines = files[0].read_text().splitlines()
    sub.write_text("\n".join(["4 20 8", *lines[1:5]]) + "\n")
    xc_stats.main([str(sub)])                  # 4 points: the distribution checks may fail, not the means
    out = capsys.readouterr().out
    assert out.startswith("compared with tiny-8 (a subsample: its header has the set's features and labels but "
                          "not its training split's point count")
    means = [line for line in out.splitlines() if line.split()[0] in xc_stats.MEAN_TOLERANCE]
    assert len(means) == 3 and all(line.endswith("not judged: a subsample's means are not tiny-8's (--like to judge)")
                                   for line in means), means
    assert xc_stats.main([str(files[0]), "--test", str(files[1])]) in (0, 1)     # the whole set: judged
    out = capsys.readouterr().out
    assert "subsample" not in out and out.startswith("compared with tiny-8 (counts")
    part = tmp_path / "part_test.txt"                 # a partial test file: the means come from training alone
    part.write_text("\n".join(["2 20 8", *files[1].read_text().splitlines()[1:3]]) + "\n")
    xc_stats.main([str(files[0]), "--test", str(part)])
    out = capsys.readouterr().out
    assert "subsample" not in out and "not judged" not in out, out


def test_xc_stats_names_a_real_sets_whole_test_split_as_such(files, tiny_published, tmp_path, monkeypatch,
                                                            capsys):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    xc_stats.main([str(files[1])])
    out = capsys.readouterr().out
    assert "the set's test split" in out and "a subsample" not in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:] if line.split()}
    assert rows["test_points"][1] == "3" and "kept" in rows["test_points"]
    assert rows["train_points"][1] == "-" and "not given" in " ".join(rows["train_points"])


def test_xc_stats_says_a_test_file_of_no_points_has_none_not_that_none_was_given(files, tmp_path, monkeypatch,
                                                                                capsys):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    empty = tmp_path / "empty_test.txt"
    empty.write_text("0 20 8\n")
    xc_stats.main([str(files[0]), "--test", str(empty), "--allow-empty-labels"])
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("test_points"))
    assert "not given" not in row and row.split()[1] == "0"


def test_the_first_lines_of_the_real_amazon_file_are_refused_up_front_as_a_cut_file(tmp_path, monkeypatch, capsys):
    """`head -n 4 train.txt`: the real header over three points. The gate does not call the set
    usable, and the CLI stops with one line naming both counts before anything is parsed."""
    from impls.harness import capabilities
    from impls.slide.data import xc_format

    train, test = tmp_path / "small_train.txt", tmp_path / "small_test.txt"
    train.write_text("490449 135909 670091\n0,3 1:0.5 4:0.25\n5 0:1.0\n 2:0.7\n")
    test.write_text("153025 135909 670091\n1 1:0.5\n")
    cut = r"small_train.txt:1: header says N=490449 points but the file has 3 data lines: a cut file"
    with pytest.raises(dataset.RealDataMismatch, match=cut):
        dataset.check_real_header(train, "train")
    monkeypatch.setenv("DLSYSBENCH_AMAZON670K", str(train))
    reason = dataset.real_data_reason("slide-amazon670k-real")
    assert reason is not None and re.search(cut, reason)
    capabilities._cached.cache_clear()
    try:
        assert not capabilities.check_real_amazon670k().available
    finally:
        capabilities._cached.cache_clear()
    monkeypatch.setattr(xc_format, "_parse", lambda *a, **k: pytest.fail("parsed a file the header check refuses"))
    assert _cli(train, test, tmp_path / "r.json") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: ") and re.search(cut, err)
    assert "or use the whole file" in err and not (tmp_path / "r.json").exists()


def test_a_file_cut_to_most_of_its_lines_is_refused_whatever_its_size(files, tiny_published, monkeypatch):
    """Lines long enough that the cut file is larger than the fewest bytes its header's points
    take: it is still refused, by its line count, which is read once per version of the file."""
    from impls.slide.data import real_contents, xc_format

    train = files[0]
    lines = train.read_text().splitlines()
    long_rows = [lines[1] + " " + " ".join(f"{k}:0.{k:06d}" for k in range(8, 20))] * 5   # 5 of the header's 6
    train.write_text("\n".join([lines[0], *long_rows]) + "\n")
    assert train.stat().st_size > real_contents.least_file_bytes("tiny-8", "train", 6)
    with pytest.raises(dataset.RealDataMismatch, match=r"tiny_train.txt:1: header says N=6 points but the file "
                                                       r"has 5 data lines: a cut file"):
        dataset.check_real_header(train, "train")
    counted = []
    real_count = xc_format.data_lines
    monkeypatch.setattr(xc_format, "data_lines", lambda path: counted.append(path) or real_count(path))
    real_contents._data_lines_of.cache_clear()
    for _ in range(2):
        with pytest.raises(dataset.RealDataMismatch, match="5 data lines"):
            dataset.check_real_header(train, "train")
    assert len(counted) == 1                              # counted once for this version of the file
    train.write_text("\n".join([lines[0], *long_rows, long_rows[0]]) + "\n")
    assert dataset.check_real_header(train, "train") == "tiny-8" and len(counted) == 2


def test_a_whole_file_too_small_for_its_contents_is_refused(files, tiny_published, monkeypatch):
    monkeypatch.setitem(xc_stats.PUBLISHED, "tiny-8", {**TINY, "nnz_per_point": 50.0})
    with pytest.raises(dataset.RealDataMismatch, match=r"tiny_train.txt: the header is tiny-8's but its 133 bytes "
                                                       r"cannot hold the train contents.*--real no"):
        dataset.check_real_header(files[0], "train")

def _published_pair(tmp_path, monkeypatch, name, arrays):
    """Write ``arrays`` (the registry's XC arrays) as a train/test pair and publish their own
    counts and means under ``name``, as a real set's would be."""
    from impls.slide.data.dataset import XCData
    from impls.slide.data.xc_format import write_xc

    train = XCData.from_arrays(arrays, "train_")
    test = XCData.from_arrays(arrays, "test_")
    monkeypatch.setitem(xc_stats.PUBLISHED, name, {
        "features": train.n_features, "labels": train.n_labels, "train_points": train.n_points,
        "test_points": test.n_points, "points_per_label": train.labels.size / train.n_labels,
        "labels_per_point": round(train.labels.size / train.n_points, 2),
        "nnz_per_point": round(train.indices.size / train.n_points, 2)})
    paths = []
    for split in ("train", "test"):
        split_arrays = {k[len(split) + 1:]: v for k, v in arrays.items() if k.startswith(split + "_")}
        paths.append(write_xc(tmp_path / f"{name}_{split}.txt", {**split_arrays, "shape": arrays["shape"]}))
    return paths


def _uniform_rows(seed, points, features, labels, labels_per_point, nnz_per_point, label_zipf=0.0):
    """Made-up rows: labels drawn uniformly (or by a Zipf law of ``label_zipf``), feature ids
    uniformly, every value 1: the published means and none of a real set's shapes."""
    rng = np.random.default_rng(seed)
    out = {"shape": np.array([features, labels])}
    weights = 1.0 / np.arange(1, labels + 1) ** label_zipf
    for split, n in (("train", points), ("test", points // 4)):
        lab = np.stack([rng.choice(labels, labels_per_point, replace=False, p=weights / weights.sum())
                        for _ in range(n)])
        idx = np.sort(np.stack([rng.choice(features, nnz_per_point, replace=False) for _ in range(n)]), axis=1)
        out |= {f"{split}_indptr": np.arange(n + 1, dtype=np.int64) * nnz_per_point,
                f"{split}_indices": idx.ravel().astype(np.int32),
                f"{split}_values": np.ones(idx.size, np.float32),
                f"{split}_label_indptr": np.arange(n + 1, dtype=np.int64) * labels_per_point,
                f"{split}_labels": lab.ravel().astype(np.int32)}
    return out


def test_made_up_rows_with_the_published_means_under_a_real_header_are_not_called_real(tmp_path, monkeypatch):
    """Uniform labels (the most frequent ~3x the mean) are refused; Zipf labels over uniform
    feature ids (document frequency flat in rank, not a text's) are refused; a set of the
    suite's text-like recipe with the same counts is accepted."""
    from impls.slide.data import xc_data

    uniform = _published_pair(tmp_path, monkeypatch, "made-up", _uniform_rows(1, 3000, 5000, 2000, 3, 12))
    with pytest.raises(dataset.RealDataMismatch, match=r"made-up_train.txt: the header is made-up's but the "
                                                       r"contents are not: points of the most frequent label "
                                                       r"over the mean per label in use \d\.\d+, .*at least 8.0"):
        dataset.real_pair(*uniform, "made-up")
    words = _published_pair(tmp_path, monkeypatch, "flat-words",
                            _uniform_rows(2, 3000, 5000, 2000, 3, 12, label_zipf=1.0))
    with pytest.raises(dataset.RealDataMismatch, match=r"log-log slope of feature document frequency against "
                                                       r"rank -0\.\d+, where .* at most -0.3"):
        dataset.real_pair(*words, "flat-words")
    text = xc_data.generate(seed=2, n_train=3000, n_test=750, n_features=5000, n_labels=2000,
                            labels_per_point=3.0, nnz_per_point=12.0)
    assert dataset.real_pair(*_published_pair(tmp_path, monkeypatch, "text-like", text), "text-like")[2]["real"]


def test_labels_drawn_uniformly_over_a_tenth_of_the_header_are_not_called_real(tmp_path, monkeypatch):
    """The suite's text-like rows, each point's labels redrawn uniformly from the first tenth of
    L: a tenth of the labels in use passes, and the unused nine tenths made the most frequent
    label look ~15x the mean per label; over the labels in use it is about 1.5x."""
    from impls.slide.data import xc_data

    text = xc_data.generate(seed=2, n_train=3000, n_test=750, n_features=5000, n_labels=2000,
                            labels_per_point=3.0, nnz_per_point=12.0)
    rng = np.random.default_rng(3)
    for split in ("train", "test"):
        ptr = text[f"{split}_label_indptr"]
        text[f"{split}_labels"] = np.concatenate([rng.choice(200, b - a, replace=False) for a, b in
                                                  zip(ptr[:-1], ptr[1:])]).astype(np.int32)
    paths = _published_pair(tmp_path, monkeypatch, "tenth", text)
    with pytest.raises(dataset.RealDataMismatch, match=r"tenth_train.txt: the header is tenth's but the contents "
                                                       r"are not: points of the most frequent label over the mean "
                                                       r"per label in use 1\.\d+, .*at least 8.0"):
        dataset.real_pair(*paths, "tenth")
