"""The string links between claims, benchmarks, experiments, figures, artifacts and profiles resolve.

A rename anywhere that is not followed everywhere would otherwise turn a claim into
"not measured yet" without a word. The benchmarks are discovered as asv discovers them.
"""
from __future__ import annotations

import ast
import dataclasses
import json
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from impls.harness import experiments, figures, profiles
from impls.harness.report import claims as claims_module
from impls.harness.report.claims import ArtifactSource, BenchmarkSource

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ROOT / "reports" / "claims.toml"

_DISCOVER = """
import json, sys
sys.path.insert(0, '.')
from asv_runner.discovery import disc_benchmarks
out = {}
for b in disc_benchmarks('benchmarks'):
    src = b._setup_cache and __import__('inspect').getsource(b._setup_cache) or ''
    out[b.name] = {"param_names": list(b.param_names), "params": [list(p) for p in b._params],
                   "version": b.version, "setup_cache": src, "setup_cache_timeout": b.setup_cache_timeout}
print(json.dumps(out, default=repr))
"""


@pytest.fixture(scope="module")
def benchmarks_by_profile() -> dict[str, dict]:
    """asv's view of the benchmarks under each profile (params depend on the profile)."""
    out = {}
    for profile in ("smoke", "quick"):
        run = subprocess.run([sys.executable, "-c", _DISCOVER], cwd=ROOT, capture_output=True, text=True,
                             timeout=300, env={**__import__("os").environ, "DLSYSBENCH_PROFILE": profile})
        assert run.returncode == 0, run.stderr
        out[profile] = json.loads(run.stdout)
    return out


def check_claim_references(claims, benchmarks: dict) -> list[str]:
    """Every problem with the benchmark references of ``claims`` against asv's ``benchmarks``."""
    problems = []
    for claim in claims:
        for name, params in claims_module.benchmark_references(claim):
            if name not in benchmarks:
                problems.append(f"claim {claim.id}: no benchmark {name}")
                continue
            info = benchmarks[name]
            if set(params) != set(info["param_names"]):
                problems.append(f"claim {claim.id}: {name} takes parameters {info['param_names']}, "
                                f"the claim names {sorted(params)}")
                continue
            for key, value in params.items():
                values = info["params"][info["param_names"].index(key)]
                if value is not None and value not in values:
                    problems.append(f"claim {claim.id}: {name} has no {key}={value!r} (has {values})")
    return problems


def test_every_claim_names_an_existing_benchmark_point(benchmarks_by_profile):
    problems = check_claim_references(claims_module.load_claims(CLAIMS), benchmarks_by_profile["quick"])
    assert not problems, "\n".join(problems)


def test_a_claim_naming_a_missing_benchmark_is_caught(benchmarks_by_profile):
    claims = claims_module.load_claims(CLAIMS)
    claim = next(c for c in claims if isinstance(c.measured, BenchmarkSource)
                 and c.lower_bound_when is None and c.upper_bound_when is None)
    point = claim.measured.point
    renamed = point.benchmark.replace(".track_", ".track_renamed_")
    broken = dataclasses.replace(claim, measured=BenchmarkSource(dataclasses.replace(point, benchmark=renamed)))
    assert check_claim_references([claim], benchmarks_by_profile["quick"]) == []
    assert check_claim_references([broken], benchmarks_by_profile["quick"]) == [
        f"claim {claim.id}: no benchmark {renamed}"]


def test_claims_artifacts_are_produced_by_registered_experiments():
    produced = _artifacts()
    for claim in claims_module.load_claims(CLAIMS):
        for source in (claim.measured, claim.measured_cuda, claim.unmeasured_reason, claim.sampling_interval,
                       claim.sampling_interval_cuda, claim.applies_when):
            if source is not None and hasattr(source, "artifact"):
                assert source.artifact in produced, (claim.id, source)


def _artifacts() -> set[str]:
    """Each artifact an experiment declares, one per declared device (each has a setup cache:
    :func:`setup_cache_problems`)."""
    return {entry.artifact_for(device) for entry in experiments.discover().values() for device in entry.devices}


