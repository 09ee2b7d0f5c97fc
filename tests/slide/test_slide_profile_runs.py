"""The runs and comparisons of the SLIDE profile tables are checked with the sizes, before any
work: a mistake in one run entry is one line naming the table and the run, not a run that
trains for nothing, a speed-up dropped without a word, or an internal error after earlier
runs trained."""
from __future__ import annotations

import copy
import re

import pytest

from impls.harness import experiments, profiles

TABLES = ("slide_train", "slide_delicious", "slide_real")


def _smoke(table: str = "slide_delicious") -> dict:
    return copy.deepcopy(profiles.sizes(table, "smoke"))


def _refused(values: dict, *expected: str, table: str = "slide_delicious") -> str:
    """The one-line message validate_sizes refuses ``values`` with; asserts it names the
    table and holds each of ``expected``."""
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.validate_sizes(table, "smoke", values)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"[{table}.smoke] in "), message
    for part in expected:
        assert part in message, message
    return message


def _run_index(values: dict, name: str) -> int:
    return next(i for i, run in enumerate(values["runs"]) if run["name"] == name)


def test_a_comparison_naming_no_run_is_refused():
    values = _smoke()
    fast, slow = values["comparisons"][0]
    values["comparisons"].append([fast, slow + "x"])
    _refused(values, f"comparisons[{len(values['comparisons']) - 1}]", repr(slow + "x"), "no name in runs")


def test_a_comparison_that_is_not_a_pair_is_refused():
    values = _smoke()
    values["comparisons"].append([values["runs"][0]["name"]])
    _refused(values, "is not a pair")


def test_a_repeated_run_name_is_refused():
    values = _smoke()
    first = values["runs"][0]["name"]
    values["runs"][1]["name"] = first
    _refused(values, f"runs[1] ({first})", f"name {first!r} is runs[0]'s too")


@pytest.mark.parametrize("budget", [-3.0, 0, 0.0])
def test_a_run_budget_that_is_not_positive_is_refused(budget):
    values = _smoke()
    i = _run_index(values, "dense-cpu")
    values["runs"][i]["time_budget_s"] = budget
    _refused(values, f"runs[{i}] (dense-cpu)", "time_budget_s")


def test_a_run_with_zero_threads_is_refused():
    values = _smoke()
    i = _run_index(values, "dense-cpu")
    values["runs"][i]["threads"] = 0
    _refused(values, f"runs[{i}] (dense-cpu): threads 0 must be >= 1")


def test_a_run_with_a_float_thread_count_is_refused():
    values = _smoke()
    i = _run_index(values, "dense-cpu")
    values["runs"][i]["threads"] = 2.0
    _refused(values, f"runs[{i}] (dense-cpu)", "threads", "is not int")


def test_a_run_with_an_infinite_number_is_refused():
    values = _smoke()
    values["runs"][0]["lr"] = float("inf")
    _refused(values, f"runs[0] ({values['runs'][0]['name']})", "lr inf is not a finite number")


def test_an_unknown_run_key_is_refused_and_the_known_ones_are_accepted():
    from impls.slide.core.config import SlideConfig
    from impls.slide.experiments.sweeps import RUN_KEYS

    values = _smoke()
    i = _run_index(values, "dense-cpu")
    values["runs"][i]["bogus"] = 1
    message = _refused(values, f"runs[{i}] (dense-cpu)", "unknown key 'bogus'")
    for key in ("method", "warmup_steps", "padding_sampler"):
        assert key in message          # the message lists what a run may hold
    del values["runs"][i]["bogus"]
    values["runs"][i].update(warmup_steps=3, seed=1, sample_fraction=0.5)     # run keys and SlideConfig fields
    experiments.validate_sizes("slide_delicious", "smoke", values)
    assert {"warmup_steps", "seed"} <= set(RUN_KEYS) | set(SlideConfig.__dataclass_fields__)


def test_a_run_without_a_name_is_refused():
    values = _smoke()
    del values["runs"][1]["name"]
    _refused(values, "runs[1]: missing key 'name'")


def test_a_run_on_an_unknown_device_is_refused_and_cuda_n_is_accepted():
    values = _smoke()
    i = _run_index(values, "dense-cpu")
    values["runs"][i]["device"] = "gpu"
    _refused(values, f"runs[{i}] (dense-cpu): device 'gpu' is not cpu, cuda or cuda:N")
    values["runs"][i]["device"] = "cuda:1"
    experiments.validate_sizes("slide_delicious", "smoke", values)


def test_a_run_with_an_unknown_method_or_config_value_is_refused():
    values = _smoke()
    values["runs"][0]["method"] = "slidex"
    _refused(values, "runs[0]", "method 'slidex'")
    values = _smoke()
    values["runs"][0]["padding"] = "batchx"
    _refused(values, "runs[0]", "padding='batchx'")


@pytest.mark.parametrize("table", TABLES + ("slide_sweep",))
def test_a_top_level_budget_of_zero_is_refused(table):
    values = _smoke(table)
    values["time_budget_s"] = 0
    _refused(values, "time_budget_s: 0 must be > 0", table=table)


