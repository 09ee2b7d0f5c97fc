"""Salus's CUDA paths on a fake ``torch.cuda`` / ``pynvml`` (no GPU): device warm-up before the
memory baseline, lane streams ordered after the current stream, timers on ``cuda:N``'s stream,
tracebacks dropped before memory is released, NVML failures, and the names a table may hold."""
from __future__ import annotations

import gc
import threading
import time
import types
import weakref

import pytest
import torch
from torch.overrides import TorchFunctionMode

from impls.salus.core.devices import CpuDevice, CudaDevice
from impls.salus.core.executor import Executor, Submission
from impls.salus.memory import memory_profile, utilisation
from impls.salus.memory.lane_executor import LaneExecutor
from salus_fakes import FakeClock, FakeCuda, FakeJob


class MatmulsMakeWorkspaces(TorchFunctionMode):
    """Log each ``torch.matmul`` on the fake's current stream as ``("matmul", stream)``; the first
    on a stream adds a cuBLAS workspace of ``workspace`` bytes to the fake allocator, and it stays."""

    def __init__(self, cuda, workspace=0):
        super().__init__()
        self.cuda, self.workspace, self.warm_streams = cuda, workspace, set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.matmul:
            self.cuda.log.append(("matmul", self.cuda.current))
            if self.cuda.current not in self.warm_streams:
                self.warm_streams.add(self.cuda.current)
                self.cuda.allocated += self.workspace
                self.cuda.peak = max(self.cuda.peak, self.cuda.allocated)
        return func(*args, **(kwargs or {}))


def fake_cuda_device(cuda, index=0):
    """A :class:`CudaDevice` on the fake module whose tensors live on the CPU."""
    device = CudaDevice(index, cuda=cuda)
    device.torch_device = torch.device("cpu")
    return device


# ---------------------------------------------------------------- 1. warm-up before the baseline

def test_profile_memory_warms_the_device_before_reading_its_baseline(monkeypatch):
    """The first matmul's cuBLAS workspace stays allocated: read after it, it is no job's bytes."""
    cuda = FakeCuda()

    class Job:
        optimizer = None

        def __init__(self):
            cuda.allocated += 500                      # weights and data

        def step(self, count=True):
            x = torch.ones(4, 4)
            torch.matmul(x, x)
            cuda.peak = max(cuda.peak, cuda.allocated + 200)   # activations, freed at the end

        def release(self):
            cuda.allocated -= 500

    monkeypatch.setattr(memory_profile, "build_job", lambda *args, **kwargs: Job())
    with MatmulsMakeWorkspaces(cuda, workspace=4096):
        out = memory_profile.profile_memory(["w"], fake_cuda_device(cuda), iterations=2, timing_iterations=1)
    first_read = cuda.log.index(("memory_allocated",))
    assert ("matmul", "default") in cuda.log[:first_read]                 # warmed first
    assert ("device_sync",) in cuda.log[cuda.log.index(("matmul", "default")):first_read]
    row = out["workloads"]["w"]
    assert row["persistent_bytes"] == 500 and row["ephemeral_bytes"] == 200, row


def test_warm_runs_a_matmul_on_each_stream_it_is_given():
    cuda = FakeCuda()
    lanes = [cuda.Stream(), cuda.Stream()]
    with MatmulsMakeWorkspaces(cuda):
        fake_cuda_device(cuda).warm(lanes)
    assert [e[1] for e in cuda.log if e[0] == "matmul"] == ["default", *lanes]
    assert cuda.log[-1] == ("device_sync",)


# ---------------------------------------------------------------- 2. lanes after the current stream

class LoggedJob:
    """Logs its build (on the current stream), each launch (on its stream) and its release."""

    def __init__(self, cuda, job_id, iterations=2, fail=None):
        self.cuda, self.job_id, self.total_iterations, self.fail = cuda, job_id, iterations, fail
        self.workload = "w"
        cuda.log.append(("build", job_id, cuda.current))

    def step(self):
        if self.fail is not None:
            raise self.fail
        self.cuda.log.append(("launch", self.job_id, self.cuda.current))

    def release(self):
        self.cuda.log.append(("release", self.job_id))


def _executor(kind, cuda):
    device = CudaDevice(0, cuda=cuda)
    if kind == "lanes":
        return LaneExecutor("pack", device, capacity_bytes=800, use_pools=False, cuda=cuda,
                            memory={"w": {"persistent_bytes": 100, "ephemeral_bytes": 300}})
    return Executor("pack", device)


