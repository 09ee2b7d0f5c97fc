"""Memory profiling, utilisation samplers, the lane executor, hyper-parameter and inference
experiments (smoke sizes), and the lanes figures."""
from __future__ import annotations

import contextlib
import re
import types

import pytest
import torch

from impls.harness import capabilities, profiles
from impls.salus.experiments import inference
from impls.salus.figures import lanes as lane_figures
from impls.salus.paper import HYPERPARAM_CLAIM, paper_value
from impls.salus.memory import memory_profile, utilisation
from impls.salus.core.executor import Submission
from impls.salus.memory.lane_executor import LaneDevice, LaneExecutor, LaneHandle
from impls.salus.core.workloads import build_job


def test_levels_take_the_floor_after_the_first_iteration():
    t = [0, 1, 2, 3, 4, 5, 6]
    b = [10, 50, 30, 80, 20, 90, 25]  # first iteration ends at t=2
    assert memory_profile.levels(t, b, 2) == {"peak_bytes": 90, "persistent_bytes": 20, "ephemeral_bytes": 70}
    with pytest.raises(ValueError, match="as many times as sizes"):
        memory_profile.levels([0, 1], [1], 0)


def test_cpu_trace_separates_optimizer_state_from_activations():
    torch.set_num_threads(1)
    job = build_job("mlp_b64", iterations=10, warm=False)
    params = sum(p.numel() * p.element_size() for p in job.model.parameters())
    trace = memory_profile.cpu_trace(job, iterations=2)
    row = memory_profile.levels(trace["t_ms"], trace["bytes"], trace["iterations_ms"][0][1])
    # SGD with momentum: weights + momentum buffers stay (>= 2x the parameters), gradients come and go.
    assert row["persistent_bytes"] >= 2 * params
    assert row["ephemeral_bytes"] > 0
    assert row["peak_bytes"] == row["persistent_bytes"] + row["ephemeral_bytes"]


class FakeCuda:
    """Counters of a caching allocator: one iteration allocates 100 then frees it, leaving 10 more."""

    def __init__(self):
        self.allocated, self.peak = 1000, 1000

    def synchronize(self, device=None):
        pass

    def memory_allocated(self, device=None):
        return self.allocated

    def max_memory_allocated(self, device=None):
        return self.peak

    def reset_peak_memory_stats(self, device=None):
        self.peak = self.allocated


def test_cuda_trace_reads_floor_peak_and_after_from_the_allocator():
    cuda = FakeCuda()

    class Job:
        optimizer = None

        def step(self):
            cuda.allocated += 110
            cuda.peak = max(cuda.peak, cuda.allocated)
            cuda.allocated -= 100

    trace = memory_profile.cuda_trace(Job(), iterations=2, cuda=cuda, baseline_bytes=1000)
    assert trace["bytes"] == [0, 110, 10, 10, 120, 20]
    assert memory_profile.levels(trace["t_ms"], trace["bytes"], trace["iterations_ms"][0][1])["ephemeral_bytes"] == 110


def test_busy_timeline_and_samplers():
    tl = utilisation.busy_timeline([(0.0, 0.5), (1.0, 2.0)], 2.0, bins=4)
    assert tl["busy"] == [1.0, 0.0, 1.0, 1.0] and tl["busy_mean"] == pytest.approx(0.75)
    ticks = iter([(0, 0), (50, 100), (150, 200), (150, 300)])
    cpu = utilisation.CpuSampler(reader=lambda: next(ticks))
    cpu._last = cpu._reader()
    assert [cpu._sample()["busy"] for _ in range(3)] == [0.5, 1.0, 0.0]


class FakeNvml:
    class NVMLError(Exception):
        pass

    class NVMLError_LibraryNotFound(NVMLError):
        pass

    def __init__(self, missing=False):
        self.missing = missing

    def nvmlInit(self):
        if self.missing:
            raise self.NVMLError_LibraryNotFound("libnvidia-ml.so.1 not found")

    def nvmlShutdown(self):
        pass

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return uuid

    def nvmlDeviceGetUtilizationRates(self, handle):
        return types.SimpleNamespace(gpu=37, memory=5)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return types.SimpleNamespace(used=123, total=1000)


