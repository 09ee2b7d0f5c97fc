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


def test_a_killed_child_carries_its_exit_code():
    import signal

    from impls.harness import fresh_process
    with pytest.raises(ChildProcessError) as caught:
        fresh_process.call(signal.raise_signal, signal.SIGKILL)      # the child kills itself
    assert caught.value.exitcode == -signal.SIGKILL and run_failures.for_want_of_resources(caught.value)
