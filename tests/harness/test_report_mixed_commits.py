"""A report whose artifacts are of other commits than its newest asv results (an interrupted
run left an artifact of a commit asv saved nothing for; an experiment not run again) says so
in one note, and its Environment names the newest results' commit.

tests/fixtures/report/asv_results holds asv results at OLD and NEW (NEW the newest);
artifacts are written per test into tmp_path.
"""
from __future__ import annotations

import json
from pathlib import Path

from matplotlib.figure import Figure

from impls.harness.figures import FigureSpec
from impls.harness.report.build import build_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"
RESULTS, CLAIMS = FIXTURES / "asv_results", FIXTURES / "claims.toml"
MACHINE = "toybox"
OLD, NEW = "02192a18b969f50b9d1123329e1aaf05f95e66d1", "854149dbb27c7199affb4e772fa341f30f2630b7"
UNRUN = "c" * 40          # a commit asv has no results of: the run was interrupted
CURVE = {"x": [1, 2, 3], "y": [0.1, 0.25, 0.32], "final_p_at_1": 0.32}
MIXED = "Artifacts of other commits than the newest asv results"


def _draw(data) -> Figure:
    figure = Figure(figsize=(3, 2))
    figure.add_subplot().plot(data["x"], data["y"])
    return figure


SPECS = {"toy_curve_figure": FigureSpec("toy_curve_figure", "toy_curve", "Toy curve", "slide", "Fig. 5", (), _draw),
         "toy_later_figure": FigureSpec("toy_later_figure", "toy_later", "Later", "bandana", "", (), _draw)}


def _record(name: str, commit: str, created: str, cuda: bool = False) -> dict:
    fingerprint = {"machine": MACHINE, "commit": commit, "profile": "smoke", "created": created,
                   "capabilities": {"cuda": {"name": "cuda", "available": cuda, "reason": "" if cuda else "no CUDA"}}}
    return {"schema": 1, "name": name, "experiment": "toy", "synthetic": True, "profile": "smoke",
            "created": created, "machine": MACHINE, "commit": commit, "fingerprint": fingerprint, "data": CURVE}


def _report(tmp_path: Path, *records: dict, results: Path = RESULTS):
    for rec in records:
        path = tmp_path / "artifacts" / MACHINE / rec["commit"] / f"{rec['name']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec))
    return build_report(MACHINE, results, tmp_path / "artifacts", CLAIMS, SPECS)


def _recorded(report) -> dict[str, str]:
    [table] = [t for t in report.environment if t.title == "Recorded"]
    return dict(table.rows)


def test_artifacts_of_other_commits_than_the_newest_results_are_named_in_one_note(tmp_path):
    """Old code: no note at all; the header spanned the results' commits while figures read
    an interrupted run's commit and an older one."""
    report = _report(tmp_path, _record("toy_curve", UNRUN, "2024-03-01T10:00:00+00:00"),
                     _record("toy_later", OLD, "2024-01-01T13:00:00+00:00"))
    [note] = [n for n in report.notes if n.startswith(MIXED)]
    assert f"({NEW[:8]})" in note
    assert (f"'toy_curve' (figure(s) toy_curve_figure) from commit {UNRUN[:8]}, which has no asv results: "
            "an interrupted or partial run") in note
    assert f"'toy_later' (figure(s) toy_later_figure) from commit {OLD[:8]}, older than the newest results" in note
    assert report.notes[0] == note


def test_the_environment_names_the_newest_results_commit_not_an_interrupted_runs(tmp_path):
    """The interrupted run's artifact (newer, of a commit without results) hides the newest
    results' copy; old code showed its commit and its fingerprint (CUDA here) in the Environment."""
    report = _report(tmp_path, _record("toy_curve", NEW, "2024-02-01T13:00:00+00:00"),
                     _record("toy_curve", UNRUN, "2024-03-01T10:00:00+00:00", cuda=True))
    recorded = _recorded(report)
    assert recorded["commit"] == NEW[:12]
    assert recorded["source"] == "artifact 'toy_curve' (2024-02-01T13:00:00+00:00)"
    [capabilities] = [t for t in report.environment if t.title == "Capabilities"]
    assert {row[0]: row[1] for row in capabilities.rows}["cuda"] == "no"
    [note] = [n for n in report.notes if n.startswith(MIXED)]
    assert "Environment" not in note     # its fingerprint is of NEW


