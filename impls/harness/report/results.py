"""asv result files -> one tidy pandas DataFrame, one row per benchmark point per run.

asv 0.6 keeps ``<results>/<machine>/<commit[:8]>-<env>.json`` (format version 2)
and one ``<results>/benchmarks.json`` describing every benchmark. In a result
file, ``results[name]`` is a row of values in the order of ``result_columns``;
its ``result`` entry lists one value per point of the cartesian product of the
benchmark's ``params`` (``itertools.product`` in declared order), and asv writes
NaN for a point that was skipped (``NotImplementedError`` in setup) and null for
one that failed. A benchmark whose every point failed has ``result`` = null.
"""
from __future__ import annotations

import ast
import itertools
import math
from pathlib import Path
from typing import Any

import pandas as pd

from impls.harness import paths, profiles
from impls.harness.report.asv_files import (DEFAULT_UNITS, RESULT_FORMAT_VERSION, BenchmarkInfo, ResultsError,
                                            commit_date_ms, format_remedy, load_json, reason, result_files,
                                            read_benchmark_info, type_from_name)

# Columns every results frame has; one more column per parameter name follows.
HISTORY = "history"  # read_results' column: the commit's place in git's history (history_order)
BASE_COLUMNS = [
    "machine", "commit", "date", "env_name", "benchmark", "type", "unit",
    "params", "param_label", "value", "status", "started_at", "version", "duration",
]

RUN = ["benchmark", "commit", "env_name"]   # the columns that name one benchmark's run(s) of a commit
STATUS_OK = "ok"
STATUS_SKIPPED = "skipped"  # asv stored NaN: the benchmark raised NotImplementedError
STATUS_FAILED = "failed"  # asv stored null: the benchmark raised or timed out


def parse_param(text: str) -> Any:
    """Return the Python value of a param as asv stores it (its repr), or the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _timestamp(ms: Any) -> pd.Timestamp:
    return pd.NaT if ms is None else pd.Timestamp(int(ms), unit="ms", tz="UTC")


def _seconds(raw: Any) -> float:
    """asv's ``duration`` of a benchmark (seconds, all its points), NaN where it records none."""
    return float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else math.nan


def _status_and_value(raw: Any) -> tuple[str, float]:
    if raw is None:
        return STATUS_FAILED, math.nan
    try:
        value = float(raw)
    except OverflowError:
        raise ValueError(f"a result value ({str(raw)[:24]}...) is too large for a float") from None
    return (STATUS_SKIPPED, value) if math.isnan(value) else (STATUS_OK, value)


def _param_names(name: str, meta: BenchmarkInfo | None, count: int) -> tuple[str, ...]:
    """The ``count`` parameter names of benchmark ``name``: benchmarks.json's, else the ones
    this checkout's benchmark code declares (a results folder copied without benchmarks.json),
    else ``param1``, ``param2``, ..."""
    if meta and len(meta.param_names) == count:
        return meta.param_names
    if count:
        from impls.harness.report.directions import declared_param_names
        try:
            declared = declared_param_names().get(name, ())
        except Exception:  # noqa: BLE001 - benchmark code that does not import: generic names
            declared = ()
        if len(declared) == count:
            return declared
    return tuple(f"param{i + 1}" for i in range(count))


def _declared_unit(name: str) -> str:
    """The unit this checkout's benchmark code declares for benchmark ``name`` (a results
    folder copied without benchmarks.json), "" where it declares none or does not import."""
    from impls.harness.report.directions import declared_units
    try:
        return declared_units().get(name, "")
    except Exception:  # noqa: BLE001 - benchmark code that does not import: no unit
        return ""


