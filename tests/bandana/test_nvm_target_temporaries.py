"""A write of the NVM target killed before its rename leaves a temporary file as large as the
target (1 GiB in quick, 16 GiB in full); its name carries the writer's pid, and the next
``prepare_target`` of that target removes it, whether it rewrites the target or reuses it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from impls.bandana.experiments import device as dc
from impls.harness import nvm_file

_KILLED_WRITE = """
import os, sys
from pathlib import Path
from impls.harness import nvm_file
os.fsync = lambda fd: os.kill(os.getpid(), 9)   # killed with the data written, before the rename
nvm_file.write_suite_file(Path(sys.argv[1]), int(sys.argv[2]))
"""


def _killed_write(target: Path, size_bytes: int) -> list[Path]:
    """Run a write of ``target`` that SIGKILL stops before its rename; return what it left beside it."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", _KILLED_WRITE, str(target), str(size_bytes)], env=env)
    assert done.returncode == -signal.SIGKILL
    return sorted(p for p in target.parent.iterdir() if p.name != target.name)


def test_a_killed_write_leaves_a_pid_tagged_file_that_the_next_write_removes(tmp_path):
    target = tmp_path / "target.bin"
    left = _killed_write(target, 1 << 20)
    assert len(left) == 1 and left[0].stat().st_size == 1 << 20
    assert left[0].name.startswith(".target.bin.pid") and left[0].name.endswith(".tmp")
    assert not target.exists()
    info = dc.prepare_target(target, 1 << 20)
    assert info["created"] is True and nvm_file.is_suite_file(target)
    assert sorted(tmp_path.iterdir()) == [target]


def test_a_ready_target_is_reused_and_a_killed_rewrite_of_it_is_removed(tmp_path):
    target = tmp_path / "target.bin"
    dc.prepare_target(target, 1 << 16)
    before = target.stat().st_mtime_ns
    left = _killed_write(target, 1 << 20)      # a bigger profile's rewrite, killed
    assert len(left) == 1
    assert dc.prepare_target(target, 1 << 16)["created"] is False
    assert target.stat().st_mtime_ns == before
    assert sorted(tmp_path.iterdir()) == [target]


def test_a_live_writers_temporary_file_and_other_files_are_kept(tmp_path):
    target = tmp_path / "target.bin"
    live = tmp_path / f".target.bin.pid{os.getppid()}.abc123.tmp"       # its writer still runs
    other = tmp_path / f".other.bin.pid{2**22 + 12345}.abc123.tmp"
    for path in (live, other):
        path.write_bytes(b"x")
    dc.prepare_target(target, 1 << 16)
    assert sorted(tmp_path.iterdir()) == sorted([live, other, target])


def test_an_earlier_versions_pid_less_temporary_is_removed_once_an_hour_old(tmp_path):
    """Before its temporaries carried a pid, a killed write left ``.target.bin.XXXXXXXX.tmp``
    (tempfile's name): removed once older than any write, kept while it may be a live one."""
    target = tmp_path / "target.bin"
    old, fresh = tmp_path / ".target.bin.k3j2x9ab.tmp", tmp_path / ".target.bin.q8w_7zz1.tmp"
    other = tmp_path / ".other.bin.k3j2x9ab.tmp"
    for path in (old, fresh, other):
        path.write_bytes(b"x" * 100)
    hours_ago = os.stat(old).st_mtime - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    os.utime(other, (hours_ago, hours_ago))
    nvm_file.sweep_killed_writes(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, fresh.name]
