"""Environment fingerprint: the machine state recorded beside every result.

``fingerprint()`` returns a JSON-able dict; ``python -m impls.harness.fingerprint``
prints it as a table followed by what this machine can and cannot run.
"""
from __future__ import annotations

import datetime as dt
import functools
import importlib.metadata
import json
import os
import platform
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from impls.harness import capabilities, cli, paths, thread_pools
from impls.harness.memory_limit import memory_limit
from impls.harness.profiles import current_profile

PACKAGES = ("numpy", "numba", "torch", "faiss-cpu", "asv", "pandas", "seaborn",
            "matplotlib", "tqdm", "nvidia-ml-py", "dlsysbench")


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cpu_model(cpuinfo: str) -> str:
    """The CPU's name: ``/proc/cpuinfo``'s "model name", else (ARM) its "Model", "Hardware" or
    "CPU part", else what :mod:`platform` says; "unknown" when nothing names it."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if value.strip():
            fields.setdefault(key.strip(), value.strip())
    machine = platform.machine()
    for key in ("model name", "Model", "Hardware"):
        if fields.get(key):
            return fields[key]
    if fields.get("CPU part"):
        return f"{machine or 'CPU'} (CPU part {fields['CPU part']})"
    return platform.processor() or machine or "unknown"


def host_info() -> dict:
    """Return CPU model, logical/physical cores, the CPUs usable here (``cores_usable``:
    affinity capped by the cgroup quota, :func:`capabilities.effective_cpus`) and the quota in
    CPUs (``cpu_quota``, None when none is set), RAM (bytes), the cgroup memory limit on this
    process (``memory_limit``, bytes, :func:`~impls.harness.memory_limit.memory_limit`; None
    when none is set), OS, kernel and Python."""
    physical = set()
    cpuinfo = _read("/proc/cpuinfo") or ""
    physical_id = "0"
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "physical id":
            physical_id = value
        elif key == "core id":
            physical.add((physical_id, value))
    ram_bytes = None
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            ram_bytes = int(line.split()[1]) * 1024
    quota = capabilities.cpu_quota()
    return {
        "cpu_model": _cpu_model(cpuinfo),
        "cores_logical": os.cpu_count(),
        "cores_physical": len(physical) or None,
        "cores_usable": capabilities.effective_cpus(),
        "cpu_quota": None if quota is None else round(quota, 3),
        "ram_bytes": ram_bytes,
        "memory_limit": memory_limit(),
        "os": platform.platform(),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
    }


def _block_queue(device: str) -> dict:
    """Return rotational flag and block sizes for ``/dev/<device>`` (a partition uses its disk)."""
    name = Path(device).name
    base = Path("/sys/class/block") / name
    queue = base / "queue"
    if not queue.is_dir() and (base / "partition").exists():
        queue = base.resolve().parent / "queue"

    def number(file: str) -> int | None:
        text = _read(str(queue / file))
        return int(text) if text and text.isdigit() else None

    rotational = number("rotational")
    return {
        "rotational": None if rotational is None else bool(rotational),
        "logical_block_size": number("logical_block_size"),
        "physical_block_size": number("physical_block_size"),
    }


RAW_DEVICE = "raw block device"   # the "filesystem" of a block-device target: none, read raw


def nvm_target_info(target: Path | None = None) -> dict:
    """Return filesystem, device, rotational, block sizes (bytes) and free bytes of the NVM target
    (each unknown, None or "", with ``error`` saying why, when DLSYSBENCH_NVM_PATH cannot be
    expanded: the capabilities then say so per experiment). A file's are those of the mount
    holding it; a block device's its own (``filesystem`` :data:`RAW_DEVICE`)."""
    try:
        target = Path(target or paths.nvm_target_path())
    except ValueError as err:                     # '~nosuchuser/x'
        return {"path": os.environ.get("DLSYSBENCH_NVM_PATH", ""), "from_env": True, "exists": False,
                "filesystem": "unknown", "mount_point": None, "device": "", "block_device": False,
                "rotational": None, "logical_block_size": None, "physical_block_size": None,
                "free_bytes": None, "error": str(err)}
    raw = capabilities.is_device_target(target)   # read raw: the device itself, not /dev's mount
    mount = {} if raw else capabilities.mount_of(target) or {}
    source = os.path.realpath(target) if raw else mount.get("source", "")
    info = {
        "path": str(target),
        "from_env": "DLSYSBENCH_NVM_PATH" in os.environ,
        "exists": target.exists(),
        "filesystem": RAW_DEVICE if raw else mount.get("fstype", "unknown"),
        "mount_point": mount.get("mount_point"),
        "device": source, "block_device": raw,
        "rotational": None, "logical_block_size": None, "physical_block_size": None,
    }
    if source.startswith("/dev/"):
        info.update(_block_queue(os.path.realpath(source)))
    probe = target if target.exists() else next((p for p in target.parents if p.exists()), Path("/"))
    info["free_bytes"] = shutil.disk_usage(probe).free
    return info


