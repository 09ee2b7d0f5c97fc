"""Tests of the report (impls/harness/report) on a real asv results fixture.

tests/fixtures/report/asv_results holds what asv 0.6 wrote for toy_suite/ at two
commits (regenerate.sh); claims.toml there exercises every verdict. Artifacts are
written per test into tmp_path.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from impls.harness.figures import FigureSpec
from impls.harness.report import ClaimsError, NoResultsError, load_claims, render_report
from impls.harness.report.build import build_report
from impls.harness.report import formatting
from impls.harness.report.claims import ArtifactSource, BenchmarkSource, Claim, PointRef, RatioSource
from impls.harness.report.history import (
    MAX_SERIES_PER_PANEL,
    history_figure,
    history_figures,
)
from impls.harness.report.machine_state import (
    CapabilityState,
    MachineState,
    describe_machine,
)
from impls.harness.report.measure import spearman, spearman_rows
from impls.harness.report.output import ReportOutputError, write_report_dir
from impls.harness.report.paper_figures import (
    SYNTHETIC_LABEL,
    captioned_figure,
    render_figure,
    render_paper_figures,
)
from impls.harness.report.results import (
    ResultsError,
    commits,
    latest_points,
    read_results,
)
from impls.harness.report.skipped import required_capabilities
from impls.harness.report.intervals import Interval
from impls.harness.report.verdicts import (
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    ClaimResult,
    band_open,
    evaluate_claims,
    judge,
    ratio_to_paper,
    tolerance_band,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"
RESULTS = FIXTURES / "asv_results"
CLAIMS = FIXTURES / "claims.toml"
REAL_CLAIMS = ROOT / "reports" / "claims.toml"
MACHINE = "toybox"
OLD, NEW = "02192a18b969f50b9d1123329e1aaf05f95e66d1", "854149dbb27c7199affb4e772fa341f30f2630b7"
NO_CUDA = "needs CUDA: no CUDA device"


def fingerprint(cuda: bool = False) -> dict:
    return {
        "machine": MACHINE, "commit": NEW, "profile": "smoke", "created": "2024-02-01T13:00:00+00:00",
        "host": {"cpu_model": "Toy CPU", "cores_logical": 2, "cores_physical": 1,
                 "ram_bytes": 8 * 2 ** 30, "os": "Linux", "kernel": "6.1", "python": "3.11.7"},
        "nvm_target": {"path": "/tmp/nvm.bin", "filesystem": "ext4", "device": "/dev/vda1",
                       "rotational": False, "logical_block_size": 512, "physical_block_size": 4096,
                       "free_bytes": 10 * 2 ** 30},
        "gpu": {"available": cuda, "devices": [], "driver": None, "cuda_version": None},
        "packages": {"numpy": "2.4.0", "torch": "2.13.0", "faiss-cpu": None},
        "capabilities": {
            "fio": {"name": "fio", "available": True, "reason": "", "detail": "fio-3.33"},
            "cuda": {"name": "cuda", "available": cuda, "reason": "" if cuda else NO_CUDA,
                     "detail": "Toy GPU" if cuda else ""},
        },
    }


def record(name: str, data, *, synthetic: bool = True, created: str = "2024-02-01T13:00:00+00:00",
           cuda: bool = False) -> dict:
    return {"schema": 1, "name": name, "experiment": "toy", "synthetic": synthetic, "profile": "smoke",
            "created": created, "machine": MACHINE, "commit": NEW, "fingerprint": fingerprint(cuda),
            "data": data}


def write_artifacts(root: Path, *records: dict) -> Path:
    for rec in records:
        path = root / MACHINE / rec["commit"] / f"{rec['name']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec))
    return root


def draw_curve(data) -> Figure:
    figure = Figure(figsize=(4, 3))
    figure.add_subplot().plot(data["x"], data["y"], marker="o")
    return figure


def draw_broken(data) -> Figure:
    raise ValueError("this figure is broken on purpose")


SPECS = {
    "toy_curve_figure": FigureSpec("toy_curve_figure", "toy_curve", "Toy curve", "slide", "Fig. 5", (), draw_curve),
    "toy_broken_figure": FigureSpec("toy_broken_figure", "toy_curve", "Broken", "slide", "Fig. 6", (), draw_broken),
    "toy_gpu_figure": FigureSpec("toy_gpu_figure", "toy_gpu", "GPU only", "salus", "Fig. 7", ("cuda",), draw_curve),
    "toy_later_figure": FigureSpec("toy_later_figure", "toy_later", "Later", "bandana", "", (), draw_curve),
}
CURVE = {"x": [1, 2, 3], "y": [0.1, 0.25, 0.32], "final_p_at_1": 0.32}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return read_results(RESULTS, MACHINE)


@pytest.fixture
def artifacts_root(tmp_path: Path) -> Path:
    return write_artifacts(tmp_path / "artifacts", record("toy_curve", CURVE))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = write_artifacts(tmp_path_factory.mktemp("artifacts"), record("toy_curve", CURVE))
    return build_report(MACHINE, RESULTS, root, CLAIMS, SPECS)


def no_cuda_state() -> MachineState:
    return MachineState(MACHINE, fingerprint(), "test", {
        "cuda": CapabilityState("cuda", False, NO_CUDA), "fio": CapabilityState("fio", True)})


# ---------------------------------------------------------------- asv results -> DataFrame

def test_results_frame_has_one_row_per_point_per_commit(frame):
    # 5 benchmarks: Failing (2 points), Layout (2), time_small (1), track_speedup (1), Sweep (6)
    assert len(frame) == 2 * 12
    assert set(frame["commit"]) == {OLD, NEW}
    assert set(frame["machine"]) == {MACHINE}
    assert set(frame["env_name"]) == {"existing-py"}
    sweep = frame[frame["benchmark"] == "bench_toy.Sweep.track_effective_bandwidth"]
    assert (sweep["type"] == "track").all() and (sweep["unit"] == "fraction of bytes read").all()
    timing = frame[frame["benchmark"] == "bench_toy.Speed.time_small"]
    assert (timing["type"] == "time").all() and (timing["unit"] == "seconds").all()
    assert frame["date"].min() == pd.Timestamp("2024-01-01 12:00", tz="UTC")


def test_params_follow_asv_cartesian_order_and_keep_python_types(frame):
    sweep = frame[(frame["benchmark"] == "bench_toy.Sweep.track_effective_bandwidth")
                  & (frame["commit"] == NEW)]
    assert list(sweep["params"]) == [
        {"subclusters": s, "table": t} for s in (1, 4, 16) for t in ("user", "post")]
    assert list(sweep["subclusters"]) == [1, 1, 4, 4, 16, 16]
    assert isinstance(sweep["subclusters"].iloc[0], int)
    # SCALE=1.2 at the newest commit: 1.2 * subclusters / 64 (+ 0.01 for "post")
    assert sweep["value"].iloc[:5].tolist() == pytest.approx([0.01875, 0.02875, 0.075, 0.085, 0.3])
    assert sweep["param_label"].iloc[0] == "subclusters=1, table='user'"


def test_skipped_and_failed_points_are_nan_with_their_status(frame):
    skipped = frame[frame["param_label"] == "subclusters=16, table='post'"]
    assert len(skipped) == 2 and skipped["value"].isna().all()
    assert (skipped["status"] == "skipped").all()
    failed = frame[(frame["benchmark"] == "bench_toy.Failing.track_value") & (frame["x"] == 2)]
    assert failed["value"].isna().all() and (failed["status"] == "failed").all()
    assert (frame.loc[frame["value"].notna(), "status"] == "ok").all()


def test_commits_ordered_by_commit_date_and_latest_points_take_the_newest(frame):
    assert commits(frame)["commit"].tolist() == [OLD, NEW]
    latest = latest_points(frame)
    assert len(latest) == 12 and set(latest["commit"]) == {NEW}
    speedup = latest[latest["benchmark"] == "bench_toy.Speed.track_speedup"]["value"]
    assert speedup.tolist() == [pytest.approx(3.0)]


def test_a_benchmark_whose_every_point_failed_still_has_its_rows(tmp_path):
    # asv writes "result": null when every point failed, keeping "params"
    source = json.loads((RESULTS / MACHINE / "854149db-existing-py.json").read_text())
    source["results"]["bench_toy.Layout.track_bytes_used"][0] = None
    (tmp_path / MACHINE).mkdir()
    (tmp_path / MACHINE / "854149db-existing-py.json").write_text(json.dumps(source))
    rows = read_results(tmp_path, MACHINE)
    layout = rows[rows["benchmark"] == "bench_toy.Layout.track_bytes_used"]
    assert layout["param1"].tolist() == ["random", "shp"]
    assert (layout["status"] == "failed").all() and layout["value"].isna().all()
    # without benchmarks.json the type comes from the name and parameters are numbered
    assert (layout["type"] == "track").all() and list(layout["params"].iloc[0]) == ["param1"]


def test_a_result_file_in_another_format_is_named_in_the_error(tmp_path):
    (tmp_path / MACHINE).mkdir()
    bad = tmp_path / MACHINE / "abc-env.json"
    bad.write_text(json.dumps({"version": 1, "results": {}}))
    with pytest.raises(ResultsError, match=r"abc-env\.json: asv result format version 1; expected 2"):
        read_results(tmp_path, MACHINE)


@pytest.mark.parametrize("document, message", [
    ([], "expected asv's table of benchmarks (a JSON object), got a list"),
    ({"version": 2, "b.X.track_x": {"param_names": 5}}, "b.X.track_x: param_names must be a list of names"),
    ({"version": 2, "b.X.track_x": {"unit": 3}}, "b.X.track_x: unit must be text"),
])
def test_a_benchmarks_json_of_another_shape_is_named_not_a_traceback(tmp_path, document, message):
    (tmp_path / "benchmarks.json").write_text(json.dumps(document))
    with pytest.raises(ResultsError, match=re.escape(message)):
        read_results(tmp_path, MACHINE)
    unreadable: list = []
    read_results(tmp_path, MACHINE, unreadable=unreadable)          # the report lists it and goes on
    assert unreadable and message in unreadable[0][1]


def test_no_results_folder_gives_an_empty_frame(tmp_path):
    empty = read_results(tmp_path, MACHINE)
    assert empty.empty and "value" in empty.columns


# ---------------------------------------------------------------- claims and verdicts

EXPECTED_VERDICTS = {
    "speedup-reproduced": REPRODUCED,
    "speedup-partly": PARTLY,
    "slowdown-not-reproduced": NOT_REPRODUCED,
    "needs-cuda": f"not measured: {NO_CUDA}",
    "skipped-here": "not measured: benchmark skipped or without a value on this machine",
    "failed-here": "not measured: benchmark failed on this machine",
    "no-experiment": "not measured yet",
    "no-results": "not measured: no results for bench_toy.Nothing.track_nothing",   # measured elsewhere, not here
    "layout-ratio": REPRODUCED,
    "subcluster-trend": REPRODUCED,
    "p-at-1-artifact": REPRODUCED,
    "peer-number": "not measured yet",
}


def test_claim_verdicts_cover_every_kind(frame):
    claims = load_claims(CLAIMS)
    artifacts = {"toy_curve": record("toy_curve", CURVE)}
    results = {r.claim.id: r for r in evaluate_claims(claims, latest_points(frame), artifacts,
                                                      no_cuda_state())}
    assert {cid: r.verdict for cid, r in results.items()} == EXPECTED_VERDICTS
    assert results["speedup-reproduced"].measured == pytest.approx(3.0)
    assert results["speedup-reproduced"].ratio == pytest.approx(3.0 / 3.19)
    assert results["layout-ratio"].measured == pytest.approx(2.4)
    assert results["layout-ratio"].ratio == 1.0 and results["layout-ratio"].in_range
    assert results["subcluster-trend"].measured == pytest.approx(1.0)
    assert results["p-at-1-artifact"].measured == pytest.approx(0.32)
    assert results["needs-cuda"].measured is None and results["needs-cuda"].ratio is None


def test_a_capability_that_is_present_lets_the_skip_reason_through(frame):
    claims = [c for c in load_claims(CLAIMS) if c.id == "needs-cuda"]
    state = MachineState(MACHINE, None, "test", {"cuda": CapabilityState("cuda", True)})
    [result] = evaluate_claims(claims, latest_points(frame), {}, state)
    assert result.verdict == "not measured: benchmark skipped or without a value on this machine"


@pytest.mark.parametrize("artifacts, verdict", [
    ({"toy_speed": record("toy_speed",
                          {"speedups": {"a/b": {"no_value": "no target to time: no run left the plateau"}}})},
     "not measured: no target to time: no run left the plateau"),
    ({"toy_speed": record("toy_speed", {"speedups": {"a/b": {"no_value": "  "}}})},
     "not measured: benchmark skipped or without a value on this machine"),      # no text: the generic line
    ({"toy_speed": record("toy_speed", {"speedups": {"a/b": {"value": 2.0}}})},
     "not measured: benchmark skipped or without a value on this machine"),      # no such path
    ({}, "not measured: benchmark skipped or without a value on this machine"),  # no artifact
    ({"toy_speed": {**record("toy_speed", {"speedups": {"a/b": {"no_value": "an older run's reason"}}}),
                    "commit": OLD}},
     "not measured: benchmark skipped or without a value on this machine"),      # another commit's run
])
def test_a_value_the_benchmark_could_not_give_says_why_from_its_artifact(frame, artifacts, verdict):
    [skipped] = [c for c in load_claims(CLAIMS) if c.id == "skipped-here"]
    with_reason = Claim(**{**skipped.__dict__,
                           "unmeasured_reason": ArtifactSource("toy_speed", "data.speedups.a/b.no_value")})
    [result] = evaluate_claims([with_reason], latest_points(frame), artifacts, no_cuda_state())
    assert result.verdict == verdict
    # a capability that is missing still comes first
    [cuda] = [c for c in load_claims(CLAIMS) if c.id == "needs-cuda"]
    with_reason = Claim(**{**cuda.__dict__,
                           "unmeasured_reason": ArtifactSource("toy_speed", "data.speedups.a/b.no_value")})
    [result] = evaluate_claims([with_reason], latest_points(frame), artifacts, no_cuda_state())
    assert result.verdict == f"not measured: {NO_CUDA}"


def claim(paper, tolerance=0.1, baseline=None) -> Claim:
    return Claim(id="c", system="slide", figure="text", statement="s",
                 paper_value=tuple(paper) if isinstance(paper, list) else paper, unit="x",
                 source="text", approx=False, tolerance=tolerance, requires=(), baseline=baseline)


@pytest.mark.parametrize("paper, measured, baseline, verdict", [
    (2.7, 2.7 * 1.09, 1.0, REPRODUCED),
    (2.7, 2.7 * 1.11, 1.0, PARTLY),          # above the tolerance, still a speed-up
    (2.7, 1.2, 1.0, PARTLY),                 # a smaller speed-up
    (2.7, 0.9, 1.0, NOT_REPRODUCED),         # a slow-down
    (2.7, 1.2, None, NOT_REPRODUCED),        # no baseline: no direction, no "partly"
    (0.5, 0.8, 1.0, PARTLY),                 # paper below the baseline, measured below too
    (0.5, 1.1, 1.0, NOT_REPRODUCED),
    ([2.0, 3.0], 1.85, 1.0, REPRODUCED),     # within 10% below the low end
    ([2.0, 3.0], 3.35, 1.0, PARTLY),
    ([1.0, math.inf], 1.5, 1.0, REPRODUCED),
    ([1.0, math.inf], 0.8, 1.0, NOT_REPRODUCED),
    ([1.0, math.inf], 1.0, 1.0, NOT_REPRODUCED),  # a tie does not "beat"
    ([1.0, math.inf], 1.0, None, REPRODUCED),     # "at least 1", with no baseline: 1 is in
    ([-math.inf, 1.0], -0.0004, None, REPRODUCED),  # "under a second": a switch below resolution
    ([-math.inf, 1.0], 1.0, None, REPRODUCED),
    ([-math.inf, 1.0], 1.2, None, NOT_REPRODUCED),
])
def test_judge(paper, measured, baseline, verdict):
    tolerance = 0.0 if isinstance(paper, list) and math.isinf(paper[0] * paper[1]) else 0.1
    assert judge(claim(paper, tolerance, baseline), measured) == verdict


@pytest.mark.parametrize("paper, tolerance, baseline, measured, verdict", [
    ([1.0, 7.0], 0.1, 1.0, 0.95, NOT_REPRODUCED),   # "up to 7x faster": a slow-down is not in the band
    ([1.0, 7.0], 0.1, 1.0, 1.0, NOT_REPRODUCED),
    ([1.0, 7.0], 0.1, 1.0, 1.01, REPRODUCED),
    ([1.0, 7.0], 0.1, 1.0, 7.7, REPRODUCED),
    (1.1, 0.2, 1.0, 0.99, NOT_REPRODUCED),          # 10% faster +-20% stops at "no effect"
    (1.1, 0.2, 1.0, 1.0, NOT_REPRODUCED),
    (1.1, 0.2, 1.0, 1.05, REPRODUCED),
    (0.9, 0.2, 1.0, 1.0, NOT_REPRODUCED),           # paper below the baseline: cut from above
    (0.9, 0.2, 1.0, 0.99, REPRODUCED),
    (0.9, 0.2, 1.0, 0.72, REPRODUCED),
])
def test_the_band_stops_at_the_baseline_and_excludes_it(paper, tolerance, baseline, measured, verdict):
    c = claim(paper, tolerance, baseline)
    assert judge(c, measured) == verdict
    lowest, highest = tolerance_band(c)
    assert lowest >= baseline or highest <= baseline
    assert band_open(c) == (lowest == baseline, highest == baseline)


def test_an_interval_that_ends_at_the_open_baseline_does_not_straddle_the_band():
    c = claim([1.0, math.inf], 0.0, 1.0)
    lowest, highest = tolerance_band(c)
    assert not Interval(0.9, 1.0, "").straddles(lowest, highest, *band_open(c))
    assert Interval(0.9, 1.01, "").straddles(lowest, highest, *band_open(c))
    assert not Interval(1.0, 1.2, "").straddles(lowest, highest)      # a closed end holds 1.0
    assert Interval(1.0, 1.2, "").straddles(lowest, highest, *band_open(c))


def test_a_lower_bound_at_the_open_baseline_is_not_a_reproduction():
    c = Claim(**{**claim([1.0, math.inf], 0.0, 1.0).__dict__,
                 "measured": BenchmarkSource(PointRef("b.Speed.track_ratio", {})),
                 "lower_bound_when": BenchmarkSource(PointRef("b.Speed.track_is_lower_bound", {}))})
    rows = _points(("b.Speed.track_ratio", 1.0, "b" * 40), ("b.Speed.track_is_lower_bound", 1.0, "b" * 40))
    [result] = evaluate_claims([c], rows, {}, no_cuda_state())
    assert result.verdict == f"{NOT_MEASURED}: only a lower bound (1×), the no-effect value the claim must exceed"
    assert (result.ratio, result.in_range) == (1.0, False)
    assert formatting.paper_value(c) == "> 1×"
    assert formatting.paper_value(claim([1.0, math.inf], 0.0, None)) == "≥ 1×"


@pytest.mark.parametrize("paper, measured, ratio, in_range", [([1.0, 7.0], 1.0, 1.0, False), ([1.0, 7.0], 1.5, 1.0, True),
                                                              ([1.0, 7.0], 7.0, 1.0, True), ([0.5, 1.0], 1.0, 1.0, False),
                                                              # a baseline outside the range: its nearest end
                                                              ([2.0, 3.0], 1.0, 0.5, False), ([0.2, 0.5], 1.0, 2.0, False)])
def test_an_excluded_end_is_not_in_range(paper, measured, ratio, in_range):
    assert ratio_to_paper(claim(paper, 0.1, 1.0), measured) == (ratio, in_range)


def _bounded(paper, baseline, flag_point):
    c = claim(paper, 0.1, baseline)
    return Claim(**{**c.__dict__, "measured": BenchmarkSource(PointRef("bench_toy.Speed.track_speedup", {})),
                    "lower_bound_when": BenchmarkSource(PointRef(*flag_point))})


FLAG_SET = ("bench_toy.Failing.track_value", {"x": 1})            # 1.0 in the fixture
FLAG_CLEAR = ("bench_toy.Layout.track_bytes_used", {"layout": "random"})   # 0.06


@pytest.mark.parametrize("paper, baseline, flag, verdict, shown", [
    (8.0, 1.0, FLAG_SET, INCONCLUSIVE, "≥ 3"),           # at least 3x: partly, or in the band, or above
    (8.0, None, FLAG_SET, "not measured: only a lower bound (3×), below the paper's value", "≥ 3"),
    (3.1, 1.0, FLAG_SET, INCONCLUSIVE, "≥ 3"),           # within the band, but may lie above it
    ([1.0, math.inf], 1.0, FLAG_SET, REPRODUCED, "≥ 3"),  # within a band without an upper end
    (2.0, 1.0, FLAG_SET, PARTLY, "≥ 3"),                 # above the band: judged as usual
    (8.0, None, FLAG_CLEAR, NOT_REPRODUCED, "3"),        # an exact value is judged as usual
])
def test_a_lower_bound_is_never_judged_not_reproduced_below_the_paper(frame, paper, baseline, flag,
                                                                       verdict, shown):
    [result] = evaluate_claims([_bounded(paper, baseline, flag)], latest_points(frame), {},
                               no_cuda_state())
    assert result.verdict == verdict
    assert result.lower_bound == (flag is FLAG_SET)
    assert formatting.measured(result).startswith(shown)
    assert ("lower bound" in result.detail) == (flag is FLAG_SET)


def _points(*rows) -> pd.DataFrame:
    """A points frame of (benchmark, value, commit) rows, each without parameters."""
    return pd.DataFrame([{"benchmark": b, "params": {}, "param_label": "", "value": v, "commit": c,
                          "status": "ok", "type": "track"} for b, v, c in rows])


@pytest.mark.parametrize("unit, said", [
    ("1 = every model fits on one device: the gain is at least this", "a lower bound (every model fits on one device: "
                                                                      "the gain is at least this)"),
    (None, "a lower bound;"),
])
def test_a_bounds_detail_says_why_in_its_flags_own_words(unit, said):
    """Salus's inference gain is a lower bound for its own reason, not a training run's: the
    detail takes the flag benchmark's declared meaning, and says none where it has none."""
    c = Claim(**{**claim(42.0, 0.2, 1.0).__dict__,
                 "measured": BenchmarkSource(PointRef("b.Gain.track_gain", {})),
                 "lower_bound_when": BenchmarkSource(PointRef("b.Gain.track_gain_is_lower_bound", {}))})
    rows = _points(("b.Gain.track_gain", 40.0, "b" * 40), ("b.Gain.track_gain_is_lower_bound", 1.0, "b" * 40))
    rows["unit"] = ["x", unit]
    [result] = evaluate_claims([c], rows, {}, no_cuda_state())
    assert result.verdict == INCONCLUSIVE and said in result.detail, result.detail
    assert "slower run" not in result.detail


