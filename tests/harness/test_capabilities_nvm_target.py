"""The NVM target's checks agree with what ``python -m impls run`` does (a probe found them
saying "runs here" where the run then refused): a ready target in a folder this user cannot
write (fio only reads it; the replay writes its store beside it), a target too small for the
profile (rewritten beside itself), a FIFO or a character device, ``~nosuchuser``, a path
under a file. The session runs as root: a folder this user cannot write is simulated by
refusing the probe's temporary file there (``EACCES``) and ``os.access`` on it."""
from __future__ import annotations

import errno
import os
import sys
import tempfile
from pathlib import Path

import pytest

from impls.harness import capabilities, commands, nvm_file, paths, profiles

real_missing = capabilities.missing_reason


@pytest.fixture
def on_disk(tmp_path):
    if capabilities.filesystem_type(tmp_path) in capabilities.MEMORY_FILESYSTEMS:
        pytest.skip("pytest's tmp dir is in memory here")
    folder = tmp_path / "nvm"
    folder.mkdir()
    return folder


def _unwritable(monkeypatch, folder: Path) -> None:
    """This user cannot create files in ``folder`` (as an unprivileged user in a mode-555
    folder): a temporary file there fails with EACCES, ``os.access`` says no write."""
    real_temporary, real_access = tempfile.NamedTemporaryFile, os.access

    def temporary(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == folder:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder / ".tmp-x"))
        return real_temporary(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", temporary)
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == folder
                        else real_access(path, mode, **kw))


def _refusal_of_the_replay(folder: Path) -> str:
    """What the replay's own check says before it writes its store in ``folder``."""
    from impls.bandana.nvm import block_store

    with pytest.raises(block_store.DirectIOUnavailable) as refused:
        block_store.check_target(folder / "bandana-replay-identity-pid1.store", "DLSYSBENCH_NVM_PATH")
    return str(refused.value)


def test_a_ready_target_in_a_folder_this_user_cannot_write_is_read_by_fio_but_holds_no_replay_store(
        on_disk, monkeypatch, fresh_checks):
    target = on_disk / "t.bin"
    nvm_file.write_suite_file(target, 2 * nvm_file.BLOCK)
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(target))
    monkeypatch.setattr(capabilities, "profile_target_bytes",
                        lambda: ("smoke", 2 * nvm_file.BLOCK))   # large enough for this profile
    _unwritable(monkeypatch, on_disk)
    found = capabilities.detect(("o_direct", "replay_store"))
    assert found["o_direct"].available, found["o_direct"].reason          # fio only reads it
    store = found["replay_store"]
    assert not store.available
    assert store.reason == _refusal_of_the_replay(on_disk)                 # the words `run` gives
    assert store.reason.startswith(f"this user cannot write in {on_disk} (")
    assert "point DLSYSBENCH_NVM_PATH at a file in a directory this user can write" in store.reason
    assert capabilities.missing_reason("o_direct", "replay_store") == store.reason


def test_the_replay_store_goes_beside_a_writable_target_and_to_the_cache_for_a_device(on_disk, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(on_disk / "t.bin"))
    beside = capabilities.check_replay_store()
    assert beside.available, beside.reason
    assert str(on_disk) in beside.detail and "DLSYSBENCH_NVM_PATH" in beside.detail
    cache = on_disk.parent / "cache"
    monkeypatch.setattr(nvm_file, "is_device_target", lambda target: True)   # a block device: only read
    _unwritable(monkeypatch, on_disk)
    in_cache = capabilities.check_replay_store()
    assert in_cache.available, in_cache.reason
    assert "DLSYSBENCH_CACHE" in in_cache.detail and str(cache) in in_cache.detail
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(on_disk / "cache"))            # the cache unwritable: refused
    refused = capabilities.check_replay_store()
    assert not refused.available
    assert "this user cannot write in" in refused.reason and "point DLSYSBENCH_CACHE at" in refused.reason


def test_a_ready_target_smaller_than_the_profile_reads_is_checked_as_one_to_write(on_disk, monkeypatch,
                                                                                  fresh_checks):
    target = on_disk / "t.bin"
    nvm_file.write_suite_file(target, 2 * nvm_file.BLOCK)        # written by a profile reading 8 KiB
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(target))
    _unwritable(monkeypatch, on_disk)
    short = capabilities.detect(("o_direct",))["o_direct"]      # smoke reads 16 MiB: rewritten beside itself
    assert not short.available
    assert short.reason.startswith(f"this user cannot write in {on_disk} (")
    assert ("t.bin holds 8 KiB, less than the 16 MiB the smoke profile's fio sweep reads, so it is written "
            "again); point DLSYSBENCH_NVM_PATH at a file in a directory this user can write") in short.reason


