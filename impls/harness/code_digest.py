"""The source files a module's results depend on, found by reading its imports.

A cache of what a module computes (a synthetic dataset) must be keyed by the code that
computed it. Hashing only the module's folder misses a module it imports from elsewhere (a
generator's kernels calling ``impls.slide.core.rng``); :func:`imported_files` follows the
``import`` statements of the source, statically and transitively, within the packages
named, so that an edit anywhere along that chain changes the key. The harness's own
packages (progress, command lines, paths) never change what a generator returns and are
not followed.
"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

NOT_FOLLOWED = ("impls.harness",)


def _origin(name: str) -> tuple[Path, bool] | None:
    """(source file, is a package) of module ``name``; None when it is not a plain source
    module that can be found without running it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin), spec.submodule_search_locations is not None


def _named_imports(tree: ast.AST, package: str) -> list[str]:
    """Dotted names an import statement of ``tree`` may load, relative ones resolved against
    ``package``; for ``from a import b`` both ``a.b`` (if a module) and ``a``."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"] + [base]
    return names


def imported_files(modules: list[str], within: tuple[str, ...]) -> list[tuple[str, Path]]:
    """(dotted name, source file) of ``modules`` and of every module they import, directly
    or through each other, whose name lies in one of the packages ``within`` (top-level
    names such as ``"impls"``) and not in :data:`NOT_FOLLOWED`; sorted by name, each once.
    ``from a import b`` follows ``a`` (its ``__init__``, which the import runs) and ``a.b``
    where that is a module."""
    def inside(name: str) -> bool:
        return (any(name == p or name.startswith(p + ".") for p in within)
                and not any(name == p or name.startswith(p + ".") for p in NOT_FOLLOWED))

    seen: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen or not inside(name):
            continue
        found = _origin(name)
        if found is None:
            continue
        path, is_package = found
        seen[name] = path
        try:
            tree = ast.parse(path.read_bytes())
        except (OSError, SyntaxError, ValueError):
            continue
        package = name if is_package else name.rpartition(".")[0]
        todo += _named_imports(tree, package)
    return sorted(seen.items())

