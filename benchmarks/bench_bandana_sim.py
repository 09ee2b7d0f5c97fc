"""Bandana simulation: effective bandwidth by layout, cache policy and K-means sub-clusters;
miniature-simulation accuracy; simulator speed. Synthetic traces (datasets/bandana-*.toml).

Each setup_cache runs one registered experiment (impls/bandana/catalog.py) and stores its
artifact for the report's figures; the classes only name what asv records.
"""
from impls.harness import profiles

from .common import (axes, explain_skips, field, finite, pin_versions, raise_if_skipped, row,
                     skip_where_skipped, track)
from .runs import bandana

SIZES = profiles.sizes("bandana_sim")


class EffectiveBandwidthByLayoutAndPolicy:
    """Effective bandwidth (useful bytes / bytes read) and hit rate on the later trace."""

    params, param_names = axes(table=SIZES["tables"], layout=SIZES["layouts"], policy=SIZES["policies"],
                               cache_fraction=SIZES["cache_fractions"])
    setup_cache = bandana.layouts
    setup = row(lambda data, table, layout, policy, cache_fraction: next(p for p in data["tables"][table]["points"] if (p["layout"], p["policy"], p["cache_fraction"]) == (layout, policy, cache_fraction)))
    track_effective_bandwidth = field("effective_bandwidth", unit="fraction of bytes read", direction="higher")
    track_hit_rate = field("hit_rate", unit="fraction of lookups", direction="higher")


class BandanaHeadline:
    """The Bandana configuration chosen on the training trace: its effective bandwidth on the
    test trace over one-vector-per-block reads, its NVM traffic, and what choosing on the test
    trace instead would have added."""

    params, param_names = axes(table=SIZES["tables"])
    setup_cache = bandana.layouts
    setup = skip_where_skipped

    track_effective_bandwidth_gain = track(lambda self, data, table: data["tables"][table]["headline"]["ratio"],
                                           unit="x", direction="higher")
    track_best_blocks_read_over_baseline = track(
        lambda self, data, table: finite(data["tables"][table]["headline"].get("best_blocks_read_over_baseline")),
        unit="x (NVM blocks read by the configuration chosen on the training trace / the baseline's)",
        direction="lower",
        doc="NVM traffic of the headline's configuration: effective bandwidth counts misses as useful.",
        missing="an artifact from before this number, or a baseline that read no block")
    track_selection_gain = track(
        lambda self, data, table: finite(data["tables"][table]["headline"].get("selection_gain")),
        unit="x (best on the test trace / chosen on the training trace)", direction="context",
        doc="Optimism a choice on the test trace would add to the headline (1: both choose alike).",
        missing="an artifact from before the choice on the training trace, or a chosen configuration that "
                "read nothing")
    track_gain_over_input_order = track(
        lambda self, data, table: finite(data["tables"][table]["headline"].get("gain_over_input_order")),
        unit="x (the chosen configuration / the identity layout with its policy)", direction="higher",
        doc="What the trained layout adds to the ids as numbered, read with the same policy: the headline "
            "ratio less what the policy alone gives (1 or less: the ids' own order reads as well).",
        missing="an artifact from before this number, or the ids as numbered, read with the chosen policy, "
                "read nothing useful")
    track_no_locality_effective_bandwidth = track(
        lambda self, data, table: finite(data["tables"][table]["headline"]["random_prefetch_effective_bandwidth"]),
        unit="fraction of bytes read", direction="context",
        missing="the profile's [bandana_sim] runs no random layout with the prefetch policy")


class LayoutBuild:
    """Build time and test-trace fanout (distinct blocks per query) of each layout."""

    params, param_names = axes(table=SIZES["tables"], layout=SIZES["layouts"])
    setup_cache = bandana.layouts
    setup = skip_where_skipped

    track_build_seconds = track(lambda self, data, table, layout: data["tables"][table]["layouts"][layout]["build_seconds"],
                                unit="s", direction="lower")
    track_fanout = track(lambda self, data, table, layout: data["tables"][table]["layouts"][layout]["fanout_test"],
                         unit="blocks per query", direction="lower")


# impls/bandana/sim/miniature.py compare_with_full: NaN where its cache grid has no valid point
NO_MINIATURE_POINT = "no valid (cache, shadow) point to compare on: every shadow size is below its cache size"


class MiniatureSimulation:
    """Miniature simulation against full simulation: worst absolute error and speed-up."""

    setup_cache = bandana.layouts
    setup = skip_where_skipped

    track_max_error_effective_bandwidth = track(lambda self, data: finite(data["miniature"]["max_abs_error_effective_bandwidth"]),
                                                unit="absolute error", direction="lower", scale="absolute",
                                                missing=NO_MINIATURE_POINT)
    track_max_error_hit_rate = track(lambda self, data: finite(data["miniature"]["max_abs_error_hit_rate"]),
                                     unit="absolute error", direction="lower", scale="absolute",
                                     missing=NO_MINIATURE_POINT)
    track_speedup = track(lambda self, data: finite(data["miniature"]["speedup"]), unit="x", direction="higher",
                          missing=NO_MINIATURE_POINT + ", or the timer read 0 s for the miniature simulations")