def _hidden_note(torch_cuda_build: str | None, torch_imported: bool, torch_said: str = "") -> str:
    """Why a GPU NVML lists is not one this process's torch can use: torch itself (missing, a
    CPU-only build, or its own warning, e.g. a driver older than its CUDA) before
    ``CUDA_VISIBLE_DEVICES``, which hides a device only from a CUDA torch that can start."""
    if not torch_imported:
        return "not usable: torch does not import"
    if not torch_cuda_build:
        return "not usable: torch is a CPU-only build"
    if torch_said:
        return f"not usable: {torch_said}"
    visible = capabilities.cuda_visible_devices()
    return f"hidden by CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else "not visible to torch"


def gpu_info() -> dict:
    """Return GPU model(s) and memory (bytes), driver and CUDA version, via torch and NVML.

    ``available`` is True only when torch can use a device (``device_count() > 0``); a
    failing device query leaves it False. ``devices`` are torch's devices, else NVML's, each
    of those marked ``"visible": False`` with why in its name (e.g. "hidden by
    CUDA_VISIBLE_DEVICES=''"): present on the machine, not usable by this run."""
    info: dict = {"available": False, "devices": [], "driver": None, "cuda_version": None,
                  "torch_cuda_build": None}
    torch_imported, torch_said = False, ""
    try:
        import torch

        torch_imported = True
        info["torch_cuda_build"] = torch.version.cuda
        available, torch_said = capabilities.cuda_is_available(torch)
        if available and torch.cuda.device_count() > 0:
            devices = []
            for index in range(torch.cuda.device_count()):
                props = torch.cuda.get_device_properties(index)
                devices.append({"name": props.name, "memory_bytes": props.total_memory})
            info.update(available=True, cuda_version=torch.version.cuda, devices=devices)
    except Exception:  # noqa: BLE001 - no torch, or a driver refusing the query: no usable device
        pass
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            info["driver"] = pynvml.nvmlSystemGetDriverVersion()
            if not info["devices"]:
                note = _hidden_note(info["torch_cuda_build"], torch_imported, torch_said)
                for index in range(pynvml.nvmlDeviceGetCount()):
                    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                    info["devices"].append({
                        "name": f"{pynvml.nvmlDeviceGetName(handle)} ({note})",
                        "memory_bytes": pynvml.nvmlDeviceGetMemoryInfo(handle).total,
                        "visible": False,
                    })
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML raises its own error classes, or is absent
        pass
    return info


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@functools.cache
def fingerprint() -> dict:
    """Return the environment fingerprint (JSON-able; sizes in bytes; ``threads``: the thread
    variables and pool sizes, :func:`~impls.harness.thread_pools.thread_settings`)."""
    return {
        "machine": paths.machine_name(),
        "commit": paths.git_commit(),
        "profile": current_profile(),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "host": host_info(),
        "nvm_target": nvm_target_info(),
        "gpu": gpu_info(),
        "threads": thread_pools.thread_settings(),   # after gpu_info, which imports torch
        "packages": package_versions(),
        "capabilities": {name: c.to_dict() for name, c in capabilities.detect().items()},
    }


def runs_here(caps: dict) -> list[tuple[str, str, str | None]]:
    """``(experiment, device, reason)`` for every experiment of the catalogue on each device it
    accepts: :func:`impls.harness.commands.device_verdicts` (what ``python -m impls list`` and
    ``run`` say), with the capabilities read from ``caps`` (a fingerprint's ``{name:
    {"available", "reason", ...}}``) instead of checked again."""
    from impls.harness.commands import device_verdicts

    def missing(*needs: str) -> str | None:
        lacking = [caps.get(need, {}).get("reason") or f"{need} was not checked"
                   for need in needs if not caps.get(need, {}).get("available")]
        return lacking[0] if lacking else None

    return [(name, device, reason) for name, devices in device_verdicts(missing).items()
            for device, reason in devices.items()]


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _shown(value) -> str:
    """A table cell: "?" for a value not known (None)."""
    return "?" if value is None else str(value)


def quota_text(quota: object) -> str:
    """" (cgroup quota 1.5 CPUs)" for a recorded cgroup CPU quota (a number of CPUs), "" for
    none or anything that is not a number."""
    if not isinstance(quota, (int, float)) or isinstance(quota, bool):
        return ""
    return f" (cgroup quota {quota:g} CPU{'' if quota == 1 else 's'})"


