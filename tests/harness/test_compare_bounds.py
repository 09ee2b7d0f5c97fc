"""make compare on rates against times (one factor both ways), on numbers that are only
bounds, and on numbers whose NaN means something (a run that did not reach its target)."""
import math

import pandas as pd
import pytest

from impls.harness.report import compare, directions, noise

RATIO = "bench_slide.SlideSpeedup.track_time_to_target_ratio"
LOWER_FLAG = "bench_slide.SlideSpeedup.track_ratio_is_lower_bound"
UPPER_FLAG = "bench_slide.SlideSpeedup.track_ratio_is_upper_bound"
TIME = "bench_slide.SlideBatchSize.track_time_to_target"


@pytest.mark.parametrize("old, new, direction, kind", [
    (1000.0, 1000 / 1.6, "higher", compare.REGRESSION),   # a rate 1.6x slower
    (1.0, 1.6, "lower", compare.REGRESSION),               # the time it inverts
    (1000.0, 1600.0, "higher", compare.IMPROVEMENT),
    (1.6, 1.0, "lower", compare.IMPROVEMENT),
    (1000.0, 1000 / 1.4, "higher", "same"),                # 1.4x slower: within 45% both ways
    (1.0, 1.4, "lower", "same"),
])
def test_a_rate_and_the_time_it_inverts_get_one_verdict(old, new, direction, kind):
    assert compare.judge_change(old, new, direction, 0.45) == kind


def test_the_history_steps_use_the_same_factor_both_ways():
    t = noise.Threshold("b", "", 2, 0.15, 0.45)
    def beyond(old, new):
        return noise.moved_beyond(old, new, t.threshold, t.scale)     # as the history's steps judge
    assert beyond(1000.0, 1000 / 1.6) and beyond(1.0, 1.6)
    assert not beyond(1000.0, 1000 / 1.4) and not beyond(1.0, 1.4)


@pytest.mark.parametrize("old, old_bound, new, new_bound, direction, kind", [
    (2.0, "", 3.0, "lower", "higher", compare.IMPROVEMENT),      # >= 3 is above 2 whatever it is
    (2.0, "", 1.0, "lower", "higher", compare.BOUND),            # >= 1 may still be 2
    (2.0, "", 1.0, "upper", "higher", compare.REGRESSION),       # <= 1 is below 2 whatever it is
    (1.08, "lower", 1.5, "lower", "higher", compare.BOUND),      # two lower bounds prove nothing
    (0.82, "upper", 0.87, "upper", "higher", compare.BOUND),
    (3.0, "lower", 1.0, "", "higher", compare.REGRESSION),       # was >= 3, now 1
    (3.0, "lower", 3.0, "", "higher", compare.BOUND),            # was >= 3, now 3: it may have been 30
    (10.0, "", 20.0, "lower", "lower", compare.REGRESSION),      # a time: now >= 20 s, was 10 s
    (10.0, "", 20.0, "upper", "lower", compare.BOUND),           # now <= 20 s: may be 10 still
    (2.0, "", 3.0, "lower", "context", "unjudged"),
])
def test_bounds_are_judged_only_on_what_they_prove(old, old_bound, new, new_bound, direction, kind):
    assert compare.judge_bounded(old, new, old_bound, new_bound, direction, 0.1) == kind


def test_without_a_threshold_a_bound_is_not_judged_either():
    assert compare.judge_bounded(2.0, 3.0, "", "lower", "higher", None) == compare.NO_THRESHOLD
    assert compare.judge_bounded(2.0, 3.0, "", "upper", "higher", None) == compare.BOUND    # <= 3 may be 2
    # two lower bounds prove nothing, with or without a threshold (>= 1.164 -> >= 1.100, a real pair)
    assert compare.judge_bounded(1.164, 1.100, "lower", "lower", "higher", None) == compare.BOUND
    assert compare.judge_bounded(1.164, 1.100, "lower", "lower", "higher", 5.0) == compare.BOUND      # too noisy
    assert compare.judge_bounded(10.0, 20.0, "", "lower", "lower", None) == compare.NO_THRESHOLD     # >= 20 s


