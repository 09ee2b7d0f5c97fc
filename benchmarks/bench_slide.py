"""SLIDE vs dense training: time to accuracy, throughput, core scaling, batch size, hash family.

Four experiment runs, each one ``setup_cache`` of :mod:`benchmarks.runs` (classes naming the
same function share one run):

- ``slide.time_to_accuracy`` (``runs.slide.to_accuracy``): every run of
  ``[slide_train.<profile>].runs`` (SLIDE, dense and sampled-softmax torch on the CPU, dense
  torch on CUDA, at 1 and 2 threads) on the Amazon-670K-shaped set; artifact
  ``slide_time_to_accuracy`` (P@1 curves, targets).
- ``slide.sweeps`` (``runs.slide.sweeps``): batch size 64/128/256 (SLIDE and dense) and
  SimHash vs DWTA with a K/L sweep on ``[slide_sweep.<profile>].dataset``; artifact
  ``slide_sweeps``.
- ``slide.delicious`` (``runs.slide.delicious``): ``[slide_delicious.<profile>].runs`` on the
  Delicious-200K-shaped set (SimHash, batch 128); artifact ``slide_delicious`` (classes
  ``SlideDelicious``, ``SlideDeliciousSpeedup``, the Amazon classes' track methods).
- ``slide.real_amazon`` (``runs.slide.real_amazon``): SLIDE on the real Amazon-670K where the
  user has it (``SlideRealData``; artifact ``slide_real_amazon``, labelled real with the
  files' sha256), skipped otherwise.

A run whose capability is missing (CUDA, the real data) is skipped the asv way; one killed or out
of memory fails its numbers, and every per-run time to the sweep's target with them
(``impls.slide.experiments.run_failures``), while the other runs' numbers stand. A run that never
reaches the target within its budget records its training time as its time to target, a lower
bound (``track_time_to_target_is_lower_bound`` 1; NaN only where there is no target); a speed-up
over such a run is a lower bound, and ``track_ratio_is_lower_bound`` says so (1); a speed-up of such a run over
one that reached the target is an upper bound (``track_ratio_is_upper_bound``). A comparison's target is the
pair's own (``impls.slide.experiments.targets.target_p_at_1`` of the two runs).
"""
import functools
import inspect
import math

from impls.harness import profiles
from impls.slide.experiments import sweeps as experiments
from impls.slide.experiments.run_failures import FAILED, raise_if_target_partial
from impls.slide.experiments.run_failures import raise_if_failed as raise_if_run_failed

from .common import axes, explain_skips, field, finite, pin_versions, raise_if_skipped, row, track
from .runs import slide

SIZES = profiles.sizes("slide_train")
SWEEP = profiles.sizes("slide_sweep")
RUNS = [r["name"] for r in SIZES["runs"]]


def peer_comparisons(sizes: dict) -> list[str]:
    """The ``slow/fast`` comparisons of ``sizes`` whose slower side is not SLIDE too. A pair of
    two SLIDE runs (slide-sample/slide: per-sample against batch padding) weighs a design choice,
    not SLIDE against a baseline: no way is better for its ratios, so asv does not track them
    (each run's own numbers it does, in SlideTimeToAccuracy); the artifact and figure keep it."""
    method = {r["name"]: r["method"] for r in sizes["runs"]}
    return [f"{slow}/{fast}" for fast, slow in sizes["comparisons"]
            if not method.get(fast) == method.get(slow) == "slide"]


COMPARISONS = peer_comparisons(SIZES)
FAMILIES = [f"{lsh}-K{K}-L{L}" for lsh, K, L in SWEEP["hash_families"]]


_NOT_SLIDE = "not a SLIDE run (only SLIDE has hash tables)"
_NO_CURVE = "a run of the pair recorded no training curve"


def _run(sweep, name):
    run = next(r for r in sweep["runs"] if r["name"] == name)
    if "skipped" in run:
        raise NotImplementedError(run["skipped"])
    return _finished(run)


def _finished(run: dict) -> dict:
    """``run``; a run that failed (run_failures) raises, so its numbers fail the asv way."""
    raise_if_run_failed(run)
    return run


def _batch_pair(entry: dict) -> dict:
    """A batch size's speed-up of the secondary sweep; a pair whose run failed raises (the
    pair's numbers fail the asv way, as :func:`_comparison`'s do)."""
    for run in (entry.get("slide"), entry.get("dense")):
        if run is not None:
            _finished(run)
    return entry["speedup"]