def ram_text(host: Mapping, size: Callable[[object], str] | None = None) -> str:
    """E.g. "23.6 GiB (cgroup limit 2.0 GiB)": the host's RAM, with the cgroup memory limit on
    the process where it is below the RAM or the RAM is not known (a run past it is killed);
    ``size`` writes a byte count (default: doctor's, "?" where not known)."""
    size = size or _size
    ram, limit = host.get("ram_bytes"), host.get("memory_limit")
    below = isinstance(limit, int) and not isinstance(limit, bool) and not (isinstance(ram, int) and limit >= ram)
    return size(ram) + (f" (cgroup limit {size(limit)})" if below else "")


def cores_text(host: dict) -> str:
    """E.g. "16 logical, 8 physical, 2 usable (cgroup quota 1.5 CPUs)": "?" where not known."""
    return (f"{_shown(host.get('cores_logical'))} logical, {_shown(host.get('cores_physical'))} physical, "
            f"{_shown(host.get('cores_usable'))} usable{quota_text(host.get('cpu_quota'))}")


def _machine_text(fp: dict) -> str:
    """The fingerprint's machine name, with the name its runs are filed under at its profile
    (``<machine>-<profile>``, what ``make compare``, ``make report`` and ``--machine`` take)
    where that differs."""
    machine, profile = str(fp.get("machine")), fp.get("profile")
    try:
        filed = paths.machine_for_profile(machine, profile) if isinstance(profile, str) else machine
    except ValueError:
        return machine
    return machine if filed == machine else f"{machine} (its {profile} runs are filed as {filed})"


def _commit_text(fp: dict) -> str:
    """The fingerprint's commit (12 hex digits), or "unknown" with why git gives none here."""
    commit = str(fp.get("commit"))
    if commit != "unknown":
        return commit[:12]
    why = paths.git_absent_reason()
    return f"unknown (not a git checkout: {why}; runs cannot be filed under a commit)" if why else commit


def format_table(fp: dict) -> str:
    """Return the fingerprint as an aligned two-column text table plus the can/cannot list."""
    host, target, gpu = fp["host"], fp["nvm_target"], fp["gpu"]
    rows = [
        ("machine", _machine_text(fp)), ("commit", _commit_text(fp)), ("profile", fp["profile"]),
        ("CPU", _shown(host.get("cpu_model"))),
        ("cores", cores_text(host)),
        ("thread variables", thread_pools.variables_text(fp.get("threads"))),
        ("thread pools", thread_pools.pools_text(fp.get("threads"))),
        ("RAM", ram_text(host)), ("OS", host["os"]), ("Python", host["python"]),
        ("NVM target", target["path"]),
        ("  filesystem", f"{target['filesystem']} on {target['device'] or '?'}"),
        ("  rotational", _shown(target["rotational"])),
        ("  block size", f"{_shown(target['logical_block_size'])} logical / "
                         f"{_shown(target['physical_block_size'])} physical"),
        ("  free", _size(target["free_bytes"])),
        ("GPU", ", ".join(d["name"] for d in gpu["devices"]) or "none"),
        ("  driver / CUDA", f"{_shown(gpu['driver'])} / {_shown(gpu['cuda_version'])}"),
    ]
    rows += [(f"pkg {name}", version or "not installed") for name, version in fp["packages"].items()]
    width = max(len(key) for key, _ in rows)
    lines = [f"{key:<{width}}  {value}" for key, value in rows]
    lines.append("")
    lines.append("capabilities:")
    named = max((len(cap["name"]) for cap in fp["capabilities"].values()), default=0)
    for cap in fp["capabilities"].values():
        lines.append(f"  {'yes' if cap['available'] else 'no ':<3}  {cap['name']:<{named}} "
                     f"{cap['detail'] if cap['available'] else cap['reason']}")
    lines.append("")
    lines.append("what this machine can run (the experiment catalogue; python -m impls list says more):")
    try:
        rows = runs_here(fp["capabilities"])
    except ValueError as err:      # a broken catalog: the fingerprint above still stands
        return "\n".join([*lines, f"  ? the experiment catalogue does not load: {err}"])
    width = max((len(f"{name} on {device}") for name, device, _ in rows), default=0)
    for name, device, reason in rows:
        lines.append(f"  yes  {name} on {device}" if reason is None
                     else f"  no   {f'{name} on {device}':<{width}}  ({reason})")
    return "\n".join(lines)


@cli.command("make doctor")
def main(argv: list[str] | None = None) -> int:
    """Print the fingerprint (a table, or ``--json``); 0, or 2 on a bad setting."""
    import argparse

    parser = argparse.ArgumentParser(description="Print this machine's environment fingerprint.")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    try:
        fp = fingerprint()
    except ValueError as err:  # a bad DLSYSBENCH_PROFILE or DLSYSBENCH_MACHINE
        print(f"error: {err}, in make doctor", file=sys.stderr)
        return 2
    print(json.dumps(fp, indent=1) if args.json else format_table(fp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
