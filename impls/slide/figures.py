"""Report figures for SLIDE (artifact ``slide_throughput``: one training run per
(threads, padding), as :func:`impls.slide.experiments.throughput_sweep` returns)."""
from __future__ import annotations

from impls.harness.figures import figure, new_axes


@figure("slide_p_at_1_vs_time", artifact="slide_throughput", system="slide",
        title="SLIDE on CPU: P@1 against training seconds per thread count and padding mode",
        paper_figure="SLIDE Fig. 5 (time-to-accuracy), SLIDE side only")
def p_at_1_vs_time(data: dict):
    fig, (ax_time, ax_iter) = new_axes(width=9.0, height=3.4, ncols=2)
    for run in data["runs"]:
        curve = run["curve"]
        label = (f"{run['threads']} thread(s), {run['padding']} padding "
                 f"({run['samples_per_second']:.0f} samples/s)")
        seconds = [max(p["seconds"], 1e-2) for p in curve]
        ax_time.plot(seconds, [p["p_at_1"] for p in curve], marker=".", label=label)
        ax_iter.plot([p["iteration"] for p in curve], [p["p_at_1"] for p in curve], marker=".")
    baseline = data["runs"][0].get("baseline_p_at_1") if data["runs"] else None
    for ax in (ax_time, ax_iter):
        if baseline is not None:
            ax.axhline(baseline, color="grey", linestyle=":", linewidth=1)
        ax.set_ylabel("P@1 (test subset)")
    ax_time.set_xscale("log")
    ax_time.set_xlabel("training seconds (log; evaluation excluded)")
    ax_iter.set_xlabel("iterations (batches)")
    ax_time.legend(fontsize=7)
    if baseline is not None:
        ax_iter.set_title(f"dotted: always the most popular label (P@1 {baseline:.3f})", fontsize=8)
    return fig
