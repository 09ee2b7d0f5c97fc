"""Edges of the Bandana command lines and the O_DIRECT probe: a ready NVM target on a
read-only filesystem, a trace and a layout of two prepare runs (refused when the runs split
other data, one pair when one command wrote both folders), the geometry checked before the
capacity, the setting named when the store's folder is not writable, and prepare's two-level
K-means flags without that layout."""
from __future__ import annotations

import errno
import importlib.util
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from impls.bandana import cache as cache_cli
from impls.bandana import prepare
from impls.bandana import replay as replay_cli
from impls.harness import capabilities, nvm_file


def _prepare(tmp_path: Path, name: str, indices, vectors=None) -> Path:
    """A prepare run over ``indices`` in queries of 2 (identity layout); returns its --out."""
    indices = np.asarray(indices, dtype=np.int64)
    np.save(tmp_path / f"{name}-o.npy", np.arange(0, indices.size + 1, 2, dtype=np.int64))
    np.save(tmp_path / f"{name}-i.npy", indices)
    argv = ["--offsets", str(tmp_path / f"{name}-o.npy"), "--indices", str(tmp_path / f"{name}-i.npy"),
            "--layout", "identity", "--out", str(tmp_path / name)]
    if vectors is not None:
        np.save(tmp_path / f"{name}-v.npy", vectors)
        argv += ["--vectors", str(tmp_path / f"{name}-v.npy")]
    assert prepare.main(argv) == 0
    return tmp_path / name


@pytest.fixture
def on_disk(tmp_path):
    if capabilities.filesystem_type(tmp_path) in capabilities.MEMORY_FILESYSTEMS:
        pytest.skip("pytest's tmp dir is in memory here")
    return tmp_path


def _refuse_creation(monkeypatch):
    """``os.open`` fails with EROFS for any open that would create or write a file."""
    real_open = os.open

    def read_only_open(path, flags, *args, **kwargs):
        if flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only_open)


def test_a_ready_target_on_a_read_only_filesystem_passes_the_o_direct_probe(on_disk, monkeypatch):
    target = on_disk / "nvm.bin"
    nvm_file.write_suite_file(target, 2 * nvm_file.BLOCK)
    _refuse_creation(monkeypatch)
    ready = capabilities.check_o_direct(target)
    assert ready.available, ready.reason
    assert not [p for p in on_disk.iterdir() if p.name != "nvm.bin"]     # nothing written beside it
    missing = capabilities.check_o_direct(on_disk / "new.bin")          # still to be written: refused
    assert not missing.available
    assert "read-only filesystem" in missing.reason and "point DLSYSBENCH_NVM_PATH at a disk" in missing.reason


def test_a_trace_and_a_layout_of_two_prepare_runs_are_refused(tmp_path, capsys):
    a = _prepare(tmp_path, "a", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] * 2)
    b = _prepare(tmp_path, "b", [9, 8, 7, 6, 5, 4, 3, 2, 1, 0] * 2)
    c = _prepare(tmp_path, "c", list(range(20)) * 2)                     # 20 vectors: a's ids fit
    capsys.readouterr()
    base = ["--capacity", "32", "--policy", "prefetch", "--json"]
    assert cache_cli.main(["--trace", str(a / "trace.npy"), "--layout", str(a / "layout-identity.npy"), *base]) == 0
    assert capsys.readouterr().err.splitlines() == [     # one run: no warning but that 32 slots hold all 10
        "warning: --capacity 32 holds the whole table (10 vectors): nothing is ever evicted, so only each "
        "vector's first read can miss"]
    assert cache_cli.main(["--trace", str(a / "trace.npy"), "--layout", str(b / "layout-identity.npy"), *base]) == 2
    err = capsys.readouterr().err
    assert "come from two prepare runs" in err and "--trace" in err and len(err.strip().splitlines()) == 1, err
    assert cache_cli.main(["--trace", str(a / "trace.npy"), "--layout", str(c / "layout-identity.npy"), *base]) == 2
    err = capsys.readouterr().err
    assert "over 10 vectors but --layout" in err and "orders 20" in err, err
    mine = tmp_path / "mine"                                              # a layout of the user's own
    mine.mkdir()
    np.save(mine / "p.npy", np.arange(10)[::-1].copy())
    assert cache_cli.main(["--trace", str(a / "trace.npy"), "--layout", str(mine / "p.npy"), *base]) == 0
    np.save(mine / "p20.npy", np.arange(20))
    assert cache_cli.main(["--trace", str(a / "trace.npy"), "--layout", str(mine / "p20.npy"), *base]) == 2
    assert "over 10 vectors" in capsys.readouterr().err


