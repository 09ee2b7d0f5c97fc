"""The side-by-side page of several machines says what each column rests on: files filed
under one machine that record another, a machine without a noise file, and each machine's
hardware."""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from impls.harness.report import build
from impls.harness.report.build import build_report
from impls.harness.report.claims import ArtifactSource, BenchmarkSource, Claim, PointRef
from impls.harness.report.environment_table import environment_tables, hardware
from impls.harness.report.machine_state import MachineState
from impls.harness.report.model import Report
from impls.harness.report.intervals import lacks_run_to_run
from impls.harness.report.noise import EVERY_POINT, Noise, Threshold, save_noise
from impls.harness.report.side_by_side import _cell, _machines, render_side_by_side
from impls.harness.report.verdicts import ClaimResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"
CLAIMS = FIXTURES / "claims.toml"
NEW = "854149dbb27c7199affb4e772fa341f30f2630b7"
NO_NOISE_MARK = "†"     # side_by_side.NO_NOISE_MARK


def page(reports: list[Report]) -> str:
    return render_side_by_side(reports)["index.html"].decode()


def copy_results(tmp_path: Path, copies: dict[str, bool]) -> Path:
    """The fixture's results of 'toybox', copied under each name of ``copies``; where its
    value is True the copy's files are rewritten to record that name (a run of its own)."""
    results = tmp_path / "results"
    shutil.copytree(FIXTURES / "asv_results", results)
    for name, own in copies.items():
        shutil.copytree(results / "toybox", results / name)
        if own:
            for path in (results / name).glob("*.json"):
                path.write_text(path.read_text().replace('"toybox"', f'"{name}"'))
    return results


@pytest.fixture
def no_noise_files(tmp_path, monkeypatch) -> Path:
    """Noise files are read from a folder of the test's own (none unless a test writes one)."""
    folder = tmp_path / "noise"
    monkeypatch.setattr(build, "default_noise_path", lambda machine: folder / f"{machine}.json")
    return folder


def test_files_of_another_machine_are_named_in_one_note(tmp_path, no_noise_files):
    results = copy_results(tmp_path, {"boxb": False})           # boxb's files record 'toybox'
    artifacts = tmp_path / "artifacts"
    record = {"schema": 1, "name": "toy_curve", "experiment": "toy", "synthetic": True, "profile": "smoke",
              "created": "2024-02-01T13:00:00+00:00", "machine": "toybox", "commit": NEW, "data": {}}
    for folder in ("toybox", "boxb"):
        (artifacts / folder / NEW).mkdir(parents=True)
        (artifacts / folder / NEW / "toy_curve.json").write_text(json.dumps(record))
    reports = [build_report(m, results, artifacts, CLAIMS, {}) for m in ("toybox", "boxb")]

    boxb = reports[1]
    [note] = [n for n in boxb.notes if "record machine" in n]
    assert "2 result file(s) and 1 artifact file(s) record machine 'toybox', not 'boxb'" in note
    assert "no asv results and no artifacts of its own" in note and "files are kept under the machine" in note
    assert ".asv/results/toybox/" in note and "DLSYSBENCH_MACHINE" in note
    assert not any(n.startswith(("No asv results for boxb", "No artifacts for boxb")) for n in boxb.notes)
    assert not any("input file(s) were left out" in n for n in boxb.notes)   # no other file was

    html = page(reports)
    assert html.count("record machine &#x27;toybox&#x27;") == 1               # one note, not three
    assert any("record machine" in w for w in re.findall(r"<p class='warning'>(.*?)</p>", html))  # up top
    assert "No asv results for boxb" not in html and "No artifacts for boxb" not in html
    assert "No artifact tells the profile of boxb" not in html


def test_a_machine_without_any_copy_still_reads_no_results(tmp_path, no_noise_files):
    results = copy_results(tmp_path, {})
    (tmp_path / "artifacts" / "empty" / NEW).mkdir(parents=True)
    (tmp_path / "artifacts" / "empty" / NEW / "x.json").write_text("{")       # one damaged file only
    report = build_report("empty", results, tmp_path / "artifacts", CLAIMS, {})
    assert any(n.startswith("No asv results for empty") for n in report.notes)
    assert not any("record machine" in n for n in report.notes)
    assert "No artifact tells the profile of empty" in page([report])


