"""Fingerprint, capabilities, profiles and the artifact store."""
import json
import os
import stat
from pathlib import Path

import pytest

from impls.harness import artifacts, capabilities, fingerprint, paths, profiles


def test_fingerprint_describes_this_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(tmp_path / "target.bin"))
    fingerprint.fingerprint.cache_clear()
    fp = fingerprint.fingerprint()
    json.dumps(fp)  # JSON-able
    assert fp["host"]["cores_logical"] == os.cpu_count()
    meminfo = Path("/proc/meminfo").read_text().split("\n")[0].split()
    assert fp["host"]["ram_bytes"] == int(meminfo[1]) * 1024
    target = fp["nvm_target"]
    assert target["path"] == str(tmp_path / "target.bin") and target["from_env"]
    assert target["filesystem"] == capabilities.mount_of(tmp_path)["fstype"] != "unknown"
    assert 0 < target["free_bytes"]
    assert fp["packages"]["numpy"] == __import__("numpy").__version__
    assert set(fp["capabilities"]) == set(capabilities.CHECKS)
    assert fp["gpu"]["available"] == __import__("torch").cuda.is_available()
    table = fingerprint.format_table(fp)
    for cap in fp["capabilities"].values():
        assert cap["name"] in table
        if not cap["available"]:
            assert cap["reason"] in table


def test_mount_of_finds_the_longest_matching_mount():
    root = capabilities.mount_of(Path("/"))
    assert root["mount_point"] == "/"
    proc = capabilities.mount_of(Path("/proc/self"))
    assert proc["mount_point"] == "/proc" and proc["fstype"] == "proc"


def test_o_direct_works_on_a_disk(tmp_path):
    if capabilities.filesystem_type(tmp_path) == "tmpfs":
        pytest.skip("pytest's tmp dir is on tmpfs here")
    cap = capabilities.check_o_direct(tmp_path / "target.bin")
    assert cap.available, cap.reason


@pytest.mark.skipif(capabilities.filesystem_type(Path("/dev/shm")) != "tmpfs", reason="no tmpfs at /dev/shm")
def test_o_direct_is_refused_on_tmpfs_with_the_reason():
    cap = capabilities.check_o_direct(Path("/dev/shm/dlsysbench-probe/target.bin"))
    assert not cap.available
    assert "tmpfs" in cap.reason and "DLSYSBENCH_NVM_PATH" in cap.reason


def test_o_direct_probe_creates_no_directory_and_refuses_a_directory(tmp_path, monkeypatch):
    if capabilities.filesystem_type(tmp_path) == "tmpfs":
        pytest.skip("pytest's tmp dir is on tmpfs here")
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    assert capabilities.check_o_direct(tmp_path / "cache" / "not" / "yet" / "target.bin").available   # made on use
    assert not (tmp_path / "cache").exists()
    elsewhere = capabilities.check_o_direct(tmp_path / "mnt" / "optane" / "target.bin")   # never made: refused
    assert not elsewhere.available and "is the drive mounted?" in elsewhere.reason
    assert not (tmp_path / "mnt").exists()
    (tmp_path / "afile").write_text("x")   # a path under a regular file: that file named, not "does not exist"
    under = capabilities.check_o_direct(tmp_path / "afile" / "sub" / "target.bin")
    assert not under.available and f"{tmp_path / 'afile'} is not a directory" in under.reason
    assert "does not exist" not in under.reason
    cap = capabilities.check_o_direct(tmp_path)
    assert not cap.available and "is a directory" in cap.reason


def _a_block_device() -> Path:
    """A block device node of this machine; the test is skipped where there is none."""
    devices = [Path("/dev") / name for name in ("vda", "sda", "nvme0n1", "xvda", "loop0")]
    found = next((d for d in devices if d.exists() and stat.S_ISBLK(d.stat().st_mode)), None)
    if found is None:
        pytest.skip("no block device node to read here")
    return found


def test_a_block_device_target_is_described_as_itself_not_as_dev_s_mount():
    from impls.harness.fingerprint import RAW_DEVICE, nvm_target_info

    found = _a_block_device()
    info = nvm_target_info(found)
    assert info["block_device"] and info["device"] == os.path.realpath(found)   # not 'devtmpfs'
    assert info["filesystem"] == RAW_DEVICE and info["mount_point"] is None


def test_a_block_device_is_not_refused_for_living_on_devtmpfs(monkeypatch):
    found = _a_block_device()
    cap = capabilities.check_o_direct(found)
    assert "devtmpfs" not in cap.reason and "in memory" not in cap.reason


