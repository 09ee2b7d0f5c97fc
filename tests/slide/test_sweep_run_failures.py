"""A SLIDE sweep whose run is killed (the out-of-memory killer) or runs out of memory keeps the
runs that finished; that run's numbers fail, and so do the per-run times to a target it might
have set, while the pair ratios of finished runs stand."""
import pytest

from impls.slide.experiments import run_failures, sweeps

KILLED = ("the child process running _run_spec_in_child ended without an answer (killed by signal 9 "
          "(SIGKILL), most often the out-of-memory killer)")


def _child_error(text: str, exitcode: int | None) -> ChildProcessError:
    err = ChildProcessError(text)
    err.exitcode = exitcode              # as fresh_process.call sets it
    return err


def _sweep(monkeypatch, tmp_path, failing):
    """The smoke sweep's slide and dense-cpu runs, in this process; the runs named in
    ``failing`` raise (ChildProcessError or MemoryError, by name)."""
    monkeypatch.setenv("DLSYSBENCH_PROGRESS_LOG", str(tmp_path / "progress.log"))
    s = sweeps.sizes("smoke")
    s = {**s, "runs": [r for r in s["runs"] if r["name"] in ("slide", "dense-cpu")], "time_budget_s": 1.0,
         "eval_first_s": 0.25, "eval_points": 100, "comparisons": [["slide", "dense-cpu"]]}

    def call(fn, kwargs, isolate):
        name = kwargs["spec"]["name"]
        if name in failing:
            raise failing[name]
        return fn(kwargs)

    monkeypatch.setattr(sweeps, "_call", call)
    return sweeps.time_to_accuracy_sweep("smoke", progress=False, isolate=False, s=s)


def test_a_killed_run_fails_alone_and_the_others_are_kept(monkeypatch, tmp_path):
    out = _sweep(monkeypatch, tmp_path, {"dense-cpu": _child_error(KILLED, -9)})
    runs = {r["name"]: r for r in out["runs"]}
    assert runs["dense-cpu"]["failed"].startswith("ChildProcessError: the child process") \
        and "SIGKILL" in runs["dense-cpu"]["failed"] and "curve" not in runs["dense-cpu"]
    assert "curve" in runs["slide"] and runs["slide"]["target_without"] == ["dense-cpu"]
    assert out["speedups"]["dense-cpu/slide"]["value"] is None
    assert out["speedups"]["dense-cpu/slide"]["no_value"].startswith("dense-cpu failed (ChildProcessError")
    log = (tmp_path / "progress.log").read_text()
    assert "warning: slide_train: run 'dense-cpu' failed (ChildProcessError" in log and "goes on without it" in log

    from benchmarks import bench_slide
    with pytest.raises(RuntimeError, match="run 'dense-cpu' failed: ChildProcessError"):
        bench_slide._run(out, "dense-cpu")
    slide = bench_slide._run(out, "slide")                      # its own numbers stand
    assert slide["samples_per_second"] > 0
    with pytest.raises(RuntimeError, match="target P@1 was set without dense-cpu"):
        bench_slide._time_or_budget(slide)                      # ...but not its time to the sweep's target
    with pytest.raises(RuntimeError, match="failed"):
        bench_slide._comparison(out, "dense-cpu/slide")

    from impls.slide import figures
    title = figures.time_to_accuracy(out).axes[1].get_title()
    assert "failed (ChildProcessError" in title and "dense-cpu" in title


def test_a_run_out_of_memory_in_this_process_is_kept_as_failed(monkeypatch, tmp_path):
    out = _sweep(monkeypatch, tmp_path, {"slide": MemoryError("Unable to allocate 8 GiB")})
    runs = {r["name"]: r for r in out["runs"]}
    assert runs["slide"]["failed"] == "MemoryError: Unable to allocate 8 GiB"
    assert runs["dense-cpu"]["target_without"] == ["slide"]
    from benchmarks.bench_slide import SlideTraining
    with pytest.raises(RuntimeError, match="run 'slide' failed: MemoryError"):
        SlideTraining().setup(out, 2, "batch")                  # the point reads the failed run: it fails, not skips


def test_a_sweep_whose_every_run_failed_raises(monkeypatch, tmp_path):
    with pytest.raises(RuntimeError, match="every run that could run here failed: slide .*; dense-cpu"):
        _sweep(monkeypatch, tmp_path, {"slide": MemoryError("a"), "dense-cpu": _child_error(KILLED, -9)})


