"""Registry of experiments: the unit of the suite.

Longer than 400 lines: declaring, checking and running an experiment is one contract (every
mistake in a catalog, a profile table or a reference is named on one line, with its file,
before any work), and every system goes through this one module.

An experiment is one registered entry:

- ``name`` (``<system>.<what>``, e.g. ``bandana.layouts``),
- ``sizes``: the table of ``impls/profiles.toml`` it reads, whose keys and types are
  declared once with :func:`sizes_schema` and checked for every profile on load,
- ``artifact``: the name its result is stored under for the report (``<artifact>_<device>``
  on a device other than the CPU): lowercase letters, digits and ``_`` (:data:`ARTIFACT_NAME`),
- ``requires``: capabilities (:mod:`impls.harness.capabilities`) without which it cannot run,
- ``synthetic``: whether its input data are synthetic,
- ``timed``: whether it measures this machine's hardware (such work never leaves it),
- ``devices``: the devices it accepts,
- ``run``: ``"module:function"`` of a callable ``run(sizes, *, device="cpu", progress=None) -> dict``,
  imported only when the experiment runs, so listing experiments stays cheap.

Each system declares its entries as data, one ``["<system>.<what>"]`` table per experiment in
``impls/<system>/catalog.toml`` (the fields above; ``name`` is the table's key), and its sizes
schemas and ``run`` adapters in ``impls.<system>.catalog`` (a light module: no torch, numba or
faiss at import). asv classes, ``python -m impls run`` and the tests all go through
:func:`run` / :func:`run_and_store`.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import pkgutil
import re
import sys
import time
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from impls.harness import paths, profiles, size_checks

_EXPERIMENTS: dict[str, "Experiment"] = {}
_SCHEMAS: dict[str, dict[str, Any]] = {}
_BOUNDS: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {}
CATALOG_MODULE = "catalog"
CATALOG_FILE = "catalog.toml"
_DECLARED: set[Path] = set()
_SOURCES: dict[str, Path] = {}      # the catalog.toml that declared each experiment declared from one
# an artifact is stored as <machine>/<commit>/<artifact>.json and read back from there alone:
# a '/', '..' or space would file it elsewhere; lowercase, so no two differ by case only
ARTIFACT_NAME = re.compile(r"[a-z0-9_]+")


class ExperimentError(ValueError):
    """A request for an experiment that cannot be honoured (unknown name, device, sizes)."""


class NameClash(ExperimentError):
    """Two experiments claim one published name (an artifact or a figure); the message names
    both and where each is declared, blaming neither."""


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    sizes: str
    artifact: str
    run: str
    summary: str
    paper_figure: str
    requires: tuple[str, ...] = ()
    synthetic: bool = True
    timed: bool = True
    devices: tuple[str, ...] = ("cpu",)
    printer: str | None = None

    @property
    def system(self) -> str:
        return self.name.split(".", 1)[0]

    def artifact_for(self, device: str = "cpu") -> str:
        """The artifact name of a run on ``device`` (``cuda:1`` files as ``cuda``)."""
        kind = device_kind(device)
        return self.artifact if kind == "cpu" else f"{self.artifact}_{kind}"

    def requirements(self, device: str = "cpu") -> tuple[str, ...]:
        """Capabilities needed on ``device``: the declared ones, plus ``cuda`` for a CUDA device."""
        kind = device_kind(device)
        return self.requires + (("cuda",) if kind == "cuda" and "cuda" not in self.requires else ())

    def function(self) -> Callable[..., dict]:
        """The callable ``run`` names (imported now); :class:`ExperimentError` when it names none."""
        return _reference(self.name, "run", self.run)


def source_of(name: str) -> str:
    """The catalog file that declared experiment ``name``, or "its registration in code"."""
    return str(_SOURCES[name]) if name in _SOURCES else "its registration in code"


def reference_problem(name: str, field: str = "run") -> str | None:
    """Why the ``field`` reference (``run`` or ``printer``, ``"module:function"``) of
    experiment ``name`` names no function, in :func:`_reference`'s words; None when it names
    one, or names nothing (no printer). Read from the source files, nothing imported (listing
    stays cheap, no torch): a module found only by importing (a C extension, a module-level
    ``__getattr__`` or ``import *``), and a name bound in any branch of a top-level ``if`` or
    ``try`` (which branch runs is known only by importing), count as naming the function;
    the import, when the experiment runs, has the last word."""
    target = getattr(get(name), field)
    if target is None:
        return None
    where = f'{field} = {target!r} of ["{name}"] in {source_of(name)}'
    expected = "expected 'package.module:function'"
    module, colon, attr = target.partition(":")
    if not (colon and module and attr) or module.startswith("."):
        return f"{where} is not 'module:function', {expected}"
    found = _module_file(module)
    if isinstance(found, str):
        return f"{where} names no module (no module named {found!r}), {expected}"
    if found is None or found.suffix != ".py":
        return None
    try:
        tree = ast.parse(found.read_text())
    except (OSError, SyntaxError, ValueError):
        return None                 # importing it will say what is wrong with the file itself
    names = _top_level_names(tree)
    if attr in names or "*" in names:
        return None
    return f"{where} names no function (module {module} has no function {attr!r}), {expected}"


def _module_file(module: str) -> Path | str | None:
    """The source file of the dotted ``module``, found on disk without importing it (only its
    top-level package is looked up); the first dotted prefix that names nothing, as a str,
    when there is none; None when it exists but not as a file (a built-in module, a namespace
    package) or is an attribute of a plain module (``os.path``)."""
    parts = module.split(".")
    top = sys.modules.get(parts[0])     # imported already (impls): its __path__ as it is now
    if top is not None:
        origin, search = getattr(top, "__file__", None), getattr(top, "__path__", None)
    else:
        try:
            spec = importlib.util.find_spec(parts[0])
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            return parts[0]
        origin = spec.origin if spec.has_location else None
        search = spec.submodule_search_locations
    for i in range(2, len(parts) + 1):   # each level as Python's path finder finds it, importing nothing
        if search is None:      # a plain module: what its attributes hold (os.path) is known by importing
            return None
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:i]), list(search))
        if spec is None:
            return ".".join(parts[:i])
        origin, search = (spec.origin if spec.has_location else None), spec.submodule_search_locations
    return Path(origin) if origin else None


def _top_level_names(tree: ast.Module) -> set[str]:
    """Every name bound at the top level of ``tree`` (def, class, assignment, import), also
    inside its top-level ``if``/``try``/``with``/loop blocks, and ``*`` when it imports ``*``
    or defines a module ``__getattr__`` (then any name may exist)."""
    names: set[str] = set()
    for node in _module_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    if "*" in names or "__getattr__" in names:
        return names | {"*"}
    return names


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of ``body`` and, recursively, of its compound statements' blocks
    (``if``, ``try``, ``with``, ``for``, ``while``), which run at module level too; not the
    bodies of functions or classes."""
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        blocks = [getattr(node, key, None) or [] for key in ("body", "orelse", "finalbody")]
        blocks += [handler.body for handler in getattr(node, "handlers", None) or []]
        for block in blocks:
            if isinstance(block, list):
                yield from _module_level(block)


