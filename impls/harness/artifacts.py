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
                  machine: str | None = None, commit: str | None = None) -> Path:
    """Store ``data`` (plain JSON-able values) as artifact ``name``; return its path."""
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
    return atomic.write_json(artifact_path(name, record["machine"], record["commit"]), record)


def load_latest(machine: str | None = None, root: Path | None = None) -> dict[str, dict]:
    """Return the newest record of every artifact name stored for ``machine``."""
    base = Path(root or paths.artifacts_root()) / (machine or paths.machine_name())
    latest: dict[str, dict] = {}
    for file in sorted(base.glob("*/*.json")):
        try:
            record = json.loads(file.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # a damaged artifact is ignored, never half-read
        if record.get("schema") != SCHEMA or "name" not in record:
            continue
        previous = latest.get(record["name"])
        if previous is None or record.get("created", "") >= previous.get("created", ""):
            latest[record["name"]] = record
    return latest
