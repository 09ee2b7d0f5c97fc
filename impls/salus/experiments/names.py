"""The names a Salus profile table holds (policies, workloads, lane rules), checked before any work.

A misspelt name in ``impls/profiles.toml`` would otherwise surface only where it is first
used, after minutes of runs, without saying which table holds it; and "FIFO" would run as
FIFO while the FIFO/SRTF ratio, which reads policies by name, silently went missing.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

POLICY_KEYS = ("policies", "repeat_policy")
WORKLOAD_KEYS = ("mix", "workloads")
RULE_KEYS = ("rules", "rule")


def checked_names(sizes: Mapping[str, Any], table: str) -> dict:
    """A copy of ``sizes`` with its policy names in lower case (as ``get_policy`` reads them),
    after checking every policy, workload and lane-rule name under :data:`POLICY_KEYS`,
    :data:`WORKLOAD_KEYS` and :data:`RULE_KEYS`. Raises ValueError naming ``[table]`` of
    ``impls/profiles.toml``, the key and the known names; a policy listed twice once lower
    case ("FIFO", "fifo") is refused too."""
    from impls.salus.core.policies import POLICIES
    from impls.salus.core.workloads import WORKLOADS
    from impls.salus.memory.lanes import BASELINES, RULES

    out = dict(sizes)
    where = f"[{table}] of impls/profiles.toml"
    for key in POLICY_KEYS:
        if key not in out:
            continue
        listed = [n.lower() for n in out[key]] if isinstance(out[key], list) else [out[key].lower()]
        listed = [n for n in listed if n] if key == "repeat_policy" else listed      # "": no repeat
        unknown = [n for n in listed if n not in POLICIES]
        if unknown:
            raise ValueError(f"{where}: {key}: unknown policy {unknown[0]!r}; known: {', '.join(POLICIES)}")
        if len(set(listed)) < len(listed):
            raise ValueError(f"{where}: {key}: {out[key]!r} names one policy twice (names are not case-sensitive)")
        out[key] = listed if isinstance(out[key], list) else out[key].lower()
    for key in WORKLOAD_KEYS:
        unknown = [n for n in out.get(key, []) if n not in WORKLOADS]
        if unknown:
            raise ValueError(f"{where}: {key}: unknown workload {unknown[0]!r}; known: {', '.join(WORKLOADS)}")
    rules = RULES + BASELINES
    for key in RULE_KEYS:
        listed = out.get(key, [])
        unknown = [n for n in ([listed] if isinstance(listed, str) else listed) if n not in rules]
        if unknown:
            raise ValueError(f"{where}: {key}: unknown lane rule {unknown[0]!r}; known: {', '.join(rules)}")
    return out
