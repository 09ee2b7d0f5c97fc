"""Time to a target P@1, the target itself, and the speed-up of one training run over another.

The target P@1 of a dataset is ``target_fraction`` of the way from the most-popular-label
P@1 to the best final P@1 of every run on it, so at least one run reaches it and nobody
tunes it by hand (the curves and figures use it); a comparison of two runs uses the pair's
own target, the same fraction of the way to the better of their two final P@1, so it does
not depend on which other runs the sweep holds. There is no target when no run beats the
most-popular label by two standard errors.

A run reaches the target when the monotone fit of its P@1 curve does (:func:`monotone_fit`:
the non-decreasing sequence closest to the evaluations in least squares), interpolated
linearly between the two evaluations around the crossing. One evaluation that is high by
chance (one standard error is ~0.014 at P@1 0.06 on 300 points) is pooled with the lower
ones after it, so it does not time a crossing by itself; on a curve that only rises the fit
is the curve. Neither crossing is unbiased on binomial noise of 300 test points: on a curve
that levels off near the target the fit's is late by about 5-15% of the true time (the raw
curve's is about right), on a curve still rising at the end both are early by about as much;
about 1-4% at 5,000 points. A pair's time-to-target ratio then reads about 10% low at 300
points (median), which its bootstrap interval covers; the spread of the two crossings is
alike (it shrinks with more test points, not with the fit). The fit reads later
evaluations: a run's time to target can move if it trains longer. The best run's fit ends
at or above its final P@1, so it always reaches the target.

A run that never reaches the target within its budget has no time; a speed-up against it
is then a lower bound (its training seconds over the other's time) and is flagged so; a
speed-up of such a run over one that reaches the target is an upper bound (flagged too).

The test points are a sample, and so is every P@1 the target and the crossings read:
:func:`sampling_intervals` redraws the points (a paired bootstrap over the runs' per-point
hits, where both runs were scored on the same points) and gives the 95% interval of a pair's
time-to-target ratio and accuracy-per-iteration ratio, so a verdict is not read off one
draw of test points.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np


def monotone_fit(values) -> np.ndarray:
    """The non-decreasing float64 sequence closest to ``values`` in least squares (isotonic
    regression, equal weights, by pooling adjacent violators): same length, same sum, and
    ``values`` itself when it never decreases. Its last element is the largest mean of any
    tail of ``values`` (so never below the last value)."""
    means, counts = [], []
    for v in np.asarray(values, np.float64).ravel():
        means.append(float(v))
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            m, c = means.pop(), counts.pop()
            means[-1] = (means[-1] * counts[-1] + m * c) / (counts[-1] + c)
            counts[-1] += c
    return np.repeat(np.asarray(means, np.float64), counts)


def fitted_p_at_1(curve: list[dict]) -> np.ndarray:
    """:func:`monotone_fit` of the curve's P@1, one value per evaluation (P@1, 0-1)."""
    return monotone_fit([p["p_at_1"] for p in curve])


def time_to_target(curve: list[dict], target: float) -> tuple[float | None, float | None]:
    """(seconds, iterations) at which the monotone fit of the curve's P@1 first reaches
    ``target``, interpolated linearly between the evaluations around the crossing;
    ``(None, None)`` if it never does. A fit at the target from the first evaluation gives
    that evaluation's time: the latest the crossing can have been (:func:`at_target_from_start`)."""
    fit = fitted_p_at_1(curve)
    for i, (point, value) in enumerate(zip(curve, fit)):
        if value >= target:
            if i == 0:  # past it, fit[i - 1] < target <= value: no division by 0 below
                return float(point["seconds"]), float(point["iteration"])
            prev, f = curve[i - 1], (target - fit[i - 1]) / (value - fit[i - 1])
            return (float(prev["seconds"] + f * (point["seconds"] - prev["seconds"])),
                    float(prev["iteration"] + f * (point["iteration"] - prev["iteration"])))
    return None, None


def at_target_from_start(curve: list[dict], target: float) -> bool:
    """Whether the monotone fit of ``curve``'s P@1 is at ``target`` already at the first
    evaluation and that evaluation came after 0 s: the run crossed somewhere before it, so
    :func:`time_to_target`'s time is only an upper bound on the crossing's."""
    return bool(curve) and curve[0]["seconds"] > 0 and bool(fitted_p_at_1(curve)[0] >= target)


