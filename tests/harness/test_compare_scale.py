"""Numbers on the absolute scale (errors, differences, overheads in percent): their noise and
changes are judged in their own unit, so a value near 0, or one that crosses 0, can be tracked."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from benchmarks.common import field, track
from impls.harness.report import compare, directions, noise
from impls.harness.report.claims import BenchmarkSource, Claim, PointRef
from impls.harness.report.history import series_steps
from impls.harness.report.machine_state import MachineState
from impls.harness.report.verdicts import evaluate_claim

OVERHEAD = "b.Overhead.track_overhead_percent"
RATE = "b.Speed.track_rate"
SCALES = {OVERHEAD: noise.ABSOLUTE}


def frame(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"benchmark": list(values), "param_label": [""] * len(values),
                         "value": list(values.values()), "status": ["ok"] * len(values),
                         "type": ["track"] * len(values), "version": ["1"] * len(values)})


def test_an_overhead_that_crosses_zero_gets_a_threshold_in_its_unit():
    runs = {"c": [frame({OVERHEAD: -0.4, RATE: 100.0}), frame({OVERHEAD: 0.6, RATE: 104.0})],
            "d": [frame({OVERHEAD: -0.4, RATE: 100.0}), frame({OVERHEAD: 0.6, RATE: 104.0})]}
    measured = noise.measure_noise("m", runs, scales=SCALES)
    overhead = measured.get(OVERHEAD, "")
    assert overhead.scale == noise.ABSOLUTE and overhead.spread == pytest.approx(1.0)
    sigma = 1.0 / math.sqrt(2)                          # in points of overhead, two pairs: 2 df
    assert (overhead.sigma, overhead.df) == (pytest.approx(sigma), 2)
    assert overhead.threshold == pytest.approx(noise.two_run_threshold(sigma, 2, noise.ABSOLUTE))
    assert math.isfinite(overhead.threshold) and not overhead.too_noisy
    one_pair = noise.measure_noise("m", {"c": runs["c"]}, scales=SCALES).get(OVERHEAD, "")
    assert one_pair.df == 1 and one_pair.too_noisy      # ~900 sigma would never judge: said as too noisy
    relative = noise.measure_noise("m", runs).get(OVERHEAD, "")
    assert relative.scale == noise.RELATIVE and relative.too_noisy  # 1.0 over a median of 0.1
    assert measured.get(RATE, "").scale == noise.RELATIVE


@pytest.mark.parametrize("old, new, direction, kind", [
    (0.5, 4.0, "lower", compare.REGRESSION),      # +3.5 points of overhead beyond a 3-point threshold
    (0.5, -2.0, "lower", "same"),                 # crossing 0 by 2.5 points: within the noise
    (4.0, 0.5, "lower", compare.IMPROVEMENT),
    (0.5, -3.0, "higher", compare.REGRESSION),
    (0.0, 2.9, "lower", "same"),                  # relative to 0 this would be infinite
])
def test_absolute_changes_are_judged_against_an_absolute_threshold(old, new, direction, kind):
    assert compare.judge_change(old, new, direction, 3.0, noise.ABSOLUTE) == kind


def _compare(old: float, new: float, threshold: noise.Threshold | None, default=None) -> compare.Change:
    found = noise.Noise("m", "t", [], {(OVERHEAD, ""): threshold} if threshold else {})
    result = compare.compare_runs(frame({OVERHEAD: old}), frame({OVERHEAD: new}), {OVERHEAD: "lower"},
                                  found, default, SCALES)
    [change] = result.changes
    return change


def test_compare_reports_an_absolute_regression_with_its_signed_change_and_unit():
    change = _compare(0.5, 4.0, noise.Threshold(OVERHEAD, "", 2, 1.0, 3.0, "1", noise.ABSOLUTE))
    assert change.kind == compare.REGRESSION
    line = change.line()
    assert "(+3.5, lower is better)" in line and "threshold 3 (absolute" in line


def test_a_threshold_measured_on_the_other_scale_is_not_used():
    stale = noise.Threshold(OVERHEAD, "", 2, 0.5, 1.5, "1")  # relative, from before the declaration
    change = _compare(0.5, 40.0, stale)
    assert change.kind == compare.NO_THRESHOLD
    assert "measured on the relative scale" in change.line() and "make noise" in change.line()


def test_a_relative_default_threshold_does_not_judge_an_absolute_number():
    change = _compare(0.5, 40.0, None, default=0.05)
    assert change.kind == compare.NO_THRESHOLD and "relative default does not apply" in change.line()


def test_the_scale_round_trips_and_a_wrong_one_is_refused(tmp_path):
    measured = noise.measure_noise("m", {"c": [frame({OVERHEAD: 1.0}), frame({OVERHEAD: 1.5})]}, scales=SCALES)
    path = noise.save_noise(measured, tmp_path / "n.json")
    assert noise.load_noise(path).get(OVERHEAD, "").scale == noise.ABSOLUTE
    document = json.loads(path.read_text())
    document["numbers"][0]["scale"] = "logarithmic"
    path.write_text(json.dumps(document))
    with pytest.raises(noise.NoiseError, match="'scale' is 'logarithmic'"):
        noise.load_noise(path)
    document["numbers"][0].pop("scale")
    path.write_text(json.dumps(document))
    assert noise.load_noise(path).get(OVERHEAD, "").scale == noise.RELATIVE  # a file of before


def test_history_steps_of_an_absolute_number_are_judged_in_its_unit():
    values = [0.1, -0.1, 0.0, 0.1, 2.0, 2.1, 1.9, 2.0]
    tight = noise.Threshold("b", "", 2, 0.2, 0.6, scale=noise.ABSOLUTE)
    [(at, _, _, kind)] = series_steps(values, "lower", tight)
    assert at == 4 and kind == "regression"
    assert series_steps(values, "lower", noise.Threshold("b", "", 2, 1.0, 3.0, scale=noise.ABSOLUTE)) == []


def overhead_interval(value: float) -> tuple[float, float]:
    """The interval of an overhead claim measured at ``value`` whose repeats spread 0.4 points."""
    claim = Claim(id="c", system="salus", figure="text", statement="s", paper_value=2.0, unit="%",
                  source="text", approx=False, tolerance=0.5, requires=(),
                  measured=BenchmarkSource(PointRef(OVERHEAD, {})))
    points = pd.DataFrame([{"benchmark": OVERHEAD, "params": {}, "param_label": "", "value": value,
                            "status": "ok", "commit": "c" * 40}])
    found = noise.Noise("m", "t", [], {(OVERHEAD, ""): noise.Threshold(OVERHEAD, "", 2, 0.4, 1.2,
                                                                       scale=noise.ABSOLUTE)})
    result = evaluate_claim(claim, points, {}, MachineState("m", None, "test", {}), found)
    return result.interval.low, result.interval.high


def test_a_claim_interval_on_the_absolute_scale_is_the_value_plus_minus_the_range():
    assert overhead_interval(1.0) == pytest.approx((0.6, 1.4))


def test_tracks_declare_their_scale_and_a_wrong_one_is_refused():
    assert getattr(field("k", unit="%", direction="lower", scale="absolute"), "scale") == "absolute"
    assert not hasattr(track(lambda *_: 1.0, unit="x", direction="higher"), "scale")
    with pytest.raises(ValueError, match="scale 'log'"):
        track(lambda *_: 1.0, unit="x", direction="higher", scale="log")


def test_the_suites_errors_differences_and_overheads_are_on_the_absolute_scale():
    declared = directions.declared_scales()
    absolute = {name for name, scale in declared.items() if scale == noise.ABSOLUTE}
    assert "bench_salus.ExecutorOverhead.track_paired_overhead_percent" in absolute
    assert "bench_salus.SchedulingPolicies.track_simulator_error" in absolute
    assert "bench_salus.SchedulingPoliciesCuda.track_simulator_error" in absolute  # the twin inherits it
    assert "bench_bandana_sim.MiniatureSimulation.track_max_error_hit_rate" in absolute
    assert not any(name.endswith(("track_lookups_per_second", "track_time_to_target_ratio")) for name in absolute)


def test_an_infinite_absolute_threshold_is_too_noisy_not_a_pass():
    """A hand-written null threshold is infinite: on either scale it never judges a change."""
    assert compare.judge_change(0.5, 1e9, "lower", math.inf, noise.ABSOLUTE) == "too noisy"
    assert noise.Threshold("b", "", 0, math.inf, math.inf, scale=noise.ABSOLUTE).too_noisy
    assert not noise.Threshold("b", "", 0, 1e6, 3e6, scale=noise.ABSOLUTE).too_noisy   # large, in its unit


def test_an_absolute_value_of_zero_still_has_its_interval():
    assert overhead_interval(0.0) == pytest.approx((-0.4, 0.4))


def test_the_report_leaves_out_thresholds_of_the_other_scale_as_compare_does():
    stale = noise.Noise("m", "t", [], {(OVERHEAD, ""): noise.Threshold(OVERHEAD, "", 2, 0.5, 1.5),
                                       (RATE, ""): noise.Threshold(RATE, "", 2, 0.02, 0.06)})
    kept, dropped = stale.on_scales(SCALES)
    assert dropped == 1 and kept.get(OVERHEAD, "") is None and kept.get(RATE, "") is not None


def test_a_claim_on_a_number_too_noisy_to_track_is_inconclusive_not_certain():
    """An infinite repeat range (a null in the noise file) bounds nothing: the verdict cannot
    rest on the point estimate alone."""
    from impls.harness.report import formatting
    from impls.harness.report.verdicts import INCONCLUSIVE

    claim = Claim(id="c", system="salus", figure="text", statement="s", paper_value=2.0, unit="%",
                  source="text", approx=False, tolerance=0.5, requires=(),
                  measured=BenchmarkSource(PointRef(OVERHEAD, {})))
    points = pd.DataFrame([{"benchmark": OVERHEAD, "params": {}, "param_label": "", "value": 2.0,
                            "status": "ok", "commit": "c" * 40}])
    for scale in (noise.ABSOLUTE, noise.RELATIVE):
        found = noise.Noise("m", "t", [], {(OVERHEAD, ""): noise.Threshold(OVERHEAD, "", 2, math.inf, math.inf,
                                                                           scale=scale)})
        result = evaluate_claim(claim, points, {}, MachineState("m", None, "test", {}), found)
        assert result.verdict == INCONCLUSIVE and "point estimate: reproduced" in result.detail
        assert formatting.measured(result) == "2 % [unbounded: too noisy here]"
    quiet = noise.Noise("m", "t", [], {(OVERHEAD, ""): noise.Threshold(OVERHEAD, "", 2, 0.4, 1.2, scale=noise.ABSOLUTE)})
    assert evaluate_claim(claim, points, {}, MachineState("m", None, "test", {}), quiet).verdict == "reproduced"


def test_a_trend_over_a_point_too_noisy_to_track_has_an_unbounded_rho():
    from impls.harness.report.claims import TrendSource
    from impls.harness.report.intervals import UNBOUNDED, trend_interval

    points = pd.DataFrame([{"benchmark": "b.K.track_x", "params": {"k": k}, "param_label": f"k={k}",
                            "value": float(k), "status": "ok", "commit": "c" * 40} for k in (1, 2, 4, 8)])
    thresholds = {("b.K.track_x", f"k={k}"): noise.Threshold("b.K.track_x", f"k={k}", 2, 0.01, 0.03)
                  for k in (1, 2, 4, 8)}
    source = TrendSource("b.K.track_x", "k", {})
    quiet = trend_interval(points, source, noise.Noise("m", "t", [], thresholds))
    assert quiet.low == quiet.high == 1.0
    thresholds["b.K.track_x", "k=2"] = noise.Threshold("b.K.track_x", "k=2", 2, math.inf, math.inf)
    found = trend_interval(points, source, noise.Noise("m", "t", [], thresholds))
    assert (found.low, found.high, found.method) == (-1.0, 1.0, UNBOUNDED)
