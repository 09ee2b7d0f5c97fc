"""Report figures for the Salus lanes issue: memory over time, lane packing vs baselines,
hyper-parameter makespan and utilisation, inference latency CDFs and devices needed.

``data`` is what :mod:`impls.salus.experiments.lanes` returned (artifacts ``salus_lanes``,
``salus_hyperparam``, ``salus_inference``). Inputs are synthetic tensors and synthetic
job mixes / request streams; every figure says so. The paper's value is read from the
claims file the report is rendered with when a figure is drawn (:mod:`impls.salus.paper`).
"""
from __future__ import annotations

import math
import textwrap

import numpy as np

from impls.harness.figures import figure, grouped_bars, new_axes
from impls.salus.paper import HYPERPARAM_CLAIM, paper_note

MB = 2 ** 20
TITLE_WIDTH = 170     # characters per title line at fontsize 7 on an 11-inch-wide figure
RULE_LABELS = {"salus": "Salus (faithful)", "salus-grow": "variant: Salus + grow",
               "shared-first": "variant: shared lane first", "no-lanes": "baseline: no lanes",
               "static": "baseline: static partitions"}


def _capacity_order(capacities: dict) -> list[str]:
    """The capacity keys ("4x", "16x", ...) in ascending capacity: by each row's
    ``capacity_peaks`` (× mean workload peak), else by the number in the key. Artifacts are
    stored with sorted keys, so the dict's order is the strings' order (16x before 4x)."""
    def value(key: str) -> tuple:
        peaks = capacities[key].get("capacity_peaks") if isinstance(capacities[key], dict) else None
        if isinstance(peaks, (int, float)) and math.isfinite(peaks):
            return (0, float(peaks), key)
        try:
            return (0, float(str(key).rstrip("x×")), key)
        except ValueError:
            return (1, math.inf, key)
    return sorted(capacities, key=value)


def _value(v) -> float:
    """``v`` as a float for a bar; NaN (no bar) for None, as strict JSON stores NaN."""
    return math.nan if v is None else float(v)


def _pick_two(memory: dict) -> list[str]:
    """The two workloads with the largest ephemeral share of their peak (training first)."""
    names = sorted(memory, key=lambda w: ("_infer_" in w, -memory[w]["ephemeral_bytes"] / max(1, memory[w]["peak_bytes"])))
    return names[:2]


@figure("salus_memory_over_time")
def memory_over_time(data: dict):
    names = _pick_two(data["memory"])
    fig, axes = new_axes(width=9.0, height=3.2, ncols=len(names))
    axes = axes if isinstance(axes, list) else [axes]
    for ax, name in zip(axes, names):
        row = data["memory"][name]
        trace = row["trace"]
        ax.step(trace["t_ms"], np.asarray(trace["bytes"]) / MB, where="post", linewidth=0.9)
        ax.axhline(row["persistent_bytes"] / MB, color="tab:green", linestyle="--",
                   label=f"persistent {row['persistent_bytes'] / MB:.1f} MiB")
        ax.axhline(row["peak_bytes"] / MB, color="tab:red", linestyle=":",
                   label=f"peak {row['peak_bytes'] / MB:.1f} MiB (ephemeral {row['ephemeral_bytes'] / MB:.1f})")
        for start, _end in trace["iterations_ms"]:
            ax.axvline(start, color="grey", linewidth=0.4, alpha=0.6)
        ax.set_title(f"{name} on {data['device']} ({row['method']})", fontsize=8)
        ax.set_xlabel("time (ms; grey: iteration starts)")
        ax.set_ylabel("allocated (MiB)")
        ax.legend(fontsize=6, loc="lower right")
    return fig


