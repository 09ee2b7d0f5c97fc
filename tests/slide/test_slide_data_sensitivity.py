"""scripts/slide_data_sensitivity.py trains the SLIDE experiment's runs on other draws of its
synthetic set: a draw at the manifest's seed must be the registry's set (else its figures
measure other data), another seed another set of the same recipe, each run on the draw it was
given, and the summary must say what each draw gave, bounds as bounds."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from impls.harness import registry
from impls.slide.data.dataset import XCData
from impls.slide.experiments import sweeps

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slide_data_sensitivity.py"


@pytest.fixture
def script(load_script):
    return load_script("slide_data_sensitivity")


def test_a_draw_at_the_manifests_seed_is_the_registry_set_and_another_seed_another_set():
    manifest = registry.manifests()["slide-amazon670k"]
    same = registry.draw("slide-amazon670k", manifest.spec["seed"], "smoke")
    stored = registry.load("slide-amazon670k", "smoke").arrays
    assert sorted(same) == sorted(stored)
    for key in stored:
        np.testing.assert_array_equal(same[key], stored[key])
    other = registry.draw("slide-amazon670k", 1, "smoke")
    np.testing.assert_array_equal(other["train_shape"], stored["train_shape"])   # same recipe, same sizes
    assert not np.array_equal(other["train_indices"][:1000], stored["train_indices"][:1000])


def test_draw_refuses_a_set_read_from_files_and_an_unknown_name():
    with pytest.raises(ValueError, match="read from files"):
        registry.draw("slide-amazon670k-real", 1, "smoke")
    with pytest.raises(KeyError, match="unknown dataset"):
        registry.draw("slide-amazon-670k", 1, "smoke")


def test_run_spec_on_file_trains_on_the_stored_splits(tmp_path, monkeypatch):
    train, test, _ = sweeps.data("smoke")
    path = tmp_path / "draw.npz"
    np.savez(path, **train.to_arrays("train_"), **test.to_arrays("test_"))
    seen = {}

    def fake(s, spec, train_data, test_data):
        seen.update(s=s, spec=spec, train=train_data, test=test_data)
        return {"threads": 1}

    monkeypatch.setattr(sweeps, "run_spec_on", fake)
    s = sweeps.sizes("smoke")
    assert sweeps.run_spec_on_file({"sizes": s, "spec": s["runs"][0], "path": str(path)}) == {"threads": 1}
    assert isinstance(seen["train"], XCData) and seen["spec"] is s["runs"][0]
    for got, want in ((seen["train"], train), (seen["test"], test)):
        assert (got.n_features, got.n_labels) == (want.n_features, want.n_labels)
        np.testing.assert_array_equal(got.indices, want.indices)
        np.testing.assert_array_equal(got.labels, want.labels)


def test_default_runs_are_slide_and_what_the_profile_compares_it_with_that_runs_here(monkeypatch, script):
    s = {"runs": [{"name": "slide", "method": "slide"}, {"name": "dense-cpu", "method": "dense"},
                  {"name": "dense-cuda", "method": "dense", "device": "cuda"},
                  {"name": "other", "method": "dense"}],
         "comparisons": [["slide", "dense-cpu"], ["slide", "dense-cuda"], ["other", "dense-cpu"]]}
    monkeypatch.setattr(sweeps, "skip_reason", lambda spec: "needs CUDA" if spec.get("device") == "cuda" else None)
    assert script.default_runs(s) == ["slide", "dense-cpu"]


def _row(seed, value, lower=False, worst=12.0, verdict=None, interval=None):
    return {"seed": seed, "runs": [
        {"name": "slide", "method": "slide", "samples_per_second": 2000.0, "iterations": 230, "final_p_at_1": 0.08,
         "baseline_p_at_1": 0.02, "hidden_cosine": [0.99, 0.85], "recall_after_rebuild": [worst, 20.0],
         "lsh_recall_min_ratio": worst},
        {"name": "dense-cpu", "method": "dense", "samples_per_second": 200.0, "iterations": 24, "final_p_at_1": 0.02,
         "baseline_p_at_1": 0.02}],
        "speedups": {"dense-cpu/slide": {"value": value, "lower_bound": lower, "upper_bound": False,
                                         "interval": interval,
                                         "verdicts": {"slide-amazon-vs-tf-cpu": verdict} if verdict else {}}}}


def test_the_summary_keeps_bounds_apart_from_exact_values_and_counts_the_recall_criterion(script):
    rows = [_row(1, 1.06, lower=True, worst=0.35, verdict="inconclusive"),
            _row(2, 9.0, verdict="reproduced", worst=14.0), _row(3, None, worst=None, verdict="not measured: x")]
    text = "\n".join(script.summary_lines(rows))
    assert "dense-cpu/slide: ≥1.06, 9.00, -" in text
    # a lower bound's true value lies above it: the median of what is shown bounds the median from below
    assert ("1 exact, 1 lower bounds, 0 upper bounds, 1 without a value; the median of the values shown is 5.03, "
            "the true median at least that") in text
    assert "slide-amazon-vs-tf-cpu: inconclusive ×1, reproduced ×1, not measured: x ×1" in text
    assert ("worst recall/random after the first rebuild 0.35-14; >= 10x at every evaluation in 1 of 3 draws "
            "(1 without an evaluation after a rebuild)") in text
    never = "\n".join(script.summary_lines([_row(1, 2.0, worst=None)]))
    assert "slide: no evaluation after a table rebuild in any draw" in never and ">= 10x" not in never
    exact = "\n".join(script.summary_lines([_row(1, 2.0), _row(2, 4.0)]))
    assert "2 exact, 0 lower bounds, 0 upper bounds, 0 without a value; median 3.00" in exact
    line = script.draw_line(_row(4, 1.06, lower=True, interval=[1.02, 1.2], verdict="inconclusive"))
    assert "dense-cpu/slide ≥1.06 [1.02, 1.20] (slide-amazon-vs-tf-cpu: inconclusive)" in line
    assert "recall/random after rebuild [12, 20]" in line
    assert "cosine 0.990→0.850" in line and "popular 0.020" in line


def test_every_claim_reading_a_comparison_is_judged_at_its_setting_bounds_as_bounds(script):
    at_2 = [{"name": "slide", "threads": 2}, {"name": "dense-cpu", "threads": 2}]
    at_44 = [{"name": "slide", "threads": 44}, {"name": "dense-cpu", "threads": 44}]
    exact = script.verdicts("slide_train", "dense-cpu/slide", {"value": 8.0}, at_2)
    assert exact["slide-beats-tf-cpu-from-2-cores"] == "reproduced"      # SLIDE ahead at 2 threads
    # the paper's 8x is at 44 cores: a 2-thread run is not judged against it, whatever it reads
    assert exact["slide-amazon-vs-tf-cpu"].startswith("not measured: this profile's run has")
    assert script.verdicts("slide_train", "dense-cpu/slide", {"value": 8.0}, at_44)["slide-amazon-vs-tf-cpu"] == "reproduced"
    bound = script.verdicts("slide_train", "dense-cpu/slide", {"value": 1.06, "lower_bound": True}, at_44)
    # at least 1.06: below the 8x band, in the paper's direction; the true value may lie in it
    assert bound["slide-amazon-vs-tf-cpu"] == "inconclusive"
    slower = script.verdicts("slide_train", "dense-cpu/slide", {"value": 0.5}, at_44)
    assert slower["slide-amazon-vs-tf-cpu"] == "not reproduced"
    # nor is the GPU's 2.7x, at 2 threads or at 8 (where SLIDE starts to lead TF-GPU)
    gpu = script.verdicts("slide_train", "dense-cuda/slide", {"value": 3.0}, at_2)
    assert gpu["slide-amazon-vs-tf-gpu"].startswith("not measured: this profile's run has")
    at_8 = [{"name": "slide", "threads": 8}, {"name": "dense-cuda", "threads": 8}]
    assert script.verdicts("slide_train", "dense-cuda/slide", {"value": 2.7}, at_8)["slide-amazon-vs-tf-gpu"].startswith(
        "not measured: this profile's run has")
    at_44_gpu = [{"name": "slide", "threads": 44}, {"name": "dense-cuda", "threads": 44}]
    assert script.verdicts("slide_train", "dense-cuda/slide", {"value": 2.7}, at_44_gpu)["slide-amazon-vs-tf-gpu"] == "reproduced"
    none = script.verdicts("slide_train", "dense-cpu/slide", {"value": None, "no_value": "neither reached it"}, at_44)
    assert none["slide-amazon-vs-tf-cpu"] == "not measured: neither reached it"
    assert script.verdicts("slide_train", "sampled-cpu/slide", {"value": 0.8}, at_2) == {}


@pytest.mark.parametrize("args, message", [
    (["--seeds", "1", "--runs", "slide,dense-gpu"], "--runs: dense-gpu; [slide_train.smoke] has slide"),
    (["--seeds", "1", "1"], "--seeds: each seed once, each in 0..4294967295"),
    (["--seeds", "-1"], "--seeds: each seed once, each in 0..4294967295"),
    (["--seeds", "99999999999999999999"], "--seeds: each seed once, each in 0..4294967295"),
    (["--seeds", "1", "--runs", "slide,slide"], "--runs: each run once (got slide,slide)"),
    (["--seeds", "1", "--json", "/no/such/dir/rows.json"], "directory /no/such/dir does not exist, --json"),
])
def test_bad_arguments_are_refused_in_one_line(args, message):
    done = subprocess.run([sys.executable, str(SCRIPT), "--profile", "smoke", *args], capture_output=True, text=True)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_draws_end_to_end_train_each_run_in_a_fresh_process_on_its_draw(monkeypatch, capsys, tmp_path, script):
    import json
    import os

    from impls.harness import fresh_process

    s = sweeps.sizes("smoke")
    quick = {**s, "time_budget_s": 0.5, "eval_first_s": 0.2,
             "runs": [{**spec, "time_budget_s": 0.5} for spec in s["runs"] if spec["name"] in ("slide", "dense-cpu")]}
    monkeypatch.setattr(sweeps, "sizes", lambda profile=None, experiment="slide_train": quick)
    trained_on, calls = {}, []
    real_call = fresh_process.call

    def spy(fn, kwargs):
        with np.load(kwargs["path"]) as stored:     # the file the child reads: the draw's set
            trained_on.setdefault(os.path.basename(kwargs["path"]), stored["train_indices"].copy())
        calls.append((fn.__name__, kwargs["spec"]["name"]))
        return real_call(fn, kwargs)

    monkeypatch.setattr(fresh_process, "call", spy)
    out_json = tmp_path / "rows.json"
    assert script.main(["--profile", "smoke", "--seeds", "3", "4", "--runs", "slide,dense-cpu",
                        "--json", str(out_json)]) == 0
    out = capsys.readouterr()
    assert calls == [("run_spec_on_file", "slide"), ("run_spec_on_file", "dense-cpu"),    # seed 3 as given,
                     ("run_spec_on_file", "dense-cpu"), ("run_spec_on_file", "slide")]    # seed 4 reversed
    for seed in (3, 4):
        drawn = registry.draw("slide-amazon670k", seed, "smoke")["train_indices"]
        np.testing.assert_array_equal(trained_on[f"draw-{seed}.npz"], drawn)
    assert out.out.startswith("seed 3 | dense-cpu ")
    assert "over 2 draws (seeds 3, 4):" in out.out
    assert "seed 3: slide (0.5 s)" in out.err and "seed 4: dense-cpu (0.5 s)" in out.err
    rows = json.loads(out_json.read_text())
    assert [r["seed"] for r in rows] == [3, 4] and rows[1]["order"] == ["dense-cpu", "slide"]
    assert set(rows[0]["speedups"]["dense-cpu/slide"]["verdicts"]) == {"slide-amazon-vs-tf-cpu",
                                                                       "slide-beats-tf-cpu-from-2-cores"}


def test_json_to_stdout_is_one_document_after_every_draw_and_the_lines_go_to_stderr(monkeypatch, capsys,
                                                                                       script):
    """``--json -``: one JSON document of every draw's row on standard output, written once
    at the end; the draw lines and the summary on stderr."""
    import json

    made = iter(range(10))
    monkeypatch.setattr(script, "one_draw", lambda experiment, profile, seed, *rest: {"seed": seed, "n": next(made)})
    monkeypatch.setattr(script, "draw_line", lambda row: f"draw {row['seed']}")
    monkeypatch.setattr(script, "summary_lines", lambda rows: [f"over {len(rows)} draws"])
    assert script.main(["--profile", "smoke", "--seeds", "3", "4", "--runs", "slide", "--json", "-"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == [{"seed": 3, "n": 0}, {"seed": 4, "n": 1}]
    assert "draw 3\ndraw 4\nover 2 draws" in out.err


def test_the_profile_follows_dlsysbench_profile_as_every_command_does(monkeypatch, capsys, script):
    """No --profile: DLSYSBENCH_PROFILE's sizes (its runs are named in the refusal)."""
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    with pytest.raises(SystemExit):
        script.main(["--seeds", "1", "--runs", "nothing"])
    assert "--runs: nothing; [slide_train.smoke] has" in capsys.readouterr().err
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "nonsense")
    with pytest.raises(SystemExit):
        script.main(["--seeds", "1"])
    assert "unknown profile 'nonsense', in the environment variable DLSYSBENCH_PROFILE" in capsys.readouterr().err
