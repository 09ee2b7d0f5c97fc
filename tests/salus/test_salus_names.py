"""Names in a Salus profile table are checked before any work, and read without case."""
from __future__ import annotations

import pytest

from impls.salus.experiments.names import checked_names


def test_known_names_pass_and_absent_keys_are_not_checked():
    sizes = {"policies": ["fifo", "srtf"], "repeat_policy": "fifo", "mix": ["mlp_b64"], "n_jobs": 3}
    assert checked_names(sizes, "t") == sizes
    assert checked_names({"repeat_policy": ""}, "t") == {"repeat_policy": ""}
    assert checked_names({"repeat_policy": None}, "t") == {"repeat_policy": None}     # no repeat
    assert checked_names({}, "t") == {}


@pytest.mark.parametrize("sizes, message", [
    ({"policies": ["fifo", "lifo"]}, r"\[salus_policies\] of impls/profiles.toml: policies: unknown policy 'lifo'"),
    ({"repeat_policy": "lifo"}, "repeat_policy: unknown policy 'lifo'; known: fifo"),
    ({"policies": ["fifo", "fifo"]}, "names one policy twice"),
    ({"policies": ["FIFO", "srtf"]}, r"unknown policy 'FIFO' \(names are lower case\)"),
    ({"policies": "fifo"}, "policies: 'fifo' is not a list of names"),
    ({"policies": [1]}, r"policies: \[1\] is not a list of names"),
    ({"mix": ["mlp_b64", "nope"]}, "mix: unknown workload 'nope'; known: "),
    ({"workloads": ["nope"]}, "workloads: unknown workload 'nope'"),
    ({"rules": ["salus", "best-fit"]}, "rules: unknown lane rule 'best-fit'; known: salus"),
    ({"rule": "best-fit"}, "rule: unknown lane rule 'best-fit'"),
])
def test_an_unknown_or_repeated_name_is_refused_naming_its_table(sizes, message):
    with pytest.raises(ValueError, match=message):
        checked_names(sizes, "salus_policies")


def test_the_policy_experiment_refuses_a_bad_name_before_profiling(monkeypatch):
    from impls.salus.experiments import scheduling

    def no_work(*args, **kwargs):
        raise AssertionError("profiled before the names were checked")

    monkeypatch.setattr(scheduling, "profile_workloads", no_work)
    sizes = dict(scheduling.salus_sizes("salus_policies", "smoke"), policies=["fifo", "srtf", "lifo"])
    with pytest.raises(ValueError, match="unknown policy 'lifo'"):
        scheduling.policy_experiment(sizes)


@pytest.mark.parametrize("table, sizes, message", [
    ("salus_inference", {"models": ["mlp_b64", "vae_b32"]},
     r"\[salus_inference\] of impls/profiles.toml: models: 'mlp_b64' is not an inference workload"),
    ("salus_inference", {"models": ["mlp_infer_b2"]}, r"models: unknown workload 'mlp_infer_b2'"),
    ("salus_hyperparam", {"workloads": ["mlp_infer_b1"]}, "workloads: 'mlp_infer_b1' is not a training workload"),
])
def test_a_workload_of_the_wrong_kind_is_refused(table, sizes, message):
    """Training names as inference models were timed as 'inference' (full training steps), and an
    inference name in the hyperparam run failed on its missing optimizer, after other work."""
    with pytest.raises(ValueError, match=message):
        checked_names(sizes, table)


def test_the_lanes_may_mix_training_and_inference_workloads():
    sizes = {"workloads": ["mlp_b64", "mlp_infer_b1"]}
    assert checked_names(sizes, "salus_lanes") == sizes