def _frame(points: dict[tuple[str, str], float]) -> pd.DataFrame:
    return pd.DataFrame({"benchmark": [b for b, _ in points], "param_label": [p for _, p in points],
                         "value": list(points.values()),
                         "status": ["skipped" if math.isnan(v) else "ok" for v in points.values()],
                         "type": "track", "version": "1"})


def test_compare_reads_each_points_own_flags_from_each_run():
    dense, sampled = "comparison='dense-cpu/slide'", "comparison='sampled-cpu/slide'"
    base = _frame({(RATIO, dense): 8.0, (LOWER_FLAG, dense): 0.0, (UPPER_FLAG, dense): 0.0,
                   (RATIO, sampled): 0.82, (LOWER_FLAG, sampled): 0.0, (UPPER_FLAG, sampled): 1.0})
    head = _frame({(RATIO, dense): 1.1, (LOWER_FLAG, dense): 1.0, (UPPER_FLAG, dense): 0.0,
                   (RATIO, sampled): 0.95, (LOWER_FLAG, sampled): 0.0, (UPPER_FLAG, sampled): 1.0})
    declared = directions.declared_directions()
    result = compare.compare_runs(base, head, declared, None, 0.1, bounds=directions.declared_bounds())
    by_point = {c.params: c for c in result.changes if c.benchmark == RATIO}
    # 8x measured, then only ">= 1.1x": the dense run stopped before the target; not a regression
    assert by_point[dense].kind == compare.BOUND and by_point[dense].new_bound == compare.LOWER_BOUND
    assert ">= 1.1" in by_point[dense].line() and "a bound" in by_point[dense].line()
    assert by_point[sampled].kind == compare.BOUND and by_point[sampled].old_bound == compare.UPPER_BOUND
    assert not result.regressed
    # the same values without the declarations read as a regression and an improvement
    blind = {c.params: c.kind for c in compare.compare_runs(base, head, declared, None, 0.1).changes
             if c.benchmark == RATIO}
    assert blind == {dense: compare.REGRESSION, sampled: compare.IMPROVEMENT}


def test_a_time_that_is_no_longer_reached_is_judged_as_a_lower_bound():
    """A run that never reached the target records its training time as a lower bound: a
    regression where even that is beyond noise of the old time, a bound that proves nothing
    where the old time was near the budget (28.9 s of 30: the run missed by a hair)."""
    point, lower, upper = "batch=64, method='slide'", TIME + "_is_lower_bound", TIME + "_is_upper_bound"

    def judged(old):
        base = _frame({(TIME, point): old, (lower, point): 0.0, (upper, point): 0.0})
        head = _frame({(TIME, point): 30.0, (lower, point): 1.0, (upper, point): 0.0})
        result = compare.compare_runs(base, head, directions.declared_directions(), None, 0.1,
                                      bounds=directions.declared_bounds(), missing=directions.declared_missing(),
                                      worst_missing=directions.declared_worst_missing())
        (change,) = [c for c in result.changes if c.benchmark == TIME]
        return change, result

    far, result = judged(5.56)
    assert far.kind == compare.REGRESSION and result.regressed and "-> >= 30" in far.line()
    near, result = judged(28.89)
    assert near.kind == compare.BOUND and not result.regressed
    assert TIME not in directions.declared_worst_missing()    # its NaN is no target, not a run that fell short


def test_a_runs_time_to_target_is_its_training_time_where_it_never_reached_the_target():
    from benchmarks import bench_slide

    bench = bench_slide.SlideBatchSize()
    bench.row = {"time_to_target_s": None, "time_to_target_is_lower_bound": True,
                 "time_to_target_is_upper_bound": False, "train_seconds": 30.2}
    assert bench.track_time_to_target(None, 64, "slide") == 30.2
    assert bench.track_time_to_target_is_lower_bound(None, 64, "slide") == 1.0
    bench.row.update(time_to_target_s=5.5, time_to_target_is_lower_bound=False)
    assert bench.track_time_to_target(None, 64, "slide") == 5.5
    bench.row.update(time_to_target_s=None)                      # no target: nothing to time
    assert math.isnan(bench.track_time_to_target(None, 64, "slide"))


SALUS_JCT = "bench_salus.SchedulingPolicies.track_average_jct"
SALUS_ERROR = "bench_salus.SchedulingPolicies.track_simulator_error"


