"""Oracles shared by the SLIDE tests."""
from __future__ import annotations

import math

import pytest


class TFAdam:
    """Adam as TF's ``AdamOptimizer`` and SLIDE's reference code write it, the update the
    engines must make: lr_t = lr·sqrt(1−β2^t)/(1−β1^t), w −= lr_t · m / (sqrt(v) + ε), with ε
    the paper's ε-hat. Written out here so that the tests do not lean on the engines' code
    or on torch.optim.Adam (which adds ε after the bias correction)."""

    def __init__(self, params, lr: float, betas: tuple[float, float], eps: float):
        import torch

        self.params = list(params)
        self.lr, (self.b1, self.b2), self.eps = lr, betas, eps
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        import torch

        self.t += 1
        lr_t = self.lr * math.sqrt(1 - self.b2 ** self.t) / (1 - self.b1 ** self.t)
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v):
                m.mul_(self.b1).add_(p.grad, alpha=1 - self.b1)
                v.mul_(self.b2).addcmul_(p.grad, p.grad, value=1 - self.b2)
                p.sub_(lr_t * m / (v.sqrt() + self.eps))


@pytest.fixture
def tf_adam():
    """The :class:`TFAdam` class (an optimiser with torch's ``zero_grad``/``step`` calls)."""
    pytest.importorskip("torch")
    return TFAdam
