"""GPU lanes: Salus's memory-sharing rule as pure logic (no torch), plus two baselines.

Longer than 400 lines: the rule, its named variants and the two baselines share one
:class:`LaneManager` and its safety check; they are compared on the same inputs.

Salus splits a job's memory into *persistent* bytes (weights, optimizer state: held
for the job's whole life) and *ephemeral* bytes (activations, workspaces: allocated
and freed within one iteration). Device memory is divided into *lanes*; the jobs
of a lane time-share its ephemeral space (one iteration at a time), and lanes run
side by side. A lane of size ``S`` holding jobs ``J`` is safe when

    sum(persistent of J) + max(ephemeral of J) <= S          (the safety condition)

and the lanes never add up to more than the capacity, so every job can always run
its next iteration without an out-of-memory error.

:class:`LaneManager` (``rule="salus"``) is the assignment of Salus's ``lanemgr.cpp``:

1. open a new lane sized ``persistent + ephemeral`` if the unassigned memory allows;
2. otherwise put the job in the existing lane that fits it best (least room left
   after adding it) among those where the safety condition still holds;
3. otherwise the job waits in a FIFO queue; when a job leaves, every waiting job
   is retried in FIFO order and each one that fits is admitted (``processRequests``
   in Salus: a waiting job does not block the ones behind it). An empty lane returns
   its memory.

Salus's ``GpuLane::tryFit`` compares with ``*m_maxPeak.cbegin()``, the *smallest* peak
of a ``std::multiset``; here the largest is used, which is the stated safety condition.

A new lane is sized exactly ``persistent + ephemeral`` of its first job, so step 2
only finds room in a lane some job has left; and a lane closes when its last job
leaves, so a lane of one job never gains room. Hence, for jobs with persistent
bytes > 0, the faithful rule gives every job a lane of its own and admits exactly
what the no-lanes pool admits (the lane simulator shows it on every mix). Named variants beside the faithful rule (never
in its place) let a lane *grow* by the bytes a job adds to it, which is
``persistent + max(0, ephemeral - the lane's largest ephemeral)`` instead of a new
lane's ``persistent + ephemeral``:

- ``rule="salus-grow"``: Salus's steps 1-2, then grow the existing lane that needs the
  fewest extra bytes if the unassigned memory allows, before waiting.
- ``rule="shared-first"``: best fit, then grow, and open a new lane only when no lane
  can take the job: packs many small-persistent jobs into few lanes (more jobs
  admitted, fewer lanes running in parallel).

Baselines (same interface, :func:`make_manager`):

- :class:`NoLanes`: one pool, no time-sharing of ephemeral memory: admit while
  ``sum(persistent + ephemeral) <= capacity``.
- :class:`StaticPartitions`: the capacity cut into ``partitions`` equal lanes fixed in
  advance; a job goes to the best-fitting partition under the safety condition.

Command line (sizes in bytes; jobs admitted in arrival order, no departures)::

    python -m impls.salus.lanes --jobs jobs.json --capacity BYTES --json

prints ``{"lanes": [{"id", "size", "jobs": [NAME, ...]}], "waiting": [NAME, ...]}``.
"""
from __future__ import annotations

import bisect
import collections
import dataclasses
import math
from collections.abc import Iterable, Mapping

from impls.salus.memory.lane_index import LaneIndex

RULES = ("salus", "salus-grow", "shared-first")
BASELINES = ("no-lanes", "static")


@dataclasses.dataclass(frozen=True)
class LaneJob:
    """A job's memory needs in bytes: ``persistent`` (whole life) and ``ephemeral`` (per iteration)."""
    name: str
    persistent: int
    ephemeral: int

    @property
    def peak(self) -> int:
        """Return persistent + ephemeral bytes (what the job needs alone)."""
        return self.persistent + self.ephemeral


