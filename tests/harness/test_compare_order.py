"""Which two runs ``make compare`` compares, and numbers at the edges of a float: commits in
git's order, else in the order of their dates (asv measures a range newest first; the report
orders its history the same way), a pair of one environment
where the commits share one, absolute-scale floors of points of one size, and values whose
ratio or size a float cannot hold."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from compare_fixtures import (add_earlier_runs, BASE, HEAD, MACHINE, OTHER, RATE, base_values, measure, results,  # noqa: F401
                              run_compare, write_run)
from impls.harness.report import compare, noise, runs
from impls.harness.report.results import ResultsError, read_result_file


@pytest.fixture()
def results(results):  # noqa: F811 - the shared fixture, with more runs
    """The shared fixture with more runs (:func:`compare_fixtures.add_earlier_runs`)."""
    return add_earlier_runs(results)

DAY = 86_400
ROOT_DIR = Path(__file__).resolve().parents[2]


def test_runs_of_a_range_are_ordered_by_commit_date_not_by_when_they_ran(results):
    noise_file = measure(results)                       # BASE, dated 1_700_000_000, ran twice
    # `asv run BASE..OTHER`: the newest commit first, so the older HEAD ran last
    write_run(results / MACHINE, OTHER, 300, base_values(rate=500.0), date_s=1_700_000_000 + 2 * DAY)
    runs.archive_run(results, MACHINE, OTHER)
    write_run(results / MACHINE, HEAD, 400, base_values(), date_s=1_700_000_000 + DAY)
    runs.archive_run(results, MACHINE, HEAD)
    stored = runs.stored_runs(results, MACHINE)
    assert [r.commit for r in stored][-2:] == [HEAD, OTHER]
    done = run_compare(results, noise_file)
    assert f"{HEAD[:8]}@" in done.stdout.splitlines()[0].split("->")[0]
    assert f"{OTHER[:8]}@" in done.stdout.splitlines()[0].split("->")[1]
    assert done.returncode == 1 and "REGRESSION" in done.stdout   # the halved rate, the right way round


def test_two_runs_of_the_newest_commit_are_compared_with_each_other(results):
    noise_file = measure(results)
    write_run(results / MACHINE, HEAD, 300, base_values(), date_s=1_700_000_000 + DAY)
    runs.archive_run(results, MACHINE, HEAD)
    write_run(results / MACHINE, HEAD, 400, base_values(rate=1010.0), date_s=1_700_000_000 + DAY)
    runs.archive_run(results, MACHINE, HEAD)
    done = run_compare(results, noise_file)
    first = done.stdout.splitlines()[0]
    assert first.count(f"{HEAD[:8]}@") == 2 and done.returncode == 0, done.stdout + done.stderr


def test_named_commits_are_compared_in_an_environment_both_have(results):
    noise_file = measure(results)                       # BASE in existing-py only
    write_run(results / MACHINE, HEAD, 300, base_values(rate=1010.0), date_s=1_700_000_000 + DAY)
    runs.archive_run(results, MACHINE, HEAD)
    write_run(results / MACHINE, HEAD, 400, base_values(rate=400.0), env="virtualenv-py3.11",
              date_s=1_700_000_000 + DAY)               # newer, but in an environment BASE lacks
    runs.archive_run(results, MACHINE, HEAD)
    done = run_compare(results, noise_file, "--base", BASE, "--head", HEAD)
    assert done.returncode == 0 and "two environments" not in done.stdout, done.stdout + done.stderr
    alone = run_compare(results, noise_file, "--base", BASE, "--head", HEAD[:8])
    assert alone.stdout == done.stdout


def _frame(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"benchmark": "b.Switch.track_ms", "param_label": list(values), "status": "ok",
                         "value": list(values.values()), "type": "track", "version": "1"})


def test_an_absolute_floor_comes_only_from_points_of_the_same_size():
    scales = {"b.Switch.track_ms": noise.ABSOLUTE}
    first = _frame({"gap": 0.010, "gap2": 0.020, "restart": 2000.0, "restart2": 1500.0})
    second = _frame({"gap": 0.012, "gap2": 0.021, "restart": 2100.0, "restart2": 1580.0})
    measured = noise.measure_noise(MACHINE, {"c": [first, second]}, scales=scales)
    def sigma(*ranges):      # two runs each: sd = range / sqrt(2), pooled over the points
        return math.sqrt(sum(r * r for r in ranges) / len(ranges)) / math.sqrt(2)

    def expect(found, sd, df):
        assert (found.sigma, found.df) == (pytest.approx(sd), df)
        assert found.threshold == pytest.approx(noise.two_run_threshold(sd, df, noise.ABSOLUTE))

    gap = measured.get("b.Switch.track_ms", "gap")
    expect(gap, sigma(0.002), 2)                                     # its own sigma, on the pool's df
    expect(measured.get("b.Switch.track_ms", "gap2"), sigma(0.002, 0.001), 2)   # pooled with gap's, not the restarts'
    restart = measured.get("b.Switch.track_ms", "restart")
    expect(restart, sigma(100.0), 2)                                 # its own; its sibling's is 80
    expect(measured.get("b.Switch.track_ms", "restart2"), sigma(100.0, 80.0), 2)
    # a rise of the 0.01-ms point to 2 ms is a regression, not lost under the restarts' threshold
    assert restart.threshold > 1000 * gap.threshold
    assert compare.judge_change(0.012, 2.0, compare.LOWER, gap.threshold, noise.ABSOLUTE) == compare.REGRESSION


@pytest.mark.parametrize("a, b, same", [(0.01, 0.02, True), (0.01, 2000.0, False), (0.0, 0.0, True),
                                        (0.0, 0.01, False), (1.0, 10.0, True), (1.0, 10.5, False)])
def test_points_of_one_size(a, b, same):
    assert noise.comparable(a, b) is same and noise.comparable(b, a) is same


@pytest.mark.parametrize("old, new, expected", [(1e-200, 1e200, compare.IMPROVEMENT),
                                                (1e200, 1e-200, compare.REGRESSION)])
def test_a_ratio_a_float_cannot_hold_is_judged_not_a_crash(old, new, expected):
    assert noise.factor(old, new) is None
    assert compare.judge_change(old, new, compare.HIGHER, 0.05) == expected
    t = noise.Threshold("b", "", 2, 0.01, 0.05)
    assert noise.moved_beyond(old, new, t.threshold, t.scale)


def _edited(path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def test_a_value_too_large_for_a_float_is_not_a_result_file(results, tmp_path):
    path = write_run(tmp_path / "r", HEAD, 300, base_values())
    text = path.read_text().replace("[1000.0]", "[1" + "0" * 400 + "]")
    path.write_text(text)
    with pytest.raises(ResultsError, match="too large for a float"):
        read_result_file(path, MACHINE)


def test_a_file_without_a_result_column_is_not_read_as_every_number_failed(tmp_path):
    path = write_run(tmp_path / "r", HEAD, 300, base_values())
    _edited(path, lambda d: d.update(result_columns=["value", *d["result_columns"][1:]]))
    with pytest.raises(ResultsError, match="no 'result' column"):
        read_result_file(path, MACHINE)


def test_a_thresholds_file_with_a_number_too_large_is_refused(tmp_path):
    path = tmp_path / "noise.json"
    path.write_text('{"schema": 1, "machine": "m", "numbers": [{"benchmark": "b", "threshold": 1'
                    + "0" * 400 + "}]}")
    with pytest.raises(noise.NoiseError, match="too large for a float"):
        noise.load_noise(path)


def test_an_undated_run_is_left_out_as_the_report_leaves_it_out(tmp_path):
    """Sorted first, it silently moved compare's default pair; the report could not read it."""
    results = tmp_path / ".asv" / "results"
    write_run(results / MACHINE, BASE, 500, base_values())                   # dated, but ran last
    undated = write_run(results / MACHINE, HEAD, 300, base_values())
    _edited(undated, lambda d: d.update(date=None))
    with pytest.raises(ValueError, match="no commit date"):
        runs.read_run(undated, MACHINE)
    skipped: list = []
    assert [r.commit for r in runs.stored_runs(results, MACHINE, skipped)] == [BASE]
    assert [path for path, _ in skipped] == [undated]
    with pytest.raises(ResultsError, match="no commit date"):
        read_result_file(undated, MACHINE)


