"""fio 3.0 and 3.1 (Ubuntu 18.04 ships 3.1) pass the suite's version check; their JSON has no
``read.bw_bytes`` (fio 3.2 added it), only ``read.bw`` in KiB/s. The fixture below has the
fields, in the order and types, that fio 3.1's ``stat.c`` (``add_ddir_status_json``) writes."""
from __future__ import annotations

import json
import os
import stat

import pytest

from impls.bandana.nvm import fio
from impls.harness import capabilities

# 20001 reads of 4 KiB in 1999 ms: bw_bytes would be 1000 * io_bytes // runtime = 40982539,
# fio 3.1 writes only bw = 40982539 // 1024 = 40022 KiB/s
IO_BYTES, RUNTIME_MS, TOTAL_IOS = 20001 * 4096, 1999, 20001
BW_KIB = (1000 * IO_BYTES // RUNTIME_MS) // 1024
PERCENTILES = ["1.000000", "5.000000", "10.000000", "20.000000", "30.000000", "40.000000", "50.000000",
               "60.000000", "70.000000", "80.000000", "90.000000", "95.000000", "99.000000", "99.500000",
               "99.900000", "99.950000", "99.990000"]


def _latency(mean: float) -> dict:
    return {"min": int(mean / 2), "max": int(mean * 20), "mean": mean, "stddev": mean / 4}


def _idle_direction() -> dict:
    none = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0}
    return {"io_bytes": 0, "io_kbytes": 0, "bw": 0, "iops": 0.0, "runtime": 0, "total_ios": 0,
            "short_ios": 0, "drop_ios": 0, "slat_ns": dict(none),
            "clat_ns": {**none, "percentile": {"0.00": 0}}, "lat_ns": dict(none), "bw_min": 0, "bw_max": 0,
            "bw_agg": 0.0, "bw_mean": 0.0, "bw_dev": 0.0, "bw_samples": 0, "iops_min": 0, "iops_max": 0,
            "iops_mean": 0.0, "iops_stddev": 0.0, "iops_samples": 0}


def fio31_output(engine: str = "libaio", bs: str = "4096", iodepth: str = "1") -> str:
    """One job's ``--output-format=json`` as fio 3.1 prints it (no ``bw_bytes``)."""
    percentile = {key: 60000 + 400 * i for i, key in enumerate(PERCENTILES)}
    percentile.update({"0.00": 0})          # fio 3.1 pads its 20 percentile slots with "0.00": 0
    read = {"io_bytes": IO_BYTES, "io_kbytes": IO_BYTES >> 10, "bw": BW_KIB,
            "iops": 1000.0 * TOTAL_IOS / RUNTIME_MS, "runtime": RUNTIME_MS, "total_ios": TOTAL_IOS,
            "short_ios": 0, "drop_ios": 0, "slat_ns": _latency(4000.0),
            "clat_ns": {**_latency(95000.0), "percentile": percentile}, "lat_ns": _latency(99000.0),
            "bw_min": BW_KIB - 900, "bw_max": BW_KIB + 700, "bw_agg": 100.0, "bw_mean": float(BW_KIB),
            "bw_dev": 310.5, "bw_samples": 4, "iops_min": 9800, "iops_max": 10200, "iops_mean": 10005.5,
            "iops_stddev": 77.0, "iops_samples": 4}
    job = {"jobname": f"randread-{engine}-{bs}B-qd{iodepth}", "groupid": 0, "error": 0, "eta": 0,
           "elapsed": 3,
           "job options": {"name": f"randread-{engine}-{bs}B-qd{iodepth}", "rw": "randread", "direct": "1",
                           "ioengine": engine, "bs": bs, "iodepth": iodepth, "numjobs": "1"},
           "read": read, "write": _idle_direction(), "trim": _idle_direction(),
           "usr_cpu": 3.1, "sys_cpu": 9.2, "ctx": 20050, "majf": 0, "minf": 12}
    document = {"fio version": "fio-3.1", "timestamp": 1511000000, "timestamp_ms": 1511000000123,
                "time": "Sat Nov 18 10:13:20 2017", "jobs": [job]}
    return json.dumps(document, indent=2)


