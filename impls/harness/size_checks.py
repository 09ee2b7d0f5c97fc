"""The checks of a declared table of values: keys, types (``int``, ``float``, ``list[T]``,
unions, :class:`NamedEntries`, :class:`KnownTable`) and bounds (finite, >= 0, > 0, ``[low, high]``); each returns
the problems found, one message each, for the caller to raise in its own words."""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, Callable, Iterable, Iterator, Mapping


def _entry_problems(entry: Mapping[str, Any], known: Mapping[str, Any], required: Iterable[str],
                    check: Callable[[Mapping[str, Any]], list[str]] | None) -> list[str]:
    """The problems of one table of ``known`` keys: unknown keys (each naming the known ones),
    missing ``required`` keys, values not of their types, numbers not finite and >= 0, then
    (only when none of those) ``check(entry)``'s."""
    own = [f"{p}; expected one of {', '.join(sorted(known))}" if p.startswith("unknown key ") else p
           for p in field_problems(entry, known, required, "key")]
    bad = [(k, x) for k, v in entry.items() for x in _numbers(v) if not (math.isfinite(x) and x >= 0)]
    if bad:
        own.append(f"{bad[0][0]} {bad[0][1]!r} is not a finite number >= 0")
    if not own and check is not None:
        own = check(entry)
    return own


@dataclasses.dataclass(frozen=True)
class KnownTable:
    """The type of a key holding one table whose keys are ``fields()``'s (called at check
    time) and of their types, every number finite and >= 0, and ``check(table)`` (on a table
    whose keys and types are right) returning its further problems."""
    fields: Callable[[], Mapping[str, Any]]
    check: Callable[[Mapping[str, Any]], list[str]] | None = None
    __name__ = "table"

    def problems(self, value: Any, where: str) -> list[str]:
        """Every problem of ``value`` as this table, each message starting with ``where``."""
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not a table"]
        return [f"{where}: {p}" for p in _entry_problems(value, dict(self.fields()), (), self.check)]


@dataclasses.dataclass(frozen=True)
class NamedEntries:
    """The type of a key holding a list of named tables (a sweep's runs), checked entry by entry.

    ``fields()`` returns each entry's known keys and their types (called at check time, so
    that the module declaring them is imported only then); ``required`` keys must be in every
    entry; ``name`` (a ``str``, required) is unique in the list. Every number of an entry is
    finite and >= 0, and ``check(entry)`` (on an entry whose keys and types are right) returns
    its further problems. ``pairs``: the key of the same table, if any, whose ``[a, b]`` items
    must each name two entries of the list.
    """
    fields: Callable[[], Mapping[str, Any]]
    required: tuple[str, ...] = ()
    check: Callable[[Mapping[str, Any]], list[str]] | None = None
    pairs: str | None = None
    __name__ = "list of named tables"

    def problems(self, value: Any, where: str) -> list[str]:
        """Every problem of ``value`` as this list, each message starting with ``where[i] (name)``."""
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list of tables"]
        known = dict(self.fields())
        problems: list[str] = []
        seen: dict[str, int] = {}
        for i, entry in enumerate(value):
            if not isinstance(entry, dict):
                problems.append(f"{where}[{i}]: {entry!r} is not a table")
                continue
            name = entry.get("name")
            at = f"{where}[{i}]" + (f" ({name})" if isinstance(name, str) else "")
            own = []
            if isinstance(name, str) and name in seen:
                own.append(f"name {name!r} is {where}[{seen[name]}]'s too; expected a name of its own")
            elif isinstance(name, str):
                seen[name] = i
            own = _entry_problems(entry, known, ("name", *self.required), None if own else self.check) + own
            problems += [f"{at}: {p}" for p in own]
        return problems

    def pair_problems(self, key: str, entries: Any, pairs: Any) -> list[str]:
        """Every item of ``pairs`` (the value of key :attr:`pairs`) that is not two names of
        ``entries`` (the value of ``key``), one message each."""
        if not isinstance(entries, list) or not isinstance(pairs, list):
            return []
        names = list(dict.fromkeys(e["name"] for e in entries
                                   if isinstance(e, dict) and isinstance(e.get("name"), str)))
        problems = []
        for i, pair in enumerate(pairs):
            if not isinstance(pair, list):
                continue
            missing = [n for n in pair if n not in names]
            if len(pair) != 2 or missing:
                why = f"names {missing[0]!r}, no name in {key}" if missing else "is not a pair"
                problems.append(f"{self.pairs}[{i}]: {pair!r} {why}; expected two of {', '.join(names)}")
        return problems


