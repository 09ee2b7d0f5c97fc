#!/usr/bin/env python
"""Render the report of one machine: reports/out/<machine>/{index.html, report.md, report.json, figures/}.

    python scripts/render_report.py [--machine M] [--out DIR] [--noise FILE]
    python scripts/render_report.py --machines A B ...   (each, and side by side)

Prints the paths it wrote. Exits 2 when the machine has no results at all (no asv
results, no artifacts), a --results or --artifacts given is no directory (the defaults
may be absent), a --noise given is no file, or --noise comes with --machines (one file
holds one machine's thresholds); 1 on a bad claims file, an output directory it must not replace,
a checkout it cannot find, or a report that breaks reports/report.schema.json (the suite's
defect: that report is not written); 1 too, after writing the report, when a result, artifact,
benchmarks.json or machine.json file could not be read (not JSON: truncated, not UTF-8),
or when a paper figure's draw function failed (a figure not measured, or with no data, is
no failure). Any file left out (that, or another machine's, profile's or schema's, left out
on purpose) is listed in the report, and one line on stderr counts them; one more line
counts the figures that failed to draw (the report shows the error in each one's place).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

# this checkout's code, even where another checkout is installed
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from impls.harness import cli  # noqa: E402
from impls.harness.report import (  # noqa: E402
    ClaimsError,
    NoResultsError,
    ReportOutputError,
    render_report,
)
from impls.harness.report.render import render_machines  # noqa: E402
from impls.harness.report.report_json import ReportSchemaError  # noqa: E402
from impls.harness.report.results import ResultsError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = cli.OneLineParser(prog="python scripts/render_report.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--machine", help="asv machine name (default: this machine, or the only one)")
    parser.add_argument("--machines", nargs="+", metavar="M",
                        help="several machines: each report, and reports/out/side-by-side-<a>+<b>/")
    parser.add_argument("--out", type=Path, help="output directory (default: reports/out/<machine>; with "
                                                  "--machines, the folder that holds each machine's and the "
                                                  "side-by-side one: reports/out)")
    parser.add_argument("--results", type=Path, help="asv results directory (default: .asv/results)")
    parser.add_argument("--artifacts", type=Path,
                        help="artifact store (default: DLSYSBENCH_ARTIFACTS, else .asv/artifacts)")
    parser.add_argument("--claims", type=Path, help="claims file (default: reports/claims.toml)")
    parser.add_argument("--noise", type=Path, metavar="FILE",
                        help="the machine's thresholds file, from make noise, for the intervals and history steps "
                             "(default: reports/noise/<machine>.json; one machine's: not with --machines)")
    args = parser.parse_args(argv)
    if args.machine and args.machines:
        print("render_report: --machine and --machines both given; expected one machine or several",
              file=sys.stderr)
        return 2
    if args.machines and len(set(args.machines)) != len(args.machines):
        repeated = sorted({m for m in args.machines if args.machines.count(m) > 1})
        print(f"render_report: --machines names {', '.join(repeated)} twice; expected distinct machines",
              file=sys.stderr)
        return 2
    if args.noise is not None and args.machines:
        print("render_report: --noise with --machines: a thresholds file holds one machine's; each machine's "
              "report reads its own reports/noise/<machine>.json (or render them one by one with --machine and "
              "--noise)", file=sys.stderr)
        return 2
    if args.noise is not None and not args.noise.is_file():
        why = "not a file" if args.noise.exists() else "no such file"
        print(f"render_report: --noise {args.noise}: {why}; expected a thresholds file written by make noise "
              "(scripts/measure_noise.py), or leave --noise out for reports/noise/<machine>.json",
              file=sys.stderr)
        return 2
    for flag, given, expected in (("--results", args.results, "asv's results directory (default: .asv/results)"),
                                  ("--artifacts", args.artifacts, "the artifact store (default: .asv/artifacts)")):
        why = _not_a_folder(given)
        if why:
            print(f"render_report: {flag} {given}: {why}; expected {expected}", file=sys.stderr)
            return 2
    left_out: list[tuple[str, str]] = []
    failed: list[tuple[str, str]] = []
    try:
        if args.machines:
            written = [directory / "index.html" for directory in render_machines(
                args.machines, args.results, args.artifacts, args.claims, args.out, unreadable=left_out,
                failed=failed)]
        else:
            out_dir = render_report(args.machine, args.out, args.results, args.artifacts, args.claims,
                                    unreadable=left_out, failed=failed, noise_path=args.noise)
            written = sorted(p for p in out_dir.rglob("*") if p.is_file() and not p.name.startswith("."))
    except NoResultsError as err:
        print(f"render_report: {err}", file=sys.stderr)
        return 2
    except (ClaimsError, ResultsError, ReportOutputError, RuntimeError) as err:
        print(f"render_report: {err}", file=sys.stderr)
        return 1
    except ReportSchemaError as err:  # the suite's own defect: its document and its schema disagree
        print(f"render_report: {err}\nrender_report: this is a defect of the suite, not of the results: the report "
              "it was rendering was not written (a folder that held an earlier one still holds it)", file=sys.stderr)
        return 1
    except ValueError as err:  # a bad DLSYSBENCH_PROFILE or DLSYSBENCH_MACHINE
        print(f"render_report: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    if left_out:
        print(f"render_report: {left_out_line(left_out)}", file=sys.stderr)
    if failed:
        print(f"render_report: {failed_line(failed)}", file=sys.stderr)
    return 1 if failed or any(not _parses(path) for path, _ in left_out) else 0


def _not_a_folder(given: Path | None) -> str:
    """Why an explicitly given ``--results`` or ``--artifacts`` cannot be one ("" when it can,
    or when not given: the defaults may be absent, as on a machine with artifacts only): it does
    not exist, or is no directory. A typo there would otherwise render a report of nothing."""
    if given is None:
        return ""
    try:
        if given.is_dir():
            return ""
        return "not a directory" if given.exists() else "no such directory"
    except OSError as err:    # e.g. a path too long, or a folder above it unreadable
        return " ".join(str(err).split())


def _parses(path: str) -> bool:
    """Whether file ``path`` reads as JSON: a file left out that does is another machine's,
    profile's or schema's (left out on purpose), one that does not is damaged."""
    try:
        json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return True


def left_out_line(unreadable: list[tuple[str, str]]) -> str:
    """One line counting the distinct files of ``unreadable`` (a report's ``(path, why)``
    list, not empty) and saying why the first was left out."""
    path, why = unreadable[0]
    first = why if why.startswith(path) else f"{path}: {why}"
    count = len(dict.fromkeys(p for p, _ in unreadable))
    return (f"{count} input file(s) were left out of the report (its Unreadable inputs lists them); "
            f"the first: {first}")


def failed_line(failed: list[tuple[str, str]]) -> str:
    """One line counting the distinct figures of ``failed`` (``(name, caption)`` of each
    figure whose draw function raised, not empty) and saying why the first failed."""
    name, caption = failed[0]
    count = len(dict.fromkeys(n for n, _ in failed))
    return (f"{count} figure(s) failed to draw (the report shows the error in their place); "
            f"the first: {name}: {caption.removeprefix('figure failed to draw: ')}")


if __name__ == "__main__":
    sys.exit(main())
