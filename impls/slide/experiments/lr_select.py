"""Choose a learning rate per method on a held-out slice of the training set: a one-off
selection whose outcome a person puts in ``impls/profiles.toml``, not part of the suite.

    python -m impls.slide.experiments.lr_select [--experiment slide_train] [--profile quick]
        [--runs slide,dense-cpu] [--lrs 1e-3,3e-3,1e-2] [--holdout 1000] [--eval-points N]
        [--json out.json]

Every run named in ``--runs`` is the profile's run of that name (its method, threads,
configuration and time budget, as the suite trains it), trained once per rate on the
experiment's training set less a fixed random slice of ``--holdout`` points, and evaluated
on that slice only (never on the test split, which the suite reports). A run's rate is the
one whose curve's monotone fit ends highest (the level its last evaluations hold, see
:mod:`impls.slide.experiments.targets`), if it beats the rate the profile already gives
(``lr`` in the run's spec, else ``SlideConfig.lr``) by more than two standard errors of the
difference of two P@1 on the slice (about 95% two-sided); otherwise they are tied and the
current rate stays, so the rate changes only on evidence. A run whose best rate does not beat
the most popular label's P@1 on the slice by as much learned nothing at any rate, and keeps
its current rate too.
Prints one line per training and the choice per run; ``--json`` writes them.
"""
from __future__ import annotations

import gc
import math
import sys
from typing import Any

import numpy as np

from impls.harness import cli, profiles

DEFAULT_LRS = (1e-3, 3e-3, 1e-2)