def test_nvml_sampler_reports_busy_percent_and_refuses_without_a_driver():
    missing = FakeNvml(missing=True)
    reason = utilisation.nvml_unavailable_reason(missing)
    assert reason == "NVML unavailable: libnvidia-ml.so.1 not found"
    assert reason == capabilities.check_nvml(missing).reason     # the doctor's words
    assert utilisation.nvml_unavailable_reason(FakeNvml()) is None
    with pytest.raises(RuntimeError, match="NVML unavailable: libnvidia-ml.so.1 not found"):
        utilisation.NvmlSampler(nvml=missing).start()
    sampler = utilisation.NvmlSampler(nvml=FakeNvml(), interval_s=0.01)
    sampler._nvml.nvmlInit()
    sampler._handle = 0
    sampler._record()
    assert sampler.samples["busy_pct"] == [37.0] and sampler.samples["memory_used_bytes"] == [123]


def test_nvml_reads_the_gpu_torch_runs_on_not_nvmls_gpu_of_that_number():
    """CUDA_VISIBLE_DEVICES=3: torch's cuda:0 is NVML's GPU 3; its UUID names it in both."""
    props = {0: types.SimpleNamespace(uuid="5c1e0a2b-0000-4000-8000-000000000003")}
    uuid = utilisation.nvml_uuid_of_cuda_device(0, props.__getitem__)
    assert uuid == "GPU-5c1e0a2b-0000-4000-8000-000000000003"
    assert utilisation.nvml_uuid_of_cuda_device(0, lambda i: types.SimpleNamespace(uuid="MIG-ab")) == "MIG-ab"
    assert utilisation.nvml_uuid_of_cuda_device(0, lambda i: types.SimpleNamespace()) is None
    sampler = utilisation.NvmlSampler(0, 0.01, nvml=FakeNvml(), uuid=uuid)
    sampler.start()
    try:
        assert sampler._handle == uuid
    finally:
        sampler.stop()
    plain = utilisation.NvmlSampler(2, 0.01, nvml=FakeNvml())
    plain.start()
    try:
        assert plain._handle == 2
    finally:
        plain.stop()


def test_lane_device_enters_the_lanes_stream_and_pool():
    entered = []

    @contextlib.contextmanager
    def ctx(what):
        entered.append(what)
        yield

    inner = types.SimpleNamespace(lane_context=lambda s: ctx(("stream", s)), timer=lambda s=None: ("timer", s),
                                  has_streams=True, torch_device="cuda:1")
    cuda = types.SimpleNamespace(use_mem_pool=lambda p, device=None: ctx(("pool", p, device)))
    device = LaneDevice(inner, cuda)
    with device.lane_context(LaneHandle(0, stream="s0", pool="p0")):
        pass
    assert entered == [("stream", "s0"), ("pool", "p0", "cuda:1")]     # the pool on the lane's device
    assert device.timer(LaneHandle(0, stream="s0")) == ("timer", "s0")
    assert device.has_streams


def test_lane_executor_admits_through_lanes_and_runs_everything():
    torch.set_num_threads(1)
    mem = {"mlp_b64": {"persistent_bytes": 100, "ephemeral_bytes": 300}}
    jobs = [build_job("mlp_b64", iterations=2, job_id=i) for i in range(3)]
    ex = LaneExecutor("pack", "cpu", capacity_bytes=800, memory=mem, log_iterations=True)  # two lanes of 400
    res = ex.run([Submission(j) for j in jobs])
    assert res["done"] == 3 and not res["failed"]
    assert res["lanes"]["max_open"] == 2
    assert not ex.manager.lanes and ex.manager.unassigned == 800  # every lane returned its memory
    third = res["jobs"][2]
    assert third["admitted_s"] >= min(res["jobs"][0]["finish_s"], res["jobs"][1]["finish_s"])


class CountedJob:
    """A job of ``workload`` whose iteration does nothing."""

    def __init__(self, job_id, workload, iterations=2):
        self.job_id, self.workload, self.total_iterations = job_id, workload, iterations

    def step(self):
        pass

    def release(self):
        pass