def test_require_raises_asv_skip_with_the_reason(monkeypatch):
    missing = capabilities.Capability("cuda", False, "needs CUDA: no CUDA device")
    monkeypatch.setitem(capabilities.CHECKS, "cuda", lambda: missing)
    capabilities._cached.cache_clear()
    try:
        with pytest.raises(NotImplementedError, match="needs CUDA: no CUDA device"):
            capabilities.require("cuda")
        assert capabilities.missing_reason("cuda") == missing.reason
    finally:
        capabilities._cached.cache_clear()
    with pytest.raises(KeyError, match="unknown capabilities"):
        capabilities.detect(("warp-drive",))


def test_profiles_are_one_table_with_every_profile(monkeypatch):
    for experiment in profiles.experiments():
        for name in profiles.PROFILES:
            assert profiles.sizes(experiment, name)
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "quick")
    assert profiles.current_profile() == "quick"
    sizes = profiles.sizes("fio_sweep")
    sizes["runtime_s"] = -1
    assert profiles.sizes("fio_sweep")["runtime_s"] != -1  # a copy
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "huge")
    with pytest.raises(ValueError, match="smoke, quick, full"):
        profiles.current_profile()
    with pytest.raises(KeyError, match="fio_sweep"):
        profiles.sizes("nope", "smoke")


def test_artifacts_are_written_atomically_and_newest_wins(tmp_path):
    first = artifacts.save_artifact("curve", {"x": [1, 2]}, experiment="t", synthetic=True,
                                    machine="m1", commit="c1")
    assert first == tmp_path / "artifacts" / "m1" / "c1" / "curve.json"
    assert [p.name for p in first.parent.iterdir()] == ["curve.json"]  # no temp file left behind
    record = json.loads(first.read_text())
    assert record["synthetic"] is True and record["data"] == {"x": [1, 2]}
    assert record["profile"] == "smoke" and "host" in record["fingerprint"]

    newer = dict(record, created="9999-01-01T00:00:00+00:00", commit="c2", data={"x": [3]})
    (first.parent.parent / "c2").mkdir()
    (first.parent.parent / "c2" / "curve.json").write_text(json.dumps(newer))
    (first.parent.parent / "c2" / "broken.json").write_text("{not json")
    latest = artifacts.load_latest("m1")
    assert set(latest) == {"curve"} and latest["curve"]["data"] == {"x": [3]}


def test_the_newest_commit_wins_and_another_machines_or_profiles_record_is_left_out(tmp_path):
    import datetime as dt

    def put(commit, created, **fields):
        record = {"schema": artifacts.SCHEMA, "name": "curve", "commit": commit, "created": created,
                  "machine": "box-quick", "profile": "quick", "data": {"commit": commit}, **fields}
        folder = tmp_path / "box-quick" / commit
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "curve.json").write_text(json.dumps(record))    # one commit a folder

    # asv run old..new measures the new commit first: the old commit's record is made last
    put("new", "2026-12-01T10:00:00+00:00")
    put("old", "2026-12-01T11:00:00+00:00")
    dates = {"new": dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc),
             "old": dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)}
    assert artifacts.load_latest("box-quick", tmp_path, commit_dates=dates)["curve"]["commit"] == "new"
    assert artifacts.load_latest("box-quick", tmp_path)["curve"]["commit"] == "old"   # no dates: when made
    put("gpu", "2026-12-02T00:00:00+00:00", machine="gpu-box")
    put("full", "2026-12-02T00:00:00+00:00", profile="full")
    unreadable: list = []
    assert artifacts.load_latest("box-quick", tmp_path, unreadable, commit_dates=dates)["curve"]["commit"] == "new"
    whys = sorted(why for _, why in unreadable)
    assert whys == ["a record of machine 'gpu-box', filed under 'box-quick': left out",
                    "a record of the 'full' profile, filed under 'box-quick': left out"]


def test_repo_root_prefers_asv_conf_dir(tmp_path, monkeypatch):
    (tmp_path / "asv.conf.json").write_text("{}")
    monkeypatch.setenv("ASV_CONF_DIR", str(tmp_path))
    paths.repo_root.cache_clear()
    try:
        assert paths.repo_root() == tmp_path.resolve()
    finally:
        monkeypatch.delenv("ASV_CONF_DIR")
        paths.repo_root.cache_clear()
    assert (paths.repo_root() / "impls").is_dir()


