"""How the SLIDE verdicts depend on the draw of the synthetic set they are measured on.

The report's SLIDE claims are measured on one draw of a synthetic set: the
Amazon-670K-shaped ``slide-amazon670k`` (``[slide_train.<profile>]``) or the
Delicious-200K-shaped ``slide-delicious200k`` (``[slide_delicious.<profile>]``), each drawn
with its manifest's seed. The generator is matched to the real sets' published statistics
(``python -m impls.slide.xc_stats``), not to one set of points, so another seed is as
faithful a stand-in as the manifest's. This script draws the experiment's set again with
each seed of ``--seeds`` (every parameter the manifest's, at the profile's sizes), trains the
profile's runs on it exactly as the experiment does (each run in a fresh process, the
profile's budget, learning rate and evaluation schedule; the model's own seed unchanged),
and prints per draw:

- each run's samples/s, batches and final P@1 (and the most-popular-label P@1 it must beat);
- each comparison of the profile between the runs trained: the time-to-target ratio (``≥``
  a lower bound, ``≤`` an upper bound; each pair at its own target, as the report reads
  it) and, for an exact value, the verdict the report's rule gives that one value;
- for each SLIDE run: the tables' recall of the best-scoring wrong labels over a random
  set's at every evaluation after the first rebuild (issue 21's criterion asks for ≥ 10× at
  each), and the mean cosine between the points' hidden vectors, first → last evaluation.

The last lines give each figure's median and range over the draws. The runs of one draw
are trained one after another, in the order given on even draws and in reverse on odd ones,
so that a machine that slows down over the session does not always favour one side.

Usage::

    python scripts/slide_data_sensitivity.py --experiment slide_train --profile quick \\
        --seeds 1 2 3 4 5 [--runs slide,dense-cpu,sampled-cpu] [--json out.json]

Default runs: ``slide`` and every run the profile compares with it that this machine can
run (at quick: ``slide``, ``dense-cpu``, ``sampled-cpu`` and ``slide-sample``; ``dense-cuda``
where CUDA is). Those four take about three minutes a draw of the Amazon-670K-shaped set
here, its generation (seconds) and each child's loading included; each draw's set (about
330 MB at quick) lives in a temporary file while it trains. Each ratio is printed with the
test points' 95% bootstrap interval; the verdicts are those of the one value, without it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

# the asv benchmark each experiment's comparisons are tracked by (claims read them by comparison)
RATIO_BENCHMARK = {"slide_train": "bench_slide.SlideSpeedup.track_time_to_target_ratio",
                   "slide_delicious": "bench_slide.SlideDeliciousSpeedup.track_time_to_target_ratio"}
EXPERIMENTS = tuple(RATIO_BENCHMARK)
DRAW_COMMIT = "0" * 40      # the commit of the stand-in artifact a claim's setting is read from
MAX_SEED = 2**32 - 1        # the largest draw seed taken (as for xc_stats --seed)


def default_runs(s: dict) -> list[str]:
    """``slide`` and every run a comparison of table ``s`` sets against it, that can run here
    (other fast runs, such as ``slide-freq``, only when ``--runs`` names them)."""
    from impls.slide.experiments.sweeps import skip_reason

    by_name = {spec["name"]: spec for spec in s["runs"]}
    names = ["slide"] + [slow for fast, slow in s.get("comparisons", []) if fast == "slide"]
    return [n for n in dict.fromkeys(names) if n in by_name and skip_reason(by_name[n]) is None]


def claims_of(experiment: str, key: str) -> list:
    """The claims of ``reports/claims.toml`` measured by comparison ``key`` ("dense-cpu/slide")
    of ``experiment``'s ratio benchmark."""
    from impls.harness.report import claims, render

    return [c for c in claims.load_claims(render.default_claims_path())
            if isinstance(c.measured, claims.BenchmarkSource)
            and c.measured.point.benchmark == RATIO_BENCHMARK[experiment]
            and c.measured.point.params.get("comparison") == key]


