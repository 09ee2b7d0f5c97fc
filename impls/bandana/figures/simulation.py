"""Report figures for Bandana's simulation experiments (synthetic traces).

Artifacts: ``bandana_layouts`` (:func:`impls.bandana.experiments.simulation.layout_policy_experiment`)
and ``bandana_subclusters`` (:func:`impls.bandana.experiments.simulation.subcluster_sweep`).
"""
from __future__ import annotations


from impls.bandana.geometry import BLOCK_BYTES, VECTOR_BYTES
from impls.harness.figures import figure, grouped_bars, new_axes

NO_LOCALITY = VECTOR_BYTES / BLOCK_BYTES   # one useful vector in every block read
NO_LOCALITY_LABEL = f"one vector per block read ({VECTOR_BYTES} B of {BLOCK_BYTES} B)"


@figure("bandana_subclusters")
def effective_bandwidth_vs_subclusters(data: dict):
    fig, (ax_bw, ax_time) = new_axes(width=9.0, height=3.3, ncols=2)
    for table, rows in data["tables"].items():
        k = [r["subclusters"] for r in rows]
        ax_bw.plot(k, [r["effective_bandwidth"] for r in rows], marker="o", label=table)
        ax_time.plot(k, [r["kmeans_seconds"] for r in rows], marker="o", label=table)
    for ax in (ax_bw, ax_time):
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"sub-clusters per cluster ({data['sizes']['kmeans_clusters']} clusters)")
    ax_bw.axhline(NO_LOCALITY, color="grey", linestyle=":", linewidth=1, label=NO_LOCALITY_LABEL)
    ax_bw.set_ylabel("effective bandwidth\n(useful / read bytes, prefetch)")
    ax_time.set_ylabel("two-level K-means time (s)")
    ax_bw.legend(fontsize=7)
    return fig


@figure("bandana_layout_policy")
def effective_bandwidth_by_layout_and_policy(data: dict):
    tables = list(data["tables"])
    fig, axes = new_axes(width=5.0 * len(tables), height=3.4, ncols=len(tables))
    axes = axes if isinstance(axes, list) else [axes]
    for ax, table in zip(axes, tables):
        info = data["tables"][table]
        fraction = info["headline"]["cache_fraction"]
        points = [p for p in info["points"] if p["cache_fraction"] == fraction]
        layouts_ = list(dict.fromkeys(p["layout"] for p in points))
        policies = list(dict.fromkeys(p["policy"] for p in points))
        bandwidth = {(p["layout"], p["policy"]): p["effective_bandwidth"] for p in points}
        grouped_bars(ax, layouts_, [(policy, [bandwidth[layout, policy] for layout in layouts_])
                                    for policy in policies], fontsize=8)
        ax.axhline(NO_LOCALITY, color="grey", linestyle=":", linewidth=1, label=NO_LOCALITY_LABEL)
        ax.set_ylabel("effective bandwidth (useful / read bytes)")
        ax.set_xlabel("vector layout")
        ax.set_title(f"{table}, cache {fraction:.0%} of the table: best / one-vector-per-block = "
                     f"{info['headline']['ratio']:.2f}×", fontsize=9)
    axes[0].legend(fontsize=7, title="policy", title_fontsize=7)
    return fig


@figure("bandana_shadow_sweep")
def shadow_sweep(data: dict):
    sweep = data["shadow_sweep"]
    fig, ax = new_axes(width=5.5, height=3.3)
    factors = [r["shadow_factor"] for r in sweep["rows"]]
    ax.plot(factors, [r["effective_bandwidth"] for r in sweep["rows"]], marker="o", label="shadow: effective bandwidth")
    ax.axhline(sweep["prefetch"]["effective_bandwidth"], color="C0", linestyle="--", linewidth=1,
               label="prefetch everything")
    twin = ax.twinx()
    twin.plot(factors, [r["hit_rate"] for r in sweep["rows"]], marker="s", color="C1", label="shadow: hit rate")
    twin.set_ylabel("hit rate", color="C1")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("shadow size / cache size")
    ax.set_ylabel("effective bandwidth")
    ax.set_title(sweep["table"], fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


@figure("bandana_miniature")
def miniature_vs_full(data: dict):
    mini = data["miniature"]
    fig, (ax_bw, ax_hit) = new_axes(width=8.0, height=3.4, ncols=2)
    for ax, key, label in ((ax_bw, "effective_bandwidth", "effective bandwidth"), (ax_hit, "hit_rate", "hit rate")):
        full = [p["full"][key] for p in mini["points"]]
        small = [p["miniature"][key] for p in mini["points"]]
        ax.scatter(full, small, s=14)
        low, high = min(full + small), max(full + small)
        ax.plot([low, high], [low, high], color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel(f"full simulation: {label}")
        ax.set_ylabel(f"miniature (rate {mini['rate']}): {label}")
    ax_bw.set_title(f"speed-up {mini['speedup']:.1f}×, worst error {mini['max_abs_error_effective_bandwidth']:.4f}",
                    fontsize=9)
    ax_hit.set_title(f"worst error {mini['max_abs_error_hit_rate']:.3f}", fontsize=9)
    return fig
