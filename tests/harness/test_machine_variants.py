"""Machines unlike the development box: a CUDA runtime with no device, a cgroup CPU quota or
memory limit, an affinity narrower than the host, an old or crippled fio, GPUs hidden by CUDA_VISIBLE_DEVICES,
and an ARM /proc/cpuinfo. Each is faked (files under tmp_path, patched functions); none needs
the hardware."""
from __future__ import annotations

import os
import sys
import types

import pytest

from impls.harness import capabilities, cpus, fingerprint, grid, memory_limit
from impls.harness.report import environment_table as et
from impls.harness.report.machine_state import MachineState


def _state(fp: dict) -> MachineState:
    return MachineState("m", fp, "", {})


# ----------------------------------------------------------------------------- CUDA

@pytest.fixture
def cuda_without_device(monkeypatch):
    """torch.cuda.is_available() True, device_count() 0, every device query raising."""
    torch = pytest.importorskip("torch")

    def no_device(*_):
        raise RuntimeError("No CUDA GPUs are available\n(second line)")

    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", no_device)
    monkeypatch.setattr(torch.cuda, "get_device_properties", no_device)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", None)     # no NVML: import fails
    return torch


def test_cuda_available_with_no_device_is_a_skip_not_an_error(cuda_without_device, fresh_checks):
    cap = capabilities.detect(("cuda",))["cuda"]
    assert not cap.available and "device_count() is 0" in cap.reason
    with pytest.raises(NotImplementedError, match="needs CUDA"):
        capabilities.require("cuda")
    info = fingerprint.gpu_info()
    assert info["available"] is False and info["devices"] == []


def test_a_failing_cuda_query_is_a_one_line_reason(cuda_without_device, monkeypatch, fresh_checks):
    def refused():
        raise RuntimeError("CUDA driver initialization failed\nsee the log")

    monkeypatch.setattr(cuda_without_device.cuda, "is_available", refused)
    cap = capabilities.check_cuda()
    assert not cap.available
    assert "CUDA driver initialization failed" in cap.reason and "\n" not in cap.reason
    assert fingerprint.gpu_info()["available"] is False


class _FakeNvml(types.ModuleType):
    """pynvml seeing one H100."""

    class NVMLError(Exception):
        pass

    class _Memory:
        total = 80 << 30

    def __init__(self):
        super().__init__("pynvml")
        self.nvmlInit = self.nvmlShutdown = lambda: None
        self.nvmlSystemGetDriverVersion = lambda: "550.54.15"
        self.nvmlDeviceGetCount = lambda: 1
        self.nvmlDeviceGetHandleByIndex = lambda index: index
        self.nvmlDeviceGetName = lambda handle: "NVIDIA H100 80GB HBM3"
        self.nvmlDeviceGetMemoryInfo = lambda handle: self._Memory


def test_a_gpu_hidden_by_cuda_visible_devices_is_recorded_as_hidden(monkeypatch, fresh_checks):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml())
    info = fingerprint.gpu_info()
    assert info["available"] is False
    [device] = info["devices"]
    assert device["visible"] is False
    assert device["name"] == "NVIDIA H100 80GB HBM3 (hidden by CUDA_VISIBLE_DEVICES='')"
    cap = capabilities.check_cuda()
    assert not cap.available and "CUDA_VISIBLE_DEVICES=''" in cap.reason
    label = et.hardware(_state({"host": {}, "gpu": info}), {})["gpu"]
    assert "hidden by CUDA_VISIBLE_DEVICES=''" in label and "not visible to the run" not in label


def test_a_cpu_only_torch_is_named_as_the_cause_whatever_cuda_visible_devices_says(monkeypatch, fresh_checks):
    # schedulers (SLURM, Kubernetes) set the variable as a matter of course: with a CPU-only
    # torch it is not the cause, and advice to unset it sends the user the wrong way
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml())
    monkeypatch.setattr(capabilities, "nvidia_gpu_seen", lambda: True)
    cap = capabilities.check_cuda()
    assert not cap.available and "CPU-only build" in cap.reason and "CUDA_VISIBLE_DEVICES" not in cap.reason
    assert "install a CUDA build of torch" in cap.reason
    [device] = fingerprint.gpu_info()["devices"]
    assert device["name"] == "NVIDIA H100 80GB HBM3 (not usable: torch is a CPU-only build)"


