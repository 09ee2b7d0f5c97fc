"""Write an XC train/test pair built independently of the suite's generator, for cross-checks.

    python scripts/slide_crosscheck_set.py OUT_DIR [--labels 100000] [--features 100000]
        [--train 200000] [--test 20000] [--seed 7]

The recipe of issue 21's report, not the suite's topic model: Zipf word frequency (s = 1.05)
and label popularity (s = 0.9), 1-3 labels a point, log-normal non-zeros per point (median
60), half of a point's word tokens drawn from its labels' 30 characteristic words and half
from background text, values TF-IDF ((1 + log tf) × idf) of the bag of words, rows L2-normal.
It is synthetic and matched to no published statistics: it exists so that a finding about
SLIDE can be checked on data the suite's generator did not make (the SLIDE README's
"Cross-check on an independently generated set"). Writes OUT_DIR/train.txt and test.txt;
about 25 s and 150 MB at the defaults.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def zipf_cdf(n: int, s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** s
    return np.cumsum(p / p.sum())


def draw(rng: np.random.Generator, cdf: np.ndarray, size) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, rng.random(size)), cdf.size - 1)


def generate(n_labels: int, n_features: int, n_train: int, n_test: int, seed: int):
    """Return (label lists, (words, counts) per point, idf) for n_train + n_test points."""
    rng = np.random.default_rng(seed)
    word_of_rank, label_of_rank = rng.permutation(n_features), rng.permutation(n_labels)
    word_cdf, label_cdf = zipf_cdf(n_features, 1.05), zipf_cdf(n_labels, 0.9)
    ranks = np.minimum((rng.pareto(0.6, (n_labels, 30)) * 50).astype(np.int64) + 100, n_features - 1)
    label_words = word_of_rank[ranks]                           # 30 characteristic words per label
    n = n_train + n_test
    per_point = rng.integers(1, 4, n)
    nnz = np.clip(rng.lognormal(np.log(60), 0.5, n).astype(np.int64), 5, 400)
    labels, rows = [], []
    df = np.zeros(n_features, np.int64)
    for i in range(n):
        labs = np.unique(label_of_rank[draw(rng, label_cdf, per_point[i])])
        own = nnz[i] // 2
        tokens = np.concatenate([label_words[rng.choice(labs, own), rng.integers(0, 30, own)],
                                 word_of_rank[draw(rng, word_cdf, nnz[i] - own)]])
        words, counts = np.unique(tokens, return_counts=True)
        labels.append(labs)
        rows.append((words, counts))
        df[words] += 1
    idf = np.log((n + 1) / (df + 1)) + 1
    return labels, rows, idf


def write(path: Path, labels, rows, idf, lo: int, hi: int, n_features: int, n_labels: int) -> None:
    with open(path, "w") as f:
        f.write(f"{hi - lo} {n_features} {n_labels}\n")
        for i in range(lo, hi):
            words, counts = rows[i]
            v = (1 + np.log(counts)) * idf[words]
            v /= np.linalg.norm(v)
            f.write(",".join(map(str, labels[i])) + " " + " ".join(f"{w}:{x:.4f}" for w, x in zip(words, v)) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/slide_crosscheck_set.py", description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--labels", type=int, default=100_000)
    p.add_argument("--features", type=int, default=100_000)
    p.add_argument("--train", type=int, default=200_000)
    p.add_argument("--test", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args(argv)
    if min(a.labels, a.features, a.train, a.test) < 1 or a.features <= 130:
        p.error("sizes must be positive and --features above 130")
    a.out.mkdir(parents=True, exist_ok=True)
    labels, rows, idf = generate(a.labels, a.features, a.train, a.test, a.seed)
    write(a.out / "train.txt", labels, rows, idf, 0, a.train, a.features, a.labels)
    write(a.out / "test.txt", labels, rows, idf, a.train, a.train + a.test, a.features, a.labels)
    print(f"wrote {a.out / 'train.txt'} ({a.train:,} points) and {a.out / 'test.txt'} ({a.test:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
