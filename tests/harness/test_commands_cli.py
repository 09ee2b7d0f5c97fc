"""``python -m impls``: `--json` as on every command line, and `list` saying what `run` would."""
from __future__ import annotations

import json

import pytest

from impls.harness import commands


def test_run_json_without_a_file_writes_to_standard_output(capsys):
    assert commands.parser().parse_args(["run", "salus.lanes", "--json"]).json == "-"
    assert commands.parser().parse_args(["run", "salus.lanes"]).json is None
    # the old code: "error: argument --json: expected one argument", exit 2
    assert commands.main(["run", "salus.lanes", "--profile", "smoke", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)                   # one pure JSON object
    assert out["run"]["experiment"] == "salus.lanes"


@pytest.mark.parametrize("variable", ["DLSYSBENCH_CACHE", "DLSYSBENCH_ARTIFACTS"])
def test_list_says_no_where_run_refuses_for_a_setting(tmp_path, monkeypatch, capsys, variable):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(variable, str(blocker / "below"))        # a file where a folder must be: run refuses
    assert commands.main(["run", "salus.lanes", "--profile", "smoke"]) == 2
    refused = capsys.readouterr().err
    assert f"{variable}={blocker / 'below'}" in refused
    assert commands.main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    verdicts = [v for row in rows for v in row["runs_here"].values()]
    assert verdicts and all(v.startswith("no: ") for v in verdicts)     # the old code: "yes" for most
    lanes = next(row for row in rows if row["name"] == "salus.lanes")
    assert lanes["runs_here"]["cpu"] == "no: " + refused.strip().removeprefix("error: ")


def test_list_says_yes_with_usable_settings(capsys):
    assert commands.main(["list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["salus.lanes"]["runs_here"]["cpu"] == "yes"
