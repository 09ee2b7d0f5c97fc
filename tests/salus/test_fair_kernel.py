"""The simulator's keyed policies (FIFO, SRTF, and FAIR in its numba kernel and out of it):
every output equal, bit for bit, to a scan of every admitted job at every iteration (kept
below as the reference), on seeded random traces and on the corners (ties in decimal milliseconds, simultaneous and boundary arrivals, warm costs,
one- and zero-iteration jobs, memory failures, usage beyond 2**53 ps, clocks beyond int64)."""
from __future__ import annotations

import random
import re

import pytest

from impls.salus.core import simulator, simulator_kernels
from impls.salus.core.policies import get_policy
from impls.salus.core.simulator import SimJob, sim_jobs, simulate, summarize


def reference_scan(trace, policy, iteration_ms, memory_budget_bytes=None, peak_bytes=None, overhead_ms=0.0,
                   pack="interleave", warm_iteration_ms=None):
    """A keyed policy (FIFO, SRTF, FAIR) one iteration at a time, its pick found by
    ``policy.choose`` over every admitted job each time (the executor's way): what the
    simulator's heap of keys and its runs of unchanged decisions must give, bit for bit, and
    whether one of those choices was among two or more jobs."""
    policy = get_policy(policy)
    simulate([], policy, iteration_ms)            # the same checks of the arguments
    jobs = sim_jobs(trace, iteration_ms, peak_bytes, overhead_ms, pack, warm_iteration_ms)
    pending = sorted(jobs, key=lambda s: (s.arrival, s.job_id), reverse=True)
    waiting, active, used, t, iterations, last, choice = [], [], 0, 0, 0, None, False
    while pending or waiting or active:
        while pending and pending[-1].arrival_ticks <= t:
            waiting.append(pending.pop())
        while waiting:
            job = waiting[0]
            if memory_budget_bytes is not None and job.peak_bytes > memory_budget_bytes:
                waiting.pop(0)
                job.finished_at, job.status = job.seconds(t), "failed"
                continue
            if memory_budget_bytes is not None and used + job.peak_bytes > memory_budget_bytes:
                break
            waiting.pop(0)
            job.admitted_at, job.status = job.seconds(t), "running"
            used += job.peak_bytes
            active.append(job)
            if job.total_iterations <= 0:
                job.finished_at, job.status = job.seconds(t), "done"
                active.remove(job)
                used -= job.peak_bytes
        if not active:
            if pending:
                t = max(t, pending[-1].arrival_ticks)
                continue
            break
        choice |= len(active) > 1
        [job] = policy.choose(active)
        if job.started_at is None:
            job.started_at = job.seconds(t)
        ticks = job.cost_ticks(last)
        t, last, iterations = t + ticks, job, iterations + 1
        job.use(ticks)
        job.iterations_done += 1
        if job.remaining_iterations <= 0:
            job.finished_at, job.status = job.seconds(t), "done"
            active.remove(job)
            used -= job.peak_bytes
    return {**summarize(policy.name, jobs, iterations), "had_a_choice": choice}


def identical(a, b):
    """Equal dicts whose floats are equal bit for bit (== alone lets -0.0 pass for 0.0) and
    whose ints are Python ints (a numpy int in the result would not serialise to JSON)."""
    def flat(x):
        if isinstance(x, dict):
            return [(k, flat(v)) for k, v in x.items()]
        if isinstance(x, list):
            return [flat(v) for v in x]
        return (type(x).__name__, x.hex() if isinstance(x, float) else x)
    return flat(a) == flat(b)


MS = {"a": 0.7, "b": 2.1, "c": 1.0, "d": 3.0, "e": 0.35}    # 3 x 0.7 = 2.1, 3 x 1.0 = 3.0: usage ties