def _time_or_budget(run: dict) -> float:
    """A run's seconds to the target, or its training seconds where it never reached the
    target (a lower bound: the lower-bound flag says so); NaN where there is no target."""
    raise_if_target_partial(run)
    if run.get("time_to_target_s") is not None:
        return float(run["time_to_target_s"])
    return float(run["train_seconds"]) if run.get("time_to_target_is_lower_bound") else math.nan


def _time_to_target():
    """A per-run ``track_time_to_target`` and its two bound flags (new functions per class:
    each benchmark pins its own version)."""
    time = track(lambda self, *_: _time_or_budget(self.row), unit="s", direction="lower",
                 missing="no target to time (no run of the comparison beat the most-popular-label P@1), or "
                         "the run recorded no curve",
                 bounded_by=("track_time_to_target_is_lower_bound", "track_time_to_target_is_upper_bound"))
    time.pretty_source = inspect.getsource(_time_or_budget)     # what asv records as its code
    lower = field("time_to_target_is_lower_bound", optional=True, direction="flag",
                  unit="1 = the run never reached the target: its time to target is its training time, "
                       "less than the time it needs",
                  missing="the run's record has no bound flag: it was recorded before the flag existed")
    upper = field("time_to_target_is_upper_bound", optional=True, direction="flag",
                  unit="1 = the run was at the target from its first evaluation (after 0 s): its time to "
                       "target is the latest the crossing can have been",
                  missing="the run's record has no bound flag: it was recorded before the flag existed")
    return time, lower, upper


class _RunTracks:
    """The numbers every training run has (``self.row``: one run's result)."""

    track_final_p_at_1 = field("final_p_at_1", unit="P@1", direction="higher")
    track_samples_per_second = field("samples_per_second", unit="samples/s", direction="higher")


class SlideTimeToAccuracy(_RunTracks):
    """Per run (method, device, threads) on the Amazon-670K-shaped set: seconds to the target
    P@1, final P@1, samples/s, peak RSS and busy fraction of the cores while training."""

    params, param_names = axes(run=RUNS)
    setup_cache = slide.to_accuracy
    setup = row(lambda sweep, run: _run(sweep, run))

    track_time_to_target, track_time_to_target_is_lower_bound, track_time_to_target_is_upper_bound = (
        _time_to_target())
    track_peak_rss = track(lambda self, *_: self.row["peak_rss_bytes"] / 2**30, unit="GiB", direction="lower")
    # the paper's ~80% is a property it reports, not a goodness: spinning threads raise it
    track_core_utilization = field("cpu_utilization", unit="fraction of cores busy", direction="context")
    track_lsh_recall = field("final_lsh_recall", optional=True,
                             unit="fraction of the 10 best-scoring wrong labels the tables retrieve (SLIDE runs)",
                             direction="higher", missing=f"{_NOT_SLIDE}, or its last evaluation did not probe them")
    track_lsh_recall_over_random = field("lsh_recall_min_ratio", optional=True, direction="higher",
                                         missing=f"{_NOT_SLIDE}, or no evaluation came after its first table "
                                                 "rebuild", missing_from="lsh_recall_no_value",
                                         unit="x: the smallest recall over a random set's, over the evaluations "
                                              "after the first table rebuild (new hash functions; SLIDE runs)")
    track_lsh_recall_over_random_upper = track(
        lambda self, *_: finite((self.row.get("lsh_recall_min_ratio_ci") or [None, None])[1]), direction="context",
        missing=f"{_NOT_SLIDE}, or no evaluation came after its first table rebuild",
        missing_from="lsh_recall_no_value",
        unit="x: 95% upper bound of that smallest ratio (the worst evaluation's recall interval, its trials "
             "grouped by label and by point; context: it widens with fewer test points and fewer distinct labels)")
    track_lsh_recall_over_random_after_rehash = field(
        "lsh_recall_min_ratio_after_rehash", optional=True, direction="higher",
        missing=f"{_NOT_SLIDE}, or no evaluation came after its first table refresh",
        missing_from="lsh_recall_after_rehash_no_value",
        unit="x: the smallest recall over a random set's after the first refresh of either kind (SLIDE runs)")
    # context: faster training elsewhere raises it; SlideTableRefresh.track_seconds judges the tables' time
    track_table_time_fraction = track(
        lambda self, *_: finite(self.row["table_seconds"] / self.row["train_seconds"])
        if self.row.get("table_seconds") is not None and self.row.get("train_seconds") else math.nan,
        unit="fraction of training time in table refreshes and upkeep (SLIDE runs)", direction="context",
        missing=f"{_NOT_SLIDE}, or its record has no training time")
    track_hidden_cosine = field("final_hidden_cosine", optional=True,
                                unit="mean cosine between evaluation points' hidden vectors at the end",
                                direction="context", missing="the run's last evaluation recorded no hidden vectors")


