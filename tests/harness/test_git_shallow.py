"""A shallow clone (``git clone --depth N``, as CI makes) orders the commits it has by git's
history, not by their dates: a rebase leaves a child with an older author date than its
parent, and only git's order tells which came first. Commits older than the clone's history
come before every commit it has, ordered among themselves by date, and that is said."""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from compare_fixtures import MACHINE, RATE, base_values, write_benchmarks_json, write_run
from impls.harness import paths
from impls.harness.report import runs

ROOT_DIR = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git here")


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, env=env,
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture()
def history(tmp_path) -> dict:
    """A repository R -> P -> Q where Q, rebased onto P, keeps an author date before P's; its
    full clone and its clones of depth 1 (Q only) and 2 (P and Q)."""
    repo = tmp_path / "hist"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    found = {}
    for name, date in (("R", "2026-01-01T12:00:00"), ("P", "2026-03-10T12:00:00"), ("Q", "2026-03-01T12:00:00")):
        _git(repo, "commit", "-q", "--allow-empty", "-m", name, f"--date={date}", date=date)
        found[name] = _git(repo, "rev-parse", "HEAD")
    for label, depth in (("full", None), ("depth1", 1), ("depth2", 2)):
        target = tmp_path / label
        subprocess.run(["git", "clone", "-q", *(["--depth", str(depth)] if depth else []), f"file://{repo}",
                        str(target)], check=True, capture_output=True)
        found[label] = target
    return found


def _results(tmp_path: Path, history: dict) -> Path:
    """Runs of P (rate 1000, the later date) and of its child Q (rate 700: 30% worse)."""
    results = tmp_path / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, history["P"], 100, base_values(), date_s=1_773_144_000)
    write_run(results / MACHINE, history["Q"], 200, base_values(rate=700.0), date_s=1_772_366_400)
    return results


def test_a_shallow_clone_ranks_the_commits_it_has_in_gits_order(history, monkeypatch):
    p, q, r = history["P"], history["Q"], history["R"]
    monkeypatch.setattr(paths, "repo_root", lambda: history["depth2"])
    assert paths.is_shallow_clone()
    ranks = paths.commit_ranks([q, p])
    assert ranks is not None and ranks[p] < ranks[q]           # the old code: None, so dates decided
    assert paths.commit_places([q, p, r]) == {r: -1, p: ranks[p], q: ranks[q]}   # R: older than its history
    assert "1 of the 3 commit(s)" in paths.date_order_note([q, p, r])
    assert paths.date_order_note([q, p]) is None               # git places both


def test_head_of_a_depth_one_clone_comes_after_its_ancestors_whatever_their_dates(history, monkeypatch):
    p, q = history["P"], history["Q"]
    monkeypatch.setattr(paths, "repo_root", lambda: history["depth1"])
    places = paths.commit_places([p, q])
    assert places[p] < places[q]
    note = paths.date_order_note([p, q])
    assert "shallow clone" in note and p[:8] in note and q[:8] not in note
    monkeypatch.setattr(paths, "repo_root", lambda: history["full"])
    assert paths.date_order_note([p, q, "f" * 40]) is None     # a full clone: as before, nothing said


def test_a_shallow_clone_does_not_call_a_commit_it_lacks_older(history, monkeypatch):
    """A commit outside a depth-1 clone may be older than it or on another branch: the note
    says it is not in the clone's history, not that it is older."""
    monkeypatch.setattr(paths, "repo_root", lambda: history["depth1"])
    note = paths.date_order_note([history["P"], history["Q"]])
    assert "not in its history (older than it, or on a branch it did not fetch)" in note
    assert "older than its history" not in note


def test_the_stored_runs_follow_git_in_a_shallow_clone(history, tmp_path, monkeypatch):
    results = _results(tmp_path, history)
    for clone in ("full", "depth1", "depth2"):
        monkeypatch.setattr(paths, "repo_root", lambda: history[clone])
        assert [r.commit for r in runs.stored_runs(results, MACHINE)] == [history["P"], history["Q"]], clone


