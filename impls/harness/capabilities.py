"""What this machine can run: fio, O_DIRECT on the NVM target, a place for the trace replay's
store, CUDA, NVML; and how many CPUs this process may use (:func:`effective_cpus`: affinity
and cgroup CPU quota).

Longer than 400 lines: one short check per capability, each with the reasons a user reads
when it is missing; they are the one table of what the machine has.

Each check returns a :class:`Capability` with the reason when it is missing.
Benchmarks call :func:`require` in ``setup``; it raises ``NotImplementedError``,
which asv records as a skip, so nothing is ever faked on a machine that lacks it.
"""
from __future__ import annotations

import dataclasses
import errno
import functools
import mmap
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from impls.harness import nvm_file, paths, torch_build
from impls.harness.mounts import (MEMORY_FILESYSTEMS, filesystem_type, is_device_target,  # noqa: F401 - callers
                                   memory_block_device, memory_filesystem, mount_of, special_kind)
from impls.harness.cpus import cpu_quota, effective_cpus  # noqa: F401 - asked for here by the suite

ALIGNMENT = 4096
CPU_ONLY_TORCH = "needs CUDA: torch is a CPU-only build (install a CUDA build of torch)"
NO_NVIDIA_GPU = "needs CUDA: no NVIDIA GPU found on this machine (torch here is also a CPU-only build)"
_NVIDIA_DEVICE = re.compile(r"nvidia\d+")


@dataclasses.dataclass(frozen=True)
class Capability:
    name: str
    available: bool
    reason: str  # why it is missing ("" when available)
    detail: str = ""  # version, device, ... when available

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# fio 3.0 is the first to report latencies in nanoseconds (clat_ns), which the JSON parser reads
FIO_MIN_MAJOR = 3
_FIO_VERSION = re.compile(r"fio-(\d+)\.(\d+)")


