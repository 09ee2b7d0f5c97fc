"""With every output neuron active, a SLIDE step equals torch autograd + TF's Adam (ε-hat)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from impls.slide.data import xc_data
from impls.slide.core.config import SlideConfig
from impls.slide.data.dataset import XCData
from impls.slide.core.network import SlideNetwork


@pytest.fixture(scope="module")
def tiny():
    arrays = xc_data.generate(seed=3, n_train=64, n_test=8, n_features=300, n_labels=50,
                              labels_per_point=3.0, nnz_per_point=12, labels_per_topic=8,
                              topic_pool=16, words_per_label=6)
    return XCData.from_arrays(arrays, "train_")


def torch_reference(weights, data, batches, cfg, optimizer):
    params = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True) for k, v in weights.items()}
    opt = optimizer(params.values(), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
    grads = []
    for rows in batches:
        dense = np.zeros((len(rows), data.n_features), np.float32)
        target = np.zeros((len(rows), data.n_labels), np.float32)
        for i, r in enumerate(rows):
            sl = slice(data.indptr[r], data.indptr[r + 1])
            np.add.at(dense[i], data.indices[sl], data.values[sl])
            labs = np.unique(data.labels[data.label_indptr[r]:data.label_indptr[r + 1]])
            target[i, labs] = 1.0 / len(labs)
        x = torch.tensor(dense)
        h = torch.relu(x @ params["W1"] + params["b1"])
        logits = h @ params["W2"].T + params["b2"]
        loss = -(torch.tensor(target) * torch.log_softmax(logits, 1)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        grads.append({k: p.grad.detach().numpy().copy() for k, p in params.items()})
        opt.step()
    return {k: p.detach().numpy() for k, p in params.items()}, grads


@pytest.mark.parametrize("adam,steps", [("lazy", 1), ("dense", 3)])
@pytest.mark.parametrize("eps", [1e-8, 1e-4])
def test_step_matches_torch(tiny, tf_adam, adam, steps, eps):
    cfg = SlideConfig(mode="all", batch=16, lr=1e-2, adam=adam, threads=1, init_std=0.1, seed=5, eps=eps)
    net = SlideNetwork(cfg, tiny.n_features, tiny.n_labels, 16)
    start = {k: v.copy() for k, v in net.weights().items()}
    batches = [np.arange(16 * s, 16 * (s + 1)) for s in range(steps)]
    # the gradients SLIDE computes, read back from its Adam state after the first step
    ref, ref_grads = torch_reference(start, tiny, batches, cfg, tf_adam)
    if eps > 1e-6:   # where ε sits matters at this ε: torch's placement must not pass
        torch_form, _ = torch_reference(start, tiny, batches, cfg, torch.optim.Adam)
        assert np.abs(torch_form["W2"] - ref["W2"]).max() > 1e-4
    for s, rows in enumerate(batches):
        net.step(tiny, rows)
        if s == 0:
            for k in ("W1", "b1", "W2", "b2"):
                g = net.adam_state[k] / (1 - cfg.beta1)   # m_1 = (1 - beta1) g
                np.testing.assert_allclose(g, ref_grads[0][k], atol=1e-5, rtol=1e-4, err_msg=k)
    for k in ("W1", "b1", "W2", "b2"):
        np.testing.assert_allclose(net.weights()[k], ref[k], atol=1e-5, rtol=1e-5, err_msg=k)
