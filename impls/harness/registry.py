"""Dataset registry: ``datasets/*.toml`` manifests → arrays, cached and sha256-checked.

Longer than 400 lines: the manifests' checks and the two kinds of cache (generated and
parsed) share one loader; what the generated kind is keyed by lives in ``code_digest``.

A manifest is either a synthetic recipe::

    name = "demo"                      # must match the file name (demo.toml)
    description = "..."
    [synthetic]
    generator = "impls.pkg.module:function"   # function(seed=..., **params) -> {name: ndarray}
    seed = 7
    [synthetic.params]                  # shared by every profile
    dim = 16
    [synthetic.profiles.smoke]          # per-profile overrides (smoke / quick / full)
    rows = 1000

or an external source::

    name = "amazon670k"
    [external]
    env = "DLSYSBENCH_AMAZON670K"       # variable holding the file's path
    path = "datasets/cache/amazon.txt"  # default when the variable is unset (relative to the root)
    loader = "impls.pkg.module:function"  # function(path) -> {name: ndarray}
    also_reads = "impls.pkg.module:function"  # optional: function(path) -> the other files the
                                              # loader reads (a path or a list); their sha256 keys the cache too
    format = "xc-text"
    sha256 = "…"                        # optional: verified before use
    url = "where to get the file"

Arrays are cached as ``.npz`` under ``datasets/cache/<name>/`` with a ``.sha256``
file beside each; a cache whose checksum does not match is rebuilt (synthetic) or
re-read (external), never used. An external set's cache is keyed by its files' sha256,
the loader's reference and the loader module's ``CACHE_VERSION`` (0 when it has none),
so a parser change that bumps it re-reads the files.
"""
from __future__ import annotations

import dataclasses
import errno
import hashlib
import importlib
import inspect
import json
import logging
import os
import re
import tomllib
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Callable

import numpy as np

from impls.harness import atomic, cli, code_digest, paths
from impls.harness.profiles import PROFILES
from impls.harness.profiles import resolve as resolve_profile

log = logging.getLogger(__name__)


class ManifestError(ValueError):
    """A dataset manifest is malformed; the message names the file, line and expectation."""


class DatasetUnavailable(FileNotFoundError):
    """An external dataset's file is missing; the message says where to get it."""


class ChecksumMismatch(ValueError):
    """A file's sha256 differs from the one its manifest records."""


@dataclasses.dataclass(frozen=True)
class Manifest:
    name: str
    path: Path
    description: str
    kind: str  # "synthetic" | "external"
    spec: dict[str, Any]

    @property
    def synthetic(self) -> bool:
        return self.kind == "synthetic"


@dataclasses.dataclass(frozen=True)
class Dataset:
    name: str
    synthetic: bool
    arrays: dict[str, np.ndarray]
    cache_path: Path
    sha256: str
    params: dict[str, Any]

    def __getitem__(self, key: str) -> np.ndarray:
        return self.arrays[key]


def sha256_of(path: Path, chunk_bytes: int = 1 << 22) -> str:
    """Return the hex sha256 digest of the file at ``path``.

    A digest is kept for the rest of the process under the file's identity (device, inode,
    size, modification and change times), so a file read by several steps of one run (a
    real set: its record, then its parse cache's key) is hashed once; any write changes
    the identity and hashes it again."""
    with open(path, "rb") as handle:
        st = os.fstat(handle.fileno())
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        known = _DIGESTS.get(identity)
        if known is not None:
            return known
        digest = hashlib.sha256()
        while block := handle.read(chunk_bytes):
            digest.update(block)
    _DIGESTS[identity] = digest.hexdigest()
    return _DIGESTS[identity]


_DIGESTS: dict[tuple[int, ...], str] = {}