def random_case(rng):
    n = rng.choice([1, 2, 3, 5, 8, 20, 60, rng.randint(1, 300)])
    grid = rng.choice([0.0007, 0.001, 0.0021, 0.005])        # arrivals on iteration boundaries
    trace = []
    for i in range(n):
        wl = rng.choice(list(MS))
        job = {"job_id": rng.randrange(10 ** 6) * n + i, "workload": wl,   # ids unique, unordered
               "arrival_s": rng.randint(0, n // 2 + 1) * grid if rng.random() < 0.8 else rng.uniform(0, n * grid),
               "iterations": rng.choice([0, 1, 1, 2, 3, rng.randint(1, 40)]),
               "peak_bytes": rng.choice([10, 40, 100])}
        if rng.random() < 0.1:
            job["iteration_ms"] = rng.choice([0.7, 1.4, 5.0])
        trace.append(job)
    kwargs = {"overhead_ms": rng.choice([0.0, 0.0, 0.05]),
              "memory_budget_bytes": rng.choice([None, None, 90, 200]),
              "pack": rng.choice(["interleave", "interleave", "concurrent"]),
              "warm_iteration_ms": rng.choice([None, {k: v * 0.5 for k, v in MS.items()},
                                               {"a": 0.35, "c": 1.0, "d": 2.1}])}
    return trace, kwargs


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("policy", ["fifo", "srtf", "fair"])
def test_keyed_policies_from_the_heap_equal_a_scan_of_the_queue_each_iteration(policy, seed):
    """FIFO and SRTF (runs of unchanged decisions, SRTF's lead) and FAIR outside its kernel
    (``fast=False``) take their picks from a heap of keys; a scan of every admitted job at
    every iteration gives the same result, bit for bit, with queues of up to 300 jobs, warm
    iterations faster and slower than cold ones."""
    rng = random.Random(1000 + seed)
    for case in range(4):
        trace, kwargs = random_case(rng)
        if case % 2:        # back-to-back iterations slower: a running job's remaining time can rise
            kwargs.update(pack="interleave", warm_iteration_ms={k: v * rng.choice([1.3, 2.0]) for k, v in MS.items()})
        got = simulate(trace, policy, MS, fast=False, **kwargs)     # fast=False: FAIR outside its kernel
        assert identical(got, reference_scan(trace, policy, MS, **kwargs)), (policy, trace, kwargs)


@pytest.mark.parametrize("seed", range(40))
def test_fair_in_the_kernel_is_bit_identical_to_the_python_heap(seed):
    rng = random.Random(seed)
    for _ in range(5):
        trace, kwargs = random_case(rng)
        assert identical(simulate(trace, "fair", MS, **kwargs), reference_scan(trace, "fair", MS, **kwargs)), (trace, kwargs)


def test_fair_runs_its_iterations_in_the_kernel(monkeypatch):
    """The hot loop is compiled: the Python per-iteration cost (:meth:`SimJob.cost_ticks`) is
    never called, and the kernel is, once per completion or arrival noticed."""
    calls = []
    kernel = simulator_kernels.fair_run
    monkeypatch.setattr(simulator_kernels, "fair_run", lambda *a: calls.append(1) or kernel(*a))
    monkeypatch.setattr(SimJob, "cost_ticks", lambda self, previous: pytest.fail("FAIR stepped in Python"))
    trace = [{"job_id": i, "workload": "a", "arrival_s": i * 0.01, "iterations": 50} for i in range(4)]
    r = simulate(trace, "fair", MS, warm_iteration_ms={"a": 0.5})
    assert r["done"] == 4 and r["iterations"] == 200 and 4 <= len(calls) <= 8


@pytest.mark.parametrize("warm", [None, {"w": 5e5}])
def test_usage_beyond_2_53_picoseconds_ranks_as_python_divides(warm):
    """Per-job usage above 2**53 ps (2.5 h) no longer converts to a float exactly; the ranking
    key must still be Python's correctly rounded int / int (these iteration times order the
    jobs differently when the key is ``float(ticks) / 1e9``)."""
    trace = [{"job_id": 0, "workload": "v", "arrival_s": 0.0, "iterations": 6, "iteration_ms": 6004799.50316067},
             {"job_id": 1, "workload": "v", "arrival_s": 0.0, "iterations": 4, "iteration_ms": 6004799.503160669}]
    ms = {"v": 1.0, "w": 1e6 + 1e-9}
    assert identical(simulate(trace, "fair", ms), reference_scan(trace, "fair", ms))
    trace += [{"job_id": 2 + i, "workload": "w", "arrival_s": 0.0, "iterations": 12 - i} for i in range(3)]
    assert identical(simulate(trace, "fair", ms, warm_iteration_ms=warm), reference_scan(trace, "fair", ms, warm_iteration_ms=warm))


def test_a_run_beyond_int64_picoseconds_still_matches():
    """Each job's 10 iterations of 1e9 ms (1e18 ps each) pass 2**63 ps, in usage and in the
    time to the first completion: FAIR is stepped in Python then, as fast=False does."""
    trace = [{"job_id": i, "workload": "w", "arrival_s": 0.0, "iterations": 10} for i in range(2)]
    assert identical(simulate(trace, "fair", {"w": 1e9}), reference_scan(trace, "fair", {"w": 1e9}))


def test_the_kernel_key_divides_ticks_as_python_does():
    rng = random.Random(7)
    cases = [0, 1, 10 ** 9, 2 ** 53 - 1, 2 ** 53, 2 ** 53 + 1, 2 ** 63 - 1]
    cases += [rng.randrange(2 ** 53, 2 ** 63) for _ in range(3000)] + [rng.randrange(2 ** 53) for _ in range(300)]
    # just below, on and above halfway between two floats (exact halves need ticks > 2**63)
    for q in (2 ** 23, 2 ** 30 + 5, 9 * 10 ** 9):
        s = 52 - (q.bit_length() - 1)
        for n in range(4):
            half = ((2 * ((q << s) + n) + 1) * 10 ** 9) >> (s + 1)
            cases += [half - 1, half, half + 1]
    for ticks in cases:
        got = simulator_kernels.ms_of_ticks(ticks)
        assert got.hex() == (ticks / 10 ** 9).hex(), ticks


@pytest.mark.parametrize("ids, said", [([1.2, 1.7], "job id 1.2; expected a whole number"),
                                       (["1", 1], "job id 1 appears twice in the trace (as 1)"),
                                       (["a", 2], "job id 'a'; expected a whole number"),
                                       ([float("nan")], "expected a whole number")])
def test_job_ids_that_are_no_whole_numbers_or_collide_as_numbers_are_refused(ids, said):
    """Ids that collapse to one integer gave two job records with one id (or a TypeError in
    the old heap); an id must be a whole number, and unique as one."""
    trace = [{"job_id": i, "workload": "w", "arrival_s": 0.0, "iterations": 3} for i in ids]
    for policy in ("fair", "fifo"):
        with pytest.raises(ValueError, match=re.escape(said)):
            simulate(trace, policy, {"w": 1.0})
