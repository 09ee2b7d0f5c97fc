"""The Salus report figures draw from data shaped like the experiments' output."""
from impls.salus.figures import scheduling as figures


def stats(p50, p99, n=3):
    return {"p50": p50, "p99": p99, "n": n}


def test_switching_figure_draws_every_method_on_a_log_axis():
    row = {f"{m}_ms": stats(1.0 + i, 2.0 + i) for i, m in enumerate(figures.METHOD_LABELS)}
    row["inprocess_ms"] = stats(-0.5, 3.0)  # paired differences can be negative under noise
    data = {"device": "cpu", "to_host_method": "cpu_copy: ...", "workloads": {"a": row, "b": row}}
    fig = figures.switching_latency(data)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == len(figures.METHOD_LABELS)
    assert any("CPU copy" in label for label in labels)
    heights = sorted(p.get_height() for p in ax.patches)
    assert heights[0] == 1e-3  # the negative p50 drawn at the floor, not dropped


def policy_row(avg):
    row = {"avg_jct_s": avg, "makespan_s": 2 * avg, "jct_cdf": {"x": [avg / 2, avg], "y": [0.5, 1.0]}}
    return {"real": row, "sim": row, "sim_inrun": row, "sim_error": 0.05, "sim_inrun_error": 0.01}


def test_policy_figures_show_each_policy_and_the_ratio():
    data = {"policies": {"fifo": policy_row(4.0), "srtf": policy_row(2.0)},
            "fifo_over_srtf": {"real": 2.0, "paper": 3.19}}
    cdf = figures.jct_cdf(data)
    assert "2.00×" in cdf.axes[0].get_title() and "3.19×" in cdf.axes[0].get_title()
    bars = figures.avg_jct_real_vs_simulated(data)
    assert sorted({round(p.get_height(), 6) for p in bars.axes[0].patches}) == [2.0, 4.0]
    title = bars.axes[0].get_title()
    assert "5.0% (times profiled around the run)" in title and "1.0% (times of the run)" in title
    assert "device time" not in title          # artifacts from before the drift was recorded
    data["policies"]["fifo"]["device_time_over_profile"] = 0.93
    data["policies"]["srtf"]["device_time_over_profile"] = 1.18
    title = figures.avg_jct_real_vs_simulated(data).axes[0].get_title()
    assert "0.93-1.18x" in title
    assert "again" not in title


def test_average_jct_figure_shows_the_repeated_run_and_how_far_apart_the_two_are():
    # artifacts are stored with sorted keys: the bars follow the order the policies ran in
    data = {"policies": {"srtf": policy_row(2.0), "fifo": policy_row(4.0)},
            "sizes": {"policies": ["fifo", "srtf"]}, "fifo_over_srtf": {"real": 2.0, "paper": 3.19},
            "repeat": {"policy": "fifo", **policy_row(5.0), "real_difference": 0.25}}
    ax = figures.avg_jct_real_vs_simulated(data).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["FIFO", "SRTF", "FIFO again"]
    assert sorted({round(p.get_height(), 6) for p in ax.patches}) == [2.0, 4.0, 5.0]
    assert "the same FIFO run again: real average JCT 25.0% apart" in ax.get_title()


def test_overhead_figure_labels_bookkeeping():
    data = {"workloads": {"mlp": {"alone_ms": 10.0, "executor_ms": 10.1, "bookkeeping_pct": 0.4}}}
    fig = figures.executor_overhead(data)
    assert any("0.40%" in t.get_text() for t in fig.axes[0].texts)
