"""The statistics of the noise thresholds: Student-t quantiles, the per-number false-alarm
rate of the rule on simulated lognormal runs (seeded), thresholds that narrow with more
runs, older thresholds files judged as before, a too-noisy number's move named, and the
note on a shift of the whole machine."""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from compare_fixtures import MACHINE, script
from impls.harness.report import compare, noise

TIME, RATE = "bench_x.T.time_one", "bench_x.R.track_rate"   # one point; eight points
POINTS = {TIME: 1, RATE: 8}
DIRECTION = {TIME: compare.LOWER, RATE: compare.HIGHER}


def _frame(values: dict[str, np.ndarray], started: int, units: dict[str, str] | None = None) -> pd.DataFrame:
    rows = [{"benchmark": b, "param_label": f"p={i}", "value": float(v), "status": "ok", "type": "track",
             "unit": (units or {}).get(b, "x"), "started_at": started, "version": "1"}
            for b, vals in values.items() for i, v in enumerate(vals)]
    return pd.DataFrame(rows)


def _draw(rng, sd: float, worse: float = 1.0) -> dict[str, np.ndarray]:
    """One run: every point 1 times lognormal noise of ``sd``, ``worse`` times worse."""
    return {b: np.exp(rng.normal(0, sd, k)) * (worse if DIRECTION[b] == compare.LOWER else 1 / worse)
            for b, k in POINTS.items()}


@pytest.mark.parametrize("p, df, known", [   # t tables (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2)
    (0.975, 1, 12.706), (0.975, 2, 4.303), (0.975, 10, 2.228), (0.995, 20, 2.845),
    (0.9995, 1, 636.62), (0.9995, 5, 6.869), (0.9995, 30, 3.646), (0.9995, math.inf, 3.291),
])
def test_t_quantiles_match_the_tables(p, df, known):
    assert noise.t_quantile(p, df) == pytest.approx(known, rel=2e-4)
    if math.isfinite(df):
        assert noise.t_cdf(noise.t_quantile(p, df), df) == pytest.approx(p, abs=1e-10)


def _false_alarms(n: int, draws: int, heads: int, seed: int, sd: float = 0.05) -> float:
    """The share of unchanged numbers flagged (either way) when each of ``heads`` later runs
    is compared with the newest of ``n`` runs the thresholds were measured from."""
    rng = np.random.default_rng(seed)
    flagged = total = 0
    for _ in range(draws):
        runs = [_draw(rng, sd) for _ in range(n)]
        measured = noise.measure_noise("m", {"c": [_frame(r, 100 + i) for i, r in enumerate(runs)]})
        for _ in range(heads):
            head = _draw(rng, sd)
            for b, k in POINTS.items():
                for i in range(k):
                    kind = compare.judge_change(runs[-1][b][i], head[b][i], DIRECTION[b],
                                                measured.get(b, f"p={i}").threshold)
                    flagged += kind in (compare.REGRESSION, compare.IMPROVEMENT)
                    total += 1
    return flagged / total


@pytest.mark.parametrize("n", [2, 5])
def test_the_per_number_false_alarm_rate_stays_below_twice_the_rate_set(n):
    # the old rule (3 x the range of the runs) flagged about 6% of unchanged numbers at n = 2
    assert _false_alarms(n, draws=150, heads=40, seed=n) < 2 * noise.FALSE_ALARM


def test_thresholds_narrow_with_more_runs_of_the_same_noise():
    rng = np.random.default_rng(11)

    def median_threshold(n: int, benchmark: str) -> float:
        found = []
        for _ in range(60):
            runs = [_draw(rng, 0.05) for _ in range(n)]
            measured = noise.measure_noise("m", {"c": [_frame(r, 100 + i) for i, r in enumerate(runs)]})
            found += [measured.get(benchmark, f"p={i}").threshold for i in range(POINTS[benchmark])]
        return float(np.median(found))

    for benchmark in (TIME, RATE):     # a range grows with n: 3 x range did too
        two, five, ten = (median_threshold(n, benchmark) for n in (2, 5, 10))
        assert two > five > ten, (benchmark, two, five, ten)