def _reference(name: str, field: str, target: str) -> Callable:
    """The callable ``field = target`` (``"module:function"``) of experiment ``name`` names;
    :class:`ExperimentError` naming the value and the catalog file when the module or the
    function does not exist (an import error inside an existing module is raised as it is)."""
    where = f'{field} = {target!r} of ["{name}"] in {source_of(name)}'
    expected = "expected 'package.module:function'"
    module, colon, attr = target.partition(":")
    if not (colon and module and attr) or module.startswith("."):
        raise ExperimentError(f"{where} is not 'module:function', {expected}")
    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError as err:
        if not err.name or not (module == err.name or module.startswith(err.name + ".")):
            raise
        raise ExperimentError(f"{where} names no module (no module named {err.name!r}), {expected}") from None
    function = getattr(found, attr, None)
    if not callable(function):
        raise ExperimentError(f"{where} names no function (module {module} has no function {attr!r}), {expected}")
    return function


def sizes_schema(table: str, schema: Mapping[str, Any], *, positive: Iterable[str] = (),
                 pairs: Iterable[str] = (), repeatable: Iterable[str] = ()) -> None:
    """Declare the keys and types of ``[table.<profile>]`` in ``impls/profiles.toml``.

    Types are ``int``, ``float`` (an int is accepted), ``str``, ``bool``, ``dict``,
    ``list[T]`` (nested), ``list`` (any items) or a union ``A | B``. Every number in a
    table must be finite and >= 0; the keys in ``positive`` must be > 0 (a list: not
    empty, each number > 0), those in ``pairs`` a ``[low, high]`` with low <= high. A
    list (a sweep's axis, a set of names) holds no item twice, except in ``pairs`` and
    ``repeatable`` keys (a mix whose repeats weigh an item more).
    """
    bounds = (frozenset(positive), frozenset(pairs), frozenset(repeatable))
    if table in _SCHEMAS and (_SCHEMAS[table], _BOUNDS[table]) != (dict(schema), bounds):
        raise ValueError(f"sizes schema of [{table}] is declared twice, differently")
    unknown = sorted((bounds[0] | bounds[1] | bounds[2]) - set(schema))
    if unknown:
        raise ValueError(f"sizes schema of [{table}]: bounds for undeclared key(s) {', '.join(unknown)}")
    _SCHEMAS[table] = dict(schema)
    _BOUNDS[table] = bounds


