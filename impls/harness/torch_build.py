"""Whether the installed torch was built for a GPU, read from its ``torch/version.py``
without importing torch.

Importing torch takes about two seconds; a process that only has to learn that a CPU-only
build cannot run a CUDA experiment (asv's CUDA twins, one process each) need not pay it.
"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

GPU_FIELDS = ("cuda", "hip")      # torch.version's names of the toolkits torch.cuda can run on


def _version_fields(path: Path) -> dict[str, object]:
    """The module-level constants of ``path`` (``name = <literal>`` or ``name: T = <literal>``)
    whose value is a literal; others are left out."""
    fields: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            try:
                fields[target.id] = ast.literal_eval(value)
            except (ValueError, TypeError, RecursionError, MemoryError):   # not a literal, or {[]: 1}
                continue
    return fields


def names_no_gpu(version_file: Path) -> bool:
    """True when torch version file ``version_file`` sets every one of :data:`GPU_FIELDS` to
    None: a build without CUDA or ROCm, whose ``torch.cuda`` sees no device; False when one
    names a toolkit, is missing or is no literal, or the file cannot be read or parsed."""
    try:
        fields = _version_fields(version_file)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False
    return all(name in fields and fields[name] is None for name in GPU_FIELDS)


def cpu_only_build() -> bool:
    """True when the torch that ``import torch`` would load is a CPU-only build
    (:func:`names_no_gpu` of its ``version.py``). False whenever that cannot be told without
    importing it (no torch, a namespace package, any doubt of :func:`names_no_gpu`): then
    only torch itself can answer."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.origin or Path(spec.origin).name != "__init__.py":
        return False            # no torch, or a namespace package (no __init__.py of its own)
    return names_no_gpu(Path(spec.origin).parent / "version.py")