def test_a_number_measured_from_one_pair_rests_on_one_degree_of_freedom():
    measured = noise.measure_noise("m", {"c": [_frame({TIME: [1.0]}, 1), _frame({TIME: [1.02]}, 2)]})
    alone = measured.get(TIME, "p=0")
    assert alone.df == 1 and alone.sigma == pytest.approx(math.log(1.02) / math.sqrt(2))
    assert alone.too_noisy          # 637 x sqrt(2) x 1.4%: a spread from one pair says little
    pooled = noise.measure_noise("m", {"a": [_frame({TIME: [1.0]}, 1), _frame({TIME: [1.02]}, 2)],
                                       "b": [_frame({TIME: [2.0]}, 3), _frame({TIME: [2.04]}, 4)]})
    assert pooled.get(TIME, "p=0").df == 2     # runs of another commit add their own degree of freedom


def test_thresholds_written_before_sigma_and_df_load_and_judge_as_before(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema": 1, "machine": "m", "measured": "t", "factor": 3.0, "too_noisy": 0.5,
                                "runs": [], "numbers": [
                                    {"benchmark": RATE, "params": "p=0", "runs": 2, "spread": 0.02,
                                     "threshold": 0.06, "version": "1", "scale": "relative"},
                                    {"benchmark": RATE, "params": "p=1", "runs": 2, "spread": 0.0,
                                     "threshold": 0.06, "version": "1", "scale": "relative"}]}))
    loaded = noise.load_noise(path)
    assert loaded.false_alarm is None
    first, exact = loaded.get(RATE, "p=0"), loaded.get(RATE, "p=1")
    assert (first.sigma, first.df, first.threshold) == (None, None, 0.06)
    assert first.floored_spread == pytest.approx(0.02) and exact.floored_spread == pytest.approx(0.02)
    assert compare.judge_change(1.0, 1.07, compare.LOWER, first.threshold) == compare.REGRESSION
    assert compare.judge_change(1.0, 1.05, compare.LOWER, first.threshold) == "same"


def test_sigma_and_df_round_trip_and_a_bad_df_is_one_line(tmp_path):
    measured = noise.measure_noise("m", {"c": [_frame({TIME: [1.0], RATE: [1.0, math.inf]}, 1),
                                               _frame({TIME: [1.1], RATE: [1.1, 1.0]}, 2)]})
    loaded = noise.load_noise(noise.save_noise(measured, tmp_path / "n.json"))
    assert loaded.thresholds == measured.thresholds and loaded.false_alarm == noise.FALSE_ALARM
    assert loaded.get(RATE, "p=1").sigma == math.inf and loaded.get(RATE, "p=1").too_noisy
    time = measured.get(TIME, "p=0")      # the expected two-run range, never below the observed one
    assert loaded.get(TIME, "p=0").floored_spread == pytest.approx(max(time.spread, 2 / math.sqrt(math.pi) * time.sigma))
    assert time.floored_spread >= time.spread
    document = json.loads((tmp_path / "n.json").read_text())
    document["numbers"][0]["df"] = 0.5
    (tmp_path / "bad.json").write_text(json.dumps(document))
    with pytest.raises(noise.NoiseError, match="'df' is 0.5, not an integer >= 1") as err:
        noise.load_noise(tmp_path / "bad.json")
    assert "\n" not in str(err.value)


