"""PACK on a device with streams: each iteration ends at its own end, not when the executor reads it."""
import contextlib

import pytest

from impls.salus.core.executor import Executor, Submission
from impls.salus.core.simulator import simulate
from salus_fakes import swapped


class FakeClock:
    """Host seconds that move only when a timer waits for an iteration's device end."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, seconds):
        self.t += max(0.0, seconds)


class StreamedDevice:
    """A device with streams: ``step`` launches and returns at once; reading a timer waits
    (moves the clock) until the iteration's device end, as a CUDA end event's synchronize does.
    ``reported`` multiplies the device time the timer reports (1: the true one)."""

    kind, has_streams, torch_device = "cuda", True, "fake"

    def __init__(self, clock, reported=1.0):
        self.clock, self.reported, self.current = clock, reported, 0.0

    def timer(self, lane=None):
        device = self

        class Timer:
            def start(self):
                self.t0 = device.clock()

            def stop(self):
                self.end = self.t0 + device.current

            def elapsed_ms(self):
                device.clock.t = max(device.clock.t, self.end)
                return (self.end - self.t0) * 1e3 * device.reported

        return Timer()

    def new_lane(self):
        return object()

    def order_lane(self, lane):
        pass

    def synchronize_lane(self, lane):
        pass

    def lane_context(self, lane):
        return contextlib.nullcontext()

    def is_oom(self, error):
        return False

    def release_memory(self):
        pass


class LaunchedJob:
    def __init__(self, device, job_id, seconds, iterations):
        self.device, self.job_id, self.seconds, self.total_iterations = device, job_id, seconds, iterations
        self.workload = f"w{job_id}"

    def step(self):
        self.device.current = self.seconds

    def release(self):
        pass


def run_pack(reported=1.0):
    clock = FakeClock()
    device = StreamedDevice(clock, reported)
    ex = Executor("pack", device, clock=clock, sleep=clock.sleep, log_iterations=True)
    # the 150-ms job first: its timer is read first and waits 150 ms
    res = ex.run([Submission(LaunchedJob(device, 0, 0.15, 2)), Submission(LaunchedJob(device, 1, 0.01, 2))])
    return ex, res


def test_a_short_iteration_on_a_stream_ends_at_its_own_end_not_at_the_rounds():
    ex, res = run_pack()
    short = [e for e in ex.iteration_log if e["job_id"] == 1]
    assert [e["start_s"] for e in short] == pytest.approx([0.0, 0.15])
    assert [e["end_s"] - e["start_s"] for e in short] == pytest.approx([0.01, 0.01])
    by_id = {j["job_id"]: j for j in res["jobs"]}
    assert by_id[1]["finish_s"] == pytest.approx(0.16) and by_id[0]["finish_s"] == pytest.approx(0.30)
    assert res["avg_jct_s"] == pytest.approx(0.23)


def test_the_in_run_simulation_of_concurrent_pack_finishes_each_job_where_the_run_does():
    _, res = run_pack()
    trace = [{"job_id": j["job_id"], "workload": j["workload"], "arrival_s": 0.0, "iterations": 2,
              "iteration_ms": j["mean_iteration_ms"]} for j in res["jobs"]]
    sim = simulate(trace, "pack", {}, pack="concurrent")
    assert [j["finish_s"] for j in sim["jobs"]] == pytest.approx([j["finish_s"] for j in res["jobs"]])


def test_an_iteration_on_a_stream_never_ends_after_its_timer_was_read():
    # timers reporting 10x the device time: the 150-ms job's 1.5 s end is clipped to the moment
    # its timer was read (0.15 s); the 10-ms job's 0.1 s end is before that moment, and kept
    ex, res = run_pack(reported=10.0)
    first = {e["job_id"]: e for e in ex.iteration_log[:2]}
    assert first[0]["end_s"] == pytest.approx(0.15) and first[1]["end_s"] == pytest.approx(0.10)
    assert max(e["end_s"] for e in ex.iteration_log) == pytest.approx(0.30) == res["makespan_s"]


class QueuedStream:
    """A stream that runs what is launched on it in launch order: ``tail`` is when it is free."""

    def __init__(self):
        self.tail = 0.0


class QueuingDevice(StreamedDevice):
    """Streams that queue: an iteration launched on a busy stream starts when the stream is free,
    and its timer's start event fires then (so the timer reports only its own device time)."""

    def __init__(self, clock):
        super().__init__(clock)
        self.stream = None

    def new_lane(self):
        return QueuedStream()

    def lane_context(self, lane):
        return swapped(self, "stream", lane)

    def timer(self, lane=None):
        device, stream = self, lane

        class Timer:
            def start(self):
                self.t0 = max(device.clock(), stream.tail)

            def stop(self):
                self.end = stream.tail

            def elapsed_ms(self):
                device.clock.t = max(device.clock.t, self.end)
                return (self.end - self.t0) * 1e3

        return Timer()


class QueuedJob(LaunchedJob):
    def step(self):
        stream = self.device.stream
        stream.tail = max(self.device.clock(), stream.tail) + self.seconds


def test_jobs_sharing_a_lanes_stream_end_one_after_another():
    """Two jobs in one lane share its stream: the GPU runs the second after the first, so the
    second's iterations end a lane-mate's iteration later than its launch plus its own time."""
    from impls.salus.memory.lane_executor import LaneExecutor
    from impls.salus.memory.utilisation import busy_timeline

    clock = FakeClock()
    device = QueuingDevice(clock)
    memory = {"w0": {"persistent_bytes": 0, "ephemeral_bytes": 10},
              "w1": {"persistent_bytes": 0, "ephemeral_bytes": 10}}
    ex = LaneExecutor("pack", device, capacity_bytes=10, memory=memory, rule="shared-first", cuda=object(),
                      clock=clock, sleep=clock.sleep, log_iterations=True)
    res = ex.run([Submission(QueuedJob(device, 0, 0.010, 3), peak_bytes=10, job_id=0, workload="w0"),
                  Submission(QueuedJob(device, 1, 0.010, 3), peak_bytes=10, job_id=1, workload="w1")])
    assert res["lanes"]["max_open"] == 1
    finish = {j["job_id"]: j["finish_s"] for j in res["jobs"]}
    assert finish[0] == pytest.approx(0.05) and finish[1] == pytest.approx(0.06)
    assert res["makespan_s"] == pytest.approx(0.06)
    intervals = sorted((e["start_s"], e["end_s"]) for e in ex.iteration_log)
    assert all(a[1] <= b[0] + 1e-12 for a, b in zip(intervals, intervals[1:]))     # never two at once
    assert busy_timeline(intervals, res["makespan_s"], 5)["busy_mean"] == pytest.approx(1.0)