@dataclasses.dataclass
class Lane:
    """One lane: ``size`` bytes; its jobs' persistent sum and their largest ephemeral peak."""
    id: int
    size: int
    jobs: dict = dataclasses.field(default_factory=dict)  # name -> LaneJob, in admission order
    persistent: int = 0
    max_ephemeral: int = 0

    def need_with(self, job: LaneJob) -> int:
        """Return the bytes the lane would need with ``job`` added (safety condition's left side)."""
        return self.persistent + job.persistent + max(self.max_ephemeral, job.ephemeral)

    def used(self) -> int:
        """Return the bytes the lane's jobs can use at once (persistent sum + largest ephemeral)."""
        return self.persistent + self.max_ephemeral

    @property
    def room(self) -> int:
        """Return the lane's spare bytes: size - used (a job fits only if its persistent <= room)."""
        return self.size - self.persistent - self.max_ephemeral

    def add(self, job: LaneJob) -> None:
        self.jobs[job.name] = job
        self.persistent += job.persistent
        self.max_ephemeral = max(self.max_ephemeral, job.ephemeral)

    def remove(self, name: str) -> LaneJob:
        job = self.jobs.pop(name)
        self.persistent -= job.persistent
        self.max_ephemeral = max((j.ephemeral for j in self.jobs.values()), default=0)
        return job

    def to_dict(self) -> dict:
        return {"id": self.id, "size": self.size, "jobs": list(self.jobs)}


class LaneError(ValueError):
    """Bad input to the lane manager (negative sizes, duplicate names, malformed jobs file)."""


