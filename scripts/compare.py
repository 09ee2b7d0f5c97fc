#!/usr/bin/env python
"""Compare two stored runs: every tracked number that got worse beyond its measured noise.

    python scripts/compare.py [--base COMMIT|FILE] [--head COMMIT|FILE] [--machine M] [--artifacts DIR]

Prints ``REGRESSION <benchmark> [<params>] <old> -> <new> (<ratio>x, ...)`` lines, then
the improvements and the flags that changed, then a summary. Direction comes from each
benchmark's declaration, the threshold of each number from ``make noise``
(reports/noise/<machine>.json). A commit names its newest stored run (in an environment
the other commit also has, where there is one; the suite's ``.venv`` of any checkout is one
environment, :func:`runs.environment`); the same commit as base and head compares its two
newest runs of one environment; no commits compare the newest run of the newest commit (in git's
order, parents before children, for the commits this checkout knows, any other counting as
older; by the date asv records where git knows none) with the run before it in one
environment; where dates order some of them (a shallow clone, no git) a note on stderr says so,
and where git knows one commit of that pair and not the other it refuses (name the pair).
A commit is a hash prefix of a stored run or a revision git resolves (a branch, ``HEAD~1``);
a FILE is a result file's path, or the file name of a stored run as the first line prints it.
A run whose benchmark versions name another profile than the machine's name (a plain ``asv
run`` asv filed under ``<host>-quick``) is left out of the default pair, saying so.
Exit status: 1 when a number regressed, a measured benchmark failed in the new run (or
holds there a value no run can measure: a timing of 0, an infinite rate), or one
of the same version has there the NaN its benchmark declares the worst outcome (a job that
failed), 0
when none did, 2 when it cannot compare (nothing in common, nothing measured again, bad
arguments, a default pair of which git knows only one commit, another machine's run or
thresholds, a named run of another profile than the machine's name, a relative-scale number without any threshold that moved beyond the too-noisy level while no --default-threshold was given, an
absolute-scale number without a measured threshold that changed at all, with or without
--default-threshold, which is relative and cannot judge it). Changed numbers left
unjudged for want of a threshold, thresholds of numbers the base run has and the new run
lacks (a partial run: GONE), thresholds that name numbers neither run has (a stale
file), and numbers measured in the base run without a value in the new one (SKIPPED, NO
VALUE: not failures), are warned of on stderr. When most speed-like numbers (times, rates)
moved the same way, a note after the summary says the whole machine may have moved (a slow
day, another load); it changes no verdict and not the exit status.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# this checkout's code and benchmarks, even where another checkout is installed
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from impls.harness import atomic, cli, paths, profiles, skip_log  # noqa: E402
from impls.harness.profiles import current_profile  # noqa: E402
from impls.harness.report import compare, compare_warnings, directions, noise, runs  # noqa: E402
from impls.harness.report.asv_files import ResultsError, machine_info, read_benchmark_info_noting  # noqa: E402
from impls.harness.report.results import of_other_profiles, other_profiles, read_result_file  # noqa: E402


def pick_runs(stored: list[runs.StoredRun], base: str | None, head: str | None,
              machine: str) -> tuple[runs.StoredRun, runs.StoredRun]:
    """Return the (base, head) runs the arguments name (see the module doc); ValueError if none."""
    def named(text: str) -> list[runs.StoredRun]:
        if Path(text).is_file():
            run = runs.read_run(Path(text), machine)
            if run.recorded_machine and run.recorded_machine != machine:
                raise ValueError(f"{text} is a run of machine {run.recorded_machine!r}, not {machine!r}: "
                                 "runs of two machines are not compared (pass --machine to pick one)")
            return [run]
        by_name = [r for r in stored if r.path.name == text]   # a file name as compare prints it
        if by_name:
            return by_name[-1:]
        return runs.runs_named(stored, text, machine, paths.resolve_commit)

    def same_env(found: list[runs.StoredRun], env: str) -> list[runs.StoredRun]:
        return [r for r in found if r.env == env]

    across = ("name the pair to compare across environments: --base and --head (make compare BASE=... "
              "HEAD=...), each a commit or a result file")
    if not base and not head:
        if len(stored) < 2:
            raise ValueError(f"{machine} has {len(stored)} stored run(s); compare needs two")
        earlier = same_env(stored[:-1], stored[-1].env)
        if not earlier:
            raise ValueError(f"the newest run {stored[-1].label} is the only one in environment "
                             f"{stored[-1].env_name!r}; {across}")
        return earlier[-1], stored[-1]
    if not base or not head:
        raise ValueError("give both --base and --head, or neither")
    old, new = named(base), named(head)
    if old[-1] == new[-1]:  # one commit (or file) twice: its two newest runs of one environment
        pools: dict[str, list[runs.StoredRun]] = {}
        for run in new:
            pools.setdefault(run.env, []).append(run)
        twins = max((pool for pool in pools.values() if len(pool) >= 2), default=None,
                    key=lambda pool: new.index(pool[-1]))     # the environment of its newest repeat
        if twins is None:
            files = " and ".join(str(r.path) for r in new[-2:])
            raise ValueError(f"{base!r} has one stored run in environment {new[-1].env_name!r}; comparing it "
                             "with itself needs two" + (f" (its runs in two environments are compared by naming "
                                                        f"their files: {files})" if len(new) > 1 else ""))
        return twins[-2], twins[-1]
    # a pair of one environment where the two commits have one: the newest such head run
    shared = [r for r in new if same_env(old, r.env)]
    if shared:
        return same_env(old, shared[-1].env)[-1], shared[-1]
    return old[-1], new[-1]


def unplaced_pair_note(old: runs.StoredRun, new: runs.StoredRun) -> str | None:
    """In a full clone, one line (no final period) for a default pair of two commits that git
    has neither of (results copied from another clone, or rebased away): the pair is ordered
    by dates. None when git has both, or the pair is one commit's two runs. ValueError where
    git has one of them: the one it lacks was put first whatever its date, so which of the
    two is newer is unknown and the verdicts may be the reversed pair's."""
    if old.commit == new.commit:
        return None
    ranks = paths.commit_ranks([old.commit, new.commit]) or {}
    lacking = [r.commit[:8] for r in (old, new) if r.commit not in ranks]
    why = "not in this checkout's git history (results from another clone, or rebased away)"
    if len(lacking) == 2:
        return (f"commits {lacking[0]} and {lacking[1]} of the pair are {why}: the pair is ordered by dates "
                "(author dates, which a rebase keeps), not by git; name --base and --head, or fetch them")
    if lacking:
        other = next(r.commit[:8] for r in (old, new) if r.commit[:8] != lacking[0])
        raise ValueError(f"commit {lacking[0]} of the newest pair is {why}, so git cannot say whether it comes "
                         f"before or after {other} (a commit git lacks sorts first, whatever its date: the pair "
                         "may be reversed, a regression read as an improvement); name the pair: --base and "
                         "--head (make compare BASE=... HEAD=...), or fetch it")
    return None


