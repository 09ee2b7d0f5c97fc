"""Bandana simulation: effective bandwidth by layout, cache policy and K-means sub-clusters;
miniature-simulation accuracy; simulator speed. Synthetic traces (datasets/bandana-*.toml).

Each setup_cache runs one experiment of impls/bandana/experiments.py and stores it as an
artifact for the report's figures; the classes only name what asv records.
"""
from impls.harness import profiles
from impls.harness.artifacts import save_artifact

from .common import raise_if_skipped

SIZES = profiles.sizes("bandana_sim")


# Each setup cache imports the experiments itself: asv imports this module once per
# benchmark and parameter, and numba + faiss at module level would cost minutes.


def _layouts_and_policies(_benchmark=None):
    from impls.bandana import experiments

    data = experiments.layout_policy_experiment(SIZES)
    save_artifact("bandana_layouts", data, experiment="bandana.layouts", synthetic=True)
    return data


def _subclusters(_benchmark=None):
    from impls.bandana import experiments

    data = experiments.subcluster_sweep(SIZES)
    save_artifact("bandana_subclusters", data, experiment="bandana.subclusters", synthetic=True)
    return data


def _speed(_benchmark=None):
    from impls.bandana import experiments

    data = experiments.simulator_speed(SIZES)
    save_artifact("bandana_simulator_speed", data, experiment="bandana.speed", synthetic=True)
    return data


def _kahypar(_benchmark=None):
    from impls.bandana import experiments, layouts

    if not layouts.kahypar_available():
        return {"skipped": "the optional package kahypar is not installed (pip install kahypar)"}
    data = experiments.shp_vs_kahypar(SIZES)
    save_artifact("bandana_shp_vs_kahypar", data, experiment="bandana.shp_vs_kahypar", synthetic=True)
    return data


for _setup in (_layouts_and_policies, _subclusters, _speed, _kahypar):
    _setup.timeout = 3600


class EffectiveBandwidthByLayoutAndPolicy:
    """Effective bandwidth (useful bytes / bytes read) and hit rate on the later trace."""

    params = (SIZES["tables"], SIZES["layouts"], SIZES["policies"], SIZES["cache_fractions"])
    param_names = ["table", "layout", "policy", "cache_fraction"]
    setup_cache = _layouts_and_policies
    timeout = 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data, table, layout, policy, cache_fraction):
        self.point = next(p for p in data["tables"][table]["points"]
                          if (p["layout"], p["policy"], p["cache_fraction"]) == (layout, policy, cache_fraction))

    def track_effective_bandwidth(self, data, table, layout, policy, cache_fraction):
        return self.point["effective_bandwidth"]

    track_effective_bandwidth.unit = "fraction of bytes read"
    track_effective_bandwidth.direction = "higher"

    def track_hit_rate(self, data, table, layout, policy, cache_fraction):
        return self.point["hit_rate"]

    track_hit_rate.unit = "fraction of lookups"
    track_hit_rate.direction = "higher"


class BandanaHeadline:
    """Best Bandana configuration's effective bandwidth over one-vector-per-block reads."""

    params = (SIZES["tables"],)
    param_names = ["table"]
    setup_cache = _layouts_and_policies
    timeout = 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def track_effective_bandwidth_gain(self, data, table):
        return data["tables"][table]["headline"]["ratio"]

    track_effective_bandwidth_gain.unit = "x"
    track_effective_bandwidth_gain.direction = "higher"

    def track_no_locality_effective_bandwidth(self, data, table):
        return data["tables"][table]["headline"]["random_prefetch_effective_bandwidth"]

    track_no_locality_effective_bandwidth.unit = "fraction of bytes read"
    track_no_locality_effective_bandwidth.direction = "context"


class LayoutBuild:
    """Build time and test-trace fanout (distinct blocks per query) of each layout."""

    params = (SIZES["tables"], SIZES["layouts"])
    param_names = ["table", "layout"]
    setup_cache = _layouts_and_policies
    timeout = 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def track_build_seconds(self, data, table, layout):
        return data["tables"][table]["layouts"][layout]["build_seconds"]

    track_build_seconds.unit = "s"
    track_build_seconds.direction = "lower"

    def track_fanout(self, data, table, layout):
        return data["tables"][table]["layouts"][layout]["fanout_test"]

    track_fanout.unit = "blocks per query"
    track_fanout.direction = "lower"


