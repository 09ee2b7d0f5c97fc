"""scripts/render_report.py on damaged inputs: the report shows what it could read and lists
the rest, and the exit status and one line on stderr say that files were left out."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from impls.harness import figures as figure_registry
from impls.harness import paths
from impls.harness.figures import FigureSpec
from impls.harness.report.build import build_report
from impls.harness.report.asv_files import ResultsError, machine_info

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"
CLAIMS = FIXTURES / "claims.toml"
MACHINE = "toybox"
RUNS = ("02192a18-existing-py.json", "854149db-existing-py.json")


def _inputs(tmp_path: Path, *damaged: str) -> tuple[Path, Path]:
    """A copy of the fixture's asv results and an artifact store, with each of ``damaged``
    (a path relative to the results folder, or ``artifact``) truncated to ``{``."""
    results, artifacts = tmp_path / "results", tmp_path / "artifacts"
    shutil.copytree(FIXTURES / "asv_results", results)
    artifacts.mkdir()
    for name in damaged:
        path = artifacts / MACHINE / ("0" * 40) / "toy_curve.json" if name == "artifact" else results / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{")
    return results, artifacts


@pytest.fixture
def render(load_script, capsys):
    """``render(results, artifacts, out, *machines)``: scripts/render_report.py's (exit status,
    stdout, stderr) for ``machines`` (default: --machine toybox; ``results`` None: no --results)."""
    script = load_script("render_report")

    def run(results: Path | None, artifacts: Path, out: Path, *machines: str) -> tuple[int, str, str]:
        which = ["--machines", *machines] if machines else ["--machine", MACHINE]
        given = ["--results", str(results)] if results is not None else []
        rc = script.main([*which, *given, "--artifacts", str(artifacts), "--claims", str(CLAIMS), "--out", str(out)])
        captured = capsys.readouterr()
        return rc, captured.out, captured.err
    return run


@pytest.mark.parametrize("damaged, count", [
    ([f"{MACHINE}/{RUNS[0]}", f"{MACHINE}/{RUNS[1]}"], 2),     # every result file
    ([f"{MACHINE}/{RUNS[1]}"], 1),                               # the newest only
    (["benchmarks.json"], 1),
    (["artifact"], 1),
    ([f"{MACHINE}/machine.json"], 1),
])
def test_left_out_files_are_reported_and_exit_1(tmp_path, render, damaged, count):
    results, artifacts = _inputs(tmp_path, *damaged)
    rc, out, err = render(results, artifacts, tmp_path / "out")
    assert rc == 1                                   # the old code: 0, and nothing on stderr
    assert err.startswith(f"render_report: {count} input file(s) were left out of the report")
    assert len(err.splitlines()) == 1
    first = damaged[0] if damaged[0] != "artifact" else "toy_curve.json"
    assert first.split("/")[-1] in err
    markdown = (tmp_path / "out" / "report.md").read_text()     # rendered all the same
    assert str(tmp_path / "out" / "report.md") in out.split()
    assert "every result and artifact file was read" not in markdown
    for name in damaged:
        assert (name if name != "artifact" else "toy_curve.json").split("/")[-1] in markdown


def test_clean_inputs_exit_0_and_say_nothing(tmp_path, render):
    results, artifacts = _inputs(tmp_path)
    rc, _, err = render(results, artifacts, tmp_path / "out")
    assert (rc, err) == (0, "")


def test_several_machines_count_every_machines_left_out_files(tmp_path, render):
    results, artifacts = _inputs(tmp_path, f"{MACHINE}/{RUNS[1]}")
    shutil.copytree(FIXTURES / "asv_results" / MACHINE, results / "otherbox")   # files of toybox: left out
    rc, out, err = render(results, artifacts, tmp_path / "out", MACHINE, "otherbox")
    # toybox's damaged run, and otherbox's copies of toybox's two runs and of its machine.json
    assert rc == 1 and "4 input file(s) were left out" in err    # the old code: 0
    assert str(tmp_path / "out" / "side-by-side-toybox+otherbox" / "index.html") in out.split()
    assert "| 02192a18" in (tmp_path / "out" / MACHINE / "report.md").read_text()   # the run still read


def test_a_file_left_out_on_purpose_is_listed_but_does_not_fail(tmp_path, render):
    """An artifact of another schema (what a schema bump leaves in the history) reads as JSON:
    left out on purpose, listed and counted, exit 0; only a file that cannot be read fails."""
    results, artifacts = _inputs(tmp_path)
    old = artifacts / MACHINE / ("0" * 40) / "toy_curve.json"
    old.parent.mkdir(parents=True)
    old.write_text('{"schema": 0, "name": "toy_curve", "data": {}}')
    rc, _, err = render(results, artifacts, tmp_path / "out")
    assert rc == 0 and err.startswith("render_report: 1 input file(s) were left out") and "schema 0" in err


def test_nothing_to_report_still_exits_2(tmp_path, render, monkeypatch):
    """A fresh clone's `make report`: no results folder at all (the default's) is one line and
    exit 2, as before."""
    monkeypatch.setattr(paths, "results_dir", lambda: tmp_path / ".asv" / "results")
    (tmp_path / "artifacts").mkdir()
    rc, _, err = render(None, tmp_path / "artifacts", tmp_path / "out")
    assert rc == 2 and "nothing to report for machine 'toybox'" in err and "make bench" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text", ['{"machine": ', "[]", b"\xff\xfe"])
def test_a_damaged_machine_json_is_listed_not_taken_for_absent(tmp_path, text):
    results, artifacts = _inputs(tmp_path)
    path = results / MACHINE / "machine.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    report = build_report(MACHINE, results, artifacts, CLAIMS, figure_specs={})
    assert [p for p, _ in report.unreadable] == [str(path)]       # the old code: [] ("every file was read")
    assert any(n.startswith("1 input file(s) were left out") for n in report.notes)
    assert not report.commits.empty                                # the results are still reported
    with pytest.raises(ResultsError, match="machine.json"):
        machine_info(results, MACHINE)
    assert machine_info(results, "nobody") == {}                   # absent: nothing to say


def test_a_machine_json_of_another_machine_is_listed_not_used(tmp_path):
    """A results folder copied under a new name keeps the old machine's machine.json: its
    hardware would be shown, and compared, as this machine's."""
    results, artifacts = _inputs(tmp_path)
    path = results / MACHINE / "machine.json"
    path.write_text(json.dumps({"machine": "other-box", "cpu": "Xeon", "num_cpu": "64", "version": 1}))
    report = build_report(MACHINE, results, artifacts, CLAIMS, figure_specs={})
    assert report.unreadable == [(str(path), f"{path}: asv's machine record of machine 'other-box', filed under "
                                             f"{MACHINE!r}: left out")]
    assert "Xeon" not in json.dumps(report.environment, default=str)
    assert machine_info(results, MACHINE, []) == {}
    path.write_text(json.dumps({"machine": MACHINE, "cpu": "Xeon", "version": 1}))
    assert machine_info(results, MACHINE)["cpu"] == "Xeon"


