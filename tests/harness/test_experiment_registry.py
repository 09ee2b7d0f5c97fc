"""The experiment registry: sizes schemas, the one signature, and ``python -m impls``."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from impls.harness import experiments, paths, profiles

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "impls", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, **kw)


def test_sizes_are_checked_by_key_and_type():
    schema = {"n": int, "rate": float, "names": list[str], "pairs": list[list[int | str]]}
    experiments.validate_sizes("t", "smoke", {"n": 1, "rate": 2, "names": ["a"], "pairs": [[1, "x"]]}, schema)
    bad = {"n": 1.5, "rate": "x", "names": ["a", 2], "pairs": [[None]], "extra": 1}
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.validate_sizes("t", "smoke", bad, {**schema, "gone": int})
    message = str(err.value)
    assert message.startswith("[t.smoke] in ")
    for part in ("unknown key 'extra'", "missing key 'gone'", "n: 1.5 is not int", "rate: 'x' is not float",
                 "names[1]: 2 is not str", "pairs[0][0]: None is not int | str"):
        assert part in message
    with pytest.raises(experiments.ExperimentError):
        experiments.validate_sizes("t", "smoke", {"n": True, "rate": 1.0, "names": [], "pairs": []}, schema)


@pytest.mark.parametrize("change, message", [
    ({"mean_interarrival_s": float("nan")}, "mean_interarrival_s: nan is not a finite number >= 0"),
    ({"mean_interarrival_s": float("inf")}, "mean_interarrival_s: inf is not a finite number >= 0"),
    ({"memory_budget_mb": -5}, "memory_budget_mb: -5 is not a finite number >= 0"),
    ({"n_jobs": 0}, "n_jobs: 0 must be > 0"),
    ({"policies": []}, "policies: [] must be > 0 and not empty"),
    ({"duration_s": [0.3]}, "duration_s: [0.3] is not [low, high] with low <= high"),
    ({"duration_s": [3.0, 0.3]}, "duration_s: [3.0, 0.3] is not [low, high]"),
    ({"policies": ["fifo", "srtf", "fifo"]}, "policies: ['fifo', 'srtf', 'fifo'] lists 'fifo' twice"),
    ({"threads": 100_000}, "threads: 100000 is more than 4096 threads"),      # it segfaulted in torch
])
def test_a_size_a_run_cannot_use_is_refused_with_the_table_and_key(change, message):
    """A NaN inter-arrival time used to spin the policy run for ever; 0 iterations divided by 0."""
    values = {**profiles.sizes("salus_policies", "smoke"), **change}
    with pytest.raises(experiments.ExperimentError, match=r"\[salus_policies.smoke\] in .*: " + re.escape(message)):
        experiments.validate_sizes("salus_policies", "smoke", values)


def test_a_pair_may_repeat_an_item_and_a_mix_may_not():
    """The trace refuses a workload listed twice (weights are poisson_trace's own argument), so
    the sizes check says so first rather than declaring the repeat a weight."""
    values = {**profiles.sizes("salus_policies", "smoke"), "duration_s": [1.0, 1.0]}
    experiments.validate_sizes("salus_policies", "smoke", values)    # raises on a problem
    values["mix"] = values["mix"] + values["mix"][:1]
    with pytest.raises(experiments.ExperimentError, match="mix: .* lists 'mlp_b64' twice"):
        experiments.validate_sizes("salus_policies", "smoke", values)


def test_a_misspelt_dataset_in_a_run_is_refused_before_any_run_starts():
    """A typo in one run's ``dataset`` used to surface only when that run started, after the
    runs ahead of it had trained (hours in the full profile)."""
    values = profiles.sizes("slide_train", "smoke")
    values = {**values, "runs": [dict(r) for r in values["runs"]]}
    values["runs"][1]["dataset"] = "slide-amazon67"
    with pytest.raises(experiments.ExperimentError, match=r"runs\[1\]\.dataset = 'slide-amazon67' is no dataset"):
        experiments.validate_sizes("slide_train", "smoke", values)
    with pytest.raises(experiments.ExperimentError, match=r"dataset = 'nope' is no dataset \(known: .*slide-amazon670k"):
        experiments.validate_sizes("slide_train", "smoke", {**values, "runs": values["runs"][:1], "comparisons": [],
                                                             "dataset": "nope"})


def test_a_broken_manifest_does_not_stop_the_sizes_check(tmp_path, monkeypatch):
    """The dataset-name check reads manifest file names only: a user's broken manifest must
    fail its own dataset, not every experiment."""
    import shutil

    for manifest in (ROOT / "datasets").glob("*.toml"):
        shutil.copy(manifest, tmp_path)
    (tmp_path / "mine.toml").write_text('name = "mine"\ndescription = "d"\n[synthetic]\ngenerator = "nope"\nseed = 1\n')
    monkeypatch.setattr(experiments.paths, "datasets_dir", lambda: tmp_path)
    assert experiments.sizes_for("slide.time_to_accuracy", "smoke")["dataset"] == "slide-amazon670k"
    assert experiments.sizes_for("salus.policies", "smoke")


def test_every_registered_experiment_has_valid_sizes_in_every_profile():
    for name in experiments.discover():
        for profile in profiles.PROFILES:
            assert experiments.sizes_for(name, profile)


def test_catalog_files_declare_every_experiment_with_checked_fields(tmp_path):
    for system in ("bandana", "slide", "salus"):
        assert any(e.system == system for e in experiments.discover().values()), system
    good = tmp_path / "catalog.toml"
    good.write_text('["demo.one"]\nsizes = "t"\nartifact = "demo_one"\nrun = "m:f"\nsummary = "s"\n'
                    'requires = ["fio"]\ntimed = false\n')
    (entry,) = experiments.declare_file(good)
    assert (entry.name, entry.requires, entry.timed, entry.devices) == ("demo.one", ("fio",), False, ("cpu",))
    experiments._EXPERIMENTS.pop("demo.one")
    bad = tmp_path / "bad.toml"
    bad.write_text('["demo.two"]\nsizes = "t"\nartifact = 3\nrun = "m:f"\nrequire = ["fio"]\n')
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.declare_file(bad)
    message = str(err.value)
    assert message.startswith(f'["demo.two"] in {bad}: ')
    for part in ("unknown field 'require'", "missing field 'summary'", "artifact: 3 is not str"):
        assert part in message
    bad.write_text('["nodot"]\nsizes = "t"\nartifact = "a"\nrun = "m:f"\nsummary = "s"\n')
    with pytest.raises(experiments.ExperimentError, match="must be <system>.<what>"):
        experiments.declare_file(bad)
    bad.write_text('["demo.three"\n')
    with pytest.raises(experiments.ExperimentError, match="cannot read the experiment catalog"):
        experiments.declare_file(bad)


def test_unknown_experiment_and_device_are_refused_before_work():
    with pytest.raises(experiments.ExperimentError, match="known: bandana"):
        experiments.get("bandana.nope")
    with pytest.raises(experiments.ExperimentError, match="runs on cpu"):
        experiments.run("bandana.layouts", device="tpu")


def test_artifact_names_per_device():
    entry = experiments.get("salus.switching")
    assert (entry.artifact_for("cpu"), entry.artifact_for("cuda:1")) == ("salus_switching", "salus_switching_cuda")
    assert "cuda" in entry.requirements("cuda") and "cuda" not in entry.requirements("cpu")


def test_run_and_store_skips_what_the_machine_lacks(monkeypatch):
    from impls.harness import capabilities

    monkeypatch.setitem(capabilities.CHECKS, "cuda",
                        lambda: capabilities.Capability("cuda", False, "needs CUDA: test"))
    capabilities._cached.cache_clear()
    try:
        assert experiments.run_and_store("salus.switching", "cuda") == {"skipped": "needs CUDA: test"}
    finally:
        capabilities._cached.cache_clear()


def test_profile_is_current_inside_a_run_and_restored_after(monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "quick")
    with experiments.using_profile("smoke") as name:
        assert name == "smoke" and profiles.current_profile() == "smoke"
    assert profiles.current_profile() == "quick"


def test_cli_list_names_every_experiment_and_whether_it_runs_here():
    out = _cli("list", "--json")
    assert out.returncode == 0, out.stderr
    rows = {row["name"]: row for row in json.loads(out.stdout)}
    assert set(rows) == set(experiments.discover())
    assert rows["salus.switching"]["runs_here"].keys() == {"cpu", "cuda"}
    assert "bandana_layout_policy" in rows["bandana.layouts"]["figures"]


def test_cli_stops_quietly_when_its_reader_goes_away():
    read_end, write_end = os.pipe()
    os.close(read_end)           # the reader is gone before the first write (as after `| head -1`)
    try:
        out = subprocess.run([sys.executable, "-m", "impls", "list"], cwd=ROOT, stdout=write_end,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert (out.returncode, out.stderr) == (141, "")


@pytest.mark.parametrize("device", ["CPU", "cpu:0"])    # as the engines take it
def test_cli_run_prints_the_experiment_as_json(device):
    out = _cli("run", "salus.lanes", "--profile", "smoke", "--device", device, "--json", "-")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data == json.loads(json.dumps(data)) and data  # plain data, not empty
    run = data["run"]   # what produced it, so that a smoke result is not read as a quick one later
    assert (run["experiment"], run["profile"], run["device"], run["synthetic"]) == ("salus.lanes", "smoke",
                                                                                  "cpu", True)
    assert len(run["commit"]) == 40 or run["commit"] == "unknown"


@pytest.mark.parametrize("args, message", [
    (("run", "bandana.nope"), "no experiment 'bandana.nope'"),
    (("run", "bandana.layouts", "--device", "tpu"), "runs on cpu, not 'tpu'"),
    (("run", "bandana.layouts", "--json", "/nonexistent/dir/out.json"), "does not exist"),
    (("run", "salus.overhead", "--json", "impls/profiles.toml"), "is a file of the suite itself (under impls/)"),
    (("run", "salus.overhead", "--json", "datasets/bandana-user.toml"), "is a dataset manifest of the suite"),
    (("run", "salus.overhead", "--json", "reports/claims.toml"), "is a file the suite's checkout tracks"),
    (("run", "salus.overhead", "--json", "README.md"), "is a file the suite's checkout tracks"),
    (("run", "salus.overhead", "--json", ".git/config"), "is a file of the checkout's git repository"),
    (("run", "salus.overhead", "--json", "reports/noise/vm-quick.json"), "is a file the suite's checkout tracks"),
    (("run", "salus.switching", "--device", "cpu:1"), "got 'cpu:1', --device, expected cpu (or cpu:0), cuda or cuda:N"),
    (("run", "salus.overhead", "--json", ""), "got an empty path, --json, expected a file path to write"),
])
def test_cli_refuses_bad_requests_in_one_line(args, message):
    out = _cli(*args)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and message in out.stderr and "Traceback" not in out.stderr


def test_profile_file_is_checked_against_the_schemas_when_read(tmp_path, monkeypatch):
    text = profiles.PROFILE_TABLE.read_text()
    broken = tmp_path / "profiles.toml"
    broken.write_text(text.replace("[salus_overhead.quick]\n", "[salus_overhead.quick]\nsurprise = 1\n", 1))
    monkeypatch.setattr(profiles, "PROFILE_TABLE", broken)
    with pytest.raises(experiments.ExperimentError, match=r"\[salus_overhead.quick\] .*unknown key 'surprise'"):
        profiles._table.__wrapped__(broken)
    broken.write_text(text + "\n[orphan.smoke]\n[orphan.quick]\n[orphan.full]\n")
    with pytest.raises(ValueError, match=r"\[orphan\] has no sizes schema"):
        profiles._table.__wrapped__(broken)
    broken.write_text(text + "\n[broken.smoke\n")
    with pytest.raises(ValueError, match=rf"{re.escape(str(broken))}: not valid TOML: .*line"):
        profiles._table.__wrapped__(broken)


def test_an_experiment_of_another_ones_artifact_or_an_unknown_device_is_refused(monkeypatch):
    monkeypatch.setattr(experiments, "_EXPERIMENTS", dict(experiments.discover()))
    with pytest.raises(ValueError, match=re.escape("artifact 'salus_overhead' is declared by both salus.overhead (")):
        experiments.experiment("test.copy", sizes="salus_overhead", artifact="salus_overhead", run="m:f", summary="")
    with pytest.raises(ValueError, match=re.escape("artifact 'salus_switching_cuda' is declared by both "
                                                   "salus.switching (")):
        experiments.experiment("test.twin", sizes="salus_overhead", artifact="salus_switching_cuda", run="m:f",
                               summary="")
    with pytest.raises(ValueError, match=r"devices \['gpu'\] unknown"):
        experiments.experiment("test.gpu", sizes="salus_overhead", artifact="mine", run="m:f", summary="",
                               devices=("cpu", "gpu"))


def double_on_grid(sizes, *, device="cpu", progress=None):
    from impls.harness import grid

    return {"doubled": grid.map_points(_double, [(i,) for i in range(sizes["n"])], label="doubling", store=False)}


def _double(x):
    return 2 * x


@pytest.fixture
def grid_experiments(monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    monkeypatch.setitem(experiments._SCHEMAS, "test_grid", {"n": int})
    monkeypatch.setattr(profiles, "sizes", lambda table, profile=None: {"n": 3})
    for name, timed in (("test.deterministic", False), ("test.timed", True)):
        monkeypatch.setitem(experiments._EXPERIMENTS, name, experiments.Experiment(
            name, "test_grid", name.replace(".", "_"), f"{__name__}:double_on_grid", "", "", timed=timed))
    yield


def test_deterministic_grids_run_and_say_where_timed_ones_refuse(grid_experiments):
    from impls.harness import artifacts
    from impls.harness.report import environment_table, machine_state

    assert experiments.run_and_store("test.deterministic")["doubled"] == [0, 2, 4]
    records = artifacts.load_latest()
    assert records["test_deterministic"]["grid"][0]["where"] == "serial"
    fingerprint, _ = machine_state.newest_fingerprint(records)
    table = environment_table._grid(fingerprint["grid"])
    assert table.rows[0][:3] == ("test.deterministic", "doubling", "serial")
    with pytest.raises(AssertionError, match="test.timed measures this machine's hardware"):
        experiments.run("test.timed")


@pytest.mark.parametrize("target", ["-", "file"])
def test_cli_run_writes_strict_json(target, tmp_path, monkeypatch, capsys):
    from impls.harness import commands

    monkeypatch.setattr(experiments, "run", lambda *a, **k: {"ratio": float("nan"), "bound": float("inf"), "n": 3})
    monkeypatch.setattr(experiments, "printer", lambda name: None)
    out = "-" if target == "-" else str(tmp_path / "r.json")
    assert commands.main(["run", "salus.lanes", "--profile", "smoke", "--json", out]) == 0
    text = capsys.readouterr().out if target == "-" else (tmp_path / "r.json").read_text()
    strict = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert strict.pop("run")["profile"] == "smoke"
    assert strict == {"ratio": None, "bound": None, "n": 3}


def test_cli_files_a_saved_artifact_under_the_suites_machine_name(tmp_path):
    env = {**os.environ, "DLSYSBENCH_ARTIFACTS": str(tmp_path), "DLSYSBENCH_MACHINE": "box"}
    out = _cli("run", "salus.lanes", "--profile", "smoke", "--save-artifact", "--json", str(tmp_path / "r.json"),
               env=env)
    assert out.returncode == 0, out.stderr
    saved = list(tmp_path.glob("*/*/*.json"))
    assert [p.parts[-3] for p in saved] == ["box-smoke"]   # where make report looks, apart from quick
    assert (tmp_path / "r.json").exists()


def test_an_artifact_filed_under_no_commit_says_why(tmp_path, monkeypatch, capsys):
    from impls.harness import commands

    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path))
    monkeypatch.setattr(experiments, "run", lambda *a, **k: {"n": 3})
    monkeypatch.setattr(experiments, "printer", lambda name: None)
    monkeypatch.setattr(paths, "git_commit", lambda short=False: "unknown")
    monkeypatch.setattr(paths, "git_absent_reason", lambda: "git refuses /x: fatal: detected dubious ownership")
    assert commands.main(["run", "salus.lanes", "--profile", "smoke", "--save-artifact", "--json", "-"]) == 0
    assert "warning: filed under commit 'unknown': git refuses /x: fatal: detected dubious" in capsys.readouterr().err
    assert [p.parts[-2] for p in tmp_path.glob("*/*/*.json")] == ["unknown"]


def test_a_saved_artifact_says_where_its_grid_points_ran(tmp_path):
    """As the suite's runner records it: the report's table of where grid points ran reads it."""
    env = {**os.environ, "DLSYSBENCH_ARTIFACTS": str(tmp_path / "art"), "DLSYSBENCH_DASK_SCHEDULER": "serial"}
    out = _cli("run", "bandana.layouts", "--profile", "smoke", "--save-artifact", "--json", str(tmp_path / "r.json"),
               env=env)
    assert out.returncode == 0, out.stderr
    [saved] = list((tmp_path / "art").glob("*/*/bandana_layouts.json"))
    records = json.loads(saved.read_text())["grid"]
    assert records and {r["where"] for r in records} <= {"serial", "nowhere: every point reused"}
    assert sum(r["points"] for r in records) > 0


def test_cli_refuses_a_cache_that_is_a_file_before_any_work(tmp_path):
    (tmp_path / "a_file").write_text("x")
    out = _cli("run", "salus.lanes", "--profile", "smoke", "--json", "-",
               env={**os.environ, "DLSYSBENCH_CACHE": str(tmp_path / "a_file" / "cache")})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"{tmp_path / 'a_file'} is not a directory, DLSYSBENCH_CACHE=" in out.stderr, out.stderr
    assert "started" not in out.stderr


@pytest.mark.parametrize("var, flags", [("DLSYSBENCH_CACHE", []),
                                         ("DLSYSBENCH_ARTIFACTS", ["--save-artifact"])])
def test_cli_refuses_a_symbolic_link_loop_before_any_work(tmp_path, var, flags):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    out = _cli("run", "salus.lanes", "--profile", "smoke", *flags, "--json", "-", env={**os.environ, var: str(loop)})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"{loop} is a symbolic link that leads nowhere (dangling, or a loop)" in out.stderr, out.stderr
    assert "started" not in out.stderr


@pytest.mark.parametrize("env, message", [
    ({"DLSYSBENCH_MACHINE": "../escape"}, "DLSYSBENCH_MACHINE='../escape'"),
    ({"DLSYSBENCH_MACHINE": "lab/box1"}, "DLSYSBENCH_MACHINE='lab/box1'"),
    ({"DLSYSBENCH_DASK_SCHEDULER": "Serial2"}, "DLSYSBENCH_DASK_SCHEDULER='Serial2'"),
])
def test_cli_names_a_misconfigured_variable_in_one_line(env, message, tmp_path):
    out = _cli("run", "bandana.subclusters", "--profile", "smoke", "--save-artifact", "--json", "-",
               env={**os.environ, "DLSYSBENCH_ARTIFACTS": str(tmp_path), **env})
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr and "internal error" not in out.stderr


def test_cli_says_a_missing_dataset_is_not_a_device_problem():
    out = _cli("run", "slide.real_amazon", "--profile", "smoke", "--json", "-",
               env={**os.environ, "DLSYSBENCH_AMAZON670K": "/nonexistent/train.txt"})
    assert out.returncode == 2 and "needs the real Amazon-670K" in out.stderr and "--device" not in out.stderr


def test_make_takes_the_profile_from_the_environment():
    import shutil

    if shutil.which("make") is None:
        pytest.skip("no make here")
    run = lambda *a, **env: subprocess.run(["make", "-n", *a], cwd=ROOT, capture_output=True, text=True,  # noqa: E731
                                          env={**os.environ, **env}).stdout
    assert "DLSYSBENCH_PROFILE='smoke' " in run("reproduce", DLSYSBENCH_PROFILE="smoke")
    assert "DLSYSBENCH_PROFILE='full' " in run("reproduce", "PROFILE=full", DLSYSBENCH_PROFILE="smoke")
    assert "DLSYSBENCH_PROFILE='smoke' " in run("doctor", "PROFILE=smoke")
    # every value is one shell word: nothing a user types runs as a command
    assert "--base 'x; rm -rf /' " in run("compare", "BASE=x; rm -rf /")
    assert "--bench 'it'\\''s'" in run("bench", "BENCH=it's")
    clean = {k: v for k, v in os.environ.items() if k != "DLSYSBENCH_PROFILE"}
    out = subprocess.run(["make", "-n", "reproduce"], cwd=ROOT, capture_output=True, text=True, env=clean).stdout
    assert "DLSYSBENCH_PROFILE='quick' " in out


def test_every_printer_takes_the_result_alone():
    import inspect

    for name in experiments.discover():
        show = experiments.printer(name)
        if show is None:
            continue
        params = [p for p in inspect.signature(show).parameters.values()
                  if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        assert len(params) == 1, f"{name}: printer {show.__qualname__}{inspect.signature(show)}"


@pytest.mark.parametrize("variable, value, message", [
    ("DLSYSBENCH_DASK_SCHEDULER", "bogus", "DLSYSBENCH_DASK_SCHEDULER='bogus': expected serial, local"),
    ("DLSYSBENCH_GRID_RESULTS", "/etc/passwd", "/etc/passwd is not a directory, DLSYSBENCH_GRID_RESULTS="),
])
def test_a_bad_grid_setting_is_refused_before_any_work(variable, value, message, tmp_path):
    """The grids read these only at their first point, after the data and layouts are built;
    run and the suite's runner check them first."""
    import os

    env = {**os.environ, variable: value, "DLSYSBENCH_CACHE": str(tmp_path / "cache")}
    out = _cli("run", "bandana.layouts", "--profile", "smoke", env=env)
    assert out.returncode == 2 and message in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert not (tmp_path / "cache").exists()
    suite = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_suite.py"), "--no-report"], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=120)
    assert suite.returncode == 2 and message in suite.stderr and "asv" not in suite.stdout


def test_a_json_result_names_the_edited_code_it_measured(monkeypatch):
    from impls.harness import commands

    entry = experiments.get("salus.lanes")
    monkeypatch.setattr(commands.paths, "uncommitted_code", lambda: ["impls/salus/lanes.py"])
    assert commands._with_run({"x": 1}, entry, "smoke", "cpu")["run"]["uncommitted"] == ["impls/salus/lanes.py"]
    monkeypatch.setattr(commands.paths, "uncommitted_code", lambda: [])
    assert "uncommitted" not in commands._with_run({"x": 1}, entry, "smoke", "cpu")["run"]


def test_uncommitted_code_lists_new_files_and_edited_ones_but_not_ignored_ones(tmp_path, monkeypatch):
    """A new engine module not yet added to git holds all of an experiment's code: a result
    that names only the tracked files it edited would hide it."""
    import shutil

    from impls.harness import paths

    if shutil.which("git") is None:
        pytest.skip("no git here")

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    for name, text in (("impls/old.py", "x = 1\n"), ("benchmarks/bench_x.py", "y = 1\n"), ("other.py", ""),
                       (".gitignore", "*.log\n")):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "start")
    (tmp_path / "impls" / "old.py").write_text("x = 2\n")
    (tmp_path / "impls" / "toy").mkdir()
    (tmp_path / "impls" / "toy" / "engine.py").write_text("")
    (tmp_path / "impls" / "run.log").write_text("")       # ignored
    (tmp_path / "notes.py").write_text("")                # outside impls/ and benchmarks/
    monkeypatch.setattr(paths, "repo_root", lambda: tmp_path)
    assert paths.uncommitted_code() == ["impls/old.py", "impls/toy/engine.py"]


