"""Benchmark numbers that have no value come back as NaN with a declared ``missing=`` reason (or an
asv skip with its reason), never as None (asv: a failure), 0.0 or inf (a number compare judges).

Each test calls the asv class's track as asv does (through ``explain_skips``' wrapper) on the data
its experiment returns in that case, and reads the skip log the wrapper writes: ``make compare``
judges a logged NaN ("no value") of a ``worst_missing`` number a regression, a logged skip not.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from asv_runner.benchmarks.mark import SkipNotImplemented

from impls.harness import paths, skip_log


def _logged() -> list[skip_log.Entry]:
    return [e for entries in skip_log.read(paths.suite_machine()).values() for e in entries]


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


# ------------------------------------------------------------ 1. Salus simulator error

def _salus_simulator_error_tracks():
    from benchmarks import bench_salus as b

    return [(b.SchedulingPolicies, ("fifo",)), (b.SchedulingPoliciesCuda, ("fifo",)),
            (b.RepeatedRun, ()), (b.RepeatedRunCuda, ())]


@pytest.mark.parametrize("real, sim_error", [
    ({"avg_jct_s": 12.0, "failed": [3]}, 0.25),     # a job failed: averages over different jobs
    ({"avg_jct_s": None, "failed": [0, 1]}, None),  # every job failed: _rel_err gives None
    ({"avg_jct_s": None, "failed": []}, None),      # no real average at all
], ids=["a-job-failed", "all-failed", "no-real-average"])
def test_simulator_error_is_a_declared_nan_when_the_real_run_lost_jobs(real, sim_error):
    for cls, params in _salus_simulator_error_tracks():
        bench = cls.__new__(cls)
        bench.row = {"real": real, "sim": {"avg_jct_s": 10.0, "failed": []}, "sim_error": sim_error}
        value = bench.track_simulator_error({}, *params)
        assert _is_nan(value), (cls.__name__, value)
        method = getattr(cls, "track_simulator_error")
        assert "failed" in method.missing and not getattr(method, "missing_is_worst", False)
        assert (method.direction, method.scale) == ("lower", "absolute")
    entries = _logged()
    assert entries and all(e.outcome == skip_log.NO_VALUE and "failed in the real run" in e.reason
                           for e in entries)


def test_simulator_error_is_the_relative_error_when_every_job_finished():
    for cls, params in _salus_simulator_error_tracks():
        bench = cls.__new__(cls)
        bench.row = {"real": {"avg_jct_s": 10.0, "failed": []}, "sim_error": 0.125}
        assert bench.track_simulator_error({}, *params) == 0.125


# ------------------------------------------------------------ 2. Bandana replay headline

def test_useful_bytes_ratio_without_a_denominator_is_a_declared_nan():
    from benchmarks.bench_bandana_replay import ReplayHeadline
    from impls.bandana.experiments import replay

    points = [{"layout": "shp", "policy": "shadow", "useful_bytes_per_second": 5e6, "effective_bandwidth": 0.5},
              {"layout": "identity", "policy": "lru", "useful_bytes_per_second": 0.0, "effective_bandwidth": 0.0}]
    out = {"sweep": [], "mechanisms": [], "comparison": {"points": points}, "cross_check": []}
    settings = {"queue_depths": [], "comparison": [["shp", "shadow"], ["identity", "lru"]]}
    zero = replay._headline(out, settings)
    absent = replay._headline({**out, "comparison": {"points": points[:1]}}, settings)
    assert zero["useful_bytes_ratio"] is None and absent["useful_bytes_ratio"] is None
    bench = ReplayHeadline.__new__(ReplayHeadline)
    for headline in (zero, absent):
        assert _is_nan(bench.track_useful_bytes_ratio({"headline": headline}))
    assert ReplayHeadline.track_useful_bytes_ratio.missing
    assert not getattr(ReplayHeadline.track_useful_bytes_ratio, "missing_is_worst", False)
    assert [e.outcome for e in _logged()] == [skip_log.NO_VALUE] * 2
    measured = replay._headline({**out, "comparison": {"points": [
        points[0], {**points[1], "useful_bytes_per_second": 2e6}]}}, settings)
    assert bench.track_useful_bytes_ratio({"headline": measured}) == pytest.approx(2.5)


# ------------------------------------------------------------ 3. Bandana miniature simulation

VB, BB = 128, 2048


@pytest.fixture(scope="module")
def uniform_workload():
    rng = np.random.default_rng(0)
    return rng.integers(0, 8192, 20_000).astype(np.int64), np.arange(8192, dtype=np.int64)


def _miniature_tracks(out: dict) -> dict[str, float]:
    from benchmarks.bench_bandana_sim import MiniatureSimulation

    bench = MiniatureSimulation.__new__(MiniatureSimulation)
    data = {"miniature": out}
    return {name: getattr(bench, name)(data) for name in
            ("track_speedup", "track_max_error_effective_bandwidth", "track_max_error_hit_rate")}


def test_miniature_without_a_valid_grid_point_has_no_speedup_and_no_errors(uniform_workload):
    from benchmarks.bench_bandana_sim import MiniatureSimulation
    from impls.bandana.sim.miniature import compare_with_full

    trace, layout = uniform_workload
    out = compare_with_full(trace, layout, [1024], [512], "shadow", 0.25, 0, VB, BB)   # shadow < cache
    assert out["points"] == [] and len(out["skipped"]) == 1
    assert _is_nan(out["speedup"]) and _is_nan(out["max_abs_error_hit_rate"])
    assert _is_nan(out["max_abs_error_effective_bandwidth"])
    tracks = _miniature_tracks(out)
    assert all(_is_nan(v) for v in tracks.values()), tracks
    for name in tracks:
        assert "no valid" in getattr(MiniatureSimulation, name).missing
    assert [e.outcome for e in _logged()] == [skip_log.NO_VALUE] * 3


def test_miniature_timed_at_zero_seconds_has_no_speedup(uniform_workload, monkeypatch):
    from impls.bandana.sim import miniature

    trace, layout = uniform_workload
    monkeypatch.setattr(miniature.time, "perf_counter", lambda: 0.0)   # a clock that never moves
    out = miniature.compare_with_full(trace, layout, [1024], [2048], "shadow", 0.25, 0, VB, BB)
    assert len(out["points"]) == 1 and _is_nan(out["points"][0]["speedup"])
    assert _is_nan(out["speedup"])
    tracks = _miniature_tracks(out)
    assert _is_nan(tracks["track_speedup"])
    assert math.isfinite(tracks["track_max_error_hit_rate"])     # the errors are measured all the same


# ------------------------------------------------------------ 4. Salus lanes

def _packing(**makespans: dict[str, float]) -> dict:
    """A lane experiment's ``packing`` with only what LanePacking.track_makespan reads."""
    return {"capacities": {cap: {"rules": {rule: {"makespan_mean_s": s} for rule, s in rules.items()}}
                           for cap, rules in makespans.items()}}


