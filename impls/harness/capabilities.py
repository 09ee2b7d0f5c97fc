"""What this machine can run: fio, O_DIRECT on the NVM target, CUDA, NVML; and how many
CPUs this process may use (:func:`effective_cpus`: affinity and cgroup CPU quota).

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
from pathlib import Path

from impls.harness import nvm_file, paths
from impls.harness.cpus import cpu_quota, effective_cpus  # noqa: F401 - asked for here by the suite

ALIGNMENT = 4096
# Filesystems in memory: recent kernels accept O_DIRECT on tmpfs, but no read
# reaches a drive there, so a measurement would flatter the "NVM".
MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"}


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


def _memory_block_device(device: Path) -> str:
    """Why block device ``device`` lives in memory (zram, a RAM disk, a loop device over a file
    in memory), or "" when it does not."""
    name = Path(os.path.realpath(device)).name
    if name.startswith(("zram", "ram")):
        return "is a RAM disk"
    backing = Path("/sys/block") / name / "loop" / "backing_file"
    try:
        file = backing.read_text().strip()
    except OSError:
        return ""
    fs = filesystem_type(Path(file)) if file else "unknown"
    return f"is a loop device over {file}, on {fs}, in memory" if fs in MEMORY_FILESYSTEMS else ""


def check_o_direct(target: Path | None = None, setting: str = "DLSYSBENCH_NVM_PATH") -> Capability:
    """Check that aligned ``O_DIRECT`` reads from a drive work where the NVM target lives;
    a refusal's reason tells the user to point ``setting`` (what chose ``target``) at a disk.
    A target that is ready (a block device, or a file holding the suite's content) is probed
    by reading one aligned block of it, read-only, so it passes on a read-only filesystem; one
    still to be written, by a temporary file in its nearest existing directory (refused as a
    "read-only filesystem", or as a directory this user cannot write, where that cannot be
    created). A ready target's detail notes when its directory is read-only for this user."""
    target = Path(target or paths.nvm_target_path())
    if not hasattr(os, "O_DIRECT"):
        return Capability("o_direct", False, "this OS has no O_DIRECT")
    try:
        target = target.resolve() if target.is_symlink() else target  # where the reads will go
    except (OSError, RuntimeError) as err:  # a symlink loop
        return Capability("o_direct", False, f"DLSYSBENCH_NVM_PATH={target}: {err}")
    try:
        is_device = target.exists() and stat.S_ISBLK(target.stat().st_mode)
        if is_device:  # a device node lives on devtmpfs; its reads reach the drive all the same
            memory = _memory_block_device(target)
            if memory:
                return Capability("o_direct", False, f"block device {target} {memory}: no read would reach "
                                  f"a drive; point {setting} at a disk")
            fd = os.open(target, os.O_RDONLY | os.O_DIRECT)
            try:
                _direct_read_works(fd)
            finally:
                os.close(fd)
            return Capability("o_direct", True, "", f"block device {target}")
    except OSError as err:
        return Capability("o_direct", False, f"O_DIRECT read of block device {target} failed: {err}")
    if target.is_dir():
        return Capability("o_direct", False, f"DLSYSBENCH_NVM_PATH={target} is a directory; expected a file "
                          "(created if missing) or a block device")
    if nvm_file.is_foreign(target):
        return Capability("o_direct", False, f"DLSYSBENCH_NVM_PATH={nvm_file.foreign_reason(target)}")
    fs = filesystem_type(target)
    if fs in MEMORY_FILESYSTEMS:
        return Capability("o_direct", False, f"{target.parent} is on {fs}, in memory: no read would "
                          f"reach a drive; point {setting} at a disk")
    missing = paths.missing_directory_reason(target, setting)
    if missing:                 # `run` refuses it too: never probe the drive above it
        return Capability("o_direct", False, missing)
    if nvm_file.is_suite_file(target):   # ready: read it where it lies, write nothing
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
            why = f"{directory} is on a read-only filesystem ({fs}), where {target.name} would be written"
        elif err.errno in (errno.EACCES, errno.EPERM):      # the drive may be fine: the folder is not ours
            return Capability("o_direct", False, f"this user cannot write in {directory} ({fs}): {err.strerror}; "
                              f"point {setting} at a file in a directory this user can write, on a disk")
        else:
            why = f"O_DIRECT probe at {target.parent} ({fs}) failed: {err}"
        return Capability("o_direct", False, why + f"; point {setting} at a disk")
    return Capability("o_direct", True, "", f"{fs} at {target.parent}")


def _read_only_note(directory: Path) -> str:
    """" (read-only for this user: ...)" when this user cannot create files in ``directory``
    (permissions, or a read-only filesystem), else "": a ready target is only read, but the
    replay writes its store beside it."""
    if os.access(directory, os.W_OK | os.X_OK):
        return ""
    return " (read-only for this user: the replay cannot write its store beside the target)"


def is_device_target(target: Path) -> bool:
    """Whether ``target`` (a link's target) is a block device, or a name in /dev/: a target
    the suite only reads, so the replay's store cannot go beside it. False where it cannot be
    read (a file still to be created)."""
    try:
        target = target.resolve() if target.is_symlink() else target
        return stat.S_ISBLK(target.stat().st_mode) or target.parent == Path("/dev")
    except (OSError, RuntimeError):      # missing, unreadable, a symlink loop
        return target.parent == Path("/dev")


def filesystem_type(path: Path) -> str:
    """Return the filesystem type of the mount holding ``path`` (e.g. ``ext4``, ``tmpfs``)."""
    mount = mount_of(path)
    return mount["fstype"] if mount else "unknown"


def mount_of(path: Path) -> dict | None:
    """Return ``{"mount_point", "source", "fstype"}`` for the mount holding ``path`` (None
    when not found, or for a symlink loop)."""
    try:
        path = Path(path).resolve()
    except RuntimeError:  # a symlink loop
        return None
    while not path.exists() and path != path.parent:
        path = path.parent
    best = None
    try:
        with open("/proc/self/mounts") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) < 3:      # not a mount line: skip it rather than fail every check
                    continue
                source, mount_point, fstype = (_unescape_mount(f) for f in fields[:3])
                if path == Path(mount_point) or Path(mount_point) in path.parents:
                    if best is None or len(mount_point) >= len(best["mount_point"]):
                        best = {"mount_point": mount_point, "source": source, "fstype": fstype}
    except OSError:
        return None
    return best