def type_name(spec: Any) -> str:
    """How ``spec`` reads in a message: ``int``, ``list[str]``."""
    return getattr(spec, "__name__", None) if not typing.get_args(spec) else str(spec)


def check_type(value: Any, spec: Any, where: str) -> list[str]:
    """The ways ``value`` is not of ``spec`` (``where`` names it in each message); [] if it is."""
    if isinstance(spec, (NamedEntries, KnownTable)):
        return spec.problems(value, where)
    origin, args = typing.get_origin(spec), typing.get_args(spec)
    if origin in (types.UnionType, typing.Union):
        if any(not check_type(value, option, where) for option in args):
            return []
        return [f"{where}: {value!r} is not {spec}"]
    if origin is list or spec is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list"]
        problems: list[str] = []
        for i, item in enumerate(value):
            if args:
                problems += check_type(item, args[0], f"{where}[{i}]")
        return problems
    if spec is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif spec is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, spec)
    return [] if ok else [f"{where}: {value!r} is not {type_name(spec)}"]


def field_problems(values: Mapping[str, Any], types_: Mapping[str, Any], required: Iterable[str],
                   noun: str = "field") -> list[str]:
    """Every key of ``values`` not in ``types_``, every ``required`` key it lacks, every
    value not of its type and every pair of a :class:`NamedEntries` key's ``pairs`` that does
    not name two of its entries, as one message each."""
    problems = [f"unknown {noun} {k!r}" for k in values if k not in types_]
    problems += [f"missing {noun} {k!r}" for k in required if k not in values]
    for key, spec in types_.items():
        if key in values:
            problems += check_type(values[key], spec, key)
        if isinstance(spec, NamedEntries) and spec.pairs in values:
            problems += spec.pair_problems(key, values.get(key), values[spec.pairs])
    return problems


def _numbers(value: Any) -> Iterator[float]:
    if isinstance(value, list):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value


MAX_THREADS = 4096  # as the engines' --threads: more is no machine's, and torch or numba crash on it


def _is_thread_count(key: str) -> bool:
    return key == "threads" or key.endswith("_threads") or key == "host_workers"


def bound_problems(values: Mapping[str, Any], positive: frozenset[str], pairs: frozenset[str],
                   repeatable: frozenset[str] = frozenset()) -> list[str]:
    """The problems of ``values`` (already of their types) with the bounds of
    :func:`impls.harness.experiments.sizes_schema`: numbers finite and >= 0, ``positive`` keys > 0, ``pairs`` ordered,
    lists without a repeated item unless ``pairs`` or ``repeatable``; a thread count (``threads``,
    ``*_threads``, ``host_workers``) at most :data:`MAX_THREADS`."""
    problems = []
    for key, value in values.items():
        if _is_thread_count(key) and any(x > MAX_THREADS for x in _numbers(value) if math.isfinite(x)):
            problems.append(f"{key}: {value!r} is more than {MAX_THREADS} threads")
        if isinstance(value, list) and key not in pairs and key not in repeatable:
            twice = [item for i, item in enumerate(value) if item in value[:i]]
            if twice:
                problems.append(f"{key}: {value!r} lists {twice[0]!r} twice (each item is one point of the sweep)")
        bad = [x for x in _numbers(value) if not (math.isfinite(x) and x >= 0)]
        if bad:
            problems.append(f"{key}: {bad[0]!r} is not a finite number >= 0")
        elif key in positive and (value == [] or any(x == 0 for x in _numbers(value))):
            problems.append(f"{key}: {value!r} must be > 0" + (" and not empty" if isinstance(value, list) else ""))
        if key in pairs and not (isinstance(value, list) and len(value) == 2
                                 and all(not isinstance(x, list) for x in value) and value[0] <= value[1]):
            problems.append(f"{key}: {value!r} is not [low, high] with low <= high")
    return problems
