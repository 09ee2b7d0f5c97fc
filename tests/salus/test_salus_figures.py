"""The Salus report figures draw from data shaped like the experiments' output."""
from impls.salus.figures import lanes
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
    assert len(labels) == len(figures.METHOD_LABELS) + 1      # and the 1 s reference line
    assert any("CPU copy" in label for label in labels)
    heights = sorted(p.get_height() for p in ax.patches)
    assert heights[0] == 1e-3  # the negative p50 drawn at the floor, not dropped
    # what the bar and its whisker are, and of how many switches: a p99 of 3 is their largest
    assert "bar: p50; whisker: p99" in ax.get_ylabel()
    assert all(label.endswith("; n = 3 (p99 ≈ the largest)") for label in labels if label != "1 s")
    many = {**data, "workloads": {"a": {k: stats(1.0, 2.0, n=200) for k in row}, "b": row}}
    labels = [t.get_text() for t in figures.switching_latency(many).axes[0].get_legend().get_texts()]
    assert labels[-1].endswith("; n = 3–200 (p99 ≈ the largest)")
    labels = [t.get_text() for t in figures.switching_latency(
        {**data, "workloads": {"a": {k: stats(1.0, 2.0, n=200) for k in row}}}).axes[0].get_legend().get_texts()]
    assert labels[-1].endswith("; n = 200")


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
    assert "another draw" not in cdf.axes[0].get_title()     # artifacts from before the draws were recorded
    drawn = {**data, "trace_draws": {"sim_ratios": [1.0] * 100, "real_draw_interval": [1.5, 2.75]}}
    assert "at another draw of this synthetic trace: 1.50-2.75× (95% of 100 draws, simulated)" in \
        figures.jct_cdf(drawn).axes[0].get_title()
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


def test_switching_figure_names_the_one_second_line_in_the_legend_not_behind_a_bar():
    row = {f"{m}_ms": stats(1.0 + i, 2.0 + i) for i, m in enumerate(figures.METHOD_LABELS)}
    row["restart_ms"] = stats(3000.0, 4000.0)   # the last bar, taller than the line
    ax = figures.switching_latency({"device": "cpu", "workloads": {"a": row}}).axes[0]
    assert "1 s" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any(t.get_text() == "1 s" for t in ax.texts)


def test_average_jct_figure_says_how_many_jobs_of_the_real_run_failed():
    data = {"policies": {"fifo": policy_row(4.0), "srtf": policy_row(2.0), "pack": policy_row(3.0)},
            "fifo_over_srtf": {"real": 2.0, "paper": 3.19}}
    data["policies"]["fifo"]["real"] = {**policy_row(4.0)["real"], "failed": [3, 7, 9]}
    data["policies"]["srtf"]["real"] = {**policy_row(2.0)["real"], "avg_jct_s": None, "failed": list(range(16))}
    data["policies"]["srtf"]["sim_error"] = data["policies"]["srtf"]["sim_inrun_error"] = None
    ax = figures.avg_jct_real_vs_simulated(data).axes[0]
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == ["3 failed", "all failed"]        # pack: nothing failed, no note


def test_the_largest_simulator_error_leaves_out_real_runs_that_lost_a_job():
    """An error against a real average over fewer jobs than the simulation's is no error of
    the simulator (bench_salus tracks it as NaN): the title quotes the other runs'."""
    data = {"policies": {"fifo": policy_row(4.0), "srtf": policy_row(2.0)}}
    data["policies"]["fifo"]["real"] = {**policy_row(4.0)["real"], "failed": [3]}
    data["policies"]["fifo"]["sim_error"] = 0.60
    data["policies"]["fifo"]["sim_inrun_error"] = 0.40
    title = figures.avg_jct_real_vs_simulated(data).axes[0].get_title()
    assert "largest simulator error: 5.0% (times profiled around the run), 1.0% (times of the run), " \
           "over the 1 run that finished every job" in title
    assert "60.0%" not in title and "40.0%" not in title
    data["policies"]["srtf"]["real"] = {**policy_row(2.0)["real"], "failed": [1]}
    assert "simulator error" not in figures.avg_jct_real_vs_simulated(data).axes[0].get_title()


def test_overhead_figure_cuts_a_long_workload_name_with_an_ellipsis():
    row = {"alone_ms": 10.0, "executor_ms": 10.1, "bookkeeping_pct": 0.4}
    ax = figures.executor_overhead({"workloads": {"x" * 300: row, "mlp": row}}).axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[1] == "mlp"
    assert ticks[0].endswith("…") and len(ticks[0]) <= figures.TICK_CHARS


# -- lanes figures -------------------------------------------------------------------------

def packing_data(caps, partial_caps=()):
    rules = ["salus", "static"]

    def rule_row(cap, rule):
        whole = not (rule == "static" and cap in partial_caps)
        return {"admitted_mean": 2.0, "fragmentation_mean": 0.1,
                "makespan_mean_s": 10.0 if whole else float("nan"), "makespan_mixes": 5 if whole else 1}
    capacities = {c: {"rules": {r: rule_row(c, r) for r in rules}} for c in caps}
    for c in caps:
        capacities[c]["capacity_peaks"] = float(c.rstrip("x"))
    return {"packing": {"capacities": capacities, "rules": rules, "n_mixes": 5, "device_model": "lanes side by side",
                        "greedy_loses": {"static": {"admitted": 1, "makespan": 1, "mixes": 5, "makespan_mixes": 5}}}}


