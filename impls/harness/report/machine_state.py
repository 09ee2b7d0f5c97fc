"""What the report knows about the measured machine: its fingerprint and capabilities.

An artifact's fingerprint describes the machine the results came from: with asv
results, that of an artifact of the newest results' commit where one has it (else
of the newest commit with results that has one, else of a commit without results,
its source saying so); without asv results, the newest artifact's. Without any,
and only when the report is rendered on that same machine, the fingerprint (or at
least the capabilities) is taken live.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from impls.harness import paths
from impls.harness.report.measure import same_commit


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


def _place(commit: str, results_commits: Sequence[str]) -> int | None:
    """The place of ``commit`` in ``results_commits`` (either possibly abbreviated); None if absent."""
    return next((i for i, c in enumerate(results_commits) if same_commit(str(c), commit)), None)


def newest_fingerprint(artifacts: Mapping[str, Mapping[str, Any]], results_commits: Sequence[str] = (),
                       also: Sequence[Mapping[str, Any]] = ()) -> tuple[dict | None, str]:
    """Return (fingerprint, where it came from); (None, "") when no record has one.

    Without ``results_commits`` (the commits asv has results of, oldest first) it is the
    fingerprint of the newest of ``artifacts`` and ``also`` (by ``created``) that has one.
    With them, it is that of the newest record of the newest of those commits that has one,
    else of the newest record of any commit; its ``commit`` is then the newest results'
    commit, and where the record is of another commit the source names that commit and
    whether it is older or has no asv results. ``also``: records the report does not use
    (newer ones of other commits hide them) whose fingerprint may still be taken; ``grid``
    gathers the grid of every record in ``artifacts``, by experiment.
    """
    with_fingerprint = [r for r in [*artifacts.values(), *also] if isinstance(r.get("fingerprint"), dict)]
    if not with_fingerprint:
        return None, ""

    def rank(r: Mapping[str, Any]) -> tuple:
        place = _place(str(r.get("commit") or ""), results_commits) if results_commits else None
        return (-1 if place is None else place, str(r.get("created", "")))

    record = max(with_fingerprint, key=rank)
    fingerprint = dict(record["fingerprint"])
    grids = {r.get("experiment", r.get("name")): r["grid"] for r in artifacts.values() if r.get("grid")}
    if grids:  # where each experiment's grid points ran, from each experiment's own artifact
        fingerprint["grid"] = dict(sorted(grids.items()))
    source = f"artifact {record.get('name')!r} ({record.get('created', '?')})"
    if not results_commits:
        return fingerprint, source
    newest, commit = str(results_commits[-1]), str(record.get("commit") or "")
    place = _place(commit, results_commits)
    fingerprint["commit"] = newest
    if place == len(results_commits) - 1:
        return fingerprint, source
    of = f"artifact {record.get('name')!r} of commit {commit[:8] or '?'} ({record.get('created', '?')})"
    if place is not None:
        return fingerprint, (f"{of}, older than the newest results ({newest[:8]}): no artifact of "
                             f"{newest[:8]} records a fingerprint")
    return fingerprint, (f"{of}, which has no asv results ({without_results(commit, newest, 'an interrupted or partial run')}): no artifact "
                         "of a commit with results records a fingerprint")


def without_results(commit: str, newest: str, otherwise: str) -> str:
    """What the artifacts of ``commit``, a commit without asv results, are, beside ``newest``
    (the newest results' commit; full hashes), as a phrase: those of an older commit in git's
    order (saved without asv, as a bisect step's ``--save-artifact`` does, or by an interrupted
    run), else ``otherwise`` (git places it after ``newest``, or cannot place it)."""
    ranks = paths.commit_ranks([commit, newest]) or {}
    if commit in ranks and newest in ranks and ranks[commit] < ranks[newest]:
        return (f"an older commit than {newest[:8]} in git's order, its artifacts saved without asv "
                "(python -m impls run --save-artifact, e.g. at a bisect step) or by an interrupted run")
    return otherwise


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


def describe_machine(machine: str, artifacts: Mapping[str, Mapping[str, Any]],
                     results_commits: Sequence[str] = (), also: Sequence[Mapping[str, Any]] = ()) -> MachineState:
    """Return the :class:`MachineState` of ``machine`` from its artifacts (or live, see module);
    ``results_commits`` and ``also``: as :func:`newest_fingerprint` takes them.
    A live fingerprint names the profile of ``machine``'s own name, not the profile this
    process runs under (``make report MACHINES=<host>-smoke`` under quick)."""
    fingerprint, source = newest_fingerprint(artifacts, results_commits, also)
    profile = None if fingerprint is not None else _this_machines_profile(machine)
    if profile is not None:
        fingerprint, source = _live_fingerprint()
        if fingerprint is not None and "profile" in fingerprint:
            fingerprint = {**fingerprint, "profile": profile}
    if fingerprint is None:
        return MachineState(machine, None, source or "no fingerprint recorded", {})
    return MachineState(machine, fingerprint, source, _capabilities_of(fingerprint))