@pytest.mark.parametrize("profile", profiles.PROFILES)
@pytest.mark.parametrize("table", TABLES)
def test_every_real_table_passes_and_a_broken_run_in_it_does_not(table, profile):
    values = copy.deepcopy(profiles.sizes(table, profile))
    experiments.validate_sizes(table, profile, values)
    last = len(values["runs"]) - 1
    values["runs"][last]["threads"] = 0
    with pytest.raises(experiments.ExperimentError, match=re.escape(f"[{table}.{profile}] in ")) as err:
        experiments.validate_sizes(table, profile, values)
    assert f"runs[{last}] ({values['runs'][last]['name']}): threads 0" in str(err.value)


@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_a_run_on_a_cuda_device_needs_cuda_whatever_its_index(device, monkeypatch):
    """cuda:1 is accepted by the profile check; on a machine without CUDA it must be skipped as
    'not measured', not fail partway through its sweep."""
    from impls.harness import capabilities
    from impls.slide.experiments import sweeps

    asked = []
    monkeypatch.setattr(capabilities, "missing_reason", lambda *needs: asked.append(needs) or "needs CUDA")
    assert sweeps.skip_reason({"name": "d", "method": "dense", "device": device}) == "needs CUDA"
    assert asked == [("cuda",)]


@pytest.mark.parametrize("base, expected", [
    ({"paddng": "batch"}, "base: unknown key 'paddng'; expected one of"),
    ({"padding": "bogus"}, "base: padding='bogus'"),
    ({"K": "6"}, "base: K: '6' is not int"),
    ({"lr": -1e-3}, "base: lr -0.001 is not a finite number >= 0"),
    ({"batch": 64}, "base: 'batch' is set on every run by the sweep"),
    ({"threads": 1}, "base: 'threads' is set on every run by the sweep"),
    ([], "base: [] is not a table"),
])
def test_a_bad_sweep_base_is_refused(base, expected):
    # base's keys go into every run of the batch and hash sweeps; a misspelt or bad one
    # used to reach SlideConfig only in the child process, or be overridden without a word
    values = _smoke("slide_sweep")
    values["base"] = base
    _refused(values, expected, table="slide_sweep")


@pytest.mark.parametrize("profile", ["smoke", "quick", "full"])
def test_every_real_sweep_base_passes(profile):
    experiments.validate_sizes("slide_sweep", profile, profiles.sizes("slide_sweep", profile))


def test_runs_asking_for_more_threads_than_usable_are_named_once(monkeypatch, tmp_path, capsys):
    # full asks for 44 and 8 threads; on a 2-CPU machine they are cut to what there is, and
    # runs that differ only in threads measure one setting: said before hours of training,
    # once, where a suite run shows it (the progress log; asv keeps a set-up's stderr)
    from impls.harness import capabilities
    from impls.slide.experiments import crowding

    monkeypatch.setattr(capabilities, "effective_cpus", lambda: 2)
    shown = tmp_path / "progress.log"
    monkeypatch.setenv("DLSYSBENCH_PROGRESS_LOG", str(shown))
    runs = [{"name": "slide", "method": "slide", "threads": 44}, {"name": "slide-8t", "method": "slide", "threads": 8},
            {"name": "slide-1t", "method": "slide", "threads": 1}, {"name": "dense", "method": "dense"}]
    crowding.warn_crowded("slide_train", runs)
    [line] = shown.read_text().splitlines()
    assert "warning: slide_train: slide (44), slide-8t (8)" in line and "slide-1t" not in line
    assert capsys.readouterr().err == ""                                   # said once, not also on stderr
    crowding.warn_crowded("slide_train", runs[2:])
    assert len(shown.read_text().splitlines()) == 1


def test_runs_cut_down_by_numbas_pool_are_named_once_with_the_variable(monkeypatch, tmp_path, capsys):
    # NUMBA_NUM_THREADS=1 on a 4-CPU machine: every 2-thread run trains on 1 (the results say
    # so), which the CPU check alone does not see; the CLI trainer warns the same way
    import numba

    from impls.harness import capabilities
    from impls.slide.experiments import crowding

    monkeypatch.setattr(capabilities, "effective_cpus", lambda: 4)
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    shown = tmp_path / "progress.log"
    monkeypatch.setenv("DLSYSBENCH_PROGRESS_LOG", str(shown))
    runs = [{"name": "slide", "method": "slide", "threads": 2}, {"name": "slide-1t", "method": "slide", "threads": 1},
            {"name": "dense", "method": "dense", "threads": 2}]
    crowding.warn_crowded("slide_train", runs)
    [line] = shown.read_text().splitlines()
    assert ("warning: slide_train: slide (2), dense (2) ask for more threads than numba's pool of 1 "
            "(NUMBA_NUM_THREADS=1)") in line, line
    assert "slide-1t" not in line and capsys.readouterr().err == ""
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 4)          # a pool as large as the CPUs
    crowding.warn_crowded("slide_train", runs)
    assert len(shown.read_text().splitlines()) == 1