class LaneManager:
    """Salus's lane assignment over ``capacity`` bytes (see the module docstring for ``rule``).

    :meth:`submit` admits a job or queues it; :meth:`release` removes a finished job
    and returns the queued jobs admitted as a result. Every admitted job's lane id is
    in :attr:`placement`. :meth:`never_fits` says why a job could not be admitted even
    with no job admitted (such a job would wait forever).
    """

    kind = "lanes"
    #: lanes a best fit or a grow walks by room before it asks the look-up index (:meth:`_look_up`):
    #: enough for the walks of jobs with persistent bytes, which rarely look at more than a few
    scan_lanes = 64

    def __init__(self, capacity: int, rule: str = "salus"):
        if rule not in RULES:
            raise LaneError(f"unknown lane rule {rule!r}; known: {', '.join(RULES)}")
        if int(capacity) < 0:
            raise LaneError(f"capacity must be >= 0 bytes, got {capacity}")
        self.capacity = int(capacity)
        self.rule = rule
        self.name = rule
        self.lanes: dict[int, Lane] = {}
        self.assigned = 0  # bytes given to lanes
        # Waiting jobs grouped by (persistent, ephemeral), each group in FIFO order:
        # a retry pass stops at a group's first failure (the state only tightens
        # during a pass, and the group's jobs are identical), so a release costs
        # O(groups x lanes), not O(waiting x lanes). The result equals a FIFO scan.
        self._waiting: dict[tuple[int, int], collections.deque] = {}
        self._waiting_names: set[str] = set()
        self._seq = 0
        self.placement: dict[str, int] = {}
        self._next_id = 0
        self._by_room: list[tuple[int, int]] = []  # sorted (room, lane id): best fit without a full scan
        # for a best fit the walk by room cannot finish in scan_lanes lanes, built then: (room,
        # lane id) -> the lane's largest ephemeral m, and (room + m, room, lane id) -> -m
        self._fit_index: tuple[LaneIndex, LaneIndex] | None = None

    # ------------------------------------------------------------ queries

    @property
    def unassigned(self) -> int:
        """Return the bytes not given to any lane."""
        return self.capacity - self.assigned

    def free_bytes(self) -> int:
        """Return bytes no admitted job can use: unassigned + each lane's size minus its need (fragmentation)."""
        return self.unassigned + sum(lane.size - lane.used() for lane in self.lanes.values())

    def never_fits(self, job: LaneJob) -> str | None:
        """Return why ``job`` could not be admitted even with no job admitted, or None when it
        could: its peak (persistent + ephemeral) exceeds :meth:`_room_when_empty`."""
        job = _checked(job)
        room, where = self._room_when_empty()
        if job.peak > room:
            return f"peak {job.peak} B (persistent {job.persistent} + ephemeral {job.ephemeral}) exceeds {where}"
        return None

    def _room_when_empty(self) -> tuple[int, str]:
        """The most bytes one job can get with no job admitted, and what that room is: every
        lane is then closed and the whole capacity unassigned, under every rule."""
        return self.capacity, f"the lanes' capacity {self.capacity} B"

    def lane_of(self, name: str) -> Lane:
        """Return the lane holding admitted job ``name`` (KeyError if it is not admitted)."""
        return self.lanes[self.placement[name]]

    @property
    def waiting(self) -> list[LaneJob]:
        """Return the waiting jobs in FIFO (arrival) order."""
        entries = sorted(e for group in self._waiting.values() for e in group)
        return [job for _, job in entries]

    def n_waiting(self) -> int:
        """Return how many jobs wait."""
        return len(self._waiting_names)

    def snapshot(self) -> dict:
        """Return ``{"lanes": [{"id", "size", "jobs"}], "waiting": [names]}`` (the CLI's output)."""
        return {"lanes": [lane.to_dict() for lane in self.lanes.values()],
                "waiting": [job.name for job in self.waiting]}

    # ------------------------------------------------------------ decisions

    def _best_fit(self, job: LaneJob) -> Lane | None:
        """The lane that fits ``job`` best: the least (slack, room, lane id) over the lanes whose
        slack (size - :meth:`Lane.need_with`) is >= 0; None when none is.

        slack = room - p - max(0, e - m) (p, e: the job's bytes; m: the lane's largest
        ephemeral), so room - p - e <= slack <= room - p: lanes with room < p cannot fit, and
        walking by ascending room, once room - p - e reaches the best slack found no later lane
        has a smaller one. That walk looks at :attr:`scan_lanes` lanes at most; where it would
        go on (many lanes with room that the job does not fit: jobs of zero persistent bytes),
        the answer is the look-up index's (:meth:`_indexed_fit`), the same lane."""
        p, e = job.persistent, job.ephemeral
        best, best_slack = None, None
        rooms = self._by_room
        start = bisect.bisect_left(rooms, (p, -1))
        end = min(len(rooms), start + self.scan_lanes)
        for i in range(start, end):
            room, lane_id = rooms[i]
            if best_slack is not None and room - p - e >= best_slack:
                return best
            lane = self.lanes[lane_id]
            slack = lane.size - lane.need_with(job)
            if slack >= 0 and (best_slack is None or slack < best_slack):
                best, best_slack = lane, slack
                if slack == 0:
                    return best
        return best if end == len(rooms) else self._indexed_fit(job)

    def _indexed_fit(self, job: LaneJob) -> Lane | None:
        """:meth:`_best_fit`'s lane by two look-ups of the :meth:`_look_up` index. With ``free =
        room + m`` (size - the lane's persistent sum), slack = room - p where m >= e and
        free - p - e where m < e. So the best is the better of: among lanes with m >= e, the
        least (room, id) with room >= p (their slack is then >= 0); among lanes with m < e, the
        least (free, room, id) with free >= p + e (then room > p)."""
        by_room, by_free = self._look_up()
        p, e = job.persistent, job.ephemeral
        options = []
        found = by_room.first_reaching((p,), e)            # m >= e
        if found is not None:
            room, lane_id = found[0]
            options.append((room - p, room, lane_id))
        found = by_free.first_reaching((p + e,), 1 - e)    # -m >= 1 - e: m < e
        if found is not None:
            free, room, lane_id = found[0]
            options.append((free - p - e, room, lane_id))
        return self.lanes[min(options)[2]] if options else None

    def _look_up(self) -> tuple[LaneIndex, LaneIndex]:
        """The look-up index of the lanes, built on first use and kept up to date after: (room,
        lane id) -> the lane's largest ephemeral m, and (room + m, room, lane id) -> -m."""
        if self._fit_index is None:
            self._fit_index = (LaneIndex(), LaneIndex())
            for lane in self.lanes.values():
                self._look_up_add(lane)
        return self._fit_index

    def _look_up_add(self, lane: Lane) -> None:
        by_room, by_free = self._fit_index
        by_room.add((lane.room, lane.id), lane.max_ephemeral)
        by_free.add((lane.room + lane.max_ephemeral, lane.room, lane.id), -lane.max_ephemeral)

    def _index(self, lane: Lane) -> None:
        bisect.insort(self._by_room, (lane.room, lane.id))
        if self._fit_index is not None:
            self._look_up_add(lane)

    def _unindex(self, lane: Lane) -> None:
        key = (lane.room, lane.id)
        i = bisect.bisect_left(self._by_room, key)
        if i == len(self._by_room) or self._by_room[i] != key:
            raise RuntimeError(f"lane index out of date for lane {lane.id}")
        del self._by_room[i]
        if self._fit_index is not None:
            by_room, by_free = self._fit_index
            by_room.remove(key)
            by_free.remove((lane.room + lane.max_ephemeral, lane.room, lane.id))

    def _new_lane(self, size: int) -> Lane:
        lane = Lane(self._next_id, size)
        self._next_id += 1
        self.lanes[lane.id] = lane
        self.assigned += lane.size
        self._index(lane)
        return lane

    def _open(self, job: LaneJob) -> Lane | None:
        if job.peak > self.unassigned:
            return None
        return self._new_lane(job.peak)

    def _grow(self, job: LaneJob) -> Lane | None:
        """Grow the lane :meth:`_grow_choice` picks by the bytes ``job`` adds to it (none where it
        fits already) and return it; None when no lane can grow enough."""
        best, extra = self._grow_choice(job)
        if best is not None and extra > 0:
            self._unindex(best)
            best.size += extra
            self.assigned += extra
            self._index(best)
        return best

    def _grow_choice(self, job: LaneJob) -> tuple[Lane | None, int | None]:
        """The lane to grow for ``job`` and the bytes it needs (:meth:`Lane.need_with` - size):
        the least (extra, -room, -lane id) over the lanes whose extra is at most the unassigned
        bytes; (None, None) when none is.

        extra = p - room + max(0, e - m) >= p - room, so walking lanes by descending room, stop
        once p - room passes the unassigned bytes or reaches the best extra found. That walk
        looks at :attr:`scan_lanes` lanes at most; beyond, two look-ups of the :meth:`_look_up`
        index give the same lane: among lanes with m >= e (extra p - room) the greatest (room,
        id), among lanes with m < e (extra p + e - free) the greatest (free, room, id)."""
        best, best_extra = None, None
        for n, (room, lane_id) in enumerate(reversed(self._by_room)):
            if job.persistent - room > self.unassigned or (best_extra is not None
                                                           and job.persistent - room >= best_extra):
                return best, best_extra  # no later lane can need fewer extra bytes (or few enough to fit)
            if n == self.scan_lanes:
                break
            lane = self.lanes[lane_id]
            extra = lane.need_with(job) - lane.size
            if extra <= self.unassigned and (best_extra is None or extra < best_extra):
                best, best_extra = lane, extra
        else:
            return best, best_extra
        by_room, by_free = self._look_up()
        p, e = job.persistent, job.ephemeral
        options = []
        found = by_room.last_reaching(e)            # m >= e
        if found is not None:
            room, lane_id = found[0]
            options.append((p - room, -room, -lane_id))
        found = by_free.last_reaching(1 - e)        # m < e
        if found is not None:
            free, room, lane_id = found[0]
            options.append((p + e - free, -room, -lane_id))
        options = [o for o in options if o[0] <= self.unassigned]
        if not options:
            return None, None
        extra, _, lane_id = min(options)
        return self.lanes[-lane_id], extra

    def place(self, job: LaneJob) -> Lane | None:
        """Choose (and create or grow, as the rule says) the lane for ``job``; None when it must wait."""
        if self.rule == "salus":
            return self._open(job) or self._best_fit(job)
        if self.rule == "salus-grow":
            return self._open(job) or self._best_fit(job) or self._grow(job)
        return self._best_fit(job) or self._grow(job) or self._open(job)

    def _try_admit(self, job: LaneJob) -> bool:
        lane = self.place(job)
        if lane is None:
            return False
        self._unindex(lane)
        lane.add(job)
        self._index(lane)
        self.placement[job.name] = lane.id
        return True

    def submit(self, job: LaneJob) -> bool:
        """Admit ``job`` now (True) or queue it (False). Names must be unique.

        Jobs already waiting cannot fit either (nothing was freed since their last
        try), so only the new job is tried, as Salus's ``processRequests`` would.
        """
        job = _checked(job)
        if job.name in self.placement or job.name in self._waiting_names:
            raise LaneError(f"job name {job.name!r} is already admitted or waiting")
        if self._try_admit(job):
            return True
        self._waiting.setdefault((job.persistent, job.ephemeral), collections.deque()).append((self._seq, job))
        self._waiting_names.add(job.name)
        self._seq += 1
        return False

    def try_admit(self, job: LaneJob) -> bool:
        """Admit ``job`` if a lane takes it now (True); never queue it (False: the caller keeps it waiting)."""
        job = _checked(job)
        if job.name in self.placement or job.name in self._waiting_names:
            raise LaneError(f"job name {job.name!r} is already admitted or waiting")
        return self._try_admit(job)

    def release(self, name: str) -> list[LaneJob]:
        """Remove finished job ``name``; free its lane if empty; return queued jobs admitted now (FIFO)."""
        if name not in self.placement:
            raise LaneError(f"job {name!r} is not admitted")
        lane = self.lanes[self.placement.pop(name)]
        self._unindex(lane)
        lane.remove(name)
        if lane.jobs or not self._drop(lane):
            self._index(lane)
        return self._drain()

    def _drop(self, lane: Lane) -> bool:
        """Return the empty ``lane``'s memory; True when the lane is gone."""
        del self.lanes[lane.id]
        self.assigned -= lane.size
        return True

    def _drain(self) -> list[LaneJob]:
        admitted = []
        open_groups = {key for key, group in self._waiting.items() if group}
        while open_groups:
            key = min(open_groups, key=lambda k: self._waiting[k][0][0])  # earliest head first
            group = self._waiting[key]
            _, job = group[0]
            if not self._try_admit(job):
                open_groups.discard(key)  # its identical followers cannot fit in this pass either
                continue
            group.popleft()
            self._waiting_names.discard(job.name)
            admitted.append(job)
            if not group:
                del self._waiting[key]
                open_groups.discard(key)
        return admitted


