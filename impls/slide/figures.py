"""Report figures for SLIDE.

Longer than 400 lines: every figure's title is built by the same helpers (the data's source
and set, why runs have no result, the runs' labels); split, each part would import them back.

Artifacts: ``slide_time_to_accuracy`` (:func:`impls.slide.experiments.sweeps.time_to_accuracy_sweep`:
one training run per method / device / thread count on the Amazon-670K-shaped set) and
``slide_sweeps`` (:func:`impls.slide.experiments.secondary.secondary_sweep`: batch size and hash
family on the profile's sweep set, which the quick profile makes 10x smaller in labels),
``slide_delicious`` (:func:`impls.slide.experiments.sweeps.delicious_sweep`) and
``slide_real_amazon`` (:func:`impls.slide.experiments.sweeps.real_amazon_run`: SLIDE on the
user's real Amazon-670K files). Each figure's first title says whether the data are synthetic
or real, then with the first 12 hex digits of the training (and test) file's sha256; the
artifact's ``source`` holds the full checksums (:func:`_source`).
"""
from __future__ import annotations

import math
import textwrap

from impls.harness.figures import figure, finite, new_axes, plain_log_x
from impls.slide.experiments.targets import fitted_p_at_1, rate_over_batches


def _measured(data: dict) -> list[dict]:
    return [r for r in data["runs"] if "curve" in r]


def _best_wrong(runs: list[dict]) -> str:
    """"the <k> best-scoring wrong labels", k the runs' ``lsh_recall_k`` (no number where they differ)."""
    ks = list({r["lsh_recall_k"] for r in runs if r.get("lsh_recall_k") is not None})
    k = f"{ks[0]} " if len(ks) == 1 and isinstance(ks[0], int) else ""
    return f"the {k}best-scoring wrong labels"


def _has_points(run: dict) -> bool:
    """True when the measured ``run``'s curve holds at least one finite P@1 (a point to draw)."""
    return any(finite(p.get("p_at_1")) for p in run["curve"])


