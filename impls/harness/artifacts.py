"""Artifact store: what an experiment measured beyond asv's scalars (curves, sweeps).

Artifacts live at ``.asv/artifacts/<machine>/<commit>/<name>.json``; each record
carries the environment fingerprint, the profile and whether the data were
synthetic, so the report can label every figure honestly.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from impls.harness import atomic, paths
from impls.harness.profiles import current_profile

SCHEMA = 1


def artifact_path(name: str, machine: str | None = None, commit: str | None = None) -> Path:
    return (paths.artifacts_root() / (machine or paths.machine_name())
            / (commit or paths.git_commit()) / f"{name}.json")


def save_artifact(name: str, data: Any, *, experiment: str, synthetic: bool,
                  machine: str | None = None, commit: str | None = None,
                  grid: list[dict] | None = None) -> Path:
    """Store ``data`` (plain JSON-able values) as artifact ``name``; return its path.

    ``grid``: where the experiment's grid points ran (:func:`impls.harness.grid.runs` records).
    """
    from impls.harness.fingerprint import fingerprint

    record = {
        "schema": SCHEMA,
        "name": name,
        "experiment": experiment,
        "synthetic": synthetic,
        "profile": current_profile(),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine or paths.machine_name(),
        "commit": commit or paths.git_commit(),
        "fingerprint": fingerprint(),
        "data": data,
    }
    if grid:
        record["grid"] = grid
    return atomic.write_json(artifact_path(name, record["machine"], record["commit"]), record)


def load_latest(machine: str | None = None, root: Path | None = None,
                unreadable: list[tuple[str, str]] | None = None) -> dict[str, dict]:
    """Return the newest record of every artifact name stored for ``machine``.

    A damaged artifact is never half-read: it is skipped, and when ``unreadable`` is a
    list, ``(path, why)`` is appended to it — and, when another commit's copy of the same
    artifact is used in its place, a second entry saying which one.
    """
    base = Path(root or paths.artifacts_root()) / (machine or paths.machine_name())
    latest: dict[str, dict] = {}
    broken: dict[str, list[tuple[Path, str]]] = {}
    for file in sorted(base.glob("*/*.json")):
        try:
            record = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:   # JSONDecodeError, UnicodeDecodeError
            broken.setdefault(file.stem, []).append((file, _why(err)))
            continue
        if not isinstance(record, dict) or record.get("schema") != SCHEMA or "name" not in record:
            why = (f"schema {record.get('schema')!r}, expected {SCHEMA}" if isinstance(record, dict)
                   else f"a JSON {type(record).__name__}, expected an object")
            broken.setdefault(file.stem, []).append((file, why))
            continue
        previous = latest.get(record["name"])
        if previous is None or record.get("created", "") >= previous.get("created", ""):
            latest[record["name"]] = record
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


def _why(err: BaseException) -> str:
    if isinstance(err, UnicodeDecodeError):
        return f"not UTF-8 text (byte {err.start})"
    if isinstance(err, json.JSONDecodeError):
        return f"not valid JSON at line {err.lineno} column {err.colno}: {err.msg}"
    return " ".join(str(err).split())
