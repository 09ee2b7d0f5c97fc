"""A table's size in memory, checked before its layouts are built, and on the device: the
row size a ``--vectors`` dtype wider than float32 gives."""
from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from impls.bandana import headline, prepare, table_memory

MIB = 2**20
SLACK = 256 * 2**10


def _trace(tmp_path, ids=5000, queries=400):
    rng = np.random.default_rng(0)
    offsets = np.arange(queries + 1, dtype=np.int64) * 5
    np.save(tmp_path / "o.npy", offsets)
    np.save(tmp_path / "i.npy", rng.integers(0, ids, int(offsets[-1])).astype(np.int64))
    return ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy")]


def test_float64_vectors_get_a_note_naming_the_vector_bytes_of_float32_and_float16(tmp_path, capsys):
    args = _trace(tmp_path)
    vectors = np.random.default_rng(1).normal(size=(5000, 8))          # numpy's default float64
    np.save(tmp_path / "v64.npy", vectors)
    code = prepare.main([*args, "--vectors", str(tmp_path / "v64.npy"), "--layout", "identity",
                         "--out", str(tmp_path / "out"), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["vectors_per_block"] == 64                 # stdout stays the JSON alone
    assert ("note: the device row size is taken from the vectors' dtype, float64: 8 x 8 = 64 B, 64 to a "
            "4096-B block; if the device holds float32 or float16 rows, give --vector-bytes 32 or "
            "--vector-bytes 16") in err, err
    np.save(tmp_path / "v32.npy", vectors.astype(np.float32))
    for extra in (["--vectors", str(tmp_path / "v32.npy")],                       # the row size is float32's
                  ["--vectors", str(tmp_path / "v64.npy"), "--vector-bytes", "32"]):  # or given
        assert prepare.main([*args, *extra, "--layout", "identity", "--out", str(tmp_path / "out")]) == 0
        assert "note:" not in capsys.readouterr().err


@pytest.mark.parametrize("command", ["prepare", "headline"])
def test_a_table_beyond_the_memory_available_is_refused_before_any_layout(tmp_path, capsys, monkeypatch, command):
    """--num-vectors 10^6 on a trace of 5,000 ids with 1 MiB available: refused (exit 2) with the
    estimate, the memory available and --renumber; nothing written. Old code built the layouts."""
    monkeypatch.setattr(table_memory, "available_bytes", lambda: MIB)
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    args = [*_trace(tmp_path), "--num-vectors", "1000000"]
    if command == "prepare":
        code = prepare.main([*args, "--layout", "identity", "--layout", "shp", "--out", str(tmp_path / "out")])
    else:
        code = headline.main([*args, "--profile", "smoke"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "error: not enough memory (" in err and "for a table of 1,000,000 rows" in err, err
    assert "this process may allocate 1 MiB" in err and "--renumber numbers the " in err, err
    assert not (tmp_path / "out").exists()
    need = table_memory.table_bytes(10**6, ["identity", "shp"], 32)
    if command == "prepare":
        assert f"building the layouts identity, shp takes about {table_memory.size_text(need)} at once" in err, err


def test_a_table_that_fits_is_built(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(table_memory, "available_bytes", lambda: 64 * MIB)
    code = prepare.main([*_trace(tmp_path), "--num-vectors", "100000", "--layout", "identity",
                         "--out", str(tmp_path / "out")])
    assert code == 0, capsys.readouterr().err
    monkeypatch.setattr(table_memory, "available_bytes", lambda: None)     # unknown: not checked
    assert prepare.main([*_trace(tmp_path), "--layout", "identity", "--out", str(tmp_path / "out")]) == 0


@pytest.mark.parametrize("kinds, rows, vectors", [
    (["identity"], 10**6, None), (["random"], 10**6, None), (["shp"], 10**6, None),
    (["identity", "random", "shp"], 10**6, None), (["shp", "identity"], 10**6, None),
    (["kmeans"], 50_000, (1, np.float32)),                     # the layout's build, not the vectors' image
    (["kmeans-two-level"], 200_000, (1, np.float32)),
    (["kmeans-two-level"], 200_000, (1, np.float64)),          # and K-means' float32 copy
    (["kmeans-two-level", "identity"], 200_000, (8, np.float64))])   # the vectors' .npy image
def test_the_estimate_bounds_what_numpy_allocates_and_is_close_to_it(tmp_path, kinds, rows, vectors):
    """``table_bytes`` without numba's scratch (``threads=0``) against the peak ``tracemalloc``
    sees while ``prepare`` builds, writes and measures the layouts of a table of ``rows`` rows
    read by a short trace (``vectors``: their width and dtype): at least that peak, and at
    most a third above it (up to ``SLACK``, Python's own small objects)."""
    rng = np.random.default_rng(0)
    offsets = np.arange(401, dtype=np.int64) * 5
    indices = rng.integers(0, 5000, int(offsets[-1])).astype(np.int64)
    values = rng.normal(size=(rows, vectors[0])).astype(vectors[1]) if vectors else None
    source = {"offsets": offsets, "indices": indices, "vectors": values, "num_vectors": rows, "source": "test"}
    prepare.prepare(source, kinds, tmp_path / "warm")       # imports and numba's kernels outside the count
    tracemalloc.start()
    try:
        prepare.prepare(source, kinds, tmp_path / "out")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = table_memory.table_bytes(rows, kinds, 32, vectors=values, threads=0, writes_vectors=values is not None)
    assert peak - SLACK <= estimate <= 4 / 3 * peak + SLACK, (peak / rows, estimate / rows)


def test_the_headline_estimate_bounds_what_numpy_allocates_and_is_close_to_it(tmp_path, monkeypatch):
    """``headline`` holds every layout while it builds and measures them:
    ``table_bytes(keep_all=True)`` without numba's scratch is at least the peak ``tracemalloc``
    sees and at most a third above it (the rerun's simulations are the grid's stored results;
    run in this process they held less than the layouts)."""
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    rng = np.random.default_rng(0)
    offsets = np.arange(2001, dtype=np.int64) * 5
    rows = 10**6
    source = {"offsets": offsets, "indices": rng.integers(0, rows, int(offsets[-1])).astype(np.int64),
              "vectors": None, "num_vectors": rows, "source": "test", "renumbered": False}
    headline.measure(source, "smoke", progress=False)       # imports, kernels and grid files outside the count
    tracemalloc.start()
    try:
        headline.measure(source, "smoke", progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    kinds, _ = headline.experiment_sizes("smoke", rows, False)
    estimate = table_memory.table_bytes(rows, kinds["layouts"], 32, keep_all=True, threads=0)
    assert peak - SLACK <= estimate <= 4 / 3 * peak + SLACK, (peak / rows, estimate / rows)


def test_the_hint_names_renumber_only_where_it_shrinks_the_table(monkeypatch):
    from impls.bandana import prepare

    trace = {"indices": np.array([5, 7, 7, 9], dtype=np.int64), "renumbered": False, "num_vectors": 1000}
    assert prepare.smaller_table_hint(trace).startswith("--renumber numbers the 3 distinct ids")
    dense = {**trace, "indices": np.arange(1000, dtype=np.int64)}       # every row read: renumbering keeps 1000
    assert "--renumber" not in prepare.smaller_table_hint(dense, "fewer --layout at once")

    def short(*_a, **_k):
        raise MemoryError("sorting a copy")

    monkeypatch.setattr(prepare.np, "unique", short)                    # counting needs memory that is short
    said = prepare.smaller_table_hint(trace)
    assert said.startswith("--renumber numbers the distinct ids") and "3" not in said
