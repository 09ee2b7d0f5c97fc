"""PyTorch baselines: the same network as SLIDE (sparse input → hidden ReLU → softmax over
every label), same init, same loss (cross-entropy against the target spread uniformly over
the true labels, mean over the batch), Adam; on the CPU or a CUDA device.

- ``dense``: the full softmax over all labels every step, ``torch.optim.Adam`` (fused).
- ``sampled``: sampled softmax, the "cheap trick" peer: per batch, the batch's true labels
  plus ``sample_fraction × labels`` negatives drawn uniformly or log-uniformly (TF's
  default, over labels ranked by training frequency), with TF's log-expected-count
  correction; only the candidates' output rows get gradients (sparse, ``SparseAdam``).
  Every sample's softmax holds all the batch's candidates, the other samples' true labels
  too; ``SlideConfig.in_batch_negatives = False`` leaves those out (:func:`others_only`),
  as SLIDE's active set holds only the sample's own labels, its retrieved ones and the pool.

Adam updates as TF's ``AdamOptimizer`` (the paper's baselines) and SLIDE's reference code
do: ``SlideConfig.eps`` is ε-hat, added to sqrt(v) before the bias correction
(:func:`torch_eps`); ``SparseAdam`` already places it so.

Both return the same result dict as :func:`impls.slide.training.trainer.train`.

Implementation choices (measured in impls/slide/NOTES.md, "Dense CPU baseline"):

- Input layer: ``embedding_bag`` with per-sample weights, not ``torch.sparse.mm`` on a CSR
  batch.
- Output loss: one autograd function computing logsumexp in the forward and
  ``softmax − target`` in place in the backward (as TF's
  ``softmax_cross_entropy_with_logits`` does), instead of ``log_softmax`` + gather, whose
  backward allocates and sweeps two more batch × labels tensors.
- Adam ``fused=True``: one pass over all parameters instead of a per-tensor loop.

Timing: ``seconds`` counts training steps only. On CUDA each step is bracketed by CUDA
events and the device is synchronised before every clock read (:class:`StepTimer`); a
few warm-up steps run first, then the weights are restored and the optimiser state zeroed in place.
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable

import numpy as np
import torch

from impls.slide.core import evaluate as ev
from impls.slide.core.config import SlideConfig
from impls.slide.data.dataset import XCData, batch_for, trainable_rows
from impls.slide.core.network import log_uniform_ranks
from impls.slide.training import loop
from impls.slide.training.loop import EvalSchedule
from impls.slide.training.trainer import set_threads

METHODS = ("dense", "sampled")


class DenseNet(torch.nn.Module):
    """SLIDE's network in torch, drawn from the same seed in the same order as
    :class:`~impls.slide.core.network.SlideNetwork`. ``output_bias=False``
    (``SlideConfig.output_bias``): ``b2`` is zero and never trained (``requires_grad`` False;
    the optimisers skip it)."""

    def __init__(self, n_features: int, n_labels: int, hidden: int, init_std: float, seed: int,
                 output_bias: bool = True):
        super().__init__()
        rng = np.random.default_rng(seed)  # same draws, same order as SlideNetwork
        f32 = np.float32
        self.W1 = torch.nn.Parameter(torch.from_numpy(rng.standard_normal((n_features, hidden), f32) * f32(init_std)))
        self.b1 = torch.nn.Parameter(torch.from_numpy(rng.standard_normal(hidden, f32) * f32(init_std)))
        self.W2 = torch.nn.Parameter(torch.from_numpy(rng.standard_normal((n_labels, hidden), f32) * f32(init_std)))
        b2 = rng.standard_normal(n_labels, f32) * f32(init_std)
        if not output_bias:
            b2[:] = 0.0
        self.b2 = torch.nn.Parameter(torch.from_numpy(b2), requires_grad=output_bias)

    def hidden(self, idx, offsets, weights):
        h = torch.nn.functional.embedding_bag(idx, self.W1, offsets, mode="sum", per_sample_weights=weights)
        return torch.relu(h + self.b1)

    def forward(self, idx, offsets, weights):
        """Logits (labels, batch): ``W2 @ h.T`` reads W2 row-major (faster than ``h @ W2.T``
        at 670k labels; NOTES.md, "Dense CPU baseline")."""
        return torch.addmm(self.b2[:, None], self.W2, self.hidden(idx, offsets, weights).T)


class SoftmaxCrossEntropy(torch.autograd.Function):
    """Mean over the batch of ``logsumexp(z) − Σ_j t_j z_j``, the logits ``z`` laid out
    labels × batch (column ``b`` is sample ``b``), for sparse targets ``t`` given as (label
    ``labs``, sample ``r``, weight ``tw``) triples, with ``softmax(z) − t`` as the gradient.
    ``z`` is consumed: the forward turns it into ``exp(z − max)`` in place and the backward
    into the gradient, so no other labels × batch tensor is allocated (the caller must not
    need ``z``; a GEMM's output is not needed by its own backward)."""

    @staticmethod
    def forward(ctx, z, labs, r, tw):
        zmax = z.amax(0, keepdim=True)
        target = (z[labs, r] * tw).sum()
        e = z.sub_(zmax).exp_()
        s = e.sum(0, keepdim=True)
        lse = zmax + s.log()
        ctx.save_for_backward(e, s, labs, r, tw)
        return (lse.sum() - target) / z.shape[1]

    @staticmethod
    def backward(ctx, grad):
        e, s, labs, r, tw = ctx.saved_tensors
        g = e.div_(s)
        g.index_put_((labs, r), -tw, accumulate=True)
        g.mul_(grad / e.shape[1])
        return g, None, None, None


def softmax_cross_entropy(z, labs, r, tw):
    """See :class:`SoftmaxCrossEntropy` (``z``: labels × batch, consumed)."""
    return SoftmaxCrossEntropy.apply(z, labs, r, tw)


NOT_A_CANDIDATE = -1e30   # a logit whose exp is 0 in float32: the label is not in that sample's softmax


def others_only(inverse: torch.Tensor, n_true: int, r: torch.Tensor, batch: int) -> torch.Tensor:
    """Bool mask (candidates x ``batch``) of the candidates that are only *other* samples' true
    labels for each sample: in ``torch.unique(cat([labs, neg]))``'s ``inverse``, the first
    ``n_true`` entries are the true labels (of samples ``r``), the rest the drawn negatives. A
    candidate drawn as a negative, or one of the sample's own labels, is never masked."""
    n_cand = int(inverse.max()) + 1 if inverse.numel() else 0
    drawn = torch.zeros(n_cand, dtype=torch.bool, device=inverse.device)
    drawn[inverse[n_true:]] = True
    own = torch.zeros(n_cand, batch, dtype=torch.bool, device=inverse.device)
    own[inverse[:n_true], r] = True
    return ~drawn[:, None] & ~own


def _batch(data: XCData, rows: np.ndarray, device, with_targets: bool = True):
    """The torch inputs of the points ``rows``: ``(idx, offsets, w)`` for ``embedding_bag``
    and, ``with_targets``, ``(r, labs, tw)``: one entry per *distinct* (point, label) pair,
    ``r`` the point's position in ``rows``, ``tw`` = 1 / (its point's distinct labels), so a
    label listed twice on a point weighs as much as any other (as SLIDE's own targets)."""
    starts, ends = data.indptr[rows], data.indptr[rows + 1]
    lengths = ends - starts
    take = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(lengths.sum())
    idx = torch.from_numpy(data.indices[take].astype(np.int64)).to(device)
    w = torch.from_numpy(data.values[take]).to(device)
    offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)).to(device)
    if not with_targets:
        return idx, offsets, w
    lstart, lend = data.label_indptr[rows], data.label_indptr[rows + 1]
    nl = lend - lstart
    r = np.repeat(np.arange(rows.size, dtype=np.int64), nl)
    labs = data.labels[np.repeat(lstart - np.concatenate([[0], np.cumsum(nl)[:-1]]), nl) + np.arange(nl.sum())]
    labs = labs.astype(np.int64)
    if data.repeats_labels:                                   # keep each (point, label) once
        pairs = np.unique(r * np.int64(data.n_labels) + labs)
        r, labs = pairs // data.n_labels, pairs % data.n_labels
        distinct = np.bincount(r, minlength=rows.size)
    else:
        distinct = nl
    return idx, offsets, w, torch.from_numpy(r).to(device), torch.from_numpy(labs).to(device), \
        torch.from_numpy((1.0 / np.maximum(distinct, 1))[r].astype(np.float32)).to(device)


