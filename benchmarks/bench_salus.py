"""Salus: switching latency, scheduling policies and executor overhead.

Each class runs its experiment once (``setup_cache``), stores it as an artifact for
the report's figures, and only names what asv records. The CPU classes always run;
the CUDA ones are skipped (asv: NotImplementedError) where there is no GPU.
"""
import math

from impls.harness import profiles

from .common import axes, cuda_twin, explain_skips, field, finite, pin_versions, raise_if_skipped, row, track
from .runs import salus

SWITCHING = profiles.sizes("salus_switching")
POLICIES = profiles.sizes("salus_policies")
OVERHEAD = profiles.sizes("salus_overhead")
METHODS = ["inprocess", "inprocess_gap", "to_host", "to_disk", "restart"]


def _measured(row: dict, method: str) -> dict:
    """``row``'s ``{p50, p99, n}`` of ``method``; NotImplementedError (asv's skip) with the run's
    own words where it measured none (a restart whose child failed: ``restart_no_value``)."""
    stats = row[f"{method}_ms"]
    if not stats["n"]:
        raise NotImplementedError(row.get(f"{method}_no_value") or f"no {method} switch was measured in this run")
    return stats


class SwitchingLatency:
    """Job-switch latency per workload and method on the CPU (p50 and p99, ms)."""

    params, param_names = axes(workload=SWITCHING["workloads"], method=METHODS)

    setup_cache = salus.switching
    setup = row(lambda data, workload, method: _measured(data["workloads"][workload], method))

    # absolute scale: the in-process switch is a paired difference that crosses 0 (and a
    # relative change of a value near 0 is noise); the other methods' spreads read in ms too.
    # nearer 0: below 0 (p50, or even p99) is noise of that difference, no faster switch; the
    # other methods' latencies are positive, judged as lower-is-better
    track_p50_ms = field("p50", unit="ms", direction="nearer_zero", scale="absolute")
    track_p99_ms = field("p99", unit="ms", direction="nearer_zero", scale="absolute")


SwitchingLatencyCuda = cuda_twin(SwitchingLatency, salus.switching_cuda,
                                 "The same on a CUDA device (the paper's setting); skipped without one.")


def _all_finished(run: dict, key: str) -> float:
    """``run[key]``, or NaN when a job of the run failed (the number would leave it out)."""
    return math.nan if run.get("failed") else finite(run[key])


def _simulator_error(row: dict) -> float:
    """``row["sim_error"]`` (|simulated - real| / real average JCT), or NaN when a job of the
    real run failed (its average is over fewer jobs than the simulation's) or the real run
    has no average JCT (no job finished: the error has no reference)."""
    return math.nan if row["real"].get("failed") else finite(row.get("sim_error"))


# NaN is no failure of the simulator: the real run it is measured against lost a job (the
# real run's own tracks, e.g. track_average_jct, judge that as their worst outcome)
SIMULATOR_ERROR_MISSING = ("a job failed in the real run, or none finished: the simulated and the real "
                           "average JCT would be over different jobs, or there is no real one")


class SchedulingPolicies:
    """Average JCT and makespan per policy on a Poisson trace, run for real on the CPU."""

    params, param_names = axes(policy=POLICIES["policies"])

    setup_cache = salus.policies
    setup = row(lambda data, policy: data["policies"][policy])

    track_average_jct = track(lambda self, *_: _all_finished(self.row["real"], "avg_jct_s"), unit="s", direction="lower",
                              missing="a job failed in this policy's run: an average over the others is no JCT", worst_missing=True)
    track_makespan = track(lambda self, *_: _all_finished(self.row["real"], "makespan_s"), unit="s", direction="lower",
                           missing="a job failed in this policy's run: its makespan is no time to finish", worst_missing=True)
    track_simulator_error = track(lambda self, *_: _simulator_error(self.row),
                                  unit="relative error of simulated average JCT", direction="lower",
                                  scale="absolute", missing=SIMULATOR_ERROR_MISSING)
    track_device_time_over_profile = field("device_time_over_profile", unit="ratio", direction="context",
                                           doc="The run's device time over the profile's for the same iterations: the machine's drift.")


class RepeatedRun:
    """The run of ``repeat_policy`` (FIFO in every profile) once more, after the others: how far
    this machine reproduces its own run (the real average JCT's relative difference), and
    the simulator beside it."""

    setup_cache = salus.policies  # the same run as SchedulingPolicies: one cache

    def setup(self, data):
        raise_if_skipped(data)
        if not data.get("repeat"):
            raise NotImplementedError("this profile sets no repeat_policy")
        self.row = data["repeat"]

    track_real_difference = field("real_difference", unit="relative difference of the real average JCT",
                                  direction="context", scale="absolute", optional=True,
                                  missing="a job failed in one of the two runs: their averages are over different jobs")
    track_simulator_error = track(lambda self, *_: _simulator_error(self.row),
                                  unit="relative error of simulated average JCT", direction="lower",
                                  scale="absolute", missing=SIMULATOR_ERROR_MISSING)


RepeatedRunCuda = cuda_twin(RepeatedRun, salus.policies_cuda,
                            "The same on a CUDA device; skipped without one.")


SchedulingPoliciesCuda = cuda_twin(SchedulingPolicies, salus.policies_cuda,
                                   "The same on a CUDA device; skipped without one.")


class SrtfOverFifo:
    """Average-JCT ratio FIFO / SRTF (the paper's 3.19×), real run and simulator."""

    params, param_names = axes(source=["real", "sim", "sim_inrun"])
    setup_cache = salus.policies  # the same run as SchedulingPolicies: one cache

    def setup(self, data, source):
        raise_if_skipped(data)

    track_ratio = track(lambda self, data, source: finite(data["fifo_over_srtf"][source]),
                        unit="x", direction="higher",
                        missing="a job failed under FIFO or SRTF: their averages would be over different jobs", worst_missing=True,
                        sides="SchedulingPolicies.track_average_jct of policies fifo and srtf for source real; "
                              "the simulated averages, in the artifact, for the sim sources")


SrtfOverFifoCuda = cuda_twin(SrtfOverFifo, salus.policies_cuda,
                              "The same ratio from the policy runs on a CUDA device (the paper's setting); skipped without one.")


class ExecutorOverhead:
    """A job's iteration time inside the executor vs alone, side by side in one run."""

    params, param_names = axes(workload=OVERHEAD["workloads"])

    setup_cache = salus.overhead
    setup = row(lambda data, workload: data["workloads"][workload])

    track_bookkeeping_percent = field("bookkeeping_pct", unit="% of iteration time", direction="lower",
                                      scale="absolute")
    # nearer 0: a paired difference that crosses 0 under noise; below 0 is no gain
    track_paired_overhead_percent = field("overhead_pct", unit="% of iteration time", direction="nearer_zero",
                                          scale="absolute",
                                          doc='Each executor block against the two alone blocks beside it (median; since 202c8cd).')


explain_skips(globals())
pin_versions(globals())
