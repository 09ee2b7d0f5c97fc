"""Helpers shared by the asv benchmark classes (kept tiny: the work lives in impls/)."""
from __future__ import annotations

import functools
import inspect
import json
import math
import types
from pathlib import Path
from typing import Callable

from impls.harness import profiles

# asv measures an older commit with this checkout's benchmarks/ and that commit's impls, which
# may have no skip log: the classes then log nothing, and the commit is measured as before
try:
    from impls.harness import skip_log
except ImportError:
    skip_log = None
# impls.harness.experiments.FAILED_MARKER spelled out: an older commit's impls may not define it
FAILED_MARKER = "experiment_failed"

VERSIONS_FILE = Path(__file__).resolve().parent / "versions.json"


def raise_if_skipped(cached: dict) -> None:
    """In ``setup``: turn a ``setup_cache`` skip marker into asv's skip (NotImplementedError)."""
    if isinstance(cached, dict) and "skipped" in cached:
        raise NotImplementedError(cached["skipped"])


class ExperimentFailed(RuntimeError):
    """The experiment a class's ``setup_cache`` ran raised (``run_and_store``'s failure
    marker): ``reason`` is its one line; the message adds the traceback, which asv shows with
    each failed benchmark."""

    def __init__(self, reason: str, trace: str = ""):
        super().__init__(f"{reason}\n\n{trace}".rstrip() if trace else reason)
        self.reason = reason


def raise_if_failed(cached: object) -> None:
    """Raise :class:`ExperimentFailed` when ``cached`` (what a ``setup_cache`` returned) is
    ``run_and_store``'s marker of an experiment that raised."""
    if isinstance(cached, dict) and FAILED_MARKER in cached:
        raise ExperimentFailed(str(cached[FAILED_MARKER]), str(cached.get("traceback") or ""))


def versions() -> dict[str, str]:
    """Every benchmark's pinned asv version, by asv name (``bench_x.Class.method``). Raises
    ValueError naming the file (and the line, for a JSON syntax error) where it is not a JSON
    object of strings."""
    try:
        pinned = json.loads(VERSIONS_FILE.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{VERSIONS_FILE}:{err.lineno}: not JSON ({err.msg}); expected an object of "
                         '"bench_x.Class.track_y": "<version>" entries, in double quotes, comma-separated') from None
    if not isinstance(pinned, dict) or not all(isinstance(v, str) for v in pinned.values()):
        raise ValueError(f"{VERSIONS_FILE}: expected a JSON object of \"benchmark name\": \"<version>\" strings")
    return pinned


def pin_versions(namespace: dict) -> None:
    """Give every benchmark method of a module's classes its version from ``versions.json``,
    under the current profile (:func:`impls.harness.profiles.versioned`).

    asv otherwise versions a number by the hash of its source and its ``setup_cache``'s, so
    editing a shared setup (a refactor) would cut the history of every number using it.
    A pinned version changes only when ``versions.json`` says so: bump a benchmark's entry
    when what it measures changes; a benchmark without an entry keeps asv's hash.
    ``impls/profiles.toml`` is no part of a version either: ``benchmarks/sizes_lock.json``
    records a digest of each ``[table.profile]``, and the tests fail until an edited table is
    locked again (``python scripts/lock_profile_sizes.py --write``), after its readers' pins
    were bumped here if the edit changed what they measure (sizes, budgets, threads).
    """
    module = namespace["__name__"].rsplit(".", 1)[-1]
    pinned = versions()
    profile = profiles.current_profile()
    for cls_name, cls in list(namespace.items()):
        if not inspect.isclass(cls) or cls.__module__ != namespace["__name__"]:
            continue
        for attr in dir(cls):
            key = f"{module}.{cls_name}.{attr}"
            method = getattr(cls, attr)
            if key not in pinned or not inspect.isfunction(method):
                continue
            if attr not in vars(cls):  # inherited (a CUDA twin): its own copy, its own version
                method = _copy(method)
                setattr(cls, attr, method)
            method.version = profiles.versioned(pinned[key], profile)


NO_VALUE_REASON = "the experiment's result holds no value for this number at this point"


