"""Write an XC train/test pair built independently of the suite's generator, for cross-checks.

    python scripts/slide_crosscheck_set.py OUT_DIR [--labels 100000] [--features 100000]
        [--train 200000] [--test 20000] [--seed 7]

The recipe of issue 21's report, not the suite's topic model: Zipf word frequency (s = 1.05)
and label popularity (s = 0.9), 1-3 labels a point, a log-normal number of word tokens per
point (median 60; the distinct words, its non-zeros, are fewer), half of a point's tokens
drawn from its labels' 30 characteristic words and half from background text, values
TF-IDF ((1 + log tf) × idf, idf from the training split) of the bag of words, rows
L2-normal. Each label's characteristic words are mid-frequency to rare ones (Pareto ranks
from the 100th word on, wrapped around the vocabulary). The model, the training points and
the test points come from separate random streams of ``--seed``, so ``--test`` does not
change the training file. It is synthetic and matched to no published statistics: it
exists so that a finding about SLIDE can be checked on data the suite's generator did not
make (impls/slide/NOTES.md, "Cross-check on an independently generated set"). Writes
OUT_DIR/train.txt and test.txt; about 25 s and 150 MB at the defaults.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

WORDS_PER_LABEL = 30
FIRST_LABEL_WORD = 100   # characteristic words skip the 100 most frequent (stop words)


def zipf_cdf(n: int, s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** s
    return np.cumsum(p / p.sum())


def draw(rng: np.random.Generator, cdf: np.ndarray, size) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, rng.random(size)), cdf.size - 1)


class Recipe:
    """The vocabulary, the label popularity and every label's characteristic words."""

    def __init__(self, n_labels: int, n_features: int, rng: np.random.Generator):
        self.n_labels, self.n_features = n_labels, n_features
        self.word_of_rank, self.label_of_rank = rng.permutation(n_features), rng.permutation(n_labels)
        self.word_cdf, self.label_cdf = zipf_cdf(n_features, 1.05), zipf_cdf(n_labels, 0.9)
        span = n_features - FIRST_LABEL_WORD
        ranks = FIRST_LABEL_WORD + (rng.pareto(0.6, (n_labels, WORDS_PER_LABEL)) * 50).astype(np.int64) % span
        self.label_words = self.word_of_rank[ranks]

    def points(self, n: int, rng: np.random.Generator):
        """Return (label ids sorted, (distinct words, token counts)) for ``n`` points."""
        per_point = rng.integers(1, 4, n)
        tokens_per_point = np.clip(rng.lognormal(np.log(60), 0.5, n).astype(np.int64), 5, 400)
        out = []
        for i in range(n):
            labs = np.unique(self.label_of_rank[draw(rng, self.label_cdf, per_point[i])])
            own = tokens_per_point[i] // 2
            tokens = np.concatenate([
                self.label_words[rng.choice(labs, own), rng.integers(0, WORDS_PER_LABEL, own)],
                self.word_of_rank[draw(rng, self.word_cdf, tokens_per_point[i] - own)]])
            out.append((labs, np.unique(tokens, return_counts=True)))
        return out


def write(path: Path, points, idf: np.ndarray, n_features: int, n_labels: int) -> None:
    with open(path, "w") as f:
        f.write(f"{len(points)} {n_features} {n_labels}\n")
        for labs, (words, counts) in points:
            v = (1 + np.log(counts)) * idf[words]
            v /= np.linalg.norm(v)
            f.write(",".join(map(str, labs)) + " " + " ".join(f"{w}:{x:.6g}" for w, x in zip(words, v)) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/slide_crosscheck_set.py", description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="directory to write train.txt and test.txt in (made when missing)")
    p.add_argument("--labels", type=int, default=100_000, help="labels (the header's L; default 100,000)")
    p.add_argument("--features", type=int, default=100_000,
                   help=f"features, the vocabulary's words (the header's D, above {2 * FIRST_LABEL_WORD}; "
                        "default 100,000)")
    p.add_argument("--train", type=int, default=200_000, help="training points (default 200,000)")
    p.add_argument("--test", type=int, default=20_000,
                   help="test points (default 20,000); the training file does not depend on it")
    p.add_argument("--seed", type=int, default=7,
                   help="seed of the model's, the training points' and the test points' random streams (default 7)")
    a = p.parse_args(argv)
    if min(a.labels, a.train, a.test) < 1 or a.features <= 2 * FIRST_LABEL_WORD:
        p.error(f"sizes must be positive and --features above {2 * FIRST_LABEL_WORD}")
    try:
        a.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        p.error(f"cannot make the output directory {a.out}: {err.strerror or err}")
    recipe = Recipe(a.labels, a.features, np.random.default_rng([a.seed, 0]))
    train = recipe.points(a.train, np.random.default_rng([a.seed, 1]))
    test = recipe.points(a.test, np.random.default_rng([a.seed, 2]))
    df = np.zeros(a.features, np.int64)
    for _, (words, _) in train:
        df[words] += 1
    idf = np.log((a.train + 1) / (df + 1)) + 1
    write(a.out / "train.txt", train, idf, a.features, a.labels)
    write(a.out / "test.txt", test, idf, a.features, a.labels)
    print(f"wrote {a.out / 'train.txt'} ({a.train:,} points) and {a.out / 'test.txt'} ({a.test:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
