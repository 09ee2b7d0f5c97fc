"""Stored asv results for the regression-tracking tests, written in asv 0.6's result format
(version 2) under the real benchmark names, so the scripts judge them with the suite's own
declarations; and the two scripts run as a user runs them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from impls.harness.report import compare, runs

ROOT = Path(__file__).resolve().parents[2]
MACHINE = "box-smoke"
RATE = "bench_bandana_sim.SimulatorSpeed.track_lookups_per_second"  # higher is better
LATENCY = "bench_bandana_device.FioRandomRead.track_p99_latency"  # lower is better
FLAG = "bench_slide.SlideSpeedup.track_ratio_is_lower_bound"  # a flag
STEADY = "bench_slide.SlideTraining.track_samples_per_second"  # higher, moves within its noise
PARAMS = {RATE: [["'lru'"]], LATENCY: [["4096"], ["1"]], FLAG: [["'slide-vs-dense'"]],
          STEADY: [["2"], ["True"]]}
NAMES = {RATE: ["policy"], LATENCY: ["block_bytes", "queue_depth"], FLAG: ["comparison"],
         STEADY: ["threads", "padding"]}
BASE, HEAD, OTHER = "a" * 40, "b" * 40, "c" * 40
COLUMNS = ["result", "params", "version", "started_at", "duration"]


def write_benchmarks_json(results: Path) -> None:
    results.mkdir(parents=True, exist_ok=True)
    entries = {name: {"name": name, "param_names": NAMES[name], "params": PARAMS[name],
                      "type": "track", "unit": "x", "version": "1"} for name in PARAMS}
    (results / "benchmarks.json").write_text(json.dumps({**entries, "version": 2}))


def write_run(folder: Path, commit: str, started_s: int, values: dict[str, float | None],
              name: str | None = None, versions: dict[str, str] | None = None, machine: str = MACHINE,
              env: str = "existing-py", date_s: int = 1_700_000_000) -> Path:
    """Write one asv result file of ``commit`` (dated ``date_s``) whose benchmarks started at
    ``started_s`` (a value None: the benchmark failed; NaN: skipped; ``versions``: a
    benchmark's version, "1" by default)."""
    folder.mkdir(parents=True, exist_ok=True)
    document = {
        "commit_hash": commit, "env_name": env, "date": date_s * 1000,
        "params": {"machine": machine}, "python": "3.11", "requirements": {}, "env_vars": {},
        "result_columns": COLUMNS, "durations": {}, "version": 2,
        "results": {bench: [[value], PARAMS[bench], (versions or {}).get(bench, "1"), started_s * 1000, 1.0]
                    for bench, value in values.items()},
    }
    path = folder / (name or f"{commit[:8]}-{env}.json")
    path.write_text(json.dumps(document))
    return path


def base_values(rate=1000.0, latency=100.0, flag=0.0, steady=500.0):
    return {RATE: rate, LATENCY: latency, FLAG: flag, STEADY: steady}


@pytest.fixture()
def results(tmp_path) -> Path:
    """Two runs of BASE (the first archived, the second asv's live file), spread 2-3%."""
    results = tmp_path / ".asv" / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, BASE, 100, base_values())
    runs.archive_run(results, MACHINE, BASE)
    write_run(results / MACHINE, BASE, 200, base_values(rate=1020.0, latency=102.0, steady=515.0))
    runs.archive_run(results, MACHINE, BASE)
    return results


def add_earlier_runs(results: Path) -> Path:
    """:func:`results`' two runs of BASE and six more at the same spread, started before them
    (its two newest runs stay the newest): 7 degrees of freedom, where two runs' one leaves
    every number too noisy to judge. Returns ``results``."""
    for i in range(6):
        write_run(results / MACHINE, BASE, 10 + 10 * i,
                  base_values() if i % 2 else base_values(rate=1020.0, latency=102.0, steady=515.0))
        runs.archive_run(results, MACHINE, BASE)
    write_run(results / MACHINE, BASE, 200, base_values(rate=1020.0, latency=102.0, steady=515.0))  # asv's live file
    return results


def script(name: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / name), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def measure(results: Path) -> Path:
    out = results.parent / "noise.json"
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def run_compare(results: Path, noise_file: Path, *args: str) -> subprocess.CompletedProcess:
    return script("compare.py", "--results", str(results), "--machine", MACHINE,
                  "--noise", str(noise_file), *args)


def kinds(output: str) -> list[tuple[str, str]]:
    return [tuple(line.split()[:2]) for line in output.splitlines()
            if line.split() and line.split()[0] in (compare.REGRESSION, compare.IMPROVEMENT,
                                                      compare.FLIPPED)]
