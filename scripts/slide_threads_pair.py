"""A profile's SLIDE time-to-accuracy pairs at another thread count, for machines with more
cores than the profile asks for (quick pins 2 threads so that runs compare across machines).

Runs SLIDE, dense PyTorch on the CPU and sampled softmax on the CPU, each at ``--threads``,
and dense PyTorch on CUDA where a GPU is there, with ``--profile``'s (default:
``DLSYSBENCH_PROFILE``, else quick) budgets, data (the synthetic Amazon-670K-shaped set) and
target rule, each in a fresh process. Writes the whole sweep result
(``time_to_accuracy_sweep``'s: runs, curves, ``speedups`` with their bootstrap intervals) as
JSON to ``--out`` and prints one line per comparison: the ratio of the slow run's time to
target over SLIDE's, "≥" / "≤" where only one side reached it.
Nothing is filed in the suite's history: the asv benchmarks keep the profile's threads.

    python scripts/slide_threads_pair.py --threads 16 --out t16.json [--budget 30] [--profile smoke|quick|full]
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from impls.harness import cli, profiles  # noqa: E402
from impls.slide.experiments import sweeps  # noqa: E402


def runs_at(threads: int, budget_s: float) -> list[dict]:
    """The run specs of the pairs at ``threads`` threads, ``budget_s`` seconds each (CUDA:
    the profile's budget)."""
    return [
        {"name": "slide", "method": "slide", "threads": threads, "padding": "batch", "time_budget_s": budget_s},
        {"name": "dense-cpu", "method": "dense", "device": "cpu", "threads": threads, "warmup_steps": 2,
         "time_budget_s": budget_s},
        {"name": "sampled-cpu", "method": "sampled", "device": "cpu", "threads": threads, "warmup_steps": 2,
         "time_budget_s": budget_s},
        {"name": "dense-cuda", "method": "dense", "device": "cuda", "threads": threads},
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, required=True, help="threads for every run (SLIDE and the CPU baselines)")
    p.add_argument("--budget", type=float, default=30.0, help="seconds of training per CPU run (default 30)")
    p.add_argument("--out", required=True, help="JSON file for the sweep's result")
    cli.add_profile_option(p, "sizes and data of this profile (default: DLSYSBENCH_PROFILE, else quick)")
    a = p.parse_args(argv)
    if a.threads < 1 or not a.budget > 0:
        p.error("--threads must be at least 1 and --budget positive")
    try:
        a.profile = profiles.resolve(a.profile)
    except profiles.ProfileError as err:
        p.error(str(err))
    s = copy.deepcopy(sweeps.sizes(a.profile, "slide_train"))
    s["runs"] = runs_at(a.threads, a.budget)
    s["comparisons"] = [["slide", "dense-cpu"], ["slide", "sampled-cpu"], ["slide", "dense-cuda"]]
    result = sweeps.time_to_accuracy_sweep(a.profile, progress=False, s=s)
    Path(a.out).write_text(json.dumps(result, default=str))
    for run in result["runs"]:
        if "skipped" in run or "failed" in run:
            print(f"{run['name']}: " + (f"skipped ({run['skipped']})" if "skipped" in run else f"failed ({run['failed']})"))
        else:
            print(f"{run['name']}: {run['threads']} threads, {run['samples_per_second']:.0f} samples/s, "
                  f"{run['iterations']} batches, final P@1 {run['final_p_at_1']:.3f}")
    for name, sp in result["speedups"].items():
        mark = "≥ " if sp.get("lower_bound") else "≤ " if sp.get("upper_bound") else ""
        value = "no value: " + sp.get("no_value", "a run was skipped") if sp.get("value") is None else f"{mark}{sp['value']:.3f}"
        print(f"{name} time to target: {value}; interval {sp.get('intervals', {}).get('time_to_target_ratio')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
