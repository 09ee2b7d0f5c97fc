"""Claims whose value is read from an experiment's artifact rather than a tracked benchmark
point: the verdict is marked as judged without run-to-run noise (no thresholds cover an
artifact), and where the newest run of the experiment failed or was skipped the claim says
so with the reason its benchmarks logged."""
from __future__ import annotations

import pandas as pd

from impls.harness.report import formatting as fmt
from impls.harness.report import markdown_page, noise
from impls.harness.report.claims import ArtifactSource, BenchmarkSource, Claim, PointRef
from impls.harness.report.machine_state import MachineState
from impls.harness.report.verdicts import REPRODUCED, evaluate_claims

COMMIT = "a" * 40
POINT = "bench_toy.Ratio.track_ratio"


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
