#!/usr/bin/env python
"""Measure every tracked number's run-to-run noise from stored repeated runs; write thresholds.

    python scripts/measure_noise.py [--machine M] [--commit C ...] [--out FILE] [--replace]

Uses every commit with two or more stored runs in one asv environment (or only the given
commits): run the suite on one commit 3 to 5 times first (`make bench` repeated; two runs
give each number one degree of freedom, which leaves most of them too noisy). Runs of other
environments are not repeats of each other (the suite's ``.venv`` of any checkout is one
environment, :func:`impls.harness.report.runs.environment`).
Writes reports/noise/<machine>.json (refusing, without --replace, to drop thresholds it
holds for numbers these runs do not measure again) and prints the numbers too noisy to track here
(a move beyond a wide but finite threshold is still judged, a smaller one not), the
degrees of freedom the thresholds rest on (more runs, or runs of more commits, narrow them),
the per-number false-alarm rate they are set for, and the rate met on these runs: with three
or more runs of a commit, each held out in turn against thresholds measured from the rest
(:mod:`impls.harness.report.noise_held_out`).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

# this checkout's code and benchmarks, even where another checkout is installed
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from impls.harness import cli, paths  # noqa: E402
from impls.harness.profiles import current_profile  # noqa: E402
from impls.harness.report import directions, noise, noise_held_out, runs  # noqa: E402
from impls.harness.report.asv_files import ResultsError, machine_info, read_benchmark_info_noting  # noqa: E402
from impls.harness.report.results import of_other_profiles, other_profiles, read_result_file  # noqa: E402


DF_BINS = ((1, 1), (2, 2), (3, 4), (5, 9), (10, 29), (30, None))


def df_lines(judged: list[noise.Threshold], false_alarm: float | None) -> list[str]:
    """The lines that say what the thresholds of ``judged`` rest on: how many numbers have
    how many degrees of freedom behind their sigma (those that moved: a deterministic or an
    infinite sigma needs none), and the per-number false-alarm rate ``false_alarm`` they are
    set for, with what it means for a compare of all of them."""
    lines = []
    if false_alarm is not None:
        # only a number judged (a finite threshold, however wide) and not deterministic can raise a false alarm
        can = sum(1 for t in judged if 0 < t.threshold < math.inf)
        anywhere = 1 - (1 - false_alarm) ** can
        lines.append(f"thresholds set for a false alarm in {100 * false_alarm:.2g}% of compares per number (1 in "
                     f"{1 / false_alarm:.0f}, either way): a compare of an unchanged commit flags one of the "
                     f"{can} numbers judged here that are not deterministic about {100 * anywhere:.0f}% of the time")
    moved = [t for t in judged if t.df is not None and t.sigma is not None and 0 < t.sigma < float("inf")]
    for low, high in DF_BINS:
        found = [t for t in moved if t.df >= low and (high is None or t.df <= high)]
        if not found:
            continue
        span = f"df {low}" if low == high else f"df {low}+" if high is None else f"df {low}-{high}"
        q = (f" (Student's t at 1 df is {noise.t_quantile(1 - false_alarm / 2, 1):.0f} at this rate, "
             f"{noise.t_quantile(1 - false_alarm / 2, math.inf):.2f} with many runs)" if false_alarm else "")
        words = {1: f": each rests on one pair of runs; their thresholds are wide{q}; more runs (or runs of more "
                    "commits) narrow them",
                 2: ": each rests on three runs of one commit or two pairs; their thresholds are wide; more runs "
                    "narrow them"}.get(high, "")
        noisy = sum(t.too_noisy for t in found)
        lines.append(f"  {span} for {len(found)} number(s), {noisy} of them too noisy{words}")
    return lines


def _dropped(path: Path, measured: noise.Noise) -> list[tuple[str, str]]:
    """The (benchmark, params) of the thresholds in the file at ``path`` that ``measured``
    lacks, sorted: writing ``measured`` there would drop them. None where the file is absent
    or unreadable (nothing to keep: it is written anew): an empty list."""
    try:
        held = noise.load_noise(path)
    except (OSError, noise.NoiseError):
        return []
    return sorted((benchmark, params) for benchmark, params in held.thresholds
                  if measured.get(benchmark, params) is None)


def main(argv: list[str] | None = None) -> int:
    parser = cli.OneLineParser(prog="python scripts/measure_noise.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--machine", help="asv machine name (default: <host>-<profile>)")
    parser.add_argument("--commit", action="append", default=[], help="only runs of this commit; repeatable")
    parser.add_argument("--results", type=Path, help="asv results directory (default: .asv/results)")
    parser.add_argument("--out", type=Path, help="thresholds file (default: reports/noise/<machine>.json)")
    parser.add_argument("--replace", action="store_true",
                        help="write the thresholds file even where it holds thresholds these runs do not "
                             "measure again (they are dropped; without it that is refused)")
    parser.add_argument("--leave-out", action="append", default=[], metavar="RUN",
                        help="a stored run not to measure from (its file name in .asv/runs/<machine>/, or its "
                             "start stamp, e.g. 20261203T165741: a run that shared the machine); repeatable")
    args = parser.parse_args(argv)
    results_dir = args.results or paths.results_dir()
    try:
        cli.check_output(args.out, "--out",   # before the measuring, not after it
                         replaceable=[noise.default_noise_path(args.machine or "m").parent],
                         input_folders=[(results_dir, "asv's results folder, whose runs it measures"),
                                        (runs.runs_dir(results_dir), "the archive of stored runs it measures")])
        machine = runs.choose_run_machine(args.machine, results_dir, "" if args.machine else paths.machine_name(),
                                          current_profile())
        skipped: list[tuple[Path, str]] = []
        stored = runs.stored_runs(results_dir, machine, skipped)
        for path, why in skipped:
            print(f"measure_noise: not a run, left out: {path}: {why}", file=sys.stderr)
        if args.commit:
            stored = list(dict.fromkeys(r for c in args.commit
                                        for r in runs.runs_named(stored, c, machine, paths.resolve_commit)))
        for name in args.leave_out:
            matching = [r for r in stored if name in (r.path.name, r.started)]
            if not matching:
                raise cli.UsageError(f"no stored run {name!r} of {machine}", "--leave-out",
                                     "expected a run's file name or start stamp: "
                                     + ", ".join(sorted({r.path.name for r in stored})[:8]))
            stored = [r for r in stored if r not in matching]
        groups: dict[tuple[str, str], list[runs.StoredRun]] = {}
        for run in stored:      # repeats are runs of one commit in one environment
            groups.setdefault((run.commit, run.env), []).append(run)
        info = read_benchmark_info_noting(results_dir, "measure_noise")
        frames: dict[tuple[str, str], list] = {}
        used = []
        for key, group in groups.items():
            if len(group) < 2:
                continue
            for run in group:   # a run whose results are not asv's is left out, as an unreadable one
                try:
                    frame = read_result_file(run.path, machine, info)
                except ResultsError as err:
                    print(f"measure_noise: not a run, left out: {err}", file=sys.stderr)
                    continue
                other = other_profiles(frame, machine)
                if other:       # asv filed a plain `asv run` of another profile under this name
                    print(f"measure_noise: left out: {run.path}: {of_other_profiles(other, machine)}: its noise is "
                          "not this profile's", file=sys.stderr)
                    continue
                frames.setdefault(key, []).append(frame)
                used.append(run)
        used = [r for r in used if len(frames.get((r.commit, r.env), ())) >= 2]
        apart = noise.hardware_disagreement([r.path for r in stored if r in used], machine_info(results_dir, machine, []))
        if apart:
            raise ValueError(f"{apart}: one machine name, two boxes, whose noise would pool into one file; "
                             "--leave-out the other box's runs, or give it its own name (DLSYSBENCH_MACHINE)")
        measured = noise.measure_noise(machine, frames, [
            {"commit": r.commit, "env": r.env_name, "started": r.started, "file": r.path.name} for r in used],
            scales=directions.declared_scales(),
            hardware=noise.runs_hardware([r.path for r in stored if r in used],    # oldest first
                                         machine_info(results_dir, machine, [])))
    except (ValueError, ResultsError, noise.NoiseError) as err:
        print(f"measure_noise: {err}", file=sys.stderr)
        return 2
    target = args.out or noise.default_noise_path(machine)
    dropped = [] if args.replace else _dropped(target, measured)
    if dropped:
        benchmark, params = dropped[0]
        print(f"measure_noise: {target} holds thresholds for {len(dropped)} number(s) these runs do not measure "
              f"again (e.g. {benchmark} [{params}]): writing would drop them; measure them too (a whole run of the "
              f"suite, repeated), or pass --replace (make noise REPLACE=1) to drop them (the only way for "
              f"benchmarks removed or renamed since), or --out another file",
              file=sys.stderr)
        return 2
    try:
        out = noise.save_noise(measured, target)
    except OSError as err:
        print(f"measure_noise: cannot write the thresholds: {err}", file=sys.stderr)
        return 2
    thresholds = list(measured.thresholds.values())
    try:
        declared = directions.declared_directions()
    except Exception:  # noqa: BLE001 - benchmarks that do not import: every number counted as judged
        declared = {}
    judged = [t for t in thresholds if not declared or directions.direction_of(t.benchmark, declared)
              in directions.JUDGED]    # flags and context numbers are never judged, noisy or not
    noisy = [t for t in judged if t.too_noisy]
    print(f"measure_noise: {machine}: {len(thresholds)} numbers from {len(used)} runs of "
          f"{len({r.commit for r in used})} commit(s) -> {out}")
    by_benchmark: dict[str, list[noise.Threshold]] = {}
    for item in judged:
        by_benchmark.setdefault(item.benchmark, []).append(item)
    for benchmark, items in sorted(by_benchmark.items()):
        worst = max(t.threshold for t in items)
        too = sum(t.too_noisy for t in items)
        up_to = (f"{worst:.3g} in its unit (absolute scale)" if items[0].scale == noise.ABSOLUTE
                 else noise.percent_text(worst))
        print(f"  {benchmark}: threshold up to {up_to} over {len(items)} point(s)"
              + (f", {too} too noisy to track" if too else ""))
    unbounded = sum(1 for t in noisy if not math.isfinite(t.threshold))
    print(f"{len(noisy)} of {len(judged)} judged numbers too noisy to track here (a relative threshold above "
          f"{100 * noise.TOO_NOISY:.0f}%, or an infinite one): a move beyond its wide threshold is still judged, "
          f"a smaller one not; {unbounded} of them with an infinite threshold are never judged; "
          f"{len(thresholds) - len(judged)} flags and context numbers are stored but never judged")
    for line in df_lines(judged, measured.false_alarm):
        print(line)
    try:
        check = noise_held_out.held_out(frames, declared, directions.declared_scales(),
                                        bounds=directions.declared_bounds(), missing=directions.declared_missing(),
                                        worst_missing=directions.declared_worst_missing()) if declared else None
    except noise.NoiseError as err:     # a run held out leaves too few to measure from: said, the file stands
        print(f"held out: not checked: {err}")
        check = None
    if check is not None:
        print(noise_held_out.held_out_line(check, measured.false_alarm))
    whole = sorted(b for b, items in by_benchmark.items() if all(t.too_noisy for t in items))
    part = sorted(b for b, items in by_benchmark.items()
                  if any(t.too_noisy for t in items) and b not in whole)
    print(f"benchmarks: {len(by_benchmark)} measured, {len(whole)} too noisy at every point (only a move beyond "
          f"a wide threshold is judged there), {len(part)} at some points")
    for name in whole:
        print(f"  too noisy at every point: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
