"""The Salus figures quote the paper's values from reports/claims.toml when drawn (never from
the artifact), draw without them where the claim has no single value, and name the device."""
from __future__ import annotations

import dataclasses
import re
import warnings

import pytest

from impls.harness.report import render, verdicts
from impls.salus import paper
from impls.salus.figures import lanes
from impls.salus.figures import scheduling as figures


def claims_with(tmp_path, monkeypatch, changes: dict[str, dict[str, str]]):
    """Point the suite's claims file at a copy of reports/claims.toml in which each claim id
    of ``changes`` has its ``paper_value`` replaced (TOML text) or its id ``rename``d."""
    text = render.default_claims_path().read_text(encoding="utf-8")
    for claim_id, change in changes.items():
        header = f'id = "{claim_id}"'
        at = text.index(header)
        end = text.find("[[claim]]", at)
        end = len(text) if end < 0 else end
        block = text[at:end]
        if "paper_value" in change:
            block, n = re.subn(r"(?m)^paper_value = .*$", f"paper_value = {change['paper_value']}", block, count=1)
            assert n == 1
        if "rename" in change:
            block = block.replace(header, f'id = "{change["rename"]}"', 1)
        text = text[:at] + block + text[end:]
    path = tmp_path / "claims.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(render, "default_claims_path", lambda: path)


def policy_row(avg):
    row = {"avg_jct_s": avg, "makespan_s": 2 * avg, "jct_cdf": {"x": [avg / 2, avg], "y": [0.5, 1.0]}}
    return {"real": row, "sim": row, "sim_inrun": row, "sim_error": 0.05, "sim_inrun_error": 0.01}


def policies_data(**extra):
    """A salus_policies artifact's data as the experiment stores it now (no paper field)."""
    return {"policies": {"fifo": policy_row(4.0), "srtf": policy_row(2.0)},
            "fifo_over_srtf": {"real": 2.0, "sim": 2.0, "sim_inrun": 2.0}, **extra}


def hyperparam_data(**extra):
    run = {"failed": [], "makespan_s": 2.0}
    return {"workloads": {"vae_b32": {"serial": run, "packed": {**run, "makespan_s": 1.0}, "ratio": 2.0}},
            "rule": "salus", "n_jobs": 6, "iterations": 30, "device": "cpu", "device_name": "cpu",
            "host_workers": 2, "torch_threads": 2, "packed_torch_threads": 1, **extra}


def jct_title(data) -> str:
    return figures.jct_cdf(data).axes[0].get_title()


def hyperparam_title(data) -> str:
    return lanes.hyperparam_makespan(data).axes[0].get_title()


def test_the_claim_ids_the_figures_quote_have_single_paper_values_in_the_suites_claims():
    for claim_id in (paper.JCT_CLAIM, paper.HYPERPARAM_CLAIM):
        claim = verdicts.suite_claim(claim_id)
        assert paper.paper_value(claim_id) == claim.paper_value
    assert f"(paper: {verdicts.suite_claim(paper.JCT_CLAIM).paper_value:g}× on a GPU)" in \
        jct_title(policies_data(device="cpu", device_name="cpu"))


@pytest.mark.parametrize("stored", [{}, {"paper": 3.19}], ids=["new artifact", "old artifact with paper"])
def test_the_jct_cdf_title_quotes_claims_toml_not_the_artifact(tmp_path, monkeypatch, stored):
    claims_with(tmp_path, monkeypatch, {paper.JCT_CLAIM: {"paper_value": "4.56"}})
    data = policies_data(device="cpu", device_name="cpu")
    data["fifo_over_srtf"].update(stored)
    title = jct_title(data)
    assert "avg JCT FIFO / SRTF = 2.00× on cpu (paper: 4.56× on a GPU)" in title
    assert "3.19" not in title


@pytest.mark.parametrize("stored", [{}, {"paper": 2.38}], ids=["new artifact", "old artifact with paper"])
def test_the_hyperparam_title_quotes_claims_toml_not_the_artifact(tmp_path, monkeypatch, stored):
    claims_with(tmp_path, monkeypatch, {paper.HYPERPARAM_CLAIM: {"paper_value": "1.23"}})
    title = hyperparam_title(hyperparam_data(**stored))
    assert title == "6 jobs × 30 iterations on cpu (paper: 1.23× on a GPU)"


@pytest.mark.parametrize("change", [{"rename": "renamed"}, {"paper_value": "[2.0, 3.5]"}],
                         ids=["claim missing", "a range, not one value"])
