"""What the trainers' warm-ups keep off the clock: SLIDE's compiles every kernel a timed step
can call (the tables' fold included), and dense torch's leaves the Adam state allocated, zeroed
in place, so the first timed step allocates none and computes what a fresh optimiser would."""
from __future__ import annotations

import numba
import numba.core.event
import numpy as np
import pytest

from impls.slide.core import table_kernels
from impls.slide.core.config import SlideConfig
from impls.slide.core.network import SlideNetwork
from impls.slide.data import xc_data
from impls.slide.data.dataset import XCData
from impls.slide.training import trainer


@pytest.fixture(scope="module")
def small():
    arrays = xc_data.generate(seed=11, n_train=600, n_test=50, n_features=2000, n_labels=1500,
                              labels_per_point=3.0, nnz_per_point=30)
    return XCData.from_arrays(arrays, "train_"), XCData.from_arrays(arrays, "test_")


class _Compiles(numba.core.event.Listener):
    """The names of the functions numba compiles while installed."""

    def __init__(self):
        self.names = []

    def on_start(self, event):
        self.names.append(event.data["dispatcher"].py_func.__name__)

    def on_end(self, event):
        pass


def test_slide_warm_up_compiles_the_fold_a_timed_step_calls(monkeypatch, small):
    # a fresh dispatcher, neither compiled nor cached, so that only this test's calls compile it
    options = {k: v for k, v in table_kernels.fold_moved.targetoptions.items() if k != "nopython"}
    fresh = numba.njit(**options)(table_kernels.fold_moved.py_func)
    folds = []
    monkeypatch.setattr(table_kernels, "fold_moved", lambda *a: folds.append(1) or fresh(*a))
    cfg = SlideConfig(batch=64, K=3, L=8, threads=1, min_active=40)
    compiles = _Compiles()
    with numba.core.event.install_listener("numba:compile", compiles):
        trainer.warm_up(cfg)
        assert "fold_moved" in compiles.names
        compiles.names.clear()
        folds.clear()
        train_data, _ = small
        net = SlideNetwork(cfg, train_data.n_features, train_data.n_labels, int(np.diff(train_data.label_indptr).max()),
                           label_counts=train_data.label_counts())
        rng = np.random.default_rng(0)
        for _ in range(200):
            net.step(train_data, rng.integers(0, train_data.n_points, cfg.batch))
            if folds:
                break
    assert folds and "fold_moved" not in compiles.names    # training folded, compiling nothing


def test_tables_warm_up_leaves_the_tables_as_they_were(small):
    train_data, _ = small
    net = SlideNetwork(SlideConfig(batch=64, K=3, L=8, threads=1, min_active=40), train_data.n_features,
                       train_data.n_labels, int(np.diff(train_data.label_indptr).max()))
    net.step(train_data, np.arange(64))
    t = net.tables
    assert t.n_moved    # rows in the delta: a fold of the tables themselves would forget them
    before = [a.copy() for a in (t.codes, t.slot_of, t.moved, t.n_slots, t.offsets, t.items)]
    t.warm_up()
    assert all(np.array_equal(a, b) for a, b in zip(before, (t.codes, t.slot_of, t.moved, t.n_slots, t.offsets,
                                                              t.items)))
