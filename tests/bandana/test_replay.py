"""The replay engine: exact agreement with the simulator, byte-identical serving, the CLI,
and the replay experiment and its figures on a tiny configuration."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from impls.bandana.nvm import block_store as bs
from impls.bandana.sim import cache
from impls.bandana import replay as replay_cli
from impls.bandana.nvm import direct_io, replay
from impls.harness import capabilities, nvm_file


N = 4000




MECHANISMS = [m for m in direct_io.MECHANISMS if m != "libaio" or direct_io.libaio_unavailable_reason() is None]


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("policy", cache.POLICIES)
@pytest.mark.parametrize("queue_depth", [1, 8])
def test_replay_equals_simulator_and_serves_identical_bytes(stored, mechanism, policy, queue_depth):
    store, table, layout, offsets, trace = stored
    capacity, shadow = 300, 900
    result = replay.replay(store, offsets, trace, layout, capacity, policy,
                           shadow if policy == "shadow" else None, queue_depth=queue_depth,
                           mechanism=mechanism, table=table, verify="all")
    sim = cache.simulate(trace, layout, capacity, policy, shadow, 128, 4096)
    for key in ("lookups", "hits", "misses", "blocks_read", "prefetched", "prefetch_used", "bytes_read"):
        assert result[key] == getattr(sim, key), key
    assert result["effective_bandwidth"] == pytest.approx(sim.effective_bandwidth)
    assert result["verified_vectors"] == trace.size
    assert result["blocks_per_second"] > 0 and result["lookups_per_second"] > 0
    assert 0 <= result["p50_query_us"] <= result["p99_query_us"]
    assert result["queries"] == offsets.size - 1 and result["mechanism"] == mechanism


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("vector_bytes", [50, 400])     # bytes, and 8-byte words; slack after each block's vectors
def test_vectors_that_do_not_divide_a_block_replay_as_simulated(store_dir, mechanism, vector_bytes):
    table = bs.random_table(N, vector_bytes, 7)
    layout = np.random.default_rng(4).permutation(N)
    bs.write_store(store_dir / "odd.store", table, layout)
    trace = cache.zipf_trace(N, 4000, 0.9, 6)
    offsets = np.arange(0, trace.size + 1, 4, dtype=np.int64)
    with bs.open_store(store_dir / "odd.store", layout) as store:
        result = replay.replay(store, offsets, trace, layout, 200, "prefetch", None, queue_depth=4,
                               mechanism=mechanism, table=table, verify="all")
    sim = cache.simulate(trace, layout, 200, "prefetch", None, vector_bytes, 4096)
    for key in ("hits", "blocks_read", "prefetched", "prefetch_used", "bytes_read"):
        assert result[key] == getattr(sim, key), key
    assert result["verified_vectors"] == trace.size


def test_warm_then_segments_equal_the_simulator(stored):
    store, table, layout, offsets, trace = stored
    capacity, shadow = 300, 1200
    with replay.ReplaySession(store, layout, capacity, "shadow", shadow, table=table,
                              max_queue_depth=16) as session:
        warm = session.warm(trace[:3000], queue_depth=16)
        assert 0 < warm["blocks_read"] <= capacity
        assert session.dram.resident() == session.state.size()  # DRAM holds exactly the cached vectors
        rest = trace[3000:]
        first = session.run(np.arange(0, 1501, 5), rest[:1500], queue_depth=16, verify="all")
        second = session.run(np.arange(0, 1501, 5), rest[1500:], queue_depth=1, verify=50)
    state = cache.CacheState(layout, capacity, "shadow", shadow)
    state.process(trace[:3000])
    a = state.result()
    state.process(rest[:1500])
    b = state.result()
    state.process(rest[1500:])
    c = state.result()
    assert (first["hits"], first["blocks_read"]) == (b.hits - a.hits, b.blocks_read - a.blocks_read)
    assert (second["hits"], second["blocks_read"]) == (c.hits - b.hits, c.blocks_read - b.blocks_read)
    assert second["verified_vectors"] <= 50


def test_time_budget_stops_after_a_chunk(stored):
    store, table, layout, offsets, trace = stored
    with replay.ReplaySession(store, layout, 300, "prefetch", table=table) as session:
        result = session.run(offsets, trace, queue_depth=4, chunk_lookups=500, max_seconds=0.0)
    assert result["queries"] == 100 and result["lookups"] == 500     # one chunk, whole queries


def test_corrupted_block_is_caught(stored):
    store, table, layout, offsets, trace = stored
    position = int(np.flatnonzero(layout == trace[0])[0])  # the first looked-up vector's slot
    with open(store.path, "r+b") as handle:               # same size, valid header, one vector altered
        handle.seek(store.header.block_offset(position // 32) + (position % 32) * 128 + 5)
        handle.write(b"\xff\xfe\xfd")
    with pytest.raises(replay.ReplayError, match="differ from the table"):
        replay.replay(store, offsets, trace, layout, 300, "prefetch", table=table, verify="all")


def test_bad_input(stored):
    store, table, layout, offsets, trace = stored
    with pytest.raises(bs.StoreError, match="another layout"):
        replay.replay(store, offsets, trace, np.arange(N), 300, "none")
    with pytest.raises(cache.CacheConfigError, match="not a vector id"):
        replay.replay(store, np.array([0, 1]), np.array([N]), layout, 300, "none")
    with pytest.raises(ValueError, match="offsets"):
        replay.replay(store, np.array([0, 5]), trace[:4], layout, 300, "none")
    with pytest.raises(ValueError, match="queue_depth"):
        replay.replay(store, offsets, trace, layout, 300, "none", queue_depth=0)
    with pytest.raises(ValueError, match="I/O mechanism"):
        replay.replay(store, offsets, trace, layout, 300, "none", mechanism="carrier-pigeon")


@pytest.mark.skipif("libaio" not in MECHANISMS, reason="Linux AIO syscalls unavailable here")
def test_warm_up_compiles_the_aio_loop_for_bytes_and_words():
    """A 128-byte vector is copied in 8-byte words, a 100-byte one in bytes: both loops must be
    compiled before any timed read, or the first timed job pays for a compile."""
    import subprocess
    import sys

    code = ("from impls.bandana.nvm import direct_io, direct_io_kernels; direct_io.warm_up('libaio'); "
            "print(sorted({str(sig[5]) for sig in direct_io_kernels._aio_loop.signatures}))")
    # a fresh process: in this one, earlier tests' replays may have compiled either loop already
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "array(uint8, 2d, C)" in out and "array(uint64, 2d, C)" in out


@pytest.mark.skipif("libaio" not in MECHANISMS, reason="Linux AIO syscalls unavailable here")
def test_aio_loop_submits_each_read_in_its_own_call(stored):
    """A batch of iocbs in one io_submit plugs the block queue (fio loses 15-20% of its reads/s
    at queue depth 32 with --iodepth_batch_submit=32), so every read is its own call."""
    store = stored[0]
    buffers = bs.AlignedBuffers(16, store.header.block_bytes)
    try:
        blocks = np.random.default_rng(1).integers(0, store.header.n_blocks, size=200, dtype=np.int64)
        job = direct_io._reads_only(blocks, 8)
        direct_io.run_job("libaio", store.fd, job, 8, buffers)
    finally:
        buffers.close()
    assert job["io_submit_calls"] == 200
    assert np.all(job["done_ns"] >= job["submit_ns"]) and np.all(job["submit_ns"] > 0)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_raw_read_loop_reads_whole_batches_and_fails_past_the_end(stored, mechanism):
    store = stored[0]
    buffers = bs.AlignedBuffers(8, store.header.block_bytes)
    try:
        rng = np.random.default_rng(0)
        got = direct_io.raw_read_rate(mechanism, store.fd, store.header.n_blocks, 4, buffers, 0.0, rng, batch=64)
        assert got["reads"] == 64 and got["blocks_per_second"] > 0
        with pytest.raises(direct_io.DirectIOError):     # blocks past the file: short reads, an error
            direct_io.raw_read_rate(mechanism, store.fd, 10 * store.header.n_blocks, 4, buffers, 0.0, rng,
                                    batch=64)
    finally:
        buffers.close()


def test_cli_prints_the_documented_json_and_cleans_up(store_dir, tmp_path, capsys):
    trace = cache.zipf_trace(2000, 3000, 0.9, 1)
    layout = np.random.default_rng(0).permutation(2000)
    np.save(tmp_path / "t.npy", trace)
    np.save(tmp_path / "l.npy", layout)
    path = store_dir / "cli.store"
    argv = ["--trace", str(tmp_path / "t.npy"), "--layout", str(tmp_path / "l.npy"), "--capacity", "200",
            "--policy", "shadow", "--shadow", "800", "--queue-depth", "4", "--path", str(path),
            "--fio-runtime", "0.2", "--json"]
    assert replay_cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(replay.RESULT_KEYS) <= set(out)
    sim = cache.simulate(trace, layout, 200, "shadow", 800)
    assert out["blocks_read"] == sim.blocks_read and out["hits"] == sim.hits
    assert out["simulator_match"] is True and out["verified_vectors"] == trace.size
    if capabilities.check_fio().available:
        assert out["fio_iops"] > 0
    else:
        assert out["fio_iops"] is None
    assert not path.exists()                                  # the store it built is removed


def _with_empty_queries(ids: np.ndarray, per_query: int, empty_per_query: int) -> np.ndarray:
    """CSR offsets of queries of ``per_query`` ids over ``ids``, each followed by
    ``empty_per_query`` queries of no lookup (DLRM's empty bags)."""
    ends = np.arange(per_query, ids.size + 1, per_query, dtype=np.int64)
    return np.concatenate([[0], np.repeat(ends, 1 + empty_per_query)])


def test_empty_queries_are_counted_and_left_out_of_the_latency_percentiles(stored):
    """60% empty queries made p50_query_us 0 when every query that read something took time."""
    store, table, layout, _, _ = stored
    trace = np.random.default_rng(3).integers(0, N, size=3000)        # uniform: a 32-vector cache misses
    offsets = _with_empty_queries(trace, 5, 2)                          # 600 queries of 5 ids, 1200 empty
    with replay.ReplaySession(store, layout, 32, "none", table=table, max_queue_depth=4) as session:
        result = session.run(offsets, trace, queue_depth=4)
        latencies = session.last_latencies_ns
    assert result["queries"] == 1800 and result["empty_queries"] == 1200
    assert latencies.shape == (600,) and np.all(latencies > 0)
    assert result["p50_query_us"] == pytest.approx(np.percentile(latencies, 50) / 1e3)
    assert result["p99_query_us"] == pytest.approx(np.percentile(latencies, 99) / 1e3)
    assert result["p50_query_us"] > 0
    merged = replay.merge_results([result, result], [latencies, latencies])
    assert merged["empty_queries"] == 2400 and merged["p50_query_us"] == pytest.approx(result["p50_query_us"])


def test_the_cli_says_how_many_queries_look_up_nothing(store_dir, tmp_path, capsys):
    trace = np.random.default_rng(5).integers(0, 2000, size=1000)
    np.save(tmp_path / "t.npy", trace)
    np.save(tmp_path / "o.npy", _with_empty_queries(trace, 4, 3))      # 250 queries of 4 ids, 750 empty
    np.save(tmp_path / "l.npy", np.random.default_rng(0).permutation(2000))
    argv = ["--trace", str(tmp_path / "t.npy"), "--offsets", str(tmp_path / "o.npy"), "--layout",
            str(tmp_path / "l.npy"), "--capacity", "64", "--policy", "none", "--queue-depth", "4",
            "--path", str(store_dir / "e.store"), "--no-fio", "--json"]
    assert replay_cli.main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["queries"] == 1000 and out["empty_queries"] == 750 and out["p50_query_us"] > 0
    assert (f"750 of the 1000 queries in --offsets {tmp_path / 'o.npy'} look up no id (empty_queries): "
            "p50_query_us and p99_query_us are over the other 250") in captured.err
    assert "empty_queries" in captured.err
    np.save(tmp_path / "o.npy", np.arange(0, 1001, 4, dtype=np.int64))   # no empty query: nothing said
    assert replay_cli.main(argv) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["empty_queries"] == 0 and "look up no id" not in captured.err


@pytest.mark.parametrize("missing", ["fio", "engines"])
def test_a_ceiling_fio_could_not_measure_says_why(store_dir, tmp_path, capsys, monkeypatch, missing):
    """Without fio, or at a depth only psync (QD 1) could serve, fio_iops was null in silence."""
    from impls.bandana.nvm import fio

    monkeypatch.setattr(replay, "_FIO_WARNED", set())
    if missing == "fio":
        monkeypatch.setattr(fio, "fio_executable", lambda: None)
    else:
        monkeypatch.setattr(fio, "fio_executable", lambda: "/usr/bin/fio")
        monkeypatch.setattr(fio, "engine_unavailable_reason",
                            lambda engine: None if engine == "psync" else f"no {engine} here")
    np.save(tmp_path / "t.npy", cache.zipf_trace(200, 300, 0.9, 1))
    np.save(tmp_path / "l.npy", np.arange(200))
    argv = ["--trace", str(tmp_path / "t.npy"), "--layout", str(tmp_path / "l.npy"), "--capacity", "64",
            "--policy", "none", "--queue-depth", "4", "--path", str(store_dir / "w.store"), "--json"]
    assert replay_cli.main(argv) == 0
    done = capsys.readouterr()
    why = ("fio is not installed" if missing == "fio"
           else "no libaio here; no io_uring here; psync reads at queue depth 1 only")
    record = json.loads(done.out)
    assert record["fio_iops"] is None and record["fio_no_value"].startswith(why), record
    assert f"warning: fio's ceiling not measured ({why}" in done.err, done.err
    assert ") at queue depth 4 (nor, not said again, at any other depth that fails the same way);" in done.err, done.err
    for depth in (4, 16, 64, 16):      # an experiment asks at every depth and round: said once
        assert replay.fio_iops(store_dir / "x.bin", depth, 0.1, 0.0, 1 << 20) is None
    point, again = replay.fio_iops_why(store_dir / "x.bin", 4, 0.1, 0.0, 1 << 20)   # said once, returned each time
    assert point is None and again.startswith(why), again
    assert "fio's ceiling" not in capsys.readouterr().err


def test_cli_bad_input_exits_2(store_dir, tmp_path, capsys):
    np.save(tmp_path / "t.npy", np.array([0, 1, 2]))
    np.save(tmp_path / "bad.npy", np.array([0, 0, 1]))
    existing = store_dir / "exists.bin"
    existing.write_bytes(b"precious")
    base = ["--trace", str(tmp_path / "t.npy"), "--capacity", "32", "--policy", "none"]
    assert replay_cli.main(base + ["--layout", str(tmp_path / "bad.npy")]) == 2
    assert "not a permutation" in capsys.readouterr().err
    np.save(tmp_path / "l.npy", np.arange(64))
    assert replay_cli.main(base + ["--layout", str(tmp_path / "l.npy"), "--path", str(existing)]) == 2
    assert "exists" in capsys.readouterr().err
    assert existing.read_bytes() == b"precious"
    import mmap
    for block in (1536, 1 << 27):     # not a page multiple; above the 64 MiB bound
        assert replay_cli.main(base + ["--layout", str(tmp_path / "l.npy"), "--block-bytes", str(block)]) == 2
        err = capsys.readouterr().err
        assert f"got {block}, --block-bytes, expected" in err and str(mmap.PAGESIZE) in err, err


def test_a_disk_too_small_for_the_store_is_refused_before_the_table_is_built(store_dir, tmp_path, capsys,
                                                                             monkeypatch):
    """The table (as large in memory as the store on disk) was built first: 27 s and 6 GB before
    write_store's free-space check refused a 5 GB store."""
    trace = np.arange(2000) % 1000
    np.save(tmp_path / "t.npy", trace)
    np.save(tmp_path / "l.npy", np.arange(2000))
    path = store_dir / "full.store"
    real_usage = bs.shutil.disk_usage

    def usage(where):
        got = real_usage(where)
        return got._replace(free=1000) if Path(where) == store_dir else got

    def built(*args, **kwargs):
        raise AssertionError("the table was built before the free space was checked")

    monkeypatch.setattr(bs.shutil, "disk_usage", usage)
    monkeypatch.setattr(bs, "random_table", built)
    argv = ["--trace", str(tmp_path / "t.npy"), "--layout", str(tmp_path / "l.npy"), "--capacity", "64",
            "--policy", "none", "--path", str(path), "--no-fio"]
    assert replay_cli.main(argv) == 2
    needs = bs.store_file_bytes(2000, 128, 4096)
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: not enough free space for {path}: needs {needs} bytes plus {nvm_file.FREE_SPACE_HEADROOM_BYTES} "
        "headroom, 1000 free")
    assert not path.exists()
    monkeypatch.undo()
    for n, vector_bytes in ((2000, 128), (1001, 400), (7, 4096)):     # the size write_store's header gives
        header = bs.write_store(store_dir / "s.store", np.zeros((n, vector_bytes), dtype=np.uint8), np.arange(n))
        assert bs.store_file_bytes(n, vector_bytes) == header.file_bytes == (store_dir / "s.store").stat().st_size
        (store_dir / "s.store").unlink()