class _SpeedupTracks:
    """The numbers of one speed-up comparison (``self.row``: an ``experiments.speedup`` dict)."""

    track_time_to_target_ratio = track(lambda self, *_: finite(self.row["value"]), unit="x", direction="higher",
                                       bounded_by=("track_ratio_is_lower_bound", "track_ratio_is_upper_bound"),
                                       missing="no ratio: no target, neither run reached it, no bound (the "
                                               "artifact's no_value says which), or a run of the pair recorded no "
                                               "training curve", missing_from="no_value",
                                       sides="track_time_to_target of the two runs the comparison names "
                                             "(slower/faster), in this module's per-run class")
    track_ratio_is_lower_bound = track(lambda self, *_: float(self.row["lower_bound"]),
                                       unit="1 = the slower run never reached the target, or the faster was "
                                            "past it at its first evaluation", direction="flag")
    track_ratio_is_upper_bound = track(lambda self, *_: float(self.row.get("upper_bound", False)),
                                       unit="1 = the faster run never reached the target (the slower did), or "
                                            "the slower was past it at its first evaluation", direction="flag")
    track_p_at_1_per_iteration_ratio = field(
        "p_at_1_per_iteration_ratio", optional=True, unit="ratio", direction="higher",
        missing="no ratio: a run of the pair recorded no training curve, the faster run's curve ends before the "
                "slower run's last iteration, or the slower run's final P@1 is within noise of the most-popular "
                "label's", missing_from="per_iteration_no_value")
    track_throughput_ratio = field("throughput_ratio", optional=True, missing=_NO_CURVE,
                                   unit="x (faster run's samples/s over the slower's)", direction="higher",
                                   sides="track_samples_per_second of the two runs the comparison names")


def _comparison(sweep, comparison):
    slow, fast = comparison.split("/")
    _run(sweep, slow), _run(sweep, fast)
    return sweep["speedups"][comparison]


class SlideSpeedup(_SpeedupTracks):
    """Time-to-target ratio slow/fast for each comparison of the profile (e.g. dense-cpu/slide),
    SLIDE's P@1 per iteration over the peer's, and the final P@1 difference (fast - slow)."""

    params, param_names = axes(comparison=COMPARISONS)
    setup_cache = slide.to_accuracy
    setup = row(_comparison)
    track_final_p_at_1_difference = field("final_p_at_1_difference", optional=True, unit="P@1", missing=_NO_CURVE,
                                          direction="context", scale="absolute")


class SlideTraining(_RunTracks):
    """SLIDE samples/s, final P@1 and peak RSS per thread count and padding mode (the
    time-to-accuracy sweep's SLIDE runs; a point the profile does not run is skipped)."""

    params, param_names = axes(threads=[1, 2], padding=["sample", "batch"])
    setup_cache = slide.to_accuracy

    def setup(self, sweep, threads, padding):
        raise_if_skipped(sweep)
        runs = [r for r in sweep["runs"] if r["method"] == "slide" and "skipped" not in r
                and (r.get("threads"), r.get("padding", "sample")) == (threads, padding)]
        if runs:
            raise_if_run_failed(runs[0])     # the run this point reads
        if not runs:
            ran = sorted({(r["threads"], r.get("padding", "sample")) for r in sweep["runs"]
                          if r["method"] == "slide" and "skipped" not in r and FAILED not in r})
            raise NotImplementedError(
                f"no SLIDE run at {threads} thread(s), {padding} padding in this {sweep['profile']} run: the "
                f"profile does not run it, or this machine gave its run fewer threads (the SLIDE runs here: "
                + (", ".join(f"{t} thread(s) {p}" for t, p in ran) or "none") + ")")
        self.row = runs[0]

    track_peak_rss = track(lambda self, *_: self.row["peak_rss_bytes"] / 2**30, unit="GiB", direction="lower")


class SlideBatchSize(_RunTracks):
    """SLIDE and dense CPU at each batch size (SLIDE Fig. 8) on the sweep's set."""

    params, param_names = axes(batch=SWEEP["batches"], method=SWEEP["batch_methods"])
    setup_cache = slide.sweeps
    setup = row(lambda sweep, batch, method: _finished(sweep["batch"][str(batch)][method]))

    track_time_to_target, track_time_to_target_is_lower_bound, track_time_to_target_is_upper_bound = (
        _time_to_target())