class MiniatureSimulation:
    """Miniature simulation against full simulation: worst absolute error and speed-up."""

    setup_cache = _layouts_and_policies
    timeout = 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def track_max_error_effective_bandwidth(self, data):
        return data["miniature"]["max_abs_error_effective_bandwidth"]

    track_max_error_effective_bandwidth.unit = "absolute error"
    track_max_error_effective_bandwidth.direction = "lower"

    def track_max_error_hit_rate(self, data):
        return data["miniature"]["max_abs_error_hit_rate"]

    track_max_error_hit_rate.unit = "absolute error"
    track_max_error_hit_rate.direction = "lower"

    def track_speedup(self, data):
        return data["miniature"]["speedup"]

    track_speedup.unit = "x"
    track_speedup.direction = "higher"


class EffectiveBandwidthVsSubclusters:
    """Bandana Figs 7–8: effective bandwidth and K-means time as sub-clusters grow."""

    params = (SIZES["subcluster_tables"], SIZES["subclusters"])
    param_names = ["table", "subclusters"]
    setup_cache = _subclusters
    timeout = 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data, table, subclusters):
        self.row = next(r for r in data["tables"][table] if r["subclusters"] == subclusters)

    def track_effective_bandwidth(self, data, table, subclusters):
        return self.row["effective_bandwidth"]

    track_effective_bandwidth.unit = "fraction of bytes read"
    track_effective_bandwidth.direction = "higher"

    def track_kmeans_seconds(self, data, table, subclusters):
        return self.row["kmeans_seconds"]

    track_kmeans_seconds.unit = "s"
    track_kmeans_seconds.direction = "lower"


class SimulatorSpeed:
    """Simulator lookups/s per policy (one core) and the ratio to an OrderedDict LRU."""

    params = (SIZES["policies"],)
    param_names = ["policy"]
    setup_cache = _speed
    timeout = 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def track_lookups_per_second(self, data, policy):
        return data["policies"][policy]["lookups_per_second"]

    track_lookups_per_second.unit = "lookups/s"
    track_lookups_per_second.direction = "higher"



class SimulatorVsOrderedDict:
    """Policy ``none`` against a plain-Python OrderedDict LRU on the same trace, same run."""

    setup_cache = _speed
    timeout = 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def track_ratio(self, data):
        return data["ratio_none_vs_ordered_dict"]

    track_ratio.unit = "x"
    track_ratio.direction = "higher"


class ShpVsKahypar:
    """SHP's fanout over KaHyPar's (km1) on a 20k-vector instance (≤ 1.10: within 10%)."""

    params = (SIZES["kahypar_tables"], ["train", "test"])
    param_names = ["table", "trace"]
    setup_cache = _kahypar
    timeout = 3600
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data, table, trace):
        raise_if_skipped(data)

    def track_fanout_ratio(self, data, table, trace):
        return data["tables"][table][f"fanout_ratio_{trace}"]

    track_fanout_ratio.unit = "SHP fanout / KaHyPar fanout"
    track_fanout_ratio.direction = "lower"


class SimulatorLookupsTime:
    """Seconds to replay a Zipf(0.9) trace of speed_lookups/10 ids over speed_vectors/10 vectors
    through each policy's cache (5% of the vectors, shadow 2x): asv's samples of the simulator
    speed that SimulatorSpeed tracks as one number."""

    params = (SIZES["policies"],)
    param_names = ["policy"]
    warmup_time = 0.5
    repeat = (3, 5, 2.0)

    def setup(self, policy):
        import numpy as np

        from impls.bandana import cache

        cache.warm_up()
        n = SIZES["speed_vectors"] // 10
        self.trace = cache.zipf_trace(n, SIZES["speed_lookups"] // 10, 0.9, SIZES["seed"])
        self.layout = np.arange(n, dtype=np.int64)
        self.capacity = n // 20
        self.simulate = cache.simulate

    def time_lookups(self, policy):
        self.simulate(self.trace, self.layout, self.capacity, policy, 2 * self.capacity)


class LayoutBuildTime:
    """Seconds to build each layout of the smoke instance of the post table (fixed across
    profiles, so timings of one machine stay comparable)."""

    params = ([k for k in SIZES["layouts"] if k not in ("identity", "random")],)
    param_names = ["layout"]
    warmup_time = 0.0
    repeat = (2, 3, 10.0)
    number = 1
    rounds = 1
    timeout = 1800

    def setup(self, layout):
        from impls.bandana import experiments

        self.table = experiments.load_table("bandana-post", SIZES["train_fraction"], "smoke")
        self.build = experiments.build_layout
        self.build(layout, self.table, SIZES)  # compile (or load) the kernels first

    def time_build(self, layout):
        self.build(layout, self.table, SIZES)