def split_holdout(n_points: int, holdout: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, held-out rows): a fixed random ``holdout`` of ``range(n_points)`` and the
    rest, each sorted; disjoint and together every row."""
    if not 0 < holdout < n_points:
        raise ValueError(f"holdout must lie in [1, {n_points - 1}], got {holdout}")
    order = np.random.default_rng(seed).permutation(n_points)
    return np.sort(order[holdout:]), np.sort(order[:holdout])


def two_standard_errors(p: float, q: float, points: int) -> float:
    """Two standard errors of the difference of two independent P@1 estimates ``p`` and ``q``
    on ``points`` points each (binomial; 0 when ``points`` is 0)."""
    p, q = min(max(p, 0.0), 1.0), min(max(q, 0.0), 1.0)
    return 2.0 * math.sqrt((p * (1 - p) + q * (1 - q)) / points) if points > 0 else 0.0


def choose(results: list[dict], current_lr: float, points: int, baseline: float = 0.0) -> dict[str, Any]:
    """The rate to use among ``results`` (each ``{"lr", "fitted_final"}``, P@1 on ``points``
    held-out points): the highest fitted final if it beats both the current rate's and
    ``baseline`` (the most popular label's P@1 on the same points) by more than
    :func:`two_standard_errors`; else the current rate, if it was tried. Returns ``{"lr",
    "best_lr", "margin", "learned", "kept_current"}``: ``margin`` is the two standard errors
    the best had to beat the current rate by (None when the current rate was not tried),
    ``learned`` whether the best beat the baseline."""
    results = [r for r in results if not r.get("diverged")]   # a rate whose training diverged is no choice
    if not results:
        raise ValueError("training diverged at every rate tried; try smaller --lrs")
    best = max(results, key=lambda r: r["fitted_final"])
    b = best["fitted_final"]
    learned = bool(b - baseline > two_standard_errors(b, baseline, points))
    current = next((r for r in results if math.isclose(r["lr"], current_lr)), None)
    margin = None if current is None else two_standard_errors(b, current["fitted_final"], points)
    keep = current is not None and (not learned or b - current["fitted_final"] <= margin)
    return {"lr": current_lr if keep else best["lr"], "best_lr": best["lr"], "margin": margin,
            "learned": learned, "kept_current": keep}


def select(experiment: str = "slide_train", profile: str | None = None, runs: list[str] | None = None,
           lrs: tuple[float, ...] = DEFAULT_LRS, holdout: int = 1000, eval_points: int | None = None,
           progress=print) -> dict[str, Any]:
    """Train each run of ``[<experiment>.<profile>]`` named in ``runs`` at each rate in ``lrs`` on
    the training set less ``holdout`` points and evaluate on ``eval_points`` of those (default:
    the profile's, at most ``holdout``); return ``{"experiment", "profile", "holdout",
    "eval_points", "runs": {name: {"dataset", "current_lr", "trials": [...], "choice": {...}}}}``
    (a trial: ``lr``, and ``diverged`` (why) where training diverged, else ``fitted_final`` and
    ``final_p_at_1`` (P@1 on the slice),
    ``baseline_p_at_1`` (the most popular training label's), ``iterations``,
    ``samples_per_second``, ``curve``)."""
    from impls.slide.core.config import SlideConfig, TrainingDiverged
    from impls.slide.data.dataset import from_registry
    from impls.slide.experiments import sweeps
    from impls.slide.experiments.targets import fitted_p_at_1

    profile = profiles.resolve(profile)
    s = sweeps.sizes(profile, experiment)
    specs = {spec["name"]: spec for spec in s["runs"]}
    runs = runs or [name for name in ("slide", "dense-cpu") if name in specs]
    unknown = [name for name in runs if name not in specs]
    if unknown:
        raise ValueError(f"no run {', '.join(unknown)} in [{experiment}]; it has {', '.join(specs)}")
    splits: dict[str, tuple] = {}  # dataset -> (training less the slice, the slice)
    points = min(int(eval_points or s["eval_points"]), holdout)
    out = {"experiment": experiment, "profile": profile, "holdout": holdout, "eval_points": points, "runs": {}}
    for name in runs:
        spec = specs[name]
        if spec.get("device", "cpu") != "cpu":
            raise ValueError(f"run {name} is on {spec['device']}; the selection runs on the CPU")
        dataset = spec.get("dataset") or s["dataset"]
        if dataset not in splits:
            full, _, _ = from_registry(dataset, profile)
            rows, held_rows = split_holdout(full.n_points, holdout)
            splits[dataset] = full.subset(rows), full.subset(held_rows)
        train, held = splits[dataset]
        config = sweeps.config_of(spec)
        current = float(config.pop("lr", SlideConfig.lr))
        kw = {**sweeps.run_kwargs(s, spec["method"], "cpu", spec.get("time_budget_s"), spec.get("warmup_steps")),
              "eval_points": points}
        trials = []
        for lr in lrs:
            try:
                r = sweeps.train_method(spec["method"], SlideConfig(lr=lr, **config), train, held, "cpu", **kw)
            except TrainingDiverged as err:
                trials.append({"lr": lr, "diverged": str(err)})
                progress(f"{name} lr {lr:g}: {err}")
                continue
            trial = {"lr": lr, "fitted_final": float(fitted_p_at_1(r["curve"])[-1]), "final_p_at_1": r["final_p_at_1"],
                     "baseline_p_at_1": float(r.get("baseline_p_at_1") or 0.0),
                     "iterations": r["iterations"], "samples_per_second": r["samples_per_second"],
                     "curve": [{k: p[k] for k in ("seconds", "iteration", "p_at_1")} for p in r["curve"]]}
            trials.append(trial)
            progress(f"{name} lr {lr:g}: held-out P@1 {trial['final_p_at_1']:.3f} (fit {trial['fitted_final']:.3f}) "
                     f"after {trial['iterations']} batches, {trial['samples_per_second']:.0f} samples/s")
            del r
            gc.collect()
        baseline = max((t["baseline_p_at_1"] for t in trials if "baseline_p_at_1" in t), default=0.0)  # one slice
        choice = choose(trials, current, points, baseline)
        if not choice["learned"]:
            progress(f"{name}: no rate beat the most popular label's P@1 on the slice ({baseline:.3f}) by two "
                     f"standard errors; lr {choice['lr']:g}"
                     + (" kept" if choice["kept_current"] else f" (the current {current:g} was not tried)"))
        elif choice["kept_current"] and choice["lr"] != choice["best_lr"]:
            progress(f"{name}: lr {choice['lr']:g} kept: {choice['best_lr']:g} was better by less than two "
                     f"standard errors of the difference ({choice['margin']:.3f})")
        else:
            progress(f"{name}: lr {choice['lr']:g}, the best on the held-out slice (current {current:g})")
        out["runs"][name] = {"dataset": dataset, "current_lr": current, "trials": trials, "choice": choice}
    return out


@cli.command("python -m impls.slide.experiments.lr_select")
def main(argv: list[str] | None = None) -> int:
    p = cli.parser(prog="python -m impls.slide.experiments.lr_select", description=__doc__.split("\n\n")[0])
    p.add_argument("--experiment", default="slide_train", choices=["slide_train", "slide_delicious"],
                   help="the profile section whose runs, data set and sizes are trained (default slide_train)")
    cli.add_profile_option(p, "sizes of --experiment (default: DLSYSBENCH_PROFILE, else quick)")
    p.add_argument("--runs", default=None, help="comma-separated run names of the profile (default slide,dense-cpu)")
    p.add_argument("--lrs", default=",".join(f"{x:g}" for x in DEFAULT_LRS),
                   help="comma-separated learning rates each run trains with, once each (above 0, at most "
                        "1000; default %(default)s)")
    p.add_argument("--holdout", type=int, default=1000,
                   help="training points held out to evaluate on (default 1000)")
    p.add_argument("--eval-points", dest="eval_points", type=int, default=None,
                   help="held-out points each evaluation scores (default: the profile's eval_points)")
    p.add_argument("--json", default=None, help="write the trials and choices here")
    args = p.parse_args(argv)
    cli.number(args.holdout, "--holdout", minimum=1, integer=True)
    if args.eval_points is not None:
        cli.number(args.eval_points, "--eval-points", minimum=1, integer=True)
    try:
        lrs = tuple(float(x) for x in args.lrs.split(",") if x)
    except ValueError:
        raise cli.UsageError(f"--lrs {args.lrs!r}: expected comma-separated numbers") from None
    if not lrs:
        raise cli.UsageError(f"--lrs {args.lrs!r}: expected positive rates")
    for lr in lrs:
        cli.number(lr, "--lrs", minimum=0, exclusive_min=True, maximum=1e3)
    cli.check_output(args.json, "--json")
    runs = [x for x in args.runs.split(",") if x] if args.runs else None
    try:
        out = select(args.experiment, args.profile, runs, lrs, args.holdout, args.eval_points,
                     progress=lambda line: print(line, flush=True))
    except ValueError as e:
        raise cli.UsageError(str(e)) from None
    cli.emit_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