@pytest.mark.parametrize("rule, submitted_peak, why", [
    ("static", 600, "exceeds every static partition (4 of 200 B)"),   # within the 800-B budget
    ("salus", 0, "exceeds the lanes' capacity 800 B"),                 # no peak given: the profile's
])
def test_a_job_no_lane_could_ever_hold_fails_alone_and_the_others_run(rule, submitted_peak, why):
    mem = {"big": {"persistent_bytes": 300, "ephemeral_bytes": 300 if rule == "static" else 600},
           "small": {"persistent_bytes": 100, "ephemeral_bytes": 100}}
    ex = LaneExecutor("pack", "cpu", capacity_bytes=800, memory=mem, rule=rule, partitions=4)
    subs = [Submission(CountedJob(0, "big"), peak_bytes=submitted_peak)]   # first: head of the line
    subs += [Submission(CountedJob(i, "small"), peak_bytes=200) for i in (1, 2, 3)]
    res = ex.run(subs)
    by_id = {j["job_id"]: j for j in res["jobs"]}
    assert res["failed"] == [0] and why in by_id[0]["error"] and by_id[0]["iterations_done"] == 0
    assert res["done"] == 3


def test_lane_managers_say_why_a_job_could_never_be_admitted():
    from impls.salus.memory.lanes import LaneJob, make_manager

    job = LaneJob("j", 150, 100)
    assert make_manager("static", 1000, 4).never_fits(job) is None            # 250 B partitions
    assert "4 of 249 B" in make_manager("static", 999, 4).never_fits(job)
    for rule in ("salus", "salus-grow", "shared-first", "no-lanes"):
        assert make_manager(rule, 250).never_fits(job) is None
        assert "peak 250 B (persistent 150 + ephemeral 100)" in make_manager(rule, 249).never_fits(job)


def test_hyperparam_with_static_partitions_smaller_than_a_job_reports_why_and_no_ratio():
    from impls.salus.experiments.hyperparam import hyperparam_experiment

    sizes = dict(profiles.sizes("salus_hyperparam", "smoke"), rule="static")   # 4 partitions of half a peak
    out = hyperparam_experiment(sizes, "cpu", progress=False)
    row = out["workloads"]["mlp_b64"]
    assert row["serial"]["done"] == 2 and row["packed"]["done"] == 0
    assert len(row["packed"]["errors"]) == 1 and "static partition" in row["packed"]["errors"][0]
    assert row["ratio"] is None and out["ratio_smallest"] is None   # not a makespan of failures
    # asv records a NaN (skipped or no value: the track says which), not a failure, and no
    # "makespan" of a run whose jobs all failed
    import math

    from benchmarks.bench_salus_lanes import HyperparamExploration
    bench = HyperparamExploration()
    bench.row = row
    assert math.isnan(bench.track_makespan_ratio(None)) and math.isnan(bench.track_packed_makespan(None))
    assert "failed" in HyperparamExploration.track_packed_makespan.missing
    # the closing-note summary and the figure show no makespan for the failed run either
    from impls.salus.experiments.lanes import summary

    spans = summary("hyperparam", out)["makespan_s"]["mlp_b64"]
    assert math.isnan(spans["packed"]) and spans["serial"] == row["serial"]["makespan_s"] > 0
    ax = lane_figures.hyperparam_makespan(out).axes[0]
    assert "paper" not in out           # the figure reads the paper's value from reports/claims.toml
    assert ax.get_title().endswith(f"on cpu (paper: {paper_value(HYPERPARAM_CLAIM):g}× on a GPU)")
    heights = [bar.get_height() for bar in ax.patches]
    assert heights[0] == pytest.approx(row["serial"]["makespan_s"]) and math.isnan(heights[1])
    assert any("a job failed" in t.get_text() for t in ax.texts)


def test_hyperparam_smoke_runs_serial_and_packed():
    from impls.salus.experiments.hyperparam import hyperparam_experiment, learning_rates

    assert learning_rates(3, 1e-3, 1e-1) == pytest.approx([1e-3, 1e-2, 1e-1])
    out = hyperparam_experiment(profiles.sizes("salus_hyperparam", "smoke"), "cpu", progress=False)
    row = out["workloads"]["mlp_b64"]
    assert row["serial"]["done"] == row["packed"]["done"] == 2
    assert row["ratio"] == pytest.approx(row["serial"]["makespan_s"] / row["packed"]["makespan_s"])
    assert out["smallest"] == "mlp_b64" and row["packed"]["busy"]["busy_mean"] > 0
    lane_figures.hyperparam_makespan(out)
    ylabel = lane_figures.hyperparam_utilisation(out).axes[0].get_ylabel()
    assert "lanes busy on average" in ylabel and ">1 when lanes overlap" in ylabel   # host threads too


