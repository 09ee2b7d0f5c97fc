"""Which hardware a claim's measured value comes from, in a few words shown beside it.

A paper's number was measured on its own hardware (a GPU for Salus, Optane for Bandana);
the suite measures on whatever the machine has. Where that choice shapes the value, the
report says it next to the value (and report.json in ``setting``): the device of a run
whose claim is the GPU's, and the drive of an on-device read measurement. A value no
hardware choice shapes (a cache simulation, a count) has no setting ("").
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from impls.harness.experiments import device_kind
from impls.harness.report.claims import BenchmarkSource, Claim
from impls.harness.report.provenance import artifact_of

CPU_NOT_GPU = "CPU run, not the paper's GPU"


def _record(benchmarks: tuple[str, ...], artifacts: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    """The first artifact record behind ``benchmarks`` ({} where none is known)."""
    for name in benchmarks:
        artifact = artifact_of(name)
        record = artifacts.get(artifact) if artifact else None
        if isinstance(record, Mapping):
            return record
    return {}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def gpu_name(record: Mapping[str, Any]) -> str:
    """The GPU a record's run used: its ``data.device_name`` where that is a CUDA device's
    name (e.g. "cuda:0 NVIDIA H100"), else the GPUs of the record's fingerprint
    (comma-separated, each once); "" where neither names one."""
    used = _mapping(record.get("data")).get("device_name")
    if isinstance(used, str) and used.startswith("cuda"):
        return used
    devices = _mapping(_mapping(record.get("fingerprint")).get("gpu")).get("devices")
    names = [str(d["name"]) for d in devices if isinstance(d, Mapping) and d.get("name")] \
        if isinstance(devices, list) else []
    return ", ".join(dict.fromkeys(names))


def gpu_text(record: Mapping[str, Any]) -> str:
    """"CUDA run (<GPU>)" (:func:`gpu_name`), "CUDA run" where no GPU is named."""
    name = gpu_name(record)
    return f"CUDA run ({name})" if name else "CUDA run"


def _compared_runs(claim: Claim, record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The two runs a claim's ratio compares: its measured point's ``comparison`` parameter
    ("<a>/<b>") looked up by name in the record's ``data.runs``; [] where the claim reads no
    such parameter or either run is not there."""
    point = claim.measured.point if isinstance(claim.measured, BenchmarkSource) else None
    comparison = point.params.get("comparison") if point is not None else None
    runs = _mapping(record.get("data")).get("runs")
    if not isinstance(comparison, str) or comparison.count("/") != 1 or not isinstance(runs, list):
        return []
    by_name = {r.get("name"): r for r in runs if isinstance(r, Mapping)}
    found = [by_name.get(name) for name in comparison.split("/")]
    return found if all(found) else []


def mixed_devices_text(claim: Claim, record: Mapping[str, Any]) -> str:
    """"<run> on CUDA (<GPU>) against <run> on the CPU" where the claim's ratio sets a run on
    a CUDA device against one on the CPU (SLIDE on the CPU against dense on a GPU, as the
    paper set SLIDE against TF-GPU); "" otherwise."""
    runs = _compared_runs(claim, record)
    kinds = [device_kind(r.get("device") or None) for r in runs]
    if sorted(kinds) != ["cpu", "cuda"]:
        return ""               # not one of each (both on one device, another device, not known)
    cuda, cpu = (runs[0], runs[1]) if kinds[0] == "cuda" else (runs[1], runs[0])
    used = cuda.get("device_name")      # the run's own GPU (e.g. "NVIDIA H100 80GB HBM3"), where recorded
    name = used if isinstance(used, str) and used and used != "cpu" else gpu_name(record)
    return f"{cuda['name']} on CUDA{f' ({name})' if name else ''} against {cpu['name']} on the CPU"


def drive_words(device: Any, filesystem: Any = None, rotational: Any = None) -> str:
    """"<device> (<filesystem>, rotational | solid-state)", each part left out where not
    known ("" without a device name)."""
    if not device or not isinstance(device, str):
        return ""
    said = [str(filesystem)] if filesystem and filesystem != "unknown" else []
    said += [] if rotational is None else ["rotational" if rotational else "solid-state"]
    return device + (f" ({', '.join(said)})" if said else "")


def drive_text(record: Mapping[str, Any]) -> str:
    """"drive <device> (<filesystem>, rotational | solid-state)" the record's reads went to:
    its ``data.store`` (the replay's block store) where it names a device, else its
    fingerprint's NVM target; whether the drive spins is the kernel's word for the NVM
    target's device, told only where the store is on that device. "" where none is named."""
    store = _mapping(_mapping(record.get("data")).get("store"))
    target = _mapping(_mapping(record.get("fingerprint")).get("nvm_target"))
    device = store.get("device") or target.get("device")
    filesystem = store.get("filesystem") if store.get("device") else target.get("filesystem")
    words = drive_words(device, filesystem, target.get("rotational") if target.get("device") == device else None)
    return f"drive {words}" if words else ""


def measured_on(claim: Claim, note: str, benchmarks: tuple[str, ...],
                artifacts: Mapping[str, Mapping[str, Any]]) -> str:
    """The setting of ``claim``'s value: for a claim of the GPU (a CUDA twin, ``measured_cuda``,
    or one that requires ``cuda``) "CUDA run (<GPU>)", or :func:`mixed_devices_text` where its
    ratio sets a CUDA run against a CPU run, or :data:`CPU_NOT_GPU` (``note``: which run the
    verdict read, ``verdicts._on_the_papers_device``'s); for one that requires ``o_direct``
    (reads from a drive) :func:`drive_text`; else ""."""
    record = _record(benchmarks, artifacts)
    if note.startswith("CPU run"):
        return CPU_NOT_GPU
    if note.startswith("CUDA run") or "cuda" in claim.requires:
        return mixed_devices_text(claim, record) or gpu_text(record)
    if "o_direct" in claim.requires:
        return drive_text(record)
    return ""
