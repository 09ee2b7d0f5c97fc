"""The sub-cluster sweep and the layout headline report NVM traffic beside effective bandwidth:
effective bandwidth counts every miss as useful, so it can rise while the blocks read rise too."""
from __future__ import annotations

import numpy as np
import pytest

from impls.bandana import cache
from impls.bandana.experiments import simulation
from impls.bandana.figures import simulation as figures
from impls.bandana.geometry import BLOCK_BYTES, VECTOR_BYTES
from impls.bandana.layout import layouts


def test_effective_bandwidth_can_rise_while_the_reads_rise():
    """Prefetch on an identity layout: more useful bytes a block, and more blocks read."""
    rng = np.random.default_rng(0)
    trace = rng.integers(0, 2048, 20_000)
    plain = cache.simulate(trace, layouts.identity_layout(2048).permutation, 256, "none", 0, VECTOR_BYTES, BLOCK_BYTES)
    fetch = cache.simulate(trace, layouts.identity_layout(2048).permutation, 256, "prefetch", 0, VECTOR_BYTES,
                           BLOCK_BYTES)
    assert fetch.effective_bandwidth > plain.effective_bandwidth and fetch.blocks_read > plain.blocks_read


def test_subcluster_sweep_gives_blocks_read_over_plain_lru(monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    out = simulation.subcluster_sweep(progress=False)
    s = out["sizes"]
    for name, rows in out["tables"].items():
        table = simulation.load_table(name, s["train_fraction"])
        capacity = simulation.capacity_of(table["num_vectors"], s["headline_cache_fraction"])
        lru = cache.simulate(table["test_ids"], layouts.identity_layout(table["num_vectors"]).permutation,
                             capacity, "none", 0, VECTOR_BYTES, BLOCK_BYTES)
        assert out["lru"][name]["blocks_read"] == lru.blocks_read > 0
        assert out["lru"][name]["effective_bandwidth"] == pytest.approx(VECTOR_BYTES / BLOCK_BYTES)
        for r in rows:
            assert r["blocks_read_over_lru"] == pytest.approx(r["blocks_read"] / lru.blocks_read)
            assert 1 <= r["groups"] <= s["kmeans_clusters"] * r["subclusters"]
    short = {**out, "tables": {name: [{**r, "groups": 1} for r in rows] for name, rows in out["tables"].items()}}
    texts = [t.get_text() for t in figures.effective_bandwidth_vs_subclusters(short).axes[0].texts]
    assert texts and all(t.endswith(" made") for t in texts)     # the x value is only what was asked
    ax = figures.effective_bandwidth_vs_subclusters(out).axes[2]
    assert "plain LRU" in ax.get_ylabel() and len(ax.lines) == len(out["tables"]) + 1   # + the line at 1
    old = {k: v for k, v in out.items() if k != "lru"}        # an artifact from before the LRU point
    assert len(figures.effective_bandwidth_vs_subclusters(old).axes) == 2


def test_layout_headline_gives_the_best_configurations_reads_over_the_baselines(monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    out = simulation.layout_policy_experiment(progress=False)
    for info in out["tables"].values():
        head = info["headline"]
        best = next(p for p in info["points"] if (p["layout"], p["policy"]) == (head["best"]["layout"], head["best"]["policy"])
                    and p["cache_fraction"] == head["cache_fraction"])
        assert head["best"]["blocks_read"] == best["blocks_read"]
        assert head["best_blocks_read_over_baseline"] == pytest.approx(best["blocks_read"] / head["baseline"]["blocks_read"])
    fig = figures.effective_bandwidth_by_layout_and_policy(out)
    assert "its NVM blocks read:" in fig.axes[0].get_title()
