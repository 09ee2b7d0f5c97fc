"""`make compare` and `make noise` on damaged inputs, treated as the report treats them: a
benchmarks.json that does not read is noted and the names come from the benchmark code, one
repeat run whose results are not asv's is left out, and a result file without a commit date
is not a run (nothing orders it)."""
from __future__ import annotations

import json

from compare_fixtures import (BASE, HEAD, MACHINE, RATE, add_earlier_runs, base_values, measure, run_compare, script,
                              write_run)
from impls.harness.report import runs


def test_a_damaged_benchmarks_json_is_noted_and_the_regression_still_found(results):
    noise_file = measure(add_earlier_runs(results))
    write_run(results / MACHINE, HEAD, 300, base_values(rate=600.0))
    bench = results / "benchmarks.json"
    bench.write_text(bench.read_text()[:40])                          # cut short mid-write
    done = run_compare(results, noise_file, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("REGRESSION")]
    assert RATE in line and "policy='lru'" in line                   # named from the benchmark code
    assert f"note: {bench}:1: not valid JSON" in done.stderr
    out = results.parent / "again.json"
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"note: {bench}:1: not valid JSON" in done.stderr
    assert json.loads(out.read_text())["numbers"] == json.loads(noise_file.read_text())["numbers"]


def test_one_repeat_run_that_is_not_asvs_is_left_out_of_the_noise(results):
    add_earlier_runs(results)
    odd = write_run(results / MACHINE, BASE, 5, base_values(), name=f"{BASE[:8]}-existing-py-extra.json")
    data = json.loads(odd.read_text())
    data["results"][RATE][0] = [1.0, 2.0, 3.0]                      # three values for one point
    odd.write_text(json.dumps(data))
    out = results.parent / "n.json"
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"not a run, left out: {odd}: benchmark '{RATE}' has 3 results" in done.stderr
    assert "from 8 runs of 1 commit(s)" in done.stdout              # the fixture's eight, not nine
    assert odd.name not in {run["file"] for run in json.loads(out.read_text())["runs"]}


def test_a_result_file_without_a_commit_date_is_not_a_run(results):
    """Ordered as the oldest, it made the default pair the two runs before it, silently."""
    noise_file = measure(add_earlier_runs(results))
    newest = write_run(results / MACHINE, HEAD, 300, base_values(rate=600.0))
    data = json.loads(newest.read_text())
    del data["date"]
    newest.write_text(json.dumps(data))
    skipped: list = []
    assert HEAD not in {run.commit for run in runs.stored_runs(results, MACHINE, skipped)}
    assert skipped == [(newest, "no commit date (its 'date' is None; asv writes the commit's date, in ms since "
                                "1970, in every result file)")]
    done = run_compare(results, noise_file)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no commit date" in done.stderr and "the two newest runs are unknown" in done.stderr


def test_a_file_without_a_commit_date_does_not_stop_archiving_the_new_run(results):
    """make reproduce archives the run asv just made; another commit's undated file beside it
    made archive_run raise after asv had finished, and no report was rendered."""
    undated = write_run(results / MACHINE, HEAD, 300, base_values())
    data = json.loads(undated.read_text())
    del data["date"]
    undated.write_text(json.dumps(data))
    copies = runs.archive_run(results, MACHINE, BASE)
    assert copies and all(path.name.startswith(BASE[:8]) for path in copies)


def test_a_damaged_result_file_named_by_a_ref_is_said_to_be_unreadable(results, monkeypatch, capsys):
    """``--head main`` (a branch) names the commit git resolves it to: its damaged file gets
    the same "cannot be read" answer as its hash, not a bare "no stored run"."""
    import importlib.util

    from compare_fixtures import ROOT
    from impls.harness import paths

    noise_file = measure(add_earlier_runs(results))
    damaged = write_run(results / MACHINE, HEAD, 300, base_values())
    damaged.write_text(damaged.read_text()[:60])                      # cut short mid-write
    spec = importlib.util.spec_from_file_location("compare_script", ROOT / "scripts" / "compare.py")
    compare_script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare_script)
    monkeypatch.setattr(paths, "resolve_commit", lambda name: HEAD if name in ("main", HEAD[:8]) else None)
    for head in (HEAD[:8], "main"):
        assert compare_script.main(["--results", str(results), "--machine", MACHINE, "--noise", str(noise_file),
                                    "--base", BASE[:8], "--head", head]) == 2
        err = capsys.readouterr().err
        assert f"no stored run of commit '{head}'" in err and "its result file(s) cannot be read" in err, err
        assert f"{damaged}: not a readable asv result file" in err
