"""Which way is better for every tracked number, as the benchmarks declare it (and their
parameter names, for results copied without asv's benchmarks.json).

Each ``track_*`` method in ``benchmarks/*.py`` carries ``direction`` beside its ``unit``:

- ``"higher"``: a larger value is better (rates, hit rates, P@1, speed-ups);
- ``"lower"``: a smaller value is better (latencies, seconds, errors, memory);
- ``"nearer_zero"``: a value nearer 0 is better, judged by its size ``|value|`` (a paired
  difference or an overhead that crosses 0 under noise: below 0 is no gain); for positive
  values it is judged exactly as ``"lower"``;
- ``"flag"``: a 0/1 state (e.g. "the ratio is only a lower bound"); a flip is reported
  as a change, never as a regression or an improvement;
- ``"context"``: a number that describes the data or the setup, judged neither way.

``time_*``, ``peakmem_*`` and ``mem_*`` benchmarks are lower-is-better by asv's own
definition and need no declaration. asv itself treats every number as lower-is-better;
:func:`asv_regressions_first_commits` lists the benchmarks whose direction asv would get
wrong, for ``regressions_first_commits`` in asv.conf.json (every one but ``"lower"``).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any, Callable

from impls.harness import paths

HIGHER, LOWER, NEARER_ZERO = "higher", "lower", "nearer_zero"
FLAG, CONTEXT, UNKNOWN = "flag", "context", "unknown"
DIRECTIONS = (HIGHER, LOWER, NEARER_ZERO, FLAG, CONTEXT)
JUDGED = (HIGHER, LOWER, NEARER_ZERO)  # only these can regress or improve
_BETTER = {HIGHER: "higher is better", LOWER: "lower is better", NEARER_ZERO: "nearer 0 is better"}
_ASV_LOWER_PREFIXES = ("time_", "peakmem_", "mem_", "timeraw_")


class DirectionError(ValueError):
    """A benchmark declares no direction, or one that is not in :data:`DIRECTIONS`."""


def benchmark_modules(benchmark_dir: Path | None = None) -> list[str]:
    """Return the asv module names (``bench_x``) of the benchmark files, sorted."""
    folder = Path(benchmark_dir) if benchmark_dir else paths.repo_root() / "benchmarks"
    return sorted(p.stem for p in folder.glob("bench_*.py"))


def _declared(method) -> str | None:
    return getattr(method, "direction", None)


def _benchmark_classes(package: str):
    """Yield (module name, class) for every public benchmark class of ``package``."""
    root = paths.repo_root()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))  # the benchmarks package sits at the checkout's top
    for module_name in benchmark_modules(root / package):
        module = importlib.import_module(f"{package}.{module_name}")
        for class_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and not class_name.startswith("_"):
                yield module_name, cls  # asv skips private names: a mixin of tracks is not a benchmark


@functools.cache
def declared_param_names(package: str = "benchmarks") -> dict[str, tuple[str, ...]]:
    """Return ``{asv benchmark name: its parameter names}`` for every benchmark method of
    ``package`` whose class declares ``params`` (the names asv would write in benchmarks.json:
    ``param_names``, else ``param1``, ``param2``, ...)."""
    found: dict[str, tuple[str, ...]] = {}
    for module_name, cls in _benchmark_classes(package):
        params = getattr(cls, "params", None)
        if params is None:
            continue
        count = len(params) if params and isinstance(params[0], (list, tuple)) else 1
        names = tuple(getattr(cls, "param_names", None) or (f"param{i + 1}" for i in range(count)))
        for name in dir(cls):
            if name.startswith(("track_", "time_", "peakmem_", "mem_", "timeraw_")):
                found[f"{module_name}.{cls.__name__}.{name}"] = names
    return found


@functools.cache
def declared_directions(package: str = "benchmarks") -> dict[str, str]:
    """Return ``{asv benchmark name: direction}`` for every benchmark method of ``package``.

    Names are asv's (``bench_salus.SwitchingLatency.track_p50_ms``); a subclass inherits
    its base's declarations. Raises DirectionError listing every ``track_*`` without a
    valid ``direction``.
    """
    found: dict[str, str] = {}
    problems = []
    for module_name, cls in _benchmark_classes(package):
        for name in dir(cls):
            method = getattr(cls, name)
            if not callable(method):
                continue
            full = f"{module_name}.{cls.__name__}.{name}"
            if name.startswith(_ASV_LOWER_PREFIXES):
                found[full] = _declared(method) or LOWER
            elif name.startswith("track_"):
                direction = _declared(method)
                if direction not in DIRECTIONS:
                    problems.append(f"{full}: direction {direction!r}; declare "
                                    f"{name}.direction = one of {', '.join(DIRECTIONS)}")
                found[full] = direction
    if problems:
        raise DirectionError("benchmarks without a valid direction:\n  " + "\n  ".join(problems))
    return found


def class_of(benchmark: str) -> str:
    """The ``module.Class`` of asv benchmark name ``module.Class.method`` (whose tracks share one
    ``setup`` per point and run back to back)."""
    return benchmark.rsplit(".", 1)[0]


def _declared_tracks(package: str, attribute: str, read: Callable[[type, Any], Any] | None = None) -> dict[str, Any]:
    """Return ``{asv benchmark name: value}`` for every ``track_*`` method of ``package`` whose
    ``attribute`` is set to a true value (a subclass inherits its base's), each value as
    ``read(its class, value)`` gives it where ``read`` is given."""
    found = {}
    for module_name, cls in _benchmark_classes(package):
        for name in dir(cls):
            value = getattr(getattr(cls, name), attribute, None) if name.startswith("track_") else None
            if value:
                found[f"{module_name}.{cls.__name__}.{name}"] = read(cls, value) if read else value
    return found


@functools.cache
def declared_units(package: str = "benchmarks") -> dict[str, str]:
    """Return ``{asv benchmark name: unit}`` for every ``track_*`` method of ``package`` that
    declares one (:func:`benchmarks.common.track`'s ``unit``), as asv writes it in
    benchmarks.json."""
    return {name: str(unit) for name, unit in _declared_tracks(package, "unit").items()}


@functools.cache
def declared_scales(package: str = "benchmarks") -> dict[str, str]:
    """Return ``{asv benchmark name: "absolute"}`` for every benchmark method of ``package``
    that declares ``scale = "absolute"`` (its noise and changes are judged in its own unit,
    :mod:`noise`); every other number is on the relative scale."""
    return {name: "absolute" for name, scale in _declared_tracks(package, "scale").items() if scale == "absolute"}


@functools.cache
def declared_bounds(package: str = "benchmarks") -> dict[str, tuple[str | None, str | None]]:
    """Return ``{asv benchmark name: (lower-bound flag, upper-bound flag)}`` (asv names, or
    None) for every track declaring ``bounded_by``: where a flag is 1 the number is only
    that bound."""
    return {name: tuple(None if f is None else f"{class_of(name)}.{f}" for f in flags)
            for name, flags in _declared_tracks(package, "bounded_by").items()}


@functools.cache
def declared_missing(package: str = "benchmarks") -> dict[str, str]:
    """Return ``{asv benchmark name: what its NaN means}`` for every track declaring ``missing``
    (asv stores such a NaN as it stores a skip)."""
    return _declared_tracks(package, "missing")


@functools.cache
def declared_worst_missing(package: str = "benchmarks") -> frozenset[str]:
    """The asv benchmark names whose declared NaN (:func:`declared_missing`) is the worst
    outcome (``worst_missing``: the run failed at what the number measures)."""
    return frozenset(_declared_tracks(package, "missing_is_worst"))


@functools.cache
def declared_sides(package: str = "benchmarks") -> dict[str, str]:
    """Return ``{asv benchmark name: where its two sides are tracked}`` for every ratio of two
    runs that declares ``sides`` (a change of it may be either side's). In a CUDA twin's
    (a class with ``cuda_twin_of``: ``benchmarks.common.cuda_twin``), a class the inherited
    words name (``Name.track_...``) reads as its twin ``NameCuda`` where the module has one:
    the twin's sides are tracked by the twins."""
    return _declared_tracks(package, "sides", _sides_of)


def _sides_of(cls: type, sides: str) -> str:
    """``sides`` as class ``cls`` reads them: a CUDA twin's name its module's twins."""
    module = sys.modules.get(cls.__module__)
    if getattr(cls, "cuda_twin_of", None) is None or module is None:
        return sides
    return re.sub(r"\b([A-Z]\w*)(?=\.track_)", lambda m: f"{m[1]}Cuda" if hasattr(module, f"{m[1]}Cuda") else m[1],
                  sides)


def better(direction: str) -> str:
    """Which way is better, in words (``"nearer 0 is better"``), for a judged ``direction``;
    ``"<direction> is better"`` for any other."""
    return _BETTER.get(direction, f"{direction} is better")


def direction_of(benchmark: str, declared: dict[str, str]) -> str:
    """Return the direction of asv benchmark ``benchmark``; :data:`UNKNOWN` when undeclared.

    A name no longer in the code (an old result) falls back to asv's convention for
    ``time_*``-like names and is unknown otherwise.
    """
    if benchmark in declared:
        return declared[benchmark]
    method = benchmark.rsplit(".", 1)[-1]
    return LOWER if method.startswith(_ASV_LOWER_PREFIXES) else UNKNOWN


def asv_regressions_first_commits(declared: dict[str, str]) -> dict[str, None]:
    """Return asv.conf.json's ``regressions_first_commits``: every benchmark asv would misjudge.

    asv's regression detection (``asv publish``) counts an upward step as a regression;
    for higher-is-better, flag and context numbers that is wrong, and for nearer-0 ones it
    is wrong wherever a value is below 0 (a step from -4 to 0 is no regression), so their
    detection is switched off (``null``) for the whole benchmark, its positive points
    included, and ``make compare`` judges them instead. Each key is an
    anchored regex of the benchmark name (asv appends ``(params)`` or ``@branch``).
    """
    return {re.escape(name) + r"($|\(|@)": None
            for name, direction in sorted(declared.items()) if direction != LOWER}


_CONF_KEY = re.compile(r'^(?P<indent>[ \t]*)"regressions_first_commits"\s*:\s*\{', re.M)


def _closing_brace(text: str, start: int) -> int:
    """The index just past the ``}`` that closes the ``{`` at ``start`` (JSON strings and
    ``//`` comments skipped); ValueError when it is never closed."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError('the "regressions_first_commits" block of asv.conf.json is never closed')


def with_regressions_first_commits(conf_text: str, declared: dict[str, str]) -> str:
    """``conf_text`` (asv.conf.json, ``//`` comments and all) with its
    ``regressions_first_commits`` object replaced by :func:`asv_regressions_first_commits`
    of ``declared``, everything else as it was. Raises ValueError when the file has no such
    key at the start of a line, or its object is never closed."""
    import json

    found = _CONF_KEY.search(conf_text)
    if found is None:
        raise ValueError('asv.conf.json has no "regressions_first_commits": { ... } block to replace')
    end = _closing_brace(conf_text, found.end() - 1)
    indent = found.group("indent")
    body = json.dumps(asv_regressions_first_commits(declared), indent=4).replace("\n", "\n" + indent)
    return conf_text[:found.start()] + f'{indent}"regressions_first_commits": {body}' + conf_text[end:]