def test_two_folders_of_one_prepare_command_are_one_pair(tmp_path, capsys):
    """The same command run twice into two --out folders writes the same data: a trace of one
    and a layout of the other simulate as the pair of one folder does. The same inputs split
    at another --train-fraction are still refused, and so is a folder whose trace was redone."""
    np.save(tmp_path / "o.npy", np.arange(0, 161, 4, dtype=np.int64))
    np.save(tmp_path / "i.npy", np.random.default_rng(1).permutation(np.arange(160) % 64))
    inputs = ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"),
              "--layout", "identity", "--layout", "shp"]
    for name, more in (("a", []), ("b", []), ("c", ["--train-fraction", "0.7"])):
        assert prepare.main([*inputs, *more, "--out", str(tmp_path / name)]) == 0
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    capsys.readouterr()
    base = ["--capacity", "32", "--policy", "prefetch", "--json"]
    assert cache_cli.main(["--trace", str(a / "trace.npy"), "--layout", str(a / "layout-shp.npy"), *base]) == 0
    same_folder = json.loads(capsys.readouterr().out)
    assert cache_cli.main(["--trace", str(a / "trace.npy"), "--layout", str(b / "layout-shp.npy"), *base]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out) == same_folder
    assert cache_cli.main(["--trace", str(a / "trace.npy"), "--layout", str(c / "layout-shp.npy"), *base]) == 2
    err = capsys.readouterr().err
    assert "train_fraction 0.5" in err and "come from two prepare runs" in err and len(err.strip().splitlines()) == 1
    np.save(b / "trace.npy", np.load(a / "trace.npy")[::-1].copy())     # b's trace redone from other data
    assert cache_cli.main(["--trace", str(a / "trace.npy"), "--layout", str(b / "layout-shp.npy"), *base]) == 2
    err = capsys.readouterr().err
    assert f"{a / 'trace.npy'} differs from {b / 'trace.npy'}" in err and "come from two prepare runs" in err, err


def test_the_replay_refuses_a_trace_and_a_layout_of_two_prepare_runs(tmp_path, capsys):
    a = _prepare(tmp_path, "a", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] * 2)
    b = _prepare(tmp_path, "b", [9, 8, 7, 6, 5, 4, 3, 2, 1, 0] * 2)
    capsys.readouterr()
    assert replay_cli.main(["--trace", str(a / "trace.npy"), "--layout", str(b / "layout-identity.npy"),
                            "--capacity", "32", "--policy", "prefetch", "--no-fio",
                            "--path", str(tmp_path / "s.store")]) == 2
    assert "come from two prepare runs" in capsys.readouterr().err
    assert not (tmp_path / "s.store").exists()