def explain_skips(namespace: dict) -> None:
    """Make every benchmark class of a module say why a point of it has no value.

    Each ``setup`` and ``track_*`` method defined in the module's classes is wrapped so
    that, before behaving exactly as before, it appends a line to
    :mod:`impls.harness.skip_log` when it skips (``NotImplementedError`` in ``setup``,
    asv's ``SkipNotImplemented`` in a track: the exception's text), fails (any other
    exception: its type and text) or returns NaN or None (the track's ``missing`` text, else
    :data:`NO_VALUE_REASON`). asv keeps none of these reasons; the report's list of points
    without a value and ``make compare`` read them. A class whose setup cache returned
    ``run_and_store``'s failure marker fails in every such method first
    (:func:`raise_if_failed`), logging the experiment's error. ``time_*`` methods are left unwrapped:
    a wrapper would be part of what they time. Call it once per module, after its last class.
    """
    if skip_log is None:    # an older commit's impls, without the log
        return
    for cls in namespace.values():
        if not inspect.isclass(cls) or cls.__module__ != namespace["__name__"]:
            continue
        for attr, method in list(vars(cls).items()):
            if (attr == "setup" or attr.startswith("track_")) and inspect.isfunction(method) \
                    and not hasattr(method, "explains_skips"):
                setattr(cls, attr, _explaining(method, attr))


def _explaining(method: types.FunctionType, attr: str) -> Callable[..., object]:
    in_setup = attr == "setup"

    @functools.wraps(method)
    def explained(self, *args):
        cls = type(self)
        name = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}" + ("" if in_setup else f".{attr}")
        cached = hasattr(cls, "setup_cache")    # asv passes the cache first, then the point's values
        point = skip_log.param_label(getattr(cls, "param_names", None) or (), args[1:] if cached else args)
        try:
            if cached and args:
                raise_if_failed(args[0])
            value = method(self, *args)
        except Exception as err:    # noqa: BLE001 - logged, then raised on unchanged
            # asv skips on NotImplementedError in setup, and only on SkipNotImplemented in a benchmark's body
            skipped = isinstance(err, NotImplementedError) and (in_setup or type(err).__name__ == "SkipNotImplemented")
            reason = (str(err) if skipped and str(err) else err.reason if isinstance(err, ExperimentFailed)
                      else f"{type(err).__name__}: {err}")
            skip_log.record(name, point, skip_log.SKIPPED if skipped else skip_log.FAILED, reason)
            raise
        if not in_setup and skip_log.is_missing(value):
            skip_log.record(name, point, skip_log.NO_VALUE, _nan_reason(self, method))
        return value

    explained.explains_skips = True
    explained.__signature__ = inspect.signature(method)   # asv check counts the original's arguments
    return explained


def _nan_reason(instance: object, method: Callable[..., object]) -> str:
    """Why ``method`` returned NaN: the row's own words (``missing_from``), else ``missing``."""
    said = getattr(method, "missing", "") or NO_VALUE_REASON
    key = getattr(method, "missing_from", "")
    row_data = getattr(instance, "row", None)
    own = row_data.get(key) if key and isinstance(row_data, dict) else None
    return own if isinstance(own, str) and own.strip() else said


def _copy(func: types.FunctionType) -> types.FunctionType:
    twin = types.FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__,
                              func.__closure__)
    twin.__dict__.update(func.__dict__)
    twin.__qualname__, twin.__doc__ = func.__qualname__, func.__doc__
    return twin


# impls.harness.report.directions.DIRECTIONS spelled out: importing the report would load matplotlib here
DIRECTIONS = ("higher", "lower", "nearer_zero", "flag", "context")
SCALES = ("relative", "absolute")


