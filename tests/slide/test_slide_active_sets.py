"""Each sample's active set after a training step is the one its sampling mode defines, built
here in plain Python from the hash tables' buckets: union (every retrieved neuron once),
topk (the ``topk`` most frequent across the L buckets) and threshold (those in at least
``threshold`` buckets), each with the sample's true labels. Several samples share a thread's
chunk, so per-sample state that is not reset shows."""
from __future__ import annotations

import numpy as np
import pytest

from impls.slide.core.config import SlideConfig
from impls.slide.core.network import SlideNetwork
from impls.slide.data import xc_data
from impls.slide.data.dataset import XCData

BATCH = 16


@pytest.fixture(scope="module")
def data() -> XCData:
    arrays = xc_data.generate(seed=3, n_train=64, n_test=8, n_features=300, n_labels=400, labels_per_point=3.0,
                              nnz_per_point=12, labels_per_topic=8, topic_pool=16, words_per_label=6)
    return XCData.from_arrays(arrays, "train_")


def _step_and_buckets(data: XCData, mode: str, **extra):
    """A network after a second step in ``mode`` (one thread, no padding, tables kept as built),
    with each sample's true labels and {retrieved neuron: how many of the L buckets hold it},
    in first-retrieved order, from the codes of the hidden vectors that step saw."""
    config = SlideConfig(mode=mode, batch=BATCH, hidden=16, K=2, L=8, lsh="simhash", threads=1, seed=1,
                         min_active=0, padding="sample", upkeep="none", bucket_capacity=32, **extra)
    net = SlideNetwork(config, data.n_features, data.n_labels, 16)
    rows = np.arange(BATCH)
    net.step(data, rows)
    codes = net.tables.lsh.hash(net.hidden(data, rows))      # the weights the next step's forward uses
    net.step(data, rows)
    samples = []
    for i, r in enumerate(rows):
        truth = set(data.labels[data.label_indptr[r]:data.label_indptr[r + 1]].tolist())
        freq: dict[int, int] = {}
        for t in range(config.L):
            for j in net.tables.bucket(t, int(codes[i, t])).tolist():
                freq[j] = freq.get(j, 0) + 1
        samples.append((net.act[i, :net.n_act[i]].tolist(), truth, freq))
    return samples


def test_union_is_each_retrieved_neuron_once_with_the_true_labels(data):
    for got, truth, freq in _step_and_buckets(data, "union"):
        assert len(got) == len(set(got)), "a neuron twice in one active set"
        assert set(got) == truth | set(freq)


def test_threshold_keeps_the_neurons_in_enough_buckets(data):
    samples = _step_and_buckets(data, "threshold", threshold=3)
    assert sum(len({j for j, f in freq.items() if f >= 3}) for _, _, freq in samples) > BATCH   # a real test
    for got, truth, freq in samples:
        assert len(got) == len(set(got))
        assert set(got) == truth | {j for j, f in freq.items() if f >= 3}


def test_topk_keeps_at_most_k_of_the_most_frequent_ties_included_only_to_k(data):
    topk = 5
    samples = _step_and_buckets(data, "topk", topk=topk)
    ties = 0
    for got, truth, freq in samples:
        assert len(got) == len(set(got)) and truth <= set(got)
        kept = set(got) - truth
        ranked = sorted(freq.values(), reverse=True)
        cut = ranked[min(topk, len(ranked)) - 1] if ranked else 0
        ties += sum(f == cut for f in freq.values()) > sum(f == cut for j, f in freq.items() if j in kept)
        assert {j for j, f in freq.items() if f > cut} - truth <= kept        # every neuron above the cut
        assert all(freq.get(j, 0) >= cut for j in kept)                       # nothing below it
        assert len(kept) <= topk, f"{len(kept)} retrieved neurons kept, topk {topk}"
    assert ties, "no sample had a tie at the cut: the test cannot see how ties are broken"


def test_the_active_count_counts_a_pool_neuron_a_sample_already_has_once(data):
    """With batch padding, a sample computes its own set and the batch's shared pool, a neuron
    in both once: ``active_total`` (mean_active, active_fraction) is the size of their union."""
    config = SlideConfig(mode="union", batch=BATCH, hidden=16, K=2, L=8, lsh="simhash", threads=1, seed=1,
                         min_active=120, padding="batch", upkeep="none", bucket_capacity=32)
    net = SlideNetwork(config, data.n_features, data.n_labels, 16)
    rows = np.arange(BATCH)
    net.step(data, rows)
    pool = set(net._padding_pool().tolist())                 # the next step's pool, drawn from its step count
    before = net.active_total
    net.step(data, rows)
    own = [set(net.act[i, :net.n_act[i]].tolist()) for i in range(BATCH)]
    assert sum(len(s & pool) for s in own) > 0               # an overlap to count once
    assert net.active_total - before == sum(len(s | pool) for s in own)
