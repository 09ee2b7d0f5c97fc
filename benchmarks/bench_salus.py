"""Salus: switching latency, scheduling policies and executor overhead.

Each class runs its experiment once (``setup_cache``), stores it as an artifact for
the report's figures, and only names what asv records. The CPU classes always run;
the CUDA ones are skipped (asv: NotImplementedError) where there is no GPU.
"""
from impls.harness import profiles
from impls.harness.experiments import run_and_store

from .common import axes, cuda_twin, pin_versions, raise_if_skipped, row, track

SWITCHING = profiles.sizes("salus_switching")
POLICIES = profiles.sizes("salus_policies")
OVERHEAD = profiles.sizes("salus_overhead")
METHODS = ["inprocess", "inprocess_gap", "to_host", "to_disk", "restart"]


# asv keys a setup cache by the defining source line: one function per experiment and
# device, so that a CUDA class never reuses the CPU run (and sharers share on purpose).
# Imports stay inside the registry: torch at module level would cost seconds per benchmark.
def _switching_cpu(_benchmark=None):
    return run_and_store("salus.switching", "cpu")


def _switching_cuda(_benchmark=None):
    return run_and_store("salus.switching", "cuda")


def _policies_cpu(_benchmark=None):
    return run_and_store("salus.policies", "cpu")


def _policies_cuda(_benchmark=None):
    return run_and_store("salus.policies", "cuda")


def _overhead_cpu(_benchmark=None):
    return run_and_store("salus.overhead", "cpu")


for _setup in (_switching_cpu, _switching_cuda, _policies_cpu, _policies_cuda, _overhead_cpu):
    _setup.timeout = 1800


class SwitchingLatency:
    """Job-switch latency per workload and method on the CPU (p50 and p99, ms)."""

    params, param_names = axes(workload=SWITCHING["workloads"], method=METHODS)

    setup_cache = _switching_cpu
    setup = row(lambda data, workload, method: data["workloads"][workload][f"{method}_ms"])

    track_p50_ms = track(lambda self, *_: self.row["p50"], unit="ms", direction="lower")
    track_p99_ms = track(lambda self, *_: self.row["p99"], unit="ms", direction="lower")


SwitchingLatencyCuda = cuda_twin(SwitchingLatency, _switching_cuda,
                                 "The same on a CUDA device (the paper's setting); skipped without one.")


class SchedulingPolicies:
    """Average JCT and makespan per policy on a Poisson trace, run for real on the CPU."""

    params, param_names = axes(policy=POLICIES["policies"])

    setup_cache = _policies_cpu
    setup = row(lambda data, policy: data["policies"][policy])

    track_average_jct = track(lambda self, *_: self.row["real"]["avg_jct_s"], unit="s", direction="lower")
    track_makespan = track(lambda self, *_: self.row["real"]["makespan_s"], unit="s", direction="lower")
    track_simulator_error = track(lambda self, *_: self.row["sim_error"],
                                  unit="relative error of simulated average JCT", direction="lower")
    track_device_time_over_profile = track(lambda self, *_: self.row["device_time_over_profile"],
                                           unit="ratio", direction="context",
                                           doc="The run's device time over the profile's for the same iterations: the machine's drift.")


class RepeatedRun:
    """The run of ``repeat_policy`` (FIFO in every profile) once more, after the others: how far
    this machine reproduces its own run (the real average JCT's relative difference), and
    the simulator beside it."""

    setup_cache = _policies_cpu  # the same run as SchedulingPolicies: one cache

    def setup(self, data):
        raise_if_skipped(data)
        if not data.get("repeat"):
            raise NotImplementedError("this profile sets no repeat_policy")
        self.row = data["repeat"]

    track_real_difference = track(lambda self, *_: self.row["real_difference"],
                                  unit="relative difference of the real average JCT", direction="context")
    track_simulator_error = track(lambda self, *_: self.row["sim_error"],
                                  unit="relative error of simulated average JCT", direction="lower")


RepeatedRunCuda = cuda_twin(RepeatedRun, _policies_cuda,
                            "The same on a CUDA device; skipped without one.")


SchedulingPoliciesCuda = cuda_twin(SchedulingPolicies, _policies_cuda,
                                   "The same on a CUDA device; skipped without one.")


class SrtfOverFifo:
    """Average-JCT ratio FIFO / SRTF (the paper's 3.19×), real run and simulator."""

    params, param_names = axes(source=["real", "sim", "sim_inrun"])
    setup_cache = _policies_cpu  # the same run as SchedulingPolicies: one cache

    def setup(self, data, source):
        raise_if_skipped(data)

    track_ratio = track(lambda self, data, source: data["fifo_over_srtf"][source],
                        unit="x", direction="higher")


class ExecutorOverhead:
    """A job's iteration time inside the executor vs alone, side by side in one run."""

    params, param_names = axes(workload=OVERHEAD["workloads"])

    setup_cache = _overhead_cpu
    setup = row(lambda data, workload: data["workloads"][workload])

    track_bookkeeping_percent = track(lambda self, *_: self.row["bookkeeping_pct"],
                                      unit="% of iteration time", direction="lower")
    track_paired_overhead_percent = track(lambda self, *_: self.row["overhead_pct"],
                                          unit="% of iteration time", direction="lower",
                                          doc='Each executor block against the two alone blocks beside it (median; since 202c8cd).')


pin_versions(globals())
