"""Bootstrap intervals over the test points of a pair's time-to-target and per-iteration
ratios: the target, the crossings and the ratios are recomputed on each resample."""
from __future__ import annotations

import numpy as np
import pytest

from impls.slide.core import evaluate as ev
from impls.slide.experiments import targets


def run(name, p_at_1, seconds, n=300, base=0.02, digest="same", seed=0):
    """A run whose evaluations score ``n`` points with hits drawn at the given rates."""
    rng = np.random.default_rng(seed)
    curve = []
    for p, s in zip(p_at_1, seconds):
        hits = rng.random(n) < p
        curve.append({"seconds": float(s), "iteration": int(s * 10), "p_at_1": float(hits.mean()),
                      "hits_at_1": ev.pack_hits(hits)})
    b = rng.random(n) < base
    return {"name": name, "curve": curve, "final_p_at_1": curve[-1]["p_at_1"], "baseline_p_at_1": float(b.mean()),
            "baseline_hits_at_1": ev.pack_hits(b), "eval_points": n, "train_seconds": float(seconds[-1]),
            "samples_per_second": 100.0, "iterations": int(seconds[-1] * 10), "eval_rows_digest": digest}


def test_hits_pack_and_unpack_to_the_same_bools_and_refuse_a_wrong_length():
    hits = np.random.default_rng(1).random(301) < 0.3
    assert np.array_equal(ev.unpack_hits(ev.pack_hits(hits), 301), hits)
    with pytest.raises(ValueError, match="hold 38 bytes, 290 rows need 37"):
        ev.unpack_hits(ev.pack_hits(hits), 290)


def test_a_clear_lead_has_a_narrow_interval_around_the_ratio():
    fast = run("slide", [0.02, 0.3, 0.5, 0.5, 0.5], [0, 2, 4, 8, 16], n=2000, seed=1)
    slow = run("dense", [0.02, 0.05, 0.1, 0.3, 0.5], [0, 2, 4, 8, 16], n=2000, seed=2)
    out = targets.speedup(fast, slow, 0.5)
    low, high = out["intervals"]["time_to_target_ratio"]
    assert low <= out["value"] <= high and high / low < 1.5
    assert out["intervals"]["method"].startswith("bootstrap over the test points (paired")


def test_two_runs_on_one_plateau_have_a_wide_interval_that_the_point_value_hides():
    """Both end at P@1 0.13: which of them sets the target, and whether the slower one
    reaches it, is a draw of the test points; the point value alone would hide that."""
    fast = run("slide", [0.02, 0.08, 0.12, 0.13, 0.13], [0, 5, 10, 20, 30], seed=3)
    slow = run("dense", [0.02, 0.05, 0.09, 0.12, 0.13], [0, 5, 10, 20, 30], seed=4)
    out = targets.speedup(fast, slow, 0.8)
    low, high = out["intervals"]["time_to_target_ratio"]
    assert high / low > 2


def test_the_intervals_are_the_same_for_the_same_runs():
    fast = run("slide", [0.02, 0.1, 0.2], [0, 5, 10], seed=5)
    slow = run("dense", [0.02, 0.05, 0.15], [0, 5, 10], seed=6)
    assert targets.sampling_intervals(fast, slow, 0.8) == targets.sampling_intervals(fast, slow, 0.8)


def test_runs_scored_on_other_points_are_resampled_independently():
    fast = run("slide", [0.02, 0.1, 0.2], [0, 5, 10], digest="a", seed=7)
    slow = run("dense", [0.02, 0.05, 0.15], [0, 5, 10], n=200, digest="b", seed=8)
    assert "(independent," in targets.sampling_intervals(fast, slow, 0.8)["method"]


def test_a_run_without_per_point_hits_gives_a_reason_not_an_interval():
    fast = run("slide", [0.02, 0.1, 0.2], [0, 5, 10])
    slow = run("dense", [0.02, 0.05, 0.15], [0, 5, 10])
    for point in slow["curve"]:
        del point["hits_at_1"]
    out = targets.sampling_intervals(fast, slow, 0.8)
    assert set(out) == {"reason"} and "per-point hits" in out["reason"]


def test_no_interval_where_many_resamples_have_no_target():
    """A pair barely off the plateau: in many resamples no run beats the popular label by two
    standard errors, so there is no target and nothing to bound."""
    fast = run("slide", [0.02, 0.03, 0.035], [0, 5, 10], base=0.02, seed=9)
    slow = run("dense", [0.02, 0.02, 0.03], [0, 5, 10], base=0.02, seed=10)
    out = targets.sampling_intervals(fast, slow, 0.8)
    assert out["time_to_target_ratio"] is None and out["no_value_fraction"]["time_to_target_ratio"] > 0.025


def _edit_resamples(monkeypatch, edit):
    """Make :func:`targets.speedup`, as the bootstrap calls it (``intervals=False``), pass each
    resample's result through ``edit(out, i)``, ``i`` counting the resamples from 0."""
    calls = iter(range(10**6))
    real = targets.speedup

    def edited(f, s, fraction, intervals=True):
        out = real(f, s, fraction, intervals=intervals)
        if not intervals:
            edit(out, next(calls))
        return out

    monkeypatch.setattr(targets, "speedup", edited)


