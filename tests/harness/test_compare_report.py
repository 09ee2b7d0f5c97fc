"""The report's side of regression tracking: intervals and "inconclusive", report.json
against its schema, SVG figures, steps in the history judged by direction."""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from impls.harness.report import render_report
from impls.harness.report.claims import BenchmarkSource, Claim, PointRef, TrendSource
from impls.harness.report.history import history_figure, series_steps
from impls.harness.report.intervals import Interval
from impls.harness.report.machine_state import MachineState
from impls.harness.report.noise import Noise, Threshold
from impls.harness.report.report_json import report_document, validate
from impls.harness.report.results import commits
from impls.harness.report.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, evaluate_claim

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"
SCHEMA = json.loads((ROOT / "reports" / "report.schema.json").read_text())
STATE = MachineState("m", None, "test", {})


def points(values: dict[int, float], benchmark="b.B.track_rate") -> pd.DataFrame:
    return pd.DataFrame([{"benchmark": benchmark, "params": {"n": n}, "param_label": f"n={n}",
                          "value": v, "status": "ok", "commit": "c" * 40} for n, v in values.items()])


def rate_claim(paper: float, measured=None) -> Claim:
    return Claim(id="c", system="slide", figure="text", statement="s", paper_value=paper, unit="x",
                 source="text", approx=False, tolerance=0.1, requires=(), baseline=1.0,
                 measured=measured or BenchmarkSource(PointRef("b.B.track_rate", {"n": 1})))


def noise_of(spreads: dict[int, float], benchmark="b.B.track_rate") -> Noise:
    return Noise("m", "t", [], {(benchmark, f"n={n}"): Threshold(benchmark, f"n={n}", 2, s, 3 * s)
                                for n, s in spreads.items()})


@pytest.mark.parametrize("measured, spread, verdict", [
    (2.0, 0.04, REPRODUCED),      # 1.92..2.08 inside the band 1.8..2.2
    (2.15, 0.2, INCONCLUSIVE),    # 1.72..2.58 crosses 2.2
    (2.5, 0.04, "partly"),        # wholly above the band
    (0.5, 0.04, NOT_REPRODUCED),
    (1.1, 0.3, INCONCLUSIVE),     # 0.77..1.43 holds the baseline 1: partly or not reproduced
    (2.1, 0.08, INCONCLUSIVE),    # the other of two repeats may be 2.1 * 1.08 = 2.27, above the band
])
def test_an_interval_across_the_tolerance_band_is_inconclusive(measured, spread, verdict):
    """The value is one of the repeats, at either end of them: its interval reaches the whole
    repeat range on both sides, so it always holds the other repeat."""
    result = evaluate_claim(rate_claim(2.0), points({1: measured}), {}, STATE, noise_of({1: spread}))
    assert result.verdict == verdict
    assert result.interval.low == pytest.approx(measured * (1 - spread))
    assert result.interval.high == pytest.approx(measured * (1 + spread))
    assert result.benchmarks == ("b.B.track_rate",) and result.commit == "c" * 40
    if verdict == INCONCLUSIVE:
        assert "point estimate: " in result.detail


def test_without_repeats_there_is_no_interval_and_the_verdict_stands():
    result = evaluate_claim(rate_claim(2.0), points({1: 2.15}), {}, STATE, None)
    assert result.interval is None and result.verdict == REPRODUCED


def test_a_trend_of_noise_free_points_has_a_point_interval_and_a_noisy_one_a_wide_one():
    trend = TrendSource("b.B.track_rate", "n")
    claim = Claim(id="t", system="bandana", figure="f", statement="s", paper_value=1.0, unit="rho",
                  source="text", approx=False, tolerance=0.2, requires=(), measured=trend)
    values = {1: 1.0, 4: 1.1, 16: 1.2, 64: 1.3}
    exact = evaluate_claim(claim, points(values), {}, STATE, noise_of(dict.fromkeys(values, 0.0)))
    assert (exact.interval.low, exact.interval.high) == (1.0, 1.0)
    noisy = evaluate_claim(claim, points(values), {}, STATE, noise_of(dict.fromkeys(values, 0.5)))
    assert noisy.interval.low < 0.5 and noisy.verdict == INCONCLUSIVE