def test_a_bound_flag_from_another_run_than_the_value_is_not_read_as_exact():
    c = Claim(**{**claim(8.0, 0.15, 1.0).__dict__,
                 "measured": BenchmarkSource(PointRef("b.Speed.track_ratio", {})),
                 "lower_bound_when": BenchmarkSource(PointRef("b.Speed.track_is_lower_bound", {}))})
    same = _points(("b.Speed.track_ratio", 0.8, "b" * 40), ("b.Speed.track_is_lower_bound", 1.0, "b" * 40))
    assert evaluate_claims([c], same, {}, no_cuda_state())[0].verdict.startswith(NOT_MEASURED + ": only a lower")
    mixed = _points(("b.Speed.track_ratio", 0.8, "b" * 40), ("b.Speed.track_is_lower_bound", 0.0, "a" * 40))
    [result] = evaluate_claims([c], mixed, {}, no_cuda_state())
    assert result.verdict == (f"{NOT_MEASURED}: cannot tell whether 0.8× is exact or a bound (its bound flag was "
                              f"measured at aaaaaaaa, the value at bbbbbbbb)")


def test_a_bound_flag_without_any_result_is_not_read_as_exact():
    """After `make bench BENCH=track_ratio` the flag has no result: the value may be a bound."""
    c = Claim(**{**claim(8.0, 0.15, 1.0).__dict__,
                 "measured": BenchmarkSource(PointRef("b.Speed.track_ratio", {})),
                 "lower_bound_when": BenchmarkSource(PointRef("b.Speed.track_is_lower_bound", {}))})
    [result] = evaluate_claims([c], _points(("b.Speed.track_ratio", 1.13, "b" * 40)), {}, no_cuda_state())
    assert result.verdict.startswith(f"{NOT_MEASURED}: cannot tell whether 1.13× is exact or a bound (its bound "
                                     f"flag has no result here")


