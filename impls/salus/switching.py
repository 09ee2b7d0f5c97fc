"""Command line of the job-switch measurement: ``python -m impls.salus.switching --device {cpu,cuda}
[--workloads a,b] [--repeats N] [--json [FILE|-]]`` (the engine: :mod:`impls.salus.core.switching`).

Measures, per workload, how long a switch to another resident job takes in-process at an
iteration boundary, against checkpointing to host memory, to disk, and a process restart.
"""
from __future__ import annotations

import sys
from typing import Sequence

from impls.harness import cli


@cli.command("python -m impls.salus.switching")
def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print; every flag (device, each workload name, the output) is checked
    before the first measurement, and checkpoint folders of killed runs are removed first."""
    import torch   # here, not at the top: a Ctrl-C during the import is handled as any other

    from impls.harness.cpus import crowded_threads
    from impls.salus.core.devices import get_device
    from impls.salus.core.switching import DEFAULT_WORKLOADS, print_table, switching_latency
    from impls.salus.core.workloads import WORKLOADS

    parser = cli.parser(prog="python -m impls.salus.switching", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu (or cpu:0), cuda or cuda:N (default cpu)")
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS),
                        help=f"comma-separated workload names (default {','.join(DEFAULT_WORKLOADS)})")
    parser.add_argument("--repeats", type=int, default=10, help="repeats per method (default 10)")
    parser.add_argument("--restart-repeats", type=int, default=None,
                        help="repeats of the process-restart method (default min(repeats, 5))")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    cli.add_json_option(parser)
    args = parser.parse_args(argv)
    cli.number(args.repeats, "--repeats", minimum=1, maximum=10 ** 6, integer=True)
    cli.number(args.restart_repeats, "--restart-repeats", minimum=0, maximum=10 ** 6, integer=True)
    cli.number(args.threads, "--threads", minimum=1, maximum=4096, integer=True)
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    if not names:
        raise cli.UsageError(f"no workload named in {args.workloads!r}", "--workloads",
                             f"expected comma-separated names from {', '.join(sorted(WORKLOADS))}")
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise cli.UsageError(f"unknown workload(s) {', '.join(unknown)}", "--workloads",
                             f"expected names from {', '.join(sorted(WORKLOADS))}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise cli.UsageError(f"{', '.join(twice)} named twice", "--workloads", "expected each workload once")
    try:
        get_device(args.device)
    except (ValueError, NotImplementedError) as err:
        raise cli.UsageError(str(err), "--device", "expected cpu or a CUDA device this machine has") from None
    cli.check_output(None if args.json in (None, "-") else args.json, "--json")
    if args.threads:
        torch.set_num_threads(args.threads)
        if crowded := crowded_threads(args.threads):
            cli.warn(f"--threads: {crowded}: the threads share them, and the latencies show it")
    result = switching_latency(args.device, names, args.repeats, args.restart_repeats)
    if not cli.emit_json(args.json, result):
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