def test_figure_discovery_survives_a_broken_system(tmp_path, monkeypatch):
    import impls
    from impls.harness import figures

    broken = tmp_path / "brokensys"
    broken.mkdir()
    (broken / "__init__.py").write_text("")
    (broken / "figures.py").write_text("raise RuntimeError('bad figure module')\n")
    monkeypatch.setattr(impls, "__path__", [*impls.__path__, str(tmp_path)])
    specs, errors = figures.discover()
    assert errors == {"impls.brokensys.figures": "RuntimeError: bad figure module"}
    assert "fio_bandwidth_vs_block_size" in specs
    assert specs["fio_bandwidth_vs_block_size"].requires == ("fio", "o_direct")


def test_figures_join_the_catalogs_declarations_and_say_what_does_not_match(monkeypatch):
    from impls.harness import figures

    specs, errors = figures.discover()
    assert not errors
    spec = specs["bandana_layout_policy"]
    assert (spec.artifact, spec.system) == ("bandana_layouts", "bandana")
    assert spec.title.startswith("Effective bandwidth by vector layout")
    monkeypatch.setitem(figures._DRAW, "undeclared_figure", lambda data: None)
    monkeypatch.delitem(figures._DRAW, "salus_jct_cdf")
    specs, errors = figures.discover()
    assert "undeclared_figure" not in specs and "salus_jct_cdf" not in specs
    assert "no catalog.toml declares it" in errors["undeclared_figure"]
    assert "declared by salus.policies but nothing draws it" in errors["salus_jct_cdf"]


def test_catalog_figures_are_checked_like_experiments(tmp_path):
    from impls.harness import experiments

    bad = tmp_path / "catalog.toml"
    bad.write_text('["demo.four"]\nsizes = "t"\nartifact = "a"\nrun = "m:f"\nsummary = "s"\n'
                   '["demo.four".figures.demo_fig]\npaper = "x"\n')
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.declare_file(bad)
    assert "figure 'demo_fig': unknown field 'paper'; missing field 'title'" in str(err.value)
    experiments._EXPERIMENTS.pop("demo.four", None)


def test_plain_log_x_labels_a_short_range_in_plain_numbers():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from impls.harness.figures import new_axes, plain_log_x

    fig, ax = new_axes()
    ax.plot([2, 70], [0, 1])
    plain_log_x(ax)
    FigureCanvasAgg(fig).draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if 2 <= t.get_position()[0] <= 70]
    assert ax.get_xscale() == "log" and labels == ["2", "5", "10", "20", "50"]
    assert not any(t.get_text() for t in ax.xaxis.get_minorticklabels())


def test_an_atomic_write_goes_through_a_pipe_and_follows_a_link(tmp_path):
    import os
    import threading

    from impls.harness import atomic

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    atomic.write_bytes(fifo, b"through")  # as --json /dev/stdout or /dev/null would be
    reader.join(10)
    assert got == [b"through"] and stat.S_ISFIFO(fifo.stat().st_mode)
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    atomic.write_bytes(link, b"new")
    assert link.is_symlink() and real.read_text() == "new"
    log = tmp_path / "log.txt"
    log.write_text("yesterday\n")
    appending = os.open(log, os.O_WRONLY | os.O_APPEND)  # as a shell's `>> log.txt` opens stdout
    try:
        atomic.write_bytes(Path(f"/dev/fd/{appending}"), b"today\n")
        atomic.write_bytes(Path(f"/dev/fd/{appending}"), b"{}")  # JSON gets its line end
    finally:
        os.close(appending)
    assert log.read_text() == "yesterday\ntoday\n{}\n"
    fresh = atomic.write_bytes(tmp_path / "fresh.json", b"{}")
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_host_name_becomes_a_directory_name(monkeypatch):
    import platform

    from impls.harness import paths

    monkeypatch.delenv("DLSYSBENCH_MACHINE", raising=False)
    for host, name in (("(none)", "none"), ("lab box", "lab-box"), ("büro-pc", "b-ro-pc"), ("_build", "build"),
                       ("", "unknown-machine"), ("vm.example.org", "vm.example.org")):
        monkeypatch.setattr(platform, "node", lambda h=host: h)
        assert paths.machine_name() == name


def test_a_file_that_is_not_the_suites_is_not_a_usable_nvm_target(tmp_path):
    if capabilities.filesystem_type(tmp_path) == "tmpfs":
        pytest.skip("pytest's tmp dir is on tmpfs here")
    mine = tmp_path / "embeddings.bin"
    mine.write_bytes(b"x" * 8192)
    cap = capabilities.check_o_direct(mine)
    assert not cap.available and "does not hold the suite's content" in cap.reason
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert not capabilities.check_o_direct(loop).available