def _line_of(text: str, pattern: str, after: str | None = None) -> int | None:
    """The 1-based number of the first line matching ``pattern`` (below the first line matching
    ``after``, a table's header, when given and found), or None."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(after, line.strip())), 0) if after else 0
    for number, line in enumerate(lines[start:], start=start + 1):
        if re.match(pattern, line.strip()):
            return number
    return None


def _fail(path: Path, text: str, pattern: str | None, message: str, after: str | None = None) -> ManifestError:
    line = _line_of(text, pattern, after) if pattern else None
    where = f"{path}:{line}" if line else str(path)
    return ManifestError(f"{where}: {message}")


_KIND_WORDS = {int: "an integer", str: "a string"}


def _require(table: dict, key: str, kind: type, path: Path, text: str, section: str) -> Any:
    if key not in table:
        raise _fail(path, text, re.escape(f"[{section}]") if section else None,
                    f"[{section or 'top level'}] needs `{key}` ({kind.__name__})")
    if not isinstance(table[key], kind) or (kind is int and isinstance(table[key], bool)):   # true is no seed
        raise _fail(path, text, rf"{re.escape(key)}\s*=",
                    f"`{key}` must be {_KIND_WORDS.get(kind, kind.__name__)}, got {type(table[key]).__name__}")
    return table[key]


def _check_callable_ref(ref: str, key: str, path: Path, text: str) -> None:
    if not re.fullmatch(r"[\w.]+:\w+", ref):
        raise _fail(path, text, rf"{key}\s*=",
                    f"`{key}` must look like 'package.module:function', got {ref!r}")


_TOP_KEYS = frozenset({"name", "description", "synthetic", "external"})
_SECTION_KEYS = {"synthetic": frozenset({"generator", "seed", "params", "profiles"}),
                 "external": frozenset({"env", "path", "loader", "also_reads", "format", "sha256", "url"})}
# the type of each key whose value is one (the tables of [synthetic] are checked on their own)
_SCALARS = {"": {"name": str, "description": str},
            "synthetic": {"generator": str, "seed": int},
            "external": {key: str for key in _SECTION_KEYS["external"]}}


def _check_keys(table: dict, allowed: frozenset, section: str, path: Path, text: str) -> None:
    """Refuse a key of ``table`` not in ``allowed``, and a scalar key of the wrong type."""
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _fail(path, text, rf"{re.escape(unknown[0])}\s*=|\[{re.escape(unknown[0])}\]",
                    f"unknown key(s) {', '.join(unknown)} in [{section or 'top level'}]; "
                    f"expected only {', '.join(sorted(allowed))} (a misspelt key would be ignored)")
    for key, kind in _SCALARS[section].items():
        if key in table:
            _require(table, key, kind, path, text, section)


def _check_sizes(profile: str, sized: dict, path: Path, text: str) -> None:
    """Refuse a value of ``[synthetic.profiles.<profile>]`` that is not a positive integer: a
    profile table holds only sizes, and a size counts something."""
    for key, value in sized.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise _fail(path, text, rf"{re.escape(key)}\s*=", f"[synthetic.profiles.{profile}] `{key}` = {value!r}: "
                        "a profile table holds sizes, and a size must be a positive integer",
                        after=rf"\[synthetic\.profiles\.{re.escape(profile)}\]")


def parse_manifest(path: Path) -> Manifest:
    """Return the manifest at ``path``, or raise :class:`ManifestError` saying what is wrong."""
    path = Path(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError as err:
        raise ManifestError(f"{path}: not UTF-8 text (byte {err.start}: {err.reason})") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ManifestError(f"{path}: not valid TOML: {err}") from err
    _check_keys(table, _TOP_KEYS, "", path, text)
    name = _require(table, "name", str, path, text, "")
    if name != path.stem:
        raise _fail(path, text, r"name\s*=", f"name {name!r} must match the file name {path.stem!r}")
    kinds = [k for k in ("synthetic", "external") if k in table]
    if len(kinds) != 1:
        raise ManifestError(f"{path}: expected exactly one of [synthetic] or [external], found {kinds or 'neither'}")
    kind = kinds[0]
    spec = table[kind]
    if not isinstance(spec, dict):
        raise _fail(path, text, rf"{kind}\s*=", f"[{kind}] must be a table, got {type(spec).__name__}")
    _check_keys(spec, _SECTION_KEYS[kind], kind, path, text)
    if kind == "synthetic":
        _check_callable_ref(_require(spec, "generator", str, path, text, kind), "generator", path, text)
        if _require(spec, "seed", int, path, text, kind) < 0:
            raise _fail(path, text, r"seed\s*=", f"`seed` must be a non-negative integer, got {spec['seed']}")
        for section in ("params", "profiles"):
            if not isinstance(spec.get(section, {}), dict):
                raise _fail(path, text, rf"{section}\s*=", f"[synthetic.{section}] must be a table, got "
                                                          f"{type(spec[section]).__name__}")
        bad = [p for p, v in spec.get("profiles", {}).items() if not isinstance(v, dict)]
        if bad:
            raise _fail(path, text, rf"{re.escape(bad[0])}\s*=", f"[synthetic.profiles.{bad[0]}] must be a table of "
                        f"parameters, got {type(spec['profiles'][bad[0]]).__name__}")
        unknown = set(spec.get("profiles", {})) - set(PROFILES)
        if unknown:
            raise _fail(path, text, r"\[synthetic\.profiles\.", f"unknown profile(s) {sorted(unknown)}; "
                        f"expected {', '.join(PROFILES)}")
        for profile, sized in spec.get("profiles", {}).items():
            shaped = [k for k in sized if k in spec.get("params", {})]
            if shaped:
                raise _fail(path, text, rf"\[synthetic\.profiles\.{re.escape(profile)}\]",
                            f"[synthetic.profiles.{profile}] overrides {shaped[0]!r} of [synthetic.params]: "
                            "a profile sizes a set, and [synthetic.params] is its shape, the same at every profile")
            _check_sizes(profile, sized, path, text)
    else:
        _check_callable_ref(_require(spec, "loader", str, path, text, kind), "loader", path, text)
        if "also_reads" in spec:
            _check_callable_ref(_require(spec, "also_reads", str, path, text, kind), "also_reads", path, text)
        if "env" not in spec and "path" not in spec:
            raise _fail(path, text, r"\[external\]", "[external] needs `env` or `path` (or both)")
        sha = spec.get("sha256")
        if sha is not None and not is_sha256(sha):
            raise _fail(path, text, r"sha256\s*=", "`sha256` must be 64 lowercase hex digits")
    return Manifest(name, path, table.get("description", ""), kind, spec)


def is_sha256(value: Any) -> bool:
    """Whether ``value`` is a sha256 digest as ``hashlib`` writes it: 64 lowercase hex digits."""
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


class Manifests(Mapping[str, Manifest]):
    """The manifests of one folder by name, so that a broken one fails only what uses it.

    Iterating (``keys``, ``values``, ``items``, ``len``) sees the manifests that parse. Asking
    for a broken one by name (``[name]``, ``name in``, ``get``) raises its error (a
    :class:`ManifestError` naming the file and line, or the :class:`OSError` of reading it);
    any other use says once per process, as a warning line, which are broken and why.
    ``broken``: the name (file name) of each broken manifest → its error."""

    def __init__(self, parsed: dict[str, Manifest], broken: dict[str, Exception]):
        self._parsed, self.broken = parsed, broken

    def __getitem__(self, name: str) -> Manifest:
        if name in self.broken:
            raise self.broken[name]
        self._warn_broken()
        return self._parsed[name]

    def __iter__(self) -> Iterator[str]:
        self._warn_broken()
        return iter(self._parsed)

    def __len__(self) -> int:
        return len(self._parsed)

    def _warn_broken(self) -> None:
        for name, err in self.broken.items():
            message = f"{err}; dataset {name!r} is left out until its manifest is fixed"
            if message not in _WARNED:
                _WARNED.add(message)
                cli.warn(message)


_WARNED: set[str] = set()


def manifests(directory: Path | None = None) -> Manifests:
    """Return every manifest in ``directory`` (default ``datasets/``) by name; a broken one
    is kept as its error (:class:`Manifests`)."""
    directory = Path(directory or paths.datasets_dir())
    parsed: dict[str, Manifest] = {}
    broken: dict[str, Exception] = {}
    for path in sorted(directory.glob("*.toml")):
        try:
            parsed[path.stem] = parse_manifest(path)
        except (ManifestError, OSError) as err:
            broken[path.stem] = err
    return Manifests(parsed, broken)


def made_by(prefix: str, directory: Path | None = None) -> list[str]:
    """The names of the datasets whose generator or loader lies under the module path
    ``prefix`` (e.g. ``"impls.bandana."``), sorted; a broken manifest is not one of them
    (and is named in a warning, :class:`Manifests`)."""
    return sorted(name for name, m in manifests(directory).items()
                  if (m.spec.get("generator") or m.spec.get("loader") or "").startswith(prefix))


def _resolve(ref: str, manifest: Manifest, key: str) -> Callable:
    """The function ``ref`` ('package.module:function') names; a :class:`ManifestError`
    naming the manifest and its ``key`` when there is none."""
    module, _, function = ref.partition(":")
    try:
        found = getattr(importlib.import_module(module), function, None)
    except ModuleNotFoundError as err:
        if err.name is None or not (module == err.name or module.startswith(err.name + ".")):
            raise                                    # a module it imports is missing, not the one named
        raise ManifestError(f"{manifest.path}: `{key}` = {ref!r}: there is no module {err.name!r}") from None
    if not callable(found):
        raise ManifestError(f"{manifest.path}: `{key}` = {ref!r}: module {module} has no function {function!r}")
    return found


def generator_code(manifest: Manifest) -> str:
    """sha256 (16 hex) of the sources behind the manifest's generator: every ``.py`` file of
    the package folder of the module the manifest names, and of the generator's own module
    where that differs (a ``functools.partial`` of a function elsewhere), then every module
    of those top-level packages or of ``impls`` that these import, directly or not, from
    other folders
    (:func:`code_digest.imported_files`: a kernel's ``rng`` in another package). A synthetic
    set's cache is keyed by it, so a changed generator never serves the data of the old one."""
    generator = _resolve(manifest.spec["generator"], manifest, "generator")
    modules = {manifest.spec["generator"].partition(":")[0]}
    own = getattr(getattr(generator, "func", generator), "__module__", None)
    if own:
        modules.add(own)
    files = (getattr(importlib.import_module(m), "__file__", None) for m in modules)
    folders = sorted({Path(f).resolve().parent for f in files if f})
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(folder.glob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    top_level = tuple(sorted({m.partition(".")[0] for m in modules} | {"impls"}))
    for name, path in code_digest.imported_files(sorted(modules), top_level):
        if path.resolve().parent not in folders:
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def recipe_key(manifest: Manifest, profile: str) -> tuple[dict[str, Any], str]:
    """(params, key) of a synthetic manifest at ``profile``: its generator's keyword arguments
    and the 16-hex key its caches are filed under (generator, seed, params and
    :func:`generator_code`)."""
    params = recipe_params(manifest, profile)
    recipe = {"generator": manifest.spec["generator"], "seed": manifest.spec["seed"], "params": params,
              "code": generator_code(manifest)}
    return params, hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def _generate(manifest: Manifest, params: dict[str, Any], seed: int | None = None) -> dict:
    """Call the manifest's generator with ``seed`` (default: the manifest's) and ``params``; a
    :class:`ManifestError` naming the keys it does not take, or the ones it needs, before any work."""
    generator = _resolve(manifest.spec["generator"], manifest, "generator")
    seed = manifest.spec["seed"] if seed is None else seed
    try:
        inspect.signature(generator).bind(seed=seed, **params)
    except TypeError as err:
        raise ManifestError(f"{manifest.path}: the generator {manifest.spec['generator']} does not take these "
                            f"params ({err}); see its docstring for the keys it takes") from None
    except ValueError:   # no signature to check (a builtin): the call itself will tell
        pass
    return generator(seed=seed, **params)


def _manifest(name: str, directory: Path | None = None) -> Manifest:
    """The manifest of dataset ``name``; KeyError naming the known ones for an unknown name."""
    known = manifests(directory)
    if name not in known:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(sorted(known)) or 'none'}")
    return known[name]


def draw(name: str, seed: int, profile: str | None = None, directory: Path | None = None) -> dict[str, np.ndarray]:
    """The arrays of synthetic dataset ``name`` at ``profile``'s sizes, drawn with ``seed``
    instead of its manifest's (every parameter the manifest's): another draw of the same
    recipe, neither cached nor read from the cache. KeyError for an unknown name,
    ValueError for a set that is not synthetic."""
    manifest = _manifest(name, directory)
    if not manifest.synthetic:
        raise ValueError(f"dataset {name!r} is read from files, not drawn: it has no other draws")
    params = recipe_params(manifest, resolve_profile(profile, f"for dataset {name!r}"))
    return {k: np.asarray(v) for k, v in _generate(manifest, params, int(seed)).items()}


def recipe_params(manifest: Manifest, profile: str | None = None) -> dict[str, Any]:
    """Return the generator's keyword arguments for ``profile`` (shared params + overrides)."""
    profile = resolve_profile(profile)
    params = dict(manifest.spec.get("params", {}))
    params.update(manifest.spec.get("profiles", {}).get(profile, {}))
    return params


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> str:
    """Write ``arrays`` to ``path`` (an .npz, in place of any file there) and its sha256
    beside it; return the digest. The archive goes straight to the file, not through a copy
    of it in memory (a full-size trace is gigabytes)."""
    with atomic.replacing(path) as handle:
        np.savez(handle, **arrays)
    digest = sha256_of(path)
    atomic.write_bytes(path.with_suffix(".sha256"), digest.encode())
    return digest


def _load_npz_checked(path: Path) -> tuple[dict[str, np.ndarray], str] | None:
    """Return (arrays, sha256) if the cache exists and matches its checksum, else None
    (a damaged or unreadable cache is logged as a warning, to be rebuilt)."""
    sidecar = path.with_suffix(".sha256")
    if not path.exists() or not sidecar.exists():
        if path.exists() != sidecar.exists():
            log.warning("%s: cache without its checksum file (or the reverse); rebuilding", path)
        return None
    try:
        expected = sidecar.read_text(errors="replace").strip()
        actual = sha256_of(path)
        if actual != expected:
            log.warning("%s: checksum %s does not match %s; rebuilding", path, actual[:12], expected[:12])
            return None
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}, actual
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        log.warning("%s: unreadable cache (%s); rebuilding", path, err)
        return None