class SlideBatchSpeedup(_SpeedupTracks):
    """Dense time to target over SLIDE's at each batch size; SLIDE's P@1 per iteration over dense's."""

    params, param_names = axes(batch=SWEEP["batches"])
    setup_cache = slide.sweeps
    setup = row(lambda sweep, batch: _batch_pair(sweep["batch"][str(batch)]))


class SlideHashFamily(_RunTracks):
    """SimHash vs DWTA and K/L: final P@1, active fraction of the output layer, samples/s."""

    params, param_names = axes(family=FAMILIES)
    setup_cache = slide.sweeps
    setup = row(lambda sweep, family: _finished(sweep["hash"][FAMILIES.index(family)]))

    track_active_fraction = field("active_fraction", unit="fraction of output neurons", direction="context")
    track_lsh_recall = field("lsh_recall", optional=True,
                             unit="fraction of the 10 best-scoring wrong labels the tables retrieve",
                             direction="higher", missing="the run's last evaluation did not probe its tables")
    track_lsh_random_recall = field("lsh_random_recall", optional=True,
                                    unit="the same for a uniformly random set of the retrieved size",
                                    direction="context", missing="the run's last evaluation did not probe its tables")


class SlideTableRefresh:
    """Seconds per hash-table refresh at the profile's label count (2 threads), every output
    row re-hashed (``experiments.refresh_every_row``): rehash (same hash functions) and
    rebuild (new ones)."""
    synthetic = True  # its own generated inputs (the report says so on its history)

    params, param_names = axes(kind=["rehash", "rebuild"])
    timeout = 1800

    def setup_cache(self):
        return experiments.table_refresh_seconds(threads=2)

    track_seconds = track(lambda self, refresh, kind: refresh[kind], unit="s", direction="lower")


@functools.cache
def _refresh_network():
    """One network per benchmark process (asv runs setup again before every sample, and
    building one at the quick label count takes seconds): each sample times a refresh of a
    network refreshed before, the steady state ``experiments.table_refresh_seconds`` measures
    on one network (a new network's first refresh also pays the first touch of its tables)."""
    return experiments.refresh_network(threads=2)


class SlideTableRefreshTime:
    """Seconds per hash-table rehash (re-hash and re-insert every output neuron, as after a
    dense-Adam step) and rebuild (new hash functions too) at the profile's label count, 2
    threads (``experiments.refresh_every_row``): asv's samples of what SlideTableRefresh
    tracks as a median."""
    synthetic = True  # its own generated inputs (the report says so on its history)

    params, param_names = axes(kind=["rehash", "rebuild"])
    warmup_time = 0.5
    repeat = (3, 5, 2.0)
    rounds = 1
    timeout = 1800

    def setup(self, kind):
        self.net = _refresh_network()

    def time_refresh(self, kind):
        experiments.refresh_every_row(self.net, kind)


DELICIOUS = profiles.sizes("slide_delicious")
DELICIOUS_RUNS = [r["name"] for r in DELICIOUS["runs"]]
DELICIOUS_COMPARISONS = peer_comparisons(DELICIOUS)


class SlideDelicious(SlideTimeToAccuracy):
    """Per run on the Delicious-200K-shaped set (SimHash, batch 128): the SlideTimeToAccuracy
    numbers (time to the target P@1, final P@1, samples/s, ...; for SLIDE the tables' recall
    over a random set's and the hidden vectors' mean cosine)."""

    params = (DELICIOUS_RUNS,)
    setup_cache = slide.delicious


class SlideDeliciousSpeedup(SlideSpeedup):
    """The SlideSpeedup numbers on the Delicious-200K-shaped set (dense-cpu/slide, dense-cuda/slide)."""

    params = (DELICIOUS_COMPARISONS,)
    setup_cache = slide.delicious


class SlideRealData:
    """SLIDE on the real Amazon-670K where the user has it (DLSYSBENCH_AMAZON670K; headers
    checked against the published shape): final P@1. Skipped otherwise ("needs the real
    Amazon-670K")."""

    setup_cache = slide.real_amazon
    setup = row(lambda sweep: _run(sweep, "slide"))
    track_final_p_at_1 = field("final_p_at_1", unit="P@1 (real data)", direction="higher")


explain_skips(globals())
pin_versions(globals())
