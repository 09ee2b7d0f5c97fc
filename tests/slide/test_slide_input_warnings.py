"""What `python -m impls.slide.train` says beyond the data's own faults: a share below 1
never printed as "1", the Delicious experiment's flags where Delicious's files meet the
Amazon defaults, and a SLIDE run that computed too large a share of its labels to be sparse."""
from __future__ import annotations

import argparse

import pytest

from impls.slide import input_warnings as iw


@pytest.mark.parametrize("x, text", [(0.5, "0.5"), (1 - 1 / 3809, "0.999737"), (0.123456, "0.123"), (1.0, "1")])
def test_a_share_below_one_is_never_printed_as_one(x, text):
    assert iw.below_one(x) == text


def _args(**kw):
    defaults = dict(real_set=None, dataset=None, method="slide", profile="quick", given=set(),
                    lsh="dwta", K=6, L=50, batch=256, padding="sample", lr=1e-2)
    return argparse.Namespace(**{**defaults, **kw})


def test_delicious_files_with_the_amazon_defaults_are_told_the_delicious_flags():
    wanted = iw.delicious_flags("quick")
    assert wanted["lsh"] == "simhash" and wanted["K"] == 9 and wanted["batch"] == 128   # the profile's run
    note = iw.set_defaults_note(_args(real_set="delicious-200k"))
    assert note and "--lsh simhash" in note and "--K 9" in note and "--batch 128" in note and "--lr 0.003" in note
    assert "--L" not in note                                           # the default already matches
    by_name = iw.set_defaults_note(_args(dataset="slide-delicious200k", lsh="simhash", given={"lsh"}))
    assert by_name and "--lsh" not in by_name and "--K 9" in by_name     # what the user gave is theirs
    given = set(iw.DELICIOUS_FLAGS)
    assert iw.set_defaults_note(_args(real_set="delicious-200k", given=given)) is None
    assert iw.set_defaults_note(_args(real_set="amazon-670k")) is None
    assert iw.set_defaults_note(_args(real_set="delicious-200k", method="dense")) is None


def test_a_slide_run_over_a_large_share_of_its_labels_is_called_not_sparse():
    dense = {"method": "slide", "active_fraction": 0.55, "mean_active": 87.45, "lsh_recall_min_ratio": 0.98}
    note = iw.sparsity_note(dense)
    assert note and "55% of the 159 labels" in note and "0.98x a random set's" in note and "--method dense" in note
    assert iw.sparsity_note({**dense, "active_fraction": 0.01, "mean_active": 1.59}) is None
    assert iw.sparsity_note({**dense, "method": "dense"}) is None


def test_mode_all_computes_every_label_by_design_and_is_not_warned_of():
    full = {"method": "slide", "active_fraction": 1.0, "mean_active": 5450.0, "params": {"mode": "all"}}
    assert iw.sparsity_note(full) is None
    assert iw.sparsity_note({**full, "params": {"mode": "union"}}) is not None


def _split(text: bytes):
    from impls.slide.data.dataset import XCData
    from impls.slide.data.xc_format import parse_xc_bytes

    return XCData.from_arrays(parse_xc_bytes(text, allow_empty_labels=True))


def test_the_p_at_1_ceiling_counts_unlabelled_test_points_as_misses(capsys):
    """One test point with an unseen label and one without labels leave one of three
    reachable: the bound said 0.667, counting the unlabelled one as a hit."""
    train = _split(b"3 4 4\n0 0:1\n1 1:1\n2 2:1\n")
    iw.warn_about_inputs(_args(), train, _split(b"3 4 4\n3 3:1\n 0:1\n0 0:1\n"))
    err = capsys.readouterr().err
    assert "1 of 3 test points carry only labels that no training point carries" in err
    assert "and the 1 without labels are misses too, so P@1 is at most 0.333 (" in err, err
    iw.warn_about_inputs(_args(), train, _split(b"2 4 4\n3 3:1\n0 0:1\n"))
    assert "without labels" not in (err := capsys.readouterr().err) and "P@1 is at most 0.5 (" in err