@pytest.mark.parametrize("kind", ["executor", "lanes"])
def test_a_job_taking_a_lane_orders_it_after_the_stream_it_was_built_on(kind):
    cuda = FakeCuda()
    ex = _executor(kind, cuda)
    res = ex.run([Submission(LoggedJob(cuda, i)) for i in range(3)])
    assert res["done"] == 3
    for i in range(3):
        built = cuda.log.index(("build", i, "default"))
        first = next(n for n, e in enumerate(cuda.log) if e[:2] == ("launch", i))
        lane = cuda.log[first][2]
        assert lane != "default"
        waits = [e for e in cuda.log[built:first] if e[0] == "wait_stream" and e[1] is lane]
        assert waits and waits[-1][2] == ("current stream of", "cuda:0"), cuda.log


@pytest.mark.parametrize("kind", ["executor", "lanes"])
def test_a_failed_job_is_released_only_after_its_lanes_queued_work_is_done(kind):
    cuda = FakeCuda()
    ex = _executor(kind, cuda)
    res = ex.run([Submission(LoggedJob(cuda, 0)), Submission(LoggedJob(cuda, 1, fail=RuntimeError("bad kernel")))])
    assert res["failed"] == [1] and res["done"] == 1
    lane = next(r.lane for r in ex.records if r.job_id == 1)
    stream = getattr(lane, "stream", lane)
    released = cuda.log.index(("release", 1))
    assert ("stream_sync", stream) in cuda.log[:released], cuda.log
    assert cuda.log.index(("empty_cache",)) > released


def test_a_lane_that_cannot_be_waited_for_still_fails_its_job_alone():
    cuda = FakeCuda()

    def broken(self):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    cuda.Stream.synchronize = broken
    res = Executor("pack", CudaDevice(0, cuda=cuda)).run(
        [Submission(LoggedJob(cuda, 0)), Submission(LoggedJob(cuda, 1, fail=RuntimeError("bad kernel")))])
    assert res["failed"] == [1] and res["done"] == 1
    assert ("release", 1) in cuda.log


# ---------------------------------------------------------------- 4. timers on cuda:N

def test_a_timer_on_cuda_n_records_on_that_devices_stream():
    cuda = FakeCuda()
    device = CudaDevice(1, cuda=cuda)
    timer = device.timer()
    timer.start()
    timer.stop()
    assert timer.elapsed_ms() == 1.0
    assert [e[1] for e in cuda.log if e[0] == "record"] == [("current stream of", "cuda:1")] * 2
    lane = device.new_lane()
    cuda.log.clear()
    timer = device.timer(lane)
    timer.start()
    timer.stop()
    assert [e[1] for e in cuda.log if e[0] == "record"] == [lane, lane]


def test_serial_iterations_on_cuda_n_are_timed_on_its_stream():
    cuda = FakeCuda()
    res = Executor("fifo", CudaDevice(2, cuda=cuda)).run([Submission(LoggedJob(cuda, 0))])
    assert res["done"] == 1
    assert {e[1] for e in cuda.log if e[0] == "record"} == {("current stream of", "cuda:2")}


# ---------------------------------------------------------------- 5. tracebacks dropped first

def test_a_failed_iterations_tensors_are_freed_before_memory_is_released():
    refs, alive = [], []

    class Device(CpuDevice):
        def release_memory(self):
            gc.collect()
            alive.append([r() is not None for r in refs])

    class Failing(FakeJob):
        def step(self):
            def inner():
                held_by_the_context = torch.ones(1024)
                refs.append(weakref.ref(held_by_the_context))
                raise KeyError("lookup")

            activations = torch.ones(1 << 16)    # what an OOM'ing forward holds
            refs.append(weakref.ref(activations))
            try:
                inner()
            except KeyError:
                raise RuntimeError("out of memory (stand-in)")

    clock = FakeClock()
    ex = Executor("fifo", Device(), clock=clock, sleep=clock.sleep)
    res = ex.run([Submission(Failing(clock, 0, 1.0, 2))])
    assert res["failed"] == [0]
    assert alive == [[False, False]]
    trace = ex.records[0].error_trace
    assert "raise RuntimeError" in trace and "KeyError" in trace and "inner()" in trace   # text kept


# ---------------------------------------------------------------- 3. NVML failures