def test_the_report_does_not_label_an_unusable_gpu_as_the_runs():
    """A fingerprint recorded before devices said why: NVML's GPU, torch's none."""
    gpu = {"available": False, "devices": [{"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 80 << 30}]}
    label = et.hardware(_state({"host": {}, "gpu": gpu}), {})["gpu"]
    assert label.startswith("NVIDIA H100") and label.endswith("not visible to the run")
    usable = {"available": True, "devices": gpu["devices"]}
    assert "not visible" not in et.hardware(_state({"host": {}, "gpu": usable}), {})["gpu"]


# ----------------------------------------------------------------------------- CPUs

@pytest.fixture
def cgroup(tmp_path, monkeypatch):
    """A fake cgroup tree (``tmp_path/cgroup``) and /proc/self/cgroup; a 16-CPU host whose
    affinity allows all 16. Returns ``write(relative_path, text)``."""
    root = tmp_path / "cgroup"
    root.mkdir()
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text("0::/\n")
    monkeypatch.setattr(cpus, "CGROUP_ROOT", root)
    monkeypatch.setattr(cpus, "PROC_SELF_CGROUP", proc)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)

    def write(relative: str, text: str):
        path = root / relative if relative != "/proc/self/cgroup" else proc
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path
    return write


@pytest.mark.parametrize("files, cpus, quota", [
    ({"cpu.max": "100000 100000\n"}, 1, 1.0),                       # cgroup v2: one CPU
    ({"cpu.max": "150000 100000\n"}, 2, 1.5),                       # rounded up
    ({"cpu.max": "max 100000\n"}, 16, None),                        # no quota
    ({"cpu.max": "garbage\n"}, 16, None),                           # malformed: no quota
    ({"cpu/cpu.cfs_quota_us": "200000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 2, 2.0),   # v1
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, 16, None),     # v1: none
    ({"cpu/cpu.cfs_quota_us": "200000\n"}, 16, None),               # v1 without its period
    ({}, 16, None),                                                 # no cgroup files at all
])
def test_a_cgroup_cpu_quota_caps_the_usable_cpus(cgroup, files, cpus, quota):
    for relative, text in files.items():
        cgroup(relative, text)
    assert grid.usable_cores() == cpus            # the local cluster's worker count
    host = fingerprint.host_info()
    assert host["cores_logical"] == 16 and host["cores_usable"] == cpus and host.get("cpu_quota") == quota
    assert capabilities.cpu_quota() == quota and capabilities.effective_cpus() == cpus


def test_an_ancestor_cgroups_quota_counts_and_an_unreadable_file_is_none(cgroup):
    cgroup("/proc/self/cgroup", "0::/user.slice/job.scope\n")
    cgroup("user.slice/cpu.max", "300000 100000\n")
    cgroup("user.slice/job.scope/cpu.max", "max 100000\n")
    assert capabilities.cpu_quota() == 3.0 and capabilities.effective_cpus() == 3
    (cpus.CGROUP_ROOT / "user.slice" / "cpu.max").unlink()
    (cpus.CGROUP_ROOT / "user.slice" / "cpu.max").mkdir()       # read raises IsADirectoryError
    assert capabilities.cpu_quota() is None and capabilities.effective_cpus() == 16


def test_a_quota_is_shown_by_make_doctor_and_the_report(cgroup):
    cgroup("cpu.max", "150000 100000\n")
    host = fingerprint.host_info()
    assert "2 usable (cgroup quota 1.5 CPUs)" in fingerprint.cores_text(host)
    shown = et.hardware(_state({"host": host}), {})
    assert (shown["cores"], shown["usable"]) == ("16 logical", "2 (cgroup quota 1.5 CPUs)")
    assert "2 usable (cgroup quota 1.5 CPUs)" in dict(et._host(host).rows)["cores"]


def test_an_affinity_narrower_than_the_host_is_what_is_usable(cgroup, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    host = fingerprint.host_info()
    assert host["cores_usable"] == 2 and grid.usable_cores() == 2
    assert "16 logical" in fingerprint.cores_text(host) and "2 usable" in fingerprint.cores_text(host)
    shown = et.hardware(_state({"host": host}), {})
    assert (shown["cores"], shown["usable"]) == ("16 logical", "2")
    same = {**host, "cores_logical": 2}
    assert et.hardware(_state({"host": same}), {})["cores"] == "2 logical"   # nothing to add
    assert "usable" not in et.hardware(_state({"host": same}), {})


def test_hyperparam_host_workers_0_is_one_per_usable_cpu(cgroup, monkeypatch):
    from impls.salus.experiments.hyperparam import hyperparam_experiment

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    cgroup("cpu.max", "200000 100000\n")
    sizes = dict(workloads=["mlp_b64"], n_jobs=2, iterations=2, lr=[1e-4, 0.1], capacity_peaks=2,
                 rule="salus", threads=1, packed_threads=1, host_workers=0, bins=5)
    assert hyperparam_experiment(sizes, "cpu", progress=False)["host_workers"] == 2


# ----------------------------------------------------------------------------- fio

@pytest.fixture
def fake_fio(tmp_path, monkeypatch):
    """``install(version_line)``: a fio on PATH printing that for --version."""
    def install(line: str):
        folder = tmp_path / "bin"
        folder.mkdir(exist_ok=True)
        exe = folder / "fio"
        exe.write_text(f"#!/bin/sh\necho '{line}'\n")
        exe.chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
        return exe
    return install


@pytest.mark.parametrize("line, available, says", [
    ("fio-2.2", False, "fio 3.0 or newer"),
    ("fio-3.28", True, "fio-3.28"),
    ("fio-3.36-12-gabc", True, "fio-3.36-12-gabc"),
    ("fio version unreadable", True, "version unknown"),
])
def test_check_fio_requires_fio_3(fake_fio, line, available, says):
    fake_fio(line)
    cap = capabilities.check_fio()
    assert cap.available is available
    assert says in (cap.detail if available else cap.reason)
    assert "\n" not in cap.reason


def test_fio_version_parsing():
    assert capabilities.fio_version_tuple("fio-3.28") == (3, 28)
    assert capabilities.fio_version_tuple("fio-3.36-12-gabc") == (3, 36)
    assert capabilities.fio_version_tuple("fio-2.2") == (2, 2)
    assert capabilities.fio_version_tuple("something else") is None


def test_no_working_fio_engine_is_an_asv_skip(tmp_path, monkeypatch):
    from impls.bandana.experiments import device
    from impls.bandana.nvm import fio

    monkeypatch.setattr(fio, "fio_version", lambda: "fio-3.33")
    monkeypatch.setattr(fio, "engine_unavailable_reason",
                        lambda engine: f"fio cannot use ioengine={engine}: engine not loadable")
    sizes = {"file_bytes": 1 << 20, "block_sizes": [4096], "queue_depths": [1], "engines": ["libaio", "io_uring"],
             "secondary_engine_block_sizes": [], "runtime_s": 0.1, "ramp_s": 0.0}
    with pytest.raises(NotImplementedError, match=r"no fio ioengine of libaio, io_uring works here.*io_uring"):
        device.characterize_device(tmp_path / "target.bin", sizes, progress=False)
    assert not (tmp_path / "target.bin").exists()


# ----------------------------------------------------------------------------- ARM

ARM_CORES = "".join(f"processor\t: {i}\nBogoMIPS\t: 243.75\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n\n"
                    for i in range(4))


@pytest.mark.parametrize("cpuinfo, expected", [
    (ARM_CORES + "Hardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n", "Raspberry Pi 4 Model B Rev 1.4"),
    (ARM_CORES + "Hardware\t: BCM2835\n", "BCM2835"),
    (ARM_CORES, "aarch64 (CPU part 0xd0c)"),
    ("processor\t: 0\n", "aarch64"),
])
def test_an_arm_cpuinfo_still_names_the_cpu(monkeypatch, cpuinfo, expected):
    real = fingerprint._read
    monkeypatch.setattr(fingerprint, "_read", lambda path: cpuinfo if path == "/proc/cpuinfo" else real(path))
    monkeypatch.setattr(fingerprint.platform, "processor", lambda: "")
    monkeypatch.setattr(fingerprint.platform, "machine", lambda: "aarch64")
    host = fingerprint.host_info()
    assert host["cpu_model"] == expected
    assert host["cores_physical"] is None
    assert fingerprint.cores_text(host).startswith(f"{os.cpu_count()} logical, ? physical")


def test_a_quota_caps_the_thread_pools_the_user_left_unset(cgroup):
    """numba and OpenMP size their pools by the affinity mask: under a 1.5-CPU quota on 16
    CPUs they would start 16 threads; a value the user set is kept."""
    cgroup("cpu.max", "150000 100000\n")
    environ = {"OMP_NUM_THREADS": "5"}
    assert cpus.cap_thread_pools(environ) == {"NUMBA_NUM_THREADS": "2"}
    assert environ == {"OMP_NUM_THREADS": "5", "NUMBA_NUM_THREADS": "2",
                       cpus.CAPPED_ENV: "NUMBA_NUM_THREADS"}      # noted for child processes
    cgroup("cpu.max", "max 100000\n")                     # no quota: nothing to cap
    assert cpus.cap_thread_pools(empty := {}) == {} and empty == {}


def test_importing_impls_caps_numbas_pool_under_a_quota(tmp_path):
    """In a fresh interpreter whose cgroup files say 1 CPU of 2 in its affinity mask, numba's
    pool, imported after impls, has 1 thread."""
    import subprocess
    import sys

    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cpu.max").write_text("100000 100000\n")
    (tmp_path / "self-cgroup").write_text("0::/\n")
    code = (f"import os, pathlib; os.sched_setaffinity(0, {{0, 1}})\n"
            "from impls.harness import cpus\n"
            f"cpus.CGROUP_ROOT = pathlib.Path({str(root)!r}); "
            f"cpus.PROC_SELF_CGROUP = pathlib.Path({str(tmp_path / 'self-cgroup')!r})\n"
            "import importlib, impls; importlib.reload(impls)\n"
            "import numba; print(numba.config.NUMBA_NUM_THREADS, os.environ['OMP_NUM_THREADS'])\n")
    env = {k: v for k, v in os.environ.items() if k not in cpus.POOL_VARIABLES}
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs in this process's affinity mask")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["1", "1"]


def test_an_empty_pool_variable_counts_as_unset(cgroup):
    cgroup("cpu.max", "100000 100000\n")
    environ = {"NUMBA_NUM_THREADS": "", "OMP_NUM_THREADS": " "}
    assert cpus.cap_thread_pools(environ) == {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    assert cpus.cap_thread_pools(only := {}, names=("OMP_NUM_THREADS",)) == {"OMP_NUM_THREADS": "1"}
    assert only == {"OMP_NUM_THREADS": "1", cpus.CAPPED_ENV: "OMP_NUM_THREADS"}


# ----------------------------------------------------------------------------- memory

GIB = 2 ** 30


@pytest.mark.parametrize("files, limit, room", [
    ({"memory.max": f"{2 * GIB}\n", "memory.current": f"{GIB}\n"}, 2 * GIB, GIB),           # v2
    ({"memory.max": f"{2 * GIB}\n", "memory.current": f"{GIB}\n",
      "memory.stat": f"anon 5\ninactive_file {GIB // 2}\n"}, 2 * GIB, GIB + GIB // 2),      # cache drops
    ({"memory.max": "max\n", "memory.current": f"{GIB}\n"}, None, None),                   # no limit
    ({"memory/memory.limit_in_bytes": f"{2 * GIB}\n"}, 2 * GIB, 2 * GIB),                    # v1, no usage
    ({"memory/memory.limit_in_bytes": "9223372036854771712\n",
      "memory/memory.usage_in_bytes": f"{GIB}\n"}, None, None),                              # v1 unlimited
    ({"memory.max": "garbage\n"}, None, None),                                              # malformed
    ({}, None, None),
])
def test_a_cgroup_memory_limit_is_read(cgroup, files, limit, room):
    for relative, text in files.items():
        cgroup(relative, text)
    assert memory_limit.memory_limit() == limit and memory_limit.memory_headroom() == room


def test_an_ancestors_memory_limit_counts_and_bounds_what_a_run_may_allocate(cgroup):
    from impls.slide.footprint import available_bytes

    cgroup("/proc/self/cgroup", "4:memory:/docker/abc\n0::/\n")
    cgroup("memory/docker/memory.limit_in_bytes", f"{GIB}\n")
    cgroup("memory/docker/memory.usage_in_bytes", f"{GIB // 4}\n")
    cgroup("memory/docker/abc/memory.limit_in_bytes", f"{4 * GIB}\n")
    assert memory_limit.memory_limit() == GIB and memory_limit.memory_headroom() == GIB - GIB // 4
    assert available_bytes() <= GIB - GIB // 4          # whatever the host's MemAvailable


def test_make_doctor_and_the_report_show_a_memory_limit_below_the_ram(cgroup):
    cgroup("memory.max", f"{2 * GIB}\n")
    host = {**fingerprint.host_info(), "ram_bytes": 24 * GIB}
    assert host["memory_limit"] == 2 * GIB
    assert fingerprint.ram_text(host) == "24.0 GiB (cgroup limit 2.0 GiB)"
    assert dict(et._host(host).rows)["RAM"] == "24.0 GiB (cgroup limit 2.0 GiB)"
    roomy = {**host, "memory_limit": 64 * GIB}                  # a limit that takes nothing away
    assert fingerprint.ram_text(roomy) == "24.0 GiB" and dict(et._host(roomy).rows)["RAM"] == "24.0 GiB"


def test_a_cpu_only_torch_on_a_machine_without_a_gpu_says_there_is_none(monkeypatch, fresh_checks):
    # installing a CUDA torch (gigabytes) cures nothing where no GPU is there: say that instead
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(capabilities, "nvidia_gpu_seen", lambda: False)
    cap = capabilities.check_cuda()
    assert not cap.available and cap.reason.startswith("needs CUDA: no NVIDIA GPU found on this machine")
    assert "install" not in cap.reason


def test_an_nvidia_gpu_is_seen_by_its_device_node_or_the_drivers_list(tmp_path):
    class NoNvml:
        class NVMLError(Exception):
            pass

        def nvmlInit(self):
            raise self.NVMLError("NVML Shared Library Not Found")

    class OneGpu:
        def nvmlInit(self):
            pass

        def nvmlDeviceGetCount(self):
            return 1

        def nvmlShutdown(self):
            pass

    dev, proc, none = tmp_path / "dev", tmp_path / "gpus", NoNvml()
    dev.mkdir()
    for name in ("nvidiactl", "nvidia-uvm", "null"):      # driver nodes of no GPU, and others
        (dev / name).touch()
    assert not capabilities.nvidia_gpu_seen(dev, proc, none)
    for node in ("nvidia0", "dxg"):                      # a GPU's node; WSL's GPU
        (dev / node).touch()
        assert capabilities.nvidia_gpu_seen(dev, proc, none)
        (dev / node).unlink()
    (proc / "0000:17:00.0").mkdir(parents=True)
    assert capabilities.nvidia_gpu_seen(dev, proc, none)
    assert not capabilities.nvidia_gpu_seen(tmp_path / "missing", tmp_path / "missing-too", none)
    assert capabilities.nvidia_gpu_seen(tmp_path / "missing", tmp_path / "missing-too", OneGpu())   # NVML's count

    class NoGpu(OneGpu):                                  # NVML loads, and counts none
        def nvmlDeviceGetCount(self):
            return 0
    assert not capabilities.nvidia_gpu_seen(tmp_path / "missing", tmp_path / "missing-too", NoGpu())


def test_a_driver_older_than_torchs_cuda_is_named_not_the_visible_devices(monkeypatch, fresh_checks):
    """torch only warns (and says no device) when the driver is too old for its CUDA build;
    a scheduler's CUDA_VISIBLE_DEVICES=0 is not the cause, and advice to unset it is wrong."""
    import warnings

    torch = pytest.importorskip("torch")

    asked = []

    def too_old():                                           # as c10: the warning only at the first call
        if not asked:
            warnings.warn("CUDA initialization: The NVIDIA driver on your system is too old (found version "
                          "11040).\nPlease update your GPU driver.")
        asked.append(1)
        return False

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "is_available", too_old)
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml())
    fp = fingerprint.fingerprint()                           # make doctor: the GPU listing asks first
    [device] = fp["gpu"]["devices"]                          # NVML's GPU, with torch's words, not the variable's
    assert device["name"].startswith("NVIDIA H100 80GB HBM3 (not usable: CUDA initialization: The NVIDIA driver")
    assert "CUDA_VISIBLE_DEVICES" not in device["name"] and "\n" not in device["name"]
    for reason in (fp["capabilities"]["cuda"]["reason"], capabilities.check_cuda().reason):
        assert "driver on your system is too old (found version 11040)." in reason, reason
        assert "unset it" not in reason and "\n" not in reason, reason
    assert len(asked) >= 2


def test_a_gpu_torch_has_no_kernels_for_is_missing_with_why(monkeypatch, fresh_checks):
    torch = pytest.importorskip("torch")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "Tesla P100-PCIE-16GB")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: (6, 0))
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: ["sm_75", "sm_80", "sm_86", "sm_90", "sm_120"])
    cap = capabilities.check_cuda()
    assert not cap.available and "Tesla P100-PCIE-16GB (compute capability 6.0)" in cap.reason
    assert "sm_75 sm_80 sm_86 sm_90 sm_120" in cap.reason
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: (8, 9))     # an Ada card runs sm_86
    assert capabilities.check_cuda().available


@pytest.mark.parametrize("capability, arch, runs", [
    ((8, 9), ["sm_80", "sm_86"], True), ((8, 0), ["sm_86"], False), ((9, 0), ["sm_90a"], True),
    ((9, 1), ["sm_90a"], False), ((12, 0), ["sm_120"], True), ((12, 1), ["sm_120f"], True),
    ((10, 0), ["sm_90", "compute_90"], True), ((8, 6), ["compute_90"], False), ((6, 1), [], True),
    ((10, 0), ["compute_90a"], False), ((9, 0), ["compute_90a"], True),
])
def test_which_gpus_a_torch_build_has_kernels_for(capability, arch, runs):
    assert capabilities.runs_kernels_of(capability, arch) is runs
