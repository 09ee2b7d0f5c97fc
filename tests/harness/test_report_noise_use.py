"""The report uses a noise file's thresholds only where make compare would: this machine's,
on the scale and the benchmark version declared now; it says what it left out."""
import pandas as pd

from impls.harness.report import build, noise

RATE = "bench_bandana_sim.SimulatorSpeed.track_lookups_per_second"


def _noise(machine: str, version: str) -> noise.Noise:
    return noise.Noise(machine, "2026-12-03T00:00:00+00:00", [],
                       {(RATE, "p"): noise.Threshold(RATE, "p", 2, 0.01, 0.03, version)})


def _points(version: str) -> pd.DataFrame:
    return pd.DataFrame({"benchmark": [RATE], "param_label": ["p"], "value": [1.0], "version": [version]})


def test_thresholds_of_another_benchmark_version_are_left_out():
    kept, left = _noise("m", "1").on_versions({RATE: "1"})
    assert left == 0 and kept.get(RATE, "p") is not None
    kept, left = _noise("m", "1").on_versions({RATE: "2"})
    assert left == 1 and kept.get(RATE, "p") is None
    kept, left = _noise("m", "").on_versions({RATE: "2"})      # unversioned: applies to any
    assert left == 0


def test_the_report_uses_only_this_machines_thresholds_for_the_current_version(tmp_path, monkeypatch):
    path = tmp_path / "m.json"
    monkeypatch.setattr(build, "default_noise_path", lambda machine: path)
    noise.save_noise(_noise("m", "1"), path)
    used, notes = build._usable_noise("m", _points("1"), False)
    assert used.get(RATE, "p") is not None and notes == []
    used, notes = build._usable_noise("m", _points("2"), False)
    assert used.get(RATE, "p") is None and "another version" in notes[0]
    noise.save_noise(_noise("other-box", "1"), path)
    used, notes = build._usable_noise("m", _points("1"), False)
    assert used is None and "'other-box'" in notes[0]
    path.unlink()
    used, notes = build._usable_noise("m", _points("1"), False)
    assert used is None and "No measured noise" in notes[0]
