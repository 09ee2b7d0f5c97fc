"""A CPU-only torch is told from its version file, without importing torch (two seconds in
each process that asks for CUDA); anything in doubt is left to torch itself."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from impls.harness import capabilities, torch_build

ROOT = Path(__file__).resolve().parents[2]


def _version_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "version.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


CPU = """\
    from typing import Optional
    __version__ = '2.13.0+cpu'
    cuda: Optional[str] = None
    hip: Optional[str] = None
    rocm: Optional[str] = None
"""


@pytest.mark.parametrize("body, cpu_only", [
    (CPU, True),
    ("cuda = None\nhip = None\n", True),                          # plain assignments
    (CPU.replace("cuda: Optional[str] = None", "cuda: Optional[str] = '12.4'"), False),
    (CPU.replace("hip: Optional[str] = None", "hip: Optional[str] = '6.2.41133'"), False),   # ROCm
    ("cuda = None\n", False),                                     # hip not said: not known
    ("cuda = None\nhip = _probe()\n", False),                     # not a literal
    ("cuda = None\nhip = None\nif True:\n", False),               # does not parse
    ("cuda = None\nhip = {[]: 1}\n", False),                     # a literal that cannot be built
], ids=["cpu wheel", "plain", "cuda", "rocm", "hip missing", "not literal", "syntax error", "unhashable"])
def test_only_a_file_naming_no_gpu_toolkit_is_a_cpu_only_build(tmp_path, body, cpu_only):
    assert torch_build.names_no_gpu(_version_file(tmp_path, body)) is cpu_only


def test_a_missing_or_unreadable_file_is_no_answer(tmp_path):
    assert torch_build.names_no_gpu(tmp_path / "version.py") is False
    (tmp_path / "bad.py").write_bytes(b"cuda = '\xff'\n")
    assert torch_build.names_no_gpu(tmp_path / "bad.py") is False


def test_only_a_regular_package_named_torch_is_read(tmp_path, monkeypatch):
    import importlib.machinery

    package = tmp_path / "torch"
    package.mkdir()
    _version_file(package, "cuda = None\nhip = None\n")
    namespace = importlib.machinery.ModuleSpec("torch", None, is_package=True)   # no __init__.py
    namespace.submodule_search_locations = [str(package)]
    monkeypatch.setattr(torch_build.importlib.util, "find_spec", lambda name: namespace)
    assert torch_build.cpu_only_build() is False
    (package / "__init__.py").write_text("")
    regular = importlib.machinery.ModuleSpec("torch", None, origin=str(package / "__init__.py"), is_package=True)
    monkeypatch.setattr(torch_build.importlib.util, "find_spec", lambda name: regular)
    assert torch_build.cpu_only_build() is True
    monkeypatch.setattr(torch_build.importlib.util, "find_spec", lambda name: None)      # no torch
    assert torch_build.cpu_only_build() is False


def test_the_cuda_check_of_a_cpu_only_torch_does_not_import_torch():
    if not torch_build.cpu_only_build():
        pytest.skip("the installed torch is not a CPU-only build: the check asks torch itself")
    code = ("import sys; from impls.harness import capabilities; c = capabilities.check_cuda(); "
            "print(c.available, 'torch' in sys.modules); print(c.reason)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first, reason = done.stdout.splitlines()
    assert first == "False False"
    import torch                                  # torch's own answer is the same
    assert torch.version.cuda is None and not torch.cuda.is_available()
    expected = capabilities.CPU_ONLY_TORCH if capabilities.nvidia_gpu_seen() else capabilities.NO_NVIDIA_GPU
    assert reason == expected