def test_fair_serving_simulation_and_devices_needed():
    streams = {"a": [0.0, 0.0], "b": [0.0]}
    lat = inference.simulate_fair({"a": 10.0, "b": 10.0}, streams)
    # a's first request (ties: oldest, then name), then b (less device time), then a's second.
    assert lat == {"a": [10.0, 30.0], "b": [20.0]}
    assert inference.split_by_load({"x": 5, "y": 3, "z": 3}, 2) == [["x"], ["y", "z"]]
    need = inference.devices_needed({"a": 10.0, "b": 10.0}, streams, target_p99_ms=25.0)
    assert need["devices"] == 2 and need["worst_p99_ms"][1] > 25.0  # one device: a's second waits 30 ms
    assert inference.devices_needed({"a": 10.0, "b": 10.0}, streams, 5.0)["devices"] is None
    # a real one-device run that missed the target: the search starts at two devices
    assert inference.devices_needed({"a": 10.0, "b": 10.0}, streams, 100.0)["devices"] == 1
    assert inference.devices_needed({"a": 10.0, "b": 10.0}, streams, 100.0, min_devices=2)["devices"] == 2


def test_served_latency_runs_from_the_requests_arrival_to_its_end():
    """Latency = finish - arrival, the wait in the queue included. On a fake clock, 10 ms per
    request: a's first (0-10 ms), b's (10-20), a's second (20-30), then idle until a's third
    arrives at 100 ms (100-110): a [10, 30, 10] ms, b [20] ms; each served in 10 ms."""
    from impls.salus.core.devices import CpuDevice
    from salus_fakes import FakeClock

    clock = FakeClock()

    class Model:
        def step(self):
            clock.t += 0.010

    streams = {"a": [0.0, 0.0, 0.1], "b": [0.0]}
    out = inference.serve_fair({"a": Model(), "b": Model()}, streams, CpuDevice(clock),
                               clock=clock, sleep=clock.sleep)
    assert out["a"]["latencies_ms"] == [pytest.approx(10.0), pytest.approx(30.0), pytest.approx(10.0)]
    assert out["b"]["latencies_ms"] == [pytest.approx(20.0)]
    assert out["a"]["service_ms"] == [pytest.approx(10.0)] * 3
    assert out["_wall_s"] == pytest.approx(0.11) and out["_busy_s"] == pytest.approx(0.04)


def test_each_of_k_models_offers_a_kth_of_the_load():
    """rate = load / (K x service time): with load 0.5 over K = 2 models, a (10 ms) gets
    0.5 / (2 x 0.01 s) = 25 requests/s and b (40 ms) 6.25/s, so over 1000 s about 25,000 and
    6,250 arrivals, and the two together keep half of one device busy."""
    duration = 1000.0
    streams = inference.request_streams({"a": 10.0, "b": 40.0}, load=0.5, duration_s=duration, seed=0)
    assert len(streams["a"]) == pytest.approx(25_000, rel=0.03)
    assert len(streams["b"]) == pytest.approx(6_250, rel=0.05)
    offered = (len(streams["a"]) * 0.010 + len(streams["b"]) * 0.040) / duration
    assert offered == pytest.approx(0.5, rel=0.03)
    assert all(0.0 <= t <= duration for ts in streams.values() for t in ts)
    assert all(ts == sorted(ts) for ts in streams.values())


def test_inference_smoke_serves_every_request():
    out = inference.inference_experiment(profiles.sizes("salus_inference", "smoke"), "cpu", progress=False)
    for setup in ("shared", "one_per_device"):
        assert {n: r["n"] for n, r in out["setups"][setup].items()} == out["requests"]
    assert out["lanes"]["admitted"] == out["models"]
    assert "paper" not in out           # the paper's values live in reports/claims.toml only
    lane_figures.inference_latency(out)


