"""Stored runs: which machine name a run is filed under, and every run kept, not only the last.

Identity: asv files results under ``<results>/<machine>/``; the suite names that machine
``<host>-<profile>`` (:func:`machine_for_profile`), so two profiles never share a history
or a report, and the artifacts of the run go under the same name (the runner exports it
as ``DLSYSBENCH_MACHINE``).

asv keeps one result file per commit and environment and overwrites it when the same
commit runs again. :func:`archive_run` copies that file, after every run, to
``<asv dir>/runs/<machine>/<commit[:8]>-<env>-<UTC time>.json`` (the latest
``started_at`` in it: asv keeps older results of benchmarks a partial rerun skipped), so two runs of one
commit can be compared and their spread measured. A run is a :class:`StoredRun`.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections.abc import Callable
from pathlib import Path

from impls.harness import atomic, paths, profiles
from impls.harness.paths import machine_for_profile  # noqa: F401 - where callers have found it
from impls.harness.report.asv_files import (NOT_RESULT_FILES, RESULT_FORMAT_VERSION, commit_date_ms, format_remedy,
                                            machines, result_files)




def runs_dir(results_dir: Path) -> Path:
    """Return the run archive beside asv's results directory (``.asv/runs``; beside the folder
    itself also when it is given as ``.``)."""
    return Path(results_dir).absolute().parent / "runs"


@dataclasses.dataclass(frozen=True)
class StoredRun:
    """One asv result file: its commit, environment, the commit's date and when its last
    benchmark started."""

    path: Path
    machine: str
    commit: str
    env_name: str
    started: str  # UTC time of its latest ``started_at`` (YYYYmmddTHHMMSS); "" when unknown
    recorded_machine: str = ""  # the machine name the file itself records ("" when none)
    date: float = 0.0  # the commit's author date as asv records it (ms since the epoch)

    @property
    def label(self) -> str:
        return f"{self.commit[:8]}@{self.started or '?'}"

    @property
    def env(self) -> str:
        """The environment as runs are paired and pooled by (:func:`environment`)."""
        return environment(self.env_name)


# asv's name for `--python=same` (what `make reproduce` runs): "existing-py_" and the
# interpreter's path with "/" as "_", so each checkout's .venv gets a name of its own
SUITE_VENV = re.compile(r"existing-py_.*_\.venv_bin_python[0-9.]*")
SUITE_VENV_KEY = "the suite's .venv"


def environment(env_name: str) -> str:
    """The environment ``env_name`` is, for pairing and pooling runs: :data:`SUITE_VENV_KEY`
    for the suite's own ``.venv`` of any checkout (each named after its path by asv, each
    made by ``make setup`` from the same pins: a second clone is not another environment),
    else ``env_name`` itself (``virtualenv-py3.11-torch2.13.0``: one asv built)."""
    return SUITE_VENV_KEY if SUITE_VENV.fullmatch(env_name) else env_name


FOREIGN_RUN = "a run of machine"   # how stored_runs's skip reason for another machine's file begins
STAMP_FORMAT = "%Y%m%dT%H%M%S"   # a run's ``started``: UTC, to the second


def _started(data: dict, path: Path) -> str:
    """The UTC time of the file's latest ``started_at`` (YYYYmmddTHHMMSS), "" when it has
    none; ValueError for a file whose results or stamps are not asv's."""
    columns = data.get("result_columns") or []
    results = data.get("results", {})
    if not isinstance(columns, list) or not isinstance(results, dict):
        raise ValueError(f"{path}: not an asv result file ('result_columns' or 'results' malformed)")
    if "started_at" not in columns:
        return ""
    at = columns.index("started_at")
    stamps = [row[at] for row in results.values()
              if isinstance(row, list) and len(row) > at and row[at] is not None]
    if not stamps:
        return ""
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1e14 for x in stamps):
        raise ValueError(f"{path}: not an asv result file (a started_at is not a time in ms)")
    return dt.datetime.fromtimestamp(max(stamps) / 1000, dt.timezone.utc).strftime(STAMP_FORMAT)