def test_interval_straddles():
    assert Interval(1, 3, "").straddles(2, 4) and not Interval(2.5, 3, "").straddles(2, 4)
    assert not Interval(5, 6, "").straddles(2, 4)


def test_report_json_validates_and_carries_every_claim(tmp_path):
    out = render_report("toybox", tmp_path / "out", FIXTURES / "asv_results", tmp_path / "none",
                        FIXTURES / "claims.toml", figure_specs={})
    document = json.loads((out / "report.json").read_text())
    assert validate(document, SCHEMA) == []
    assert {c["id"] for c in document["claims"]} >= {"speedup-reproduced", "layout-ratio"}
    claim = next(c for c in document["claims"] if c["id"] == "speedup-reproduced")
    assert claim["machine"] == "toybox" and claim["benchmarks"] and claim["commit"]
    assert claim["data"] is None    # the fixture's toy benchmarks name no experiment of this checkout
    assert {p.suffix for p in (out / "figures").iterdir()} == {".png", ".svg"}


def test_the_validator_catches_what_the_schema_forbids():
    good = {"schema_version": 5, "machine": "m", "profile": "p", "generated": "g", "commits": [],
            "claims": [], "figures": [], "history": []}
    assert validate(good, SCHEMA) == []
    assert validate({**good, "extra": 1}, SCHEMA) == ["$: unexpected key 'extra'"]
    assert validate({k: v for k, v in good.items() if k != "claims"}, SCHEMA) == ["$: missing 'claims'"]
    assert validate({**good, "schema_version": "5"}, SCHEMA)[0].startswith("$.schema_version: expected")
    assert validate(1.0, {"type": "number", "format": "x"})[0].endswith("not supported by this validator")


@pytest.mark.parametrize("direction, kind", [("higher", "regression"), ("lower", "improvement"),
                                             ("flag", "change")])
def test_history_steps_are_judged_with_the_declared_direction(direction, kind):
    values = [10.0, 10.1, 9.9, 10.0, 7.0, 7.1, 6.9, 7.0]
    [(at, before, after, found)] = series_steps(values, direction)
    assert at == 4 and before == pytest.approx(10.0) and after == pytest.approx(7.0)
    assert found == kind


def test_steps_within_the_measured_noise_are_left_out():
    values = [10.0, 10.1, 9.9, 10.0, 9.0, 9.1, 8.9, 9.0]
    assert len(series_steps(values, "higher")) == 1
    assert series_steps(values, "higher", threshold=Threshold("b", "", 2, 0.05, 0.15)) == []
    too_noisy = Threshold("b", "", 2, 0.2, 0.6)         # within its wide threshold: no step
    assert series_steps([10.0] * 4 + [7.0] * 4, "higher", threshold=too_noisy) == []


def test_a_flat_history_has_no_steps():
    assert series_steps([5.0] * 6, "higher") == []
    assert series_steps([5.0, 1.0], "higher") == []  # too few points to tell


def test_history_figure_marks_its_steps():
    rows = pd.DataFrame([{"commit": f"{i:040d}", "date": pd.Timestamp(2024, 1, 1 + i, tz="UTC"),
                          "started_at": pd.Timestamp(2024, 1, 1 + i, tz="UTC"), "benchmark": "b.B.track_x",
                          "type": "track", "unit": "x", "params": {}, "param_label": "",
                          "value": 10.0 if i < 4 else 20.0, "env_name": "e"} for i in range(8)])
    figure, _, _ = history_figure(rows, commits(rows), "lower")
    assert [(s.commit, s.kind) for s in figure.steps] == [(f"{4:040d}", "regression")]
    assert any("not known to this checkout" in t.get_text() for t in figure.texts)
    measured_red = {t.get_color() for t in figure.texts if "not known to this checkout" in t.get_text()}
    measured, _, _ = history_figure(rows, commits(rows), "lower", data="not synthetic")
    plain = {t.get_color() for t in measured.texts if t.get_text().startswith("Measured data")}
    assert plain and measured_red and not measured_red & plain      # not known is not styled as measured
    synthetic, _, _ = history_figure(rows, commits(rows), "lower", data="synthetic")
    assert any(t.get_text().startswith("Synthetic data") for t in synthetic.texts)   # on the image itself