def test_an_output_that_is_an_open_descriptor_is_checked_as_one(tmp_path):
    import os

    from impls.harness import cli

    read_end, write_end = os.pipe()
    try:
        assert cli.check_output(f"/dev/fd/{write_end}", "--json") == Path(f"/dev/fd/{write_end}")
    finally:
        os.close(read_end)
        os.close(write_end)
    with pytest.raises(cli.UsageError, match="is not open"):
        cli.check_output(f"/dev/fd/{write_end}", "--json")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert cli.check_output(fifo, "--json") == fifo and list(tmp_path.iterdir()) == [fifo]


def test_an_output_that_is_one_of_the_inputs_is_refused_even_through_a_link(tmp_path):
    from impls.harness import cli

    data = tmp_path / "train.txt"
    data.write_text("x")
    (tmp_path / "link.txt").symlink_to(data)
    for out in (data, tmp_path / "link.txt", tmp_path / "." / "train.txt"):
        with pytest.raises(cli.UsageError, match="is the file --train reads"):
            cli.check_output(out, "--json", inputs=((data, "--train"), (None, "--test")))
    assert cli.check_output(tmp_path / "o.json", "--json", inputs=((data, "--train"),)) == tmp_path / "o.json"


def test_emitted_json_is_strict(tmp_path):
    import json

    import numpy as np

    from impls.harness import cli

    obj = {"a": float("nan"), "b": [1.0, float("inf"), np.float32(2.5)], "c": (np.array([np.nan, 1.0]),), "d": "x"}
    assert cli.emit_json(str(tmp_path / "o.json"), obj)
    back = json.loads((tmp_path / "o.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert back == {"a": None, "b": [1.0, None, 2.5], "c": [[None, 1.0]], "d": "x"}


COMMANDS = ["impls", "impls.bandana.prepare", "impls.bandana.headline", "impls.bandana.cache", "impls.bandana.replay", "impls.slide.train",
            "impls.slide.xc_stats", "impls.slide.data.xc_join", "impls.slide.experiments.recall_probe", "impls.slide.experiments.lr_select",
            "impls.salus.lanes", "impls.salus.switching", "impls.salus.jct"]


@pytest.mark.parametrize("module", COMMANDS)
def test_an_argument_error_is_one_line_that_points_to_help(module, capsys):
    import importlib

    main = importlib.import_module(module if module != "impls" else "impls.harness.commands").main
    with pytest.raises(SystemExit) as stop:
        main(["--no-such-flag", "3"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err     # argparse's usage block is gone
    assert err.rstrip().endswith(f"see python -m {module} --help")


@pytest.mark.parametrize("var, read", [("DLSYSBENCH_CACHE", "cache_dir"), ("DLSYSBENCH_NVM_PATH", "nvm_target_path"),
                                       ("DLSYSBENCH_ARTIFACTS", "artifacts_root")])
def test_a_path_variable_means_what_it_means_where_it_was_typed(var, read, monkeypatch, tmp_path):
    from impls.harness import paths

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(var, "sub/dir")
    assert getattr(paths, read)() == tmp_path / "sub" / "dir"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(var, "~/x")
    assert getattr(paths, read)() == tmp_path / "home" / "x"
    monkeypatch.setenv(var, "~nosuchuser-dlsysbench/x")   # not a folder named '~nosuchuser...' here
    with pytest.raises(ValueError, match=f"{var}=.*no such user"):
        getattr(paths, read)()
    assert not (tmp_path / "~nosuchuser-dlsysbench").exists()


def test_an_artifact_is_filed_under_host_and_profile_whoever_runs_it(monkeypatch, tmp_path):
    """A plain `asv run` sets no DLSYSBENCH_MACHINE: its artifacts still go where make files
    them, <host>-<profile>, never under the bare host name where two profiles would mix."""
    from impls.harness import artifacts, paths

    monkeypatch.delenv("DLSYSBENCH_MACHINE", raising=False)
    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path))
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    monkeypatch.setattr(paths.platform, "node", lambda: "box")
    path = artifacts.save_artifact("toy", {"x": 1}, experiment="t.toy", synthetic=True, commit="c" * 40)
    assert path.parent.parent.name == "box-smoke"
    assert artifacts.load_latest()["toy"]["data"] == {"x": 1}
    monkeypatch.setenv("DLSYSBENCH_MACHINE", "lab-smoke")        # as make sets it: not suffixed twice
    assert paths.suite_machine() == "lab-smoke"


def test_an_atomic_write_sweeps_what_a_killed_write_of_the_same_file_left(tmp_path):
    import subprocess
    import sys

    from impls.harness import atomic

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    left = tmp_path / f".r.json.pid{dead}.ab_12cd3.tmp"
    kept = [tmp_path / f".r.json.pid{os.getpid()}.zz9.tmp",      # a live writer's
            tmp_path / f".other.json.pid{dead}.ab_12cd3.tmp",    # another file's
            tmp_path / f".r.json.pid{dead}.tmp"]                 # not a name write_bytes makes
    for p in [left, *kept]:
        p.write_bytes(b"half")
    atomic.write_bytes(tmp_path / "r.json", b"{}")
    assert not left.exists() and all(p.exists() for p in kept)
    assert (tmp_path / "r.json").read_bytes() == b"{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([p.name for p in kept] + ["r.json"])


def test_an_artifact_of_edited_code_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path))
    monkeypatch.setattr(paths, "uncommitted_code", lambda: ["impls/salus/core/executor.py"])
    path = artifacts.save_artifact("edited_run", {"x": 1}, experiment="t.t", synthetic=True)
    record = json.loads(path.read_text())
    assert record["uncommitted"] == ["impls/salus/core/executor.py"]
    assert "uncommitted edits to 1 file(s)" in capsys.readouterr().err
    monkeypatch.setattr(paths, "uncommitted_code", lambda: [])
    clean = json.loads(artifacts.save_artifact("clean_run", {"x": 1}, experiment="t.t", synthetic=True).read_text())
    assert "uncommitted" not in clean


