"""SLIDE vs dense training: time to accuracy, throughput, core scaling, batch size, hash family.

Two sweeps, each one module-level ``setup_cache`` (asv keys the cache by its source line,
so the classes that share a function share one run):

- ``_time_to_accuracy``: every run of ``[slide_train.<profile>].runs`` (SLIDE, dense and
  sampled-softmax torch on the CPU, dense torch on CUDA, at 1 and 2 threads) on the
  Amazon-670K-shaped set; artifact ``slide_time_to_accuracy`` (P@1 curves, targets).
- ``_secondary``: batch size 64/128/256 (SLIDE and dense) and SimHash vs DWTA with a K/L
  sweep on ``[slide_sweep.<profile>].dataset``; artifact ``slide_sweeps``.

- ``_delicious``: ``[slide_delicious.<profile>].runs`` on the Delicious-200K-shaped set
  (SimHash, batch 128); artifact ``slide_delicious`` (classes ``SlideDelicious``,
  ``SlideDeliciousSpeedup``, the Amazon classes' track methods).
- ``_real_amazon``: SLIDE on the real Amazon-670K where the user has it (``SlideRealData``;
  artifact ``slide_real_amazon``, labelled real with the files' sha256), skipped otherwise.

A run whose capability is missing (CUDA, the real data) is skipped the asv way. Times to target are NaN
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

    def setup(self, sweep, run):
        self.run = _run(sweep, run)

    def track_time_to_target(self, sweep, run):
        return finite(self.run.get("time_to_target_s"))

    track_time_to_target.unit = "s"

    def track_final_p_at_1(self, sweep, run):
        return self.run["final_p_at_1"]

    track_final_p_at_1.unit = "P@1"

    def track_samples_per_second(self, sweep, run):
        return self.run["samples_per_second"]

    track_samples_per_second.unit = "samples/s"

    def track_peak_rss(self, sweep, run):
        return self.run["peak_rss_bytes"] / 2**30

    track_peak_rss.unit = "GiB"

    def track_core_utilization(self, sweep, run):
        return self.run["cpu_utilization"]

    track_core_utilization.unit = "fraction of cores busy"

    def track_lsh_recall(self, sweep, run):
        return finite(self.run.get("final_lsh_recall"))

    track_lsh_recall.unit = "fraction of the 10 best-scoring wrong labels the tables retrieve (SLIDE runs)"

    def track_lsh_recall_over_random(self, sweep, run):
        return finite(self.run.get("lsh_recall_min_ratio"))

    track_lsh_recall_over_random.unit = ("x: the smallest recall over a random set's, over the evaluations after "
                                         "the first table refresh (SLIDE runs)")

    def track_hidden_cosine(self, sweep, run):
        return finite(self.run.get("final_hidden_cosine"))

    track_hidden_cosine.unit = "mean cosine between evaluation points' hidden vectors at the end (SLIDE runs)"


class SlideSpeedup:
    """Time-to-target ratio slow/fast for each comparison of the profile (e.g. dense-cpu/slide),
    SLIDE's P@1 per iteration over the peer's, and the final P@1 difference (fast - slow)."""

    params = (COMPARISONS,)
    param_names = ["comparison"]
    setup_cache = _time_to_accuracy
    timeout = 6 * 3600

    def setup(self, sweep, comparison):
        slow, fast = comparison.split("/")
        _run(sweep, slow), _run(sweep, fast)
        self.s = sweep["speedups"][comparison]

    def track_time_to_target_ratio(self, sweep, comparison):
        return finite(self.s["value"])

    track_time_to_target_ratio.unit = "x"

    def track_ratio_is_lower_bound(self, sweep, comparison):
        return float(self.s["lower_bound"])

    track_ratio_is_lower_bound.unit = "1 = slow run never reached the target"

    def track_ratio_is_upper_bound(self, sweep, comparison):
        return float(self.s.get("upper_bound", False))

    track_ratio_is_upper_bound.unit = "1 = fast run never reached the target (the slow one did)"

    def track_p_at_1_per_iteration_ratio(self, sweep, comparison):
        return finite(self.s.get("p_at_1_per_iteration_ratio"))

    track_p_at_1_per_iteration_ratio.unit = "ratio"

    def track_throughput_ratio(self, sweep, comparison):
        return finite(self.s.get("throughput_ratio"))

    track_throughput_ratio.unit = "x (fast samples/s over slow's)"

    def track_final_p_at_1_difference(self, sweep, comparison):
        return finite(self.s.get("final_p_at_1_difference"))

    track_final_p_at_1_difference.unit = "P@1"


class SlideTraining:
    """SLIDE samples/s, final P@1 and peak RSS per thread count and padding mode (the
    time-to-accuracy sweep's SLIDE runs; a point the profile does not run is skipped)."""

    params = ([1, 2], ["sample", "batch"])
    param_names = ["threads", "padding"]
    setup_cache = _time_to_accuracy
    timeout = 6 * 3600

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

    def track_final_p_at_1(self, sweep, threads, padding):
        return self.run["final_p_at_1"]

    track_final_p_at_1.unit = "P@1"

    def track_peak_rss(self, sweep, threads, padding):
        return self.run["peak_rss_bytes"] / 2**30

    track_peak_rss.unit = "GiB"


class SlideBatchSize:
    """SLIDE and dense CPU at each batch size (SLIDE Fig. 8) on the sweep's set."""

    params = (SWEEP["batches"], SWEEP["batch_methods"])
    param_names = ["batch", "method"]
    setup_cache = _secondary
    timeout = 6 * 3600

    def setup(self, sweep, batch, method):
        self.run = sweep["batch"][str(batch)][method]

    def track_samples_per_second(self, sweep, batch, method):
        return self.run["samples_per_second"]

    track_samples_per_second.unit = "samples/s"

    def track_time_to_target(self, sweep, batch, method):
        return finite(self.run.get("time_to_target_s"))

    track_time_to_target.unit = "s"

    def track_final_p_at_1(self, sweep, batch, method):
        return self.run["final_p_at_1"]

    track_final_p_at_1.unit = "P@1"


class SlideBatchSpeedup:
    """Dense time to target over SLIDE's at each batch size; SLIDE's P@1 per iteration over dense's."""

    params = (SWEEP["batches"],)
    param_names = ["batch"]
    setup_cache = _secondary
    timeout = 6 * 3600

    def setup(self, sweep, batch):
        self.s = sweep["batch"][str(batch)]["speedup"]

    def track_time_to_target_ratio(self, sweep, batch):
        return finite(self.s["value"])

    track_time_to_target_ratio.unit = "x"

    def track_ratio_is_lower_bound(self, sweep, batch):
        return float(self.s["lower_bound"])

    track_ratio_is_lower_bound.unit = "1 = dense never reached the target"

    def track_ratio_is_upper_bound(self, sweep, batch):
        return float(self.s.get("upper_bound", False))

    track_ratio_is_upper_bound.unit = "1 = SLIDE never reached the target (dense did)"

    def track_p_at_1_per_iteration_ratio(self, sweep, batch):
        return finite(self.s.get("p_at_1_per_iteration_ratio"))

    track_p_at_1_per_iteration_ratio.unit = "ratio"

    def track_throughput_ratio(self, sweep, batch):
        return finite(self.s.get("throughput_ratio"))

    track_throughput_ratio.unit = "x (SLIDE samples/s over dense's)"


class SlideHashFamily:
    """SimHash vs DWTA and K/L: final P@1, active fraction of the output layer, samples/s."""

    params = (FAMILIES,)
    param_names = ["family"]
    setup_cache = _secondary
    timeout = 6 * 3600

    def setup(self, sweep, family):
        self.run = sweep["hash"][FAMILIES.index(family)]

    def track_final_p_at_1(self, sweep, family):
        return self.run["final_p_at_1"]

    track_final_p_at_1.unit = "P@1"

    def track_active_fraction(self, sweep, family):
        return self.run["active_fraction"]

    track_active_fraction.unit = "fraction of output neurons"

    def track_samples_per_second(self, sweep, family):
        return self.run["samples_per_second"]

    track_samples_per_second.unit = "samples/s"

    def track_lsh_recall(self, sweep, family):
        return finite(self.run.get("lsh_recall"))

    track_lsh_recall.unit = "fraction of the 10 best-scoring wrong labels the tables retrieve"

    def track_lsh_random_recall(self, sweep, family):
        return finite(self.run.get("lsh_random_recall"))

    track_lsh_random_recall.unit = "the same for a uniformly random set of the retrieved size"


class SlideTableRefresh:
    """Seconds per hash-table refresh at the profile's label count (2 threads)."""

    params = (["rehash", "rebuild"],)
    param_names = ["kind"]
    timeout = 1800

    def setup_cache(self):
        return experiments.table_refresh_seconds(threads=2)

    def track_seconds(self, refresh, kind):
        return refresh[kind]

    track_seconds.unit = "s"


DELICIOUS = profiles.sizes("slide_delicious")
DELICIOUS_RUNS = [r["name"] for r in DELICIOUS["runs"]]
DELICIOUS_COMPARISONS = [f"{slow}/{fast}" for fast, slow in DELICIOUS["comparisons"]]


def _delicious(_benchmark=None):
    data = experiments.delicious_sweep()
    save_artifact("slide_delicious", data, experiment="slide.delicious", synthetic=True)
    return data


_delicious.timeout = 6 * 3600


class SlideDelicious(SlideTimeToAccuracy):
    """Per run on the Delicious-200K-shaped set (SimHash, batch 128): the SlideTimeToAccuracy
    figures (time to the target P@1, final P@1, samples/s, ...; for SLIDE the tables' recall
    over a random set's and the hidden vectors' mean cosine)."""

    params = (DELICIOUS_RUNS,)
    setup_cache = _delicious


class SlideDeliciousSpeedup(SlideSpeedup):
    """The SlideSpeedup figures on the Delicious-200K-shaped set (dense-cpu/slide,
    dense-cuda/slide)."""

    params = (DELICIOUS_COMPARISONS,)
    setup_cache = _delicious


def _real_amazon(_benchmark=None):
    data = experiments.real_amazon_run()
    if data["source"] is not None:  # measured: real data, labelled with the files' checksums
        save_artifact("slide_real_amazon", data, experiment="slide.real_amazon", synthetic=False)
    return data


_real_amazon.timeout = 6 * 3600


class SlideRealData:
    """SLIDE on the real Amazon-670K where the user has it (DLSYSBENCH_AMAZON670K; headers
    checked against the published shape): final P@1. Skipped otherwise ("needs the real
    Amazon-670K")."""

    setup_cache = _real_amazon
    timeout = 6 * 3600

    def setup(self, sweep):
        self.run = _run(sweep, "slide")

    def track_final_p_at_1(self, sweep):
        return self.run["final_p_at_1"]

    track_final_p_at_1.unit = "P@1 (real data)"