@figure("salus_lane_packing")
def lane_packing(data: dict):
    packing = data["packing"]
    caps = _capacity_order(packing["capacities"])
    rules = packing["rules"]
    fig, axes = new_axes(width=11.0, height=3.4, ncols=3)
    metrics = [("admitted_mean", "jobs admitted at once (mean)"),
               ("fragmentation_mean", "unusable memory (fraction)"),
               ("makespan_mean_s", "makespan (s, simulated)")]
    for ax, (key, label) in zip(axes, metrics):
        grouped_bars(ax, caps, [(RULE_LABELS.get(rule, rule), [_value(packing["capacities"][c]["rules"][rule][key])
                                                             for c in caps]) for rule in rules], fontsize=7)
        ax.set_xlabel("capacity (× mean workload peak)", fontsize=7)
        ax.set_ylabel(label, fontsize=8)
    loses = packing["greedy_loses"]
    parts = [f"{RULE_LABELS.get(r, r)}: fewer jobs in {t['admitted']}/{t['mixes']} mixes, "
             f"longer makespan in {t['makespan']}/{t.get('makespan_mixes', t['mixes'])}" for r, t in loses.items()]
    same = "; ".join(f"{RULE_LABELS.get(a, a)} and {RULE_LABELS.get(b, b)}"
                     for a, b in _same_rules(packing, caps, [key for key, _ in metrics]))
    if same:      # wrapped and capped, as the line below
        parts.append(textwrap.fill(f"{same}: the same in every panel at every capacity", width=TITLE_WIDTH,
                                   max_lines=2, placeholder=" … (the rest in the artifact)"))
    partial = ", ".join(filter(None, (_partial(packing, c) for c in caps))) or "none"
    # wrapped and capped: one long line would widen the figure and shrink the panels
    no_bar = textwrap.fill(f"device model: {packing['device_model']}; no makespan bar: the rule cannot "
                           f"place every job of every mix ({partial})", width=TITLE_WIDTH, max_lines=3,
                           placeholder=" … (the rest in the artifact)")
    fig.suptitle("Where Salus's rule loses —\n" + "\n".join(parts) + "\n" + no_bar,
                 fontsize=7, x=0.01, ha="left")
    axes[2].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def _same_rules(packing: dict, caps: list[str], keys: list[str]) -> list[tuple[str, str]]:
    """The pairs of rules whose bars are equal in every panel at every capacity (their lines
    would coincide unremarked: on mixes where a rule never shares a lane, Salus's equals no
    lanes); a missing value (no bar) on either side is no match."""
    rules = packing["rules"]

    def row(rule: str) -> list[float]:
        return [_value(packing["capacities"][c]["rules"][rule].get(key)) for c in caps for key in keys]
    return [(a, b) for i, a in enumerate(rules) for b in rules[i + 1:]
            if all(math.isfinite(x) and math.isclose(x, y, rel_tol=1e-12, abs_tol=0.0)
                   for x, y in zip(row(a), row(b)))]


def _partial(packing: dict, cap: str) -> str:
    """The rules at ``cap`` that ran only some mixes whole, as 'rule at cap: k/n mixes'."""
    n = packing["n_mixes"]
    return ", ".join(f"{RULE_LABELS.get(r, r)} at {cap}: {row['makespan_mixes']}/{n} mixes"
                     for r, row in packing["capacities"][cap]["rules"].items()
                     if row.get("makespan_mixes", n) < n)


@figure("salus_hyperparam_makespan")
def hyperparam_makespan(data: dict):
    from impls.salus.experiments.hyperparam import finished_makespan

    names = list(data["workloads"])
    fig, ax = new_axes(width=8.0, height=3.3)
    serial = [finished_makespan(data["workloads"][n]["serial"]) for n in names]   # NaN: no bar
    packed = [finished_makespan(data["workloads"][n]["packed"]) for n in names]
    serial_label, packed_label = "one at a time (FIFO)", f"PACK with lanes ({data['rule']})"
    if data.get("host_workers"):      # CPU: say how each run used the cores
        serial_label += f", {data.get('torch_threads')} torch threads"
        packed_label += (f", {data['host_workers']} host threads × {data.get('packed_torch_threads')} torch"
                         if data["host_workers"] > 1 else ", interleaved")
    x = grouped_bars(ax, names, [(serial_label, serial), (packed_label, packed)])
    for xi, n in zip(x, names):
        ratio = data["workloads"][n]["ratio"]
        if ratio:
            ax.text(xi, max(serial[xi], packed[xi]), f"{ratio:.2f}×", ha="center", va="bottom", fontsize=8)
        elif np.isnan(serial[xi]) or np.isnan(packed[xi]):
            top = np.nanmax([serial[xi], packed[xi], 0.0])
            ax.text(xi, top, "a job failed:\nno makespan", ha="center", va="bottom", fontsize=7)
    if np.all(np.isnan(serial + packed)):       # nothing to draw: say so instead of an empty axis
        ax.set_ylim(0.0, 1.0)
        ax.set_yticks([])
        ax.text(0.5, 0.5, "no job finished", transform=ax.transAxes, ha="center", va="center", fontsize=9)
    ax.set_ylabel("makespan (s)")
    ax.set_title(f"{data['n_jobs']} jobs × {data['iterations']} iterations on {data['device_name']}"
                 f"{paper_note(HYPERPARAM_CLAIM)}", fontsize=8)
    # right of the axes: inside, it could cover a ratio label over a bar; below, the caption
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


