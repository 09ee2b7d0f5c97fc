"""Salus: switching latency, scheduling policies and executor overhead.

Each class runs its experiment once (``setup_cache``), stores it as an artifact for
the report's figures, and only names what asv records. The CPU classes always run;
the CUDA ones are skipped (asv: NotImplementedError) where there is no GPU.
"""
from impls.harness import profiles
from impls.harness.experiments import run_and_store

from .common import pin_versions, raise_if_skipped

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

    params = (SWITCHING["workloads"], METHODS)
    param_names = ["workload", "method"]
    timeout = 1800

    setup_cache = _switching_cpu
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data, workload, method):
        raise_if_skipped(data)
        self.stats = data["workloads"][workload][f"{method}_ms"]

    def track_p50_ms(self, data, workload, method):
        return self.stats["p50"]

    track_p50_ms.unit = "ms"
    track_p50_ms.direction = "lower"

    def track_p99_ms(self, data, workload, method):
        return self.stats["p99"]

    track_p99_ms.unit = "ms"
    track_p99_ms.direction = "lower"


class SwitchingLatencyCuda(SwitchingLatency):
    """The same on a CUDA device (the paper's setting); skipped without one."""

    setup_cache = _switching_cuda


class SchedulingPolicies:
    """Average JCT and makespan per policy on a Poisson trace, run for real on the CPU."""

    params = (POLICIES["policies"],)
    param_names = ["policy"]
    timeout = 1800

    setup_cache = _policies_cpu
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data, policy):
        raise_if_skipped(data)
        self.row = data["policies"][policy]

    def track_average_jct(self, data, policy):
        return self.row["real"]["avg_jct_s"]

    track_average_jct.unit = "s"
    track_average_jct.direction = "lower"

    def track_makespan(self, data, policy):
        return self.row["real"]["makespan_s"]

    track_makespan.unit = "s"
    track_makespan.direction = "lower"

    def track_simulator_error(self, data, policy):
        return self.row["sim_error"]

    track_simulator_error.unit = "relative error of simulated average JCT"
    track_simulator_error.direction = "lower"

    def track_device_time_over_profile(self, data, policy):
        """The run's device time over the profile's for the same iterations: the machine's drift."""
        return self.row["device_time_over_profile"]

    track_device_time_over_profile.unit = "ratio"
    track_device_time_over_profile.direction = "context"


class RepeatedRun:
    """The run of ``repeat_policy`` (FIFO in every profile) once more, after the others: how far
    this machine reproduces its own run (the real average JCT's relative difference), and
    the simulator beside it."""

    setup_cache = _policies_cpu  # the same run as SchedulingPolicies: one cache
    timeout = 1800
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data):
        raise_if_skipped(data)
        if not data.get("repeat"):
            raise NotImplementedError("this profile sets no repeat_policy")
        self.row = data["repeat"]

    def track_real_difference(self, data):
        return self.row["real_difference"]

    track_real_difference.unit = "relative difference of the real average JCT"
    track_real_difference.direction = "context"

    def track_simulator_error(self, data):
        return self.row["sim_error"]

    track_simulator_error.unit = "relative error of simulated average JCT"
    track_simulator_error.direction = "lower"


class RepeatedRunCuda(RepeatedRun):
    """The same on a CUDA device; skipped without one."""

    setup_cache = _policies_cuda


class SchedulingPoliciesCuda(SchedulingPolicies):
    """The same on a CUDA device; skipped without one."""

    setup_cache = _policies_cuda


class SrtfOverFifo:
    """Average-JCT ratio FIFO / SRTF (the paper's 3.19×), real run and simulator."""

    params = (["real", "sim", "sim_inrun"],)
    param_names = ["source"]
    setup_cache = _policies_cpu  # the same run as SchedulingPolicies: one cache
    timeout = 1800
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data, source):
        raise_if_skipped(data)

    def track_ratio(self, data, source):
        return data["fifo_over_srtf"][source]

    track_ratio.unit = "x"
    track_ratio.direction = "higher"


class ExecutorOverhead:
    """A job's iteration time inside the executor vs alone, side by side in one run."""

    params = (OVERHEAD["workloads"],)
    param_names = ["workload"]
    timeout = 1800

    setup_cache = _overhead_cpu
    version = "1"  # explicit: history survives edits of a shared setup_cache; bump on a change of meaning

    def setup(self, data, workload):
        raise_if_skipped(data)
        self.row = data["workloads"][workload]

    def track_bookkeeping_percent(self, data, workload):
        return self.row["bookkeeping_pct"]

    track_bookkeeping_percent.unit = "% of iteration time"
    track_bookkeeping_percent.direction = "lower"

    def track_paired_overhead_percent(self, data, workload):
        """Each executor block against the two alone blocks beside it (median; since 202c8cd)."""
        return self.row["overhead_pct"]

    track_paired_overhead_percent.unit = "% of iteration time"
    track_paired_overhead_percent.direction = "lower"


pin_versions(globals())
