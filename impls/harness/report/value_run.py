"""Which run a stored asv value came from, and whether an artifact record is that run's.

Artifacts are filed by machine and commit alone, so a later run of the same commit (another
asv environment, ``asv run --python=same`` that saves no result, another ``--machine``, a
``python -m impls run --save-artifact``) overwrites the one the stored value's run wrote.
A benchmark's setup cache writes its experiment's artifact before any of its benchmarks
start (asv records when each started and how long it took), so a record created after the
value's benchmark ended, or one that names another asv environment than the value's, is
another run's: its interval, setting or text would be read beside a value it did not measure.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class ValueRun:
    """The run a measured value came from: what an artifact read with it must match."""

    commit: str                        # the value's commit (full or abbreviated hash)
    env_name: str = ""                 # asv's environment of the value's run ("" unknown)
    ended: dt.datetime | None = None   # UTC, when the value's benchmark finished (None unknown)
    benchmark: str = ""                # the benchmark named in the notes ("" for none)


def run_of(rows) -> ValueRun | None:
    """The :class:`ValueRun` of the benchmark points in ``rows`` (a results frame's rows:
    ``commit``, ``env_name``, ``started_at``, ``duration``, ``benchmark``): their first row's
    commit; their environment where they share one; and the earliest end (``started_at`` +
    ``duration`` seconds, NaN read as 0) of any of them, since an artifact read with all of them
    must be older than each. None for no rows."""
    if rows is None or len(rows) == 0:
        return None
    count = len(rows)
    envs = {e for e in _column(rows, "env_name", count) if isinstance(e, str) and e}
    ends = _ends(rows)
    return ValueRun(commit=str(rows["commit"].iloc[0]), env_name=envs.pop() if len(envs) == 1 else "",
                    ended=min(ends) if ends else None, benchmark=str(rows["benchmark"].iloc[0]))


def _ends(rows) -> list[dt.datetime]:
    """When each of ``rows``' benchmarks ended (``started_at`` + ``duration`` s, NaN read as 0),
    for the rows that record a start."""
    ends = []
    for started, took in zip(_column(rows, "started_at", len(rows)), _column(rows, "duration", len(rows))):
        if not isinstance(started, dt.datetime) or started != started:      # None, NaT
            continue
        seconds = float(took) if isinstance(took, (int, float)) and math.isfinite(took) else 0.0
        ends.append(started + dt.timedelta(seconds=seconds))
    return ends


def _column(rows, name: str, count: int) -> list:
    """Column ``name`` of ``rows`` as a list, or ``count`` Nones where the frame has none."""
    return list(rows[name]) if name in rows else [None] * count


def _created(record: Mapping[str, Any]) -> dt.datetime | None:
    try:
        when = dt.datetime.fromisoformat(str(record.get("created")))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def other_run(record: Mapping[str, Any], run: ValueRun) -> str:
    """Why artifact ``record`` (of ``run``'s commit) was written by another run than the value
    of ``run``, naming both ("" where nothing says so): it names another asv environment
    (``asv_env``) than the value's, or it was created after the value's benchmark ended. A
    record or value that records neither (older records, a value without asv's times) is
    taken as the run's own."""
    name = record.get("name", "?")
    of = f" ({run.benchmark})" if run.benchmark else ""
    env = record.get("asv_env")
    if env and run.env_name and env != run.env_name:
        return (f"artifact {name} was written in asv environment {env}, the value{of} in {run.env_name}: "
                "another run of the commit")
    created = _created(record)
    if created is not None and run.ended is not None and created > run.ended:
        return (f"artifact {name} was written at {created:%Y-%m-%d %H:%M:%S} UTC, after the value{of} at "
                f"{run.commit[:8]} was measured (by {run.ended:%Y-%m-%d %H:%M:%S} UTC): another run of the commit "
                "(one asv saved no result of, another --machine or environment, or python -m impls run)")
    return ""


def later_runs_note(records: Mapping[str, Mapping[str, Any]], points, drawn_from: Mapping[str, list[str]]
                    ) -> str | None:
    """The one note naming each artifact of ``records`` (those the report uses) written by
    another run of its commit than every stored value of that commit in ``points`` (a results
    frame): it names an asv environment none of them was measured in, or it was created after
    the last of them ended. ``drawn_from``: artifact name -> the figures drawn from it. None
    when there is none such; an artifact of a commit without values is left to the note on
    other commits' artifacts."""
    from impls.harness.report.measure import same_commit     # measure imports this module

    later = []
    for name, record in sorted(records.items()):
        commit = str(record.get("commit") or "")
        if not commit or points is None or len(points) == 0:
            continue
        rows = points[[same_commit(str(c), commit) for c in points["commit"]]]
        if rows.empty:
            continue
        envs = {e for e in _column(rows, "env_name", len(rows)) if isinstance(e, str) and e}
        ends, env, created = _ends(rows), record.get("asv_env"), _created(record)
        if (env and envs and env not in envs) or (created is not None and ends and created > max(ends)):
            figures = drawn_from.get(name) or []
            later.append(f"{name!r}" + (f" (figure(s) {', '.join(figures)})" if figures else ""))
    if not later:
        return None
    return (f"Artifact(s) {', '.join(later)} were written by another run of their commit than its stored "
            "values (a later asv run that saved no result, another --machine or environment, or python -m "
            "impls run --save-artifact): their figures show that run, not the one the tables give, and the "
            "claims that read them are judged without them (on their values alone, or not measured where "
            "they hold only for a setting the artifact would show).")
