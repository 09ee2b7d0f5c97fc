"""Run fio through subprocess and read its JSON output.

Bandana characterizes its NVM device with fio: random reads of one block size at
one queue depth give the device's IOPS and bandwidth ceiling. Every job built here
is a read-only ``randread`` job with ``direct=1``; fio is started with
``--readonly`` and ``--allow_file_create=0``, so it can neither write to nor
create the target, and a raw block device is only ever read.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

# Engines that submit one I/O at a time; fio caps their iodepth at 1.
SYNCHRONOUS_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2"})

# Seconds granted beyond runtime + ramp for fio to start, lay out and exit.
_SUBPROCESS_SLACK_S = 60.0


class FioError(ValueError):
    """fio failed, or its output is not what this module expects."""


class FioNotFoundError(FioError):
    """The fio executable is not on PATH."""


@dataclasses.dataclass(frozen=True)
class FioPoint:
    """One fio job's read results: one engine, block size and queue depth.

    ``iops`` in I/O per second, ``bandwidth_bytes_per_s`` in bytes per second,
    completion latencies (``clat_*``) in microseconds, ``runtime_ms`` in
    milliseconds of measured (post-ramp) run time.
    """

    engine: str
    block_bytes: int
    queue_depth: int
    iops: float
    bandwidth_bytes_per_s: float
    clat_p50_us: float
    clat_p99_us: float
    clat_mean_us: float
    runtime_ms: int

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON-ready)."""
        return dataclasses.asdict(self)


def fio_executable() -> str | None:
    """Absolute path of the fio on PATH, or None."""
    return shutil.which("fio")


