"""SLIDE's command lines apply each flag where a run uses it: the hash flags' limits only to a
run that hashes, the profile from DLSYSBENCH_PROFILE as every command reads it, an Adam ε the
float32 engine can hold, and closing advice about the limit that ended the run."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

PAIR = "4 20 3\n0 0:1 3:1\n1 1:1 4:1\n2 2:1 5:1\n0 6:1\n"


def pair(tmp_path: Path) -> Path:
    path = tmp_path / "train.txt"
    path.write_text(PAIR)
    return path


def train(tmp_path: Path, *flags: str) -> int:
    from impls.slide.train import main

    data = str(pair(tmp_path))
    return main(["--train", data, "--test", data, "--threads", "1", "--max-iterations", "1", "--eval-every", "0",
                 "--eval-points", "4", "--quiet", "--json", str(tmp_path / "o.json"), *flags])


@pytest.mark.parametrize("flags", [
    ["--method", "dense", "--hidden", "4"],            # dwta's default --binsize 8 exceeds --hidden
    ["--method", "dense", "--K", "100"],               # 202-bit codes: no table is built
    ["--method", "sampled", "--lsh", "simhash", "--K", "64"],
    ["--mode", "all", "--K", "40"],                    # SLIDE without sampling hashes nothing
    ["--mode", "all", "--hidden", "4"],
])
def test_hash_limits_bind_only_a_run_that_hashes(tmp_path, capsys, flags):
    if "--method" in flags:
        pytest.importorskip("torch")
    assert train(tmp_path, *flags) == 0, capsys.readouterr().err
    params = json.loads((tmp_path / "o.json").read_text())["params"]
    given = dict(zip(flags[::2], flags[1::2]))
    for flag, value in given.items():      # recorded as given, not bent to fit
        name = flag[2:]
        assert str(params[name]) == value, (name, params[name])
    if "--method" not in given:
        assert params["mode"] == "all" and params["range_pow"] is None     # no table was built


@pytest.mark.parametrize("flags, message", [
    (["--hidden", "4"], "--binsize, expected a power of two from 2 to --hidden (4) for --lsh dwta"),
    (["--K", "100"], "--K, expected fewer hashes a table"),
    (["--method", "dense", "--K", "0"], "--K"),          # the basic checks stay for every run
    (["--mode", "all", "--binsize", "0"], "--binsize"),
    (["--method", "dense", "--hidden", "0"], "--hidden"),
])
def test_a_run_keeps_the_checks_that_apply_to_it(tmp_path, capsys, flags, message):
    from impls.slide.train import main

    missing = str(tmp_path / "not-there.txt")      # refused before the files are read
    assert main(["--train", missing, "--test", missing, "--json", str(tmp_path / "o.json"), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err, err


def test_closing_advice_names_the_limit_that_ended_the_run(tmp_path, capsys):
    assert train(tmp_path) == 0                    # one batch: far below a trusted second
    err = capsys.readouterr().err
    assert "give a larger --max-iterations (it ended the run at 1)" in err, err
    assert "--time-budget" not in err, err


def test_closing_advice_after_the_time_budget_asks_for_more_time(tmp_path, capsys):
    from impls.slide.train import main

    data = str(pair(tmp_path))
    assert main(["--train", data, "--test", data, "--threads", "1", "--time-budget", "0.05", "--eval-every", "0",
                 "--quiet", "--json", str(tmp_path / "o.json")]) == 0
    err = capsys.readouterr().err
    assert "give a longer --time-budget" in err and "--max-iterations" not in err, err


class Stop(ValueError):
    """Raised in place of making the data set: the command exits 2 with it."""


def test_recall_probe_sizes_a_registry_set_by_the_environment(monkeypatch, capsys):
    from impls.slide.data import dataset
    from impls.slide.experiments import recall_probe

    seen = []

    def made(name, profile=None):
        from impls.harness import profiles

        seen.append(profiles.resolve(profile))
        raise Stop("stopped before making the set")

    monkeypatch.setattr(dataset, "from_registry", made)
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    assert recall_probe.main(["--batches", "1", "--threads", "1"]) == 2
    assert recall_probe.main(["--batches", "1", "--threads", "1", "--profile", "full"]) == 2
    assert seen == ["smoke", "full"]
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "huge")
    assert recall_probe.main(["--batches", "1", "--threads", "1"]) == 2
    err = capsys.readouterr().err
    assert "unknown profile 'huge', in the environment variable DLSYSBENCH_PROFILE" in err, err
    assert seen == ["smoke", "full"]               # refused before any set is made


def test_recall_probe_help_names_the_environment_default(capsys, monkeypatch):
    from impls.slide.experiments.recall_probe import main

    monkeypatch.setenv("COLUMNS", "300")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "default: DLSYSBENCH_PROFILE, else quick" in capsys.readouterr().out


@pytest.mark.parametrize("eps", ["1e-300", "1e-50", "1e-39"])
def test_recall_probe_refuses_an_epsilon_float32_cannot_hold(tmp_path, capsys, eps):
    from impls.slide.experiments.recall_probe import main

    data = str(pair(tmp_path))
    assert main(["--train", data, "--test", data, "--batches", "2", "--at", "2", "--batch", "2", "--threads", "1",
                 "--eps", eps]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--eps" in err and len(err.strip().splitlines()) == 1, err


def test_recall_probe_takes_float32_s_smallest_normal_epsilon(tmp_path, capsys):
    import numpy as np

    from impls.slide.experiments.recall_probe import main

    data = str(pair(tmp_path))
    assert main(["--train", data, "--test", data, "--batches", "2", "--at", "2", "--batch", "2", "--threads", "1",
                 "--points", "4", "--eps", repr(float(np.finfo(np.float32).tiny))]) == 0
    assert json.loads(capsys.readouterr().out)["iteration"] == 2
