"""Inputs at the edge of what Bandana's commands can judge or compute: a headline whose cache
holds the ids the trace reads is not judged, sparse ids are warned of below the refusal size,
vectors of no column are refused in one line (faiss divides by the width), and the trace
sensitivity script checks every value and its --json path before any work."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from impls.bandana import headline, prepare

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bandana_trace_sensitivity.py"


def _run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DLSYSBENCH_DASK_SCHEDULER": "serial", "DLSYSBENCH_GRID_RESULTS": str(tmp_path / "grid"),
           "DLSYSBENCH_PROFILE": "smoke"}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _uniform(ids: np.ndarray, queries: int = 1000, per_query: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """CSR offsets and indices of queries of ``per_query`` ids drawn uniformly from ``ids``:
    no co-access for any layout to find."""
    rng = np.random.default_rng(seed)
    return np.arange(queries + 1, dtype=np.int64) * per_query, rng.choice(ids, size=queries * per_query)


@pytest.fixture
def serial(monkeypatch, tmp_path):
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    monkeypatch.setenv("DLSYSBENCH_GRID_RESULTS", str(tmp_path / "grid"))


def _measure(offsets: np.ndarray, indices: np.ndarray, num_vectors: int) -> dict:
    source = {"offsets": offsets, "indices": indices, "vectors": None, "num_vectors": num_vectors,
              "source": "test"}
    return headline.measure(source, "smoke", progress=False)


def test_sparse_ids_the_cache_holds_are_not_judged_and_renumbered_they_are(tmp_path):
    """1,000 ids scattered over [0, 200,000): the cache (5% of 200,000 rows) holds every id read,
    so SHP wins only by packing the used ids; renumbered, the same trace gains nothing."""
    ids = np.sort(np.random.default_rng(1).choice(200_000, size=1000, replace=False))
    ids[-1] = 199_999
    offsets, indices = _uniform(ids)
    np.save(tmp_path / "o.npy", offsets)
    np.save(tmp_path / "i.npy", indices)
    files = ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--json"]
    sparse = _run("-m", "impls.bandana.headline", *files, tmp_path=tmp_path)
    assert sparse.returncode == 0, sparse.stderr
    got = json.loads(sparse.stdout)
    assert got["verdict"] == "not judged" and got["not_judged"]
    assert any(note.startswith("the cache (10000 vectors, 0.05 of a table of 200000 rows) has room for all the ")
               and "--renumber" in note and note.endswith("verdict not judged") for note in got["notes"]), got["notes"]
    assert "are distinct, so the table has 200000 rows, most never read" in sparse.stderr
    dense = _run("-m", "impls.bandana.headline", *files, "--renumber", tmp_path=tmp_path)
    assert dense.returncode == 0, dense.stderr
    renumbered = json.loads(dense.stdout)
    assert renumbered["not_judged"] is None and renumbered["verdict"] != "not judged"
    assert renumbered["headline"]["ratio"] < 1.3
    printed = _run("-m", "impls.bandana.headline", *files[:-1], tmp_path=tmp_path)
    assert "(no layout gain: the cache holds the ids the trace reads, see the note)" in printed.stdout
    assert "not judged on this trace" in printed.stdout


def test_a_cache_with_room_for_every_id_read_is_the_edge(serial):
    """A table of 6,400 rows (cache 320) read only at U ids scattered over it: U = 320 (all
    fit) is not judged, U = 330 is. (Its first U ids would lie in U / 32 blocks of the ids as
    numbered, an order that reads as well as any trained layout: not judged either.)"""
    scattered = np.random.default_rng(7).permutation(6400)
    edge = _measure(*_uniform(scattered[:320], queries=4000, per_query=8), num_vectors=6400)
    assert edge["test_distinct_ids"] == 320
    assert edge["not_judged"].startswith("the cache (320 vectors, 0.05 of a table of 6400 rows) has room for all "
                                         "the 320 distinct ids")
    beyond = _measure(*_uniform(scattered[:330], queries=4000, per_query=8), num_vectors=6400)
    assert beyond["test_distinct_ids"] == 330 and beyond["not_judged"] is None
    assert not any("room for" in note for note in beyond["notes"])


def test_the_ids_counted_against_the_cache_are_the_measured_halfs(serial):
    """The earlier half reads the whole table, the later half only 150 hot ids: the cache of 200
    holds every id the measured half reads, so the ratio is not judged, whatever the earlier
    half read."""
    rng = np.random.default_rng(0)
    scattered = rng.permutation(4000)
    earlier, later = rng.integers(0, 4000, 20000), scattered[rng.integers(0, 150, 20000)]
    ids = np.concatenate([earlier, later]).astype(np.int64)
    got = _measure(np.arange(0, ids.size + 1, 20, dtype=np.int64), ids, num_vectors=4000)
    assert got["test_distinct_ids"] == np.unique(later).size == 150
    assert got["not_judged"].startswith("the cache (200 vectors, 0.05 of a table of 4000 rows) has room for all "
                                        "the 150 distinct ids")


def test_a_table_the_cache_holds_whole_is_not_judged(serial):
    got = _measure(np.arange(201, dtype=np.int64) * 3, np.arange(600, dtype=np.int64) % 10, num_vectors=10)
    assert got["not_judged"].startswith("the cache (32 vectors, at least one block) holds the whole table of 10")


def test_a_cache_over_twice_the_claims_share_of_a_small_table_is_not_judged(serial, tmp_path, capsys):
    """The cache's one-block floor (32 vectors) is 32% of a 100-row table: not the claim's 5%
    cache, whatever the ratio. The edge is 2 x 5%: 320 rows (cache 10%) are judged, 319 not."""
    small = _measure(*_uniform(np.arange(100), queries=2000), num_vectors=100)
    assert small["not_judged"].startswith("the cache is 32 vectors (at least one block), 32.0% of the table of "
                                          "100 rows, not the claim's 5%: more than 2 x 0.05 of the table")
    assert "(a table of at least 320 rows)" in small["not_judged"]
    assert small["headline"]["ratio"] > 0                     # the numbers are still there
    assert headline._smallest_judged(0.05) == 320
    edge = _measure(*_uniform(np.arange(320), queries=2000), num_vectors=320)
    assert edge["not_judged"] is None
    assert any(note.startswith("the cache is one block's 32 vectors") for note in edge["notes"]), edge["notes"]
    below = _measure(*_uniform(np.arange(319), queries=2000), num_vectors=319)
    assert below["not_judged"].startswith("the cache is 32 vectors (at least one block), 10.0% of the table of 319")
    offsets, indices = _uniform(np.arange(100), queries=2000)
    np.save(tmp_path / "o.npy", offsets)
    np.save(tmp_path / "i.npy", indices)
    assert headline.main(["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"),
                          "--profile", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "(a cache over the claim's share of this small table, see the note)" in out
    assert "not judged on this trace" in out and "reproduced" not in out


def test_sparse_ids_below_the_refusal_size_are_warned_of(tmp_path, capsys):
    offsets, indices = _uniform(np.array([0, 5, 99_999]), queries=20, per_query=2)
    np.save(tmp_path / "o.npy", offsets)
    np.save(tmp_path / "i.npy", indices)
    args = ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--layout", "identity"]
    assert prepare.main([*args, "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "ids reach 99999 but only 3 are distinct, so the table has 100000 rows, most never read" in err
    assert "--num-vectors N" in err and "--renumber" in err
    assert prepare.main([*args, "--num-vectors", "100000", "--out", str(tmp_path / "out")]) == 0
    assert "most never read" not in capsys.readouterr().err    # the user says the table has those rows


@pytest.mark.parametrize("command", [
    ["-m", "impls.bandana.headline"],
    ["-m", "impls.bandana.prepare", "--layout", "kmeans", "--vector-bytes", "128", "--out", "OUT"],
    ["-m", "impls.bandana.prepare", "--layout", "identity", "--out", "OUT"],
])
def test_vectors_of_no_column_are_refused_in_one_line(tmp_path, command):
    np.save(tmp_path / "o.npy", np.arange(33, dtype=np.int64) * 2)
    np.save(tmp_path / "i.npy", np.arange(64, dtype=np.int64))
    np.save(tmp_path / "v.npy", np.zeros((64, 0), dtype=np.float32))
    command = [str(tmp_path / "out") if arg == "OUT" else arg for arg in command]
    done = _run(*command, "--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"),
                "--vectors", str(tmp_path / "v.npy"), tmp_path=tmp_path)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.strip() == (f"error: --vectors {tmp_path / 'v.npy'}: shape (64, 0), rows of 0 columns; "
                                   "expected at least one value per vector")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("param, value, says", [
    ("global_fraction", "2", "--param global_fraction --values 2: global_fraction must be in [0, 1], got 2.0"),
    ("community_size", "0.5", "--param community_size --values 0.5: communities_per_query, mean_query_size and "
                              "community_size must be >= 1"),
    ("dim", "0", "--param dim --values 0: the trace's vectors: shape (1, 0), rows of 0 columns"),
])
def test_sensitivity_values_the_generator_refuses_are_one_line_before_any_work(tmp_path, param, value, says):
    done = _run(str(SCRIPT), "--param", param, "--values", "1" if param == "dim" else "0.5", value,
                tmp_path=tmp_path)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert says in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""                                   # the valid first value was not run either


def test_sensitivity_json_is_checked_before_any_work_and_written_strictly(tmp_path):
    missing = _run(str(SCRIPT), "--values", "0.75", "--json", str(tmp_path / "no" / "rows.json"), tmp_path=tmp_path)
    assert missing.returncode == 2 and missing.stdout == ""
    assert f"directory {tmp_path / 'no'} does not exist, --json" in missing.stderr
    assert "Traceback" not in missing.stderr
    done = _run(str(SCRIPT), "--values", "0.75", "--json", str(tmp_path / "rows.json"), tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert [row["value"] for row in rows] == [0.75] and rows[0]["param"] == "noise"