class CandidateSampler:
    """Negatives for sampled softmax: ``n`` draws (with replacement) per batch, uniform or
    log-uniform over labels ranked by training frequency (rank k drawn with probability
    log((k+2)/(k+1)) / log(L+1), as TF's ``log_uniform_candidate_sampler``). ``log_q``:
    log of each label's expected count among the ``n`` draws (TF's correction)."""

    def __init__(self, kind: str, n_labels: int, n: int, label_counts: np.ndarray, seed: int):
        self.kind, self.n_labels, self.n = kind, n_labels, max(1, int(n))
        self.rng = np.random.default_rng(seed)
        if kind == "uniform":
            q = np.full(n_labels, 1.0 / n_labels)
            self.rank_to_label = None
        elif kind == "log-uniform":
            self.rank_to_label = np.argsort(-label_counts, kind="stable")
            k = np.arange(n_labels, dtype=np.float64)
            q_rank = np.log((k + 2) / (k + 1)) / np.log(n_labels + 1)
            q = np.empty(n_labels)
            q[self.rank_to_label] = q_rank
        else:
            raise ValueError(f"sampler={kind!r}; expected uniform or log-uniform")
        expected = -np.expm1(self.n * np.log1p(-np.minimum(q, 1 - 1e-12)))  # P(drawn at least once)
        self.log_q = np.log(np.maximum(expected, 1e-30)).astype(np.float32)

    def draw(self) -> np.ndarray:
        if self.rank_to_label is None:
            return self.rng.integers(0, self.n_labels, self.n)
        return self.rank_to_label[log_uniform_ranks(self.rng, self.n_labels, self.n)]


