"""The executor with GPU lanes: admission by :mod:`impls.salus.memory.lanes`, one stream + memory pool per lane.

:class:`LaneExecutor` is :class:`~impls.salus.core.executor.Executor` whose admission asks a
:class:`~impls.salus.memory.lanes.LaneManager` (a job's persistent and ephemeral bytes come
from its workload's memory profile) instead of summing peaks. On CUDA each lane is a
:class:`LaneHandle`: its own ``torch.cuda.Stream`` and, where torch has it, its own
``torch.cuda.MemPool``, entered around each iteration of the lane's jobs
(``torch.cuda.use_mem_pool``); a job taking a lane orders its stream after the device's
current stream, where the job was built. ``use_mem_pool`` routes only the calling thread's
allocations, and autograd runs backward on its own thread per CUDA device, so
:func:`mempool_routing_check` measures where a backward pass's gradients land; where
they are outside the pool, the lanes are enforced by the manager's accounting only.
Admission is Salus's: a waiting job that does not fit does not block the jobs behind it.
On the CPU there are no streams or pools: lanes are accounting, and PACK interleaves
their jobs on one thread or, with ``host_workers`` > 1 (see
:class:`~impls.salus.core.executor.Executor`), runs each lane on a host thread.
"""
from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from typing import Any

from impls.salus.core.executor import Executor, JobRecord
from impls.salus.memory.lanes import LaneJob, make_manager


@dataclasses.dataclass
class LaneHandle:
    """One lane on a device: ``lane_id`` of the manager, its ``stream`` and memory ``pool`` (None on CPU)."""
    lane_id: int
    stream: Any = None
    pool: Any = None


class LaneDevice:
    """Wraps a device of :mod:`impls.salus.core.devices` so a lane's stream and pool are entered per iteration."""

    def __init__(self, device, cuda=None):
        self._device = device
        self._cuda = cuda

    def __getattr__(self, name):
        return getattr(self._device, name)

    def timer(self, lane=None):
        return self._device.timer(lane.stream if isinstance(lane, LaneHandle) else lane)

    def order_lane(self, lane) -> None:
        """Order the lane's stream after the device's current stream (nothing without a stream)."""
        self._device.order_lane(lane.stream if isinstance(lane, LaneHandle) else lane)

    def synchronize_lane(self, lane) -> None:
        """Wait for the work queued on the lane's stream (the whole device without one)."""
        self._device.synchronize_lane(lane.stream if isinstance(lane, LaneHandle) else lane)

    def lane_context(self, lane):
        if not isinstance(lane, LaneHandle):
            return self._device.lane_context(lane)
        stack = contextlib.ExitStack()
        if lane.stream is not None:
            stack.enter_context(self._device.lane_context(lane.stream))
        if lane.pool is not None:       # on the lane's device, which need not be the current one
            stack.enter_context(self._cuda.use_mem_pool(lane.pool, device=self._device.torch_device))
        return stack


