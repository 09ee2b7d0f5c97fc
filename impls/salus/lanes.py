"""Command line of the lane assignment: ``python -m impls.salus.lanes --jobs jobs.json --capacity BYTES
[--rule R] [--json [FILE|-]]`` admits jobs ``[{name, persistent, ephemeral}]`` (no other keys)
in arrival order and prints the lanes as JSON (the engine: :mod:`impls.salus.memory.lanes`); the
jobs whose peak (persistent + ephemeral) exceeds the device, or a static partition, are counted
in one warning on stderr that names the first few: they wait for ever, not for a departure."""
from __future__ import annotations

import decimal
import json
import sys
from typing import Sequence

from impls.harness import cli
from impls.salus.memory.lanes import BASELINES, RULES, LaneError, assign, jobs_from_json


STATIC_PARTITIONS = 4
MAX_PARTITIONS = 4096     # a device split finer than this has no lane worth the name


def _no_constants(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _bytes(text: str, flag: str) -> int:
    """A byte count as typed, read exactly: an integer, or a whole number in float notation
    (1e9); in [0, 2^64] (no device's memory is larger than a 64-bit address space)."""
    try:
        number = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        number = decimal.Decimal("NaN")
    if not (number.is_finite() and number == number.to_integral_value()):
        raise cli.UsageError(f"got {text!r}", flag, "expected a whole number of bytes")
    if not 0 <= number <= 2 ** 64:
        raise cli.UsageError(f"got {text!r}", flag, "expected a number of bytes in [0, 2^64]")
    return int(number)


@cli.command("python -m impls.salus.lanes", (LaneError,))
def main(argv: Sequence[str] | None = None) -> int:
    """Read ``--jobs``, assign lanes, print JSON; exit 2 with a one-line error on bad input."""
    parser = cli.parser(prog="python -m impls.salus.lanes",
                        description="Assign jobs to GPU lanes (Salus) and print the lanes.")
    parser.add_argument("--jobs", required=True, help="JSON file: list of {name, persistent, ephemeral} (bytes)")
    parser.add_argument("--capacity", required=True, help="device memory in bytes")
    parser.add_argument("--rule", default="salus", choices=RULES + BASELINES,
                        help="salus: lanemgr.cpp's rule (a lane per job where jobs have persistent bytes, "
                             "so it admits what no-lanes admits); salus-grow, shared-first: lanes shared "
                             "as the paper's text describes; no-lanes, static: the baselines")
    parser.add_argument("--partitions", type=int, default=None,
                        help=f"equal partitions of the device, --rule static only (default {STATIC_PARTITIONS})")
    cli.add_json_option(parser, "the lanes (the default and only output)")
    args = parser.parse_args(argv)
    capacity = _bytes(args.capacity, "--capacity")
    if args.partitions is not None and args.rule != "static":
        raise cli.UsageError(f"got {args.partitions} with --rule {args.rule}", "--partitions",
                             "expected only with --rule static")
    partitions = STATIC_PARTITIONS if args.partitions is None else args.partitions
    if args.rule == "static":
        if args.partitions is None and capacity < partitions:
            raise cli.UsageError(f"got {capacity}", "--capacity", f"expected at least {partitions} bytes for "
                                 f"--rule static's default {partitions} partitions (or a smaller --partitions)")
        cli.number(partitions, "--partitions", minimum=1, maximum=max(1, min(capacity, MAX_PARTITIONS)),
                   integer=True)
    cli.check_file(args.jobs, "--jobs", "a readable JSON file")
    cli.check_output(None if args.json in (None, "-") else args.json, "--json", [(args.jobs, "--jobs")])
    try:
        with open(args.jobs, encoding="utf-8-sig") as handle:   # a BOM dropped
            items = json.load(handle, parse_constant=_no_constants)
    except RecursionError:
        raise cli.UsageError("nested too deeply", args.jobs,
                             "expected a JSON list of {name, persistent, ephemeral}") from None
    except UnicodeDecodeError as err:
        raise cli.UsageError(f"byte {err.start} is not UTF-8", args.jobs, "expected UTF-8 JSON text") from None
    except json.JSONDecodeError as err:
        raise cli.UsageError(f"not valid JSON ({err.msg})", f"{args.jobs}:{err.lineno}:{err.colno}",
                             "expected a JSON list of {name, persistent, ephemeral}") from None
    except ValueError as err:
        raise cli.UsageError(str(err), args.jobs, "expected finite numbers of bytes") from None
    jobs = jobs_from_json(items, args.jobs, strict=True)
    result = assign(jobs, capacity, args.rule, partitions)
    largest = capacity // partitions if args.rule == "static" else capacity
    where = f"a {args.rule} partition of {largest} B" if args.rule == "static" else f"the {capacity} B device"
    never = [job for job in jobs if job.persistent + job.ephemeral > largest]   # wait for ever, not for a departure
    if never:
        cli.warn(never_admitted_message(never, where))
    cli.emit_json(args.json or "-", result)
    return 0


NAMED = 5   # jobs a warning names; the others are counted


def never_admitted_message(never: Sequence, where: str) -> str:
    """One warning for the jobs ``never`` (LaneJobs, in arrival order) whose peak is more than
    ``where`` (the device or a partition, in words) holds: their count and the first
    :data:`NAMED` of them with their peaks in bytes."""
    if len(never) == 1:
        return (f"job {never[0].name!r} needs {never[0].persistent + never[0].ephemeral} B at its peak, more "
                f"than {where}: it can never be admitted")
    named = cli.first_few((f"{job.name!r} ({job.persistent + job.ephemeral} B)" for job in never), NAMED)
    return f"{len(never)} jobs need more than {where} at their peak, so they can never be admitted: {named}"


if __name__ == "__main__":
    sys.exit(main())