def _sampled_claim(path="data.pair.intervals.ratio"):
    from impls.harness.report.claims import SamplingSource

    return Claim(**{**claim(2.0, 0.1, 1.0).__dict__, "measured": BenchmarkSource(PointRef("b.Speed.track_ratio", {})),
                    "sampling_interval": SamplingSource("toy_pairs", path)})


def _twin_sampled_claim():
    """A claim measured on the CPU and on CUDA, each run with its own sampling interval and
    words for it."""
    from impls.harness.report.claims import SamplingSource

    words = {"error": "the spread over draws of the trace", "method": "spread over 9 draws (95%)"}
    return Claim(**{**claim(2.0, 0.1, 1.0).__dict__, "measured": BenchmarkSource(PointRef("b.Speed.track_ratio", {})),
                    "measured_cuda": BenchmarkSource(PointRef("b.SpeedCuda.track_ratio", {})),
                    "sampling_interval": SamplingSource("toy_pairs", "data.r", **words),
                    "sampling_interval_cuda": SamplingSource("toy_pairs_cuda", "data.r", **words)})


@pytest.mark.parametrize("cpu_pair, cuda_pair, with_cuda, verdict", [
    ([1.5, 2.4], [1.9, 2.1], True, REPRODUCED),     # the CUDA value is judged with the CUDA run's interval
    ([1.9, 2.1], [1.5, 2.4], True, INCONCLUSIVE),
    ([1.5, 2.4], [1.9, 2.1], False, INCONCLUSIVE),  # no CUDA run: the CPU run's own interval
])
def test_each_run_is_judged_with_its_own_sampling_interval(cpu_pair, cuda_pair, with_cuda, verdict):
    artifacts = {"toy_pairs": {"commit": "b" * 40, "data": {"r": cpu_pair}},
                 "toy_pairs_cuda": {"commit": "b" * 40, "data": {"r": cuda_pair}}}
    rows = [("b.Speed.track_ratio", 2.0, "b" * 40)] + ([("b.SpeedCuda.track_ratio", 2.0, "b" * 40)] if with_cuda else [])
    [result] = evaluate_claims([_twin_sampled_claim()], _points(*rows), artifacts, no_cuda_state())
    assert result.verdict == verdict
    assert result.interval.method == "spread over 9 draws (95%)"
    assert result.detail.startswith("CUDA run" if with_cuda else "CPU run")


def test_a_missing_sampling_interval_is_named_in_the_claims_own_words():
    artifacts = {"toy_pairs": {"commit": "b" * 40, "data": {}}}
    [result] = evaluate_claims([_twin_sampled_claim()], _points(("b.Speed.track_ratio", 2.0, "b" * 40)), artifacts,
                               no_cuda_state())
    assert "the spread over draws of the trace is not in any interval" in result.detail


@pytest.mark.parametrize("pair, commit, verdict, interval", [
    ([1.9, 2.1], "b" * 40, REPRODUCED, (1.9, 2.1)),
    ([1.5, 2.4], "b" * 40, INCONCLUSIVE, (1.5, 2.4)),      # straddles 1.8..2.2: a draw of test points decides
    ([2.05, 2.1], "b" * 40, REPRODUCED, (2.0, 2.1)),       # the value itself is always inside
    ([1.5, 2.4], "a" * 40, REPRODUCED, None),              # another run's interval is not this value's
    (None, "b" * 40, INCONCLUSIVE, (-math.inf, math.inf)),  # the run: its test points cannot bound it
    ([2.4, 1.5], "b" * 40, INCONCLUSIVE, "malformed"),      # not an interval: it bounds nothing
])
def test_a_sampling_interval_from_the_runs_artifact_can_make_a_verdict_inconclusive(pair, commit, verdict,
                                                                                      interval):
    artifacts = {"toy_pairs": {"commit": commit, "data": {"pair": {"intervals": {"ratio": pair}}}}}
    [result] = evaluate_claims([_sampled_claim()], _points(("b.Speed.track_ratio", 2.0, "b" * 40)), artifacts,
                               no_cuda_state())
    assert result.verdict == verdict
    if interval is None:
        assert result.interval is None
    elif interval == "malformed":
        assert result.interval.unbounded and "malformed interval [2.4, 1.5]" in result.detail
    elif math.isinf(interval[0]):
        assert result.interval.unbounded and formatting.measured(result) == (
            "2× [unbounded: the test points cannot bound it]")
    else:
        assert (result.interval.low, result.interval.high) == pytest.approx(interval)
        assert "bootstrap over the test points" in result.interval.method
    if verdict == INCONCLUSIVE:
        assert "straddles the tolerance band (point estimate: reproduced)" in result.detail


def test_a_sampling_interval_is_joined_with_the_run_to_run_one():
    from impls.harness.report.noise import Noise, Threshold

    artifacts = {"toy_pairs": {"commit": "b" * 40, "data": {"pair": {"intervals": {"ratio": [1.95, 2.1]}}}}}
    noise = Noise("m", "t", [], {("b.Speed.track_ratio", ""): Threshold("b.Speed.track_ratio", "", 2, 0.05, 0.15)})
    [result] = evaluate_claims([_sampled_claim()], _points(("b.Speed.track_ratio", 2.0, "b" * 40)), artifacts,
                               no_cuda_state(), noise)
    assert (result.interval.low, result.interval.high) == pytest.approx((1.9, 2.1))
    assert result.interval.method.startswith("the repeats' range (a thresholds file from before sigma), from run-to-run "
                                             "noise (2 runs `make noise` read, repeats of each commit), joined with a "
                                             "bootstrap")


@pytest.mark.parametrize("value", [math.inf, -math.inf])
def test_a_value_that_is_not_finite_is_not_judged(value):
    c = Claim(**{**claim(1.0, 0.1).__dict__, "measured": BenchmarkSource(PointRef("b.T.track_s", {}))})
    [result] = evaluate_claims([c], _points(("b.T.track_s", value, "c" * 40)), {}, no_cuda_state())
    assert result.verdict.startswith(f"{NOT_MEASURED}: ") and "not a finite number" in result.verdict
    assert result.measured is None


@pytest.mark.parametrize("paper, tolerance, measured", [(0.8, 0.125, 0.7), (0.35, 0.1, 0.385),
                                                        (0.35, 0.1, 0.315)])
def test_a_value_on_the_band_edge_as_written_is_inside_it(paper, tolerance, measured):
    assert judge(claim(list(paper) if isinstance(paper, tuple) else paper, tolerance), measured) == REPRODUCED


def _upper_bounded(paper, baseline, flag_point):
    c = claim(paper, 0.1, baseline)
    return Claim(**{**c.__dict__, "measured": BenchmarkSource(PointRef("bench_toy.Speed.track_speedup", {})),
                    "upper_bound_when": BenchmarkSource(PointRef(*flag_point))})


@pytest.mark.parametrize("paper, baseline, flag, verdict, shown", [
    (8.0, 4.0, FLAG_SET, NOT_REPRODUCED, "≤ 3"),         # at most 3: below the paper and its baseline
    (8.0, None, FLAG_SET, NOT_REPRODUCED, "≤ 3"),        # below the band, no direction
    (8.0, 1.0, FLAG_SET, INCONCLUSIVE, "≤ 3"),           # 1.5 would be partly, 0.8 not reproduced
    (5.0, 10.0, FLAG_SET, PARTLY, "≤ 3"),                # paper below the baseline: lower is its side
    (3.1, 1.0, FLAG_SET, INCONCLUSIVE, "≤ 3"),           # inside the band: reproduced, or below it
    (2.0, 1.0, FLAG_SET, "not measured: only an upper bound (3×), above the paper's tolerance band", "≤ 3"),
    ([-math.inf, 4.0], None, FLAG_SET, REPRODUCED, "≤ 3"),   # "at most 4": every value up to 3 is in it
    (2.0, 1.0, FLAG_CLEAR, PARTLY, "3"),                 # an exact value is judged as usual
])
def test_an_upper_bound_is_judged_only_below_the_paper(frame, paper, baseline, flag, verdict, shown):
    [result] = evaluate_claims([_upper_bounded(paper, baseline, flag)], latest_points(frame), {},
                               no_cuda_state())
    assert result.verdict == verdict
    assert result.upper_bound == (flag is FLAG_SET) and not result.lower_bound
    assert formatting.measured(result).startswith(shown)
    assert ("upper bound" in result.detail) == (flag is FLAG_SET)


@pytest.mark.parametrize("lower, upper, shown", [
    (False, False, "3.2× [3, 3.4]"),
    (True, False, "≥ 3.2× (bound 3–3.4)"),   # not the true value's interval: that may lie far above
    (False, True, "≤ 3.2× (bound 3–3.4)"),
])
def test_a_bounds_interval_is_shown_as_the_bounds_own_spread(lower, upper, shown):
    result = ClaimResult(claim(8.0, 0.1, 1.0), PARTLY, 3.2, lower_bound=lower, upper_bound=upper,
                         interval=Interval(3.0, 3.4, "run-to-run spread (3 runs of one commit)"))
    assert formatting.measured(result) == shown


def test_ratio_uses_the_nearest_end_of_a_range():
    assert ratio_to_paper(claim(2.0), 3.0) == (1.5, False)
    assert ratio_to_paper(claim([2.0, 3.0]), 2.5) == (1.0, True)
    assert ratio_to_paper(claim([2.0, 3.0]), 1.0) == (0.5, False)
    assert ratio_to_paper(claim([2.0, 3.0]), 6.0) == (2.0, False)
    assert ratio_to_paper(claim([0.0, 1.0]), -1.0) == (None, False)


def test_spearman_rows_matches_pearson_of_mean_ranks_row_by_row():
    rng = np.random.default_rng(3)
    x = [1, 2, 2, 8, 16, 16]                                   # tied parameter values
    ys = np.round(rng.normal(size=(200, 6)), 1)                # ties within rows
    ys[0] = 0.5                                                # a constant row
    ys[1, 2] = np.nan
    got = spearman_rows(x, ys)
    rx = pd.Series(x, dtype=float).rank().to_numpy()
    for row, rho in zip(ys, got):
        ry = pd.Series(row).rank().to_numpy()
        want = 0.0 if np.ptp(ry) == 0 else np.corrcoef(rx, ry)[0, 1]
        assert rho == pytest.approx(want, abs=1e-12, nan_ok=True)
    assert got[0] == 0.0 and np.isnan(got[1])
    assert spearman_rows([3, 3, 3], ys[:4, :3]).tolist() == [0.0] * 4


def test_spearman_is_one_for_a_rising_series_and_zero_for_a_flat_one():
    assert spearman([1, 4, 16], [0.1, 0.2, 0.9]) == pytest.approx(1.0)
    assert spearman([1, 4, 16], [0.9, 0.2, 0.1]) == pytest.approx(-1.0)
    assert spearman([1, 4, 16], [0.5, 0.5, 0.5]) == 0.0


VALID_CLAIM = '''
[[claim]]
id = "good-one"
system = "salus"
figure = "abstract"
statement = "A claim."
paper_value = 3.19
unit = "x"
source = "abstract"
approx = false
tolerance = 0.1
requires = []
'''


def last_line_of(text: str, key: str) -> int:
    prefix = key if key.startswith("[") else f"{key} ="
    return max(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(prefix))


def bad(old: str, new: str) -> str:
    """Return a second claim, id "bad-one", with ``old`` replaced by ``new``."""
    assert old in VALID_CLAIM
    return VALID_CLAIM.replace("good-one", "bad-one").replace(old, new)