def test_other_errors_still_stop_the_sweep(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="a defect"):            # a bug is not a resource failure
        _sweep(monkeypatch, tmp_path, {"dense-cpu": ValueError("a defect")})
    for code in (-11, 1):                                        # a segfault, sys.exit(1): crashes, not sizes
        with pytest.raises(ChildProcessError):
            _sweep(monkeypatch, tmp_path, {"dense-cpu": _child_error("ended without an answer", code)})


def test_a_gpu_that_cannot_run_the_cuda_run_fails_that_run_alone(monkeypatch, tmp_path, capsys):
    """A GPU too old for torch's kernels, busy, or too small: the CUDA run fails, and the
    sweep's CPU runs and their pair stand (they do not depend on the GPU)."""
    monkeypatch.setenv("DLSYSBENCH_PROGRESS_LOG", str(tmp_path / "progress.log"))
    s = sweeps.sizes("smoke")
    dense = next(r for r in s["runs"] if r["name"] == "dense-cpu")
    s = {**s, "runs": [r for r in s["runs"] if r["name"] in ("slide", "dense-cpu")]
         + [{**dense, "name": "dense-cuda", "device": "cuda:1"}], "time_budget_s": 1.0, "eval_first_s": 0.25,
         "eval_points": 100, "comparisons": [["slide", "dense-cpu"], ["slide", "dense-cuda"]]}
    monkeypatch.setattr(sweeps, "skip_reason", lambda spec: None)      # as on a machine whose torch sees a GPU

    def call(fn, kwargs, isolate):
        if kwargs["spec"]["name"] == "dense-cuda":
            raise RuntimeError("CUDA error: no kernel image is available for execution on the device")
        return fn(kwargs)

    monkeypatch.setattr(sweeps, "_call", call)
    out = sweeps.time_to_accuracy_sweep("smoke", progress=False, isolate=False, s=s)
    runs = {r["name"]: r for r in out["runs"]}
    assert runs["dense-cuda"]["failed"] == "RuntimeError: CUDA error: no kernel image is available for execution " \
                                          "on the device"
    assert "curve" in runs["slide"] and "curve" in runs["dense-cpu"]
    assert out["speedups"]["dense-cuda/slide"]["value"] is None
    assert "warning: slide_train: run 'dense-cuda' failed (RuntimeError" in (tmp_path / "progress.log").read_text()
    err = capsys.readouterr().err          # the whole traceback, for a defect in the CUDA path
    assert "Traceback (most recent call last)" in err and "in call" in err and "no kernel image" in err


