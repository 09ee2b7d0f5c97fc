"""The artifact store on records that read as JSON but are not what their file says: a field of
the wrong type, a record of another artifact than its file's name, a profile in another case."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from impls.harness import artifacts

MACHINE = "box-smoke"
COMMIT = "c" * 40


def _record(name: str = "bandana_layouts", **fields) -> dict:
    record = {"schema": artifacts.SCHEMA, "name": name, "experiment": "bandana.layouts", "synthetic": True,
              "profile": "smoke", "created": "2026-01-01T00:00:00+00:00", "machine": MACHINE,
              "commit": COMMIT, "data": {"x": [1]}}
    return {**record, **fields}


def _put(root: Path, record: dict, filed_as: str = "bandana_layouts", commit: str = COMMIT) -> Path:
    path = root / MACHINE / commit / f"{filed_as}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize("field, value, kind", [
    ("name", ["bandana_layouts"], "list"),          # the old code: TypeError: unhashable type: 'list'
    ("name", 7, "int"),
    ("name", None, "null"),
    ("commit", ["c"], "list"),
    ("machine", {"host": "box"}, "dict"),
    ("profile", ["smoke"], "list"),
    ("created", 20260101, "int"),
    ("experiment", ["bandana.layouts"], "list"),
])
def test_a_mistyped_field_is_listed_not_read(tmp_path, field, value, kind):
    path = _put(tmp_path, _record(**{field: value}))
    unreadable: list = []
    assert artifacts.load_latest(MACHINE, tmp_path, unreadable) == {}
    assert unreadable == [(str(path), f"'{field}' is a JSON {kind}, expected a string")]


def test_a_mistyped_record_gives_way_to_another_commits_copy(tmp_path):
    """Damaged like any unreadable file: skipped, and the copy of another commit used in its
    place is named."""
    _put(tmp_path, _record(commit="a" * 40), commit="a" * 40)
    bad = _put(tmp_path, _record(name=["bandana_layouts"]))
    unreadable: list = []
    latest = artifacts.load_latest(MACHINE, tmp_path, unreadable)
    assert latest["bandana_layouts"]["commit"] == "a" * 40
    assert [p for p, _ in unreadable] == [str(bad), str(bad)]
    assert "the report uses the copy of commit aaaaaaaa" in unreadable[1][1]


def test_a_record_of_another_artifact_than_its_file_is_left_out(tmp_path):
    """bandana_layouts.json holding salus_policies' record: drawn as salus_policies it would
    replace that artifact's own record (the old code did, and listed nothing)."""
    own = _put(tmp_path, _record("salus_policies", data={"own": True}), filed_as="salus_policies")
    stray = _put(tmp_path, _record("salus_policies", data={"stray": True},
                                   created="2026-06-01T00:00:00+00:00"))      # newer: it would win
    unreadable: list = []
    latest = artifacts.load_latest(MACHINE, tmp_path, unreadable)
    assert set(latest) == {"salus_policies"} and latest["salus_policies"]["data"] == {"own": True}
    assert unreadable == [(str(stray), "names artifact 'salus_policies', filed as 'bandana_layouts'")]
    assert artifacts.read_record(own, MACHINE)[0] is not None
    assert artifacts.read_record(stray, MACHINE) == (
        None, "names artifact 'salus_policies', filed as 'bandana_layouts'", False)


@pytest.mark.parametrize("profile", ["Smoke", " SMOKE ", "smoke"])
def test_the_records_profile_is_read_in_any_case(tmp_path, profile):
    """As DLSYSBENCH_PROFILE and --profile are (impls.harness.profiles.name_of)."""
    _put(tmp_path, _record(profile=profile))
    unreadable: list = []
    assert set(artifacts.load_latest(MACHINE, tmp_path, unreadable)) == {"bandana_layouts"}
    assert unreadable == []                   # the old code: "a record of the 'Smoke' profile ... left out"


def test_another_profile_in_another_case_is_still_left_out(tmp_path):
    path = _put(tmp_path, _record(profile="Full"))
    unreadable: list = []
    assert artifacts.load_latest(MACHINE, tmp_path, unreadable) == {}
    assert unreadable == [(str(path), "a record of the 'Full' profile, filed under 'box-smoke': left out")]


def test_a_record_without_the_optional_fields_is_read(tmp_path):
    """A field absent is not recorded (an older record), not damaged."""
    record = _record()
    for field in ("commit", "machine", "profile", "created", "experiment", "synthetic"):
        del record[field]
    _put(tmp_path, record)
    assert artifacts.load_latest(MACHINE, tmp_path)["bandana_layouts"]["data"] == {"x": [1]}