def test_fio31_json_without_bw_bytes_is_read_from_bw_in_kib():
    (point,) = fio.parse_fio_json(fio31_output())
    assert point.bandwidth_bytes_per_s == BW_KIB * 1024
    exact = 1000 * IO_BYTES // RUNTIME_MS                   # what fio 3.2+ would write as bw_bytes
    assert 0 <= exact - point.bandwidth_bytes_per_s < 1024
    assert point.iops == pytest.approx(1000 * TOTAL_IOS / RUNTIME_MS)
    assert (point.engine, point.block_bytes, point.queue_depth, point.runtime_ms) == ("libaio", 4096, 1, 1999)
    assert point.clat_p50_us == 62.4 and point.clat_p99_us == 64.8 and point.clat_mean_us == 95.0


def test_bw_bytes_wins_where_both_are_reported_and_a_job_with_neither_names_bw_bytes():
    document = json.loads(fio31_output())
    document["jobs"][0]["read"]["bw_bytes"] = 40982539
    (point,) = fio.parse_fio_json(json.dumps(document))
    assert point.bandwidth_bytes_per_s == 40982539
    del document["jobs"][0]["read"]["bw_bytes"], document["jobs"][0]["read"]["bw"]
    with pytest.raises(fio.FioError, match=r"read\.bw_bytes"):
        fio.parse_fio_json(json.dumps(document))


def test_a_fio_31_passes_the_check_and_its_runs_are_measured(tmp_path, monkeypatch):
    """The probe's case: `list` and doctor said yes for fio-3.1, then every run failed."""
    output = tmp_path / "out.json"
    output.write_text(fio31_output())
    fake = tmp_path / "bin" / "fio"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "fio-3.1"; exit 0; fi\ncat "{output}"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    assert capabilities.check_fio().available
    target = tmp_path / "t.bin"
    target.write_bytes(b"\0" * (1 << 20))
    point = fio.run_fio(target, engine="libaio", block_bytes=4096, queue_depth=1, runtime_s=2.0, ramp_s=0.0,
                        size_bytes=1 << 20)
    assert point.bandwidth_bytes_per_s == BW_KIB * 1024 and point.iops > 0


def test_a_failing_fio_leaves_the_replay_without_its_ceiling_not_without_its_numbers(monkeypatch, capsys, tmp_path):
    """fio is the replay's ceiling: a fio whose run fails (here its JSON lacks a field) gives the
    replay no fio point and a warning saying why, instead of failing the replay."""
    from impls.bandana.nvm import replay

    monkeypatch.setattr(replay, "_FIO_WARNED", set())        # said once a process: this test's own
    def broken(*_a, **_k):
        raise fio.FioError("fio JSON jobs[0] (randread) has no 'read.clat_ns'")

    monkeypatch.setattr(fio, "fio_executable", lambda: "/usr/bin/fio")
    monkeypatch.setattr(fio, "engine_unavailable_reason", lambda engine: None if engine in ("libaio", "io_uring") else "no")
    monkeypatch.setattr(fio, "run_fio", broken)
    assert replay.fio_iops(tmp_path / "store.bin", 4, 1.0, 0.0, 1 << 20) is None
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "fio's ceiling not measured (libaio: " in err
    assert "; io_uring: " in err and "psync reads at queue depth 1 only" in err
    assert "read.clat_ns" in err and ") at queue depth 4 (nor, not said again, at any other depth that fails" in err


def test_the_replay_ceiling_falls_back_to_the_next_engine_when_one_fails(monkeypatch, tmp_path):
    from impls.bandana.nvm import replay

    tried = []

    def libaio_refused(path, engine, **_k):
        tried.append(engine)
        if engine == "libaio":
            raise fio.FioError("fio reports error 22 (Invalid argument) in jobs[0]")
        return fio.parse_fio_json(fio31_output(engine="io_uring", iodepth="4"))[0]

    monkeypatch.setattr(fio, "fio_executable", lambda: "/usr/bin/fio")
    monkeypatch.setattr(fio, "engine_available", lambda engine: True)
    monkeypatch.setattr(fio, "run_fio", libaio_refused)
    point = replay.fio_iops(tmp_path / "store.bin", 4, 1.0, 0.0, 1 << 20)
    assert tried == ["libaio", "io_uring"] and point["engine"] == "io_uring"
