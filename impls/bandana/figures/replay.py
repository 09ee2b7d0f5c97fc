"""Report figures for Bandana's replay on a real block device (artifact ``bandana_replay``).

``data`` is what :func:`impls.bandana.experiments.replay.replay_experiment` returned:
a synthetic trace and table replayed against a real drive (O_DIRECT), next to fio.
"""
from __future__ import annotations

import math

from impls.harness.figures import figure, finite, grouped_bars, new_axes

NO_FIO = "fio not installed or not run"


def _layouts(data: dict) -> list[str]:
    return list(dict.fromkeys(p["layout"] for p in data["sweep"]))


@figure("bandana_replay_vs_fio")
def replay_vs_fio(data: dict):
    """Three panels against queue depth, one line per layout (its best policy): block
    reads/s with fio's 4 KB random-read IOPS on the same file dashed (the ceiling);
    lookups/s; useful MB/s (10^6 bytes/s of vectors the lookups used). Crosses: the read
    loop alone on fio's uniform random blocks, where measured (``raw_loop``). A point without
    fio IOPS is a gap in the dashed line, never 0; the first panel's title names the layouts
    (and queue depths) without fio; the second names the drive the stores lay on (``store``)."""
    fig, (ax_io, ax_lookups, ax_useful) = new_axes(width=13.0, height=3.6, ncols=3)
    no_fio: list[str] = []
    for i, layout in enumerate(_layouts(data)):
        line = sorted((p for p in data["sweep"] if p["layout"] == layout), key=lambda p: p["queue_depth"])
        qd = [p["queue_depth"] for p in line]
        label = f"{layout} ({line[0]['policy']})"
        shadow = data["shadow"].get(layout) if isinstance(data.get("shadow"), dict) else None
        if line[0]["policy"] == "shadow" and shadow:
            label = f"{layout} (shadow set {shadow / data['capacity']:g}x cache)"
        ax_io.plot(qd, [p["blocks_per_second"] / 1e3 for p in line], marker="o", color=f"C{i}", label=label)
        fio = [p.get("fio_iops") / 1e3 if finite(p.get("fio_iops")) else math.nan for p in line]
        if all(math.isnan(v) for v in fio):
            no_fio.append(layout)
        else:                                       # a missing point is a gap in the line, never 0
            gaps = [str(p["queue_depth"]) for p, v in zip(line, fio) if math.isnan(v)]
            ax_io.plot(qd, fio, linestyle="--", color=f"C{i}", alpha=0.7, label=f"fio on {layout}'s file",
                       marker="." if gaps else None)        # a point between gaps stays visible
            if gaps:
                no_fio.append(f"{layout} at QD {', '.join(gaps)}")
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
    title = f"replay ({data['mechanism']}) vs fio"
    if no_fio and no_fio == _layouts(data):
        title += f"\nno fio line for any layout ({', '.join(no_fio)}): {NO_FIO}"
    elif no_fio:
        title += f"\nno fio line: {'; '.join(no_fio)} ({NO_FIO})"
    ax_io.set_title(title, fontsize=9 if not no_fio else 7)
    ax_useful.set_title(f"cache {data['capacity']} vectors, {data['table']}", fontsize=9)
    if isinstance(data.get("store"), dict):
        ax_lookups.set_title(store_title(data["store"]), fontsize=7)
    return fig


def store_title(store: dict) -> str:
    """Where the replay's stores lay (:func:`impls.bandana.nvm.replay.store_record`): the
    drive the figure measures; a second line when that is not the block device
    ``DLSYSBENCH_NVM_PATH`` names."""
    title = f"store in {store.get('directory')}\non {store.get('device') or '?'} ({store.get('filesystem')})"
    if store.get("note"):
        title += f", not on {store.get('nvm_target')}\n(DLSYSBENCH_NVM_PATH is a block device, only read)"
    return title


@figure("bandana_replay_cross_check")
def cross_check(data: dict):
    """Per replayed configuration (layout, policy, queue depth): predicted useful MB/s
    (simulated effective bandwidth × fio's 4 KB bandwidth on the same file) and the
    replay's measured useful MB/s; the title says in how many points the replay's reads and
    hits equalled the simulator's (a comparison that needs no fio).

    A point without a prediction (no fio run beside it) gets no predicted bar, never a 0
    one; the title says how many points lack one, and with none predicted the predicted
    series is left out.
    """
    rows = data["cross_check"]
    fig, ax = new_axes(width=max(6.0, 0.55 * len(rows) + 2), height=3.8)
    predicted = [r["predicted_useful_bytes_per_second"] / 1e6
                 if finite(r.get("predicted_useful_bytes_per_second")) else math.nan for r in rows]
    measured = [r["replay_useful_bytes_per_second"] / 1e6 for r in rows]
    missing = sum(math.isnan(v) for v in predicted)
    series = [("replay: measured useful bytes/s", measured, {"color": "C1"})]
    if missing < len(rows):
        series.insert(0, ("simulated eff. bandwidth × fio bandwidth", predicted, {"color": "C0"}))
    grouped_bars(ax, [f"{r['layout']}\n{r['policy']} QD{r['queue_depth']}" for r in rows], series,
                 fontsize=6, rotation=90)
    ax.set_ylabel("useful MB/s")
    matched = sum(r["match"] for r in rows)
    title = (f"read and hit counts: replay = simulator in {matched} of {len(rows)} points "
             "(the bars: bandwidths, measured and predicted)")
    if rows and missing == len(rows):
        title += f"\nno fio prediction of useful bytes/s ({NO_FIO}): measured only"
    elif missing:
        title += f"\nno fio prediction for {missing} of {len(rows)} points ({NO_FIO} there): no bar"
    ax.set_title(title, fontsize=9 if not missing else 8)
    ax.legend(fontsize=7, frameon=False)
    return fig
