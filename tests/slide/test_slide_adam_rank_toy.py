"""scripts/slide_adam_rank_toy.py: its hash and rank measures, and the contrast it demonstrates."""
from __future__ import annotations

import numpy as np


def test_the_measures_read_what_they_say(load_script):
    toy = load_script("slide_adam_rank_toy")
    h = np.array([0.0, 1.0, 3.0, 2.0, 0.0, 0.5, 4.0, 0.2])
    bins = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    assert toy.dwta_agreement(h, h, bins) == 1.0
    assert toy.dwta_agreement(np.array([0, 0, 0, 9, 9, 0, 0, 0.0]), h, bins) == 0.0
    assert toy.rank_correlation(h * 2, h) == 1.0 and toy.rank_correlation(-h, h) == -1.0


def test_adam_leaves_the_rank_order_dwta_reads_where_sgd_keeps_it(load_script):
    toy = load_script("slide_adam_rank_toy")
    result = toy.run(seed=3, steps=20)
    sgd, adam = result["sgd"][-1], result["adam"][-1]
    assert sgd[0] == adam[0] == 20
    assert sgd[1] > 3 * max(adam[1], result["random"]) and sgd[2] > 0.7
    assert abs(adam[2]) < 0.5