def fio_version_tuple(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a ``fio --version`` line (``fio-3.28``, ``fio-3.36-12-gabc``), or
    None when it names no version this can read."""
    found = _FIO_VERSION.search(version or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def check_fio() -> Capability:
    """fio on PATH that runs and is 3.0 or newer; one whose version cannot be read is taken
    as usable, its detail saying the version is unknown."""
    exe = shutil.which("fio")
    if exe is None:
        return Capability("fio", False, "fio is not installed (Debian: apt-get install fio)")
    try:
        version = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as err:
        return Capability("fio", False, f"fio at {exe} does not run: {err}")
    parsed = fio_version_tuple(version)
    shown = " ".join(version.split()) or "no version"
    if parsed is None:
        return Capability("fio", True, "", f"{shown} at {exe} (version unknown: expected fio-MAJOR.MINOR)")
    if parsed[0] < FIO_MIN_MAJOR:
        return Capability("fio", False, f"fio at {exe} is {shown}; the suite needs fio {FIO_MIN_MAJOR}.0 or newer "
                          "(its JSON reports latencies in ns from 3.0 on): install a newer fio")
    return Capability("fio", True, "", version)


def _direct_read_works(fd: int) -> None:
    buffer = mmap.mmap(-1, ALIGNMENT)  # page-aligned, as O_DIRECT needs
    try:
        os.preadv(fd, [buffer], 0)
    finally:
        buffer.close()


def _bytes_text(n: int) -> str:
    """``n`` bytes in words: "16 MiB", "1 GiB", "1.5 KiB", "512 bytes"."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n} bytes"


def check_o_direct(target: Path | None = None, setting: str = "DLSYSBENCH_NVM_PATH", size_bytes: int = 0,
                   sized_by: str = "the fio sweep") -> Capability:
    """Check that aligned ``O_DIRECT`` reads from a drive work where the NVM target lives
    (``target``, default: :func:`paths.nvm_target_path`); a refusal's reason tells the user
    to point ``setting`` (what chose ``target``) at a disk. A target that is ready (a block
    device, or a file holding the suite's content and at least ``size_bytes`` long: what
    ``sized_by`` reads of it) is probed by reading one aligned block of it, read-only, so it
    passes on a read-only filesystem; one still to be written (a suite file shorter than
    ``size_bytes`` included: it is rewritten), by a temporary file in its nearest existing
    directory (refused as a "read-only filesystem", or as a directory this user cannot write,
    where that cannot be created). A ready target's detail notes when its directory is
    read-only for this user. Refused, without probing: a directory, another special file
    (a character device, a FIFO: neither a regular file nor a block device), a file the
    suite must not overwrite, a target in memory (a RAM disk, zram or loop device over a file
    in memory, or a file on tmpfs or on a filesystem mounted from such a device:
    :func:`mounts.memory_filesystem`), and a ``DLSYSBENCH_NVM_PATH`` that cannot be expanded
    (``~nosuchuser/x``). With ``size_bytes``, as ``run`` refuses them: a block device holding fewer
    bytes, a file to write whose filesystem lacks them (:func:`nvm_file.space_shortfall`). Never raises."""
    if target is None:
        try:
            target = paths.nvm_target_path()
        except ValueError as err:           # ~nosuchuser: said per experiment, as `run` says it
            return Capability("o_direct", False, str(err))
    target = Path(target)
    if not hasattr(os, "O_DIRECT"):
        return Capability("o_direct", False, "this OS has no O_DIRECT")
    try:
        target = target.resolve() if target.is_symlink() else target  # where the reads will go
    except (OSError, RuntimeError) as err:  # a symlink loop
        return Capability("o_direct", False, f"DLSYSBENCH_NVM_PATH={target}: {err}")
    try:
        is_device = target.exists() and stat.S_ISBLK(target.stat().st_mode)
        if is_device:  # a device node lives on devtmpfs; its reads reach the drive all the same
            memory = memory_block_device(target)
            if memory:
                return Capability("o_direct", False, f"block device {target} {memory}: no read would reach "
                                  f"a drive; point {setting} at a disk")
            fd = os.open(target, os.O_RDONLY | os.O_DIRECT)
            try:
                _direct_read_works(fd)
            finally:
                os.close(fd)
            held = nvm_file.device_bytes(target) if size_bytes else 0
            if held < size_bytes:       # `run` refuses it in the same words (prepare_target)
                return Capability("o_direct", False, f"block device {target} holds {held} bytes, fewer than the "
                                  f"{size_bytes} bytes {sized_by} reads; point {setting} at a larger device or a "
                                  "file on a disk, or run a smaller profile")
            return Capability("o_direct", True, "", f"block device {target}")
    except OSError as err:
        return Capability("o_direct", False, f"O_DIRECT read of block device {target} failed: {err}")
    if target.is_dir():
        return Capability("o_direct", False, f"DLSYSBENCH_NVM_PATH={target} is a directory; expected a file "
                          "(created if missing) or a block device")
    special = special_kind(target)
    if special:                 # /dev/null, a FIFO: no drive behind it, whatever filesystem holds its name
        return Capability("o_direct", False, f"{setting}={target} is {special}, neither a regular file nor a "
                          "block device; expected a file on the drive to measure (created if missing), or a "
                          "block device")
    if nvm_file.is_foreign(target):
        return Capability("o_direct", False, f"DLSYSBENCH_NVM_PATH={nvm_file.foreign_reason(target)}")
    fs = filesystem_type(target)
    memory = memory_filesystem(target)    # tmpfs, or a filesystem on a RAM disk / a loop over one
    if memory:
        return Capability("o_direct", False, f"{target.parent} {memory}: no read would "
                          f"reach a drive; point {setting} at a disk")
    missing = paths.missing_directory_reason(target, setting)
    if missing:                 # `run` refuses it too: never probe the drive above it
        return Capability("o_direct", False, missing)
    ready, short = nvm_file.is_ready(target, size_bytes), ""
    if not ready and nvm_file.is_suite_file(target):   # too short: rewritten beside itself, probed as such
        try:
            short = (f" ({target.name} holds {_bytes_text(target.stat().st_size)}, less than the "
                     f"{_bytes_text(size_bytes)} {sized_by} reads, so it is written again)")
        except OSError:     # gone since it was read: written as a missing one is
            short = ""
    if ready:   # read it where it lies, write nothing
        try:
            fd = os.open(target, os.O_RDONLY | os.O_DIRECT)
            try:
                _direct_read_works(fd)
            finally:
                os.close(fd)
        except OSError as err:
            why = (f"the filesystem at {target.parent} ({fs}) refuses O_DIRECT" if err.errno == errno.EINVAL
                   else f"O_DIRECT read of {target} ({fs}) failed: {err}")
            return Capability("o_direct", False, why + f"; point {setting} at a disk")
        return Capability("o_direct", True, "", f"{fs} at {target.parent}" + _read_only_note(target.parent))
    try:
        # probe where the file will be created: its nearest existing directory (creates none)
        directory = next(p for p in target.parents if p.is_dir())
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".odirect-probe-") as probe:
            probe.write(b"\0" * ALIGNMENT)
            probe.flush()
            fd = os.open(probe.name, os.O_RDONLY | os.O_DIRECT)
            try:
                _direct_read_works(fd)
            finally:
                os.close(fd)
    except OSError as err:
        if err.errno == errno.EINVAL:
            why = f"the filesystem at {target.parent} ({fs}) refuses O_DIRECT"
        elif err.errno == errno.EROFS:
            why = f"{directory} is on a read-only filesystem ({fs}), where {target.name} would be written{short}"
        elif err.errno in (errno.EACCES, errno.EPERM):      # the drive may be fine: the folder is not ours
            return Capability("o_direct", False, f"this user cannot write in {directory} ({fs}): {err.strerror}"
                              f"{short}; point {setting} at a file in a directory this user can write, on a disk")
        else:
            why = f"O_DIRECT probe at {target.parent} ({fs}) failed: {err}"
        return Capability("o_direct", False, why + f"; point {setting} at a disk")
    shortfall = nvm_file.space_shortfall(target, size_bytes) if size_bytes else None
    if shortfall:               # `run` refuses it in the same words before writing (prepare_target)
        return Capability("o_direct", False, f"{shortfall}{short}, for {sized_by}; point {setting} at a disk "
                          "with more free space, or run a smaller profile")
    return Capability("o_direct", True, "", f"{fs} at {target.parent}{short}")


