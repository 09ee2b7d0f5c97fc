"""From a trace to the simulator's result on the command line, as the README shows it."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from impls.bandana.sim import cache
from impls.bandana.data import traces

ROOT = Path(__file__).resolve().parents[2]


def _py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_readme_example_from_a_registry_trace_to_a_simulator_result(tmp_path):
    out = tmp_path / "bandana"
    made = _py("impls.bandana.prepare", "--dataset", "bandana-user", "--profile", "smoke",
               "--layout", "identity", "--layout", "shp", "--out", str(out), "--json")
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    assert summary == json.loads((out / "summary.json").read_text())
    trace = np.load(out / "trace.npy")
    assert trace.dtype == np.int64 and trace.size == summary["test_lookups"]
    np.testing.assert_array_equal(trace, np.load(out / "test_indices.npy"))
    results = {}
    for kind in ("identity", "shp"):
        perm = np.load(out / f"layout-{kind}.npy")
        assert np.array_equal(np.sort(perm), np.arange(summary["num_vectors"]))
        run = _py("impls.bandana.cache", "--trace", str(out / "trace.npy"), "--layout", str(out / f"layout-{kind}.npy"),
                  "--capacity", "1000", "--policy", "prefetch", "--json")
        assert run.returncode == 0, run.stderr
        results[kind] = json.loads(run.stdout)
        direct = cache.simulate(trace, perm, 1000, "prefetch")
        assert results[kind]["blocks_read"] == direct.blocks_read and results[kind]["hits"] == direct.hits
    # the trained layout puts co-read vectors together: fewer blocks than one vector's worth per block
    assert summary["layouts"]["shp"]["fanout_test"] < summary["layouts"]["identity"]["fanout_test"]


def test_own_files_in_the_suites_format(tmp_path):
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 20, 400)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    indices = rng.integers(0, 3000, int(offsets[-1])).astype(np.int64)
    vectors = rng.normal(size=(3000, 8)).astype(np.float32)
    for name, array in (("o", offsets), ("i", indices), ("v", vectors)):
        np.save(tmp_path / f"{name}.npy", array)
    made = _py("impls.bandana.prepare", "--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"),
               "--vectors", str(tmp_path / "v.npy"), "--layout", "kmeans", "--layout", "random",
               "--train-fraction", "0.25", "--out", str(tmp_path / "out"), "--json")
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    (train_o, _), (test_o, test_i) = traces.split_in_time(offsets, indices, 0.25)
    assert summary["train_queries"] == train_o.size - 1 and summary["test_queries"] == test_o.size - 1
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "trace.npy"), test_i)


def test_an_fbgemm_dlrm_file(tmp_path):
    torch = pytest.importorskip("torch")
    lengths = torch.tensor([[3, 1, 2, 4] * 25, [2, 2, 2, 2] * 25])
    offsets = torch.zeros(lengths.numel() + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths.reshape(-1), 0)
    indices = torch.randint(0, 500, (int(offsets[-1]),), generator=torch.Generator().manual_seed(0))
    buffer = io.BytesIO()
    torch.save((indices, offsets, lengths), buffer)
    (tmp_path / "t.pt").write_bytes(buffer.getvalue())
    made = _py("impls.bandana.prepare", "--dlrm", str(tmp_path / "t.pt"), "--table", "1", "--layout", "shp",
               "--out", str(tmp_path / "out"), "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["test_lookups"] == 100  # 50 later samples x 2 lookups


@pytest.mark.parametrize("args, message", [
    ((), "give exactly one trace"),
    (("--dataset", "bandana-user", "--offsets", "x.npy", "--indices", "y.npy"), "give exactly one trace"),
    (("--dataset", "nope"), "unknown dataset 'nope'"),
    (("--offsets", "missing.npy", "--indices", "missing.npy"), "no such file"),
    (("--dataset", "bandana-user", "--train-fraction", "1.5"), "expected a number in (0, 1)"),
])
def test_bad_requests_are_one_line_errors_before_any_work(tmp_path, args, message):
    run = _py("impls.bandana.prepare", *args, "--profile", "smoke", "--layout", "identity",
              "--out", str(tmp_path / "out"))
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()


def test_kmeans_without_values_is_refused(tmp_path):
    np.save(tmp_path / "o.npy", np.array([0, 2, 4], dtype=np.int64))
    np.save(tmp_path / "i.npy", np.array([0, 1, 2, 3], dtype=np.int64))
    run = _py("impls.bandana.prepare", "--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"),
              "--layout", "kmeans", "--out", str(tmp_path / "out"))
    assert run.returncode == 2 and "needs vector values" in run.stderr
