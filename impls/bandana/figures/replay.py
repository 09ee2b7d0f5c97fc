"""Report figures for Bandana's replay on a real block device (artifact ``bandana_replay``).

``data`` is what :func:`impls.bandana.experiments.replay.replay_experiment` returned:
a synthetic trace and table replayed against a real drive (O_DIRECT), next to fio.
"""
from __future__ import annotations

from impls.harness.figures import figure, grouped_bars, new_axes


def _layouts(data: dict) -> list[str]:
    return list(dict.fromkeys(p["layout"] for p in data["sweep"]))


@figure("bandana_replay_vs_fio")
def replay_vs_fio(data: dict):
    """Three panels against queue depth, one line per layout (its best policy): block
    reads/s with fio's 4 KB random-read IOPS on the same file dashed (the ceiling);
    lookups/s; useful MB/s (10^6 bytes/s of vectors the lookups used). Crosses: the read
    loop alone on fio's uniform random blocks, where measured (``raw_loop``)."""
    fig, (ax_io, ax_lookups, ax_useful) = new_axes(width=13.0, height=3.6, ncols=3)
    for i, layout in enumerate(_layouts(data)):
        line = sorted((p for p in data["sweep"] if p["layout"] == layout), key=lambda p: p["queue_depth"])
        qd = [p["queue_depth"] for p in line]
        label = f"{layout} ({line[0]['policy']})"
        shadow = data["shadow"].get(layout) if isinstance(data.get("shadow"), dict) else None
        if line[0]["policy"] == "shadow" and shadow:
            label = f"{layout} (shadow set {shadow / data['capacity']:g}x cache)"
        ax_io.plot(qd, [p["blocks_per_second"] / 1e3 for p in line], marker="o", color=f"C{i}", label=label)
        if all(p["fio_iops"] for p in line):
            ax_io.plot(qd, [p["fio_iops"] / 1e3 for p in line], linestyle="--", color=f"C{i}", alpha=0.7,
                       label=f"fio on {layout}'s file")
        ax_lookups.plot(qd, [p["lookups_per_second"] / 1e3 for p in line], marker="o", color=f"C{i}", label=label)
        ax_useful.plot(qd, [p["useful_bytes_per_second"] / 1e6 for p in line], marker="o", color=f"C{i}",
                       label=label)
    raw = sorted(data.get("raw_loop", []), key=lambda p: p["queue_depth"])
    if raw:
        ax_io.plot([p["queue_depth"] for p in raw], [p["blocks_per_second"] / 1e3 for p in raw], "kx",
                   linestyle="none", label="read loop alone (uniform blocks, as fio)")
    for ax, ylabel in ((ax_io, "thousand 4 KB reads/s"), (ax_lookups, "thousand lookups/s"),
                       (ax_useful, "useful MB/s")):
        ax.set_xscale("log", base=2)
        ticks = sorted({p["queue_depth"] for p in data["sweep"]})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("queue depth (reads in flight)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
    ax_io.legend(fontsize=6, frameon=False)
    ax_io.set_title(f"replay ({data['mechanism']}) vs fio", fontsize=9)
    ax_useful.set_title(f"cache {data['capacity']} vectors, {data['table']}", fontsize=9)
    return fig


@figure("bandana_replay_cross_check")
def cross_check(data: dict):
    """Per replayed configuration (layout, policy, queue depth): predicted useful MB/s
    (simulated effective bandwidth × fio's 4 KB bandwidth on the same file) and the
    replay's measured useful MB/s; the title says whether the replay's reads and hits
    equalled the simulator's for every point."""
    rows = data["cross_check"]
    rows = [r for r in rows if r["predicted_useful_bytes_per_second"] is not None] or rows
    fig, ax = new_axes(width=max(6.0, 0.55 * len(rows) + 2), height=3.8)
    predicted = [(r["predicted_useful_bytes_per_second"] or 0) / 1e6 for r in rows]
    measured = [r["replay_useful_bytes_per_second"] / 1e6 for r in rows]
    grouped_bars(ax, [f"{r['layout']}\n{r['policy']} QD{r['queue_depth']}" for r in rows],
                 [("simulated eff. bandwidth × fio bandwidth", predicted),
                  ("replay: measured useful bytes/s", measured)], fontsize=6, rotation=90)
    ax.set_ylabel("useful MB/s")
    matched = sum(r["match"] for r in rows)
    ax.set_title(f"reads and hits: replay = simulator in {matched} of {len(rows)} points", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    return fig
