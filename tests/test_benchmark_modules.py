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


def test_a_fio_ratio_without_fio_is_an_asv_skip_not_a_failure():
    """In a track body asv skips only on SkipNotImplemented; a plain NotImplementedError there is
    recorded as a failed benchmark, which make compare would count against the new run."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    try:
        from asv_runner.benchmarks.mark import SkipNotImplemented

        from benchmarks import bench_bandana_replay as replay
    finally:
        sys.path.pop(0)
    for cls, key, args in ((replay.ReplayIOMechanism, "replay_over_fio", ("threads", 1)),
                           (replay.ReplayRawLoop, "raw_over_fio", (1,))):
        bench = cls.__new__(cls)
        bench.point = {key: None, "blocks_per_second": 1.0}
        with pytest.raises(SkipNotImplemented):
            bench.track_ratio({}, *args)
