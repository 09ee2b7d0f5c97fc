"""Verdict edges the suite's own claims meet: a bound flag of another run than its value (a
partial rerun), an interval that reaches the "no effect" baseline, a malformed sampling
interval, and a factor read as one point that is not above 0."""
from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from impls.harness.report.claims import ArtifactSource, BenchmarkSource, Claim, PointRef
from impls.harness.report.intervals import Interval
from impls.harness.report.machine_state import CapabilityState, MachineState
from impls.harness.report.measure import MALFORMED_INTERVAL, UNBOUNDED_BY_RUN, artifact_interval
from impls.harness.report.verdicts import (INCONCLUSIVE, NOT_MEASURED, NOT_REPRODUCED, PARTLY, REPRODUCED,
                                           evaluate_claim, holds_baseline, suite_claim)

HEAD = "e0085384d075c1f6cbc1632c36ae6bdec3c3ad29"
STATE = MachineState("m", None, "", {"cuda": CapabilityState("cuda", False, "needs CUDA: no CUDA device")})
SPEEDUP = "bench_slide.SlideSpeedup"
SALUS = "bench_salus.SrtfOverFifo.track_ratio"


def cpu_claim() -> Claim:
    """slide-amazon-vs-tf-cpu without its 44-thread gate: its value and bound flags are what these
    tests judge (the gate is tested with the other settings)."""
    return dataclasses.replace(suite_claim("slide-amazon-vs-tf-cpu"), applies_when=None)


def row(benchmark: str, value: float, started: float, params: dict | None = None, env: str = "existing-py") -> dict:
    """One result row of commit HEAD, as results.read_results gives it (``started``: seconds)."""
    params = {"comparison": "dense-cpu/slide"} if params is None else params
    return {"machine": "m", "commit": HEAD, "date": pd.Timestamp(0, tz="UTC"), "env_name": env,
            "benchmark": benchmark, "type": "track", "unit": "x", "params": params,
            "param_label": ", ".join(f"{k}={v}" for k, v in params.items()), "value": value, "status": "ok",
            "started_at": pd.Timestamp(started, unit="s", tz="UTC"), "version": "1", "history": 0}


def speedup(value: float, value_started: float, flags_started: float, *others: dict,
            flag_env: str = "existing-py") -> pd.DataFrame:
    """slide-amazon-vs-tf-cpu's value and its two bound flags (both 0: exact), plus ``others``."""
    return pd.DataFrame([row(f"{SPEEDUP}.track_time_to_target_ratio", value, value_started),
                         row(f"{SPEEDUP}.track_ratio_is_lower_bound", 0.0, flags_started, env=flag_env),
                         row(f"{SPEEDUP}.track_ratio_is_upper_bound", 0.0, flags_started + 1, env=flag_env),
                         *others])


# ------------------------------------------------- 1. a bound flag of another run than its value

def test_a_flag_kept_from_before_a_partial_rerun_of_the_value_is_not_taken_as_the_values():
    # make bench BENCH=track_time_to_target_ratio after a whole run: asv keeps the old flags,
    # and the benchmarks the whole run measured after this class started between the two
    later = row("bench_salus.SrtfOverFifo.track_ratio", 3.0, 1000, {"source": "real"})
    result = evaluate_claim(cpu_claim(), speedup(7.5, 90_000, 100, later), {}, STATE)
    assert result.verdict.startswith(f"{NOT_MEASURED}: cannot tell whether 7.5× is exact or a bound"), result
    assert "partial rerun" in result.verdict and not result.lower_bound


def test_a_flag_of_another_environment_is_not_taken_as_the_values():
    result = evaluate_claim(cpu_claim(), speedup(7.5, 110, 100, flag_env="other-py"),
                            {}, STATE)
    assert result.verdict.startswith(f"{NOT_MEASURED}: cannot tell"), result
    assert "environment 'other-py'" in result.verdict


def test_a_flag_of_the_values_own_run_is_used():
    # one whole run: other classes before and after this one, none between the flags and the value
    before = row("bench_salus.SrtfOverFifo.track_ratio", 3.0, 50, {"source": "real"})
    after = row("bench_slide.SlideTimeToAccuracy.track_x", 3.0, 200, {})
    throughput = row(f"{SPEEDUP}.track_throughput_ratio", 2.0, 105)   # its own class's, run between them
    result = evaluate_claim(cpu_claim(), speedup(7.5, 110, 100, before, after, throughput),
                            {}, STATE)
    assert result.verdict == REPRODUCED, result


# ------------------------------------------- 2. an interval that reaches the "no effect" value

def salus(value: float, interval) -> tuple[pd.DataFrame, dict]:
    points = pd.DataFrame([row(SALUS, value, 100, {"source": "real"})])
    artifacts = {"salus_policies": {"name": "salus_policies", "commit": HEAD,
                                    "data": {"fifo_over_srtf": {"real_draw_interval": interval}}}}
    return points, artifacts


