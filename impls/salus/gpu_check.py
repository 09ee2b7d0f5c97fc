"""The prepared device check for a session that is lent a GPU (issue 7, "GPU").

``python -m impls.salus.gpu_check [--out FILE]`` runs, on ``cuda``: switching
latency for three workloads (all four methods), the executor's overhead per iteration,
and one short policy run (FIFO, SRTF and PACK on a small trace, real + simulated), then
prints one JSON object (and writes it to ``--out``). Sized to finish in about two minutes
on one GPU; nothing here runs on a machine without CUDA: it prints ``not measured: <why>``,
writes ``{"part": ..., "skipped": "<why>"}`` (nothing measured, and why) to ``--out`` in
place of whatever the file held, and exits 3.

``--part lanes`` (or ``all``, the default) adds the lanes issue's check: memory profiles
of three workloads from the CUDA allocator, whether backward's allocations land in a
lane's ``torch.cuda.MemPool``, and a short hyper-parameter run (serial vs PACK with lanes,
NVML busy % beside it).
"""
from __future__ import annotations

import sys
import time

from impls.harness import cli

CHECK_WORKLOADS = ["resnet_b32", "lstm_b32", "transformer_b16"]
CHECK_POLICY_SIZES = {
    "mix": ["resnet_b32", "vgg_b32", "lstm_b32", "transformer_b16", "vae_b128", "superres_b16"],
    "n_jobs": 10, "mean_interarrival_s": 0.3, "duration_s": [0.2, 3.0], "seed": 0,
    "policies": ["fifo", "srtf", "pack"], "memory_budget_mb": 65536, "profile_iterations": 10, "threads": 0,
    "sim_jobs": 300, "sim_mean_interarrival_s": 30.0, "sim_duration_s": [10.0, 1000.0],
}
LANES_WORKLOADS = ["resnet_b32", "vae_b128", "superres_b16"]
LANES_HYPERPARAM_SIZES = {"workloads": ["vae_b128", "superres_b16"], "n_jobs": 8, "iterations": 60,
                          "lr": [1e-4, 1e-1], "capacity_peaks": 8, "rule": "salus", "threads": 0, "bins": 40}


def lanes_check() -> dict:
    """The lanes issue's GPU check: memory profiles, MemPool routing, a short hyper-parameter run."""
    from impls.salus.experiments.hyperparam import hyperparam_experiment
    from impls.salus.memory.lane_executor import mempool_routing_check
    from impls.salus.memory.memory_profile import profile_memory

    memory = profile_memory(LANES_WORKLOADS, "cuda", iterations=3)
    for row in memory["workloads"].values():
        row.pop("trace")
    return {"memory": memory, "mempool": mempool_routing_check("resnet_b32"),
            "hyperparam": hyperparam_experiment(LANES_HYPERPARAM_SIZES, "cuda", progress=False)}


@cli.command("python -m impls.salus.gpu_check")
def main(argv=None) -> int:
    """Run the check and print its JSON; exit 3 without CUDA, 2 on bad arguments (checked first)."""
    parser = cli.parser(prog="python -m impls.salus.gpu_check", description=__doc__.split("\n\n")[0],
                        epilog="Needs CUDA: without it, prints 'not measured: <why>', writes "
                               "{\"part\": ..., \"skipped\": \"<why>\"} to --out (replacing an earlier run's "
                               "file) and exits 3 (after checking its arguments: a bad one exits 2).")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    parser.add_argument("--repeats", type=int, default=None,
                        help="switching-latency repeats per method (--part switching or all; default 20)")
    parser.add_argument("--part", choices=["all", "switching", "lanes"], default="all",
                        help="switching: issue 7's check; lanes: the lanes issue's; all: both")
    args = parser.parse_args(argv)
    if args.repeats is not None and args.part == "lanes":
        raise cli.UsageError(f"got {args.repeats} with --part lanes", "--repeats",
                             "expected only with --part switching or all")
    args.repeats = 20 if args.repeats is None else args.repeats
    cli.number(args.repeats, "--repeats", minimum=1, maximum=10 ** 6, integer=True)
    cli.check_output(args.out, "--out")
    from impls.harness.capabilities import missing_reason

    reason = missing_reason("cuda")
    if reason:
        print(f"not measured: {reason}", file=sys.stderr)
        cli.emit_json(args.out, {"part": args.part, "skipped": reason})   # no earlier run's file read as this one's
        return 3
    from impls.salus.experiments.scheduling import (
        executor_overhead,
        policy_experiment,
        switching_latency,
    )

    t0 = time.time()
    out = {}
    if args.part in ("all", "switching"):
        out["switching"] = switching_latency("cuda", CHECK_WORKLOADS, args.repeats, restart_repeats=3)
        out["overhead"] = executor_overhead(["mlp_b64", "resnet_b8"], 50, 4, "cuda", threads=None)
        policies = policy_experiment(CHECK_POLICY_SIZES, "cuda", progress=False)
        policies.pop("trace")
        out["policies"] = policies
    if args.part in ("all", "lanes"):
        out["lanes"] = lanes_check()
    out["elapsed_s"] = time.time() - t0
    cli.emit_json("-", out)          # first: a file that cannot be written must not lose the run
    if args.out:
        cli.emit_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