def test_a_history_across_two_environments_is_cut_not_judged():
    """A plain asv run's virtualenv after the project's .venv: the level it moved to is a new
    environment's (compare notes the change; thresholds of one do not cover it), not a
    regression; two clones' .venv are one environment, and a step within one is judged."""
    def rows(envs, values):
        return pd.DataFrame([{"commit": f"{i:040d}", "date": pd.Timestamp(2024, 1, 1 + i, tz="UTC"),
                              "started_at": pd.Timestamp(2024, 1, 1 + i, tz="UTC"), "benchmark": "b.B.track_x",
                              "type": "track", "unit": "x", "params": {}, "param_label": "", "value": value,
                              "env_name": env, "version": "1"} for i, (env, value) in enumerate(zip(envs, values))])

    venv = [f"existing-py_tmp_clone{i % 2}_.venv_bin_python" for i in range(4)]
    mixed = rows(venv + ["virtualenv-py3.11-torch2.13.0"] * 4, [10.0] * 4 + [20.0] * 4)
    figure, _, _ = history_figure(mixed, commits(mixed), "lower")
    assert [(s.commit, s.kind) for s in figure.steps] == [(f"{4:040d}", "new environment")]
    assert any(t.get_text() == "new environment" for ax in figure.axes for t in ax.texts)
    clones = rows(venv * 2, [10.0] * 4 + [20.0] * 4)
    figure, _, _ = history_figure(clones, commits(clones), "lower")
    assert [(s.commit, s.kind) for s in figure.steps] == [(f"{4:040d}", "regression")]


def test_every_step_kind_the_history_draws_is_one_the_schema_allows():
    """A history across two environments (a plain asv run after make bench) made report.json
    break its own schema, and no report was written at all."""
    from impls.harness.report.history_steps import STEP_COLOURS

    schema = json.loads((Path(__file__).resolve().parents[2] / "reports" / "report.schema.json").read_text())
    steps = schema["properties"]["history"]["items"]["properties"]["steps"]["items"]["properties"]
    assert set(steps["kind"]["enum"]) == set(STEP_COLOURS)