def test_greedy_loses_fraction_without_mixes_is_a_declared_nan():
    from benchmarks.bench_salus_lanes import LaneManagerSpeed

    bench = LaneManagerSpeed.__new__(LaneManagerSpeed)
    data = {"packing": {"greedy_loses": {"static": {"admitted": 0, "mixes": 0, "admitted_fraction": None}}}}
    assert _is_nan(bench.track_greedy_loses_fraction(data))
    assert "no mix" in LaneManagerSpeed.track_greedy_loses_fraction.missing
    assert [e.outcome for e in _logged()] == [skip_log.NO_VALUE]
    data["packing"]["greedy_loses"]["static"]["admitted_fraction"] = 0.25
    assert bench.track_greedy_loses_fraction(data) == 0.25


@pytest.mark.parametrize("cls_name", ["LanePacking", "LanePackingCuda"])
def test_makespan_nan_is_the_worst_only_for_the_rule_that_failed(cls_name):
    """Static places every job at no capacity: its NaN is its own (the worst outcome, logged
    "no value"). Salus places every job at 4x, but static leaves no capacity in common: salus's
    number is skipped, with a reason naming static, and so not a regression of salus's."""
    from benchmarks import bench_salus_lanes

    cls = getattr(bench_salus_lanes, cls_name)
    assert cls.track_makespan.missing_is_worst
    bench = cls.__new__(cls)
    data = {"packing": _packing(**{"4x": {"salus": 30.0, "static": math.nan}})}
    assert _is_nan(bench.track_makespan(data, "static"))
    with pytest.raises(SkipNotImplemented, match="static"):
        bench.track_makespan(data, "salus")
    outcomes = {e.params: (e.outcome, e.reason) for e in _logged()}
    assert outcomes["rule='static'"][0] == skip_log.NO_VALUE
    assert outcomes["rule='salus'"][0] == skip_log.SKIPPED and "static" in outcomes["rule='salus'"][1]


def test_makespan_is_the_mean_over_the_capacities_every_rule_runs_whole():
    from benchmarks.bench_salus_lanes import LanePacking

    bench = LanePacking.__new__(LanePacking)
    data = {"packing": _packing(**{"4x": {"salus": 30.0, "static": math.nan},
                                   "8x": {"salus": 20.0, "static": 25.0},
                                   "16x": {"salus": 10.0, "static": 15.0}})}
    assert bench.track_makespan(data, "salus") == pytest.approx(15.0)
    assert bench.track_makespan(data, "static") == pytest.approx(20.0)
    assert _logged() == []
