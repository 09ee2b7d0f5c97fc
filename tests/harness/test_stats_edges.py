"""Edges of the noise statistics: a trend's interval holds its measured rho and every rho its
points' repeat ranges allow, a point that
repeated exactly gets the floored sigma make compare uses, a non-finite repeat is too noisy
(never NaN), and a hand-written threshold that cannot be a fraction is refused in one line."""
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compare_fixtures import BASE, HEAD, MACHINE, RATE, base_values, run_compare, write_run
from impls.harness.report import noise
from impls.harness.report.claims import BenchmarkSource, Claim, PointRef, TrendSource
from impls.harness.report.intervals import claim_interval, rho_range, trend_interval
from impls.harness.report.measure import measure_trend, spearman_rows

TRACK = "bench_x.T.track_y"


def _claim(measured, unit="x") -> Claim:
    return Claim(id="c", system="s", figure="f", statement="s", paper_value=1.0, unit=unit, source="t",
                 approx=False, tolerance=0.05, requires=(), measured=measured)


def _points(over: str, keys, values) -> pd.DataFrame:
    return pd.DataFrame({"benchmark": [TRACK] * len(keys), "params": [{over: k} for k in keys],
                         "param_label": [f"{over}={k}" for k in keys], "status": ["ok"] * len(keys),
                         "value": values, "commit": ["abcdef1234"] * len(keys), "version": [""] * len(keys)})


def _run(values) -> pd.DataFrame:
    return pd.DataFrame({"benchmark": [TRACK] * len(values), "param_label": [f"n={i}" for i in range(len(values))],
                         "status": ["ok"] * len(values), "value": values})


def test_a_trend_interval_holds_its_measured_rho():
    # a perfect rank order whose steps lie within each point's noise: the resampled rhos all
    # fall below the measured 1.0, yet the interval must hold the value it is an interval of
    keys = [1, 2, 4, 8, 16, 32, 64, 128]
    points = _points("k", keys, [1.0 + 0.01 * i for i in range(len(keys))])
    spread = 0.05
    found = noise.Noise("m", "", [], {(TRACK, f"k={k}"): noise.Threshold(TRACK, f"k={k}", 2, spread, 3 * spread)
                                      for k in keys})
    source = TrendSource(TRACK, "k")
    rho = measure_trend(points, source).value
    interval = claim_interval(_claim(source, "Spearman rho"), rho, points, found)
    assert interval is not None and not interval.unbounded
    assert interval.low <= rho <= interval.high
    assert interval.low < rho              # the noise still widens it on the other side
    alone = trend_interval(points, source, found)
    assert alone.low <= rho <= alone.high


def test_a_point_that_repeated_exactly_gets_the_spread_make_compare_floors_it_at():
    first, again = [0.20, 1.0, 2.0, 3.0], [0.20, 1.1, 2.2, 3.3]   # n=0 repeats; its siblings move ~10%
    measured = noise.measure_noise("m", {"c": [_run(first), _run(again)]})
    exact = measured.get(TRACK, "n=0")
    assert exact.spread == 0 and exact.threshold > 0
    points = _points("n", range(4), first)
    interval = claim_interval(_claim(BenchmarkSource(PointRef(TRACK, {"n": 0}))), first[0], points, measured)
    assert interval.high > interval.low and interval.method.startswith("95% interval of the mean, from run-to-run noise")
    # the interval reaches the factor of the 95% t interval at the sigma (of the logs) the threshold was set from
    reach = math.sqrt(interval.high / interval.low)
    assert math.isclose(math.log(reach), noise.t_quantile(0.975, exact.df) * exact.sigma)
    assert math.isclose(interval.low * interval.high, first[0] ** 2)   # centred on the value, as a factor
    sibling = measured.get(TRACK, "n=1")
    assert exact.sigma == pytest.approx(sibling.sigma)              # the benchmark's pooled sigma (all moved 10%)
    assert math.isclose(math.log(reach), noise.t_quantile(0.975, sibling.df) * sibling.sigma)


def test_the_floored_spread_survives_saving_the_thresholds(tmp_path):
    measured = noise.measure_noise("m", {"c": [_run([0.20, 1.0, 2.0, 3.0]), _run([0.20, 1.1, 2.2, 3.3])]})
    loaded = noise.load_noise(noise.save_noise(measured, tmp_path / "n.json"))
    assert loaded.get(TRACK, "n=0").range_width(0.2) == measured.get(TRACK, "n=0").range_width(0.2) > 0


@pytest.mark.parametrize("values, scale", [
    ([1.0, math.inf], noise.RELATIVE), ([math.inf, math.inf], noise.RELATIVE), ([math.nan, 1.0], noise.RELATIVE),
    ([math.inf, math.inf], noise.ABSOLUTE), ([1.0, -math.inf], noise.ABSOLUTE), ([1.0, math.nan], noise.ABSOLUTE),
])
def test_a_spread_over_a_value_that_is_not_finite_is_infinite(values, scale):
    assert noise.value_range(values, scale) == math.inf


def test_a_point_that_read_infinity_once_is_too_noisy_before_and_after_saving(tmp_path):
    measured = noise.measure_noise("m", {"c": [_run([1.0, 10.0, 100.0]), _run([math.inf, 10.5, 101.0])]})
    point = measured.get(TRACK, "n=0")
    assert point.too_noisy and point.threshold == math.inf
    assert noise.load_noise(noise.save_noise(measured, tmp_path / "n.json")).get(TRACK, "n=0").too_noisy


