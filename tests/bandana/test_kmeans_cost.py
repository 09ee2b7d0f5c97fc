"""Flat K-means is quadratic in the table: prepare and headline print its estimate before a
large build, and stay silent (nothing timed) on small tables and the suite's own."""
from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from impls.bandana import headline, prepare
from impls.bandana.experiments import simulation
from impls.bandana.layout import kmeans_cost

ROOT = Path(__file__).resolve().parents[2]


def _source(n: int = 640, dim: int = 8, queries: int = 400) -> dict:
    rng = np.random.default_rng(0)
    return {"offsets": np.arange(queries + 1, dtype=np.int64) * 4, "indices": rng.integers(0, n, size=4 * queries),
            "vectors": rng.normal(size=(n, dim)).astype(np.float32), "num_vectors": n, "source": "test"}


def test_the_operation_count_is_quadratic_in_the_table():
    assert kmeans_cost.clusters(50_000, 16) == 3125
    assert kmeans_cost.operations(50_000, 64, 16, 10) == 11 * 50_000 * 3125 * 64
    assert kmeans_cost.operations(100_000, 64, 16, 10) == 4 * kmeans_cost.operations(50_000, 64, 16, 10)
    assert kmeans_cost.duration(40) == "40 s" and kmeans_cost.duration(7200) == "2 h"


def test_the_suites_own_flat_kmeans_builds_are_below_the_warning():
    """Every profile whose [bandana_sim] builds flat kmeans, on each of its tables."""
    checked = 0
    for profile in ("smoke", "quick", "full"):
        s = simulation.sizes(profile)
        if "kmeans" not in s["layouts"]:
            continue
        for table in s["tables"]:
            spec = tomllib.loads((ROOT / "datasets" / f"{table}.toml").read_text())["synthetic"]
            n, dim = spec["profiles"][profile]["num_vectors"], spec["params"]["dim"]
            ops = kmeans_cost.operations(n, dim, simulation.BLOCK_BYTES // simulation.VECTOR_BYTES, s["kmeans_niter"])
            assert ops < kmeans_cost.WARN_OPERATIONS / 10, (profile, table, ops)
            checked += 1
    assert checked


def test_prepare_says_the_estimate_before_it_starts_the_build(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(kmeans_cost, "WARN_OPERATIONS", 0)           # this small table counts as large

    def not_started(*args, **kwargs):
        raise RuntimeError("the build started")

    monkeypatch.setattr(simulation, "build_layout", not_started)
    with pytest.raises(RuntimeError, match="the build started"):
        prepare.prepare(_source(), ["kmeans"], tmp_path / "out", vector_bytes=512)
    err = capsys.readouterr().err
    assert ("warning: --layout kmeans: flat K-means of 640 vectors of 8 values into 80 clusters (one a block of "
            "8) with 10 iterations is 4.5e+06 multiply-adds, growing as the square of the table: estimated ") in err
    assert "kmeans-two-level scales to large tables" in err


def test_a_small_table_is_neither_timed_nor_warned_of(tmp_path, monkeypatch, capsys):
    def timed(*args, **kwargs):
        raise AssertionError("timed a small table")

    monkeypatch.setattr(kmeans_cost, "estimate_seconds", timed)
    prepare.prepare(_source(), ["kmeans"], tmp_path / "out", vector_bytes=512)
    assert "flat K-means" not in capsys.readouterr().err


def test_headline_says_the_estimate_of_the_profiles_kmeans(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    monkeypatch.setenv("DLSYSBENCH_GRID_RESULTS", str(tmp_path / "grid"))
    monkeypatch.setattr(kmeans_cost, "WARN_OPERATIONS", 0)
    headline.measure(_source(), "smoke", progress=False)
    err = capsys.readouterr().err
    assert ("warning: the kmeans layout of [bandana_sim.smoke]: flat K-means of 640 vectors of 8 values into "
            "20 clusters (one a block of 32)") in err
