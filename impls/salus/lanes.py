"""Command line of the lane assignment: ``python -m impls.salus.lanes --jobs jobs.json --capacity BYTES
[--rule R] [--json [FILE|-]]`` admits jobs ``[{name, persistent, ephemeral}]`` in arrival order
and prints the lanes as JSON (the engine: :mod:`impls.salus.memory.lanes`); a job whose peak
(persistent + ephemeral) exceeds the device, or a static partition, is named on stderr: it
waits for ever, not for a departure."""
from __future__ import annotations

import json
import sys
from typing import Sequence

from impls.harness import cli
from impls.salus.memory.lanes import BASELINES, RULES, LaneError, assign, jobs_from_json


def _no_constants(name: str):
    raise ValueError(f"{name} is not a JSON number")


@cli.command("python -m impls.salus.lanes", (LaneError,))
def main(argv: Sequence[str] | None = None) -> int:
    """Read ``--jobs``, assign lanes, print JSON; exit 2 with a one-line error on bad input."""
    parser = cli.parser(prog="python -m impls.salus.lanes",
                        description="Assign jobs to GPU lanes (Salus) and print the lanes.")
    parser.add_argument("--jobs", required=True, help="JSON file: list of {name, persistent, ephemeral} (bytes)")
    parser.add_argument("--capacity", required=True, help="device memory in bytes")
    parser.add_argument("--rule", default="salus", choices=RULES + BASELINES)
    parser.add_argument("--partitions", type=int, default=4, help="partitions for --rule static")
    cli.add_json_option(parser, "the lanes (the default and only output)")
    args = parser.parse_args(argv)
    try:
        capacity = int(args.capacity)
    except ValueError:
        raise cli.UsageError(f"got {args.capacity!r}", "--capacity", "expected a whole number of bytes") from None
    cli.number(args.partitions, "--partitions", minimum=1, integer=True)
    cli.check_file(args.jobs, "--jobs", "a readable JSON file")
    try:
        with open(args.jobs, encoding="utf-8") as handle:
            items = json.load(handle, parse_constant=_no_constants)
    except UnicodeDecodeError as err:
        raise cli.UsageError(f"byte {err.start} is not UTF-8", args.jobs, "expected UTF-8 JSON text") from None
    except json.JSONDecodeError as err:
        raise cli.UsageError(f"not valid JSON ({err.msg})", f"{args.jobs}:{err.lineno}:{err.colno}",
                             "expected a JSON list of {name, persistent, ephemeral}") from None
    except ValueError as err:
        raise cli.UsageError(str(err), args.jobs, "expected finite numbers of bytes") from None
    jobs = jobs_from_json(items, args.jobs)
    result = assign(jobs, capacity, args.rule, args.partitions)
    largest = capacity // args.partitions if args.rule == "static" else capacity
    where = f"a {args.rule} partition of {largest} B" if args.rule == "static" else f"the {capacity} B device"
    for job in jobs:
        if job.persistent + job.ephemeral > largest:  # waits for ever, not for a departure
            cli.warn(f"job {job.name!r} needs {job.persistent + job.ephemeral} B at its peak, more than "
                     f"{where}: it can never be admitted")
    cli.emit_json(args.json or "-", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
