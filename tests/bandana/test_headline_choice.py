"""The Bandana headline's configuration is chosen on the training trace and scored on the test
trace: a choice made on the trace that scores it would be optimistic by construction."""
from __future__ import annotations

import numpy as np
import pytest

from impls.bandana.experiments import simulation
from impls.bandana.figures import simulation as figures


def test_the_headline_scores_on_test_the_configuration_best_on_train(monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    out = simulation.layout_policy_experiment(progress=False)
    for info in out["tables"].values():
        head = info["headline"]
        assert head["chosen_on"] == "train"
        at = {f"{p['layout']}/{p['policy']}": p for p in info["points"] if p["cache_fraction"] == head["cache_fraction"]}
        on_train = head["train_effective_bandwidth"]
        assert set(on_train) == {k for k, p in at.items()
                                 if p["layout"] not in ("identity", "random") and p["policy"] != "none"}
        chosen = f"{head['best']['layout']}/{head['best']['policy']}"
        assert on_train[chosen] == max(on_train.values())
        assert head["best"]["effective_bandwidth"] == at[chosen]["effective_bandwidth"]     # scored on test
        assert head["ratio"] == pytest.approx(at[chosen]["effective_bandwidth"] / head["baseline"]["effective_bandwidth"])
        oracle = max((at[k] for k in on_train), key=lambda p: p["effective_bandwidth"])
        assert head["best_on_test"]["effective_bandwidth"] == oracle["effective_bandwidth"]
        assert head["selection_gain"] == pytest.approx(oracle["effective_bandwidth"] / at[chosen]["effective_bandwidth"])
        assert head["selection_gain"] >= 1.0
    title = figures.effective_bandwidth_by_layout_and_policy(out).axes[0].get_title()
    assert "chosen on the training trace" in title


def test_the_choice_reads_the_training_lookups_and_not_the_test_ones(monkeypatch):
    """Where the two traces disagree, the training trace's favourite is the one scored."""
    train_ids, test_ids = np.arange(0, 50, dtype=np.int64), np.arange(50, 100, dtype=np.int64)
    table = {"num_vectors": 100, "train": (np.array([0, 50]), train_ids), "test_ids": test_ids}
    seen = []

    def fake_grid(table_, settings, label, progress, ids=None):
        seen.append(None if ids is None else ids.copy())
        return [{"effective_bandwidth": v} for v in (0.2, 0.5)]    # train favours the second

    monkeypatch.setattr(simulation, "_simulate_grid", fake_grid)
    candidates = [{"layout": "shp", "policy": "prefetch", "effective_bandwidth": 0.9},   # test favours the first
                  {"layout": "kmeans-two-level", "policy": "lowpri", "effective_bandwidth": 0.4}]
    s = {"headline_cache_fraction": 0.05, "headline_shadow_factor": 4.0, "train_fraction": 0.5}
    chosen, scores = simulation._chosen_on_train(table, {"shp": object(), "kmeans-two-level": object()},
                                                 candidates, s, "t", False)
    assert chosen is candidates[1] and scores == {"shp/prefetch": 0.2, "kmeans-two-level/lowpri": 0.5}
    assert len(seen) == 1 and np.array_equal(seen[0], train_ids)


def test_an_empty_training_trace_is_refused_with_its_fraction():
    table = {"num_vectors": 10, "train": (np.array([0]), np.array([], np.int64))}
    with pytest.raises(ValueError, match=r"t: the training trace is empty \(train_fraction 0.0\)"):
        simulation._chosen_on_train(table, {}, [], {"train_fraction": 0.0, "headline_cache_fraction": 0.05},
                                    "t", False)
