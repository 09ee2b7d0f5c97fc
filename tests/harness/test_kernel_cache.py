"""numba's cache of a kernel module is dropped when a module it calls into changes."""
from __future__ import annotations

import importlib

from impls.harness.kernel_cache import cache_dir, drop_stale


def test_cache_is_dropped_when_a_callee_changes_and_only_then(tmp_path, monkeypatch):
    from numba import config

    # numba read NUMBA_CACHE_DIR into its config when first imported (maybe by an earlier test):
    # the in-tree cache is the one this test makes, whatever the environment set
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(config, "CACHE_DIR", "")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "callee_mod.py").write_text("X = 1\n")
    caller = tmp_path / "caller_mod.py"
    caller.write_text("")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    entries = [cache / "caller_mod.f-3.py311.nbi", cache / "caller_mod.f-3.py311.nbc"]
    other = cache / "callee_mod.g-1.py311.nbi"
    for e in (*entries, other):
        e.write_bytes(b"x")
    importlib.invalidate_caches()
    assert drop_stale(str(caller), ["callee_mod"]) == 2          # no record yet: drop
    assert not any(e.exists() for e in entries) and other.exists()
    for e in entries:
        e.write_bytes(b"x")                                      # numba compiles and caches again
    assert drop_stale(str(caller), ["callee_mod"]) == 0          # nothing changed: keep
    assert all(e.exists() for e in entries)
    (tmp_path / "callee_mod.py").write_text("X = 2\n")
    assert drop_stale(str(caller), ["callee_mod"]) == 2          # the callee changed: drop
    assert not any(e.exists() for e in entries)


def _module_pair(folder):
    folder.mkdir(parents=True)
    (folder / "callee_mod2.py").write_text("X = 1\n")
    caller = folder / "caller_mod2.py"
    caller.write_text("")
    return caller


def _cached_entries(cache):
    cache.mkdir(parents=True, exist_ok=True)
    entries = [cache / "caller_mod2.f-3.py311.nbi", cache / "caller_mod2.f-3.py311.nbc"]
    for e in entries:
        e.write_bytes(b"x")
    return entries


def test_a_cache_in_numba_cache_dir_is_dropped_too(tmp_path, monkeypatch):
    """With NUMBA_CACHE_DIR (numba.config.CACHE_DIR) set, numba caches there, not in the tree."""
    from numba import config

    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    caller = _module_pair(tmp_path / "src")
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "elsewhere"))
    cache = cache_dir(str(caller))
    assert cache is not None and cache.is_relative_to(tmp_path / "elsewhere")
    importlib.invalidate_caches()
    drop_stale(str(caller), ["callee_mod2"])
    entries = _cached_entries(cache)
    (tmp_path / "src" / "callee_mod2.py").write_text("X = 2\n")
    assert drop_stale(str(caller), ["callee_mod2"]) == 2
    assert not any(e.exists() for e in entries)


def test_an_unwritable_tree_drops_numbas_user_wide_cache(tmp_path, monkeypatch):
    """Where __pycache__ cannot be made beside the source (an installed or read-only tree; here
    a file in its place), numba caches in the user-wide folder, and that is what is dropped."""
    from numba import config

    monkeypatch.setattr(config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    caller = _module_pair(tmp_path / "src")
    (tmp_path / "src" / "__pycache__").write_text("not a folder")
    cache = cache_dir(str(caller))
    assert cache is not None and cache.is_relative_to(tmp_path / "xdg")
    importlib.invalidate_caches()
    drop_stale(str(caller), ["callee_mod2"])
    entries = _cached_entries(cache)
    assert drop_stale(str(caller), ["callee_mod2"]) == 0         # nothing changed: keep
    (tmp_path / "src" / "callee_mod2.py").write_text("X = 2\n")
    assert drop_stale(str(caller), ["callee_mod2"]) == 2
    assert not any(e.exists() for e in entries)


def test_every_cached_kernel_module_names_the_modules_it_calls_into():
    """A module with cached numba functions that imports from another impls module must call
    drop_stale(__file__, [those modules]) (sorted as imported), or its cache can outlive them."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "impls"
    problems = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        if "cache=True" not in source:
            continue
        tree = ast.parse(source)
        deps = [node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.module
                and node.module.startswith("impls.") and not node.module.startswith("impls.harness")]
        calls = [node.value for node in tree.body if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                 and getattr(node.value.func, "id", None) == "drop_stale"]
        named = [ast.literal_eval(c.args[1]) for c in calls]
        if deps and named != [deps]:
            problems.append(f"{path.relative_to(root.parent)}: imports {deps}, drop_stale names {named}")
    assert not problems, "; ".join(problems)


def test_numbas_locator_override_is_followed(tmp_path, monkeypatch):
    """NUMBA_CACHE_LOCATOR_CLASSES picks numba's locators; the stale entries are looked for there."""
    from numba import config

    monkeypatch.setattr(config, "CACHE_DIR", "")
    monkeypatch.setattr(config, "CACHE_LOCATOR_CLASSES", "UserWideCacheLocator", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    caller = _module_pair(tmp_path / "src")
    cache = cache_dir(str(caller))
    assert cache is not None and cache.is_relative_to(tmp_path / "xdg")       # not the writable __pycache__
    monkeypatch.setattr(config, "CACHE_LOCATOR_CLASSES", "NoSuchLocator")
    assert cache_dir(str(caller)) is None