def test_every_figure_draws_an_artifact_of_a_registered_experiment():
    registered, errors = figures.discover()
    assert not errors
    produced = _artifacts()
    orphans = {name: spec.artifact for name, spec in registered.items() if spec.artifact not in produced}
    assert not orphans, f"figures whose artifact no experiment produces: {orphans}"


def test_every_profile_table_has_one_schema_and_the_same_keys_in_every_profile():
    table = tomllib.loads(profiles.PROFILE_TABLE.read_text())
    schemas = experiments.schemas()
    assert set(table) == set(schemas), "profile tables without a schema, or schemas without a table"
    for name, by_profile in table.items():
        assert set(by_profile) == set(profiles.PROFILES), name
        keys = {p: set(by_profile[p]) for p in profiles.PROFILES}
        every = set().union(*keys.values())
        assert keys["smoke"] == keys["quick"] == keys["full"], (
            f"[{name}] keys differ between profiles: " + "; ".join(
                f"[{name}.{p}] lacks {', '.join(sorted(every - keys[p]))}" for p in profiles.PROFILES
                if every - keys[p]))
        for profile in profiles.PROFILES:
            experiments.validate_sizes(name, profile, by_profile[profile])


def test_every_experiment_reads_a_declared_table_and_names_real_code():
    for entry in experiments.discover().values():
        for profile in profiles.PROFILES:     # the registry's own resolution, and its one-line message
            problem = experiments.entry_problem(entry.name, profile)
            assert problem is None, problem
        assert entry.sizes in experiments.schemas(), (
            f"{entry.name}: sizes = {entry.sizes!r} in {experiments.source_of(entry.name)} has no sizes_schema "
            f"(expected one in impls/{entry.system}/catalog.py)")
        module, _, function = entry.run.partition(":")
        source = (ROOT / (module.replace(".", "/") + ".py")).read_text()
        assert re.search(rf"^def {function}\(", source, re.M), (
            f"{entry.name}: run = {entry.run!r} in {experiments.source_of(entry.name)}: expected a top-level "
            f"def {function}(sizes, *, device, progress) in {module.replace('.', '/')}.py")
        [node] = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == function]
        named = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        takes = set(named) | ({"device", "progress"} if node.args.kwarg else set())
        assert named[:1] and {"device", "progress"} <= takes, (
            f"{entry.run}: expected run(sizes, *, device, progress) (the registry calls it so), "
            f"got ({', '.join(named)})")
        if entry.printer:       # resolved only after the run: a wrong one would lose a finished result
            p_module, _, p_function = entry.printer.partition(":")
            p_source = (ROOT / (p_module.replace(".", "/") + ".py")).read_text()
            assert re.search(rf"^def {p_function}\(", p_source, re.M), f"{entry.name}: printer {entry.printer}"


def test_every_setup_cache_is_one_registry_call_and_every_experiment_is_benchmarked(benchmarks_by_profile):
    problems = setup_cache_problems(benchmarks_by_profile["quick"], experiments.discover())
    assert not problems, "\n".join(problems)