def test_some_files_of_another_machine_blame_only_what_they_account_for(tmp_path, no_noise_files):
    """A machine with its own newest result, an older one copied from another box and no
    artifacts: the note names the copied file alone, "No artifacts" is said once, in its own
    note, and nothing goes up top, since its column is full."""
    results = copy_results(tmp_path, {"boxc": False})
    newest = next(p for p in (results / "boxc").glob("854149db*.json"))
    newest.write_text(newest.read_text().replace('"toybox"', '"boxc"'))
    reports = [build_report(m, results, tmp_path / "none", CLAIMS, {}) for m in ("toybox", "boxc")]
    boxc = reports[1]
    assert any(r.measured is not None for r in boxc.claims)
    [note] = [n for n in boxc.notes if "record machine" in n]
    assert "result file(s) record machine 'toybox', not 'boxc', and were left out:" in note
    assert "of its own here" not in note and "no artifacts" not in note and "artifact file" not in note
    assert sum(n.startswith("No artifacts for boxc") for n in boxc.notes) == 1

    html = page(reports)
    warnings = re.findall(r"<p class='warning'>(.*?)</p>", html)
    assert not any("record machine" in w for w in warnings)           # not promoted: the column is full
    assert html.count("record machine &#x27;toybox&#x27;") == 1       # said once, in boxc's line
    assert html.count("No artifacts for boxc") == 1


def every_point(machine: str, spread: float, version: str = "") -> Noise:
    """Thresholds of ``machine`` for every point of the fixture's benchmarks the claims read
    (track_speedup's wide enough to make 'speedup-reproduced' inconclusive)."""
    found = [Threshold(b, EVERY_POINT, 3, spread, 3 * spread, version)
             for b in ("bench_toy.Speed.track_speedup", "bench_toy.Layout.track_bytes_used",
                       "bench_toy.Sweep.track_effective_bandwidth")]
    return Noise(machine, "2024-02-02T00:00:00+00:00", [], {(t.benchmark, t.params): t for t in found})


def marked_verdicts(html: str) -> int:
    return html.count(f"</span>{NO_NOISE_MARK}")


def test_a_machine_without_a_noise_file_has_its_verdicts_marked(tmp_path, no_noise_files):
    results = copy_results(tmp_path, {"twin": True})             # the same numbers on two machines
    no_noise_files.mkdir()
    save_noise(every_point("toybox", 0.2), no_noise_files / "toybox.json")
    reports = [build_report(m, results, tmp_path / "none", CLAIMS, {}) for m in ("toybox", "twin")]
    toybox, twin = ({r.claim.id: r for r in report.claims} for report in reports)
    assert toybox["speedup-reproduced"].verdict == "inconclusive"
    assert twin["speedup-reproduced"].verdict == "reproduced"    # no interval: judged on the value
    assert not any(r.no_noise for r in toybox.values())
    judged = [r for r in twin.values() if r.measured is not None and not r.verdict.startswith("not measured")]
    assert judged and all(r.no_noise for r in judged)

    html = page(reports)
    assert "toybox (profile unknown)</th>" in html and f"twin (profile unknown){NO_NOISE_MARK}</th>" in html
    assert f"reproduced</span>{NO_NOISE_MARK}" in html
    assert "inconclusive</span><" in html                       # toybox's own verdict is unmarked
    assert f"<b>twin{NO_NOISE_MARK}</b>:" in html and "<b>toybox</b>:" in html
    assert f"({len(judged)} of its verdicts below judged on single values" in html
    assert marked_verdicts(html) == len(judged)
    assert "no usable noise thresholds for this number (absent, damaged, another machine&#x27;s" in html
    assert "no noise file" not in html          # a damaged file, or another machine's, is not "no file"


def test_thresholds_of_another_benchmark_version_mark_the_verdicts(tmp_path, no_noise_files):
    """A noise file measured on another version of the benchmarks (after any version bump)
    gives no interval: its machine's verdicts are marked like those of a machine without one."""
    results = copy_results(tmp_path, {"stale": True})
    no_noise_files.mkdir()
    save_noise(every_point("toybox", 0.2), no_noise_files / "toybox.json")
    save_noise(every_point("stale", 0.2, version="0" * 64), no_noise_files / "stale.json")
    reports = [build_report(m, results, tmp_path / "none", CLAIMS, {}) for m in ("toybox", "stale")]
    stale = {r.claim.id: r for r in reports[1].claims}
    assert stale["speedup-reproduced"].verdict == "reproduced" and stale["speedup-reproduced"].no_noise
    html = page(reports)
    assert f"stale (profile unknown){NO_NOISE_MARK}</th>" in html and f"<b>stale{NO_NOISE_MARK}</b>:" in html
    assert f"reproduced</span>{NO_NOISE_MARK}" in html and "toybox (profile unknown)</th>" in html