class FakeNvml:
    class NVMLError(Exception):
        pass

    class NVMLError_LibraryNotFound(NVMLError):
        pass

    class NVMLError_NotSupported(NVMLError):
        pass

    class NVMLError_NotFound(NVMLError):
        pass

    def __init__(self, rates_ok=True, uuids=None):
        self.rates_ok, self.uuids = rates_ok, uuids
        self.inits = self.shutdowns = 0

    def nvmlInit(self):
        self.inits += 1

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if self.uuids is not None and uuid not in self.uuids:
            raise self.NVMLError_NotFound("Not Found")
        return uuid

    def nvmlDeviceGetUtilizationRates(self, handle):
        if not self.rates_ok:
            raise self.NVMLError_NotSupported("Not Supported")   # what a MIG slice's handle gives
        return types.SimpleNamespace(gpu=50, memory=1)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return types.SimpleNamespace(used=1, total=2)


def test_an_nvml_error_while_sampling_ends_sampling_with_its_reason():
    nvml = FakeNvml(rates_ok=False)
    sampler = utilisation.NvmlSampler(0, 0.005, nvml=nvml, uuid="MIG-1234")
    died = []
    before = threading.excepthook
    threading.excepthook = lambda args: died.append(args.exc_type)
    try:
        sampler.start()
        deadline = time.monotonic() + 5
        while sampler.error is None and time.monotonic() < deadline:
            time.sleep(0.005)
        samples = sampler.stop()
    finally:
        threading.excepthook = before
    assert died == []
    assert sampler.error == "NVMLError_NotSupported: Not Supported"
    assert samples["t_s"] == [] and "busy_pct" not in samples
    assert nvml.inits == nvml.shutdowns


def test_a_gpu_nvml_does_not_know_fails_start_clearly_and_shuts_nvml_down():
    nvml = FakeNvml(uuids=set())
    with pytest.raises(RuntimeError, match="NVML has no GPU 'GPU-deadbeef'"):
        utilisation.NvmlSampler(0, 0.01, nvml=nvml, uuid="GPU-deadbeef").start()
    assert nvml.inits == nvml.shutdowns


def test_a_mig_slices_bare_uuid_is_found_under_its_mig_name():
    props = lambda uuid: (lambda i: types.SimpleNamespace(uuid=uuid))   # noqa: E731
    assert utilisation.nvml_uuid_of_cuda_device(0, props("MIG-a1b2")) == "MIG-a1b2"
    assert utilisation.nvml_uuid_of_cuda_device(0, props("GPU-a1b2")) == "GPU-a1b2"
    bare = utilisation.nvml_uuid_of_cuda_device(0, props("a1b2"))
    assert bare == "GPU-a1b2"
    nvml = FakeNvml(uuids={"MIG-a1b2"})
    sampler = utilisation.NvmlSampler(0, 0.01, nvml=nvml, uuid=bare)
    sampler.start()
    try:
        assert sampler._handle == "MIG-a1b2"
    finally:
        sampler.stop()
    assert nvml.inits == nvml.shutdowns


def _hyperparam_run(monkeypatch, nvml, ms=1.0, iterations=3):
    from impls.salus.experiments import hyperparam

    monkeypatch.setattr(hyperparam, "_sampler", lambda device: (
        utilisation.NvmlSampler(0, 0.05, nvml=nvml, uuid="GPU-x"), "nvml busy %"))
    clock = FakeClock()
    ex = Executor("fifo", "cpu", clock=clock, sleep=clock.sleep, log_iterations=True)
    jobs = [FakeJob(clock, i, ms, iterations) for i in range(2)]
    return hyperparam._run(ex, jobs, None, 4)


def test_hyperparam_runs_without_a_sampler_that_cannot_start(monkeypatch):
    nvml = FakeNvml(uuids=set())
    out = _hyperparam_run(monkeypatch, nvml)
    assert out["done"] == 2 and not out["failed"]
    assert out["sampler"]["status"].startswith("not measured: NVML has no GPU 'GPU-x'")
    assert "busy_pct" not in out["sampler"]
    assert nvml.inits == nvml.shutdowns


def test_hyperparam_reads_a_failed_sampler_as_not_measured(monkeypatch):
    out = _hyperparam_run(monkeypatch, FakeNvml(rates_ok=False), ms=1000.0)
    assert out["done"] == 2
    assert out["sampler"]["status"] == "not measured: NVMLError_NotSupported: Not Supported"


# ---------------------------------------------------------------- 7. NVML's averaging window