@pytest.mark.parametrize("second, key, expected", [
    (bad('unit = "x"\n', ""), None, ["missing key(s) unit"]),
    (bad("tolerance = 0.1", 'tolerance = "10%"'), "tolerance",
     ["tolerance must be a finite number >= 0", "'10%' (str)"]),
    (bad("requires = []", 'requires = ["tpu"]'), "requires",
     ["unknown capability 'tpu'", "known: fio, o_direct, cuda, nvml"]),
    (bad("paper_value = 3.19", "paper_value = [3.0, 2.0]"), "paper_value",
     ["paper_value must be a number or [low, high] with low <= high"]),
    (bad("paper_value = 3.19", "paper_value = [-inf, inf]"), "paper_value",
     ["(high may be inf, or low -inf, not both)"]),
    (bad("paper_value = 3.19", "paper_value = [inf, inf]"), "paper_value", ["low <= high"]),
    (bad('system = "salus"', 'system = "tensorflow"'), "system",
     ["system must be one of bandana, salus, slide; got 'tensorflow'"]),
    (bad("requires = []", 'requires = []\nmeasured = { benchmark = "b", artifact = "a" }'), "measured",
     ["measured must have exactly one of benchmark, ratio, trend, artifact"]),
    (bad("requires = []", "requires = []\nbaseline = 3.19"), "baseline",
     ["baseline 3.19 must not lie inside the paper value"]),
    (VALID_CLAIM, "id", ["duplicate id", "[[claim]] #1 already uses it"]),
    (bad("requires = []", 'requires = []\nmeasured_cuda = { ratio = ["b"] }'), "measured_cuda",
     ["measured_cuda.ratio must be [numerator, denominator]"]),
    (bad("requires = []", 'requires = []\nmeasured_cuda = { benchmark = { params = {} } }'), "measured_cuda",
     ["measured_cuda.benchmark must be a benchmark name"]),
    (bad("requires = []", 'requires = []\nmeasured_cuda = { benchmark = "b" }'), "measured_cuda",
     ["measured_cuda goes with measured"]),
    (bad("requires = []", 'requires = []\nunmeasured_reason = { artifact = "a" }'), "unmeasured_reason",
     ["unmeasured_reason must be { artifact = \"<name>\", path = \"data.key.key\" }"]),
    (bad("requires = []", 'requires = []\nsampling_interval = { artifact = "a", path = "" }'), "sampling_interval",
     ["sampling_interval must be { artifact = \"<name>\", path = \"data.key.key\" }"]),
    (bad("requires = []", 'requires = []\nsampling_interval = { artifact = "a", path = "data.x" }'),
     "sampling_interval", ["sampling_interval goes with measured"]),
    (bad("requires = []", 'requires = []\nmeasured = { benchmark = "b" }\nmeasured_cuda = { benchmark = "c" }\n'
                          'sampling_interval = { artifact = "a", path = "data.x" }'),
     "sampling_interval", ["with measured_cuda, sampling_interval and sampling_interval_cuda go together"]),
    (bad("requires = []", 'requires = []\nmeasured = { benchmark = "b" }\nmeasured_cuda = { benchmark = "c" }\n'
                          'applies_when = { artifact = "a", path = "data.x", equals = 1 }'),
     "measured_cuda", ["measured_cuda does not go with bound flags, unmeasured_reason or applies_when"]),
    (bad("requires = []", 'requires = []\nmeasured = { benchmark = "b" }\n'
                          'sampling_interval = { artifact = "a", path = "data.x" }\n'
                          'sampling_interval_cuda = { artifact = "a", path = "data.x" }'),
     "sampling_interval_cuda", ["sampling_interval_cuda goes with measured_cuda"]),
    (bad("requires = []", 'requires = []\nmeasured = { benchmark = "b" }\n'
                          'sampling_interval = { artifact = "a", path = "data.x", how = "?" }'),
     "sampling_interval", ["optionally with error = \"<what it bounds>\" and method"]),
    (bad("requires = []", 'requires = []\nmeasured = { benchmark = "b" }\n'
                          'sampling_interval = { artifact = "a", path = "data.x", method = " " }'),
     "sampling_interval", ["sampling_interval must be"]),
    (bad("requires = []", 'requires = []\nmeasured = { benchmark = "b" }\n'
                          'sampling_interval = { artifact = "a", path = "data.x", method = "Unbounded draws" }'),
     "sampling_interval", ["(not starting 'unbounded', which marks an interval nothing bounds)"]),
])
def test_bad_claims_file_names_file_claim_line_and_expectation(tmp_path, second, key, expected):
    path = tmp_path / "claims.toml"
    text = VALID_CLAIM + second
    path.write_text(text)
    with pytest.raises(ClaimsError) as caught:
        load_claims(path)
    message = str(caught.value)
    line = last_line_of(text, key) if key else last_line_of(text, "[[claim]]")
    claim_id = "good-one" if second == VALID_CLAIM else "bad-one"
    assert f"{path}:{line}: [[claim]] #2 (id '{claim_id}'): " in message, message
    for fragment in expected:
        assert fragment in message, message


def test_claims_file_that_is_not_toml_names_the_file_and_line(tmp_path):
    path = tmp_path / "claims.toml"
    path.write_text(VALID_CLAIM + "paper_value = = 3\n")
    with pytest.raises(ClaimsError, match=r"claims\.toml: not valid TOML: .*line 13"):
        load_claims(path)


def test_a_claim_of_a_new_system_that_declares_experiments_is_read_and_fits_the_schema(tmp_path, monkeypatch):
    """A system is any impls/<system>/ package with a catalog (README: Adding a benchmark):
    its claims are no defect of claims.toml, nor of the report's schema."""
    from impls.harness import experiments
    from impls.harness.report.report_json import schema_path, validate

    monkeypatch.setitem(experiments._EXPERIMENTS, "toysys.count", experiments.Experiment(
        "toysys.count", "toysys_count", "toysys_count", "impls.toysys.catalog:run", "a toy", ""))
    path = tmp_path / "claims.toml"
    path.write_text(VALID_CLAIM.replace('system = "salus"', 'system = "toysys"'))
    (claim,) = load_claims(path)
    assert claim.system == "toysys"
    schema = json.loads(schema_path().read_text())
    assert validate("toysys", schema["properties"]["claims"]["items"]["properties"]["system"]) == []


def test_real_claims_file_validates_and_claims_nothing_unmeasured(frame):
    claims = load_claims(REAL_CLAIMS)
    assert len(claims) >= 20
    assert {c.system for c in claims} >= {"bandana", "slide", "salus"}
    for state in (no_cuda_state(), MachineState(MACHINE, None, "none", {})):
        for result in evaluate_claims(claims, latest_points(frame), {}, state):
            assert result.verdict.startswith(NOT_MEASURED), (result.claim.id, result.verdict)
            assert result.measured is None
    cuda_claims = {c.id for c in claims if "cuda" in c.requires}
    assert {"slide-amazon-vs-tf-gpu", "salus-inference-vs-mps"} <= cuda_claims
    assert all(c.approx for c in claims if c.source == "approx")


# ---------------------------------------------------------------- figures

def test_synthetic_figure_says_so_on_the_image():
    figure = captioned_figure(SPECS["toy_curve_figure"], record("toy_curve", CURVE, synthetic=True))
    texts = [t.get_text() for t in figure.texts]
    assert any(t.startswith(SYNTHETIC_LABEL) and "toybox" in t and NEW[:8] in t and "smoke" in t
               for t in texts), texts
    measured = captioned_figure(SPECS["toy_curve_figure"], record("toy_curve", CURVE, synthetic=False))
    assert not any(SYNTHETIC_LABEL in t.get_text() for t in measured.texts)
    assert any(t.get_text().startswith("Measured data") for t in measured.texts)


def test_missing_artifact_gives_the_capability_reason_or_not_measured_yet():
    state = no_cuda_state()
    gpu = render_figure(SPECS["toy_gpu_figure"], {}, state)
    assert gpu.status == "not measured" and gpu.caption == f"not measured: {NO_CUDA}"
    later = render_figure(SPECS["toy_later_figure"], {}, state)
    assert later.caption.startswith("not measured: no artifact ") and later.png is None


def test_a_broken_figure_shows_its_error_and_the_others_render(report):
    by_name = {f.name: f for f in report.figures}
    assert by_name["toy_broken_figure"].status == "error"
    assert "ValueError: this figure is broken on purpose" in by_name["toy_broken_figure"].caption
    assert by_name["toy_curve_figure"].status == "drawn"
    assert by_name["toy_curve_figure"].png.startswith(b"\x89PNG")
    assert by_name["toy_gpu_figure"].caption == f"not measured: {NO_CUDA}"


# ---------------------------------------------------------------- history

def test_history_has_every_commit_on_its_axis(frame):
    made = {h.benchmark: h for h in history_figures(frame)}
    assert set(made) == {"bench_toy.Failing.track_value", "bench_toy.Layout.track_bytes_used",
                         "bench_toy.Speed.time_small", "bench_toy.Speed.track_speedup",
                         "bench_toy.Sweep.track_effective_bandwidth"}
    assert all(h.commits == (OLD, NEW) for h in made.values())
    assert made["bench_toy.Sweep.track_effective_bandwidth"].series == 6
    rows = frame[frame["benchmark"] == "bench_toy.Speed.track_speedup"]
    figure, _, _ = history_figure(rows, commits(frame))
    labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert [label.split("\n")[0] for label in labels] == [OLD[:8], NEW[:8]]
    line = figure.axes[0].get_lines()[0]
    assert list(line.get_ydata()) == pytest.approx([2.5, 3.0])


def test_history_with_a_single_commit_still_draws_points(frame):
    one = frame[frame["commit"] == NEW]
    [speedup] = [h for h in history_figures(one) if h.benchmark == "bench_toy.Speed.track_speedup"]
    assert speedup.commits == (NEW,) and speedup.png.startswith(b"\x89PNG")


def sweep_frame(params: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([
        {"commit": c, "date": pd.Timestamp(f"2024-0{i + 1}-01", tz="UTC"),
         "started_at": pd.Timestamp(f"2024-0{i + 1}-01", tz="UTC"), "benchmark": "b.B.track_x",
         "type": "track", "unit": "x", "params": p,
         "param_label": ", ".join(f"{k}={v}" for k, v in p.items()), "value": float(i + len(p)),
         "env_name": "e"}
        for i, c in enumerate(["c1", "c2"]) for p in params])


def visible_axes(figure: Figure) -> int:
    return len([ax for ax in figure.axes if ax.get_visible()])


def test_history_with_many_parameter_combinations_uses_small_multiples():
    two = sweep_frame([{"a": a, "b": b} for a in range(3) for b in range(12)])
    figure, series, shown = history_figure(two, commits(two))
    assert series == 36 and shown == 3 * MAX_SERIES_PER_PANEL and visible_axes(figure) == 3
    one = sweep_frame([{"n": n} for n in range(20)])
    figure, series, shown = history_figure(one, commits(one))
    assert series == shown == 20 and visible_axes(figure) == 3


# ---------------------------------------------------------------- rendering

def test_render_report_writes_html_markdown_and_pngs(tmp_path, artifacts_root):
    out = render_report(MACHINE, tmp_path / "out", RESULTS, artifacts_root, CLAIMS, figure_specs=SPECS)
    assert out == tmp_path / "out"
    html = (out / "index.html").read_text()
    markdown = (out / "report.md").read_text()
    pngs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert "toy_curve_figure.png" in pngs and "toy_broken_figure.png" not in pngs
    assert sum(name.startswith("history-") for name in pngs) == 5
    for path in (out / "figures").glob("*.png"):
        assert path.read_bytes().startswith(b"\x89PNG")
    # self-contained: figures inline, no external stylesheet or script
    assert html.count("data:image/png;base64,") == len(pngs)
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert "<link" not in html
    for text in (html, markdown):
        assert "toybox" in text and "smoke" in text
        assert "Toy CPU" in text and NO_CUDA in text
        assert "not measured yet" in text and "reproduced" in text
        assert OLD[:8] in text and NEW[:8] in text
        assert "subclusters=16, table=&#x27;post&#x27;" in text or "subclusters=16, table='post'" in text
        assert "this figure is broken on purpose" in text
        assert "Synthetic data" in text
    assert "(figures/toy_curve_figure.png)" in markdown
    assert "(figures/history-bench_toy.Speed.track_speedup.png)" in markdown
    # each history caption says on which data, in report.md as in index.html
    captions = [line for line in markdown.splitlines() if line.startswith("*bench_toy.")]
    from impls.harness.report.history import data_caption
    assert captions and all(data_caption(None) in c for c in captions), captions   # toy benchmarks: not known
    # each claim says where its value came from, as the HTML's hover text does
    assert "| verdict | from |" in markdown and f"bench_toy.Speed.track_speedup at {NEW[:8]}" in markdown
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]  # no staging left


def test_skipped_list_gives_the_reason_from_require_in_the_benchmark_code(report):
    assert required_capabilities('def setup(self):\n    require("cuda", "nvml")\n') == ("cuda", "nvml")
    reasons = {(s.benchmark, s.params): (s.status, s.reason) for s in report.skipped}
    assert reasons[("bench_toy.Sweep.track_effective_bandwidth", "subclusters=16, table='post'")] == (
        "skipped", NO_CUDA)
    assert reasons[("bench_toy.Failing.track_value", "x=2")][0] == "failed"