def test_only_the_claims_a_noise_file_lacks_are_marked(tmp_path, no_noise_files):
    """A noise file that holds the speed-up's thresholds but not the layout ratio's marks
    the ratio's verdict alone, and the machine's name and counts say one."""
    results = copy_results(tmp_path, {})
    no_noise_files.mkdir()
    noise = every_point("toybox", 0.0)
    save_noise(dataclasses.replace(noise, thresholds={k: t for k, t in noise.thresholds.items()
                                                      if t.benchmark != "bench_toy.Layout.track_bytes_used"}),
               no_noise_files / "toybox.json")
    [toybox] = [build_report("toybox", results, tmp_path / "none", CLAIMS, {})]
    by_id = {r.claim.id: r for r in toybox.claims}
    assert [cid for cid, r in by_id.items() if r.no_noise] == ["layout-ratio"]
    html = page([toybox])
    assert marked_verdicts(html) == 1 and f"<b>toybox{NO_NOISE_MARK}</b>:" in html
    assert "(1 of its verdicts below judged on single values" in html


def test_only_verdicts_a_noise_file_would_widen_are_marked():
    def claim(measured) -> Claim:
        return Claim(id="a", system="slide", figure="f", statement="s", paper_value=1.0, unit="x", source="text",
                     approx=False, tolerance=0.1, requires=(), measured=measured)

    points = pd.DataFrame({"benchmark": ["b.B.track_x"], "param_label": [""], "params": [{}], "value": [1.0],
                           "status": ["ok"], "version": ["1"]})
    assert lacks_run_to_run(claim(ArtifactSource("toy", "final")), 1.0, points, None)   # never has one
    assert lacks_run_to_run(claim(BenchmarkSource(PointRef("b.B.track_x", {}))), 1.0, points, None)
    from_bench = claim(BenchmarkSource(PointRef("b.B.track_x", {})))
    assert NO_NOISE_MARK in _cell(ClaimResult(from_bench, "reproduced", 1.0, 1.0, False, "d", no_noise=True))
    assert NO_NOISE_MARK not in _cell(ClaimResult(from_bench, "reproduced", 1.0, 1.0, False, "d"))
    unmeasured = ClaimResult(from_bench, "not measured: no result", None, None, False, "d", no_noise=True)
    assert NO_NOISE_MARK not in _cell(unmeasured)


