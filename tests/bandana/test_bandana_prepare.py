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


def test_the_json_may_go_into_the_new_out_directory_but_not_over_an_input(tmp_path, capsys):
    from impls.bandana.prepare import main

    np.save(tmp_path / "o.npy", np.array([0, 2, 4, 6], dtype=np.int64))
    np.save(tmp_path / "i.npy", np.array([0, 1, 2, 3, 1, 0], dtype=np.int64))
    base = ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--layout", "identity"]
    assert main([*base, "--out", str(tmp_path / "new" / "out"), "--json", str(tmp_path / "new" / "out" / "s.json")]) == 0
    assert json.loads((tmp_path / "new" / "out" / "s.json").read_text())["layouts"]["identity"]
    capsys.readouterr()
    assert main([*base, "--out", str(tmp_path / "out2"), "--json", str(tmp_path / "o.npy")]) == 2
    err = capsys.readouterr().err
    assert "is the file --offsets reads" in err and not (tmp_path / "out2").exists()
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), [0, 2, 4, 6])


def test_prepare_never_writes_over_its_inputs_or_into_nowhere(tmp_path, capsys):
    from impls.bandana.prepare import main

    out = tmp_path / "o"
    out.mkdir()
    np.save(out / "train_offsets.npy", np.array([0, 2, 4, 6], dtype=np.int64))
    np.save(out / "train_indices.npy", np.array([0, 1, 2, 3, 1, 0], dtype=np.int64))
    inputs = ["--offsets", str(out / "train_offsets.npy"), "--indices", str(out / "train_indices.npy"),
              "--layout", "identity"]
    cases = [([*inputs, "--out", str(out)], "--offsets", "train_offsets.npy, which this run writes"),
             ([*inputs, "--out", str(tmp_path / "p"), "--json", str(tmp_path / "p" / "trace.npy")],
              "--json", "trace.npy, which this run writes"),
             ([*inputs, "--out", ""], "--out", "empty path"),
             (["--dataset", "slide-delicious200k", "--layout", "identity", "--out", str(tmp_path / "q")],
              "--dataset", "not a trace dataset")]
    for argv, flag, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and flag in err and message in err, err
    np.testing.assert_array_equal(np.load(out / "train_offsets.npy"), [0, 2, 4, 6])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


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


SMOKE = ("--profile", "smoke")


@pytest.mark.parametrize("args, message", [
    (SMOKE, "give exactly one trace"),
    (("--dataset", "bandana-user", "--offsets", "x.npy", "--indices", "y.npy", *SMOKE), "give exactly one trace"),
    (("--dataset", "nope", *SMOKE), "unknown dataset 'nope'"),
    (("--offsets", "missing.npy", "--indices", "missing.npy"), "no such file"),
    (("--dataset", "bandana-user", "--train-fraction", "1.5", *SMOKE), "expected a number in (0, 1)"),
    (("--dataset", "bandana-user", "--seed", "-1", *SMOKE), "got -1, --seed, expected an integer in [0, 4294967295]"),
    (("--dataset", "bandana-user", "--block-bytes", str(2**32), *SMOKE),
     "got 4294967296, --block-bytes, expected an integer in [512, 67108864]"),
    (("--dataset", "bandana-user", "--vectors", "v.npy", *SMOKE), "--vectors goes with --offsets/--indices, not with --dataset"),
    (("--dataset", "bandana-user", "--num-vectors", "9", *SMOKE), "--num-vectors goes with --offsets/--indices, not with --dataset"),
    (("--dlrm", "x.pt", "--num-vectors", "9"), "--num-vectors goes with --offsets/--indices, not with --dlrm"),
    (("--offsets", "o.npy", "--indices", "i.npy", *SMOKE), "--profile sizes a registry --dataset; it does not apply to --offsets/--indices"),
])
def test_bad_requests_are_one_line_errors_before_any_work(tmp_path, args, message):
    run = _py("impls.bandana.prepare", *args, "--layout", "identity", "--out", str(tmp_path / "out"))
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("count, message", [
    ("100", "i.npy uses ids up to 299; expected a table with a row for every id"),
    (str(2**63 - 1), "expected a positive count of at most 2^40 rows"),     # numpy's size would wrap to 0
    (str(2**60), "expected a positive count of at most 2^40 rows"),
])
def test_a_table_size_that_cannot_hold_the_trace_names_num_vectors(tmp_path, count, message):
    files = _save_all(tmp_path, o=np.array([0, 2, 4], dtype=np.int64), i=np.array([0, 299, 5, 7], dtype=np.int64))
    run = _py("impls.bandana.prepare", "--offsets", files["o"], "--indices", files["i"], "--num-vectors", count,
              "--layout", "identity", "--out", str(tmp_path / "out"))
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_an_out_that_cannot_be_a_directory_is_named(tmp_path):
    files = _save_all(tmp_path, o=np.array([0, 2, 4], dtype=np.int64), i=np.array([0, 1, 2, 3], dtype=np.int64))
    (tmp_path / "a_file").write_text("x")
    run = _py("impls.bandana.prepare", "--offsets", files["o"], "--indices", files["i"], "--layout", "identity",
              "--out", str(tmp_path / "a_file" / "sub"))
    assert run.returncode == 2 and f"--out {tmp_path / 'a_file' / 'sub'}: cannot create the directory" in run.stderr


