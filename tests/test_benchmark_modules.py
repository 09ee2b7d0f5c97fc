"""The asv benchmark modules stay thin: importing one must not pull in torch, numba or faiss.

asv imports a benchmark module afresh for every benchmark and parameter combination (a few
hundred times in the quick profile), so a heavy import at module level costs minutes; the
experiments are imported inside the ``setup_cache`` functions instead.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(p.stem for p in (ROOT / "benchmarks").glob("bench_*.py"))
HEAVY = ("torch", "numba", "faiss")


@pytest.mark.parametrize("module", MODULES)
def test_benchmark_module_imports_no_heavy_package(module):
    code = (f"import sys, benchmarks.{module}\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"benchmarks/{module}.py imports {out.stdout.strip()} at module level"