@pytest.mark.parametrize("device", ["cpu", None])
def test_the_same_error_of_a_cpu_run_is_a_defect_and_torchs_out_of_memory_is_a_size(device):
    import torch

    cuda_error = RuntimeError("CUDA error: no kernel image is available for execution on the device")
    assert not run_failures.for_want_of_resources(cuda_error, device)
    assert run_failures.for_want_of_resources(cuda_error, "cuda") and run_failures.for_want_of_resources(
        cuda_error, "cuda:0")
    assert run_failures.for_want_of_resources(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate"), device)
    assert not run_failures.for_want_of_resources(KeyboardInterrupt(), "cuda")


def test_a_killed_child_carries_its_exit_code():
    import signal

    from impls.harness import fresh_process
    with pytest.raises(ChildProcessError) as caught:
        fresh_process.call(signal.raise_signal, signal.SIGKILL)      # the child kills itself
    assert caught.value.exitcode == -signal.SIGKILL and run_failures.for_want_of_resources(caught.value)


def _secondary(monkeypatch, tmp_path, failing, **sizes):
    """The smoke batch-size and hash-family sweep at one batch size (``sizes`` over its table),
    in this process; the runs named in ``failing`` raise."""
    from impls.slide.experiments import secondary

    monkeypatch.setenv("DLSYSBENCH_PROGRESS_LOG", str(tmp_path / "progress.log"))
    s = {**sweeps.sizes("smoke", "slide_sweep"), "batches": [256], "time_budget_s": 0.5, "eval_first_s": 0.25,
         "eval_points": 100, **sizes}
    calls = []

    def call(fn, kwargs, isolate):
        calls.append(kwargs["spec"]["name"])
        if kwargs["spec"]["name"] in failing:
            raise failing[kwargs["spec"]["name"]]
        return fn(kwargs)

    monkeypatch.setattr(sweeps, "_call", call)
    out = secondary.secondary_sweep("smoke", progress=False, isolate=False, s=s)
    return out, calls


def test_each_secondary_run_has_its_own_process_and_a_killed_one_fails_alone(monkeypatch, tmp_path):
    out, calls = _secondary(monkeypatch, tmp_path, {"slide-simhash-K6-L10": _child_error(KILLED, -9)})
    assert calls == ["slide-b256", "dense-b256", "slide-simhash-K6-L10"]       # one call (process) per run
    [own, simhash] = out["hash"]
    assert simhash["failed"].startswith("ChildProcessError") and "final_p_at_1" not in simhash
    assert own["name"] == "slide-b256" and own["target_without"] == ["slide-simhash-K6-L10"]
    batch = out["batch"]["256"]
    assert "target_without" not in batch["slide"] and "target_without" not in batch["dense"]   # not this question's
    assert out["data"]["labels"] > 0 and out["source"]
    log = (tmp_path / "progress.log").read_text()
    assert "warning: slide_sweep: run 'slide-simhash-K6-L10' failed (ChildProcessError" in log

    from benchmarks.bench_slide import SlideBatchSize, SlideHashFamily
    bench = SlideHashFamily()
    with pytest.raises(RuntimeError, match="run 'slide-simhash-K6-L10' failed: ChildProcessError"):
        bench.setup(out, "simhash-K6-L10")
    bench.setup(out, "dwta-K6-L50")
    assert bench.row["final_p_at_1"] == own["final_p_at_1"]
    SlideBatchSize().setup(out, 256, "dense")

    from impls.slide import figures
    title = figures.hash_family(out).axes[0].get_title()
    assert "failed (ChildProcessError" in title and "slide-simhash-K6-L10" in title


def test_a_killed_secondary_batch_run_fails_its_points_and_its_pair(monkeypatch, tmp_path):
    out, _ = _secondary(monkeypatch, tmp_path, {"dense-b256": MemoryError("Unable to allocate 3 GiB")})
    batch = out["batch"]["256"]
    assert batch["dense"]["failed"] == "MemoryError: Unable to allocate 3 GiB"
    assert batch["slide"]["target_without"] == ["dense-b256"] and "target_without" not in out["hash"][0]
    assert batch["speedup"]["value"] is None and batch["speedup"]["no_value"].startswith("dense-b256 failed (Memory")
    from benchmarks import bench_slide
    with pytest.raises(RuntimeError, match="run 'dense-b256' failed: MemoryError"):
        bench_slide.SlideBatchSize().setup(out, 256, "dense")
    with pytest.raises(RuntimeError, match="run 'dense-b256' failed: MemoryError"):
        bench_slide.SlideBatchSpeedup().setup(out, 256)        # the pair fails too, not NaN and "exact"
    point = bench_slide.SlideBatchSize()
    point.setup(out, 256, "slide")
    with pytest.raises(RuntimeError, match="target P@1 was set without dense-b256"):
        point.track_time_to_target(256, "slide")

    from impls.slide import figures
    title = figures.batch_size(out).axes[0].get_title()
    assert "failed (MemoryError: Unable to allocate 3 GiB): dense-b256" in title


def test_a_secondary_sweep_whose_every_run_failed_raises(monkeypatch, tmp_path):
    killed = _child_error(KILLED, -9)
    with pytest.raises(RuntimeError, match="slide_sweep: every run that could run here failed: slide-b256"):
        _secondary(monkeypatch, tmp_path, dict.fromkeys(["slide-b256", "dense-b256", "slide-simhash-K6-L10"], killed))
    with pytest.raises(ChildProcessError):                   # a crash is a defect: the sweep stops
        _secondary(monkeypatch, tmp_path, {"dense-b256": _child_error("ended without an answer", -11)})


def test_a_sweep_of_dense_alone_reads_no_hash_run_as_its_slide_point(monkeypatch, tmp_path):
    """batch_methods dense only: the hash sweep's own run at hash_batch is trained as a hash
    run and is no batch point; the batch figure draws dense alone."""
    out, calls = _secondary(monkeypatch, tmp_path, {}, batch_methods=["dense"])
    assert calls == ["dense-b256", "slide-b256", "slide-simhash-K6-L10"]
    assert out["batch"]["256"]["slide"] is None and out["batch"]["256"]["speedup"] is None
    assert out["hash"][0]["name"] == "slide-b256" and "final_p_at_1" in out["hash"][0]
    from impls.slide import figures
    figures.batch_size(out)


def test_a_run_the_machine_could_not_run_is_a_skip_with_its_reason():
    """dense-cuda without a GPU is recorded as skipped; its points skip with that reason
    instead of reading a run that never trained."""
    from benchmarks import bench_slide

    sweep = {"runs": [{"name": "dense-cuda", "skipped": "needs CUDA: no NVIDIA GPU found on this machine"}]}
    with pytest.raises(NotImplementedError, match="no NVIDIA GPU found"):
        bench_slide._run(sweep, "dense-cuda")


def test_each_question_of_the_secondary_sweep_has_its_own_target(monkeypatch, tmp_path):
    """One target per question: the batch runs' set from the batch runs, the hash runs' from
    the hash runs (the sweep's own SLIDE run is in both)."""
    from impls.slide.experiments import secondary

    asked = []
    real = secondary.add_targets

    def recording(runs, fraction):
        asked.append([r["name"] for r in runs])
        target = real(runs, fraction)
        asked[-1].append(target)
        return target

    monkeypatch.setattr(secondary, "add_targets", recording)
    out, _ = _secondary(monkeypatch, tmp_path, {})
    assert asked == [["slide-b256", "dense-b256", out["target_p_at_1"]],
                     ["slide-b256", "slide-simhash-K6-L10", out["hash_target_p_at_1"]]]


def test_a_hash_entry_reads_its_runs_own_numbers():
    from impls.slide.experiments.secondary import _hash_entry

    run = {"name": "x", "final_p_at_1": 0.1, "active_fraction": 0.02, "samples_per_second": 5.0,
           "final_lsh_recall": 0.8, "final_lsh_random_recall": 0.1, "final_lsh_retrieved": 300.0,
           "lsh_recall_k": 10, "time_to_target_s": 12.0, "curve": [{"seconds": 1.0, "p_at_1": 0.1}]}
    entry = _hash_entry("simhash", 6, 10, run)
    assert {k: entry[k] for k in ("lsh", "K", "L", "name", "final_p_at_1", "active_fraction", "samples_per_second",
                                  "lsh_recall", "lsh_random_recall", "lsh_retrieved", "lsh_recall_k",
                                  "time_to_target_s")} == {
        "lsh": "simhash", "K": 6, "L": 10, "name": "x", "final_p_at_1": 0.1, "active_fraction": 0.02,
        "samples_per_second": 5.0, "lsh_recall": 0.8, "lsh_random_recall": 0.1, "lsh_retrieved": 300.0,
        "lsh_recall_k": 10, "time_to_target_s": 12.0}


def test_the_batch_speedup_sets_dense_over_slide(monkeypatch, tmp_path):
    """Each batch size's speed-up is dense's time to target over SLIDE's (the paper's measure):
    SLIDE the fast side, dense the slow."""
    out, _ = _secondary(monkeypatch, tmp_path, {})
    speedup = out["batch"]["256"]["speedup"]
    assert (speedup["fast"], speedup["slow"]) == ("slide-b256", "dense-b256")


def test_the_sweeps_pair_ratios_set_the_slow_run_over_the_fast(monkeypatch, tmp_path):
    """"dense-cpu/slide" is dense's time to target over SLIDE's: SLIDE the fast side."""
    out = _sweep(monkeypatch, tmp_path, {})
    speedup = out["speedups"]["dense-cpu/slide"]
    assert (speedup["fast"], speedup["slow"]) == ("slide", "dense-cpu")


def test_a_table_refresh_time_is_the_median_of_its_repeats(monkeypatch):
    """Three refreshes per kind of 3, 1 and 2 s (then 30, 10 and 20 s): the medians, 2 and
    20 s, not the fastest or the last."""
    import types

    clock = [0.0]
    durations = iter([3.0, 1.0, 2.0, 30.0, 10.0, 20.0])

    def refresh(net, kind):
        clock[0] += next(durations)

    monkeypatch.setattr(sweeps, "refresh_network", lambda *a, **k: types.SimpleNamespace(
        tables=types.SimpleNamespace(nbytes=123)))
    monkeypatch.setattr(sweeps, "refresh_every_row", refresh)
    monkeypatch.setattr(sweeps, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    out = sweeps.table_refresh_seconds("smoke", repeats=3)
    assert out == {sweeps.REFRESH_KINDS[0]: 2.0, sweeps.REFRESH_KINDS[1]: 20.0, "table_bytes": 123}
