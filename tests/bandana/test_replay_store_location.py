"""Where the replay's store lies, and what says so: a block device named by
DLSYSBENCH_NVM_PATH is only read, so the store goes to DLSYSBENCH_CACHE; the artifact, the
figure, the report's NVM target table and every refusal must name that place and the
setting that chose it, not the block device."""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from impls.bandana.nvm import block_store, replay
from impls.harness import capabilities
from impls.harness.report.environment_table import environment_tables
from impls.harness.report.machine_state import CapabilityState, MachineState

# a name in /dev/: the replay treats it as a block device (the suite writes nothing there)
DEVICE = "/dev/dlsysbench-no-such-device"


def test_a_block_device_target_puts_the_store_in_the_cache_and_the_record_says_so(tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", DEVICE)
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(cache_dir))
    assert replay.store_location() == (cache_dir, "DLSYSBENCH_CACHE")
    record = replay.store_record(cache_dir, "DLSYSBENCH_CACHE")
    mount = capabilities.mount_of(tmp_path)
    assert (record["directory"], record["setting"], record["nvm_target"]) == (str(cache_dir), "DLSYSBENCH_CACHE",
                                                                             DEVICE)
    assert (record["filesystem"], record["device"], record["mount_point"]) == (
        mount["fstype"], mount["source"], mount["mount_point"])
    assert f"DLSYSBENCH_NVM_PATH={DEVICE} is a block device" in record["note"]
    assert f"DLSYSBENCH_CACHE={cache_dir}" in record["note"] and f"not {DEVICE}" in record["note"]


@pytest.mark.parametrize("nvm_set", [True, False])
def test_a_file_target_keeps_the_store_beside_it_and_names_the_setting_that_chose_it(tmp_path, monkeypatch,
                                                                                     nvm_set):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    if nvm_set:
        monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(tmp_path / "drive" / "t.bin"))
        expected = (tmp_path / "drive", "DLSYSBENCH_NVM_PATH")
    else:
        monkeypatch.delenv("DLSYSBENCH_NVM_PATH", raising=False)
        expected = (tmp_path / "cache", "DLSYSBENCH_CACHE")   # beside the suite's own target file
    assert replay.store_location() == expected
    assert replay.store_directory() == expected[0]
    assert replay.store_record(*expected)["note"] is None


def test_a_store_folder_this_user_cannot_write_is_refused_as_such(tmp_path, monkeypatch):
    """The probe's finding 6: a permission error was reported as "point DLSYSBENCH_NVM_PATH at a
    disk"; the O_DIRECT check names it, and the setting that chose the folder."""
    if capabilities.filesystem_type(tmp_path) in capabilities.MEMORY_FILESYSTEMS:
        pytest.skip("pytest's tmp dir is in memory here")
    folder = tmp_path / "ro"
    folder.mkdir()

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder / ".odirect-probe-x"))

    monkeypatch.setattr(capabilities.tempfile, "NamedTemporaryFile", denied)
    with pytest.raises(block_store.DirectIOUnavailable) as refused:
        block_store.check_target(folder / "a.store", "DLSYSBENCH_CACHE")
    message = str(refused.value)
    assert message.startswith(f"this user cannot write in {folder} (") and "point DLSYSBENCH_CACHE at" in message
    assert "DLSYSBENCH_NVM_PATH" not in message and "at a disk" not in message
    assert not list(folder.iterdir())


@pytest.fixture
def shm_cache():
    shm = Path("/dev/shm")
    if not shm.is_dir() or capabilities.filesystem_type(shm) not in capabilities.MEMORY_FILESYSTEMS:
        pytest.skip("no tmpfs at /dev/shm")
    cache_dir = shm / f"dlsysbench-test-cache-{os.getpid()}"
    cache_dir.mkdir()
    yield cache_dir
    shutil.rmtree(cache_dir, ignore_errors=True)


def test_write_store_names_the_setting_it_is_given(shm_cache):
    import numpy as np

    with pytest.raises(block_store.DirectIOUnavailable, match="in memory.*point DLSYSBENCH_CACHE at a disk"):
        block_store.write_store(shm_cache / "x.store", block_store.random_table(64, 128, 0), np.arange(64),
                                setting="DLSYSBENCH_CACHE")


def _tiny_sizes():
    from impls.bandana.experiments import replay as replay_experiment

    s = replay_experiment.sizes("smoke")
    s.update(layouts=["identity"], policies=["none"], shadow_factors=[2.0], queue_depths=[1],
             comparison=[["identity", "none"], ["identity", "none"]], mechanisms=["threads"],
             mechanism_queue_depths=[1], point_seconds=0.02, fio_runtime_s=0.05, fio_ramp_s=0.0,
             warmup_lookups=2000, policy_choice_lookups=1000, comparison_rounds=1, mechanism_rounds=1)
    return s


def test_the_replay_skip_with_a_cache_in_memory_names_the_cache_not_the_device(shm_cache, monkeypatch):
    """The probe's finding 1: with DLSYSBENCH_NVM_PATH a block device and the cache on tmpfs, the
    skip said "point DLSYSBENCH_NVM_PATH at a disk", which the user had already done."""
    from impls.bandana import catalog

    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", DEVICE)
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(shm_cache))
    monkeypatch.setattr("impls.bandana.experiments.simulation.load_table", _small_table)
    with pytest.raises(NotImplementedError) as skipped:
        catalog.replay(_tiny_sizes())
    assert "point DLSYSBENCH_CACHE at a disk" in str(skipped.value), skipped.value
    assert "DLSYSBENCH_NVM_PATH" not in str(skipped.value)


