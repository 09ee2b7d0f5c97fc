"""Report figures for SLIDE.

Artifacts: ``slide_time_to_accuracy`` (:func:`impls.slide.experiments.sweeps.time_to_accuracy_sweep`:
one training run per method / device / thread count on the Amazon-670K-shaped set) and
``slide_sweeps`` (:func:`impls.slide.experiments.sweeps.secondary_sweep`: batch size and hash
family on the profile's sweep set, which the quick profile makes 10x smaller in labels),
``slide_delicious`` (:func:`impls.slide.experiments.sweeps.delicious_sweep`). Each title says
whether the data are synthetic or real (then with the training file's sha256).
"""
from __future__ import annotations

import math

from impls.harness.figures import figure, new_axes, plain_log_x
from impls.slide.experiments.targets import fitted_p_at_1


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


def _source(data: dict) -> str:
    src = data.get("source") or {}
    if src.get("real"):
        return f"real data ({src.get('like') or src.get('dataset')}, sha256 {str(src.get('sha256'))[:12]}); "
    return "synthetic data; "


@figure("slide_time_to_accuracy")
def time_to_accuracy(data: dict):
    return _time_to_accuracy(data)


@figure("slide_delicious_time_to_accuracy")
def delicious_time_to_accuracy(data: dict):
    return _time_to_accuracy(data)


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
            ax_rec.plot([max(p["iteration"], 1) for p in pts], [p["lsh_recall"] / p["lsh_random_recall"] for p in pts],
                        marker=".", color=f"C{i}", label=_label(run))
            first = next((p["iteration"] for p in pts if p.get("rebuilds", p.get("refreshes"))), None)
            if first is not None:
                ax_rec.axvline(max(first, 1), color=f"C{i}", linestyle=":", linewidth=0.8)
    ax_rec.axhline(10.0, color="black", linestyle="-.", linewidth=0.8)
    ax_rec.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax_rec.set_yscale("symlog", linthresh=1.0)
    ax_rec.set_ylabel("recall of the 10 best-scoring wrong labels\nover a random set's (same size)", fontsize=7)
    ax_cos.set_ylabel("mean cosine between points' hidden vectors", fontsize=7)
    for ax in (ax_rec, ax_cos):
        ax.set_xscale("log")
        ax.set_xlabel("iterations (batches, log)")
    ax_cos.set_ylim(0, 1.02)
    ax_cos.legend(fontsize=6)
    ax_rec.set_title(f"{_source(data)}dash-dot: 10x; dotted verticals: first table rebuild (new hash functions)", fontsize=7)
    return fig


def _time_to_accuracy(data: dict):
    fig, (ax_time, ax_iter) = new_axes(width=10.0, height=3.8, ncols=2)
    runs = _measured(data)
    for run in runs:
        curve = run["curve"]
        ttt = run.get("time_to_target_s")
        label = (f"{_label(run)}: {run['samples_per_second']:.0f} samples/s, "
                 f"target {'at %.1f s' % ttt if ttt is not None else 'not reached'}")
        style = "-" if run["threads"] == max(r["threads"] for r in runs) else "--"
        line, = ax_time.plot([max(p["seconds"], 1e-2) for p in curve], [p["p_at_1"] for p in curve], style,
                             marker=".", label=label)
        ax_iter.plot([max(p["iteration"], 1) for p in curve], [p["p_at_1"] for p in curve], style, marker=".",
                     color=line.get_color())
        ax_time.plot([max(p["seconds"], 1e-2) for p in curve], fitted_p_at_1(curve), color=line.get_color(),
                     linewidth=2.5, alpha=0.3)
    baseline = runs[0].get("baseline_p_at_1") if runs else None
    target = data.get("target_p_at_1")
    for ax in (ax_time, ax_iter):
        if baseline is not None:
            ax.axhline(baseline, color="grey", linestyle=":", linewidth=1)
        if target is not None:
            ax.axhline(target, color="black", linestyle="-.", linewidth=0.8)
        ax.set_ylabel("P@1 (fixed test subset)")
        plain_log_x(ax)
    ax_time.set_xlabel("training seconds (log; evaluation excluded)")
    ax_iter.set_xlabel("iterations (batches, log)")
    ax_time.legend(fontsize=6, loc="upper left")
    skipped = [f"{r['name']} ({r['skipped']})" for r in data["runs"] if "skipped" in r]
    stats = runs[0]["data"]["train"] if runs and "data" in runs[0] else None
    ax_time.set_title(f"{_source(data)}{_set_size(stats)}\nwide pale: monotone fit (what is timed); "
                      f"dash-dot: target P@1 "
                      f"{target if target is None else round(target, 3)}", fontsize=7)
    ax_iter.set_title("dotted: always the most popular label"
                      + (f"\nnot run: {'; '.join(skipped)}"[:160] if skipped else ""), fontsize=7)
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


@figure("slide_batch_size")
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


@figure("slide_hash_family")
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
