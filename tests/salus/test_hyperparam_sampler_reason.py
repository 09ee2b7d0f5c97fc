"""The hyper-parameter run on a device whose utilisation sampler cannot work says why in its
artifact ("not measured: <reason>") instead of leaving the sampler out without a word."""
from __future__ import annotations

import sys
import types

from impls.salus.core.executor import Executor
from impls.salus.experiments import hyperparam
from salus_fakes import FakeClock, FakeJob


def _no_driver_nvml() -> types.ModuleType:
    """A ``pynvml`` whose ``nvmlInit`` fails as on a machine without the NVIDIA driver loaded."""
    nvml = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    class NVMLError_LibraryNotFound(NVMLError):
        pass

    def init():
        raise NVMLError("Driver Not Loaded")

    nvml.NVMLError, nvml.NVMLError_LibraryNotFound, nvml.nvmlInit = NVMLError, NVMLError_LibraryNotFound, init
    nvml.nvmlShutdown = lambda: None
    return nvml


def _run(device):
    clock = FakeClock()
    executor = Executor("fifo", "cpu", clock=clock, sleep=clock.sleep, log_iterations=True)
    return hyperparam._run(executor, [FakeJob(clock, i, 1.0, 2) for i in range(2)], device, 4)


def test_a_cuda_run_without_nvml_records_why_its_gpu_use_was_not_sampled(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _no_driver_nvml())
    monkeypatch.setattr(hyperparam, "nvml_uuid_of_cuda_device", lambda index: None)   # no torch.cuda here
    out = _run(types.SimpleNamespace(kind="cuda", index=0))
    assert out["done"] == 2 and not out["failed"]                     # the run itself goes on
    sampler = out["sampler"]
    assert sampler is not None, "GPU use over time left out without a reason"
    assert sampler["kind"] == hyperparam.NVML_KIND
    assert sampler["status"] == "not measured: NVML unavailable: Driver Not Loaded"
    assert "busy_pct" not in sampler                                  # nothing faked


def test_a_cpu_run_without_proc_stat_records_why_its_cpu_use_was_not_sampled(monkeypatch):
    from impls.salus.memory import utilisation

    def unreadable(path="/proc/stat"):
        raise FileNotFoundError(2, "No such file or directory", path)

    monkeypatch.setattr(utilisation, "read_proc_stat", unreadable)          # no /proc/stat on this machine
    monkeypatch.setattr(hyperparam, "CpuSampler", lambda interval_s: utilisation.CpuSampler(interval_s, unreadable))
    out = _run(types.SimpleNamespace(kind="cpu"))
    assert out["done"] == 2
    assert out["sampler"]["status"].startswith("not measured: ") and "/proc/stat" in out["sampler"]["status"]
