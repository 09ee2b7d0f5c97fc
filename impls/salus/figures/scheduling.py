"""Report figures for Salus: switching latency per method, JCT CDFs and average JCT per
policy, and the executor's overhead.

``data`` is what :func:`impls.salus.experiments.scheduling.switching_experiment` /
:func:`impls.salus.experiments.scheduling.policy_experiment` /
:func:`impls.salus.experiments.scheduling.overhead_experiment` returned. Every title names
the device the runs used (where the artifact records it); the paper's value is read from
the claims file the report is rendered with when the figure is drawn (:mod:`impls.salus.paper`).
"""
from __future__ import annotations

import math

import numpy as np

from impls.harness.figures import figure, grouped_bars, new_axes
from impls.salus.paper import JCT_CLAIM, device_of, paper_note

TICK_CHARS = 24      # longest tick label under a bar group before it is cut with "…"
METHOD_LABELS = {
    "inprocess_gap": "iteration-boundary gap (executor)",
    "inprocess": "in-process switch (B after A − B after B)",
    "to_host": "checkpoint to host",
    "to_disk": "checkpoint to disk",
    "restart": "process restart",
}


@figure("salus_switching_latency")
def switching_latency(data: dict):
    workloads = list(data["workloads"])
    fig, ax = new_axes(width=8.5, height=3.6)
    series = []
    for method, label in METHOD_LABELS.items():
        stats = [data["workloads"][w][f"{method}_ms"] for w in workloads]
        # a paired difference can come out at or below zero under noise: shown at the floor
        p50 = np.array([max(s["p50"], 1e-3) if s["n"] else np.nan for s in stats])
        p99 = np.array([max(s["p99"], 1e-3) if s["n"] else np.nan for s in stats])
        if method == "to_host" and str(data.get("to_host_method", "")).startswith("cpu_copy"):
            label = f"{label} (a CPU copy: no device memory)"
        label = f"{label}; {_sample_count([s['n'] for s in stats])}"
        series.append((label, p50, {"yerr": [np.zeros_like(p50), np.clip(p99 - p50, 0, None)], "capsize": 2}))
    grouped_bars(ax, workloads, series)
    ax.set_yscale("log")
    ax.set_ylabel("latency (ms, log)\nbar: p50; whisker: p99")
    # named in the legend: a text label by the line could sit behind a tall bar
    ax.axhline(1000.0, color="grey", linestyle=":", linewidth=1, label="1 s")
    ax.set_title(f"device: {data.get('device_name') or data.get('device')}; "
                 "values ≤ 0.001 ms drawn at 0.001", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def _sample_count(counts: list[int]) -> str:
    """The legend's words for how many switches each bar's percentiles are of: "n = 20", or a
    range over the workloads; under 100 a p99 is the largest or next to it, and says so."""
    counts = [int(n) for n in counts if n]
    if not counts:
        return "not measured"
    low, high = min(counts), max(counts)
    text = f"n = {low}" if low == high else f"n = {low}–{high}"
    return text + (" (p99 ≈ the largest)" if low < 100 else "")


@figure("salus_jct_cdf")
def jct_cdf(data: dict):
    fig, ax = new_axes(width=6.0, height=3.6)
    colors = {}
    for policy, row in data["policies"].items():
        real = row["real"]["jct_cdf"]
        avg, failed = row["real"]["avg_jct_s"], row["real"].get("failed") or []
        label = (f"{policy.upper()} (avg {avg:.2f} s" if avg is not None else f"{policy.upper()} (no job finished") \
            + (f", {len(failed)} failed)" if failed else ")")
        (line,) = ax.step(real["x"], real["y"], where="post", label=label)
        colors[policy] = line.get_color()
        sim = row["sim"]["jct_cdf"]
        ax.step(sim["x"], sim["y"], where="post", linestyle="--", color=colors[policy], alpha=0.7)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s, log)")
    ax.set_ylabel("fraction of jobs")
    ratio = (data.get("fifo_over_srtf") or {}).get("real")
    device = device_of(data)
    where = f"on {device}" if device else "here"
    if ratio:
        title = f"avg JCT FIFO / SRTF = {ratio:.2f}× {where}{paper_note(JCT_CLAIM)}"
        draws = data.get("trace_draws") or {}
        spread = draws.get("real_draw_interval")
        if spread:      # the synthetic trace is one draw: what another would have given
            title += (f"\nat another draw of this synthetic trace: {spread[0]:.2f}-{spread[1]:.2f}× "
                      f"(95% of {len(draws.get('sim_ratios') or [])} draws, simulated)")
        ax.set_title(title, fontsize=9)
    elif device:        # no ratio (a FIFO or SRTF job failed, or one did not run): still the device
        ax.set_title(f"runs on {device}; no avg JCT FIFO / SRTF", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def failed_note(real: dict) -> str:
    """What a real run's average JCT leaves out: "k failed" when k of its jobs failed, "all
    failed" when none finished because they failed (``avg_jct_s`` None), "no job finished"
    when none finished and none is recorded failed, else ""."""
    failed = real.get("failed") or []
    if real.get("avg_jct_s") is None:
        return "all failed" if failed else "no job finished"
    return f"{len(failed)} failed" if failed else ""


@figure("salus_avg_jct_real_vs_sim")
def avg_jct_real_vs_simulated(data: dict):
    order = [p for p in data.get("sizes", {}).get("policies", []) if p in data["policies"]]
    rows = {p: data["policies"][p] for p in order or data["policies"]}
    labels = [p.upper() for p in rows]
    repeat = data.get("repeat")
    if repeat:
        rows["repeat"] = repeat
        labels.append(f"{repeat['policy'].upper()} again")
    sources = {"real": "real run", "sim": "simulator (times profiled before and after the run)",
               "sim_inrun": "simulator (times measured in the run)"}
    fig, ax = new_axes(width=7.5, height=3.6)
    x = grouped_bars(ax, labels, [(label, [math.nan if row[source]["avg_jct_s"] is None else row[source]["avg_jct_s"]
                                            for row in rows.values()])
                                  for source, label in sources.items()])
    # the real run's average covers only the jobs that finished; the simulator's, all of them
    real_x = x - (len(sources) - 1) / 2 * 0.8 / len(sources)     # the first series: the real run
    notes = [(xi, row["real"]["avg_jct_s"] or 0.0, failed_note(row["real"])) for xi, row in zip(real_x, rows.values())]
    for xi, y, note in notes:
        if note:        # vertical: horizontal, it would run over the simulator bars beside it
            ax.text(xi, y, note, ha="center", va="bottom", fontsize=7, rotation=90)
    if any(note for *_, note in notes):
        ax.set_ylim(top=ax.get_ylim()[1] * 1.25)                  # room for the notes above the bars
    ax.set_ylabel("average JCT (s)")
    parts = []
    # a real run that lost a job averages fewer jobs than the simulation: no error to quote
    whole = [row for row in rows.values() if not failed_note(row["real"])]
    for key, what in (("sim_error", "times profiled around the run"), ("sim_inrun_error", "times of the run")):
        errors = [row.get(key) for row in whole]
        worst = max((abs(e) for e in errors if e is not None and math.isfinite(e)), default=None)
        if worst is not None:
            parts.append(f"{worst:.1%} ({what})")
    if parts and len(whole) < len(rows):
        parts.append(f"over the {len(whole)} run{'' if len(whole) == 1 else 's'} that finished every job")
    drift = [row.get("device_time_over_profile") for row in rows.values()]
    drift = [d for d in drift if d is not None]
    device = device_of(data)
    lines = [f"real runs and profiles on {device}"] if device else []
    if parts:
        lines.append("largest simulator error: " + ", ".join(parts))
        if drift:
            lines.append(f"the runs' device time over the profiles': {min(drift):.2f}-{max(drift):.2f}x"
                         " (1.00: the machine as fast as when profiled)")
    if repeat and repeat.get("real_difference") is not None:
        lines.append(f"the same {repeat['policy'].upper()} run again: real average JCT "
                     f"{repeat['real_difference']:.1%} apart")
    if lines:
        ax.set_title("\n".join(lines), fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def short_label(name: str, limit: int = TICK_CHARS) -> str:
    """``name`` cut to at most ``limit`` characters, its end replaced by "…" when cut."""
    name = str(name)
    return name if len(name) <= limit else name[:limit - 1] + "…"


@figure("salus_executor_overhead")
def executor_overhead(data: dict):
    workloads = list(data["workloads"])
    fig, ax = new_axes(width=6.0, height=3.2)
    alone = [data["workloads"][w]["alone_ms"] for w in workloads]
    inside = [data["workloads"][w]["executor_ms"] for w in workloads]
    x = grouped_bars(ax, [short_label(w) for w in workloads], [("alone", alone), ("inside the executor", inside)])
    for xi, w in zip(x, workloads):
        row = data["workloads"][w]
        ax.text(xi, max(row["alone_ms"], row["executor_ms"]), f"bookkeeping {row['bookkeeping_pct']:.2f}%",
                ha="center", va="bottom", fontsize=7)
    ax.set_ylabel("iteration time (ms, median)")
    device = device_of(data)
    if device:
        ax.set_title(f"one job's iterations alone and inside the executor, on {device}", fontsize=9)
    ax.legend(fontsize=7)
    return fig