@pytest.mark.parametrize("without, interval", [(25, True), (26, False)])
def test_at_most_two_and_a_half_percent_of_draws_without_a_value_give_an_interval(monkeypatch, without, interval):
    """25 of 1,000 is at most 2.5%: the count decides, not a float that rounds past it; at 26
    the data cannot bound the ratio, so there is no interval."""
    fast = run("slide", [0.02, 0.1, 0.2], [0, 5, 10], seed=11)
    slow = run("dense", [0.02, 0.05, 0.15], [0, 5, 10], seed=12)
    _edit_resamples(monkeypatch, lambda out, i: out.update(value=None) if i < without else None)
    out = targets.sampling_intervals(fast, slow, 0.8)
    assert out["no_value_fraction"]["time_to_target_ratio"] == without / 1000
    assert (out["time_to_target_ratio"] is not None) is interval


def test_the_interval_runs_from_the_2_5th_to_the_97_5th_percentile_of_the_resamples(monkeypatch):
    """The resamples' own values, one per draw in order: the interval is their 2.5th and
    97.5th percentiles, a 95% interval (not a narrower one that straddles a band less often)."""
    fast = run("slide", [0.02, 0.1, 0.2], [0, 5, 10], seed=13)
    slow = run("dense", [0.02, 0.05, 0.15], [0, 5, 10], seed=14)
    _edit_resamples(monkeypatch, lambda out, i: out.update(value=float(i), p_at_1_per_iteration_range=(i, 2 * i)))
    out = targets.sampling_intervals(fast, slow, 0.8, resamples=1000)
    ranks = np.arange(1000, dtype=np.float64)
    assert out["time_to_target_ratio"] == pytest.approx([np.percentile(ranks, 2.5), np.percentile(ranks, 97.5)])
    assert out["p_at_1_per_iteration_ratio"] == pytest.approx([np.percentile(ranks, 2.5),
                                                               np.percentile(2 * ranks, 97.5)])


def test_two_runs_of_the_same_hits_on_the_same_points_have_no_spread_when_paired():
    """Paired resampling draws the same points for both runs: identical runs then tie in every
    resample (an unpaired draw would give them a spread that is not in the data)."""
    import copy

    fast = run("slide", [0.02, 0.1, 0.2, 0.3], [0, 5, 10, 20], seed=15)
    slow = copy.deepcopy(fast)
    slow["name"] = "dense"
    out = targets.sampling_intervals(fast, slow, 0.8)
    assert out["method"].startswith("bootstrap over the test points (paired")
    assert out["time_to_target_ratio"] == [1.0, 1.0] and out["p_at_1_per_iteration_ratio"] == [1.0, 1.0]


@pytest.mark.parametrize("edit", ["other points", "bad hex", "null hits"])
def test_hits_that_do_not_fit_their_run_give_a_reason_not_a_crash(edit):
    fast = run("slide", [0.02, 0.1, 0.2], [0, 5, 10], seed=13)
    slow = run("dense", [0.02, 0.05, 0.15], [0, 5, 10], seed=14)
    if edit == "other points":
        slow["eval_points"] = 7                  # same digest, another count: the hits cannot be its points
    elif edit == "bad hex":
        slow["curve"][1]["hits_at_1"] = "zz"
    else:
        slow["curve"][1]["hits_at_1"] = None
    out = targets.sampling_intervals(fast, slow, 0.8)
    assert set(out) == {"reason"} and "do not unpack" in out["reason"]


def test_the_bracket_is_the_two_evaluations_around_an_iteration():
    curve = [{"iteration": i, "p_at_1": p} for i, p in ((10, 0.1), (35, 0.004), (60, 0.078))]
    assert targets.p_at_1_at_iteration(curve, 46) == pytest.approx((0.004 + 11 / 25 * 0.074, 0.004, 0.078))
    assert targets.p_at_1_at_iteration(curve, 35) == (0.004, 0.004, 0.004)    # an evaluation at it: no gap
    assert targets.p_at_1_at_iteration(curve, 10) == (0.1, 0.1, 0.1)
    assert targets.p_at_1_at_iteration(curve, 61) is None and targets.p_at_1_at_iteration(curve, 9) is None


def test_accuracy_per_iteration_between_two_distant_evaluations_has_an_interval_across_the_gap():
    """The fast run is evaluated at iterations 0, 350, 600 (P@1 0.02, 0.05, 0.4); the slow one
    ends at 460. A straight line reads 0.2 there, but the fast run's P@1 may have been
    anywhere from 0.05 to 0.4: the interval must hold that, not only the test points' noise."""
    fast = run("slide", [0.02, 0.05, 0.4], [0, 35, 60], n=2000, seed=15)
    slow = run("dense", [0.02, 0.1, 0.2], [0, 20, 46], n=2000, seed=16)
    out = targets.speedup(fast, slow, 0.8)
    low_end, high_end = out["p_at_1_per_iteration_range"]
    assert low_end < out["p_at_1_per_iteration_ratio"] < high_end
    low, high = out["intervals"]["p_at_1_per_iteration_ratio"]
    assert low < 0.5 * out["p_at_1_per_iteration_ratio"] and high > 1.5 * out["p_at_1_per_iteration_ratio"]
    assert low <= low_end and high >= high_end * 0.9


def test_accuracy_per_iteration_at_an_evaluation_has_only_the_test_points_noise():
    fast = run("slide", [0.02, 0.1, 0.3], [0, 23, 46], n=2000, seed=17)
    slow = run("dense", [0.02, 0.1, 0.2], [0, 23, 46], n=2000, seed=18)
    out = targets.speedup(fast, slow, 0.8)
    assert out["p_at_1_per_iteration_range"][0] == out["p_at_1_per_iteration_range"][1]
    low, high = out["intervals"]["p_at_1_per_iteration_ratio"]
    assert low < out["p_at_1_per_iteration_ratio"] < high and high / low < 1.4
