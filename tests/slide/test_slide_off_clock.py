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


def _state_tensors(trainer) -> list:
    """Every optimiser state tensor of ``trainer`` with its place: (opt, param, key, tensor)."""
    import torch
    return [(i, id(p), k, v) for i, opt in enumerate(trainer.opts) for p, state in opt.state.items()
            for k, v in state.items() if torch.is_tensor(v)]


def _warmed(method, cfg, data, steps=3):
    """A model and trainer after ``steps`` warm-up steps with the weights restored, as train_dense does."""
    import torch
    from impls.slide.training.dense_torch import DenseNet, _Trainer

    model = DenseNet(data.n_features, data.n_labels, cfg.hidden, cfg.init_std, cfg.seed)
    trainer = _Trainer(method, model, cfg, data, torch.device("cpu"))
    initial = [p.detach().clone() for p in model.parameters()]
    rng = np.random.default_rng(3)
    for _ in range(steps):
        trainer.step(data, rng.integers(0, data.n_points, cfg.batch))
    with torch.no_grad():
        for p, p0 in zip(model.parameters(), initial):
            p.copy_(p0)
    return model, trainer


@pytest.mark.parametrize("method", ["dense", "sampled"])
def test_dense_reset_keeps_the_adam_state_and_steps_as_a_fresh_optimiser(method, small):
    torch = pytest.importorskip("torch")
    from impls.slide.training.dense_torch import _Trainer

    train_data, _ = small
    cfg = SlideConfig(batch=32, hidden=16, threads=1, sample_fraction=0.1)
    model, kept = _warmed(method, cfg, train_data)
    kept.reset_optimizer()
    state = _state_tensors(kept)
    assert state and all(len(opt.state) == sum(len(g["params"]) for g in opt.param_groups) for opt in kept.opts)
    assert all(not v.any() for *_, v in state) and kept.t == 0
    # the reference: the same warm-up (the sampler's draws included), then brand-new optimisers
    ref_model, warmed = _warmed(method, cfg, train_data)
    fresh = _Trainer(method, ref_model, cfg, train_data, torch.device("cpu"))
    if method == "sampled":
        fresh.sampler = warmed.sampler
    for i, rows in enumerate((np.arange(32), np.arange(32, 64), np.arange(16, 48), np.arange(32))):
        kept.step(train_data, rows)
        fresh.step(train_data, rows)
        if i == 0:   # the first timed step reuses every state tensor, allocating none
            after = _state_tensors(kept)
            assert [s[:3] for s in after] == [s[:3] for s in state] and all(a[3] is s[3] for a, s in zip(after, state))
    for p, q in zip(model.parameters(), ref_model.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_train_dense_first_timed_step_finds_the_adam_state_allocated(monkeypatch, small):
    pytest.importorskip("torch")
    from impls.slide.training import dense_torch

    seen, real_step = [], dense_torch._Trainer.step

    def step(self, data, rows):
        before = _state_tensors(self)
        out = real_step(self, data, rows)
        seen.append((before, _state_tensors(self)))
        return out

    monkeypatch.setattr(dense_torch._Trainer, "step", step)
    train_data, test_data = small
    dense_torch.train_dense(SlideConfig(batch=32, hidden=16, threads=1), train_data, test_data, time_budget_s=None,
                            max_iterations=2, eval_every=0, eval_points=20, warmup_steps=2)
    (before, after) = seen[2]    # the first timed step
    assert before and [a[:3] for a in after] == [b[:3] for b in before]
    assert all(a[3] is b[3] for a, b in zip(after, before))