def setup_cache_problems(benchmarks: dict[str, dict], known: dict) -> list[str]:
    """Every problem with the setup caches of asv's ``benchmarks`` against the registered
    experiments ``known`` (name -> entry): a setup cache that is not one registry call, has
    asv's default timeout, or runs an experiment or a device that is not declared; and each
    declared (experiment, device) that no setup cache runs (:func:`unbenchmarked`)."""
    problems, used = [], set()
    for name, info in benchmarks.items():
        if "run_and_store(" not in info["setup_cache"]:
            continue
        (func,) = ast.parse(textwrap.dedent(info["setup_cache"])).body
        body = func.body
        call = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
        literal = (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "run_and_store"
                   and all(isinstance(a, ast.Constant) for a in [*call.args, *(k.value for k in call.keywords)]))
        if not literal or not call.args:
            problems.append(f"{name}: setup_cache is not one registry call (return run_and_store(\"<name>\"[, "
                            f"\"<device>\"]), both literal strings)")
            continue
        called = call.args[0].value
        device = (call.args[1].value if len(call.args) > 1
                  else next((k.value.value for k in call.keywords if k.arg == "device"), "cpu"))
        if (info["setup_cache_timeout"] or 0) < 1800:
            problems.append(f"{name}: setup_cache has asv's 60-s default timeout; add its function to the "
                            f"`for _setup in (...): _setup.timeout = ...` loop of benchmarks/runs/<system>.py")
        if called not in known:
            problems.append(f"{name}: setup_cache runs {called!r}, not a registered experiment")
        elif device not in known[called].devices:
            problems.append(f"{name}: setup_cache runs {called!r} on {device!r}, a device its entry does not "
                            f"declare (devices = {list(known[called].devices)} in "
                            f"{experiments.source_of(called)})")
        else:
            used.add((called, device))
    declared = {(entry.name, device) for entry in known.values() for device in entry.devices}
    problems += [unbenchmarked(name, device) for name, device in sorted(declared - used)]
    return problems


def unbenchmarked(name: str, device: str) -> str:
    """What to add, and where, for experiment ``name`` on ``device`` that no setup cache runs."""
    system, _, what = name.partition(".")
    function, extra = (what, "") if device == "cpu" else (f"{what}_{device}", f', "{device}"')
    return (f"experiments no benchmark runs: {name} on {device}; expected a setup function "
            f"`def {function}(_benchmark=None): return run_and_store(\"{name}\"{extra})` in "
            f"benchmarks/runs/{system}.py (also in its `for _setup in (...)` timeout loop; a name not starting "
            f"with time_/track_/mem_/peakmem_), and a class with `setup_cache = {system}.{function}` in a "
            f"benchmarks/bench_{system}*.py module (an existing one such as bench_{system}.py, or a new "
            f"bench_{system}_<what>.py)" + (f" (a CUDA twin: cuda_twin(<class>, {system}.{function}, "
                                                          f"...))" if device == "cuda" else ""))


def _entry(name: str, *devices: str):
    return dataclasses.replace(next(iter(experiments.discover().values())), name=name, devices=devices)


def _setup_cache(call: str, timeout: int = 1800) -> dict:
    return {"setup_cache": f"def f(_benchmark=None): return {call}\n", "setup_cache_timeout": timeout}


def test_a_declared_device_no_setup_cache_runs_is_named_with_what_to_add():
    """An entry declaring cpu and cuda with a setup cache for cpu only (the old test kept the
    name alone, so it passed, and the figures' and claims' check took the never-produced
    ``<artifact>_cuda`` as produced)."""
    known = {"bandana.toy": _entry("bandana.toy", "cpu", "cuda")}
    cpu = {"bench_bandana_toy.Toy.track_n": _setup_cache('run_and_store("bandana.toy")')}
    assert setup_cache_problems(cpu, known) == [
        'experiments no benchmark runs: bandana.toy on cuda; expected a setup function `def toy_cuda(_benchmark=None): '
        'return run_and_store("bandana.toy", "cuda")` in benchmarks/runs/bandana.py (also in its `for _setup in '
        '(...)` timeout loop; a name not starting with time_/track_/mem_/peakmem_), and a class with '
        '`setup_cache = bandana.toy_cuda` in a benchmarks/bench_bandana*.py module (an existing one such as '
        'bench_bandana.py, or a new bench_bandana_<what>.py) (a CUDA twin: '
        'cuda_twin(<class>, bandana.toy_cuda, ...))']
    both = {**cpu, "bench_bandana_toy.ToyCuda.track_n": _setup_cache('run_and_store("bandana.toy", device="cuda")')}
    assert setup_cache_problems(both, known) == []
    assert setup_cache_problems({}, known)[0].startswith(
        'experiments no benchmark runs: bandana.toy on cpu; expected a setup function `def toy(_benchmark=None): '
        'return run_and_store("bandana.toy")` in benchmarks/runs/bandana.py')


