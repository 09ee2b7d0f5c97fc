"""Device utilisation over time: NVML on GPUs, /proc/stat on the CPU, and the executor's busy time.

- :class:`NvmlSampler`: a thread sampling NVML's busy % (``utilization.gpu``: the share of
  time *some* kernel ran, not SM occupancy) and memory used, every ``interval_s``.
  NVML missing (no driver: ``NVMLError_LibraryNotFound``, or no ``pynvml``) makes
  :func:`nvml_unavailable_reason` say why, and the sampler refuse to start; an
  ``NVMLError`` while sampling ends sampling with the reason in ``error``.
- :class:`CpuSampler`: a thread sampling the machine's CPU busy fraction from
  ``/proc/stat`` (Linux), the CPU analogue of NVML's busy %.
- :func:`busy_timeline`: the executor's lanes busy on average per time bin, from its
  iteration log (time inside iterations / bin length): above 1 when lanes overlap, on a
  GPU's streams or on host threads (``host_workers`` > 1 on the CPU).
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Sequence

import numpy as np

from impls.harness import capabilities


def busy_timeline(intervals: Iterable[Sequence[float]], t_end: float, bins: int = 50) -> dict:
    """Return {"t_s": bin centres, "busy": each bin's time inside the intervals over its length,
    summed over overlapping intervals (so above 1 when they overlap), "busy_mean": the same over
    [0, t_end]} for ``intervals`` of (start_s, end_s), clipped to [0, t_end]. ValueError naming
    the value for a ``t_end`` that is not finite and > 0, ``bins`` < 1, or an interval with an
    end that is not finite (NaN or infinite)."""
    if not (math.isfinite(t_end) and t_end > 0) or bins < 1:
        raise ValueError(f"busy_timeline needs a finite t_end > 0 and bins >= 1, got {t_end}, {bins}")
    edges = np.linspace(0.0, t_end, bins + 1)
    busy = np.zeros(bins)
    total = 0.0
    for start, end in intervals:
        start, end = float(start), float(end)
        if not (math.isfinite(start) and math.isfinite(end)):
            raise ValueError(f"busy_timeline: interval ({start}, {end}) has an end that is not finite; "
                             "expected finite seconds")
        start, end = max(0.0, start), min(t_end, end)
        if end <= start:
            continue
        total += end - start
        overlap = np.clip(np.minimum(edges[1:], end) - np.maximum(edges[:-1], start), 0.0, None)
        busy += overlap
    width = edges[1] - edges[0]
    return {"t_s": ((edges[:-1] + edges[1:]) / 2).tolist(), "busy": (busy / width).tolist(),
            "busy_mean": total / t_end}


class _Sampler:
    """Background thread calling ``self._sample()`` every ``interval_s`` seconds between start/stop.

    A sample raising one of ``self._errors`` ends sampling (no traceback, nothing re-raised):
    ``self.error`` then holds ``"<error type>: <message>"``, else it is None.
    """

    _errors: tuple[type[BaseException], ...] = ()

    def __init__(self, interval_s: float = 0.1, clock=time.perf_counter):
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.interval_s = interval_s
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self.samples: dict[str, list] = {"t_s": []}
        self.error: str | None = None

    def _sample(self) -> dict:
        raise NotImplementedError

    def _record(self) -> bool:
        """Take one sample; return False (and set ``error``) when it raised one of ``_errors``."""
        try:
            row = self._sample()
        except self._errors as err:
            self.error = f"{type(err).__name__}: {err}"
            return False
        self.samples["t_s"].append(self._clock() - self._t0)
        for key, value in row.items():
            self.samples.setdefault(key, []).append(value)
        return True

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            if not self._record():
                return

    def start(self) -> "_Sampler":
        self._t0 = self._clock()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict:
        """Stop sampling; return the samples ({"t_s": [...], <metric>: [...]}): at least one
        unless sampling failed (``error`` says why; the samples before the failure are kept)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            if not self.samples["t_s"] and self.error is None:
                self._record()  # a run shorter than one interval still gets a sample
        return self.samples

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def nvml_unavailable_reason(nvml=None) -> str | None:
    """Why NVML cannot be used, in :func:`capabilities.check_nvml`'s words (the doctor's and the
    report's), or None when it initialises and reads the driver version. ``nvml`` is the
    ``pynvml`` module (a fake one in tests); None imports it."""
    nvml_check = capabilities.check_nvml(nvml)
    return None if nvml_check.available else nvml_check.reason