class StepTimer:
    """Training seconds, one step at a time. On CUDA ``device`` (cuda:N, whatever the current
    device) is synchronised before every clock read and each step is also timed by a pair of
    CUDA events on its current stream (``device_seconds``). ``sync``, ``clock``, ``event``
    and ``stream`` are injectable so the CPU tests can check the order."""

    def __init__(self, device: str | torch.device = "cpu", sync: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter, event: Callable[[], Any] | None = None,
                 stream: Callable[[], Any] | None = None):
        self.cuda = (dev := torch.device(device)).type == "cuda"
        self.sync = sync or ((lambda: torch.cuda.synchronize(dev)) if self.cuda else (lambda: None))
        self.event = event or ((lambda: torch.cuda.Event(enable_timing=True)) if self.cuda else None)
        self.stream = stream or ((lambda: torch.cuda.current_stream(dev)) if self.cuda else (lambda: None))
        self.clock = clock
        self.seconds = 0.0
        self.device_seconds = 0.0
        self._t0 = self._ev0 = None

    def _read(self) -> float:
        if self.cuda:
            self.sync()
        return self.clock()

    def start(self) -> None:
        if self.cuda:
            self._ev0 = self.event()
        self._t0 = self._read()
        if self._ev0 is not None:
            self._ev0.record(self.stream())

    def stop(self) -> float:
        """End the step; return its wall seconds (added to ``seconds``)."""
        ev1 = None
        if self.cuda:
            ev1 = self.event()
            ev1.record(self.stream())
        dt = self._read() - self._t0
        if ev1 is not None:
            self.device_seconds += self._ev0.elapsed_time(ev1) / 1000.0
        self.seconds += dt
        return dt


