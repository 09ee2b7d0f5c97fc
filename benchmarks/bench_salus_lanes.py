"""Salus: GPU lanes (memory profiles, packing vs baselines), hyper-parameter exploration, inference.

The experiments run once each (a one-line ``setup_cache`` into the registry, which stores
the artifact); the classes name the numbers asv records. Every CPU class has a CUDA twin
that asv skips where there is no GPU.
"""
import math
import statistics

from asv_runner.benchmarks.mark import SkipNotImplemented

from impls.harness import profiles

from .common import axes, cuda_twin, explain_skips, field, finite, pin_versions, raise_if_skipped, row, track
from .runs import salus

LANES = profiles.sizes("salus_lanes")
HYPERPARAM = profiles.sizes("salus_hyperparam")
INFERENCE = profiles.sizes("salus_inference")
SETUPS = ["shared", "one_per_device", "processes"]


class LanePacking:
    """Jobs admitted at once and fragmentation per rule on recorded profiles (mean over random mixes)."""

    params, param_names = axes(rule=LANES["rules"])
    setup_cache = salus.lanes

    def setup(self, data, rule):
        raise_if_skipped(data)
        caps = data["packing"]["capacities"]
        self.rows = [caps[c]["rules"][rule] for c in caps]

    track_admitted = track(lambda self, *_: sum(r["admitted_mean"] for r in self.rows) / len(self.rows),
                           unit="jobs (mean over mixes and capacities)", direction="higher")
    track_fragmentation = track(lambda self, *_: sum(r["fragmentation_mean"] for r in self.rows) / len(self.rows),
                                unit="fraction of memory unusable", direction="lower")
    # NaN (the worst outcome) only for this rule's own failure; where other rules leave no
    # common capacity, a skip (see _rule_makespan): no number of this rule's was lost
    track_makespan = track(lambda self, data, rule: _rule_makespan(data["packing"], rule),
                           unit="s (simulated; mean over the capacities where every rule places every job)",
                           direction="lower",
                           missing="this rule places every job of every mix at no capacity: some of its jobs never finish",
                           worst_missing=True)


class LaneManagerSpeed:
    """Lane manager: µs per decision at 1,000 jobs; seconds to replay a 10,000-job mix."""

    setup_cache = salus.lanes

    def setup(self, data):
        raise_if_skipped(data)

    track_decision_us = track(lambda self, data: data["decision"]["us_per_decision"],
                              unit="µs per job decision", direction="lower")
    track_replay_seconds = track(lambda self, data: data["replay"]["seconds"], unit="s", direction="lower")
    # lower: the share of mixes where Salus's rule packs fewer jobs than static, as LanePacking judges admitted jobs
    track_greedy_loses_fraction = track(lambda self, data: finite(data["packing"]["greedy_loses"]["static"]["admitted_fraction"]),
                                        unit="fraction of mixes", direction="lower",
                                        missing="no mix was drawn (n_mixes is 0): there is no fraction of mixes",
                                        doc="Fraction of mixes where Salus's rule admits fewer jobs than static partitioning.")


def _common_makespan(packing: dict, rule: str) -> float:
    """``rule``'s mean makespan (s) over the capacities at which every rule has one, so every
    rule's number covers the same capacities; NaN when there is no such capacity."""
    spans = [c["rules"][rule]["makespan_mean_s"] for c in packing["capacities"].values()
             if all(math.isfinite(r["makespan_mean_s"]) for r in c["rules"].values())]
    return sum(spans) / len(spans) if spans else math.nan


def _rule_makespan(packing: dict, rule: str) -> float:
    """:func:`_common_makespan` for asv. Where it is NaN, the NaN is ``rule``'s own (the worst
    outcome: at no capacity does it place every job of every mix, so some never finish); where
    ``rule`` has a makespan at some capacity and other rules leave no capacity in common, it
    raises asv's skip, naming them: the number is not measured, and no change of ``rule``'s."""
    common = _common_makespan(packing, rule)
    if not math.isnan(common):
        return common
    caps = packing["capacities"].values()
    if not any(math.isfinite(c["rules"][rule]["makespan_mean_s"]) for c in caps):
        return math.nan
    short = sorted({other for c in caps for other, r in c["rules"].items()
                    if other != rule and not math.isfinite(r["makespan_mean_s"])})
    raise SkipNotImplemented(f"rule {rule} places every job of every mix at some capacity, but other rules "
                             f"({', '.join(short)}) leave no capacity where every rule does: no makespan "
                             "comparable across rules")


def _finished_makespan(run):
    from impls.salus.experiments.hyperparam import finished_makespan   # torch: only when a run is read

    return finished_makespan(run)


