"""The checks of a declared table of values: keys, types (``int``, ``float``, ``list[T]``,
unions) and bounds (finite, >= 0, > 0, ``[low, high]``); each returns the problems found,
one message each, for the caller to raise in its own words."""
from __future__ import annotations

import math
import types
import typing
from typing import Any, Iterable, Iterator, Mapping


def type_name(spec: Any) -> str:
    """How ``spec`` reads in a message: ``int``, ``list[str]``."""
    return getattr(spec, "__name__", None) if not typing.get_args(spec) else str(spec)


def check_type(value: Any, spec: Any, where: str) -> list[str]:
    """The ways ``value`` is not of ``spec`` (``where`` names it in each message); [] if it is."""
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
    """Every key of ``values`` not in ``types_``, every ``required`` key it lacks and every
    value not of its type, as one message each."""
    problems = [f"unknown {noun} {k!r}" for k in values if k not in types_]
    problems += [f"missing {noun} {k!r}" for k in required if k not in values]
    for key, spec in types_.items():
        if key in values:
            problems += check_type(values[key], spec, key)
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