# the one checked-cache mechanism, shared with other caches of parsed data (xc_format)
save_npz_checked = _save_npz
load_npz_checked = _load_npz_checked


def _external_source(manifest: Manifest) -> Path:
    """The external file of ``manifest``: its ``env`` variable's path (``~`` expanded, a
    relative one from the current directory, as the user typed it), else its ``path``
    (relative to the repository, ``datasets/cache/...`` to the data cache: ``DLSYSBENCH_CACHE``
    when set); :class:`DatasetUnavailable` saying how to provide it when there is no file
    there."""
    spec = manifest.spec
    value = os.environ.get(spec["env"]) if "env" in spec else None
    if value:
        source: Path | None = paths.typed_path(value)
    elif spec.get("path"):
        source = Path(spec["path"])
        cached = source.parts[:2] == ("datasets", "cache")   # the data cache, wherever DLSYSBENCH_CACHE puts it
        source = (source if source.is_absolute() else paths.cache_dir().joinpath(*source.parts[2:]) if cached
                  else paths.repo_root() / source)
    else:
        source = None
    if source is None or not source.is_file():
        where = (f"has no path ({spec['env']} is unset)" if source is None
                 else f"is at {source}, which is a directory" if source.is_dir() else f"is not at {source}")
        how = f"set {spec['env']}=/path/to/file" if "env" in spec else f"place the file at {source}"
        get = f"; get it from {spec['url']}" if spec.get("url") else ""
        raise DatasetUnavailable(
            f"dataset {manifest.name!r} ({spec.get('format', 'file')}) {where}{get}; {how}"
        )
    return source


