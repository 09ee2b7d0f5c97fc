"""Report figures for SLIDE.

Artifacts: ``slide_time_to_accuracy`` (:func:`impls.slide.experiments.time_to_accuracy_sweep`:
one training run per method / device / thread count on the Amazon-670K-shaped set) and
``slide_sweeps`` (:func:`impls.slide.experiments.secondary_sweep`: batch size and hash
family on the profile's sweep set, which the quick profile makes 10x smaller in labels).
"""
from __future__ import annotations

import math

from impls.harness.figures import figure, new_axes


def _measured(data: dict) -> list[dict]:
    return [r for r in data["runs"] if "curve" in r]


def _label(run: dict) -> str:
    device = run.get("device", "cpu")
    extra = f", {run['padding']} padding" if run["method"] == "slide" and run.get("padding") else ""
    if run["method"] == "slide" and run.get("padding_sampler", "uniform") != "uniform":
        extra += f" drawn {run['padding_sampler']} (variant)"
    return f"{run['method']} {device} {run['threads']}T{extra}"


def _set_size(stats: dict | None) -> str:
    if not stats:
        return ""
    return f"{stats.get('labels', 0):,} labels, {stats.get('points', 0):,} training points"


@figure("slide_time_to_accuracy", artifact="slide_time_to_accuracy", system="slide",
        title="SLIDE vs dense and sampled-softmax PyTorch: P@1 against training time (log) and iterations",
        paper_figure="SLIDE Fig. 5 (time-to-accuracy, Amazon-670K)")
def time_to_accuracy(data: dict):
    fig, (ax_time, ax_iter) = new_axes(width=10.0, height=3.8, ncols=2)
    runs = _measured(data)
    for run in runs:
        curve = run["curve"]
        ttt = run.get("time_to_target_s")
        label = (f"{_label(run)}: {run['samples_per_second']:.0f} samples/s, "
                 f"target {'at %.1f s' % ttt if ttt is not None else 'not reached'}")
        style = "-" if run["threads"] == max(r["threads"] for r in runs) else "--"
        ax_time.plot([max(p["seconds"], 1e-2) for p in curve], [p["p_at_1"] for p in curve], style,
                     marker=".", label=label)
        ax_iter.plot([max(p["iteration"], 1) for p in curve], [p["p_at_1"] for p in curve], style, marker=".")
    baseline = runs[0].get("baseline_p_at_1") if runs else None
    target = data.get("target_p_at_1")
    for ax in (ax_time, ax_iter):
        if baseline is not None:
            ax.axhline(baseline, color="grey", linestyle=":", linewidth=1)
        if target is not None:
            ax.axhline(target, color="black", linestyle="-.", linewidth=0.8)
        ax.set_ylabel("P@1 (fixed test subset)")
        ax.set_xscale("log")
    ax_time.set_xlabel("training seconds (log; evaluation excluded)")
    ax_iter.set_xlabel("iterations (batches, log)")
    ax_time.legend(fontsize=6, loc="upper left")
    skipped = [f"{r['name']} ({r['skipped']})" for r in data["runs"] if "skipped" in r]
    stats = runs[0]["data"]["train"] if runs and "data" in runs[0] else None
    ax_time.set_title(f"{_set_size(stats)}; dash-dot: target P@1 "
                      f"{target if target is None else round(target, 3)}", fontsize=7)
    ax_iter.set_title(("dotted: always the most popular label"
                       + (f"; not run: {'; '.join(skipped)}" if skipped else ""))[:160], fontsize=7)
    return fig


@figure("slide_core_scaling", artifact="slide_time_to_accuracy", system="slide",
        title="Core scaling: samples/s, time to target and core utilisation per thread count",
        paper_figure="SLIDE Fig. 9 (scalability with cores; the paper goes to 44)")
def core_scaling(data: dict):
    fig, (ax_tp, ax_ttt, ax_util) = new_axes(width=11.0, height=3.4, ncols=3)
    runs = [r for r in _measured(data) if r.get("device", "cpu") == "cpu"
            and (r["method"] != "slide" or r.get("padding", "sample") == "batch")
            and r.get("padding_sampler", "uniform") == "uniform"]
    groups: dict[str, list[dict]] = {}
    for r in runs:
        groups.setdefault(f"{r['method']} cpu", []).append(r)
    for name, group in sorted(groups.items()):
        group = sorted(group, key=lambda r: r["threads"])
        threads = [r["threads"] for r in group]
        ax_tp.plot(threads, [r["samples_per_second"] for r in group], marker="o", label=name)
        ax_ttt.plot(threads, [r.get("time_to_target_s") or math.nan for r in group], marker="o", label=name)
        ax_util.plot(threads, [r.get("cpu_utilization", math.nan) for r in group], marker="o", label=name)
    ax_tp.set_yscale("log")
    ax_tp.set_ylabel("samples/s (log)")
    ax_ttt.set_ylabel("seconds to target P@1 (missing: not reached)")
    ax_util.set_ylabel("CPU time / (wall x threads)")
    ax_util.set_ylim(0, 1.05)
    for ax in (ax_tp, ax_ttt, ax_util):
        ax.set_xlabel("threads")
        ax.set_xticks(sorted({r["threads"] for r in runs}) or [1])
    ax_tp.legend(fontsize=7)
    return fig