def profile_target_bytes() -> tuple[str, int] | None:
    """``(profile, bytes)``: the current profile (``DLSYSBENCH_PROFILE``) and the bytes its fio
    sweep reads of the NVM target (:func:`nvm_file.profile_bytes`); None when the profile or
    its table cannot be read (``run`` refuses those in their own words)."""
    from impls.harness import profiles

    try:
        profile = profiles.current_profile()
        return profile, nvm_file.profile_bytes(profile)
    except (ValueError, KeyError, OSError):
        return None


def check_nvm_target() -> Capability:
    """:func:`check_o_direct` of the NVM target at the size the current profile's fio sweep
    reads (:func:`profile_target_bytes`): a suite file shorter than that is rewritten by the
    sweep, so it is checked as one still to be written (in a folder this user cannot write:
    refused, as ``run`` would fail there)."""
    sized = profile_target_bytes()
    if sized is None:
        return check_o_direct()
    profile, size = sized
    return check_o_direct(size_bytes=size, sized_by=f"the {profile} profile's fio sweep")


def check_replay_store() -> Capability:
    """Whether the trace replay (``bandana.replay``) can write its block store where it goes
    (:func:`nvm_file.store_location`: beside the NVM target file, or in ``DLSYSBENCH_CACHE``
    when the target is a block device, which the suite only reads), by the replay's own check
    before it writes (``block_store.check_target``: :func:`check_o_direct` of a probe file
    there, naming the variable that chose it), so a refusal is the one ``run`` would give. A
    ready NVM target in a folder this user cannot write passes ``o_direct`` (fio only reads
    it) and is refused here; so is an NVM path that is no file or cannot be expanded
    (``~nosuchuser/x``). Never an exception."""
    try:
        directory, chosen = nvm_file.store_location()
        where = "the NVM target is only read" if nvm_file.nvm_target()[1] else "beside the NVM target"
    except ValueError as err:
        return Capability("replay_store", False, str(err))
    probe = check_o_direct(directory / ".store-probe", chosen)
    if not probe.available:
        return Capability("replay_store", False, probe.reason)
    return Capability("replay_store", True, "", f"{probe.detail} ({where}; {chosen})")


def _read_only_note(directory: Path) -> str:
    """" (read-only for this user: ...)" when this user cannot create files in ``directory``
    (permissions, or a read-only filesystem), else "": a ready target is only read, but the
    replay writes its store beside it."""
    if os.access(directory, os.W_OK | os.X_OK):
        return ""
    return " (read-only for this user: the replay cannot write its store beside the target)"


def _one_line(err: BaseException) -> str:
    return f"{type(err).__name__}: {' '.join(str(err).split())}"