def track(read: Callable[..., float], *, unit: str, direction: str, doc: str = "",
          scale: str = "relative", bounded_by: tuple[str | None, str | None] | None = None,
          missing: str = "", worst_missing: bool = False, sides: str = "",
          missing_from: str = "") -> Callable[..., float]:
    """An asv ``track_*`` method returning ``read(self, data, *params)`` (the number, in ``unit``).

    ``direction`` says which way is better: ``"higher"``, ``"lower"`` or ``"nearer_zero"``
    (a paired difference that crosses 0: judged by ``|value|``); ``"flag"`` (a 0/1
    state) and ``"context"`` (a description of the data or setup) are never regressions
    (:mod:`impls.harness.report.directions` reads it). ``scale="absolute"`` marks a number
    whose 0 is a natural value and whose noise adds (an error, a difference, an overhead
    in percent): ``make noise`` and ``make compare`` judge its changes in ``unit``, not
    relative to its value. ``bounded_by`` names the sibling flag tracks (lower, upper; None
    for neither) whose 1 says the number is only a lower or an upper bound at that point;
    ``make compare`` then judges only the changes the bounds prove. ``missing`` says what
    a NaN from ``read`` means (asv stores it as it stores a skip); ``worst_missing`` says that
    NaN is the worst outcome (the run failed at what the number measures), so that a number
    measured before and NaN now, of the same benchmark version, is a regression for
    ``make compare``. ``missing_from`` names
    the key of ``self.row`` (:func:`row`) where the run's data say, in words, why this point's
    NaN (e.g. ``no_value``): :func:`explain_skips` logs those words, where there are any,
    in place of ``missing``'s.
    ``sides`` names, for a
    ratio of two runs, where its two sides are tracked: ``make compare`` says a change of the
    ratio may be either side's (a faster baseline lowers a speed-up). Each call makes a new
    function, so every benchmark carries its own ``unit``, ``direction`` and pinned ``version``;
    its ``__wrapped__`` is ``read``, so the code asv records and shows for it (``inspect``
    follows ``__wrapped__``) is ``read``'s, not this wrapper's.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction {direction!r}: expected one of {', '.join(DIRECTIONS)}")
    if scale not in SCALES:
        raise ValueError(f"scale {scale!r}: expected one of {', '.join(SCALES)}")
    if bounded_by is not None and (
            len(bounded_by) != 2 or not any(bounded_by) or bounded_by[0] == bounded_by[1]
            or not all(name is None or name.startswith("track_") for name in bounded_by)
            or direction not in ("higher", "lower")):
        raise ValueError(f"bounded_by {bounded_by!r} on a {direction!r} track: expected (lower-bound flag, "
                         "upper-bound flag), two different track_ names or one and None, on a higher- or "
                         "lower-is-better track")

    def method(self, data, *params):
        return read(self, data, *params)

    method.unit, method.direction = unit, direction
    if scale != "relative":
        method.scale = scale
    if bounded_by is not None:
        method.bounded_by = tuple(bounded_by)
    if worst_missing and not missing:
        raise ValueError("worst_missing= needs missing=: what the NaN means")
    if missing:
        method.missing = missing
    if worst_missing:
        method.missing_is_worst = True
    if sides:
        method.sides = sides
    if missing_from:
        if not missing:
            raise ValueError("missing_from= needs missing=: what the NaN means where the row says nothing")
        method.missing_from = missing_from
    method.__doc__ = doc or None
    method.__wrapped__ = read
    return method


def finite(value: float | None) -> float:
    """``value`` as a float for asv (NaN when there is none: a track's ``missing`` says why)."""
    return math.nan if value is None else float(value)


def field(key: str, *, unit: str, direction: str, optional: bool = False, doc: str = "",
          scale: str = "relative", missing: str = "", worst_missing: bool = False,
          sides: str = "", missing_from: str = "",
          bounded_by: tuple[str | None, str | None] | None = None) -> Callable[..., float]:
    """A ``track`` returning ``self.row[key]`` (see :func:`row`); with ``optional``, NaN where
    the row lacks ``key`` or holds None (a number only some runs have; ``missing`` says why).
    Its ``pretty_source`` (the code asv records and shows) names ``key``."""
    if missing and not optional:
        raise ValueError(f"field {key!r}: missing= says what a NaN means, and only an optional field has one")
    if optional:
        method = track(lambda self, *_: finite(self.row.get(key)),
                       unit=unit, direction=direction, doc=doc, scale=scale, missing=missing,
                       worst_missing=worst_missing, sides=sides, missing_from=missing_from, bounded_by=bounded_by)
        method.pretty_source = f"lambda self, *_: finite(self.row.get({key!r}))"
    else:
        method = track(lambda self, *_: self.row[key], unit=unit, direction=direction, doc=doc, scale=scale,
                       sides=sides, bounded_by=bounded_by)
        method.pretty_source = f"lambda self, *_: self.row[{key!r}]"
    return method


def row(pick: Callable[..., object]) -> Callable[..., None]:
    """A ``setup`` that skips the asv way when the experiment was skipped, else keeps
    ``pick(data, *params)`` (the point the class's tracks read) as ``self.row``."""

    def setup(self, data, *params):
        raise_if_skipped(data)
        self.row = pick(data, *params)

    setup.__wrapped__ = pick        # its code, for inspect (and scripts/lock_declarations.py), is pick's
    return setup


def skip_where_skipped(self, data, *params) -> None:
    """The ``setup`` of a class whose tracks read its ``setup_cache``'s whole result (no
    one row): skips the asv way when the experiment was skipped, as :func:`row` does."""
    raise_if_skipped(data)


def cuda_twin(base: type, setup_cache: Callable[..., dict], doc: str) -> type:
    """``base``'s numbers read from ``setup_cache`` (the same experiment on a CUDA device):
    a subclass named ``<base>Cuda`` in ``base``'s module, skipped where the run was; its
    ``cuda_twin_of`` is ``base`` (the ``sides`` its ratios inherit name ``base``'s module's
    classes, read as their twins: :func:`impls.harness.report.directions.declared_sides`)."""
    return type(f"{base.__name__}Cuda", (base,), {"setup_cache": setup_cache, "__doc__": doc,
                                                   "__module__": base.__module__, "cuda_twin_of": base})


def axes(**values: list) -> tuple[tuple[list, ...], list[str]]:
    """``(params, param_names)`` for asv from ``name=values`` in order: a class's parameter grid."""
    return tuple(values.values()), list(values)
