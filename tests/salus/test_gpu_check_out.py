"""gpu_check's --out file says what this run measured: without CUDA, nothing, and why."""
from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize("part", ["all", "lanes"])
def test_without_cuda_the_out_file_records_nothing_measured(tmp_path, monkeypatch, capsys, part):
    from impls.harness import capabilities
    from impls.salus import gpu_check

    monkeypatch.setattr(capabilities, "missing_reason", lambda what: "needs CUDA: no device here")
    out = tmp_path / "gpu.json"
    out.write_text(json.dumps({"switching": {"stale": True}, "elapsed_s": 99.0}))   # an earlier GPU run's file
    assert gpu_check.main(["--out", str(out), "--part", part]) == 3
    assert json.loads(out.read_text()) == {"part": part, "skipped": "needs CUDA: no device here"}
    captured = capsys.readouterr()
    assert captured.err.strip() == "not measured: needs CUDA: no device here" and captured.out == ""


def test_without_cuda_and_no_out_nothing_is_written(tmp_path, monkeypatch, capsys):
    from impls.harness import capabilities
    from impls.salus import gpu_check

    monkeypatch.setattr(capabilities, "missing_reason", lambda what: "needs CUDA: no device here")
    monkeypatch.chdir(tmp_path)
    assert gpu_check.main([]) == 3
    assert list(tmp_path.iterdir()) == [] and capsys.readouterr().out == ""