@figure("salus_hyperparam_utilisation")
def hyperparam_utilisation(data: dict):
    name = data["smallest"]
    row = data["workloads"][name]
    fig, ax = new_axes(width=7.0, height=3.2)
    for run, style in (("serial", "-"), ("packed", "--")):
        busy = row[run]["busy"]
        if busy:
            ax.plot(busy["t_s"], busy["busy"], style, label=f"{run}: executor busy (mean {busy['busy_mean']:.2f})")
        sampler = row[run].get("sampler")
        key = next((k for k in ("busy_pct", "busy") if sampler and k in sampler), None)
        status = (sampler or {}).get("status", "measured")
        if key and sampler.get("t_s") and status == "measured":
            scale = 0.01 if key == "busy_pct" else 1.0
            ax.plot(sampler["t_s"], np.asarray(sampler[key]) * scale, style, alpha=0.6,
                    label=f"{run}: {sampler['kind']}")
        elif sampler:               # failed, empty or too short to resolve: say so, draw nothing
            ax.plot([], [], style, alpha=0.6, label=f"{run}: {sampler.get('kind', 'sampler')} "
                                                    f"{status if status != 'measured' else 'not measured: no samples'}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("busy (executor: lanes busy on average,\n>1 when lanes overlap; sampler: fraction)", fontsize=7)
    ax.set_ylim(0, max(1.05, ax.get_ylim()[1]))
    ax.set_title(f"{name} on {data['device_name']}; NVML/CPU busy is not SM occupancy", fontsize=8)
    ax.legend(fontsize=6)
    return fig


def _latency_cdf(per_model: dict, label: str) -> tuple[np.ndarray, str]:
    """The pooled latencies of one setup as a CDF to draw on a log axis, and its legend label.

    Returns ``(array [[x ms...], [fraction...]] or an empty array, label)``. Fractions are of
    the finite latencies, so a value <= 0 (not drawable on a log axis) still counts below every
    drawn one; the label says how many were not drawn, or that none were recorded.
    """
    pooled = np.concatenate([np.asarray(v, dtype=float).ravel() for v in per_model.values()] or [np.empty(0)])
    finite = pooled[np.isfinite(pooled)]
    drawn = np.sort(finite[finite > 0])
    notes = []
    if not pooled.size:
        notes.append("no latency recorded")
    if finite.size > drawn.size:
        k = finite.size - drawn.size
        notes.append(f"{k} value{'s' if k != 1 else ''} ≤ 0 not drawn")
    if pooled.size > finite.size:
        notes.append(f"{pooled.size - finite.size} not finite, not drawn")
    if notes:
        label += " (" + "; ".join(notes) + ")"
    if not drawn.size:
        return np.empty(0), label
    fraction = (finite.size - drawn.size + np.arange(1, drawn.size + 1)) / finite.size
    return np.vstack([drawn, fraction]), label


@figure("salus_inference_latency")
def inference_latency(data: dict):
    fig, (ax, bars) = new_axes(width=10.0, height=3.4, ncols=2)
    labels = {"shared": "one device, FAIR with lanes (Salus)", "one_per_device": "one model per device",
              "processes": "concurrent processes (MPS-like)"}
    for setup, per_model in data["latency_cdf"].items():
        cdf, label = _latency_cdf(per_model, labels.get(setup, setup))
        if cdf.size:
            ax.step(cdf[0], cdf[1], where="post", label=label)
        else:                       # keep the setup in the legend, with why nothing is drawn
            ax.plot([], [], label=label)
    ax.axvline(data["latency_target_ms"], color="grey", linestyle=":", label=f"p99 target {data['latency_target_ms']:g} ms")
    ax.set_xscale("log")
    ax.set_xlabel("request latency (ms, log; all models pooled)")
    ax.set_ylabel("fraction of requests")
    ax.legend(fontsize=6)
    need = data["devices_needed"]
    names = ["shared (simulated on in-run service times)", "one model per device"]
    values = [need["shared"], need["one_per_device"]]
    for i, v in enumerate(values):
        bars.bar(i, v or 0, color="tab:blue" if i == 0 else "tab:orange")
        bars.text(i, v or 0, "target missed" if v is None else str(v), ha="center", va="bottom", fontsize=8)
    bars.set_xticks(range(2), names, fontsize=7)
    bars.set_ylabel("devices needed for the p99 target")
    title = f"{len(data['models'])} models on {data['device_name']}"
    if need["shared"] == 1:         # every model fits one device: the gain is at least the model count
        title += f"\nall fit one shared device: the gain is a lower bound (≥ {need['one_per_device']}×)"
    bars.set_title(title, fontsize=8)
    return fig