def _small_table(name, train_fraction, *args, **kwargs):
    """A 640-vector table of 128-byte vectors and a short random trace, as load_table gives it."""
    import numpy as np

    from impls.bandana.experiments import simulation

    rng = np.random.default_rng(0)
    n, queries = 640, 3000
    arrays = {"offsets": np.arange(0, 4 * queries + 1, 4, dtype=np.int64),
              "indices": rng.integers(0, n, size=4 * queries).astype(np.int64),
              "vectors": rng.standard_normal((n, 32)).astype(np.float32)}
    return simulation.table_from_trace(name, arrays, train_fraction, synthetic=True, num_vectors=n)


def test_the_artifact_and_figure_name_the_drive_the_store_was_on(store_dir, tmp_path, monkeypatch, capsys):
    from impls.bandana.experiments import replay as replay_experiment
    from impls.bandana.figures import replay as replay_figures

    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", DEVICE)
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(store_dir))
    monkeypatch.setattr("impls.bandana.experiments.simulation.load_table", _small_table)
    data = replay_experiment.replay_experiment(_tiny_sizes(), progress=False)
    store = data["store"]
    mount = capabilities.mount_of(store_dir)
    assert (store["directory"], store["setting"]) == (str(store_dir), "DLSYSBENCH_CACHE")
    assert (store["filesystem"], store["device"]) == (mount["fstype"], mount["source"])
    assert f"warning: DLSYSBENCH_NVM_PATH={DEVICE} is a block device" in capsys.readouterr().err
    title = replay_figures.replay_vs_fio(data).axes[1].get_title()
    assert f"store in {store_dir}" in title and mount["source"] in title and f"not on {DEVICE}" in title
    assert not list(store_dir.glob("*.store"))


def _nvm_rows(path: str, o_direct: CapabilityState | None, replay_store: CapabilityState | None = None,
              **recorded) -> dict[str, str]:
    capabilities_ = {name: cap for name, cap in (("o_direct", o_direct), ("replay_store", replay_store)) if cap}
    fingerprint = {"machine": "m", "profile": "smoke",
                   "nvm_target": {"path": path, "filesystem": "ext4", "device": "/dev/vda", **recorded}}
    (table,) = [t for t in environment_tables(MachineState("m", fingerprint, "test", capabilities_), {})
                if t.title.startswith("NVM target")]
    return dict(table.rows)


ROW = "the trace replay's store (bandana.replay)"
READ = CapabilityState("o_direct", True, "", "block device /dev/vdb")


@pytest.mark.parametrize("path, o_direct, recorded", [
    ("/dev/vda", READ, {"block_device": True}), ("/dev/nvme0n1", None, {}),     # an older fingerprint: no flag
    ("/home/u/link-to-vdb", READ, {"block_device": True})])
def test_the_nvm_target_table_says_a_block_device_does_not_hold_the_replay_store(path, o_direct, recorded):
    row = _nvm_rows(path, o_direct, **recorded)[ROW]
    assert row.startswith("not on this device") and "DLSYSBENCH_CACHE" in row


def test_the_nvm_target_table_says_a_file_target_holds_the_replay_store_beside_it():
    row = _nvm_rows("/mnt/nvme/t.bin", CapabilityState("o_direct", True, "", "ext4 at /mnt/nvme"),
                    block_device=False)[ROW]
    assert row.startswith("a file beside this one")


def test_the_nvm_target_table_says_no_store_where_the_replay_cannot_run():
    refused = CapabilityState("o_direct", False, "the filesystem at /tmp (tmpfs) is in memory")
    row = _nvm_rows("/tmp/t.bin", refused, block_device=False)[ROW]
    assert row == "none: the replay does not run here (the filesystem at /tmp (tmpfs) is in memory)"


def test_the_fingerprint_records_whether_the_target_is_a_device(tmp_path):
    from impls.harness import fingerprint

    assert fingerprint.nvm_target_info(tmp_path / "t.bin")["block_device"] is False
    assert fingerprint.nvm_target_info(Path("/dev/nonexistent-vdz"))["block_device"] is True


def test_the_nvm_target_table_says_no_store_where_its_folder_refuses_one():
    """fio reads a ready target in a folder this user cannot write; the replay cannot write there."""
    fio_reads = CapabilityState("o_direct", True, "", "ext4 at /srv/ro")
    cannot = CapabilityState("replay_store", False, "this user cannot write in /srv/ro (ext4): Permission denied")
    row = _nvm_rows("/srv/ro/t.bin", fio_reads, block_device=False, replay_store=cannot)[ROW]
    assert row == "none: the replay does not run here (this user cannot write in /srv/ro (ext4): Permission denied)"


def test_the_replay_experiment_removes_the_stores_killed_runs_left(tmp_path, monkeypatch, capsys):
    """`python -m impls run bandana.replay` and the asv benchmarks sweep as the CLI replay does:
    a store (and its temporary file) whose pid is dead goes; a running replay's store stays."""
    import subprocess
    import sys

    from impls.bandana.experiments import replay as replay_experiment

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    folder = tmp_path / "nvm"
    folder.mkdir()
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(folder / "target.bin"))
    monkeypatch.setattr("impls.bandana.experiments.simulation.load_table", _small_table)
    left = [f"bandana-replay-identity-pid{dead}.store",
            f".bandana-replay-shp-pid{dead}.store.pid{dead}.ab_9x1yz.tmp"]
    running = f"bandana-replay-identity-pid{os.getppid()}.store"
    for name in left + [running]:
        (folder / name).write_bytes(b"x")

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop
    monkeypatch.setattr(block_store, "write_store", stop)    # the sweep is done by then: measure nothing
    with pytest.raises(Stop):
        replay_experiment.replay_experiment(_tiny_sizes(), progress=False)
    assert sorted(p.name for p in folder.iterdir()) == [running]
    said = capsys.readouterr().err
    assert all(name in said for name in left) and f"left in {folder} by killed runs" in said
