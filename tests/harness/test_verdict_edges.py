"""Edges of the verdicts and of how the report prints them: a verdict judged without noise is
marked on the single-machine pages, an interval that disagrees with its point estimate, a lower
bound short of the baseline, values of older commits, band edges and ratios at their rounding,
data of an older run that do not fit claims.toml, and the wording of an unknown setting."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from impls.harness.report import formatting as fmt
from impls.harness.report import build, html_page, markdown_page, verdicts
from impls.harness.report.build import build_report
from impls.harness.report.claims import BenchmarkSource, Claim, Condition, PointRef
from impls.harness.report.intervals import Interval
from impls.harness.report.machine_state import CapabilityState, MachineState
from impls.harness.report.verdicts import (INCONCLUSIVE, NOT_MEASURED, NOT_REPRODUCED, PARTLY, REPRODUCED,
                                           ClaimResult, evaluate_claims, tolerance_band)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"
OLD, NEW = "02192a18b969f50b9d1123329e1aaf05f95e66d1", "854149dbb27c7199affb4e772fa341f30f2630b7"
SPEEDUP = "bench_toy.Speed.track_speedup"


def claim(paper, tolerance=0.1, baseline=None, **fields) -> Claim:
    return Claim(**{"id": "c", "system": "slide", "figure": "text", "statement": "s", "paper_value": paper,
                    "unit": "x", "source": "text", "approx": False, "tolerance": tolerance, "requires": (),
                    "baseline": baseline, **fields})


def points(*rows) -> pd.DataFrame:
    """A points frame of (benchmark, value, commit[, history]) rows without parameters."""
    return pd.DataFrame([{"benchmark": r[0], "params": {}, "param_label": "", "value": r[1], "commit": r[2],
                          "status": "ok", "type": "track", "version": "1",
                          **({"history": r[3]} if len(r) > 3 else {})} for r in rows])


def state(cuda: bool = False) -> MachineState:
    return MachineState("toybox", None, "test", {"cuda": CapabilityState("cuda", cuda, None if cuda else "no CUDA")})


def judged(c: Claim, rows: pd.DataFrame, artifacts=None, cuda: bool = False) -> ClaimResult:
    [result] = evaluate_claims([c], rows, artifacts or {}, state(cuda))
    return result


# ------------------------------------------------------------ 1. no noise, single-machine pages

def test_the_single_machine_pages_mark_a_verdict_judged_without_noise():
    c = claim(2.0, 0.1, 1.0, measured=BenchmarkSource(PointRef("b.T.track_x", {})))
    bare = ClaimResult(c, REPRODUCED, 2.0, 1.0, False, "d", no_noise=True)
    noisy = ClaimResult(c, REPRODUCED, 2.0, 1.0, False, "d")
    html = "".join(cell for row in html_page._claim_rows([bare, noisy]) for cell in row)
    assert html.count(f"</span>{fmt.NO_NOISE_MARK}") == 1
    assert "1 verdict(s) marked." in html_page._no_noise_line([bare, noisy])
    assert html_page._no_noise_line([noisy]) == ""
    md = markdown_page._claims_table([bare, noisy])
    assert md.count(f"| {REPRODUCED}{fmt.NO_NOISE_MARK} |") == 1 and md.count(f"| {REPRODUCED} |") == 1
    assert fmt.NO_NOISE_FOOTNOTE in md
    assert fmt.NO_NOISE_FOOTNOTE not in markdown_page._claims_table([noisy])


# ------------------------------------------------------- 2. an interval apart from its point

@pytest.mark.parametrize("value, interval, apart", [
    (1.0, (0.6, 0.9), "below the tolerance band"),      # a trend's rho of 1 with a bootstrap that leaves it out
    (12.0, (3.0, 5.0), "below the tolerance band"),     # partly above the band, interval partly below it
    (8.0, (0.5, 0.9), "at or past the no-effect value"),
    (3.0, (8.0, 8.5), "inside the tolerance band"),
])
def test_an_interval_wholly_apart_from_its_point_estimate_is_inconclusive(monkeypatch, value, interval, apart):
    c = claim(1.0 if value == 1.0 else 8.0, 0.05 if value == 1.0 else 0.15, None if value == 1.0 else 1.0,
              measured=BenchmarkSource(PointRef("b.T.track_x", {})))
    monkeypatch.setattr(verdicts, "claim_interval", lambda *a, **k: Interval(*interval, "bootstrap"))
    result = judged(c, points(("b.T.track_x", value, "b" * 40)))
    assert result.verdict == INCONCLUSIVE, result.detail
    assert apart in result.detail and "the numbers disagree with each other" in result.detail


def test_an_interval_holding_its_point_estimate_in_one_place_keeps_the_verdict(monkeypatch):
    c = claim(8.0, 0.15, 1.0, measured=BenchmarkSource(PointRef("b.T.track_x", {})))
    monkeypatch.setattr(verdicts, "claim_interval", lambda *a, **k: Interval(7.5, 8.5, "bootstrap"))
    assert judged(c, points(("b.T.track_x", 8.0, "b" * 40))).verdict == REPRODUCED


# ------------------------------------------- 3. a lower bound short of the baseline it lies below

@pytest.mark.parametrize("value, verdict", [
    (0.8, INCONCLUSIVE),        # at least 0.8: partly (0.8..1) or not reproduced (>= 1)
    (0.5, INCONCLUSIVE),        # inside the band: it or above
    (1.2, NOT_REPRODUCED),      # at least 1.2: past the no-effect value whatever the truth
])
def test_a_lower_bound_above_a_band_below_the_baseline_is_not_partly(value, verdict):
    c = claim(0.5, 0.2, 1.0, measured=BenchmarkSource(PointRef("b.S.track_ratio", {})),
              lower_bound_when=BenchmarkSource(PointRef("b.S.track_lo", {})))
    result = judged(c, points(("b.S.track_ratio", value, "b" * 40), ("b.S.track_lo", 1.0, "b" * 40)))
    assert result.verdict == verdict
    if value == 0.8:
        assert "at least 0.8×, above the band and below the no-effect value" in result.detail


# --------------------------------------------------------------- 4. values of older commits

def _copy_results(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    shutil.copytree(FIXTURES / "asv_results", results)
    return results


def _drop_from_newest(results: Path, benchmark: str) -> None:
    path = results / "toybox" / f"{NEW[:8]}-existing-py.json"
    doc = json.loads(path.read_text())
    del doc["results"][benchmark]
    path.write_text(json.dumps(doc))


@pytest.fixture
def no_noise(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "default_noise_path", lambda machine: tmp_path / "noise" / f"{machine}.json")


def test_a_benchmark_value_of_an_older_commit_says_so(tmp_path, no_noise):
    results = _copy_results(tmp_path)
    _drop_from_newest(results, SPEEDUP)          # not run again at NEW: its newest value is OLD's
    report = build_report("toybox", results, tmp_path / "artifacts", FIXTURES / "claims.toml", {})
    [result] = [r for r in report.claims if r.claim.id == "speedup-reproduced"]
    assert result.commit == OLD
    assert f"from the run at {OLD[:8]}, older than the newest results ({NEW[:8]})" in result.detail
    assert any("speedup-reproduced" in n and "read benchmark results of older commits" in n for n in report.notes)
    fresh = build_report("toybox", _copy_results(tmp_path / "b"), tmp_path / "artifacts", FIXTURES / "claims.toml", {})
    [same] = [r for r in fresh.claims if r.claim.id == "speedup-reproduced"]
    assert "older than the newest" not in same.detail


def test_a_cuda_value_older_than_the_cpu_value_is_said():
    c = claim(3.19, 0.15, 1.0, measured=BenchmarkSource(PointRef("b.Srtf.track_ratio", {})),
              measured_cuda=BenchmarkSource(PointRef("b.SrtfCuda.track_ratio", {})))
    rows = points(("b.Srtf.track_ratio", 3.0, NEW, 1), ("b.SrtfCuda.track_ratio", 1.1, OLD, 0))
    result = judged(c, rows, cuda=True)
    assert result.measured == 1.1
    assert result.detail.startswith(f"CUDA run, older than the CPU run's value (3× at {NEW[:8]}")
    same = judged(c, points(("b.Srtf.track_ratio", 3.0, NEW, 1), ("b.SrtfCuda.track_ratio", 1.1, NEW, 1)), cuda=True)
    assert same.detail.startswith("CUDA run: ")


# ------------------------------------------------------ 5. band edges and ratios at rounding

@pytest.mark.parametrize("value", [2.7114, 2.71149, 2.7115, 3.19, 3.6685, 3.66851, 3.6686])
def test_a_value_prints_on_its_side_of_the_printed_band(value):
    c = claim(3.19, 0.15, 1.0, measured=BenchmarkSource(PointRef("b.T.track_x", {})))
    lowest, highest = tolerance_band(c)
    printed_low, printed_high = (float(x) for x in fmt.band(c).rstrip("×").split("–"))
    result = judged(c, points(("b.T.track_x", value, "b" * 40)))
    shown = float(fmt.measured(result).split("×")[0])
    inside = printed_low <= shown <= printed_high
    assert inside == (result.verdict == REPRODUCED), (fmt.band(c), fmt.measured(result), result.verdict)
    assert (printed_low, printed_high) == (lowest, highest)


def test_a_ratio_at_a_band_edge_is_not_printed_like_one_across_it():
    c = claim(3.19, 0.15, 1.0, measured=BenchmarkSource(PointRef("b.T.track_x", {})))
    at_edge, below = (judged(c, points(("b.T.track_x", v, "b" * 40))) for v in (2.7115, 2.71149))
    assert (at_edge.verdict, below.verdict) == (REPRODUCED, PARTLY)
    assert fmt.ratio(at_edge) == "0.85" and fmt.ratio(below) != fmt.ratio(at_edge)
    assert float(fmt.ratio(below)) < 0.85
    ranged = claim((2.0, 3.0), 0.1, 1.0, measured=BenchmarkSource(PointRef("b.T.track_x", {})))
    outside = judged(ranged, points(("b.T.track_x", 3.001, "b" * 40)))
    assert fmt.ratio(outside) != "1.00" and not outside.in_range


# ------------------------------------- 6. data of an older run or benchmark version that do not fit

CLAIMS_TOML = """
[[claim]]
id = "speedup-scaled"
system = "salus"
figure = "abstract"
statement = "Toy speed-up at scale 1."
paper_value = 3.19
unit = "x"
source = "abstract"
approx = false
tolerance = 0.1
baseline = 1.0
requires = []
measured = {{ benchmark = "{benchmark}", params = {{ scale = 1 }} }}

