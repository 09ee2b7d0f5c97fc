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
    history, claims, notes = build._usable_noise("m", _points("1"), False)
    assert claims.get(RATE, "p") is not None and history.get(RATE, "p") is not None and notes == []
    history, claims, notes = build._usable_noise("m", _points("2"), False)
    assert claims.get(RATE, "p") is None and "another version" in notes[0]
    assert history.get(RATE, "p") is not None       # the history applies it to version 1's points only
    noise.save_noise(_noise("other-box", "1"), path)
    history, claims, notes = build._usable_noise("m", _points("1"), False)
    assert history is None and claims is None and "'other-box'" in notes[0]
    path.unlink()
    history, claims, notes = build._usable_noise("m", _points("1"), False)
    assert history is None and claims is None and "No measured noise" in notes[0]


def test_history_applies_a_threshold_only_to_the_version_it_was_measured_on():
    from impls.harness.report.history import series_steps

    values = [100.0, 100.0, 100.0, 97.0, 97.0, 97.0, 60.0, 60.0, 60.0, 30.0, 30.0, 30.0]
    versions = ["1"] * 6 + ["2"] * 6
    on_1 = noise.Threshold(RATE, "p", 2, 0.03, 0.10, "1")     # 10%, measured on version 1
    kinds = [(at, kind) for at, _, _, kind in series_steps(values, "higher", on_1, versions)]
    # version 1's 3% move is within its threshold; version 2's halving is judged without one
    assert kinds == [(6, "new version"), (9, "regression")]
    on_2 = noise.Threshold(RATE, "p", 2, 0.3, 1.5, "2")       # version 2 too noisy: no step there
    kinds = [(at, kind) for at, _, _, kind in series_steps(values, "higher", on_2, versions)]
    assert kinds == [(3, "regression"), (6, "new version")]


def test_a_thresholds_file_without_its_numbers_is_refused(tmp_path):
    import json

    import pytest

    path = tmp_path / "n.json"
    path.write_text(json.dumps({"schema": noise.SCHEMA, "machine": "m", "nubmers": []}))
    with pytest.raises(noise.NoiseError, match="'numbers'"):
        noise.load_noise(path)


def test_a_skipped_point_of_another_version_does_not_take_the_threshold_away():
    import math

    from impls.harness.report.history import series_steps

    values = [math.nan, 100.0, 100.0, 100.0, 97.0, 97.0, 97.0]      # skipped at version 1, then 2
    versions = ["1"] + ["2"] * 6
    on_2 = noise.Threshold(RATE, "p", 2, 0.03, 0.10, "2")
    assert series_steps(values, "higher", on_2, versions) == []


def test_a_damaged_noise_file_is_a_note_not_the_end_of_the_report(tmp_path, monkeypatch):
    path = tmp_path / "m.json"
    monkeypatch.setattr(build, "default_noise_path", lambda machine: path)
    for text in ('{"thresholds": [{"benchmark": 3}]}', "{not json", '{"schema": 1, "numbers": [{"benchmark": 3}]}'):
        path.write_text(text)
        history, claims, notes = build._usable_noise("m", _points("1"), False)
        assert history is None and claims is None
        [note] = notes
        assert str(path) in note and "not used" in note and note.startswith(build.NO_NOISE_NOTE), note


def test_a_claim_without_a_threshold_of_its_version_is_flagged_as_judged_without_noise(tmp_path, monkeypatch):
    """The verdicts' ``no_noise`` comes from the thresholds used, not from the notes: a noise
    file of another benchmark version leaves the claim without a run-to-run interval."""
    from impls.harness.report.claims import BenchmarkSource, Claim, PointRef
    from impls.harness.report.machine_state import MachineState
    from impls.harness.report.verdicts import evaluate_claim

    claim = Claim(id="c", system="bandana", figure="f", statement="s", paper_value=1.0, unit="x", source="text",
                  approx=False, tolerance=0.1, requires=(), measured=BenchmarkSource(PointRef(RATE, {})))
    points = _points("2").assign(params=[{}], status=["ok"], commit=["a" * 40])
    points["param_label"] = [""]
    path = tmp_path / "m.json"
    monkeypatch.setattr(build, "default_noise_path", lambda machine: path)
    state = MachineState("m", None, "test", {})
    for version, lacks in (("2", False), ("1", True)):
        noise.save_noise(noise.Noise("m", "2026-12-03T00:00:00+00:00", [],
                                     {(RATE, ""): noise.Threshold(RATE, "", 2, 0.01, 0.03, version)}), path)
        _, for_claims, notes = build._usable_noise("m", points, False)
        result = evaluate_claim(claim, points, {}, state, for_claims)
        assert result.measured == 1.0 and result.no_noise is lacks, (version, notes)
        assert (result.interval is None) is lacks


