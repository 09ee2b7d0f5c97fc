"""The asv benchmark modules stay thin: importing one must not pull in torch, numba or faiss.

asv imports a benchmark module afresh for every benchmark and parameter combination (a few
hundred times in the quick profile), so a heavy import at module level costs minutes; the
experiments are imported inside the ``setup_cache`` functions instead. Also: what asv
records of a benchmark (its code), the checkout the package finds under asv, and the lock
on ``impls/profiles.toml`` (``benchmarks/sizes_lock.json``) that keeps an edited table from
silently changing what a pinned history measures.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(p.stem for p in (ROOT / "benchmarks").glob("bench_*.py"))
HEAVY = ("torch", "numba", "faiss")


# run in a fresh interpreter: import argv[2] with argv[1] first on the path, and print, for each
# of argv[3] (comma-separated) that gets imported, the "file:line" frames of its first import
_WATCH_IMPORTS = textwrap.dedent("""
    import importlib.abc, json, sys, traceback
    root, module, heavy = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    sys.path.insert(0, root)
    found = {}

    class Watch(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            top = fullname.partition(".")[0]
            if top in heavy and top not in found:
                found[top] = [f"{f.filename}:{f.lineno}" for f in traceback.extract_stack()[:-1]
                              if not f.filename.startswith("<")]
            return None

    sys.meta_path.insert(0, Watch())
    __import__(module)
    print(json.dumps(found))
""")


def heavy_imports(module: str, root: Path = ROOT, heavy: tuple[str, ...] = HEAVY) -> dict[str, list[str]]:
    """``{package: chain}`` for each of ``heavy`` that importing ``module`` (from ``root``)
    imports: the chain of files and lines under ``root`` (site-packages left out) that led to
    it, the importing module first, the one that imported the package last."""
    out = subprocess.run([sys.executable, "-c", _WATCH_IMPORTS, str(root), module, ",".join(heavy)], cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    chains = {}
    for package, frames in json.loads(out.stdout).items():
        mine = []
        for frame in frames:
            path, _, line = frame.rpartition(":")
            try:
                relative = Path(path).resolve().relative_to(root.resolve())
            except ValueError:
                continue
            if "site-packages" not in relative.parts:
                mine.append(f"{relative}:{line}")
        chains[package] = mine
    return chains


def heavy_import_problem(module: str, chains: dict[str, list[str]]) -> str:
    """One line per heavy package importing ``module`` pulls in, naming the file and line
    that imports it (where the fix goes) and the chain from ``module`` to it; "" for none."""
    lines = []
    for package, chain in sorted(chains.items()):
        where = chain[-1] if chain else "a package outside the checkout"
        lines.append(f"importing {module} imports {package} at module level: {where} imports it (chain: "
                     f"{' -> '.join(chain) or '?'}); expected that import inside the function that needs it")
    return "\n".join(lines)


@pytest.mark.parametrize("module", MODULES)
def test_benchmark_module_imports_no_heavy_package(module):
    problem = heavy_import_problem(f"benchmarks.{module}", heavy_imports(f"benchmarks.{module}"))
    assert problem == "", problem


def test_a_heavy_import_is_blamed_on_the_module_that_makes_it(tmp_path):
    """A benchmark module that imports nothing heavy itself, through a catalog that does (the
    old message blamed the benchmark module: "benchmarks/bench_x.py imports numba")."""
    (tmp_path / "fakeheavy.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "bench_x.py").write_text("import json\nfrom pkg import catalog\n")
    (tmp_path / "pkg" / "catalog.py").write_text('"""A catalog."""\nimport fakeheavy\n')
    chains = heavy_imports("pkg.bench_x", tmp_path, ("fakeheavy", "json"))
    assert chains == {"fakeheavy": ["pkg/bench_x.py:2", "pkg/catalog.py:2"]}     # json: imported before
    assert heavy_import_problem("pkg.bench_x", chains) == (
        "importing pkg.bench_x imports fakeheavy at module level: pkg/catalog.py:2 imports it (chain: "
        "pkg/bench_x.py:2 -> pkg/catalog.py:2); expected that import inside the function that needs it")


def test_a_fio_ratio_without_fio_is_an_asv_skip_not_a_failure():
    """In a track body asv skips only on SkipNotImplemented; a plain NotImplementedError there is
    recorded as a failed benchmark, which make compare would count against the new run."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    try:
        from asv_runner.benchmarks.mark import SkipNotImplemented

        from benchmarks import bench_bandana_replay as replay
    finally:
        sys.path.pop(0)
    for cls, key, args in ((replay.ReplayIOMechanism, "replay_over_fio", ("threads", 1)),
                           (replay.ReplayRawLoop, "raw_over_fio", (1,))):
        bench = cls.__new__(cls)
        bench.point = {key: None, "blocks_per_second": 1.0}
        with pytest.raises(SkipNotImplemented):
            bench.track_ratio({}, *args)


@pytest.mark.parametrize("why", [None, "no libaio here; no io_uring here; psync reads at queue depth 1 only"])
def test_a_fio_ratio_skip_gives_the_runs_own_reason(why):
    """fio installed but no engine at the depth is not "fio is not installed": each of the
    three fio ratios' skips gives the reason the run recorded (``fio_no_value``), and an
    artifact older than that key is told both causes."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    try:
        from benchmarks import bench_bandana_replay as replay
    finally:
        sys.path.pop(0)
    point = {"layout": "shp", "queue_depth": 4, "fio_iops": None, "replay_over_fio": None, "raw_over_fio": None,
             "blocks_per_second": 1.0, **({"fio_no_value": why} if why else {})}
    said = []
    for call in (lambda: replay.ReplayOverFio().setup({"sweep": [point]}, "shp", 4),
                 lambda: _with_point(replay.ReplayIOMechanism, point).track_ratio({}, "threads", 4),
                 lambda: _with_point(replay.ReplayRawLoop, point).track_ratio({}, 4)):
        with pytest.raises(NotImplementedError) as err:
            call()
        said.append(str(err.value))
    expected = (f"no fio ceiling to compare with: {why}" if why
                else "fio is not installed, or has no engine at this queue depth")
    assert said == [expected] * 3


def _with_point(cls, point):
    bench = cls.__new__(cls)
    bench.point = point
    return bench


def test_a_slide_run_cut_to_fewer_threads_is_not_blamed_on_the_profile():
    """On a 1-core machine the quick profile's 2-thread run ran at 1 thread: the skip says what
    ran instead of claiming the profile has no such run."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    try:
        from benchmarks import bench_slide
    finally:
        sys.path.pop(0)
    sweep = {"profile": "quick", "runs": [{"method": "slide", "threads": 1, "padding": "batch"},
                                          {"method": "slide", "threads": 1, "padding": "sample", "skipped": "x"},
                                          {"method": "dense", "threads": 1}]}
    bench = bench_slide.SlideTraining()
    with pytest.raises(NotImplementedError, match=r"fewer threads \(the SLIDE runs here: 1 thread\(s\) batch\)"):
        bench.setup(sweep, 2, "batch")
    bench.setup(sweep, 1, "batch")
    assert bench.row["threads"] == 1


def test_a_speed_up_of_two_slide_runs_is_not_an_asv_number_with_a_better_side():
    """slide-sample/slide weighs a padding choice: a faster per-sample run must not read as a
    regression of a higher-is-better ratio. Every other pair, SLIDE against a peer, is tracked."""
    from impls.harness import profiles

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    try:
        from benchmarks import bench_slide
    finally:
        sys.path.pop(0)
    for profile in ("quick", "full"):
        sizes = profiles.sizes("slide_train", profile)
        tracked = bench_slide.peer_comparisons(sizes)
        assert ["slide", "slide-sample"] in sizes["comparisons"] and "slide-sample/slide" not in tracked
        assert len(tracked) == len(sizes["comparisons"]) - 1 and "dense-cpu/slide" in tracked
    assert bench_slide.peer_comparisons({"runs": [{"name": "a", "method": "slide"}, {"name": "b", "method": "dense"}],
                                         "comparisons": [["a", "b"], ["b", "a"]]}) == ["b/a", "a/b"]


def test_profiles_toml_matches_its_lock(load_script):
    """An edit of impls/profiles.toml does not change any asv version (pins do), so every
    [table.profile] must be as benchmarks/sizes_lock.json records it."""
    message = load_script("lock_profile_sizes").check()
    assert message == "", message


def _bump_first_number(text: str, header: str) -> str:
    """``text`` with the first plain number of table ``header`` one larger (comments kept)."""
    start = text.index(f"\n{header}\n")
    end = text.find("\n[", start + 1)
    end = len(text) if end < 0 else end
    line = re.search(r"^(\w+) = (\d+(?:\.\d+)?)([ \t]*(?:#.*)?)$", text[start:end], re.M)
    assert line, f"no plain number in {header}"
    value = line.group(2)
    bumped = str(float(value) + 1) if "." in value else str(int(value) + 1)
    at = start + line.start(2)
    return text[:at] + bumped + text[at + len(value):]


def test_the_lock_sees_a_changed_value_and_names_its_readers_but_not_comments(load_script, tmp_path):
    script = load_script("lock_profile_sizes")
    original = script.PROFILES.read_text()
    copy, lock = tmp_path / "profiles.toml", tmp_path / "sizes_lock.json"
    copy.write_text(original)
    script.write(copy, lock)
    assert script.check(copy, lock) == ""

    # comments and layout are not content
    copy.write_text("# a comment\n\n" + re.sub(r"^(\w+) = ", r"\1   =   ", re.sub(
        r"^(\[[\w.]+\])$", r"\1  # note", original, flags=re.M), flags=re.M))
    assert script.check(copy, lock) == ""

    copy.write_text(_bump_first_number(original, "[slide_train.quick]"))
    message = script.check(copy, lock)
    assert "[slide_train.quick] changed" in message, message
    assert "bench_slide.SlideTimeToAccuracy.track_time_to_target" in message, message
    assert "bench_salus" not in message and "[slide_train.smoke]" not in message, message
    assert "bump their pins in benchmarks/versions.json" in message and "--write" in message
    assert script.main(["--check", "--profiles", str(copy), "--lock", str(lock)]) == 1

    locked = script.read_lock(lock)
    locked["gone_table"] = {"smoke": "0" * 16}
    del locked["fio_sweep"]["full"]
    assert script.differences(locked, script.digests(script.PROFILES)) == [
        ("fio_sweep.full", "added"), ("gone_table.smoke", "removed")]



def test_a_table_new_to_the_lock_needs_only_write_not_a_pin_bump(load_script, tmp_path):
    """A new table (a new experiment's) was read by no recorded number: naming as its readers the
    classes of a module that quotes it, and advising to bump their pins, would cut the history of
    benchmarks (here SlideTableRefresh) that the new table never touched."""
    script = load_script("lock_profile_sizes")
    original, copy, lock = script.PROFILES.read_text(), tmp_path / "profiles.toml", tmp_path / "sizes_lock.json"
    copy.write_text(original)
    locked = script.digests(copy)
    del locked["slide_delicious"]       # as if [slide_delicious.*] had just been added
    lock.write_text(json.dumps(locked))
    message = script.check(copy, lock)
    assert "[slide_delicious.quick] added: a table new to the lock" in message, message
    assert "read by" not in message and "SlideTableRefresh" not in message, message
    assert "bump their pins" not in message and "no pin in benchmarks/versions.json needs a bump" in message
    assert message.endswith(f"run '{script.WRITE}' to record it."), message
    assert script.main(["--check", "--profiles", str(copy), "--lock", str(lock)]) == 1
    # beside a changed table, the changed one keeps its readers and the pin advice
    copy.write_text(_bump_first_number(original, "[slide_train.quick]"))
    message = script.check(copy, lock)
    assert "[slide_train.quick] changed; read by:" in message and "[slide_delicious.smoke] added: a table new" in message
    assert "bench_slide.SlideTimeToAccuracy.track_time_to_target" in message, message
    assert "no pin in benchmarks/versions.json needs a bump" in message and "bump their pins" in message


def test_importing_benchmarks_names_the_checkout_without_touching_the_environment(tmp_path):
    """asv --python=same runs setup_cache in a scratch directory without ASV_CONF_DIR; the
    package, imported from the checkout, tells impls where the checkout is (after the
    variables and the current directory, before where impls is installed), and sets no
    variable that other processes, or tests building their own checkouts, would inherit."""
    other = tmp_path / "other-checkout"
    (other / "impls").mkdir(parents=True)
    (other / "asv.conf.json").write_text("{}")
    elsewhere = tmp_path / "scratch"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("DLSYSBENCH_ROOT", "ASV_CONF_DIR")}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import os, sys, benchmarks; from pathlib import Path; from impls.harness import paths; "
            "print(os.environ.get('DLSYSBENCH_ROOT')); print(paths.repo_root()); "
            "paths.set_benchmarks_root(Path(sys.argv[1])); print(paths.repo_root())")
    out = subprocess.run([sys.executable, "-c", code, str(other)], cwd=elsewhere, env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    variable, root, named_first = out.stdout.split()
    assert variable == "None"                         # nothing inherited by children or later tests
    assert root == str(ROOT)
    assert named_first == str(ROOT)                   # the first checkout named is kept
    out = subprocess.run([sys.executable, "-c", code, str(other)], cwd=elsewhere,
                         env={**env, "DLSYSBENCH_ROOT": str(other)}, capture_output=True, text=True, timeout=60)
    assert out.stdout.split()[1] == str(other.resolve()), "a root the user set comes first"
    named = ("import sys; from pathlib import Path; from impls.harness import paths; "
             "paths.set_benchmarks_root(Path(sys.argv[1])); print(paths.repo_root())")
    out = subprocess.run([sys.executable, "-c", named, str(other)], cwd=elsewhere, env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.strip() == str(other.resolve()), "the benchmarks' checkout before where impls lives"


def test_asv_records_the_code_each_track_reads():
    """asv records inspect's source of the method (or its pretty_source): each track's own
    reading, not the wrapper track() builds around it."""
    from asv_runner.discovery import get_benchmark_from_name

    def code(name):
        return get_benchmark_from_name(str(ROOT / "benchmarks"), name).code

    wrapper = "return read(self, data, *params)"
    tracked = code("bench_bandana_device.FioRandomRead.track_bandwidth")
    assert "bandwidth_bytes_per_s" in tracked and wrapper not in tracked, tracked
    field = code("bench_bandana_device.FioRandomRead.track_iops")
    assert "self.row['iops']" in field and wrapper not in field, field
    optional = code("bench_slide.SlideTimeToAccuracy.track_hidden_cosine")
    assert "self.row.get('final_hidden_cosine')" in optional, optional
    named = code("bench_slide.SlideTimeToAccuracy.track_time_to_target")     # a named function's source
    assert 'run["time_to_target_s"]' in named and 'run["train_seconds"]' in named and wrapper not in named, named


def test_every_full_experiment_fits_its_asv_limit():
    """asv stops a setup_cache at its limit and a stopped run stores nothing: under the full
    profile, the training budgets of the SLIDE tables and the job time of the Salus policy
    runs (each an underestimate: evaluation, data and set-up come on top) must fit it."""
    code = textwrap.dedent("""
        import json
        from impls.harness import profiles
        from impls.salus.core.traces import poisson_trace
        from benchmarks.runs import salus, slide
        out = {}
        for table, setup in (("slide_train", slide.to_accuracy), ("slide_delicious", slide.delicious),
                             ("slide_real", slide.real_amazon), ("slide_sweep", slide.sweeps)):
            s = profiles.sizes(table, "full")
            if "runs" in s:
                work = sum(r.get("time_budget_s", s["time_budget_s"]) for r in s["runs"])
            else:
                work = (len(s["batches"]) * len(s["batch_methods"]) + len(s["hash_families"])) * s["time_budget_s"]
            out[table] = (work, setup.timeout)
        s = profiles.sizes("salus_policies", "full")
        trace = poisson_trace(s["n_jobs"], s["mean_interarrival_s"], s["mix"], {w: 1.0 for w in s["mix"]},
                              tuple(s["duration_s"]), seed=s["seed"])
        runs = len(s["policies"]) + (1 if s.get("repeat_policy") else 0)
        out["salus_policies"] = (runs * sum(j["duration_s"] for j in trace), salus.policies.timeout)
        print(json.dumps(out))
    """)
    env = {**os.environ, "DLSYSBENCH_PROFILE": "full", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for table, (work, limit) in json.loads(done.stdout).items():
        assert work * 1.5 <= limit, f"[{table}.full]: {work / 3600:.1f} h of budgets against asv's {limit / 3600:.1f} h"


def _keys_read(source: str) -> set[tuple[str, int]]:
    """(key, line) of every string a benchmark module reads its data by: ``x["key"]``,
    ``x.get("key")``, ``field("key", ...)`` and ``missing_from="key"`` (the row's words for a NaN)."""
    import ast

    keys = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            keys.add((node.slice.value, node.lineno))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("field", "get"):
                keys.add((node.args[0].value, node.lineno))
        if isinstance(node, ast.keyword) and node.arg == "missing_from" and isinstance(node.value, ast.Constant):
            keys.add((node.value.value, node.value.lineno))
    return {(key, line) for key, line in keys if isinstance(key, str)}


def systems_run(bench: Path, runs: Path = ROOT / "benchmarks" / "runs") -> set[str]:
    """The systems whose experiments the classes of ``bench`` run, read from the code, not its
    file name: each ``<module>.<function>`` it names of a module it imports from
    ``benchmarks.runs`` (``setup_cache = bandana.layouts``, ``cuda_twin(..., salus.lanes_cuda,
    ...)``) is a setup function of ``runs/<module>.py`` whose ``run_and_store("<system>.<what>")``
    names the system."""
    import ast

    tree = ast.parse(bench.read_text())
    modules = {alias.asname or alias.name: alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and (node.module, node.level) in (("runs", 1), ("benchmarks.runs", 0)) for alias in node.names}
    systems = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            path = runs / f"{modules[node.value.id]}.py"
            setup = [f for f in ast.parse(path.read_text()).body if isinstance(f, ast.FunctionDef)
                     and f.name == node.attr] if path.exists() else []
            calls = [c for f in setup for c in ast.walk(f) if isinstance(c, ast.Call) and c.args
                     and getattr(c.func, "id", None) == "run_and_store" and isinstance(c.args[0], ast.Constant)]
            systems |= {str(c.args[0].value).partition(".")[0] for c in calls}
    return systems


def _unknown_keys(bench: Path) -> list[str]:
    """The keys ``bench`` reads that are no name anywhere in the code of the systems its
    classes run (:func:`systems_run`) or the harness's (a key that is no identifier, e.g.
    "dense-cpu/slide": nowhere in that text), a misspelt key: ``field(optional=True)`` would
    record NaN for ever, ``row`` fail only under asv. A module whose classes run no registered
    experiment is one line saying so."""
    systems = systems_run(bench)
    if not systems:
        return [f"{bench.name}: no class names a setup function of benchmarks/runs/<system>.py (expected "
                f"`from .runs import <system>` and `setup_cache = <system>.<function>`, whose "
                f"run_and_store(\"<system>.<what>\") names the system whose code its keys are checked against)"]
    source = "\n".join(p.read_text() for folder in (*sorted(systems), "harness")
                       for p in (ROOT / "impls" / folder).rglob("*.py"))
    words = set(re.findall(r"[A-Za-z_]\w*", source))
    return [f"{bench.name}:{line}: {key!r}" for key, line in sorted(_keys_read(bench.read_text()))
            if (key not in words if key.isidentifier() else key not in source)]


def test_every_key_a_benchmark_reads_is_a_name_in_its_system_s_code(tmp_path):
    unknown = [line for bench in sorted((ROOT / "benchmarks").glob("bench_*.py")) for line in _unknown_keys(bench)]
    assert not unknown, ("benchmarks read keys their experiments never name (a typo?): " + "; ".join(unknown))
    typo = tmp_path / "bench_salus_typo.py"      # the check itself finds a misspelt key
    typo.write_text('from .runs import salus\nclass A:\n    setup_cache = salus.policies\n'
                    '    track_ratio = field("fifo_over_srft", optional=True, unit="x", direction="higher")\n'
                    '    def setup(self, data):\n        self.row = data["points"][0]\n'
                    '    track_b = field("fifo_over_srtf", optional=True, unit="x", direction="higher",\n'
                    '                    missing="no ratio", missing_from="ratio_no_valeu")\n')
    assert _unknown_keys(typo) == ["bench_salus_typo.py:4: 'fifo_over_srft'", "bench_salus_typo.py:8: 'ratio_no_valeu'"]


@pytest.mark.parametrize("name", ["bench_toy.py", "bench_bandanatoy.py", "bench_salus_x.py"])
def test_the_system_of_a_benchmark_module_is_what_its_classes_run_not_its_file_name(tmp_path, name):
    """A key of Bandana's code, read by a module whose name does not spell bandana_ (the old
    check took the system from the file name: impls/toy/ or impls/bandanatoy/, which do not
    exist, or Salus's code, and called the key a typo)."""
    module = tmp_path / name
    module.write_text("from .runs import bandana\n\n\nclass Toy:\n    setup_cache = bandana.layouts\n"
                      '    track_bandwidth = field("effective_bandwidth", unit="x", direction="higher")\n')
    assert systems_run(module) == {"bandana"}
    assert _unknown_keys(module) == []
    twin = tmp_path / "bench_twin.py"            # a CUDA twin's setup function, imported from benchmarks.runs
    twin.write_text("from benchmarks.runs import salus as s\nX = cuda_twin(Base, s.lanes_cuda, 'doc')\n")
    assert systems_run(twin) == {"salus"}


def test_a_benchmark_module_whose_classes_run_no_experiment_is_one_line_saying_so(tmp_path):
    module = tmp_path / "bench_bandana_none.py"
    module.write_text('class A:\n    track_n = field("effective_bandwidth", unit="x", direction="higher")\n')
    [line] = _unknown_keys(module)
    assert line.startswith("bench_bandana_none.py: no class names a setup function of benchmarks/runs/<system>.py")


def test_a_pins_file_that_is_not_json_is_named_with_its_line(tmp_path, monkeypatch):
    """An entry pasted in Python's quotes made every benchmark module fail to import with a bare
    JSONDecodeError from asv's discovery: the file and line are named, and what is expected."""
    from benchmarks import common

    pins = tmp_path / "versions.json"
    pins.write_text('{\n  "bench_x.A.track_a": "1",\n  \'bench_x.B.track_b\': \'2\'\n}\n')
    monkeypatch.setattr(common, "VERSIONS_FILE", pins)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(pins))}:3: not JSON .*in double quotes"):
        common.versions()
    pins.write_text('["bench_x.A.track_a"]')
    with pytest.raises(ValueError, match="expected a JSON object"):
        common.versions()
    pins.write_text('{"bench_x.A.track_a": "1"}')
    assert common.versions() == {"bench_x.A.track_a": "1"}


def test_a_headline_or_speed_number_a_profile_does_not_run_is_a_nan_with_its_reason():
    """A profile without the random layout's prefetch run, or without policy 'none' in the
    speed run, gives NaN with words (asv's skip), not a KeyError or a None (asv's failure)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    try:
        from benchmarks import bench_bandana_sim as sim
    finally:
        sys.path.pop(0)
    data = {"tables": {"t": {"headline": {"random_prefetch_effective_bandwidth": None}}}}
    assert math.isnan(sim.BandanaHeadline().track_no_locality_effective_bandwidth(data, "t"))
    assert "no random layout" in sim.BandanaHeadline.track_no_locality_effective_bandwidth.missing
    assert math.isnan(sim.SimulatorVsOrderedDict().track_ratio({"policies": {}}))
    assert "no 'none' policy" in sim.SimulatorVsOrderedDict.track_ratio.missing