class EffectiveBandwidthVsSubclusters:
    """Bandana Figs 7–8: effective bandwidth and K-means time as sub-clusters grow."""

    params, param_names = axes(table=SIZES["subcluster_tables"], subclusters=SIZES["subclusters"])
    setup_cache = bandana.subclusters
    setup = row(lambda data, table, subclusters: next(r for r in data["tables"][table] if r["subclusters"] == subclusters))

    track_effective_bandwidth = field("effective_bandwidth", unit="fraction of bytes read", direction="higher")
    track_kmeans_seconds = field("kmeans_seconds", unit="s", direction="lower")
    track_blocks_read_over_lru = field("blocks_read_over_lru", unit="x (NVM blocks read / plain LRU's, same cache)",
                                       direction="lower", optional=True,
                                       missing="plain LRU read no block (or an artifact from before this number)",
                                       doc="NVM traffic beside effective bandwidth, which counts misses as useful.")


class SimulatorSpeed:
    """Simulator lookups/s per policy (one core) and the ratio to an OrderedDict LRU."""

    params, param_names = axes(policy=SIZES["policies"])
    setup_cache = bandana.speed
    setup = skip_where_skipped

    track_lookups_per_second = track(lambda self, data, policy: data["policies"][policy]["lookups_per_second"],
                                     unit="lookups/s", direction="higher")


class SimulatorVsOrderedDict:
    """Policy ``none`` against a plain-Python OrderedDict LRU on the same trace, same run."""

    setup_cache = bandana.speed
    setup = skip_where_skipped

    track_ratio = track(lambda self, data: finite(data.get("ratio_none_vs_ordered_dict")), unit="x",
                        direction="higher",
                        missing="the profile's simulator-speed run has no 'none' policy or no OrderedDict baseline")


class ShpVsKahypar:
    """SHP's fanout over KaHyPar's (km1) on a 20k-vector instance (≤ 1.10: within 10%)."""

    params, param_names = axes(table=SIZES["kahypar_tables"], trace=["train", "test"])
    setup_cache = bandana.shp_vs_kahypar

    def setup(self, data, table, trace):
        raise_if_skipped(data)

    track_fanout_ratio = track(lambda self, data, table, trace: data["tables"][table][f"fanout_ratio_{trace}"],
                               unit="SHP fanout / KaHyPar fanout", direction="lower")


class SimulatorLookupsTime:
    """Seconds to replay a Zipf(0.9) trace of speed_lookups/10 ids over speed_vectors/10 vectors
    through each policy's cache (5% of the vectors, shadow 2x): asv's samples of the simulator
    speed that SimulatorSpeed tracks as one number."""
    synthetic = True  # its own generated inputs (the report says so on its history)

    params, param_names = axes(policy=SIZES["policies"])
    warmup_time = 0.5
    repeat = (3, 5, 2.0)

    def setup(self, policy):
        import numpy as np

        from impls.bandana.sim import cache

        cache.warm_up()
        n = SIZES["speed_vectors"] // 10
        self.trace = cache.zipf_trace(n, SIZES["speed_lookups"] // 10, 0.9, SIZES["seed"])
        self.layout = np.arange(n, dtype=np.int64)
        self.capacity = n // 20
        self.simulate = cache.simulate

    def time_lookups(self, policy):
        self.simulate(self.trace, self.layout, self.capacity, policy, 2 * self.capacity)


class LayoutBuildTime:
    """Seconds to build each layout of the smoke instance of the post table, with the profile's
    layout settings (K-means clusters, sub-clusters, iterations): the table is the same in
    every profile, the work is not, so timings compare within one profile (its asv machine)."""
    synthetic = True  # its own generated inputs (the report says so on its history)

    params, param_names = axes(layout=[k for k in SIZES["layouts"] if k not in ("identity", "random")])
    warmup_time = 0.0
    repeat = (2, 3, 10.0)
    number = 1
    rounds = 1
    timeout = 1800

    def setup(self, layout):
        from impls.bandana.experiments import simulation as experiments

        self.table = experiments.load_table("bandana-post", SIZES["train_fraction"], "smoke")
        self.build = experiments.build_layout
        self.build(layout, self.table, SIZES)  # compile (or load) the kernels first

    def time_build(self, layout):
        self.build(layout, self.table, SIZES)


explain_skips(globals())
pin_versions(globals())