def _rows_of_file(path: Path, machine: str,
                  info: dict[str, BenchmarkInfo]) -> list[dict[str, Any]]:
    data = load_json(path)
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: expected a JSON object (an asv result file)")
    version = data.get("version")
    if version != RESULT_FORMAT_VERSION:
        raise ResultsError(f"{path}: asv result format version {version!r}; expected {RESULT_FORMAT_VERSION} "
                           f"(asv 0.6; {format_remedy(version)})")
    for key in ("commit_hash", "result_columns", "results"):
        if key not in data:
            raise ResultsError(f"{path}: missing key {key!r} of an asv result file")
    date = commit_date_ms(data, path)
    recorded = data["params"].get("machine") if isinstance(data.get("params"), dict) else None
    if recorded and recorded != machine:
        raise ResultsError(f"{path}: a run of machine {recorded!r}, filed under {machine!r}: left out")
    columns = data["result_columns"]
    if not isinstance(columns, list) or "result" not in columns:
        raise ResultsError(f"{path}: 'result_columns' of an asv result file has no 'result' column")
    common = {"machine": machine, "commit": data["commit_hash"], "date": _timestamp(date),
              "env_name": data.get("env_name", "")}
    rows = []
    for name, values in data["results"].items():
        entry = dict(zip(columns, values))
        params = entry.get("params") or []
        meta = info.get(name)
        kind = meta.type if meta else type_from_name(name)
        unit = meta.unit if meta else _declared_unit(name) or DEFAULT_UNITS.get(kind, "")
        names = _param_names(name, meta, len(params))
        combos = list(itertools.product(*params))
        results = [None] * len(combos) if entry.get("result") is None else entry["result"]
        if len(results) != len(combos):
            raise ResultsError(f"{path}: benchmark {name!r} has {len(results)} results for "
                               f"{len(combos)} parameter combinations")
        for combo, raw in zip(combos, results):
            status, value = _status_and_value(raw)
            rows.append({**common, "benchmark": name, "type": kind, "unit": unit,
                         "params": {n: parse_param(v) for n, v in zip(names, combo)},
                         "param_label": ", ".join(f"{n}={v}" for n, v in zip(names, combo)),
                         "value": value, "status": status, "started_at": _timestamp(entry.get("started_at")),
                         "version": str(entry.get("version") or ""), "duration": _seconds(entry.get("duration"))})
    return rows


def param_column(name: str) -> str:
    """Return the frame column that holds parameter ``name`` (prefixed if it would clash)."""
    return f"param_{name}" if name in BASE_COLUMNS else name