def test_the_geometry_a_layout_was_built_for_is_checked_before_the_capacity(tmp_path, capsys):
    """400-byte rows pack 10 a 4 KB block: --capacity 10 is valid for that layout, so the
    error is the geometry left at 128 bytes, not a capacity below 32 vectors."""
    vectors = np.random.default_rng(0).random((10, 100), dtype=np.float32)
    a = _prepare(tmp_path, "a", list(range(10)) * 2, vectors)
    assert json.loads((a / "summary.json").read_text())["vector_bytes"] == 400
    capsys.readouterr()
    base = ["--trace", str(a / "trace.npy"), "--layout", str(a / "layout-identity.npy"), "--capacity", "10",
            "--policy", "prefetch"]
    assert cache_cli.main(base) == 2
    err = capsys.readouterr().err
    assert "--vector-bytes, expected 400" in err and "--capacity" not in err, err
    assert replay_cli.main([*base, "--no-fio", "--path", str(tmp_path / "s.store")]) == 2
    err = capsys.readouterr().err
    assert "--vector-bytes, expected 400" in err and "--capacity" not in err, err
    assert cache_cli.main([*base, "--vector-bytes", "400", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["capacity"] == 10


def test_a_store_folder_that_is_not_writable_names_the_setting_that_chose_it(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "nvm"
    folder.mkdir()
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(folder / "target.bin"))
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == folder else real_access(p, mode, **kw))
    np.save(tmp_path / "t.npy", np.arange(64))
    np.save(tmp_path / "p.npy", np.arange(64))
    argv = ["--trace", str(tmp_path / "t.npy"), "--layout", str(tmp_path / "p.npy"), "--capacity", "32",
            "--policy", "prefetch", "--vector-bytes", "128", "--block-bytes", "4096", "--no-fio"]
    assert replay_cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "is not writable, DLSYSBENCH_NVM_PATH (or --path)" in err, err
    assert ", --path," not in err
    assert not list(folder.iterdir())


@pytest.mark.parametrize("flag", ["--kmeans-clusters", "--subclusters"])
def test_two_level_kmeans_flags_without_that_layout_are_refused(tmp_path, capsys, flag):
    np.save(tmp_path / "o.npy", np.arange(0, 21, 2, dtype=np.int64))
    np.save(tmp_path / "i.npy", np.arange(20, dtype=np.int64) % 10)
    argv = ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"),
            "--layout", "identity", flag, "4", "--out", str(tmp_path / "out")]
    assert prepare.main(argv) == 2
    err = capsys.readouterr().err
    assert flag in err and "kmeans-two-level" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_the_commands_prepare_names_are_command_lines():
    named = set(re.findall(r"``(?:python -m )?(impls\.bandana\.[\w.]+)``", prepare.__doc__))
    assert named
    for module in named:
        source = Path(importlib.util.find_spec(module).origin).read_text()
        assert 'if __name__ == "__main__"' in source, f"{module} is named as a command but has no __main__"


@pytest.mark.parametrize("dtype", [np.uint8, np.uint64, np.int64])
def test_decreasing_offsets_of_any_integer_type_are_refused_before_the_store(tmp_path, capsys, dtype):
    """An unsigned array's differences wrap around: the flag's check let them through and the
    engine refused them after the store was written, naming neither flag nor file."""
    np.save(tmp_path / "t.npy", np.arange(64) % 8)
    np.save(tmp_path / "p.npy", np.arange(8))
    np.save(tmp_path / "o.npy", np.array([0, 40, 20, 64], dtype=dtype))
    argv = ["--trace", str(tmp_path / "t.npy"), "--layout", str(tmp_path / "p.npy"), "--capacity", "32",
            "--policy", "none", "--vector-bytes", "128", "--block-bytes", "4096", "--no-fio",
            "--offsets", str(tmp_path / "o.npy"), "--path", str(tmp_path / "s.store")]
    assert replay_cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "are not CSR query offsets" in err and f"--offsets {tmp_path / 'o.npy'}" in err, err
    assert not (tmp_path / "s.store").exists()


def test_a_timedelta_array_is_not_taken_for_ids(tmp_path, capsys):
    """numpy counts timedelta64 as an integer type."""
    np.save(tmp_path / "t.npy", (np.arange(64) % 8).astype("m8[s]"))
    np.save(tmp_path / "p.npy", np.arange(8))
    assert cache_cli.main(["--trace", str(tmp_path / "t.npy"), "--layout", str(tmp_path / "p.npy"),
                           "--capacity", "32", "--policy", "none", "--vector-bytes", "128"]) == 2
    assert "expected a 1-D integer array, got timedelta64[s]" in capsys.readouterr().err


def _claiming(path: Path, count: int, version: tuple[int, int] = (1, 0)) -> Path:
    """An int64 ``.npy`` of 10 values whose header claims ``count`` of them."""
    with open(path, "wb") as handle:
        write = {(1, 0): np.lib.format.write_array_header_1_0, (2, 0): np.lib.format.write_array_header_2_0}
        write[version](handle, {"descr": "<i8", "fortran_order": False, "shape": (count,)})
        handle.write(np.arange(10, dtype=np.int64).tobytes())
    return path


