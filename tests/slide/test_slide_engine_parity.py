"""SLIDE's engine and the torch baselines define the same objective and the same metrics:
a label listed twice on one point weighs as much as any other (1 / distinct labels) in
both; mode "all" builds whatever hash parameters it is given (it never hashes);
``output_bias=False`` keeps the output biases at zero on every path; P@5 divides by 5 for
the models and the most-popular-label baseline alike, even with fewer than 5 labels."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from impls.slide.core import evaluate as ev  # noqa: E402
from impls.slide.core.config import SlideConfig  # noqa: E402
from impls.slide.core.network import SlideNetwork  # noqa: E402
from impls.slide.data.dataset import XCData  # noqa: E402
from impls.slide.training import dense_torch  # noqa: E402
from impls.slide.training import trainer  # noqa: E402
from impls.slide.training.dense_torch import DenseNet, _batch, _Trainer  # noqa: E402


def _data(feats: list[list[int]], labels: list[list[int]], n_features: int, n_labels: int) -> XCData:
    """Points with features ``feats`` (values from a fixed draw) and labels ``labels``, in order."""
    ip = np.concatenate([[0], np.cumsum([len(f) for f in feats])]).astype(np.int64)
    lp = np.concatenate([[0], np.cumsum([len(l) for l in labels])]).astype(np.int64)
    values = np.random.default_rng(0).uniform(0.1, 1.0, int(ip[-1])).astype(np.float32)
    return XCData(ip, np.concatenate(feats).astype(np.int32), values, lp,
                  np.concatenate([np.asarray(l, np.int32) for l in labels]), n_features, n_labels)


@pytest.fixture(scope="module")
def repeated():
    """A 16-point set (30 features, 12 labels) in which several points list a label twice or
    three times, and its copy with each point's labels made distinct."""
    rng = np.random.default_rng(7)
    feats = [sorted(rng.choice(30, 5, replace=False).tolist()) for _ in range(16)]
    labels = [rng.choice(12, 3, replace=False).tolist() for _ in range(16)]
    with_repeats = [l + [l[0]] if i % 3 == 0 else (l + [l[1], l[1]] if i % 5 == 1 else l)
                    for i, l in enumerate(labels)]
    return _data(feats, with_repeats, 30, 12), _data(feats, labels, 30, 12)


def test_dense_targets_weigh_each_distinct_label_once(repeated):
    dup, distinct = repeated
    rows = np.arange(16)
    def triples(data):             # (point, label, weight), in (point, label) order
        r, labs, tw = _batch(data, rows, "cpu")[3:]
        order = np.lexsort((labs.numpy(), r.numpy()))
        return r.numpy()[order], labs.numpy()[order], tw.numpy()[order]

    for a, b in zip(triples(dup), triples(distinct)):
        np.testing.assert_array_equal(a, b)
    r, tw = _batch(dup, rows, "cpu")[3], _batch(dup, rows, "cpu")[5]
    torch.testing.assert_close(torch.zeros(16).index_add_(0, r, tw), torch.ones(16))   # each point's target sums to 1


@pytest.mark.parametrize("output_bias", [True, False])
def test_slide_mode_all_and_dense_take_the_same_steps_on_repeated_labels(repeated, output_bias):
    dup, _ = repeated
    cfg = SlideConfig(mode="all", batch=8, lr=1e-2, adam="dense", threads=1, init_std=0.1, seed=5, eps=1e-3,
                      hidden=8, output_bias=output_bias)
    net = SlideNetwork(cfg, dup.n_features, dup.n_labels, 8)
    model = DenseNet(dup.n_features, dup.n_labels, cfg.hidden, cfg.init_std, cfg.seed, output_bias=output_bias)
    for k in ("W1", "b1", "W2", "b2"):
        np.testing.assert_array_equal(getattr(model, k).detach().numpy(), net.weights()[k], err_msg=k)
    step = _Trainer("dense", model, cfg, dup, torch.device("cpu"))
    for rows in (np.arange(8), np.arange(8, 16), np.arange(8)):
        loss_slide, loss_dense = net.step(dup, rows), step.step(dup, rows).item()
        assert loss_dense == pytest.approx(loss_slide, rel=1e-5)
    for k in ("W1", "b1", "W2", "b2"):
        np.testing.assert_allclose(getattr(model, k).detach().numpy(), net.weights()[k], rtol=1e-4, atol=1e-6,
                                   err_msg=k)
    if not output_bias:
        assert not model.b2.detach().numpy().any() and not net.b2.any()