class StaticPartitions(LaneManager):
    """Baseline: ``partitions`` equal lanes fixed in advance (never opened or returned)."""

    kind = "static"

    def __init__(self, capacity: int, partitions: int = 4):
        super().__init__(capacity, "salus")
        if int(partitions) < 1:
            raise LaneError(f"partitions must be >= 1, got {partitions}")
        self.name = "static"
        size = self.capacity // int(partitions)
        for _ in range(int(partitions)):
            self._new_lane(size)

    def place(self, job: LaneJob) -> Lane | None:
        return self._best_fit(job)

    def _room_when_empty(self) -> tuple[int, str]:
        """The largest partition: an empty partition of ``size`` bytes holds a job iff its peak
        <= size, and partitions never merge."""
        largest = max((lane.size for lane in self.lanes.values()), default=0)
        return largest, f"every static partition ({len(self.lanes)} of {largest} B)"

    def _drop(self, lane: Lane) -> bool:
        return False  # partitions are fixed


class NoLanes(LaneManager):
    """Baseline: one pool, every job's full peak reserved: admit while sum(peaks) <= capacity.

    Each admitted job gets a lane of its own of size ``peak`` (no time-sharing of
    ephemeral memory), so the same code reports and checks it.
    """

    kind = "no-lanes"

    def __init__(self, capacity: int):
        super().__init__(capacity, "salus")
        self.name = "no-lanes"

    def place(self, job: LaneJob) -> Lane | None:
        return self._open(job)


