"""An NVM target that is a file on a filesystem mounted from a device in memory (a loop device
over a file on tmpfs, zram, a RAM disk) is refused like one on tmpfs: otherwise fio and the
replay measure RAM and report it as the drive. /proc/self/mounts and /sys/block are faked:
the mount points are real folders under pytest's tmp dir, nothing is mounted."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from impls.harness import capabilities, mounts


def _fake_machine(monkeypatch, tmp_path: Path, table: str, loops: dict[str, str]) -> None:
    """Make ``mounts`` read ``table`` as /proc/self/mounts (``{tmp}`` stands for ``tmp_path``)
    and a /sys/block where each loop device of ``loops`` is backed by its file."""
    table = table.replace("{tmp}", str(tmp_path))
    real_open = open
    monkeypatch.setattr(mounts, "open",
                        lambda f, *a, **k: io.StringIO(table) if f == "/proc/self/mounts" else real_open(f, *a, **k),
                        raising=False)
    sys_block = tmp_path / "sys-block"
    for name, backing in loops.items():
        (sys_block / name / "loop").mkdir(parents=True)
        (sys_block / name / "loop" / "backing_file").write_text(backing.replace("{tmp}", str(tmp_path)) + "\n")
    sys_block.mkdir(exist_ok=True)
    monkeypatch.setattr(mounts, "SYS_BLOCK", sys_block)


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """/ on a disk, {tmp}/ram a tmpfs holding img, {tmp}/looped an ext4 on /dev/loop7 over
    {tmp}/ram/img, {tmp}/disk an ext4 on /dev/loop3 over a file on the disk, {tmp}/z an ext4
    on /dev/zram0."""
    for folder in ("ram", "looped", "disk", "z"):
        (tmp_path / folder).mkdir()
    _fake_machine(monkeypatch, tmp_path,
                  "/dev/vda1 / ext4 rw 0 0\n"
                  "tmpfs {tmp}/ram tmpfs rw 0 0\n"
                  "/dev/loop7 {tmp}/looped ext4 rw 0 0\n"
                  "/dev/loop3 {tmp}/disk ext4 rw 0 0\n"
                  "/dev/zram0 {tmp}/z ext4 rw 0 0\n",
                  {"loop7": "{tmp}/ram/img", "loop3": "/var/lib/images/disk.img"})
    return tmp_path


def test_a_file_on_a_filesystem_on_a_loop_device_over_tmpfs_is_in_memory(machine):
    reason = mounts.memory_filesystem(machine / "looped" / "nvm.bin")
    assert reason == (f"is on ext4 at {machine}/looped, mounted from /dev/loop7, which is a loop device over "
                      f"{machine}/ram/img, on tmpfs, in memory")


def test_a_filesystem_on_zram_is_in_memory_and_one_on_a_loop_over_a_disk_file_is_not(machine):
    assert mounts.memory_filesystem(machine / "z" / "nvm.bin").endswith("mounted from /dev/zram0, which is a RAM disk")
    assert mounts.memory_filesystem(machine / "disk" / "nvm.bin") == ""
    assert mounts.memory_filesystem(machine / "nvm.bin") == ""         # on / (a disk)
    assert mounts.memory_filesystem(machine / "ram" / "nvm.bin") == "is on tmpfs, in memory"


def test_the_nvm_check_refuses_a_file_on_a_loop_mount_over_tmpfs_naming_mount_device_and_backing_file(machine):
    cap = capabilities.check_o_direct(machine / "looped" / "nvm.bin")
    assert not cap.available
    assert cap.reason == (f"{machine}/looped is on ext4 at {machine}/looped, mounted from /dev/loop7, which is a "
                          f"loop device over {machine}/ram/img, on tmpfs, in memory: no read would reach a drive; "
                          "point DLSYSBENCH_NVM_PATH at a disk")
    assert "\n" not in cap.reason


def test_the_replay_refuses_to_open_a_store_on_a_loop_mount_over_tmpfs(machine, monkeypatch):
    from impls.bandana.nvm import block_store

    monkeypatch.setattr(block_store, "read_header", lambda path: None)   # a store that passes its own checks
    with pytest.raises(block_store.DirectIOUnavailable, match="mounted from /dev/loop7, which is a loop device"):
        block_store.open_store(machine / "looped" / "x.store")
