"""What the report says about the data behind a figure or a claim: synthetic, measured, real
(with the file's checksum) or not known; which run (CPU or CUDA) a value comes from; and
artifacts too incomplete to draw."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from impls.harness import artifacts
from impls.harness.figures import FigureSpec
from impls.harness.report import formatting, load_claims
from impls.harness.report.claims import ArtifactSource, BenchmarkSource, Claim, PointRef
from impls.harness.report.machine_state import CapabilityState, MachineState
from impls.harness.report.paper_figures import (DRAWN, MEASURED_LABEL, NOT_KNOWN_LABEL, SYNTHETIC_LABEL,
                                                provenance_caption, render_figure)
from impls.harness.report.verdicts import REPRODUCED, evaluate_claims

REAL_CLAIMS = Path(__file__).resolve().parents[2] / "reports" / "claims.toml"
MACHINE = "toybox"
COMMIT = "e" * 40
TRAIN_SHA = "ab" * 32
TEST_SHA = "cd" * 32
SLIDE_REAL = "bench_slide.SlideRealData.track_final_p_at_1"


def _record(name: str, data, *, experiment: str = "toy", commit: str = COMMIT, **fields) -> dict:
    record = {"schema": 1, "name": name, "experiment": experiment, "profile": "smoke",
              "created": "2024-02-01T13:00:00+00:00", "machine": MACHINE, "commit": commit, "data": data}
    return {**record, **fields}


def _no_cuda() -> MachineState:
    return MachineState(MACHINE, None, "test", {"cuda": CapabilityState("cuda", False, "needs CUDA: none here")})


def _draw(data) -> Figure:
    figure = Figure()
    figure.add_subplot().plot(data["x"])
    return figure


def _claim(paper, measured) -> Claim:
    return Claim(id="c", system="slide", figure="text", statement="s", paper_value=paper, unit="P@1",
                 source="text", approx=False, tolerance=0.1, requires=(), measured=measured)


def _points(*rows) -> pd.DataFrame:
    return pd.DataFrame([{"benchmark": b, "params": {}, "param_label": "", "value": v, "commit": c,
                          "status": "ok", "type": "track"} for b, v, c in rows])


# ------------------------------------------------------------------ figure captions


def test_an_artifact_without_a_synthetic_field_is_not_captioned_measured():
    unknown = _record("toy_curve", {"x": [1, 2]})            # no "synthetic"; experiment "toy" is not registered
    assert provenance_caption(unknown).startswith(f"{NOT_KNOWN_LABEL} (")
    assert MEASURED_LABEL not in provenance_caption(unknown)
    spec = FigureSpec("toy_figure", "toy_curve", "Toy", "slide", "Fig. 1", (), _draw)
    drawn = render_figure(spec, {"toy_curve": unknown}, _no_cuda())
    assert drawn.status == DRAWN and drawn.synthetic is None and drawn.caption.startswith(NOT_KNOWN_LABEL)
    from impls.harness.report.html_page import _paper_figure

    assert "<span class='synthetic'>Data: not known" in _paper_figure(drawn)   # styled as the image's caption


def test_a_missing_synthetic_field_is_read_from_the_experiments_registry_entry():
    real = _record("slide_real_amazon", {"x": [1]}, experiment="slide.real_amazon")  # registered synthetic = false
    generated = _record("slide_sweeps", {"x": [1]}, experiment="slide.sweeps")      # registered synthetic (default)
    assert provenance_caption(real).startswith(f"{MEASURED_LABEL} (registry) · machine {MACHINE}")
    assert provenance_caption(generated).startswith(f"{SYNTHETIC_LABEL} (registry) · ")
    # the record's own field wins over the registry
    assert provenance_caption({**real, "synthetic": True}).startswith(f"{SYNTHETIC_LABEL} · ")
    assert provenance_caption({**generated, "synthetic": False}).startswith(f"{MEASURED_LABEL} · ")


# ------------------------------------------------------------------ real data and its checksum


def _real_amazon(commit: str = COMMIT, **source) -> dict:
    return _record("slide_real_amazon", {"source": {"real": True, "dataset": "slide-amazon670k-real",
                                                    "sha256": TRAIN_SHA, "test_sha256": TEST_SHA, **source}},
                   experiment="slide.real_amazon", synthetic=False, commit=commit)


def test_a_value_measured_on_real_data_shows_the_files_checksum():
    c = _claim((0.3, 0.35), BenchmarkSource(PointRef(SLIDE_REAL, {})))
    [result] = evaluate_claims([c], _points((SLIDE_REAL, 0.32, COMMIT)), {"slide_real_amazon": _real_amazon()},
                               _no_cuda())
    assert result.verdict == REPRODUCED and result.real_data == (TRAIN_SHA,)
    assert formatting.data_note(result) == f" (real data, sha256 {TRAIN_SHA[:12]})"
    assert f"sha256 {TRAIN_SHA} (test file {TEST_SHA}), artifact slide_real_amazon" in result.detail
    import json

    from impls.harness.report.report_json import claim_document, validate

    document = claim_document(result, MACHINE, "smoke")
    assert document["real_data"] == [TRAIN_SHA]                     # report.json carries the digest as data
    schema = json.loads(REAL_CLAIMS.with_name("report.schema.json").read_text())
    assert validate(document, schema["properties"]["claims"]["items"]) == []


def test_real_data_is_named_only_for_an_artifact_of_the_values_own_run_with_a_checksum():
    c = _claim((0.3, 0.35), BenchmarkSource(PointRef(SLIDE_REAL, {})))
    points = _points((SLIDE_REAL, 0.32, COMMIT))
    for artifact in (_real_amazon(commit="f" * 40),            # another run's artifact
                     _real_amazon(sha256="not a checksum"),
                     _real_amazon(sha256=TRAIN_SHA.upper()),    # not as hashlib writes it, nor the registry accepts
                     _real_amazon(real=False)):
        [result] = evaluate_claims([c], points, {"slide_real_amazon": artifact}, _no_cuda())
        assert result.real_data == () and "sha256" not in formatting.data_note(result) + result.detail
        assert formatting.data_note(result) == " (measured data)"


def test_an_artifact_claim_on_real_data_shows_the_checksum_too():
    c = _claim((0.3, 0.35), ArtifactSource("slide_real_amazon", "data.p"))
    record = _real_amazon()
    record["data"]["p"] = 0.31
    [result] = evaluate_claims([c], _points(), {"slide_real_amazon": record}, _no_cuda())
    assert formatting.data_note(result) == f" (real data, sha256 {TRAIN_SHA[:12]})"


# ------------------------------------------------------------------ which run


def _switch_on_either_run() -> Claim:
    """The suite's sub-second switch claim with its CUDA requirement lifted and the CPU run's
    artifact as ``measured``: the fallback a claim with ``measured_cuda`` has."""
    [switch] = [c for c in load_claims(REAL_CLAIMS) if c.id == "salus-switch-subsecond"]
    return dataclasses.replace(switch, requires=(),
                               measured=ArtifactSource("salus_switching", "data.largest.inprocess_p99_s"),
                               measured_cuda=ArtifactSource("salus_switching_cuda", "data.largest.inprocess_p99_s"))


def test_a_claim_measured_on_the_cpu_for_want_of_a_cuda_device_says_so():
    switch = _switch_on_either_run()
    cpu = _record("salus_switching", {"largest": {"inprocess_p99_s": 0.0003}}, synthetic=True)
    [result] = evaluate_claims([switch], _points(), {"salus_switching": cpu}, _no_cuda())
    assert result.verdict == REPRODUCED
    assert result.detail.startswith("CPU run (no CUDA device on this machine): artifact salus_switching")


def test_the_hardware_a_value_was_measured_on_is_shown_beside_it_and_in_report_json():
    from impls.harness.report import html_page
    from impls.harness.report.report_json import claim_document

    switch = _switch_on_either_run()
    cpu = _record("salus_switching", {"largest": {"inprocess_p99_s": 0.0003}}, synthetic=True)
    [result] = evaluate_claims([switch], _points(), {"salus_switching": cpu}, _no_cuda())
    assert result.setting == "CPU run, not the paper's GPU"
    assert formatting.data_note(result) == " (synthetic data; CPU run, not the paper's GPU)"
    # visible in the html page, not only in the value's tooltip
    [row] = html_page._claim_rows([result])
    assert "synthetic data; CPU run, not the paper&#x27;s GPU</span>" in row[3]
    assert claim_document(result, MACHINE, "smoke")["setting"] == "CPU run, not the paper's GPU"
    gpu = {"gpu": {"available": True, "devices": [{"name": "NVIDIA H100"}, {"name": "NVIDIA H100"}]}}
    cuda = _record("salus_switching_cuda", {"largest": {"inprocess_p99_s": 0.0002}}, synthetic=True, fingerprint=gpu)
    [result] = evaluate_claims([switch], _points(), {"salus_switching": cpu, "salus_switching_cuda": cuda}, _no_cuda())
    assert result.setting == "CUDA run (NVIDIA H100)"
    cuda["data"]["device_name"] = "cuda:1 NVIDIA A100"     # the device the run used, where it names one
    [result] = evaluate_claims([switch], _points(), {"salus_switching": cpu, "salus_switching_cuda": cuda}, _no_cuda())
    assert result.setting == "CUDA run (cuda:1 NVIDIA A100)"


def test_a_ratio_of_a_cuda_run_over_a_cpu_run_names_the_device_of_each_side():
    from impls.harness.report.setting import measured_on

    [vs_gpu] = [c for c in load_claims(REAL_CLAIMS) if c.id == "slide-amazon-vs-tf-gpu"]
    benchmarks = ("bench_slide.SlideSpeedup.track_time_to_target_ratio",)
    gpu = {"gpu": {"available": True, "devices": [{"name": "NVIDIA H100"}]}}
    runs = [{"name": "slide", "method": "slide", "threads": 2},          # no device: the CPU
            {"name": "dense-cuda", "method": "dense", "device": "cuda", "threads": 2}]
    tta = _record("slide_time_to_accuracy", {"runs": runs}, synthetic=True, fingerprint=gpu)
    said = measured_on(vs_gpu, "", benchmarks, {"slide_time_to_accuracy": tta})
    assert said == "dense-cuda on CUDA (NVIDIA H100) against slide on the CPU"
    runs[1]["device_name"] = "NVIDIA A100-SXM4-40GB"                     # the run's own GPU, as dense records it
    assert measured_on(vs_gpu, "", benchmarks, {"slide_time_to_accuracy": tta}) == \
        "dense-cuda on CUDA (NVIDIA A100-SXM4-40GB) against slide on the CPU"
    runs[0]["device"] = "mps"                                             # not the CPU: no such words
    assert measured_on(vs_gpu, "", benchmarks, {"slide_time_to_accuracy": tta}) == "CUDA run (NVIDIA H100)"
    runs[0]["device"] = "cuda:1"                                          # both on a GPU: one CUDA run
    assert measured_on(vs_gpu, "", benchmarks, {"slide_time_to_accuracy": tta}) == "CUDA run (NVIDIA H100)"
    del runs[1]                                                           # a side not in the artifact
    assert measured_on(vs_gpu, "", benchmarks, {"slide_time_to_accuracy": tta}) == "CUDA run (NVIDIA H100)"


def test_report_json_lists_a_figures_data_and_caption():
    from impls.harness.report.report_json import figure_document

    spec = FigureSpec("toy", "toy_curve", "Toy", "slide", "Fig. 1", (), _draw)
    drawn = render_figure(spec, {"toy_curve": _record("toy_curve", {"x": [1, 2]}, synthetic=True)}, _no_cuda())
    document = figure_document(drawn)
    assert document["data"] == "synthetic" and document["caption"] == drawn.caption
    assert document["caption"].startswith(SYNTHETIC_LABEL) and document["files"] == ["toy.png", "toy.svg"]
    missing = figure_document(render_figure(spec, {}, _no_cuda()))
    assert missing["data"] is None and missing["caption"].startswith("not measured: ") and missing["files"] == []


def test_an_on_device_read_names_its_drive_and_a_simulation_no_hardware():
    [on_device] = [c for c in load_claims(REAL_CLAIMS) if c.id == "bandana-effective-bandwidth-gain-on-device"]
    on_device = dataclasses.replace(on_device, requires=("o_direct",),
                                    measured=ArtifactSource("bandana_replay", "data.headline.useful_bytes_ratio"))
    target = {"device": "/dev/vda", "filesystem": "ext4", "rotational": True}
    replay = _record("bandana_replay", {"headline": {"useful_bytes_ratio": 2.2},
                                        "store": {"device": "/dev/vda", "filesystem": "ext4"}},
                     synthetic=True, fingerprint={"nvm_target": target})
    state = MachineState(MACHINE, None, "test", {"o_direct": CapabilityState("o_direct", True, "")})
    [result] = evaluate_claims([on_device], _points(), {"bandana_replay": replay}, state)
    assert result.setting == "drive /dev/vda (ext4, rotational)", result
    assert formatting.data_note(result) == " (synthetic data; drive /dev/vda (ext4, rotational))"
    from impls.harness.report import html_page
    [row] = html_page._claim_rows([result])              # the closing parenthesis kept
    assert ">synthetic data; drive /dev/vda (ext4, rotational)</span>" in row[3]
    # the store on another drive than the NVM target: its device and filesystem, not the target's spin
    replay["data"]["store"] = {"device": "/dev/nvme0n1", "filesystem": "xfs"}
    [result] = evaluate_claims([on_device], _points(), {"bandana_replay": replay}, state)
    assert result.setting == "drive /dev/nvme0n1 (xfs)"
    simulated = dataclasses.replace(on_device, requires=())     # a count no drive shapes
    [result] = evaluate_claims([simulated], _points(), {"bandana_replay": replay}, state)
    assert result.setting == "" and formatting.data_note(result) == " (synthetic data)"


# ------------------------------------------------------------------ incomplete artifacts


def test_an_artifact_without_a_data_object_is_unreadable_and_an_older_copy_is_used(tmp_path):
    def put(commit: str, created: str, record: dict) -> Path:
        path = tmp_path / MACHINE / commit / "toy_curve.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**record, "commit": commit, "created": created}))
        return path

    put("a" * 40, "2024-02-01T13:00:00+00:00", _record("toy_curve", {"x": [1]}, synthetic=True))
    dataless = _record("toy_curve", None, synthetic=True)
    del dataless["data"]
    newer = put("b" * 40, "2024-02-02T13:00:00+00:00", dataless)
    unreadable: list = []
    latest = artifacts.load_latest(MACHINE, tmp_path, unreadable)
    assert latest["toy_curve"]["commit"] == "a" * 40 and latest["toy_curve"]["data"] == {"x": [1]}
    assert (str(newer), "no 'data' field") in unreadable
    assert any("uses the copy of commit aaaaaaaa" in why for path, why in unreadable if path == str(newer))
    listed = put("b" * 40, "2024-02-02T13:00:00+00:00", _record("toy_curve", [1, 2], synthetic=True))
    unreadable = []
    artifacts.load_latest(MACHINE, tmp_path, unreadable)
    assert (str(listed), "'data' is a JSON list, expected an object") in unreadable


def test_an_artifact_whose_data_is_not_a_dict_is_refused_when_saved(tmp_path, monkeypatch):
    """load_latest reads only a dict back, so saving anything else would lose the run."""
    import pytest

    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path))
    with pytest.raises(TypeError, match="expected a dict"):
        artifacts.save_artifact("listy", [{"x": 1}], experiment="t.listy", synthetic=True, commit="c" * 40)


def test_a_dollar_in_data_is_drawn_as_text_not_math_and_log_ticks_keep_their_powers():
    # run, dataset and device names reach titles and legends: "$...$" in one is no formula;
    # a log axis's ticks are written as math (10^k) and must still be
    from impls.harness.figures import new_axes
    from impls.harness.report.plotting import to_png, to_svg

    fig, ax = new_axes()
    ax.set_title("dataset amz_$\\frac{a$ | price $5 to $10")
    ax.plot([1, 1000], [1, 1000], label="run $x$")
    ax.set_xscale("log")
    ax.legend()
    assert to_png(fig) and to_svg(fig)             # math parsing would fail on the unbalanced formula
    assert ax.get_title() == "dataset amz_$\\frac{a$ | price $5 to $10"
    assert not ax.title.get_parse_math() and all(t.get_parse_math() for t in ax.get_xticklabels())
    ticks = [t for t in ax.get_xticklabels() if t.get_text()]
    assert ticks and all(t.get_text().startswith("$") for t in ticks)
    # the ticks are drawn as 10^k, not as "$\\mathdefault{10^{0}}$"


# ------------------------------------------------------------------ the stamp on the images

RED = "#a93226"


def _stamp(figure: Figure):
    """The caption text the report writes on the image (the figure's last text)."""
    stamp = figure.texts[-1]
    return stamp.get_text(), stamp.get_color(), stamp.get_fontweight()


def test_a_figure_of_data_not_known_to_be_measured_is_stamped_as_synthetic_data_is():
    from impls.harness.report.paper_figures import captioned_figure

    spec = FigureSpec("toy_figure", "toy_curve", "Toy", "slide", "Fig. 1", (), _draw)
    for fields, label, red in (({}, NOT_KNOWN_LABEL, True), ({"synthetic": True}, SYNTHETIC_LABEL, True),
                               ({"synthetic": False}, MEASURED_LABEL, False)):
        text, color, weight = _stamp(captioned_figure(spec, _record("toy_curve", {"x": [1, 2]}, **fields)))
        assert text.startswith(label) and (color == RED) is red and (weight == "bold") is red, (fields, color)


def test_a_history_figure_says_and_stamps_what_its_data_are():
    """Unknown data are not "Measured data" and are stamped red, as synthetic data are."""
    from impls.harness.report import history
    from impls.harness.report.provenance import NOT_SYNTHETIC, SYNTHETIC
    from impls.harness.report.results import commits as commit_table

    rows = pd.DataFrame([{"machine": "m", "commit": c * 40, "env_name": "e", "benchmark": "bench_x.X.track_y",
                          "date": pd.Timestamp(1_700_000_000 + 86400 * i, unit="s", tz="UTC"), "type": "track",
                          "unit": "x", "params": {}, "param_label": "", "value": 1.0 + i / 100, "status": "ok",
                          "started_at": pd.Timestamp(1_700_000_000 + i, unit="s", tz="UTC"), "version": "1"}
                         for i, c in enumerate("abc")])
    for data, label, red in ((None, NOT_KNOWN_LABEL, True), (SYNTHETIC, SYNTHETIC_LABEL, True),
                             (NOT_SYNTHETIC, MEASURED_LABEL, False)):     # one benchmark: never partly
        figure, _, _ = history.history_figure(rows, commit_table(rows), "higher", None, data)
        text, color, _ = _stamp(figure)
        assert text.startswith(label) and (color == RED) is red, (data, text, color)


def test_a_value_of_data_of_no_known_kind_is_not_called_measured():
    result = dataclasses.replace(
        evaluate_claims([_claim((0.3, 0.35), BenchmarkSource(PointRef(SLIDE_REAL, {})))],
                        _points((SLIDE_REAL, 0.32, COMMIT)), {}, _no_cuda())[0], data=None, real_data=(), setting="")
    assert result.measured is not None and formatting.data_words(result) == "" and formatting.data_note(result) == ""
