"""The sampled-softmax baseline's in-batch negatives: on by default (TF's sampled softmax),
off as the probe that matches SLIDE's active set without its tables."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from impls.slide.core.config import SlideConfig  # noqa: E402
from impls.slide.data.dataset import XCData  # noqa: E402
from impls.slide.training.dense_torch import DenseNet, _Trainer, others_only  # noqa: E402


def test_others_only_masks_just_the_other_samples_labels():
    # sample 0: labels 10, 11; sample 1: label 12; drawn negatives 11 and 30
    labs, r = torch.tensor([10, 11, 12]), torch.tensor([0, 0, 1])
    cand, inverse = torch.unique(torch.cat([labs, torch.tensor([11, 30])]), return_inverse=True)
    mask = others_only(inverse, labs.numel(), r, 2)
    masked = {(int(cand[i]), b) for i, b in zip(*np.nonzero(mask.numpy()))}
    # 12 is only sample 1's label: masked for sample 0; 10 is only sample 0's: masked for sample 1.
    # 11 is sample 0's label but also drawn: a negative for sample 1. 30 is drawn: kept for both.
    assert masked == {(12, 0), (10, 1)}


def _one_step(in_batch: bool) -> torch.Tensor:
    """W2's gradient after one sampled step on two samples with disjoint labels."""
    # two points: feature 0 -> label 0, feature 1 -> label 1; four labels
    data = XCData(np.array([0, 1, 2]), np.array([0, 1]), np.array([1.0, 1.0]), np.array([0, 1, 2]),
                  np.array([0, 1]), 2, 4)
    cfg = SlideConfig(batch=2, lr=1e-2, threads=1, seed=0, sample_fraction=0.25, sampler="uniform",
                      in_batch_negatives=in_batch)
    net = DenseNet(2, 4, cfg.hidden, cfg.init_std, cfg.seed)
    trainer = _Trainer("sampled", net, cfg, data, torch.device("cpu"))
    trainer.sampler.draw = lambda: np.array([3])           # the drawn negative: label 3 only
    for opt in trainer.opts:
        opt.step = lambda *a, **k: None                    # keep the gradient, skip the update
    trainer.step(data, np.arange(2))
    return net.W2.grad.to_dense()


def test_without_in_batch_negatives_no_sample_pushes_another_samples_label():
    with_others, own_only = _one_step(True), _one_step(False)
    # label 1 (sample 1's) is a negative for sample 0 only with in-batch negatives: its row's
    # gradient then carries sample 0's hidden vector too
    assert not torch.allclose(with_others[1], own_only[1])
    assert torch.count_nonzero(own_only[2]) == 0 == torch.count_nonzero(with_others[2])  # nobody's, never drawn
    assert torch.count_nonzero(own_only[3]) > 0                # the drawn negative still gets pushed