def test_a_too_noisy_number_that_moved_beyond_its_two_run_range_is_listed():
    wide = noise.Threshold(RATE, "p=0", 2, 0.02, 5.0, "1", noise.RELATIVE, noise.FACTOR, 0.014, 1)
    noisy = noise.Noise("m", "t", [], {(RATE, "p=0"): wide})
    result = compare.compare_runs(_frame({RATE: [100.0]}, 1), _frame({RATE: [70.0]}, 2),
                                  {RATE: compare.HIGHER}, noisy)
    assert [c.kind for c in result.changes] == [compare.NOISY]
    lines = compare.format_comparison(result)
    listed = [line for line in lines if line.startswith("TOO NOISY")]
    assert len(listed) == 1 and "two runs of one commit differ by about 2%" in listed[0], lines
    for ordinary in (101.0, 97.0):    # within, and past, the mean two-run range: both ordinary moves
        within = compare.compare_runs(_frame({RATE: [100.0]}, 1), _frame({RATE: [ordinary]}, 2),
                                      {RATE: compare.HIGHER}, noisy)
        assert not [line for line in compare.format_comparison(within) if line.startswith("TOO NOISY")]
    # listed past what two runs differ by 1 time in 20 (t at 1 df: 12.7), not past their mean range
    assert wide.unusual_move == pytest.approx(math.expm1(noise.t_quantile(0.975, 1) * math.sqrt(2) * 0.014))


SPEEDS = {f"bench_x.S{i}.track_speed": unit for i, unit in
          enumerate(["s", "ms", "lookups/s", "MB/s", "samples/s", "µs per job decision", "IO/s", "s"])}


def _speed_comparison(head_factor, seed: int):
    rng = np.random.default_rng(seed)
    declared = {b: compare.HIGHER if unit.split()[0].endswith("/s") else compare.LOWER for b, unit in SPEEDS.items()}
    thresholds = {(b, "p=0"): noise.Threshold(b, "p=0", 5, 0.05, 0.15, "1", noise.RELATIVE, noise.FACTOR, 0.03, 4)
                  for b in SPEEDS}
    base = _frame({b: [1.0] for b in SPEEDS}, 1, SPEEDS)
    head = _frame({b: [head_factor(rng, declared[b])] for b in SPEEDS}, 2, SPEEDS)
    return compare.compare_runs(base, head, declared, noise.Noise("m", "t", [], thresholds))


def test_a_shift_shared_by_every_speed_number_is_noted_without_changing_a_verdict():
    slow_day = _speed_comparison(lambda rng, d: 1.2 ** (1 if d == compare.LOWER else -1) * np.exp(rng.normal(0, 0.01)), 3)
    note = compare.machine_shift(slow_day)
    assert note is not None and "8 of 8 speed numbers moved the same way" in note and "slower" in note, note
    assert "median 1.2" in note
    assert slow_day.regressed and len(slow_day.of_kind(compare.REGRESSION)) == 8   # the verdicts stand


def test_independent_noise_of_the_speed_numbers_is_no_shift():
    # drawn independently: 5 of the 8 slower (a fair coin does that or worse 73% of the time)
    worse = iter([1.04, 0.97, 1.02, 1.03, 0.96, 1.05, 0.98, 1.01])
    quiet = _speed_comparison(lambda rng, d: next(worse) ** (1 if d == compare.LOWER else -1), 0)
    assert sum(c.kind == "same" for c in quiet.changes) == 8
    assert compare.machine_shift(quiet) is None


def _cpu_and_disk(cpu_factor: float, n_cpu: int, modules: int = 3) -> compare.Comparison:
    """40 disk rates within their 30% threshold, half up and half down (a slowdown of the CPUs
    leaves them a coin toss), beside ``n_cpu`` CPU times moved by ``cpu_factor``, in
    ``modules`` benchmark modules."""
    disk = {f"bench_d.Fio{i}.track_iops": 1.0 + (0.05 + i / 1000) * (1 if i % 2 else -1) for i in range(40)}
    cpu = {f"bench_c{i % modules}.K{i}.track_seconds": cpu_factor + i / 1000   # distinct: no one run
           for i in range(n_cpu)}
    units = {**{b: "IOPS" for b in disk}, **{b: "s" for b in cpu}}
    declared = {**{b: compare.HIGHER for b in disk}, **{b: compare.LOWER for b in cpu}}
    thresholds = {(b, "p=0"): noise.Threshold(b, "p=0", 5, 0.1, 0.3, "1", noise.RELATIVE, noise.FACTOR, 0.1, 12)
                  for b in units}
    return compare.compare_runs(_frame({b: [1.0] for b in units}, 1, units),
                                _frame({b: [v] for b, v in {**disk, **cpu}.items()}, 2, units),
                                declared, noise.Noise("m", "t", [], thresholds))


