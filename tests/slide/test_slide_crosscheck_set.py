"""scripts/slide_crosscheck_set.py writes XC files the suite reads, with the recipe it states."""
from __future__ import annotations

import numpy as np

from impls.slide.data.dataset import from_file


def test_crosscheck_set_is_valid_xc_with_the_stated_recipe(tmp_path, load_script):
    script = load_script("slide_crosscheck_set")
    assert script.main([str(tmp_path), "--labels", "400", "--features", "3000", "--train", "600", "--test", "80"]) == 0
    train, test = from_file(tmp_path / "train.txt"), from_file(tmp_path / "test.txt")
    assert (train.n_points, test.n_points) == (600, 80)
    assert (train.n_features, train.n_labels) == (test.n_features, test.n_labels) == (3000, 400)
    per_point = np.diff(train.label_indptr)
    assert per_point.min() >= 1 and per_point.max() <= 3
    for i in range(20):                                        # TF-IDF rows, L2-normal, positive
        v = train.values[train.indptr[i]:train.indptr[i + 1]]
        assert (v > 0).all() and abs(np.linalg.norm(v) - 1) < 2e-3
    # Zipf label popularity: the most popular label is far above the mean
    counts = np.bincount(train.labels, minlength=400)
    assert counts.max() > 5 * counts.mean()
    # characteristic words skip the 100 most frequent and wrap around the vocabulary: no
    # spike at its rarest word (clipping Pareto ranks there made one word every label's)
    recipe = script.Recipe(400, 3000, np.random.default_rng(0))
    rank_of_word = np.argsort(recipe.word_of_rank)
    ranks = rank_of_word[recipe.label_words].ravel()
    assert ranks.min() >= script.FIRST_LABEL_WORD and ranks.max() < 3000
    per_rank = np.bincount(ranks, minlength=3000)
    assert per_rank[-1] <= np.median(per_rank[per_rank > 0]) + 3
    # the same seed gives the same files, and the test split's size does not change the training file
    script.main([str(tmp_path / "again"), "--labels", "400", "--features", "3000", "--train", "600", "--test", "30"])
    assert (tmp_path / "again" / "train.txt").read_bytes() == (tmp_path / "train.txt").read_bytes()
    assert from_file(tmp_path / "again" / "test.txt").n_points == 30