def test_a_machine_name_without_a_profile_does_not_mix_two_profiles_records(tmp_path):
    """Records of smoke and full under one bare name were drawn side by side in one report."""
    def put(name, commit, created, profile):
        folder = tmp_path / "probebox" / commit
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps({
            "schema": artifacts.SCHEMA, "name": name, "commit": commit, "created": created,
            "machine": "probebox", "profile": profile, "data": {"p": profile}}))

    put("layouts", "c1", "2026-12-01T10:00:00+00:00", "smoke")
    put("subclusters", "c2", "2026-12-01T11:00:00+00:00", "full")
    unreadable: list = []
    assert set(artifacts.load_latest("probebox", tmp_path, unreadable)) == {"subclusters"}   # the newest's profile
    [(path, why)] = unreadable
    assert path.endswith("layouts.json") and why == ("a record of the 'smoke' profile, filed under 'probebox', whose "
                                                     "report reads the 'full' profile (asv run --machine "
                                                     "<host>-<profile>): left out")
    assert set(artifacts.load_latest("probebox", tmp_path, [], profile=" Smoke")) == {"layouts"}   # the results'
    put("layouts", "c3", "2026-12-01T12:00:00+00:00", "Full")
    assert {name: r["commit"] for name, r in artifacts.load_latest("probebox", tmp_path).items()} == {
        "layouts": "c3", "subclusters": "c2"}


def test_a_report_under_a_machine_name_without_a_profile_draws_its_results_profiles_artifacts(tmp_path):
    """Results run under smoke (their versions say so): a newer full record is left out, not
    drawn beside them, and the header says smoke."""
    from impls.harness.report.build import build_report

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "report"
    results = tmp_path / "results"
    (results / "toybox").mkdir(parents=True)
    for path in (fixtures / "asv_results" / "toybox").glob("*.json"):
        data = json.loads(path.read_text())
        if "results" in data:
            at = data["result_columns"].index("version")
            for row in data["results"].values():
                row[at] = f"{row[at]}+smoke"
        (results / "toybox" / path.name).write_text(json.dumps(data))
    for profile, commit, created in (("smoke", "02192a18b969f50b9d1123329e1aaf05f95e66d1", "2026-12-01T10:00:00+00:00"),
                                     ("full", "854149dbb27c7199affb4e772fa341f30f2630b7", "2026-12-01T11:00:00+00:00")):
        folder = tmp_path / "artifacts" / "toybox" / commit
        folder.mkdir(parents=True)
        (folder / f"curve_{profile}.json").write_text(json.dumps({
            "schema": artifacts.SCHEMA, "name": f"curve_{profile}", "commit": commit, "created": created,
            "machine": "toybox", "profile": profile, "data": {}}))
    built = build_report("toybox", results, tmp_path / "artifacts", fixtures / "claims.toml", {})
    assert built.profile == "smoke"
    [(path, why)] = [(p, w) for p, w in built.unreadable if "curve_" in p]
    assert path.endswith("curve_full.json") and "whose report reads the 'smoke' profile" in why


def test_numpy_values_are_stored_as_the_numbers_they_hold_and_other_objects_refused(monkeypatch, tmp_path):
    """A run's ``np.int64`` sum read back as the text "6" made a claim blame claims.toml and a
    figure plot categories; a value JSON cannot hold is refused, named by where it is."""
    import numpy as np

    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path))
    data = {"points": [{"n": np.int64(3), "sum": np.int64(6), "ok": np.bool_(True), "share": np.float32(0.5),
                        "hist": np.arange(3, dtype=np.int32), "where": tmp_path / "x"}]}
    path = artifacts.save_artifact("toy", data, experiment="t.toy", synthetic=True, commit="c" * 40)
    stored = json.loads(path.read_text())["data"]["points"][0]
    assert stored == {"n": 3, "sum": 6, "ok": True, "share": 0.5, "hist": [0, 1, 2], "where": str(tmp_path / "x")}
    assert [type(stored[k]) for k in ("n", "ok", "share")] == [int, bool, float]

    with pytest.raises(TypeError, match=r"the record\.data\.points\[0\]\.seen a builtins\.set is not JSON data"):
        artifacts.save_artifact("toy", {"points": [{"seen": {1, 2}}]}, experiment="t.toy", synthetic=True,
                                commit="c" * 40)
    assert json.loads(path.read_text())["data"]["points"][0]["sum"] == 6     # the earlier record is untouched
