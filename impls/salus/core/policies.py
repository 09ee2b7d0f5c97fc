"""Scheduling policies: which admitted job(s) run the next iteration.

A policy sees only what :class:`JobView` describes (arrival, iterations left,
estimated iteration time, device time used), so the real executor and the
discrete-event simulator share the exact same decisions, and tests can hand-build
situations without training anything.

- FIFO: the earliest arrival runs (to completion, since arrivals only come later).
- SRTF: the least remaining time = estimated iteration time x iterations left;
  re-decided at every iteration boundary, so a short arrival preempts a long job.
- FAIR: the least device time used so far (ties: earliest arrival).
- PACK: every admitted job runs; on CUDA each on its own lane (stream), on the CPU
  one iteration of each in turn (round robin).

Ties always fall to (arrival, job_id), so choices are deterministic. FIFO, SRTF and FAIR
are *keyed*: each picks the least :meth:`Policy.key`, and a job's key depends on that job
alone, so it changes only while the job runs (the simulator keeps them in a heap).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class JobView(Protocol):
    job_id: int
    arrival: float                 # seconds since the start of the run
    remaining_iterations: int
    iteration_ms_estimate: float   # measured mean so far, or the profiled prior
    device_ms_used: float          # device time this job has received


def remaining_ms(job: JobView) -> float:
    """Estimated iteration time x iterations left (ms). A job that keeps its device time in
    whole clock ticks (the simulator's) gives it computed from those integers
    (``exact_remaining_ms``), so two jobs with equal remaining times get the same float, tie,
    and the tie falls to (arrival, job_id); 0.7 ms x 3 and 2.1 ms x 1 as floats do not."""
    exact = getattr(job, "exact_remaining_ms", None)
    return exact if exact is not None else job.iteration_ms_estimate * job.remaining_iterations


def _order(job: JobView) -> tuple:
    return (job.arrival, job.job_id)


class Policy:
    name = "policy"
    concurrent = False  # True: all chosen jobs run at once (PACK)
    keyed = False       # True: choose() picks the one job of least key(), a function of that job alone

    def choose(self, jobs: Sequence[JobView]) -> list[JobView]:
        if not self.keyed:
            raise NotImplementedError
        return [min(jobs, key=self.key)] if jobs else []

    def key(self, job: JobView) -> tuple:
        """The rank of ``job`` (a keyed policy runs the least): a tuple ending in (arrival, job_id)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class FIFO(Policy):
    name = "fifo"
    keyed = True

    def key(self, job):
        return _order(job)


class SRTF(Policy):
    name = "srtf"
    keyed = True

    def key(self, job):
        return (remaining_ms(job), *_order(job))


class FAIR(Policy):
    name = "fair"
    keyed = True

    def key(self, job):
        return (job.device_ms_used, *_order(job))


class PACK(Policy):
    name = "pack"
    concurrent = True

    def choose(self, jobs):
        return sorted(jobs, key=_order)


POLICIES: dict[str, type[Policy]] = {p.name: p for p in (FIFO, SRTF, PACK, FAIR)}


def get_policy(name: str | Policy) -> Policy:
    """Return ``name`` if a Policy, else a new one of that name (case and surrounding spaces
    ignored); KeyError naming the known ones for any other."""
    if isinstance(name, Policy):
        return name
    try:
        return POLICIES[name.strip().lower()]()
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}") from None