def fingerprint(cores: int, gpus: list[dict]) -> dict:
    return {"machine": "m", "profile": "quick",
            "host": {"cpu_model": "Toy CPU", "cores_logical": cores, "cores_physical": cores // 2},
            "gpu": {"available": bool(gpus), "devices": gpus}}


def report(machine: str, fp: dict | None, machine_json: dict | None = None) -> Report:
    state = MachineState(machine, fp, "test", {})
    return Report(machine=machine, generated="", profile="quick", commits=pd.DataFrame({"commit": ["a" * 40]}),
                  environment=environment_tables(state, machine_json or {}), claims=[], peers=[], figures=[],
                  history=[], skipped=[], notes=[], hardware=hardware(state, machine_json or {}))


def test_each_machine_lists_its_cores_cpu_and_gpu_and_a_difference_is_said():
    small = report("vm-quick", fingerprint(2, []))
    big = report("gpu-quick", fingerprint(16, [{"name": "Toy GPU", "memory_bytes": 16 * 2 ** 30}]))
    html = _machines([small, big])
    assert "2 logical cores, CPU Toy CPU, no GPU" in html
    assert "16 logical cores, CPU Toy CPU, GPU Toy GPU (16.0 GiB)" in html
    assert "differ in logical cores, GPU" in html and "CPU model" not in html
    assert "differ in" not in _machines([small, report("twin-quick", fingerprint(2, []))])


def test_a_cpu_quota_is_a_difference_in_usable_cpus_not_in_logical_cores():
    plain = report("host-quick", fingerprint(16, []))
    boxed_fp = fingerprint(16, [])
    boxed_fp["host"].update(cores_usable=2, cpu_quota=1.5)
    boxed = report("box-quick", boxed_fp)
    html = _machines([plain, boxed])
    assert "16 logical cores (2 (cgroup quota 1.5 CPUs) usable), CPU Toy CPU" in html
    assert "differ in usable CPUs" in html and "logical cores" not in html.split("differ in", 1)[1].split("(", 1)[0]
    same_fp = fingerprint(16, [])
    same_fp["host"].update(cores_usable=16, cpu_quota=16.0)      # a quota that takes nothing away
    assert "differ in" not in _machines([plain, report("wide-quick", same_fp)])


def test_hardware_without_a_fingerprint_comes_from_asv_machine_json():
    html = _machines([report("old-quick", None, {"machine": "old", "cpu": "Old CPU", "num_cpu": "4"}),
                      report("bare-quick", None)])
    assert "4 logical cores, CPU Old CPU, GPU not recorded" in html
    assert "bare-quick</b>: profile quick, newest results of commit aaaaaaaa; hardware not recorded" in html
    assert "differ in" not in html                              # what is not recorded differs from nothing


def test_an_unknown_cpu_model_is_not_recorded_and_not_a_difference():
    unknown = fingerprint(2, [])
    unknown["host"]["cpu_model"] = "unknown"          # fingerprint.py's when the host names no model
    html = _machines([report("vm-quick", unknown), report("twin-quick", fingerprint(2, []))])
    assert "2 logical cores, CPU not recorded, no GPU" in html and "CPU unknown" not in html
    assert "differ in" not in html


def test_markdown_shows_data_literally_and_keeps_notes_in_their_quote():
    # claim notes, device names and error messages come from outside: in report.md a tag in
    # them must stay text (as index.html shows it), and a note's second line no heading
    from impls.harness.report.markdown_page import render_markdown

    fp = fingerprint(2, [])
    fp["host"]["cpu_model"] = "AMD <script>alert(9)</script> | x & y"
    page = dataclasses.replace(report("vm-quick", fp), commits=pd.DataFrame({"commit": []}))
    page.notes.append("first line\n## Injected heading\n<img src=x onerror=alert(1)>")
    md = render_markdown(page)
    assert "<script>" not in md and "<img" not in md
    assert "AMD &lt;script>alert(9)&lt;/script> \\| x &amp; y" in md
    assert "\n## Injected heading" not in md and "> ## Injected heading\n" in md


def test_the_page_of_many_long_machine_names_has_a_name_the_filesystem_takes(tmp_path):
    # cloud host names are long: five of them joined passed 255 characters with the writer's
    # ".<name>.new-XXXXXXXX" and the page failed with a traceback after the machines' reports
    from impls.harness.report.side_by_side import NAME_MAX, side_by_side_name

    hosts = [f"ip-172-31-22-10{i}.eu-west-1.compute.internal-smoke" for i in range(1, 6)]
    name = side_by_side_name(hosts)
    assert len(name) <= NAME_MAX and name.startswith("side-by-side-" + hosts[0]) and "+2-more-" in name
    assert side_by_side_name(hosts[:4] + ["other-smoke"]) != name           # the hash tells lists apart
    (tmp_path / f".{name}.new-abcdefgh").mkdir()                            # the writer's staging folder
    assert side_by_side_name(["a-quick", "b-quick"]) == "side-by-side-a-quick+b-quick"


def test_a_cuda_runs_figure_sits_beside_its_cpu_runs_figure_though_one_machine_drew_it():
    """One machine drew a figure of its CUDA run (toy_cuda), the other had none: the row of
    toy_cuda comes right after toy's, not after every figure of the first machine."""
    from types import SimpleNamespace

    from impls.harness.report.paper_figures import FigureResult
    from impls.harness.report.side_by_side import _figures

    def fig(name):
        return FigureResult(name, f"Title {name}", "slide", "Fig. 1", "not measured", f"caption {name}")

    cpu_only = SimpleNamespace(machine="cpu-box", figures=[fig("toy"), fig("zeta")])
    gpu = SimpleNamespace(machine="gpu-box", figures=[fig("toy"), fig("toy_cuda"), fig("zeta")])
    html = _figures([cpu_only, gpu])
    assert html.index("Title toy<") < html.index("Title toy_cuda<") < html.index("Title zeta<"), html