def test_the_nvm_target_is_checked_again_for_another_profile(on_disk, monkeypatch, fresh_checks):
    target = on_disk / "t.bin"
    nvm_file.write_suite_file(target, 2 * nvm_file.BLOCK)
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(target))
    sizes = {"smoke": 2 * nvm_file.BLOCK, "quick": 4 * nvm_file.BLOCK}
    monkeypatch.setattr(capabilities, "profile_target_bytes",
                        lambda: (profiles.current_profile(), sizes[profiles.current_profile()]))
    _unwritable(monkeypatch, on_disk)
    assert capabilities.detect(("o_direct",))["o_direct"].available             # large enough: only read
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "quick")          # as `run --profile quick` sets it
    short = capabilities.detect(("o_direct",))["o_direct"]
    assert not short.available and "less than the 16 KiB the quick profile's fio sweep reads" in short.reason
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    assert capabilities.missing_reason("o_direct") is None


def test_run_with_another_profile_than_the_environments_is_refused_as_cannot_run_here(on_disk, monkeypatch,
                                                                                      fresh_checks, capsys):
    """`run --profile quick` under DLSYSBENCH_PROFILE=smoke: refused before any work, in run's words."""
    target = on_disk / "t.bin"
    nvm_file.write_suite_file(target, 2 * nvm_file.BLOCK)
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(target))
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    sizes = {"smoke": 2 * nvm_file.BLOCK, "quick": 4 * nvm_file.BLOCK}
    monkeypatch.setattr(capabilities, "profile_target_bytes",
                        lambda: (profiles.current_profile(), sizes[profiles.current_profile()]))
    monkeypatch.setattr(capabilities, "missing_reason",     # fio or not, on this machine: the target's answer
                        lambda *names: real_missing(*[n for n in names if n != "fio"]))
    _unwritable(monkeypatch, on_disk)
    assert commands.main(["run", "bandana.fio", "--profile", "quick", "--json", str(on_disk.parent / "o.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: bandana.fio cannot run here: this user cannot write in"), err
    assert "less than the 16 KiB the quick profile's fio sweep reads" in err


def test_a_short_target_in_a_writable_folder_passes_saying_it_is_written_again(on_disk):
    target = on_disk / "t.bin"
    nvm_file.write_suite_file(target, 2 * nvm_file.BLOCK)
    cap = capabilities.check_o_direct(target, size_bytes=3 * nvm_file.BLOCK, sized_by="the quick profile's fio sweep")
    assert cap.available, cap.reason
    assert "t.bin holds 8 KiB, less than the 12 KiB the quick profile's fio sweep reads" in cap.detail
    assert [p.name for p in on_disk.iterdir()] == ["t.bin"]                    # the probe left nothing


def test_a_short_target_deleted_while_it_is_checked_reads_as_one_to_write(on_disk, monkeypatch):
    target = on_disk / "t.bin"
    nvm_file.write_suite_file(target, 2 * nvm_file.BLOCK)
    is_suite_file = nvm_file.is_suite_file

    def read_then_gone(path):   # another process removes it just after the check read its header
        answer = is_suite_file(path)
        if sys._getframe(1).f_code.co_name == "check_o_direct":
            path.unlink()
        return answer

    monkeypatch.setattr(nvm_file, "is_suite_file", read_then_gone)
    cap = capabilities.check_o_direct(target, size_bytes=3 * nvm_file.BLOCK, sized_by="the quick profile's fio sweep")
    assert cap.available, cap.reason
    assert "written again" not in cap.detail and list(on_disk.iterdir()) == []


def test_the_profile_target_bytes_are_the_fio_sweeps():
    assert capabilities.profile_target_bytes() == ("smoke", profiles.sizes("fio_sweep", "smoke")["file_bytes"])


def test_a_fifo_is_refused_as_neither_a_regular_file_nor_a_block_device(on_disk):
    from impls.bandana.experiments import device

    fifo = on_disk / "t.bin"
    os.mkfifo(fifo)
    cap = capabilities.check_o_direct(fifo)
    assert not cap.available
    assert cap.reason.startswith(f"DLSYSBENCH_NVM_PATH={fifo} is a FIFO (named pipe), neither a regular file "
                                 "nor a block device; expected"), cap.reason
    with pytest.raises(ValueError, match="neither a regular file nor a block device"):
        device.prepare_target(fifo, nvm_file.BLOCK)                            # what `run` says


def test_dev_null_is_refused_as_a_character_device_not_as_memory():
    cap = capabilities.check_o_direct(Path("/dev/null"))
    assert not cap.available
    assert "/dev/null is a character device, neither a regular file nor a block device" in cap.reason
    assert "devtmpfs" not in cap.reason and "memory" not in cap.reason


def test_an_nvm_path_of_an_unknown_user_is_a_missing_capability_not_an_error(monkeypatch, fresh_checks):
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", "~no-such-user-dlsysbench/t.bin")
    verdicts = commands.device_verdicts()                                      # list and doctor: no exception
    assert verdicts["bandana.fio"]["cpu"] == capabilities.missing_reason("fio", "o_direct")
    assert verdicts["bandana.layouts"]["cpu"] is None                           # the rest is untouched
    for name in ("o_direct", "replay_store"):
        cap = capabilities.detect((name,))[name]
        assert not cap.available
        assert cap.reason.startswith("DLSYSBENCH_NVM_PATH='~no-such-user-dlsysbench/t.bin': cannot expand"), cap


def test_doctor_prints_an_nvm_path_of_an_unknown_user_among_the_rest(monkeypatch, fresh_checks):
    """make doctor stopped (exit 2) where list showed the reason per experiment."""
    from impls.harness import fingerprint

    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", "~no-such-user-dlsysbench/t.bin")
    info = fingerprint.nvm_target_info()
    assert info["path"] == "~no-such-user-dlsysbench/t.bin" and "cannot expand" in info["error"]
    table = fingerprint.format_table(fingerprint.fingerprint())     # fresh_checks: not another test's
    assert "NVM target" in table and "bandana.replay" in table and "cannot expand" in table


def test_list_and_doctor_say_the_replay_cannot_write_beside_a_ready_target_fio_reads(on_disk, monkeypatch,
                                                                                     fresh_checks):
    """The probe's case: `list` and doctor said "yes" for bandana.replay, `run` refused it."""
    from impls.harness import experiments, fingerprint

    assert "replay_store" in experiments.get("bandana.replay").requirements("cpu")
    assert "replay_store" not in experiments.get("bandana.fio").requirements("cpu")     # fio only reads
    target = on_disk / "t.bin"
    nvm_file.write_suite_file(target, 2 * nvm_file.BLOCK)
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(target))
    monkeypatch.setattr(capabilities, "profile_target_bytes", lambda: ("smoke", 2 * nvm_file.BLOCK))
    _unwritable(monkeypatch, on_disk)
    listed = {row["name"]: row["runs_here"]["cpu"] for row in commands._rows()}
    assert listed["bandana.replay"] == f"no: {_refusal_of_the_replay(on_disk)}"
    fio_missing = capabilities.missing_reason("fio")
    assert listed["bandana.fio"] == ("yes" if fio_missing is None else f"no: {fio_missing}")
    caps = {name: cap.to_dict() for name, cap in capabilities.detect().items()}
    doctor = {name: reason for name, device, reason in fingerprint.runs_here(caps)}
    assert doctor["bandana.replay"] == _refusal_of_the_replay(on_disk) == experiments.missing("bandana.replay")


def test_a_target_with_too_little_free_space_beside_it_cannot_run_here(on_disk, monkeypatch):
    """doctor and `impls list` said "yes" where `impls run` then refused for free space."""
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(1 << 40, 1 << 40, 5 << 20))
    target = on_disk / "t.bin"
    cap = capabilities.check_o_direct(target, size_bytes=10 << 20, sized_by="the quick profile's fio sweep")
    assert not cap.available
    assert cap.reason.startswith(f"not enough free space to create {target}: needs {(10 << 20) + (64 << 20)} bytes")
    assert "for the quick profile's fio sweep; point DLSYSBENCH_NVM_PATH at a disk with more free space, or run a " \
           "smaller profile" in cap.reason
    assert capabilities.check_o_direct(target, size_bytes=0).available       # no size asked: nothing to fit
    assert list(on_disk.iterdir()) == []


def test_a_block_device_smaller_than_the_profile_reads_cannot_run_here(monkeypatch):
    """Its size is what the device holds (faked: the test needs no device of a given size)."""
    blocks = sorted(os.listdir("/sys/block")) if os.path.isdir("/sys/block") else []
    usable = [d for d in (Path("/dev") / name for name in blocks)
              if d.exists() and capabilities.check_o_direct(d).available]
    if not usable:
        pytest.skip("no block device this user can read with O_DIRECT")
    device = usable[0]
    monkeypatch.setattr(nvm_file, "device_bytes", lambda path: 1 << 20)
    cap = capabilities.check_o_direct(device, size_bytes=2 << 20, sized_by="the full profile's fio sweep")
    assert not cap.available
    assert cap.reason == (f"block device {device} holds {1 << 20} bytes, fewer than the {2 << 20} bytes the full "
                          "profile's fio sweep reads; point DLSYSBENCH_NVM_PATH at a larger device or a file on a "
                          "disk, or run a smaller profile")
    assert capabilities.check_o_direct(device, size_bytes=1 << 20).available
