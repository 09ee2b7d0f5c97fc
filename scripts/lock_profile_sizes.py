#!/usr/bin/env python
"""Keep an edit of ``impls/profiles.toml`` from silently changing what a tracked number means.

    python scripts/lock_profile_sizes.py --check   # exit 1 naming each [table.profile] unlike the lock
    python scripts/lock_profile_sizes.py --write   # record the tables as they are now

A benchmark's asv version is its pin in ``benchmarks/versions.json`` (plus the profile), not
the sizes it runs at, so a halved budget or another thread count would continue the old
history. ``benchmarks/sizes_lock.json`` holds, for every ``[table.profile]``, the first 16
hex digits of the sha256 of the parsed table (:func:`digest`: its content as canonical JSON,
so comments and layout do not count). ``--check`` names every table that was changed, added
or removed, and the benchmarks that read it (:func:`readers`; a table new to the lock has no
readers yet and needs only ``--write``); tests/test_benchmark_modules.py
runs the same check. ``--profiles`` and ``--lock`` point at other files (a test's copies).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import re
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "impls" / "profiles.toml"
LOCK = ROOT / "benchmarks" / "sizes_lock.json"
BENCH_PREFIXES = ("track_", "time_", "timeraw_", "mem_", "peakmem_")
WRITE = "python scripts/lock_profile_sizes.py --write"
ADVICE = ("If what the named benchmarks measure changed (sizes, budgets, threads), bump their pins in "
          f"benchmarks/versions.json; then run '{WRITE}'.")
NEW_ADVICE = ("No number asv has recorded was measured with a table new to the lock, so no pin in "
              f"benchmarks/versions.json needs a bump for it: run '{WRITE}' to record it.")


class LockError(ValueError):
    """A profiles file or a lock that cannot be read (the message says which, and what to do)."""


def digest(table: dict) -> str:
    """The first 16 hex digits of the sha256 of ``table`` as canonical JSON (keys sorted):
    equal for two tables of equal content, however they are written in TOML."""
    text = json.dumps(table, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def digests(profiles_path: Path = PROFILES) -> dict[str, dict[str, str]]:
    """``{table: {profile: digest}}`` of every ``[table.profile]`` in ``profiles_path``;
    :class:`LockError` for a file that is missing or not TOML."""
    try:
        with open(profiles_path, "rb") as handle:
            parsed = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise LockError(f"{profiles_path}: cannot read it as TOML ({err}); fix the file and run again") from None
    return {name: {profile: digest(values) for profile, values in by_profile.items() if isinstance(values, dict)}
            for name, by_profile in parsed.items() if isinstance(by_profile, dict)}


def read_lock(lock_path: Path = LOCK) -> dict[str, dict[str, str]]:
    """The digests recorded in ``lock_path``; :class:`LockError` saying to write it when it
    is missing or not a ``{table: {profile: digest}}`` object."""
    try:
        locked = json.loads(Path(lock_path).read_text())
    except FileNotFoundError:
        raise LockError(f"{lock_path} does not exist; run '{WRITE}'") from None
    except (OSError, ValueError) as err:
        raise LockError(f"{lock_path}: not readable JSON ({err}); run '{WRITE}'") from None
    if not (isinstance(locked, dict) and all(isinstance(v, dict) for v in locked.values())):
        raise LockError(f"{lock_path}: expected {{table: {{profile: digest}}}}; run '{WRITE}'")
    return locked


def differences(locked: dict[str, dict[str, str]], current: dict[str, dict[str, str]]) -> list[tuple[str, str]]:
    """``[("table.profile", "changed" | "added" | "removed"), ...]``, sorted by name: every
    table whose digest in ``current`` differs from ``locked``'s."""
    found = []
    for name in sorted(set(locked) | set(current)):
        old, new = locked.get(name, {}), current.get(name, {})
        for profile in sorted(set(old) | set(new)):
            kind = ("added" if profile not in old else "removed" if profile not in new
                    else "changed" if old[profile] != new[profile] else None)
            if kind:
                found.append((f"{name}.{profile}", kind))
    return found


