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
                       claim.applies_when):
            if source is not None and hasattr(source, "artifact"):
                assert source.artifact in produced, (claim.id, source)


def _artifacts() -> set[str]:
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
        assert keys["smoke"] == keys["quick"] == keys["full"], f"[{name}] keys differ between profiles"
        for profile in profiles.PROFILES:
            experiments.validate_sizes(name, profile, by_profile[profile])


def test_every_experiment_reads_a_declared_table_and_names_real_code():
    for entry in experiments.discover().values():
        assert entry.sizes in experiments.schemas(), entry.name
        module, _, function = entry.run.partition(":")
        source = (ROOT / (module.replace(".", "/") + ".py")).read_text()
        assert re.search(rf"^def {function}\(", source, re.M), entry.run
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
    known = experiments.discover()
    used = set()
    for name, info in benchmarks_by_profile["quick"].items():
        if "run_and_store(" not in info["setup_cache"]:
            continue
        (func,) = ast.parse(textwrap.dedent(info["setup_cache"])).body
        body = func.body
        assert (len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call)
                and getattr(body[0].value.func, "id", None) == "run_and_store"), \
            f"{name}: setup_cache is not one registry call (return run_and_store(...))"
        called = body[0].value.args[0].value
        assert (info["setup_cache_timeout"] or 0) >= 1800, f"{name}: setup_cache has asv's 60-s default timeout"
        assert called in known, f"{name}: setup_cache runs {called!r}, not a registered experiment"
        used.add(called)
    assert used == set(known), f"experiments no benchmark runs: {set(known) - used}"


def test_every_benchmark_has_a_pinned_version(benchmarks_by_profile):
    pinned = json.loads((ROOT / "benchmarks" / "versions.json").read_text())
    found = benchmarks_by_profile["quick"]
    unpinned = {name: found[name]["version"] for name in sorted(set(found) - set(pinned))}
    assert set(pinned) == set(found), (f"unpinned, with the version asv gives them now (add them to "
                                       f"benchmarks/versions.json): {unpinned}; "
                                       f"stale: {sorted(set(pinned) - set(found))}")
    assert all(found[name]["version"] == version for name, version in pinned.items())


def test_no_module_over_400_lines_without_a_reason_at_its_top():
    import ast

    unexplained = []
    for path in sorted((ROOT / "impls").rglob("*.py")):
        source = path.read_text()
        if source.count("\n") > 400:
            doc = ast.get_docstring(ast.parse(source)) or ""
            if "Longer than 400 lines:" not in doc.split("\n\n", 2)[:2][-1]:
                unexplained.append(f"{path.relative_to(ROOT)} ({source.count(chr(10))} lines)")
    assert not unexplained, "modules over 400 lines that do not say why near the top: " + ", ".join(unexplained)
