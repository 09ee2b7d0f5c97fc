"""The lane manager's best fit, a walk by room cut short for a look-up index: the same lane as a
scan of every lane and as the uncut walk, on random submits and releases (hypothesis,
persistent 0 included), and work that does not grow with the square of the lanes when no lane
fits (jobs of zero persistent bytes used to walk every lane)."""
from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impls.salus.memory.lane_index import LaneIndex
from impls.salus.memory.lanes import LaneJob, LaneManager, StaticPartitions, check_safety, make_manager


def _every_lane(manager, job):
    """The reference: the least (slack, room, lane id) over every lane whose slack is >= 0."""
    fits = [(lane.size - lane.need_with(job), lane.room, lane.id) for lane in manager.lanes.values()]
    fits = [f for f in fits if f[0] >= 0]
    return manager.lanes[min(fits)[2]] if fits else None


def _room_scan(manager, job):
    """The scan the index replaced: lanes by ascending (room, id) from room >= persistent, the
    first of least slack, stopping once room - persistent - ephemeral reaches the best slack."""
    best, best_slack = None, None
    rooms = sorted((lane.room, lane.id) for lane in manager.lanes.values())
    for room, lane_id in rooms[bisect.bisect_left(rooms, (job.persistent, -1)):]:
        if best_slack is not None and room - job.persistent - job.ephemeral >= best_slack:
            break
        lane = manager.lanes[lane_id]
        slack = lane.size - lane.need_with(job)
        if slack >= 0 and (best_slack is None or slack < best_slack):
            best, best_slack = lane, slack
            if slack == 0:
                break
    return best


def _every_lane_to_grow(manager, job):
    """The reference: (the lane, its extra bytes) of least (extra, -room, -lane id) over every
    lane whose extra (need with the job - size) is at most the unassigned bytes."""
    grows = [(lane.need_with(job) - lane.size, -lane.room, -lane.id) for lane in manager.lanes.values()]
    grows = [g for g in grows if g[0] <= manager.unassigned]
    return (manager.lanes[-min(grows)[2]], min(grows)[0]) if grows else (None, None)


class _Scanned(LaneManager):
    _best_fit = _every_lane
    _grow_choice = _every_lane_to_grow


class _ScannedStatic(StaticPartitions):
    _best_fit = _every_lane
    _grow_choice = _every_lane_to_grow


def _managers(rule, capacity):
    if rule == "static":
        return StaticPartitions(capacity, 3), _ScannedStatic(capacity, 3)
    return LaneManager(capacity, rule), _Scanned(capacity, rule)


sizes = st.tuples(st.one_of(st.just(0), st.integers(0, 60)), st.integers(0, 80))
steps = st.lists(st.one_of(st.tuples(st.just("submit"), sizes), st.tuples(st.just("release"), st.integers(0, 99))),
                 min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(rule=st.sampled_from(["salus", "salus-grow", "shared-first", "static"]), capacity=st.integers(0, 600),
       steps=steps, probes=st.lists(sizes, min_size=1, max_size=5), walk=st.sampled_from([0, 1, 2, 64]))
def test_the_best_fit_is_the_lane_a_scan_of_every_lane_picks(rule, capacity, steps, probes, walk):
    indexed, scanned = _managers(rule, capacity)
    indexed.scan_lanes = walk               # 0: every best fit by the look-up index
    for n, (what, arg) in enumerate(steps):
        if what == "submit":
            new = LaneJob(f"j{n}", *arg)
            assert indexed.submit(new) == scanned.submit(new)
        elif indexed.placement:
            name = sorted(indexed.placement)[arg % len(indexed.placement)]
            assert [j.name for j in indexed.release(name)] == [j.name for j in scanned.release(name)]
        assert indexed.snapshot() == scanned.snapshot() and indexed.placement == scanned.placement
        assert check_safety(indexed) == []
        for p, e in probes:
            probe = LaneJob("probe", p, e)
            fit, every, scan = indexed._best_fit(probe), _every_lane(indexed, probe), _room_scan(indexed, probe)
            assert fit is every is scan is indexed._indexed_fit(probe)
            (lane, extra), (want, want_extra) = indexed._grow_choice(probe), _every_lane_to_grow(indexed, probe)
            assert lane is want and extra == want_extra


@pytest.mark.parametrize("rule, walks", [("salus", 1), ("salus-grow", 2)])
def test_jobs_without_persistent_bytes_do_not_scan_every_lane(rule, walks):
    """1000 jobs of ephemeral 1..1000 fill the capacity with a lane each; the next 1000, each
    larger, fit no lane and none can grow. A walk by room looked at every lane for each (10^6
    lane look-ups, under salus-grow twice that); cut short at ``scan_lanes`` for the look-up
    index, it looks at fewer than 100 lanes a job and a walk."""
    class Counted(dict):
        looked = 0

        def __getitem__(self, key):
            Counted.looked += 1
            return super().__getitem__(key)

    manager = make_manager(rule, 1000 * 1001 // 2)
    manager.lanes = Counted()
    for i in range(2000):
        manager.submit(LaneJob(f"j{i}", 0, i + 1))
    assert len(manager.lanes) == 1000 and manager.n_waiting() == 1000
    assert Counted.looked < 100 * 2000 * walks


# ---------------------------------------------------------------- the index itself

@settings(max_examples=200, deadline=None)
@given(load=st.integers(1, 4), ops=st.lists(st.tuples(st.booleans(), st.integers(0, 40), st.integers(-5, 5)),
                                            max_size=120),
       queries=st.lists(st.tuples(st.integers(-1, 42), st.integers(-6, 6)), min_size=1, max_size=6))
def test_the_index_finds_what_a_sorted_list_does(load, ops, queries):
    index, reference = LaneIndex(load), {}
    for add, key, value in ops:
        if add:
            if (key,) in reference:
                continue
            index.add((key,), value)
            reference[(key,)] = value
        elif (key,) in reference:
            index.remove((key,))
            del reference[(key,)]
        else:
            with pytest.raises(KeyError):
                index.remove((key,))
        expected = sorted(reference.items())
        assert list(index.items()) == expected and len(index) == len(expected)
        assert list(index) == [k for k, _ in expected] and list(reversed(index)) == [k for k, _ in expected][::-1]
        for at, threshold in queries:
            want = next(((k, v) for k, v in expected if k >= (at,) and v >= threshold), None)
            assert index.first_reaching((at,), threshold) == want
            last = next(((k, v) for k, v in reversed(expected) if v >= threshold), None)
            assert index.last_reaching(threshold) == last


def test_an_index_load_below_one_is_refused():
    with pytest.raises(ValueError, match="load"):
        LaneIndex(0)