def _mark(speedup: dict) -> str:
    """A comparison's value as the report shows it: ``≥``/``≤`` for a bound, "-" for none."""
    if speedup.get("value") is None:
        return "-"
    bound = "≥" if speedup.get("lower_bound") else "≤" if speedup.get("upper_bound") else ""
    return f"{bound}{speedup['value']:.2f}"


def verdicts(experiment: str, key: str, speedup: dict, runs: list[dict]) -> dict[str, str]:
    """``{claim id: verdict}`` for every claim that reads comparison ``key``: the verdict the
    report's rule gives this one value, a bound judged as a bound
    (:func:`~impls.harness.report.verdicts.judge_bounded`), without the intervals the report
    also weighs; "not measured: ..." where the claim is about another setting than the runs'
    (its ``applies_when``, read from ``runs`` as the report reads the experiment's artifact) or
    the comparison has no value."""
    from impls.harness.report.measure import check_setting
    from impls.harness.report.verdicts import NOT_MEASURED, judge_bounded

    out = {}
    for claim in claims_of(experiment, key):
        if claim.applies_when is not None:
            stand_in = {claim.applies_when.artifact: {"commit": DRAW_COMMIT, "data": {"runs": runs}}}
            other, _ = check_setting(stand_in, claim.applies_when, DRAW_COMMIT)
            if other:
                out[claim.id] = f"{NOT_MEASURED}: {other}"
                continue
        if speedup.get("value") is None:
            out[claim.id] = f"{NOT_MEASURED}: {speedup.get('no_value') or 'no value'}"
            continue
        out[claim.id] = judge_bounded(claim, speedup["value"], bool(speedup.get("lower_bound")),
                                      bool(speedup.get("upper_bound")))[0]
    return out


def _run_row(run: dict) -> dict:
    from impls.slide.training.trainer import recall_ratios

    row = {k: run.get(k) for k in ("name", "method", "threads", "samples_per_second", "iterations", "final_p_at_1",
                                   "baseline_p_at_1", "train_seconds")}
    if "curve" in run:
        cosines = [p["hidden_cosine"] for p in run["curve"] if p.get("hidden_cosine") is not None]
        row["hidden_cosine"] = [cosines[0], cosines[-1]] if cosines else None
    if run.get("method") == "slide" and "curve" in run:
        row["recall_after_rebuild"] = [ratio for ratio, _ in recall_ratios(run["curve"], "rebuilds")]
        row["lsh_recall_min_ratio"] = run.get("lsh_recall_min_ratio")
    return row


def one_draw(experiment: str, profile: str, seed: int, names: list[str], reverse: bool,
             scratch: str) -> dict:
    """Train runs ``names`` of ``[<experiment>.<profile>]`` on its set drawn with ``seed``;
    the draw's row: its runs, and per comparison between them its value (each pair at its own
    target: ``target_p_at_1`` and both runs' times to it), bound flags, the test points'
    bootstrap interval of the ratio and the verdict of each claim that reads it."""
    from impls.harness import fresh_process, registry
    from impls.slide.experiments import sweeps

    s = sweeps.sizes(profile, experiment)
    manifest_seed = registry.manifests()[s["dataset"]].spec.get("seed")
    arrays = registry.draw(s["dataset"], seed, profile)
    path = os.path.join(scratch, f"draw-{seed}.npz")
    np.savez(path, **arrays)
    del arrays
    by_name = {spec["name"]: spec for spec in s["runs"]}
    order = list(reversed(names)) if reverse else list(names)
    runs = []
    try:
        for name in order:
            spec = by_name[name]
            print(f"  seed {seed}: {name} ({spec.get('time_budget_s', s['time_budget_s']):g} s)",
                  file=sys.stderr, flush=True)
            result = fresh_process.call(sweeps.run_spec_on_file, {"sizes": s, "spec": spec, "path": path})
            result.pop("data", None)
            runs.append(sweeps.run_entry(spec, result))
    finally:
        os.remove(path)
    _, speedups = sweeps.score(runs, s)
    rows = [_run_row(r) for r in runs]
    keep = ("value", "lower_bound", "upper_bound", "no_value", "target_p_at_1", "fast_time_to_target_s",
            "slow_time_to_target_s", "throughput_ratio", "p_at_1_per_iteration_ratio")
    return {"experiment": experiment, "profile": profile, "dataset": s["dataset"], "seed": seed,
            "manifest_seed": seed == manifest_seed, "order": order, "runs": rows,
            "speedups": {k: {**{f: v.get(f) for f in keep},
                             "interval": (v.get("intervals") or {}).get("time_to_target_ratio"),
                             "verdicts": verdicts(experiment, k, v, rows)}
                         for k, v in speedups.items()}}