def _check_cache_folder(folder: Path) -> None:
    """Make ``folder`` (a dataset's cache folder) if missing; raise :class:`OSError` saying to
    set ``DLSYSBENCH_CACHE`` when it cannot be made or written, so that a set is not
    generated only to be lost."""
    fix = "set DLSYSBENCH_CACHE to a folder this user can write"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise type(err)(err.errno, f"cannot make the dataset cache folder ({err.strerror}); {fix}",
                        str(folder)) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, f"the dataset cache folder is not writable; {fix}", str(folder))


def _warn_older_caches(cache: Path, profile: str) -> None:
    """Warn once when ``cache``'s folder holds caches of the same set and profile under other
    keys (made by other code, seeds or parameters), with their total size: nothing deletes
    them, since another checkout sharing the folder may still use them. The warning goes to
    the progress log when one is followed (``scripts/run_suite.py``: asv hides a setup's
    stderr), else to this module's logger."""
    from impls.harness import progress

    others = [p for p in cache.parent.glob(f"{profile}-*.npz") if p.name != cache.name]
    if others:
        size = sum(p.stat().st_size for p in others if p.is_file())
        message = (f"{cache.parent}: {len(others)} older {profile} cache{'' if len(others) == 1 else 's'} "
                   f"of this set ({size / 1e9:.2f} GB, made by other code or parameters) remain beside it; "
                   "delete them unless another checkout shares this folder")
        if progress.log_path():
            progress.log(f"warning: {message}")
        else:
            log.warning("%s", message)