def _of_older_commit(path: Path, commit: str) -> bool:
    """Whether result file ``path``, unreadable as a run, still names a commit git places
    before ``commit`` (then it cannot hold a run newer than ``commit``'s)."""
    try:
        named = json.loads(path.read_text()).get("commit_hash")
    except (OSError, ValueError, AttributeError):
        return False
    if not isinstance(named, str) or not named:
        return False
    places = paths.commit_places([named, commit])
    return places[named] >= 0 and places[commit] > places[named]


def _descends(base: str, head: str) -> bool:
    """Whether commit ``base`` descends from commit ``head`` in git (False when git cannot
    tell, and for two commits on separate branches)."""
    import subprocess

    try:
        done = subprocess.run(["git", "merge-base", "--is-ancestor", head, base], cwd=paths.repo_root(),
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def skip_log_root(artifacts: Path | None, results: Path | None, machine: str) -> Path:
    """The artifacts root to read ``machine``'s skip logs from: ``artifacts`` where given
    (ValueError where it is no folder); else, with ``results`` given, the ``artifacts``
    folder beside it (asv's layout: ``.asv/results`` and ``.asv/artifacts``) where it holds
    a folder of ``machine``; else the checkout's (:func:`paths.artifacts_root`)."""
    if artifacts is not None:
        if not artifacts.is_dir():
            raise ValueError(f"--artifacts {artifacts}: no such folder (the artifacts root, holding "
                             "<machine>/<commit>/skips.jsonl)")
        return artifacts
    beside = results.parent / "artifacts" if results is not None else None
    return beside if beside is not None and (beside / machine).is_dir() else paths.artifacts_root()


def blocking_unthresholded(unthresholded: list[compare.Change], default_threshold: float | None
                           ) -> tuple[list[compare.Change], list[compare.Change]]:
    """Return the changes among ``unthresholded`` (NO THRESHOLD, so their values differ) that
    make the comparison impossible, as (absolute-scale, relative-scale): every absolute-scale
    one, whatever ``default_threshold`` (a relative default cannot judge a difference in a
    number's unit, and without a threshold no size of such a change is known to be noise);
    the relative-scale ones that moved beyond :data:`noise.TOO_NOISY` while no default was given."""
    absolute = [c for c in unthresholded if c.scale == noise.ABSOLUTE]
    relative = [c for c in unthresholded if c.scale != noise.ABSOLUTE and default_threshold is None
                and compare.moved_beyond_tracking(c.old, c.new)]
    return absolute, relative


def _named(changes: list[compare.Change]) -> str:
    """``<benchmark> [<params>] <old> -> <new>`` of the first three ``changes``, ", "-joined
    (the values with enough digits to differ where they differ)."""
    return cli.first_few((f"{c.benchmark} [{c.params.replace(', ', ',')}] {' -> '.join(compare.distinct(c.old, c.new))}"
                          for c in changes), 3)


def relative_threshold(text: str) -> float:
    """``--default-threshold``: a fraction (0.05) or a percentage ("5%"), from 0 to TOO_NOISY."""
    try:
        text = text.strip()
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (a fraction like 0.05, or 5%)") from None
    if not 0 <= value <= noise.TOO_NOISY:
        raise argparse.ArgumentTypeError(
            f"{text!r} is outside 0..{noise.TOO_NOISY:g} (a relative threshold: 0.05 or 5% for 5%; "
            f"above {100 * noise.TOO_NOISY:.0f}% a number is too noisy to track)")
    return value


def _unjudged_remedy(result: compare.Comparison) -> str:
    """What to do when no number was judged: `make noise` measures thresholds that are missing
    or of another version; thresholds too noisy to judge narrow only with more runs (measuring
    the same runs again gives the same ones)."""
    noisy = len(result.of_kind(compare.NOISY))
    missing = len(result.of_kind(compare.NO_THRESHOLD)) + len(result.of_kind(compare.NEW_VERSION))
    more_runs = (f"{noisy} number(s) have thresholds too noisy to judge: more runs of one commit narrow "
                 "them (3 to 5 in all, then `make noise`; `make noise` on the same runs gives the same ones)")
    if noisy and not missing:
        return more_runs
    lacking = "run `make noise` on runs of the current benchmark versions"
    return f"{lacking}; {more_runs}" if noisy else lacking


def main(argv: list[str] | None = None) -> int:
    parser = cli.OneLineParser(prog="python scripts/compare.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="commit (or prefix), or asv result file of the old run (a path, or "
                        "the file name compare prints)")
    parser.add_argument("--head", help="commit (or prefix), or asv result file of the new run (a path, or "
                        "the file name compare prints)")
    parser.add_argument("--machine", help="asv machine name (default: <host>-<profile>)")
    parser.add_argument("--results", type=Path, help="asv results directory (default: .asv/results)")
    parser.add_argument("--noise", type=Path, help="thresholds file (default: reports/noise/<machine>.json)")
    parser.add_argument("--artifacts", type=Path,
                        help="artifacts root holding the runs' skip logs, <machine>/<commit>/skips.jsonl (default: "
                             "the artifacts folder beside --results where it has the machine, else "
                             "DLSYSBENCH_ARTIFACTS or .asv/artifacts)")
    parser.add_argument("--print-asv-config", action="store_true",
                        help="print asv.conf.json's regressions_first_commits from the declared directions")
    parser.add_argument("--write-asv-config", action="store_true",
                        help="rewrite that block of asv.conf.json in place (its comments kept)")
    parser.add_argument("--default-threshold", type=relative_threshold, default=None,
                        help="relative threshold for numbers without a measured one, 0.05 or 5%% "
                             "(default: not judged)")
    args = parser.parse_args(argv)
    try:
        declared = directions.declared_directions()
        scales = directions.declared_scales()
        bounds, missing = directions.declared_bounds(), directions.declared_missing()
        worst, sides = directions.declared_worst_missing(), directions.declared_sides()
    except Exception as err:  # noqa: BLE001 - a benchmark that does not import, or declares no direction
        print(f"compare: cannot read the benchmarks' declared directions: {' '.join(str(err).split())}",
              file=sys.stderr)
        return 2
    if args.print_asv_config:
        print(json.dumps(directions.asv_regressions_first_commits(declared), indent=8))
        return 0
    if args.write_asv_config:
        conf = paths.repo_root() / "asv.conf.json"
        try:
            atomic.write_bytes(conf, directions.with_regressions_first_commits(conf.read_text(), declared).encode())
        except (OSError, ValueError) as err:
            print(f"compare: {conf}: {err}", file=sys.stderr)
            return 2
        print(f"compare: wrote regressions_first_commits of {conf}")
        return 0
    results_dir = args.results or paths.results_dir()
    try:
        machine = runs.choose_run_machine(args.machine, results_dir, "" if args.machine else paths.machine_name(),
                                          current_profile())
        skipped: list[tuple[Path, str]] = []
        stored = runs.stored_runs(results_dir, machine, skipped)
        for path, why in skipped:
            print(f"compare: not a run, left out: {path}: {why}", file=sys.stderr)
        foreign = [p for p, why in skipped if why.startswith(runs.FOREIGN_RUN)]
        blocking = [(p, why) for p, why in skipped if p not in foreign]
        if blocking and not (args.base or args.head):
            try:
                pair = pick_runs(stored, None, None, machine)
            except ValueError:
                pair = None
            blocking = [(p, why) for p, why in blocking if pair is None or not _of_older_commit(p, pair[0].commit)]
            if blocking:
                raise ValueError(f"{len(blocking)} result file(s) of {machine} cannot be read as runs (above), and "
                                 "git does not place them before the pair, so the two newest runs are unknown: "
                                 "repair or remove them, or name --base and --head (make compare BASE=... HEAD=...)")
        info = read_benchmark_info_noting(results_dir, "compare")
        strays: list[tuple[Path, list[str]]] = []
        frames: dict[Path, object] = {}      # each run's results, read once

        def frame_of(run: runs.StoredRun):
            if run.path not in frames:
                frames[run.path] = read_result_file(run.path, machine, info)
            return frames[run.path]

        def stray_of(run: runs.StoredRun) -> list[str]:
            other = other_profiles(frame_of(run), machine)
            if other:
                print(f"compare: left out: {run.path}: {of_other_profiles(other, machine)}", file=sys.stderr)
                strays.append((run.path, other))
            return other

        try:
            # the default pair: runs of another profile left out, the newest first (a stray plain
            # asv run is often alone in asv's own environment, which would refuse the pair)
            while not (args.base or args.head) and stored and stray_of(stored[-1]):
                stored = stored[:-1]
            old, new = pick_runs(stored, args.base, args.head, machine)
            while not (args.base or args.head):
                stray = [r for r in dict.fromkeys((old, new)) if stray_of(r)]
                if not stray:
                    break
                stored = [r for r in stored if r not in stray]
                old, new = pick_runs(stored, None, None, machine)
        except ValueError as err:
            if strays:
                err = ValueError(f"{err} once the run(s) of another profile are left out (above)")
            if foreign and len(stored) < 2:
                raise ValueError(f"{err}; {len(foreign)} file(s) filed under {machine} record another machine "
                                 "(above: a folder copied under a new name?), and stored results cannot be renamed: "
                                 "compare them under the machine they record (its folder's name), or run this "
                                 "box again with DLSYSBENCH_MACHINE set to the new name") from None
            named = [n for n in (args.base, args.head) if n and not Path(n).is_file()]
            # a file is named by its commit's hash: a ref (HEAD, a branch) names it by what git resolves it to
            prefixes = {text.lower()[:8] for n in named for text in (n, paths.resolve_commit(n) or n)}
            unread = [(p, why) for p, why in skipped if any(p.name.lower().startswith(x) for x in prefixes)]
            if unread and str(err).startswith("no stored run of commit"):
                raise ValueError(f"{err}; its result file(s) cannot be read: "
                                 + "; ".join(f"{p}: {why}" for p, why in unread)) from None
            raise err from None
        for run, name in ((old, args.base), (new, args.head)):   # a damaged live file of a named commit
            unread = [p for p, why in skipped if name and not Path(name).is_file()
                      and p.parent == results_dir / machine and not why.startswith(runs.FOREIGN_RUN)
                      and p.name.lower().startswith(run.commit[:8].lower())]
            if unread:    # asv's file of that commit's newest run: judging an older one judges the wrong run
                raise ValueError(f"{name}: asv's result file of commit {run.commit[:8]} cannot be read ("
                                 f"{', '.join(map(str, unread))}), and it may hold its newest run: repair or "
                                 "remove it, or name a run's archived file")
        order_note = None if args.base or args.head else paths.date_order_note([r.commit for r in stored])
        if not (args.base or args.head or order_note):
            order_note = unplaced_pair_note(old, new)
        if order_note:    # the pair was picked by an order git could not give in full
            print(f"compare: note: {order_note}", file=sys.stderr)
        if args.noise is not None and not args.noise.is_file():
            raise ValueError(f"--noise {args.noise}: no such file; `make noise` measures the thresholds "
                             "(or leave --noise out and pass --default-threshold)")
        noise_path = args.noise or noise.default_noise_path(machine)
        measured = noise.load_noise(noise_path) if noise_path.is_file() else None
        if measured is None and args.default_threshold is None:
            raise ValueError(f"no thresholds measured for {machine} ({noise_path} is missing): run the "
                             "suite 3 to 5 times on one commit and `make noise` (two runs leave most numbers "
                             "too noisy to judge), or pass --default-threshold")
        if measured is not None and measured.machine and measured.machine != machine:
            raise ValueError(f"{noise_path} holds the thresholds of machine {measured.machine!r}, not "
                             f"{machine!r}: one machine's noise does not judge another's runs")
        if measured is not None:        # a machine name says little: "vm" is many boxes
            record = machine_info(results_dir, machine, [])
            for run, fix in ((new, "`make noise` on this box's runs, or --noise"),
                             (old, "--base a run of the box the thresholds are of")):
                other = noise.machine_mismatch(measured, noise.run_hardware(run.path, record))
                if other:
                    raise ValueError(f"{noise_path}: {other} (here: the run {run.path.name}): one machine's noise "
                                     f"does not judge another's runs; {fix}")
        logs_root = skip_log_root(args.artifacts, args.results, machine)
        base, head = frame_of(old), frame_of(new)
        for run, frame in ((old, base), (new, head)):
            other = other_profiles(frame, machine)
            if other:
                host = machine.rpartition("-")[0]
                raise ValueError(
                    f"{run.path}: {of_other_profiles(other, machine)} (asv files a "
                    "plain `asv run` under the only machine ~/.asv-machine.json holds, or its --machine), is not "
                    f"compared as {profiles.machine_profile(machine)!r} numbers: name another run of this "
                    f"machine (BASE=/HEAD=, a commit or a run's file name), and run asv with --machine "
                    f"{host}-{other[0]} for {other[0]} runs")
    except (ValueError, ResultsError, noise.NoiseError) as err:
        print(f"compare: {err}", file=sys.stderr)
        return 2
    print(f"compare: {machine}: {old.label} ({old.path.name}) -> {new.label} ({new.path.name})")
    if old.commit != new.commit and _descends(old.commit, new.commit):
        print(f"compare: note: the base {old.label} comes after the head {new.label} in git's history: "
              "a number read as a regression got better from head to base (swap --base and --head "
              "to judge the change the history made)")
    if measured is not None and not measured.machine:
        print(f"compare: note: {noise_path} names no machine: its thresholds are applied to {machine}'s "
              "runs as if measured there")
    if old.env != new.env:
        print(f"compare: note: the runs are of two environments ({old.env_name!r} -> {new.env_name!r}); "
              "thresholds measured in one do not cover a change of environment")
    if measured is not None and measured.unversioned:
        print(f"compare: note: {measured.unversioned} thresholds in {noise_path} record no benchmark version "
              "and are applied whatever the version; `make noise` again records it")
    logs = skip_log.read(machine, logs_root)
    result = compare.compare_runs(base, head, declared, measured, args.default_threshold, scales, bounds, missing,
                                  worst, sides, logs=logs)
    for line in compare.format_comparison(result):
        print(line)
    shift = compare.machine_shift(result)
    if shift:     # a hint beside the verdicts: it changes none of them, nor the exit status
        print(f"compare: note: {shift}")
    for line in compare_warnings.warnings(result, measured, noise_path, base, head, args.default_threshold):
        print(f"compare: warning: {line}", file=sys.stderr)
    note = compare_warnings.skip_log_note(result, logs, new.commit, logs_root / machine)
    if note:
        print(f"compare: note: {note}", file=sys.stderr)
    if result.regressed:
        return 1
    if not result.changes:
        print(f"compare: the base run {old.label} and the new run {new.label} have no measured number in "
              "common (either may have measured nothing): nothing was compared", file=sys.stderr)
        return 2
    if all(c.kind == compare.CARRIED for c in result.changes):
        print(f"compare: nothing was measured again: every number carried over from the base run {old.label} "
              f"(the new run {new.label} holds its values): run the benchmarks again", file=sys.stderr)
        return 2
    if not any(c.kind not in (compare.NO_THRESHOLD, compare.NEW_VERSION, compare.BOUND, compare.NOISY)
               and c.threshold is not None and c.direction in directions.JUDGED for c in result.changes):
        only_bounds = len(result.of_kind(compare.BOUND))
        thresholded = sum(1 for c in result.of_kind(compare.BOUND) if c.threshold is not None)
        if thresholded == only_bounds and only_bounds and not any(
                c.kind in (compare.NO_THRESHOLD, compare.NOISY) for c in result.changes):
            print(f"compare: nothing was judged: the {only_bounds} number(s) in common with a threshold were bounds "
                  "at either run (>=, <=), which prove neither a regression nor an improvement", file=sys.stderr)
        else:
            print("compare: no number in common has a usable threshold for its version (new benchmark versions, "
                  "thresholds of other benchmarks, or all within thresholds too noisy to judge them)"
                  + (f", and {only_bounds} were bounds that prove neither" if only_bounds else "")
                  + f": nothing was judged; {_unjudged_remedy(result)}", file=sys.stderr)
        return 2
    absolute, moved = blocking_unthresholded(result.of_kind(compare.NO_THRESHOLD), args.default_threshold)
    if absolute:
        print(f"compare: cannot compare: {len(absolute)} absolute-scale number(s) with no threshold changed "
              f"({_named(absolute)}): a relative --default-threshold cannot judge absolute-scale numbers (their "
              "change is a difference in their unit, not a fraction of their value); `make noise` measures their "
              "thresholds", file=sys.stderr)
    if moved:
        print(f"compare: cannot compare: {len(moved)} number(s) with no threshold moved beyond "
              f"{100 * noise.TOO_NOISY:.0f}% ({_named(moved)}): `make noise` again, or pass --default-threshold "
              "(make compare THRESHOLD=5%) to judge them", file=sys.stderr)
    if absolute or moved:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