class HyperparamExploration:
    """N identical jobs, different learning rates: serial makespan / PACK-with-lanes makespan."""

    setup_cache = salus.hyperparam
    params, param_names = axes(workload=HYPERPARAM["workloads"])
    setup = row(lambda data, workload: data["workloads"][workload])

    track_makespan_ratio = field("ratio", optional=True, unit="x (serial / packed)", direction="higher",
                                 missing="a job failed in one of the runs (the artifact's errors say which)", worst_missing=True,
                                 sides="the serial run's makespan (the artifact's) and track_packed_makespan beside it")
    track_packed_makespan = track(lambda self, *_: _finished_makespan(self.row["packed"]), unit="s", direction="lower",
                                  missing="a job of the packed run failed: its makespan is no time to finish", worst_missing=True)


class InferenceSharing:
    """Worst p99 latency over the models per serving setup, and devices needed for the p99 target."""

    params, param_names = axes(setup=SETUPS)
    setup_cache = salus.inference

    def setup(self, data, setup):
        raise_if_skipped(data)
        if setup not in data["setups"]:
            raise NotImplementedError(
                "the MPS-like 'processes' setup runs on the CPU only (its processes serve on the CPU)"
                if setup == "processes" and data["device"] != "cpu"
                else f"setup {setup!r} not run on {data['device']} in this profile")
        self.rows = data["setups"][setup]

    track_worst_p99_ms = track(lambda self, *_: max(r["p99_ms"] for r in self.rows.values()),
                               unit="ms", direction="lower")

    def track_median_p50_ms(self, data, setup):
        return statistics.median(r["p50_ms"] for r in self.rows.values())   # the mean of the middle two when even

    track_median_p50_ms.unit = "ms"
    track_median_p50_ms.direction = "lower"


class InferenceDevicesNeeded:
    """Devices needed for the p99 target: shared under FAIR with lanes vs one model per device."""

    setup_cache = salus.inference

    def setup(self, data):
        raise_if_skipped(data)

    track_models_per_device_gain = track(lambda self, data: finite(data["models_per_device_gain"]),
                                         unit="x (models per device, shared / one per device)",
                                         direction="higher", bounded_by=("track_gain_is_lower_bound", None),
                                         missing="no device count met the latency target, one model per "
                                                 "device included", worst_missing=True)
    # all the profile's models on one device: the gain is capped at their count, not measured past it
    track_gain_is_lower_bound = track(lambda self, data: float(data["devices_needed"]["shared"] == 1),
                                      unit="1 = every model fit one device (the gain is at least this)",
                                      direction="flag")


class LaneManagerDecisionTime:
    """Seconds for the lane manager to submit decision_jobs jobs (drawn from the measured
    memory profiles) and release every admitted one (each release retries the queue): asv's
    samples of what LaneManagerSpeed tracks as µs per decision."""

    setup_cache = salus.lanes
    warmup_time = 0.2
    repeat = (3, 5, 2.0)
    timeout = 1800

    def setup(self, data):
        import numpy as np

        from impls.salus.memory import lane_sim
        from impls.salus.memory.lanes import LaneJob

        raise_if_skipped(data)
        profiles = {w: {k: m[k] for k in ("persistent_bytes", "ephemeral_bytes", "iteration_ms")}
                    for w, m in data["memory"].items()}
        mix = lane_sim.draw_mix(profiles, int(LANES["decision_jobs"]),
                                np.random.default_rng(int(LANES.get("seed", 0))))
        self.jobs = [LaneJob(j["name"], j["persistent"], j["ephemeral"]) for j in mix]
        mean_peak = np.mean([p["persistent_bytes"] + p["ephemeral_bytes"] for p in profiles.values()])
        self.capacity = int(100.0 * mean_peak)
        self.lane_sim = lane_sim

    def time_decisions(self, data):
        manager = self.lane_sim.make_manager("salus", self.capacity)
        for job in self.jobs:
            manager.submit(job)
        while manager.placement:
            manager.release(next(iter(manager.placement)))


# The CUDA twins: the same numbers from the run on a CUDA device; asv skips them without one.
LanePackingCuda = cuda_twin(LanePacking, salus.lanes_cuda,
                            "The same on profiles recorded on a CUDA device; skipped without one.")
HyperparamExplorationCuda = cuda_twin(HyperparamExploration, salus.hyperparam_cuda,
                                      "The same on a CUDA device (one stream + memory pool per lane); skipped without one.")
InferenceSharingCuda = cuda_twin(InferenceSharing, salus.inference_cuda,
                                 "The same latencies on a CUDA device; skipped without one.")
InferenceDevicesNeededCuda = cuda_twin(InferenceDevicesNeeded, salus.inference_cuda,
                                       "The same on a CUDA device; skipped without one.")

explain_skips(globals())
pin_versions(globals())
