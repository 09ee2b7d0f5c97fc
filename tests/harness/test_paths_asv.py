"""Under ``asv run A..B`` each commit is measured with its own code, installed from asv's
checkout of it; its data recipes (``datasets/*.toml``) must come from that checkout too, not
from the working tree, while the data cache stays the working tree's."""
from __future__ import annotations

import subprocess

import pytest

from impls.harness import paths


def _checkout(root):
    """A git checkout at ``root`` that looks like dlsysbench's; returns its HEAD."""
    (root / "impls").mkdir(parents=True)
    (root / "datasets").mkdir()
    (root / "asv.conf.json").write_text("{}")
    (root / "datasets" / "old-set.toml").write_text(
        'name = "old-set"\n[synthetic]\ngenerator = "impls.bandana.data.traces:generate_trace"\nseed = 1\n')
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-q", "-m", "old"], check=True)
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def asv_env(tmp_path, monkeypatch):
    head = _checkout(tmp_path / "env" / "project")
    monkeypatch.setenv("ASV_ENV_DIR", str(tmp_path / "env"))
    monkeypatch.setenv("ASV_ENV_TYPE", "virtualenv")
    monkeypatch.setenv("ASV_COMMIT", head)
    monkeypatch.delenv("DLSYSBENCH_CACHE", raising=False)
    paths.measured_checkout.cache_clear()
    yield tmp_path / "env" / "project"
    paths.measured_checkout.cache_clear()


def test_a_commit_asv_checked_out_reads_its_own_manifests_and_the_shared_cache(asv_env):
    assert paths.datasets_dir() == asv_env.resolve() / "datasets"
    assert paths.cache_dir() == paths.repo_root() / "datasets" / "cache"
    from impls.harness import registry

    assert list(registry.manifests()) == ["old-set"]      # that commit's recipes, not the working tree's


def test_a_checkout_at_another_commit_is_not_used(asv_env, monkeypatch):
    monkeypatch.setenv("ASV_COMMIT", "0" * 40)
    assert paths.datasets_dir() == paths.repo_root() / "datasets"


def test_python_same_reads_the_working_tree(asv_env, monkeypatch):
    monkeypatch.setenv("ASV_ENV_TYPE", "existing")
    assert paths.datasets_dir() == paths.repo_root() / "datasets"


def test_a_commit_asv_checked_out_is_not_labelled_with_the_working_trees_engine_edits(asv_env, monkeypatch):
    assert paths.measured_checkout() is not None        # found (and cached) before git is faked below
    calls = []

    def status(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, stdout="", stderr="")

    monkeypatch.setattr(paths.subprocess, "run", status)
    paths.uncommitted_code()
    assert calls and calls[-1][-1] == "benchmarks" and "impls" not in calls[-1]