def test_a_report_that_breaks_its_schema_is_said_to_be_the_suites_defect(monkeypatch, tmp_path, capsys):
    import importlib.util

    from impls.harness.report.report_json import ReportSchemaError

    script = Path(__file__).resolve().parents[2] / "scripts" / "render_report.py"
    spec = importlib.util.spec_from_file_location("render_report_script", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def broken(*args, **kwargs):
        raise ReportSchemaError("report.json breaks reports/report.schema.json:\n  $.x: 'y' is not one of ['z']")

    monkeypatch.setattr(module, "render_report", broken)
    monkeypatch.setattr(sys, "argv", ["render_report.py", "--machine", "m", "--out", str(tmp_path / "out")])
    assert module.main() == 1
    err = capsys.readouterr().err
    assert "a defect of the suite, not of the results: the report it was rendering was not written" in err


def test_report_document_of_the_fixture_lists_history_steps_and_files(tmp_path):
    from impls.harness.report.build import build_report

    report = build_report("toybox", FIXTURES / "asv_results", tmp_path / "none",
                          FIXTURES / "claims.toml", {})
    document = report_document(report)
    assert validate(document, SCHEMA) == []
    assert all(h["files"][1].endswith(".svg") for h in document["history"])
    from impls.harness.report.markdown_page import render_markdown

    from impls.harness.report.history_steps import Step

    step = Step("n=1", "f" * 40, 10.0, 20.0, "regression")   # report.md lists steps, as the HTML captions do
    report = dataclasses.replace(report, history=[dataclasses.replace(report.history[0], steps=(step,))])
    assert "\n- regression at ffffffff: n=1 10 → 20" in render_markdown(report)


def test_two_machines_render_side_by_side(tmp_path):
    import shutil

    from impls.harness.report.render import render_machines

    results = tmp_path / "results"
    shutil.copytree(FIXTURES / "asv_results", results)
    shutil.copytree(results / "toybox", results / "optane-box")
    made = render_machines(["toybox", "optane-box"], results, tmp_path / "none",
                           FIXTURES / "claims.toml", tmp_path / "out", figure_specs={})
    side = tmp_path / "out" / "side-by-side-toybox+optane-box"
    assert made[0] == side and {p.name for p in made[1:]} == {"toybox", "optane-box"}
    html = (side / "index.html").read_text()
    assert "toybox (profile" in html and "optane-box (profile" in html
    assert html.count("speedup-reproduced") == 1  # one row, a column per machine
    document = json.loads((side / "report.json").read_text())
    assert document["machines"] == ["toybox", "optane-box"]
    assert all(validate(r, SCHEMA) == [] for r in document["reports"])
    assert (tmp_path / "out" / "optane-box" / "report.json").is_file()


def trend_claim() -> Claim:
    return Claim(id="t", system="bandana", figure="f", statement="s", paper_value=1.0, unit="rho",
                 source="text", approx=False, tolerance=0.2, requires=(),
                 measured=TrendSource("b.B.track_rate", "n"))


def with_skipped(values: dict[int, float], skipped: list[int]) -> pd.DataFrame:
    frame = points(values)
    frame.loc[frame["params"].map(lambda p: p["n"] in skipped), "status"] = "skipped"
    return frame


def test_a_trend_over_two_surviving_points_is_not_measured():
    # rho over 2 points is always +-1: with 3 of 5 skipped the claim must not read "reproduced"
    result = evaluate_claim(trend_claim(), with_skipped({1: 1.0, 4: 9, 16: 9, 64: 9, 256: 2.0}, [4, 16, 64]),
                            {}, STATE)
    assert result.measured is None
    assert result.verdict == "not measured: 2 of 5 points of the sweep measured here; a trend over part of a sweep needs 3"
    assert "2 of 5 points" in result.detail and "n=4 (skipped)" in result.detail


def test_a_trend_with_some_points_missing_says_so_beside_its_value():
    from impls.harness.report import formatting

    result = evaluate_claim(trend_claim(), with_skipped({1: 1.0, 4: 2.0, 16: 3.0, 64: 9, 256: 9}, [64, 256]),
                            {}, STATE)
    assert result.measured == 1.0 and result.coverage == "3 of 5 points"
    assert formatting.measured(result).endswith("(3 of 5 points)")
    assert "n=64 (skipped), n=256 (skipped)" in result.detail
    full = evaluate_claim(trend_claim(), points({1: 1.0, 4: 2.0, 16: 3.0}), {}, STATE)
    assert full.coverage == "" and "points)" not in formatting.measured(full)


def test_a_whole_sweep_of_two_points_is_the_sign_of_one_change():
    result = evaluate_claim(trend_claim(), points({64: 1.0, 256: 2.0}), {}, STATE)
    assert result.measured == 1.0 and "the sign of one change" in result.detail
    assert result.verdict == INCONCLUSIVE and "point estimate: reproduced" in result.detail   # never a finding
    falling = evaluate_claim(trend_claim(), points({64: 2.0, 256: 1.0}), {}, STATE)
    assert falling.verdict == INCONCLUSIVE and "point estimate: not reproduced" in falling.detail


def test_side_by_side_says_when_columns_are_of_different_commits(tmp_path):
    import shutil

    from impls.harness.report.render import render_machines

    results = tmp_path / "results"
    shutil.copytree(FIXTURES / "asv_results", results)
    shutil.copytree(results / "toybox", results / "old-box")
    runs = sorted((p for p in (results / "old-box").glob("*.json") if p.name != "machine.json"),
                  key=lambda p: json.loads(p.read_text())["date"])
    for newer in runs[1:]:
        newer.unlink()                                       # old-box has the oldest run only
    for path in (results / "old-box").glob("*.json"):         # its files name their own machine
        path.write_text(path.read_text().replace('"toybox"', '"old-box"'))
    render_machines(["toybox", "old-box"], results, tmp_path / "none", FIXTURES / "claims.toml", tmp_path / "out",
                    figure_specs={})
    html = (tmp_path / "out" / "side-by-side-toybox+old-box" / "index.html").read_text()
    assert "newest results are of different commits" in html
    assert "No artifacts for toybox" in html                  # each machine's notes reach the page
    same = render_machines(["toybox"], results, tmp_path / "none", FIXTURES / "claims.toml", tmp_path / "one",
                           figure_specs={})
    assert "different commits" not in (same[0] / "index.html").read_text()


def test_a_side_by_side_cell_says_its_value_is_synthetic():
    from impls.harness.report.side_by_side import _cell
    from impls.harness.report.verdicts import ClaimResult

    claim_ = trend_claim()
    synthetic = ClaimResult(claim_, "reproduced", 0.9, 0.9, False, "d", data="synthetic")
    assert "0.9 rho (synthetic data)" in _cell(synthetic)
    assert "(measured data)" in _cell(ClaimResult(claim_, "reproduced", 0.9, 0.9, False, "d", data="not synthetic"))


def test_a_machine_without_artifacts_is_no_other_profile():
    """A column whose profile no artifact tells reads "not known", not "a different profile"."""
    from impls.harness.report.model import Report
    from impls.harness.report.side_by_side import _machines

    def report(machine, profile):
        return Report(machine=machine, generated="", profile=profile, commits=pd.DataFrame({"commit": ["a" * 40]}),
                      environment=[], claims=[], peers=[], figures=[], history=[], skipped=[], notes=[])

    html = _machines([report("vm-quick", "quick"), report("box-quick", "unknown")])
    assert "different profiles" not in html and "No artifact tells the profile of box-quick" in html
    html = _machines([report("vm-quick", "quick"), report("box-full", "full")])
    assert "different profiles (full, quick)" in html and "No artifact tells" not in html


def _many(params: list[dict], *stepped: dict) -> pd.DataFrame:
    """Eight commits of one benchmark, a series per ``params`` entry; those equal to one of
    ``stepped`` double (lower is better: a regression) at the fifth commit."""
    return pd.DataFrame([{"commit": f"{i:040d}", "date": pd.Timestamp(2024, 1, 1 + i, tz="UTC"),
                          "started_at": pd.Timestamp(2024, 1, 1 + i, tz="UTC"), "benchmark": "b.B.track_x",
                          "type": "track", "unit": "x", "params": p,
                          "param_label": ", ".join(f"{k}={v}" for k, v in p.items()),
                          "value": 20.0 if p in stepped and i >= 4 else 10.0, "env_name": "e"}
                         for p in params for i in range(8)])


def test_a_step_in_a_series_past_a_panels_cap_is_drawn_and_listed():
    """A panel draws at most 8 series: a regression in the 10th was neither drawn nor listed, so
    the report showed that commit as harmless. Series with a step are drawn first, and every
    series' steps are listed."""
    params = [{"a": a, "b": b} for a in (0, 1) for b in range(10)]
    rows = _many(params, {"a": 1, "b": 9})
    figure, series, shown = history_figure(rows, commits(rows), "lower")
    assert (series, shown) == (20, 16)
    assert [(s.params, s.commit, s.kind) for s in figure.steps] == [("a=1, b=9", f"{4:040d}", "regression")]
    labels = [label for ax in figure.axes for label in ax.get_legend_handles_labels()[1]]
    assert "b=9" in labels


def test_a_panel_holding_a_step_is_kept_past_the_panels_cap():
    params = [{"a": a, "b": b} for a in range(14) for b in range(2)]
    rows = _many(params, {"a": 13, "b": 1})
    figure, series, shown = history_figure(rows, commits(rows), "lower")
    assert [(s.params, s.kind) for s in figure.steps] == [("a=13, b=1", "regression")]
    assert "a=13" in [ax.get_title() for ax in figure.axes if ax.get_visible()]


def test_step_lines_put_regressions_first_and_count_a_cut_once_per_commit():
    from impls.harness.report.history_steps import Step, step_lines

    steps = [Step(f"n={i}", "c" * 40, 1.0, 1.0, "new version") for i in range(140)]
    steps += [Step("n=3", "d" * 40, 1.0, 2.0, "improvement"), Step("n=7", "e" * 40, 1.0, 3.0, "regression")]
    assert step_lines(steps) == ["regression at eeeeeeee: n=7 1 → 3", "improvement at dddddddd: n=3 1 → 2",
                                 "new version at cccccccc: 140 series"]


def test_steps_of_series_in_dropped_panels_are_listed_and_counted_in_the_title():
    params = [{"a": a, "b": b} for a in range(14) for b in range(2)]
    rows = _many(params, *[p for p in params if p["b"] == 1])        # a step in every panel
    figure, series, shown = history_figure(rows, commits(rows), "lower")
    assert len([s for s in figure.steps if s.kind == "regression"]) == 14     # one per a, drawn or not
    assert series == 28 and shown == 24
    assert "4 more series not shown, 2 of them with a step (listed with the figure)" in figure._suptitle.get_text()