def _dead_pid() -> int:
    import subprocess
    import sys
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)


def test_the_sweep_removes_only_the_replays_own_leftovers(tmp_path, capsys):
    """A killed run's store and temporary files go; a user's files in the same folder stay,
    whatever pid tag their names happen to hold."""
    dead = _dead_pid()
    own = [f"bandana-replay-pid{dead}.store", f".bandana-replay-pid{dead}.store.pid{dead}.ab_9x1yz.tmp",
           f".mine.bin.pid{dead}.k2j4h5g6.tmp"]
    theirs = [f".mydata.pid{dead}.tmp", f".notes.pid{dead}.x.tmp", f"mine.bin.pid{dead}.tmp",
              f"bandana-replay-pid{dead}.store.bak", f".mine.bin.pid{dead}.k2j4h5g6.tmp.old"]
    for name in own + theirs:
        (tmp_path / name).write_bytes(b"x")
    removed = replay.sweep_stale_stores(tmp_path, "mine.bin")
    assert sorted(p.name for p in removed) == sorted(own)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(theirs)
    capsys.readouterr()


@pytest.fixture
def shm(tmp_path) -> Path:
    """/dev/shm (tmpfs: skipped where it is not), with a 64-lookup trace and layout in tmp_path."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or capabilities.filesystem_type(shm) not in capabilities.MEMORY_FILESYSTEMS:
        pytest.skip("no tmpfs at /dev/shm")
    np.save(tmp_path / "t.npy", np.arange(64))
    np.save(tmp_path / "l.npy", np.arange(64))
    return shm


def test_a_path_in_memory_is_refused_naming_path_and_touching_nothing(shm, tmp_path, capsys):
    leftover = shm / f".dlsysbench-test.store.pid{_dead_pid()}.abcdefgh.tmp"
    leftover.write_bytes(b"x")
    try:
        argv = ["--trace", str(tmp_path / "t.npy"), "--layout", str(tmp_path / "l.npy"), "--capacity", "32",
                "--policy", "none", "--path", str(shm / "dlsysbench-test.store"), "--no-fio"]
        assert replay_cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "in memory" in err and "point --path at a disk" in err and "DLSYSBENCH_NVM_PATH" not in err, err
        assert leftover.exists()                  # refused before the sweep
    finally:
        leftover.unlink(missing_ok=True)


def test_a_default_store_in_a_cache_in_memory_names_the_cache(shm, tmp_path, monkeypatch, capsys):
    cache_dir = shm / f"dlsysbench-test-cache-{os.getpid()}"
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", "/dev/dlsysbench-no-such-device")   # a device: the store goes to the cache
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(cache_dir))
    try:
        argv = ["--trace", str(tmp_path / "t.npy"), "--layout", str(tmp_path / "l.npy"), "--capacity", "32",
                "--policy", "none", "--no-fio"]
        assert replay_cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "point DLSYSBENCH_CACHE (or --path) at a disk" in err, err
    finally:
        import shutil
        shutil.rmtree(cache_dir, ignore_errors=True)


def test_each_turn_is_compared_with_the_fio_runs_around_it():
    from impls.bandana.experiments.replay import _round_ratios, _spread

    fio_runs = [{"iops": 100.0}, {"iops": 300.0}, {"iops": 100.0}]
    assert _round_ratios([180.0, 100.0], fio_runs) == [0.9, 0.5]
    assert _round_ratios([180.0, 100.0], fio_runs[:1] + [None, fio_runs[2]]) == []   # fio missing
    assert _round_ratios([180.0], fio_runs) == []                                 # turns and runs disagree
    assert _spread([0.9, 0.5, 1.1]) == {"min": 0.5, "median": 0.9, "max": 1.1, "turns": 3}
    assert _spread([]) is None


def test_a_replay_is_compared_with_the_mean_of_the_fio_runs_that_bracket_it():
    """fio before and after the replay, their mean the ceiling: the drive's drift between them
    moves both sides alike (fio at 100 and 200 IO/s around a replay of 150 reads/s is 1.0)."""
    from impls.bandana.experiments.replay import _against_fio

    runs = [{"iops": 100.0}, {"iops": 200.0}]
    assert _against_fio(150.0, runs) == (runs, 150.0, 1.0)
    assert _against_fio(150.0, list(reversed(runs)))[1:] == (150.0, 1.0)
    assert _against_fio(150.0, [runs[0], None]) == ([], None, None)
    assert _against_fio(150.0, []) == ([], None, None)


@pytest.mark.parametrize("streamed", [False, True], ids=["in-memory", "streamed"])
def test_experiment_and_figures_on_a_tiny_configuration(store_dir, monkeypatch, tmp_path, streamed):
    """Also with the trace and the table's values read from the streamed .npy copy (full's
    setting): the same checks hold, and the vectors served match the memory-mapped ones."""
    from impls.bandana.experiments import replay as replay_experiment
    from impls.bandana.figures import replay as replay_figures

    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(store_dir / "nvm-target.bin"))
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    s = replay_experiment.sizes("smoke")
    s.update(streamed_traces=streamed, layouts=["identity"], policies=["shadow"], shadow_factors=[2.0, 3.0], queue_depths=[1, 4], comparison=[["identity", "prefetch"], ["identity", "none"]],
             mechanisms=MECHANISMS[:1], mechanism_queue_depths=[2], point_seconds=0.05, fio_runtime_s=0.05,
             fio_ramp_s=0.0, warmup_lookups=20000, policy_choice_lookups=5000, comparison_rounds=2,
             mechanism_rounds=1)
    held = []
    real_session = replay_experiment.replay.ReplaySession

    def session(*args, table, **kwargs):             # the bytes it checks against: in memory
        held.append(not any(isinstance(a, np.memmap) for a in (table, table.base)))
        return real_session(*args, table=table, **kwargs)

    monkeypatch.setattr(replay_experiment.replay, "ReplaySession", session)
    data = replay_experiment.replay_experiment(s, progress=False)
    assert held and all(held)
    assert [p["queue_depth"] for p in data["sweep"]] == [1, 4]
    assert data["best_policy"]["identity"] in cache.POLICIES
    assert len(data["comparison"]["points"]) == 2 and len(data["mechanisms"]) == 1
    (raw,) = data["raw_loop"]
    assert raw["queue_depth"] == 2 and raw["blocks_per_second"] > 0
    if raw["fio_runs"]:                                        # fio installed: one ratio per turn
        assert len(raw["round_ratios"]) == 1 and len(data["mechanisms"][0]["round_ratios"]) == 1
        turns = data["headline"]["replay_over_fio_interleaved_turns"]
        assert list(turns.values())[0]["turns"] == 1
    assert set(data["headline"]["raw_loop_over_fio_by_queue_depth"]) == {"2"}
    assert data["headline"]["cross_check_all_match"] is True
    assert data["headline"]["useful_bytes_ratio"] > 0
    assert all(p["verified_vectors"] > 0 for p in data["sweep"])
    assert not list(store_dir.glob("*.store"))                # stores are removed
    json.dumps(data)                                          # plain data, JSON-ready
    assert data["shadow"]["identity"] in (2 * data["capacity"], 3 * data["capacity"])
    assert set(data["shadow_choice"]["identity"]) == {"2", "3"}
    labels = [line.get_label() for line in replay_figures.replay_vs_fio(data).axes[0].get_lines()]
    factor = data["shadow"]["identity"] // data["capacity"]
    assert f"identity (shadow set {factor}x cache)" in labels
    replay_figures.cross_check(data)
    assert bool(list((tmp_path / "cache" / s["table"]).glob("smoke-*-npy"))) is streamed


# ---------------------------------------------------------------- DRAM copy sized by the cache

BIG_N, BIG_VB = 20000, 512          # 8 vectors per block


@pytest.fixture(scope="module")
def big_stored(tmp_path_factory):
    """A 20000-vector table of 512-byte vectors in a random layout (an O_DIRECT store)."""
    import os

    from impls.harness import paths

    table = bs.random_table(BIG_N, BIG_VB, 3)
    layout = np.random.default_rng(4).permutation(BIG_N)
    for directory in (tmp_path_factory.mktemp("big"), paths.datasets_dir() / "cache" / f"test-big-{os.getpid()}"):
        directory.mkdir(parents=True, exist_ok=True)
        if capabilities.check_o_direct(directory / "probe").available:
            break
    else:
        pytest.skip("no directory here supports O_DIRECT reads from a drive")
    path = directory / "big.store"
    bs.write_store(path, table, layout)
    with bs.open_store(path, layout) as store:
        yield store, table, layout
    path.unlink()


def _uniform_queries(n_lookups: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Uniform ids over the big table (so a small cache evicts constantly), queries of 1..8."""
    rng = np.random.default_rng(seed)
    trace = rng.integers(0, BIG_N, n_lookups)
    cuts = np.unique(np.concatenate([[0, n_lookups], rng.integers(1, n_lookups, n_lookups // 4)]))
    return cuts.astype(np.int64), trace


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("policy", cache.POLICIES)
@pytest.mark.parametrize("queue_depth", [1, 32])
def test_small_cache_many_evictions_holds_about_capacity_bytes(big_stored, mechanism, policy, queue_depth):
    store, table, layout = big_stored
    capacity, shadow, chunk = 64, 256, 64
    offsets, trace = _uniform_queries(4000, 5)
    result = replay.replay(store, offsets, trace, layout, capacity, policy,
                           shadow if policy == "shadow" else None, queue_depth=queue_depth,
                           mechanism=mechanism, table=table, verify="all", chunk_lookups=chunk)
    sim = cache.simulate(trace, layout, capacity, policy, shadow, BIG_VB, 4096)
    for key in ("lookups", "hits", "misses", "blocks_read", "prefetched", "prefetch_used"):
        assert result[key] == getattr(sim, key), key
    assert sim.misses > trace.size // 2 and sim.prefetched + sim.misses > 10 * capacity   # evicting
    assert result["verified_vectors"] == trace.size
    per_block = 4096 // BIG_VB
    margin = 2 * chunk * (1 if policy == "none" else per_block) + capacity // 4 + 1
    assert capacity * BIG_VB <= result["dram_slots"] * BIG_VB <= (capacity + margin) * BIG_VB
    map_bytes = BIG_N * 8 + 8 * 3 * result["dram_slots"]                  # id → slot map, bookkeeping
    assert result["dram_bytes"] <= (capacity + margin) * BIG_VB + map_bytes
    assert result["dram_bytes"] < BIG_N * BIG_VB / 10                       # not a table-sized copy


def test_randomized_sessions_stay_exact_with_a_small_copy(big_stored):
    store, table, layout = big_stored
    rng = np.random.default_rng(11)
    for round_ in range(6):
        policy = cache.POLICIES[round_ % len(cache.POLICIES)]
        capacity = int(rng.integers(8, 400))
        shadow = int(rng.integers(capacity, 4 * capacity + 8))
        chunk = int(rng.integers(1, 300))
        qd = int(rng.choice([1, 3, 16, 32]))
        mechanism = MECHANISMS[round_ % len(MECHANISMS)]
        warm_ids = rng.integers(0, BIG_N, 2000)
        offsets, trace = _uniform_queries(int(rng.integers(200, 3000)), round_)
        with replay.ReplaySession(store, layout, capacity, policy, shadow if policy == "shadow" else None,
                                  mechanism=mechanism, table=table, chunk_lookups=chunk,
                                  max_queue_depth=32) as session:
            session.warm(warm_ids, queue_depth=qd)
            assert session.dram.resident() == session.state.size()
            half = int(offsets[offsets.size // 2])
            first = session.run(offsets[:offsets.size // 2 + 1], trace[:half], queue_depth=qd)
            second = session.run(offsets[offsets.size // 2:] - half, trace[half:], queue_depth=qd,
                                 chunk_lookups=chunk + 7)
            assert session.dram.slots < BIG_N // 2
        state = cache.CacheState(layout, capacity, policy, shadow if policy == "shadow" else None, BIG_VB)
        state.process(warm_ids)
        a = state.result()
        state.process(trace)
        b = state.result()
        got = (first["hits"] + second["hits"], first["blocks_read"] + second["blocks_read"])
        assert got == (b.hits - a.hits, b.blocks_read - a.blocks_read), (round_, policy, capacity, chunk)
        assert first["verified_vectors"] + second["verified_vectors"] == trace.size


def test_slots_freed_by_a_chunk_are_reused_two_chunks_later():
    from impls.bandana.nvm import dram_slots

    class Cached:                                   # a CacheState stand-in: ids 0..N, cached set
        def __init__(self, n):
            self.kmap = np.full(n, -1, dtype=np.int64)
            self.stride, self.pos, self.use_pos = 1, np.arange(n), False

    slots = dram_slots.DramSlots(100, 8, 4, 2)
    state = Cached(100)
    served_at = {}
    for k in range(40):
        slots.release(k)
        ids = np.array([2 * k, 2 * k + 1])            # each chunk inserts 2 and evicts the rest
        state.kmap[:] = -1
        state.kmap[ids] = 0                          # the chunk's decisions: only ids cached after it
        got = slots.assign(ids, ids, state)
        assert got is not None and set(got) <= set(range(slots.slots))
        for s in got:
            assert k - served_at.get(int(s), -10) >= 2          # never reused before chunk k + 2
        for s in slots.serve(ids, k):
            served_at[int(s)] = k
        slots.reclaim(k, state, 2)
    assert slots.slots == 4 + 2 * 2 + 1 and slots.reclaims > 0


def test_reclaim_frees_only_slots_no_chunk_to_be_served_may_read():
    """After chunk 5's decisions, with nothing cached: the slot last served by chunk 3 is free;
    those served by 4 and 5 are parked (4's first), since chunks 4 and 5 may still be served."""
    from impls.bandana.nvm.dram_slots_kernels import _reclaim

    owner, slot_of = np.arange(4, dtype=np.int64), np.arange(4, dtype=np.int32)
    kmap, free, out = np.full(4, -1, dtype=np.int64), np.full(4, -1, dtype=np.int64), np.full(4, -1, dtype=np.int64)
    last_served = np.array([5, 4, 3, 5], dtype=np.int64)
    n_free, n_late, n_prev = _reclaim(owner, slot_of, kmap, 1, np.arange(4, dtype=np.int64), False, last_served, 5,
                                      free, 0, out)
    assert free[:n_free].tolist() == [2]
    assert (n_late, n_prev) == (3, 1) and out[0] == 1 and sorted(out[1:3].tolist()) == [0, 3]
    assert (owner == -1).all() and (slot_of == -1).all()


def test_a_chunk_whose_insertions_exactly_fill_the_free_slots_gets_them():
    """need == free slots is enough: no refusal (which would drain the replay's pipeline in
    its timed loop and ask to grow by nothing)."""
    from impls.bandana.nvm import dram_slots

    class Cached:
        def __init__(self, n):
            self.kmap = np.full(n, -1, dtype=np.int64)
            self.stride, self.pos, self.use_pos = 1, np.arange(n), False

    slots = dram_slots.DramSlots(100, 8, 4, 2)
    state = Cached(100)
    ids = np.arange(slots.n_free)
    state.kmap[ids] = 0
    got = slots.assign(ids, ids, state)
    assert got is not None and sorted(got.tolist()) == list(range(slots.slots)) and slots.n_free == 0


# ---------------------------------------------------------------- shadow size chosen by simulation

def _effective_bandwidth_after(warm, ids, layout, capacity, shadow):
    state = cache.CacheState(layout, capacity, "shadow", shadow, 128, 4096)
    state.process(warm)
    before = state.result()
    state.process(ids)
    after = state.result()
    used = (after.misses - before.misses) + (after.prefetch_used - before.prefetch_used)
    return used * 128 / (after.bytes_read - before.bytes_read)


def test_shadow_size_is_the_best_on_the_second_half_of_the_warm_up():
    from impls.bandana.experiments.replay import _choose_shadow

    layout = np.random.default_rng(5).permutation(N)
    warm = cache.zipf_trace(N, 40000, 0.8, 11)
    factors = [1.0, 2.0, 4.0, 8.0]
    shadow, scores = _choose_shadow(warm, layout, 100, factors)
    expected = {f"{f:g}": _effective_bandwidth_after(warm[:20000], warm[20000:], layout, 100, int(f * 100))
                for f in factors}
    assert scores == pytest.approx(expected)
    assert len(set(scores.values())) > 1                    # the candidates differ on this trace
    best = max(factors, key=lambda f: expected[f"{f:g}"])
    assert shadow == int(best * 100)


def test_shadow_size_ties_go_to_the_smaller_and_bad_factors_are_refused():
    from impls.bandana.experiments.replay import _choose_shadow

    warm = np.random.default_rng(1).integers(0, 64, 4000)     # 64 distinct ids: any shadow >= 64 holds them all
    shadow, scores = _choose_shadow(warm, np.arange(N), 32, [2.0, 4.0, 8.0])
    assert len(set(scores.values())) == 1 and shadow == 64
    with pytest.raises(ValueError, match="at least as large"):
        _choose_shadow(warm, np.arange(N), 32, [0.5, 2.0])
    with pytest.raises(ValueError, match="empty"):
        _choose_shadow(warm, np.arange(N), 32, [])


def test_the_cross_checks_prediction_uses_the_fio_runs_the_ratio_divides_by(monkeypatch):
    """The predicted useful bytes/s is the simulated effective bandwidth times the mean of the
    fio runs bracketing the replay (as replay_over_fio), not the last run alone."""
    from impls.bandana.experiments import replay as experiment

    sim = {"blocks_read": 5, "hits": 3, "misses": 5, "prefetched": 0, "prefetch_used": 0,
           "effective_bandwidth": 0.5}
    monkeypatch.setattr(experiment, "_simulated_segment", lambda *args: sim)
    runs = [{"bandwidth_bytes_per_s": 80e6, "iops": 1.0}, {"bandwidth_bytes_per_s": 60e6, "iops": 1.0}]
    point = {"layout": "shp", "policy": "lru", "queue_depth": 4, **{k: v for k, v in sim.items()
                                                                  if k != "effective_bandwidth"},
             "effective_bandwidth": 0.5, "useful_bytes_per_second": 33e6, "fio": runs[-1], "fio_runs": runs}
    row = experiment._cross_check(point, None, None, None, 10, None)
    assert row["match"] and row["fio_bandwidth_bytes_per_s"] == pytest.approx(70e6)
    assert row["predicted_useful_bytes_per_second"] == pytest.approx(35e6)
    assert experiment._cross_check({**point, "fio": None, "fio_runs": []}, None, None, None, 10,
                                   None)["predicted_useful_bytes_per_second"] is None


# -- found by a mutation probe: numbers no test read --------------------------------------------

def test_the_headline_replay_over_fio_is_the_lowest_layout_at_each_queue_depth():
    from impls.bandana.experiments.replay import _headline

    out = {"sweep": [{"queue_depth": 1, "replay_over_fio": 0.5}, {"queue_depth": 1, "replay_over_fio": 0.9},
                     {"queue_depth": 1, "replay_over_fio": None}],
           "mechanisms": [], "comparison": {"points": []}, "cross_check": []}
    s = {"queue_depths": [1, 8], "comparison": [("a", "none"), ("b", "none")]}
    head = _headline(out, s)
    assert head["replay_over_fio_by_queue_depth"] == {"1": 0.5, "8": None}
    assert head["cross_check_all_match"] is None                       # none made: not "all match"
    out["cross_check"] = [{"match": True}, {"match": False}, {"match": True}]
    assert _headline(out, s)["cross_check_all_match"] is False         # one mismatch is a mismatch
    out["cross_check"] = [{"match": True}] * 3
    assert _headline(out, s)["cross_check_all_match"] is True


def test_merged_parts_add_their_seconds_so_the_rates_are_of_the_whole():
    """Two equal parts of one timed point: twice the seconds and the counts, the same rates."""
    part = {"seconds": 1.0, "blocks_read": 50, "lookups": 400, "hits": 350, "misses": 50, "prefetched": 0,
            "prefetch_used": 0, "bytes_read": 50 * 4096, "useful_bytes_per_second": 51200.0,
            "verified_vectors": 10, "queries": 100, "empty_queries": 0}
    merged = replay.merge_results([part, dict(part)], [np.full(100, 1000, np.int64), np.full(100, 3000, np.int64)])
    assert merged["p50_query_us"] == pytest.approx(2.0) and merged["p99_query_us"] == pytest.approx(3.0)   # ns / 1e3
    assert merged["seconds"] == pytest.approx(2.0) and merged["blocks_read"] == 100
    assert merged["blocks_per_second"] == pytest.approx(50.0)
    assert merged["lookups_per_second"] == pytest.approx(400.0)
    assert merged["useful_bytes_per_second"] == pytest.approx(51200.0)


def test_the_cross_check_compares_every_counter_prefetches_included():
    from impls.bandana.sim import cache as sim_cache

    rng = np.random.default_rng(3)
    trace, layout = rng.integers(0, 2000, 5000), rng.permutation(2000)
    sim = sim_cache.simulate(trace, layout, 64, "prefetch", None, 128, 4096).to_dict()
    assert replay.cross_check(dict(sim), trace, layout, 64, "prefetch", None, 128, 4096)["match"] is True
    for key in ("blocks_read", "hits", "misses", "prefetched"):
        off = dict(sim, **{key: sim[key] + 1})
        assert replay.cross_check(off, trace, layout, 64, "prefetch", None, 128, 4096)["match"] is False, key
