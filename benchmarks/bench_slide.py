"""SLIDE vs dense training: time to accuracy, throughput, core scaling, batch size, hash family.

Two sweeps, each one module-level ``setup_cache`` (asv keys the cache by its source line,
so the classes that share a function share one run):

- ``_time_to_accuracy``: every run of ``[slide_train.<profile>].runs`` (SLIDE, dense and
  sampled-softmax torch on the CPU, dense torch on CUDA, at 1 and 2 threads) on the
  Amazon-670K-shaped set; artifact ``slide_time_to_accuracy`` (P@1 curves, targets).
- ``_secondary``: batch size 64/128/256 (SLIDE and dense) and SimHash vs DWTA with a K/L
  sweep on ``[slide_sweep.<profile>].dataset``; artifact ``slide_sweeps``.

A run whose capability is missing (CUDA) is skipped the asv way. Times to target are NaN
when a run never reaches the target within its budget; a speed-up over such a run is a
lower bound, and ``track_ratio_is_lower_bound`` says so (1); a speed-up of such a run over
one that reached the target is an upper bound (``track_ratio_is_upper_bound``). A comparison's target is the
pair's own (``experiments.target_p_at_1`` of the two runs).
"""
from impls.harness import profiles
from impls.harness.artifacts import save_artifact
from impls.slide import experiments
from impls.slide.experiments import finite

SIZES = profiles.sizes("slide_train")
SWEEP = profiles.sizes("slide_sweep")
RUNS = [r["name"] for r in SIZES["runs"]]
COMPARISONS = [f"{slow}/{fast}" for fast, slow in SIZES["comparisons"]]
FAMILIES = [f"{lsh}-K{K}-L{L}" for lsh, K, L in SWEEP["hash_families"]]


def _time_to_accuracy(_benchmark=None):
    data = experiments.time_to_accuracy_sweep()
    save_artifact("slide_time_to_accuracy", data, experiment="slide.time_to_accuracy", synthetic=True)
    return data


_time_to_accuracy.timeout = 6 * 3600


def _secondary(_benchmark=None):
    data = experiments.secondary_sweep()
    save_artifact("slide_sweeps", data, experiment="slide.sweeps", synthetic=True)
    return data


_secondary.timeout = 6 * 3600


def _run(sweep, name):
    run = next(r for r in sweep["runs"] if r["name"] == name)
    if "skipped" in run:
        raise NotImplementedError(run["skipped"])
    return run


class SlideTimeToAccuracy:
    """Per run (method, device, threads) on the Amazon-670K-shaped set: seconds to the target
    P@1, final P@1, samples/s, peak RSS and busy fraction of the cores while training."""

    params = (RUNS,)
    param_names = ["run"]
    setup_cache = _time_to_accuracy
    timeout = 6 * 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, sweep, run):
        self.run = _run(sweep, run)

    def track_time_to_target(self, sweep, run):
        return finite(self.run.get("time_to_target_s"))

    track_time_to_target.unit = "s"
    track_time_to_target.direction = "lower"

    def track_final_p_at_1(self, sweep, run):
        return self.run["final_p_at_1"]

    track_final_p_at_1.unit = "P@1"
    track_final_p_at_1.direction = "higher"

    def track_samples_per_second(self, sweep, run):
        return self.run["samples_per_second"]

    track_samples_per_second.unit = "samples/s"
    track_samples_per_second.direction = "higher"

    def track_peak_rss(self, sweep, run):
        return self.run["peak_rss_bytes"] / 2**30

    track_peak_rss.unit = "GiB"
    track_peak_rss.direction = "lower"

    def track_core_utilization(self, sweep, run):
        return self.run["cpu_utilization"]

    track_core_utilization.unit = "fraction of cores busy"
    track_core_utilization.direction = "higher"

    def track_lsh_recall(self, sweep, run):
        return finite(self.run.get("final_lsh_recall"))

    track_lsh_recall.unit = "fraction of the 10 best-scoring wrong labels the tables retrieve (SLIDE runs)"
    track_lsh_recall.direction = "higher"


