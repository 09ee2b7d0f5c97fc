"""SLIDE: training throughput, accuracy and memory on the synthetic Amazon-670K-shaped set.

One sweep (``setup_cache``) trains SLIDE for the profile's time budget at each
(threads, padding); it is stored as the ``slide_throughput`` artifact (P@1 curves).
"""
from impls.harness import profiles
from impls.harness.artifacts import save_artifact
from impls.slide import experiments

SIZES = profiles.sizes("slide_train")


def _sweep(_benchmark=None):
    data = experiments.throughput_sweep()
    save_artifact("slide_throughput", data, experiment="slide.throughput", synthetic=True)
    return data


_sweep.timeout = 3 * 3600


class SlideTraining:
    """Samples/s, final P@1 and peak RSS of SLIDE training per thread count and padding mode."""

    params = (SIZES["threads"], SIZES["paddings"])
    param_names = ["threads", "padding"]
    setup_cache = _sweep
    timeout = 3 * 3600

    def setup(self, sweep, threads, padding):
        self.run = next(r for r in sweep["runs"] if (r["threads"], r["padding"]) == (threads, padding))

    def track_samples_per_second(self, sweep, threads, padding):
        return self.run["samples_per_second"]

    track_samples_per_second.unit = "samples/s"

    def track_final_p_at_1(self, sweep, threads, padding):
        return self.run["final_p_at_1"]

    track_final_p_at_1.unit = "P@1"

    def track_peak_rss(self, sweep, threads, padding):
        return self.run["peak_rss_bytes"] / 2**30

    track_peak_rss.unit = "GiB"


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
