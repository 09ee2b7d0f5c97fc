"""scripts/bandana_trace_sensitivity.py regenerates a Bandana trace with one parameter changed:
at the manifest's own value it must be the registry's set (else its table measures other data),
and a parameter the generator does not take is refused in one line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from impls.harness import registry

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bandana_trace_sensitivity.py"


@pytest.fixture
def sensitivity(load_script):
    return load_script("bandana_trace_sensitivity")


def test_at_the_manifests_value_the_regenerated_trace_is_the_registry_set(sensitivity):
    params = registry.recipe_params(registry.manifests()["bandana-post"], "smoke")
    again = sensitivity.regenerate("bandana-post", "smoke", "noise", params["noise"])
    changed = sensitivity.regenerate("bandana-post", "smoke", "noise", params["noise"] * 2)
    assert not np.array_equal(changed["vectors"], again["vectors"])
    np.testing.assert_array_equal(changed["indices"], again["indices"])   # noise moves values, not lookups
    stored = registry.load("bandana-post", "smoke")
    for key in ("offsets", "indices", "community", "vectors"):
        np.testing.assert_array_equal(again[key], stored[key])


def test_an_unknown_parameter_is_refused_naming_the_known_ones():
    done = subprocess.run([sys.executable, str(SCRIPT), "--param", "nosie", "--values", "1"],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "--param 'nosie' is no numeric shape parameter of bandana-user" in done.stderr
    assert "noise" in done.stderr and "Traceback" not in done.stderr



def test_sizes_and_fractions_of_a_whole_number_parameter_are_refused():
    sizes = subprocess.run([sys.executable, str(SCRIPT), "--param", "num_vectors", "--values", "5"],
                           capture_output=True, text=True)
    assert sizes.returncode == 2 and "no numeric shape parameter" in sizes.stderr   # a size is no assumption
    fraction = subprocess.run([sys.executable, str(SCRIPT), "--param", "dim", "--values", "0.5", "2"],
                              capture_output=True, text=True)
    assert fraction.returncode == 2 and "takes whole numbers" in fraction.stderr


def test_param_seed_draws_the_trace_again_with_every_assumption_the_manifests(sensitivity):
    manifest = registry.manifests()["bandana-post"]
    again = sensitivity.regenerate("bandana-post", "smoke", "seed", manifest.spec["seed"])
    stored = registry.load("bandana-post", "smoke")
    np.testing.assert_array_equal(again["indices"], stored["indices"])
    other = sensitivity.regenerate("bandana-post", "smoke", "seed", 1)
    assert other["offsets"][-1] == again["offsets"][-1]                # the same number of lookups
    assert not np.array_equal(other["indices"], again["indices"])      # another draw
    done = subprocess.run([sys.executable, str(SCRIPT), "--param", "seed", "--values", "1.5"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "--param seed takes whole numbers" in done.stderr


def test_the_profile_follows_dlsysbench_profile_as_every_command_does(monkeypatch, capsys, sensitivity):
    """No --profile: DLSYSBENCH_PROFILE names the sizes, and a bad one is refused in one line."""
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "nonsense")
    with pytest.raises(SystemExit):
        sensitivity.main(["--values", "1"])
    assert "unknown profile 'nonsense', in the environment variable DLSYSBENCH_PROFILE" in capsys.readouterr().err
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    calls = []
    monkeypatch.setattr(sensitivity, "_rows", lambda *args: calls.append(args) or [])
    assert sensitivity.main(["--values", "1"]) == 0
    assert [call[:4] for call in calls] == [("bandana-user", "smoke", "noise", [1.0])]


def test_json_to_stdout_is_one_document_and_the_lines_go_to_stderr():
    """``--json -``: standard output parses as the rows alone; the per-value lines are on stderr."""
    import json

    done = subprocess.run([sys.executable, str(SCRIPT), "--profile", "smoke", "--values", "1", "--json", "-"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [row["value"] for row in json.loads(done.stdout)] == [1.0]
    assert "bandana-user smoke noise 1 " in done.stderr
