"""Salus switching: state round trips, the CLI's JSON shape, and the CUDA paths' logic on fake CUDA."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from impls.salus.core.devices import (
    CpuDevice,
    CudaDevice,
    CudaEventTimer,
    estimate_job_memory,
)
from impls.salus.core.executor import Executor, Submission
from impls.salus.core.switching import (
    HostCheckpoint,
    load_checkpoint,
    measure_inprocess,
    save_checkpoint,
)
from impls.salus.core.workloads import WORKLOADS, build_job
from salus_fakes import FakeCuda  # test_salus_lane_parts imports it from this module too

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("one_thread")


def test_registry_has_seven_families_three_train_batches_and_inference_1_5_10():
    families = {s.family for s in WORKLOADS.values()}
    assert families == {"mlp", "resnet", "vgg", "lstm", "transformer", "vae", "superres"}
    for fam in families:
        train = sorted(s.batch for s in WORKLOADS.values() if s.family == fam and s.train)
        infer = sorted(s.batch for s in WORKLOADS.values() if s.family == fam and not s.train)
        assert len(train) == 3 and infer == [1, 5, 10]


def _params(job):
    return [p.detach().clone() for p in job.model.parameters()]


def test_host_checkpoint_round_trip_keeps_training_identical():
    twin = build_job("mlp_b64", seed=3)
    job = build_job("mlp_b64", seed=3)
    ck = HostCheckpoint(job, CpuDevice())
    ck.suspend()
    assert all(p.numel() == 0 for p in job.model.parameters())  # the "device" copies are gone
    ck.resume()
    for j in (job, twin):
        j.step()
    for a, b in zip(_params(job), _params(twin)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_disk_checkpoint_round_trip(tmp_path):
    a = build_job("vae_b32", seed=1)
    b = build_job("vae_b32", seed=2)
    save_checkpoint(a, tmp_path / "a.pt")
    load_checkpoint(b, tmp_path / "a.pt", CpuDevice())
    for x, y in zip(_params(a), _params(b)):
        torch.testing.assert_close(x, y, rtol=0, atol=0)
    b.step()  # the loaded optimizer state works


def test_inprocess_measurement_leaves_both_jobs_usable():
    a, b = build_job("mlp_infer_b1", seed=0), build_job("mlp_infer_b1", seed=1)
    out = measure_inprocess(a, b, CpuDevice(), repeats=3, warmup=1)
    assert len(out["inprocess_ms"]) == 3 and all(g >= 0 for g in out["inprocess_gap_ms"])
    a.step()
    b.step()


def test_inprocess_iteration_ms_is_b_following_itself_and_the_switch_cost_what_a_adds(monkeypatch):
    """On a fake clock, B's iteration takes 1 ms after B and 5 ms right after A (cold caches).
    ``iteration_ms`` is B's device time when it follows itself (1 ms), and the switch cost is
    B after A minus B after B (5 - 1 = 4 ms), in every repeat."""
    import functools

    from impls.salus.core import switching
    from salus_fakes import FakeClock

    clock = FakeClock()
    last = [None]

    class Job:
        def __init__(self, job_id, ms_after_self, ms_after_other):
            self.job_id, self.workload, self.total_iterations = job_id, f"w{job_id}", 1
            self.ms_after_self, self.ms_after_other = ms_after_self, ms_after_other

        def step(self):
            clock.t += (self.ms_after_self if last[0] is self else self.ms_after_other) / 1e3
            last[0] = self

        def release(self):
            pass

    monkeypatch.setattr(switching, "Executor", functools.partial(Executor, clock=clock, sleep=clock.sleep))
    a, b = Job(900, 3.0, 3.0), Job(901, 1.0, 5.0)
    out = measure_inprocess(a, b, CpuDevice(clock), repeats=3, warmup=1)
    assert out["iteration_ms"] == [pytest.approx(1.0)] * 3
    assert out["inprocess_ms"] == [pytest.approx(4.0)] * 3
    assert out["inprocess_gap_ms"] == [pytest.approx(0.0, abs=1e-9)] * 3


def test_cpu_memory_estimate_counts_state_and_activations():
    job = build_job("mlp_b64", seed=0)
    mem = estimate_job_memory(job)
    params = sum(p.numel() * 4 for p in job.model.parameters())
    assert mem["persistent_bytes"] >= 2 * params  # weights + momentum
    assert mem["ephemeral_bytes"] >= params       # gradients + saved activations
    assert mem["peak_bytes"] == mem["persistent_bytes"] + mem["ephemeral_bytes"]


def test_weights_and_inputs_autograd_saves_are_not_counted_twice():
    """A one-layer linear model saves only its input and weight for backward, both persistent:
    its ephemeral memory is its gradients alone."""
    from impls.salus.core.workloads import Job

    torch.manual_seed(0)
    model = torch.nn.Linear(64, 32, bias=False)
    inputs, targets = torch.randn(16, 64, requires_grad=False), torch.randn(16, 32)
    job = Job("linear", model, torch.optim.SGD(model.parameters(), lr=0.1), inputs, targets,
              lambda m, x, y: ((m(x) - y) ** 2).sum(), total_iterations=1, train=True)
    mem = estimate_job_memory(job)
    assert mem["persistent_bytes"] == (64 * 32 + 16 * 64 + 16 * 32) * 4
    saved_beyond_gradients = mem["ephemeral_bytes"] - 64 * 32 * 4
    assert 0 <= saved_beyond_gradients <= 16 * 32 * 4   # at most what the loss saves, never x or W again


def test_a_training_step_frees_its_gradients_when_it_ends():
    job = build_job("mlp_b64", seed=0)
    job.step()
    assert all(p.grad is None for p in job.model.parameters())


def test_switching_cli_prints_the_json_shape():
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "impls.salus.switching", "--device", "cpu",
                           "--workloads", "vae_b32", "--repeats", "2", "--restart-repeats", "1",
                           "--threads", "1", "--json"],
                          check=False, capture_output=True, text=True, cwd=ROOT, env=env, timeout=240)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["device"] == "cpu" and data["to_host_method"].startswith("cpu_copy")
    row = data["workloads"]["vae_b32"]
    for key in ("iteration_ms", "inprocess_ms", "to_host_ms", "to_disk_ms", "restart_ms"):
        assert set(row[key]) >= {"p50", "p99"}, key
        assert isinstance(row[key]["p50"], float)
    assert row["restart_ms"]["n"] == 1 and row["to_host_ms"]["n"] == 2
    assert row["restart_ms"]["p50"] > row["to_host_ms"]["p50"]
    parts = row["restart_parts_p50_ms"]
    assert list(parts) == ["save_a", "interpreter", "import", "build", "load"]
    assert all(value > 0 for value in parts.values()), parts
    assert sum(parts.values()) == pytest.approx(row["restart_ms"]["p50"], rel=1e-6)   # one repeat: they add up


def test_the_restart_child_finds_the_suite_without_an_installed_package(tmp_path, monkeypatch):
    """On a machine where the suite runs from a checkout (not pip-installed), the child imports
    impls through the PYTHONPATH and working directory it is given: both must hold the package."""
    from impls.salus.core import switching
    from impls.salus.core.devices import get_device

    seen = {}

    class Child:
        returncode = 0

        def __init__(self, argv, **kwargs):
            seen.update(kwargs)
            self.stdout = io.StringIO("READY 1.0 2.0 3.0\n")

        def communicate(self, timeout=None):
            return "", ""

    monkeypatch.setattr(switching.subprocess, "Popen", Child)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    job = build_job("mlp_b64", seed=0)
    switching.measure_restart(job, job, get_device("cpu"), 1, tmp_path)
    first = seen["env"]["PYTHONPATH"].split(os.pathsep)[0]
    assert (Path(first) / "impls" / "salus" / "core" / "restart_child.py").is_file(), first
    assert (Path(seen["cwd"]) / "impls" / "__init__.py").is_file(), seen["cwd"]


def test_a_restart_child_may_print_before_ready(tmp_path, monkeypatch):
    from impls.salus.core import switching
    from impls.salus.core.devices import get_device

    class Child:
        returncode = 0

        def __init__(self, *args, **kwargs):
            self.stdout = io.StringIO("Warning: something from a library\nREADY 1.0 2.0 3.0\n")

        def communicate(self, timeout=None):
            return "", ""

    monkeypatch.setattr(switching.subprocess, "Popen", Child)
    parts: dict = {}
    job = build_job("mlp_b64", seed=0)
    [total] = switching.measure_restart(job, job, get_device("cpu"), 1, tmp_path, parts=parts)
    assert parts["import"] == [1.0] and parts["build"] == [2.0] and parts["load"] == [3.0]
    assert sum(v[0] for v in parts.values()) == pytest.approx(total)


def test_a_restart_child_that_says_something_else_is_a_failure_naming_what_it_said(tmp_path, monkeypatch):
    from impls.salus.core import switching
    from impls.salus.core.devices import get_device

    class Child:
        returncode = 0

        def __init__(self, *args, **kwargs):
            self.stdout = io.StringIO("READY\n")     # the old child's line, without its parts

        def communicate(self, timeout=None):
            return "", ""

    monkeypatch.setattr(switching.subprocess, "Popen", Child)
    job = build_job("mlp_b64", seed=0)
    with pytest.raises(RuntimeError, match="said 'READY'"):
        switching.measure_restart(job, job, get_device("cpu"), 1, tmp_path)


@pytest.mark.parametrize("argv, message", [
    (["--workloads", "mlp_b64,mlp_b64"], "mlp_b64 named twice, --workloads"),
    (["--device", "cudax"], "device 'cudax': expected 'cpu' (or 'cpu:0'), 'cuda' or 'cuda:N', --device"),
    (["--json", "/nonexistent-dir/x.json"], "directory /nonexistent-dir does not exist, --json"),
])
def test_switching_cli_refuses_before_measuring(argv, message, capsys):
    from impls.salus.switching import main

    assert main(["--repeats", "1", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_switching_cli_warns_of_more_threads_than_cpus(monkeypatch, capsys):
    import torch

    from impls.harness import cpus
    from impls.salus.core import switching as engine
    from impls.salus.switching import main

    monkeypatch.setattr(cpus, "effective_cpus", lambda cpus=None: 2)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)   # the test process keeps its pool
    monkeypatch.setattr(engine, "switching_latency", lambda *a: {})
    monkeypatch.setattr(engine, "print_table", lambda result: None)
    assert main(["--repeats", "1", "--threads", "2"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["--repeats", "1", "--threads", "8"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--threads: 8 threads, and this process may use 2 CPU(s)" in err, err


def test_a_device_is_cpu_cuda_or_cuda_n_and_an_index_this_machine_has(monkeypatch):
    from impls.harness import capabilities
    from impls.salus.core import devices

    monkeypatch.setattr(capabilities, "require", lambda name: None)     # as on a CUDA machine
    monkeypatch.setattr(devices.torch.cuda, "device_count", lambda: 2)
    for typo in ("cudax", "cuda_7", "cuda:", "cuda:-1", "cuda:1:2", "cpu:1", "cpu:"):
        with pytest.raises(ValueError, match=r"expected 'cpu' \(or 'cpu:0'\), 'cuda' or 'cuda:N'"):
            devices.get_device(typo)
    for cpu in ("cpu", "CPU", " cpu:0 "):      # torch's spellings of the one CPU device
        assert devices.get_device(cpu).kind == "cpu"
    with pytest.raises(ValueError, match="has 2 CUDA device"):
        devices.get_device("cuda:7")


def test_switching_cli_rejects_an_unknown_workload():
    proc = subprocess.run([sys.executable, "-m", "impls.salus.switching", "--workloads", "nope", "--json"],
                          check=False, capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          timeout=120)
    assert proc.returncode == 2 and "unknown workload" in proc.stderr


# ---------------------------------------------------------------- CUDA logic on a fake torch.cuda

def test_cuda_event_timer_records_on_its_stream_and_syncs_before_reading():
    cuda = FakeCuda(elapsed=(7.5,))
    timer = CudaEventTimer(cuda, stream="lane9")
    timer.start()
    timer.stop()
    assert [e for e in cuda.log if e[0] == "sync"] == []  # stop() does not block
    assert timer.elapsed_ms() == 7.5
    assert cuda.log == [("record", "lane9"), ("record", "lane9"), ("sync", "lane9"), ("elapsed", "lane9")]


class LaneJob:
    def __init__(self, cuda, job_id, iterations, fail=None):
        self.cuda, self.job_id, self.total_iterations, self.fail = cuda, job_id, iterations, fail
        self.workload = f"lane_job{job_id}"

    def step(self):
        if self.fail is not None:
            raise self.fail
        self.cuda.log.append(("launch", self.job_id, self.cuda.current))


def test_pack_on_cuda_launches_every_lane_before_waiting_and_uses_one_stream_per_job():
    cuda = FakeCuda(elapsed=(4.0,))
    device = CudaDevice(cuda=cuda)
    ex = Executor("pack", device)
    res = ex.run([Submission(LaneJob(cuda, i, 2)) for i in range(3)])
    assert res["done"] == 3 and all(j["device_ms"] == 8.0 for j in res["jobs"])
    first_wait = next(i for i, e in enumerate(cuda.log) if e[0] == "sync")
    first_round = cuda.log[:first_wait]
    launches = [e for e in cuda.log if e[0] == "launch"]
    lanes = {e[1]: e[2] for e in launches}
    assert len(set(map(str, lanes.values()))) == 3  # one stream per job
    # all three jobs' first iterations are launched before the first wait
    assert sum(1 for e in first_round if e[0] == "launch") == 3


def test_serial_policy_on_cuda_waits_at_every_iteration_boundary():
    cuda = FakeCuda(elapsed=(2.0,))
    ex = Executor("fifo", CudaDevice(cuda=cuda))
    ex.run([Submission(LaneJob(cuda, 0, 3))])
    kinds = [e[0] for e in cuda.log if e[0] in ("launch", "sync")]
    assert kinds == ["launch", "sync"] * 3


def test_cuda_oom_fails_the_job_frees_the_cache_and_others_continue():
    cuda = FakeCuda(elapsed=(1.0,))
    ex = Executor("fair", CudaDevice(cuda=cuda))
    res = ex.run([Submission(LaneJob(cuda, 0, 2)),
                  Submission(LaneJob(cuda, 1, 2, fail=cuda.OutOfMemoryError("CUDA out of memory"))),
                  Submission(LaneJob(cuda, 2, 2))])
    by_id = {j["job_id"]: j for j in res["jobs"]}
    assert by_id[1]["status"] == "failed" and by_id[1]["error"].startswith("out of memory")
    assert by_id[0]["status"] == by_id[2]["status"] == "done"
    assert ("empty_cache",) in cuda.log


def test_cuda_memory_measurement_uses_allocator_peak():
    cuda = FakeCuda()

    class MemJob:
        def persistent_tensors(self):
            return [torch.zeros(250)]  # 1000 bytes

        def step(self, count=True):
            cuda.peak = cuda.allocated + 4000

    mem = CudaDevice(cuda=cuda).measure_job_memory(MemJob())
    assert mem == {"persistent_bytes": 1000, "ephemeral_bytes": 4000, "peak_bytes": 5000, "method": "cuda_allocator"}


def test_cuda_ephemeral_bytes_are_above_what_stays_allocated_after_the_iteration():
    """A first step that creates optimizer state (allocated 1000 B before it, 1500 B after it,
    peak 1700 B): the 500 B of state are persistent (counted from the job's tensors), and
    ephemeral is the peak above the larger of before and after, 1700 - 1500 = 200 B, not the
    state counted a second time."""
    cuda = FakeCuda()

    class StatefulJob:
        def persistent_tensors(self):
            return [torch.zeros(125)]  # 500 bytes

        def step(self, count=True):
            cuda.allocated = 1500      # the optimizer's state, created now and kept
            cuda.peak = 1700           # activations, freed when the step ends

    mem = CudaDevice(cuda=cuda).measure_job_memory(StatefulJob())
    assert mem == {"persistent_bytes": 500, "ephemeral_bytes": 200, "peak_bytes": 700, "method": "cuda_allocator"}


def test_cpu_inference_estimate_is_twice_the_largest_module_output():
    """Inference (no autograd): ephemeral = 2 x the largest module output, an input and an output
    alive at once. Batch 5 through Linear(8, 1000) gives 5 x 1000 float32 = 20,000 B (ReLU's
    output is as large, the final Linear's and the model's 5 x 3 are smaller): 40,000 B."""
    from impls.salus.core.workloads import Job

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 1000), torch.nn.ReLU(), torch.nn.Linear(1000, 3))
    job = Job("infer", model, None, torch.randn(5, 8), None, None, total_iterations=1, train=False)
    mem = estimate_job_memory(job)
    params = (8 * 1000 + 1000 + 1000 * 3 + 3) * 4
    assert mem["persistent_bytes"] == params + 5 * 8 * 4
    assert mem["ephemeral_bytes"] == 2 * 5 * 1000 * 4
    assert mem["peak_bytes"] == mem["persistent_bytes"] + 40_000



TRACEBACK = "\n".join(["Traceback (most recent call last):"]
                      + [f'  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line {n}, in _apply'
                         f"\n    module._apply(fn)" for n in range(100, 108)]
                      + ["RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"])


def _refused_child(monkeypatch, switching):
    class Child:
        returncode = 1

        def __init__(self, argv, **kwargs):
            self.stdout = io.StringIO("")

        def communicate(self, timeout=None):
            return "", TRACEBACK

    monkeypatch.setattr(switching.subprocess, "Popen", Child)


def test_a_restart_child_a_gpu_refuses_costs_the_restart_only(tmp_path, monkeypatch, capsys):
    """A GPU in exclusive-process mode refuses the restart child: the restart has no times and
    says why, ending with the child's error (not cut off inside its traceback)."""
    import types

    from impls.salus.core import switching

    _refused_child(monkeypatch, switching)
    gpu = types.SimpleNamespace(kind="cuda", torch_device=torch.device("cpu"), synchronize=lambda: None)
    job = build_job("mlp_b64", seed=0)
    parts = {"save_a": [1.0]}
    times, why = switching._restart("mlp_b64", job, job, gpu, 1, tmp_path, parts)
    assert times == [] and parts == {}
    assert why.startswith("the restart child failed: restart child for mlp_b64 failed (rc=1")
    assert why.endswith("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"), why
    assert "the other methods' numbers stand" in capsys.readouterr().err


def test_a_restart_child_that_fails_on_the_cpu_is_a_defect_raised(tmp_path, monkeypatch):
    """No device refuses a CPU restart: its failure fails the experiment, as before."""
    from impls.salus.core import switching

    _refused_child(monkeypatch, switching)
    with pytest.raises(RuntimeError, match="restart child for mlp_b64 failed"):
        switching.switching_latency("cpu", ["mlp_b64"], repeats=2, restart_repeats=1, directory=tmp_path)


def test_a_switching_method_with_no_times_skips_with_the_runs_words():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    try:
        from benchmarks import bench_salus
    finally:
        sys.path.pop(0)
    measured = {"p50": 5.0, "p99": 6.0, "n": 2}
    out = {"workloads": {"mlp_b64": {"restart_ms": {"p50": None, "p99": None, "n": 0}, "to_disk_ms": measured,
                                     "restart_no_value": "the restart child failed: ... busy or unavailable"}}}
    bench = bench_salus.SwitchingLatency()
    with pytest.raises(NotImplementedError, match="busy or unavailable"):
        bench.setup(out, "mlp_b64", "restart")
    bench.setup(out, "mlp_b64", "to_disk")
    assert bench.track_p50_ms(out, "mlp_b64", "to_disk") == 5.0


def test_a_job_is_finished_after_exactly_its_iterations():
    """A job of 3 iterations: not finished after 2, finished after 3 (the executor stops
    scheduling it then; one iteration more would add to its JCT)."""
    job = build_job("mlp_b64", seed=0)
    job.total_iterations = 3
    for done in range(3):
        assert not job.finished and job.remaining_iterations == 3 - done
        job.step()
    assert job.finished and job.remaining_iterations == 0