DEVICE_KINDS = ("cpu", "cuda")


def experiment(name: str, *, sizes: str, artifact: str, run: str, summary: str, paper_figure: str = "",
               requires: tuple[str, ...] = (), synthetic: bool = True, timed: bool = True,
               devices: tuple[str, ...] = ("cpu",), printer: str | None = None) -> Experiment:
    """Register experiment ``name`` (see the module docstring for the fields); returns it."""
    if "." not in name:
        raise ValueError(f"experiment name {name!r} must be <system>.<what>")
    if not ARTIFACT_NAME.fullmatch(artifact):
        plain = re.sub(r"[^a-z0-9_]+", "_", artifact.lower()).strip("_") or name.replace(".", "_")
        raise ValueError(f"artifact {artifact!r} is no plain file name; expected lowercase letters, digits and "
                         f"'_' only (e.g. {plain!r}): it is stored as <commit>/<artifact>.json, the only place "
                         "the report reads it")
    entry = Experiment(name, sizes, artifact, run, summary, paper_figure, tuple(requires), synthetic,
                       timed, tuple(devices), printer)
    if name in _EXPERIMENTS and _EXPERIMENTS[name] != entry:
        raise ValueError(f"experiment {name!r} is registered twice, differently")
    from impls.harness import capabilities    # here: a catalog's typo must not wait for a run to surface

    for field, known in (("devices", DEVICE_KINDS), ("requires", tuple(capabilities.CHECKS))):
        unknown = [value for value in getattr(entry, field) if value not in known]
        if unknown:
            raise ValueError(f"experiment {name!r}: {field} {unknown} unknown; expected some of {', '.join(known)}")
    mine = {entry.artifact_for(d) for d in entry.devices}
    clash = next((other for other in _EXPERIMENTS.values() if other.name != name
                  and mine & {other.artifact_for(d) for d in other.devices}), None)
    if clash is not None:     # one artifact file would hold two experiments' records
        shared = sorted(mine & {clash.artifact_for(d) for d in clash.devices})[0]
        raise NameClash(f"artifact {shared!r} is declared by both {_both(name, clash.name)}; an artifact name is "
                        "published (the report and past results read it): give the new experiment its own")
    _EXPERIMENTS[name] = entry
    return entry


def _both(first: str, second: str) -> str:
    """``"a.x (where a.x is declared) and b.y (where b.y is declared)"``, in name order, so
    that a message about a name two experiments claim does not imply which one must change."""
    return " and ".join(f"{n} ({source_of(n)})" for n in sorted((first, second)))


# The fields of a catalog.toml table: required ones first, then the optional ones.
_REQUIRED = {"sizes": str, "artifact": str, "run": str, "summary": str}
_OPTIONAL = {"paper_figure": str, "requires": list[str], "synthetic": bool, "timed": bool,
             "devices": list[str], "printer": str, "figures": dict}
_FIGURE_FIELDS = {"title": str, "paper_figure": str}