def test_a_target_one_model_per_device_misses_needs_no_device_count(monkeypatch):
    """The simulation never says a setup meets a target the real one-model-per-device run missed."""
    import math

    from benchmarks.bench_salus_lanes import InferenceDevicesNeeded

    # a simulation as optimistic as a fixed mean service time was: 2 devices always "meet" it
    monkeypatch.setattr(inference, "devices_needed", lambda *a, **k: {"devices": 2, "worst_p99_ms": {2: 0.0}})
    sizes = {**profiles.sizes("salus_inference", "smoke"), "latency_target_ms": 1e-6}
    out = inference.inference_experiment(sizes, "cpu", progress=False)
    need = out["devices_needed"]
    assert need["one_per_device"] is None and need["shared"] is None and out["models_per_device_gain"] is None
    assert math.isnan(InferenceDevicesNeeded().track_models_per_device_gain(out))


def test_processes_baseline_serves_from_its_own_process():
    lat = inference.serve_processes({"mlp_infer_b1": [0.0, 0.01, 0.02]}, threads=1)
    assert len(lat["mlp_infer_b1"]) == 3 and all(x >= 0 for x in lat["mlp_infer_b1"])


def test_lane_figures_draw_from_experiment_shaped_data():
    from impls.salus.memory import lane_sim

    trace = {"t_ms": [0, 1, 2, 3], "bytes": [10, 50, 20, 60], "iterations_ms": [[0, 1.5], [1.5, 3]]}
    memory = {w: {"persistent_bytes": 20, "ephemeral_bytes": 40, "peak_bytes": 60, "method": "m", "trace": trace}
              for w in ("a_b1", "b_b1")}
    profs = {"a": {"persistent_bytes": 10, "ephemeral_bytes": 200, "iteration_ms": 5}}
    packing = lane_sim.lane_experiment(profs, {"n_mixes": 2, "jobs_per_mix": 5, "capacity_peaks": [2],
                                               "duration_s": [1, 2], "seed": 0}, progress=False)
    data = {"device": "cpu", "memory": memory, "packing": packing}
    fig = lane_figures.memory_over_time(data)
    assert len(fig.axes) == 2
    fig = lane_figures.lane_packing(data)
    assert "Where Salus's rule loses" in fig._suptitle.get_text()


