"""A claim whose benchmark declares what its NaN means (``missing=``, a failed job) says that
meaning, as make compare does, not "was skipped": asv stores both NaNs alike."""
from __future__ import annotations

import json
import math
from pathlib import Path

from impls.harness.report import measure
from impls.harness.report.build import build_report

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = ROOT / "reports" / "claims.toml"
RATIO = "bench_salus.SrtfOverFifo.track_ratio"           # missing="a job failed under FIFO or SRTF: ..."
CUDA = "bench_salus.SrtfOverFifoCuda.track_ratio"        # its CUDA twin: the same meaning
MACHINE = "nanbox-quick"
DAY = 86_400_000   # ms


def _results(tmp_path: Path, real: float, cuda_real: float | None = None) -> Path:
    """One result file of MACHINE: the ratio's three points (``real`` at source real), and the
    CUDA twin's where ``cuda_real`` is given."""
    results = tmp_path / "results"
    (results / MACHINE).mkdir(parents=True)
    versions = json.loads((ROOT / "benchmarks" / "versions.json").read_text())
    sources = [["'real'", "'sim'", "'sim_inrun'"]]
    rows = {RATIO: [[real, 2.0, 2.0], sources, versions[RATIO], 10 * DAY, 1.0]}
    if cuda_real is not None:
        rows[CUDA] = [[cuda_real, 2.0, 2.0], sources, versions[CUDA], 10 * DAY, 1.0]
    doc = {"commit_hash": "2883b633" + "0" * 32, "env_name": "existing-py", "date": 10 * DAY,
           "params": {"machine": MACHINE}, "python": "3.11", "requirements": {}, "env_vars": {}, "durations": {},
           "version": 2, "result_columns": ["result", "params", "version", "started_at", "duration"],
           "results": rows}
    (results / MACHINE / "2883b633-existing-py.json").write_text(json.dumps(doc))
    return results


def test_a_failed_job_reads_as_its_declared_meaning_not_as_a_skip(tmp_path):
    from impls.harness.report.directions import declared_missing

    meaning = declared_missing()[RATIO]
    assert meaning.startswith("a job failed")                   # what benchmarks/bench_salus.py declares
    report = build_report(MACHINE, _results(tmp_path, math.nan), tmp_path / "artifacts", CLAIMS, figure_specs={})
    claim = next(r for r in report.claims if r.claim.id == "salus-jct-srtf-vs-fifo")
    assert claim.measured is None and claim.verdict.startswith("not measured")
    assert f"2883b633 has no value: {meaning}" in claim.detail and "2883b633 was skipped" not in claim.detail


def test_a_nan_of_a_benchmark_that_declares_no_meaning_still_reads_as_skipped():
    import pandas as pd

    from impls.harness.report.claims import PointRef

    name = "bench_salus.SwitchingLatency.time_nothing_declared"
    assert measure.nan_meaning(name) == "" and measure.skipped_words(name) == "skipped"
    points = pd.DataFrame({"benchmark": [name], "params": [{}], "status": ["skipped"], "value": [math.nan],
                           "commit": ["a" * 40]})
    found = measure.measure_point(points, PointRef(name, {}))
    assert found.detail.endswith("was skipped") and found.missing == ""
    assert measure.skipped_words(RATIO).startswith("no value: a job failed")


def test_a_cuda_run_without_a_value_says_its_meaning_beside_the_cpu_runs_verdict(tmp_path):
    from impls.harness.report.directions import declared_missing

    report = build_report(MACHINE, _results(tmp_path, 3.2, math.nan), tmp_path / "artifacts", CLAIMS,
                          figure_specs={})
    claim = next(r for r in report.claims if r.claim.id == "salus-jct-srtf-vs-fifo")
    assert claim.measured == 3.2
    assert f"the CUDA run: {CUDA}(source='real') at 2883b633 has no value: {declared_missing()[CUDA]}" in claim.detail
    assert "the CUDA run was skipped here" not in claim.detail, claim.detail