def test_a_skip_is_explained_by_the_experiment_its_setup_cache_runs():
    from impls.harness.report.asv_files import BenchmarkInfo
    from impls.harness.report.skipped import UNKNOWN_SKIP, experiment_requirements, skip_reason

    assert experiment_requirements("bench_salus.SchedulingPoliciesCuda.track_average_jct") == ("cuda",)
    assert set(experiment_requirements("bench_bandana_device.FioRandomRead.track_iops")) == {"fio", "o_direct"}
    assert experiment_requirements("bench_gone.Nothing.track_x") == ()
    cuda = BenchmarkInfo("bench_salus.SchedulingPoliciesCuda.track_average_jct", "track", "s", ("policy",))
    assert skip_reason(cuda, "skipped", no_cuda_state()) == NO_CUDA
    unknown = BenchmarkInfo("bench_gone.Nothing.track_x", "track", "s", ())
    assert skip_reason(unknown, "skipped", no_cuda_state()) == UNKNOWN_SKIP


def test_report_uses_the_newest_artifact_fingerprint(tmp_path):
    root = write_artifacts(tmp_path / "a", record("toy_curve", CURVE, created="2024-02-01T13:00:00+00:00"),
                           record("toy_later", CURVE, created="2024-02-02T13:00:00+00:00", cuda=True))
    from impls.harness import artifacts as store

    state = describe_machine(MACHINE, store.load_latest(MACHINE, root))
    assert state.capabilities["cuda"].available and state.missing_reason(["cuda"]) is None
    assert "toy_later" in state.source


def test_rerendering_replaces_the_report_and_refuses_other_directories(tmp_path, artifacts_root):
    out, no_results = tmp_path / "out", tmp_path / "no-results"  # artifacts only: fast
    render_report(MACHINE, out, no_results, artifacts_root, CLAIMS, figure_specs=SPECS)
    (out / "figures" / "stale.png").write_bytes(b"old")
    render_report(MACHINE, out, no_results, artifacts_root, CLAIMS, figure_specs=SPECS)
    assert not (out / "figures" / "stale.png").exists()
    assert (out / "figures" / "toy_curve_figure.png").is_file()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(ReportOutputError, match="refusing to replace"):
        render_report(MACHINE, precious, no_results, artifacts_root, CLAIMS, figure_specs=SPECS)
    assert (precious / "notes.txt").read_text() == "keep me"


def test_a_failed_write_leaves_the_previous_report_whole(tmp_path):
    out = tmp_path / "out"
    write_report_dir(out, {"index.html": b"first"})
    with pytest.raises(TypeError):
        write_report_dir(out, {"index.html": b"second", "figures/bad.png": "not bytes"})
    assert (out / "index.html").read_bytes() == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_bad_claims_file_stops_the_report_before_writing(tmp_path, artifacts_root):
    bad = tmp_path / "claims.toml"
    bad.write_text(VALID_CLAIM.replace("approx = false", "approx = 1"))
    with pytest.raises(ClaimsError, match="approx must be true or false"):
        render_report(MACHINE, tmp_path / "out", RESULTS, artifacts_root, bad, figure_specs=SPECS)
    assert not (tmp_path / "out").exists()


def test_no_results_at_all_is_an_error(tmp_path):
    with pytest.raises(NoResultsError, match="nothing to report for machine 'toybox'"):
        render_report(MACHINE, tmp_path / "out", tmp_path / "results", tmp_path / "artifacts", CLAIMS,
                      figure_specs=SPECS)


def test_artifacts_without_asv_results_still_render(tmp_path, artifacts_root):
    out = render_report(MACHINE, tmp_path / "out", tmp_path / "no-results", artifacts_root, CLAIMS,
                        figure_specs=SPECS)
    markdown = (out / "report.md").read_text()
    assert "No asv results for toybox" in markdown and "(figures/toy_curve_figure.png)" in markdown


# ---------------------------------------------------------------- command line

def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "render_report.py"), *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)


def test_cli_prints_the_paths_it_wrote(tmp_path, artifacts_root):
    done = run_cli("--machine", MACHINE, "--out", str(tmp_path / "out"), "--results", str(RESULTS),
                   "--artifacts", str(artifacts_root), "--claims", str(CLAIMS))
    assert done.returncode == 0, done.stderr
    printed = done.stdout.split()
    assert str(tmp_path / "out" / "index.html") in printed
    assert str(tmp_path / "out" / "report.md") in printed
    assert any(p.endswith(".png") for p in printed)


def test_cli_fails_clearly_without_results(tmp_path):
    (tmp_path / "r").mkdir()                    # empty results and artifact folders: no run yet
    (tmp_path / "a").mkdir()
    done = run_cli("--machine", "nowhere", "--out", str(tmp_path / "out"), "--results",
                   str(tmp_path / "r"), "--artifacts", str(tmp_path / "a"), "--claims", str(CLAIMS))
    assert done.returncode == 2
    assert "nothing to report for machine 'nowhere'" in done.stderr


def test_cli_refuses_a_machine_named_twice(tmp_path):
    done = run_cli("--machines", MACHINE, MACHINE, "--out", str(tmp_path / "out"), "--results", str(RESULTS))
    assert done.returncode == 2 and f"names {MACHINE} twice" in done.stderr
    assert not (tmp_path / "out").exists()
    both = run_cli("--machine", MACHINE, "--machines", MACHINE, "other", "--out", str(tmp_path / "out"),
                   "--results", str(RESULTS))
    assert both.returncode == 2 and "--machine and --machines both given" in both.stderr
    assert not (tmp_path / "out").exists()


def test_history_leaves_out_benchmarks_never_measured():
    import pandas as pd

    from impls.harness.report.history import history_figures

    frame = pd.DataFrame({
        "benchmark": ["b.Measured.track_x", "b.Skipped.track_x"], "type": ["track", "track"],
        "unit": ["s", "s"], "value": [1.0, float("nan")], "commit": ["c1", "c1"],
        "date": [pd.Timestamp("2026-11-30")] * 2, "param_label": ["", ""], "params": [{}, {}], "status": ["ok", "skipped"],
        "machine": ["m", "m"], "env_name": ["e", "e"], "started_at": [1, 1],
    })
    assert [h.benchmark for h in history_figures(frame)] == ["b.Measured.track_x"]


def test_latest_points_never_mix_an_older_runs_parameter_grid():
    import pandas as pd

    rows = []
    for commit, day, grid in (("old", "2026-11-01", [1, 2, 4]), ("new", "2026-11-02", [1, 4])):
        for k in grid:
            rows.append({"benchmark": "b.Sweep.track_x", "commit": commit, "env_name": "e",
                         "date": pd.Timestamp(day), "started_at": pd.Timestamp(day),
                         "param_label": f"k={k}", "value": float(k)})
    rows.append({"benchmark": "b.Other.track_y", "commit": "old", "env_name": "e",
                 "date": pd.Timestamp("2026-11-01"), "started_at": pd.Timestamp("2026-11-01"),
                 "param_label": "", "value": 7.0})
    latest = latest_points(pd.DataFrame(rows))
    sweep = latest[latest["benchmark"] == "b.Sweep.track_x"]
    assert sorted(sweep["param_label"]) == ["k=1", "k=4"] and set(sweep["commit"]) == {"new"}
    assert latest[latest["benchmark"] == "b.Other.track_y"]["value"].tolist() == [7.0]


@pytest.fixture
def pools(monkeypatch) -> list[int]:
    """The worker counts of the process pools started while the test runs, in order."""
    import concurrent.futures

    started: list[int] = []

    class CountedPool(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            started.append(self._max_workers)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", CountedPool)
    return started


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no silent fall-back to drawing here
def test_history_figures_drawn_in_worker_processes_are_the_ones_drawn_here(pools):
    from impls.harness.report.noise import Noise, Threshold
    from impls.harness.report.plotting import PARALLEL_FROM

    n = PARALLEL_FROM + 2
    frame = pd.DataFrame([
        {"benchmark": f"b.B{i:02d}.track_x", "type": "track", "unit": "s",
         "value": 1.0 + (j >= 2) * (0.2, 0.6, 1.0)[i % 3], "commit": f"c{j}",
         "date": pd.Timestamp(f"2026-11-0{j + 1}", tz="UTC"), "param_label": "", "params": {}, "status": "ok",
         "machine": "m", "env_name": "e", "started_at": j}
        for i in range(n) for j in range(4)])
    # a measured threshold of 40% (keyed by asv's empty param_label) hides the 20% steps only
    noise = Noise("m", "2026-12-02T00:00:00+00:00", [],
                  {(f"b.B{i:02d}.track_x", ""): Threshold(f"b.B{i:02d}.track_x", "", 2, 0.1, 0.4) for i in range(n)})
    here = history_figures(frame, noise=noise, workers=1)
    assert pools == []
    there = history_figures(frame, noise=noise, workers=2)
    assert pools == [2]
    assert [h.benchmark for h in there] == [f"b.B{i:02d}.track_x" for i in range(n)]
    assert [(h.png, h.svg, h.steps, h.series) for h in there] == [(h.png, h.svg, h.steps, h.series) for h in here]
    assert [bool(h.steps) for h in there] == [i % 3 != 0 for i in range(n)]


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no silent fall-back to drawing here
def test_paper_figures_drawn_in_worker_processes_are_the_ones_drawn_here(pools):
    from impls.harness.report.plotting import PARALLEL_FROM

    kinds = [("toy_curve", draw_curve), ("toy_curve", draw_broken), ("toy_gpu", draw_curve), ("absent", draw_curve)]
    specs = {f"f{i:02d}": FigureSpec(f"f{i:02d}", kinds[i % 4][0], f"Figure {i}", "slide", f"Fig. {i:02d}",
                                     ("cuda",) if i % 4 == 2 else (), kinds[i % 4][1])
             for i in range(PARALLEL_FROM + 2)}
    artifacts = {"toy_curve": record("toy_curve", {**CURVE, "y": [0.1, 0.2, 0.4]})}
    here = render_paper_figures(specs, artifacts, no_cuda_state(), workers=1)
    assert pools == []
    there = render_paper_figures(specs, artifacts, no_cuda_state(), workers=2)
    assert pools == [2]
    assert there == here
    assert [f.status for f in there[:4]] == ["drawn", "error", "not measured", "not measured"]


def test_a_figure_of_an_experiment_that_also_ran_on_cuda_is_drawn_from_each_run():
    """A CUDA machine judges the Salus claims on the *_cuda artifacts: their figures are drawn
    too, beside the CPU run's, not the CPU run's alone (probe F); without a CUDA artifact,
    nothing is added."""
    specs = {"toy": FigureSpec("toy", "toy_curve", "Toy curve", "slide", "Fig. 1", (), draw_curve)}
    cpu, gpu = record("toy_curve", CURVE), record("toy_curve_cuda", {**CURVE, "y": [0.2, 0.4, 0.6]})
    drawn = render_paper_figures(specs, {"toy_curve": cpu, "toy_curve_cuda": gpu}, no_cuda_state(), workers=1)
    assert [(f.name, f.title, f.status) for f in drawn] == [("toy", "Toy curve", "drawn"),
                                                             ("toy_cuda", "Toy curve (CUDA run)", "drawn")]
    assert drawn[0].png != drawn[1].png
    alone = render_paper_figures(specs, {"toy_curve": cpu}, no_cuda_state(), workers=1)
    assert [f.name for f in alone] == ["toy"]


def test_figures_that_cannot_go_to_a_worker_are_drawn_here_with_a_warning():
    from impls.harness.report.plotting import PARALLEL_FROM

    specs = {f"f{i:02d}": FigureSpec(f"f{i:02d}", "toy_curve", f"Figure {i}", "slide", f"Fig. {i:02d}", (),
                                     lambda data: draw_curve(data))       # a lambda does not pickle
             for i in range(PARALLEL_FROM)}
    artifacts = {"toy_curve": record("toy_curve", CURVE)}
    with pytest.warns(RuntimeWarning, match="drawing them here"):
        drawn = render_paper_figures(specs, artifacts, no_cuda_state(), workers=2)
    assert [f.status for f in drawn] == ["drawn"] * PARALLEL_FROM


def test_a_claim_whose_artifact_is_unreadable_says_so_not_that_nothing_measures_it(tmp_path):
    root = write_artifacts(tmp_path / "artifacts", record("toy_curve", CURVE))
    [path] = (root / MACHINE).glob("*/toy_curve.json")
    path.write_text(path.read_text()[:40])                       # cut short mid-write
    built = build_report(MACHINE, RESULTS, root, CLAIMS, SPECS)
    [result] = [r for r in built.claims if r.claim.id == "p-at-1-artifact"]
    assert result.verdict == "not measured: artifact 'toy_curve' is unreadable (see Unreadable inputs)"
    assert any("left out" in note for note in built.notes)
    path.write_text(json.dumps({**record("toy_curve", CURVE), "machine": "gpu-box"}))   # another machine's
    rebuilt = build_report(MACHINE, RESULTS, root, CLAIMS, SPECS)
    [result] = [r for r in rebuilt.claims if r.claim.id == "p-at-1-artifact"]
    assert result.verdict == "not measured: artifact 'toy_curve' was left out (see Unreadable inputs)"


@pytest.mark.parametrize("name", [f"{MACHINE}/", f"../{MACHINE}", "", ".", "..", "a\tb"])
def test_a_machine_name_that_is_not_one_folder_is_refused(tmp_path, name):
    with pytest.raises(ValueError, match=r"expected the name of one folder"):
        build_report(name, RESULTS, tmp_path, CLAIMS, SPECS)


@pytest.mark.parametrize("name", ["lab box-smoke", "büro-smoke"])
def test_a_machine_asv_named_with_a_space_or_an_accent_is_reported(tmp_path, name):
    """asv takes any --machine, and compare and noise read such a machine's runs."""
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results, ignore=shutil.ignore_patterns(MACHINE))
    (results / name).mkdir()
    for path in (RESULTS / MACHINE).glob("*.json"):
        data = json.loads(path.read_text())
        if isinstance(data.get("params"), dict):
            data["params"]["machine"] = name
        if path.name == "machine.json":
            data["machine"] = name
        (results / name / path.name).write_text(json.dumps(data))
    built = build_report(name, results, tmp_path / "artifacts", CLAIMS, SPECS)
    assert not built.unreadable and built.machine == name and len(built.commits) == 2
    out = render_report(name, tmp_path / "out", results, tmp_path / "artifacts", CLAIMS, figure_specs=SPECS)
    assert name in (out / "report.md").read_text() and name in (out / "index.html").read_text()


