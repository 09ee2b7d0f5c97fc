"""Report figures for Bandana's simulation experiments (synthetic traces).

Artifacts: ``bandana_layouts`` (:func:`impls.bandana.experiments.simulation.layout_policy_experiment`)
and ``bandana_subclusters`` (:func:`impls.bandana.experiments.simulation.subcluster_sweep`).
"""
from __future__ import annotations


from impls.bandana.geometry import BLOCK_BYTES, VECTOR_BYTES
from impls.harness.figures import figure, finite, grouped_bars, new_axes

NO_LOCALITY = VECTOR_BYTES / BLOCK_BYTES   # one useful vector in every block read
NO_LOCALITY_LABEL = f"one vector per block read ({VECTOR_BYTES} B of {BLOCK_BYTES} B)"


@figure("bandana_subclusters")
def effective_bandwidth_vs_subclusters(data: dict):
    lru = data.get("lru", {})                      # absent in artifacts before the LRU point
    fig, axes = new_axes(width=13.0 if lru else 9.0, height=3.3, ncols=3 if lru else 2)
    ax_bw, ax_time = axes[0], axes[1]
    for table, rows in data["tables"].items():
        k = [r["subclusters"] for r in rows]
        line, = ax_bw.plot(k, [r["effective_bandwidth"] for r in rows], marker="o", label=table)
        ax_time.plot(k, [r["kmeans_seconds"] for r in rows], marker="o", label=table)
        clusters = data["sizes"]["kmeans_clusters"]
        short = [r for r in rows if r.get("groups") is not None and r["groups"] < clusters * r["subclusters"]]
        for r in short:       # small clusters give fewer sub-clusters than asked: the x value is nominal
            ax_bw.annotate(f"{r['groups'] / clusters:.3g} made", (r["subclusters"], r["effective_bandwidth"]),
                           textcoords="offset points", xytext=(0, -11), ha="center", fontsize=6,
                           color=line.get_color())
        if table in lru:      # plain LRU's effective bandwidth is the one-vector-per-block line's
            axes[2].plot(k, [r["blocks_read_over_lru"] for r in rows], marker="o", color=line.get_color(),
                         label=table)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"sub-clusters per cluster ({data['sizes']['kmeans_clusters']} clusters)")
    ax_bw.axhline(NO_LOCALITY, color="grey", linestyle=":", linewidth=1,
                  label=NO_LOCALITY_LABEL + (": plain LRU's" if lru else ""))
    ax_bw.set_ylabel("effective bandwidth\n(useful / read bytes, prefetch)")
    ax_time.set_ylabel("two-level K-means time (s)")
    if lru:
        axes[2].axhline(1.0, color="grey", linestyle="--", linewidth=1)
        axes[2].set_ylabel("NVM blocks read / plain LRU's\n(same cache; below 1: less traffic)")
        axes[2].legend(fontsize=7)
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
        head = info["headline"]
        traffic = head.get("best_blocks_read_over_baseline")
        chosen = (f"{head['best']['layout']} + {head['best']['policy']} (chosen on the training trace)"
                  if head.get("chosen_on") == "train" else "best")
        ax.set_title(f"{table}, cache {fraction:.0%} of the table\n{chosen} / one-vector-per-block = "
                     f"{head['ratio']:.2f}×"
                     + (f"\nits NVM blocks read: {traffic:.2f}× the baseline's" if traffic else ""), fontsize=9)
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
    ax.set_ylabel("effective bandwidth (useful / read bytes)")
    ax.set_title(sweep["table"], fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


@figure("bandana_miniature")
def miniature_vs_full(data: dict):
    mini = data["miniature"]
    fig, (ax_bw, ax_hit) = new_axes(width=8.0, height=3.4, ncols=2)
    for ax, key, label in ((ax_bw, "effective_bandwidth", "effective bandwidth (useful / read bytes)"),
                           (ax_hit, "hit_rate", "hit rate")):
        full = [p["full"][key] for p in mini["points"]]
        small = [p["miniature"][key] for p in mini["points"]]
        ax.scatter(full, small, s=14)
        if full:   # no valid grid point: nothing drawn, the report says "no data"
            low, high = min(full + small), max(full + small)
            ax.plot([low, high], [low, high], color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel(f"full simulation: {label}")
        ax.set_ylabel(f"miniature (rate {mini['rate']}): {label}")
    speedup = f"{mini['speedup']:.1f}×" if finite(mini.get("speedup")) else "not measured (timed at 0 s)"
    ax_bw.set_title(f"speed-up {speedup}, worst error {mini['max_abs_error_effective_bandwidth']:.4f}", fontsize=9)
    ax_hit.set_title(f"worst error {mini['max_abs_error_hit_rate']:.3f}", fontsize=9)
    return fig