def test_lane_packing_draws_capacities_in_ascending_order_not_the_stored_string_order():
    data = packing_data(["16x", "32x", "4x", "8x"])          # as sort_keys=True stores them
    fig = lanes.lane_packing(data)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["4x", "8x", "16x", "32x"]
    for row in data["packing"]["capacities"].values():     # no capacity_peaks: the number in the key
        del row["capacity_peaks"]
    fig = lanes.lane_packing(data)
    assert [t.get_text() for t in fig.axes[2].get_xticklabels()] == ["4x", "8x", "16x", "32x"]


def test_lane_packing_says_when_two_rules_are_the_same_in_every_panel():
    data = packing_data(["4x", "8x"])                         # salus and static: equal everywhere
    title = lanes.lane_packing(data).texts[0].get_text()
    assert "Salus (faithful) and baseline: static partitions: the same in every panel at every capacity" in title
    data["packing"]["capacities"]["8x"]["rules"]["static"]["fragmentation_mean"] = 0.1000001
    assert "the same in every panel" not in lanes.lane_packing(data).texts[0].get_text()
    partial = packing_data(["4x", "8x"], partial_caps=["4x", "8x"])   # no makespan bar: not "the same"
    assert "the same in every panel" not in lanes.lane_packing(partial).texts[0].get_text()


def test_lane_packing_wraps_a_long_list_of_rules_without_a_makespan_bar():
    caps = [f"{k}x" for k in range(2, 40, 2)]
    fig = lanes.lane_packing(packing_data(caps, partial_caps=caps))
    lines = fig._suptitle.get_text().split("\n")
    assert "no makespan bar" in fig._suptitle.get_text()
    assert max(len(line) for line in lines) <= 200             # unwrapped, it is one line of ~900
    assert len(lines) <= 2 + 3                                 # heading, one rule, at most 3 wrapped lines


def hyperparam_data(failed=False):
    def run(makespan):
        return {"failed": [0] if failed else [], "makespan_s": makespan}
    return {"workloads": {"vae_b32": {"serial": run(2.0), "packed": run(1.0), "ratio": None if failed else 2.0},
                          "superres_b4": {"serial": run(3.0), "packed": run(2.0), "ratio": None if failed else 1.5}},
            "rule": "salus", "n_jobs": 6, "iterations": 30, "device_name": "cpu", "paper": 2.38,
            "host_workers": 2, "torch_threads": 2, "packed_torch_threads": 1}


def test_hyperparam_legend_overlaps_neither_the_ratio_labels_nor_the_caption():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from impls.harness.report.paper_figures import stamp_caption

    fig = lanes.hyperparam_makespan(hyperparam_data())
    stamp_caption(fig, "Synthetic data · machine m · commit c · profile smoke · today", True)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    legends = [leg for leg in [ax.get_legend(), *fig.legends] if leg is not None]
    assert len(legends) == 1
    box = legends[0].get_window_extent(renderer)
    covered = [ax.bbox] + [t.get_window_extent(renderer) for t in ax.texts + fig.texts]
    assert sorted(t.get_text() for t in ax.texts) == ["1.50×", "2.00×"]
    assert not any(box.overlaps(other) for other in covered)
    assert box.y0 >= ax.bbox.y0        # not in the band under the axes, where the caption goes


def test_hyperparam_makespan_says_no_job_finished_when_every_job_failed():
    ax = lanes.hyperparam_makespan(hyperparam_data(failed=True)).axes[0]
    assert "no job finished" in [t.get_text() for t in ax.texts]


def test_hyperparam_makespan_has_no_such_note_when_jobs_finished():
    ax = lanes.hyperparam_makespan(hyperparam_data()).axes[0]
    assert "no job finished" not in [t.get_text() for t in ax.texts]


def inference_data(latency_cdf):
    return {"latency_cdf": latency_cdf, "latency_target_ms": 50.0, "models": ["a", "b"], "device_name": "cpu",
            "devices_needed": {"shared": 1, "one_per_device": 2}}


def test_inference_cdf_says_which_setups_draw_nothing_or_only_part():
    fig = lanes.inference_latency(inference_data({
        "one_per_device": {"a": [1.0, 2.0], "b": [3.0]},
        "processes": {"a": [], "b": []},
        "shared": {"a": [0.0, 0.0, -1.0], "b": []}}))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "one model per device" in labels
    assert "concurrent processes (MPS-like) (no latency recorded)" in labels
    assert "one device, FAIR with lanes (Salus) (3 values ≤ 0 not drawn)" in labels


def test_inference_cdf_counts_values_not_drawn_below_the_drawn_ones():
    fig = lanes.inference_latency(inference_data({"shared": {"a": [0.0, 1.0, 2.0, 4.0]}}))
    (line,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("one device")]
    assert list(line.get_xdata()) == [1.0, 2.0, 4.0]
    assert list(line.get_ydata()) == [0.5, 0.75, 1.0]     # of 4 requests, one at 0 ms


def test_inference_devices_say_when_the_gain_is_only_a_lower_bound():
    from impls.salus.figures import lanes as lane_figures

    data = {"latency_cdf": {}, "latency_target_ms": 50.0, "models": ["a"] * 6, "device_name": "cpu",
            "devices_needed": {"shared": 1, "one_per_device": 6}}
    bars = lane_figures.inference_latency(data).axes[1]
    assert "the gain is a lower bound (≥ 6×)" in bars.get_title()
    data["devices_needed"]["shared"] = 2
    assert "lower bound" not in lane_figures.inference_latency(data).axes[1].get_title()
