"""Fake clock and jobs shared by the Salus executor tests (no training, no device)."""
from __future__ import annotations


class FakeClock:
    """Seconds that move only when a job steps or the executor sleeps."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


class FakeJob:
    """Each iteration advances the fake clock by ``ms``; raises at ``fail_at`` if set.
    ``workload`` defaults to ``fake<ms>``."""

    def __init__(self, clock, job_id, ms, iterations, fail_at=None, error=None, workload=None):
        self.clock, self.job_id, self.ms = clock, job_id, ms
        self.total_iterations, self.fail_at, self.error = iterations, fail_at, error or RuntimeError("boom")
        self.workload = f"fake{ms}" if workload is None else workload
        self.steps = 0
        self.released = False

    def step(self):
        if self.fail_at is not None and self.steps == self.fail_at:
            raise self.error
        self.steps += 1
        self.clock.t += self.ms / 1e3

    def release(self):
        self.released = True