def read_results(results_dir: Path, machine: str, unreadable: list[tuple[str, str]] | None = None,
                 info: dict[str, BenchmarkInfo] | None = None) -> pd.DataFrame:
    """Return every result of ``machine``'s profile (:func:`results_profile`) as a tidy frame.

    Columns: ``BASE_COLUMNS`` (``params`` is a dict of Python values, ``value`` is a
    float and NaN where ``status`` is "skipped" or "failed", ``version`` the benchmark's
    asv version, "" when the file has none: numbers of two versions measure different
    things and are never compared), then one column per
    parameter name (see :func:`param_column`). Empty frame when there are no results.

    A file that cannot be read raises :class:`ResultsError`, unless ``unreadable`` is a
    list: then ``(path, why)`` is appended to it and the other files are read. Results of
    another profile and older runs of one commit are left out too, and listed (:func:`_selected`).
    ``info``: :func:`read_benchmark_info`'s table when the caller has read it, else read here.
    """
    if info is None:
        info = read_benchmark_info(results_dir, unreadable)
    rows, files = [], []   # files: the file of each row
    for path in result_files(results_dir, machine):
        try:
            found = _rows_of_file(path, machine, info)
        except (ResultsError, TypeError, AttributeError, ValueError) as err:
            if unreadable is None:
                raise
            unreadable.append((str(path), reason(err)))
            continue
        rows.extend(found)
        files.extend([str(path)] * len(found))
    frame = pd.DataFrame(rows, columns=BASE_COLUMNS)
    frame["value"] = frame["value"].astype("float64")
    for column in ("date", "started_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    frame[HISTORY] = history_order(frame["commit"])
    frame = _selected(frame, pd.Series(files, dtype=object), machine, unreadable)
    param_names = dict.fromkeys(n for params in frame["params"] for n in params)
    for name in param_names:
        # object dtype keeps ints as ints (a float column would turn 4 into 4.0)
        frame[param_column(name)] = pd.Series([p.get(name) for p in frame["params"]],
                                              index=frame.index, dtype=object)
    return frame


def results_profile(frame: pd.DataFrame, machine: str) -> str | None:
    """The one profile whose results ``machine``'s report reads: the one its name names, else the
    one the version of the newest run in ``frame`` (:func:`_order`) names (``+<profile>``,
    :func:`impls.harness.profiles.versioned`); None for neither (the default's, or not known)."""
    if profiles.machine_profile(machine) or frame.empty:
        return profiles.machine_profile(machine)
    newest = frame.sort_values(_order(frame), kind="stable", na_position="first")["version"].iloc[-1]
    return profiles.profile_of_version(str(newest))


def named_profiles(frame: pd.DataFrame, unnamed: bool = True) -> pd.Series:
    """Each row's profile as its benchmark version names it (``+<profile>``,
    :func:`impls.harness.profiles.versioned`); for a version naming none, with ``unnamed``, the
    default profile's at a commit whose code names the other profiles in the version (one that
    descends from :data:`profiles.VERSIONED_SINCE`: ``asv run --machine <host>-full`` without its
    profile set), else None (older code, where it may be any profile's, or git cannot tell)."""
    named = frame["version"].map(lambda v: profiles.profile_of_version(str(v)))
    if unnamed and named.isna().any():
        newer = paths.descendants(profiles.VERSIONED_SINCE, sorted(set(frame.loc[named.isna(), "commit"])))
        named = named.mask(named.isna() & frame["commit"].isin(newer or ()), profiles.DEFAULT_PROFILE)
    return named


def other_profiles(frame: pd.DataFrame, machine: str) -> list[str]:
    """The profiles, other than the one ``machine``'s name ``<host>-<profile>`` names, that the
    versions of ``frame`` (one run, :func:`read_result_file`) name (:func:`named_profiles`),
    sorted; [] where the name names none (a machine named by hand) or none differ."""
    wanted = profiles.machine_profile(machine)
    if not wanted or frame.empty:
        return []
    named = named_profiles(frame, unnamed=wanted != profiles.DEFAULT_PROFILE)
    return sorted(set(named.dropna()) - {wanted})


def of_other_profiles(other: list[str], machine: str) -> str:
    """The words for a run whose versions name the profiles ``other`` (:func:`other_profiles`),
    filed under ``machine``: "a run of the 'smoke' profile, filed under 'box-quick'"."""
    return f"a run of the {'/'.join(other)!r} profile, filed under {machine!r}"


def _selected(frame: pd.DataFrame, files: pd.Series, machine: str,
              unreadable: list[tuple[str, str]] | None) -> pd.DataFrame:
    """``frame`` but rows whose version names another profile than :func:`results_profile`'s (or
    names none, the default's, at a commit from :data:`profiles.VERSIONED_SINCE` on), each point
    of a benchmark at a commit and environment once, of its newest run by ``started_at``; each file
    (``files``: each row's) with rows left out, but copies of a newest run, is added to ``unreadable``."""
    wanted = results_profile(frame, machine) or profiles.DEFAULT_PROFILE   # naming none, yet newer than those that do
    named = named_profiles(frame, unnamed=wanted != profiles.DEFAULT_PROFILE)
    other = named.notna() & (named != wanted)
    newest = frame[~other].groupby(RUN)["started_at"].transform("max")
    older = frame["started_at"] < newest.reindex(frame.index)
    where = "" if profiles.machine_profile(machine) else f" with newer {wanted!r} results (asv run --machine <host>-<profile>)"
    for drop, why in ((other, lambda rows: f"of the {'/'.join(sorted(set(named[rows.index])))!r} profile, filed "
                                           f"under {machine!r}{where}: left out"),
                      (older, lambda rows: f"of commit {rows['commit'].iloc[0][:8]} that ran again later (a rerun, "
                                           "or an archived copy): set aside for the newest run")):
        for path, rows in frame[drop].groupby(files[drop], sort=True) if unreadable is not None else ():
            what = f"{rows['benchmark'].nunique()} benchmark(s)" if (files[~(other | older)] == path).any() else "a run"
            unreadable.append((str(path), f"{path}: {what} {why(rows)}"))
    return frame[~(other | older)].drop_duplicates([*RUN, "param_label"], keep="last").reset_index(drop=True)


def history_order(commits: pd.Series) -> pd.Series:
    """Return each commit's place in git's history (an int, parents before children;
    :func:`impls.harness.paths.commit_places`: -1 for a commit git does not know, 0 for all
    when git knows none, so the commit dates alone order them). Unlike asv's date (the
    author date), the order survives a rebase or a cherry-pick."""
    places = paths.commit_places([str(c) for c in commits.unique()])
    return commits.map(lambda c: places[str(c)]).astype("int64")


def _order(frame: pd.DataFrame, date: str = "date", started: str = "started_at") -> list[str]:
    """The columns that sort ``frame``'s rows oldest first: git's order when the frame has it
    (:func:`history_order`), then the commit date, then when the run started."""
    return ([HISTORY] if HISTORY in frame.columns else []) + [date, started]


def commits(frame: pd.DataFrame) -> pd.DataFrame:
    """Return one row per commit, oldest first: commit, date, env_names, started_at, points,
    placed.

    Commits are in git's order where the frame has it (:func:`history_order`), else (and
    for ties) by commit date, then by when their first benchmark ran. ``placed`` is False
    for a commit git does not know while it knows others: it is put first, but where it
    belongs is not known (a rebased-away commit is older; one from another clone may not be).
    """
    if frame.empty:
        return pd.DataFrame(columns=["commit", "date", "env_names", "started_at", "points", "placed"])
    extra = {HISTORY: (HISTORY, "min")} if HISTORY in frame.columns else {}
    grouped = frame.groupby("commit", sort=False).agg(
        date=("date", "min"), env_names=("env_name", lambda s: ", ".join(sorted(set(s)))),
        started_at=("started_at", "min"), points=("value", "size"), **extra).reset_index()
    ordered = grouped.sort_values([*_order(grouped), "commit"], ignore_index=True)
    ordered["placed"] = ordered[HISTORY] >= 0 if extra else True
    return ordered.drop(columns=list(extra))


def flag_meaning(rows: pd.DataFrame, flag: str | None) -> str:
    """What bound-flag benchmark ``flag`` being 1 means, in its own words: its unit in ``rows``
    (the newest row's that has one) less the leading "1 = "; "" where ``rows`` do not say."""
    if not flag or "unit" not in rows or "benchmark" not in rows:
        return ""
    units = rows.loc[rows["benchmark"] == flag, "unit"].dropna()
    return str(units.iloc[-1]).removeprefix("1 = ").strip() if len(units) else ""


def newest_per_point(frame: pd.DataFrame, by: tuple[str, ...]) -> pd.DataFrame:
    """Return ``frame`` keeping, for each ``by`` group, the row of the newest run (git's
    order, then commit date, then run start; see :func:`commits`)."""
    if frame.empty:
        return frame
    ordered = frame.sort_values(_order(frame), kind="stable", na_position="first")
    return ordered.drop_duplicates(list(by), keep="last").sort_index()


def latest_points(frame: pd.DataFrame) -> pd.DataFrame:
    """Return every point of each benchmark's newest run.

    "Newest" is the latest commit (git's order, then commit date, as :func:`commits`), then
    the latest run start, that has that benchmark, so a partial ``asv run --bench`` does not
    hide older results of the others; all points come from that one run (of a commit and
    environment: :func:`read_results` keeps one), so points from an older run with other
    parameters (another profile's grid) never mix into a trend or ratio.
    """
    if frame.empty:
        return frame
    newest = newest_per_point(frame, ("benchmark",))[RUN]
    return frame.merge(newest, on=RUN, how="inner").reset_index(drop=True)


def read_result_file(path: Path, machine: str, info: dict[str, BenchmarkInfo] | None = None) -> pd.DataFrame:
    """Return one asv result file as a frame of ``BASE_COLUMNS`` (params named from ``info``,
    :func:`read_benchmark_info`'s, when given, else from this checkout's benchmark code); a
    file that is not one raises :class:`ResultsError` naming it."""
    try:
        rows = _rows_of_file(Path(path), machine, info or {})
    except (TypeError, AttributeError, ValueError) as err:
        if isinstance(err, ResultsError):
            raise
        raise ResultsError(f"{path}: {reason(err)}") from err
    frame = pd.DataFrame(rows, columns=BASE_COLUMNS)
    frame["value"] = frame["value"].astype("float64")
    return frame