@pytest.mark.parametrize("value, interval, verdict", [
    (1.2, [1.0, 1.5], INCONCLUSIVE),      # reaches the tie from the paper's side: partly or not reproduced
    (1.2, [0.99, 1.5], INCONCLUSIVE),
    (1.2, [1.01, 1.5], PARTLY),
    (0.9, [0.8, 1.0], NOT_REPRODUCED),    # every value in it, the tie too, is not reproduced
])
def test_an_interval_that_touches_the_baseline_from_the_papers_side_holds_it(value, interval, verdict):
    result = evaluate_claim(suite_claim("salus-jct-srtf-vs-fifo"), *salus(value, interval), STATE)
    assert result.verdict == verdict, result.detail
    if verdict == INCONCLUSIVE:
        assert "the baseline (point estimate: " in result.detail


def claim(paper: float, baseline: float | None, unit: str = "x") -> Claim:
    return Claim(id="c", system="slide", figure="f", statement="s", paper_value=paper, unit=unit, source="text",
                 approx=False, tolerance=0.1, requires=(), baseline=baseline,
                 measured=BenchmarkSource(PointRef("b.T.track_x", {})))


def test_holds_baseline_counts_the_tie_on_the_side_away_from_the_paper():
    above, below = claim(3.0, 1.0), claim(0.5, 1.0)
    assert holds_baseline(above, Interval(1.0, 1.5, "m")) and not holds_baseline(above, Interval(0.5, 1.0, "m"))
    assert holds_baseline(below, Interval(0.5, 1.0, "m")) and not holds_baseline(below, Interval(1.0, 1.5, "m"))
    assert not holds_baseline(above, Interval(1.0, 1.0, "m")) and not holds_baseline(claim(3.0, None),
                                                                                    Interval(0.0, 9.0, "m"))


# ---------------------------------------------------------- 3. a malformed sampling interval

@pytest.mark.parametrize("interval", [[3.0, 2.0], [math.nan, 3.0], [2.0], "2..3", {"low": 2.0}])
def test_a_malformed_sampling_interval_is_unbounded_not_absent(interval):
    result = evaluate_claim(suite_claim("salus-jct-srtf-vs-fifo"), *salus(2.8, interval), STATE)
    assert result.verdict == INCONCLUSIVE, result.detail       # as a wide one would be, never "reproduced"
    assert MALFORMED_INTERVAL in result.detail and "an older run's" not in result.detail
    assert result.interval is not None and result.interval.unbounded


def test_artifact_interval_tells_a_malformed_pair_from_an_absent_one():
    source = ArtifactSource("a", "data.i")
    def at(value):
        return artifact_interval({"a": {"commit": HEAD, "data": {"i": value}}}, source, HEAD)
    assert at([1.0, 2.0]) == (1.0, 2.0) and at(None) == UNBOUNDED_BY_RUN
    assert at([2.0, 1.0]).startswith(MALFORMED_INTERVAL) and at([math.inf, 1.0]).startswith(MALFORMED_INTERVAL)
    assert artifact_interval({"a": {"commit": HEAD, "data": {}}}, source, HEAD) is None
    assert artifact_interval({"a": {"commit": "f" * 40, "data": {"i": [2.0, 1.0]}}}, source, HEAD) is None


# ---------------------------------------------------- 4. a factor of one point that is below 0

def test_a_ratio_point_below_zero_is_not_measured_and_zero_is_judged():
    result = evaluate_claim(cpu_claim(), speedup(-3.0, 110, 100), {}, STATE)
    assert result.verdict.startswith(f"{NOT_MEASURED}: "), result
    assert "below 0" in result.verdict and "no factor" in result.verdict and result.ratio is None
    zero = evaluate_claim(cpu_claim(), speedup(0.0, 110, 100), {}, STATE)
    assert zero.verdict == NOT_REPRODUCED and zero.measured == 0.0, zero


def test_a_negative_value_of_a_signed_unit_is_judged():
    result = evaluate_claim(claim(-0.5, None, unit="Spearman rho"),
                            pd.DataFrame([row("b.T.track_x", -0.5, 100, {})]), {}, STATE)
    assert result.verdict == REPRODUCED, result


def test_an_upper_bound_at_the_baseline_is_no_effect_and_one_above_it_may_be_partly():
    """An upper bound at exactly the baseline (true value <= 1: a tie or a slow-down) is not
    reproduced, as the value 1 itself is; a hair above it might still be a small effect."""
    from impls.harness.report.verdicts import judge, judge_bounded

    c = claim(2.7, 1.0)
    assert judge(c, 1.0) == NOT_REPRODUCED
    assert judge_bounded(c, 1.0, upper=True)[0] == NOT_REPRODUCED
    assert judge_bounded(c, 1.0 + 1e-9, upper=True)[0] == INCONCLUSIVE


def test_an_interval_ending_on_a_closed_end_of_the_band_lies_inside_it():
    """Band 2.43-2.97 (2.7 ± 10%), both ends in it: an interval up to 2.97, or from 2.43,
    does not straddle it; one a hair past either end does."""
    assert not Interval(2.5, 2.97, "m").straddles(2.43, 2.97)
    assert not Interval(2.43, 2.5, "m").straddles(2.43, 2.97)
    assert Interval(2.5, 2.9700001, "m").straddles(2.43, 2.97)
    assert Interval(2.4299999, 2.5, "m").straddles(2.43, 2.97)
    assert Interval(2.5, 2.97, "m").straddles(2.43, 2.97, open_high=True)