def synthetic_cache(name: str, profile: str | None = None, directory: Path | None = None) -> Path | None:
    """The file synthetic dataset ``name`` is cached in at ``profile``'s size (which may not
    exist yet), or None for a set read from files; KeyError for an unknown name."""
    manifest = _manifest(name, directory)
    if not manifest.synthetic:
        return None
    profile = resolve_profile(profile, f"for dataset {name!r}")
    return _cache_file(name, profile, recipe_key(manifest, profile)[1])


def _cache_file(name: str, profile: str, key: str) -> Path:
    """Where synthetic set ``name`` of recipe key ``key`` is cached at ``profile``."""
    return paths.cache_dir() / name / f"{profile}-{key}.npz"


def _load_in_child(kwargs: dict[str, Any]) -> None:
    load(kwargs["name"], kwargs["profile"])


def make_missing(names, profile: str | None = None, isolate: bool = True) -> list[str]:
    """Generate the synthetic sets among ``names`` not cached at ``profile`` yet, each in a
    fresh process when ``isolate`` (so that the caller's time and peak memory pay nothing:
    the allocator keeps about 100 MiB after making quick's Amazon-670K-shaped set). Returns
    the names generated, sorted."""
    from impls.harness import fresh_process

    made = []
    for name in sorted(names):
        cache = synthetic_cache(name, profile)
        if cache is not None and not cache.exists():
            kwargs = {"name": name, "profile": resolve_profile(profile, f"for dataset {name!r}")}
            fresh_process.call(_load_in_child, kwargs) if isolate else _load_in_child(kwargs)
            made.append(name)
    return made


