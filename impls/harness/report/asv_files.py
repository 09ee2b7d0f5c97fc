"""asv's files around the results: ``benchmarks.json`` (what each benchmark is), each
machine's ``machine.json`` and result files, and what every reader of them shares: the
error that names a file, the format version, the commit date, and a file that cannot be
read listed rather than raised where the caller keeps such a list.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULT_FORMAT_VERSION = 2
NOT_RESULT_FILES = frozenset({"machine.json", "benchmarks.json"})


class ResultsError(ValueError):
    """An asv results file is not in the format this module reads."""


@dataclasses.dataclass(frozen=True)
class BenchmarkInfo:
    """What ``benchmarks.json`` says about one benchmark."""

    name: str
    type: str  # time / track / peakmem / memory
    unit: str
    param_names: tuple[str, ...]
    code: str = ""
    version: str = ""   # asv's digest of the benchmark's code ("" when not recorded)


def type_from_name(name: str) -> str:
    """Return asv's benchmark type (time, track, peakmem, memory; "unknown") from the
    method name's prefix, as asv does."""
    method = name.rsplit(".", 1)[-1]
    for prefix, kind in (("time_", "time"), ("track_", "track"), ("peakmem_", "peakmem"),
                         ("mem_", "memory")):
        if method.startswith(prefix):
            return kind
    return "unknown"


DEFAULT_UNITS = {"time": "seconds", "peakmem": "bytes", "memory": "bytes"}


def read_benchmark_info(results_dir: Path,
                        unreadable: list[tuple[str, str]] | None = None) -> dict[str, BenchmarkInfo]:
    """Return ``{benchmark name: BenchmarkInfo}`` from ``benchmarks.json`` ({} if absent).

    One that cannot be read raises :class:`ResultsError`, unless ``unreadable`` is a list
    (:func:`or_listed`): the parameter names then come from this checkout's benchmark code,
    as for a results folder copied without it.
    """
    return or_listed(Path(results_dir) / "benchmarks.json", _benchmark_table, unreadable)


def read_benchmark_info_noting(results_dir: Path, prog: str) -> dict[str, BenchmarkInfo]:
    """:func:`read_benchmark_info` for a command: a damaged ``benchmarks.json`` is not
    fatal, and is noted on stderr as ``<prog>: note: ...`` (the parameter names then come
    from this checkout's benchmark code)."""
    damaged: list[tuple[str, str]] = []
    info = read_benchmark_info(results_dir, damaged)
    for _, why in damaged:   # as for a results folder copied without it
        print(f"{prog}: note: {why}; parameter names are read from this checkout's benchmark code",
              file=sys.stderr)
    return info


def _benchmark_table(path: Path) -> dict[str, BenchmarkInfo]:
    data = load_json(path)
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: expected asv's table of benchmarks (a JSON object), got a "
                           f"{type(data).__name__}")
    info = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            continue  # the top-level "version" key
        kind = entry.get("type") or type_from_name(name)
        names = entry.get("param_names") or ()
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise ResultsError(f"{path}: {name}: param_names must be a list of names, got {names!r}")
        fields = {"type": kind, "unit": entry.get("unit") or DEFAULT_UNITS.get(kind, ""),
                  "code": entry.get("code") or ""}
        wrong = [key for key, value in fields.items() if not isinstance(value, str)]
        if wrong:
            raise ResultsError(f"{path}: {name}: {wrong[0]} must be text, got {fields[wrong[0]]!r}")
        version = str(entry["version"]) if entry.get("version") else ""
        info[name] = BenchmarkInfo(name=name, param_names=tuple(names), version=version, **fields)
    return info


def or_listed(path: Path, read: Callable[[Path], dict], unreadable: list[tuple[str, str]] | None) -> dict:
    """Return ``read(path)``, {} when there is no file; a :class:`ResultsError` raises,
    unless ``unreadable`` is a list: then ``(path, why)`` is appended to it and {} returned."""
    if not path.is_file():
        return {}
    try:
        return read(path)
    except ResultsError as err:
        if unreadable is None:
            raise
        unreadable.append((str(path), reason(err)))
        return {}


def commit_date_ms(data: dict, path: Path) -> float:
    """Return the commit date of asv result ``data`` (ms since the epoch); raises
    ResultsError naming ``path`` when it has none (asv writes one in every result file)."""
    date = data.get("date")
    if not isinstance(date, (int, float)) or isinstance(date, bool) or not 0 <= date < 1e14:
        raise ResultsError(f"{path}: no commit date (its 'date' is {date!r}; asv writes the commit's date, "
                           "in ms since 1970, in every result file)")
    return float(date)


def check_machine_folder(value: str, where: str) -> str:
    """Return ``value`` if it names one folder inside another (a machine asv filed results
    under: asv takes any ``--machine``, spaces and accents included); raise ValueError
    naming ``where`` for "", ".", "..", a separator or a control character."""
    if value in ("", ".", "..") or "/" in value or "\\" in value or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError(f"{where}={value!r}: expected the name of one folder (no '/', not '.' or '..'): "
                         "the machine's results and artifacts folder")
    return value


def machines(results_dir: Path) -> list[str]:
    """Return the machine names that have a results folder under ``results_dir``."""
    base = Path(results_dir)
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir()
                  if p.is_dir() and ((p / "machine.json").is_file() or _result_files_in(p)))


def _result_files_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.json") if p.name not in NOT_RESULT_FILES)


def result_files(results_dir: Path, machine: str) -> list[Path]:
    """Return the result files of ``machine`` (machine.json and benchmarks.json excluded)."""
    folder = Path(results_dir) / machine
    return _result_files_in(folder) if folder.is_dir() else []


def machine_info(results_dir: Path, machine: str,
                 unreadable: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Return asv's ``machine.json`` for ``machine`` ({} if absent); one that cannot be read,
    holds no JSON object or names another machine (a folder copied under a new name: its
    hardware is that machine's) raises :class:`ResultsError`, unless ``unreadable`` is a list
    (:func:`or_listed`)."""
    return or_listed(Path(results_dir) / machine / "machine.json",
                     lambda path: _machine_record(path, machine), unreadable)


def _machine_record(path: Path, machine: str) -> dict[str, Any]:
    data = load_json(path)
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: expected asv's machine record (a JSON object), got a {type(data).__name__}")
    named = data.get("machine")
    if named is not None and named != machine:
        raise ResultsError(f"{path}: asv's machine record of machine {named!r}, filed under {machine!r}: left out")
    return data


def load_json(path: Path) -> Any:
    """Return the JSON value in ``path``; a file that is not UTF-8 JSON, or cannot be read,
    raises :class:`ResultsError` naming it (and the line, for bad JSON)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ResultsError(f"{path}:{err.lineno}: not valid JSON: {err.msg}") from err
    except UnicodeDecodeError as err:
        raise ResultsError(f"{path}: not UTF-8 text (byte {err.start})") from err
    except OSError as err:
        raise ResultsError(f"{path}: cannot be read ({err.strerror or err})") from err


def format_remedy(version: Any) -> str:
    """What to do with an asv result file of format ``version`` (not :data:`RESULT_FORMAT_VERSION`)."""
    older = isinstance(version, int) and not isinstance(version, bool) and version < RESULT_FORMAT_VERSION
    return ("run `asv update` to convert older results" if older
            else "written by another asv: run the suite's pinned asv, `make bench`")


def reason(err: BaseException) -> str:
    """Return why a file was left out, on one line, from the error reading it raised."""
    text = " ".join(str(err).split())
    return text if isinstance(err, ResultsError) else f"not an asv result file ({type(err).__name__}: {text})"
