"""Before a run, the suite estimates the largest files it will write (the NVM target, the
Bandana traces) and says in one line where they would not fit: a full run that fills the
disk after hours loses them."""
from __future__ import annotations

import shutil
from collections import namedtuple

from impls.harness import space

Usage = namedtuple("Usage", "total used free")


def test_a_run_that_would_fill_the_disk_is_said_with_what_and_where(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DLSYSBENCH_NVM_PATH", raising=False)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10 * 2**30, 9 * 2**30, 2**30))
    pending = {what: size for what, size, _ in space.pending("full")}
    assert pending["the NVM target file"] == 16 * 2**30          # [fio_sweep.full].file_bytes
    assert pending["trace bandana-user"] > 2**30 and pending["trace bandana-post"] > 2**30
    line = space.shortfall("full")
    assert line.startswith("the full profile needs about ") and "1.0 GiB free there" in line
    assert "the NVM target file 16.0" in line and str(tmp_path) in line and "\n" not in line


def test_files_already_written_or_room_enough_say_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    target = tmp_path / "target.bin"
    with open(target, "wb") as f:
        f.truncate(16 * 2**20)                                     # smoke's file_bytes, sparse
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(target))
    assert "the NVM target file" not in {what for what, _, _ in space.pending("smoke")}
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(2**50, 0, 2**50))
    assert space.shortfall("full") is None