def _git(repo, *args, date=None):
    import os
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_commits_are_ranked_by_git_history_not_by_their_dates(tmp_path, monkeypatch):
    """A rebased child keeps its author date, older than its new parent's: git's order says
    which comes first; a commit git does not know gives no ranks at all."""
    from impls.harness import paths

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "parent", date="2026-12-02T00:00:00")
    parent = _git(repo, "rev-parse", "HEAD")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "child", date="2026-12-01T00:00:00")  # older date
    child = _git(repo, "rev-parse", "HEAD")
    monkeypatch.setattr(paths, "repo_root", lambda: repo)
    ranks = paths.commit_ranks([child, parent])
    assert ranks[parent] < ranks[child]
    assert paths.commit_ranks([child, "f" * 40]) == {child: ranks[child] - ranks[parent]}  # the unknown left out
    assert paths.commit_ranks(["f" * 40]) is None


def test_the_default_pair_follows_git_history_when_dates_disagree(monkeypatch, tmp_path):
    import importlib.util

    from impls.harness import paths

    spec = importlib.util.spec_from_file_location("compare_script", paths.repo_root() / "scripts" / "compare.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    results = tmp_path / ".asv" / "results"
    write_run(results / MACHINE, BASE, 300, base_values(), date_s=1_700_000_000 + DAY)   # the parent
    write_run(results / MACHINE, HEAD, 400, base_values(), date_s=1_700_000_000)         # rebased: older date
    monkeypatch.setattr(paths, "commit_ranks", lambda commits: {BASE: 0, HEAD: 1})
    stored = runs.stored_runs(results, MACHINE)
    assert [r.commit for r in stored] == [BASE, HEAD]
    assert [r.commit for r in script.pick_runs(stored, None, None, MACHINE)] == [BASE, HEAD]
    monkeypatch.setattr(paths, "commit_ranks", lambda commits: None)          # git cannot tell: dates
    assert [r.commit for r in runs.stored_runs(results, MACHINE)] == [HEAD, BASE]
    # a pre-rebase commit git has pruned, dated after both: older than every commit git knows
    write_run(results / MACHINE, OTHER, 500, base_values(), date_s=1_700_000_000 + 2 * DAY)
    monkeypatch.setattr(paths, "commit_ranks", lambda commits: {BASE: 0, HEAD: 1})
    stored = runs.stored_runs(results, MACHINE)
    assert [r.commit for r in stored] == [OTHER, BASE, HEAD]
    assert [r.commit for r in script.pick_runs(stored, None, None, MACHINE)] == [BASE, HEAD]


def test_the_report_orders_commits_by_git_history_when_dates_disagree(monkeypatch, tmp_path):
    """The history's x axis and each benchmark's newest run follow git, as ``make compare`` does."""
    from impls.harness import paths
    from impls.harness.report import results as results_module

    results = tmp_path / ".asv" / "results"
    write_run(results / MACHINE, BASE, 300, base_values(), date_s=1_700_000_000 + DAY)
    write_run(results / MACHINE, HEAD, 400, base_values(rate=500.0), date_s=1_700_000_000)
    monkeypatch.setattr(paths, "commit_ranks", lambda commits: {BASE: 0, HEAD: 1})
    frame = results_module.read_results(results, MACHINE)
    assert list(results_module.commits(frame)["commit"]) == [BASE, HEAD]
    assert set(results_module.latest_points(frame)["commit"]) == {HEAD}
    newest = results_module.newest_per_point(frame, ("benchmark", "param_label"))
    assert set(newest["commit"]) == {HEAD}
    monkeypatch.setattr(paths, "commit_ranks", lambda commits: None)
    frame = results_module.read_results(results, MACHINE)
    assert list(results_module.commits(frame)["commit"]) == [HEAD, BASE]
    assert set(results_module.latest_points(frame)["commit"]) == {BASE}


def test_an_absolute_point_that_repeated_exactly_is_floored_while_a_sibling_moved():
    scales = {"b.Switch.track_ms": noise.ABSOLUTE}
    first = _frame({"zero": 0.0, "alone": 5.0, "p": 400.0, "q": 500.0})
    second = _frame({"zero": 0.0, "alone": 5.0, "p": 440.0, "q": 600.0})    # p moved 10%, q 20%
    measured = noise.measure_noise(MACHINE, {"c": [first, second]}, scales=scales)
    # no point of its size moved: the moved points' sigma relative to their largest value, pooled, at its size
    relative = math.sqrt(((40 / 440) ** 2 + (100 / 600) ** 2) / 2) / math.sqrt(2)
    alone = measured.get("b.Switch.track_ms", "alone")
    assert (alone.sigma, alone.df) == (pytest.approx(relative * 5.0), 2)
    assert alone.threshold == pytest.approx(noise.two_run_threshold(relative * 5.0, 2, noise.ABSOLUTE))
    # it read 0: the moved points' pooled sigma
    zero = measured.get("b.Switch.track_ms", "zero")
    assert (zero.sigma, zero.df) == (pytest.approx(math.sqrt((40 ** 2 + 100 ** 2) / 2) / math.sqrt(2)), 2)
    assert zero.threshold > 0


def test_artifacts_of_a_rebased_commit_rank_after_its_parents(tmp_path):
    """The report ranks artifacts by commit dates made strictly increasing along git's order:
    a rebased child dated before its parent, its record made first (asv measures a range
    newest first), is still the newest."""
    from impls.harness import artifacts
    from impls.harness.report import build

    table = pd.DataFrame({"commit": [BASE, HEAD, OTHER],
                          "date": pd.to_datetime([2e12, 1e12, 3e12], unit="ms", utc=True)})
    dates = build._dates_in_order(table)
    assert dates[BASE] < dates[HEAD] < dates[OTHER]
    for commit, made in ((HEAD, "2026-12-01T10:00:00+00:00"), (BASE, "2026-12-01T11:00:00+00:00")):
        record = {"schema": artifacts.SCHEMA, "name": "x", "commit": commit, "created": made,
                  "machine": "box-quick", "profile": "quick", "data": {}}
        (tmp_path / "box-quick" / commit).mkdir(parents=True)
        (tmp_path / "box-quick" / commit / "x.json").write_text(json.dumps(record))
    two = build._dates_in_order(table.iloc[:2])
    assert artifacts.load_latest("box-quick", tmp_path, commit_dates=two)["x"]["commit"] == HEAD
    undated = pd.DataFrame({"commit": [BASE, HEAD], "date": pd.to_datetime([None, 1e12], unit="ms", utc=True)})
    assert list(build._dates_in_order(undated)) == [HEAD]


def test_a_commit_git_does_not_know_is_drawn_first_but_no_step_is_judged_at_it(monkeypatch, tmp_path):
    """A commit of unknown place (not in git) must not make a regression or an improvement."""
    from impls.harness import paths
    from impls.harness.report import history
    from impls.harness.report import results as results_module

    results = tmp_path / ".asv" / "results"
    commits = [("a" * 40, 10.0), ("b" * 40, 10.0), ("c" * 40, 10.0), ("d" * 40, 5.0)]
    for day, (commit, rate) in enumerate(commits):
        write_run(results / MACHINE, commit, 300 + day, base_values(rate=rate), date_s=1_700_000_000 + day * DAY)
    # "d" is unknown to git, dated last; the three git knows repeat one value
    monkeypatch.setattr(paths, "commit_ranks", lambda found: {c: i for i, (c, _) in enumerate(commits[:3])})
    frame = results_module.read_results(results, MACHINE)
    table = results_module.commits(frame)
    assert list(table["commit"]) == ["d" * 40, "a" * 40, "b" * 40, "c" * 40]
    assert list(table["placed"]) == [False, True, True, True]
    figures = history.history_figures(frame, {RATE: "higher"}, workers=1)
    assert figures and all(not f.steps for f in figures)
    monkeypatch.setattr(paths, "commit_ranks", lambda found: {c: i for i, (c, _) in enumerate(commits)})
    figures = history.history_figures(results_module.read_results(results, MACHINE),
                                      {RATE: "higher"}, workers=1)
    assert [s.kind for f in figures for s in f.steps] == ["regression"]


def _real_pair():
    import subprocess

    from impls.harness import paths, profiles

    def rev(name):
        try:
            done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"],
                                  cwd=paths.repo_root(), capture_output=True, text=True)
        except OSError:
            pytest.skip("no git here")
        if done.returncode != 0:
            pytest.skip(f"this checkout's git has no {name} (a shallow clone, or no git)")
        return done.stdout.strip()
    # commits from before benchmark versions named their profile: the fixture's versions ("1")
    # name none, which at a later commit would be the default profile's, not box-smoke's
    older = f"{profiles.VERSIONED_SINCE}~1"
    return rev(f"{older}~1"), rev(older)