def test_a_machine_without_data_is_told_which_machines_have_some(tmp_path):
    from impls.harness.report.build import NoResultsError

    with pytest.raises(NoResultsError, match=rf"nothing to report for machine 'nosuch'.*machines there: {MACHINE}"):
        build_report("nosuch", RESULTS, tmp_path, CLAIMS, SPECS)


def test_only_the_suites_name_for_this_machine_gets_its_live_fingerprint(monkeypatch):
    from impls.harness.report import machine_state

    monkeypatch.setenv("DLSYSBENCH_MACHINE", "thisbox")
    monkeypatch.setattr(machine_state, "_live_fingerprint", lambda: ({"machine": "thisbox"}, "taken now"))
    assert machine_state.describe_machine("thisbox-quick", {}).source == "taken now"
    assert machine_state.describe_machine("thisbox", {}).source == "no fingerprint recorded"  # asv's bare default


def test_a_live_fingerprint_names_the_profile_of_the_machines_name_not_this_process(monkeypatch):
    """``make report MACHINES="<host>-smoke"`` runs under quick: the smoke column was labelled
    quick, and no 'different profiles' warning followed."""
    from impls.harness.report import machine_state

    monkeypatch.setenv("DLSYSBENCH_MACHINE", "thisbox")
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "quick")
    monkeypatch.setattr(machine_state, "_live_fingerprint",
                        lambda: ({"machine": "thisbox", "profile": "quick"}, "taken now"))
    assert machine_state.describe_machine("thisbox-smoke", {}).profile == "smoke"
    assert machine_state.describe_machine("thisbox-quick", {}).profile == "quick"


def test_a_report_without_measured_noise_says_so(report):
    assert any(note.startswith(f"No measured noise for {MACHINE}") for note in report.notes)


def test_a_claims_data_is_synthetic_exactly_where_its_experiments_are():
    """The report says on which data each value was measured, from the experiments behind it."""
    from impls.harness import experiments
    from impls.harness.report.provenance import NOT_SYNTHETIC, SYNTHETIC, data_kind, experiment_of

    assert experiment_of("bench_slide.SlideSpeedup.track_time_to_target_ratio") == ("slide.time_to_accuracy", "cpu")
    assert data_kind(("bench_slide.SlideSpeedup.track_time_to_target_ratio",)) == SYNTHETIC
    fio = experiment_of("bench_bandana_device.FioRandomRead.track_iops")
    assert fio and experiments.get(fio[0]).synthetic is False                # this machine's drive
    assert data_kind(("bench_bandana_device.FioRandomRead.track_iops",)) == NOT_SYNTHETIC
    assert data_kind(("bench_slide.SlideSpeedup.track_time_to_target_ratio",
                      "bench_bandana_device.FioRandomRead.track_iops")) == "partly synthetic"   # mixed
    assert data_kind(("artifact:slide_time_to_accuracy",)) == SYNTHETIC
    assert data_kind(("bench_nowhere.Gone.track_x",)) is None
    assert experiment_of("bench_slide.SlideTableRefresh.track_seconds") is None    # outside the registry ...
    assert data_kind(("bench_slide.SlideTableRefresh.track_seconds",)) == SYNTHETIC  # ... it says so itself


@pytest.mark.parametrize("threads, verdict", [(2, REPRODUCED), (44, "not measured: this profile's run has "
                                                                    "data.pair.threads = 44; the claim is about data.pair.threads = 2")])
def test_a_claim_about_one_setting_is_not_judged_on_another(threads, verdict):
    """'From 2 cores on' judged on a profile that runs the pair at 44 threads would answer
    another question: such a run reads "not measured", naming the setting it had."""
    from impls.harness.report.claims import Condition
    from impls.harness.report.verdicts import evaluate_claim

    commit = "c" * 40
    c = claim([1.0, math.inf], 0.0, 1.0)
    c = Claim(**{**c.__dict__, "measured": BenchmarkSource(PointRef("b.B.track_speedup", {})),
                 "applies_when": Condition("pairs", "data.pair.threads", 2)})
    points = _points(("b.B.track_speedup", 3.0, commit))
    artifacts = {"pairs": {"commit": commit, "data": {"pair": {"threads": threads}}}}
    assert evaluate_claim(c, points, artifacts, no_cuda_state()).verdict == verdict
    by_name = Claim(**{**c.__dict__, "applies_when": Condition("pairs", "data.runs.name=slide.threads", 2)})
    runs = {"pairs": {"commit": commit, "data": {"runs": [{"name": "dense", "threads": 2},
                                                          {"name": "slide", "threads": threads}]}}}
    assert evaluate_claim(by_name, points, runs, no_cuda_state()).verdict == verdict.replace(
        "data.pair.threads", "data.runs.name=slide.threads")
    other_commit = {"pairs": {"commit": "d" * 40, "data": {"pair": {"threads": 2}}}}
    assert "another commit" in evaluate_claim(c, points, other_commit, no_cuda_state()).verdict


def test_applies_when_is_checked_when_the_claims_are_read(tmp_path):
    text = (ROOT / "reports" / "claims.toml").read_text()
    broken = tmp_path / "claims.toml"
    wanted = 'path = "data.runs.name=slide.threads", equals = 2,'
    assert text.count(wanted) == 1
    broken.write_text(text.replace(wanted, 'path = "data.runs.name=slide.threads",'))
    with pytest.raises(ClaimsError, match="applies_when must have exactly one of equals .* or at_least .*; "
                                          "got neither"):
        load_claims(broken)


@pytest.mark.parametrize("threads, verdict", [
    (2, "not measured: this profile's run has data.runs.name=slide.threads = 2; the claim is about "
        "data.runs.name=slide.threads ≥ 8"),
    (8, REPRODUCED), (44, REPRODUCED), (8.0, REPRODUCED),
    ("eight", "not measured: artifact pairs has data.runs.name=slide.threads = 'eight', not a number, so it "
              "cannot tell whether the run is at data.runs.name=slide.threads ≥ 8"),
    (None, "not measured: artifact pairs has data.runs.name=slide.threads = None, not a number"),
    (True, "not measured: artifact pairs has data.runs.name=slide.threads = True, not a number"),
])
def test_a_claim_about_a_lowest_setting_is_judged_only_from_it(threads, verdict):
    """'As threads grow' judged on a 2-thread run would answer another question: below
    ``at_least`` the verdict is "not measured" naming the run's setting; at or above it, judged;
    a value that is no number tells nothing, and says so rather than failing."""
    from impls.harness.report.claims import Condition
    from impls.harness.report.verdicts import evaluate_claim

    commit = "c" * 40
    c = Claim(**{**claim(0.8, 0.125).__dict__, "measured": BenchmarkSource(PointRef("b.B.track_util", {})),
                 "applies_when": Condition("pairs", "data.runs.name=slide.threads", at_least=8.0)})
    points = _points(("b.B.track_util", 0.8, commit))
    artifacts = {"pairs": {"commit": commit, "data": {"runs": [{"name": "dense", "threads": 44},
                                                               {"name": "slide", "threads": threads}]}}}
    assert evaluate_claim(c, points, artifacts, no_cuda_state()).verdict.startswith(verdict)
    missing = evaluate_claim(c, points, {}, no_cuda_state()).verdict
    assert missing == "not measured: no artifact pairs to tell whether the run is at data.runs.name=slide.threads ≥ 8"


@pytest.mark.parametrize("threads, p_at_1, verdict", [
    (2, 0.09, "not measured: this profile's run has SLIDE's threads = 2; the claim is about SLIDE's threads ≥ 44 "
              "(the full profile, on a machine with 44 or more cores)"),
    (8, 0.32, "not measured: this profile's run has SLIDE's threads = 8; the claim is about SLIDE's threads ≥ 44 "
              "(the full profile, on a machine with 44 or more cores)"),
    (44, 0.32, REPRODUCED), (44, 0.09, NOT_REPRODUCED),
])
def test_the_real_amazon_final_p_at_1_is_judged_only_from_a_run_of_44_threads_or_more(threads, p_at_1, verdict):
    """The paper's 0.30-0.35 is after training to convergence on 44 cores: quick's 300-s,
    2-thread run read "not reproduced" on real data for its budget, and a run on 8 cores within
    the paper's budget stops short of it too. Such a run is not judged, and says why; a run of
    44 threads or more is judged, either way."""
    from impls.harness.report.verdicts import evaluate_claim

    [c] = [c for c in load_claims(ROOT / "reports" / "claims.toml") if c.id == "slide-amazon-final-p-at-1"]
    assert "training to convergence on its 44 cores" in c.note and "7200 s" in c.note
    commit = "c" * 40
    points = _points(("bench_slide.SlideRealData.track_final_p_at_1", p_at_1, commit))
    artifacts = {"slide_real_amazon": {"commit": commit, "data": {
        "runs": [{"name": "slide", "threads": threads, "final_p_at_1": p_at_1}],
        "source": {"real": True, "dataset": "slide-amazon670k-real", "sha256": "a" * 64}}}}
    result = evaluate_claim(c, points, artifacts, no_cuda_state())
    assert result.verdict == verdict
    if threads < 44:
        assert result.detail.endswith(f"{p_at_1:g} P@1 is of another setting than the claim's"), result.detail


@pytest.mark.parametrize("condition, message", [
    ('equals = 2, at_least = 8', "applies_when must have exactly one of equals .* got equals and at_least"),
    ('at_least = "8"', r"applies_when.at_least must be a finite number, got '8' \(str\)"),
    ('at_least = true', r"applies_when.at_least must be a finite number, got True \(bool\)"),
    ('at_least = inf', r"applies_when.at_least must be a finite number, got inf \(float\)"),
    ('at_least = nan', r"applies_when.at_least must be a finite number, got nan \(float\)"),
    ('equals = true', r"applies_when.equals must be a number or text, got True \(bool\)"),
    ('at_most = 8', r"applies_when must be .* or \{ artifact = \.\.\., path = \.\.\., at_least = <number> \}"),
])
def test_a_broken_applies_when_bound_is_one_claims_file_error(tmp_path, condition, message):
    text = (ROOT / "reports" / "claims.toml").read_text()
    wanted = 'path = "data.runs.name=slide.threads", equals = 2,'
    assert text.count(wanted) == 1
    broken = tmp_path / "claims.toml"
    broken.write_text(text.replace(wanted, f'path = "data.runs.name=slide.threads", {condition},'))
    with pytest.raises(ClaimsError, match=message) as err:
        load_claims(broken)
    assert str(err.value).startswith("1 problem(s)")
    fine = tmp_path / "fine.toml"
    fine.write_text(text.replace(wanted, 'path = "data.runs.name=slide.threads", at_least = 8,'))
    read = {c.id: c for c in load_claims(fine)}["slide-beats-tf-cpu-from-2-cores"].applies_when
    assert (read.equals, read.at_least, read.wanted) == (None, 8.0, "SLIDE's threads ≥ 8")
    worded = """equals = 2, what = "SLIDE's threads", hint = "the smoke or quick profile, on 2 or more cores" }"""
    assert text.count(worded) == 1
    for words, message in (('what = 2, hint = "x" }', "with optional texts what and hint, got"),
                           ('what = "x", hint = ["full"] }', "with optional texts what and hint, got")):
        broken.write_text(text.replace(worded, f'equals = 2, {words}'))
        with pytest.raises(ClaimsError, match=message):
            load_claims(broken)