def cuda_visible_devices() -> str | None:
    """``CUDA_VISIBLE_DEVICES`` as set (``""`` hides every GPU), or None when unset."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def nvidia_gpu_seen(dev: Path = Path("/dev"), proc: Path = Path("/proc/driver/nvidia/gpus"), nvml=None) -> bool:
    """True when the machine shows an NVIDIA GPU: a ``/dev/nvidia<N>`` device node, WSL's
    ``/dev/dxg``, an entry of the driver's ``/proc`` list, or a device NVML counts (``nvml``:
    the ``pynvml`` module to ask, None imports it). False where none of them shows one."""
    try:
        if any(_NVIDIA_DEVICE.fullmatch(entry.name) or entry.name == "dxg" for entry in dev.iterdir()):
            return True
    except OSError:
        pass
    try:
        if any(True for _ in proc.iterdir()):
            return True
    except OSError:
        pass
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
        try:
            return nvml.nvmlDeviceGetCount() > 0
        finally:
            nvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML, no driver: it shows no GPU
        return False


def _cpu_only_reason() -> str:
    """Why a CPU-only torch has no CUDA: the build, with the advice to install a CUDA one,
    where the machine shows an NVIDIA GPU; else the missing GPU, which no install cures."""
    return CPU_ONLY_TORCH if nvidia_gpu_seen() else NO_NVIDIA_GPU


def check_cuda() -> Capability:
    """A CUDA device torch can use: available with ``device_count() > 0`` and a name that
    can be read. Any error of that query is a missing capability with its one-line reason,
    never an exception; the reason (or the detail) names ``CUDA_VISIBLE_DEVICES`` when set and
    it could be the cause (not for a CPU-only torch), which is told from torch's version
    file alone where torch is not imported yet (:func:`torch_build.cpu_only_build`). For a
    CPU-only torch the reason advises a CUDA build only where the machine shows an NVIDIA GPU
    (:func:`nvidia_gpu_seen`); elsewhere it says there is none. Where torch warns while
    finding no device (a driver older than its CUDA), the reason is torch's warning, not the
    variable; a device torch has no kernels for (:func:`runs_kernels_of`) is missing too."""
    if "torch" not in sys.modules and torch_build.cpu_only_build():
        return Capability("cuda", False, _cpu_only_reason())
    try:
        import torch
    except ImportError as err:
        return Capability("cuda", False, f"torch does not import: {err}")
    visible = cuda_visible_devices()
    setting = "" if visible is None else f"CUDA_VISIBLE_DEVICES={visible!r}"
    hint = "" if visible is None else f" with {setting} (unset it, or list a GPU in it)"
    try:
        available, said = cuda_is_available(torch)
        count = torch.cuda.device_count() if available else 0
        name = torch.cuda.get_device_name(0) if count > 0 else None
        capability = torch.cuda.get_device_capability(0) if name is not None else None
        arch = list(torch.cuda.get_arch_list()) if name is not None else []
    except Exception as err:  # noqa: BLE001 - a driver or runtime refusing the query: missing, said why
        return Capability("cuda", False, f"needs CUDA: the CUDA device query failed ({_one_line(err)}){hint}")
    if name is None:
        if not torch.version.cuda:      # no setting of the variable would help: say only this
            return Capability("cuda", False, _cpu_only_reason())
        if said and not available:      # torch's words (a driver too old for its CUDA): not the variable
            return Capability("cuda", False, f"needs CUDA: torch {torch.__version__} cannot use the GPU ({said})"
                                             + (f" ({setting})" if setting else ""))
        why = "torch reports CUDA available but no device (device_count() is 0)" if available else "no CUDA device"
        return Capability("cuda", False, f"needs CUDA: {why}{hint}")
    if not runs_kernels_of(capability, arch):
        return Capability("cuda", False, f"needs CUDA: {name} (compute capability {capability[0]}.{capability[1]}) "
                                         f"is not among the GPUs torch {torch.__version__} has kernels for "
                                         f"({' '.join(arch)}): install a torch build for it")
    return Capability("cuda", True, "", name + (f" ({setting})" if setting else ""))


_CUDA_WARNING: list[str] = []     # torch's warning at the first is_available() asked here


def cuda_is_available(torch) -> tuple[bool, str]:
    """``(torch.cuda.is_available(), the warning torch gave with it, on one line, or "")``.
    torch warns once a process (a driver older than its CUDA build, say), so the first
    warning asked through here is kept and given with every later answer; every caller in
    the suite (:func:`check_cuda`, ``fingerprint.gpu_info``) asks through here."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        available = bool(torch.cuda.is_available())
    if said and not _CUDA_WARNING:
        _CUDA_WARNING.append(" ".join(str(said[0].message).split()))
    return available, (_CUDA_WARNING[0] if _CUDA_WARNING else "")


def runs_kernels_of(capability: tuple[int, int], arch: list[str]) -> bool:
    """Whether a GPU of compute ``capability`` (major, minor) runs a torch built for ``arch``
    (``torch.cuda.get_arch_list()``: ``sm_XY`` binaries, and a family's ``sm_XYf``, run on
    major X, minor >= Y; ``compute_XY`` PTX is compiled for any capability >= X.Y; an
    ``a`` suffix holds for X.Y alone). True where ``arch`` names none of those: no list, no
    verdict."""
    parsed = [m for m in (re.fullmatch(r"(sm|compute)_(\d+)(\d)([a-z]?)", a) for a in arch) if m]
    if not parsed:
        return True
    for kind, major, minor, exact in (m.groups() for m in parsed):
        built = (int(major), int(minor))
        if kind == "compute" and (built == tuple(capability) if exact == "a" else built <= tuple(capability)):
            return True
        if kind == "sm" and (built == tuple(capability) if exact == "a" else
                             built[0] == capability[0] and built[1] <= capability[1]):
            return True
    return False