def draw_line(row: dict) -> str:
    """One printed line for a draw's row."""
    parts = [f"seed {row['seed']}" + (" (the manifest's: the report's draw)" if row.get("manifest_seed") else "")]
    for r in sorted(row["runs"], key=lambda r: r["name"]):
        parts.append(f"{r['name']} {r['samples_per_second']:,.0f}/s {r['iterations']} b P@1 {r['final_p_at_1']:.3f}")
    popular = max((r["baseline_p_at_1"] or 0.0) for r in row["runs"])
    parts.append(f"popular {popular:.3f}")
    for key, v in row["speedups"].items():
        interval = v.get("interval")
        spread = f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval and v["value"] is not None else ""
        said = "; ".join(f"{claim}: {verdict}" for claim, verdict in v["verdicts"].items())
        parts.append(f"{key} {_mark(v)}{spread}" + (f" ({said})" if said else ""))
    for r in row["runs"]:
        if "recall_after_rebuild" in r:
            ratios = ", ".join(f"{x:.2g}" for x in r["recall_after_rebuild"]) or "none"
            cos = r.get("hidden_cosine") or [float("nan")] * 2
            parts.append(f"{r['name']} recall/random after rebuild [{ratios}], cosine {cos[0]:.3f}→{cos[1]:.3f}")
    return " | ".join(parts)


def summary_lines(rows: list[dict]) -> list[str]:
    """Per comparison and per SLIDE run, the median and range over the draws."""
    lines = [f"over {len(rows)} draws (seeds {', '.join(str(r['seed']) for r in rows)}):"]
    for key in dict.fromkeys(k for r in rows for k in r["speedups"]):
        found = [r["speedups"][key] for r in rows if key in r["speedups"]]
        shown = ", ".join(_mark(v) for v in found)
        values = [v["value"] for v in found if v["value"] is not None]
        lower = sum(bool(v["lower_bound"]) for v in found)
        upper = sum(bool(v["upper_bound"]) for v in found)
        kinds = (f"{len(values) - lower - upper} exact, {lower} lower bounds, {upper} upper bounds, "
                 f"{len(found) - len(values)} without a value")
        if values and (lower or upper):      # a censored median: a bound's true value lies beyond it
            median = (f"; the median of the values shown is {statistics.median(values):.2f}, the true median "
                      f"{'at least' if lower and not upper else 'at most' if upper and not lower else 'near'} that")
        else:
            median = f"; median {statistics.median(values):.2f}" if values else ""
        lines.append(f"  {key}: {shown} ({kinds}{median})")
        said = [(c, w) for v in found for c, w in v["verdicts"].items()]
        for claim in dict.fromkeys(c for c, _ in said):
            words = [w for c, w in said if c == claim]
            lines.append(f"    {claim}: {', '.join(f'{w} ×{words.count(w)}' for w in dict.fromkeys(words))}")
    names = dict.fromkeys(r["name"] for row in rows for r in row["runs"])
    for name in names:
        runs = [r for row in rows for r in row["runs"] if r["name"] == name]
        p1 = [r["final_p_at_1"] for r in runs]
        lines.append(f"  {name}: final P@1 median {statistics.median(p1):.3f} (range {min(p1):.3f}-{max(p1):.3f}), "
                     f"samples/s median {statistics.median(r['samples_per_second'] for r in runs):,.0f}")
        worst = [r["lsh_recall_min_ratio"] for r in runs if "recall_after_rebuild" in r]
        known = [w for w in worst if w is not None]
        if known:
            lines.append(f"  {name}: worst recall/random after the first rebuild {min(known):.2g}-{max(known):.2g}; "
                         f">= 10x at every evaluation in {sum(w >= 10 for w in known)} of {len(worst)} draws"
                         + (f" ({len(worst) - len(known)} without an evaluation after a rebuild)"
                            if len(known) < len(worst) else ""))
        elif worst:
            lines.append(f"  {name}: no evaluation after a table rebuild in any draw")
    return lines