class LaneExecutor(Executor):
    """Executor admitting jobs through GPU lanes.

    ``memory``: workload -> {"persistent_bytes", "ephemeral_bytes"} (a memory profile);
    ``capacity_bytes``: the device memory the lanes share; ``rule``: a lanes rule or
    baseline (``salus``, ``salus-grow``, ``shared-first``, ``no-lanes``, ``static``).
    ``use_pools``: give each CUDA lane its own ``MemPool`` (when torch has it).

    Admission follows Salus's ``processRequests``, as :class:`~impls.salus.memory.lanes.LaneManager`
    and :func:`~impls.salus.memory.lane_sim.replay` do: the waiting jobs are tried in arrival
    order and each one a lane takes is admitted; one that does not fit does not block
    those behind it (``head_of_line`` False).
    """

    head_of_line = False

    def __init__(self, policy="pack", device: Any = "cpu", capacity_bytes: int = 0,
                 memory: Mapping[str, Mapping] | None = None, rule: str = "salus", partitions: int = 4,
                 use_pools: bool = True, cuda=None, **kwargs):
        super().__init__(policy, device, memory_budget_bytes=int(capacity_bytes), **kwargs)
        self.manager = make_manager(rule, int(capacity_bytes), partitions)
        self.memory = dict(memory or {})
        self._cuda = cuda
        if self.device.kind == "cuda" and self._cuda is None:
            import torch

            self._cuda = torch.cuda
        self.device = LaneDevice(self.device, self._cuda)
        self.use_pools = use_pools and self._cuda is not None and hasattr(self._cuda, "MemPool")
        self.handles: dict[int, LaneHandle] = {}
        self.lane_log: list[dict] = []  # one entry per admission: job, lane id, lanes open

    def _lane_job(self, record: JobRecord) -> LaneJob:
        try:
            mem = self.memory[record.workload]
        except KeyError:
            raise KeyError(f"no memory profile for workload {record.workload!r} "
                           f"(have: {', '.join(self.memory) or 'none'})") from None
        return LaneJob(str(record.job_id), int(mem["persistent_bytes"]), int(mem["ephemeral_bytes"]))

    def _records_for(self, submissions):
        """The executor's checked records; also raises ValueError, before any job is admitted,
        for two ids with one lane-manager name (``str(job_id)``), a workload with no memory
        profile, or a profile with negative bytes."""
        pairs = super()._records_for(submissions)
        names = set(self.manager.placement)
        for record, _ in pairs:
            if str(record.job_id) in names:   # the manager's name for a job: 1 and "1" are one
                raise ValueError(f"job id {record.job_id!r} appears twice in the submissions; expected one per job")
            names.add(str(record.job_id))
            mem = self.memory.get(record.workload)
            if mem is None:
                raise ValueError(f"job {record.job_id!r}: no memory profile for workload {record.workload!r}; "
                                 f"known: {', '.join(self.memory) or 'none'}")
            for key in ("persistent_bytes", "ephemeral_bytes"):
                if not mem[key] >= 0:
                    raise ValueError(f"job {record.job_id!r}: workload {record.workload!r} has {key} "
                                     f"{mem[key]!r}; expected a number of bytes >= 0")
        return pairs

    def _fits(self, record: JobRecord) -> bool:
        return self.manager.try_admit(self._lane_job(record))

    def _never_fits(self, record: JobRecord) -> str | None:
        """Return why no lane could ever hold ``record`` (the budget's reason first), or None."""
        return super()._never_fits(record) or self.manager.never_fits(self._lane_job(record))

    def _handle(self, lane_id: int) -> LaneHandle:
        if lane_id not in self.handles:
            handle = LaneHandle(lane_id)
            if self.device.has_streams:
                handle.stream = self.device.new_lane()
                if self.use_pools:       # a pool belongs to the device current at its making
                    with self._cuda.device(self.device.torch_device):
                        handle.pool = self._cuda.MemPool()
            self.handles[lane_id] = handle
        return self.handles[lane_id]

    def _free_lane(self):
        """None: a job's lane is the manager's placement, set by :meth:`_admit` once admitted."""
        return None

    def _admit(self, record: JobRecord, sub, now: float) -> None:
        name = str(record.job_id)
        if name not in self.manager.placement:  # admitted without _fits (admit_now): ask the manager
            if not self.manager.try_admit(self._lane_job(record)):
                raise RuntimeError(f"job {record.job_id} does not fit any lane; submit it through run()")
        super()._admit(record, sub, now)
        if record.status == "running" or record.status == "done":
            lane_id = self.manager.placement.get(name)
            if lane_id is not None:
                record.lane = self._handle(lane_id)
                self.device.order_lane(record.lane)   # the job was built (and warmed) on the current stream
                self.lane_log.append({"job_id": record.job_id, "lane": lane_id, "t_s": now,
                                      "lanes_open": len(self.manager.lanes)})

    def _release(self, record: JobRecord) -> None:
        super()._release(record)
        name = str(record.job_id)
        if name in self.manager.placement:
            lane_id = self.manager.placement[name]
            self.manager.release(name)
            if lane_id not in self.manager.lanes:
                self.handles.pop(lane_id, None)

    def results(self) -> dict:
        """The executor's results plus ``lanes``: the rule, the most lanes open at once, the log."""
        out = super().results()
        out["lanes"] = {"rule": self.manager.name, "capacity_bytes": self.manager.capacity,
                        "max_open": max((e["lanes_open"] for e in self.lane_log), default=0),
                        "log": self.lane_log, "pools": self.use_pools}
        return out


def bytes_inside(tensors, segments) -> tuple[int, int]:
    """Return (bytes of ``tensors``, bytes of those whose storage starts inside a segment (lo, hi))."""
    total = inside = 0
    for t in tensors:
        n = t.numel() * t.element_size()
        total += n
        if any(lo <= t.data_ptr() < hi for lo, hi in segments):
            inside += n
    return total, inside


def mempool_routing_check(workload: str = "resnet_b32", device: str = "cuda", cuda=None) -> dict:
    """On CUDA: run one training iteration of ``workload`` inside a lane's stream and ``MemPool``;
    return where its memory landed.

    Returns {"pool_bytes" (bytes of the pool's segments), "grad_bytes", "grad_bytes_in_pool",
    "output_in_pool" (the forward's loss tensor), "backward_in_pool" (all gradients inside the
    pool), "note"}. Raises NotImplementedError (asv: skip) without CUDA.
    """
    import torch

    from impls.salus.core.devices import get_device
    from impls.salus.core.workloads import build_job

    dev = get_device(device)
    cuda = cuda if cuda is not None else torch.cuda
    if not hasattr(cuda, "MemPool"):
        return {"note": "this torch has no torch.cuda.MemPool: lanes are enforced by accounting only"}
    job = build_job(workload, dev.torch_device, iterations=10, warm=True)
    job.optimizer.zero_grad(set_to_none=True)
    pool = cuda.MemPool()
    stream = cuda.Stream(device=dev.torch_device)
    with cuda.stream(stream), cuda.use_mem_pool(pool):
        loss = job.loss_fn(job.model, job.inputs, job.targets)
        loss.backward()
    cuda.synchronize()
    segments = [(s["address"], s["address"] + s["total_size"]) for s in pool.snapshot(include_traces=False)]

    grads = [p.grad for p in job.model.parameters() if p.grad is not None]
    grad_bytes, in_pool = bytes_inside(grads, segments)
    out = {"workload": workload, "pool_bytes": int(sum(hi - lo for lo, hi in segments)),
           "grad_bytes": int(grad_bytes), "grad_bytes_in_pool": int(in_pool),
           "output_in_pool": bytes_inside([loss], segments)[1] > 0,
           "backward_in_pool": bool(grads) and in_pool == grad_bytes}
    out["note"] = ("backward's allocations land in the lane's pool" if out["backward_in_pool"] else
                   "backward's allocations (autograd's device thread) miss the lane's pool: "
                   "lanes are enforced by the lane manager's accounting")
    del loss, grads
    job.release()
    dev.release_memory()
    return out
