"""Salus: GPU lanes (memory profiles, packing vs baselines), hyper-parameter exploration, inference.

Each class runs its experiment once (``setup_cache``), stores it as an artifact for
the report's figures, and only names what asv records. The CPU classes always run;
the CUDA ones are skipped (asv: NotImplementedError) where there is no GPU.
"""
from impls.harness import profiles
from impls.harness.artifacts import save_artifact

from .common import raise_if_skipped, skipped_unless

LANES = profiles.sizes("salus_lanes")
HYPERPARAM = profiles.sizes("salus_hyperparam")
INFERENCE = profiles.sizes("salus_inference")
SETUPS = ["shared", "one_per_device", "processes"]


def _experiment(name, artifact, device):
    skip = skipped_unless("cuda") if device == "cuda" else None
    if skip:
        return skip
    from impls.salus import lane_experiments

    data = getattr(lane_experiments, name)(None, device)
    save_artifact(artifact, data, experiment=f"salus.{artifact}", synthetic=True)
    return data


# asv keys a setup cache by the defining source line: one function per experiment and device.
def _lanes_cpu(_benchmark=None):
    return _experiment("lanes_experiment", "salus_lanes", "cpu")


def _lanes_cuda(_benchmark=None):
    return _experiment("lanes_experiment", "salus_lanes_cuda", "cuda")


def _hyperparam_cpu(_benchmark=None):
    return _experiment("hyperparam", "salus_hyperparam", "cpu")


def _hyperparam_cuda(_benchmark=None):
    return _experiment("hyperparam", "salus_hyperparam_cuda", "cuda")


def _inference_cpu(_benchmark=None):
    return _experiment("inference", "salus_inference", "cpu")


def _inference_cuda(_benchmark=None):
    return _experiment("inference", "salus_inference_cuda", "cuda")


for _setup in (_lanes_cpu, _lanes_cuda, _hyperparam_cpu, _hyperparam_cuda, _inference_cpu, _inference_cuda):
    _setup.timeout = 1800


class LanePacking:
    """Jobs admitted at once and fragmentation per rule on recorded profiles (mean over random mixes)."""

    params = (LANES["rules"],)
    param_names = ["rule"]
    timeout = 1800
    setup_cache = _lanes_cpu
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data, rule):
        raise_if_skipped(data)
        caps = data["packing"]["capacities"]
        self.rows = [caps[c]["rules"][rule] for c in caps]

    def track_admitted(self, data, rule):
        return sum(r["admitted_mean"] for r in self.rows) / len(self.rows)

    track_admitted.unit = "jobs (mean over mixes and capacities)"
    track_admitted.direction = "higher"

    def track_fragmentation(self, data, rule):
        return sum(r["fragmentation_mean"] for r in self.rows) / len(self.rows)

    track_fragmentation.unit = "fraction of memory unusable"
    track_fragmentation.direction = "lower"

    def track_makespan(self, data, rule):
        return sum(r["makespan_mean_s"] for r in self.rows) / len(self.rows)

    track_makespan.unit = "s (simulated)"
    track_makespan.direction = "lower"


class LaneManagerSpeed:
    """Lane manager: µs per decision at 1,000 jobs; seconds to replay a 10,000-job mix."""

    timeout = 1800
    setup_cache = _lanes_cpu
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data):
        raise_if_skipped(data)

    def track_decision_us(self, data):
        return data["decision"]["us_per_decision"]

    track_decision_us.unit = "µs per job decision"
    track_decision_us.direction = "lower"

    def track_replay_seconds(self, data):
        return data["replay"]["seconds"]

    track_replay_seconds.unit = "s"
    track_replay_seconds.direction = "lower"

    def track_greedy_loses_fraction(self, data):
        """Fraction of mixes where Salus's rule admits fewer jobs than static partitioning."""
        return data["packing"]["greedy_loses"]["static"]["admitted_fraction"]

    track_greedy_loses_fraction.unit = "fraction of mixes"
    track_greedy_loses_fraction.direction = "context"


class LanePackingCuda(LanePacking):
    """The same on profiles recorded on a CUDA device; skipped without one."""

    setup_cache = _lanes_cuda


class HyperparamExploration:
    """N identical jobs, different learning rates: serial makespan / PACK-with-lanes makespan."""

    params = (HYPERPARAM["workloads"],)
    param_names = ["workload"]
    timeout = 1800
    setup_cache = _hyperparam_cpu
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data, workload):
        raise_if_skipped(data)
        self.row = data["workloads"][workload]

    def track_makespan_ratio(self, data, workload):
        return self.row["ratio"]

    track_makespan_ratio.unit = "x (serial / packed)"
    track_makespan_ratio.direction = "higher"

    def track_packed_makespan(self, data, workload):
        return self.row["packed"]["makespan_s"]

    track_packed_makespan.unit = "s"
    track_packed_makespan.direction = "lower"


class HyperparamExplorationCuda(HyperparamExploration):
    """The same on a CUDA device (one stream + memory pool per lane); skipped without one."""

    setup_cache = _hyperparam_cuda


class InferenceSharing:
    """Worst p99 latency over the models per serving setup, and devices needed for the p99 target."""

    params = (SETUPS,)
    param_names = ["setup"]
    timeout = 1800
    setup_cache = _inference_cpu
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data, setup):
        raise_if_skipped(data)
        if setup not in data["setups"]:
            raise NotImplementedError(f"setup {setup!r} not run on {data['device']} in this profile")
        self.rows = data["setups"][setup]

    def track_worst_p99_ms(self, data, setup):
        return max(r["p99_ms"] for r in self.rows.values())

    track_worst_p99_ms.unit = "ms"
    track_worst_p99_ms.direction = "lower"

    def track_median_p50_ms(self, data, setup):
        values = sorted(r["p50_ms"] for r in self.rows.values())
        return values[len(values) // 2]

    track_median_p50_ms.unit = "ms"
    track_median_p50_ms.direction = "lower"


class InferenceDevicesNeeded:
    """Devices needed for the p99 target: shared under FAIR with lanes vs one model per device."""

    timeout = 1800
    setup_cache = _inference_cpu
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data):
        raise_if_skipped(data)

    def track_models_per_device_gain(self, data):
        return data["models_per_device_gain"]

    track_models_per_device_gain.unit = "x (models per device, shared / one per device)"
    track_models_per_device_gain.direction = "higher"


class InferenceDevicesNeededCuda(InferenceDevicesNeeded):
    """The same on a CUDA device; skipped without one."""

    setup_cache = _inference_cuda


class LaneManagerDecisionTime:
    """Seconds for the lane manager to submit decision_jobs jobs (drawn from the measured
    memory profiles) and release every admitted one (each release retries the queue): asv's
    samples of what LaneManagerSpeed tracks as µs per decision."""

    setup_cache = _lanes_cpu
    warmup_time = 0.2
    repeat = (3, 5, 2.0)
    timeout = 1800

    def setup(self, data):
        import numpy as np

        from impls.salus import lane_sim
        from impls.salus.lanes import LaneJob

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