def test_doctor_names_the_machine_runs_are_filed_under_and_why_a_commit_is_unknown(monkeypatch):
    from impls.harness import fingerprint

    fp = {"machine": "box1", "commit": "unknown", "profile": "smoke"}
    monkeypatch.setattr(paths, "git_absent_reason", lambda: "/x holds no git repository (an unpacked archive?)")
    assert fingerprint._machine_text(fp) == "box1 (its smoke runs are filed as box1-smoke)"
    assert fingerprint._commit_text(fp).startswith("unknown (not a git checkout: /x holds no git repository")
    assert fingerprint._commit_text({**fp, "commit": "ab" * 20}) == "ab" * 6
    assert fingerprint._machine_text({**fp, "machine": "box1-smoke"}) == "box1-smoke"   # already the filed name
    assert ("salus.lanes", "cpu", None) in fingerprint.runs_here(
        {name: {"available": True, "reason": ""} for name in capabilities.CHECKS})


def test_doctor_piped_into_head_ends_quietly(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(f"{sys.executable} -m impls.harness.fingerprint | head -1", shell=True, cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert run.stdout.startswith("machine") and "Traceback" not in run.stderr, run.stderr


def test_a_closed_standard_output_is_an_error_not_a_silent_success(tmp_path):
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([{"name": "a", "persistent": 10, "ephemeral": 5}]))
    command = f"{sys.executable} -m impls.salus.lanes --jobs {jobs} --capacity 1000"
    closed = subprocess.run(command + " >&-", shell=True, cwd=root, capture_output=True, text=True, timeout=120)
    assert closed.returncode == 2, closed
    assert closed.stderr == "error: standard output is closed, >&-, expected it open: the result is printed there\n"
    to_file = subprocess.run(f"{command} --json {tmp_path / 'out.json'} >&-", shell=True, cwd=root,
                             capture_output=True, text=True, timeout=120)   # nothing for standard output
    assert to_file.returncode == 0 and json.loads((tmp_path / "out.json").read_text())["lanes"], to_file


def test_a_closed_descriptor_is_held_on_dev_null_so_no_file_takes_its_number():
    from impls.harness import cli

    free = 200
    try:
        os.close(free)
    except OSError:
        pass
    try:
        cli._hold_descriptor(free)
        assert os.path.samestat(os.fstat(free), os.stat(os.devnull))
        opened = os.open(os.devnull, os.O_RDONLY)
        assert opened != free
        os.close(opened)
        cli._hold_descriptor(free)             # open already: left as it is
        assert os.path.samestat(os.fstat(free), os.stat(os.devnull))
    finally:
        os.close(free)


def test_doctor_reports_a_bad_profile_as_an_error_line(monkeypatch, capsys):
    from impls.harness import fingerprint

    monkeypatch.setenv("DLSYSBENCH_PROFILE", "nosuchprofile")
    monkeypatch.setattr(fingerprint, "fingerprint", fingerprint.fingerprint.__wrapped__)   # not another test's cache
    assert fingerprint.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nosuchprofile" in err and err.count("\n") == 1