def test_only_make_noise_may_replace_the_committed_thresholds(monkeypatch, tmp_path):
    from impls.harness import cli, paths

    monkeypatch.chdir(ROOT)
    noise_dir = paths.reports_dir() / "noise"
    assert cli.check_output("reports/noise/vm-quick.json", "--out", replaceable=[noise_dir]) is not None
    with pytest.raises(cli.UsageError, match="tracks"):
        cli.check_output("reports/noise/vm-quick.json", "--json")
    assert cli.check_output(":!x.json", "--json") is not None      # a name, not a git pathspec


@pytest.mark.parametrize("variable", ["DLSYSBENCH_CACHE", "DLSYSBENCH_ARTIFACTS", "DLSYSBENCH_GRID_RESULTS"])
def test_a_store_that_is_a_file_is_refused_before_any_work(tmp_path, monkeypatch, variable):
    """make reproduce checks these before asv: an artifacts store that is a file used to let
    every benchmark run its whole experiment and then fail to store it."""
    from impls.harness import cli, commands

    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv(variable, str(blocker / "store"))
    with pytest.raises(cli.UsageError, match=variable):
        commands.check_settings()


def test_the_top_level_help_shows_no_rest_markup():
    assert "``" not in experiments_cli_help()


def experiments_cli_help() -> str:
    from impls.harness import commands

    return commands.parser().format_help()


def test_a_device_names_kind_drops_its_index_and_none_is_the_cpu():
    from impls.harness.experiments import device_kind
    assert [device_kind(d) for d in ("cuda", "cuda:1", "cpu", None, "", "mps:0")] == \
        ["cuda", "cuda", "cpu", "cpu", "", "mps"]
    with pytest.raises(experiments.ExperimentError, match="runs on cpu, not ''"):
        experiments.run("bandana.layouts", device="")          # refused before any work, as before