def test_a_nan_its_benchmark_declares_the_worst_outcome_is_a_regression():
    """A job that failed: worse than any value (exit 1), and counted with the regressions; a
    NaN not so declared (a ratio without a target) stays listed, not judged."""
    point, ratio = "policy='fifo'", "comparison='dense-cpu/slide'"
    worst = directions.declared_worst_missing()
    assert SALUS_JCT in worst and RATIO not in worst
    base = _frame({(SALUS_JCT, point): 5.56, (SALUS_ERROR, point): 0.2, (RATIO, ratio): 8.0})
    head = _frame({(SALUS_JCT, point): math.nan, (SALUS_ERROR, point): 0.2, (RATIO, ratio): math.nan})
    result = compare.compare_runs(base, head, directions.declared_directions(), None, 0.1,
                                  missing=directions.declared_missing(), worst_missing=worst)
    assert result.regressed and [item.benchmark for item in result.worse_without_value] == [SALUS_JCT]
    lines = compare.format_comparison(result)
    assert lines[0].startswith(f"REGRESSION {SALUS_JCT} [policy='fifo'] 5.56 -> (no value in the new run: "
                               "a job failed in this policy's run")
    assert sum(line.startswith("NO VALUE ") and RATIO in line for line in lines) == 1
    assert ": 1 regressions (1 of them a number with no value now, the worst outcome)," in lines[-1], lines[-1]
    assert "2 skipped or without a value (1 of them the worst outcome, counted above)" in lines[-1]
    assert not compare.compare_runs(base, head, directions.declared_directions(), None, 0.1,
                                    missing=directions.declared_missing()).regressed
    # every track of the point NaN: a skip (setup raised) looks so, and is not judged
    skipped = _frame({(SALUS_JCT, point): math.nan, (SALUS_ERROR, point): math.nan, (RATIO, ratio): math.nan})
    result = compare.compare_runs(base, skipped, directions.declared_directions(), None, 0.1,
                                  missing=directions.declared_missing(), worst_missing=worst)
    assert not result.regressed and not result.worse_without_value
    # the benchmark's version changed: nothing is compared across it, a lost value neither
    bumped = head.assign(version=["2" if b == SALUS_JCT else "1" for b in head["benchmark"]])
    result = compare.compare_runs(base, bumped, directions.declared_directions(), None, 0.1,
                                  missing=directions.declared_missing(), worst_missing=worst)
    assert not result.regressed and not result.worse_without_value
    (line,) = [item.line() for item in result.lost if item.benchmark == SALUS_JCT]
    assert line.startswith(f"NEW VERSION {SALUS_JCT} ") and "not compared" in line, line
    # what the new run logged of it is said under a new version too
    from impls.harness import skip_log
    logged = compare.Lost(SALUS_JCT, point, 5.56, compare.SKIPPED, "", "", False,
                          skip_log.Entry(SALUS_JCT, point, skip_log.SKIPPED, "needs CUDA", 0.0), "its version changed")
    assert logged.line().endswith("-> (skipped in the new run: needs CUDA; its version changed: not compared)")
    # a failure stays a failure under a new version: listed and counted as one
    failed = bumped.assign(status=["failed" if b == SALUS_JCT else "ok" if not math.isnan(v) else "skipped"
                                   for b, v in zip(bumped["benchmark"], bumped["value"])])
    result = compare.compare_runs(base, failed, directions.declared_directions(), None, 0.1,
                                  missing=directions.declared_missing(), worst_missing=worst)
    (line,) = [item.line() for item in result.lost if item.benchmark == SALUS_JCT]
    assert result.regressed and line.startswith(f"FAILED {SALUS_JCT} "), line


def test_every_declared_bound_flag_is_a_flag_track_of_the_same_class():
    declared = directions.declared_directions()
    bounds = directions.declared_bounds()
    assert RATIO in bounds
    for cls in ("SlideBatchSize", "SlideTimeToAccuracy", "SlideDelicious"):   # a run's own time to target
        time = f"bench_slide.{cls}.track_time_to_target"
        assert bounds[time] == (f"{time}_is_lower_bound", f"{time}_is_upper_bound")
    for benchmark, flags in bounds.items():
        for flag in flags:
            assert flag is None or declared.get(flag) == directions.FLAG, (benchmark, flag)