@pytest.mark.parametrize("claim_id, run", [("slide-core-utilization", "slide"),
                                           ("tf-cpu-core-utilization", "dense-cpu")])
def test_the_utilisation_claims_are_judged_only_from_8_threads(claim_id, run):
    """The paper's utilisation claims are about its scaling toward 44 threads: a 2-thread run
    (smoke, quick) is no setting to judge them in. Each is gated on its own run's threads."""
    from impls.harness.report.claims import Condition

    by_id = {c.id: c for c in load_claims(ROOT / "reports" / "claims.toml")}
    c = by_id[claim_id]
    assert c.measured.point.params == {"run": run}
    assert dataclasses.replace(c.applies_when, what="", hint="") == Condition(
        "slide_time_to_accuracy", f"data.runs.name={run}.threads", at_least=8.0)
    assert c.applies_when.what.endswith("threads") and "8 or more cores" in c.applies_when.hint
    assert "core-scaling figure" in c.note


def test_no_claim_of_a_fraction_is_reproduced_by_a_value_a_fraction_cannot_take():
    """A fraction's band ends at 1 or is open above (a floor): "0.7–1.125 fraction of cores
    busy" named an end past all cores busy (a tolerance widens an end, not the limit of what
    is measured)."""
    from impls.harness.report.verdicts import tolerance_band

    fractions = [c for c in load_claims(ROOT / "reports" / "claims.toml") if c.unit.startswith("fraction")]
    assert {"slide-core-utilization", "tf-cpu-core-utilization"} <= {c.id for c in fractions}
    for c in fractions:
        low, high = tolerance_band(c)
        assert low >= 0 and (high <= 1 or math.isinf(high)), (c.id, low, high)


def test_the_parity_claim_says_why_it_has_no_value_from_the_sweeps_own_words():
    """The batch-256 pair gets no per-iteration ratio when dense never beat the popular label;
    the claim must read the sweep's reason, not "benchmark skipped or without a value"."""
    from impls.slide.experiments import targets

    by_id = {c.id: c for c in load_claims(ROOT / "reports" / "claims.toml")}
    reason = by_id["slide-accuracy-per-iteration-parity"].unmeasured_reason
    assert reason is not None and reason.artifact == "slide_sweeps"
    assert reason.path == "data.batch.256.speedup.per_iteration_no_value"
    assert f'out["{reason.path.rsplit(".", 1)[1]}"]' in Path(targets.__file__).read_text()


def test_an_at_most_claim_reads_as_one():
    c = claim([-math.inf, 1.0], 0.0)
    c = Claim(**{**c.__dict__, "unit": "s"})
    assert formatting.paper_value(c) == "≤ 1 s"
    assert tolerance_band(c) == (-math.inf, 1.0)
    assert ratio_to_paper(c, -0.0004) == (1.0, True) and ratio_to_paper(c, 2.0) == (2.0, False)


@pytest.mark.parametrize("cuda_rows, artifacts, verdict, value, detail", [
    # a CUDA run with a value is the one judged (the paper's device), whatever the CPU run says
    ([("b.SwitchCuda.track_s", 0.5, "c" * 40)], {}, REPRODUCED, 0.5, "CUDA run: b.SwitchCuda.track_s"),
    ([("b.SwitchCuda.track_s", 3.0, "c" * 40)], {}, NOT_REPRODUCED, 3.0, "CUDA run: "),
    # no GPU here (skipped, or never run): the CPU run, named as such
    ([], {}, NOT_REPRODUCED, 2.0, "CPU run (no CUDA device on this machine): b.Switch.track_s at cccccccc"),
    # a CUDA run that failed is named beside the CPU run's verdict
    ([("b.SwitchCuda.track_s", math.inf, "c" * 40)], {}, NOT_REPRODUCED, 2.0,
     "CPU run (the CUDA run has no value: b.SwitchCuda.track_s at cccccccc is inf"),
])
def test_a_claim_is_judged_on_its_cuda_run_where_there_is_one(cuda_rows, artifacts, verdict, value, detail):
    c = Claim(**{**claim([-math.inf, 1.0], 0.0).__dict__,
                 "measured": BenchmarkSource(PointRef("b.Switch.track_s", {})),
                 "measured_cuda": BenchmarkSource(PointRef("b.SwitchCuda.track_s", {}))})
    points = _points(("b.Switch.track_s", 2.0, "c" * 40), *cuda_rows)
    [result] = evaluate_claims([c], points, artifacts, no_cuda_state())
    assert (result.verdict, result.measured) == (verdict, value)
    assert detail in result.detail
    assert ("CUDA run" in result.detail) == bool(cuda_rows)
    assert result.benchmarks == (("b.SwitchCuda.track_s",) if "CUDA run:" in detail else ("b.Switch.track_s",))


def test_a_cuda_run_skipped_on_a_gpu_machine_or_pointed_at_wrongly_is_said():
    c = Claim(**{**claim([-math.inf, 1.0], 0.0).__dict__,
                 "measured": BenchmarkSource(PointRef("b.Switch.track_s", {})),
                 "measured_cuda": BenchmarkSource(PointRef("b.SwitchCuda.track_s", {}))})
    skipped = pd.concat([_points(("b.Switch.track_s", 2.0, "c" * 40)),
                         _points(("b.SwitchCuda.track_s", math.nan, "c" * 40)).assign(status="skipped")])
    gpu = MachineState(MACHINE, None, "test", {"cuda": CapabilityState("cuda", True)})
    [on_gpu] = evaluate_claims([c], skipped, {}, gpu)
    assert on_gpu.measured == 2.0 and on_gpu.detail.startswith("CPU run (the CUDA run was skipped here: ")
    [no_gpu] = evaluate_claims([c], skipped, {}, no_cuda_state())
    assert no_gpu.measured == 2.0 and no_gpu.detail.startswith("CPU run (no CUDA device on this machine): ")
    wrong = Claim(**{**c.__dict__, "measured_cuda": BenchmarkSource(PointRef("b.SwitchCuda.track_s", {"x": 1}))})
    [result] = evaluate_claims([wrong], _points(("b.Switch.track_s", 2.0, "c" * 40),
                                                 ("b.SwitchCuda.track_s", 0.5, "c" * 40)), {}, no_cuda_state())
    assert result.verdict.startswith(f"{NOT_MEASURED}: claims.toml points at data that do not fit"), result.verdict


def test_an_artifact_claim_reads_the_cuda_artifact_where_there_is_one():
    [switch] = [c for c in load_claims(REAL_CLAIMS) if c.id == "salus-switch-subsecond"]
    switch = dataclasses.replace(switch, requires=(),
                                 measured=ArtifactSource("salus_switching", "data.largest.inprocess_p99_s"),
                                 measured_cuda=ArtifactSource("salus_switching_cuda", "data.largest.inprocess_p99_s"))
    cpu = record("salus_switching", {"largest": {"inprocess_p99_s": 2.0}})
    cuda = record("salus_switching_cuda", {"largest": {"inprocess_p99_s": 0.004}})
    [on_cpu] = evaluate_claims([switch], _points(), {"salus_switching": cpu}, no_cuda_state())
    [on_gpu] = evaluate_claims([switch], _points(), {"salus_switching": cpu, "salus_switching_cuda": cuda},
                               no_cuda_state())
    assert (on_cpu.verdict, on_cpu.measured) == (NOT_REPRODUCED, 2.0)
    assert (on_gpu.verdict, on_gpu.measured) == (REPRODUCED, 0.004)
    assert on_gpu.detail.startswith("CUDA run: artifact salus_switching_cuda")


def test_the_suites_switching_claims_are_judged_on_a_cuda_run_only():
    """A CPU switch moves no GPU state and a CPU restart sets up no device: without CUDA both
    switching claims read "not measured", whatever the CPU run's artifact holds."""
    claims = {c.id: c for c in load_claims(REAL_CLAIMS)}
    cpu = record("salus_switching", {"largest": {"inprocess_p99_s": 0.0003, "restart_p50_s": 2.0}})
    cuda = record("salus_switching_cuda", {"largest": {"inprocess_p99_s": 0.004, "restart_p50_s": 3.5}})
    with_gpu = MachineState(MACHINE, fingerprint(), "test", {"cuda": CapabilityState("cuda", True)})
    for cid, on_cuda in (("salus-switch-subsecond", 0.004), ("salus-checkpoint-switch-second-scale", 3.5)):
        [on_cpu] = evaluate_claims([claims[cid]], _points(), {"salus_switching": cpu}, no_cuda_state())
        assert on_cpu.verdict == f"{NOT_MEASURED}: {NO_CUDA}" and on_cpu.measured is None, cid
        [on_gpu] = evaluate_claims([claims[cid]], _points(), {"salus_switching": cpu, "salus_switching_cuda": cuda},
                                   with_gpu)
        assert on_gpu.verdict == REPRODUCED and on_gpu.measured == on_cuda, cid


def test_data_without_a_value_are_not_blamed_on_the_claims_file():
    """A NaN an artifact stores, or a zero denominator, is the data's: 'no value', not 'claims.toml
    points at data that do not fit'."""
    nan_claim = Claim(**{**claim(2.0, 0.1).__dict__, "measured": ArtifactSource("toy_speed", "data.loss")})
    [result] = evaluate_claims([nan_claim], _points(), {"toy_speed": record("toy_speed", {"loss": math.nan})},
                               no_cuda_state())
    assert result.verdict.startswith(NOT_MEASURED) and "claims.toml" not in result.verdict
    ratio = Claim(**{**claim(2.0, 0.1).__dict__, "measured": RatioSource(PointRef("b.A.track_x", {}),
                                                                          PointRef("b.B.track_x", {}))})
    [result] = evaluate_claims([ratio], _points(("b.A.track_x", 1.0, "b" * 40), ("b.B.track_x", 0.0, "b" * 40)),
                               {}, no_cuda_state())
    assert result.verdict.startswith(NOT_MEASURED) and "claims.toml" not in result.verdict
    assert "is zero: no ratio" in result.detail
    text = {"loss": "text"}                                      # a text where a number belongs is the file's
    [result] = evaluate_claims([nan_claim], _points(), {"toy_speed": record("toy_speed", text)}, no_cuda_state())
    assert "claims.toml points at data that do not fit" in result.verdict


def test_a_ratio_is_judged_only_of_two_positive_numbers_of_one_commit():
    ratio = Claim(**{**claim(2.0, 0.1).__dict__, "measured": RatioSource(PointRef("b.A.track_x", {}),
                                                                          PointRef("b.B.track_x", {}))})
    judged = lambda *rows: evaluate_claims([ratio], _points(*rows), {}, no_cuda_state())[0]  # noqa: E731
    assert judged(("b.A.track_x", 2.0, "b" * 40), ("b.B.track_x", 1.0, "b" * 40)).verdict == "reproduced"
    both_negative = judged(("b.A.track_x", -2.0, "b" * 40), ("b.B.track_x", -1.0, "b" * 40))
    assert both_negative.verdict.startswith(NOT_MEASURED) and "signed numbers is no factor" in both_negative.verdict
    mixed = judged(("b.A.track_x", 2.0, "b" * 40), ("b.B.track_x", 1.0, "a" * 40))
    assert mixed.verdict.startswith(NOT_MEASURED) and "different commits" in mixed.verdict


def test_a_value_flagged_both_lower_and_upper_bound_is_not_judged():
    c = Claim(**{**claim(8.0, 0.15, 1.0).__dict__,
                 "measured": BenchmarkSource(PointRef("b.Speed.track_ratio", {})),
                 "lower_bound_when": BenchmarkSource(PointRef("b.Speed.track_lo", {})),
                 "upper_bound_when": BenchmarkSource(PointRef("b.Speed.track_hi", {}))})
    rows = _points(("b.Speed.track_ratio", 8.0, "b" * 40), ("b.Speed.track_lo", 1.0, "b" * 40),
                   ("b.Speed.track_hi", 1.0, "b" * 40))
    [result] = evaluate_claims([c], rows, {}, no_cuda_state())
    assert result.verdict == f"{NOT_MEASURED}: 8× is flagged both a lower and an upper bound"