def _unescape_mount(field: str) -> str:
    """A field of /proc/self/mounts as the name it stands for: the kernel writes a space, tab,
    newline or backslash in it as an octal escape (``\\040``, ``\\011``, ``\\012``, ``\\134``)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _one_line(err: BaseException) -> str:
    return f"{type(err).__name__}: {' '.join(str(err).split())}"


def cuda_visible_devices() -> str | None:
    """``CUDA_VISIBLE_DEVICES`` as set (``""`` hides every GPU), or None when unset."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def check_cuda() -> Capability:
    """A CUDA device torch can use: available with ``device_count() > 0`` and a name that
    can be read. Any error of that query is a missing capability with its one-line reason,
    never an exception; the reason (or the detail) names ``CUDA_VISIBLE_DEVICES`` when set and
    it could be the cause (not for a CPU-only torch)."""
    try:
        import torch
    except ImportError as err:
        return Capability("cuda", False, f"torch does not import: {err}")
    visible = cuda_visible_devices()
    setting = "" if visible is None else f"CUDA_VISIBLE_DEVICES={visible!r}"
    hint = "" if visible is None else f" with {setting} (unset it, or list a GPU in it)"
    try:
        available = torch.cuda.is_available()
        count = torch.cuda.device_count() if available else 0
        name = torch.cuda.get_device_name(0) if count > 0 else None
    except Exception as err:  # noqa: BLE001 - a driver or runtime refusing the query: missing, said why
        return Capability("cuda", False, f"needs CUDA: the CUDA device query failed ({_one_line(err)}){hint}")
    if name is None:
        if not torch.version.cuda:      # no setting of the variable would help: say only this
            return Capability("cuda", False, "needs CUDA: torch is a CPU-only build (install a CUDA build of torch)")
        why = "torch reports CUDA available but no device (device_count() is 0)" if available else "no CUDA device"
        return Capability("cuda", False, f"needs CUDA: {why}{hint}")
    return Capability("cuda", True, "", name + (f" ({setting})" if setting else ""))


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


CHECKS = {"fio": check_fio, "o_direct": check_o_direct, "cuda": check_cuda, "nvml": check_nvml,
          "kahypar": check_kahypar, "real_amazon670k": check_real_amazon670k}


@functools.cache
def _cached(name: str) -> Capability:
    return CHECKS[name]()


def detect(names=tuple(CHECKS)) -> dict[str, Capability]:
    """Return every capability by name (each checked once per process)."""
    unknown = set(names) - set(CHECKS)
    if unknown:
        raise KeyError(f"unknown capabilities {sorted(unknown)}; known: {sorted(CHECKS)}")
    return {name: _cached(name) for name in names}


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
