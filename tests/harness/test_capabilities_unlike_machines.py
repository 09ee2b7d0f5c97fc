"""Capability checks and `make doctor` on machines unlike this one: NVML failing after its init,
a kahypar that is installed but does not import, an NVM folder this user cannot write, and the
"what this machine can run" table read from the experiment catalogue."""
from __future__ import annotations

import errno
import io
import json
import os
import sys
import types

import pytest

from impls.harness import artifacts, capabilities, experiments, fingerprint, mounts, nvm_file


def _nvml_failing_after_init(shutdown_fails: bool = False) -> types.ModuleType:
    """A ``pynvml`` whose ``nvmlInit`` works and whose every query then raises NVMLError_Unknown."""
    nvml = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    class NVMLError_Unknown(NVMLError):
        def __str__(self):
            return "Unknown Error"

    def fail(*_):
        raise NVMLError_Unknown()

    nvml.NVMLError, nvml.NVMLError_Unknown, nvml.NVMLError_LibraryNotFound = NVMLError, NVMLError_Unknown, NVMLError
    nvml.calls = []
    nvml.nvmlInit = lambda: nvml.calls.append("init")

    def shutdown():
        nvml.calls.append("shutdown")
        if shutdown_fails:
            fail()

    nvml.nvmlShutdown = shutdown
    for name in ("nvmlSystemGetDriverVersion", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex",
                 "nvmlDeviceGetName", "nvmlDeviceGetMemoryInfo"):
        setattr(nvml, name, fail)
    return nvml


@pytest.mark.parametrize("shutdown_fails", [False, True])
def test_nvml_failing_after_init_is_a_missing_capability(monkeypatch, shutdown_fails):
    nvml = _nvml_failing_after_init(shutdown_fails)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    cap = capabilities.check_nvml()
    assert not cap.available
    assert cap.reason.startswith("NVML unavailable: Unknown Error"), cap.reason
    assert nvml.calls == ["init", "shutdown"]                 # shut down where it was initialised


def test_nvml_failing_after_init_leaves_doctor_and_artifact_saves_working(monkeypatch, tmp_path, capsys,
                                                                          fresh_checks):
    monkeypatch.setitem(sys.modules, "pynvml", _nvml_failing_after_init())
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(tmp_path / "target.bin"))
    fp = fingerprint.fingerprint()
    assert fp["capabilities"]["nvml"]["available"] is False
    assert fp["capabilities"]["nvml"]["reason"].startswith("NVML unavailable: Unknown Error")
    assert fp["gpu"]["driver"] is None                        # that field missing, nothing raised
    saved = artifacts.save_artifact("nvml_broken_run", {"x": 1}, experiment="t.t", synthetic=True)
    assert json.loads(saved.read_text())["data"] == {"x": 1}
    assert fingerprint.main([]) == 0
    out = capsys.readouterr().out
    assert "NVML unavailable: Unknown Error" in out and "internal error" not in out


@pytest.fixture
def broken_kahypar(tmp_path, monkeypatch):
    """A ``kahypar`` that is installed (found on sys.path) but raises ImportError when imported,
    as one missing its shared library does."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "kahypar.py").write_text('raise ImportError("libboost_program_options.so.1.74.0: cannot open '
                                     'shared object file: No such file or directory")\n')
    monkeypatch.delitem(sys.modules, "kahypar", raising=False)
    monkeypatch.syspath_prepend(str(site))


def test_a_kahypar_that_does_not_import_is_missing_with_the_import_error(broken_kahypar):
    cap = capabilities.check_kahypar()
    assert not cap.available
    assert "installed but does not import" in cap.reason and "libboost_program_options" in cap.reason
    assert "pip install kahypar" not in cap.reason


def test_a_kahypar_that_crashes_on_import_does_not_take_the_check_with_it(tmp_path, monkeypatch):
    """Every artifact save checks the capabilities: a native module that kills its process on
    import (here by SIGSEGV) must leave the check's process alive and read as missing."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "kahypar.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    monkeypatch.delitem(sys.modules, "kahypar", raising=False)
    monkeypatch.syspath_prepend(str(site))
    cap = capabilities.check_kahypar()
    assert not cap.available and cap.reason.endswith("does not import (killed by signal 11)"), cap.reason


def test_the_kahypar_layout_names_the_real_import_error(broken_kahypar):
    import numpy as np

    from impls.bandana.layout import layouts

    offsets, indices = np.array([0, 2, 4], np.int64), np.array([0, 1, 2, 3], np.int64)
    with pytest.raises(ImportError, match="installed but does not import.*libboost_program_options") as raised:
        layouts.kahypar_layout(offsets, indices, 4, vectors_per_block=2)
    assert "pip install" not in str(raised.value)


def test_a_kahypar_that_is_not_installed_still_says_how_to_install_it(monkeypatch):
    import numpy as np

    from impls.bandana.layout import layouts

    monkeypatch.setitem(sys.modules, "kahypar", None)         # `import kahypar` finds nothing
    assert capabilities.check_kahypar().reason == \
        "the optional package kahypar is not installed (pip install kahypar)"
    offsets, indices = np.array([0, 2], np.int64), np.array([0, 1], np.int64)
    with pytest.raises(ImportError, match=r"pip install kahypar"):
        layouts.kahypar_layout(offsets, indices, 2, vectors_per_block=2)


@pytest.fixture
def on_disk(tmp_path):
    if capabilities.filesystem_type(tmp_path) in capabilities.MEMORY_FILESYSTEMS:
        pytest.skip("pytest's tmp dir is in memory here")
    return tmp_path