def _note(ax, text: str) -> None:
    """Write ``text`` in the middle of ``ax`` (what an empty panel says instead of data)."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8, color="dimgrey")


def _wrap(text: str, width: int) -> list[str]:
    """``text`` as lines of at most ``width`` characters, broken only at spaces (a run's name,
    hyphens and all, stays on one line unless it alone is longer)."""
    return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)


# Characters per line of a note in a panel's title at fontsize 7 (a 10-inch, two-panel figure).
NOTE_WIDTH = 80

# More runs than this: the runs' legend goes below the panels instead of over the curves.
LEGEND_INSIDE_MAX = 10


def _label(run: dict) -> str:
    device = run.get("device", "cpu")
    extra = f", {run['padding']} padding" if run["method"] == "slide" and run.get("padding") else ""
    if run["method"] == "slide" and run.get("padding_sampler", "uniform") != "uniform":
        extra += f" drawn {run['padding_sampler']} (variant)"
    return f"{run['method']} {device} {run['threads']}T{extra}"


def _set_size(stats: dict | None) -> str:
    if not stats:
        return ""
    norm = f", rows' median L2 norm {stats['median_row_norm']:.3g}" if "median_row_norm" in stats else ""
    return f"{stats.get('labels', 0):,} labels, {stats.get('points', 0):,} training points{norm}"


def _source(data: dict, expect_real: bool = False) -> str:
    """The data kind a title opens with, ending "; ": ``real data (<set>, sha256 <12 hex>[,
    test <12 hex>])`` when the artifact's ``source`` says ``real``; else ``synthetic data``, or,
    for an experiment that only runs on real data (``expect_real``) whose artifact names no
    source (every run skipped), ``real data (no run measured, no checksum)``."""
    src = data.get("source") or {}
    if src.get("real"):
        test = f", test {str(src['test_sha256'])[:12]}" if src.get("test_sha256") else ""
        return (f"real data ({src.get('like') or src.get('dataset')}, "
                f"sha256 {str(src.get('sha256'))[:12]}{test}); ")
    if expect_real and not src:
        return "real data (no run measured, no checksum); "
    return "synthetic data; "


@figure("slide_time_to_accuracy")
def time_to_accuracy(data: dict):
    return _time_to_accuracy(data)


@figure("slide_delicious_time_to_accuracy")
def delicious_time_to_accuracy(data: dict):
    return _time_to_accuracy(data)


@figure("slide_real_amazon_time_to_accuracy")
def real_amazon_time_to_accuracy(data: dict):
    """The real Amazon-670K run(s)' time-to-accuracy, titled with the files' checksums (:func:`_source`)."""
    return _time_to_accuracy(data, expect_real=True)


@figure("slide_mechanism")
def mechanism(data: dict):
    fig, (ax_rec, ax_cos) = new_axes(width=10.0, height=3.6, ncols=2)
    for i, run in enumerate(_measured(data)):
        curve = run["curve"]
        if any("hidden_cosine" in p for p in curve):
            ax_cos.plot([max(p["iteration"], 1) for p in curve], [p.get("hidden_cosine", math.nan) for p in curve],
                        marker=".", color=f"C{i}", label=_label(run))
        pts = [p for p in curve if p.get("lsh_random_recall")]
        if pts:
            its = [max(p["iteration"], 1) for p in pts]
            ax_rec.plot(its, [p["lsh_recall"] / p["lsh_random_recall"] for p in pts],
                        marker=".", color=f"C{i}", label=_label(run))
            if all(p.get("lsh_recall_ci") and "lsh_recall_effective_trials" in p for p in pts):   # not older Wilson ones
                low, high = ([p["lsh_recall_ci"][j] / p["lsh_random_recall"] for p in pts] for j in (0, 1))
                ax_rec.fill_between(its, low, high, color=f"C{i}", alpha=0.15, linewidth=0)
            first = next((p["iteration"] for p in pts if p.get("rebuilds", p.get("refreshes"))), None)
            if first is not None:
                ax_rec.axvline(max(first, 1), color=f"C{i}", linestyle=":", linewidth=0.8)
    ax_rec.axhline(10.0, color="black", linestyle="-.", linewidth=0.8)
    ax_rec.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax_rec.set_yscale("symlog", linthresh=1.0)
    ax_rec.set_ylim(bottom=0)      # a ratio of recalls: nothing below 0 to show
    ax_rec.set_ylabel(f"recall of {_best_wrong(_measured(data))}\nover a random set's (same size)", fontsize=7)
    ax_cos.set_ylabel("mean cosine between points' hidden vectors", fontsize=7)
    for ax in (ax_rec, ax_cos):
        plain_log_x(ax)
        ax.set_xlabel("iterations (batches, log)")
    ax_cos.set_ylim(0, 1.02)
    ax_cos.legend(fontsize=6)
    ax_rec.set_title(f"{_source(data)}dash-dot: 10x; dotted verticals: first table rebuild (new hash functions);\n"
                     "shaded: 95% interval, the trials grouped by label and by point", fontsize=7)
    return fig


# Twelve styles, each a colour and a dash no other shares and none a plain dot (the most popular
# label's line): the full profile compares nine pairs.
TARGET_STYLES = [(colour, dash) for dash in ((0, (6, 2)), (0, (6, 2, 1, 2)), (0, (10, 3)))
                 for colour in ("black", "saddlebrown", "darkslateblue", "purple")]


def pair_targets(data: dict) -> list[tuple[float, list[str]]]:
    """The comparisons' own target P@1 (0-1), one entry per distinct target (equal to 1e-9)
    with the pairs ("slow/fast", as keys of ``data["speedups"]``) that share it, in the order
    the pairs first appear; empty for an artifact whose speed-ups hold no ``target_p_at_1``
    (older ones) or none that is set."""
    found: list[tuple[float, list[str]]] = []
    for pair, entry in (data.get("speedups") or {}).items():
        target = (entry or {}).get("target_p_at_1")
        if not isinstance(target, (int, float)) or not math.isfinite(target):
            continue
        same = next((names for value, names in found if math.isclose(value, target, rel_tol=1e-9, abs_tol=0.0)),
                    None)
        if same is None:
            found.append((float(target), [pair]))
        else:
            same.append(pair)
    return found


def _pair_note(pair: str, entry: dict) -> str:
    """``pair`` with which of its runs never reached its target (the ratio is then a bound)."""
    missed = [entry.get(side) or side for side, key in (("slow", "slow_time_to_target_s"),
                                                         ("fast", "fast_time_to_target_s"))
              if entry.get(key) is None]
    if len(missed) == 2:
        return f"{pair} (neither reached it)"
    return pair + (f" ({missed[0]} never did)" if missed else "")


def _draw_targets(ax_time, ax_iter, data: dict, colours: dict[str, str]) -> str:
    """Draw the targets on both panels and return what the title says of them.

    With the pairs' own targets (:func:`pair_targets`): one horizontal line per distinct
    target (a colour and dash of :data:`TARGET_STYLES` each), labelled with its value and its
    pairs in the iterations panel's legend (the time panel's holds the runs), and on the time
    panel a cross (one legend entry) in the run's colour where each run of a pair reaches
    that pair's target (the artifact's ``fast_time_to_target_s`` / ``slow_time_to_target_s``,
    seconds); the sweep-wide ``target_p_at_1`` (the one the run labels time) is its own
    dash-dot line only where no pair shares it. Without pair targets: the sweep-wide target
    alone, dash-dot, as the only target line."""
    sweep = data.get("target_p_at_1")
    speedups = data.get("speedups") or {}
    targets = pair_targets(data)
    if not targets:
        for ax in (ax_time, ax_iter):
            if sweep is not None:
                ax.axhline(sweep, color="black", linestyle="-.", linewidth=0.8)
        return "no target" if sweep is None else f"dash-dot: target P@1 {round(sweep, 3)}"
    shares_sweep, crossed = False, False
    for k, (target, pairs) in enumerate(targets):
        colour, dashes = TARGET_STYLES[k % len(TARGET_STYLES)]
        also = sweep is not None and math.isclose(sweep, target, rel_tol=1e-9, abs_tol=0.0)
        shares_sweep = shares_sweep or also
        label = (f"target P@1 {target:.3f} of " + ";\n  ".join(_pair_note(p, speedups[p]) for p in pairs)
                 + (";\n  also the sweep's (run labels)" if also else ""))
        ax_time.axhline(target, color=colour, linestyle=dashes, linewidth=1.0)
        ax_iter.axhline(target, color=colour, linestyle=dashes, linewidth=1.0, label=label)
        marked = set()
        for pair in pairs:
            entry = speedups[pair]
            for side in ("fast", "slow"):
                name, seconds = entry.get(side), entry.get(f"{side}_time_to_target_s")
                if seconds is None or name in marked or name not in colours:   # a run the figure draws
                    continue
                marked.add(name)
                crossed = True
                ax_time.plot([max(seconds, 1e-2)], [target], linestyle="none", marker="X", markersize=7,
                             color=colours[name], markeredgecolor=colour, zorder=3)
    if crossed:
        ax_iter.plot([], [], linestyle="none", marker="X", color="white", markeredgecolor="black",
                     label="X (left): the run reaches its pair's target (fill: the run's colour)")
    if sweep is not None and not shares_sweep:
        ax_time.axhline(sweep, color="black", linestyle="-.", linewidth=0.8)
        ax_iter.axhline(sweep, color="black", linestyle="-.", linewidth=0.8,
                        label=f"sweep target P@1 {sweep:.3f} (best run's; the run labels' times)")
    return "dashed: each pair's own target P@1 (legend, right)"


def _time_to_accuracy(data: dict, expect_real: bool = False):
    """Left: each run's P@1 (0-1) against training seconds (log), with its monotone fit; right:
    the same against iterations (log). A measured run without a finite P@1 is not drawn and is
    named in the right panel's title, as are the runs not run (grouped by reason, wrapped to
    :data:`NOTE_WIDTH`); with no point at all both panels say "no measured points". More than
    :data:`LEGEND_INSIDE_MAX` runs put the runs' legend below the panels."""
    fig, (ax_time, ax_iter) = new_axes(width=10.0, height=3.8, ncols=2)
    measured = _measured(data)
    runs = [r for r in measured if _has_points(r)]
    per_pair = bool(pair_targets(data))
    colours: dict[str, str] = {}
    for run in runs:
        curve = run["curve"]
        ttt = run.get("time_to_target_s")
        label = (f"{_label(run)}: {run['samples_per_second']:.0f} samples/s, "
                 f"{'sweep ' if per_pair else ''}target {'at %.1f s' % ttt if ttt is not None else 'not reached'}")
        style = "-" if run["threads"] == max(r["threads"] for r in runs) else "--"
        line, = ax_time.plot([max(p["seconds"], 1e-2) for p in curve], [p["p_at_1"] for p in curve], style,
                             marker=".", label=label)
        colours[run.get("name", "")] = line.get_color()
        ax_iter.plot([max(p["iteration"], 1) for p in curve], [p["p_at_1"] for p in curve], style, marker=".",
                     color=line.get_color())
        ax_time.plot([max(p["seconds"], 1e-2) for p in curve], fitted_p_at_1(curve), color=line.get_color(),
                     linewidth=2.5, alpha=0.3)
    baseline = measured[0].get("baseline_p_at_1") if measured else None
    for ax in (ax_time, ax_iter):
        if baseline is not None:
            ax.axhline(baseline, color="grey", linestyle=":", linewidth=1)
    targets_title = _draw_targets(ax_time, ax_iter, data, colours)
    for ax in (ax_time, ax_iter):
        ax.set_ylabel("P@1 (fixed test subset)")
        plain_log_x(ax)
        if not runs:
            ax.set_xlim(1, 10)
            _note(ax, "no measured points")
    ax_time.set_xlabel("training seconds (log; evaluation excluded)")
    ax_iter.set_xlabel("iterations (batches, log)")
    handles, labels = ax_time.get_legend_handles_labels()
    if len(labels) > LEGEND_INSIDE_MAX:
        fig.set_figheight(3.8 + 0.11 * math.ceil(len(labels) / 2))   # inches: one legend row each
        fig.legend(handles, labels, fontsize=6, loc="outside lower center", ncols=2)
    elif labels:
        ax_time.legend(fontsize=6, loc="upper left")
    if ax_iter.get_legend_handles_labels()[1]:
        ax_iter.legend(fontsize=6, loc="upper left")
    notes = _unmeasured(data["runs"])
    notes += list(dict.fromkeys(f"input: {line}" for r in measured for line in r.get("input_warnings", [])))
    empty = [str(r.get("name", "?")) for r in measured if not _has_points(r)]
    notes += [f"no finite P@1 (not drawn): {', '.join(empty)}"] if empty else []
    stats = measured[0]["data"]["train"] if measured and "data" in measured[0] else None
    ax_time.set_title(f"{_source(data, expect_real)}{_set_size(stats)}\nwide pale: monotone fit (what is timed); "
                      f"{targets_title}", fontsize=7)
    ax_iter.set_title("\n".join(["dotted: always the most popular label"]
                                + [line for n in notes for line in _wrap(n, NOTE_WIDTH)]), fontsize=7)
    return fig