def test_history_steps_to_or_from_a_bound_are_changes_and_the_others_are_judged():
    from impls.harness.report.history import history_figures

    dense, sampled = "comparison='dense-cpu/slide'", "comparison='sampled-cpu/slide'"
    commits = [c * 8 for c in "abcdef"]
    ratio = {dense: [8, 8, 8, 1.1, 1.1, 1.1], sampled: [3, 3, 3, 1, 1, 1]}
    lower = {dense: [0, 0, 0, 1, 1, 1], sampled: [0] * 6}    # dense's 1.1 is only ">= 1.1"
    rows = []
    for i, commit in enumerate(commits):
        for label in (dense, sampled):
            for bench, value in ((RATIO, ratio[label][i]), (LOWER_FLAG, lower[label][i]), (UPPER_FLAG, 0)):
                rows.append({"machine": "m", "commit": commit, "date": pd.Timestamp(1_700_000_000 + 86400 * i, unit="s", tz="UTC"),
                             "env_name": "e", "benchmark": bench,
                             "type": "track", "unit": "x", "params": {"comparison": label}, "param_label": label,
                             "value": float(value), "status": "ok",
                             "started_at": pd.Timestamp(1_700_000_000 + i, unit="s", tz="UTC"),
                             "version": "1"})
    frame = pd.DataFrame(rows)
    declared = directions.declared_directions()

    def kinds(bounds):
        (figure,) = [f for f in history_figures(frame, declared, None, workers=1, bounds=bounds)
                     if f.benchmark == RATIO]
        return {("dense" if "dense" in step.params else "sampled"): step.kind for step in figure.steps}

    assert kinds(None) == {"dense": "regression", "sampled": "regression"}
    assert kinds(directions.declared_bounds()) == {"dense": "change", "sampled": "regression"}
    # 8x measured, then "<= 2": a regression whatever the true value, as make compare says
    frame.loc[(frame["benchmark"] == LOWER_FLAG) & frame["param_label"].eq(dense), "value"] = 0.0
    frame.loc[(frame["benchmark"] == UPPER_FLAG) & frame["param_label"].eq(dense)
              & frame["commit"].isin(commits[3:]), "value"] = 1.0
    assert kinds(directions.declared_bounds())["dense"] == "regression"
    # the flags never measured: the 1.1 may be any bound, so nothing is proven
    unflagged = frame[frame["benchmark"] == RATIO]
    (figure,) = history_figures(unflagged, declared, None, workers=1, bounds=directions.declared_bounds())
    assert {("dense" if "dense" in st.params else "sampled"): st.kind for st in figure.steps} == {
        "dense": "change", "sampled": "change"}


def test_a_bound_whose_flags_were_not_measured_proves_nothing():
    dense = "comparison='dense-cpu/slide'"
    base = _frame({(RATIO, dense): 8.0, (LOWER_FLAG, dense): 0.0, (UPPER_FLAG, dense): 0.0})
    for head in (_frame({(RATIO, dense): 1.1}),                                          # flags absent
                 _frame({(RATIO, dense): 1.1, (LOWER_FLAG, dense): math.nan, (UPPER_FLAG, dense): 0.0})):
        (change,) = [c for c in compare.compare_runs(base, head, directions.declared_directions(), None, 0.1,
                                                     bounds=directions.declared_bounds()).changes
                     if c.benchmark == RATIO]
        assert change.kind == compare.BOUND and change.new_bound == compare.UNKNOWN_BOUND
        # the line says which run lacks the flags, not that either run holds a bound
        assert "the new run recorded no bound flags for it" in change.line()
        assert "at either run" not in change.line()


def test_bounds_that_did_not_move_are_counted_not_listed_and_judge_nothing():
    dense = "comparison='dense-cpu/slide'"
    run = _frame({(RATIO, dense): 1.08, (LOWER_FLAG, dense): 1.0, (UPPER_FLAG, dense): 0.0})
    result = compare.compare_runs(run, run.copy(), directions.declared_directions(), None, 0.1,
                                  bounds=directions.declared_bounds())
    lines = compare.format_comparison(result)
    assert not any(line.startswith("BOUND") for line in lines)
    assert "1 bounds that prove neither" in lines[-1]