def make_manager(rule: str, capacity: int, partitions: int = 4) -> LaneManager:
    """Return a manager for ``rule``: ``salus``, ``shared-first``, ``no-lanes`` or ``static``."""
    if rule in RULES:
        return LaneManager(capacity, rule)
    if rule == "no-lanes":
        return NoLanes(capacity)
    if rule == "static":
        return StaticPartitions(capacity, partitions)
    raise LaneError(f"unknown rule {rule!r}; known: {', '.join(RULES + BASELINES)}")


def check_safety(manager: LaneManager) -> list[str]:
    """Return every violated invariant as a sentence (empty list: the manager's state is safe).

    Checks each lane's safety condition (sum persistent + max ephemeral <= size), that
    the lanes fit in the capacity, and that the bookkeeping matches the jobs.
    """
    problems = []
    total = 0
    for lane in manager.lanes.values():
        total += lane.size
        need = sum(j.persistent for j in lane.jobs.values()) + max((j.ephemeral for j in lane.jobs.values()), default=0)
        if need > lane.size:
            problems.append(f"lane {lane.id}: needs {need} B > size {lane.size} B")
        if need != lane.used():
            problems.append(f"lane {lane.id}: bookkeeping {lane.used()} B != {need} B")
    if total > manager.capacity:
        problems.append(f"lanes total {total} B > capacity {manager.capacity} B")
    if total != manager.assigned:
        problems.append(f"assigned {manager.assigned} B != lanes total {total} B")
    lanes = manager.lanes.values()
    if sorted((lane.room, lane.id) for lane in lanes) != manager._by_room:
        problems.append("the best-fit index does not match the lanes")
    if manager._fit_index is not None and (
            sorted(((lane.room, lane.id), lane.max_ephemeral) for lane in lanes) != list(manager._fit_index[0].items())
            or sorted(((lane.room + lane.max_ephemeral, lane.room, lane.id), -lane.max_ephemeral) for lane in lanes)
            != list(manager._fit_index[1].items())):
        problems.append("the best-fit look-up index does not match the lanes")
    return problems


