"""Device abstraction for the Salus experiments: timing, lanes (streams), memory, OOM.

Two implementations share one interface so the executor and the switching
benchmarks are written once:

- :class:`CpuDevice`: wall-clock timing (``time.perf_counter``), no streams (PACK
  interleaves, or runs lanes on host threads: ``Executor(host_workers=...)``), memory
  *estimated* from tensor sizes (see :func:`estimate_job_memory`).
- :class:`CudaDevice`: CUDA events recorded on the job's stream (its lane's, else the
  device's current stream) and synchronised before reading (``Event(enable_timing=True)``,
  ``elapsed_time``), one ``torch.cuda.Stream`` per PACK lane (ordered after the device's
  current stream when a job takes it: :meth:`CudaDevice.order_lane`), peak memory from
  ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``,
  ``torch.cuda.OutOfMemoryError`` recognised as OOM.

:class:`CudaDevice` takes the ``cuda`` module as a parameter (default ``torch.cuda``)
so its logic is unit-tested on a CPU-only machine with a fake module.
"""
from __future__ import annotations

import contextlib
import gc
import re
import time
from typing import Any, Protocol

import torch

# How each device does "checkpoint to host": on CUDA the state really leaves device
# memory; on the CPU there is no device memory, so it is a copy to a separate buffer.
TO_HOST_METHOD = {
    "cuda": "device_to_host: model+optimizer state copied to pinned host memory, device copy freed",
    "cpu": "cpu_copy: no device memory on CPU; state copied out to a separate host buffer and back",
}


