"""A toy of why DWTA stops finding the labels that score highest once Adam trains them.

One output row ``w`` (128 weights, N(0, 0.01) at the start) is trained as a popular label:
positive for a share of each batch of hidden vectors that share one direction (ReLU of a
common vector plus noise, as the collapsed hidden layer of impls/slide/NOTES.md). Adam divides
each coordinate's step by that coordinate's gradient scale, so every coordinate where the
hidden vectors are positive moves by about lr a step whatever its size; SGD moves it in
proportion to it. Printed: after t steps, how often one DWTA hash (the winner of a bin of 8
coordinates) of ``w`` equals the query's, and the rank correlation of ``w`` with the query
over its non-zero coordinates, for SGD and Adam, beside a random row's agreement (chance).
Synthetic and self-contained (numpy only); it models one row, not the network.

    python scripts/slide_adam_rank_toy.py [--seed 0]
"""
from __future__ import annotations

import argparse

import numpy as np

DIM, BATCH, BIN = 128, 256, 8
CHECKPOINTS = (1, 5, 20, 40, 80)


def dwta_agreement(w: np.ndarray, h: np.ndarray, bins: np.ndarray) -> float:
    """Share of the bins (rows of ``bins``: coordinate indices) in which h has a non-zero where
    the argmax of ``w`` equals that of ``h`` (one DWTA hash each), 0-1."""
    usable = [b for b in bins if h[b].max() > 0]
    return float(np.mean([np.argmax(w[b]) == np.argmax(h[b]) for b in usable]))


def rank_correlation(w: np.ndarray, h: np.ndarray) -> float:
    """Spearman's correlation of ``w`` and ``h`` over the coordinates where ``h`` > 0."""
    nz = h > 0
    a, b = w[nz].argsort().argsort(), h[nz].argsort().argsort()
    return float(np.corrcoef(a, b)[0, 1])


def run(seed: int = 0, steps: int = max(CHECKPOINTS), lr: float = 1e-2) -> dict[str, list[tuple[int, float, float]]]:
    """``{"sgd"|"adam": [(step, DWTA agreement, rank correlation), ...]}`` at :data:`CHECKPOINTS`,
    and ``"random"``: a random row's agreement with the same queries (chance)."""
    rng = np.random.default_rng(seed)
    base = np.maximum(rng.normal(0.5, 0.5, DIM), 0)
    bins = np.concatenate([rng.permutation(DIM) for _ in range(BIN)]).reshape(-1, BIN)

    def batch() -> np.ndarray:
        return np.maximum(base + rng.normal(0, 0.15, (BATCH, DIM)), 0)

    out: dict = {}
    for optimiser in ("sgd", "adam"):
        w = rng.normal(0, 0.01, DIM)
        m, v = np.zeros(DIM), np.zeros(DIM)
        rows = []
        for t in range(1, steps + 1):
            h = batch()
            positive = rng.random(BATCH) < 0.3
            # softmax cross-entropy: -(1 - p) h for the positives, +p h for the rest (p ~ 0.9 / 0.001)
            g = (-0.9 * h[positive].sum(0) + 0.001 * h[~positive].sum(0)) / BATCH
            if optimiser == "sgd":
                w -= 10 * lr * g
            else:
                m = 0.9 * m + 0.1 * g
                v = 0.999 * v + 0.001 * g * g
                w -= lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
            if t in CHECKPOINTS:
                q = batch()[0]
                rows.append((t, dwta_agreement(w, q, bins), rank_correlation(w, q)))
        out[optimiser] = rows
    q = batch()[0]
    out["random"] = float(np.mean([dwta_agreement(rng.normal(0, 1, DIM), q, bins) for _ in range(200)]))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    result = run(args.seed)
    print("optimiser  step  DWTA agreement  rank correlation")
    for optimiser in ("sgd", "adam"):
        for step, agreement, corr in result[optimiser]:
            print(f"{optimiser:9s} {step:5d} {agreement:15.2f} {corr:17.2f}")
    print(f"random row's DWTA agreement (chance): {result['random']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
