"""Which stored asv results the report reads: only those of the machine's profile (its name's
``-<profile>``, else the newest run's), and of a commit run twice only the newer run, each point
once; what is left out is listed with why (hand-made asv result files in tmp_path)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from impls.harness.report.build import build_report
from impls.harness.report.results import latest_points, read_results

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = ROOT / "reports" / "claims.toml"
RATIO = "bench_salus.SrtfOverFifo.track_ratio"
PIN = json.loads((ROOT / "benchmarks" / "versions.json").read_text())[RATIO]
SOURCES = ["'real'", "'sim'", "'sim_inrun'"]
OLD, NEW = "1" * 40, "2" * 40
DAY = 86_400_000   # ms


def write_run(results: Path, machine: str, commit: str, day: int, values: list[float], *, profile: str = "quick",
              started: int | None = None, env: str = "existing-py", name: str | None = None) -> Path:
    """An asv 0.6 result file of ``machine`` holding track_ratio's three points (``values``) at
    ``commit``, dated ``day`` days after the epoch, its version that of ``profile``."""
    folder = results / machine
    folder.mkdir(parents=True, exist_ok=True)
    version = PIN if profile == "quick" else f"{PIN}+{profile}"
    started = started if started is not None else day * DAY
    doc = {"commit_hash": commit, "env_name": env, "date": day * DAY, "params": {"machine": machine},
           "python": "3.11", "requirements": {}, "env_vars": {}, "durations": {}, "version": 2,
           "result_columns": ["result", "params", "version", "started_at", "duration"],
           "results": {RATIO: [values, [SOURCES], version, started, 1.0]}}
    path = folder / (name or f"{commit[:8]}-{env}.json")
    path.write_text(json.dumps(doc))
    return path


def real_ratio(points) -> list[float]:
    rows = points[(points["benchmark"] == RATIO) & (points["source"] == "real")]
    return list(rows["value"])



def read(results: Path, machine: str) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """``read_results`` of ``machine`` under ``results``, and the files it listed as left out."""
    unreadable: list[tuple[str, str]] = []
    return read_results(results, machine, unreadable), unreadable

def test_results_of_another_profile_than_the_machine_names_are_left_out_and_listed(tmp_path):
    quick = write_run(tmp_path, "box-quick", OLD, 10, [3.2, 2.0, 2.0])
    smoke = write_run(tmp_path, "box-quick", NEW, 11, [0.9, 2.0, 2.0], profile="smoke", env="smoke-env")
    frame, unreadable = read(tmp_path, "box-quick")
    assert real_ratio(latest_points(frame)) == [3.2]        # the old code: the newer smoke run's 0.9
    assert set(frame["commit"]) == {OLD}                    # nor in the history
    assert [p for p, _ in unreadable] == [str(smoke)]
    assert "a run of the 'smoke' profile, filed under 'box-quick': left out" in unreadable[0][1]
    assert str(quick) not in dict(unreadable)


def test_a_machine_name_without_a_profile_reads_its_newest_runs_profile(tmp_path):
    smoke = write_run(tmp_path, "box", OLD, 10, [0.9, 2.0, 2.0], profile="smoke", env="smoke-env")
    write_run(tmp_path, "box", NEW, 11, [3.2, 2.0, 2.0])
    frame, unreadable = read(tmp_path, "box")
    assert set(frame["commit"]) == {NEW} and real_ratio(latest_points(frame)) == [3.2]
    assert [p for p, _ in unreadable] == [str(smoke)]
    assert "a run of the 'smoke' profile, filed under 'box' with newer 'quick' results" in unreadable[0][1]


def test_a_version_without_a_profile_is_kept_under_any(tmp_path):
    """It is quick's, or from before versions named their profile: under a smoke machine, the latter."""
    write_run(tmp_path, "box-smoke", OLD, 10, [3.2, 2.0, 2.0])
    write_run(tmp_path, "box-smoke", NEW, 11, [0.9, 2.0, 2.0], profile="smoke")
    frame, unreadable = read(tmp_path, "box-smoke")
    assert set(frame["commit"]) == {OLD, NEW} and unreadable == []


def test_one_file_with_benchmarks_of_two_profiles_keeps_the_machines(tmp_path):
    """asv keeps, in a commit's file, the numbers a later partial run did not measure again."""
    path = write_run(tmp_path, "box-quick", NEW, 11, [3.2, 2.0, 2.0])
    doc = json.loads(path.read_text())
    other = "bench_salus.SrtfOverFifo.track_ratio_smoke_only"
    doc["results"][other] = [[1.0], [], f"{PIN}+smoke", 11 * DAY, 1.0]
    path.write_text(json.dumps(doc))
    frame, unreadable = read(tmp_path, "box-quick")
    assert set(frame["benchmark"]) == {RATIO}
    assert unreadable == [(str(path), f"{path}: 1 benchmark(s) of the 'smoke' profile, filed under 'box-quick': "
                                      "left out")]


@pytest.mark.parametrize("name", ["22222222-existing-py-rerun.json",                 # a rerun kept by hand
                                  "22222222-existing-py-20990101T000000.json"])     # .asv/runs' archived copy