def p_at_1_at_iteration(curve: list[dict], iteration: float) -> tuple[float, float, float] | None:
    """(P@1 read linearly between the evaluations around ``iteration``, the lower and the
    higher P@1 of those two evaluations) of ``curve`` (the one evaluation's thrice where one is
    at ``iteration``; None beyond the curve's ends). The second and third bound where the
    P@1 lay at ``iteration`` if it moved monotonically between evaluations, whatever the
    straight line reads."""
    its = [p["iteration"] for p in curve]
    if not curve or iteration > its[-1] or iteration < its[0]:
        return None
    after = int(np.searchsorted(its, iteration, side="left"))
    before = after if its[after] == iteration else after - 1
    pair = (float(curve[before]["p_at_1"]), float(curve[after]["p_at_1"]))
    return float(np.interp(iteration, its, [p["p_at_1"] for p in curve])), min(pair), max(pair)


def _outside_curve(fast: str, curve: list[dict], slow: str, iteration: float) -> str:
    """Why ``fast``'s ``curve`` has no P@1 at ``slow``'s last ``iteration``, in words."""
    if not curve:
        return f"{fast} has no evaluation to read a P@1 from"
    first, last = curve[0]["iteration"], curve[-1]["iteration"]
    where = f"ends at iteration {last}" if iteration > last else f"starts at iteration {first}"
    return f"{fast}'s curve {where}, outside {slow}'s last iteration ({iteration}): no P@1 of it to match"


def rate_over_batches(run: dict, batches: int) -> float | None:
    """Samples/s over the run's first ``batches`` batches (seconds read off its curve, linear
    between evaluations from 0 s at batch 0), so runs of one method with other budgets are
    compared on the same work: early batches cost more (larger active sets, more table
    upkeep), and a shorter run holds only those. The run's own ``samples_per_second`` where
    its curve or batch count cannot say."""
    iterations, samples = run.get("iterations"), run.get("samples")
    curve = [p for p in run.get("curve") or []
             if all(isinstance(p.get(k), (int, float)) and math.isfinite(p[k]) for k in ("seconds", "iteration"))]
    if not (iterations and samples and batches and curve) or batches > iterations:
        return run.get("samples_per_second")
    seconds = float(np.interp(batches, [0.0] + [p["iteration"] for p in curve],
                              [0.0] + [p["seconds"] for p in curve]))
    return batches * samples / iterations / seconds if seconds > 0 else run.get("samples_per_second")


def target_p_at_1(runs: list[dict], fraction: float) -> float | None:
    """The P@1 to reach: ``fraction`` of the way from the most-popular-label P@1 (the runs'
    ``baseline_p_at_1``; 0 when unknown) to the best final P@1 among ``runs``, or None when
    no run beats that baseline by two standard errors of a P@1 on its test points (a
    target below that would time noise around a model that predicts the popular label)."""
    measured = [r for r in runs if "curve" in r]
    if not measured:
        return None
    baseline, best, _, margin = _plateau(measured)
    if best <= baseline + margin:
        return None
    return baseline + fraction * (best - baseline)


def _plateau(measured: list[dict]) -> tuple[float, float, int, float]:
    """(most-popular-label P@1, best final P@1, fewest test points, two standard errors of a
    P@1 at that baseline on those points) over runs with curves."""
    baseline = max(float(r.get("baseline_p_at_1") or 0.0) for r in measured)
    best = max(r["final_p_at_1"] for r in measured)
    points = min(int(r.get("eval_points") or 0) for r in measured)
    margin = 2.0 * math.sqrt(baseline * (1.0 - baseline) / points) if points > 0 else 0.0
    return baseline, best, points, margin


def no_target_reason(runs: list[dict]) -> str:
    """Why :func:`target_p_at_1` of ``runs`` is None, in one line for a report: each run with
    its training budget, the baseline and the margin it had to beat."""
    measured = [r for r in runs if "curve" in r]
    if not measured:
        return "no run has a P@1 curve"
    baseline, best, points, margin = _plateau(measured)
    names = " nor ".join(f"{r.get('name', 'a run')} ({float(r.get('train_seconds') or 0.0):.0f} s)"
                         for r in measured)
    return (f"no target to time: {'neither ' if len(measured) > 1 else ''}{names} beat the most-popular-label "
            f"P@1 ({baseline:.3f}) by two standard errors ({margin:.3f} on {points} test points); "
            f"best final P@1 {best:.3f}")