def test_kmeans_without_values_is_refused(tmp_path):
    np.save(tmp_path / "o.npy", np.array([0, 2, 4], dtype=np.int64))
    np.save(tmp_path / "i.npy", np.array([0, 1, 2, 3], dtype=np.int64))
    run = _py("impls.bandana.prepare", "--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"),
              "--layout", "kmeans", "--out", str(tmp_path / "out"))
    assert run.returncode == 2 and "needs vector values" in run.stderr


def _save_all(folder: Path, **arrays) -> dict[str, str]:
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", array)
    return {name: str(folder / f"{name}.npy") for name in arrays}


def test_layouts_are_packed_for_the_users_row_size_and_the_summary_says_so(tmp_path):
    # 64 communities of 16 vectors of 256 B (dim 64 float32): 16 fill a 4 KB block, not 32
    rng = np.random.default_rng(0)
    n, size = 1024, 16
    members = rng.permutation(n).reshape(-1, size)
    indices = np.concatenate([rng.choice(members[rng.integers(len(members))], 8, replace=False) for _ in range(3000)])
    files = _save_all(tmp_path, o=np.arange(3001, dtype=np.int64) * 8, i=indices.astype(np.int64),
                      v=rng.normal(size=(n, 64)).astype(np.float32))
    made = _py("impls.bandana.prepare", "--offsets", files["o"], "--indices", files["i"], "--vectors", files["v"],
               "--layout", "shp", "--out", str(tmp_path / "out"), "--json")
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    assert (summary["vector_bytes"], summary["block_bytes"], summary["vectors_per_block"]) == (256, 4096, 16)
    assert summary["slack_bytes_per_block"] == 0
    from impls.bandana.layout import layouts

    layout = np.load(tmp_path / "out" / "layout-shp.npy")
    test = (np.load(tmp_path / "out" / "test_offsets.npy"), np.load(tmp_path / "out" / "test_indices.npy"))
    assert summary["layouts"]["shp"]["fanout_test"] == pytest.approx(layouts.fanout(layout, *test, 16))
    assert summary["layouts"]["shp"]["fanout_test"] < 1.5   # a community fills one 16-vector block
    trace, packed = str(tmp_path / "out" / "trace.npy"), str(tmp_path / "out" / "layout-shp.npy")
    for engine in ("impls.bandana.cache", "impls.bandana.replay"):   # the default 128 B is another layout
        wrong = _py(engine, "--trace", trace, "--layout", packed, "--capacity", "64", "--policy", "none")
        assert wrong.returncode == 2 and "got 128 (the default: --vector-bytes not given), --vector-bytes, expected 256" in wrong.stderr, wrong.stderr
    right = _py("impls.bandana.cache", "--trace", trace, "--layout", packed, "--capacity", "64", "--policy",
                "none", "--vector-bytes", "256", "--json")
    assert right.returncode == 0 and 0 <= json.loads(right.stdout)["hit_rate"] <= 1
    forced = _py("impls.bandana.prepare", "--offsets", files["o"], "--indices", files["i"], "--vectors", files["v"],
                 "--vector-bytes", "64", "--layout", "identity", "--out", str(tmp_path / "out"), "--json")
    assert json.loads(forced.stdout)["vectors_per_block"] == 64
    assert not (tmp_path / "out" / "layout-shp.npy").exists()   # the previous run's layout is gone
    assert json.loads(forced.stdout)["removed"] == [str(tmp_path / "out" / "layout-shp.npy")]


