"""Names in a Salus profile table are checked before any work, and read without case."""
from __future__ import annotations

import pytest

from impls.salus.experiments.names import checked_names


def test_policy_names_are_read_in_lower_case():
    out = checked_names({"policies": ["FIFO", "Srtf"], "repeat_policy": "FIFO", "mix": ["mlp_b64"]}, "t")
    assert out["policies"] == ["fifo", "srtf"] and out["repeat_policy"] == "fifo"
    assert checked_names({"repeat_policy": ""}, "t")["repeat_policy"] == ""


@pytest.mark.parametrize("sizes, message", [
    ({"policies": ["fifo", "lifo"]}, r"\[salus_policies\] of impls/profiles.toml: policies: unknown policy 'lifo'"),
    ({"repeat_policy": "lifo"}, "repeat_policy: unknown policy 'lifo'; known: fifo"),
    ({"policies": ["FIFO", "fifo"]}, "names one policy twice"),
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
