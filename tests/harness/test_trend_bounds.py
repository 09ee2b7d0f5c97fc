"""A trend claim over values some of which are only bounds (a time-to-target lead where the
slower run never reached the target) is not measured: a rank correlation of bounds says
nothing. The batch-size claim reads the paper's measure, the time-to-target lead, this way."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from impls.harness.report.claims import ClaimsError, TrendSource, benchmark_references, load_claims
from impls.harness.report.machine_state import MachineState
from impls.harness.report.verdicts import NOT_MEASURED, NOT_REPRODUCED, REPRODUCED, evaluate_claim, suite_claim

ROOT = Path(__file__).resolve().parents[2]
HEAD = "e0085384d075c1f6cbc1632c36ae6bdec3c3ad29"
STATE = MachineState("m", None, "", {})
BATCH = "bench_slide.SlideBatchSpeedup"


def lead_claim():
    """slide-lead-grows-with-batch-size without its 44-thread gate (tested with the settings)."""
    return dataclasses.replace(suite_claim("slide-lead-grows-with-batch-size"), applies_when=None)


def row(benchmark: str, batch: int, value: float, started: float, status: str = "ok") -> dict:
    return {"machine": "m", "commit": HEAD, "date": pd.Timestamp(0, tz="UTC"), "env_name": "existing-py",
            "benchmark": benchmark, "type": "track", "unit": "x", "params": {"batch": batch},
            "param_label": f"batch={batch}", "value": value, "status": status,
            "started_at": pd.Timestamp(started, unit="s", tz="UTC"), "version": "1", "history": 0}


def sweep(leads: dict[int, float], lower: dict[int, float], upper: dict[int, float] | None = None) -> pd.DataFrame:
    """One run of the class: the leads first, then each flag, all of one commit and environment."""
    upper = upper if upper is not None else {b: 0.0 for b in lower}
    rows = [row(f"{BATCH}.track_time_to_target_ratio", b, v, 100 + i) for i, (b, v) in enumerate(leads.items())]
    rows += [row(f"{BATCH}.track_ratio_is_lower_bound", b, v, 110 + i) for i, (b, v) in enumerate(lower.items())]
    rows += [row(f"{BATCH}.track_ratio_is_upper_bound", b, v, 120 + i) for i, (b, v) in enumerate(upper.items())]
    return pd.DataFrame(rows)


def test_the_batch_claim_reads_the_time_to_target_lead_with_its_bound_flags():
    c = suite_claim("slide-lead-grows-with-batch-size")
    assert c.measured == TrendSource(f"{BATCH}.track_time_to_target_ratio", "batch", {},
                                     f"{BATCH}.track_ratio_is_lower_bound", f"{BATCH}.track_ratio_is_upper_bound")
    assert c.applies_when.at_least == 44.0
    named = {name for name, _ in benchmark_references(c)}
    assert {f"{BATCH}.track_ratio_is_lower_bound", f"{BATCH}.track_ratio_is_upper_bound"} <= named


def test_exact_leads_are_judged():
    leads = {64: 1.2, 128: 1.5, 256: 2.0}
    assert evaluate_claim(lead_claim(), sweep(leads, {64: 0, 128: 0, 256: 0}), {}, STATE).verdict == REPRODUCED
    falling = {64: 2.0, 128: 1.5, 256: 1.2}
    assert evaluate_claim(lead_claim(), sweep(falling, {64: 0, 128: 0, 256: 0}), {}, STATE).verdict == NOT_REPRODUCED


@pytest.mark.parametrize("lower, upper, said", [
    ({64: 1, 128: 0, 256: 0}, None, "the value at batch=64 is only a lower bound"),
    ({64: 0, 128: 0, 256: 0}, {64: 0, 128: 0, 256: 1}, "the value at batch=256 is only an upper bound"),
    ({64: 0, 256: 0}, None, "whether the value at batch=128 is exact is not known"),
])
def test_a_bound_among_the_leads_is_not_measured(lower, upper, said):
    result = evaluate_claim(lead_claim(), sweep({64: 1.2, 128: 1.5, 256: 2.0}, lower, upper), {}, STATE)
    assert result.verdict.startswith(f"{NOT_MEASURED}: a rank correlation needs exact values, and "), result
    assert said in result.verdict and said in result.detail, result
    assert result.measured is None


def test_many_bounds_are_one_short_verdict_and_listed_in_the_detail():
    result = evaluate_claim(lead_claim(), sweep({64: 1.2, 128: 1.5, 256: 2.0}, {64: 1, 128: 1, 256: 1}), {}, STATE)
    assert result.verdict == (f"{NOT_MEASURED}: a rank correlation needs exact values, and the value at batch=64 "
                              "is only a lower bound (and 2 more, in the detail)")
    assert all(f"the value at batch={b} is only a lower bound" in result.detail for b in (64, 128, 256))


def test_a_failed_lead_is_left_out_and_its_flag_not_asked():
    # the lead at 128 failed: the trend rests on the other two (a sign), whose flags say exact
    frame = sweep({64: 1.2, 128: 1.5, 256: 2.0}, {64: 0, 256: 0})
    frame.loc[(frame["benchmark"] == f"{BATCH}.track_time_to_target_ratio") & (frame["param_label"] == "batch=128"),
              "status"] = "failed"
    result = evaluate_claim(lead_claim(), frame, {}, STATE)
    assert "is exact is not known" not in result.verdict, result.verdict


@pytest.mark.parametrize("bounds", ['"x"', '{ lower = 1 }', '{ below = "x" }', '{ lower = "" }'])
def test_a_broken_bounds_table_is_one_claims_file_error(tmp_path, bounds):
    text = (ROOT / "reports" / "claims.toml").read_text()
    wanted = f'bounds = {{ lower = "{BATCH}.track_ratio_is_lower_bound", upper = "{BATCH}.track_ratio_is_upper_bound" }}'
    assert text.count(wanted) == 1
    broken = tmp_path / "claims.toml"
    broken.write_text(text.replace(wanted, f"bounds = {bounds}"))
    with pytest.raises(ClaimsError, match=r"measured.bounds must be \{ lower = "):
        load_claims(broken)


def test_a_trend_of_bounds_in_another_setting_shows_no_rho():
    """At 2 threads the claim is of another setting; its detail must not quote a rank
    correlation of bounds as if it were a measured trend."""
    from impls.harness.report.claims import Condition

    c = dataclasses.replace(lead_claim(), applies_when=Condition("slide_sweeps", "data.batch.64.slide.threads",
                                                                 at_least=44.0))
    artifacts = {"slide_sweeps": {"commit": HEAD, "data": {"batch": {"64": {"slide": {"threads": 2}}}}}}
    result = evaluate_claim(c, sweep({64: 2.0, 128: 1.5, 256: 1.2}, {64: 1, 128: 1, 256: 1}), artifacts, STATE)
    assert result.verdict.startswith(f"{NOT_MEASURED}: this profile's run has data.batch.64.slide.threads = 2")
    assert "the value at batch=64 is only a lower bound" in result.detail and "-1" not in result.detail
