"""Bandana device characterization: fio 4 KB-class random reads on the NVM target.

One sweep (``setup_cache``, shared by both classes) measures every point of the
profile's grid; the classes only name what asv records. The sweep is stored as the
``fio_sweep`` artifact for the report's bandwidth and IOPS figures.
"""
from impls.harness import profiles

from .common import axes, explain_skips, field, pin_versions, raise_if_skipped, row, track
from .runs import bandana

SIZES = profiles.sizes("fio_sweep")
PRIMARY_ENGINE = SIZES["engines"][0]


def _point(sweep, engine, block_bytes, queue_depth):
    raise_if_skipped(sweep)
    for point in sweep["points"]:
        if (point["engine"], point["block_bytes"], point["queue_depth"]) == (engine, block_bytes, queue_depth):
            return point
    reason = sweep.get("skipped_engines", {}).get(engine, "point not measured in this sweep")
    raise NotImplementedError(f"{engine} bs={block_bytes} qd={queue_depth}: {reason}")


class FioRandomRead:
    """Random reads, O_DIRECT, first engine: block size × queue depth grid."""

    params, param_names = axes(block_bytes=SIZES["block_sizes"], queue_depth=SIZES["queue_depths"])
    setup_cache = bandana.fio
    setup = row(lambda sweep, block_bytes, queue_depth: _point(sweep, PRIMARY_ENGINE, block_bytes, queue_depth))

    track_iops = field("iops", unit="IO/s", direction="higher")
    track_bandwidth = track(lambda self, *_: self.row["bandwidth_bytes_per_s"] / 1e6,
                            unit="MB/s", direction="higher")
    track_p99_latency = field("clat_p99_us", unit="us", direction="lower")


class FioEngineQueueDepth:
    """Random reads at the engine-comparison block sizes: IOPS per engine and queue depth."""

    params, param_names = axes(engine=SIZES["engines"], block_bytes=SIZES["secondary_engine_block_sizes"],
                               queue_depth=SIZES["queue_depths"])
    setup_cache = bandana.fio
    setup = row(lambda sweep, engine, block_bytes, queue_depth: _point(sweep, engine, block_bytes, queue_depth))

    track_iops = field("iops", unit="IO/s", direction="higher")
    track_p99_latency = field("clat_p99_us", unit="us", direction="lower")


explain_skips(globals())
pin_versions(globals())
