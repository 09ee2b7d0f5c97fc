"""Learning-rate selection on a held-out slice: the split, the choice, and that it never
evaluates on the test split."""
from __future__ import annotations

import numpy as np
import pytest

from impls.slide.experiments import lr_select


def test_holdout_split_is_disjoint_fixed_and_complete():
    train, held = lr_select.split_holdout(100, 20)
    assert held.size == 20 and train.size == 80
    assert np.array_equal(np.sort(np.concatenate([train, held])), np.arange(100))
    assert np.array_equal(held, lr_select.split_holdout(100, 20)[1])
    for bad in (0, 100):
        with pytest.raises(ValueError):
            lr_select.split_holdout(100, bad)


def test_two_standard_errors_of_a_difference_of_two_p_at_1():
    assert lr_select.two_standard_errors(0.3, 0.28, 300) == pytest.approx(2 * ((0.21 + 0.2016) / 300) ** 0.5)
    assert lr_select.two_standard_errors(0.0, 1.0, 100) == 0.0
    assert lr_select.two_standard_errors(0.3, 0.2, 0) == 0.0


def test_choice_keeps_the_current_rate_within_two_standard_errors_of_the_difference():
    trials = [{"lr": 1e-3, "fitted_final": 0.30}, {"lr": 1e-2, "fitted_final": 0.28}, {"lr": 3e-3, "fitted_final": 0.10}]
    # two standard errors of 0.30 - 0.28 on 3,000 points are 0.023: tied, the current rate stays
    c = lr_select.choose(trials, 1e-2, 3000)
    assert c["lr"] == 1e-2 and c["best_lr"] == 1e-3 and c["kept_current"] and c["learned"]
    assert c["margin"] == pytest.approx(lr_select.two_standard_errors(0.30, 0.28, 3000))
    # on 30,000 points they are 0.007: the evidence moves the rate
    c = lr_select.choose(trials, 1e-2, 30000)
    assert c["lr"] == 1e-3 and not c["kept_current"]
    # a current rate that was not tried is never kept
    c = lr_select.choose(trials, 1e-4, 300)
    assert c["lr"] == 1e-3 and c["margin"] is None


def test_choice_keeps_the_current_rate_when_no_rate_beats_the_popular_label():
    # three rates within noise of one another and of the popular label (a constructed case:
    # fitted P@1 on 1,000 points, the popular label's 0.020)
    trials = [{"lr": 1e-3, "fitted_final": 0.033}, {"lr": 3e-3, "fitted_final": 0.015},
              {"lr": 1e-2, "fitted_final": 0.021}]
    c = lr_select.choose(trials, 3e-3, 1000, baseline=0.020)
    assert c["lr"] == 3e-3 and c["best_lr"] == 1e-3 and c["kept_current"] and not c["learned"]
    # the same numbers against a popular label of 0 would move the rate: the baseline keeps it
    c = lr_select.choose(trials, 3e-3, 1000)
    assert c["lr"] == 1e-3 and c["learned"] and not c["kept_current"]
    # a rate far above the baseline moves it
    c = lr_select.choose([*trials[1:], {"lr": 1e-3, "fitted_final": 0.08}], 3e-3, 1000, baseline=0.020)
    assert c["lr"] == 1e-3 and c["learned"]


def test_select_trains_each_rate_on_the_training_set_less_the_slice(monkeypatch):
    from impls.slide.data import dataset, xc_data
    from impls.slide.experiments import sweeps

    arrays = xc_data.generate(seed=1, n_train=200, n_test=40, n_features=100, n_labels=50,
                              labels_per_point=2.0, nnz_per_point=8)
    full = dataset.XCData.from_arrays(arrays, "train_")
    test = dataset.XCData.from_arrays(arrays, "test_")
    loaded = []

    def fake_registry(name, profile=None):
        loaded.append(name)
        return full, test, {}

    monkeypatch.setattr(dataset, "from_registry", fake_registry)
    seen = []

    def fake_train(method, config, train_data, eval_data, device=None, **kw):
        seen.append((method, config.lr, train_data.n_points, eval_data.n_points, kw["eval_points"]))
        assert eval_data is not test
        top = {1e-3: 0.2, 1e-2: 0.5}[config.lr] if method == "slide" else {1e-3: 0.31, 1e-2: 0.3}[config.lr]
        curve = [{"seconds": 1.0, "iteration": 10, "p_at_1": top / 2}, {"seconds": 2.0, "iteration": 20, "p_at_1": top}]
        return {"curve": curve, "final_p_at_1": top, "iterations": 20, "samples_per_second": 100.0,
                "baseline_p_at_1": popular}

    monkeypatch.setattr(sweeps, "train_method", fake_train)
    lines, popular = [], 0.05
    out = lr_select.select("slide_train", "smoke", ["slide", "dense-cpu"], (1e-3, 1e-2), holdout=30,
                           progress=lines.append)
    assert lines[2] == "slide: lr 0.01, the best on the held-out slice (current 0.01)"
    assert lines[5].startswith("dense-cpu: lr 0.01 kept: 0.001 was better by less than two standard errors")
    assert [(m, lr) for m, lr, *_ in seen] == [("slide", 1e-3), ("slide", 1e-2), ("dense", 1e-3), ("dense", 1e-2)]
    assert all(n_train == 170 and n_eval == 30 and points == 30 for *_, n_train, n_eval, points in seen)
    assert loaded == ["slide-amazon670k"]                                # one split for both runs' set
    assert out["runs"]["slide"]["dataset"] == out["runs"]["dense-cpu"]["dataset"] == "slide-amazon670k"
    assert out["runs"]["slide"]["choice"]["lr"] == 1e-2
    assert out["runs"]["slide"]["choice"]["learned"]
    assert {t["baseline_p_at_1"] for t in out["runs"]["slide"]["trials"]} == {0.05}
    assert out["runs"]["dense-cpu"]["choice"]["kept_current"]          # a tie keeps the profile's rate
    # a popular label as good as every rate: nothing learned, the rate stays
    lines, popular = [], 0.3
    out = lr_select.select("slide_train", "smoke", ["dense-cpu"], (1e-3, 1e-2), holdout=30, progress=lines.append)
    assert not out["runs"]["dense-cpu"]["choice"]["learned"] and out["runs"]["dense-cpu"]["choice"]["lr"] == 1e-2
    assert lines[-1] == ("dense-cpu: no rate beat the most popular label's P@1 on the slice (0.300) by two "
                         "standard errors; lr 0.01 kept")
    with pytest.raises(ValueError, match="no run"):
        lr_select.select("slide_train", "smoke", ["nope"], holdout=30, progress=lambda line: None)


def test_a_rate_whose_training_diverged_is_never_chosen():
    trials = [{"lr": 1e-1, "diverged": "training diverged at batch 3: ..."}, {"lr": 1e-2, "fitted_final": 0.28},
              {"lr": 1e-3, "fitted_final": 0.10}]
    c = lr_select.choose(trials, 1e-1, 3000)      # the current rate diverged: it cannot be kept
    assert c["lr"] == 1e-2 and not c["kept_current"] and c["margin"] is None
    with pytest.raises(ValueError, match="diverged at every rate"):
        lr_select.choose(trials[:1], 1e-1, 3000)