def _made_and_read_back(cache: Path, make: Callable[[], dict]) -> tuple[dict[str, np.ndarray], str]:
    """Write the arrays ``make()`` returns to ``cache`` and return them read back from it, with
    the file's sha256. The made arrays are dropped before the read-back, so a set is never
    held twice (at full a trace is gigabytes); reading every member back checks it against
    the CRC-32 the zip computed as it was written. Raises :class:`ChecksumMismatch` when the
    written file does not read back intact."""
    arrays = make()
    digest = _save_npz(cache, {k: np.asarray(v) for k, v in arrays.items()})
    del arrays
    found = _load_npz_checked(cache)
    if found is None or found[1] != digest:
        raise ChecksumMismatch(f"{cache}: cache written but does not read back intact")
    return found


def load(name: str, profile: str | None = None, directory: Path | None = None) -> Dataset:
    """Return dataset ``name`` at ``profile``'s size, generating or parsing it once and caching it;
    the :class:`ManifestError` of its manifest when that is broken, KeyError for an unknown name."""
    manifest = _manifest(name, directory)
    profile = resolve_profile(profile, f"for dataset {name!r}")
    if manifest.synthetic:
        params, key = recipe_key(manifest, profile)
        cache = _cache_file(name, profile, key)
        found = _load_npz_checked(cache)
        if found is None:
            _check_cache_folder(cache.parent)            # before minutes of generating
            found = _made_and_read_back(cache, lambda: _generate(manifest, params))
            _warn_older_caches(cache, profile)
        return Dataset(name, True, found[0], cache, found[1], params)

    loader_ref = manifest.spec["loader"]
    loader = _resolve(loader_ref, manifest, "loader")      # wrong names before the file is read
    beside = _resolve(manifest.spec["also_reads"], manifest, "also_reads") if "also_reads" in manifest.spec else None
    source = _external_source(manifest)
    expected = manifest.spec.get("sha256")
    source_sha = sha256_of(source)
    if expected and source_sha != expected:
        raise ChecksumMismatch(
            f"{source}: sha256 {source_sha} does not match {expected} recorded in {manifest.path}"
        )
    key = source_sha
    if beside is not None:  # a cache of the loader's other files' old contents is never used
        others = beside(source)
        others = [Path(others)] if isinstance(others, (str, os.PathLike)) else [Path(p) for p in others]
        missing = [str(p) for p in others if not p.is_file()]
        if missing:
            raise DatasetUnavailable(f"dataset {name!r}: {', '.join(missing)} (read with {source}) does not exist")
        key = hashlib.sha256("|".join([source_sha, *(sha256_of(p) for p in others)]).encode()).hexdigest()
    version = getattr(importlib.import_module(loader_ref.partition(":")[0]), "CACHE_VERSION", 0)
    key = hashlib.sha256(f"{key}|{loader_ref}|v{version}".encode()).hexdigest()
    cache = paths.cache_dir() / name / f"parsed-{key[:16]}.npz"
    found = _load_npz_checked(cache)
    if found is None:
        _check_cache_folder(cache.parent)                # before the file is parsed
        found = _made_and_read_back(cache, lambda: loader(source))
    return Dataset(name, False, found[0], cache, found[1], {"source": str(source), "source_sha256": source_sha})