def test_a_setup_cache_of_an_undeclared_device_or_experiment_is_named():
    known = {"bandana.toy": _entry("bandana.toy", "cpu")}
    found = {"a.A.track_n": _setup_cache('run_and_store("bandana.toy")'),
             "a.B.track_n": _setup_cache('run_and_store("bandana.toy", "cuda")'),
             "a.C.track_n": _setup_cache('run_and_store("bandana.toi")', timeout=60),
             "a.D.track_n": _setup_cache('run_and_store(NAME)')}
    problems = setup_cache_problems(found, known)
    assert [p.split(": setup_cache ", 1)[0] for p in problems] == ["a.B.track_n", "a.C.track_n", "a.C.track_n",
                                                                    "a.D.track_n"]
    assert "runs 'bandana.toy' on 'cuda', a device its entry does not declare (devices = ['cpu'] in" in problems[0]
    assert "60-s default timeout" in problems[1] and "'bandana.toi', not a registered experiment" in problems[2]
    assert "not one registry call" in problems[3]


def benchmarks_proper(found: dict[str, dict]) -> dict[str, dict]:
    """``found`` less what asv collects from ``benchmarks/runs/`` (a setup function named like
    a benchmark: :func:`test_no_setup_function_is_named_like_a_benchmark` names it; pinning it
    would be the wrong fix)."""
    return {name: info for name, info in found.items() if not name.startswith("runs.")}


def pin_set_problem(pinned: dict[str, str], found: dict[str, dict]) -> str | None:
    """One message naming the benchmarks asv finds that ``benchmarks/versions.json`` does not
    pin (with the version to pin) and the pins no benchmark has any more, with what to check
    before removing one; None when they match. What asv collects from ``benchmarks/runs/``
    is left out (:func:`benchmarks_proper`)."""
    found = benchmarks_proper(found)
    unpinned = {name: found[name]["version"] for name in sorted(set(found) - set(pinned))}
    stale = sorted(set(pinned) - set(found))
    if not unpinned and not stale:
        return None
    parts = []
    if unpinned:
        lines = ",".join(f'\n    "{name}": "{version}"' for name, version in unpinned.items())
        parts.append("unpinned, with the version asv gives them now (paste these lines inside the braces of "
                     "benchmarks/versions.json, anywhere, with a comma between any two entries and none after "
                     f"the last):{lines}\n")
    if stale:
        parts.append(f"pinned but not found by asv: {stale}; removing a pin ends that benchmark's published asv "
                     "history (class and method names are a stable interface): check first that its class was "
                     "not renamed, or overwritten by a later class or function of the same name in its module")
    return "; ".join(parts)


def test_every_benchmark_has_a_pinned_version(benchmarks_by_profile):
    pinned = json.loads((ROOT / "benchmarks" / "versions.json").read_text())
    found = benchmarks_proper(benchmarks_by_profile["quick"])
    problem = pin_set_problem(pinned, found)
    assert problem is None, problem
    mismatched = version_mismatches(pinned, found)
    assert not mismatched, version_mismatch_message(mismatched)


def test_a_pin_problem_warns_before_a_pin_is_removed_and_never_advises_pinning_a_setup_function():
    found = {"bench_x.A.track_a": {"version": "1"}, "bench_x.New.track_b": {"version": "v2"},
             "runs.x.track_toy": {"version": "v3"}}
    pinned = {"bench_x.A.track_a": "1", "bench_x.Old.track_c": "7"}
    problem = pin_set_problem(pinned, found)
    assert '\n    "bench_x.New.track_b": "v2"\n' in problem and "runs.x" not in problem
    pasted = json.loads("{" + problem.split(":\n", 1)[1].split("\n;", 1)[0] + "}")
    assert pasted == {"bench_x.New.track_b": "v2"}           # the printed lines are JSON, ready to paste
    assert "['bench_x.Old.track_c']" in problem
    assert "ends that benchmark's published asv history" in problem and "overwritten" in problem
    assert pin_set_problem({**pinned, "bench_x.New.track_b": "v2"},
                           {**found, "bench_x.Old.track_c": {"version": "7"}}) is None


