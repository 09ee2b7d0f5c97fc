"""The environment fingerprint as report tables: host, NVM target, GPU, capabilities, packages."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from impls.harness.fingerprint import quota_text, ram_text
from impls.harness.report.formatting import DASH, size_bytes, text
from impls.harness.report.machine_state import CapabilityState, MachineState

NOT_RECORDED = "not recorded"
UNKNOWN = "unknown"   # impls.harness.fingerprint's CPU model when the host names none

KEY_PACKAGES = ("numpy", "numba", "torch", "faiss-cpu", "pandas", "asv", "matplotlib", "seaborn",
                "nvidia-ml-py", "tqdm")


@dataclasses.dataclass(frozen=True)
class Table:
    """A titled table of text cells; ``header`` names the columns."""

    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]]


def _pairs(title: str, pairs: list[tuple[str, Any]]) -> Table:
    return Table(title, ("", ""), [(key, text(value)) for key, value in pairs])


def _quota(host: Mapping[str, Any]) -> str:
    return quota_text(host.get("cpu_quota"))


def _host(host: Mapping[str, Any]) -> Table:
    cores = f"{text(host.get('cores_logical'))} logical / {text(host.get('cores_physical'))} physical"
    if host.get("cores_usable"):
        cores += f" / {host['cores_usable']} usable{_quota(host)}"
    return _pairs("Host", [
        ("CPU", host.get("cpu_model")), ("cores", cores), ("RAM", ram_text(host, size_bytes)),
        ("OS", host.get("os")), ("kernel", host.get("kernel")), ("Python", host.get("python")),
    ])


def _replay_store(nvm: Mapping[str, Any], refused: CapabilityState | None) -> str:
    """Where Bandana's replay writes its store, by the rule of its ``store_location``: beside a
    file target; in ``DLSYSBENCH_CACHE`` when the target is a block device (the fingerprint's
    ``block_device``; older fingerprints: a name in /dev/), which the suite only reads; nowhere
    when ``refused``, the check the replay failed (O_DIRECT, or its store's folder), is given."""
    if refused is not None:
        return f"none: the replay does not run here ({refused.reason})"
    path = str(nvm.get("path") or "")
    if nvm.get("block_device", PurePosixPath(path).parent == PurePosixPath("/dev")):
        return ("not on this device: a block device is only read, so the replay writes its store to a file "
                "in DLSYSBENCH_CACHE, on whatever drive holds that (the replay figure names it)")
    return "a file beside this one, on the same filesystem"


def _nvm(nvm: Mapping[str, Any], replay_refused: CapabilityState | None = None) -> Table:
    blocks = f"{text(nvm.get('logical_block_size'))} / {text(nvm.get('physical_block_size'))} B"
    # the file the suite reads as its NVM; what device holds it is in the rows (the paper's was Optane)
    return _pairs("NVM target (the block device read in the paper's NVM's place)", [
        ("path", nvm.get("path")), ("filesystem", nvm.get("filesystem")), ("device", nvm.get("device")),
        ("rotational (as the kernel reports it; a virtual disk may say yes)", nvm.get("rotational")),
        ("block size (logical / physical)", blocks),
        ("free", size_bytes(nvm.get("free_bytes"))),
        ("the trace replay's store (bandana.replay)", _replay_store(nvm, replay_refused)),
    ])


def _gpu_devices(gpu: Mapping[str, Any]) -> list[str]:
    """Each recorded GPU as "name (memory)"."""
    return [f"{d.get('name', '?')} ({size_bytes(d.get('memory_bytes'))})"
            for d in gpu.get("devices") or [] if isinstance(d, Mapping)]


def _gpu(gpu: Mapping[str, Any]) -> Table:
    devices = _gpu_devices(gpu)
    return _pairs("GPU", [
        ("available", gpu.get("available")), ("devices", devices or None),
        ("driver", gpu.get("driver")), ("CUDA", gpu.get("cuda_version")),
    ])


def _capabilities(state: MachineState) -> Table:
    rows = [(c.name, "yes" if c.available else "no", c.detail if c.available else c.reason)
            for c in state.capabilities.values()]
    return Table("Capabilities", ("capability", "available", "detail / reason missing"), rows)


def _packages(packages: Mapping[str, Any]) -> Table:
    # The fingerprint records the suite's key packages; list those first, then any others.
    chosen = [n for n in KEY_PACKAGES if n in packages] + sorted(set(packages) - set(KEY_PACKAGES))
    return Table("Packages", ("package", "version"),
                 [(n, text(packages[n]) if packages[n] else "not installed") for n in chosen])


def _grid(runs: Any) -> Table | None:
    """Where each experiment's grid points ran: ``runs`` is ``impls.harness.grid.runs()``
    (a list of records) or a mapping experiment -> that list or a ``where`` string."""
    rows = []
    items = runs.items() if isinstance(runs, Mapping) else [("", runs)]
    for experiment, value in items:
        records = value if isinstance(value, list) else [{"where": value}]
        for r in records:
            if not isinstance(r, Mapping):
                continue
            points = (f"{r['points']} ({r.get('computed', '?')} computed, {r.get('reused', 0)} kept)"
                      if "points" in r else "")
            scattered = (f"{size_bytes(r['scattered_bytes'])} in {r.get('scatter_seconds', 0):.1f} s"
                         if r.get("scattered_bytes") else "")
            rows.append((text(experiment), text(r.get("label", "")), text(r.get("where")), points,
                         scattered))
    if not rows:
        return None
    return Table("Where grid points ran", ("experiment", "grid", "where", "points", "arrays sent"),
                 rows)


def environment_tables(state: MachineState, machine_json: Mapping[str, Any]) -> list[Table]:
    """Return the fingerprint's tables, or asv's machine.json as one table when there is no fingerprint."""
    fp = state.fingerprint
    if not fp:
        keys = [k for k in ("machine", "arch", "cpu", "num_cpu", "os", "ram") if k in machine_json]
        return [_pairs("Machine (asv machine.json; no fingerprint recorded)",
                       [(k, machine_json[k]) for k in keys])] if keys else []
    tables = [_pairs("Recorded", [
        ("machine", fp.get("machine") or state.machine), ("commit", str(fp.get("commit") or "")[:12]),
        ("profile", fp.get("profile")), ("created", fp.get("created")), ("source", state.source),
    ])]
    checks = [state.capabilities.get(name) for name in ("o_direct", "replay_store")]   # what the replay requires
    refused = next((c for c in checks if c is not None and not c.available), None)   # older records: o_direct alone
    nvm = functools.partial(_nvm, replay_refused=refused)
    for key, build in (("host", _host), ("nvm_target", nvm), ("gpu", _gpu)):
        if isinstance(fp.get(key), Mapping):
            tables.append(build(fp[key]))
    if state.capabilities:
        tables.append(_capabilities(state))
    grid = _grid(fp.get("grid")) if fp.get("grid") else None
    if grid is not None:
        tables.append(grid)
    if isinstance(fp.get("packages"), Mapping) and fp["packages"]:
        tables.append(_packages(fp["packages"]))
    return tables


def hardware(state: MachineState, machine_json: Mapping[str, Any]) -> dict[str, str]:
    """Return the machine's ``cores`` ("8 logical"), ``usable`` (only where fewer were usable
    or a quota was set: "2 (cgroup quota 1.5 CPUs)"), ``cpu`` (model) and ``gpu`` (device
    names, or "no GPU") as text, from the fingerprint, else (as :func:`environment_tables`
    does) from asv's machine.json; each is :data:`NOT_RECORDED` where neither says (a value
    of "unknown", the fingerprint's when it found no CPU model, says nothing). GPUs recorded
    while the run could use none (``available`` false) are named with "not visible to the
    run" unless their names say why."""
    def known(value: Any) -> str | None:
        shown = text(value)
        return shown if shown != DASH and shown.strip().lower() != UNKNOWN else None

    fp = state.fingerprint
    usable = None
    if fp:
        host = fp.get("host") if isinstance(fp.get("host"), Mapping) else {}
        cores, cpu = known(host.get("cores_logical")), known(host.get("cpu_model"))
        usable = known(host.get("cores_usable"))
        usable = f"{usable}{_quota(host)}" if usable is not None and (usable != cores or _quota(host)) else None
    else:
        cores, cpu = known(machine_json.get("num_cpu")), known(machine_json.get("cpu"))
    gpu = fp.get("gpu") if fp and isinstance(fp.get("gpu"), Mapping) else None
    if gpu is None:
        gpus = None
    else:
        gpus = known(_gpu_devices(gpu)) or {"no": "no GPU", "yes": "a GPU (not named)"}.get(text(gpu.get("available")))
        hidden_unsaid = (gpu.get("available") is False and gpus and gpus != "no GPU"
                         and not any(isinstance(d, Mapping) and d.get("visible") is False
                                     for d in gpu.get("devices") or []))
        if hidden_unsaid:       # recorded before the fingerprint said why (NVML saw it, torch did not)
            gpus = f"{gpus}, not visible to the run"
    found = {"cores": f"{cores} logical" if cores else NOT_RECORDED, "cpu": cpu or NOT_RECORDED,
             "gpu": gpus or NOT_RECORDED}
    if usable is not None:
        found["usable"] = usable
    return found