def test_a_slowdown_of_the_cpus_alone_is_noted_by_what_moved_beyond_its_threshold():
    # 10 CPU times 1.7x slower among 50 speed numbers: 30 of 50 one way is no shift by itself, but
    # every number a compare flags is slower
    slow_cpus = _cpu_and_disk(1.7, 10)
    note = compare.machine_shift(slow_cpus)
    assert note is not None and "10 of 10 speed numbers beyond their thresholds (of 50 compared) moved the same " \
                                "way" in note, note
    assert "median 1.7x slower" in note
    # the same ten in one module or two are one system's slowdown (a change), not the machine's
    assert compare.machine_shift(_cpu_and_disk(1.7, 10, modules=1)) is None
    assert compare.machine_shift(_cpu_and_disk(1.7, 10, modules=2)) is None
    # one CPU time beyond its threshold is no shift: a fair coin does that half the time
    assert compare.machine_shift(_cpu_and_disk(1.7, 1)) is None
    # nor are CPU times within their thresholds
    assert compare.machine_shift(_cpu_and_disk(1.1, 10)) is None


def test_the_time_the_noise_runs_span_is_said():
    def runs(*stamps):
        return noise.Noise("m", "t", [{"commit": "c", "started": s} for s in stamps], {})
    one_sitting = runs("20261205T164016", "20261205T165421", "20261205T170834")
    assert one_sitting.sitting == ", the runs ending within 28 min: drift between days is not in it"
    assert runs("20261201T090000", "20261205T100000").sitting == ", the runs ending over 4 days"
    assert runs("20261205T080000", "20261205T150000").sitting.startswith(", the runs ending within 7 h")
    assert runs("20261205T164016").sitting == "" and runs("", "?").sitting == "" and runs().sitting == ""
    # a claim's interval says it
    from impls.harness.report import intervals
    found = intervals._from_repeats(2.0, [(1.9, 2.1, 2.0, 3, True)], one_sitting)
    assert found.method.endswith("(3 runs `make noise` read, repeats of commit c, the runs ending within 28 min: "
                                 "drift between days is not in it)"), found.method
    # which commits were repeated, and when the thresholds were measured: not this report's run
    dated = noise.Noise("m", "2026-12-07T08:20:46+00:00", [{"commit": "76fdae516d56", "started": "20261207T045357"},
                                                            {"commit": "76fdae516d56", "started": "20261207T051005"}], {})
    found = intervals._from_repeats(2.0, [(1.9, 2.1, 2.0, 2, True)], dated)
    assert found.method.endswith("(2 runs `make noise` read, repeats of commit 76fdae5, the runs ending within 16 min: "
                                 "drift between days is not in it; thresholds measured 2026-12-07)"), found.method
    several = noise.Noise("m", "t", [{"commit": c} for c in "abcdef"], {})
    assert several.repeats_of == "repeats of each of 6 commits (a, b, c, d, ...)" and several.when == ""


@pytest.mark.parametrize("unit, speed", [("s", True), ("ms", True), ("µs per job decision", True),
                                         ("lookups/s", True), ("IOPS", True), ("x fio IOPS", False),
                                         ("GiB", False), ("fraction of bytes read", False), ("x", False)])
def test_speed_like_units(unit, speed):
    assert compare.speed_like(unit) is speed


def test_make_noise_says_how_many_degrees_of_freedom_its_thresholds_rest_on(results):
    out = script("measure_noise.py", "--results", str(results), "--machine", MACHINE,   # two runs of one commit
                 "--out", str(results.parent / "noise.json"))
    assert out.returncode == 0, out.stderr
    assert "df 1 for 3 number(s), 3 of them too noisy: each rests on one pair of runs" in out.stdout, out.stdout
    assert f"false alarm in {100 * noise.FALSE_ALARM:.2g}% of compares per number" in out.stdout