@pytest.mark.parametrize("count", [10**12, 11])
@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
def test_a_header_claiming_more_than_the_file_holds_is_named_so(tmp_path, capsys, count, version):
    """Not "not enough memory" for 10^12 claimed ids: the file is what is wrong."""
    lying = _claiming(tmp_path / "t.npy", count, version)
    np.save(tmp_path / "p.npy", np.arange(10))
    claim = f"its header claims shape ({count},) of int64 ({8 * count:,} bytes) but the file holds 80 bytes"
    assert cache_cli.main(["--trace", str(lying), "--layout", str(tmp_path / "p.npy"), "--capacity", "32",
                           "--policy", "none", "--vector-bytes", "128"]) == 2
    err = capsys.readouterr().err
    assert f"trace file {lying}: cannot read an .npy array ({claim}" in err, err
    assert prepare.main(["--offsets", str(tmp_path / "p.npy"), "--indices", str(lying), "--layout", "identity",
                         "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"--indices {lying}: not a readable .npy file ({claim}" in err, err
    assert cache_cli.main(["--trace", str(_claiming(tmp_path / "ok.npy", 10, version)), "--layout",
                           str(tmp_path / "p.npy"), "--capacity", "32", "--policy", "none",
                           "--vector-bytes", "128"]) == 0          # a header that tells the truth reads


def test_a_cache_that_holds_the_whole_table_is_said_to(tmp_path, capsys):
    np.save(tmp_path / "t.npy", np.arange(64) % 8)
    np.save(tmp_path / "p.npy", np.arange(8))
    base = ["--trace", str(tmp_path / "t.npy"), "--layout", str(tmp_path / "p.npy"), "--policy", "none",
            "--vector-bytes", "128"]
    assert cache_cli.main([*base, "--capacity", "32"]) == 0
    assert "holds the whole table (8 vectors)" in capsys.readouterr().err
    assert replay_cli.main([*base, "--capacity", "32", "--no-fio", "--path", str(tmp_path / "s.store")]) == 0
    assert "holds the whole table (8 vectors)" in capsys.readouterr().err


def test_a_one_query_trace_is_not_told_to_move_the_split(tmp_path, capsys):
    np.save(tmp_path / "o.npy", np.array([0, 6]))
    np.save(tmp_path / "i.npy", np.arange(6))
    argv = ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--layout", "shp",
            "--out", str(tmp_path / "out")]
    assert prepare.main(argv) == 2
    err = capsys.readouterr().err
    assert "(a longer trace)" in err and "--train-fraction" not in err.split("hold no lookup")[1], err


@pytest.mark.parametrize("command", ["prepare", "headline"])
def test_a_trace_of_only_empty_queries_is_said_to_have_no_lookup(tmp_path, capsys, monkeypatch, command):
    """Every query empty (an FBGEMM table whose bags are all empty): the split is not the
    problem, so no --train-fraction is suggested."""
    from impls.bandana import headline

    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    monkeypatch.setenv("DLSYSBENCH_GRID_RESULTS", str(tmp_path / "grid"))
    np.save(tmp_path / "o.npy", np.zeros(101, dtype=np.int64))
    np.save(tmp_path / "i.npy", np.zeros(0, dtype=np.int64))
    argv = ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--num-vectors", "10"]
    if command == "prepare":
        assert prepare.main([*argv, "--layout", "identity", "--out", str(tmp_path / "out")]) == 2
        assert not (tmp_path / "out").exists()
    else:
        assert headline.main([*argv, "--profile", "smoke"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"error: the trace has no lookup at all (every one of its 100 queries is empty), files "
                           f"{tmp_path / 'o.npy'}, {tmp_path / 'i.npy'}, expected a trace of at least one looked-up "
                           "id (no split of it in time, whatever the fraction, can give either half one)")


@pytest.mark.parametrize("block, said", [
    (2048, "got 2048, --block-bytes, expected a multiple of 4096 (the page size"),     # below the multiple: why too
    (6144, "got 6144, --block-bytes, expected a multiple of 4096 (the page size"),
    (0, "--block-bytes"),
])
def test_a_block_size_replay_cannot_use_is_refused_with_the_reason(block, said):
    """prepare and cache take any multiple of 512; replay's O_DIRECT reads need the page size,
    and a block below it is told so, not only a range."""
    import argparse

    args = argparse.Namespace(block_bytes=block, vector_bytes=128, capacity=1000, policy="none", shadow=None)
    with pytest.raises(Exception) as err:
        cache_cli.check_size_flags(args, 4096, " (the page size: O_DIRECT reads into page-aligned buffers)")
    assert said in str(err.value), str(err.value)