def add_targets(runs: list[dict], fraction: float) -> float | None:
    """Set ``target_p_at_1``, ``time_to_target_s``, ``iterations_to_target`` and the bounds
    on that time on every measured run (in place; see :func:`target_p_at_1`); return the target.
    ``time_to_target_is_upper_bound``: the run was at the target from a first evaluation
    after 0 s (:func:`at_target_from_start`), so its time is the latest the crossing can have
    been. ``time_to_target_is_lower_bound``: there is a target and the run never reached it
    (``time_to_target_s`` None): it needed more than its ``train_seconds``."""
    target = target_p_at_1(runs, fraction)
    for r in runs:
        if "curve" in r:
            r["target_p_at_1"] = target
            r["time_to_target_s"], r["iterations_to_target"] = (
                time_to_target(r["curve"], target) if target is not None else (None, None))
            r["time_to_target_is_upper_bound"] = (r["time_to_target_s"] is not None
                                                  and at_target_from_start(r["curve"], target))
            r["time_to_target_is_lower_bound"] = target is not None and r["time_to_target_s"] is None
    return target


def speedup(fast: dict, slow: dict, fraction: float | None = None, intervals: bool = True) -> dict[str, Any]:
    """Time-to-target of ``slow`` over that of ``fast``: exact when both reach the target
    (a lower bound where ``fast``, an upper bound where ``slow``, was at it from a first
    evaluation after 0 s, :func:`at_target_from_start`; none where both were), a
    lower bound when only ``fast`` does (``slow``'s budget over ``fast``'s time), an upper
    bound when only ``slow`` does (``slow``'s time over ``fast``'s budget: ``fast`` needed
    longer than its whole budget; ``upper_bound`` set), undefined (None) when neither does,
    or when ``slow``'s budget ended before ``fast`` reached the target (a bound below 1 says
    nothing). ``no_value`` says why a value is None. A bound holds for this target: with the pair's own
    target, a run that trained longer could have raised it (so budgets should match).

    The target is the runs' ``target_p_at_1`` (set by :func:`add_targets`) or, with
    ``fraction``, the pair's own (:func:`target_p_at_1` of the two runs), so a
    comparison does not depend on which other runs the sweep holds (``target_p_at_1``
    in the result, None when neither run beat the most-popular-label P@1; times in
    ``fast_time_to_target_s`` / ``slow_time_to_target_s``). ``p_at_1_per_iteration_ratio``:
    the fast run's P@1 at the slow run's last iteration (interpolated) over the slow run's
    final P@1 (None outside the fast run's curve, when that final is 0, or when it does not
    beat the most-popular-label P@1 by two standard errors: ``per_iteration_no_value`` says
    which), and
    ``p_at_1_per_iteration_range``, the same ratio at the fast run's two evaluations around
    that iteration (:func:`p_at_1_at_iteration`: low, high). With ``fraction`` and
    ``intervals``, ``intervals`` holds :func:`sampling_intervals` of the pair.
    """
    out = {"fast": fast.get("name"), "slow": slow.get("name"), "value": None, "lower_bound": False,
           "upper_bound": False}
    if "curve" not in fast or "curve" not in slow:
        out["no_value"] = out["per_iteration_no_value"] = " and ".join(   # a failed run says why (run_failures)
            f"{r.get('name')} failed ({r['failed']})" if "failed" in r else f"{r.get('name')} recorded no training curve"
            for r in (fast, slow) if "curve" not in r)
        return out
    out["throughput_ratio"] = fast["samples_per_second"] / slow["samples_per_second"]
    fp, sp = fast["final_p_at_1"], slow["final_p_at_1"]
    out["final_p_at_1_difference"] = fp - sp
    # accuracy per iteration: the fast run's P@1 at the slow run's last iteration
    at = p_at_1_at_iteration(fast["curve"], slow["iterations"])
    out["p_at_1_per_iteration_ratio"] = at[0] / sp if at is not None and sp > 0 else None
    if out["p_at_1_per_iteration_ratio"] is not None:
        out["p_at_1_per_iteration_range"] = [at[1] / sp, at[2] / sp]
    else:
        out["per_iteration_no_value"] = (_outside_curve(out["fast"], fast["curve"], out["slow"], slow["iterations"])
                                         if at is None else f"{out['slow']}'s final P@1 is 0: no ratio over it")
    baseline, _, points, margin = _plateau([slow])
    if out["p_at_1_per_iteration_ratio"] is not None and sp <= baseline + margin:
        out["p_at_1_per_iteration_ratio"] = None     # a ratio over noise around the popular label
        del out["p_at_1_per_iteration_range"]
        out["per_iteration_no_value"] = (
            f"{out['slow']}'s final P@1 ({sp:.3f}) does not beat the most-popular-label P@1 ({baseline:.3f}) "
            f"by two standard errors ({margin:.3f} on {points} test points): no accuracy per iteration to match")
    if fraction is None:
        out["target_p_at_1"] = fast.get("target_p_at_1")
        t_fast, t_slow = fast.get("time_to_target_s"), slow.get("time_to_target_s")
    else:
        target = out["target_p_at_1"] = target_p_at_1([fast, slow], fraction)
        if target is None:
            t_fast = t_slow = None
        else:
            t_fast, t_slow = time_to_target(fast["curve"], target)[0], time_to_target(slow["curve"], target)[0]
    out["fast_time_to_target_s"], out["slow_time_to_target_s"] = t_fast, t_slow
    if fraction is not None and intervals:
        out["intervals"] = sampling_intervals(fast, slow, fraction)
    if t_fast is None and t_slow is not None and fast["train_seconds"] > 0:
        out["value"], out["upper_bound"] = t_slow / fast["train_seconds"], True
        return out
    if out["target_p_at_1"] is None:
        out["no_value"] = no_target_reason([fast, slow])
        return out
    if t_fast is None:
        out["no_value"] = (f"neither {out['fast']} ({fast['train_seconds']:.0f} s) nor {out['slow']} "
                           f"({slow['train_seconds']:.0f} s) reached the target P@1 {out['target_p_at_1']:.3f}")
        return out
    if t_fast == 0:
        out["no_value"] = f"{out['fast']} was at the target from its first evaluation, at 0 s: no ratio"
        return out
    t_fast = max(t_fast, 1e-9)
    early_fast, early_slow = (at_target_from_start(r["curve"], out["target_p_at_1"]) for r in (fast, slow))
    if t_slow is not None and early_fast and early_slow:
        out["no_value"] = (f"both were at the target from their first evaluations ({out['fast']} at {t_fast:.1f} s, "
                           f"{out['slow']} at {t_slow:.1f} s): the crossings lie before them, no bound on the ratio")
    elif t_slow is not None:    # a crossing before the first evaluation: the ratio a bound, on that side
        out["value"], out["lower_bound"], out["upper_bound"] = t_slow / t_fast, early_fast, early_slow
    elif slow["train_seconds"] >= t_fast:
        out["value"], out["lower_bound"] = slow["train_seconds"] / t_fast, True
    else:
        out["no_value"] = (f"{out['slow']} stopped after {slow['train_seconds']:.1f} s, before {out['fast']} "
                           f"reached the target ({t_fast:.1f} s): no bound on the ratio")
    return out


BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20261204


def _hits(run: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """The run's per-point top-1 hits, evaluations × points (bool), and its most-popular-label
    hits (points), or None when its curve predates them or they do not unpack to its
    ``eval_points`` (an edited artifact)."""
    from impls.slide.core.evaluate import unpack_hits

    n = int(run.get("eval_points") or 0)
    curve = run.get("curve") or []
    if n <= 0 or not curve or any(not isinstance(p.get("hits_at_1"), str) for p in curve) \
            or not isinstance(run.get("baseline_hits_at_1"), str):
        return None
    try:
        return np.stack([unpack_hits(p["hits_at_1"], n) for p in curve]), unpack_hits(run["baseline_hits_at_1"], n)
    except ValueError:
        return None


def sampling_intervals(fast: dict, slow: dict, fraction: float, resamples: int = BOOTSTRAP_RESAMPLES,
                       seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """95% bootstrap intervals, over the test points, of :func:`speedup`'s ``value`` (time to
    the pair's own target, slow over fast; a bound where the resampled pair gives one) and
    ``p_at_1_per_iteration_ratio`` (from the 2.5th percentile of its range's low end to the
    97.5th of its high end: the fast run's P@1 anywhere between its two evaluations around
    the slow run's last iteration, not only where a straight line between them reads it):
    ``{"time_to_target_ratio": [low, high] | None,
    "p_at_1_per_iteration_ratio": [low, high] | None, "method", "resamples",
    "no_value_fraction": {...}}``, or ``{"reason"}`` alone when the runs lack per-point hits.

    Each resample draws the points with replacement: the same draw for both runs when their
    ``eval_rows_digest`` match (paired: both were scored on the same points), independent
    draws of each run's own points otherwise. The target, both crossings and the ratios are
    recomputed on the resampled curves (the most-popular-label P@1 too). An interval is None
    when more than 2.5% of the resamples have no value (no target, or neither run reaching
    it): the data cannot bound it then. The draws are seeded, so the interval is the same
    for the same runs."""
    unpacked = [_hits(fast), _hits(slow)]
    if any(h is None for h in unpacked):
        return {"reason": "a run without per-point hits (an artifact from before them), or with hits that do "
                          "not unpack to its eval_points"}
    hits, base = [h for h, _ in unpacked], [b for _, b in unpacked]
    n = [h.shape[1] for h in hits]
    paired = (fast.get("eval_rows_digest") is not None and fast.get("eval_rows_digest") == slow.get("eval_rows_digest")
              and n[0] == n[1])
    rng = np.random.default_rng(seed)
    draws = []                           # per run: resamples × points, counts of each point
    for k in n:
        if paired and draws:
            draws.append(draws[0])
        else:
            draws.append(rng.multinomial(k, np.full(k, 1.0 / k), size=resamples).astype(np.float64))
    p1 = [(d @ h.T.astype(np.float64)) / k for d, h, k in zip(draws, hits, n)]    # resamples × evaluations
    b1 = [(d @ b.astype(np.float64)) / k for d, b, k in zip(draws, base, n)]      # resamples
    ratios, per_iteration = [], []
    for i in range(resamples):
        pair = [_resampled(run, curve[i], baseline[i]) for run, curve, baseline in zip((fast, slow), p1, b1)]
        result = speedup(pair[0], pair[1], fraction, intervals=False)
        ratios.append((result["value"],) * 2)
        per_iteration.append(result.get("p_at_1_per_iteration_range") or (None, None))
    out: dict[str, Any] = {"method": f"bootstrap over the test points ({'paired' if paired else 'independent'}, "
                                     f"{resamples} resamples, 95%); accuracy per iteration between the fast "
                                     f"run's two evaluations around the slow run's last iteration",
                           "resamples": resamples, "no_value_fraction": {}}
    for key, values in (("time_to_target_ratio", ratios), ("p_at_1_per_iteration_ratio", per_iteration)):
        got = np.asarray([v for v in values if v[0] is not None and all(map(math.isfinite, v))], np.float64)
        missing = resamples - len(got)
        out["no_value_fraction"][key] = missing / resamples
        out[key] = ([float(np.percentile(got[:, 0], 2.5)), float(np.percentile(got[:, 1], 97.5))]
                    if len(got) and missing * 40 <= resamples else None)     # at most 2.5% without a value
    return out


def _resampled(run: dict, p_at_1: np.ndarray, baseline: float) -> dict:
    """``run`` with its curve's P@1, final P@1 and most-popular-label P@1 replaced by a
    resample's (the fields :func:`speedup` reads)."""
    curve = [{"seconds": p["seconds"], "iteration": p["iteration"], "p_at_1": float(v)}
             for p, v in zip(run["curve"], p_at_1)]
    return {**{k: run[k] for k in ("name", "train_seconds", "samples_per_second", "iterations", "eval_points")
               if k in run},
            "curve": curve, "final_p_at_1": curve[-1]["p_at_1"], "baseline_p_at_1": float(baseline)}
