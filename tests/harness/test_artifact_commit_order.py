"""The newest artifact of a name is the latest commit's in git's order, not the last one made: a
bisect step (``python -m impls run ... --save-artifact`` at an ancestor with no asv results)
writes an older commit's record after the newer commit's own, and it must not displace it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from impls.harness import artifacts as artifact_store
from impls.harness import paths
from impls.harness.report.build import other_commit_artifacts_note

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git here")
MACHINE = "box-smoke"


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture()
def two_commits(tmp_path, monkeypatch) -> tuple[str, str]:
    """(older, newer): a repository older -> newer, which paths reads as the checkout's."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    found = []
    for name in ("older", "newer"):
        _git(repo, "commit", "-q", "--allow-empty", "-m", name)
        found.append(_git(repo, "rev-parse", "HEAD"))
    monkeypatch.setattr(paths, "repo_root", lambda: repo)
    return found[0], found[1]


def _save(root: Path, commit: str, created: str, value: float) -> None:
    record = {"schema": 1, "name": "toy", "experiment": "toy", "synthetic": True, "profile": "smoke",
              "created": created, "machine": MACHINE, "commit": commit, "data": {"value": value}}
    path = root / MACHINE / commit / "toy.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))


def test_an_ancestors_later_record_does_not_displace_the_newer_commits_own(two_commits, tmp_path):
    older, newer = two_commits
    root = tmp_path / "artifacts"
    _save(root, newer, "2026-12-07T01:00:00+00:00", 1.0)      # make bench at HEAD
    _save(root, older, "2026-12-07T02:00:00+00:00", 2.0)      # then a bisect step's --save-artifact
    dates = {newer: pd.Timestamp("2026-12-06T00:00:00", tz="UTC").to_pydatetime()}   # only HEAD has results
    latest = artifact_store.load_latest(MACHINE, root, commit_dates=dates)
    assert latest["toy"]["commit"] == newer, latest["toy"]
    assert artifact_store.load_latest(MACHINE, root)["toy"]["commit"] == newer


def test_an_older_commits_artifact_is_named_as_such_not_as_an_interrupted_run(two_commits):
    older, newer = two_commits
    commits = pd.DataFrame({"commit": [newer], "date": [pd.Timestamp("2026-12-06", tz="UTC")]})
    note = other_commit_artifacts_note({"toy": {"name": "toy", "commit": older}}, commits, {}, [])
    assert f"from commit {older[:8]}, which has no asv results: an older commit than {newer[:8]}" in note, note
    assert "--save-artifact" in note and "interrupted or partial run (or" not in note, note
    later = "f" * 40                    # a commit git does not know: what it is cannot be told
    note = other_commit_artifacts_note({"toy": {"name": "toy", "commit": later}}, commits, {}, [])
    assert "an interrupted or partial run (or artifacts saved without asv)" in note, note


def test_an_older_cuda_artifact_names_the_figures_drawn_from_it(two_commits):
    from impls.harness.figures import FigureSpec

    older, newer = two_commits
    commits = pd.DataFrame({"commit": [newer], "date": [pd.Timestamp("2026-12-06", tz="UTC")]})
    specs = {"toy_fig": FigureSpec("toy_fig", "toy", "Toy", "slide", "Fig. 1", (), print)}
    note = other_commit_artifacts_note({"toy_cuda": {"name": "toy_cuda", "commit": older}}, commits, specs, [])
    assert "'toy_cuda' (figure(s) toy_fig_cuda)" in note, note
