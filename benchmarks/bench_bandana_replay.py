"""Bandana on a real block device: trace replay through the DRAM cache against an O_DIRECT
store, next to fio's 4 KB random-read IOPS on the same file (the ceiling).

One setup_cache runs impls/bandana/experiments/replay.py and stores it as the
``bandana_replay`` artifact (synthetic trace and values, real device); the classes only
name what asv records. Skipped where O_DIRECT reads cannot reach a drive (tmpfs).
"""
import math

from asv_runner.benchmarks.mark import SkipNotImplemented

from impls.harness import profiles

from .common import axes, explain_skips, field, finite, pin_versions, raise_if_skipped, row, track
from .runs import bandana

SIZES = profiles.sizes("bandana_replay")


def _no_fio(point) -> str:
    """Why ``point`` has no ratio over fio: the run's own reason (``fio_no_value``), or, in
    an artifact older than that key, the two causes it could be."""
    why = point.get("fio_no_value")
    return (f"no fio ceiling to compare with: {why}" if why
            else "fio is not installed, or has no engine at this queue depth")


def _sweep_point(data, layout, queue_depth):
    raise_if_skipped(data)
    for point in data["sweep"]:
        if (point["layout"], point["queue_depth"]) == (layout, queue_depth):
            return point
    raise NotImplementedError(f"{layout} at queue depth {queue_depth} was not measured")


class ReplayVsQueueDepth:
    """Replay with each layout's best policy: lookups/s, reads/s, useful MB/s, query latency."""

    params, param_names = axes(layout=SIZES["layouts"], queue_depth=SIZES["queue_depths"])
    setup_cache = bandana.replay
    setup = row(lambda data, layout, queue_depth: _sweep_point(data, layout, queue_depth))

    track_lookups_per_second = field("lookups_per_second", unit="lookups/s", direction="higher")
    track_blocks_per_second = field("blocks_per_second", unit="reads/s", direction="higher")
    track_useful_bandwidth = track(lambda self, *_: self.row["useful_bytes_per_second"] / 1e6,
                                   unit="MB/s", direction="higher")
    track_p99_query_latency = field("p99_query_us", unit="us", direction="lower")


class ReplayOverFio:
    """Replay reads/s over fio's 4 KB random-read IOPS on the same file, same queue depth."""

    params, param_names = axes(layout=SIZES["layouts"], queue_depth=SIZES["queue_depths"])
    setup_cache = bandana.replay

    def setup(self, data, layout, queue_depth):
        self.point = _sweep_point(data, layout, queue_depth)
        if self.point["fio_iops"] is None:
            raise NotImplementedError(_no_fio(self.point))
    track_ratio = track(lambda self, *_: self.point["replay_over_fio"],
                        unit="x fio IOPS", direction="higher")


class ReplayHeadline:
    """Useful bytes/s of the first comparison configuration (SHP + shadow) over the second
    (identity + plain LRU), same cache and queue depth; and whether every replayed point's
    reads and hits equal the simulator's."""

    setup_cache = bandana.replay

    def setup(self, data):
        raise_if_skipped(data)

    track_useful_bytes_ratio = track(lambda self, data: finite(data["headline"]["useful_bytes_ratio"]),
                                     unit="x", direction="higher",
                                     missing="a comparison configuration was not replayed, or the second one "
                                             "(identity + LRU) delivered no useful bytes")
    # a correctness check: 1 -> 0 is a regression (direction higher, not a flag that only
    # "changes"); NaN when no point was cross-checked, not a failure
    track_simulator_cross_check = track(
        lambda self, data: (math.nan if data["headline"]["cross_check_all_match"] is None
                            else 1.0 if data["headline"]["cross_check_all_match"] else 0.0),
        unit="1 = replay equals simulator", direction="higher")


class ReplayIOMechanism:
    """Each I/O mechanism (Linux AIO from numba, threads around preadv): reads/s and the
    ratio to fio, same store, same layout and policy."""

    params, param_names = axes(mechanism=SIZES["mechanisms"], queue_depth=SIZES["mechanism_queue_depths"])
    setup_cache = bandana.replay

    def setup(self, data, mechanism, queue_depth):
        raise_if_skipped(data)
        found = [p for p in data["mechanisms"] if (p["mechanism"], p["queue_depth"]) == (mechanism, queue_depth)]
        if not found:
            raise NotImplementedError(f"{mechanism} at queue depth {queue_depth} was not measured here")
        self.point = found[0]

    track_blocks_per_second = track(lambda self, *_: self.point["blocks_per_second"],
                                    unit="reads/s", direction="higher")

    def track_ratio(self, data, mechanism, queue_depth):
        if self.point["replay_over_fio"] is None:   # in the body, a plain NotImplementedError is a failure
            raise SkipNotImplemented(_no_fio(self.point))
        return self.point["replay_over_fio"]

    track_ratio.unit = "x fio IOPS"
    track_ratio.direction = "higher"


class ReplayRawLoop:
    """The read loop alone (uniform random blocks, no cache), taking turns with fio: the part
    of the replay's gap to fio that is the I/O loop itself, not the cache or the pipeline."""

    params, param_names = axes(queue_depth=SIZES["mechanism_queue_depths"])
    setup_cache = bandana.replay

    def setup(self, data, queue_depth):
        raise_if_skipped(data)
        found = [p for p in data.get("raw_loop", []) if p["queue_depth"] == queue_depth]
        if not found:
            raise NotImplementedError(f"the raw loop at queue depth {queue_depth} was not measured here")
        self.point = found[0]

    track_blocks_per_second = track(lambda self, *_: self.point["blocks_per_second"],
                                    unit="reads/s", direction="higher")

    def track_ratio(self, data, queue_depth):
        if self.point["raw_over_fio"] is None:      # in the body, a plain NotImplementedError is a failure
            raise SkipNotImplemented(_no_fio(self.point))
        return self.point["raw_over_fio"]

    track_ratio.unit = "x fio IOPS"
    track_ratio.direction = "higher"


explain_skips(globals())
pin_versions(globals())