def readers(tables: list[str]) -> dict[str, list[str]]:
    """``{table: sorted asv benchmark names}``: the benchmarks of ``benchmarks/bench_*.py`` whose
    numbers depend on each of ``tables``.

    A class whose ``setup_cache`` runs a registered experiment (``run_and_store("<name>")``,
    read as :func:`impls.harness.report.provenance.experiment_of` reads it) reads that
    experiment's ``sizes`` table (its catalog entry). A class with no such run (a timing of its
    own inputs, a ``setup_cache`` of its own) is counted a reader of every table its module
    names in quotes, as its module-level ``profiles.sizes("<table>")`` reads do. Public classes
    only, as asv discovers them."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from impls.harness import experiments
    from impls.harness.report.provenance import experiment_of

    found: dict[str, set[str]] = {table: set() for table in tables}
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        module = importlib.import_module(f"benchmarks.{path.stem}")
        source = path.read_text()
        named = [t for t in tables if re.search(rf"""["']{re.escape(t)}["']""", source)]
        for class_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or class_name.startswith("_"):
                continue
            names = [f"{path.stem}.{class_name}.{attr}" for attr in dir(cls)
                     if attr.startswith(BENCH_PREFIXES) and callable(getattr(cls, attr))]
            run = experiment_of(f"{path.stem}.{class_name}.x")
            for table in [experiments.get(run[0]).sizes] if run else named:
                if table in found:
                    found[table].update(names)
    return {table: sorted(names) for table, names in found.items()}


def check(profiles_path: Path = PROFILES, lock_path: Path = LOCK) -> str:
    """"" when every table of ``profiles_path`` has the digest ``lock_path`` records; else a
    message naming each changed, added or removed ``[table.profile]``, the benchmarks that
    read it, and what to do (:data:`ADVICE`). A table the lock has no profile of at all is
    new: no recorded number was measured with it, so its lines name no readers and its advice
    is :data:`NEW_ADVICE` (just ``--write``), not a pin bump that would cut the history of
    benchmarks that merely name it."""
    locked = read_lock(lock_path)
    diffs = differences(locked, digests(profiles_path))
    if not diffs:
        return ""
    tables = {key.rsplit(".", 1)[0] for key, _ in diffs}
    new = tables - set(locked)
    lines = [f"{profiles_path} differs from {lock_path}:"]
    known = sorted(tables - new)
    try:
        by_table = readers(known) if known else {}
    except Exception as err:      # noqa: BLE001 - a table the benchmarks cannot load: still name it
        by_table = None
        lines.append(f"  (which benchmarks read them is unknown: importing benchmarks failed: {err})")
    for key, kind in diffs:
        if key.rsplit(".", 1)[0] in new:
            lines.append(f"  [{key}] {kind}: a table new to the lock, which no recorded number was measured with")
            continue
        names = (by_table or {}).get(key.rsplit(".", 1)[0]) or []
        lines.append(f"  [{key}] {kind}" + ("" if by_table is None else "; read by:" if names
                                          else "; read by no benchmark"))
        if names:
            lines.append(textwrap.fill(", ".join(names), width=100, initial_indent=" " * 6,
                                       subsequent_indent=" " * 6, break_on_hyphens=False))
    if new:
        lines.append(NEW_ADVICE)
    if known:
        lines.append(ADVICE)
    return "\n".join(lines)


def write(profiles_path: Path = PROFILES, lock_path: Path = LOCK) -> Path:
    """Record the digests of ``profiles_path`` in ``lock_path`` (sorted JSON); returns the path."""
    text = json.dumps(digests(profiles_path), indent=2, sort_keys=True) + "\n"
    Path(lock_path).write_text(text)
    return Path(lock_path)


def main(argv: list[str] | None = None) -> int:
    """0 when the lock matches (``--check``) or was written (``--write``); 1 when it does
    not match; 2 for a file that cannot be read (one line on stderr)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 when a table differs from the lock")
    mode.add_argument("--write", action="store_true", help="record the tables as they are now")
    parser.add_argument("--profiles", type=Path, default=PROFILES, help="the profiles file (default: %(default)s)")
    parser.add_argument("--lock", type=Path, default=LOCK, help="the lock file (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        if args.write:
            print(f"wrote {write(args.profiles, args.lock)}")
            return 0
        message = check(args.profiles, args.lock)
    except LockError as err:
        print(f"lock_profile_sizes: {err}", file=sys.stderr)
        return 2
    if message:
        print(message, file=sys.stderr)
        return 1
    print(f"{args.lock}: every table of {args.profiles} as recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