def test_a_target_in_a_folder_this_user_cannot_write_is_refused_as_a_permission_problem(on_disk, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(on_disk / ".odirect-probe-x"))

    monkeypatch.setattr(capabilities.tempfile, "NamedTemporaryFile", denied)
    cap = capabilities.check_o_direct(on_disk / "nvm.bin", "DLSYSBENCH_NVM_PATH")
    assert not cap.available
    assert cap.reason.startswith(f"this user cannot write in {on_disk} ("), cap.reason
    assert "Permission denied" in cap.reason and "a directory this user can write" in cap.reason
    assert "failed" not in cap.reason


def test_a_ready_target_in_a_folder_this_user_cannot_write_passes_saying_the_replay_cannot_write(on_disk,
                                                                                                  monkeypatch):
    target = on_disk / "nvm.bin"
    nvm_file.write_suite_file(target, 2 * nvm_file.BLOCK)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if str(path) == str(on_disk)
                        else real_access(path, mode, **kw))
    cap = capabilities.check_o_direct(target)
    assert cap.available, cap.reason                          # fio only reads it
    assert "read-only for this user: the replay cannot write its store" in cap.detail
    monkeypatch.setattr(os, "access", real_access)
    assert "read-only" not in capabilities.check_o_direct(target).detail


def _caps(**available: bool) -> dict:
    caps = {name: {"name": name, "available": True, "reason": "", "detail": ""} for name in capabilities.CHECKS}
    for name, ok in available.items():
        caps[name].update(available=ok, reason="" if ok else f"no {name} here")
    return caps


def test_doctor_reads_what_runs_from_the_catalogue():
    caps = _caps(nvml=False, kahypar=False, real_amazon670k=False)
    rows = {(name, device): reason for name, device, reason in fingerprint.runs_here(caps)}
    catalogue = experiments.discover()
    assert set(rows) == {(name, d) for name, entry in catalogue.items() for d in entry.devices}
    for (name, device), reason in rows.items():
        needs = catalogue[name].requirements(device)
        assert reason == next((f"no {n} here" for n in needs if not caps[n]["available"]), None), (name, device)
    assert rows[("salus.hyperparam", "cuda")] is None          # runs without NVML, as `run` lets it
    assert rows[("salus.lanes", "cuda")] is None
    assert rows[("bandana.shp_vs_kahypar", "cpu")] == "no kahypar here"
    assert rows[("slide.real_amazon", "cpu")] == "no real_amazon670k here"


def test_doctor_agrees_with_run_on_this_machine():
    caps = {name: cap.to_dict() for name, cap in capabilities.detect().items()}
    for name, device, reason in fingerprint.runs_here(caps):
        assert reason == experiments.missing(name, device), (name, device)


def test_doctor_says_what_list_says_of_a_setting_no_run_can_use(tmp_path, monkeypatch):
    """A review found doctor saying "yes" where `python -m impls list` and `run` refuse every
    experiment: an artifact store that is a file. Both read one verdict now."""
    from impls.harness import commands

    not_a_folder = tmp_path / "artifacts"
    not_a_folder.write_text("x")
    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(not_a_folder))
    caps = {name: cap.to_dict() for name, cap in capabilities.detect().items()}
    listed = {row["name"]: row["runs_here"] for row in commands._rows()}
    for name, device, reason in fingerprint.runs_here(caps):
        assert reason is not None and "DLSYSBENCH_ARTIFACTS" in reason, (name, device, reason)
        assert listed[name][device] == f"no: {reason}"


def test_doctor_table_names_each_experiment_and_why_it_cannot_run(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(tmp_path / "target.bin"))
    fp = {**fingerprint.fingerprint(), "capabilities": _caps(cuda=False, nvml=False)}
    table = fingerprint.format_table(fp)
    assert "\n  yes  salus.lanes on cpu\n" in table
    assert "salus.lanes on cuda" in table and "(no cuda here)" in table
    assert "NVML" not in table.split("what this machine can run")[1]   # no experiment needs it


def test_doctor_table_survives_a_catalogue_that_does_not_load(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(tmp_path / "target.bin"))

    def broken():
        raise experiments.ExperimentError("impls/x/catalog.toml: cannot read the experiment catalog")

    monkeypatch.setattr(experiments, "discover", broken)
    table = fingerprint.format_table({**fingerprint.fingerprint(), "capabilities": _caps()})
    assert table.startswith("machine") and "the experiment catalogue does not load: impls/x/catalog.toml" in table


def test_mount_of_reads_escaped_names_and_skips_lines_that_are_not_mounts(tmp_path, monkeypatch):
    """The kernel writes a space, tab or backslash in a mount point as an octal escape; a line
    of fewer than three fields (seen on some container runtimes) must not fail every check."""
    odd = tmp_path / "my disk\twith\\back"
    odd.mkdir()
    escaped = str(odd).replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
    table = f"rootfs / rootfs rw 0 0\nbroken-line\n\n/dev/vd\\040x {escaped} ext4 rw 0 0\n"
    real_open = open
    monkeypatch.setattr(mounts, "open",
                        lambda f, *a, **k: io.StringIO(table) if f == "/proc/self/mounts" else real_open(f, *a, **k),
                        raising=False)
    assert capabilities.mount_of(odd / "nvm.bin") == {"mount_point": str(odd), "source": "/dev/vd x",
                                                      "fstype": "ext4"}
    assert capabilities.mount_of(tmp_path)["mount_point"] == "/"