@dataclasses.dataclass(frozen=True)
class FigureDeclaration:
    """A report figure of an experiment: drawn from its artifact by the function registered
    under ``name`` with :func:`impls.harness.figures.figure`."""
    name: str
    experiment: str
    title: str
    paper_figure: str = ""


_FIGURES: dict[str, FigureDeclaration] = {}


def _declare_figures(experiment_name: str, figures: Mapping[str, Any], where: str) -> None:
    for name, fields in figures.items():
        spot = f"{where} figure {name!r}"
        if not isinstance(fields, dict):
            raise ExperimentError(f"{spot}: expected a table of fields, got {fields!r}")
        _check_fields(fields, _FIGURE_FIELDS, ("title",), spot)
        entry = FigureDeclaration(name, experiment_name, **fields)
        other = _FIGURES.get(name)
        if other is not None and other.experiment != experiment_name:
            raise NameClash(f"figure {name!r} is declared by both {_both(experiment_name, other.experiment)}; a "
                            "figure name is published (the report files it under that name): give the new "
                            "figure its own")
        if other is not None and other != entry:
            raise ExperimentError(f"{spot}: figure {name!r} is declared twice, differently")
        _FIGURES[name] = entry


def figure_declarations() -> dict[str, FigureDeclaration]:
    """Every figure declared in the catalogs, by name (after :func:`discover`)."""
    discover()
    return dict(_FIGURES)


def declare_file(path: Path, system: str | None = None) -> list[Experiment]:
    """Register every ``["<system>.<what>"]`` table of the TOML file ``path``; returns them.

    Each table holds :func:`experiment`'s keyword fields, and its sub-tables
    ``["<system>.<what>".figures.<name>]`` the experiment's report figures (``title``,
    ``paper_figure``). An unknown, missing or mistyped field (a ``requires`` that names no
    capability included), a table that is not ``<system>.<what>`` (with ``system`` given:
    not ``<system>.``, the folder the catalog lives in; an unquoted ``[system.what]``
    included), or a name another file already declared, is an :class:`ExperimentError`
    naming the file and the table. An artifact or figure name another experiment already
    claims is a :class:`NameClash` naming both experiments and both files. Declaring the
    same file again is harmless.
    """
    try:
        tables = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ExperimentError(f"{path}: cannot read the experiment catalog: {err}") from err
    entries = []
    for name, fields in tables.items():
        where = f'["{name}"] in {path}'
        if not isinstance(fields, dict):
            raise ExperimentError(f"{where}: expected a table of fields, got {fields!r}")
        if "." not in name and fields and all(isinstance(value, dict) for value in fields.values()):
            inner = next(iter(fields))      # [slide.toy] unquoted: TOML reads table "slide" holding "toy"
            raise ExperimentError(f'[{name}.{inner}] in {path} is read as a table "{name}" holding a table '
                                  f'"{inner}": write ["{name}.{inner}"] (quoted: an experiment\'s name has a dot)')
        _check_fields(fields, {**_REQUIRED, **_OPTIONAL}, _REQUIRED, where)
        prefix = name.split(".", 1)[0]
        if system is not None and "." in name and prefix != system:
            raise ExperimentError(f"{where}: an experiment of system {prefix!r} in the catalog of {system!r}; "
                                  f"expected a name starting with '{system}.', or the table moved to "
                                  f"impls/{prefix}/{CATALOG_FILE}")
        if name in _EXPERIMENTS and _SOURCES.get(name) != path.resolve():
            raise ExperimentError(f"{where}: {name!r} is already declared in {source_of(name)}; "
                                  "expected one declaration of each experiment (remove one of the two)")
        figures = fields.pop("figures", {})
        before = _SOURCES.get(name)
        _SOURCES[name] = path.resolve()      # before registering: a clash's message names this file
        try:
            entries.append(experiment(name, **fields))
        except NameClash:
            _restore_source(name, before)
            raise
        except ValueError as err:
            _restore_source(name, before)
            raise ExperimentError(f"{where}: {err}") from err
        _declare_figures(name, figures, where)
    return entries


def _restore_source(name: str, before: Path | None) -> None:
    """Put back what :data:`_SOURCES` held for ``name`` before a declaration that failed."""
    if before is None:
        _SOURCES.pop(name, None)
    else:
        _SOURCES[name] = before