def test_the_memory_figure_plots_mebibytes_as_its_axis_says():
    """``allocated (MiB)``: 2**20 bytes a unit, for the trace and both lines."""
    mib = 2 ** 20
    trace = {"t_ms": [0, 1, 2], "bytes": [mib, 3 * mib, 2 * mib], "iterations_ms": [[0, 2]]}
    row = {"persistent_bytes": mib, "ephemeral_bytes": 2 * mib, "peak_bytes": 3 * mib, "method": "m", "trace": trace}
    ax = lane_figures.memory_over_time({"device": "cpu", "memory": {"a_b1": row}}).axes[0]
    assert ax.get_ylabel() == "allocated (MiB)"
    step, persistent, peak = ax.get_lines()[:3]
    assert list(step.get_ydata()) == [1.0, 3.0, 2.0]
    assert list(persistent.get_ydata()) == [1.0, 1.0] and list(peak.get_ydata()) == [3.0, 3.0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["persistent 1.0 MiB", "peak 3.0 MiB (ephemeral 2.0)"]


def test_lane_executor_on_cuda_runs_each_lane_on_its_own_stream_and_pool():
    from test_salus_switching import FakeCuda as SwitchingFakeCuda

    from impls.salus.core.devices import CudaDevice

    class PoolCuda(SwitchingFakeCuda):
        def __init__(self):
            super().__init__()
            self.pool = None
            pools = iter(range(100))

            fake = self

            class MemPool:                  # made on the current device, as torch's is
                def __init__(self):
                    self.id, self.device = next(pools), fake.current_device

            self.MemPool = MemPool

        @contextlib.contextmanager
        def use_mem_pool(self, pool, device=None):
            used.append((pool.device, device))
            before, self.pool = self.pool, pool.id
            try:
                yield
            finally:
                self.pool = before

    used = []
    cuda = PoolCuda()
    steps = []

    class Job:
        workload = "w"

        def __init__(self, job_id):
            self.job_id, self.total_iterations = job_id, 2

        def step(self):
            steps.append((self.job_id, cuda.current.name, cuda.pool))

    ex = LaneExecutor("pack", CudaDevice(1, cuda=cuda), capacity_bytes=800,
                      memory={"w": {"persistent_bytes": 100, "ephemeral_bytes": 300}}, cuda=cuda)
    res = ex.run([Submission(Job(i)) for i in range(3)])
    assert res["done"] == 3 and res["lanes"]["pools"] and res["lanes"]["max_open"] == 2
    where = {}
    for job_id, stream, pool in steps:
        assert pool is not None and stream.startswith("lane")
        where.setdefault(job_id, set()).add((stream, pool))
    assert all(len(v) == 1 for v in where.values())  # a job always runs in its lane's stream + pool
    assert where[0] != where[1]                        # two lanes at once: two streams, two pools
    # on cuda:1 each pool is made on cuda:1 and used there (made on the current device 0, it
    # would be a pool of device 0 entered on device 1: torch's allocator asserts)
    assert used and set(used) == {(torch.device("cuda", 1), torch.device("cuda", 1))}, used


def test_bytes_inside_counts_tensors_within_pool_segments():
    from impls.salus.memory.lane_executor import bytes_inside

    a, b = torch.zeros(10), torch.zeros(4)
    segments = [(a.data_ptr(), a.data_ptr() + 40)]
    assert bytes_inside([a, b], segments) == (56, 40)


def test_the_lanes_cli_names_a_job_that_can_never_fit(tmp_path, capsys):
    import json

    from impls.salus.lanes import main

    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([{"name": "big", "persistent": 900, "ephemeral": 200},
                                {"name": "ok", "persistent": 100, "ephemeral": 10}]))
    assert main(["--jobs", str(jobs), "--capacity", "1000"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["waiting"] == ["big"]
    assert "'big' needs 1100 B" in out.err and "never be admitted" in out.err and "'ok'" not in out.err
    assert main(["--jobs", str(jobs), "--capacity", "1200", "--rule", "static", "--partitions", "2"]) == 0
    assert "a static partition of 600 B" in capsys.readouterr().err
    for rule in ("salus", "no-lanes"):   # a device too small for the static rule's default partitions
        assert main(["--jobs", str(jobs), "--capacity", "3", "--rule", rule]) == 0
        assert json.loads(capsys.readouterr().out)["waiting"] == ["big", "ok"]


@pytest.mark.parametrize("extra, message", [
    (["--rule", "static", "--partitions", str(10**9)], "got 1000000000, --partitions, expected an integer in [1, 1000]"),
    (["--partitions", "3"], "got 3 with --rule salus, --partitions, expected only with --rule static"),
    (["--capacity", "-1"], "got '-1', --capacity, expected a number of bytes in [0, 2^64]"),
    (["--capacity", "3", "--rule", "static"], "got 3, --capacity, expected at least 4 bytes for --rule static's"),
    (["--capacity", "1e3.5"], "got '1e3.5', --capacity, expected a whole number of bytes"),
    (["--capacity", "1e29"], "got '1e29', --capacity, expected a number of bytes in [0, 2^64]"),
    (["--capacity", "1e999999999"], "got '1e999999999', --capacity, expected a number of bytes in [0, 2^64]"),
    (["--json", "JOBS"], "is the file --jobs reads, --json, expected another path"),
    (["--json", "MISSING/out.json"], "does not exist, --json"),
])
def test_the_lanes_cli_refuses_what_it_cannot_use_before_reading_jobs(tmp_path, capsys, extra, message):
    import json

    from impls.salus.lanes import main

    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([{"name": "a", "persistent": 10, "ephemeral": 5}]))
    before = jobs.read_bytes()
    extra = [x.replace("JOBS", str(jobs)).replace("MISSING", str(tmp_path / "nope")) for x in extra]
    capacity = [] if "--capacity" in extra else ["--capacity", "1000"]
    assert main(["--jobs", str(jobs), *capacity, *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert jobs.read_bytes() == before and not (tmp_path / "nope").exists()


def test_the_lanes_cli_takes_a_capacity_in_float_notation_and_a_deep_file_is_one_line(tmp_path, capsys):
    import json

    from impls.salus.lanes import main

    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([{"name": "a", "persistent": 10, "ephemeral": 5}]))
    assert main(["--jobs", str(jobs), "--capacity", "1e3", "--rule", "static", "--partitions", "2"]) == 0
    assert [lane["size"] for lane in json.loads(capsys.readouterr().out)["lanes"]] == [500, 500]
    # read exactly, not through a float (which reads 12345678901234567e2 as ...6768)
    assert main(["--jobs", str(jobs), "--capacity", "12345678901234567e2", "--rule", "static", "--partitions", "2"]) == 0
    assert [lane["size"] for lane in json.loads(capsys.readouterr().out)["lanes"]] == [617283945061728350] * 2
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    assert main(["--jobs", str(deep), "--capacity", "1000"]) == 2
    assert "nested too deeply" in capsys.readouterr().err


def test_devices_needed_replays_measured_service_times_and_ignores_idle_models():
    streams = {"a": [0.0, 0.0, 0.0], "b": []}
    # the measured times in turn: 1, 30, 1 ms -> latencies 1, 31, 32 ms (a fixed mean gives 10.7, 21.3, 32)
    assert inference.simulate_fair({"a": [1.0, 30.0, 1.0], "b": [5.0]}, streams) == \
        {"a": pytest.approx([1.0, 31.0, 32.0]), "b": []}
    need = inference.devices_needed({"a": [1.0, 30.0, 1.0], "b": [5.0]}, streams, target_p99_ms=40.0)
    assert need["devices"] == 1                     # a model without requests bounds nothing (no crash)


def test_a_real_one_device_run_that_meets_the_target_needs_one_device(monkeypatch):
    """Measured beats simulated both ways: every model met the target sharing one device."""
    def fake_serve(jobs, streams, dev):
        ms = 1.0 if len(jobs) > 1 else 100.0          # contrived: shared fast, alone slow
        out = {n: {"latencies_ms": [ms] * len(s), "service_ms": [0.5] * len(s)} for n, s in streams.items()}
        return {**out, "_busy_s": 0.1, "_wall_s": 1.0}

    monkeypatch.setattr(inference, "serve_fair", fake_serve)
    sizes = {**profiles.sizes("salus_inference", "smoke"), "latency_target_ms": 10.0}
    out = inference.inference_experiment(sizes, "cpu", progress=False)
    assert out["devices_needed"]["shared_one_device_meets_target"] is True
    assert out["devices_needed"]["shared"] == 1 and out["devices_needed"]["one_per_device"] is None


@pytest.mark.parametrize("peaks", [0.2, 0.999, float("nan")])
def test_inference_refuses_a_device_that_cannot_hold_every_model(peaks):
    """Below one of the models' summed peaks the lanes admit only some: the shared setup would
    serve fewer models than the devices needed are counted for."""
    from impls.harness import profiles
    from impls.salus.experiments import inference

    with pytest.raises(ValueError, match="capacity_peaks must be >= 1"):
        inference.inference_experiment({**profiles.sizes("salus_inference", "smoke"), "capacity_peaks": peaks},
                                       "cpu", progress=False)


def test_a_stream_longer_than_one_command_line_argument_is_served():
    # full's longest stream (~22,000 arrivals, ~425 KB of JSON) passed as one argument failed
    # with E2BIG after the experiment's earlier runs; Linux caps one argument at 128 KiB
    import json as _json
    stream = [round(1e-9 * k, 9) for k in range(12_000)]            # ~13 characters each: ~170 KB of JSON
    assert len(_json.dumps({"stream": stream})) > 128 * 1024
    lat = inference.serve_processes({"mlp_infer_b1": stream}, threads=1)
    assert len(lat["mlp_infer_b1"]) == len(stream)


@pytest.mark.parametrize("device, said", [
    ("cuda", "the MPS-like 'processes' setup runs on the CPU only"),
    ("cpu", "setup 'processes' not run on cpu in this profile"),
])
def test_a_processes_point_without_its_setup_says_why(device, said):
    """A CUDA run never starts the MPS-like baseline (its processes serve on the CPU): its
    skip says so rather than blaming the profile."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    try:
        from benchmarks.bench_salus_lanes import InferenceSharing
    finally:
        sys.path.pop(0)
    with pytest.raises(NotImplementedError, match=re.escape(said)):
        InferenceSharing().setup({"device": device, "setups": {"shared": {}}}, "processes")
