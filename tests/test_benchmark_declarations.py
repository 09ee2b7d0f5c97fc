"""Every benchmark's direction, unit, scale, bound flags and code are as
benchmarks/declarations_lock.json records them (scripts/lock_declarations.py): a pinned
history does not see a track's code change, and make compare judges by its direction."""
import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_benchmark_is_as_the_lock_records_it(load_script):
    message = load_script("lock_declarations").check()
    assert message == "", message


def _bench(module: str):
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module(f"benchmarks.{module}")
    finally:
        sys.path.pop(0)


@pytest.mark.parametrize("module, cls, track, attribute, value, said", [
    ("bench_bandana_device", "FioRandomRead", "track_bandwidth", "direction", "context",
     "direction 'higher' -> 'context'"),
    ("bench_bandana_replay", "ReplayHeadline", "track_simulator_cross_check", "direction", "flag",
     "direction 'higher' -> 'flag'"),
    ("bench_slide", "SlideTraining", "track_peak_rss", "unit", "GB", "unit 'GiB' -> 'GB'"),
    ("bench_salus_lanes", "InferenceDevicesNeeded", "track_models_per_device_gain", "bounded_by",
     (None, "track_gain_is_lower_bound"), "bounded_by ['track_gain_is_lower_bound', None] -> "
                                          "[None, 'track_gain_is_lower_bound']"),
])
def test_a_changed_declaration_is_named_with_its_old_and_new_value(load_script, tmp_path, monkeypatch,
                                                                   module, cls, track, attribute, value, said):
    script = load_script("lock_declarations")
    lock = tmp_path / "lock.json"
    script.write(lock)
    assert script.check(lock) == ""
    monkeypatch.setattr(getattr(getattr(_bench(module), cls), track), attribute, value)
    message = script.check(lock)
    assert f"{module}.{cls}.{track}: changed ({said})" in message, message
    assert "bump its pin in benchmarks/versions.json" in message and "--write" in message
    assert script.main(["--check", "--lock", str(lock)]) == 1


@pytest.mark.parametrize("module, cls, track, code", [
    ("bench_salus", "SwitchingLatency", "track_p99_ms", "lambda self, *_: self.row['p50']"),     # another key
    ("bench_bandana_device", "FioRandomRead", "track_bandwidth",                                # another divisor
     'lambda self, *_: self.row["bandwidth_bytes_per_s"] / 2**20'),
])
def test_a_track_computing_something_else_under_the_same_name_is_named(load_script, tmp_path, monkeypatch,
                                                                        module, cls, track, code):
    script = load_script("lock_declarations")
    lock = tmp_path / "lock.json"
    script.write(lock)
    monkeypatch.setattr(getattr(getattr(_bench(module), cls), track), "pretty_source", code, raising=False)
    assert f"{module}.{cls}.{track}: changed (code)" in script.check(lock)


def test_an_added_or_removed_benchmark_is_named(load_script, tmp_path):
    script = load_script("lock_declarations")
    lock = tmp_path / "lock.json"
    script.write(lock)
    locked = script.read_lock(lock)
    name = next(iter(locked))
    locked["bench_gone.Gone.track_x"] = locked.pop(name)
    lock.write_text(json.dumps(locked))
    message = script.check(lock)
    assert f"{name}: new, not in the lock" in message and "bench_gone.Gone.track_x: in the lock, no longer" in message


def test_a_setup_reading_another_row_is_named_for_each_of_its_classs_tracks(load_script, tmp_path, monkeypatch):
    """SwitchingLatency's setup picks each point's row: picking another method's row changes
    every number of the class, though no track's own code changed."""
    script = load_script("lock_declarations")
    lock = tmp_path / "lock.json"
    script.write(lock)
    bench = _bench("bench_salus")
    monkeypatch.setattr(bench.SwitchingLatency, "setup",
                        bench.row(lambda data, workload, method: data["workloads"][workload]["to_disk_ms"]))
    message = script.check(lock)
    for track in ("track_p50_ms", "track_p99_ms"):
        assert f"bench_salus.SwitchingLatency.{track}: changed (setup)" in message, message
