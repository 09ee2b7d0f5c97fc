"""What git says of the checkout's code: nothing when there is no git, nor when git's
repository is an enclosing one (a tarball unpacked inside another checkout), and a run then
records that its code is unknown instead of reading like a clean run; edited dataset recipes
count as uncommitted edits, as the code does."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from impls.harness import artifacts, commands, experiments, paths

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="no git here")


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_COMMITTER_DATE": "2026-03-01T12:00:00"}
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, env=env,
                          capture_output=True, text=True, check=True).stdout.strip()


def _checkout(folder: Path) -> Path:
    """A dlsysbench-shaped tree: code, a benchmark and a dataset recipe."""
    for name, text in (("asv.conf.json", "{}"), ("impls/engine.py", "x = 1\n"), ("benchmarks/bench_x.py", ""),
                       ("datasets/toy.toml", "rows = 10\n"), ("datasets/README.md", "")):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@needs_git
def test_a_tarball_unpacked_inside_another_repository_has_no_git(tmp_path, monkeypatch):
    """The enclosing repository's commit is not the tarball's code, and all the tarball's files
    are not its uncommitted edits."""
    outer = tmp_path / "outer"
    outer.mkdir()
    _git(outer, "init", "-q")
    (outer / "README").write_text("")
    _git(outer, "add", ".")
    _git(outer, "commit", "-q", "-m", "outer", "--date=2026-03-01T12:00:00")
    inner = _checkout(outer / "dlsysbench")
    monkeypatch.delenv("ASV_COMMIT", raising=False)
    monkeypatch.setattr(paths, "repo_root", lambda: inner)
    assert paths.git_commit() == "unknown"                     # the old code: the outer repository's HEAD
    assert paths.uncommitted_code() is None                    # the old code: every file of the tarball
    assert paths.resolve_commit("HEAD") is None
    assert paths.commit_ranks([_git(outer, "rev-parse", "HEAD")]) is None
    assert str(outer.resolve()) in paths.git_absent_reason()
    monkeypatch.setattr(paths, "repo_root", lambda: outer)    # the outer checkout itself still has git
    assert paths.git_absent_reason() is None and paths.git_commit() == _git(outer, "rev-parse", "HEAD")


@needs_git
def test_without_git_the_code_is_unknown_not_clean(tmp_path, monkeypatch):
    bare = _checkout(tmp_path / "tarball")
    # a tmp folder that some enclosing repository holds would be the case above: stop git's search here
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setattr(paths, "repo_root", lambda: bare)
    assert paths.uncommitted_code() is None                    # the old code: [], a clean run
    assert "holds no git repository" in paths.git_absent_reason()
    assert "not a git checkout" in paths.date_order_note(["a" * 40, "b" * 40])


def test_a_run_without_git_records_that_its_code_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path))
    monkeypatch.setattr(paths, "uncommitted_code", lambda: None)
    record = json.loads(artifacts.save_artifact("no_git", {"x": 1}, experiment="t.t", synthetic=True).read_text())
    assert "uncommitted" in record and record["uncommitted"] is None and record["git"] == "absent"
    run = commands._with_run({"x": 1}, experiments.get("salus.lanes"), "smoke", "cpu")["run"]
    assert run["uncommitted"] is None and run["git"] == "absent"
    monkeypatch.setattr(paths, "uncommitted_code", lambda: [])   # clean: neither key, as before
    clean = json.loads(artifacts.save_artifact("clean", {"x": 1}, experiment="t.t", synthetic=True).read_text())
    assert "uncommitted" not in clean and "git" not in clean
    assert not {"uncommitted", "git"} & set(commands._with_run({"x": 1}, experiments.get("salus.lanes"),
                                                              "smoke", "cpu")["run"])


@needs_git
def test_edited_dataset_recipes_are_uncommitted_edits_but_the_cache_is_not(tmp_path, monkeypatch):
    repo = _checkout(tmp_path / "repo")
    (repo / ".gitignore").write_text("datasets/cache/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "start", "--date=2026-03-01T12:00:00")
    (repo / "datasets" / "toy.toml").write_text("rows = 20\n")         # sets the data measured
    (repo / "datasets" / "new.toml").write_text("rows = 5\n")
    (repo / "datasets" / "README.md").write_text("notes\n")            # no recipe
    (repo / "datasets" / "cache").mkdir()
    (repo / "datasets" / "cache" / "made.toml").write_text("")
    monkeypatch.setattr(paths, "repo_root", lambda: repo)
    monkeypatch.setattr(paths, "measured_checkout", lambda: None)
    assert paths.uncommitted_code() == ["datasets/new.toml", "datasets/toy.toml"]   # the old code: []
    # `asv run A..B`: the recipes, like the code, come from asv's clean checkout of the commit
    monkeypatch.setattr(paths, "measured_checkout", lambda: tmp_path / "asv-project")
    assert paths.uncommitted_code() == []


@needs_git
def test_the_suite_tracked_inside_a_larger_repository_has_that_repositorys_git(tmp_path, monkeypatch):
    """A monorepo: the enclosing repository tracks the suite, so its commits are the suite's and
    an edit is listed relative to the suite's own root."""
    outer = tmp_path / "mono"
    outer.mkdir()
    _git(outer, "init", "-q")
    inner = _checkout(outer / "tools" / "dlsysbench")
    _git(outer, "add", ".")
    _git(outer, "commit", "-q", "-m", "mono", "--date=2026-03-01T12:00:00")
    monkeypatch.delenv("ASV_COMMIT", raising=False)
    monkeypatch.setattr(paths, "repo_root", lambda: inner)
    assert paths.git_absent_reason() is None
    assert paths.git_commit() == _git(outer, "rev-parse", "HEAD")
    assert paths.uncommitted_code() == []
    (inner / "impls" / "engine.py").write_text("x = 2\n")
    assert paths.uncommitted_code() == ["impls/engine.py"]


@needs_git
def test_git_dir_in_the_environment_does_not_lend_another_repositorys_commit(tmp_path, monkeypatch):
    """A hook or script that exported GIT_DIR for another repository: the checkout's own commit
    and edits are still what a run records."""
    own, other = _checkout(tmp_path / "own"), tmp_path / "other"
    other.mkdir()
    for repo in (own, other):
        _git(repo, "init", "-q")
        (repo / "marker").write_text(repo.name)
        _git(repo, "add", ".")
        _git(repo, "commit", "-q", "-m", repo.name)
    mine, theirs = _git(own, "rev-parse", "HEAD"), _git(other, "rev-parse", "HEAD")
    monkeypatch.delenv("ASV_COMMIT", raising=False)
    monkeypatch.setattr(paths, "repo_root", lambda: own)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert paths.git_commit() == mine != theirs
    assert paths.uncommitted_code() == [] and paths.git_absent_reason() is None