def _artifact(artifacts: Path, filed_as: str = "toy_curve", **fields) -> Path:
    """A record of artifact toy_curve (``fields`` replacing its own) filed as ``<filed_as>.json``."""
    record = {"schema": 1, "name": "toy_curve", "experiment": "toy", "synthetic": True, "profile": "smoke",
              "created": "2024-02-01T13:00:00+00:00", "machine": MACHINE, "commit": "0" * 40,
              "data": {"x": [1, 2]}, **fields}
    path = artifacts / MACHINE / ("0" * 40) / f"{filed_as}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize("fields, filed_as, why", [
    ({"name": ["toy_curve"]}, "toy_curve", "'name' is a JSON list, expected a string"),   # old: TypeError
    ({"commit": {"sha": "0"}}, "toy_curve", "'commit' is a JSON dict, expected a string"),
    ({}, "stray", "names artifact 'toy_curve', filed as 'stray'"),         # old: drawn as toy_curve, not listed
])
def test_a_record_not_what_its_file_says_is_listed(tmp_path, render, fields, filed_as, why):
    """It reads as JSON, so it is listed and counted with exit 0, as a record of another schema."""
    results, artifacts = _inputs(tmp_path)
    path = _artifact(artifacts, filed_as, **fields)
    rc, _, err = render(results, artifacts, tmp_path / "out")
    assert rc == 0 and err == f"render_report: 1 input file(s) were left out of the report (its Unreadable " \
                              f"inputs lists them); the first: {path}: {why}\n"
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert path.name in markdown.split("Unreadable inputs", 1)[1]
    assert "No artifacts for toybox" in markdown                   # none read in its place