def test_a_base_that_comes_after_the_head_is_said(results):
    noise_file = measure(results)
    parent, child = _real_pair()
    write_run(results / MACHINE, parent, 300, base_values())
    write_run(results / MACHINE, child, 400, base_values(rate=500.0))
    backwards = run_compare(results, noise_file, "--base", child[:12], "--head", parent[:12])
    assert "comes after the head" in backwards.stdout
    forwards = run_compare(results, noise_file, "--base", parent[:12], "--head", child[:12])
    assert "comes after the head" not in forwards.stdout and forwards.returncode == 1


def test_thresholds_that_name_no_machine_are_said_to_be_applied_anyway(results):
    noise_file = measure(results)
    document = json.loads(noise_file.read_text())
    document.pop("machine")
    noise_file.write_text(json.dumps(document))
    write_run(results / MACHINE, HEAD, 300, base_values())
    done = run_compare(results, noise_file)
    assert "names no machine" in done.stdout, done.stdout + done.stderr


def test_a_named_commit_whose_only_file_is_unreadable_says_why(results):
    noise_file = measure(results)
    path = write_run(results / MACHINE, HEAD, 300, base_values())
    _edited(path, lambda d: d.update(version=1))
    done = run_compare(results, noise_file, "--base", BASE[:8], "--head", HEAD[:8])
    assert done.returncode == 2
    assert "cannot be read" in done.stderr and "asv update" in done.stderr, done.stderr