def test_a_rerun_removes_only_what_the_previous_run_wrote(tmp_path):
    rng = np.random.default_rng(1)
    data = tmp_path / "mine"
    data.mkdir()
    files = _save_all(data, offsets=np.arange(201, dtype=np.int64) * 4,
                      indices=rng.integers(0, 300, 800).astype(np.int64),
                      vectors=rng.normal(size=(300, 8)).astype(np.float32))
    np.save(data / "layout-mine.npy", np.arange(300))
    first = _py("impls.bandana.prepare", "--offsets", files["offsets"], "--indices", files["indices"],
                "--vectors", files["vectors"], "--layout", "kmeans", "--out", str(data))
    assert first.returncode == 0, first.stderr
    again = _py("impls.bandana.prepare", "--offsets", files["offsets"], "--indices", files["indices"],
                "--layout", "shp", "--out", str(data), "--json")
    assert again.returncode == 0, again.stderr
    assert (data / "vectors.npy").exists() and (data / "layout-mine.npy").exists()   # inputs and the user's own
    assert json.loads(again.stdout)["removed"] == [str(data / "layout-kmeans.npy")]


def test_renumbered_ids_keep_their_input_ids(tmp_path):
    files = _save_all(tmp_path, o=np.array([0, 2, 4, 6], dtype=np.int64),
                      i=np.array([10**12, 7, 7, 10**12 + 5, 3, 7], dtype=np.int64))
    refused = _py("impls.bandana.prepare", "--offsets", files["o"], "--indices", files["i"], "--layout", "identity",
                  "--out", str(tmp_path / "out"))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--renumber if the ids are hashed" in refused.stderr and "--num-vectors N" in refused.stderr
    made = _py("impls.bandana.prepare", "--offsets", files["o"], "--indices", files["i"], "--renumber",
               "--layout", "identity", "--out", str(tmp_path / "out"), "--json")
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    original = np.load(tmp_path / "out" / "original_ids.npy")
    assert summary["renumbered"] and summary["num_vectors"] == 4
    np.testing.assert_array_equal(original[np.load(tmp_path / "out" / "trace.npy")], [7, 10**12 + 5, 3, 7])