@figure("slide_core_scaling")
def core_scaling(data: dict):
    fig, (ax_tp, ax_ttt, ax_util) = new_axes(width=11.0, height=3.4, ncols=3)
    runs = [r for r in _measured(data) if r.get("device", "cpu") == "cpu"
            and (r["method"] != "slide" or r.get("padding", "sample") == "batch")
            and r.get("padding_sampler", "uniform") == "uniform"]
    groups: dict[str, list[dict]] = {}
    for r in runs:
        groups.setdefault(f"{r['method']} cpu", []).append(r)
    off_log: list[str] = []
    for name, group in sorted(groups.items()):
        group = sorted(group, key=lambda r: r["threads"])
        threads = [r["threads"] for r in group]
        batches = min((int(r.get("iterations") or 0) for r in group), default=0)
        rates = [rate_over_batches(r, batches) for r in group]
        off_log += [f"{name} {t}T ({v:g})" for t, v in zip(threads, rates) if finite(v) and v <= 0]
        label = f"{name} (first {batches} batches)" if batches and all("iterations" in r for r in group) else name
        ax_tp.plot(threads, [v if finite(v) and v > 0 else math.nan for v in rates], marker="o", label=label)
        ax_ttt.plot(threads, [math.nan if r.get("time_to_target_s") is None else r["time_to_target_s"]
                              for r in group], marker="o", label=name)
        ax_util.plot(threads, [r.get("cpu_utilization", math.nan) for r in group], marker="o", label=name)
    ax_tp.set_yscale("log")
    if not any(finite(r.get("samples_per_second")) and r["samples_per_second"] > 0 for r in runs):
        ax_tp.set_ylim(1, 10)       # a log axis with no positive value has no limits of its own
    ax_tp.set_ylabel("samples/s over the same batches (log)")
    ax_ttt.set_ylabel("seconds to target P@1 (missing: not reached)")
    ax_util.set_ylabel("CPU time / (wall x threads)")
    ax_util.set_ylim(0, 1.05)
    for ax in (ax_tp, ax_ttt, ax_util):
        ax.set_xlabel("threads")
        ax.set_xticks(sorted({r["threads"] for r in runs}) or [1])
    ax_tp.legend(fontsize=7)
    stats = runs[0]["data"]["train"] if runs and "data" in runs[0] else None
    note = "".join("\n" + line for line in _wrap(
        f"not on the log axis (samples/s <= 0): {', '.join(off_log)}", NOTE_WIDTH // 2)) if off_log else ""
    ax_tp.set_title(f"{_source(data)}{_set_size(stats)}{note}", fontsize=7)
    return fig


def _unmeasured(runs: list) -> list[str]:
    """One line per reason runs of ``runs`` have no result: "not run (why): names" or "failed
    (why): names" (run_failures.FAILED); None and measured runs are left out."""
    reasons: dict[str, list[str]] = {}
    for r in (r for r in runs if r and ("skipped" in r or "failed" in r)):
        why = f"not run ({r['skipped']})" if "skipped" in r else f"failed ({r['failed']})"
        reasons.setdefault(why, []).append(str(r.get("name", "?")))
    return [f"{why}: {', '.join(names)}" for why, names in reasons.items()]


def _sweep_title(data: dict, runs: list) -> str:
    """A sweep figure's title: the data's source, set and size; then why runs have no result."""
    sweep_set = f"set: {data.get('sizes', {}).get('dataset', '')} ({_set_size(data.get('data'))})"
    return "\n".join([_source(data) + sweep_set, *_unmeasured(runs)])


@figure("slide_batch_size")
def batch_size(data: dict):
    fig, (ax_tp, ax_sp) = new_axes(width=9.0, height=3.4, ncols=2)
    batches = sorted(int(b) for b in data["batch"])
    every = [r for b in data["batch"].values() for r in (b.get("slide"), b.get("dense"))]   # None: not swept
    for method in ("slide", "dense"):
        runs = [data["batch"][str(b)].get(method) for b in batches]
        ax_tp.plot(batches, [r.get("samples_per_second", math.nan) if r else math.nan for r in runs], marker="o",
                   label=f"{method} cpu")
    values, bounds = [], []
    for b in batches:
        s = data["batch"][str(b)].get("speedup") or {}
        values.append(s.get("value") or math.nan)
        bounds.append("≥ (dense never reached target)" if s.get("lower_bound") else
                      "≤ (SLIDE never reached target)" if s.get("upper_bound") else None)
    # a line joins exact ratios only: a bound says where the ratio is not, not a trend
    ax_sp.plot(batches, [math.nan if bound else v for v, bound in zip(values, bounds)], marker="o", color="C2")
    for b, v, bound in zip(batches, values, bounds):
        if bound and not math.isnan(v):
            ax_sp.plot([b], [v], marker="^" if bound.startswith("≥") else "v", color="C2", fillstyle="none",
                       linestyle="none")
            ax_sp.annotate(bound, (b, v), fontsize=6)
    ax_sp.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    for ax in (ax_tp, ax_sp):
        ax.set_xscale("log", base=2)
        ax.set_xticks(batches)
        ax.set_xticklabels([str(b) for b in batches])
        ax.set_xlabel("batch size")
    ax_tp.set_yscale("log")
    if not any(finite(r.get("samples_per_second")) and r["samples_per_second"] > 0 for r in every if r):
        ax_tp.set_ylim(1, 10)       # a log axis with no positive value has no limits of its own
    ax_tp.set_ylabel("samples/s (log)")
    fraction = data.get("sizes", {}).get("target_fraction")
    ax_sp.set_ylabel("dense / SLIDE time to target"
                     + (f"\n(target {fraction:g} of the way from the popular\nlabel to the pair's better P@1)"
                        if fraction else ""), fontsize=7)
    ax_tp.legend(fontsize=7)
    ax_tp.set_title(_sweep_title(data, every), fontsize=7)
    return fig


@figure("slide_hash_family")
def hash_family(data: dict):
    """Per hash configuration: final P@1 (0-1) against active output neurons (% of labels) and
    against samples/s, and its end-of-run LSH recall beside a random set's. A panel with no
    finite value says "no finite values"; a legend entry whose point is not finite says so."""
    fig, (ax_acc, ax_tp, ax_rec) = new_axes(width=12.0, height=3.4, ncols=3)
    shown = {ax_acc: False, ax_tp: False, ax_rec: False}
    for i, r in enumerate(data["hash"]):
        label = f"{r['lsh']} K={r['K']} L={r['L']}"
        marker = "o" if r["lsh"] == "dwta" else "s"
        acc = (r.get("active_fraction"), r.get("final_p_at_1"))
        finite_acc = all(finite(v) for v in acc)
        shown[ax_acc] |= finite_acc
        shown[ax_tp] |= finite(r.get("samples_per_second")) and finite(r.get("final_p_at_1"))
        ax_acc.scatter([r["active_fraction"] * 100 if finite(acc[0]) else math.nan],
                       [acc[1] if finite(acc[1]) else math.nan], marker=marker, color=f"C{i}",
                       label=label if finite_acc else f"{label} ({'failed' if 'failed' in r else 'no finite value'})")
        ax_tp.scatter([r["samples_per_second"] if finite(r.get("samples_per_second")) else math.nan],
                      [acc[1] if finite(acc[1]) else math.nan], marker=marker, color=f"C{i}")
        recall, rand_recall = r.get("lsh_recall"), r.get("lsh_random_recall")
        shown[ax_rec] |= finite(recall) or finite(rand_recall)
        ax_rec.bar([i - 0.2], [recall if finite(recall) else math.nan], width=0.4, color=f"C{i}")
        ax_rec.bar([i + 0.2], [rand_recall if finite(rand_recall) else math.nan], width=0.4, color=f"C{i}",
                   alpha=0.35, hatch="//")
    ax_rec.set_xticks(range(len(data["hash"])))
    ax_rec.set_xticklabels([f"{r['lsh']}\nK{r['K']} L{r['L']}" for r in data["hash"]], fontsize=7)
    ax_rec.set_ylabel(f"recall of {_best_wrong(data['hash'])}\n(end of run; hatched: random set, same size)", fontsize=7)
    ax_acc.set_xlabel("active output neurons (% of labels)")
    ax_tp.set_xlabel("samples/s")
    for ax in (ax_acc, ax_tp):
        ax.set_ylabel("final P@1 (same time budget)")
    for ax, drawn in shown.items():
        if not drawn:
            _note(ax, "no finite values")
    if shown[ax_acc]:
        ax_acc.legend(fontsize=7)
    ax_acc.set_title(_sweep_title(data, data["hash"]), fontsize=7)
    return fig
