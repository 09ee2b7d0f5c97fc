"""Test isolation: smoke profile, and caches/artifacts under pytest's tmp directory."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def isolated_suite_dirs(tmp_path, monkeypatch):
    """Point the dataset cache and artifact store at a fresh tmp dir for every test."""
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path / "artifacts"))
    yield tmp_path