class _Trainer:
    """One optimisation step of the dense or sampled model (weights in ``model``)."""

    def __init__(self, method: str, model: DenseNet, config: SlideConfig, train_data: XCData, dev: torch.device):
        self.method, self.model, self.config, self.dev = method, model, config, dev
        self.active = []  # candidates per step (sampled)
        if method == "sampled":
            n = max(1, int(round(config.sample_fraction * train_data.n_labels)))
            self.sampler = CandidateSampler(config.sampler, train_data.n_labels, n, train_data.label_counts(),
                                            config.seed + 2)
            self.log_q = torch.from_numpy(self.sampler.log_q).to(dev)
        self.reset_optimizer()

    def reset_optimizer(self) -> None:
        """Fresh optimisers' state: built on the first call; later every state tensor is zeroed in place and
        every step count set to 0, so the next step computes a fresh optimiser's first, allocating nothing."""
        c, m = self.config, self.model
        kw = dict(lr=c.lr, betas=(c.beta1, c.beta2), eps=c.eps)
        self.t = 0
        if hasattr(self, "opts"):   # moments and fused Adam's step tensors, SparseAdam's int step
            for state in (s for opt in self.opts for s in opt.state.values()):
                state.update({k: v.zero_() if torch.is_tensor(v) else type(v)(0) for k, v in state.items()})
            return
        if self.method == "dense":
            self.adams = [torch.optim.Adam([p for p in m.parameters() if p.requires_grad], fused=True, **kw)]
            self.opts = list(self.adams)
        else:  # output rows: sparse gradients, lazy Adam (as SLIDE's default)
            self.adams = [torch.optim.Adam([m.W1, m.b1], fused=True, **kw)]
            self.opts = self.adams + [torch.optim.SparseAdam([p for p in (m.W2, m.b2) if p.requires_grad], **kw)]

    def step(self, data: XCData, rows: np.ndarray) -> torch.Tensor:
        m = self.model
        idx, offsets, w, r, labs, tw = _batch(data, rows, self.dev)
        if self.method == "dense":
            loss = softmax_cross_entropy(m(idx, offsets, w), labs, r, tw)
        else:
            neg = torch.from_numpy(self.sampler.draw()).to(self.dev)
            cand, inverse = torch.unique(torch.cat([labs, neg]), return_inverse=True)
            self.active.append(int(cand.numel()))
            h = m.hidden(idx, offsets, w)
            Wc = torch.nn.functional.embedding(cand, m.W2, sparse=True)
            bc = _sparse_rows(m.b2, cand)
            z = torch.addmm((bc - self.log_q[cand])[:, None], Wc, h.T)
            if not self.config.in_batch_negatives:
                z = z.masked_fill(others_only(inverse, labs.numel(), r, len(rows)), NOT_A_CANDIDATE)
            loss = softmax_cross_entropy(z, inverse[:labs.numel()], r, tw)
        for opt in self.opts:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        self.t += 1
        eps = torch_eps(self.config.eps, self.config.beta2, self.t)
        for opt in self.adams:
            for group in opt.param_groups:
                group["eps"] = eps
        for opt in self.opts:
            opt.step()
        return loss


def torch_eps(eps_hat: float, beta2: float, step: int) -> float:
    """The ``eps`` that makes ``torch.optim.Adam``'s ``step``-th update (1-based) equal TF's
    with ε-hat ``eps_hat``: lr·sqrt(1−β2^t)/(1−β1^t) · m / (sqrt(v) + ε-hat). torch adds its
    eps after dividing sqrt(v) by sqrt(1−β2^t), so this is ε-hat / sqrt(1−β2^t) ≥ ε-hat."""
    return eps_hat / math.sqrt(1.0 - beta2 ** step)


class _GatherRows(torch.autograd.Function):
    """``v[idx]`` for a 1-D parameter with a sparse (COO) gradient, for SparseAdam."""

    @staticmethod
    def forward(ctx, v, idx):
        ctx.save_for_backward(idx)
        ctx.n = v.shape[0]
        return v[idx]

    @staticmethod
    def backward(ctx, grad):
        (idx,) = ctx.saved_tensors
        return torch.sparse_coo_tensor(idx.unsqueeze(0), grad, (ctx.n,), check_invariants=False), None


def _sparse_rows(v, idx):
    return _GatherRows.apply(v, idx)


