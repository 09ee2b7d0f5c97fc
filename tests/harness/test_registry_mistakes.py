"""A catalog author's mistakes are named on one line: the file, the table and the fix.

Each test declares its own catalogs in a temporary folder (put on ``impls.__path__`` where
discovery must see it); the registry is restored after it.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import impls
from impls.harness import commands, experiments, figures, paths, profiles

ROOT = Path(__file__).resolve().parents[2]
LANES = "impls.salus.experiments.lanes:lanes_experiment"    # a real run target


def _table(name: str, sizes: str = "salus_lanes", run: str = LANES, **extra: str) -> str:
    """One catalog.toml table for experiment ``name`` (``extra``: further fields, as TOML values)."""
    lines = [f'["{name}"]', f'sizes = "{sizes}"', f'artifact = "{name.replace(".", "_")}"', f'run = "{run}"',
             'summary = "a test"', *(f"{key} = {value}" for key, value in extra.items())]
    return "\n".join(lines) + "\n"


@pytest.fixture
def registry(monkeypatch):
    """The registry as discovered, restored after the test (which may declare more)."""
    experiments.discover()
    for attr in ("_EXPERIMENTS", "_SOURCES", "_FIGURES"):
        monkeypatch.setattr(experiments, attr, dict(getattr(experiments, attr)))
    monkeypatch.setattr(experiments, "_DECLARED", set(experiments._DECLARED))
    monkeypatch.delenv("DLSYSBENCH_PROGRESS_LOG", raising=False)
    monkeypatch.delenv("ASV", raising=False)
    yield
    for module in [m for m in sys.modules if m.startswith("impls.toysys")]:
        del sys.modules[module]


@pytest.fixture
def system_root(tmp_path, monkeypatch, registry) -> Path:
    """A folder discovery searches for systems, beside ``impls/``."""
    root = tmp_path / "systems"
    root.mkdir()
    monkeypatch.setattr(impls, "__path__", [*impls.__path__, str(root)])
    return root


def _cli(capsys, *args: str) -> tuple[int, str]:
    status = commands.main(list(args))
    return status, capsys.readouterr().err


# -- 1. a system folder that is not a package ------------------------------------------------

def test_a_system_folder_without_init_is_named_not_ignored(system_root, capsys):
    folder = system_root / "toysys"
    folder.mkdir()
    (folder / "catalog.toml").write_text(_table("toysys.hello"))
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.discover()
    assert str(err.value) == (f"{folder / 'catalog.toml'}: impls/toysys is not a package, so its experiments are "
                              f"never declared; expected {folder / '__init__.py'} (an empty file will do)")
    status, stderr = _cli(capsys, "list")
    assert status == 2 and stderr.count("\n") == 1 and "impls/toysys is not a package" in stderr
    (folder / "__init__.py").write_text("")
    assert experiments.discover()["toysys.hello"].system == "toysys"


def test_figures_in_a_folder_that_is_not_a_package_are_reported(system_root):
    folder = system_root / "toyfigs"
    (folder / "figures").mkdir(parents=True)
    _, errors = figures.discover()
    assert "impls/toyfigs is not a package" in errors["impls.toyfigs.figures"]


# -- 3. a capability that does not exist ------------------------------------------------------

def test_a_misspelled_capability_names_the_file_the_table_and_the_known_ones(tmp_path, registry):
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(_table("demo.typo", requires='["fioo"]'))
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.declare_file(catalog)
    message = str(err.value)
    assert message.startswith(f'["demo.typo"] in {catalog}: ')
    assert "requires ['fioo'] unknown; expected some of fio, o_direct, cuda" in message
    assert "demo.typo" not in experiments._EXPERIMENTS and "\n" not in message


# -- 4. a run target that does not exist ------------------------------------------------------

@pytest.mark.parametrize("run, problem", [
    ("impls.salus.catalog:funcc", "names no function (module impls.salus.catalog has no function 'funcc')"),
    ("impls.salus.catalgo:lanes", "names no module (no module named 'impls.salus.catalgo')"),
    ("impls.salus.catalog", "is not 'module:function'"),
])
def test_a_misspelled_run_target_is_refused_before_any_work(run, problem, tmp_path, registry, capsys):
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(_table("demo.typo_run", run=run))
    experiments.declare_file(catalog)
    expected = f"""run = '{run}' of ["demo.typo_run"] in {catalog} {problem}, expected 'package.module:function'"""
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.run("demo.typo_run", profile="smoke")
    assert str(err.value) == expected
    status, stderr = _cli(capsys, "run", "demo.typo_run", "--profile", "smoke")
    assert (status, stderr) == (2, f"error: {expected}\n")      # no "started", no internal error


def test_a_run_function_of_another_signature_is_named_before_any_work(tmp_path, registry, capsys):
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(_table("demo.wrong_args", run="impls.harness.profiles:current_profile"))
    experiments.declare_file(catalog)
    expected = (f"""run = 'impls.harness.profiles:current_profile' of ["demo.wrong_args"] in {catalog} cannot be """
                "called as run(sizes, *, device, progress): too many positional arguments")
    status, stderr = _cli(capsys, "run", "demo.wrong_args", "--profile", "smoke")
    assert (status, stderr) == (2, f"error: {expected}\n")      # not an internal error
    catalog.write_text(_table("demo.no_progress", run="impls.harness.profiles:profile_of_version"))   # (version)
    experiments.declare_file(catalog)
    status, stderr = _cli(capsys, "run", "demo.no_progress", "--profile", "smoke")
    assert status == 2 and "cannot be called as run(sizes, *, device, progress): got an unexpected keyword " \
                           "argument 'device'" in stderr, stderr
    # the suite's own run functions pass the check (called as run calls them)
    for name, entry in experiments.discover().items():
        if not name.startswith("demo."):
            experiments._check_signature(entry, entry.function(), {}, device="cpu", progress=None)


def test_a_run_that_returns_no_dict_is_named_by_the_plain_run_not_as_an_internal_error(
        tmp_path, registry, capsys, monkeypatch):
    """The artifact stores a dict: a run returning a list passed `python -m impls run` and
    failed only when filed (--save-artifact, asv) as an "internal error"."""
    (tmp_path / "listy.py").write_text("def run(sizes, *, device, progress):\n    return [{'x': 1}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(_table("demo.listy", run="listy:run"))
    experiments.declare_file(catalog)
    expected = (f"""run = 'listy:run' of ["demo.listy"] in {catalog} returned a list; expected a dict of plain """
                "JSON data (its artifact's data)")
    status, stderr = _cli(capsys, "run", "demo.listy", "--profile", "smoke")
    assert status == 2 and stderr.endswith(f"error: {expected}\n") and "internal error" not in stderr, stderr


def test_a_misspelled_printer_names_the_catalog_file(tmp_path, registry):
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(_table("demo.typo_printer", printer='"impls.salus.catalog:show"'))
    experiments.declare_file(catalog)
    expected = f"""printer = 'impls.salus.catalog:show' of ["demo.typo_printer"] in {catalog} names no function"""
    with pytest.raises(experiments.ExperimentError, match=re.escape(expected)):
        experiments.printer("demo.typo_printer")


# -- 5. a profile table that does not exist ---------------------------------------------------

def test_a_missing_profile_table_is_named_with_its_experiment(tmp_path, registry, capsys):
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(_table("demo.toy", sizes="bandana_toy"))
    experiments.declare_file(catalog)
    expected = (f"no profile table [bandana_toy.smoke] in {profiles.PROFILE_TABLE} (the sizes of experiment "
                f"'demo.toy': sizes = 'bandana_toy' in {catalog})")
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.run("demo.toy", profile="smoke")
    assert str(err.value).startswith(expected)
    status, stderr = _cli(capsys, "run", "demo.toy", "--profile", "smoke")
    assert status == 2 and stderr.startswith(f"error: {expected}") and stderr.count("\n") == 1
    with pytest.raises(KeyError, match=re.escape(f"no profile table [bandana_toy.quick] in {profiles.PROFILE_TABLE}")):
        profiles.sizes("bandana_toy", "quick")


# -- 8. an experiment in the wrong catalog, or in two ----------------------------------------

def test_an_experiment_in_another_systems_catalog_is_refused(system_root):
    folder = system_root / "toysys"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    stray = "slide.stray_from_toysys_test"      # a name no real catalog registers
    (folder / "catalog.toml").write_text(_table(stray))
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.discover()
    assert str(err.value) == (f"""["{stray}"] in {folder / 'catalog.toml'}: an experiment of system 'slide' in """
                              "the catalog of 'toysys'; expected a name starting with 'toysys.', or the table "
                              "moved to impls/slide/catalog.toml")
    assert stray not in experiments._EXPERIMENTS
    assert all(Path(experiments.source_of(name)) != (folder / "catalog.toml").resolve()
               for name in experiments._EXPERIMENTS)


def test_an_experiment_declared_in_two_catalogs_names_both(tmp_path, registry):
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    for catalog in (first, second):
        catalog.write_text(_table("demo.twice"))
    experiments.declare_file(first)
    experiments.declare_file(first)             # the same file again: harmless
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.declare_file(second)
    assert str(err.value) == (f"""["demo.twice"] in {second}: 'demo.twice' is already declared in {first}; """
                              "expected one declaration of each experiment (remove one of the two)")
    lanes = ROOT / "impls" / "salus" / "catalog.toml"
    copy = tmp_path / "copy.toml"
    copy.write_text(lanes.read_text())                # identical to the real one: still refused
    with pytest.raises(experiments.ExperimentError, match=re.escape(f"is already declared in {lanes}")):
        experiments.declare_file(copy)


# -- 10. an artifact or a figure name two experiments claim ------------------------------------

def test_an_artifact_two_experiments_claim_names_both_and_blames_neither(tmp_path, registry):
    """The registry reads the systems alphabetically, so the table found later may be the
    published one: the message must not say which of the two is to change."""
    new, published = tmp_path / "a.toml", tmp_path / "b.toml"
    new.write_text(_table("demo.new").replace('artifact = "demo_new"', 'artifact = "demo_shared"'))
    published.write_text(_table("demo.old").replace('artifact = "demo_old"', 'artifact = "demo_shared"'))
    experiments.declare_file(new)
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.declare_file(published)
    assert str(err.value) == (f"artifact 'demo_shared' is declared by both demo.new ({new}) and demo.old "
                              f"({published}); an artifact name is published (the report and past results read "
                              "it): give the new experiment its own")
    assert "demo.old" not in experiments._EXPERIMENTS and experiments.source_of("demo.old") != str(published)


def test_an_artifact_of_a_real_experiment_names_its_catalog(tmp_path, registry):
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(_table("bandana.clash_probe").replace('"bandana_clash_probe"', '"slide_sweeps"'))
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.declare_file(catalog)
    assert str(err.value).startswith(f"artifact 'slide_sweeps' is declared by both bandana.clash_probe ({catalog}) "
                                     f"and slide.sweeps ({ROOT / 'impls' / 'slide' / 'catalog.toml'}); ")


def test_a_figure_two_experiments_declare_names_both(tmp_path, registry):
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    for catalog, name in ((first, "demo.one"), (second, "demo.two")):
        catalog.write_text(_table(name) + f'\n["{name}".figures.demo_fig]\ntitle = "{name}"\n')
    experiments.declare_file(first)
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.declare_file(second)
    assert str(err.value) == (f"figure 'demo_fig' is declared by both demo.one ({first}) and demo.two ({second}); "
                              "a figure name is published (the report files it under that name): give the new "
                              "figure its own")


@pytest.mark.parametrize("artifact", ["bandana toy/x", "../x", "x/../y", "Demo_Toy", "demo.toy", ""])
def test_an_artifact_name_that_is_no_plain_file_name_is_refused_in_one_line(tmp_path, registry, artifact):
    """The store files an artifact as <commit>/<artifact>.json and the report reads only that
    level: 'bandana toy/x' was accepted, stored in a sub-folder and reported "not measured"
    right after a successful run (the old code: declared without a word)."""
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(_table("demo.toy").replace('artifact = "demo_toy"', f'artifact = "{artifact}"'))
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.declare_file(catalog)
    message = str(err.value)
    assert message.startswith(f'["demo.toy"] in {catalog}: artifact {artifact!r} is no plain file name; expected '
                              "lowercase letters, digits and '_' only (e.g. '") and "\n" not in message
    assert "demo.toy" not in experiments._EXPERIMENTS


def test_every_artifact_of_the_suite_is_a_plain_name():
    names = {entry.artifact_for(device) for entry in experiments.discover().values() for device in entry.devices}
    assert names and all(experiments.ARTIFACT_NAME.fullmatch(name) for name in names), sorted(names)


# -- 11. an unquoted experiment table -----------------------------------------------------------

def test_an_unquoted_table_name_says_to_quote_it(tmp_path, registry):
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(_table("demo.toy").replace('["demo.toy"]', "[demo.toy]"))
    with pytest.raises(experiments.ExperimentError) as err:
        experiments.declare_file(catalog)
    assert str(err.value) == (f'[demo.toy] in {catalog} is read as a table "demo" holding a table "toy": write '
                              """["demo.toy"] (quoted: an experiment's name has a dot)""")


# -- 12. a sizes or run reference that names nothing ----------------------------------------------

@pytest.mark.parametrize("fields, problem", [
    ({"sizes": "salus_lanez"}, "no profile table [salus_lanez.smoke] in "),
    ({"run": "impls.salus.catalog:toys"}, """run = 'impls.salus.catalog:toys' of ["toysys.bad"] in """),
    ({"run": "impls.salus.catalgo:lanes"}, "names no module (no module named 'impls.salus.catalgo')"),
    ({"printer": "impls.salus.catalog:show"}, "printer = 'impls.salus.catalog:show' of"),
])
def test_a_wrong_reference_is_named_and_listed_as_broken_without_importing(fields, problem, system_root, capsys,
                                                                         monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    folder = system_root / "toysys"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    printer = {"printer": f'"{fields["printer"]}"'} if "printer" in fields else {}
    (folder / "catalog.toml").write_text(_table("toysys.bad", sizes=fields.get("sizes", "salus_lanes"),
                                                run=fields.get("run", LANES), **printer))
    experiments.discover()
    found = experiments.entry_problem("toysys.bad")
    assert found is not None and problem in found and "\n" not in found
    assert experiments.entry_problem("salus.lanes") is None
    assert commands.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("toysys.bad") + 1
    block = lines[start:next((i for i in range(start, len(lines)) if not lines[i].startswith(" ")), len(lines))]
    assert block[3:] == [f"    broken, runs nowhere: {found}"]      # after summary, reproduces, figures


def test_the_reference_check_imports_nothing(system_root):
    folder = system_root / "toysys"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "heavy.py").write_text("raise RuntimeError('imported')\n\n\ndef run(sizes, *, device, progress):\n"
                                     "    return {}\n")
    (folder / "catalog.toml").write_text(_table("toysys.good", run="impls.toysys.heavy:run")
                                         + _table("toysys.typo", run="impls.toysys.heavy:rnu"))
    experiments.discover()
    assert experiments.reference_problem("toysys.good") is None
    assert "names no function (module impls.toysys.heavy has no function 'rnu')" in experiments.reference_problem(
        "toysys.typo")
    assert "impls.toysys.heavy" not in sys.modules


def test_a_static_reference_check_agrees_with_the_import(tmp_path, registry):
    _assert_static_agrees(tmp_path / "catalog.toml", "demo.ref", ["impls.salus.catalog:funcc",
                                                                "impls.salus.catalgo:lanes", "impls.salus.catalog",
                                                                "nosuchpackage.mod:f", LANES])


def _assert_static_agrees(catalog, prefix: str, runs: list[str]) -> None:
    """For each ``run`` reference, declared as experiment ``<prefix><i>`` in ``catalog``: the
    static check's problem is the import's (None where the import finds the function)."""
    for i, run in enumerate(runs):
        name = f"{prefix}{i}"
        catalog.write_text(_table(name, run=run))
        experiments.declare_file(catalog)
        try:
            experiments.get(name).function()
            imported = None
        except experiments.ExperimentError as err:
            imported = str(err)
        assert experiments.reference_problem(name) == imported, run


def test_the_static_check_finds_what_only_runs_at_module_level_or_lives_in_a_plain_module(tmp_path, registry,
                                                                                         monkeypatch):
    # a function defined in a try/except at the top of its module, and an attribute of a plain
    # module (os.path), are found by the import; the static check must not call them broken
    package = tmp_path / "refprobe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "fallback.py").write_text("try:\n    import no_such_module_here\nexcept ImportError:\n"
                                         "    def run(sizes, **kw):\n        return {}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _assert_static_agrees(tmp_path / "catalog.toml", "demo.static",
                          ["refprobe.fallback:run", "os.path:join", "refprobe.fallback:walk"])