def test_a_fingerprint_only_a_commit_without_results_has_is_named_as_such(tmp_path):
    """Old code showed the interrupted run's commit as the Environment's, saying nothing."""
    report = _report(tmp_path, _record("toy_curve", UNRUN, "2024-03-01T10:00:00+00:00"))
    recorded = _recorded(report)
    assert recorded["commit"] == NEW[:12]
    assert recorded["source"] == (f"artifact 'toy_curve' of commit {UNRUN[:8]} (2024-03-01T10:00:00+00:00), which has "
                                  "no asv results (an interrupted or partial run): no artifact of a commit with "
                                  "results records a fingerprint")
    [note] = [n for n in report.notes if n.startswith(MIXED)]
    assert "the Environment's fingerprint" in note


def test_a_fingerprint_of_an_older_commit_with_results_is_preferred_and_named(tmp_path):
    """Old code took the newest-made artifact's fingerprint, the interrupted run's."""
    report = _report(tmp_path, _record("toy_later", OLD, "2024-01-01T13:00:00+00:00"),
                     _record("toy_curve", UNRUN, "2024-03-01T10:00:00+00:00", cuda=True))
    recorded = _recorded(report)
    assert recorded["commit"] == NEW[:12]
    assert recorded["source"].startswith(f"artifact 'toy_later' of commit {OLD[:8]} (2024-01-01T13:00:00+00:00), "
                                         f"older than the newest results ({NEW[:8]})")


def test_one_commit_throughout_needs_no_note(tmp_path):
    report = _report(tmp_path, _record("toy_curve", NEW, "2024-02-01T13:00:00+00:00"),
                     _record("toy_later", NEW, "2024-02-01T13:05:00+00:00"))
    assert not any(n.startswith(MIXED) for n in report.notes)
    assert _recorded(report)["source"] == "artifact 'toy_later' (2024-02-01T13:05:00+00:00)"


def test_an_artifacts_only_report_keeps_the_newest_artifacts_fingerprint(tmp_path):
    report = _report(tmp_path, _record("toy_curve", UNRUN, "2024-03-01T10:00:00+00:00"),
                     _record("toy_later", OLD, "2024-01-01T13:00:00+00:00"), results=tmp_path / "no-results")
    assert not any(n.startswith(MIXED) for n in report.notes)
    recorded = _recorded(report)
    assert recorded["commit"] == UNRUN[:12]
    assert recorded["source"] == "artifact 'toy_curve' (2024-03-01T10:00:00+00:00)"


def test_an_artifact_written_after_the_newest_results_run_is_named_with_its_figures(tmp_path):
    """A later run of the newest commit that saved no result (or another environment's) rewrote
    the artifact: the figure is of that run, not of the stored values."""
    report = _report(tmp_path, _record("toy_curve", NEW, "2030-01-01T00:00:00+00:00"))
    [note] = [n for n in report.notes if "another run of their commit" in n]
    assert "'toy_curve' (figure(s) toy_curve_figure)" in note
    assert not any(MIXED in n for n in report.notes)
    own = _report(tmp_path / "own", _record("toy_curve", NEW, "2024-02-01T13:00:00+00:00"))
    assert not any("another run of their commit" in n for n in own.notes)


def test_no_artifacts_names_the_machine_that_holds_its_commits_artifacts(tmp_path):
    """A plain asv run under its own --machine: its artifacts went to <host>-<profile>."""
    path = tmp_path / "artifacts" / "vm-smoke" / NEW / "toy_curve.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**_record("toy_curve", NEW, "2024-02-01T13:00:00+00:00"), "machine": "vm-smoke"}))
    (tmp_path / "artifacts" / "elsewhere" / ("d" * 40)).mkdir(parents=True)     # another commit's: not named
    report = build_report(MACHINE, RESULTS, tmp_path / "artifacts", CLAIMS, SPECS)
    [note] = [n for n in report.notes if n.startswith(f"No artifacts for {MACHINE}")]
    assert "filed under vm-smoke:" in note and "--machine vm-smoke" in note and "elsewhere" not in note


def test_the_machine_named_for_missing_artifacts_is_of_the_results_profile(tmp_path):
    from impls.harness.report.build import _commits_artifacts_elsewhere

    for machine in ("vm-smoke", "vm-quick"):
        (tmp_path / machine / NEW).mkdir(parents=True)
    assert _commits_artifacts_elsewhere(tmp_path, "box", [NEW], "smoke") == ["vm-smoke"]
    assert _commits_artifacts_elsewhere(tmp_path, "box", [NEW[:8]], None) == ["vm-quick", "vm-smoke"]