class SlideSpeedup:
    """Time-to-target ratio slow/fast for each comparison of the profile (e.g. dense-cpu/slide),
    SLIDE's P@1 per iteration over the peer's, and the final P@1 difference (fast - slow)."""

    params = (COMPARISONS,)
    param_names = ["comparison"]
    setup_cache = _time_to_accuracy
    timeout = 6 * 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, sweep, comparison):
        slow, fast = comparison.split("/")
        _run(sweep, slow), _run(sweep, fast)
        self.s = sweep["speedups"][comparison]

    def track_time_to_target_ratio(self, sweep, comparison):
        return finite(self.s["value"])

    track_time_to_target_ratio.unit = "x"
    track_time_to_target_ratio.direction = "higher"

    def track_ratio_is_lower_bound(self, sweep, comparison):
        return float(self.s["lower_bound"])

    track_ratio_is_lower_bound.unit = "1 = slow run never reached the target"
    track_ratio_is_lower_bound.direction = "flag"

    def track_ratio_is_upper_bound(self, sweep, comparison):
        return float(self.s.get("upper_bound", False))

    track_ratio_is_upper_bound.unit = "1 = fast run never reached the target (the slow one did)"
    track_ratio_is_upper_bound.direction = "flag"

    def track_p_at_1_per_iteration_ratio(self, sweep, comparison):
        return finite(self.s.get("p_at_1_per_iteration_ratio"))

    track_p_at_1_per_iteration_ratio.unit = "ratio"
    track_p_at_1_per_iteration_ratio.direction = "higher"

    def track_throughput_ratio(self, sweep, comparison):
        return finite(self.s.get("throughput_ratio"))

    track_throughput_ratio.unit = "x (fast samples/s over slow's)"
    track_throughput_ratio.direction = "higher"

    def track_final_p_at_1_difference(self, sweep, comparison):
        return finite(self.s.get("final_p_at_1_difference"))

    track_final_p_at_1_difference.unit = "P@1"
    track_final_p_at_1_difference.direction = "context"


class SlideTraining:
    """SLIDE samples/s, final P@1 and peak RSS per thread count and padding mode (the
    time-to-accuracy sweep's SLIDE runs; a point the profile does not run is skipped)."""

    params = ([1, 2], ["sample", "batch"])
    param_names = ["threads", "padding"]
    setup_cache = _time_to_accuracy
    timeout = 6 * 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, sweep, threads, padding):
        runs = [r for r in sweep["runs"] if r["method"] == "slide" and "skipped" not in r
                and (r["threads"], r.get("padding", "sample")) == (threads, padding)]
        if not runs:
            raise NotImplementedError(f"the {sweep['profile']} profile has no SLIDE run at {threads} thread(s), "
                                      f"{padding} padding")
        self.run = runs[0]

    def track_samples_per_second(self, sweep, threads, padding):
        return self.run["samples_per_second"]

    track_samples_per_second.unit = "samples/s"
    track_samples_per_second.direction = "higher"

    def track_final_p_at_1(self, sweep, threads, padding):
        return self.run["final_p_at_1"]

    track_final_p_at_1.unit = "P@1"
    track_final_p_at_1.direction = "higher"

    def track_peak_rss(self, sweep, threads, padding):
        return self.run["peak_rss_bytes"] / 2**30

    track_peak_rss.unit = "GiB"
    track_peak_rss.direction = "lower"


class SlideBatchSize:
    """SLIDE and dense CPU at each batch size (SLIDE Fig. 8) on the sweep's set."""

    params = (SWEEP["batches"], SWEEP["batch_methods"])
    param_names = ["batch", "method"]
    setup_cache = _secondary
    timeout = 6 * 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, sweep, batch, method):
        self.run = sweep["batch"][str(batch)][method]

    def track_samples_per_second(self, sweep, batch, method):
        return self.run["samples_per_second"]

    track_samples_per_second.unit = "samples/s"
    track_samples_per_second.direction = "higher"

    def track_time_to_target(self, sweep, batch, method):
        return finite(self.run.get("time_to_target_s"))

    track_time_to_target.unit = "s"
    track_time_to_target.direction = "lower"

    def track_final_p_at_1(self, sweep, batch, method):
        return self.run["final_p_at_1"]

    track_final_p_at_1.unit = "P@1"
    track_final_p_at_1.direction = "higher"


