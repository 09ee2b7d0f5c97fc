"""A sweep's run that ends without a result for want of resources (its process killed by
SIGKILL, most often the out-of-memory killer, a ``MemoryError`` or torch's out-of-memory error)
is kept as a failed run, and the sweep goes on with the others: one run too large for a machine
does not lose the runs that fit. So is any error of a run on a CUDA device: a GPU too small,
busy with another process, in exclusive mode or too old for torch's kernels fails that run
alone, and the sweep's CPU runs do not depend on it (a defect in the CUDA path still fails
the benchmarks that read that run, with its line).

A failed run is its spec with ``failed``: one line saying why. It has no ``curve``, so every
reader that takes measured runs only (targets, speed-ups, figures) leaves it out; the
benchmarks reading it fail with that line (asv's failure, not its skip: the run was asked
for and did not finish). The sweep's target P@1 is the best final P@1 of the runs that
finished, so where a run failed it may not be the target a whole sweep sets: each finished
run then carries ``target_without``, the failed runs' names, and the per-run time to that
target is not tracked (a pair's ratio has the pair's own target and stays comparable).
"""
from __future__ import annotations

import signal
import sys
from typing import Any

from impls.harness.experiments import device_kind

FAILED = "failed"
TARGET_WITHOUT = "target_without"


def on_cuda(device: object) -> bool:
    """Whether a run spec's ``device`` is a CUDA device (``"cuda"`` or ``"cuda:N"``)."""
    return device_kind(device) == "cuda"


def for_want_of_resources(err: BaseException, device: object = None) -> bool:
    """Whether ``err`` ends only its own run: a ``MemoryError`` or torch's
    ``OutOfMemoryError`` (host or device memory), a child process killed by SIGKILL
    (``exitcode`` -9: most often the out-of-memory killer), or any ``Exception`` of a run whose
    ``device`` is CUDA (:func:`on_cuda`; the device, not the sweep, is what failed). On the
    CPU, a child that crashed otherwise (a segfault, ``sys.exit``) or an error raised in the
    run is a defect, not a size: False."""
    torch = sys.modules.get("torch")            # not imported: the error cannot be torch's
    if isinstance(err, MemoryError) or (torch is not None and isinstance(err, torch.OutOfMemoryError)):
        return True
    if isinstance(err, ChildProcessError) and getattr(err, "exitcode", None) == -signal.SIGKILL:
        return True
    return isinstance(err, Exception) and on_cuda(device)


def failed_run(experiment: str, spec: dict[str, Any], err: BaseException) -> dict[str, Any]:
    """``spec`` with ``failed``: ``"<error type>: <message>"`` on one line; said in the
    progress log (stderr outside a suite run) as it happens, and the error's traceback (a
    child's included, as :mod:`impls.harness.fresh_process` notes it) printed on stderr, as
    an experiment's failure is: a CUDA run's error may be a defect to find."""
    import traceback

    from impls.harness.progress import log as progress_log

    print("".join(traceback.format_exception(err)).rstrip(), file=sys.stderr, flush=True)
    line = " ".join(f"{type(err).__name__}: {err}".split())
    progress_log(f"warning: {experiment}: run {spec.get('name')!r} failed ({line}); the sweep goes on without it")
    return {**spec, FAILED: line}


def settle(experiment: str, runs: list[dict[str, Any]]) -> None:
    """Where runs of ``runs`` failed: raise RuntimeError naming them when no run finished
    (:func:`raise_if_all_failed`), else set ``target_without`` on every run that finished
    (:func:`mark_partial_targets`). Without failed runs, nothing."""
    raise_if_all_failed(experiment, runs)
    mark_partial_targets(runs)


def raise_if_all_failed(experiment: str, runs: list[dict[str, Any]]) -> None:
    """Raise RuntimeError naming the failed runs of ``runs`` when some failed and none finished
    (nothing to keep)."""
    failed = [r for r in runs if FAILED in r]
    if failed and not any("curve" in r for r in runs):
        raise RuntimeError(f"{experiment}: every run that could run here failed: "
                           + "; ".join(f"{r.get('name')} ({r[FAILED]})" for r in failed))


def mark_partial_targets(runs: list[dict[str, Any]]) -> None:
    """Set ``target_without`` (the names of the failed runs of ``runs``, in order) on every run of
    ``runs`` that finished, in place: those runs share a target P@1 set without the failed
    ones. Without failed runs, nothing."""
    names = [str(r.get("name")) for r in runs if FAILED in r]
    if names:
        for r in runs:
            if "curve" in r:
                r[TARGET_WITHOUT] = names


def raise_if_failed(run: dict[str, Any]) -> None:
    """Raise RuntimeError saying why when ``run`` failed (:func:`failed_run`)."""
    if FAILED in run:
        raise RuntimeError(f"run {run.get('name')!r} failed: {run[FAILED]}")


def raise_if_target_partial(run: dict[str, Any]) -> None:
    """Raise RuntimeError when ``run``'s sweep set its target without runs that failed: its
    time to that target would not be comparable with a whole sweep's."""
    if run.get(TARGET_WITHOUT):
        raise RuntimeError(f"the sweep's target P@1 was set without {', '.join(run[TARGET_WITHOUT])}, which "
                           "failed: this run's time to it is not comparable with a whole sweep's")