def test_an_older_run_of_the_same_commit_is_set_aside_and_each_point_read_once(tmp_path, name):
    older = write_run(tmp_path, "box-quick", NEW, 11, [3.2, 2.0, 2.0], started=11 * DAY + 1000)
    write_run(tmp_path, "box-quick", NEW, 11, [0.9, 2.0, 2.0], started=11 * DAY + 2000, name=name)
    frame, unreadable = read(tmp_path, "box-quick")
    points = latest_points(frame)
    assert real_ratio(points) == [0.9]                      # the old code: [3.2, 0.9], two points of one param
    assert len(points) == 3
    assert [p for p, _ in unreadable] == [str(older)]
    assert "a run of commit 22222222 that ran again later" in unreadable[0][1]


def test_copies_of_one_run_count_once_and_are_not_listed(tmp_path):
    write_run(tmp_path, "box-quick", NEW, 11, [3.2, 2.0, 2.0])
    write_run(tmp_path, "box-quick", NEW, 11, [3.2, 2.0, 2.0], name="22222222-existing-py-20990101T000000.json")
    frame, unreadable = read(tmp_path, "box-quick")
    points = latest_points(frame)
    assert (real_ratio(points), len(points), unreadable) == ([3.2], 3, [])


def test_a_rerun_no_longer_reads_as_a_claims_file_error(tmp_path):
    write_run(tmp_path, "box-quick", NEW, 11, [3.2, 2.0, 2.0], started=11 * DAY + 1000)
    write_run(tmp_path, "box-quick", NEW, 11, [3.1, 2.0, 2.0], started=11 * DAY + 2000, name="rerun.json")
    report = build_report("box-quick", tmp_path, tmp_path / "artifacts", CLAIMS, figure_specs={})
    claim = next(r for r in report.claims if r.claim.id == "salus-jct-srtf-vs-fifo")
    assert claim.measured == 3.1 and "do not fit" not in claim.verdict


@pytest.mark.parametrize("machine, profile, expected", [
    ("box-quick", "smoke", "quick"), ("box", "smoke", "smoke"),
    ("box", "quick", "unknown"),            # a version naming no profile: quick's, or from before versions named one
])
def test_without_artifacts_the_header_names_the_results_profile(tmp_path, machine, profile, expected):
    write_run(tmp_path, machine, OLD, 10, [3.2, 2.0, 2.0], profile=profile)
    report = build_report(machine, tmp_path, tmp_path / "artifacts", CLAIMS, figure_specs={})
    assert report.profile == expected                       # the old code: "unknown"


def test_render_report_judges_the_machines_profile_and_lists_the_other(tmp_path, load_script, capsys):
    results, out = tmp_path / "results", tmp_path / "out"
    write_run(results, "box-quick", OLD, 10, [3.2, 2.0, 2.0])
    smoke = write_run(results, "box-quick", NEW, 11, [0.9, 2.0, 2.0], profile="smoke", env="smoke-env")
    (tmp_path / "artifacts").mkdir()                          # a store with no artifact yet
    rc = load_script("render_report").main(["--machine", "box-quick", "--results", str(results), "--artifacts",
                                            str(tmp_path / "artifacts"), "--claims", str(CLAIMS), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0 and "1 input file(s) were left out" in err and "'smoke' profile" in err
    document = json.loads((out / "report.json").read_text())
    claim = next(c for c in document["claims"] if c["id"] == "salus-jct-srtf-vs-fifo")
    assert (claim["measured"], claim["commit"], document["profile"]) == (3.2, OLD, "quick")
    markdown = (out / "report.md").read_text()
    assert smoke.name in markdown.split("Unreadable inputs", 1)[1]


def test_a_default_profile_run_filed_under_another_profiles_name_is_left_out(tmp_path):
    """`asv run --machine box-full` without its profile set files quick numbers, whose versions
    name no profile, under a full name: at a commit whose code names the other profiles in the
    version they are no full results and are left out (they were judged as full); at one from
    before the naming, or one git does not know, they may be full results and are kept."""
    from impls.harness import paths, profiles

    if paths.descendants(profiles.VERSIONED_SINCE, []) is None:
        pytest.skip("git cannot tell a commit's ancestry here (no git, or a shallow clone)")
    git = lambda *args: subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,  # noqa: E731
                                       check=True).stdout.strip()
    before, after = git("rev-parse", f"{profiles.VERSIONED_SINCE}^"), git("rev-parse", "HEAD")
    misfiled = write_run(tmp_path, "box-full", after, 12, [0.9, 2.0, 2.0], env="quick-env")
    write_run(tmp_path, "box-full", before, 10, [3.2, 2.0, 2.0])                         # from before the naming
    write_run(tmp_path, "box-full", OLD, 9, [3.1, 2.0, 2.0], env="unknown")            # a commit git lacks
    write_run(tmp_path, "box-full", NEW, 11, [2.5, 2.0, 2.0], profile="full", env="full-env")
    frame, unreadable = read(tmp_path, "box-full")
    assert set(frame["commit"]) == {before, OLD, NEW}
    assert unreadable == [(str(misfiled), f"{misfiled}: a run of the 'quick' profile, filed under 'box-full': "
                                          "left out")]
    quick, left = read(tmp_path, "box-quick")          # under the default's own name nothing changes
    assert quick.empty and left == []