[[claim]]
id = "curve-final"
system = "slide"
figure = "text"
statement = "Final P@1."
paper_value = 0.32
unit = "P@1"
source = "text"
approx = false
tolerance = 0.1
requires = []
measured = {{ artifact = "toy_curve", path = "data.final_p_at_1" }}
"""


def _declare_scale(results: Path, version: str | None = None) -> None:
    """benchmarks.json of code that now takes a 'scale' parameter (and, given, another version)."""
    path = results / "benchmarks.json"
    info = json.loads(path.read_text())
    info[SPEEDUP]["param_names"], info[SPEEDUP]["params"] = ["scale"], [["1"]]
    if version:
        info[SPEEDUP]["version"] = version
    path.write_text(json.dumps(info))


def _curve(commit: str, data: dict) -> dict:
    return {"schema": 1, "name": "toy_curve", "experiment": "toy", "synthetic": True, "profile": "smoke",
            "created": "2024-02-01T13:00:00+00:00", "machine": "toybox", "commit": commit, "data": data}


def _report(tmp_path: Path, results: Path, artifact: dict) -> dict[str, ClaimResult]:
    claims = tmp_path / "claims.toml"
    claims.write_text(CLAIMS_TOML.format(benchmark=SPEEDUP))
    root = tmp_path / "artifacts"
    path = root / "toybox" / artifact["commit"] / "toy_curve.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(artifact))
    return {r.claim.id: r for r in build_report("toybox", results, root, claims, {}).claims}


def test_data_of_an_older_run_that_do_not_fit_ask_for_a_new_run(tmp_path, no_noise):
    results = _copy_results(tmp_path)
    _declare_scale(results)
    _drop_from_newest(results, SPEEDUP)
    found = _report(tmp_path, results, _curve(OLD, {"p_at_1_final": 0.3}))       # an older layout
    for cid in ("speedup-scaled", "curve-final"):
        verdict = found[cid].verdict
        assert verdict.startswith(f"{NOT_MEASURED}: from an older run (at {OLD[:8]}") and verdict.endswith(
            "run it again"), verdict
        assert "claims.toml points at" not in verdict


def test_data_of_another_benchmark_version_that_do_not_fit_ask_for_a_new_run(tmp_path, no_noise):
    results = _copy_results(tmp_path)
    _declare_scale(results, version="f" * 64)
    found = _report(tmp_path, results, _curve(NEW, {"p_at_1_final": 0.3}))
    assert found["speedup-scaled"].verdict.startswith(f"{NOT_MEASURED}: from another version of {SPEEDUP}")
    assert found["speedup-scaled"].verdict.endswith("run it again")
    # the newest run's own artifact does not fit: that is claims.toml's to fix
    assert found["curve-final"].verdict.startswith(f"{NOT_MEASURED}: claims.toml points at data that do not fit")


# --------------------------------------------------------------------- 7. wording

def test_a_value_whose_setting_no_artifact_tells_is_not_called_another_setting():
    c = claim((1.0, float("inf")), 0.0, 1.0, measured=BenchmarkSource(PointRef("b.S.track_ratio", {})),
              applies_when=Condition("toy_tta", "data.threads", equals=2))
    rows = points(("b.S.track_ratio", 1.2, "b" * 40))
    unknown = judged(c, rows)
    assert unknown.verdict.startswith(NOT_MEASURED)
    assert unknown.detail.endswith("; cannot tell the setting of 1.2×") and "another setting" not in unknown.detail
    other = judged(c, rows, {"toy_tta": {"commit": "b" * 40, "data": {"threads": 44}}})
    assert other.detail.endswith("; 1.2× is of another setting than the claim's")
    # a bound keeps its words: ">= 1.2" read as "1.2" would say the run measured it
    bounded = dataclasses.replace(c, lower_bound_when=BenchmarkSource(PointRef("b.S.track_lo", {})))
    other = judged(bounded, points(("b.S.track_ratio", 1.2, "b" * 40), ("b.S.track_lo", 1.0, "b" * 40)),
                   {"toy_tta": {"commit": "b" * 40, "data": {"threads": 44}}})
    assert other.detail.endswith("; at least 1.2× is of another setting than the claim's"), other.detail
    # no value at all (no target to time), and a run of another setting: the setting is the reason
    nan = points(("b.S.track_ratio", float("nan"), "b" * 40)).assign(status="skipped")   # asv's NaN
    other = judged(c, nan, {"toy_tta": {"commit": "b" * 40, "data": {"threads": 44}}})
    assert other.verdict == f"{NOT_MEASURED}: this profile's run has data.threads = 44; the claim is about data.threads = 2", other
    assert judged(c, nan, {"toy_tta": {"commit": "b" * 40, "data": {"threads": 2}}}).verdict != other.verdict
    failed = judged(c, nan.assign(status="failed"), {"toy_tta": {"commit": "b" * 40, "data": {"threads": 44}}})
    assert failed.verdict == other.verdict                               # a failure of another setting too
    # a required capability this machine lacks comes first: the run could not have measured it
    # here; a setting the artifact tells comes after it, a second thing the user must change
    needs = judged(dataclasses.replace(c, requires=("cuda",)), nan, {"toy_tta": {"commit": "b" * 40,
                                                                               "data": {"threads": 44}}})
    assert needs.verdict == (f"{NOT_MEASURED}: no CUDA; and this profile's run has data.threads = 44; the claim is "
                             "about data.threads = 2"), needs.verdict
    at_setting = judged(dataclasses.replace(c, requires=("cuda",)), nan,
                        {"toy_tta": {"commit": "b" * 40, "data": {"threads": 2}}})
    assert at_setting.verdict == f"{NOT_MEASURED}: no CUDA", at_setting.verdict
    untold = judged(dataclasses.replace(c, requires=("cuda",)), nan)
    assert untold.verdict == f"{NOT_MEASURED}: no CUDA", untold.verdict
    # the claims file's words for the setting, and how to get there
    worded = dataclasses.replace(c, applies_when=Condition("toy_tta", "data.threads", equals=2, what="SLIDE's threads",
                                                           hint="the quick profile"))
    other = judged(worded, nan, {"toy_tta": {"commit": "b" * 40, "data": {"threads": 44}}})
    assert other.verdict == (f"{NOT_MEASURED}: this profile's run has SLIDE's threads = 44; the claim is about "
                             "SLIDE's threads = 2 (the quick profile)"), other.verdict


def test_report_json_rows_say_which_verdicts_were_judged_without_noise():
    import json as _json

    from impls.harness.report.report_json import claim_document, schema_path, validate

    c = claim(2.0, 0.1, 1.0, measured=BenchmarkSource(PointRef("b.T.track_x", {})))
    bare = claim_document(ClaimResult(c, REPRODUCED, 2.0, 1.0, False, "d", no_noise=True), "m", "p")
    unmeasured = claim_document(ClaimResult(c, f"{NOT_MEASURED}: x", no_noise=True), "m", "p")
    assert bare["no_noise"] is True and unmeasured["no_noise"] is False
    schema = _json.loads(schema_path().read_text())["properties"]["claims"]["items"]
    assert validate(bare, schema) == []


def test_the_summary_says_why_claims_are_not_measured():
    """"17 not measured" lumped claims nothing measures yet with claims this machine cannot
    measure and claims of another setting: a reader took it for work left undone. Each
    verdict's reason is sorted by what the report knows, not by how its words begin."""
    from impls.harness.report.verdicts import NOT_MEASURED_YET, ClaimResult, unmeasured_kind

    tmpfs = MachineState("toybox", None, "test", {
        "cuda": CapabilityState("cuda", False, "needs CUDA: no NVIDIA GPU on this machine"),
        "o_direct": CapabilityState("o_direct", False, "the filesystem at /tmp (tmpfs) refuses O_DIRECT")})
    c = claim(2.0, measured=BenchmarkSource(PointRef("b.S.track_ratio", {})))
    cases = [(REPRODUCED, c, ""), (PARTLY, c, ""), (INCONCLUSIVE, c, ""),
             (NOT_MEASURED_YET, dataclasses.replace(c, measured=None), "yet"),
             (NOT_MEASURED_YET, dataclasses.replace(c, measured=None), "yet"),
             (f"{NOT_MEASURED}: the filesystem at /tmp (tmpfs) refuses O_DIRECT",
              dataclasses.replace(c, requires=("o_direct",)), "lacks"),
             (f"{NOT_MEASURED}: needs CUDA: x; and this profile's run has SLIDE's threads = 2; the claim is ...",
              dataclasses.replace(c, requires=("cuda",)), "lacks"),
             (f"{NOT_MEASURED}: needs the real Amazon-670K", c, "lacks"),       # the benchmark's own skip
             (f"{NOT_MEASURED}: this profile's run has SLIDE's threads = 2; the claim is about ...", c, "setting"),
             (f"{NOT_MEASURED}: only a lower bound", c, "other")]
    results = []
    for verdict, judged_claim, kind in cases:
        assert unmeasured_kind(judged_claim, verdict, tmpfs) == kind, verdict
        results.append(ClaimResult(judged_claim, verdict, unmeasured=kind))
    summary = fmt.verdict_summary(results)
    assert summary == ("1 reproduced, 1 partly, 0 not reproduced, 7 not measured (2 with no experiment yet, 3 needing "
                       "hardware or data this machine lacks, 1 of another setting than this profile runs, 1 for other "
                       "reasons their rows give), 1 inconclusive"), summary
    assert fmt.verdict_summary([ClaimResult(c, REPRODUCED)]) == "1 reproduced, 0 partly, 0 not reproduced, 0 not measured"
    # a result built without a reason (an older caller) counts under the rows' own reasons
    assert "(1 for other reasons their rows give)" in fmt.verdict_summary([ClaimResult(c, f"{NOT_MEASURED}: x")])
    # evaluate_claim sets it: a claim that needs O_DIRECT on a tmpfs machine
    needs = verdicts.evaluate_claim(dataclasses.replace(c, requires=("o_direct",)),
                                    points(("b.S.track_ratio", float("nan"), "b" * 40)).assign(status="skipped"), {}, tmpfs)
    assert needs.verdict.startswith(f"{NOT_MEASURED}: the filesystem") and needs.unmeasured == "lacks"