class SlideBatchSpeedup:
    """Dense time to target over SLIDE's at each batch size; SLIDE's P@1 per iteration over dense's."""

    params = (SWEEP["batches"],)
    param_names = ["batch"]
    setup_cache = _secondary
    timeout = 6 * 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, sweep, batch):
        self.s = sweep["batch"][str(batch)]["speedup"]

    def track_time_to_target_ratio(self, sweep, batch):
        return finite(self.s["value"])

    track_time_to_target_ratio.unit = "x"
    track_time_to_target_ratio.direction = "higher"

    def track_ratio_is_lower_bound(self, sweep, batch):
        return float(self.s["lower_bound"])

    track_ratio_is_lower_bound.unit = "1 = dense never reached the target"
    track_ratio_is_lower_bound.direction = "flag"

    def track_ratio_is_upper_bound(self, sweep, batch):
        return float(self.s.get("upper_bound", False))

    track_ratio_is_upper_bound.unit = "1 = SLIDE never reached the target (dense did)"
    track_ratio_is_upper_bound.direction = "flag"

    def track_p_at_1_per_iteration_ratio(self, sweep, batch):
        return finite(self.s.get("p_at_1_per_iteration_ratio"))

    track_p_at_1_per_iteration_ratio.unit = "ratio"
    track_p_at_1_per_iteration_ratio.direction = "higher"

    def track_throughput_ratio(self, sweep, batch):
        return finite(self.s.get("throughput_ratio"))

    track_throughput_ratio.unit = "x (SLIDE samples/s over dense's)"
    track_throughput_ratio.direction = "higher"


class SlideHashFamily:
    """SimHash vs DWTA and K/L: final P@1, active fraction of the output layer, samples/s."""

    params = (FAMILIES,)
    param_names = ["family"]
    setup_cache = _secondary
    timeout = 6 * 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, sweep, family):
        self.run = sweep["hash"][FAMILIES.index(family)]

    def track_final_p_at_1(self, sweep, family):
        return self.run["final_p_at_1"]

    track_final_p_at_1.unit = "P@1"
    track_final_p_at_1.direction = "higher"

    def track_active_fraction(self, sweep, family):
        return self.run["active_fraction"]

    track_active_fraction.unit = "fraction of output neurons"
    track_active_fraction.direction = "context"

    def track_samples_per_second(self, sweep, family):
        return self.run["samples_per_second"]

    track_samples_per_second.unit = "samples/s"
    track_samples_per_second.direction = "higher"

    def track_lsh_recall(self, sweep, family):
        return finite(self.run.get("lsh_recall"))

    track_lsh_recall.unit = "fraction of the 10 best-scoring wrong labels the tables retrieve"
    track_lsh_recall.direction = "higher"

    def track_lsh_random_recall(self, sweep, family):
        return finite(self.run.get("lsh_random_recall"))

    track_lsh_random_recall.unit = "the same for a uniformly random set of the retrieved size"
    track_lsh_random_recall.direction = "context"


class SlideTableRefresh:
    """Seconds per hash-table refresh at the profile's label count (2 threads)."""

    params = (["rehash", "rebuild"],)
    param_names = ["kind"]
    timeout = 1800
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup_cache(self):
        return experiments.table_refresh_seconds(threads=2)

    def track_seconds(self, refresh, kind):
        return refresh[kind]

    track_seconds.unit = "s"
    track_seconds.direction = "lower"


class SlideTableRefreshTime:
    """Seconds per hash-table rehash (re-insert every output neuron) and rebuild (new hash
    functions too) at the profile's label count, 2 threads: asv's samples of what
    SlideTableRefresh tracks as a median."""

    params = (["rehash", "rebuild"],)
    param_names = ["kind"]
    warmup_time = 0.5
    repeat = (3, 5, 2.0)
    rounds = 1
    timeout = 1800

    def setup(self, kind):
        from impls.slide.config import SlideConfig
        from impls.slide.network import SlideNetwork
        from impls.slide.trainer import set_threads, warm_up

        train_data, _, _ = experiments.data()
        config = SlideConfig(threads=2)
        set_threads(2)
        warm_up(config)
        self.net = SlideNetwork(config, train_data.n_features, train_data.n_labels, 64)

    def time_refresh(self, kind):
        self.net.refresh_tables(rebuild=kind == "rebuild")