def main(argv: list[str] | None = None) -> int:
    from impls.harness import cli, profiles

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default="slide_train", choices=EXPERIMENTS)
    cli.add_profile_option(parser, "the sizes, budgets and runs (default: DLSYSBENCH_PROFILE, else quick)")
    parser.add_argument("--seeds", type=int, nargs="+", required=True,
                        help="draw seeds (the manifest's own is in datasets/<dataset>.toml)")
    parser.add_argument("--runs", help="comma-separated run names of the profile's table "
                                       "(default: slide and the runs compared with it that run here)")
    parser.add_argument("--json", help="also write the rows to this file (after every draw; '-': to stdout "
                                           "once at the end, the lines to stderr)")
    args = parser.parse_args(argv)
    try:
        args.profile = profiles.resolve(args.profile)
        cli.check_output(args.json, "--json")
    except (cli.UsageError, profiles.ProfileError) as err:
        parser.error(str(err))
    from impls.slide.experiments import sweeps

    s = sweeps.sizes(args.profile, args.experiment)
    known = [spec["name"] for spec in s["runs"]]
    names = [n.strip() for n in args.runs.split(",") if n.strip()] if args.runs else default_runs(s)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        parser.error(f"--runs: {', '.join(unknown) or 'none given'}; [{args.experiment}.{args.profile}] "
                     f"has {', '.join(known)}")
    if len(set(names)) != len(names):
        parser.error(f"--runs: each run once (got {args.runs})")
    skipped = [f"{n} ({sweeps.skip_reason(spec)})" for spec in s["runs"] for n in names
               if spec["name"] == n and sweeps.skip_reason(spec)]
    if skipped:
        parser.error(f"--runs: cannot run here: {'; '.join(skipped)}")
    if len(set(args.seeds)) != len(args.seeds) or not all(0 <= seed <= MAX_SEED for seed in args.seeds):
        parser.error(f"--seeds: each seed once, each in 0..{MAX_SEED}")
    own = [spec["name"] for spec in s["runs"] if spec["name"] in names and spec.get("dataset")]
    if own:
        parser.error(f"--runs: {', '.join(own)} train on a dataset of their own, not the draw")
    rows, lines = [], cli.lines_to(args.json)
    with tempfile.TemporaryDirectory(prefix="slide-draws-") as scratch:
        for i, seed in enumerate(args.seeds):
            rows.append(one_draw(args.experiment, args.profile, seed, names, i % 2 == 1, scratch))
            print(draw_line(rows[-1]), file=lines, flush=True)
            if args.json != "-":
                cli.emit_json(args.json, rows)    # after every draw: a failure later keeps the draws done
    print("\n".join(summary_lines(rows)), file=lines)
    if args.json == "-":
        cli.emit_json("-", rows)                  # standard output: the one JSON document
    return 0


if __name__ == "__main__":
    sys.exit(main())
