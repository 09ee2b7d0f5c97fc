"""Dense PyTorch baseline: the same network (sparse input → hidden ReLU → full softmax over
every label), same init, same loss, ``torch.optim.Adam``; same result dict as
:func:`impls.slide.trainer.train` so the two compare point for point."""
from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np
import torch

from impls.slide import evaluate as ev
from impls.slide.config import SlideConfig
from impls.slide.dataset import XCData
from impls.slide.trainer import _print_point, peak_rss_bytes


class DenseNet(torch.nn.Module):
    def __init__(self, n_features: int, n_labels: int, hidden: int, init_std: float, seed: int):
        super().__init__()
        rng = np.random.default_rng(seed)  # same draws, same order as SlideNetwork
        f32 = np.float32
        self.W1 = torch.nn.Parameter(torch.from_numpy(rng.standard_normal((n_features, hidden), f32) * f32(init_std)))
        self.b1 = torch.nn.Parameter(torch.from_numpy(rng.standard_normal(hidden, f32) * f32(init_std)))
        self.W2 = torch.nn.Parameter(torch.from_numpy(rng.standard_normal((n_labels, hidden), f32) * f32(init_std)))
        self.b2 = torch.nn.Parameter(torch.from_numpy(rng.standard_normal(n_labels, f32) * f32(init_std)))

    def hidden(self, idx, offsets, weights):
        h = torch.nn.functional.embedding_bag(idx, self.W1, offsets, mode="sum", per_sample_weights=weights)
        return torch.relu(h + self.b1)

    def forward(self, idx, offsets, weights):
        return self.hidden(idx, offsets, weights) @ self.W2.T + self.b2


def _batch(data: XCData, rows: np.ndarray, device, with_targets: bool = True):
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
    r = np.repeat(np.arange(rows.size), nl)
    labs = data.labels[np.repeat(lstart - np.concatenate([[0], np.cumsum(nl)[:-1]]), nl) + np.arange(nl.sum())]
    return idx, offsets, w, torch.from_numpy(r).to(device), torch.from_numpy(labs.astype(np.int64)).to(device), \
        torch.from_numpy((1.0 / np.maximum(nl, 1))[r].astype(np.float32)).to(device)


def train_dense(config: SlideConfig, train_data: XCData, test_data: XCData, time_budget_s: float | None = 60.0,
                eval_every: int | None = 50, progress: bool | Callable[[dict], None] = False,
                max_iterations: int | None = None, eval_points: int | None = 1000, device: str = "cpu",
                eval_at_start: bool = True) -> dict[str, Any]:
    """Train the dense model with torch; returns the same keys as the SLIDE trainer."""
    if config.threads:
        torch.set_num_threads(config.threads)
    dev = torch.device(device)
    t0 = time.perf_counter()
    model = DenseNet(train_data.n_features, train_data.n_labels, config.hidden, config.init_std, config.seed).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, betas=(config.beta1, config.beta2), eps=config.eps)
    setup_s = time.perf_counter() - t0
    rows_eval = ev.eval_rows(test_data, eval_points, config.seed)
    baseline = ev.most_popular_baseline(train_data, test_data, rows_eval)
    report = progress if callable(progress) else (_print_point if progress else None)
    sync = (lambda: torch.cuda.synchronize()) if dev.type == "cuda" else (lambda: None)

    def hidden_fn(data, rows):
        with torch.no_grad():
            return model.hidden(*_batch(data, rows, dev, with_targets=False)).cpu().numpy()

    curve, eval_s = [], 0.0

    def evaluate(it, seconds, loss):
        nonlocal eval_s
        t = time.perf_counter()
        W2, b2 = model.W2.detach().cpu().numpy(), model.b2.detach().cpu().numpy()
        score = ev.evaluate(hidden_fn, W2, b2, test_data, rows_eval)
        eval_s += time.perf_counter() - t
        point = {"seconds": seconds, "iteration": it, "samples": it * config.batch,
                 "p_at_1": score["p_at_1"], "p_at_5": score["p_at_5"], "loss": loss}
        curve.append(point)
        if report:
            report(point)

    if eval_at_start:
        evaluate(0, 0.0, math.nan)
    rng = np.random.default_rng(config.seed + 1)
    order, cursor, it, samples, train_s, loss = rng.permutation(train_data.n_points), 0, 0, 0, 0.0, math.nan
    while (max_iterations is None or it < max_iterations) and (time_budget_s is None or train_s < time_budget_s):
        if cursor + config.batch > order.size:
            order, cursor = rng.permutation(train_data.n_points), 0
        rows = order[cursor:cursor + config.batch]
        cursor += rows.size
        t = time.perf_counter()
        idx, offsets, w, r, labs, tw = _batch(train_data, rows, dev)
        logp = torch.log_softmax(model(idx, offsets, w), dim=1)
        lossv = -(logp[r, labs] * tw).sum() / rows.size
        opt.zero_grad(set_to_none=True)
        lossv.backward()
        opt.step()
        sync()
        loss = float(lossv)
        train_s += time.perf_counter() - t
        it += 1
        samples += rows.size
        if eval_every and it % eval_every == 0:
            evaluate(it, train_s, loss)
    if not curve or curve[-1]["iteration"] != it:
        evaluate(it, train_s, loss)
    final = curve[-1]
    return {"method": f"dense-torch-{dev.type}", "curve": curve,
            "samples_per_second": samples / train_s if train_s > 0 else math.nan,
            "iterations": it, "samples": samples, "train_seconds": train_s, "eval_seconds": eval_s,
            "setup_seconds": setup_s, "final_p_at_1": final["p_at_1"], "final_p_at_5": final["p_at_5"],
            "final_loss": final["loss"], "baseline_p_at_1": baseline["p_at_1"], "active_fraction": 1.0,
            "eval_points": int(rows_eval.size), "threads": torch.get_num_threads(),
            "peak_rss_bytes": peak_rss_bytes(),
            "params": {**config.as_dict(), "device": device},
            "data": {"train": train_data.stats(), "test": test_data.stats()}}