def not_packages(*names: str) -> list[Path]:
    """Each ``impls/<folder>/<name>`` (of ``names``) that exists in a folder without
    ``__init__.py``: discovery, which visits packages only, never sees it."""
    import impls

    return [found for root in impls.__path__ for folder in sorted(Path(root).iterdir())
            if folder.is_dir() and not (folder / "__init__.py").is_file()
            for found in (folder / name for name in names) if found.exists()]


def discover() -> dict[str, Experiment]:
    """Import every ``impls.<system>.catalog``, declare its ``catalog.toml`` and return the
    experiments by name; :class:`ExperimentError` for a broken catalog, or one in a folder that
    is not a package (its experiments would be missing without a word)."""
    import impls

    strays = not_packages(CATALOG_FILE, f"{CATALOG_MODULE}.py")
    if strays:
        raise ExperimentError(f"{strays[0]}: impls/{strays[0].parent.name} is not a package, so its experiments are "
                              f"never declared; expected {strays[0].parent / '__init__.py'} (an empty file will do)")
    for module in pkgutil.iter_modules(impls.__path__):
        if module.ispkg and module.name != "harness":
            try:
                importlib.import_module(f"impls.{module.name}.{CATALOG_MODULE}")
            except ModuleNotFoundError as err:
                if err.name != f"impls.{module.name}.{CATALOG_MODULE}":
                    raise
            table = Path(module.module_finder.path) / module.name / CATALOG_FILE
            if table not in _DECLARED and table.is_file():
                declare_file(table, module.name)
                _DECLARED.add(table)
    return dict(sorted(_EXPERIMENTS.items()))


def systems() -> tuple[str, ...]:
    """The systems (``impls/<system>/`` packages) that declare experiments, sorted: what a
    claim's ``system`` may name and what every system check walks."""
    return tuple(sorted({entry.system for entry in discover().values()}))


def schemas() -> dict[str, dict[str, Any]]:
    """Every declared sizes schema, by profile table (after :func:`discover`)."""
    discover()
    return dict(_SCHEMAS)


def get(name: str) -> Experiment:
    """The experiment called ``name``; :class:`ExperimentError` naming the known ones otherwise."""
    known = discover()
    if name not in known:
        raise ExperimentError(f"no experiment {name!r}; known: {', '.join(known)}")
    return known[name]


# -- sizes -------------------------------------------------------------------------------

def _check_fields(values: Mapping[str, Any], types_: Mapping[str, Any], required: Iterable[str],
                  where: str, noun: str = "field") -> None:
    """Raise :class:`ExperimentError` at ``where`` with every problem :func:`size_checks.field_problems` finds."""
    problems = size_checks.field_problems(values, types_, required, noun)
    if problems:
        raise ExperimentError(f"{where}: " + "; ".join(problems))


