"""Whether the installed torch was built for a GPU, read from its ``torch/version.py``
without importing torch.

Importing torch takes about two seconds; a process that only has to learn that a CPU-only
build cannot run a CUDA experiment (asv's CUDA twins, one process each) need not pay it.
"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

GPU_FIELDS = ("cuda", "hip")      # torch.version's names of the GPU toolkits a build targets


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
            except ValueError:
                continue
    return fields


def names_no_gpu(version_file: Path) -> bool:
    """True when torch version file ``version_file`` sets every one of :data:`GPU_FIELDS` to
    None (a CPU-only build); False when one names a toolkit, is missing or is no literal, or
    the file cannot be read or parsed."""
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
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return len(locations) == 1 and names_no_gpu(Path(locations[0]) / "version.py")