@pytest.mark.parametrize("arrays, extra, message", [
    (dict(o=np.array([0, 2, 4]), i=np.array([0, 1, 2, 3]), v=np.array([[1.0], [np.nan], [0.0], [1.0]])),
     ("--layout", "kmeans"), "row 1 holds NaN or Inf"),
    (dict(o=np.array([0, 2, 4]), i=np.array([0, 1, 2, 3]), v=np.array([[1.0], [0.0], [1e300], [1.0]])),
     ("--layout", "kmeans-two-level"), "row 2 holds a value beyond float32's range"),
    (dict(o=np.array([0, 2, 4]), i=np.array([0, 1, 2, 9]), v=np.ones((4, 2), np.float32)),
     ("--layout", "kmeans"), "has 4 rows but"),
    (dict(o=np.array([0, 2, 4]), i=np.array([0, 1, 2, 2**63 + 5], dtype=np.uint64)),
     ("--layout", "identity"), "does not fit int64"),
    (dict(o=np.array([0, 3]), i=np.array([0, 1, 2])), ("--layout", "shp"), "learns from the earlier"),
    (dict(o=np.array([0, 3, 3]), i=np.array([0, 1, 2])), ("--layout", "identity"), "nothing to simulate"),
    (dict(o=np.array([0, 2, 4]), i=np.array([0, 1, 2, 3])), ("--layout", "identity", "--table", "2"),
     "--table picks a table of a --dlrm file"),
    (dict(o=np.array([0, 2, 4]), i=np.array([0, 1, 2, 3])), ("--layout", "identity", "--block-bytes", "1000"),
     "expected a multiple of 512"),
    (dict(o=np.array([0, 2, 4]), i=np.array([-5, -6, -7, -8])), ("--layout", "identity"),
     "indices[0] = -5 is negative"),
    (dict(o=np.array([0, 2, 2**64 - 1], dtype=np.uint64), i=np.array([0, 1, 2, 3])), ("--layout", "identity"),
     "offsets[2] = 18446744073709551615 does not fit int64"),
])
def test_inputs_that_would_mislead_are_refused_in_one_line(tmp_path, arrays, extra, message):
    files = _save_all(tmp_path, **arrays)
    args = ["--offsets", files["o"], "--indices", files["i"]] + (["--vectors", files["v"]] if "v" in files else [])
    run = _py("impls.bandana.prepare", *args, *extra, "--out", str(tmp_path / "out"))
    assert run.returncode == 2, run.stdout + run.stderr
    assert message in run.stderr and "Traceback" not in run.stderr and run.stderr.count("\n") == 1


def test_an_npz_archive_is_named_as_one(tmp_path):
    np.savez(tmp_path / "t.npz", offsets=np.array([0, 1]), indices=np.array([0]))
    np.save(tmp_path / "i.npy", np.array([0]))
    run = _py("impls.bandana.prepare", "--offsets", str(tmp_path / "t.npz"), "--indices", str(tmp_path / "i.npy"),
              "--layout", "identity", "--out", str(tmp_path / "out"))
    assert run.returncode == 2 and "an .npz archive (arrays offsets, indices)" in run.stderr
    simulated = _py("impls.bandana.cache", "--trace", str(tmp_path / "t.npz"), "--layout", str(tmp_path / "i.npy"),
                    "--capacity", "32", "--policy", "none")
    assert simulated.returncode == 2 and "an .npz archive (arrays offsets, indices)" in simulated.stderr


def test_the_largest_seed_builds_every_seeded_layout(tmp_path):
    """faiss and KaHyPar take a signed 32-bit seed; --seed accepts up to 2^32-1."""
    rng = np.random.default_rng(2)
    files = _save_all(tmp_path, o=np.arange(201, dtype=np.int64) * 5, i=rng.integers(0, 300, 1000).astype(np.int64),
                      v=rng.normal(size=(300, 8)).astype(np.float32))
    run = _py("impls.bandana.prepare", "--offsets", files["o"], "--indices", files["i"], "--vectors", files["v"],
              "--layout", "kmeans", "--layout", "kmeans-two-level", "--layout", "random", "--seed", str(2**32 - 1),
              "--out", str(tmp_path / "out"), "--json")
    assert run.returncode == 0, run.stderr
    assert set(json.loads(run.stdout)["layouts"]) == {"kmeans", "kmeans-two-level", "random"}


def _dlrm_file(path: Path, table_ids) -> Path:
    """An FBGEMM dlrm_datasets file of two tables: table 0 a few small ids, table 1 ``table_ids``
    in bags of 2 (its length must be even)."""
    torch = pytest.importorskip("torch")
    ids = torch.as_tensor(np.asarray(table_ids, dtype=np.int64))
    batch = ids.numel() // 2
    lengths = torch.stack([torch.ones(batch, dtype=torch.int64), torch.full((batch,), 2, dtype=torch.int64)])
    offsets = torch.zeros(2 * batch + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths.reshape(-1), 0)
    indices = torch.cat([torch.arange(batch, dtype=torch.int64) % 7, ids])
    buffer = io.BytesIO()
    torch.save((indices, offsets, lengths), buffer)
    path.write_bytes(buffer.getvalue())
    return path