class Timer(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def elapsed_ms(self) -> float: ...


class WallTimer:
    """Host wall-clock timer (CPU work is synchronous, so this is the work's duration)."""

    def __init__(self, clock=time.perf_counter):
        self._clock = clock
        self._start = self._end = None

    def start(self) -> None:
        self._start = self._clock()

    def stop(self) -> None:
        self._end = self._clock()

    def elapsed_ms(self) -> float:
        if self._start is None or self._end is None:
            raise RuntimeError("WallTimer.elapsed_ms() before start() and stop()")
        return (self._end - self._start) * 1e3


class CudaEventTimer:
    """CUDA-event timer: events recorded on ``stream``; ``elapsed_ms`` waits for the end event.

    ``stop`` only records (it does not block) so PACK can launch every lane before
    waiting; ``elapsed_ms`` synchronises the end event, then reads ``elapsed_time``.
    """

    def __init__(self, cuda, stream=None):
        self._cuda = cuda
        self._stream = stream
        self._start_event = self._end_event = None

    def start(self) -> None:
        self._start_event = self._cuda.Event(enable_timing=True)
        self._start_event.record(self._stream) if self._stream is not None else self._start_event.record()

    def stop(self) -> None:
        self._end_event = self._cuda.Event(enable_timing=True)
        self._end_event.record(self._stream) if self._stream is not None else self._end_event.record()

    def elapsed_ms(self) -> float:
        if self._start_event is None or self._end_event is None:
            raise RuntimeError("CudaEventTimer.elapsed_ms() before start() and stop()")
        self._end_event.synchronize()
        return float(self._start_event.elapsed_time(self._end_event))


class CpuDevice:
    """The CPU as the shared "device": synchronous, one implicit lane, estimated memory."""

    kind = "cpu"
    has_streams = False

    def __init__(self, clock=time.perf_counter):
        self.torch_device = torch.device("cpu")
        self._clock = clock
        self.oom_errors: tuple[type[BaseException], ...] = (MemoryError,)

    def synchronize(self) -> None:
        pass

    def timer(self, lane: Any = None) -> Timer:
        return WallTimer(self._clock)

    def new_lane(self) -> Any:
        return None

    def order_lane(self, lane: Any) -> None:
        """No streams on the CPU: work is done when the host returns from it."""

    def synchronize_lane(self, lane: Any) -> None:
        """No streams on the CPU: nothing is queued."""

    def lane_context(self, lane: Any):
        return contextlib.nullcontext()

    def is_oom(self, error: BaseException) -> bool:
        return isinstance(error, self.oom_errors)

    def release_memory(self) -> None:
        gc.collect()

    def measure_job_memory(self, job) -> dict:
        """Estimate the job's memory (no allocator to ask on CPU): see :func:`estimate_job_memory`."""
        return estimate_job_memory(job)

    def host_buffer(self, like: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(like, device="cpu")

    def describe(self) -> str:
        return "cpu"


class CudaDevice:
    """One CUDA device; ``cuda`` is the ``torch.cuda`` module (a fake one in tests)."""

    kind = "cuda"
    has_streams = True

    def __init__(self, index: int = 0, cuda=None):
        self._cuda = cuda if cuda is not None else torch.cuda
        self.index = index
        self.torch_device = torch.device("cuda", index)
        self.oom_errors = (getattr(self._cuda, "OutOfMemoryError", torch.cuda.OutOfMemoryError),)

    @property
    def cuda(self):
        """The ``torch.cuda`` module this device calls (a fake one in tests)."""
        return self._cuda

    def synchronize(self) -> None:
        self._cuda.synchronize(self.torch_device)

    def timer(self, lane: Any = None) -> Timer:
        """A :class:`CudaEventTimer` on ``lane``, or on this device's current stream without one
        (not the current device's: with ``cuda:N``, N != 0, the work runs on cuda:N's stream)."""
        return CudaEventTimer(self._cuda, lane if lane is not None else self._cuda.current_stream(self.torch_device))

    def new_lane(self) -> Any:
        return self._cuda.Stream(device=self.torch_device)

    def order_lane(self, lane: Any) -> None:
        """Make ``lane`` (a stream) wait for the work queued so far on this device's current
        stream, where a job was built and warmed before it takes the lane: its first iteration
        on the lane then cannot read tensors that work is still writing. Does not block the host."""
        if lane is not None:
            lane.wait_stream(self._cuda.current_stream(self.torch_device))

    def synchronize_lane(self, lane: Any) -> None:
        """Block the host until the work queued on ``lane`` (this device when None) is done."""
        lane.synchronize() if lane is not None else self.synchronize()

    def warm(self, streams=()) -> None:
        """Run a throwaway matmul and linear layer, forward and backward, on this device's
        current stream and on each of ``streams``, then synchronise. cuBLAS allocates a
        workspace per (thread's handle, stream) at its first matmul there and keeps it (counted
        by ``memory_allocated``; ``empty_cache`` does not free it); warming the host thread and
        autograd's backward thread before reading ``memory_allocated`` keeps those workspaces
        out of the first job's bytes. Leaves no tensor allocated."""
        for stream in (None, *streams):
            with self.lane_context(stream):
                a = torch.ones((64, 64), device=self.torch_device, requires_grad=True)
                b = torch.ones(64, device=self.torch_device, requires_grad=True)
                torch.nn.functional.linear(torch.matmul(a, a), a, b).sum().backward()
                del a, b
        self.synchronize()

    def lane_context(self, lane: Any):
        return self._cuda.stream(lane) if lane is not None else contextlib.nullcontext()

    def is_oom(self, error: BaseException) -> bool:
        return isinstance(error, self.oom_errors)

    def release_memory(self) -> None:
        gc.collect()
        self._cuda.empty_cache()

    def measure_job_memory(self, job) -> dict:
        """Peak, persistent and ephemeral bytes of one iteration from the CUDA allocator.

        As Salus measured them from allocator traces: persistent = weights, optimizer
        state and data (counted from the job's tensors after the iteration, so state an
        optimizer creates on its first step is in), ephemeral = the allocator's peak
        during one iteration above what was allocated before and after it (activations
        and gradients: :meth:`Job.step` frees the gradients when it ends).
        Runs one uncounted iteration.
        """
        self.synchronize()
        before = self._cuda.memory_allocated(self.torch_device)
        self._cuda.reset_peak_memory_stats(self.torch_device)
        job.step(count=False)
        self.synchronize()
        after = self._cuda.memory_allocated(self.torch_device)
        peak = self._cuda.max_memory_allocated(self.torch_device)
        persistent = _tensor_bytes(job.persistent_tensors())
        ephemeral = max(0, peak - max(before, after))
        return {"persistent_bytes": int(persistent), "ephemeral_bytes": int(ephemeral),
                "peak_bytes": int(persistent + ephemeral), "method": "cuda_allocator"}

    def host_buffer(self, like: torch.Tensor) -> torch.Tensor:
        return torch.empty(like.shape, dtype=like.dtype, device="cpu", pin_memory=True)

    def describe(self) -> str:
        try:
            return f"cuda:{self.index} {self._cuda.get_device_name(self.index)}"
        except Exception:  # noqa: BLE001 - a fake module may not name devices
            return f"cuda:{self.index}"


def get_device(name, clock=time.perf_counter):
    """Return :class:`CpuDevice` for ``"cpu"`` or ``"cpu:0"`` (torch's name of the one CPU
    device), :class:`CudaDevice` for ``"cuda"`` or ``"cuda:N"``, case and surrounding spaces
    ignored.

    ``clock`` times CPU iterations (host seconds; a fake one in tests). A device
    object is returned as is. Raises ``NotImplementedError`` (asv: skip) when CUDA is
    asked for and missing, ValueError for any other spelling ("cudax", "cuda:-1", "cpu:1")
    or an index this machine does not have.
    """
    if not isinstance(name, str):
        return name  # already a device object
    name = name.strip().lower()
    if name in ("cpu", "cpu:0"):
        return CpuDevice(clock)
    spelled = re.fullmatch(r"cuda(?::(\d+))?", name)
    if spelled is None:
        raise ValueError(f"device {name!r}: expected 'cpu' (or 'cpu:0'), 'cuda' or 'cuda:N'")
    from impls.harness.capabilities import require

    require("cuda")
    index = int(spelled.group(1) or 0)
    count = torch.cuda.device_count()
    if index >= count:
        raise ValueError(f"device {name!r}: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}")
    return CudaDevice(index)


# --- memory estimate on CPU ---------------------------------------------------------

def _tensor_bytes(tensors, seen: set[int] | None = None) -> int:
    """Bytes of the distinct storages of ``tensors``, leaving out those in ``seen`` (data
    pointers), which is updated with the storages counted."""
    seen = set() if seen is None else seen
    total = 0
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.device.type == "meta":
            continue
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key in seen or key == 0:
            continue
        seen.add(key)
        total += storage.nbytes()
    return total


def estimate_job_memory(job) -> dict:
    """Estimate a job's memory on CPU, where no allocator reports a peak.

    persistent = bytes of parameters + buffers + optimizer state + the job's input data
    (distinct storages); ephemeral = bytes of the tensors autograd saves for backward
    during one forward (counted with ``saved_tensors_hooks``, distinct storages not
    already counted as persistent: a weight or an input saved for backward is not
    allocated twice) + the
    gradients (one per parameter, freed each iteration: ``zero_grad(set_to_none=True)``).
    For inference jobs (no autograd) ephemeral = 2 x the largest module output (an
    input and an output alive at once). peak = persistent + ephemeral.
    Runs one uncounted forward (and backward, for training jobs).
    """
    counted: set[int] = set()
    persistent = _tensor_bytes(job.persistent_tensors(), counted)
    if job.train:
        saved: list[torch.Tensor] = []

        def pack(t):
            saved.append(t)
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            job.step(count=False)
        grads = sum(p.numel() * p.element_size() for p in job.model.parameters())
        ephemeral = _tensor_bytes(saved, counted) + grads   # weights and inputs autograd saves are persistent
    else:
        largest = [0]

        def hook(_module, _inputs, output):
            outs = output if isinstance(output, (tuple, list)) else (output,)
            nbytes = sum(o.numel() * o.element_size() for o in outs if isinstance(o, torch.Tensor))
            largest[0] = max(largest[0], nbytes)

        handles = [m.register_forward_hook(hook) for m in job.model.modules()]
        try:
            job.step(count=False)
        finally:
            for h in handles:
                h.remove()
        ephemeral = 2 * largest[0]
    return {"persistent_bytes": int(persistent), "ephemeral_bytes": int(ephemeral),
            "peak_bytes": int(persistent + ephemeral), "method": "cpu_estimate"}


@contextlib.contextmanager
def torch_threads(n: int | None):
    """Run with ``n`` torch threads (0 or None: leave torch's setting), restoring it after."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(int(n))
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
