"""A stored asv value is never read beside an artifact another run of its commit wrote: a later
run (asv run --python=same that saves nothing, another --machine or environment, python -m impls
run) overwrites the record under the same <machine>/<commit>/, and its interval, setting or text
would describe a run the value is not of."""
from __future__ import annotations

import dataclasses

import pandas as pd

from impls.harness import artifacts as artifact_store
from impls.harness.report.machine_state import CapabilityState, MachineState
from impls.harness.report.verdicts import INCONCLUSIVE, NOT_MEASURED, PARTLY, evaluate_claim, suite_claim

HEAD = "e0085384d075c1f6cbc1632c36ae6bdec3c3ad29"
STATE = MachineState("m", None, "", {"cuda": CapabilityState("cuda", False, "needs CUDA: no CUDA device")})
SALUS = "bench_salus.SrtfOverFifo.track_ratio"
SPEEDUP = "bench_slide.SlideSpeedup"


def row(benchmark: str, value: float, params: dict, started: float = 100, env: str = "existing-py") -> dict:
    """One result row of commit HEAD whose benchmark started at ``started`` s and took 5 s."""
    return {"machine": "m", "commit": HEAD, "date": pd.Timestamp(0, tz="UTC"), "env_name": env,
            "benchmark": benchmark, "type": "track", "unit": "x", "params": params,
            "param_label": ", ".join(f"{k}={v}" for k, v in params.items()), "value": value, "status": "ok",
            "started_at": pd.Timestamp(started, unit="s", tz="UTC"), "duration": 5.0, "version": "1",
            "history": 0}


def record(name: str, data: dict, created: float, **more) -> dict:
    stamp = pd.Timestamp(created, unit="s", tz="UTC").isoformat()
    return {"name": name, "commit": HEAD, "created": stamp, "data": data, **more}


def salus(created: float, **more):
    """The probe's case: a stored 1.146x whose own run's draw interval [1.09, 1.8] says
    "partly", and an artifact (made at ``created`` s) holding [0.936, 1.522], another run's."""
    points = pd.DataFrame([row(SALUS, 1.146, {"source": "real"})])
    artifacts = {"salus_policies": record("salus_policies", {"fifo_over_srtf": {
        "real": 0.979, "real_draw_interval": [0.936, 1.522]}}, created, **more)}
    return evaluate_claim(suite_claim("salus-jct-srtf-vs-fifo"), points, artifacts, STATE)


def test_an_artifact_written_after_the_value_was_measured_gives_it_no_interval():
    result = salus(created=600)          # the value's benchmark ended at 105 s
    assert result.verdict == PARTLY, result.detail        # judged on its value, not the other run's interval
    assert result.interval is None
    assert "after the value (bench_salus.SrtfOverFifo.track_ratio) at e0085384 was measured" in result.detail
    assert "1970-01-01 00:10:00 UTC" in result.detail and "1970-01-01 00:01:45 UTC" in result.detail


def test_an_artifact_of_another_asv_environment_gives_the_value_no_interval():
    result = salus(created=90, asv_env="virtualenv-py3.11-torch2.13.0")
    assert result.verdict == PARTLY and result.interval is None, result.detail
    assert "asv environment virtualenv-py3.11-torch2.13.0, the value" in result.detail
    assert "in existing-py" in result.detail


def test_the_values_own_artifact_still_gives_its_interval():
    result = salus(created=90, asv_env="existing-py")     # written by the setup cache, before the benchmark
    assert result.verdict == INCONCLUSIVE, result.detail
    assert result.interval is not None and result.interval.low == 0.936


def test_a_setting_read_from_another_runs_artifact_is_not_told():
    claim = dataclasses.replace(suite_claim("slide-beats-tf-cpu-from-2-cores"), lower_bound_when=None,
                                upper_bound_when=None)
    points = pd.DataFrame([row(f"{SPEEDUP}.track_time_to_target_ratio", 1.9, {"comparison": "dense-cpu/slide"})])
    data = {"runs": [{"name": "slide", "threads": 2}], "speedups": {}}
    own = evaluate_claim(claim, points, {"slide_time_to_accuracy": record("slide_time_to_accuracy", data, 90)},
                         STATE)
    assert not own.verdict.startswith(NOT_MEASURED), own
    later = evaluate_claim(claim, points, {"slide_time_to_accuracy": record("slide_time_to_accuracy", data, 600)},
                           STATE)
    assert later.verdict.startswith(f"{NOT_MEASURED}: artifact slide_time_to_accuracy was written at"), later
    assert "cannot tell whether the value's run is at" in later.verdict


def test_a_record_names_the_asv_environment_that_wrote_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path))
    monkeypatch.setenv("ASV_ENV_NAME", "virtualenv-py3.11-torch2.13.0")
    path = artifact_store.save_artifact("a", {"x": 1}, experiment="e", synthetic=True, machine="m-smoke",
                                        commit=HEAD)
    saved, why, _ = artifact_store.read_record(path, "m-smoke")
    assert saved is not None and saved["asv_env"] == "virtualenv-py3.11-torch2.13.0", why
    monkeypatch.delenv("ASV_ENV_NAME")
    path = artifact_store.save_artifact("a", {"x": 1}, experiment="e", synthetic=True, machine="m-smoke",
                                        commit=HEAD)
    assert "asv_env" not in artifact_store.read_record(path, "m-smoke")[0]


def test_figures_drawn_from_another_runs_artifact_are_named_in_a_note():
    from impls.harness.report.value_run import later_runs_note

    frame = pd.DataFrame([row(SALUS, 1.146, {"source": "real"}), row(SALUS, 1.2, {"source": "sim"}, started=200)])
    drawn = {"salus_policies": ["salus_jct"]}
    own = {"salus_policies": record("salus_policies", {}, 90, asv_env="existing-py")}
    assert later_runs_note(own, frame, drawn) is None
    for later in (record("salus_policies", {}, 600), record("salus_policies", {}, 90, asv_env="virtualenv-py3.11")):
        note = later_runs_note({"salus_policies": later}, frame, drawn)
        assert note and "'salus_policies' (figure(s) salus_jct)" in note and "another run of their commit" in note
    # written before the last value of its commit ended (205 s): that run's, whichever benchmark
    assert later_runs_note({"salus_policies": record("salus_policies", {}, 150)}, frame, drawn) is None
    # an artifact of a commit without values is the other-commits note's business
    other = {**record("salus_policies", {}, 600), "commit": "f" * 40}
    assert later_runs_note({"salus_policies": other}, frame, drawn) is None