@figure("slide_batch_size", artifact="slide_sweeps", system="slide",
        title="Batch size: SLIDE and dense PyTorch (CPU) throughput and SLIDE's time-to-target lead",
        paper_figure="SLIDE Fig. 8 (batch sizes 64-256)")
def batch_size(data: dict):
    fig, (ax_tp, ax_sp) = new_axes(width=9.0, height=3.4, ncols=2)
    batches = sorted(int(b) for b in data["batch"])
    for method in ("slide", "dense"):
        runs = [data["batch"][str(b)].get(method) for b in batches]
        ax_tp.plot(batches, [r["samples_per_second"] if r else math.nan for r in runs], marker="o",
                   label=f"{method} cpu")
    values, bounds = [], []
    for b in batches:
        s = data["batch"][str(b)].get("speedup") or {}
        values.append(s.get("value") or math.nan)
        bounds.append("≥ (dense never reached target)" if s.get("lower_bound") else
                      "≤ (SLIDE never reached target)" if s.get("upper_bound") else None)
    ax_sp.plot(batches, values, marker="o", color="C2")
    for b, v, bound in zip(batches, values, bounds):
        if bound and not math.isnan(v):
            ax_sp.annotate(bound, (b, v), fontsize=6)
    ax_sp.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    for ax in (ax_tp, ax_sp):
        ax.set_xscale("log", base=2)
        ax.set_xticks(batches)
        ax.set_xticklabels([str(b) for b in batches])
        ax.set_xlabel("batch size")
    ax_tp.set_yscale("log")
    ax_tp.set_ylabel("samples/s (log)")
    fraction = data.get("sizes", {}).get("target_fraction")
    ax_sp.set_ylabel("dense / SLIDE time to target"
                     + (f"\n(target {fraction:g} of the way from the popular\nlabel to the pair's better P@1)"
                        if fraction else ""), fontsize=7)
    ax_tp.legend(fontsize=7)
    ax_tp.set_title(f"set: {data.get('sizes', {}).get('dataset', '')} ({_set_size(data.get('data'))})", fontsize=7)
    return fig


@figure("slide_hash_family", artifact="slide_sweeps", system="slide",
        title="Hash family and K/L: accuracy against active fraction and speed, and how well the tables retrieve the best-scoring wrong labels (SLIDE, CPU)",
        paper_figure="SLIDE: SimHash (Delicious) vs DWTA (Amazon), K/L choice (text)")
def hash_family(data: dict):
    fig, (ax_acc, ax_tp, ax_rec) = new_axes(width=12.0, height=3.4, ncols=3)
    for i, r in enumerate(data["hash"]):
        label = f"{r['lsh']} K={r['K']} L={r['L']}"
        marker = "o" if r["lsh"] == "dwta" else "s"
        ax_acc.scatter([r["active_fraction"] * 100], [r["final_p_at_1"]], marker=marker, color=f"C{i}", label=label)
        ax_tp.scatter([r["samples_per_second"]], [r["final_p_at_1"]], marker=marker, color=f"C{i}")
        recall, rand_recall = r.get("lsh_recall"), r.get("lsh_random_recall")
        ax_rec.bar([i - 0.2], [recall if recall is not None else math.nan], width=0.4, color=f"C{i}")
        ax_rec.bar([i + 0.2], [rand_recall if rand_recall is not None else math.nan], width=0.4, color=f"C{i}",
                   alpha=0.35, hatch="//")
    ax_rec.set_xticks(range(len(data["hash"])))
    ax_rec.set_xticklabels([f"{r['lsh']}\nK{r['K']} L{r['L']}" for r in data["hash"]], fontsize=7)
    ax_rec.set_ylabel("recall of the 10 best-scoring wrong labels\n(end of run; hatched: random set, same size)",
                      fontsize=7)
    ax_acc.set_xlabel("active output neurons (% of labels)")
    ax_tp.set_xlabel("samples/s")
    for ax in (ax_acc, ax_tp):
        ax.set_ylabel("final P@1 (same time budget)")
    ax_acc.legend(fontsize=7)
    ax_acc.set_title(f"set: {data.get('sizes', {}).get('dataset', '')} ({_set_size(data.get('data'))})", fontsize=7)
    return fig