def _hand_written(tmp_path, threshold, **extra) -> Path:
    path = tmp_path / "hand.json"
    entry = {"benchmark": RATE, "threshold": threshold, **extra}
    # allow_nan: the JSON Infinity and NaN literals, as a 1e400 or a NaN typed into the file reads
    path.write_text(json.dumps({"schema": 1, "machine": MACHINE, "numbers": [entry]}, allow_nan=True))
    return path


@pytest.mark.parametrize("threshold", [5, 1.5, -0.05, math.nan, math.inf, "5%"])
def test_a_hand_written_threshold_that_is_no_fraction_is_refused(tmp_path, threshold):
    path = _hand_written(tmp_path, threshold)
    with pytest.raises(noise.NoiseError) as err:
        noise.load_noise(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and RATE in message and "write 0.05 for 5%" in message


def test_a_huge_threshold_typed_as_1e400_is_refused(tmp_path):
    path = tmp_path / "hand.json"
    path.write_text('{"schema": 1, "numbers": [{"benchmark": "b", "threshold": 1e400}]}')
    with pytest.raises(noise.NoiseError, match="write 0.05 for 5%"):
        noise.load_noise(path)


@pytest.mark.parametrize("threshold, too_noisy", [(0.05, False), (0, False), (1, True), (None, True)])
def test_a_hand_written_fraction_or_null_is_read(tmp_path, threshold, too_noisy):
    read = noise.load_noise(_hand_written(tmp_path, threshold)).get(RATE, "p")
    assert read.too_noisy == too_noisy
    assert read.threshold == (math.inf if threshold is None else threshold)


def test_a_measured_threshold_above_one_reads_back(tmp_path):
    # make noise writes a too-noisy point's threshold as measured: it must load again
    measured = noise.measure_noise("m", {"c": [_run([1.0, 2.0]), _run([2.0, 2.1])]})
    assert measured.get(TRACK, "n=0").threshold > 1
    loaded = noise.load_noise(noise.save_noise(measured, tmp_path / "n.json"))
    assert loaded.thresholds == measured.thresholds


def test_an_absolute_threshold_may_exceed_one_in_its_unit(tmp_path):
    read = noise.load_noise(_hand_written(tmp_path, 12.5, scale=noise.ABSOLUTE)).get(RATE, "")
    assert read.threshold == 12.5 and not read.too_noisy


def test_make_compare_refuses_a_percentage_typed_as_a_number_in_one_line(results, tmp_path):
    write_run(results / MACHINE, HEAD, 300, base_values(rate=500.0))
    done = run_compare(results, _hand_written(tmp_path, 5), "--base", BASE, "--head", HEAD)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "write 0.05 for 5%" in done.stderr and RATE in done.stderr


def test_the_rho_range_is_every_order_the_ranges_allow_and_no_other():
    """Against brute force: every permutation whose values can be placed in the ranges in
    that order (greedily, lowest first), and values drawn inside the ranges never leave it."""
    import itertools

    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(2, 7))
        x = rng.permutation(n).astype(float) * 2.0
        centre = rng.normal(0, 1, n)
        half = rng.uniform(0, 1.5, n)
        low, high = centre - half, centre + half
        rhos = []
        for order in itertools.permutations(range(n)):
            level, fits = -np.inf, True
            for i in order:
                level = max(level, low[i])
                fits &= level <= high[i]
            if fits:
                ranks = np.empty(n)
                ranks[list(order)] = np.arange(n)
                rhos.append(float(spearman_rows(list(x), ranks[np.newaxis, :])[0]))
        found = rho_range(list(x), low, high)
        assert found == pytest.approx((min(rhos), max(rhos)))
        drawn = spearman_rows(list(x), rng.uniform(low, high, size=(200, n)))
        assert found[0] - 1e-12 <= drawn.min() and drawn.max() <= found[1] + 1e-12


def test_a_trend_rising_by_steps_within_its_noise_is_not_bounded_below_its_band():
    """Eight points rising 1% a step, each within ±4% of its repeats: they could be in any
    order, or in a perfect one; a redraw of the measured values could only lower rho."""
    keys = [1, 2, 4, 8, 16, 32, 64, 128]
    values = [1.00, 1.03, 1.01, 1.05, 1.04, 1.06, 1.08, 1.07]
    points = _points("k", keys, values)
    found = noise.Noise("m", "", [], {(TRACK, f"k={k}"): noise.Threshold(TRACK, f"k={k}", 3, 0.04, 0.12)
                                      for k in keys})
    interval = trend_interval(points, TrendSource(TRACK, "k"), found)
    assert interval.high == 1.0 and interval.low < 0
    assert interval.method.endswith("(3 runs `make noise` read, repeats of each commit)"), interval.method
    dated = dataclasses.replace(found, measured="2026-12-07T08:20:46+00:00", runs=[{"commit": "76fdae516d"}] * 3)
    assert trend_interval(points, TrendSource(TRACK, "k"), dated).method.endswith(
        "(3 runs `make noise` read, repeats of commit 76fdae5; thresholds measured 2026-12-07)")
    spaced = _points("k", keys, [1.0 * 1.2 ** i for i in range(len(keys))])   # steps far beyond the noise
    assert (trend_interval(spaced, TrendSource(TRACK, "k"), found).low,
            trend_interval(spaced, TrendSource(TRACK, "k"), found).high) == (1.0, 1.0)