def test_history_judges_a_nearer_zero_series_by_its_size():
    """A paired overhead 2 -> -4 in the history is a regression (further from 0), -4 -> 1 an
    improvement, as make compare judges them; a lower-is-better reading would invert both."""
    from impls.harness.report.history import series_steps

    values = [2.0] * 4 + [-4.0] * 4 + [1.0] * 4
    kinds = [(at, kind) for at, _, _, kind in series_steps(values, "nearer_zero", None, ["1"] * 12)]
    assert kinds == [(4, "regression"), (8, "improvement")]


def test_history_captions_say_which_way_is_better_for_every_judged_direction():
    from impls.harness.report import directions, html_page

    assert html_page._DIRECTION_TEXT["nearer_zero"] == "nearer 0 is better"
    assert set(directions.DIRECTIONS) <= set(html_page._DIRECTION_TEXT)


def test_history_resolves_a_level_shift_of_many_commits_below_the_two_run_threshold():
    """sigma 2% on 20 degrees of freedom: two single runs need ~11.5% to differ beyond noise,
    but two levels of 10 commits each resolve ~4.5%; an 8% shift between them is a step,
    pure noise of the same length is none."""
    import numpy as np

    from impls.harness.report.history import series_steps

    sigma, df = 0.02, 20
    threshold = noise.Threshold(RATE, "p", 3, 0.04, noise.two_run_threshold(sigma, df), "", sigma=sigma, df=df)
    assert threshold.level_threshold(1, 1) == threshold.threshold
    assert threshold.level_threshold(1, 1, candidates=19) > threshold.threshold      # the fit chose where to cut
    assert threshold.level_threshold(10, 10, candidates=19) < 0.6 * threshold.threshold
    rng = np.random.default_rng(4)
    noisy = list(100.0 * np.exp(rng.normal(0, sigma, 20)))
    shifted = noisy[:10] + [v * 0.92 for v in noisy[10:]]
    assert [(at, kind) for at, _, _, kind in series_steps(shifted, "higher", threshold)] == [(10, "regression")]
    for seed in range(20):
        quiet = list(100.0 * np.exp(np.random.default_rng(seed).normal(0, sigma, 20)))
        assert series_steps(quiet, "higher", threshold) == []


def test_history_finds_few_steps_in_long_series_of_pure_noise():
    """The fit picks where to cut among 99 places: with the level threshold divided over them,
    100 commits of pure noise (sigma 2%, the threshold's own) rarely show a step."""
    import numpy as np

    from impls.harness.report.history import series_steps

    sigma, df = 0.02, 20
    threshold = noise.Threshold(RATE, "p", 3, 0.04, noise.two_run_threshold(sigma, df), "", sigma=sigma, df=df)
    rng = np.random.default_rng(7)
    series = 100.0 * np.exp(rng.normal(0, sigma, (100, 100)))
    with_steps = sum(bool(series_steps(list(row), "higher", threshold)) for row in series)
    assert with_steps <= 3          # at the threshold's 1-in-1000 rate, split over the places to cut


def test_a_level_threshold_past_float_range_is_infinite_and_longer_levels_resolve_more():
    from impls.harness.report.history import series_steps

    wild = noise.Threshold(RATE, "", 2, 0.2, noise.two_run_threshold(0.2, 1), sigma=0.2, df=1)
    assert wild.level_threshold(10, 10, candidates=19) == float("inf")
    assert series_steps([1.0] * 10 + [1.3] * 10, "lower", wild) == []
    quiet = noise.Threshold(RATE, "", 3, 0.04, noise.two_run_threshold(0.05, 20), sigma=0.05, df=20)
    by_length = [quiet.level_threshold(n, n, candidates=9) for n in range(1, 12)]
    assert by_length == sorted(by_length, reverse=True)