def test_a_run_shorter_than_nvmls_averaging_window_is_flagged(monkeypatch):
    short = _hyperparam_run(monkeypatch, FakeNvml(), ms=10.0)      # 6 iterations of 10 ms
    sampler = short["sampler"]
    assert sampler["interval_s"] == 0.05 and sampler["averaging_window_s"][1] == 1.0
    assert sampler["too_short"] is True
    assert sampler["status"].startswith("not measured: run of") and "too short for NVML's averaging window" \
        in sampler["status"]
    assert sampler["busy_pct"]                                      # the samples are kept, not faked
    long = _hyperparam_run(monkeypatch, FakeNvml(), ms=500.0)      # 3 s
    assert long["sampler"]["too_short"] is False and long["sampler"]["status"] == "measured"


# ---------------------------------------------------------------- 6. names a table holds

@pytest.mark.parametrize("sizes, message", [
    ({"mix": ["mlp_b64", "mlp_b64"]}, r"mix: \['mlp_b64', 'mlp_b64'\] names one workload twice \('mlp_b64'\)"),
    ({"workloads": ["vae_b32", "mlp_b64", "vae_b32"]}, "workloads: .* names one workload twice"),
    ({"rules": ["salus", "salus"]}, "rules: .* names one lane rule twice"),
    ({"mix": []}, r"\[salus_policies\] of impls/profiles.toml: mix: the list is empty; name at least one workload"),
    ({"workloads": []}, "workloads: the list is empty"),
    ({"policies": []}, "policies: the list is empty; name at least one policy"),
])
def test_a_repeated_name_or_an_empty_list_is_refused_naming_its_setting(sizes, message):
    from impls.salus.experiments.names import checked_names

    with pytest.raises(ValueError, match=message):
        checked_names(sizes, "salus_policies")


def test_a_trace_needs_distinct_workloads():
    from impls.salus.core.traces import poisson_trace

    with pytest.raises(ValueError, match="workloads is empty"):
        poisson_trace(3, 0.5, [], {}, (0.1, 1.0))
    with pytest.raises(ValueError, match="workloads names 'a' twice"):
        poisson_trace(3, 0.5, ["a", "a"], {"a": 1.0}, (0.1, 1.0))


def test_the_policy_experiment_refuses_an_empty_policy_list_before_any_work(monkeypatch):
    from impls.salus.experiments import scheduling

    monkeypatch.setattr(scheduling, "profile_workloads",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("profiled first")))
    sizes = dict(scheduling.salus_sizes("salus_policies", "smoke"), policies=[])
    with pytest.raises(ValueError, match="policies: the list is empty"):
        scheduling.policy_experiment(sizes, progress=False)


@pytest.mark.parametrize("sampler, drawn", [
    ({"kind": "nvml busy %", "interval_s": 0.05, "status": "not measured: NVML has no GPU 'GPU-x'"}, False),
    ({"kind": "nvml busy %", "t_s": [], "status": "measured"}, False),
    ({"kind": "nvml busy %", "t_s": [0.1, 0.2], "busy_pct": [10.0, 20.0], "too_short": True,
      "status": "not measured: run of 0.5 s too short for NVML's averaging window"}, False),
    ({"kind": "nvml busy %", "t_s": [0.1, 0.2], "busy_pct": [10.0, 20.0], "status": "measured"}, True),
])
def test_the_utilisation_figure_draws_only_measured_samples(sampler, drawn):
    """A sampler that failed, took no sample, or ran within NVML's averaging window is named in
    the legend, not drawn (and does not break the figure)."""
    from impls.salus.figures import lanes as lane_figures

    busy = {"t_s": [0.1, 0.2], "busy": [0.5, 0.6], "busy_mean": 0.55}
    row = {run: {"busy": busy, "sampler": dict(sampler)} for run in ("serial", "packed")}
    data = {"smallest": "w", "workloads": {"w": row}, "device_name": "cuda:0 fake"}
    ax = lane_figures.hyperparam_utilisation(data).axes[0]
    sampled = [line for line in ax.lines if "nvml" in line.get_label()]
    assert len(sampled) == 2
    assert all((len(line.get_xdata()) > 0) == drawn for line in sampled)
    if not drawn:
        assert all("not measured" in line.get_label() for line in sampled)


def test_the_run_clock_starts_after_the_work_queued_before_it():
    """Jobs built with warm=True leave asynchronous work on a GPU: the executor waits for the
    device before it reads the clock that times the first job, not inside that job's time."""
    from impls.salus.core.executor import Executor

    events = []
    ex = Executor("fifo", "cpu", clock=lambda: events.append("clock") or 0.0)
    ex.device.synchronize = lambda: events.append("synchronize")
    ex.start()
    assert events == ["synchronize", "clock"]
