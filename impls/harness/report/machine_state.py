"""What the report knows about the measured machine: its fingerprint and capabilities.

The newest artifact's fingerprint describes the machine the results came from.
Without one, and only when the report is rendered on that same machine, the
fingerprint (or at least the capabilities) is taken live.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from impls.harness import paths


@dataclasses.dataclass(frozen=True)
class CapabilityState:
    name: str
    available: bool
    reason: str = ""
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class MachineState:
    """The fingerprint (None if unknown), where it came from, and the capabilities by name."""

    machine: str
    fingerprint: Mapping[str, Any] | None
    source: str
    capabilities: Mapping[str, CapabilityState]

    def missing_reason(self, names: tuple[str, ...] | list[str]) -> str | None:
        """Return why the first missing capability in ``names`` is missing; None if none is
        known to be missing (capabilities the report knows nothing about count as present)."""
        for name in names:
            state = self.capabilities.get(name)
            if state is not None and not state.available:
                return state.reason or f"{name} is not available"
        return None

    @property
    def profile(self) -> str | None:
        return (self.fingerprint or {}).get("profile")


def _capabilities_of(fingerprint: Mapping[str, Any]) -> dict[str, CapabilityState]:
    states = {}
    for name, entry in (fingerprint.get("capabilities") or {}).items():
        if isinstance(entry, Mapping):
            states[name] = CapabilityState(
                name=name, available=bool(entry.get("available")),
                reason=str(entry.get("reason") or ""), detail=str(entry.get("detail") or ""),
            )
    return states


def newest_fingerprint(artifacts: Mapping[str, Mapping[str, Any]]) -> tuple[dict | None, str]:
    """Return (fingerprint, where it came from) of the newest artifact that has one."""
    with_fingerprint = [r for r in artifacts.values() if isinstance(r.get("fingerprint"), dict)]
    if not with_fingerprint:
        return None, ""
    record = max(with_fingerprint, key=lambda r: str(r.get("created", "")))
    fingerprint = dict(record["fingerprint"])
    grids = {r.get("experiment", r.get("name")): r["grid"] for r in artifacts.values() if r.get("grid")}
    if grids:  # where each experiment's grid points ran, from each experiment's own artifact
        fingerprint["grid"] = dict(sorted(grids.items()))
    return fingerprint, f"artifact {record.get('name')!r} ({record.get('created', '?')})"


def _live_fingerprint() -> tuple[dict | None, str]:
    try:
        from impls.harness.fingerprint import fingerprint
    except ImportError:
        fingerprint = None
    try:
        if fingerprint is not None:
            return fingerprint(), "taken now on this machine"
        from impls.harness import capabilities

        detected = {name: cap.to_dict() for name, cap in capabilities.detect().items()}
        return {"capabilities": detected}, "capabilities detected now on this machine"
    except Exception as err:  # noqa: BLE001 - a broken probe must not stop the report
        return None, f"live detection failed: {type(err).__name__}: {err}"


def _this_machines_profile(machine: str) -> str | None:
    """The profile under whose name (``<host>-<profile>``) the suite files this machine's
    results when that name is ``machine``; None when it is no name of this machine (a bare
    host name is asv's default, which another box shares)."""
    from impls.harness.profiles import PROFILES
    from impls.harness.report.runs import machine_for_profile

    try:
        here = paths.machine_name()
    except ValueError:
        return None
    return next((profile for profile in PROFILES if machine_for_profile(here, profile) == machine), None)


def describe_machine(machine: str, artifacts: Mapping[str, Mapping[str, Any]]) -> MachineState:
    """Return the :class:`MachineState` of ``machine`` from its artifacts (or live, see module).
    A live fingerprint names the profile of ``machine``'s own name, not the profile this
    process runs under (``make report MACHINES=<host>-smoke`` under quick)."""
    fingerprint, source = newest_fingerprint(artifacts)
    profile = None if fingerprint is not None else _this_machines_profile(machine)
    if profile is not None:
        fingerprint, source = _live_fingerprint()
        if fingerprint is not None and "profile" in fingerprint:
            fingerprint = {**fingerprint, "profile": profile}
    if fingerprint is None:
        return MachineState(machine, None, source or "no fingerprint recorded", {})
    return MachineState(machine, fingerprint, source, _capabilities_of(fingerprint))
