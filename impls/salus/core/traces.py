"""Job traces for the policy experiment: Poisson arrivals over the workload mix.

Each job's length is drawn as a *duration* (log-uniform between ``duration_s``
bounds, so short and long jobs mix as in a shared cluster) and turned into an
iteration count with the workload's measured iteration time, so jobs last seconds
in ``quick`` and minutes in ``full`` on whatever device the times came from.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np


def poisson_trace(n_jobs: int, mean_interarrival_s: float, workloads: Sequence[str],
                  iteration_ms: Mapping[str, float], duration_s: tuple[float, float],
                  seed: int = 0, weights: Sequence[float] | None = None) -> list[dict]:
    """Return ``n_jobs`` jobs ``{"job_id", "workload", "arrival_s", "iterations", "duration_s", "seed"}``.

    Arrivals: a Poisson process of rate ``1/mean_interarrival_s`` starting with a job
    at t=0. Workload: drawn from ``workloads`` (uniform, or ``weights``). Iterations:
    ``round(duration / iteration_ms[workload])``, at least 1, where the duration is
    log-uniform in ``duration_s``. Raises ValueError for no workloads or one listed twice, and
    for ``weights`` that are not one finite number >= 0 per workload with a sum > 0.
    """
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be >= 1, got {n_jobs}")
    if not (math.isfinite(mean_interarrival_s) and mean_interarrival_s >= 0):
        raise ValueError(f"mean_interarrival_s must be a finite number >= 0, got {mean_interarrival_s}")
    lo, hi = duration_s
    if not (0 < lo <= hi and math.isfinite(hi)):
        raise ValueError(f"duration_s must satisfy 0 < lo <= hi < inf, got {duration_s}")
    if not len(workloads):
        raise ValueError("workloads is empty; expected at least one workload name to draw jobs from")
    twice = next((w for i, w in enumerate(workloads) if w in workloads[:i]), None)
    if twice is not None:
        raise ValueError(f"workloads names {twice!r} twice; list each once (use weights to draw one more often)")
    missing = [w for w in workloads if w not in iteration_ms]
    if missing:
        raise KeyError(f"no measured iteration time for workload(s) {missing}")
    p = None if weights is None else _probabilities(weights, len(workloads))
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(mean_interarrival_s, size=n_jobs)
    gaps[0] = 0.0
    arrivals = np.cumsum(gaps)
    picks = rng.choice(len(workloads), size=n_jobs, p=p)
    durations = np.exp(rng.uniform(math.log(lo), math.log(hi), size=n_jobs))
    trace = []
    for i in range(n_jobs):
        name = workloads[int(picks[i])]
        iterations = iterations_for(float(durations[i]), iteration_ms[name])
        trace.append({"job_id": i, "workload": name, "arrival_s": float(arrivals[i]),
                      "iterations": iterations, "duration_s": float(durations[i]),
                      "seed": int(seed * 100003 + i)})
    return trace


def iterations_for(seconds: float, iteration_ms: float) -> int:
    """A job of ``seconds`` as whole iterations of ``iteration_ms`` (ms): the nearest count,
    at least 1."""
    return max(1, round(seconds * 1e3 / iteration_ms))


def _probabilities(weights: Sequence[float], n: int) -> np.ndarray:
    """Return ``weights`` scaled to sum to 1; ValueError unless they are ``n`` finite numbers
    >= 0 with a sum > 0."""
    try:
        w = np.asarray(weights, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"weights {weights!r}; expected {n} numbers, one per workload") from None
    if w.ndim != 1 or len(w) != n:
        raise ValueError(f"weights {weights!r}; expected {n} numbers, one per workload")
    if not (np.all(np.isfinite(w)) and np.all(w >= 0) and w.sum() > 0):
        raise ValueError(f"weights {weights!r}; expected finite numbers >= 0 with a sum > 0")
    return w / w.sum()


def offered_load(trace: Sequence[Mapping], iteration_ms: Mapping[str, float]) -> float | None:
    """:func:`arrival_load` of the jobs of ``trace``, each job's work its iterations times its
    workload's ``iteration_ms``."""
    return arrival_load([float(j["arrival_s"]) for j in trace],
                        [j["iterations"] * iteration_ms[j["workload"]] / 1e3 for j in trace])


def arrival_load(arrivals_s: Sequence[float], work_s: Sequence[float]) -> float | None:
    """The arrival rate times the mean work of a job, (n - 1) / (last - first arrival) x mean
    seconds of work (> 1: jobs arrive faster than one device serves them); None for fewer than
    two jobs or arrivals all at one time (no rate). A trace that starts late is not diluted."""
    arrivals = [float(a) for a in arrivals_s]
    span = max(arrivals) - min(arrivals) if arrivals else 0.0
    if len(arrivals) < 2 or not span > 0:
        return None
    return (len(arrivals) - 1) / span * float(sum(work_s)) / len(arrivals)
