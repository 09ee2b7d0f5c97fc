"""fio wrapper, device characterization and its figures.

Fixtures in tests/fixtures/fio/ are real fio 3.33 outputs recorded with
build_fio_command() on an ext4 file (see each file's "job options").
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

from impls.bandana.experiments import device as dc
from impls.bandana.nvm import fio
from impls.bandana.nvm.fio import FioError, FioPoint, build_fio_command, parse_fio_json
from impls.harness import capabilities, nvm_file, progress

FIXTURES = Path(__file__).parent.parent / "fixtures" / "fio"
RECORDED = ["libaio_4k_qd4.json", "io_uring_4k_qd32.json", "psync_4k_qd4_note_prefix.json"]

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (no `fio` on PATH)")


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


def fixture_json(name: str) -> dict:
    text = fixture_text(name)
    return json.loads(text[text.index("\n{") + 1 :] if not text.startswith("{") else text)


# --- parsing ---------------------------------------------------------------


@pytest.mark.parametrize("name", RECORDED)
def test_parse_matches_fixture_fields(name):
    (point,) = parse_fio_json(fixture_text(name))
    job = fixture_json(name)["jobs"][0]
    read = job["read"]
    assert point.iops == read["iops"]
    assert point.bandwidth_bytes_per_s == read["bw_bytes"]
    assert point.clat_p50_us == read["clat_ns"]["percentile"]["50.000000"] / 1000
    assert point.clat_p99_us == read["clat_ns"]["percentile"]["99.000000"] / 1000
    assert point.clat_mean_us == read["clat_ns"]["mean"] / 1000
    assert point.runtime_ms == read["runtime"]
    assert point.engine == job["job options"]["ioengine"]
    assert point.block_bytes == int(job["job options"]["bs"])
    # fio reports bandwidth and IOPS from the same counters.
    assert point.bandwidth_bytes_per_s == pytest.approx(point.iops * point.block_bytes, rel=0.01)
    assert 0 < point.clat_p50_us <= point.clat_p99_us
    assert point.to_dict()["iops"] == point.iops


def test_parse_reads_engine_and_depth_from_job_options():
    (libaio,) = parse_fio_json(fixture_text("libaio_4k_qd4.json"))
    (io_uring,) = parse_fio_json(fixture_text("io_uring_4k_qd32.json"))
    assert (libaio.engine, libaio.block_bytes, libaio.queue_depth) == ("libaio", 4096, 4)
    assert (io_uring.engine, io_uring.block_bytes, io_uring.queue_depth) == ("io_uring", 4096, 32)


def test_parse_tolerates_note_before_json_and_caps_sync_depth():
    text = fixture_text("psync_4k_qd4_note_prefix.json")
    assert text.startswith("note:")
    (point,) = parse_fio_json(text)
    assert fixture_json("psync_4k_qd4_note_prefix.json")["jobs"][0]["job options"]["iodepth"] == "4"
    assert point.engine == "psync" and point.queue_depth == 1  # fio caps sync engines at QD1


def test_parse_tolerates_warning_lines_with_braces():
    text = "fio: warning {weird} line\nfio: another\n" + fixture_text("libaio_4k_qd4.json")
    assert parse_fio_json(text) == parse_fio_json(fixture_text("libaio_4k_qd4.json"))


def test_parse_falls_back_to_global_options():
    document = fixture_json("libaio_4k_qd4.json")
    options = document["jobs"][0].pop("job options")
    document["global options"] = {key: options[key] for key in ("ioengine", "iodepth")} | {"bs": "4k"}
    (point,) = parse_fio_json(json.dumps(document))
    assert (point.engine, point.block_bytes, point.queue_depth) == ("libaio", 4096, 4)


def test_parse_job_error_is_reported():
    text = fixture_text("error_missing_file.json")
    with pytest.raises(FioError, match=r"error 2 .*No such file"):
        parse_fio_json(text)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["jobs"][0]["read"].pop("iops"), r"read\.iops"),
        (lambda d: d["jobs"][0]["read"]["clat_ns"]["percentile"].pop("99.000000"), r"99\.000000"),
        (lambda d: d["jobs"][0]["read"]["clat_ns"].pop("percentile"), r"clat_ns\.percentile"),
        (lambda d: d["jobs"][0]["job options"].pop("bs"), r"'bs'"),
        (lambda d: d["jobs"][0]["read"].update(iops="many"), r"expected a number"),
        (lambda d: d.pop("jobs"), r"'jobs'"),
        (lambda d: d.update(jobs=[]), r"'jobs'"),
    ],
)
def test_parse_malformed_names_what_is_missing(mutate, message):
    document = fixture_json("libaio_4k_qd4.json")
    mutate(document)
    with pytest.raises(FioError, match=message):
        parse_fio_json(json.dumps(document))


@pytest.mark.parametrize("text", ["", "fio: engine not loadable\n", "{\n  \"jobs\": [", "[1, 2]"])
def test_parse_not_json(text):
    with pytest.raises(FioError, match="JSON"):
        parse_fio_json(text)


def test_fio_error_is_value_error():
    assert issubclass(FioError, ValueError)
    assert issubclass(fio.FioNotFoundError, FioError)


# --- command -----------------------------------------------------------------


@pytest.mark.parametrize("engine, block_bytes, queue_depth", [("libaio", 512, 1), ("io_uring", 65536, 128)])
def test_command_is_read_only_direct(engine, block_bytes, queue_depth):
    command = build_fio_command(
        "/dev/nvme0n1",
        engine=engine,
        block_bytes=block_bytes,
        queue_depth=queue_depth,
        runtime_s=1.5,
        ramp_s=0.25,
        size_bytes=1 << 30,
    )
    assert command[0] == "fio"
    assert "--readonly" in command and "--direct=1" in command
    assert "--rw=randread" in command and "--allow_file_create=0" in command
    assert not any("write" in argument for argument in command)
    assert f"--ioengine={engine}" in command
    assert f"--bs={block_bytes}" in command and f"--iodepth={queue_depth}" in command
    assert "--runtime=1500ms" in command and "--ramp_time=250ms" in command
    assert "--size=1073741824" in command and "--output-format=json" in command


@pytest.mark.parametrize(
    "overrides",
    [
        {"block_bytes": 1000},
        {"block_bytes": 0},
        {"queue_depth": 0},
        {"runtime_s": 0},
        {"ramp_s": -1},
        {"size_bytes": 100},
        {"engine": "libaio --write"},
    ],
)
def test_command_rejects_bad_input(overrides):
    arguments = dict(engine="libaio", block_bytes=4096, queue_depth=1, runtime_s=1, ramp_s=0, size_bytes=1 << 20)
    with pytest.raises(ValueError):
        build_fio_command("/tmp/x", **(arguments | overrides))


def test_run_fio_without_fio(monkeypatch, tmp_path):
    monkeypatch.setattr(fio.shutil, "which", lambda name: None)
    with pytest.raises(fio.FioNotFoundError, match="not installed"):
        fio.run_fio(tmp_path / "x", engine="libaio", block_bytes=4096, queue_depth=1, runtime_s=1, ramp_s=0, size_bytes=1 << 20)


@needs_fio
def test_run_fio_refuses_short_file(tmp_path):
    target = tmp_path / "short.bin"
    target.write_bytes(b"\0" * 8192)
    with pytest.raises(FioError, match=r"holds 8192 bytes, fewer than size_bytes=65536"):
        fio.run_fio(target, engine="libaio", block_bytes=4096, queue_depth=1, runtime_s=0.1, ramp_s=0, size_bytes=65536)


@needs_fio
def test_run_fio_reports_fio_messages(tmp_path):
    target = tmp_path / "t.bin"
    target.write_bytes(b"\0" * 65536)
    with pytest.raises(FioError, match=r"exited with status 1 .*no_such_engine"):
        fio.run_fio(target, engine="no_such_engine", block_bytes=4096, queue_depth=1, runtime_s=0.1, ramp_s=0, size_bytes=65536)


@needs_fio
def test_run_fio_reads_a_path_with_a_colon(tmp_path):
    """fio splits --filename on ':'; escaped, the one file is read (the suite refused such
    paths, after writing the target)."""
    target = tmp_path / "a:b" / "t:1.bin"
    target.parent.mkdir()
    dc.prepare_target(target, SMOKE_SIZES["file_bytes"])
    check = capabilities.check_o_direct(target)
    if not check.available:
        pytest.skip(f"{tmp_path}: {check.reason}")
    point = fio.run_fio(target, engine="psync", block_bytes=4096, queue_depth=1, runtime_s=0.2, ramp_s=0,
                        size_bytes=65536)
    assert point.iops > 0


@needs_fio
def test_the_engine_probe_reads_its_scratch_file_under_a_folder_with_a_colon(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "x:y"))
    (tmp_path / "x:y").mkdir()
    fio.engine_unavailable_reason.cache_clear()          # one answer a process: probe here, not recall
    try:
        assert fio.engine_unavailable_reason("psync") is None
    finally:
        fio.engine_unavailable_reason.cache_clear()


# --- prepare_target ------------------------------------------------------------


def test_prepare_creates_random_file_atomically(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path))      # directories are made only in the cache
    target = tmp_path / "nested" / "dir" / "target.bin"
    info = dc.prepare_target(target, 3 * (1 << 20) + 512)
    assert info == {"path": str(target), "kind": "file", "size_bytes": 3 * (1 << 20) + 512, "created": True}
    assert target.stat().st_size == 3 * (1 << 20) + 512
    assert list(target.parent.iterdir()) == [target]  # no temp file left behind
    head = target.read_bytes()[: 1 << 16]
    assert len(set(head)) > 250  # random bytes, not zeros


def test_prepare_reuses_existing_file(tmp_path):
    target = tmp_path / "target.bin"
    dc.prepare_target(target, 1 << 20)
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))
    info = dc.prepare_target(target, 1 << 19)
    assert info["created"] is False and info["size_bytes"] == 1 << 19
    assert target.stat().st_mtime_ns == 1_000_000_000


def test_prepare_replaces_its_own_too_small_file(tmp_path):
    target = tmp_path / "target.bin"
    dc.prepare_target(target, 1 << 16)
    assert dc.prepare_target(target, 1 << 20)["created"] is True
    assert target.stat().st_size == 1 << 20


def test_a_block_device_too_small_for_the_profile_says_where_the_size_is_set_and_what_to_do(monkeypatch):
    """The refusal used to say "lower file_bytes", a key no flag sets, in a file it did not name."""
    devices = [Path("/dev") / name for name in sorted(os.listdir("/sys/block"))] if os.path.isdir("/sys/block") else []
    device = next((d for d in devices if d.exists() and stat.S_ISBLK(d.stat().st_mode)), None)
    if device is None:
        pytest.skip("no block device visible")
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "quick")
    too_many = nvm_file.device_bytes(device) + 4096
    with pytest.raises(ValueError) as refused:
        dc.prepare_target(device, too_many)
    message = str(refused.value)
    assert f"fewer than the {too_many} bytes the sweep reads over (file_bytes of [fio_sweep.quick] in " \
           "impls/profiles.toml); point DLSYSBENCH_NVM_PATH at a larger device" in message, message
    assert "run a smaller profile" in message and "\n" not in message


@pytest.mark.parametrize("make", ["user data", "sparse", "preallocated", "same size, other bytes"])
def test_prepare_refuses_a_file_it_did_not_write(tmp_path, make):
    """A user's file would be overwritten; a sparse or preallocated one reads as zeros without
    reaching the drive (fio then reports ~20x the drive's rate). Recognised by content, so a
    same-size file at a reused inode is refused too."""
    target = tmp_path / "embeddings.bin"
    if make == "user data":
        target.write_bytes(b"my precious embeddings" * 100_000)
    elif make == "sparse":
        with open(target, "wb") as handle:
            handle.truncate(4 << 20)
    elif make == "preallocated":
        descriptor = os.open(target, os.O_CREAT | os.O_WRONLY, 0o644)
        try:
            os.posix_fallocate(descriptor, 0, 4 << 20)
        finally:
            os.close(descriptor)
    else:
        dc.prepare_target(target, 1 << 20)
        target.unlink()
        target.write_bytes(np.random.default_rng(1).bytes(1 << 20))
    before = target.read_bytes()
    with pytest.raises(ValueError, match="does not hold the suite's content.*new file name"):
        dc.prepare_target(target, 1 << 20)
    assert target.read_bytes() == before


def test_prepare_reuses_a_copy_of_its_file_and_follows_a_link(tmp_path):
    first = tmp_path / "a" / "target.bin"
    first.parent.mkdir()
    dc.prepare_target(first, 1 << 20)
    copy = tmp_path / "b" / "target.bin"
    copy.parent.mkdir()
    shutil.copyfile(first, copy)           # a copy, a restore, another mount: the content is what counts
    assert dc.prepare_target(copy, 1 << 20)["created"] is False
    drive = tmp_path / "nvme"
    drive.mkdir()
    link = tmp_path / "link.bin"
    link.symlink_to(drive / "t.bin")
    info = dc.prepare_target(link, 1 << 20)
    assert link.is_symlink() and (drive / "t.bin").stat().st_size == 1 << 20
    assert info["path"] == str(drive / "t.bin")


def test_an_old_default_target_is_rewritten_not_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path))
    monkeypatch.delenv("DLSYSBENCH_NVM_PATH", raising=False)
    from impls.harness import nvm_file, paths

    target = paths.nvm_target_path()
    target.write_bytes(b"\1" * (1 << 20))  # the suite's own, written before targets carried headers
    assert dc.prepare_target(target, 1 << 20)["created"] is True and nvm_file.is_suite_file(target)
    assert dc.prepare_target(target, 1 << 20)["created"] is False


def test_prepare_refuses_without_free_space(tmp_path, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(1 << 40, 1 << 40, 5 << 20))
    target = tmp_path / "target.bin"
    with pytest.raises(OSError, match=rf"{target.name}.*needs \d+ bytes.*{5 << 20} bytes free"):
        dc.prepare_target(target, 10 << 20)
    assert list(tmp_path.iterdir()) == []


def test_prepare_never_writes_block_device(tmp_path, monkeypatch):
    device = tmp_path / "fake-nvme"
    device.write_bytes(b"\1" * (2 << 20))
    os.utime(device, ns=(1_000_000_000, 1_000_000_000))
    real_stat, real_open = os.stat, os.open

    def fake_stat(path, *args, **kwargs):
        result = real_stat(path, *args, **kwargs)
        if Path(path) == device:
            fields = list(result)
            fields[stat.ST_MODE] = stat.S_IFBLK | 0o660
            return os.stat_result(fields)
        return result

    opened_flags = []

    def guarded_open(path, flags, *args, **kwargs):
        if Path(path) == device:
            opened_flags.append(flags)
            assert flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC) == 0
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "stat", fake_stat)
    monkeypatch.setattr(os, "open", guarded_open)
    monkeypatch.setattr(os, "replace", lambda *a: pytest.fail("block device must not be replaced"))
    info = dc.prepare_target(device, 1 << 20)
    assert info == {"path": str(device), "kind": "block_device", "size_bytes": 1 << 20, "created": False}
    with pytest.raises(ValueError, match="block device .* fewer than"):
        dc.prepare_target(device, 4 << 20)
    assert opened_flags  # the size was read through a read-only open
    assert real_stat(device).st_mtime_ns == 1_000_000_000 and real_stat(device).st_size == 2 << 20
    assert list(tmp_path.iterdir()) == [device]


@pytest.mark.parametrize("size", [0, -1, 1.5, True])
def test_prepare_rejects_bad_size(tmp_path, size):
    with pytest.raises(ValueError, match="size_bytes"):
        dc.prepare_target(tmp_path / "t.bin", size)


def test_prepare_rejects_directory(tmp_path):
    with pytest.raises(ValueError, match="neither a regular file nor a block device"):
        dc.prepare_target(tmp_path, 1 << 20)


# --- sweep ------------------------------------------------------------------------

SMOKE_SIZES = {
    "file_bytes": 16 << 20,
    "block_sizes": [4096],
    "queue_depths": [32],
    "engines": ["libaio", "io_uring", "no_such_engine"],
    "secondary_engine_block_sizes": [4096],
    "runtime_s": 0.3,
    "ramp_s": 0.05,
}


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"block_sizes": [8192]}, "must include 4096"),
        ({"block_sizes": [4000, 4096]}, "multiple of 512"),
        ({"queue_depths": [64, 128]}, "<= 32"),
        ({"queue_depths": []}, "non-empty"),
        ({"engines": []}, "engines"),
        ({"file_bytes": 1024}, "file_bytes"),
        ({"runtime_s": 0}, "runtime_s"),
        ({"extra": 1}, "unknown keys"),
    ],
)
def test_characterize_rejects_bad_sizes(tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        dc.characterize_device(tmp_path / "t.bin", SMOKE_SIZES | overrides, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_ceiling_prefers_qd32_else_highest_below():
    def point(queue_depth, block_bytes=4096, engine="libaio"):
        return {"engine": engine, "block_bytes": block_bytes, "queue_depth": queue_depth,
                "iops": 1000.0 * queue_depth, "bandwidth_bytes_per_s": 4096e3 * queue_depth}

    points = [point(1), point(16), point(32), point(128), point(32, 8192), point(64, engine="io_uring")]
    assert dc.pick_ceiling(points, "libaio")["queue_depth"] == 32
    assert dc.pick_ceiling(points, "libaio")["iops"] == 32000.0
    without_32 = [p for p in points if p["queue_depth"] != 32]
    ceiling = dc.pick_ceiling(without_32, "libaio")
    assert (ceiling["queue_depth"], ceiling["target_queue_depth"]) == (16, 32)
    with pytest.raises(ValueError, match="no 4096 B point"):
        dc.pick_ceiling(points, "io_uring")


def test_progress_quiet_under_asv_and_ci(monkeypatch):
    assert progress.show_progress(True) is True and progress.show_progress(False) is False
    for variable in ("ASV", "CI"):
        with monkeypatch.context() as patch:
            patch.setenv(variable, "1")
            patch.setattr(progress.sys.stderr, "isatty", lambda: True, raising=False)
            assert progress.show_progress(None) is False


@needs_fio
def test_characterize_short_real_run(tmp_path):
    target = tmp_path / "target.bin"
    dc.prepare_target(target, SMOKE_SIZES["file_bytes"])
    if not capabilities.check_o_direct(target).available:
        pytest.skip(f"{tmp_path} does not support O_DIRECT (tmpfs?); fio needs direct=1")
    if not fio.engine_available("libaio"):
        pytest.skip(f"libaio unusable here: {fio.engine_unavailable_reason('libaio')}")
    result = dc.characterize_device(target, SMOKE_SIZES, progress=False)
    assert result["fio_version"].startswith("fio-")
    assert result["target"]["kind"] == "file" and result["target"]["created"] is False
    assert result["target"]["device"] and result["target"]["filesystem"]   # the drive read, for the figures
    assert result["primary_engine"] == "libaio"
    assert "no_such_engine" in result["skipped_engines"]
    expected_engines = ["libaio"] + (["io_uring"] if fio.engine_available("io_uring") else [])
    assert [p["engine"] for p in result["points"]] == expected_engines
    for point in result["points"]:
        assert point["iops"] > 0 and point["bandwidth_bytes_per_s"] > 0
        assert (point["block_bytes"], point["queue_depth"]) == (4096, 32)
    ceiling = result["ceiling"]
    assert (ceiling["engine"], ceiling["block_bytes"], ceiling["queue_depth"]) == ("libaio", 4096, 32)
    assert ceiling["iops"] == result["points"][0]["iops"] > 0
    json.dumps(result)  # plain data


# --- figures ------------------------------------------------------------------------


def fixture_sweep() -> dict:
    """A characterize_device()-shaped dict built from the recorded fixtures."""
    libaio = parse_fio_json(fixture_text("libaio_4k_qd4.json"))[0]
    io_uring = parse_fio_json(fixture_text("io_uring_4k_qd32.json"))[0]
    points = []
    for block_bytes in (512, 4096, 65536):
        for queue_depth in (1, 4, 32):
            scale = queue_depth ** 0.5 * (block_bytes / 4096) ** 0.3
            points.append(FioPoint(**(libaio.to_dict() | {
                "block_bytes": block_bytes, "queue_depth": queue_depth,
                "iops": libaio.iops * scale,
                "bandwidth_bytes_per_s": libaio.iops * scale * block_bytes})).to_dict())
    points += [io_uring.to_dict(), (io_uring.to_dict() | {"queue_depth": 4, "iops": io_uring.iops / 2})]
    return {
        "fio_version": "fio-3.33",
        "target": {"path": "/tmp/t.bin", "kind": "file", "size_bytes": 16 << 20, "created": False},
        "primary_engine": "libaio",
        "points": points,
        "skipped_engines": {},
        "ceiling": dc.pick_ceiling(points, "libaio"),
    }


def test_figures_draw_from_fixture_data():
    from matplotlib.figure import Figure

    from impls.bandana.figures import device as figures
    from impls.harness.figures import discover

    data = fixture_sweep()
    for name in ("fio_bandwidth_vs_block_size", "fio_iops_vs_queue_depth"):
        spec = discover()[0][name]
        assert (spec.artifact, spec.system) == ("fio_sweep", "bandana")
        fig = spec.draw(data)
        assert isinstance(fig, Figure)
        (ax,) = fig.axes
        assert ax.get_xscale() == "log" and ax.get_xlabel() and ax.get_ylabel()
    bandwidth = figures.bandwidth_vs_block_size(data)
    assert len(bandwidth.axes[0].get_lines()) == 3  # one per queue depth
    assert [t.get_text() for t in bandwidth.axes[0].get_xticklabels()] == ["512 B", "4 KB", "64 KB"]
    iops = figures.iops_vs_queue_depth(data)
    assert len(iops.axes[0].get_lines()) == 3  # libaio, io_uring, ceiling marker
    with pytest.raises(ValueError, match="points"):
        figures.bandwidth_vs_block_size({"points": []})
    assert iops.axes[0].get_title().startswith("fio randread, 4 KB")     # an older artifact: no drive named
    data["target"].update(device="/dev/nvme0n1", filesystem="xfs", rotational=False)
    for draw in (figures.bandwidth_vs_block_size, figures.iops_vs_queue_depth):   # the drive the sweep read
        assert draw(data).axes[0].get_title().startswith("fio randread on /dev/nvme0n1 (xfs, solid-state), ")


def test_a_target_marked_by_the_previous_version_is_rewritten(tmp_path):
    import json as _json

    from impls.harness import capabilities, nvm_file

    target = tmp_path / "custom.bin"
    target.write_bytes(np.random.default_rng(2).bytes(1 << 20))  # random, without block headers
    status = target.stat()
    nvm_file.marker_of(target).write_text(_json.dumps(
        {"device": status.st_dev, "inode": status.st_ino, "size": status.st_size}))
    if capabilities.filesystem_type(tmp_path) != "tmpfs":
        assert capabilities.check_o_direct(target).available
    assert dc.prepare_target(target, 1 << 20)["created"] is True
    assert nvm_file.is_suite_file(target) and not nvm_file.marker_of(target).exists()


def test_the_replay_store_lies_beside_the_file_a_link_names(tmp_path, monkeypatch):
    from impls.bandana.nvm import replay

    drive = tmp_path / "nvme"
    drive.mkdir()
    link = tmp_path / "home" / "t.bin"
    link.parent.mkdir()
    link.symlink_to(drive / "t.bin")
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(link))
    assert replay.store_directory() == drive


@pytest.mark.parametrize("target", ["directory", "/dev/null"])
def test_the_replay_store_never_lands_on_another_drive_than_the_one_named(tmp_path, monkeypatch, target):
    """A mount point or a character device named as the target is refused: the store would go to
    the directory above it, or to the cache, and the replay would measure another drive."""
    from impls.bandana.nvm import replay

    named = str(tmp_path) + "/" if target == "directory" else target
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", named)
    with pytest.raises(ValueError, match="DLSYSBENCH_NVM_PATH=.*(is a directory|neither a regular file)"):
        replay.store_directory()
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(tmp_path / "not-yet.bin"))   # created on first use
    assert replay.store_directory() == tmp_path


def test_a_fio_run_that_is_stopped_gets_sigterm_first(tmp_path):
    # fio's job runs in a child of its own session: only fio itself, told by SIGTERM, stops it
    import subprocess
    import sys

    from impls.bandana.nvm.fio import _run_stoppable

    marker = tmp_path / "told"
    script = ("import signal, sys, time, pathlib\n"
              f"signal.signal(signal.SIGTERM, lambda *a: (pathlib.Path({str(marker)!r}).write_text('x'), sys.exit(0)))\n"
              "print('ready', flush=True)\n"
              "time.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        _run_stoppable([sys.executable, "-c", script], timeout_s=3.0)
    assert marker.read_text() == "x"
    done = _run_stoppable([sys.executable, "-c", "print('out')"], timeout_s=30)
    assert (done.returncode, done.stdout) == (0, "out\n")


def test_a_missing_directory_outside_the_cache_is_refused_not_created(tmp_path, monkeypatch):
    """An NVM path whose directory is not there (an unmounted drive's mount point) would
    otherwise be created on the drive holding its parent, and that drive measured."""
    from impls.bandana.nvm import block_store

    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    target = tmp_path / "mnt" / "optane" / "dlsysbench.bin"
    with pytest.raises(ValueError, match=r"directory .*mnt/optane does not exist.*mounted"):
        dc.prepare_target(target, 1 << 16)
    with pytest.raises(block_store.StoreError, match="DLSYSBENCH_NVM_PATH names a path in it"):
        block_store.check_target(target.with_name("a.store"))
    assert not (tmp_path / "mnt").exists()
    inside = tmp_path / "cache" / "deeper" / "nvm-target.bin"          # the suite's own: created
    assert dc.prepare_target(inside, 1 << 16)["created"] is True and inside.is_file()


def test_fio_sizes_are_read_in_binary_units_as_fio_writes_them():
    """fio's kb_base is 1024 by default: its JSON's "bs" reads 4k = 4 KiB, 1m = 1 MiB."""
    from impls.bandana.nvm.fio import _fio_size_bytes

    assert [_fio_size_bytes(t) for t in ("512", "4k", "4KiB", "16K", "1m", "1MiB", "2g", "1t")] == [
        512, 4096, 4096, 16384, 2 ** 20, 2 ** 20, 2 * 2 ** 30, 2 ** 40]
    with pytest.raises(ValueError, match="not an fio size"):
        _fio_size_bytes("4 bytes")