def test_mode_all_builds_and_trains_with_hash_parameters_it_never_uses():
    data = _data([[i % 20, (i + 3) % 20] for i in range(8)], [[i % 12] for i in range(8)], 20, 12)
    net = SlideNetwork(SlideConfig(mode="all", hidden=4), 20, 12, 4)   # binsize 8 > hidden: no matter
    before = net.W2.copy()
    assert np.isfinite(net.step(data, np.arange(8)))
    assert not np.array_equal(net.W2, before)
    net.refresh_tables(rebuild=True)
    assert net.n_rebuild == 0                                         # no tables to refresh
    result = trainer.train(SlideConfig(mode="all", hidden=4, batch=4, threads=1), data, data,
                           time_budget_s=None, max_iterations=3, eval_every=2, eval_points=8)
    assert result["curve"][-1]["iteration"] == 3
    assert result["active_fraction"] == 1.0


def test_output_bias_false_keeps_zero_biases_whatever_the_path(repeated, monkeypatch):
    dup, _ = repeated
    cfg = SlideConfig(mode="all", hidden=8, batch=8, output_bias=False, threads=1)
    given = {"W1": np.ones((30, 8), np.float32), "b1": np.ones(8, np.float32),
             "W2": np.ones((12, 8), np.float32), "b2": np.full(12, 0.5, np.float32)}
    assert not SlideNetwork(cfg, 30, 12, 8, weights=given).b2.any()
    assert given["b2"].all()                                          # the caller's array is left alone
    for method in ("dense", "sampled"):
        model = DenseNet(30, 12, 8, 0.1, 3, output_bias=False)
        step = _Trainer(method, model, cfg, dup, torch.device("cpu"))
        for rows in (np.arange(8), np.arange(8, 16)):
            step.step(dup, rows)
        assert not model.b2.detach().numpy().any(), method
    made = []

    class Recording(DenseNet):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(dense_torch, "DenseNet", Recording)
    dense_torch.train_dense(cfg, dup, dup, time_budget_s=None, max_iterations=2, eval_every=None, eval_points=8)
    assert made and not made[0].b2.detach().numpy().any()


def test_p_at_5_divides_by_five_for_the_baseline_and_the_models_with_three_labels():
    train = _data([[0]] * 3, [[0], [0], [1]], 4, 3)
    test = _data([[0]], [[1]], 4, 3)
    baseline = ev.most_popular_baseline(train, test, np.arange(1))
    assert baseline["p_at_5"] == pytest.approx(1 / 5)
    model = ev.precision_at_k(ev.top5(np.zeros((1, 2), np.float32), np.zeros((3, 2), np.float32),
                                      np.array([0.0, 1.0, 0.5], np.float32)), test, np.arange(1))
    assert (model["p_at_1"], baseline["p_at_1"]) == (1.0, 0.0)   # label 1 scores highest; label 0 is most popular
    assert model["p_at_5"] == pytest.approx(1 / 5)
    assert ev.precision_at_k(np.array([[1, 0, 2]]), test, np.arange(1))["p_at_5"] == pytest.approx(1 / 5)



def test_repeats_labels_says_whether_some_point_lists_a_label_twice():
    from impls.slide.data.dataset import XCData

    def data(labels, indptr):
        return XCData(np.zeros(len(indptr), np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32),
                      np.array(indptr), np.array(labels), 4, 5)

    assert not data([0, 1, 1, 2], [0, 2, 4]).repeats_labels        # label 1 on two points: no repeat
    assert data([0, 1, 2, 2], [0, 2, 4]).repeats_labels            # point 1 lists label 2 twice
    assert not data([], [0, 0]).repeats_labels
