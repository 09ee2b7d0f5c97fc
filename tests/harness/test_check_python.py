"""scripts/check_python.py: make names a Python, or a .venv, that cannot run the suite before
anything installs, and says which PYTHON= to use."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_python.py"
spec = importlib.util.spec_from_file_location("check_python", SCRIPT)
check_python = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_python)


@pytest.mark.parametrize("version, ok", [((3, 11, 0), True), ((3, 12, 9), True), ((3, 13, 0), False),
                                         ((3, 10, 13), False), ((2, 7, 18), False), ((4, 0, 0), False)])
def test_the_projects_range(version, ok):
    assert check_python.satisfies(version, check_python.requires_python(ROOT / "pyproject.toml")) is ok


def test_every_clause_kind():
    assert check_python.satisfies((3, 12, 1), ">=3.12.1, !=3.12.2, <=3.12, ~=3.12")
    assert not check_python.satisfies((3, 12, 1), ">3.12.1")
    assert not check_python.satisfies((3, 11, 0), "~=3.12")
    assert check_python.satisfies((3, 11, 4), "==3.11")
    with pytest.raises(ValueError, match="cannot read"):
        check_python.satisfies((3, 11, 0), ">=3.11; python_version")


def test_a_wrong_python_is_named_with_the_fix(monkeypatch):
    monkeypatch.setattr(check_python, "_on_path", lambda name: name == "python3.11")
    said = check_python.problem(">=3.11,<3.13", version=(3, 13, 0))
    assert "is Python 3.13.0; dlsysbench needs Python >=3.11,<3.13: run make again with PYTHON=python3.11" in said
    said = check_python.problem(">=3.11,<3.13", venv=".venv", version=(3, 13, 0), has_pip=True)
    assert said == (".venv was made with Python 3.13.0; dlsysbench needs Python >=3.11,<3.13: remove it "
                    "(rm -rf .venv) and run make again with PYTHON=python3.11")


def test_a_venv_without_pip_is_named():
    said = check_python.problem(">=3.11,<3.13", venv=".venv", version=(3, 11, 7), has_pip=False)
    assert "has no pip" in said and "python3.11-venv" in said and "rm -rf .venv" in said
    assert check_python.problem(">=3.11,<3.13", venv=".venv", version=(3, 11, 7), has_pip=True) is None


def test_the_running_interpreter_passes_and_a_range_it_misses_exits_2(tmp_path):
    assert subprocess.run([sys.executable, str(SCRIPT), "--venv", ".venv"]).returncode == 0
    (tmp_path / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.99"\n')
    done = subprocess.run([sys.executable, str(SCRIPT), "--pyproject", str(tmp_path / "pyproject.toml")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "dlsysbench needs Python >=3.99" in done.stderr


def _old_pythons():
    found = sorted(Path.home().glob(".pyenv/versions/[23].[0-9]*/bin/python"))
    return [p for p in found if p.parent.parent.name.split(".")[:2] in (["2", "7"], ["3", "6"], ["3", "10"])]


@pytest.mark.skipif(not _old_pythons(), reason="no Python 2.7, 3.6 or 3.10 here")
@pytest.mark.parametrize("old", _old_pythons() or [None])
def test_an_old_python_gets_the_message_not_a_syntax_error(old):
    done = subprocess.run([str(old), str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 2 and "dlsysbench needs Python" in done.stderr, done.stderr


def test_a_clause_it_cannot_read_is_left_to_pip(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.11,!=3.12.*"\n')
    done = subprocess.run([sys.executable, str(SCRIPT), "--pyproject", str(tmp_path / "pyproject.toml")],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "cannot read requires-python clause '!=3.12.*'" in done.stderr


def test_make_names_a_venv_whose_python_link_is_gone(tmp_path):
    """A .venv made by a Python since removed (a pyenv or system upgrade): its bin/python links
    to nothing, and `python -m venv` over it failed with 'No such file or directory'."""
    for name in ("Makefile", "pyproject.toml"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "check_python.py").write_bytes(SCRIPT.read_bytes())
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to("/nonexistent/python3.12")
    said = ("make: .venv/bin/python links to /nonexistent/python3.12, which is gone (its Python was removed or "
            "moved): remove .venv (rm -rf .venv) and run make again")
    done = subprocess.run(["make", "setup", f"PYTHON={sys.executable}"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    (tmp_path / ".venv" / ".dlsysbench-installed").touch()      # set up before its Python went
    done = subprocess.run(["make", "test"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and said in done.stderr, done.stderr