def test_without_a_single_paper_value_the_figures_draw_without_the_paper_part(tmp_path, monkeypatch, change):
    claims_with(tmp_path, monkeypatch,
                {claim: {k: f"{claim}-{v}" if k == "rename" else v for k, v in change.items()}
                 for claim in (paper.JCT_CLAIM, paper.HYPERPARAM_CLAIM)})
    assert paper.paper_value(paper.JCT_CLAIM) is None and paper.paper_value(paper.HYPERPARAM_CLAIM) is None
    assert jct_title(policies_data(device="cpu", device_name="cpu")) == "avg JCT FIFO / SRTF = 2.00× on cpu"
    assert hyperparam_title(hyperparam_data()) == "6 jobs × 30 iterations on cpu"


def test_an_unreadable_claims_file_leaves_out_the_paper_part(tmp_path, monkeypatch):
    broken = tmp_path / "claims.toml"
    broken.write_text("[[claim]\n", encoding="utf-8")
    monkeypatch.setattr(render, "default_claims_path", lambda: broken)
    assert paper.paper_note(paper.JCT_CLAIM) == ""
    assert "paper" not in jct_title(policies_data(device="cpu"))


def overhead_data(**extra):
    return {"workloads": {"mlp": {"alone_ms": 10.0, "executor_ms": 10.1, "bookkeeping_pct": 0.4}}, **extra}


@pytest.mark.parametrize("device", [{"device": "cpu"}, {"device": "cpu", "device_name": "cpu"}])
def test_the_three_policy_and_overhead_titles_name_the_device(device):
    """salus_policies records device and device_name, salus_overhead only device."""
    assert " on cpu (paper: " in jct_title(policies_data(**device))
    bars = figures.avg_jct_real_vs_simulated(policies_data(**device)).axes[0].get_title()
    assert bars.splitlines()[0] == "real runs and profiles on cpu"
    assert "largest simulator error" in bars
    assert figures.executor_overhead(overhead_data(**device)).axes[0].get_title().endswith("on cpu")


def test_the_titles_prefer_the_device_name_and_name_it_without_a_ratio_too():
    name = {"device": "cuda", "device_name": "cuda:0 NVIDIA H100 80GB HBM3"}
    assert "2.00× on cuda:0 NVIDIA H100 80GB HBM3 (paper: " in jct_title(policies_data(**name))
    no_ratio = policies_data(**name)
    no_ratio["fifo_over_srtf"]["real"] = None
    assert jct_title(no_ratio) == "runs on cuda:0 NVIDIA H100 80GB HBM3; no avg JCT FIFO / SRTF"


def test_artifacts_that_record_no_device_still_draw_without_naming_one():
    assert "= 2.00× here (paper: " in jct_title(policies_data())
    assert "None" not in figures.avg_jct_real_vs_simulated(policies_data()).axes[0].get_title()
    assert figures.executor_overhead(overhead_data()).axes[0].get_title() == ""


def test_a_report_rendered_with_its_own_claims_file_quotes_that_file_in_the_titles(tmp_path, monkeypatch):
    """render_report --claims FILE: the figures quote FILE's paper value, as its verdicts do,
    in this process and in the worker processes that draw a full report's figures."""
    from impls.harness import figures as registry
    from impls.harness.report.machine_state import MachineState
    from impls.harness.report.paper_figures import DRAWN, render_paper_figures

    claims_with(tmp_path, monkeypatch, {paper.JCT_CLAIM: {"paper_value": "4.56"}})
    own = tmp_path / "claims.toml"
    monkeypatch.undo()                                   # the suite's file is the default again
    assert paper.paper_value(paper.JCT_CLAIM) != 4.56
    spec = registry.discover()[0]["salus_jct_cdf"]
    record = {"schema": 1, "name": "salus_policies", "experiment": "salus.policies", "profile": "smoke",
              "created": "2024-02-01T13:00:00+00:00", "machine": "toybox", "commit": "e" * 40,
              "synthetic": True, "data": policies_data(device="cpu", device_name="cpu")}
    state = MachineState("toybox", None, "test", {})
    for workers, copies in ((1, 1), (2, 16)):            # 16 figures: drawn by two spawned workers
        specs = {f"jct{i}": dataclasses.replace(spec, name=f"jct{i}") for i in range(copies)}
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)     # a broken pool would draw them here
            drawn = render_paper_figures(specs, {"salus_policies": record}, state, workers, claims_path=own)
        assert all(f.status == DRAWN for f in drawn), [f.caption for f in drawn]
        assert all(b"(paper: 4.56\xc3\x97 on a GPU)" in f.svg for f in drawn)
    assert paper.paper_value(paper.JCT_CLAIM) != 4.56      # the default is back after the report