def test_another_profile_gets_its_own_version_of_every_pin(benchmarks_by_profile):
    """Two profiles' numbers filed under one asv machine must never read as one history."""
    pinned = json.loads((ROOT / "benchmarks" / "versions.json").read_text())
    smoke = benchmarks_proper(benchmarks_by_profile["smoke"])
    expected = {name: f"{version}+smoke" for name, version in pinned.items()}
    mismatched = version_mismatches(expected, smoke)
    assert not mismatched, version_mismatch_message(mismatched)


def version_mismatches(pinned: dict[str, str], found: dict[str, dict]) -> dict[str, tuple[str, str]]:
    """``{benchmark: (pinned version, asv's version)}`` for each pinned benchmark asv versions otherwise."""
    return {name: (version, found[name]["version"]) for name, version in sorted(pinned.items())
            if name in found and found[name]["version"] != version}


def version_mismatch_message(mismatched: dict[str, tuple[str, str]]) -> str:
    """One line naming each benchmark ``version_mismatches`` found, with both versions and the fix."""
    listed = "; ".join(f"{name} (pinned {pinned!r}, asv gives {now!r})" for name, (pinned, now) in mismatched.items())
    modules = sorted({f"benchmarks/{name.split('.', 1)[0]}.py" for name in mismatched})
    return (f"benchmarks whose asv version is not the one in benchmarks/versions.json: {listed}; "
            f"expected {', '.join(modules)} to end with pin_versions(globals()), which applies that file")


def test_a_version_mismatch_names_the_benchmark_and_the_fix():
    found = {"bench_x.A.track_a": {"version": "1"}, "bench_x.A.track_b": {"version": "abc123"}}
    mismatched = version_mismatches({"bench_x.A.track_a": "1", "bench_x.A.track_b": "2"}, found)
    assert mismatched == {"bench_x.A.track_b": ("2", "abc123")}
    assert version_mismatch_message(mismatched) == (
        "benchmarks whose asv version is not the one in benchmarks/versions.json: bench_x.A.track_b (pinned '2', "
        "asv gives 'abc123'); expected benchmarks/bench_x.py to end with pin_versions(globals()), which applies "
        "that file")


def modules_without_pin_versions(modules: list[Path], call: str = "pin_versions") -> list[str]:
    """The name of each of ``modules`` with no module-level ``<call>(globals())`` after its
    last class (before it, the call sees none of them)."""
    missing = []
    for path in modules:
        body = ast.parse(path.read_text()).body
        last_class = max((i for i, node in enumerate(body) if isinstance(node, ast.ClassDef)), default=-1)
        calls = [node.value for node in body[last_class + 1:]
                 if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)]
        if not any(ast.unparse(found) in (f"{call}(globals())", f"common.{call}(globals())") for found in calls):
            missing.append(path.name)
    return missing


@pytest.mark.parametrize("call, why", [
    ("pin_versions", "benchmarks/versions.json does not apply to them"),
    ("explain_skips", "the report cannot say why their points have no value"),
])
def test_every_benchmark_module_ends_with_the_common_calls(call, why):
    missing = modules_without_pin_versions(sorted((ROOT / "benchmarks").glob("bench_*.py")), call)
    assert not missing, (f"benchmark modules that do not end with {call}(globals()): {', '.join(missing)}; "
                         f"expected that call after their last class (from .common import {call}), or {why}")


def test_a_benchmark_module_without_pin_versions_is_named(tmp_path):
    good, early, none = tmp_path / "bench_good.py", tmp_path / "bench_early.py", tmp_path / "bench_none.py"
    good.write_text("from .common import pin_versions\nclass A:\n    pass\npin_versions(globals())\n")
    early.write_text("from .common import pin_versions\npin_versions(globals())\nclass A:\n    pass\n")
    none.write_text("class A:\n    pass\n")
    assert modules_without_pin_versions([good, early, none]) == ["bench_early.py", "bench_none.py"]
    assert modules_without_pin_versions([good], "explain_skips") == ["bench_good.py"]