class NvmlSampler(_Sampler):
    """Sample a GPU's busy % (``busy_pct``) and memory used (``memory_used_bytes``) via NVML.

    The GPU is the one with NVML UUID ``uuid`` when given (NVML numbers GPUs its own way,
    regardless of ``CUDA_VISIBLE_DEVICES``: see :func:`nvml_uuid_of_cuda_device`), else NVML's
    GPU ``index``. ``nvml`` is the ``pynvml`` module (a fake one in tests). :meth:`start`
    raises ``RuntimeError`` with the reason when NVML is unavailable or has no such GPU
    (NVML is shut down again first). An ``NVMLError`` while sampling (``NotSupported`` on a
    MIG slice) ends sampling with its reason in ``error``.
    """

    def __init__(self, index: int = 0, interval_s: float = 0.1, nvml=None, clock=time.perf_counter,
                 uuid: str | None = None):
        super().__init__(interval_s, clock)
        self.index = index
        self.uuid = uuid
        self._nvml = nvml
        self._handle = None

    def start(self):
        reason = nvml_unavailable_reason(self._nvml)
        if reason:
            raise RuntimeError(reason)
        nvml = self._nvml = self._nvml if self._nvml is not None else __import__("pynvml")
        self._errors = (nvml.NVMLError,)
        nvml.nvmlInit()
        try:
            self._handle = self._lookup()
            return super().start()
        except BaseException:
            self._handle = None
            nvml.nvmlShutdown()
            raise

    def _lookup(self):
        """NVML's handle of the GPU (by ``uuid``, else ``index``); RuntimeError when NVML has none.

        A ``GPU-`` UUID NVML does not know is tried as ``MIG-``: torch gives a MIG slice's
        UUID without a prefix, and :func:`nvml_uuid_of_cuda_device` then adds ``GPU-``."""
        nvml = self._nvml
        try:
            if not self.uuid:
                return nvml.nvmlDeviceGetHandleByIndex(self.index)
            try:
                return nvml.nvmlDeviceGetHandleByUUID(self.uuid)
            except nvml.NVMLError:
                if not self.uuid.startswith("GPU-"):
                    raise
                return nvml.nvmlDeviceGetHandleByUUID("MIG-" + self.uuid[len("GPU-"):])
        except nvml.NVMLError as err:
            raise RuntimeError(f"NVML has no GPU {self.uuid or self.index!r}: {type(err).__name__}: {err}") from None

    def _sample(self) -> dict:
        rates = self._nvml.nvmlDeviceGetUtilizationRates(self._handle)
        memory = self._nvml.nvmlDeviceGetMemoryInfo(self._handle)
        return {"busy_pct": float(rates.gpu), "memory_used_bytes": int(memory.used)}

    def stop(self) -> dict:
        try:
            return super().stop()
        finally:
            if self._handle is not None:
                self._handle = None
                self._nvml.nvmlShutdown()


def nvml_uuid_of_cuda_device(index: int, properties=None) -> str | None:
    """The NVML UUID (``GPU-...`` or ``MIG-...``) of torch's CUDA device ``index``, which counts
    only the devices ``CUDA_VISIBLE_DEVICES`` leaves, in its order; None when torch does not
    give one. ``properties`` stands in for ``torch.cuda.get_device_properties`` in tests."""
    if properties is None:
        import torch

        properties = torch.cuda.get_device_properties
    uuid = getattr(properties(index), "uuid", None)
    if not uuid:
        return None
    text = str(uuid)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


def read_proc_stat(path: str = "/proc/stat") -> tuple[int, int]:
    """Return (busy, total) jiffies of all CPUs from the first line of ``/proc/stat``."""
    with open(path) as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])
    return total - idle, total


class CpuSampler(_Sampler):
    """Sample the machine's CPU busy fraction (``busy``, 0-1 over all cores) from /proc/stat."""

    _errors = (OSError, ValueError, IndexError)

    def __init__(self, interval_s: float = 0.1, reader=read_proc_stat, clock=time.perf_counter):
        super().__init__(interval_s, clock)
        self._reader = reader
        self._last = None

    def start(self):
        self._last = self._reader()
        return super().start()

    def _sample(self) -> dict:
        busy, total = self._reader()
        last_busy, last_total = self._last
        self._last = (busy, total)
        return {"busy": (busy - last_busy) / (total - last_total) if total > last_total else 0.0}