def test_a_value_of_synthetic_and_measured_data_says_partly_synthetic():
    from impls.harness.report.provenance import PARTLY_SYNTHETIC, data_kind

    mixed = ("bench_bandana_replay.ReplayOverFio.track_ratio", "bench_bandana_device.FioRandomRead.track_iops")
    assert [data_kind((b,)) for b in mixed] == ["synthetic", "not synthetic"]   # a synthetic replay, a drive's fio
    assert data_kind(mixed) == PARTLY_SYNTHETIC
    result = dataclasses.replace(evaluate_claims([claim(2.0, 0.1)], _points(), {}, no_cuda_state())[0],
                                 measured=2.0, data=PARTLY_SYNTHETIC)
    assert formatting.data_note(result) == " (partly synthetic data)"


@pytest.mark.parametrize("paper, tolerance, baseline, shown", [
    ([2.0, 3.0], 0.1, 1.0, "2–3× (reproduced within 1.8–3.3×)"),
    (2.7, 0.0, 1.0, "2.7×"),                                   # no tolerance: the band is the value
    ([1.0, math.inf], 0.0, 1.0, "> 1×"),                       # the band is the paper's own range
    (1.5, 0.6, 1.0, "1.5× (reproduced within (1–2.4]×)"),       # cut at the baseline, which it excludes
    ([-math.inf, 1.0], 0.1, None, "≤ 1× (reproduced within ≤ 1.1×)"),
])
def test_the_claims_table_shows_the_band_that_reproduces_a_claim(paper, tolerance, baseline, shown):
    assert formatting.paper_value_and_band(claim(paper, tolerance, baseline)) == shown


@pytest.mark.parametrize("value, shown, verdict", [
    (1.8, "1.8×", REPRODUCED),
    (1.79951, "1.7995×", PARTLY),          # three digits would print it on the edge, inside
    (1.80049, "1.8005×", REPRODUCED),
    (2.5, "2.5×", REPRODUCED),
])
def test_a_value_near_a_band_edge_prints_on_its_own_side_of_it(value, shown, verdict):
    c = Claim(**{**claim([2.0, 3.0], 0.1, 1.0).__dict__, "measured": BenchmarkSource(PointRef("b.T.track_x", {}))})
    [result] = evaluate_claims([c], _points(("b.T.track_x", value, "c" * 40)), {}, no_cuda_state())
    assert result.verdict == verdict
    assert formatting.measured(result) == shown


def test_a_bounds_ratio_to_the_paper_carries_its_bound_mark():
    c = Claim(**{**claim(8.0, 0.15, 1.0).__dict__,
                 "measured": BenchmarkSource(PointRef("b.Speed.track_ratio", {})),
                 "lower_bound_when": BenchmarkSource(PointRef("b.Speed.track_is_lower_bound", {}))})
    rows = _points(("b.Speed.track_ratio", 1.13, "b" * 40), ("b.Speed.track_is_lower_bound", 1.0, "b" * 40))
    [result] = evaluate_claims([c], rows, {}, no_cuda_state())
    assert formatting.measured(result).startswith("≥ 1.13×") and formatting.ratio(result) == "≥ 0.14"


def test_a_claim_naming_a_benchmark_the_results_do_not_list_says_so(tmp_path):
    """A typo in claims.toml read "not measured: no results", like a benchmark not run here;
    against asv's benchmarks.json it names the typo, and the report's notes list it."""
    text = CLAIMS.read_text()
    assert 'benchmark = "bench_toy.Speed.track_speedup" }' in text
    typo = tmp_path / "claims.toml"
    typo.write_text(text.replace('benchmark = "bench_toy.Speed.track_speedup" }',
                                 'benchmark = "bench_toy.Speed.track_speedupp" }', 1))
    root = write_artifacts(tmp_path / "artifacts", record("toy_curve", CURVE))
    built = build_report(MACHINE, RESULTS, root, typo, SPECS)
    wrong = [r for r in built.claims + built.peers if "track_speedupp" in r.verdict]
    assert len(wrong) == 1
    assert wrong[0].verdict == (f"{NOT_MEASURED}: claims.toml names benchmark bench_toy.Speed.track_speedupp, which "
                                "neither benchmarks.json nor the benchmark code declares (a typo?)")
    assert any("that neither this machine's benchmarks.json nor the benchmark code declares" in n
               and wrong[0].claim.id in n for n in built.notes)
    clean = build_report(MACHINE, RESULTS, root, CLAIMS, SPECS)
    assert not any("track_speedupp" in r.verdict for r in clean.claims + clean.peers)


def test_a_value_from_an_older_commits_artifact_says_so(tmp_path):
    """The newest results are at NEW; an artifact only at OLD (its experiment failed or was not
    run at NEW) still gives the value, and the detail and notes say from which run."""
    old = {**record("toy_curve", CURVE), "commit": OLD, "created": "2024-01-01T13:00:00+00:00"}
    built = build_report(MACHINE, RESULTS, write_artifacts(tmp_path / "a", old), CLAIMS, SPECS)
    [result] = [r for r in built.claims if r.benchmarks == ("artifact:toy_curve",)]
    assert result.measured == 0.32
    assert f"from the run at {OLD[:8]}, older than the newest results ({NEW[:8]})" in result.detail
    assert any(result.claim.id in n and "read artifacts of older commits" in n for n in built.notes)
    fresh = build_report(MACHINE, RESULTS, write_artifacts(tmp_path / "b", record("toy_curve", CURVE)), CLAIMS, SPECS)
    [same] = [r for r in fresh.claims if r.benchmarks == ("artifact:toy_curve",)]
    assert "older than the newest" not in same.detail


def test_a_reference_either_the_results_or_the_code_declares_is_no_typo():
    from impls.harness.report.claims import unknown_references

    c = Claim(**{**claim(2.0, 0.1, 1.0).__dict__, "measured": BenchmarkSource(PointRef("b.T.track_x", {"table": "u"}))})
    assert unknown_references([c], {"b.T.track_x": ()}, {"b.T.track_x": ("table",)}) == {}   # code newer
    assert unknown_references([c], {"b.T.track_x": ("table",)}, {}) == {}
    assert unknown_references([c], {"b.T.track_x": ()}, {}) == {
        "c": ["benchmark b.T.track_x with parameters ['table'] (it takes [])"]}
    assert unknown_references([c], {}, {}) == {"c": ["benchmark b.T.track_x"]}


def test_an_artifact_of_a_commit_the_results_do_not_date_is_not_called_older(tmp_path):
    """An artifact saved at a commit asv never ran (--save-artifact at HEAD) may be newer."""
    unknown = {**record("toy_curve", CURVE), "commit": "c" * 40}
    built = build_report(MACHINE, RESULTS, write_artifacts(tmp_path / "a", unknown), CLAIMS, SPECS)
    [result] = [r for r in built.claims if r.benchmarks == ("artifact:toy_curve",)]
    assert result.measured == 0.32 and "older than the newest" not in result.detail


def test_every_command_lines_help_gives_a_default_of_zero():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "impls.slide.xc_stats", "--help"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0
    assert "(default: 0)" in " ".join(out.stdout.split())


def test_an_interval_without_the_runs_sampling_interval_says_what_it_leaves_out():
    from impls.harness.report.noise import Noise, Threshold

    artifacts = {"toy_pairs": {"commit": "b" * 40, "data": {"pair": {"intervals": {"reason": "an older run"}}}}}
    noise = Noise("m", "t", [], {("b.Speed.track_ratio", ""): Threshold("b.Speed.track_ratio", "", 2, 0.05, 0.15)})
    [result] = evaluate_claims([_sampled_claim()], _points(("b.Speed.track_ratio", 2.0, "b" * 40)), artifacts,
                               no_cuda_state(), noise)
    assert (result.interval.low, result.interval.high) == pytest.approx((1.9, 2.1))
    assert result.interval.described.endswith("without the test points' sampling error (the newest artifact holds "
                                              "no interval for this run: an older run's, or one of another commit)")
    assert result.interval.lacks.startswith("without ") and "without" not in result.interval.method
    # the claims table names the method alone; the detail says what the interval leaves out
    assert formatting.interval_note(result) == f"interval: {result.interval.method}"
    assert "sampling error is not in its interval" in result.detail


def test_interval_ends_near_a_band_edge_print_on_their_side_of_it():
    artifacts = {"toy_pairs": {"commit": "b" * 40, "data": {"pair": {"intervals": {"ratio": [1.7996, 2.1]}}}}}
    [result] = evaluate_claims([_sampled_claim()], _points(("b.Speed.track_ratio", 1.85, "b" * 40)), artifacts,
                               no_cuda_state())
    assert result.verdict == INCONCLUSIVE
    assert formatting.measured(result) == "1.85× [1.7996, 2.1]"
    assert "interval 1.7996..2.1× straddles the tolerance band" in result.detail


def test_a_claim_whose_run_has_no_sampling_interval_says_so_in_its_detail():
    artifacts = {"toy_pairs": {"commit": "b" * 40, "data": {"pair": {"intervals": {"reason": "an older run"}}}}}
    [result] = evaluate_claims([_sampled_claim()], _points(("b.Speed.track_ratio", 2.0, "b" * 40)), artifacts,
                               no_cuda_state())
    assert result.interval is None and result.verdict == REPRODUCED
    assert result.detail.endswith("the test points' sampling error is not in any interval: the newest artifact "
                                  "holds none for this run (data.pair.intervals.ratio; an older run's, or one of "
                                  "another commit)")


@pytest.mark.parametrize("flag, value, shown_value", [("lower", 6.7996, "6.7996"), ("upper", 9.2004, "9.2004")])
def test_a_bounds_verdict_prints_the_bound_on_its_side_of_the_band(flag, value, shown_value):
    c = Claim(**{**claim(8.0, 0.15, 1.0).__dict__, "measured": BenchmarkSource(PointRef("b.Speed.track_ratio", {})),
                 f"{flag}_bound_when": BenchmarkSource(PointRef("b.Speed.track_flag", {}))})
    rows = _points(("b.Speed.track_ratio", value, "b" * 40), ("b.Speed.track_flag", 1.0, "b" * 40))
    [result] = evaluate_claims([c], rows, {}, no_cuda_state())
    text = f"{result.verdict} {result.detail}"
    assert shown_value in text and "(6.8)" not in text and "(9.2)" not in text and "least 6.8," not in text


def test_a_null_draw_interval_is_unbounded_in_the_claims_own_words():
    artifacts = {"toy_pairs": {"commit": "b" * 40, "data": {"r": None}}}
    [result] = evaluate_claims([_twin_sampled_claim()], _points(("b.Speed.track_ratio", 2.0, "b" * 40)), artifacts,
                               no_cuda_state())
    assert result.verdict == INCONCLUSIVE and result.interval.unbounded
    assert result.interval.why_unbounded == "the run could not bound the spread over draws of the trace"
    assert "test points" not in formatting.measured(result)


def test_the_pages_say_how_each_interval_was_found():
    from impls.harness.report import html_page, markdown_page

    artifacts = {"toy_pairs": {"commit": "b" * 40, "data": {"r": [1.9, 2.1]}}}
    [result] = evaluate_claims([_twin_sampled_claim()], _points(("b.Speed.track_ratio", 2.0, "b" * 40)), artifacts,
                               no_cuda_state())
    assert "interval: spread over 9 draws (95%)" in markdown_page._claims_table([result])
    assert "interval: spread over 9 draws (95%)" in "".join(html_page._claim_rows([result])[0])
    [bare] = evaluate_claims([claim(2.0, 0.1, 1.0)], _points(), {}, no_cuda_state())
    assert "interval:" not in markdown_page._claims_table([bare])


def test_the_interval_note_leaves_out_what_the_value_or_detail_already_says():
    from impls.harness.report import markdown_page
    from impls.harness.report.noise import Noise, Threshold

    unbounded = {"toy_pairs": {"commit": "b" * 40, "data": {"r": None}}}
    [result] = evaluate_claims([_twin_sampled_claim()], _points(("b.Speed.track_ratio", 2.0, "b" * 40)), unbounded,
                               no_cuda_state())
    assert "interval:" not in markdown_page._claims_table([result])
    missing = {"toy_pairs": {"commit": "b" * 40, "data": {}}}
    noise = Noise("m", "t", [], {("b.Speed.track_ratio", ""): Threshold("b.Speed.track_ratio", "", 2, 0.05, 0.15)})
    [result] = evaluate_claims([_twin_sampled_claim()], _points(("b.Speed.track_ratio", 2.0, "b" * 40)), missing,
                               no_cuda_state(), noise)
    table = markdown_page._claims_table([result])
    assert ("interval: the repeats' range (a thresholds file from before sigma), from run-to-run noise (2 runs "
            "`make noise` read, repeats of each commit) |" in table.replace(" |\n", " |"))
    assert table.count("the newest artifact holds") == 1
