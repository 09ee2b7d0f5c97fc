"""Traces written to .npy chunk by chunk and simulated from memory maps chunk by chunk
equal the in-memory generator and simulator exactly."""
from __future__ import annotations

import numpy as np
import pytest

from impls.bandana.sim import cache
from impls.bandana.experiments import simulation as experiments
from impls.bandana.data import traces
from impls.harness import grid

PARAMS = dict(num_vectors=5_000, num_lookups=60_000, noise=1.25, communities_per_query=3.0,
              mean_query_size=20.0)


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(traces, "_CHUNK_LOOKUPS", 4096)  # many chunks, ragged ends


def test_written_trace_equals_generated(tmp_path, small_chunks):
    expected = traces.generate_trace(11, **PARAMS)
    written = traces.write_trace(tmp_path / "t", 11, **PARAMS)
    assert sorted(written) == sorted(expected)
    for name, array in expected.items():
        assert isinstance(written[name], np.memmap)
        assert written[name].dtype == array.dtype and np.array_equal(written[name], array), name
    assert not list(tmp_path.glob(".*tmp"))  # the temporary directory was renamed


@pytest.mark.parametrize("policy", cache.POLICIES)
def test_streamed_simulation_equals_in_memory(tmp_path, policy):
    data = traces.write_trace(tmp_path / "t", 4, with_vectors=False, **PARAMS)
    ids = np.array(data["indices"])
    layout = np.random.default_rng(2).permutation(PARAMS["num_vectors"])
    args = (layout, 400, policy, 1600)
    whole = cache.simulate(ids, *args)
    path = tmp_path / "t" / "indices.npy"
    for chunk in (997, 4096, 1 << 20):
        assert cache.simulate_npy(path, *args, chunk=chunk) == whole
    prefix = 25_001
    assert cache.simulate_npy(path, *args, chunk=1000, lookups=prefix) == cache.simulate(ids[:prefix], *args)
    assert whole.lookups == PARAMS["num_lookups"] and whole.misses > 0


def test_streamed_bad_id_names_its_place_in_the_whole_trace(tmp_path):
    ids = np.arange(10_000) % 100
    ids[7_123] = 100
    np.save(tmp_path / "bad.npy", ids)
    with pytest.raises(cache.CacheConfigError, match=r"trace\[7123\]"):
        cache.simulate_npy(tmp_path / "bad.npy", np.arange(100), 32, "prefetch", chunk=1000)


def test_grid_point_streams_a_shared_trace(tmp_path):
    data = traces.generate_trace(4, with_vectors=False, **PARAMS)
    layout = np.arange(PARAMS["num_vectors"])
    ref, inline = grid.share(data["indices"]), data["indices"]
    for policy in cache.POLICIES:
        point = (layout, PARAMS["num_vectors"], 0.05, policy, 4.0)
        assert experiments.simulate_point(ref, *point) == experiments.simulate_point(inline, *point)


def test_streamed_table_equals_the_registry_table():
    """[bandana_sim.full] streamed_traces: the same table, read from .npy memory maps."""
    loaded = experiments.load_table("bandana-post", 0.5, "smoke")
    streamed = experiments.load_table("bandana-post", 0.5, "smoke", streamed=True)
    base = streamed["test_ids"]
    while base is not None and not isinstance(base, np.memmap):
        base = base.base
    assert base is not None, "the streamed table's test ids are not a view of a memory map"
    for key in ("num_vectors", "synthetic", "name"):
        assert streamed[key] == loaded[key]
    for key in ("test_ids", "vectors"):
        assert np.array_equal(streamed[key], loaded[key])
    for part in ("train", "test"):
        for a, b in zip(streamed[part], loaded[part]):
            assert np.array_equal(a, b)
    again = experiments.load_table("bandana-post", 0.5, "smoke", streamed=True)  # reads the files
    assert np.array_equal(again["test_ids"], loaded["test_ids"])


def test_the_streamed_traces_are_keyed_by_the_generators_code_too(monkeypatch, tmp_path):
    """The full profile streams its traces to .npy files under their own recipe key: an edited
    generator must not serve them from the old code's folder either."""
    from impls.bandana.experiments import simulation
    from impls.harness import registry

    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path))
    folders = []
    monkeypatch.setattr(simulation.traces, "write_trace", lambda directory, seed, **params: folders.append(directory))
    for code in ("aaaa", "bbbb"):
        monkeypatch.setattr(registry, "generator_code", lambda manifest, code=code: code)
        simulation._streamed_dataset("bandana-user", "smoke")
    assert len(folders) == 2 and folders[0] != folders[1] and folders[0].parent == folders[1].parent


def test_a_failed_trace_write_leaves_nothing_and_names_the_folder(tmp_path, monkeypatch):
    # at full size a trace is GBs: a write that fails (a full disk) must not leave its
    # temporary folder behind for every retry to add another, nor a bare "[Errno 28]"
    import errno

    def full(path, *args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(traces, "_write_rows", full)
    with pytest.raises(OSError) as err:
        traces.write_trace(tmp_path / "t", 11, **PARAMS)
    assert err.value.errno == errno.ENOSPC
    assert str(tmp_path / "t") in str(err.value) and "GiB" in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_a_killed_writers_temporary_folder_is_removed_by_the_next(tmp_path):
    dead = 4_194_305                          # above the largest pid_max Linux allows (2**22)
    left = tmp_path / f".t.pid{dead}.tmp"
    left.mkdir()
    (left / "indices.npy").write_bytes(b"partial")
    other = tmp_path / ".other.pid1.tmp"      # another trace's: kept
    other.mkdir()
    import os

    live = tmp_path / f".t.pid{os.getppid()}.tmp"    # this trace's, but its writer is alive: kept
    live.mkdir()
    traces.write_trace(tmp_path / "t", 11, with_vectors=False, **PARAMS)
    assert not left.exists() and other.exists() and live.exists() and (tmp_path / "t" / "indices.npy").is_file()


@pytest.mark.parametrize("damage", ["truncate", "remove_vectors", "shorten_offsets", "offsets_2d"])
def test_a_damaged_streamed_trace_is_written_again_not_read(tmp_path, monkeypatch, capsys, damage):
    """The streamed cache folder of a dataset: one whose files are missing, shorter than their
    headers say, or of disagreeing lengths is refused by read_trace and rebuilt with a warning."""
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path))
    first = {k: np.array(v) for k, v in experiments._streamed_dataset("bandana-user", "smoke").items()}
    (folder,) = (tmp_path / "bandana-user").glob("smoke-*-npy")
    if damage == "truncate":
        path = folder / "indices.npy"
        path.write_bytes(path.read_bytes()[:-800])
    elif damage == "remove_vectors":
        (folder / "vectors.npy").unlink()
    elif damage == "shorten_offsets":
        np.save(folder / "offsets.npy", first["offsets"][:-1])
    else:
        np.save(folder / "offsets.npy", np.stack([first["offsets"]] * 2))
    with pytest.raises(ValueError, match=f"trace {folder}"):
        traces.read_trace(folder, with_vectors=True)
    again = experiments._streamed_dataset("bandana-user", "smoke")
    assert "writing it again" in capsys.readouterr().err
    assert sorted(again) == sorted(first)
    for name, array in first.items():
        np.testing.assert_array_equal(again[name], array)