@pytest.mark.parametrize("clone", ["full", "depth1", "depth2"])
def test_compare_reports_the_regression_in_every_clone(clone, history, tmp_path, monkeypatch, capsys):
    """The probe's case: the full clone said REGRESSION 1000 -> 700, the shallow ones an
    IMPROVEMENT 700 -> 1000 (and depth 2 told the user to swap arguments never given)."""
    results = _results(tmp_path, history)
    for folder in ("benchmarks", "datasets", "impls"):    # what reading the declared directions needs
        (history[clone] / folder).symlink_to(ROOT_DIR / folder)
    # cache_clear: importing the benchmarks names their checkout (paths.set_benchmarks_root)
    monkeypatch.setattr(paths, "repo_root", functools.cache(lambda: history[clone]))
    spec = importlib.util.spec_from_file_location("compare_script", ROOT_DIR / "scripts" / "compare.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    code = script.main(["--results", str(results), "--machine", MACHINE, "--default-threshold=5%"])
    out = capsys.readouterr()
    assert code == 1, out.out + out.err
    assert any(line.startswith("REGRESSION") and RATE in line for line in out.out.splitlines()), out.out
    assert "IMPROVEMENT" not in out.out and "swap --base and --head" not in out.out
    dated = [line for line in out.err.splitlines() if "shallow clone" in line]
    assert len(dated) == (1 if clone == "depth1" else 0), out.err


def test_the_report_of_a_shallow_clone_says_its_order_is_partly_by_date(history, tmp_path, monkeypatch):
    """Commits older than the clone's history are not rebased away: the report says which
    order it drew them in, not that they left git's history."""
    from impls.harness.report.build import build_report

    fixtures = ROOT_DIR / "tests" / "fixtures" / "report"
    results = _results(tmp_path, history)
    monkeypatch.setattr(paths, "repo_root", lambda: history["depth1"])
    notes = " ".join(build_report(MACHINE, results, tmp_path / "artifacts", fixtures / "claims.toml", {}).notes)
    assert "The history's order is partly by date: this checkout is a shallow clone" in notes, notes
    assert "rebased away" not in notes
    monkeypatch.setattr(paths, "repo_root", lambda: history["full"])
    notes = " ".join(build_report(MACHINE, results, tmp_path / "artifacts", fixtures / "claims.toml", {}).notes)
    assert "partly by date" not in notes and "rebased away" not in notes


def test_runs_from_another_clone_are_said_to_be_ordered_by_date_in_a_full_clone(history, tmp_path, monkeypatch,
                                                                                    capsys):
    """Git has neither commit (results copied in from a clone with other commits): the child
    Q, dated before its parent, reads first; compare and the report say the order is by
    dates, where they said nothing."""
    from impls.harness.report.build import build_report

    results = _results(tmp_path, history)
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    _git(other, "commit", "-q", "--allow-empty", "-m", "x")
    for folder in ("benchmarks", "datasets", "impls"):    # what reading the declared directions needs
        (other / folder).symlink_to(ROOT_DIR / folder)
    monkeypatch.setattr(paths, "repo_root", functools.cache(lambda: other))
    spec = importlib.util.spec_from_file_location("compare_script", ROOT_DIR / "scripts" / "compare.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    script.main(["--results", str(results), "--machine", MACHINE, "--default-threshold=5%"])
    err = capsys.readouterr().err
    assert "of the pair are not in this checkout's git history (results from another clone" in err, err
    fixtures = ROOT_DIR / "tests" / "fixtures" / "report"
    notes = " ".join(build_report(MACHINE, results, tmp_path / "artifacts", fixtures / "claims.toml", {}).notes)
    assert "None of the 2 commits with results is in this checkout's git history" in notes, notes
    monkeypatch.setattr(paths, "repo_root", lambda: history["full"])
    notes = " ".join(build_report(MACHINE, results, tmp_path / "artifacts", fixtures / "claims.toml", {}).notes)
    assert "None of the" not in notes


def _compare_script():
    spec = importlib.util.spec_from_file_location("compare_script", ROOT_DIR / "scripts" / "compare.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_a_default_pair_git_knows_only_half_of_is_refused(history, tmp_path, monkeypatch, capsys):
    """A newer run of a commit this full clone lacks (a CI clone's, a feature branch's) would
    sort before P whatever its date, reversing the pair: its halved rate would read as a 2x
    improvement with exit 0. compare refuses and asks for the pair by name."""
    lacking = "abcdef12" * 5
    results = tmp_path / "results"
    write_benchmarks_json(results)
    write_run(results / MACHINE, history["P"], 100, base_values(), date_s=1_773_144_000)
    write_run(results / MACHINE, lacking, 200, base_values(rate=500.0), date_s=1_773_244_000)
    for folder in ("benchmarks", "datasets", "impls"):    # what reading the declared directions needs
        (history["full"] / folder).symlink_to(ROOT_DIR / folder)
    monkeypatch.setattr(paths, "repo_root", functools.cache(lambda: history["full"]))
    assert not paths.is_shallow_clone()
    script = _compare_script()
    args = ["--results", str(results), "--machine", MACHINE, "--default-threshold=5%"]
    assert script.main(args) == 2
    err = capsys.readouterr().err
    assert f"commit {lacking[:8]} of the newest pair is not in this checkout's git history" in err, err
    assert "--base and --head" in err
    assert script.main([*args, "--base", history["P"][:8], "--head", lacking[:8]]) == 1   # named: the regression
    assert f"REGRESSION {RATE}" in capsys.readouterr().out