def test_hashed_dlrm_ids_get_the_renumber_hint_and_signed_hashes_renumber(tmp_path, capsys):
    from impls.bandana import prepare

    rng = np.random.default_rng(0)
    hashed = rng.integers(-2**62, 2**62, 600)
    sparse = _dlrm_file(tmp_path / "sparse.pt", np.abs(hashed) % 2**40)
    assert prepare.main(["--dlrm", str(sparse), "--table", "1", "--layout", "identity",
                         "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "only 600 are distinct" in err and "--renumber if the ids are hashed" in err
    assert "--num-vectors" not in err                            # not a flag of --dlrm
    signed = _dlrm_file(tmp_path / "signed.pt", hashed)
    assert prepare.main(["--dlrm", str(signed), "--table", "1", "--renumber", "--layout", "identity",
                         "--out", str(tmp_path / "b"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["num_vectors"] == 600
    gz = tmp_path / "signed.pt.gz"
    import gzip
    gz.write_bytes(gzip.compress(signed.read_bytes()))
    assert prepare.main(["--dlrm", str(gz), "--table", "1", "--renumber", "--layout", "identity",
                         "--out", str(tmp_path / "c")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "b" / "trace.npy"), np.load(tmp_path / "c" / "trace.npy"))


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_rerun_that_fails_midway_leaves_the_previous_outputs_as_they_were(tmp_path, monkeypatch, capsys):
    from impls.bandana import prepare
    from impls.bandana.experiments import simulation

    rng = np.random.default_rng(2)
    files = _save_all(tmp_path, o=np.arange(201, dtype=np.int64) * 4, i=rng.integers(0, 300, 800),
                      i2=rng.integers(0, 300, 800))
    out = tmp_path / "out"
    assert prepare.main(["--offsets", files["o"], "--indices", files["i"], "--layout", "identity",
                         "--layout", "shp", "--out", str(out)]) == 0
    before = _tree(out)
    real = simulation.build_layout

    def fail_at_shp(kind, *args, **kwargs):
        if kind == "shp":
            raise KeyboardInterrupt
        return real(kind, *args, **kwargs)

    monkeypatch.setattr(simulation, "build_layout", fail_at_shp)
    assert prepare.main(["--offsets", files["o"], "--indices", files["i2"], "--layout", "identity",
                         "--layout", "shp", "--out", str(out)]) == 130
    assert _tree(out) == before          # not the new trace beside the old layouts: all as it was
    capsys.readouterr()


def test_a_rerun_in_a_moved_folder_removes_the_layouts_its_summary_lists(tmp_path, capsys):
    from impls.bandana import prepare

    rng = np.random.default_rng(3)
    files = _save_all(tmp_path, o=np.arange(201, dtype=np.int64) * 4, i=rng.integers(0, 300, 800))
    assert prepare.main(["--offsets", files["o"], "--indices", files["i"], "--layout", "identity",
                         "--layout", "shp", "--out", str(tmp_path / "first")]) == 0
    (tmp_path / "first").rename(tmp_path / "moved")
    capsys.readouterr()
    assert prepare.main(["--offsets", files["o"], "--indices", files["i"], "--layout", "identity",
                         "--out", str(tmp_path / "moved"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] == [str(tmp_path / "moved" / "layout-shp.npy")]
    assert not (tmp_path / "moved" / "layout-shp.npy").exists()


def test_a_text_file_given_as_an_npy_is_named_without_numpys_pickle_advice(tmp_path, capsys):
    from impls.bandana import prepare

    (tmp_path / "o.npy").write_text("0 2 4\n")
    files = _save_all(tmp_path, i=np.arange(4))
    assert prepare.main(["--offsets", str(tmp_path / "o.npy"), "--indices", files["i"], "--layout", "identity",
                         "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "not an .npy array: a pickle, or a text file" in err and "allow_pickle" not in err


def test_rows_that_do_not_divide_a_block_are_reported_as_slack(tmp_path, capsys):
    from impls.bandana import prepare

    rng = np.random.default_rng(4)
    files = _save_all(tmp_path, o=np.arange(201, dtype=np.int64) * 4, i=rng.integers(0, 300, 800),
                      v=rng.normal(size=(300, 100)).astype(np.float32))       # 400 B rows
    assert prepare.main(["--offsets", files["o"], "--indices", files["i"], "--vectors", files["v"],
                         "--layout", "identity", "--out", str(tmp_path / "out")]) == 0
    assert "10 vectors per block (96 B of each block unused, and read)" in capsys.readouterr().out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["vectors_per_block"], summary["slack_bytes_per_block"]) == (10, 96)


def test_two_level_kmeans_defaults_fit_a_small_table_and_more_groups_than_blocks_are_warned(tmp_path):
    """96 vectors in 12 separated clusters, 8 a block: 64 x 16 groups (the old fixed default)
    packed unrelated neighbours together, near a random layout's fanout; the default now
    makes no more groups than blocks and does as well as one-level K-means."""
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=20.0, size=(12, 128))
    members = rng.permutation(96).reshape(12, 8)
    vectors = np.empty((96, 128), np.float32)
    for c, ids in enumerate(members):
        vectors[ids] = centres[c] + rng.normal(size=(8, 128))
    indices = np.concatenate([rng.choice(members[rng.integers(12)], 4, replace=False) for _ in range(2000)])
    files = _save_all(tmp_path, o=np.arange(2001, dtype=np.int64) * 4, i=indices.astype(np.int64), v=vectors)
    common = ["impls.bandana.prepare", "--offsets", files["o"], "--indices", files["i"], "--vectors", files["v"],
              "--vector-bytes", "512", "--layout", "kmeans-two-level", "--layout", "kmeans", "--layout", "random", "--json"]
    made = _py(*common, "--out", str(tmp_path / "default"))
    assert made.returncode == 0 and "groups for 12 blocks" not in made.stderr, made.stderr
    fanout = {k: v["fanout_test"] for k, v in json.loads(made.stdout)["layouts"].items()}
    assert fanout["kmeans-two-level"] <= fanout["kmeans"] + 0.05 < fanout["random"], fanout
    forced = _py(*common, "--kmeans-clusters", "64", "--subclusters", "16", "--out", str(tmp_path / "forced"))
    assert forced.returncode == 0 and "make up to 1024 groups for 12 blocks" in forced.stderr, forced.stderr
    worse = json.loads(forced.stdout)["layouts"]["kmeans-two-level"]["fanout_test"]
    assert worse > fanout["kmeans-two-level"] + 0.2, (worse, fanout)
    bad = _py(*common, "--subclusters", "0", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "--subclusters" in bad.stderr


def test_the_summary_records_the_layouts_seed(tmp_path):
    made = _py("impls.bandana.prepare", "--dataset", "bandana-user", *SMOKE, "--layout", "random", "--seed", "7",
               "--out", str(tmp_path / "o"), "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["seed"] == 7


def test_shp_on_one_id_queries_says_it_is_the_frequency_order(tmp_path, capsys, monkeypatch):
    """One id per query (Criteo one-hot): SHP has no co-access to partition and its layout is
    the training-frequency order; prepare and headline say so, and say nothing when it partitions."""
    from impls.bandana import headline, prepare

    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    monkeypatch.setenv("DLSYSBENCH_GRID_RESULTS", str(tmp_path / "grid"))
    rng = np.random.default_rng(0)
    ids = rng.zipf(1.3, size=4000) % 2000
    np.save(tmp_path / "o.npy", np.arange(4001, dtype=np.int64))
    np.save(tmp_path / "i.npy", ids)
    args = ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--num-vectors", "2000"]
    assert prepare.main([*args, "--layout", "shp", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    note = summary["layouts"]["shp"]["note"]
    assert note.startswith("shp partitioned nothing: no training query reads two or more distinct ids")
    assert "the shp layout is the training-frequency order" in note
    assert f"    note: {note}" in out
    train = np.load(tmp_path / "out" / "train_indices.npy")
    counts = np.bincount(train, minlength=2000)
    layout = np.load(tmp_path / "out" / "layout-shp.npy")
    seen = np.count_nonzero(counts)
    assert np.all(np.diff(counts[layout[:seen]]) <= 0) and np.all(counts[layout[seen:]] == 0)
    source = {"offsets": np.arange(4001, dtype=np.int64), "indices": ids, "vectors": None, "num_vectors": 2000,
              "source": "test"}
    assert note in headline.measure(source, "smoke", progress=False)["notes"]
    pairs = {**source, "offsets": np.arange(0, 4001, 2, dtype=np.int64)}      # two ids a query: partitioned
    assert not any("partitioned nothing" in n for n in headline.measure(pairs, "smoke", progress=False)["notes"])
    np.save(tmp_path / "o.npy", pairs["offsets"])
    assert prepare.main([*args, "--layout", "shp", "--out", str(tmp_path / "out2")]) == 0
    assert "note" not in json.loads((tmp_path / "out2" / "summary.json").read_text())["layouts"]["shp"]
    assert "partitioned nothing" not in capsys.readouterr().out


def test_empty_test_queries_are_counted_and_the_fanout_given_without_them(tmp_path, capsys):
    """A DLRM trace's empty bags (no lookup) count 0 blocks in the test fanout; the summary and
    the printout say how many there are and the fanout over the other queries."""
    from impls.bandana.prepare import main

    sizes = np.array([3, 0, 2, 0, 0, 4, 1, 0, 3, 2, 0, 5])       # the test half: 5 queries, 2 empty
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    indices = (np.arange(offsets[-1]) * 7 % 64).astype(np.int64)
    np.save(tmp_path / "o.npy", offsets)
    np.save(tmp_path / "i.npy", indices)
    assert main(["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--layout", "identity",
                 "--train-fraction", "0.5", "--vector-bytes", "512", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (_, _), (test_o, test_i) = traces.split_in_time(offsets, indices, 0.5)
    per = [np.unique(test_i[a:b] // 8).size for a, b in zip(test_o[:-1], test_o[1:])]   # 8 vectors a block
    assert summary["empty_test_queries"] == sum(p == 0 for p in per) == 2
    row = summary["layouts"]["identity"]
    assert row["fanout_test"] == pytest.approx(np.mean(per))
    assert row["fanout_test_nonempty"] == pytest.approx(np.mean([p for p in per if p]))
    assert (f"test fanout {np.mean(per):.2f} blocks/query ({np.mean([p for p in per if p]):.2f} over the queries "
            "with a lookup; 2 empty ones count 0)") in printed


@pytest.mark.parametrize("shape, scale", [((300, 2), 10000), ((300, 2), 1), ((), 1)])
def test_indices_of_the_wrong_shape_are_told_so_first_not_sent_to_renumber(tmp_path, capsys, shape, scale):
    """A (batch, bag) array of sparse ids got the sparse-id refusal, whose --renumber then failed
    on the shape: the shape is checked first, the only message, with how to flatten the bags."""
    from impls.bandana import prepare

    indices = (np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) + 5000) * scale
    np.save(tmp_path / "i.npy", indices)
    np.save(tmp_path / "o.npy", np.arange(301, dtype=np.int64) * 2)
    code = prepare.main(["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"),
                         "--layout", "identity", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "warning" not in err, err
    assert f"indices must be 1-D, got shape {shape}" in err and "--renumber" not in err
    if len(shape) == 2:
        assert "flatten them (indices.reshape(-1)) and pass offsets 0, 2, 4, ... (np.arange(300 + 1) * 2)" in err