def train_dense(config: SlideConfig, train_data: XCData, test_data: XCData, time_budget_s: float | None = 60.0,
                eval_every: int | None = 50, progress: bool | Callable[[dict], None] = False,
                max_iterations: int | None = None, eval_points: int | None = 1000, device: str = "cpu",
                eval_at_start: bool = True, method: str = "dense", eval_first_s: float | None = None,
                eval_growth: float = 1.6, warmup_steps: int | None = None) -> dict[str, Any]:
    """Train the dense (or sampled-softmax) model with torch; returns the SLIDE trainer's keys.

    ``warmup_steps`` (default 3) run before the clock starts, then the weights and optimiser
    state are reset to their initial values, so that the first touch of the logits, gradients
    and Adam state (several steady steps' time at 670k labels) is not on the clock.
    Every evaluation also records ``hidden_cosine`` (as SLIDE's, :func:`evaluate.mean_cosine`).
    A batch larger than the trainable points is cut to them (:func:`~impls.slide.data.dataset.batch_for`)."""
    if method not in METHODS:
        raise ValueError(f"method={method!r}; expected one of {', '.join(METHODS)}")
    train_rows = trainable_rows(train_data, test_data)
    if time_budget_s is None and max_iterations is None:
        raise ValueError("set time_budget_s or max_iterations")
    config.check()
    config = dataclasses.replace(config, batch=batch_for(config.batch, train_data, train_rows))
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device cuda requested but torch.cuda.is_available() is False")
    if config.threads:
        # numba's and torch's thread counts together: numba's OpenMP layer (the evaluation's
        # parallel top-k) otherwise resets the shared OpenMP thread count to numba's
        set_threads(config.threads)
    t0 = time.perf_counter()
    model = DenseNet(train_data.n_features, train_data.n_labels, config.hidden, config.init_std, config.seed,
                     output_bias=config.output_bias).to(dev)
    trainer = _Trainer(method, model, config, train_data, dev)
    setup_s = time.perf_counter() - t0
    rows_eval = ev.eval_rows(test_data, eval_points, config.seed)
    baseline = ev.most_popular_baseline(train_data, test_data, rows_eval)
    report = progress if callable(progress) else (loop.print_point if progress else None)
    timer = StepTimer(dev)

    warmup_steps = 3 if warmup_steps is None else warmup_steps
    t = time.perf_counter()
    if warmup_steps > 0:
        initial = [p.detach().clone() for p in model.parameters()]
        wrng = np.random.default_rng(config.seed + 3)
        for _ in range(warmup_steps):
            pool = train_rows if train_rows is not None else np.arange(train_data.n_points)
            trainer.step(train_data, pool[wrng.integers(0, pool.size, config.batch)])
        timer.sync()
        with torch.no_grad():
            for p, p0 in zip(model.parameters(), initial):
                p.copy_(p0)
        del initial
        trainer.reset_optimizer()
        trainer.active.clear()
    warmup_s = time.perf_counter() - t

    def hidden_fn(data, rows):
        with torch.no_grad():
            return model.hidden(*_batch(data, rows, dev, with_targets=False)).cpu().numpy()

    def evaluate(it, seconds, loss):
        W2, b2 = model.W2.detach().cpu().numpy(), model.b2.detach().cpu().numpy()
        hidden = hidden_fn(test_data, rows_eval)
        score = ev.precision_at_k(ev.top5(hidden, W2, b2), test_data, rows_eval)
        return {"seconds": seconds, "iteration": it,
                "p_at_1": score["p_at_1"], "p_at_5": score["p_at_5"], "loss": loss,
                "hidden_cosine": ev.mean_cosine(hidden), "hits_at_1": ev.pack_hits(score["hits_at_1"])}

    run = loop.run(lambda rows: trainer.step(train_data, rows).detach(), evaluate, n_points=train_data.n_points,
                   batch=config.batch, seed=config.seed, timer=timer,
                   schedule=EvalSchedule(eval_every, eval_first_s, eval_growth), time_budget_s=time_budget_s,
                   max_iterations=max_iterations, eval_at_start=eval_at_start, report=report,
                   train_rows=train_rows, tick=loop.print_tick if progress is True else None)
    active = float(np.mean(trainer.active)) / train_data.n_labels if trainer.active else 1.0
    name = "dense-torch" if method == "dense" else "sampled-torch"
    return {**loop.result(f"{name}-{dev.type}", run, baseline_p_at_1=baseline["p_at_1"],
                          eval_points=int(rows_eval.size), threads=torch.get_num_threads(), setup_seconds=setup_s,
                          active_fraction=active, n_labels=train_data.n_labels,
                          params={**config.as_dict(), "device": device, "method": method,
                                  # what this trainer uses, whatever SlideConfig.adam (SLIDE's own) says
                                  "adam": "dense" if method == "dense" else "lazy"},
                          data={"train": train_data.stats(), "test": test_data.stats()}),
            **ev.sample_record(rows_eval, baseline),
            "device_seconds": timer.device_seconds if dev.type == "cuda" else None,
            "warmup_seconds": warmup_s, "warmup_steps": warmup_steps,
            "final_hidden_cosine": run.curve[-1]["hidden_cosine"],
            "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"}
