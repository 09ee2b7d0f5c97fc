"""Why an experiment left no artifact at a commit: what its benchmarks logged there.

A claim read from an artifact has no asv point of its own, so when the experiment failed or
was skipped the report would know only that the artifact is missing (or older). The
benchmarks that read the artifact (those whose experiment writes it for their device,
:func:`provenance.artifact_of`) log each failure and skip in the commit's skip log
(:mod:`impls.harness.skip_log`); this module finds those lines and gives a claim read from
the artifact their reason: where no artifact is left at all (:func:`missing_explained`), and
where only an older commit's is while the newest run failed or was skipped
(:func:`not_judged`, which build.py applies to a value of an older commit).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from impls.harness import skip_log
from impls.harness.report.measure import no_artifact, same_commit
from impls.harness.report.provenance import artifact_of
from impls.harness.report.verdicts import NOT_MEASURED, ClaimResult, shown_with_unit

# the outcomes that explain a missing artifact: a NaN (skip_log.NO_VALUE) means the experiment ran
EXPLAINING = (skip_log.FAILED, skip_log.SKIPPED)


def logged(logs: Mapping[str, list[skip_log.Entry]], artifact: str,
           commit: str | None = None) -> tuple[str, skip_log.Entry] | None:
    """``(commit, entry)``: the entry explaining why ``artifact``'s experiment left none, in
    the skip log of ``commit`` (full or abbreviated; None: of the commit whose log holds the
    newest such entry, by its time): a failure of a benchmark reading it before a skip, the
    newest of each; ``commit`` is the log's own (full) name. None where no log says either."""
    logged_here = {name: entries for name, entries in logs.items() if commit is None or same_commit(name, commit)}
    reads = {b: artifact_of(b) == artifact for b in {e.benchmark for entries in logged_here.values() for e in entries}}
    found = [(name, entry) for name, entries in logged_here.items()
             for entry in entries if entry.outcome in EXPLAINING and reads[entry.benchmark]]
    if not found:
        return None
    if commit is None:
        newest = max(found, key=lambda item: item[1].at)[0]
        found = [item for item in found if item[0] == newest]
    return max(found, key=lambda item: (item[1].outcome == skip_log.FAILED, item[1].at))


def words(commit: str, entry: skip_log.Entry) -> str:
    """The reason as a verdict says it: "failed at <commit[:8]>: <reason>", or "skipped at ..."."""
    return f"{entry.outcome} at {commit[:8]}: {entry.reason}"


def missing_explained(evaluated: list[ClaimResult], logs: Mapping[str, list[skip_log.Entry]]) -> list[ClaimResult]:
    """The claims, with the verdict "not measured: no artifact X" replaced by the reason the
    newest skip log that has one gives for X's experiment (:func:`logged`: "not measured: failed
    at <commit>: <reason>", or "skipped at ..."), and the benchmark that logged it added to the
    detail; every other claim unchanged."""
    out = []
    for result in evaluated:
        name = getattr(result.claim.measured, "artifact", None)
        found = logged(logs, name) if name and result.verdict == f"{NOT_MEASURED}: {no_artifact(name)}" else None
        if found:
            commit, entry = found
            result = dataclasses.replace(result, verdict=f"{NOT_MEASURED}: {words(commit, entry)}",
                                         detail=f"{result.detail}; {entry.benchmark} {entry.outcome} at {commit[:8]}")
        out.append(result)
    return out


def not_judged(result: ClaimResult, newest_commit: str, entry: skip_log.Entry) -> ClaimResult:
    """``result`` (a value read from an artifact of an older commit than ``newest_commit``) as
    not measured, for the reason ``entry`` logged for its experiment at ``newest_commit``: the
    verdict gives that reason (:func:`words`), the detail the benchmark that logged it and the
    older value with its source and commit; no value, ratio, interval or bound is left to
    judge, and its commit is ``newest_commit``."""
    value = shown_with_unit(result.measured, result.claim)
    if result.lower_bound or result.upper_bound:
        value = f"{'at least' if result.lower_bound else 'at most'} {value}"
    return dataclasses.replace(
        result, verdict=f"{NOT_MEASURED}: {words(newest_commit, entry)}", measured=None, ratio=None,
        in_range=False, interval=None, lower_bound=False, upper_bound=False, no_noise=False, real_data=(),
        setting="", coverage="", commit=newest_commit,
        detail=f"{entry.benchmark} {entry.outcome} at {newest_commit[:8]}; not judged: the older run at "
               f"{(result.commit or '?')[:8]} measured {value} ({result.detail})")