def test_a_point_a_little_noisier_than_its_siblings_keeps_their_evidence():
    """One pair of runs per point, eight points: the one that moved a little more than the pooled
    siblings is judged with their degrees of freedom, not its own single one (no cliff into
    'too noisy')."""
    import pandas as pd

    from impls.harness.report import noise

    def frame(values):
        return pd.DataFrame({"benchmark": "b.B.track_x", "param_label": [f"n={i}" for i in range(len(values))],
                             "value": values, "status": "ok"})

    first = [100.0] * 8
    second = [101.0] * 7 + [101.3]
    measured = noise.measure_noise("m", {"c": [frame(first), frame(second)]})
    noisy, quiet = measured.get("b.B.track_x", "n=7"), measured.get("b.B.track_x", "n=0")
    assert noisy.df == quiet.df == 8
    assert not noisy.too_noisy and noisy.threshold < 1.5 * quiet.threshold


def test_a_point_much_noisier_than_its_siblings_rests_on_its_own_runs():
    """Eight points that moved by 1 and one by 5 between two runs: 5 is beyond what one pair's
    sigma makes likely against the pooled 2.0 (consistent_ratio(1) = 1.94), so that point keeps
    its own single degree of freedom (too noisy), where one that moved 1.3 shares theirs."""
    import pandas as pd

    def frame(values):
        return pd.DataFrame({"benchmark": "b.B.track_x", "param_label": [f"n={i}" for i in range(len(values))],
                             "value": values, "status": "ok"})

    first = [100.0] * 9
    measured = noise.measure_noise("m", {"c": [frame(first), frame([101.0] * 8 + [105.0])]})
    assert measured.get("b.B.track_x", "n=8").df == 1 and measured.get("b.B.track_x", "n=8").too_noisy
    assert measured.get("b.B.track_x", "n=0").df == 9
    assert noise.consistent_ratio(1) == pytest.approx(1.96, rel=0.02)
    assert noise.consistent_ratio(30) == pytest.approx(math.sqrt(43.77 / 30), rel=0.01)


def test_a_simulated_time_is_not_a_speed_of_the_machine():
    assert not compare.speed_like("s (simulated; mean over the capacities where every rule places every job)")
    assert compare.speed_like("s") and compare.speed_like("lookups/s")


def test_a_rate_that_fell_a_hundredfold_in_one_run_is_noise_of_that_factor():
    # a fall of the values, however deep, moves their sd over their median by less than 1; a
    # factor between two runs is what compare judges, so the noise is measured on that scale
    values = [100.0, 100.0, 1.0, 100.0, 100.0]
    measured = noise.measure_noise("m", {"c": [_frame({RATE: [v]}, i) for i, v in enumerate(values)]})
    rate = measured.get(RATE, "p=0")
    logs = [math.log(v) for v in values]
    assert rate.sigma == pytest.approx(float(np.std(logs, ddof=1))) and rate.df == 4
    assert 1 + rate.threshold > 100          # the same fall between two runs of a later commit is within noise
    assert compare.judge_change(100.0, 1.0, "higher", rate.threshold) != compare.REGRESSION


def test_values_of_both_signs_keep_the_spread_over_their_median():
    values = [-1.0, 1.0, 3.0]
    measured = noise.measure_noise("m", {"c": [_frame({RATE: [v]}, i) for i, v in enumerate(values)]})
    assert measured.get(RATE, "p=0").sigma == pytest.approx(float(np.std(values, ddof=1)) / 1.0)


def test_negative_values_keep_the_spread_over_their_median():
    # compare judges two negative values by their relative change, not a factor: the same scale
    values = [-10.0, -12.0, -30.0]
    measured = noise.measure_noise("m", {"c": [_frame({RATE: [v]}, i) for i, v in enumerate(values)]})
    assert measured.get(RATE, "p=0").sigma == pytest.approx(float(np.std(values, ddof=1)) / 12.0)