def test_two_branches_are_not_said_to_descend_and_a_shallow_clone_ranks_what_it_has(tmp_path, monkeypatch):
    """'base comes after head' needs ancestry, not a later place in rev-list's order; a shallow
    clone still ranks the commits it has (test_git_shallow.py: the ones it lacks go first)."""
    import importlib.util
    import subprocess

    from impls.harness import paths

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    root = _git(repo, "rev-parse", "HEAD")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "left")
    left = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "other", root)
    _git(repo, "commit", "-q", "--allow-empty", "-m", "right")
    right = _git(repo, "rev-parse", "HEAD")
    monkeypatch.setattr(paths, "repo_root", lambda: repo)
    spec = importlib.util.spec_from_file_location("compare_script", ROOT_DIR / "scripts" / "compare.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script._descends(left, root) and not script._descends(root, left)
    assert not script._descends(left, right) and not script._descends(right, left)
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "-b", "main", f"file://{repo}", str(shallow)], check=True)
    monkeypatch.setattr(paths, "repo_root", lambda: shallow)
    assert paths.commit_ranks([left]) == {left: 0}


def _script():
    import importlib.util

    from impls.harness import paths

    spec = importlib.util.spec_from_file_location("compare_script", paths.repo_root() / "scripts" / "compare.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_an_unreadable_file_of_an_older_commit_does_not_block_the_default_pair(monkeypatch, tmp_path, capsys):
    """The default pair is the two newest runs: an unreadable result file whose commit git
    places before both cannot be one of them and is only noted; one of a newer commit blocks."""
    from impls.harness import paths

    script = _script()
    results = tmp_path / ".asv" / "results"
    old = write_run(results / MACHINE, OTHER, 100, base_values(), date_s=1_700_000_000)
    document = json.loads(old.read_text())
    old.write_text(json.dumps({**document, "version": 1}))                    # an older asv's format
    write_run(results / MACHINE, BASE, 300, base_values(), date_s=1_700_000_000 + DAY)
    write_run(results / MACHINE, HEAD, 400, base_values(), date_s=1_700_000_000 + 2 * DAY)
    monkeypatch.setattr(paths, "commit_ranks", lambda commits: {OTHER: 0, BASE: 1, HEAD: 2})
    argv = ["--results", str(results), "--machine", MACHINE, "--default-threshold", "5%"]
    assert script.main(argv) == 0
    out, err = capsys.readouterr()
    assert f"{BASE[:8]}@" in out.splitlines()[0] and f"{HEAD[:8]}@" in out.splitlines()[0]
    assert f"not a run, left out: {old}" in err
    monkeypatch.setattr(paths, "commit_ranks", lambda commits: {BASE: 0, HEAD: 1, OTHER: 2})   # now the newest
    assert script.main(argv) == 2
    assert "the two newest runs are unknown" in capsys.readouterr().err


def test_a_folder_of_another_machines_files_says_results_cannot_be_renamed(tmp_path, capsys):
    script = _script()
    results = tmp_path / ".asv" / "results"
    for commit, started in ((BASE, 100), (HEAD, 200)):
        write_run(results / "box-smoke", commit, started, base_values(), machine="vm-smoke")
    assert script.main(["--results", str(results), "--machine", "box-smoke", "--default-threshold", "5%"]) == 2
    err = capsys.readouterr().err
    assert "box-smoke has 0 stored run(s); compare needs two; 2 file(s) filed under box-smoke record another" in err
    assert "stored results cannot be renamed" in err and "DLSYSBENCH_MACHINE" in err
