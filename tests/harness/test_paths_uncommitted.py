"""paths.uncommitted_code: documentation edits leave a run's code clean; code and configuration
edits do not."""
from __future__ import annotations

from impls.harness import paths
from test_git_absent import _checkout, _git, needs_git


@needs_git
def test_edited_documentation_is_not_uncommitted_code(tmp_path, monkeypatch):
    repo = _checkout(tmp_path / "repo")
    for name in ("impls/README.md", "impls/bandana/notes.rst", "benchmarks/README.md"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("docs\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "start", "--date=2026-03-01T12:00:00")
    monkeypatch.setattr(paths, "repo_root", lambda: repo)
    monkeypatch.setattr(paths, "measured_checkout", lambda: None)
    (repo / "impls" / "README.md").write_text("edited\n")
    (repo / "impls" / "bandana" / "notes.rst").write_text("edited\n")
    (repo / "impls" / "bandana" / "NEW.md").write_text("new\n")
    (repo / "benchmarks" / "README.md").write_text("edited\n")
    assert paths.uncommitted_code() == []          # the old code: all four, so the run read as edited code
    (repo / "impls" / "engine.py").write_text("x = 2\n")
    (repo / "impls" / "catalog.toml").write_text("[x]\n")
    (repo / "benchmarks" / "versions.json").write_text("{}\n")
    (repo / "impls" / "bandana" / "words.txt").write_text("data a run may read\n")
    assert paths.uncommitted_code() == ["benchmarks/versions.json", "impls/bandana/words.txt",
                                        "impls/catalog.toml", "impls/engine.py"]
