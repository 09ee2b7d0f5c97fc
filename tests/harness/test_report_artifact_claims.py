"""Claims whose value is read from an experiment's artifact rather than a tracked benchmark
point: the verdict is marked as judged without run-to-run noise (no thresholds cover an
artifact), and where the newest run of the experiment failed or was skipped the claim says
so with the reason its benchmarks logged."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from impls.harness.report import build, markdown_page, noise
from impls.harness.report import formatting as fmt
from impls.harness.report.build import build_report
from impls.harness.report.claims import ArtifactSource, BenchmarkSource, Claim, PointRef
from impls.harness.report.machine_state import MachineState
from impls.harness.report.verdicts import NOT_MEASURED, PARTLY, REPRODUCED, evaluate_claims

COMMIT = "a" * 40
POINT = "bench_toy.Ratio.track_ratio"
RESULTS = Path(__file__).resolve().parents[1] / "fixtures" / "report" / "asv_results"   # toybox at OLD, NEW
OLD, NEW = "02192a18b969f50b9d1123329e1aaf05f95e66d1", "854149dbb27c7199affb4e772fa341f30f2630b7"
# real benchmark classes, and the artifact their experiment writes on a CUDA device: the report
# tells which benchmarks read an artifact from the benchmark code (provenance.artifact_of)
HYPERPARAM, HYPERPARAM_BENCH = "salus_hyperparam_cuda", "bench_salus_lanes.HyperparamExplorationCuda"
SWITCHING, SWITCHING_BENCH = "salus_switching_cuda", "bench_salus.SwitchingLatencyCuda"
OOM = "RuntimeError: CUDA out of memory (in experiment salus.hyperparam)"


def _claim(measured) -> Claim:
    return Claim(id="c", system="salus", figure="text", statement="s", paper_value=2.38, unit="x", source="text",
                 approx=False, tolerance=0.15, requires=(), baseline=1.0, measured=measured)


def _points() -> pd.DataFrame:
    return pd.DataFrame([{"benchmark": POINT, "params": {}, "param_label": "", "value": 2.05, "commit": COMMIT,
                          "status": "ok", "type": "track", "version": "1"}])


def _thresholds() -> noise.Noise:
    """Thresholds for every benchmark point there is: a benchmark value gets its interval."""
    return noise.Noise("toybox", "2026-12-03T00:00:00+00:00", [],
                       {(POINT, ""): noise.Threshold(POINT, "", 5, 0.02, 0.05, "1", sigma=0.01, df=4)})


def test_an_artifact_value_is_marked_as_judged_without_noise_even_beside_thresholds():
    """2.05 against a band edge of 2.023 reads "reproduced" from the point estimate alone: the
    artifact has no run-to-run interval, so the verdict carries the mark a benchmark value
    without thresholds carries, with a thresholds file or without one."""
    artifacts = {"toy_run": {"name": "toy_run", "commit": COMMIT, "data": {"ratio": 2.05}}}
    state = MachineState("toybox", None, "test", {})
    for thresholds in (_thresholds(), None):
        [from_artifact, from_point] = evaluate_claims(
            [_claim(ArtifactSource("toy_run", "data.ratio")), _claim(BenchmarkSource(PointRef(POINT, {})))],
            _points(), artifacts, state, thresholds)
        assert from_artifact.verdict == REPRODUCED and from_artifact.interval is None
        assert from_artifact.no_noise and fmt.judged_without_noise(from_artifact), thresholds
        assert fmt.NO_NOISE_MARK in markdown_page._claims_table([from_artifact])
        assert from_point.no_noise is (thresholds is None)    # the benchmark value: marked only without them


# ------------------------------------------------- the newest run failed, or left no artifact

CLAIMS = """
[[claim]]
id = "from-artifact"
system = "salus"
figure = "abstract"
statement = "s"
paper_value = 2.38
unit = "x"
source = "abstract"
approx = false
tolerance = 0.15
baseline = 1.0
requires = []
measured = {{ artifact = "{artifact}", path = "data.ratio" }}
"""


@pytest.fixture
def no_noise(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "default_noise_path", lambda machine: tmp_path / "noise" / f"{machine}.json")


def _artifact(root: Path, name: str, commit: str, ratio: float) -> None:
    path = root / "toybox" / commit / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema": 1, "name": name, "experiment": "toy", "synthetic": True,
                                "profile": "smoke", "created": "2024-01-01T00:00:00+00:00", "machine": "toybox",
                                "commit": commit, "data": {"ratio": ratio}}))


def _log(root: Path, commit: str, benchmark: str, outcome: str, reason: str, at: float = 1_706_788_900.0) -> None:
    path = root / "toybox" / commit / "skips.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"benchmark": benchmark, "params": "workload='w'", "outcome": outcome,
                                 "reason": reason, "at": at}) + "\n")


def _judged(tmp_path: Path, artifact: str):
    claims = tmp_path / "claims.toml"
    claims.write_text(CLAIMS.format(artifact=artifact))
    report = build_report("toybox", RESULTS, tmp_path / "artifacts", claims, {})
    [result] = report.claims
    return result, report.notes


def test_an_older_artifact_is_not_judged_where_the_newest_run_of_its_experiment_failed(tmp_path, no_noise):
    root = tmp_path / "artifacts"
    _artifact(root, HYPERPARAM, OLD, 2.0)
    _log(root, NEW, SWITCHING_BENCH, "failed", "RuntimeError: another experiment's failure")
    kept, _ = _judged(tmp_path, HYPERPARAM)           # only another experiment's line: the older value stands
    assert kept.verdict == PARTLY and kept.measured == 2.0
    assert f"from the run at {OLD[:8]}, older than the newest results ({NEW[:8]})" in kept.detail
    _log(root, NEW, HYPERPARAM_BENCH, "failed", OOM)
    result, notes = _judged(tmp_path, HYPERPARAM)
    assert result.verdict == f"{NOT_MEASURED}: failed at {NEW[:8]}: {OOM}", result.verdict
    assert result.measured is None and result.ratio is None and result.interval is None
    assert result.commit == NEW and not fmt.judged_without_noise(result)
    assert f"{HYPERPARAM_BENCH} failed at {NEW[:8]}" in result.detail
    assert f"the older run at {OLD[:8]} measured 2×" in result.detail     # the older value: in the detail only
    assert not any("from-artifact" in note for note in notes)             # no longer read from the older run


def test_an_older_artifact_is_not_judged_where_the_newest_run_skipped_its_experiment(tmp_path, no_noise):
    root = tmp_path / "artifacts"
    _artifact(root, HYPERPARAM, OLD, 2.0)
    _log(root, NEW, HYPERPARAM_BENCH, "no value", "a job failed")   # a NaN: the experiment ran, no reason
    _log(root, NEW, HYPERPARAM_BENCH, "skipped", "needs 2 GiB free on cuda:0: 0.5 GiB free")
    result, _ = _judged(tmp_path, HYPERPARAM)
    assert result.verdict == f"{NOT_MEASURED}: skipped at {NEW[:8]}: needs 2 GiB free on cuda:0: 0.5 GiB free"


def test_a_missing_artifact_gives_the_reason_its_experiments_benchmarks_logged(tmp_path, no_noise):
    root = tmp_path / "artifacts"
    _artifact(root, HYPERPARAM, NEW, 2.0)     # another experiment's artifact: the machine has some
    bare, _ = _judged(tmp_path, SWITCHING)
    assert bare.verdict == f"{NOT_MEASURED}: no artifact {SWITCHING!r}"    # nothing logged: as before
    _log(root, OLD, SWITCHING_BENCH, "skipped", "needs 2 GiB free on cuda:0: 0.5 GiB free", at=1_706_700_000.0)
    _log(root, NEW, SWITCHING_BENCH, "failed", "RuntimeError: CUDA error: out of memory")
    result, _ = _judged(tmp_path, SWITCHING)   # the newest log's line, and a failure before a skip
    assert result.verdict == f"{NOT_MEASURED}: failed at {NEW[:8]}: RuntimeError: CUDA error: out of memory"
    assert f"no artifact {SWITCHING!r}; {SWITCHING_BENCH} failed at {NEW[:8]}" == result.detail


def test_an_artifact_path_picks_an_item_by_a_value_with_a_decimal_point():
    """A sweep over cache fractions is picked by its fraction: the point is part of the
    value, not a step of the path; a key=value whose next part is an index still reads."""
    from impls.harness.report.record_path import walk

    record = {"data": {"points": [{"cache_fraction": 0.05, "hit_rate": 0.3}, {"cache_fraction": 0.4, "hit_rate": 0.6},
                                  {"cache_fraction": 4, "hit_rate": 0.9, "curve": [7, 8]}],
                       "runs": [{"name": "slide", "threads": 2}]}}
    assert walk(record, "data.points.cache_fraction=0.4.hit_rate") == 0.6
    assert walk(record, "data.points.cache_fraction=0.05.hit_rate") == 0.3
    assert walk(record, "data.points.cache_fraction=4.curve.1") == 8
    assert walk(record, "data.runs.name=slide.threads") == 2
    record["data"]["runs"] += [{"name": "torch-2.1.0", "lr": 2.5e-05, "threads": 4}]
    assert walk(record, "data.runs.name=torch-2.1.0.threads") == 4
    assert walk(record, "data.runs.lr=2.5e-05.threads") == 4
    with pytest.raises(KeyError, match=r"'cache_fraction=0\.7\.hit_rate'"):      # the path as written
        walk(record, "data.points.cache_fraction=0.7.hit_rate")