@functools.cache
def fio_version() -> str | None:
    """fio's version string (e.g. ``"fio-3.33"``), or None if fio is not on PATH."""
    executable = fio_executable()
    if executable is None:
        return None
    result = subprocess.run(
        [executable, "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    version = result.stdout.strip()
    return version or None


def _require_fio() -> str:
    executable = fio_executable()
    if executable is None:
        raise FioNotFoundError("fio is not installed (no `fio` on PATH); install it, e.g. `apt-get install fio`")
    return executable


def _milliseconds(seconds: float, name: str, *, minimum_ms: int) -> int:
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        raise ValueError(f"{name} must be a finite number of seconds, got {seconds!r}")
    milliseconds = round(seconds * 1000)
    if milliseconds < minimum_ms:
        raise ValueError(f"{name} must be at least {minimum_ms} ms, got {seconds!r} s")
    return milliseconds


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def build_fio_command(
    path: str | os.PathLike,
    *,
    engine: str,
    block_bytes: int,
    queue_depth: int,
    runtime_s: float,
    ramp_s: float,
    size_bytes: int,
) -> list[str]:
    """The argv (starting with ``"fio"``) of one fio job: ``direct=1`` random reads over the first
    ``size_bytes`` of ``path``, ``block_bytes`` per read, ``queue_depth`` reads in
    flight, ``ramp_s`` seconds of warm-up then ``runtime_s`` seconds measured.

    ``block_bytes`` must be a multiple of 512 (O_DIRECT alignment). Offsets are
    drawn without a random map and with a fresh seed per run, so repeated runs do
    not replay the same offsets into a device or hypervisor cache.
    """
    if not isinstance(engine, str) or not re.fullmatch(r"[A-Za-z0-9_:.+-]+", engine):
        raise ValueError(f"engine must be an fio ioengine name such as 'libaio', got {engine!r}")
    _positive_int(block_bytes, "block_bytes")
    if block_bytes % 512:
        raise ValueError(f"block_bytes must be a multiple of 512 for direct I/O, got {block_bytes}")
    _positive_int(queue_depth, "queue_depth")
    _positive_int(size_bytes, "size_bytes")
    if size_bytes < block_bytes:
        raise ValueError(f"size_bytes ({size_bytes}) is smaller than one block ({block_bytes})")
    runtime_ms = _milliseconds(runtime_s, "runtime_s", minimum_ms=1)
    ramp_ms = _milliseconds(ramp_s, "ramp_s", minimum_ms=0)
    filename = os.fspath(path)
    if not filename:
        raise ValueError("path is empty")
    return [
        "fio",
        f"--name=randread-{engine}-{block_bytes}B-qd{queue_depth}",
        f"--filename={escaped_filename(filename)}",
        "--readonly",
        "--allow_file_create=0",
        "--rw=randread",
        "--direct=1",
        f"--ioengine={engine}",
        f"--bs={block_bytes}",
        f"--iodepth={queue_depth}",
        "--numjobs=1",
        f"--size={size_bytes}",
        "--norandommap",
        "--randrepeat=0",
        "--random_generator=tausworthe64",
        "--time_based",
        f"--runtime={runtime_ms}ms",
        f"--ramp_time={ramp_ms}ms",
        "--output-format=json",
    ]


def escaped_filename(filename: str) -> str:
    """Return ``filename`` as fio's ``--filename`` reads one path: fio splits the option on
    ':' (several files per job), so each ':' is written ``\\:``, fio's escape for it."""
    return filename.replace(":", "\\:")


_SIZE_SUFFIXES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _fio_size_bytes(text: str) -> int:
    """fio's spelling of a size ("4096", "4k", "4KiB") in bytes (fio's default kb_base=1024)."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)(?:i?b)?\s*", text, flags=re.IGNORECASE)
    if match is None:
        raise ValueError(f"not an fio size: {text!r}")
    return int(match.group(1)) * _SIZE_SUFFIXES[match.group(2).lower()]


def _decode_json_object(text: str) -> dict:
    """The first JSON object in ``text``; fio may print notes before it."""
    decoder = json.JSONDecoder()
    # The object starts at the first '{' that opens a line; notes may contain braces.
    for match in re.finditer(r"^\{", text, flags=re.MULTILINE):
        try:
            document, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError as err:
            raise FioError(f"fio output is not valid JSON: {err}") from err
        if isinstance(document, dict):
            return document
    preview = text.strip()[:200]
    raise FioError(f"no JSON object in fio output (it starts with {preview!r})")


def _lookup(mapping: Any, keys: tuple[str, ...], where: str) -> Any:
    value = mapping
    walked: list[str] = []
    for key in keys:
        walked.append(key)
        if not isinstance(value, dict) or key not in value:
            raise FioError(f"fio JSON {where} has no {'.'.join(walked)!r}")
        value = value[key]
    return value


def _number(mapping: Any, keys: tuple[str, ...], where: str) -> float:
    value = _lookup(mapping, keys, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FioError(f"fio JSON {where}: {'.'.join(keys)!r} is {value!r}, expected a number")
    return float(value)


def _read_bandwidth(job: dict, where: str) -> float:
    """The job's read bandwidth in bytes/s: ``read.bw_bytes`` (fio 3.2 and newer), else
    ``read.bw`` × 1024 (fio 3.0 and 3.1 report only KiB/s, rounded down: at most 1023 B/s low)."""
    read = job.get("read")
    if isinstance(read, dict) and "bw_bytes" not in read and "bw" in read:
        return _number(job, ("read", "bw"), where) * 1024
    return _number(job, ("read", "bw_bytes"), where)


def _job_option(job: dict, global_options: dict, key: str, where: str) -> str:
    for options in (job.get("job options") or {}, global_options):
        if key in options:
            return str(options[key])
    raise FioError(f"fio JSON {where} has no {key!r} in its 'job options' or 'global options'")


def _parse_job(job: Any, global_options: dict, index: int) -> FioPoint:
    if not isinstance(job, dict):
        raise FioError(f"fio JSON jobs[{index}] is {type(job).__name__}, expected an object")
    where = f"jobs[{index}] ({job.get('jobname', '?')})"
    error = job.get("error", 0)
    if error:
        raise FioError(f"fio reports error {error} ({os.strerror(error) if isinstance(error, int) else error}) in {where}")
    engine = _job_option(job, global_options, "ioengine", where)
    block_option = _job_option(job, global_options, "bs", where)
    depth_option = _job_option(job, global_options, "iodepth", where)
    try:
        block_bytes = _fio_size_bytes(block_option)
        queue_depth = int(depth_option)
    except ValueError as err:
        raise FioError(f"fio JSON {where}: unreadable bs={block_option!r} or iodepth={depth_option!r}") from err
    if engine in SYNCHRONOUS_ENGINES:
        queue_depth = 1
    return FioPoint(
        engine=engine,
        block_bytes=block_bytes,
        queue_depth=queue_depth,
        iops=_number(job, ("read", "iops"), where),
        bandwidth_bytes_per_s=_read_bandwidth(job, where),
        clat_p50_us=_number(job, ("read", "clat_ns", "percentile", "50.000000"), where) / 1000.0,
        clat_p99_us=_number(job, ("read", "clat_ns", "percentile", "99.000000"), where) / 1000.0,
        clat_mean_us=_number(job, ("read", "clat_ns", "mean"), where) / 1000.0,
        runtime_ms=int(_number(job, ("read", "runtime"), where)),
    )


def parse_fio_json(text: str) -> list[FioPoint]:
    """One :class:`FioPoint` per job in fio's ``--output-format=json`` output.

    Engine, block size and queue depth are read from each job's options (or the
    global options), not from the caller. Lines before the JSON object (fio's
    notes and warnings) are ignored. Raises :class:`FioError` naming what is
    missing when the text is not fio JSON, a job reports an error, or a field is
    absent.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_fio_json expects str, got {type(text).__name__}")
    document = _decode_json_object(text)
    jobs = document.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise FioError("fio JSON has no 'jobs' list (or it is empty)")
    global_options = document.get("global options") or {}
    return [_parse_job(job, global_options, index) for index, job in enumerate(jobs)]


def _run_stoppable(command: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    """``subprocess.run(command)`` with output captured, except that on a timeout or an
    interrupt fio gets SIGTERM first (up to 5 s, then SIGKILL): fio runs its job in a child
    of its own session, which SIGKILL on fio alone would leave reading the file."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except BaseException:
            process.terminate()
            try:
                process.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
            raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def run_fio(
    path: str | os.PathLike,
    *,
    engine: str,
    block_bytes: int,
    queue_depth: int,
    runtime_s: float,
    ramp_s: float,
    size_bytes: int,
) -> FioPoint:
    """Run one fio job (see :func:`build_fio_command`) and return its measurement.

    Raises :class:`FioNotFoundError` without fio, :class:`FioError` when a file
    target is shorter than ``size_bytes``, and :class:`FioError` carrying fio's
    stderr when fio exits non-zero or times out.
    """
    executable = _require_fio()
    command = build_fio_command(
        path,
        engine=engine,
        block_bytes=block_bytes,
        queue_depth=queue_depth,
        runtime_s=runtime_s,
        ramp_s=ramp_s,
        size_bytes=size_bytes,
    )
    # With --readonly, fio only warns that it will not extend a short file and then
    # reads past its end anyway (exit status 0), so a short file is refused here.
    if os.path.isfile(path) and os.path.getsize(path) < size_bytes:
        raise FioError(
            f"{os.fspath(path)} holds {os.path.getsize(path)} bytes, fewer than size_bytes={size_bytes}; "
            "create it first (device_characterization.prepare_target)"
        )
    command[0] = executable
    timeout_s = _SUBPROCESS_SLACK_S + 2.0 * (runtime_s + ramp_s)
    try:
        result = _run_stoppable(command, timeout_s)
    except subprocess.TimeoutExpired as err:
        raise FioError(f"fio did not finish within {timeout_s:.0f} s: {' '.join(command)}") from err
    if result.returncode != 0:
        # fio prints some of its errors on stdout, ahead of the JSON.
        notes = result.stdout.split("\n{", 1)[0] if not result.stdout.startswith("{") else ""
        messages = " | ".join(line.strip() for line in (result.stderr + "\n" + notes).splitlines() if line.strip())
        raise FioError(
            f"fio exited with status {result.returncode} on {os.fspath(path)}: {messages or '(no message)'}"
        )
    points = parse_fio_json(result.stdout)
    if len(points) != 1:
        raise FioError(f"expected one fio job in the output, got {len(points)}")
    return points[0]


@functools.cache
def engine_unavailable_reason(engine: str) -> str | None:
    """Why fio cannot use ``engine`` here (not built in, or refused by the kernel
    or container), or None when it works. Checked once per process by reading
    one 4 KiB block of a scratch file with that engine.
    """
    executable = fio_executable()
    if executable is None:
        return "fio is not installed"
    with tempfile.TemporaryDirectory(prefix="dlsysbench-fio-probe-") as scratch:
        probe = Path(scratch) / "probe.bin"
        probe.write_bytes(b"\0" * 65536)
        command = [
            executable,
            "--name=engine-probe",
            f"--filename={escaped_filename(str(probe))}",
            "--readonly",
            "--rw=read",
            f"--ioengine={engine}",
            "--bs=4096",
            "--size=64k",
            "--io_size=4k",
            "--output-format=json",
        ]
        try:
            result = _run_stoppable(command, 60)
        except subprocess.TimeoutExpired:
            return f"fio with ioengine={engine} did not finish a 4 KiB read within 60 s"
    if result.returncode != 0:
        detail = " ".join(result.stderr.split()) or f"exit status {result.returncode}"
        return f"fio cannot use ioengine={engine}: {detail}"
    return None


def engine_available(engine: str) -> bool:
    """True when fio can read a file with ``engine`` on this machine (cached)."""
    return engine_unavailable_reason(engine) is None