def _nvml_text(err: BaseException) -> str:
    """An NVML error in words: its message (NVML's own, e.g. "Driver Not Loaded"), else its class."""
    return " ".join(str(err).split()) or type(err).__name__


def check_nvml(nvml=None) -> Capability:
    """NVML (nvidia-ml-py) initialises and reads the driver version. An ``NVMLError`` from any
    of those calls, after a successful ``nvmlInit`` too, is a missing capability ("NVML
    unavailable: <reason>"), never an exception; NVML is shut down again once initialised.
    ``nvml`` is the ``pynvml`` module to ask (a fake one in tests); None imports it."""
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:
            return Capability("nvml", False, "nvidia-ml-py is not installed")
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as err:
        return Capability("nvml", False, f"NVML unavailable: {_nvml_text(err)}")
    try:
        driver = nvml.nvmlSystemGetDriverVersion()
    except nvml.NVMLError as err:
        return Capability("nvml", False, f"NVML unavailable: {_nvml_text(err)} (reading the driver version)")
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass    # what was asked has been read; a refused shutdown changes nothing of it
    return Capability("nvml", True, "", f"driver {driver}")


def check_kahypar() -> Capability:
    """The optional ``kahypar`` package (the quality reference SHP is checked against): found
    and importing. One that is installed but fails to import (a missing shared library) is
    missing, with the import's own error as the reason. The import is tried in a child
    process on this one's import path: every artifact save checks the capabilities, and a
    native module that crashes on import must not take this process with it."""
    import importlib.util

    if importlib.util.find_spec("kahypar") is None:
        return Capability("kahypar", False, "the optional package kahypar is not installed (pip install kahypar)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        done = subprocess.run([sys.executable, "-c", "import kahypar"], capture_output=True, text=True,
                              timeout=120, env=env)
    except (OSError, subprocess.TimeoutExpired) as err:
        return Capability("kahypar", False, f"the optional package kahypar is installed but its import could "
                          f"not be tried ({_one_line(err)})")
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [""])[-1] or (
            f"killed by signal {-done.returncode}" if done.returncode < 0 else f"exit status {done.returncode}")
        return Capability("kahypar", False, f"the optional package kahypar is installed but does not import "
                          f"({' '.join(why.split())})")
    return Capability("kahypar", True, "")


def check_real_amazon670k() -> Capability:
    """The real Amazon-670K files (manifest slide-amazon670k-real; header checked, no checksum)."""
    from impls.slide.data.dataset import real_data_reason

    reason = real_data_reason("slide-amazon670k-real")
    return Capability("real_amazon670k", reason is None, reason or "")


CHECKS = {"fio": check_fio, "o_direct": check_nvm_target, "cuda": check_cuda, "nvml": check_nvml,
          "kahypar": check_kahypar, "real_amazon670k": check_real_amazon670k,
          "replay_store": check_replay_store}
# checks whose answer depends on the current profile (the size of the NVM target it reads)
BY_PROFILE = frozenset({"o_direct"})


@functools.cache
def _cached(name: str, profile: str | None = None) -> Capability:
    return CHECKS[name]()


def detect(names=tuple(CHECKS)) -> dict[str, Capability]:
    """Return every capability by name: each checked once per process, those of
    :data:`BY_PROFILE` once per profile (``run --profile`` and asv set ``DLSYSBENCH_PROFILE``)."""
    unknown = set(names) - set(CHECKS)
    if unknown:
        raise KeyError(f"unknown capabilities {sorted(unknown)}; known: {sorted(CHECKS)}")
    profile = os.environ.get("DLSYSBENCH_PROFILE", "")       # as typed: another spelling is a recheck
    return {name: _cached(name, profile if name in BY_PROFILE else None) for name in names}


def missing_reason(*names: str) -> str | None:
    """Return why the first missing capability among ``names`` is missing, or None."""
    for capability in detect(names).values():
        if not capability.available:
            return capability.reason
    return None


def require(*names: str) -> None:
    """Raise ``NotImplementedError`` (asv: skip) naming the first missing capability."""
    reason = missing_reason(*names)
    if reason is not None:
        raise NotImplementedError(reason)
