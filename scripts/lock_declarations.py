#!/usr/bin/env python
"""Keep a benchmark's direction, unit or code from changing under its pinned history unnoticed.

    python scripts/lock_declarations.py --check   # exit 1 naming each benchmark unlike the lock
    python scripts/lock_declarations.py --write   # record the benchmarks as they are now

A benchmark's asv version is its pin in ``benchmarks/versions.json``, not its code, so an edit
of what a track computes (another key of its row, another divisor under the same unit) would
continue the old history; and ``make compare`` reads which way is better from the code, so a
track turned from ``higher`` to ``context`` would stop being judged without a word.
``benchmarks/declarations_lock.json`` holds, for every benchmark method of ``benchmarks/``
(:func:`entries`), its direction, unit, scale and bound flags as declared, and the first 16 hex
digits of the sha256 of its code as asv records it (``pretty_source``, else the source of the
function it reads: a ``track``'s ``read``) and of its class's ``setup`` (a ``row``'s pick).
Neither covers the functions they call, ``setup_cache`` or the experiment behind it: a change
there that changes what a number means still needs its pin bumped by hand. ``--check`` names
every benchmark that was changed, added or removed; tests/test_benchmark_declarations.py runs
the same check. ``--lock`` points at another file (a test's copy).
"""
from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "benchmarks" / "declarations_lock.json"
BENCH_PREFIXES = ("track_", "time_", "timeraw_", "mem_", "peakmem_")
WRITE = "python scripts/lock_declarations.py --write"
ADVICE = ("If a changed benchmark's numbers now mean something else (its code or its setup computes or "
          "picks another quantity or unit), bump its pin in benchmarks/versions.json; a changed direction, unit "
          f"or bound flag is read by make compare from now on. Then run '{WRITE}'.")


def _code(method) -> str:
    """The code asv records for ``method``: its ``pretty_source``, else the source of the
    function it unwraps to, dedented, each line's trailing space dropped."""
    text = getattr(method, "pretty_source", None) or inspect.getsource(method)
    return "\n".join(line.rstrip() for line in textwrap.dedent(text).strip().splitlines())


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def entries(package: str = "benchmarks") -> dict[str, dict[str, object]]:
    """``{asv benchmark name: {"direction", "unit", "scale", "bounded_by", "code", "setup"}}``
    for every benchmark method (``track_``, ``time_``, ``mem_``, ``peakmem_``, ``timeraw_``) of
    the public classes of ``package`` (a subclass's inherited ones included); absent
    declarations are None (``scale``: "relative"); ``code`` and ``setup`` (None without one)
    are 16 hex digits of the sha256 of the method's and the class's ``setup``'s code."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from impls.harness.report import directions

    found = {}
    for module_name, cls in directions._benchmark_classes(package):
        for name in dir(cls):
            method = getattr(cls, name)
            if not name.startswith(BENCH_PREFIXES) or not callable(method):
                continue
            bounds = getattr(method, "bounded_by", None)
            setup = getattr(cls, "setup", None)
            found[f"{module_name}.{cls.__name__}.{name}"] = {
                "direction": getattr(method, "direction", None), "unit": getattr(method, "unit", None),
                "scale": getattr(method, "scale", "relative"),
                "bounded_by": list(bounds) if bounds is not None else None,
                "code": _digest(_code(method)), "setup": _digest(_code(setup)) if callable(setup) else None}
    return dict(sorted(found.items()))


def read_lock(lock: Path = LOCK) -> dict[str, dict[str, object]]:
    """The lock's entries; ValueError naming the file where it is not a JSON object."""
    try:
        locked = json.loads(Path(lock).read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{lock}: not JSON ({err}); rewrite it with '{WRITE}'") from None
    if not isinstance(locked, dict):
        raise ValueError(f"{lock}: expected a JSON object of benchmarks; rewrite it with '{WRITE}'")
    return locked


def write(lock: Path = LOCK, package: str = "benchmarks") -> int:
    """Write every benchmark's entry to ``lock``; return how many."""
    found = entries(package)
    lines = [f"{json.dumps(name)}: {json.dumps(entry, ensure_ascii=False)}" for name, entry in found.items()]
    Path(lock).write_text("{\n" + ",\n".join(lines) + "\n}\n")     # one benchmark a line: a diff names it
    return len(found)


def check(lock: Path = LOCK, package: str = "benchmarks") -> str:
    """``""`` where every benchmark is as ``lock`` records it; else one line for each that
    changed (naming what: its direction's old and new value, ..., or "code", "setup"), was
    added or was removed, and the advice."""
    if not Path(lock).exists():
        return f"{lock} does not exist: run '{WRITE}'"
    locked, now = read_lock(lock), entries(package)
    lines = []
    for name in sorted(set(locked) | set(now)):
        old, new = locked.get(name), now.get(name)
        if old is None:
            lines.append(f"{name}: new, not in the lock")
        elif new is None:
            lines.append(f"{name}: in the lock, no longer a benchmark")
        elif old != new:
            what = [k if k in ("code", "setup") else f"{k} {old.get(k)!r} -> {new.get(k)!r}"
                    for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
            lines.append(f"{name}: changed ({', '.join(what)})")
    return "" if not lines else "\n".join(["benchmarks unlike benchmarks/declarations_lock.json:", *lines, ADVICE])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 naming each benchmark unlike the lock")
    mode.add_argument("--write", action="store_true", help="record every benchmark as it is now")
    parser.add_argument("--lock", type=Path, default=LOCK, help="the lock file (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.write:
        print(f"{write(args.lock)} benchmarks recorded in {args.lock}")
        return 0
    message = check(args.lock)
    print(message or f"every benchmark is as {args.lock} records it")
    return 1 if message else 0


if __name__ == "__main__":
    sys.exit(main())