_BENCHMARK_PREFIXES = ("time_", "track_", "mem_", "peakmem_")


def repeated_definitions(modules: list[Path]) -> list[str]:
    """One line for each name that ``modules`` bind twice in one scope, with both line
    numbers: a top-level class or function, or, in a class, a benchmark (``track_*``, ``time_*``,
    ... as a method or an assignment). Python keeps the later one, so asv no longer finds
    the earlier one's benchmarks."""
    repeats = []
    for path in modules:
        tree = ast.parse(path.read_text())
        scopes = [("", tree.body, False)] + [(f"{node.name}.", node.body, True) for node in tree.body
                                            if isinstance(node, ast.ClassDef)]
        for prefix, body, benchmarks_only in scopes:
            first: dict[str, int] = {}
            for node in body:
                if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    names = [node.name]
                elif benchmarks_only and isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = [n.id for t in targets for n in _bound(t)]
                else:
                    continue
                for name in names:
                    if benchmarks_only and not name.startswith(_BENCHMARK_PREFIXES):
                        continue
                    if name in first:
                        repeats.append(f"benchmarks/{path.name}: {prefix}{name} is defined at line {first[name]} "
                                       f"and again at line {node.lineno}; the later one replaces the earlier, whose "
                                       "published benchmarks asv then no longer finds: give the new one a name of "
                                       "its own")
                    else:
                        first[name] = node.lineno
    return repeats