@pytest.mark.parametrize("kind", ["absent", "file"])
def test_a_results_folder_given_that_is_none_is_refused(tmp_path, render, kind):
    """A typo in --results: one line, exit 2, nothing written (the old code: a report of no
    results, exit 0)."""
    results, artifacts = _inputs(tmp_path)
    _artifact(artifacts)
    given = tmp_path / "no-such-results" if kind == "absent" else results / "benchmarks.json"
    rc, out, err = render(given, artifacts, tmp_path / "out")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"render_report: --results {given}: ")
    assert ("no such directory" if kind == "absent" else "not a directory") in err
    assert not (tmp_path / "out").exists()


def test_the_default_results_folder_may_be_absent(tmp_path, render, monkeypatch):
    """A machine with artifacts only (a fresh checkout given an artifact store): rendered."""
    monkeypatch.setattr(paths, "results_dir", lambda: tmp_path / ".asv" / "results")
    _artifact(tmp_path / "artifacts")
    rc, _, err = render(None, tmp_path / "artifacts", tmp_path / "out")
    assert (rc, err) == (0, "")
    assert "No asv results for toybox" in (tmp_path / "out" / "report.md").read_text()


def test_a_bad_profile_in_the_environment_is_no_matter_with_machine_given(tmp_path, render, load_script,
                                                                           monkeypatch, capsys):
    """The profile only names the default machine; with --machine it plays no part (the old
    code: exit 2, unknown profile). Without --machine it is still refused in one line."""
    results, artifacts = _inputs(tmp_path)
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "bogus")
    rc, _, err = render(results, artifacts, tmp_path / "out")
    assert (rc, err) == (0, "")
    rc = load_script("render_report").main(["--results", str(results), "--artifacts", str(artifacts),
                                            "--claims", str(CLAIMS), "--out", str(tmp_path / "out2")])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown profile 'bogus'" in err and len(err.splitlines()) == 1


def test_a_typo_in_artifacts_is_refused_as_one_in_results_is(tmp_path, render):
    results, artifacts = _inputs(tmp_path)
    rc, _, err = render(results, tmp_path / "artifcats", tmp_path / "out")
    assert rc == 2 and err.startswith(f"render_report: --artifacts {tmp_path / 'artifcats'}: no such directory")
    assert not (tmp_path / "out").exists()


def _toy_figure(draw, artifact: str = "toy_curve") -> FigureSpec:
    return FigureSpec(name="toy_fig", artifact=artifact, title="Toy", system="toy", paper_figure="Fig. 1",
                      requires=(), draw=draw)


def _broken_draw(data):
    return data["kk"]          # a key the artifact's data does not have: KeyError


@pytest.mark.parametrize("machines", [(), (MACHINE, "otherbox")])
def test_a_figure_that_fails_to_draw_is_said_on_stderr_and_exits_1(tmp_path, render, monkeypatch, machines):
    """A draw function that raises: the report still renders, with the error in the figure's
    place, and one line on stderr names it, exit 1 as for a damaged input (the old code: exit 0,
    nothing on stderr; the only sign a line in report.md)."""
    results, artifacts = _inputs(tmp_path)
    _artifact(artifacts)
    if machines:
        shutil.copytree(FIXTURES / "asv_results" / MACHINE, results / "otherbox")
    monkeypatch.setattr(figure_registry, "discover", lambda: ({"toy_fig": _toy_figure(_broken_draw)}, {}))
    rc, out, err = render(results, artifacts, tmp_path / "out", *machines)
    markdown = (tmp_path / "out" / (MACHINE if machines else "") / "report.md").read_text()
    assert "figure failed to draw: KeyError: 'kk'" in markdown          # rendered all the same
    last = err.splitlines()[-1]     # with machines: a line on the files otherbox's copy left out first
    assert rc == 1 and last.startswith("render_report: 1 figure(s) failed to draw (the report shows the error in "
                                       "their place); the first: toy_fig: KeyError: 'kk' (")
    assert "_broken_draw" in last and len(err.splitlines()) == (2 if machines else 1)


@pytest.mark.parametrize("artifact, draw", [
    ("absent", _broken_draw),                      # not measured: no artifact, so never drawn
    ("toy_curve", lambda data: _drawn(data)),      # drawn
])
def test_a_figure_not_measured_or_drawn_is_no_failure(tmp_path, render, monkeypatch, artifact, draw):
    results, artifacts = _inputs(tmp_path)
    _artifact(artifacts)
    monkeypatch.setattr(figure_registry, "discover", lambda: ({"toy_fig": _toy_figure(draw, artifact)}, {}))
    rc, _, err = render(results, artifacts, tmp_path / "out")
    assert (rc, err) == (0, "")


def _drawn(data):
    figure, ax = figure_registry.new_axes()
    ax.plot(data["x"], data["x"])
    return figure