def validate_sizes(table: str, profile: str, values: Mapping[str, Any],
                   schema: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`ExperimentError` unless ``values`` has exactly the schema's keys, of its types.

    The message names the profile table (``[table.profile]``) and every problem in it.
    """
    schema = schema if schema is not None else schemas().get(table)
    if schema is None:
        raise ExperimentError(f"[{table}] of {profiles.PROFILE_TABLE} has no declared sizes schema")
    where = f"[{table}.{profile}] in {profiles.PROFILE_TABLE}"
    _check_fields(values, schema, schema, where, noun="key")
    problems = size_checks.bound_problems(values, *_BOUNDS.get(table, (frozenset(),) * 3))
    problems += _unknown_datasets(values)
    if problems:
        raise ExperimentError(f"{where}: " + "; ".join(problems))


def _unknown_datasets(values: Any) -> list[str]:
    """One problem for each ``dataset`` key, at any depth of ``values`` (a run's own included),
    whose string names no manifest of the dataset registry, so that a misspelt set fails before
    the runs ahead of it train, not when its own run starts."""
    found = _dataset_keys(values, "")
    # by file name (a manifest's name must be its file's): parsing every manifest here would let
    # one broken manifest stop experiments that use no dataset
    known = {p.stem for p in paths.datasets_dir().glob("*.toml")} if found else set()
    return [f"{where} = {name!r} is no dataset (known: {', '.join(sorted(known))})"
            for where, name in found if name not in known]


def _dataset_keys(values: Any, at: str) -> list[tuple[str, str]]:
    """(place, as ``runs[2].dataset``; name) of every string ``dataset`` key at any depth of
    ``values``, found below the place ``at``."""
    if isinstance(values, Mapping):
        out = []
        for key, value in values.items():
            where = f"{at}.{key}" if at else str(key)
            out += [(where, value)] if key == "dataset" and isinstance(value, str) else _dataset_keys(value, where)
        return out
    if isinstance(values, list):
        return [pair for i, value in enumerate(values) for pair in _dataset_keys(value, f"{at}[{i}]")]
    return []


def sizes_for(name: str, profile: str | None = None) -> dict[str, Any]:
    """The validated sizes of experiment ``name`` under ``profile`` (default: the current one)."""
    entry = get(name)
    profile = profiles.resolve(profile)
    try:
        values = profiles.sizes(entry.sizes, profile)
    except KeyError:            # no such table: say whose sizes they are, and where they were asked for
        raise ExperimentError(f"no profile table [{entry.sizes}.{profile}] in {profiles.PROFILE_TABLE} (the sizes of "
                              f"experiment {name!r}: sizes = {entry.sizes!r} in {source_of(name)}); expected one "
                              f"table per profile ({', '.join(profiles.PROFILES)}) and its keys declared with "
                              f"sizes_schema in impls/{entry.system}/{CATALOG_MODULE}.py") from None
    validate_sizes(entry.sizes, profile, values)
    return values


def entry_problem(name: str, profile: str | None = None) -> str | None:
    """The first thing that stops experiment ``name`` from running, found without running or
    importing it: its sizes under ``profile`` (default: the current one; :func:`sizes_for`'s
    message), then its ``run`` and ``printer`` references (:func:`reference_problem`'s); None
    when all resolve. Cheap enough for ``python -m impls list``."""
    try:
        sizes_for(name, profile)
    except ExperimentError as err:
        return str(err)
    return reference_problem(name, "run") or reference_problem(name, "printer")


# -- running -----------------------------------------------------------------------------

@contextmanager
def using_profile(profile: str | None) -> Iterator[str]:
    """Make ``profile`` current (``DLSYSBENCH_PROFILE``) for this process and its children."""
    previous = os.environ.get("DLSYSBENCH_PROFILE")
    try:
        name = profiles.resolve(profile)
    except profiles.ProfileError as err:
        raise ExperimentError(str(err)) from None
    os.environ["DLSYSBENCH_PROFILE"] = name
    try:
        yield name
    finally:
        if previous is None:
            os.environ.pop("DLSYSBENCH_PROFILE", None)
        else:
            os.environ["DLSYSBENCH_PROFILE"] = previous


def device_kind(device: object) -> str:
    """The kind of device name ``device``: ``"cuda"`` for ``"cuda"`` or ``"cuda:N"``, and so
    on; ``"cpu"`` for None (a run record without a device ran on the CPU); ``""`` for ``""``
    (no device, which every experiment refuses)."""
    return "cpu" if device is None else str(device).split(":", 1)[0]


def missing(name: str, device: str = "cpu") -> str | None:
    """Why ``name`` cannot run on ``device`` on this machine, or None when it can."""
    from impls.harness import capabilities

    entry = get(name)
    kind = device_kind(device)
    if kind not in entry.devices:
        return f"{name} runs on {', '.join(entry.devices)}, not {device!r}"
    return capabilities.missing_reason(*entry.requirements(device))


def run(name: str, *, profile: str | None = None, device: str = "cpu", progress: bool | None = None) -> dict:
    """Run experiment ``name`` with ``profile``'s validated sizes on ``device``; return its data.

    Raises :class:`ExperimentError` before any work when the name, profile, device or sizes
    are wrong (and after it when the run returns no dict, which no artifact can hold), and
    ``NotImplementedError`` when a required capability is missing.
    """
    entry = get(name)
    with using_profile(profile) as prof:
        sizes = sizes_for(name, prof)
        kind = device_kind(device)
        if kind not in entry.devices:
            raise ExperimentError(f"{name} runs on {', '.join(entry.devices)}, not {device!r}")
        reason = missing(name, device)
        if reason:
            raise NotImplementedError(reason)
        function = entry.function()      # a wrong run = "module:function" fails here, before any work
        _check_signature(entry, function, sizes, device=device, progress=progress)
        from impls.harness import progress as progress_log

        started = time.monotonic()
        progress_log.log(f"{name} ({prof}, {device}): started")
        try:
            with _grid_guard(entry):
                data = function(sizes, device=device, progress=progress)
        except BaseException as err:
            progress_log.log(f"{name}: failed after {time.monotonic() - started:.0f} s ({type(err).__name__})")
            raise
        progress_log.log(f"{name}: done in {time.monotonic() - started:.0f} s")
        if not isinstance(data, dict):      # the artifact stores a dict: said here, not when it is filed
            raise ExperimentError(f'run = {entry.run!r} of ["{name}"] in {source_of(name)} returned a '
                                  f"{type(data).__name__}; expected a dict of plain JSON data (its artifact's data)")
        return data


def _check_signature(entry: Experiment, function: Callable[..., dict], *call, **named) -> None:
    """Raise :class:`ExperimentError`, before any work, where ``entry``'s run function cannot be
    called as every run is, ``run(sizes, *, device, progress)`` (a callable without a readable
    signature is left to the call)."""
    try:
        inspect.signature(function).bind(*call, **named)
    except TypeError as err:
        raise ExperimentError(f'run = {entry.run!r} of ["{entry.name}"] in {source_of(entry.name)} cannot be '
                              f"called as run(sizes, *, device, progress): {err}") from None
    except ValueError:
        pass


@contextmanager
def _grid_guard(entry: Experiment) -> Iterator[None]:
    """Around a timed experiment, forbid the grid executor: what it measures is this machine."""
    from impls.harness import grid

    if entry.timed:
        with grid.timed(entry.name):
            yield
    else:
        yield


FAILED_MARKER = "experiment_failed"   # run_and_store's key for an experiment that raised


def run_and_store(name: str, device: str = "cpu") -> dict:
    """For an asv ``setup_cache``: run ``name`` with the current profile and store its artifact.

    Returns the data; ``{"skipped": reason}`` when this machine lacks what it needs (the
    benchmark's ``setup`` turns that into asv's skip); or, when the run or the artifact's
    save raised, ``{FAILED_MARKER: "<type>: <message> (in experiment <name>)", "traceback":
    ...}``, which ``benchmarks.common`` turns into a failure of every benchmark reading it,
    with that line as its logged reason (asv keeps no reason for a failed setup cache). The
    traceback is printed on stderr too. SIGINT and SIGTERM (``Interrupted``, not an
    ``Exception``) still stop the run.
    """
    from impls.harness import grid
    from impls.harness.artifacts import save_artifact

    entry = get(name)
    before = len(grid.runs())
    try:
        data = run(name, device=device)  # checks the capabilities before any work
    except NotImplementedError as err:
        return {"skipped": str(err)}
    except Exception as err:    # noqa: BLE001 - every benchmark of the run fails, saying this
        return _failure_marker(name, err)
    try:
        save_artifact(entry.artifact_for(device), data, experiment=name, synthetic=entry.synthetic,
                      grid=grid.runs()[before:])
    except Exception as err:    # noqa: BLE001 - a save that fails (a full disk) is no skip either
        return _failure_marker(name, err)
    return data


def _failure_marker(name: str, err: Exception) -> dict:
    """:func:`run_and_store`'s marker of experiment ``name`` that raised ``err`` (in an
    ``except``: the traceback is the current one, printed on stderr too)."""
    import traceback

    trace = traceback.format_exc()
    print(trace, file=sys.stderr, flush=True)
    line = " ".join(f"{type(err).__name__}: {err}".split())
    return {FAILED_MARKER: f"{line} (in experiment {name})", "traceback": trace}


def printer(name: str) -> Callable[[dict], None] | None:
    """The experiment's table printer (``printer`` field), or None; :class:`ExperimentError`
    naming the catalog file and the reference when it names no function."""
    entry = get(name)
    return _reference(name, "printer", entry.printer) if entry.printer else None