def _bound(target: ast.expr) -> list[ast.Name]:
    """The names an assignment to ``target`` binds (``a``, ``a, b``), not ``a.unit`` or ``a[0]``."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for item in target.elts for name in _bound(item)]
    return []


def test_no_benchmark_module_defines_a_name_twice():
    repeats = repeated_definitions(sorted((ROOT / "benchmarks").glob("bench_*.py")))
    assert not repeats, "\n".join(repeats)


def test_a_benchmark_class_defined_twice_is_named_with_both_lines(tmp_path):
    module = tmp_path / "bench_x.py"
    module.write_text("class A:\n    pass\n\n\ndef f():\n    pass\n\n\nclass A:\n    pass\n\n\n"
                      "class B:\n    params = 1\n    params = 2\n    track_a = 1\n\n    def track_a(self):\n"
                      "        pass\n    track_a.unit = 's'\n\ndef f():\n    pass\n")
    assert [line.split("; ", 1)[0] for line in repeated_definitions([module])] == [
        "benchmarks/bench_x.py: A is defined at line 1 and again at line 9",
        "benchmarks/bench_x.py: f is defined at line 5 and again at line 22",
        "benchmarks/bench_x.py: B.track_a is defined at line 16 and again at line 18"]
    assert "the later one replaces the earlier" in repeated_definitions([module])[0]


def setup_functions_named_as_benchmarks(modules: list[Path]) -> list[str]:
    """One line for each function of ``modules`` (``benchmarks/runs/*.py``) whose name starts
    as asv's benchmark names do (``time_``, ``track_``, ``mem_``, ``peakmem_``), at any depth."""
    found = []
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(_BENCHMARK_PREFIXES):
                found.append(f"benchmarks/runs/{path.name}:{node.lineno}: {node.name} starts with "
                             f"{next(p for p in _BENCHMARK_PREFIXES if node.name.startswith(p))}, so asv would "
                             "run it as a benchmark (and run its experiment again); expected another name for a "
                             "setup function")
    return found


def test_no_setup_function_is_named_like_a_benchmark():
    found = setup_functions_named_as_benchmarks(sorted((ROOT / "benchmarks" / "runs").glob("*.py")))
    assert not found, "\n".join(found)


def test_a_setup_function_named_like_a_benchmark_is_named(tmp_path):
    module = tmp_path / "slide.py"
    module.write_text("def toy(_benchmark=None):\n    pass\n\n\ndef track_toy(_benchmark=None):\n    pass\n\n\n"
                      "def peakmem_toy(_benchmark=None):\n    pass\n\n\ndef timeline(_benchmark=None):\n    pass\n")
    found = setup_functions_named_as_benchmarks([module])
    assert [line.split(": ", 1)[0] for line in found] == ["benchmarks/runs/slide.py:5", "benchmarks/runs/slide.py:9"]
    assert "starts with track_, so asv would run it as a benchmark" in found[0]


def test_no_module_over_400_lines_without_a_reason_at_its_top():
    import ast

    unexplained = []
    for path in sorted((ROOT / "impls").rglob("*.py")):
        source = path.read_text()
        if source.count("\n") > 400:
            doc = ast.get_docstring(ast.parse(source)) or ""
            if not any("Longer than 400 lines:" in paragraph for paragraph in doc.split("\n\n", 2)[:2]):
                unexplained.append(f"{path.relative_to(ROOT)} ({source.count(chr(10))} lines)")
    assert not unexplained, ("modules over 400 lines that do not say why near the top (split them, or begin a "
                             "paragraph among the first two of the module docstring with 'Longer than 400 "
                             "lines:' and the reason): " + ", ".join(unexplained))


def _is_njit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Name) and target.id == "njit") or \
        (isinstance(target, ast.Attribute) and target.attr == "njit")


def kernels_outside_kernel_modules(root: Path) -> list[str]:
    """Modules under ``root`` (not named ``*_kernels.py``) that define an ``@njit`` function
    beside a plain one: numba kernels live in a module of their own beside the plain API that
    calls them. A module of kernels only (a library of inlined helpers) may keep any name."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name.endswith("_kernels.py"):
            continue
        body = ast.parse(path.read_text()).body
        functions = [node for node in body if isinstance(node, ast.FunctionDef)]
        compiled = [f.name for f in functions if any(_is_njit(d) for d in f.decorator_list)]
        if compiled and (len(compiled) < len(functions) or any(isinstance(node, ast.ClassDef) for node in body)):
            found.append(f"{path.relative_to(root.parent)}: {', '.join(compiled)}")
    return found


def test_numba_kernels_live_in_kernel_modules(tmp_path):
    assert not kernels_outside_kernel_modules(ROOT / "impls"), kernels_outside_kernel_modules(ROOT / "impls")
    mixed = tmp_path / "impls" / "engine.py"            # the rule catches a kernel beside its API
    mixed.parent.mkdir()
    mixed.write_text("from numba import njit\n\n@njit(cache=True)\ndef _k(x):\n    return x\n\n"
                     "def api(x):\n    return _k(x)\n")
    (tmp_path / "impls" / "rng.py").write_text("import numba\n\n@numba.njit\ndef mix(z):\n    return z\n")
    (tmp_path / "impls" / "store.py").write_text("from numba import njit\n\n@njit\ndef _k(x):\n    return x\n\n"
                                                 "class Store:\n    pass\n")
    assert kernels_outside_kernel_modules(tmp_path / "impls") == ["impls/engine.py: _k", "impls/store.py: _k"]


@pytest.mark.parametrize("usable, workers", [(1, 1), (2, 2), (3, 3), (64, 4)])
def test_make_tests_auto_workers_follow_the_usable_cpus_up_to_four(monkeypatch, usable, workers):
    """-n auto counts the CPUs this process may use (a container's limit), not the host's
    physical cores, and starts no more than four workers."""
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location("tests_conftest", Path(__file__).with_name("conftest.py"))
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(usable)), raising=False)
    assert conftest.pytest_xdist_auto_num_workers(None) == workers


def test_the_tests_run_without_pytest_xdist():
    """The root conftest's xdist hook is optional: pytest without the plugin runs the tests."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                           f"{Path(__file__).resolve()}::test_make_tests_auto_workers_follow_the_usable_cpus_up_to_four"],
                          capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0 and "INTERNALERROR" not in done.stdout + done.stderr, done.stdout + done.stderr
