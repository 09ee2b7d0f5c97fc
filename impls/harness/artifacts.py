"""Artifact store: what an experiment measured beyond asv's scalars (curves, sweeps).

Artifacts live at ``.asv/artifacts/<machine>/<commit>/<name>.json``; each record
carries the environment fingerprint, the profile and whether the data were
synthetic, so the report can label every figure honestly.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from impls.harness import atomic, paths
from impls.harness.profiles import current_profile, machine_profile, name_of

SCHEMA = 1


def artifact_path(name: str, machine: str | None = None, commit: str | None = None) -> Path:
    return (paths.artifacts_root() / (machine or paths.suite_machine())
            / (commit or paths.git_commit()) / f"{name}.json")


def save_artifact(name: str, data: Any, *, experiment: str, synthetic: bool,
                  machine: str | None = None, commit: str | None = None,
                  grid: list[dict] | None = None) -> Path:
    """Store ``data`` (a dict of plain JSON-able values, what :func:`load_latest` reads back)
    as artifact ``name``; return its path. TypeError for any other ``data``.

    ``grid``: where the experiment's grid points ran (:func:`impls.harness.grid.runs` records).
    ``uncommitted`` (only when there are some): the code files edited since the commit the
    record is filed under (:func:`paths.uncommitted_code`), which the run measured too; without
    usable git, ``"uncommitted": null`` and ``"git": "absent"``: the commit is "unknown" and
    which code ran is not known (a record without either key was measured at its commit, clean).
    ``asv_env`` (only under asv): the asv environment of the run (``ASV_ENV_NAME``, the
    ``env_name`` of its result file), so the report never reads a record beside a value of
    another run of the same commit (:mod:`impls.harness.report.value_run`).
    """
    from impls.harness.fingerprint import fingerprint

    if not isinstance(data, dict):
        raise TypeError(f"artifact {name!r}: data is a {type(data).__name__}; expected a dict (an experiment "
                        "returns its artifact's data as one)")
    record = {
        "schema": SCHEMA,
        "name": name,
        "experiment": experiment,
        "synthetic": synthetic,
        "profile": current_profile(),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine or paths.suite_machine(),
        "commit": commit or paths.git_commit(),
        "fingerprint": fingerprint(),
        "data": data,
    }
    if grid:
        record["grid"] = grid
    if os.environ.get("ASV_ENV_NAME"):
        record["asv_env"] = os.environ["ASV_ENV_NAME"]
    edited = paths.uncommitted_code()
    if edited is None:    # no git: not a clean run, an unknown one
        record["uncommitted"] = None
        record["git"] = "absent"
    elif edited:    # filed under the commit, but measured with these edits: say so where it is read
        record["uncommitted"] = edited
        print(f"warning: artifact {name} is filed under commit {record['commit'][:8]} but measured code with "
              f"uncommitted edits to {len(edited)} file(s) ({', '.join(edited[:3])}{', ...' if len(edited) > 3 else ''})",
              file=sys.stderr)
    return atomic.write_json(artifact_path(name, record["machine"], record["commit"]), record)


def _foreign(record: dict, machine: str, profile: str | None = None) -> str:
    """Why ``record`` does not belong under ``machine`` ("" when it does): it records another
    machine, or a profile other than the one the machine name ends in, else than ``profile``
    (the one a report of a machine name without one reads; None: any). Profile names are
    compared as the suite reads them everywhere: stripped, in any case."""
    recorded = record.get("machine")
    if recorded and recorded != machine:
        return f"a record of machine {recorded!r}, filed under {machine!r}: left out"
    recorded = record.get("profile")
    suffix = machine_profile(machine)
    wanted = suffix or (name_of(profile) if profile else None)
    if recorded and wanted and name_of(recorded) != wanted:
        read = "" if suffix else f", whose report reads the {wanted!r} profile (asv run --machine <host>-<profile>)"
        return f"a record of the {recorded!r} profile, filed under {machine!r}{read}: left out"
    return ""


def _when(stamp: Any) -> dt.datetime | None:
    try:
        when = dt.datetime.fromisoformat(str(stamp))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def load_latest(machine: str | None = None, root: Path | None = None,
                unreadable: list[tuple[str, str]] | None = None,
                commit_dates: Mapping[str, dt.datetime] | None = None,
                profile: str | None = None) -> dict[str, dict]:
    """Return the newest record of every artifact name stored for ``machine``.

    Newest is the record of the latest commit in git's order (:func:`paths.commit_places`,
    parents before children; a commit git lacks comes before those it has), then by
    ``commit_dates`` (commit -> its date, as the asv results give it; a commit not in it counts
    from when its record was made), then the latest made: ``asv run A..B`` measures the newest
    commit first, and a bisect step saves an ancestor's records after its descendants', so
    the time a record was made alone would let an older commit's win. A record that names another machine,
    or another profile than the machine name's, is left out; under a name that ends in no
    profile, so is one of another profile than ``profile`` (the one the report's results
    were run with), or, when that is None, than the newest record's: one report draws no two
    profiles' figures (a record that names no profile, written before records did, is kept).
    A damaged artifact (not JSON,
    another schema, a ``name`` that is no string or not its file's name, a mistyped field, or
    no ``data`` object: :func:`read_record`) is never half-read: it is skipped,
    and when ``unreadable`` is a list, ``(path, why)`` is appended to it — and, when another
    commit's copy of the same artifact is used in its place, a second entry saying which one.
    """
    machine = machine or paths.suite_machine()
    base = Path(root or paths.artifacts_root()) / machine
    dates = commit_dates or {}
    latest: dict[str, dict] = {}
    found: list[tuple[tuple, str, dict]] = []     # (rank, file, record) of every record of this machine
    broken: dict[str, list[tuple[Path, str]]] = {}
    for file in sorted(base.glob("*/*.json")):
        record, why, foreign = read_record(file, machine)
        if record is None and not foreign:
            broken.setdefault(file.stem, []).append((file, why))
            continue
        if record is None:
            if unreadable is not None:
                unreadable.append((str(file), why))
            continue
        made = _when(record.get("created"))
        found.append(((dates.get(str(record.get("commit", ""))) or made or _EPOCH, made or _EPOCH,
                       str(record.get("created", ""))), str(file), record))
    places = paths.commit_places(sorted({str(r.get("commit") or "") for _, _, r in found}))
    found = [((places.get(str(r.get("commit") or ""), 0), *rank), file, r) for rank, file, r in found]
    found.sort(key=lambda item: item[:2])
    newest = next((r["profile"] for _, _, r in reversed(found) if r.get("profile")), None)
    for _, file, record in found:
        why = _foreign(record, machine, profile or newest)
        if why:
            if unreadable is not None:
                unreadable.append((file, why))
            continue
        latest[record["name"]] = record        # in rank order: the newest of each name stays
    if unreadable is not None:
        for name, files in sorted(broken.items()):
            for file, why in files:
                unreadable.append((str(file), why))
                used = latest.get(name)
                if used is not None and str(used.get("commit", "")) != file.parent.name:
                    unreadable.append((str(file), f"artifact {name!r} of commit {file.parent.name[:8]} is "
                                                  f"unreadable; the report uses the copy of commit "
                                                  f"{str(used.get('commit'))[:8]} (created {used.get('created')})"))
    return latest


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def read_record(file: Path, machine: str, profile: str | None = None) -> tuple[dict | None, str, bool]:
    """``(record, "", False)`` for the artifact record in ``file`` when it is one of
    ``machine``'s (and of ``profile``'s, under a machine name that names none: :func:`_foreign`);
    else ``(None, why, foreign)``: why it is none (unreadable, not JSON, not a record
    (:func:`_not_a_record`), or a record of another artifact than the one its file is named
    for: ``foreign`` False) or why it belongs to another machine or profile (``foreign``
    True). A record returned is typed as :func:`_not_a_record` checks and ``record["name"]``
    is ``file``'s stem."""
    try:
        record = json.loads(Path(file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:   # JSONDecodeError, UnicodeDecodeError
        return None, _why(err), False
    why = _not_a_record(record)
    if why:
        return None, why, False
    if record["name"] != Path(file).stem:    # drawn as the artifact it names, it would hide that one's
        return None, f"names artifact {record['name']!r}, filed as {Path(file).stem!r}", False
    why = _foreign(record, machine, profile)
    return (None, why, True) if why else (record, "", False)


# the fields records are filed, ranked, matched and labelled by: each a string where present
_TEXT_FIELDS = ("commit", "machine", "profile", "created", "experiment", "asv_env")


def _not_a_record(record: Any) -> str:
    """Why parsed JSON ``record`` is no artifact record ("" when it is one): not an object,
    another schema, no ``name`` string, a ``commit``, ``machine``, ``profile``, ``created`` or
    ``experiment`` that is there but no string, or no ``data`` object (what every figure and
    claim reads). A record it passes can be filed and ranked without a TypeError."""
    if not isinstance(record, dict):
        return f"a JSON {_kind(record)}, expected an object"
    if record.get("schema") != SCHEMA:
        return f"schema {record.get('schema')!r}, expected {SCHEMA}"
    if "name" not in record:
        return "no 'name' field"
    for field in ("name", *_TEXT_FIELDS):
        if field in record and not isinstance(record[field], str):
            return f"'{field}' is a JSON {_kind(record[field])}, expected a string"
    if not isinstance(record.get("data"), dict):
        return ("no 'data' field" if "data" not in record
                else f"'data' is a JSON {_kind(record['data'])}, expected an object")
    return ""


def _kind(value: Any) -> str:
    """The type of parsed JSON ``value``, by its Python name ("list", "dict", "int"), "null" for None."""
    return "null" if value is None else type(value).__name__


def _why(err: BaseException) -> str:
    if isinstance(err, UnicodeDecodeError):
        return f"not UTF-8 text (byte {err.start})"
    if isinstance(err, json.JSONDecodeError):
        return f"not valid JSON at line {err.lineno} column {err.colno}: {err.msg}"
    return " ".join(str(err).split())
