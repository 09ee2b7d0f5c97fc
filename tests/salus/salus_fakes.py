"""Fakes shared by the Salus executor tests (no training, no device): a clock, jobs, and
enough of ``torch.cuda`` to check the order of streams, waits, events and allocator reads."""
from __future__ import annotations

import contextlib


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


@contextlib.contextmanager
def swapped(obj, name, value):
    """Set ``obj.<name>`` to ``value`` inside the block; the previous value is back after it,
    also when the block raises."""
    before = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, before)


class FakeCuda:
    """Enough of ``torch.cuda`` to log, in ``log`` and in call order, stream waits and syncs
    (``("wait_stream", lane, other)``, ``("stream_sync", lane)``), event records, syncs and reads
    (``("record", stream)``, ``("sync", stream)``, ``("elapsed", stream)``), device syncs, cache
    frees and allocator reads (``("device_sync",)``, ``("empty_cache",)``, ``("memory_allocated",)``).

    ``current`` is the stream entered with ``stream(s)``, ``"default"`` outside any; on the
    default stream ``current_stream(device)`` is ``("current stream of", str(device))``.
    Streams are named ``lane1``, ``lane2``, ... per fake. Events need ``enable_timing=True``,
    and ``elapsed_time`` fails unless the end event was synchronised; it returns the ms in
    ``elapsed`` in turn, repeating the last. The allocator holds ``allocated`` bytes (1000),
    and ``peak`` (1000) is what ``max_memory_allocated`` reads; tests move both.
    """

    class OutOfMemoryError(RuntimeError):
        pass

    def __init__(self, elapsed=(1.0,)):
        self.log: list[tuple] = []
        self.current = "default"
        self.current_device = None
        self.elapsed = list(elapsed)
        self.allocated = self.peak = 1000
        fake = self

        class Event:
            def __init__(self, enable_timing=False):
                assert enable_timing
                self.stream = None
                self.synced = False

            def record(self, stream=None):
                self.stream = stream if stream is not None else fake.current_stream()
                fake.log.append(("record", self.stream))

            def synchronize(self):
                self.synced = True
                fake.log.append(("sync", self.stream))

            def elapsed_time(self, end):
                assert end.synced, "elapsed_time read before the end event was synchronised"
                fake.log.append(("elapsed", end.stream))
                return fake.elapsed.pop(0) if len(fake.elapsed) > 1 else fake.elapsed[0]

        class Stream:
            count = 0

            def __init__(self, device=None):
                Stream.count += 1
                self.name, self.device = f"lane{Stream.count}", device

            def __repr__(self):
                return self.name

            def wait_stream(self, other):
                fake.log.append(("wait_stream", self, other))

            def synchronize(self):
                fake.log.append(("stream_sync", self))

        self.Event, self.Stream = Event, Stream

    def stream(self, s):
        return swapped(self, "current", s)

    def device(self, d):
        """``torch.cuda.device(d)``: ``current_device`` is ``d`` inside the block (None outside)."""
        return swapped(self, "current_device", d)

    def current_stream(self, device=None):
        return ("current stream of", str(device)) if self.current == "default" else self.current

    def synchronize(self, device=None):
        self.log.append(("device_sync",))

    def empty_cache(self):
        self.log.append(("empty_cache",))

    def memory_allocated(self, device=None):
        self.log.append(("memory_allocated",))
        return self.allocated

    def max_memory_allocated(self, device=None):
        return self.peak

    def reset_peak_memory_stats(self, device=None):
        self.peak = self.allocated

    def get_device_name(self, index):
        return "Fake GPU"
