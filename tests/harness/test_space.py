"""Before a run, the suite estimates the largest files it will write (the NVM target, the
Bandana traces) and says in one line where they would not fit: a full run that fills the
disk after hours loses them."""
from __future__ import annotations

import shutil
from collections import namedtuple

from impls.harness import nvm_file, space

Usage = namedtuple("Usage", "total used free")


def test_a_run_that_would_fill_the_disk_is_said_with_what_and_where(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DLSYSBENCH_NVM_PATH", raising=False)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10 * 2**30, 9 * 2**30, 2**30))
    pending = {what: size for what, size, _ in space.pending("full")}
    assert pending["the NVM target file"] == 16 * 2**30 + nvm_file.FREE_SPACE_HEADROOM_BYTES   # [fio_sweep.full].file_bytes
    assert pending["trace bandana-user (streamed copy)"] > 2**30 and pending["trace bandana-post (streamed copy)"] > 2**30
    line = space.shortfall("full")
    assert line.startswith("the full profile needs about ") and "1.0 GiB free there" in line
    assert "the NVM target file 16.1" in line and str(tmp_path) in line and "\n" not in line


def test_files_already_written_or_room_enough_say_nothing(tmp_path, monkeypatch):
    from impls.harness import nvm_file

    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    target = tmp_path / "target.bin"
    nvm_file.write_suite_file(target, 16 * 2**20)                  # smoke's file_bytes, the suite's content
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(target))
    assert "the NVM target file" not in {what for what, _, _ in space.pending("smoke")}
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(2**50, 0, 2**50))
    assert space.shortfall("full") is None


def test_a_smaller_or_foreign_target_counts_as_the_writer_would(tmp_path, monkeypatch):
    # the writer rewrites the whole file (beside the old one) when the suite's is too small,
    # and refuses another file at a path the user named: so count the first, not the second
    from impls.harness import nvm_file

    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    small = tmp_path / "small.bin"
    nvm_file.write_suite_file(small, 2**20)
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(small))
    assert {w: b for w, b, _ in space.pending("smoke")}["the NVM target file"] == 16 * 2**20 + nvm_file.FREE_SPACE_HEADROOM_BYTES
    foreign = tmp_path / "mine.bin"
    foreign.write_bytes(b"x" * 1024)
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(foreign))
    assert "the NVM target file" not in {w for w, _, _ in space.pending("smoke")}
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(tmp_path))                # a directory: refused there
    assert "the NVM target file" not in {w for w, _, _ in space.pending("smoke")}


def test_a_target_that_cannot_be_looked_at_is_left_to_the_run(tmp_path, monkeypatch):
    # a folder of the path without permission: the estimate must not stop a run that may
    # never write there (make reproduce died on a PermissionError here before)
    from pathlib import Path

    from impls.harness import paths

    class Locked(type(Path())):
        def is_symlink(self):
            raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(paths, "nvm_target_path", lambda: Locked(tmp_path / "locked" / "target.bin"))
    assert "the NVM target file" not in {w for w, _, _ in space.pending("full")}
    space.shortfall("full")


def test_a_full_run_streams_each_trace_once_and_shares_it_with_the_replay(tmp_path, monkeypatch):
    """At full the simulator and the replay both read bandana-post from the streamed .npy
    copy: one copy on disk, and the registry's .npz is not counted."""
    from impls.harness import profiles

    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    replay = profiles.sizes("bandana_replay", "full")
    assert profiles.sizes("bandana_sim", "full")["streamed_traces"] and replay["streamed_traces"]
    before = {what for what, _, _ in space.pending("full")}
    assert {f"trace {replay['table']} (streamed copy)", "trace bandana-user (streamed copy)"} <= before
    assert not {"trace bandana-post", "trace bandana-user"} & before
    assert "trace bandana-post" in {what for what, _, _ in space.pending("quick")}  # quick: in memory only
    assert not any("streamed" in what for what, _, _ in space.pending("quick"))


def test_a_replay_that_loads_what_the_simulator_streams_counts_both_copies(tmp_path, monkeypatch):
    """A profile whose simulator streams a trace the replay loads in memory writes it twice:
    one copy on disk is no sign that the other is."""
    from impls.harness import profiles, registry

    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    real = profiles.sizes
    monkeypatch.setattr(profiles, "sizes", lambda table, profile: (
        {**real(table, profile), "streamed_traces": False} if table == "bandana_replay" else real(table, profile)))
    before = {what for what, _, _ in space.pending("full")}
    assert {"trace bandana-post", "trace bandana-post (streamed copy)", "trace bandana-user (streamed copy)"} <= before
    assert "trace bandana-user" not in before                       # the replay reads post only
    params, key = registry.recipe_key(registry.manifests()["bandana-post"], "full")
    (tmp_path / "cache" / "bandana-post" / f"full-{key}.npz").parent.mkdir(parents=True)
    (tmp_path / "cache" / "bandana-post" / f"full-{key}.npz").write_bytes(b"x")
    after = {what for what, _, _ in space.pending("full")}
    assert "trace bandana-post" not in after and "trace bandana-post (streamed copy)" in after


def test_files_bound_for_one_disk_are_added_up_against_its_free_space(tmp_path, monkeypatch):
    """Two 6-GiB files on a disk with 10 GiB free do not fit, though each would alone."""
    monkeypatch.setattr(space, "pending", lambda profile: [("a", 6 << 30, tmp_path), ("b", 6 << 30, tmp_path)])
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(2**40, 0, 10 << 30))
    line = space.shortfall("full")
    assert line is not None and "about 12.0 GiB" in line and "10.0 GiB free" in line


def test_a_trace_is_estimated_at_its_arrays_sizes():
    """int64 ids and offsets, int64 community and float64 popularity per vector, float32 values."""
    params = {"num_lookups": 10, "mean_query_size": 5, "num_vectors": 1000, "dim": 64}
    assert space._trace_bytes(params) == 8 * 10 + 8 * 3 + 16 * 1000 + 4 * 1000 * 64
    assert space._trace_bytes({**params, "with_vectors": False}) == 8 * 10 + 8 * 3 + 16 * 1000