# ---------------------------------------------------------------- input


def _checked(job: LaneJob) -> LaneJob:
    if job.persistent < 0 or job.ephemeral < 0:
        raise LaneError(f"job {job.name!r}: sizes must be >= 0 bytes "
                        f"(persistent={job.persistent}, ephemeral={job.ephemeral})")
    return job


def jobs_from_json(items, source: str = "jobs", strict: bool = False) -> list[LaneJob]:
    """Return :class:`LaneJob` objects from a parsed JSON list of ``{name, persistent, ephemeral}``.

    Names are non-empty, distinct and valid Unicode text (no lone surrogate). Raises
    :class:`LaneError` naming ``source``, the item's index and what is wrong; with
    ``strict``, also for a key other than those three (other keys are otherwise ignored).
    """
    if not isinstance(items, list):
        raise LaneError(f"{source}: expected a JSON list of {{name, persistent, ephemeral}}, "
                        f"got {type(items).__name__}")
    jobs, names = [], set()
    for i, item in enumerate(items):
        where = f"{source}: item {i}"
        if not isinstance(item, Mapping):
            raise LaneError(f"{where}: expected an object {{name, persistent, ephemeral}}, got {item!r}")
        missing = [k for k in ("name", "persistent", "ephemeral") if k not in item]
        if missing:
            raise LaneError(f"{where}: missing key(s) {', '.join(missing)}")
        unknown = [str(k) for k in item if k not in ("name", "persistent", "ephemeral")] if strict else []
        if unknown:
            raise LaneError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: name, persistent, ephemeral")
        name = item["name"]
        if not isinstance(name, str) or not name:
            raise LaneError(f"{where}: 'name' must be a non-empty string, got {name!r}")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:      # a lone surrogate: strict JSON readers refuse it in the output
            raise LaneError(f"{where}: 'name' {name!r} is not valid Unicode text (a lone surrogate); "
                            "expected a name that encodes as UTF-8") from None
        if name in names:
            raise LaneError(f"{where}: duplicate job name {name!r}")
        names.add(name)
        sizes = {}
        for key in ("persistent", "ephemeral"):
            value = item[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or isinstance(value, float) and not math.isfinite(value) or value != int(value) or value < 0:
                raise LaneError(f"{where} ({name!r}): {key!r} must be a whole number of bytes >= 0, got {value!r}")
            sizes[key] = int(value)
        jobs.append(LaneJob(name, sizes["persistent"], sizes["ephemeral"]))
    return jobs


def assign(jobs: Iterable[LaneJob], capacity: int, rule: str = "salus", partitions: int = 4) -> dict:
    """Admit ``jobs`` in arrival order with no departures; return :meth:`LaneManager.snapshot`."""
    manager = make_manager(rule, capacity, partitions)
    for job in jobs:
        manager.submit(job)
    return manager.snapshot()