def test_a_threshold_written_as_compare_prints_the_params_applies():
    label = "block_bytes=4096, queue_depth=1"
    t = noise.Threshold("b", label, 2, 0.01, 0.03)
    measured = noise.Noise("m", "", [], {("b", "block_bytes=4096,queue_depth=1"): t})
    assert measured.get("b", label) is t
    assert noise.Noise("m", "", [], {("b", label): t}).get("b", label) is t


@pytest.mark.parametrize("kwargs", [
    dict(direction="higher", bounded_by=("track_a", "track_a")),
    dict(direction="flag", bounded_by=("track_a", None)),
    dict(direction="higher", bounded_by=(None, None)),
])
def test_a_bounded_by_declaration_that_cannot_hold_is_refused(kwargs):
    from benchmarks.common import track

    with pytest.raises(ValueError, match="bounded_by"):
        track(lambda self, *_: 1.0, unit="x", **kwargs)


def test_missing_without_optional_is_refused():
    from benchmarks.common import field

    with pytest.raises(ValueError, match="missing"):
        field("k", unit="s", direction="lower", missing="never reached")


def test_a_tiny_threshold_prints_digits_that_differ_from_one():
    line = compare.Change("b", "", 1147.26, 1147.32, "lower", 0.0000229, compare.REGRESSION).line()
    assert "threshold x1.00002 either way" in line


def test_the_numbers_only_the_new_run_has_are_named_by_benchmark():
    """A benchmark added since, or a time that was NaN and now has a value: compare lists
    which (one line a benchmark, with its count), not only how many."""
    point, lower = "batch=64, method='slide'", TIME + "_is_lower_bound"
    base = _frame({(TIME, "batch=128, method='slide'"): 5.0, (TIME, point): math.nan})    # NaN there
    head = _frame({(TIME, "batch=128, method='slide'"): 5.0, (TIME, point): 30.0, (lower, point): 1.0,
                   (lower, "batch=128, method='slide'"): 0.0})
    result = compare.compare_runs(base, head, directions.declared_directions(), None, 0.1)
    lines = compare.format_comparison(result)
    assert [line for line in lines if line.startswith("NEW ONLY ")] == [
        f"NEW ONLY {TIME} (1 point(s) with a value in the new run only: new, or no value in the base run; "
        "nothing to compare)",
        f"NEW ONLY {lower} (2 point(s) with a value in the new run only: new, or no value in the base run; "
        "nothing to compare)"]
    assert lines[-1].endswith(", 3 only in the new one")


@pytest.mark.parametrize("direction", ["higher", "lower"])
@pytest.mark.parametrize("old, new", [(1.0, 2.0), (2.0, 1.0), (1.0, 100.0), (100.0, 1.0)])
def test_a_value_whose_bound_flag_is_unknown_proves_nothing_either_way(old, new, direction):
    """A number whose flag did not record may be a lower or an upper bound: no change from or
    to it is a regression or an improvement, however far it moved (make compare and history)."""
    from impls.harness.report import history_steps

    assert compare.judge_bounded(old, new, "", compare.UNKNOWN_BOUND, direction, 0.1) == compare.BOUND
    assert compare.judge_bounded(old, new, compare.UNKNOWN_BOUND, "", direction, 0.1) == compare.BOUND
    steps = history_steps.series_steps([old] * 6 + [new] * 6, direction, None,
                                       bounds=[""] * 6 + [compare.UNKNOWN_BOUND] * 6)
    assert [kind for *_, kind in steps] in ([], ["change"])


def test_a_history_step_is_judged_against_every_place_it_could_be_cut():
    """Between 40 commits a step could be cut at 39 places: the level threshold allows for
    that many looks, so a 3.7% step (within it, beyond the one-look threshold) is no step."""
    from impls.harness.report import history_steps

    sigma, df = 0.02, 20
    t = noise.Threshold("b", "", runs=3, spread=0.03, threshold=noise.two_run_threshold(sigma, df), sigma=sigma, df=df)
    assert t.level_threshold(20, 20, 1) < 0.037 < t.level_threshold(20, 20, 39)
    assert history_steps.series_steps([1.0] * 20 + [1.037] * 20, "lower", t) == []
    assert [kind for *_, kind in history_steps.series_steps([1.0] * 20 + [1.06] * 20, "lower", t)] == ["regression"]
