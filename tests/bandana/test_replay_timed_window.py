"""What the replay's clock covers: no numba compilation, and never only a short tail of the
trace (a point runs its full time, going on from the trace's start)."""
from __future__ import annotations

import time

import numba
import numpy as np
import pytest
from numba.core import event

from impls.bandana.experiments import replay as experiment
from impls.bandana.nvm import dram_slots, replay

PER_QUERY = 5     # the stored fixture's queries (conftest.py)


class _CompileEnds(event.Listener):
    """The perf_counter time each numba compilation ended, with the function's name."""

    def __init__(self):
        self.ends: list[tuple[float, str]] = []

    def on_start(self, ev):
        pass

    def on_end(self, ev):
        self.ends.append((time.perf_counter(), ev.data["dispatcher"].py_func.__name__))


@pytest.mark.parametrize("policy", ["none", "shadow"])
def test_the_dram_kernels_compile_before_the_clock_starts(stored, monkeypatch, policy):
    store, table, layout, offsets, trace = stored
    fresh = ("_assign", "_serve", "_reclaim")
    for name in fresh:       # uncompiled copies: their first call compiles, wherever it is
        monkeypatch.setattr(dram_slots, name, numba.njit(getattr(dram_slots, name).py_func))
    listener = _CompileEnds()
    with event.install_listener("numba:compile", listener):
        result = replay.replay(store, offsets, trace, layout, 300, policy, 900 if policy == "shadow" else None,
                               table=table, chunk_lookups=2048)
        clock_started = time.perf_counter() - result["seconds"]   # no earlier than the real start
    compiled = [name for _, name in listener.ends if name in fresh]
    assert {"_assign", "_serve", "_reclaim"} <= set(compiled)
    inside = [name for t, name in listener.ends if name in fresh and t > clock_started]
    assert inside == []


def test_a_point_near_the_end_of_the_trace_goes_on_from_its_start(stored, monkeypatch):
    store, table, layout, offsets, trace = stored
    monkeypatch.setattr(replay, "fio_iops_why", lambda *a: ({"iops": 1000.0}, ""))
    cursor = experiment._Cursor((offsets, trace))
    cursor.advance(offsets.size - 1 - 3)          # three queries left
    tail = trace[-3 * PER_QUERY:]
    s = {"verify_per_chunk": 16, "fio_runtime_s": 0.1, "fio_ramp_s": 0.0}
    with replay.ReplaySession(store, layout, 300, "none", table=table, chunk_lookups=64) as session:
        session.warm(trace[:500])
        point, ids = experiment._measure(session, cursor, 1, s, store, seconds=0.05)
    assert point["seconds"] >= 0.05
    assert point["queries"] > 3 and point["lookups"] == ids.size
    assert np.array_equal(ids[:tail.size], tail)              # the tail first, then the trace from its start
    assert np.array_equal(ids[tail.size:2 * tail.size + 10], trace[:tail.size + 10])
    assert np.array_equal(np.concatenate(cursor.history), np.concatenate([trace[:-3 * PER_QUERY], ids]))
    assert point["fio_iops"] == 1000.0 and point["fio_no_value"] is None


def test_a_point_with_a_fio_run_missing_keeps_the_runs_reason(stored, monkeypatch):
    """fio ran before the replay but not after it: no ratio, and the point says why (the
    benchmark's skip reads it), not only that a run is missing."""
    store, table, layout, offsets, trace = stored
    runs = iter([({"iops": 1000.0}, ""), (None, "no libaio here; psync reads at queue depth 1 only")])
    monkeypatch.setattr(replay, "fio_iops_why", lambda *a: next(runs))
    with replay.ReplaySession(store, layout, 300, "none", table=table, chunk_lookups=64) as session:
        point, _ = experiment._measure(session, experiment._Cursor((offsets, trace)), 1, {"verify_per_chunk": 16, "fio_runtime_s": 0.1,
                                                                          "fio_ramp_s": 0.0}, store, seconds=0.01)
    assert point["replay_over_fio"] is None and point["fio_iops"] is None and point["fio"] is None
    assert point["fio_no_value"] == "no libaio here; psync reads at queue depth 1 only"


def test_a_point_that_ends_inside_the_trace_is_one_pass(stored, monkeypatch):
    store, table, layout, offsets, trace = stored
    cursor = experiment._Cursor((offsets, trace))
    with replay.ReplaySession(store, layout, 300, "none", table=table, chunk_lookups=64) as session:
        result, latencies, ids = experiment._replay_for(session, cursor, 1, 16, seconds=1e-9)
    assert result["queries"] == 64 // PER_QUERY and ids.size == result["lookups"]   # one chunk: whole queries
    assert np.array_equal(ids, trace[:ids.size]) and latencies.size == result["queries"]


@pytest.mark.parametrize("warm, cut", [(4, 2), (3, 2), (5, 3)])
def test_the_warm_up_is_the_fewest_whole_queries_holding_the_lookups_asked(warm, cut):
    """Queries of 2 lookups each: 4 warm-up lookups are exactly the first two queries (not a
    third), 3 or 5 round up to the next whole query; the rest starts where the warm-up ends."""
    offsets, ids = np.array([0, 2, 4, 6, 8]), np.arange(8) * 10
    got, (rest_offsets, rest_ids) = experiment._split((offsets, ids), warm)
    assert got.tolist() == ids[:2 * cut].tolist()
    assert rest_ids.tolist() == ids[2 * cut:].tolist() and rest_offsets.tolist() == list(range(0, 9 - 2 * cut, 2))