def test_a_wide_interval_is_a_factor_either_way_and_never_crosses_zero():
    wide = noise.Threshold(RATE, "p", 5, 1.0, noise.two_run_threshold(1.17, 40), "1", sigma=1.17, df=40)
    reach = math.exp(noise.t_quantile(0.975, 40) * 1.17)
    low, high = wide.interval(1000.0)
    assert low == pytest.approx(1000.0 / reach) and high == pytest.approx(1000.0 * reach) and low > 0
    assert wide.interval(-1000.0) == pytest.approx((-1000.0 * reach, -1000.0 / reach))
    assert wide.floored_spread == pytest.approx(math.expm1(noise.EXPECTED_RANGE * 1.17))
    absolute = dataclasses.replace(wide, scale=noise.ABSOLUTE, threshold=5.0)
    assert absolute.interval(3.0) == pytest.approx((3.0 - absolute.range_width(3.0), 3.0 + absolute.range_width(3.0)))


def test_a_ratio_of_two_points_multiplies_the_factors_their_intervals_reach():
    from impls.harness.report import intervals

    spreads = [(50.0, 200.0, 100.0, 5, True), (5.0, 20.0, 10.0, 5, True)]      # each a factor of 2 either way
    got = intervals._from_repeats(10.0, spreads, noise.Noise("m", "", [], {}))
    assert (got.low, got.high) == pytest.approx((10.0 / 4, 10.0 * 4))
    over_zero = intervals._from_repeats(10.0, [(-1.0, 3.0, 1.0, 5, True), spreads[1]], noise.Noise("m", "", [], {}))
    assert (over_zero.low, over_zero.high) == (-math.inf, math.inf)


def test_the_held_out_check_counts_the_flags_a_user_would_meet():
    """Each run left out in turn, thresholds from the rest, compared with the newest other run
    of its commit: normal noise flags about what the thresholds are set for; one disk stall
    (a tenth of the rate at one point) flags that point when its run is held out."""
    from impls.harness.report import noise_held_out

    rng = np.random.default_rng(7)
    declared = {RATE: compare.HIGHER}
    runs = [_frame({RATE: np.exp(rng.normal(0, 0.05, 8))}, 100 + i) for i in range(4)]
    assert noise_held_out.held_out({"c": runs[:2]}, declared) is None             # two runs: nothing to hold out
    calm = noise_held_out.held_out({"c": runs}, declared)
    assert (calm.compares, calm.judged) == (4, 32) and calm.flags == calm.flagging == 0
    stalled = [f.copy() for f in runs]
    stalled[2].loc[stalled[2]["param_label"] == "p=5", "value"] /= 10
    check = noise_held_out.held_out({"c": stalled, "other commit": runs[:1]}, declared)
    assert check.compares == 4 and check.flags >= 1 and check.flagging >= 1
    assert (RATE, "p=5") in check.examples
    line = noise_held_out.held_out_line(check, 0.001)
    assert line.startswith(f"held out: each of 4 runs compared with the newest other run of its commit") and \
        "heavier tails" in line
    assert "heavier tails" not in noise_held_out.held_out_line(calm, 0.001)
    # a number that repeats exactly (a deterministic count: threshold 0) is no judged number
    steady = [f.copy() for f in runs]
    for f in steady:
        f.loc[len(f)] = {**f.iloc[0].to_dict(), "benchmark": "bench_x.Count.track_n", "param_label": "", "value": 7.0}
    with_count = noise_held_out.held_out({"c": steady}, {**declared, "bench_x.Count.track_n": compare.HIGHER})
    assert (with_count.compares, with_count.judged, with_count.flags) == (calm.compares, calm.judged, calm.flags)


def test_the_held_out_warning_is_for_twice_the_rate_set_not_for_ordinary_noise():
    from impls.harness.report.noise_held_out import HeldOut, held_out_line

    assert "heavier tails" not in held_out_line(HeldOut(3, 200, 5, 2), 0.01)     # 15 in 1000 against 10
    assert "heavier tails" not in held_out_line(HeldOut(4, 200, 5, 2), 0.01)     # 20: twice, not past it
    assert "heavier tails" in held_out_line(HeldOut(5, 200, 5, 2), 0.01)         # 25
