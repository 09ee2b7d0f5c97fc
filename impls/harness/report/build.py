"""Gather one machine's results, artifacts, claims and figures into a :class:`Report`.

Longer than 400 lines: each note on what the verdicts, figures and environment rest on
(older or other commits' data, other machines' files, noise, typos in claims.toml) needs
the results, the artifacts and the claims that only the build holds together.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from impls.harness import artifacts as artifact_store
from impls.harness import paths, profiles, skip_log
from impls.harness import figures as figure_registry
from impls.harness.figures import FigureSpec
from impls.harness.profiles import name_of
from impls.harness.report import artifact_logs, asv_files, results, value_run
from impls.harness.report.claims import load_claims, unknown_references
from impls.harness.report.directions import (declared_bounds, declared_directions, declared_missing,
                                                declared_param_names, declared_scales, declared_worst_missing)
from impls.harness.report.environment_table import environment_tables, hardware
from impls.harness.report.history import history_figures
from impls.harness.report.machine_state import describe_machine, without_results
from impls.harness.report.measure import no_artifact, same_commit
from impls.harness.report.model import Report
from impls.harness.report.noise import (Noise, NoiseError, default_noise_path, load_noise, machine_mismatch,
                                         runs_hardware)
from impls.harness.report.paper_figures import CUDA_SUFFIX, render_paper_figures
from impls.harness.report.skipped import skipped_points
from impls.harness.report.verdicts import DOES_NOT_FIT, NOT_MEASURED, evaluate_claims


class NoResultsError(RuntimeError):
    """There is nothing at all to report for the machine: no asv results and no artifacts."""


# The start of the notes that say the machine's noise file is absent or damaged, and the words
# of the one saying it is another machine's (each claim's ClaimResult.no_noise says which
# verdicts went without a run-to-run interval).
NO_NOISE_NOTE = "No measured noise for "
OTHER_NOISE_NOTE = " holds the thresholds of machine "
# The words of the note saying the thresholds were measured on other hardware than the newest
# results ran on (a machine name two boxes share), and of the one saying a file cannot tell.
OTHER_HARDWARE_NOTE = "measured on other hardware than this run"
NO_HARDWARE_NOTE = " records no hardware"
# The words of the one note on files filed under the machine that record another machine.
KEPT_UNDER_THEIR_MACHINE = "files are kept under the machine that ran them"
# results.py's and artifacts.py's reasons for leaving out a file of another machine
_OTHER_MACHINE = re.compile(r"\b(a run|a record|asv's machine record) of machine '([^']+)', filed under '[^']+': "
                            r"left out$")


def other_machines(unreadable: list[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """Return recorded machine -> (result files, artifact files) of ``unreadable`` (a
    report's (path, why) list) left out because they record that machine, not the one
    they are filed under; in first-seen order."""
    found: dict[str, tuple[int, int]] = {}
    for _, why in unreadable:
        match = _OTHER_MACHINE.search(why)
        if match and match.group(1) != "asv's machine record":     # listed; it holds no result
            runs, records = found.get(match.group(2), (0, 0))
            found[match.group(2)] = (runs + 1, records) if match.group(1) == "a run" else (runs, records + 1)
    return found


def other_machine_note(machine: str, found: dict[str, tuple[int, int]], no_results: bool,
                       no_artifacts: bool) -> str | None:
    """Return the one note saying which files filed under ``machine`` record another machine
    and were left out (``found``: :func:`other_machines` of its unreadable inputs), what that
    leaves ``machine`` without (``no_results``, ``no_artifacts``: each named only where files
    of that kind were left out, so they account for it) and how to report them; None when
    there are none."""
    if not found:
        return None

    def files(runs: int, records: int) -> str:
        return " and ".join(f"{n} {kind} file(s)" for n, kind in ((runs, "result"), (records, "artifact")) if n)

    named = "; ".join(f"{files(*counts)} record machine {other!r}" for other, counts in found.items())
    runs = sum(n for n, _ in found.values())
    records = sum(n for _, n in found.values())
    lacks = [what for what, missing in (("asv results", no_results and runs), ("artifacts", no_artifacts and records))
             if missing]
    lacking = f", so it has no {' and no '.join(lacks)} of its own here" if lacks else ""
    first = next(iter(found))
    return (f"{machine}: {named}, not {machine!r}, and were left out{lacking}: {KEPT_UNDER_THEIR_MACHINE}, and "
            "stored results cannot be renamed. Report them under their own name: copy them into "
            f".asv/results/{first}/ and .asv/artifacts/{first}/ (its noise file to reports/noise/{first}.json), "
            f"then make report MACHINES=\"... {first}\"; if this checkout already holds another box's "
            f"{first!r}, run the benchmarks again on that box with DLSYSBENCH_MACHINE set to a name of its own.")


def _commits_artifacts_elsewhere(artifacts_root: Path, machine: str, commits: list[str],
                                 profile: str | None) -> list[str]:
    """The machines other than ``machine`` under ``artifacts_root`` that hold a folder of any
    of ``commits`` (full or abbreviated hashes), sorted; only ``<host>-<profile>`` ones when the
    results' ``profile`` is known."""
    root = Path(artifacts_root)
    others = [p for p in root.iterdir() if p.is_dir() and p.name != machine
              and (not profile or p.name.endswith(f"-{profile}"))] if root.is_dir() else []
    return sorted(p.name for p in others
                  if any(q.is_dir() and any(same_commit(q.name, c) for c in commits) for q in p.iterdir()))


def _known_machines(results_dir: Path, artifacts_root: Path) -> set[str]:
    """The machines that have asv results or artifacts."""
    known = set(asv_files.machines(results_dir))
    if Path(artifacts_root).is_dir():
        known |= {p.name for p in Path(artifacts_root).iterdir() if p.is_dir()}
    return known


def choose_machine(machine: str | None, results_dir: Path, artifacts_root: Path,
                   default: str) -> str:
    """Return ``machine``, else ``default`` if it has data, else the only machine that has data.

    Raises NoResultsError naming the machines found when the choice is ambiguous or empty.
    """
    if machine:
        return asv_files.check_machine_folder(machine, "--machine")
    known = _known_machines(results_dir, artifacts_root)
    if default in known or not known:
        return default
    if len(known) == 1:
        only = known.pop()
        other = profiles.other_profile_of_machine(only, profiles.current_profile())
        if other:       # profiles never mix: never file one profile's results as another's report
            raise NoResultsError(f"no results for this machine ({default!r}) in {results_dir}; the only machine "
                                 f"with results, {only!r}, holds the {other} profile's: run with "
                                 f"DLSYSBENCH_PROFILE={other} (make report PROFILE={other}) or --machine {only}")
        return only
    raise NoResultsError(f"no results for this machine ({default!r}) in {results_dir}; "
                         f"pick one with --machine: {', '.join(sorted(known))}")


def _newest_dated(commits: pd.DataFrame) -> tuple[str, dict[str, int]] | None:
    """The newest dated commit of ``commits`` (oldest first, git's order) and each dated
    commit's place in that order; None without dated commits."""
    dated = commits.dropna(subset=["date"]) if not commits.empty else commits
    if dated.empty:
        return None
    return str(dated["commit"].iloc[-1]), {str(c): i for i, c in enumerate(dated["commit"])}


def _older_than_newest(commit: str, newest: tuple[str, dict[str, int]]) -> bool:
    """Whether the results date ``commit`` before their newest commit (a commit they do not
    date, e.g. an artifact of a commit asv never ran, may well be newer: False)."""
    _, place_of = newest
    place = next((i for c, i in place_of.items() if same_commit(c, commit or "")), None)
    return place is not None and place < len(place_of) - 1


def _results_commits(commits: pd.DataFrame) -> list[str]:
    """The dated commits of ``commits`` (those with asv results), oldest first; [] without."""
    newest = _newest_dated(commits)
    return list(newest[1]) if newest is not None else []


def _fingerprinted_records(machine: str, artifacts_root: Path, results_commits: list[str],
                           records: Mapping[str, Mapping], profile: str | None = None) -> list[dict]:
    """The artifact records (of ``profile``'s, under a machine name that names none) with a
    fingerprint filed under the newest of ``results_commits`` whose folder holds any, when
    that commit is newer than every commit of ``records`` (the ones the report uses) that has
    a fingerprint; else [] (``records`` hide none of them). Unreadable and foreign files are
    skipped: :func:`artifacts.load_latest` lists them."""
    used = [i for i, c in enumerate(results_commits) for r in records.values()
            if isinstance(r.get("fingerprint"), dict) and same_commit(c, str(r.get("commit") or ""))]
    base = Path(artifacts_root) / machine
    folders = [p for p in base.iterdir() if p.is_dir()] if base.is_dir() else []
    for commit in reversed(results_commits[max(used, default=-1) + 1:]):
        found = []
        for folder in (p for p in folders if same_commit(p.name, commit)):
            for file in sorted(folder.glob("*.json")):
                record, _, _ = artifact_store.read_record(file, machine, profile)
                if record is not None and isinstance(record.get("fingerprint"), dict):
                    found.append(record)
        if found:
            return found
    return []


def other_commit_artifacts_note(records: Mapping[str, Mapping], commits: pd.DataFrame,
                                figure_specs: Mapping[str, FigureSpec], hidden: list[dict]) -> str | None:
    """Return the one note naming every artifact in ``records`` (those the report uses) whose
    commit is not the newest asv results' commit, per commit: older than the newest results,
    or with no asv results at all (an older commit's, saved without asv, or an interrupted or
    partial run: :func:`machine_state.without_results`); with the figures drawn from
    each, and whether the Environment's fingerprint (of ``records`` and ``hidden``,
    :func:`_fingerprinted_records`) is of another commit. None
    without dated asv results (an artifacts-only report) or when every artifact is of the
    newest commit."""
    newest = _newest_dated(commits)
    if newest is None:
        return None
    newest_commit, place_of = newest
    others: dict[str, list[str]] = {}
    for name, record in sorted(records.items()):
        commit = str(record.get("commit") or "")
        if not same_commit(commit, newest_commit):
            drawn = sorted([spec.name for spec in figure_specs.values() if spec.artifact == name]   # a CUDA run's too
                           + [spec.name + CUDA_SUFFIX for spec in figure_specs.values()
                              if spec.artifact + CUDA_SUFFIX == name])
            others.setdefault(commit, []).append(f"{name!r}" + (f" (figure(s) {', '.join(drawn)})" if drawn else ""))
    if not others:
        return None
    parts = []
    for commit, names in others.items():
        if any(same_commit(c, commit) for c in place_of):
            why = "older than the newest results (not run again there, or failed there)"
        elif any(same_commit(str(c), commit) for c in commits["commit"]):
            why = "whose asv results have no commit date"
        else:
            why = ("which has no asv results: "
                   + without_results(commit, newest_commit, "an interrupted or partial run (or artifacts saved without asv)"))
        parts.append(f"{', '.join(names)} from commit {commit[:8] or '?'}, {why}")
    used = ["their figures (each caption names its commit)",
            "the claims that read them (but for those whose benchmarks failed or were skipped at the newest "
            "commit: they read \"not measured\", the older value in their detail only)"]
    fingerprinted = [r for r in [*records.values(), *hidden] if isinstance(r.get("fingerprint"), dict)]
    if fingerprinted and not any(same_commit(str(r.get("commit") or ""), newest_commit) for r in fingerprinted):
        used.append("the Environment's fingerprint (its source row names the artifact)")
    return (f"Artifacts of other commits than the newest asv results ({newest_commit[:8]}) are used: "
            f"{'; '.join(parts)}. So {', '.join(used[:-1])} and {used[-1]} are not of {newest_commit[:8]}: "
            "run those experiments again there to report one commit.")


def _older_values_named(evaluated: list, commits: pd.DataFrame,
                        logs: Mapping[str, list[skip_log.Entry]] | None = None) -> tuple[list, list[str]]:
    """The claims, with the detail of a value measured at an older commit than the newest
    asv results saying so (read from an artifact: its experiment has none of the newest commit;
    from benchmarks: they were not run again there), and a note listing them per kind;
    unchanged where the results have no commit dates. A value read from an artifact whose
    experiment's benchmarks failed or were skipped at the newest commit (its skip log in
    ``logs``, :func:`artifact_logs.logged`) is not judged: the claim is "not measured: failed
    at <commit>: <reason>" (or "skipped at ..."), and the older value is named in its detail
    only (:func:`artifact_logs.not_judged`)."""
    newest = _newest_dated(commits)
    if newest is None:
        return evaluated, []
    newest_commit = newest[0]
    out, older = [], {"artifacts": [], "benchmark results": []}
    for result in evaluated:
        benchmarks = result.benchmarks or ()
        commit = result.commit or ""
        if benchmarks and result.measured is not None and _older_than_newest(commit, newest):
            from_artifact = all(b.startswith("artifact:") for b in benchmarks)
            name = getattr(result.claim.measured, "artifact", None)
            found = artifact_logs.logged(logs or {}, name, newest_commit) if from_artifact and name else None
            if found:
                out.append(artifact_logs.not_judged(result, *found))
                continue
            older["artifacts" if from_artifact else "benchmark results"].append(result.claim.id)
            why = ("that experiment has no artifact of the newest commit (not run again there, or it failed)"
                   if from_artifact else
                   f"{'that benchmark was' if len(benchmarks) == 1 else 'those benchmarks were'} not run again there")
            result = dataclasses.replace(
                result, detail=f"{result.detail}; from the run at {commit[:8]}, older than the newest results "
                               f"({newest_commit[:8]}): {why}")
        out.append(result)
    notes = [f"Claim(s) {', '.join(ids)} read {kind} of older commits than the newest results "
             f"({newest_commit[:8]}): " + ("their experiments were not run again there, or failed."
                                           if kind == "artifacts" else "their benchmarks were not run again there.")
             for kind, ids in older.items() if ids]
    return out, notes


def _older_data_named(evaluated: list, commits: pd.DataFrame, points: pd.DataFrame,
                      versions: Mapping[str, str]) -> list:
    """The claims, with the verdict "claims.toml points at data that do not fit" replaced by
    "from an older run ...; run it again" where those data are of an older commit than the
    newest results, and by "from another benchmark version ...; run it again" where the
    results' benchmark version differs from benchmarks.json's (``versions``): a reference to
    the current layout or parameters is no error in claims.toml."""
    newest = _newest_dated(commits)
    out = []
    for result in evaluated:
        if result.verdict.startswith(DOES_NOT_FIT):
            names = [b for b in result.benchmarks if not b.startswith("artifact:")]
            rows = points[points["benchmark"].isin(names)] if names and "benchmark" in points else points[:0]
            other = sorted({b for b, v in zip(rows["benchmark"], rows.get("version", []))
                            if v and versions.get(b) and versions[b] != v})
            commit = result.commit or ""
            if newest is not None and commit and _older_than_newest(commit, newest):
                result = dataclasses.replace(result, verdict=(
                    f"{NOT_MEASURED}: from an older run (at {commit[:8]}; the newest results are of "
                    f"{newest[0][:8]}) whose data do not fit claims.toml ({result.detail}); run it again"))
            elif other:
                result = dataclasses.replace(result, verdict=(
                    f"{NOT_MEASURED}: from another version of {', '.join(other)} than the benchmark code's now, whose "
                    f"data do not fit claims.toml ({result.detail}); run it again"))
        out.append(result)
    return out


def _unknown_benchmarks_named(evaluated: list, info: Mapping, claims_path: Path) -> tuple[list, list[str]]:
    """The claims, with an unmeasured verdict replaced by what is wrong where a claim names a
    benchmark that neither asv's benchmarks.json (``info``) nor this checkout's benchmark code
    declares, or names it with other parameters; and a note naming them. Nothing changes
    without benchmarks.json."""
    if not info:
        return evaluated, []
    try:               # a benchmark this checkout declares is newer than the results, not a typo
        code = {name: declared_param_names().get(name, ()) for name in declared_directions()}
    except Exception:  # noqa: BLE001 - benchmark code that does not import: benchmarks.json alone
        code = {}
    problems = unknown_references([r.claim for r in evaluated], {n: b.param_names for n, b in info.items()}, code)
    out = []
    for result in evaluated:
        found = problems.get(result.claim.id)
        if found and result.verdict.startswith(NOT_MEASURED):
            result = dataclasses.replace(
                result, verdict=f"{NOT_MEASURED}: {claims_path.name} names {'; '.join(found)}, which neither "
                                "benchmarks.json nor the benchmark code declares (a typo?)")
        out.append(result)
    notes = [f"{claims_path} names benchmarks, or parameters, that neither this machine's benchmarks.json "
             f"nor the benchmark code declares: " + "; ".join(f"{cid}: {', '.join(p)}" for cid, p in sorted(problems.items()))] \
        if problems else []
    return out, notes


def _unreadable_is_not_unmeasured(evaluated: list, unreadable: list[tuple[str, str]]) -> list:
    """The claims, with "not measured: no artifact X" replaced by "not measured: artifact X
    is unreadable" where the claim's artifact exists but no copy could be read, or "... was
    left out" where the only copies are of another machine or profile."""
    state: dict[str, str] = {}
    for path, why in unreadable:
        if Path(path).suffix == ".json":
            left_out = why.endswith(": left out")   # artifacts.load_latest's words for a foreign record
            if not left_out or Path(path).stem not in state:
                state[Path(path).stem] = "was left out" if left_out else "is unreadable"
    out = []
    for result in evaluated:
        name = getattr(result.claim.measured, "artifact", None)
        if result.measured is None and name in state and result.verdict == f"{NOT_MEASURED}: {no_artifact(name)}":
            result = dataclasses.replace(
                result, verdict=f"{NOT_MEASURED}: artifact {name!r} {state[name]} (see Unreadable inputs)")
        out.append(result)
    return out


def _newest_hardware(results_dir: Path, machine: str, commits: pd.DataFrame, machine_json: Mapping,
                     unreadable: list[tuple[str, str]]) -> dict[str, str]:
    """The hardware the newest results ran on (:func:`noise.runs_hardware`): what the result
    files of the newest dated commit record (those read, not the ones left out in
    ``unreadable``), each key they lack from ``machine_json``; {} where neither records any."""
    newest = _newest_dated(commits)
    left_out = {path for path, _ in unreadable}
    files = [p for p in asv_files.result_files(results_dir, machine)
             if newest is not None and str(p) not in left_out and same_commit(p.name[:8], newest[0])]
    return runs_hardware(files, machine_json)


def _usable_noise(machine: str, points: pd.DataFrame, no_results: bool,
                  hardware: Mapping[str, str] | None = None,
                  noise_path: Path | None = None) -> tuple[Noise | None, Noise | None, list[str]]:
    """The machine's measured thresholds (the file ``noise_path``, by default
    ``reports/noise/<machine>.json``) as ``make compare`` uses them: (those measured on
    this machine and on the scale declared now, for the history, which applies each to the
    benchmark version it was measured on; of those, the ones of the newest results'
    benchmark versions, for the claims' intervals), and the report's notes on what was left
    out and why. Thresholds measured on other hardware than ``hardware`` (the newest results'
    record, :func:`_newest_hardware`) are not used at all (:func:`noise.machine_mismatch`), as
    those of another machine name are not: a box that shares the name (a generic host name)
    has noise of its own, and another's thresholds would make its intervals too narrow or too
    wide and its verdicts wrong either way."""
    # measured spread: intervals on single points
    noise_path = Path(noise_path) if noise_path is not None else default_noise_path(machine)
    try:
        noise = load_noise(noise_path) if noise_path.is_file() else None
    except NoiseError as err:   # the report renders without it; make compare refuses it
        return None, None, [f"{NO_NOISE_NOTE}{machine}: {err}; not used, so single points have no interval and "
                            "no verdict is inconclusive for noise: mend the file or run make noise again."]
    if noise is None:
        return None, None, [] if no_results else [
            f"{NO_NOISE_NOTE}{machine} ({noise_path} is absent): single points have no "
            "interval, so no verdict is inconclusive for noise (a bound still can be); copy the machine's "
            "noise file with its results, or run make noise."]
    if noise.machine and noise.machine != machine:
        return None, None, [f"{noise_path}{OTHER_NOISE_NOTE}{noise.machine!r}, not {machine!r}: not "
                      "used (make compare refuses them too); run make noise on this machine's runs."]
    other = machine_mismatch(noise, hardware or {})
    if other:
        return None, None, [
            f"{noise_path} not used: {other} ('here': {machine}'s newest results). Other hardware has noise of "
            "its own, and these thresholds would make the intervals and verdicts wrong; so single points have no "
            "interval and no verdict is inconclusive for noise: run make noise on this box's runs, or give its "
            "thresholds file with scripts/render_report.py --noise."]
    notes = []
    if not noise.hardware and hardware:
        notes.append(f"{noise_path}{NO_HARDWARE_NOTE} (written before make noise recorded it), so whether its "
                     f"thresholds were measured on the hardware {machine}'s results ran on is not checked; "
                     "make noise again records it.")
    try:
        noise, other_scale = noise.on_scales(declared_scales())
    except Exception:  # noqa: BLE001 - benchmarks that do not import: said with the directions
        other_scale = 0
    if other_scale:
        notes.append(f"{other_scale} threshold(s) in {noise_path} were measured on another scale than their "
                     "benchmarks now declare (absolute: errors, differences, overheads): not used for "
                     "intervals or history steps, as make compare does not use them; run make noise.")
    current = ({str(b): str(v) for b, v in zip(points["benchmark"], points["version"]) if v}
               if "version" in points else {})
    newest, other_version = noise.on_versions(current)
    if other_version:
        notes.append(f"{other_version} threshold(s) in {noise_path} were measured on another version of "
                     "their benchmark than its newest results: not used for the claims' intervals, and in the "
                     "history only on the version they were measured on, as make compare uses them; run "
                     "make noise.")
    return noise, newest, notes


def _dates_in_order(commits: pd.DataFrame) -> dict[str, dt.datetime]:
    """Return commit -> the date :func:`artifacts.load_latest` ranks its records by: its commit
    date, raised to a microsecond after the previous dated commit's in ``commits``' order
    (git's, :func:`results.commits`) where it is not later, so the dates strictly increase and
    a rebased commit whose author date is older than its parent's still ranks after it."""
    dates: dict[str, dt.datetime] = {}
    latest = None
    for commit, date in zip(commits["commit"], commits["date"]):
        if pd.notna(date):
            latest = date if latest is None or date > latest else latest + pd.Timedelta(microseconds=1)
        if latest is not None:
            dates[str(commit)] = latest.to_pydatetime()
    return dates


def build_report(machine: str, results_dir: Path, artifacts_root: Path, claims_path: Path,
                 figure_specs: Mapping[str, FigureSpec] | None = None, noise_path: Path | None = None) -> Report:
    """Return the :class:`Report` of ``machine``; raise NoResultsError if it has no data at all.
    Its intervals and history steps use the thresholds in ``noise_path`` (default
    ``reports/noise/<machine>.json``; see :func:`_usable_noise` for which it leaves out).

    A result, artifact, ``benchmarks.json`` or ``machine.json`` file that cannot be read, or
    that records another machine, is left out and listed in ``Report.unreadable`` (the report
    still renders the rest, and shows that list). ``figure_specs`` defaults to every figure
    :func:`impls.harness.figures.discover` finds.
    """
    asv_files.check_machine_folder(machine, "machine")   # 'vm-quick/' or '../x' would name another folder
    unreadable: list[tuple[str, str]] = []
    info = asv_files.read_benchmark_info(results_dir, unreadable)
    frame = results.read_results(results_dir, machine, unreadable, info)
    commits = results.commits(frame)
    dates = _dates_in_order(commits)
    # the profile of the results' versions where they name one; else the newest record's, which
    # load_latest keeps alone (a version naming none is quick's, or older than the naming)
    records = artifact_store.load_latest(machine, Path(artifacts_root), unreadable, commit_dates=dates,
                                         profile=results.results_profile(frame, machine))
    profile = next((name_of(r["profile"]) for r in records.values() if r.get("profile")), None)
    if frame.empty and not records and not unreadable:
        known = _known_machines(results_dir, artifacts_root)
        hint = f"machines there: {', '.join(sorted(known))}" if known else "run the benchmarks first (make bench)"
        raise NoResultsError(
            f"nothing to report for machine {machine!r}: no asv results in "
            f"{Path(results_dir) / machine} and no artifacts in {Path(artifacts_root) / machine}; {hint}")
    machine_json = asv_files.machine_info(results_dir, machine, unreadable)   # a damaged one is listed
    claims = load_claims(claims_path)
    notes: list[str] = []
    with_results = _results_commits(commits)
    fingerprinted = _fingerprinted_records(machine, artifacts_root, with_results, records, profile)
    state = describe_machine(machine, records, with_results, fingerprinted)
    points = results.latest_points(frame)
    ran_on = _newest_hardware(results_dir, machine, commits, machine_json, unreadable)
    noise, newest_noise, noise_notes = _usable_noise(machine, points, frame.empty, ran_on, noise_path)
    notes += noise_notes
    logs = skip_log.read(machine, Path(artifacts_root))
    evaluated = artifact_logs.missing_explained(_unreadable_is_not_unmeasured(
        evaluate_claims(claims, points, records, state, newest_noise), unreadable), logs)
    evaluated, typo_notes = _unknown_benchmarks_named(evaluated, info, claims_path)
    notes += typo_notes
    evaluated = _older_data_named(evaluated, commits, points,
                                  {name: b.version for name, b in info.items() if b.version})
    evaluated, older_notes = _older_values_named(evaluated, commits, logs)
    notes += older_notes
    dated = paths.date_order_note([str(c) for c in commits["commit"]])
    unplaced = [str(c)[:8] for c, known in zip(commits["commit"], commits["placed"]) if not known]
    if dated:          # a shallow clone or no git: the commits git lacks are not rebased away
        notes.append(f"The history's order is partly by date: {dated}.")
    elif unplaced:
        notes.append(f"{len(unplaced)} commit(s) with results are not in this checkout's git history "
                     f"({', '.join(unplaced[:8])}{' and more' if len(unplaced) > 8 else ''}: rebased away, or "
                     "from another clone): the history draws them first and looks for no step at them, and "
                     "the verdicts read the newest commit git knows.")
    elif len(commits) > 1 and not paths.commit_ranks([str(c) for c in commits["commit"]]):
        notes.append(f"None of the {len(commits)} commits with results is in this checkout's git history "
                     "(results from another clone, or rebased away): the history is in the order of their "
                     "dates (author dates, which a rebase keeps), not git's.")
    if figure_specs is None:
        figure_specs, broken = figure_registry.discover()
        notes += [f"Figures of {key} are missing: it failed to import ({why})." if key.startswith("impls.")
                  else f"Figure {key} is missing: {why}." for key, why in broken.items()]
    mixed = other_commit_artifacts_note(records, commits, figure_specs, fingerprinted)
    later = value_run.later_runs_note(records, frame, {
        name: sorted(spec.name for spec in figure_specs.values() if spec.artifact == name) for name in records})
    for note in (later, mixed):   # first: they say of which run the figures and the environment are
        if note:
            notes.insert(0, note)
    foreign = other_machines(unreadable)
    elsewhere = other_machine_note(machine, foreign, frame.empty, not records)
    if elsewhere:
        notes.append(elsewhere)
    if frame.empty and not any(runs for runs, _ in foreign.values()):
        notes.append(f"No asv results for {machine}: claims that need a benchmark are not measured, "
                     "and there is no history.")
    if not records and not any(n for _, n in foreign.values()):
        holders = _commits_artifacts_elsewhere(artifacts_root, machine, [str(c) for c in commits["commit"]],
                                               results.results_profile(frame, machine))
        notes.append(f"No artifacts for {machine}: no paper figure could be drawn." + (
            f" Artifacts of its commits are filed under {', '.join(holders)}: they go to <host>-<profile> "
            f"whatever asv's --machine is, so run asv with --machine {holders[0]} (README, the asv paragraph) "
            "for its report to read them." if holders else ""))
    edited = sorted(name for name, record in records.items() if record.get("uncommitted"))
    if edited:
        notes.append(f"Artifact(s) {', '.join(edited)} were measured with uncommitted edits to the code (their "
                     "records list the files), yet are filed under the commit: their figures and values may "
                     "not be that commit's.")
    left_out = sorted({path for path, why in unreadable if not _OTHER_MACHINE.search(why)})
    if left_out:      # those of another machine are in the note above
        notes.append(f"{len(left_out)} {'other ' if foreign else ''}input file(s) were left out (see Unreadable "
                     "inputs): the verdicts and figures rest on the other runs, which may be older or fewer "
                     "than the newest.")
    try:
        directions, bounds, scales = declared_directions(), declared_bounds(), declared_scales()
        lost_words = (declared_worst_missing(), declared_missing())
    except Exception as err:  # noqa: BLE001 - history steps then go unjudged, said in a note
        directions, bounds, scales, lost_words = {}, {}, {}, (frozenset(), {})
        notes.append(f"Benchmark directions could not be read ({err}); history steps are not judged.")
    profiles = sorted({name_of(r["profile"]) for r in records.values() if r.get("profile")})
    return Report(
        machine=machine,
        generated=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        profile=", ".join(profiles) or state.profile or results.results_profile(frame, machine) or "unknown",
        commits=commits,
        environment=environment_tables(state, machine_json),
        claims=[r for r in evaluated if not r.claim.peer],
        peers=[r for r in evaluated if r.claim.peer],
        figures=render_paper_figures(figure_specs, records, state, claims_path=claims_path),
        history=history_figures(frame, directions, noise, bounds=bounds, worst_missing=lost_words[0],
                                missing=lost_words[1], logs=logs, scales=scales),
        skipped=skipped_points(points, info, state, logs),
        notes=notes,
        unreadable=unreadable,
        hardware=hardware(state, machine_json),
    )