# -- 9. a declared figure nothing draws -------------------------------------------------------

def test_a_declared_figure_nothing_draws_says_where_its_drawing_is_looked_for(monkeypatch):
    specs, _ = figures.discover()
    slide = next(name for name, spec in specs.items() if spec.system == "slide")
    monkeypatch.delitem(figures._DRAW, "salus_jct_cdf")
    monkeypatch.delitem(figures._DRAW, slide)
    _, errors = figures.discover()
    assert errors["salus_jct_cdf"] == ("figure 'salus_jct_cdf' is declared by salus.policies but nothing draws it "
                                       "(is its module imported in impls/salus/figures/__init__.py?)")
    assert errors[slide].endswith(f"(is it drawn with @figure({slide!r}) in impls/slide/figures.py?)")


# -- 6, 7. the README says what the code does ---------------------------------------------------

def test_readme_gives_the_nvm_targets_default_as_the_code_does(monkeypatch, tmp_path):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path))
    assert paths.default_nvm_target_path() == tmp_path / "nvm-target.bin"
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Where the NVM experiments read", 1)[1].split("```", 1)[0]
    assert "`$DLSYSBENCH_CACHE`" in section and "`datasets/cache/nvm-target.bin`" not in section


def test_readme_names_the_parts_gpu_check_accepts(capsys):
    from impls.salus import gpu_check

    with pytest.raises(SystemExit):
        gpu_check.main(["--part", "nope"])
    listed = re.search(r"choose from ([^)]*)\)", capsys.readouterr().err).group(1)
    choices = [choice.strip(" '") for choice in listed.split(",")]
    row = next(line for line in (ROOT / "README.md").read_text().splitlines()
               if line.startswith("| `python -m impls.salus.gpu_check"))
    named = re.findall(r"`--part (\w+)`", row)
    assert choices == ["all", "switching", "lanes"] and named == choices[1:]
    assert "policies, and the lanes part" not in row