def read_run(path: Path, machine: str) -> StoredRun:
    """Return the :class:`StoredRun` of result file ``path`` (raises ValueError if it is not
    one of asv's format :data:`RESULT_FORMAT_VERSION`)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a readable asv result file ({err})") from err
    if not isinstance(data, dict) or "commit_hash" not in data:
        raise ValueError(f"{path}: not an asv result file (no commit_hash)")
    version = data.get("version")
    if version != RESULT_FORMAT_VERSION:
        raise ValueError(f"{path}: asv result format {version!r}, not {RESULT_FORMAT_VERSION} (asv 0.6's; "
                         f"{format_remedy(version)})")
    params = data.get("params")
    recorded = str(params.get("machine") or "") if isinstance(params, dict) else ""
    return StoredRun(Path(path), machine, str(data["commit_hash"]), str(data.get("env_name", "")),
                     _started(data, Path(path)), recorded, commit_date_ms(data, Path(path)))


def archive_run(results_dir: Path, machine: str, commit: str) -> list[Path]:
    """Copy the result files of ``commit`` on ``machine`` into the run archive; return the copies.

    A copy that already exists (same commit, environment and start) is not written again; a
    file that is not a readable run (:func:`read_run`) is passed over.
    """
    copies = []
    target = runs_dir(results_dir) / machine
    for path in result_files(results_dir, machine):
        try:
            run = read_run(path, machine)
        except ValueError:      # not a run (compare and the report list it): nothing to keep
            continue
        if run.commit != commit:
            continue
        copy = target / f"{path.stem}-{run.started or 'unknown'}.json"
        if not copy.exists():
            atomic.write_bytes(copy, path.read_bytes())
        copies.append(copy)
    return copies


def stored_runs(results_dir: Path, machine: str,
                skipped: list[tuple[Path, str]] | None = None) -> list[StoredRun]:
    """Return every run of ``machine``, oldest first: archived ones and asv's live files.

    Runs are in git's order of their commits where git knows them (parents before
    children, :func:`impls.harness.paths.commit_places`; a commit git no longer has, one a
    rebase replaced, counts as older than every known one), then in the order of the dates
    asv records for their commits (the author date, which a rebase keeps), and the runs of
    one commit in the order they started. Start times alone would not do: asv measures a range
    of commits (``asv run A..B``) newest commit first. A live file whose run is already
    archived (same commit, environment, start) counts once.
    A file that is not a readable asv result of this format, or that records another
    machine, is not a run: ``(path, why)`` is appended to ``skipped`` when given (a caller
    that picks "the newest" run must not do so past a damaged newer one).
    """
    found: dict[tuple[str, str, str], StoredRun] = {}
    archived = runs_dir(results_dir) / machine
    candidates = sorted(archived.glob("*.json")) if archived.is_dir() else []
    for path in [*candidates, *result_files(results_dir, machine)]:
        if path.name in NOT_RESULT_FILES:
            continue
        try:
            run = read_run(path, machine)
        except ValueError as err:
            if skipped is not None:
                skipped.append((path, str(err).removeprefix(f"{path}: ")))
            continue
        if run.recorded_machine and run.recorded_machine != machine:
            if skipped is not None:
                skipped.append((path, f"{FOREIGN_RUN} {run.recorded_machine!r}, filed under {machine!r}"))
            continue
        found.setdefault((run.commit, run.env_name, run.started), run)
    places = paths.commit_places([r.commit for r in found.values()])
    return sorted(found.values(), key=lambda r: (places[r.commit], r.date, r.started, r.commit))


def runs_of_commit(runs: list[StoredRun], commit: str) -> list[StoredRun]:
    """Return the runs whose commit starts with ``commit`` (a full hash or a prefix)."""
    return [r for r in runs if r.commit.startswith(commit)]


def _listing(commits: list[str], most: int = 8) -> str:
    shown = [c[:8] for c in commits[-most:]]
    return ", ".join(shown) + (f" (and {len(commits) - most} older)" if len(commits) > most else "")


def runs_named(runs: list[StoredRun], name: str, machine: str,
               resolve: Callable[[str], str | None] | None = None) -> list[StoredRun]:
    """Return the runs of the one commit ``name`` means, oldest first.

    ``name`` is a hash prefix of a stored run's commit, else a revision ``resolve`` turns into
    a hash (a branch, a tag, ``HEAD~1``). Raises ValueError when a prefix matches runs of two
    or more commits (naming them), or when no stored run is of that commit (listing the
    commits that have runs).
    """
    found = runs_of_commit(runs, name.lower()) if name else []
    commits = list(dict.fromkeys(r.commit for r in found))
    if len(commits) > 1:
        raise ValueError(f"{name!r} matches stored runs of {len(commits)} commits of {machine}: "
                         f"{', '.join(c[:12] for c in commits)}; give more of the hash")
    if found:
        return found
    full = resolve(name) if resolve else None
    if full:
        found = runs_of_commit(runs, full)
        if found:
            return found
    stored = list(dict.fromkeys(r.commit for r in runs))
    resolved = f" (= {full[:12]})" if full and full != name else ""
    if resolve and not full and not re.fullmatch(r"[0-9a-f]{1,40}", name.lower()):   # a ref, not a hash
        resolved = (f" (git does not resolve {name!r} in this checkout: a typo, or a commit this clone lacks: "
                    "`git fetch`, or `git fetch --unshallow` in a shallow clone)")
    raise ValueError(f"no stored run of commit {name!r}{resolved} for {machine}; commits with runs, "
                     f"newest last: {_listing(stored) or 'none'}")


def choose_run_machine(machine: str | None, results_dir: Path, host: str, profile: str) -> str:
    """Return ``machine``, else ``<host>-<profile>`` if it has runs, else the only machine with
    runs unless its name ends in another profile (``-smoke``, ``-quick``, ``-full``: profiles
    never mix; name it to take it).

    Raises ValueError naming the machines found when ``machine`` has no runs or, without
    ``machine``, when that leaves no single choice.
    """
    candidates = set(machines(results_dir))
    archived = runs_dir(results_dir)
    if archived.is_dir():
        candidates |= {p.name for p in archived.iterdir() if p.is_dir()}
    if machine:
        if machine not in candidates:
            raise ValueError(f"no stored runs of machine {machine!r} in {results_dir}; machines with runs: "
                             f"{', '.join(sorted(candidates)) or 'none'}")
        return machine
    preferred = machine_for_profile(host, profile)
    if preferred in candidates:
        return preferred
    if len(candidates) == 1:
        only = candidates.pop()
        other = profiles.other_profile_of_machine(only, profile)
        if other:       # profiles never mix: never judge one profile's runs under another's name
            raise ValueError(f"no runs for {preferred!r} in {results_dir}; the only machine with runs, {only!r}, "
                             f"holds the {other} profile's: run with DLSYSBENCH_PROFILE={other} (make ... "
                             f"PROFILE={other}) or name it with --machine {only}")
        return only
    same = sorted(c for c in candidates if c.endswith(f"-{profile}"))
    hint = (f" (several machines of the {profile} profile: a host name that changes every run, as in a "
            "container or a CI runner, files each run under its own; set DLSYSBENCH_MACHINE=<one name> "
            "where the suite runs so that its runs share one)") if len(same) > 1 else ""
    raise ValueError(f"no runs for {preferred!r} in {results_dir}; pick a machine with --machine: "
                     f"{', '.join(sorted(candidates)) or 'none has any'}{hint}")
