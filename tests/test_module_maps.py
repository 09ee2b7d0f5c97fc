"""Each system's README names every module of the system in its module map, and every
experiment the registry runs in its experiment table.

The module map is the table under the header ``| module | one idea |`` in
``impls/<system>/README.md``. A row's first cell names modules as backquoted paths relative
to ``impls/<system>/`` (```data/dense_ids.py```); a bare file name in that cell
(``(+ `cache_kernels.py`)``, ```experiments/lanes.py`, `hyperparam.py```) is in the folder of
the cell's first path. A module (a ``.py`` file under ``impls/<system>/`` other than
``__init__.py``) named nowhere there is a module a newcomer cannot place; a path named there
that does not exist is a map gone stale. Paths that leave the system (``../../scripts/...``)
are not checked.

The experiment table is the table whose header's first cell starts with ``experiment``: its
rows' first cells name the experiments (```bandana.fio```).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from impls.harness import experiments

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = experiments.systems()      # every impls/<system>/ with a catalog: a new one is checked too
MAP_HEADER = "| module | one idea |"


def table_rows(readme: str, header: str) -> list[list[str]]:
    """The cells of each row of the first Markdown table in ``readme`` whose header line
    starts with ``header`` (the header and its ``|---|`` line left out); [] when there is none."""
    lines = readme.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(header)), None)
    if start is None:
        return []
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def mapped_modules(readme: str) -> set[str]:
    """The ``.py`` paths, relative to the system's folder, that the module map of ``readme``
    names in its first column (see the module docstring for the rule)."""
    named = set()
    for row in table_rows(readme, MAP_HEADER):
        tokens = re.findall(r"`([^`]+)`", row[0])
        if not tokens:
            continue
        folder = tokens[0].rpartition("/")[0]
        if folder.startswith(".."):
            continue
        for token in tokens:
            if not token.endswith(".py"):
                continue
            named.add(token if "/" in token else f"{folder}/{token}".lstrip("/"))
    return named


def system_modules(system: str) -> set[str]:
    """Every module of ``impls/<system>/`` as a path relative to it, ``__init__.py`` left out."""
    base = ROOT / "impls" / system
    return {path.relative_to(base).as_posix() for path in base.rglob("*.py")
            if path.name != "__init__.py" and "__pycache__" not in path.parts}


def map_problems(system: str, readme: str) -> list[str]:
    """One line per module of ``system`` its map leaves out and per path it names that is no module."""
    named, present = mapped_modules(readme), system_modules(system)
    where = f"impls/{system}/README.md"
    problems = [f"{where}: the module map (the '{MAP_HEADER}' table) names no row for {path}; add one saying "
                f"what it is, or '(+ `{path.rpartition('/')[2]}`)' in its idea's row"
                for path in sorted(present - named)]
    problems += [f"{where}: the module map names {path}, which is no module of impls/{system}/ (renamed or removed?)"
                 for path in sorted(named - present)]
    return problems


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_module_is_in_its_system_s_module_map(system):
    path = ROOT / "impls" / system / "README.md"
    assert path.is_file(), (f"impls/{system}/README.md is missing: a system's README holds its experiment table "
                            f"(the table whose header starts '| experiment') and its module map ('{MAP_HEADER}')")
    readme = path.read_text()
    assert table_rows(readme, MAP_HEADER), f"impls/{system}/README.md has no '{MAP_HEADER}' table"
    problems = map_problems(system, readme)
    assert not problems, "\n".join(problems)


def test_a_forgotten_module_and_a_stale_row_are_named():
    """The check itself, on edits of salus's live README: it holds only while that README has
    no gap of its own (fix the other module-map failures first)."""
    readme = (ROOT / "impls" / "salus" / "README.md").read_text()
    assert not map_problems("salus", readme), "fix impls/salus/README.md's own module-map gaps first"
    row = next(line for line in readme.splitlines() if line.startswith("| `experiments/names.py`"))
    assert map_problems("salus", readme.replace(row + "\n", "")) == [
        "impls/salus/README.md: the module map (the '| module | one idea |' table) names no row for "
        "experiments/names.py; add one saying what it is, or '(+ `names.py`)' in its idea's row"]
    kernels = readme.replace("| `core/simulator.py` (+ `simulator_kernels.py`) |", "| `core/simulator.py` |")
    assert [p.split(" for ")[-1].split(";")[0] for p in map_problems("salus", kernels)] == [
        "core/simulator_kernels.py"]
    stale = readme.replace("| `experiments/names.py` |", "| `experiments/name.py` |")
    assert len(map_problems("salus", stale)) == 2
    assert "names experiments/name.py, which is no module" in map_problems("salus", stale)[1]


def test_bare_names_are_read_in_the_folder_of_the_cell_s_first_path():
    readme = ("| module | one idea |\n|---|---|\n| `core/a.py` (+ `a_kernels.py`) | x |\n"
              "| `top.py` (+ `data/b.py`) | y |\n| **`figures/`** | **z** |\n"
              "| `../../scripts/c.py` (+ `d.py`) | w |\n")
    assert mapped_modules(readme) == {"core/a.py", "core/a_kernels.py", "top.py", "data/b.py"}


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_registered_experiment_is_in_its_system_s_experiment_table(system):
    readme = (ROOT / "impls" / system / "README.md").read_text()
    rows = table_rows(readme, "| experiment")
    listed = [re.match(r"`([^`]+)`", row[0]).group(1) for row in rows if row[0].startswith("`")]
    registered = sorted(name for name, entry in experiments.discover().items() if entry.system == system)
    assert sorted(listed) == registered, (
        f"impls/{system}/README.md's experiment table (the table whose header starts '| experiment') lists "
        f"{sorted(listed)}; the registry (impls/{system}/catalog.toml) has {registered}")
