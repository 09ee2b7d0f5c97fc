"""Why a point has no value: the line a benchmark logs when it skips, fails or returns NaN
(impls/harness/skip_log.py, benchmarks.common.explain_skips), and the report's list and
make compare reading it back in place of "skipped, or without a value"."""
from __future__ import annotations

import json
import math
import sys
import textwrap
import time

import pandas as pd
import pytest

from impls.harness import skip_log
from impls.harness.report import compare, directions
from impls.harness.report.machine_state import MachineState
from impls.harness.report.skipped import FAILURE, UNKNOWN_SKIP, skipped_points

COMMIT = "d" * 40
MACHINE = "box-smoke"


@pytest.fixture()
def logs_here(tmp_path, monkeypatch):
    """Skip logs go under ``tmp_path/artifacts`` for machine ``box-smoke`` and COMMIT."""
    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("DLSYSBENCH_MACHINE", "box")
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "smoke")
    monkeypatch.setenv("ASV_COMMIT", COMMIT)
    return tmp_path / "artifacts"


def test_a_logged_line_is_read_back_for_its_point_and_run(logs_here):
    before = time.time()
    path = skip_log.record("bench_x.A", "run='b'", skip_log.SKIPPED, "needs the\n  moon")
    skip_log.record("bench_x.A.track_y", "run='c'", skip_log.NO_VALUE, "c never gets there")
    assert path == logs_here / MACHINE / COMMIT / "skips.jsonl"
    logs = skip_log.read(MACHINE, logs_here)
    # a setup's skip holds for every method of its class
    entry = skip_log.why(logs, "bench_x.A.track_y", "run='b'", COMMIT, before)
    assert (entry.benchmark, entry.outcome, entry.reason) == ("bench_x.A", skip_log.SKIPPED, "needs the moon")
    assert skip_log.why(logs, "bench_x.A.track_y", "run='c'", COMMIT, before).reason == "c never gets there"
    assert skip_log.why(logs, "bench_x.A.track_z", "run='c'", COMMIT, before) is None   # another method's NaN
    assert skip_log.why(logs, "bench_x.A.track_y", "run='b'", "e" * 40, before) is None  # another commit
    assert skip_log.why(logs, "bench_x.B.track_y", "run='b'", COMMIT, before) is None    # another class


def test_a_line_of_an_earlier_run_of_the_commit_explains_nothing_later(logs_here):
    skip_log.record("bench_x.A", "", skip_log.SKIPPED, "no fio then")
    logs = skip_log.read(MACHINE, logs_here)
    assert skip_log.why(logs, "bench_x.A.track_y", "", COMMIT, time.time() - 60).reason == "no fio then"
    assert skip_log.why(logs, "bench_x.A.track_y", "", COMMIT, time.time() + 60) is None
    assert skip_log.why(logs, "bench_x.A.track_y", "", COMMIT, None).reason == "no fio then"


def test_the_newest_line_wins_and_the_methods_own_before_its_classs(logs_here):
    skip_log.record("bench_x.A.track_y", "", skip_log.NO_VALUE, "first")
    skip_log.record("bench_x.A.track_y", "", skip_log.NO_VALUE, "second")
    skip_log.record("bench_x.A", "", skip_log.SKIPPED, "a later setup skip of a sibling's run")
    entry = skip_log.why(skip_log.read(MACHINE, logs_here), "bench_x.A.track_y", "", COMMIT, None)
    assert entry.reason == "second"


def test_torn_and_foreign_lines_are_left_out(logs_here):
    skip_log.record("bench_x.A", "", skip_log.SKIPPED, "kept")
    path = logs_here / MACHINE / COMMIT / "skips.jsonl"
    with open(path, "a") as handle:
        handle.write('{"benchmark": "bench_x.B", "params": ""\n')                # torn
        handle.write(json.dumps({"benchmark": "bench_x.C", "params": "", "outcome": "maybe",
                                 "reason": "?", "at": 1.0}) + "\n")              # not an outcome
        handle.write(json.dumps({"benchmark": "bench_x.D", "params": "", "outcome": "skipped",
                                 "reason": "?", "at": "NaN"}) + "\n")            # no time
        handle.write("[1, 2]\n")
    (logs := skip_log.read(MACHINE, logs_here))
    assert [e.benchmark for e in logs[COMMIT]] == ["bench_x.A"]


def test_an_unwritable_log_loses_the_line_not_the_benchmark(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(blocker))   # a file where the folder should be
    monkeypatch.setenv("ASV_COMMIT", COMMIT)
    assert skip_log.record("bench_x.A", "", skip_log.SKIPPED, "x") is None
    with pytest.raises(ValueError, match="outcome 'later'"):
        skip_log.record("bench_x.A", "", "later", "x")


# ------------------------------------------------------------- through asv's own runner


TOY = '''
import math
from benchmarks.common import axes, explain_skips, field, pin_versions, track
from asv_runner.benchmarks.mark import SkipNotImplemented


class Runs:
    params, param_names = axes(run=["a", "b", "c"], threads=[2])

    def setup_cache(self):
        return {"a": {"x": 1.0, "z_why": "a's curve ended early"}, "b": {"skipped": "needs the moon"},
                "c": {"x": None, "z_why": " "}}

    def setup(self, data, run, threads):
        if "skipped" in data[run]:
            raise NotImplementedError(data[run]["skipped"])
        self.row = data[run]

    track_x = field("x", optional=True, unit="u", direction="higher", missing="c never gets there")
    track_z = field("z", optional=True, unit="u", direction="higher", missing="no z", missing_from="z_why")
    track_plain = track(lambda self, data, run, threads: math.nan if run == "c" else 1.0, unit="u",
                        direction="higher")

    def track_body(self, data, run, threads):
        if run == "a":
            raise SkipNotImplemented("no ceiling at this depth")
        raise ValueError("a bad row")


class Broken:
    def setup(self):
        raise KeyError("gone")

    def track_never(self):
        return 1.0


explain_skips(globals())
pin_versions(globals())
'''


@pytest.fixture()
def toy_suite(tmp_path, logs_here, monkeypatch):
    suite = tmp_path / "toybench"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_toy.py").write_text(textwrap.dedent(TOY))
    yield suite
    for name in [m for m in sys.modules if m == "toybench" or m.startswith("toybench.")]:
        del sys.modules[name]


def _run_point(suite, name: str, index: int | None):
    """Run one point as asv's runner does; return what asv would store (NaN for a skip)."""
    from asv_runner.benchmarks.mark import SkipNotImplemented
    from asv_runner.discovery import get_benchmark_from_name

    benchmark = get_benchmark_from_name(str(suite), name if index is None else f"{name}-{index}")
    benchmark.set_cache(benchmark.do_setup_cache() if benchmark.setup_cache_key else None)
    if benchmark.do_setup():
        return math.nan
    try:
        return benchmark.do_run()
    except SkipNotImplemented:
        return math.nan


def test_asvs_runner_logs_each_skip_nan_and_failure_with_its_reason(toy_suite, logs_here):
    started = time.time()
    assert _run_point(toy_suite, "bench_toy.Runs.track_x", 0) == 1.0
    assert math.isnan(_run_point(toy_suite, "bench_toy.Runs.track_x", 1))         # setup skipped
    assert math.isnan(_run_point(toy_suite, "bench_toy.Runs.track_x", 2))         # None -> NaN
    assert math.isnan(_run_point(toy_suite, "bench_toy.Runs.track_plain", 2))
    assert math.isnan(_run_point(toy_suite, "bench_toy.Runs.track_z", 0))
    assert math.isnan(_run_point(toy_suite, "bench_toy.Runs.track_z", 2))
    assert math.isnan(_run_point(toy_suite, "bench_toy.Runs.track_body", 0))      # skipped in the body
    with pytest.raises(ValueError, match="a bad row"):
        _run_point(toy_suite, "bench_toy.Runs.track_body", 2)
    with pytest.raises(KeyError):
        _run_point(toy_suite, "bench_toy.Broken.track_never", None)
    logs = skip_log.read(MACHINE, logs_here)

    def why(name, params):
        entry = skip_log.why(logs, name, params, COMMIT, started)
        return entry and (entry.outcome, entry.reason)

    assert why("bench_toy.Runs.track_x", "run='a', threads=2") is None
    assert why("bench_toy.Runs.track_x", "run='b', threads=2") == (skip_log.SKIPPED, "needs the moon")
    assert why("bench_toy.Runs.track_x", "run='c', threads=2") == (skip_log.NO_VALUE, "c never gets there")
    from benchmarks.common import NO_VALUE_REASON
    assert why("bench_toy.Runs.track_plain", "run='c', threads=2") == (skip_log.NO_VALUE, NO_VALUE_REASON)
    # the row's own words where it has them, else what the track says its NaN means
    assert why("bench_toy.Runs.track_z", "run='a', threads=2") == (skip_log.NO_VALUE, "a's curve ended early")
    assert why("bench_toy.Runs.track_z", "run='c', threads=2") == (skip_log.NO_VALUE, "no z")
    assert why("bench_toy.Runs.track_body", "run='a', threads=2") == (skip_log.SKIPPED, "no ceiling at this depth")
    assert why("bench_toy.Runs.track_body", "run='c', threads=2") == (skip_log.FAILED, "ValueError: a bad row")
    assert why("bench_toy.Broken.track_never", "") == (skip_log.FAILED, "KeyError: 'gone'")


def test_the_wrappers_keep_what_asv_reads(toy_suite):
    from asv_runner.benchmarks._base import _check_num_args
    from asv_runner.discovery import disc_benchmarks

    found = {b.name: b for b in disc_benchmarks(str(toy_suite))}
    x = found["bench_toy.Runs.track_x"]
    assert (x.unit, x.func.direction, x.func.missing) == ("u", "higher", "c never gets there")
    assert "self.row.get('x')" in x.code and "explained" not in x.code     # the recorded code is the track's
    setup = x._setups[0]
    assert _check_num_args(str(toy_suite), "setup", setup, 2, 3)
    assert not _check_num_args(str(toy_suite), "setup", setup, 4, 5)    # asv check still counts arguments


# ------------------------------------------------------------------ the report and make compare


def _points(rows, started) -> pd.DataFrame:
    return pd.DataFrame([{"benchmark": b, "param_label": p, "params": {}, "status": s, "value": math.nan,
                          "commit": COMMIT, "type": "track", "started_at": pd.Timestamp(started, unit="s", tz="UTC")}
                         for b, p, s in rows])


def test_the_reports_list_gives_the_logged_reason_else_the_old_one(logs_here):
    started = time.time() - 1
    skip_log.record("bench_x.A", "run='b'", skip_log.SKIPPED, "needs the moon")
    skip_log.record("bench_x.A.track_y", "run='c'", skip_log.NO_VALUE, "c never gets there")
    skip_log.record("bench_x.A.track_f", "run='a'", skip_log.FAILED, "ValueError: a bad row")
    skip_log.record("bench_x.A.track_g", "run='a'", skip_log.SKIPPED, "a skip asv stored as a failure?")
    points = _points([("bench_x.A.track_y", "run='b'", "skipped"), ("bench_x.A.track_y", "run='c'", "skipped"),
                      ("bench_x.A.track_f", "run='a'", "failed"), ("bench_x.A.track_g", "run='a'", "failed"),
                      ("bench_x.A.track_h", "run='a'", "skipped")], started)
    state = MachineState("m", None, "", {})
    reasons = {(p.benchmark, p.params): p.reason
               for p in skipped_points(points, {}, state, skip_log.read(MACHINE, logs_here))}
    assert reasons == {
        ("bench_x.A.track_y", "run='b'"): "needs the moon",
        ("bench_x.A.track_y", "run='c'"): "no value: c never gets there",
        ("bench_x.A.track_f", "run='a'"): "raised ValueError: a bad row",
        ("bench_x.A.track_g", "run='a'"): FAILURE,        # a timeout: the log's skip does not explain it
        ("bench_x.A.track_h", "run='a'"): UNKNOWN_SKIP,   # nothing logged
    }
    # the same points measured again later: the old lines explain nothing
    later = _points([("bench_x.A.track_y", "run='b'", "skipped")], time.time() + 60)
    assert skipped_points(later, {}, state, skip_log.read(MACHINE, logs_here))[0].reason == UNKNOWN_SKIP


TIME = "bench_slide.SlideBatchSize.track_time_to_target"
FINAL = "bench_slide.SlideBatchSize.track_final_p_at_1"
POINT = "batch=64, method='slide'"


def _frame(points: dict[tuple[str, str], float], started: float) -> pd.DataFrame:
    return pd.DataFrame({"benchmark": [b for b, _ in points], "param_label": [p for _, p in points],
                         "value": list(points.values()),
                         "status": ["skipped" if math.isnan(v) else "ok" for v in points.values()],
                         "type": "track", "version": "1", "commit": COMMIT,
                         "started_at": pd.Timestamp(started, unit="s", tz="UTC")})


def test_compare_says_which_it_was_where_the_run_logged_it(logs_here):
    started = time.time() - 1
    jct, error, fifo = "bench_salus.SchedulingPolicies.track_average_jct", \
        "bench_salus.SchedulingPolicies.track_simulator_error", "policy='fifo'"
    base = _frame({(jct, fifo): 5.56, (error, fifo): 0.2}, started - 3600)
    head = _frame({(jct, fifo): math.nan, (error, fifo): math.nan}, started)
    judge = dict(missing=directions.declared_missing(), worst_missing=directions.declared_worst_missing())
    # every track NaN, nothing logged: read as a skip, not judged
    unlogged = compare.compare_runs(base, head, directions.declared_directions(), None, 0.1, **judge)
    assert not unlogged.regressed
    # the run logged that the average came out NaN: the worst outcome, a regression, whatever its siblings did
    skip_log.record(jct, fifo, skip_log.NO_VALUE, "a job failed in this policy's run")
    skip_log.record(error, fifo, skip_log.NO_VALUE, "no real run to compare")
    logs = skip_log.read(MACHINE, logs_here)
    result = compare.compare_runs(base, head, directions.declared_directions(), None, 0.1, **judge, logs=logs)
    assert result.regressed and [item.benchmark for item in result.worse_without_value] == [jct]
    lines = {item.benchmark: item.line() for item in result.lost}
    assert lines[jct].startswith(f"REGRESSION {jct} [policy='fifo'] 5.56 -> (no value in the new run: "
                                 "a job failed in this policy's run; the worst outcome")
    assert lines[error].startswith("NO VALUE ") and "(no value in the new run: no real run to compare)" in lines[error]


def test_compare_names_a_logged_skip_and_a_logged_failure(logs_here):
    started = time.time() - 1
    base = _frame({(TIME, POINT): 5.56, (FINAL, POINT): 0.2}, started - 3600)
    head = _frame({(TIME, POINT): math.nan, (FINAL, POINT): math.nan}, started)
    head.loc[head["benchmark"] == FINAL, "status"] = "failed"
    skip_log.record("bench_slide.SlideBatchSize", POINT, skip_log.SKIPPED, "needs 64 GiB")
    skip_log.record(FINAL, POINT, skip_log.FAILED, "KeyError: 'curve'")
    result = compare.compare_runs(base, head, directions.declared_directions(), None, 0.1,
                                  missing=directions.declared_missing(),
                                  worst_missing=directions.declared_worst_missing(),
                                  logs=skip_log.read(MACHINE, logs_here))
    assert not result.worse_without_value and result.regressed     # a failure regresses; the skip does not
    lines = {item.benchmark: item.line() for item in result.lost}
    assert lines[TIME].startswith("SKIPPED ") and lines[TIME].endswith("(skipped in the new run: needs 64 GiB)")
    assert lines[FINAL].startswith("FAILED ") and lines[FINAL].endswith(
        "(failed in the new run: raised KeyError: 'curve')")


# ------------------------------------------------------------------ an experiment that raised


def broken_run(sizes, *, device, progress):
    raise OSError(28, "No space left on device")


def interrupted_run(sizes, *, device, progress):
    from impls.harness.interrupts import Interrupted
    raise Interrupted(15)


@pytest.fixture()
def broken_experiments(monkeypatch):
    from impls.harness import experiments, profiles

    monkeypatch.setitem(experiments._SCHEMAS, "test_broken", {"n": int})
    monkeypatch.setattr(profiles, "sizes", lambda table, profile=None: {"n": 3})
    for name, run in (("test.broken", "broken_run"), ("test.interrupted", "interrupted_run")):
        monkeypatch.setitem(experiments._EXPERIMENTS, name, experiments.Experiment(
            name, "test_broken", name.replace(".", "_"), f"{__name__}:{run}", "", ""))
    return experiments


def test_a_failed_save_is_a_failure_not_a_skip(broken_experiments, monkeypatch):
    from impls.harness import artifacts

    def refuse(*args, **kwargs):
        raise NotImplementedError("a store that cannot save")     # must not read as the machine's lack

    monkeypatch.setattr(artifacts, "save_artifact", refuse)
    monkeypatch.setitem(broken_experiments._EXPERIMENTS, "test.fine", broken_experiments.Experiment(
        "test.fine", "test_broken", "test_fine", f"{__name__}:fine_run", "", ""))
    marker = broken_experiments.run_and_store("test.fine")
    assert "skipped" not in marker
    assert marker[broken_experiments.FAILED_MARKER] == (
        "NotImplementedError: a store that cannot save (in experiment test.fine)")


def fine_run(sizes, *, device, progress):
    return {"n": sizes["n"]}


def test_an_experiment_that_raises_gives_its_benchmarks_a_failure_marker(broken_experiments, capsys):
    marker = broken_experiments.run_and_store("test.broken")
    assert marker[broken_experiments.FAILED_MARKER] == (
        "OSError: [Errno 28] No space left on device (in experiment test.broken)")
    assert "Traceback" in marker["traceback"] and "broken_run" in capsys.readouterr().err
    from impls.harness.interrupts import Interrupted
    with pytest.raises(Interrupted):       # a signal still stops the run: no marker swallows it
        broken_experiments.run_and_store("test.interrupted")


FAILED_TOY = '''
from benchmarks.common import explain_skips, field, pin_versions, track
from impls.harness.experiments import run_and_store


def broken(_benchmark=None):
    return run_and_store("test.broken")


class WithSetup:
    setup_cache = broken

    def setup(self, data):
        self.row = data

    track_a = field("a", unit="u", direction="higher")


class TracksOnly:
    setup_cache = broken
    track_b = track(lambda self, data: data["b"], unit="u", direction="higher")


explain_skips(globals())
pin_versions(globals())
'''


def test_every_benchmark_of_a_failed_experiment_fails_saying_why(tmp_path, logs_here, broken_experiments):
    suite = tmp_path / "failbench"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_fail.py").write_text(FAILED_TOY)
    from benchmarks.common import ExperimentFailed
    started = time.time()
    try:
        for name in ("bench_fail.WithSetup.track_a", "bench_fail.TracksOnly.track_b"):
            with pytest.raises(ExperimentFailed, match="No space left") as raised:
                _run_point(suite, name, None)
            assert "Traceback" in str(raised.value)          # asv prints it with the failed benchmark
    finally:
        for module in [m for m in sys.modules if m == "failbench" or m.startswith("failbench.")]:
            del sys.modules[module]
    logs = skip_log.read(MACHINE, logs_here)
    for name in ("bench_fail.WithSetup.track_a", "bench_fail.TracksOnly.track_b"):
        entry = skip_log.why(logs, name, "", COMMIT, started)
        assert (entry.outcome, entry.reason) == (
            skip_log.FAILED, "OSError: [Errno 28] No space left on device (in experiment test.broken)")
    points = _points([("bench_fail.TracksOnly.track_b", "", "failed")], started)
    (listed,) = skipped_points(points, {}, MachineState("m", None, "", {}), logs)
    assert listed.reason == "raised OSError: [Errno 28] No space left on device (in experiment test.broken)"


# ------------------------------------------------------------------ review fixes


def test_benchmarks_still_import_against_an_older_impls_without_the_log(monkeypatch):
    """asv measures an older commit with this checkout's benchmarks/ and that commit's impls."""
    import importlib.util

    import impls.harness
    from impls.harness import experiments

    monkeypatch.setitem(sys.modules, "impls.harness.skip_log", None)    # import fails, as without the file
    monkeypatch.delattr(impls.harness, "skip_log", raising=False)
    spec = importlib.util.spec_from_file_location("common_on_old_impls", experiments.__file__.replace(
        "impls/harness/experiments.py", "benchmarks/common.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.skip_log is None

    class Toy:
        def setup(self):
            raise NotImplementedError("x")

    original = Toy.setup
    module.explain_skips({"__name__": Toy.__module__, "Toy": Toy})
    assert Toy.setup is original       # nothing wrapped, nothing logged
    assert module.FAILED_MARKER == experiments.FAILED_MARKER


def test_a_later_runs_lines_do_not_explain_an_earlier_runs_points(logs_here):
    skip_log.record("bench_x.A.track_y", "", skip_log.NO_VALUE, "written by a later run")
    logs = skip_log.read(MACHINE, logs_here)
    now = time.time()
    assert skip_log.why(logs, "bench_x.A.track_y", "", COMMIT, now - 3600, now - 3590) is None
    assert skip_log.why(logs, "bench_x.A.track_y", "", COMMIT, now - 3600, None) is not None   # no end known
    points = _points([("bench_x.A.track_y", "", "skipped")], now - 3600)
    points["duration"] = 10.0
    assert skipped_points(points, {}, MachineState("m", None, "", {}), logs)[0].reason == UNKNOWN_SKIP
    assert skip_log.run_window(pd.NaT, 3.0) == (None, None)
    # a result with a start and no duration: asv ran none of its methods (a failed setup cache)
    assert skip_log.run_window(pd.Timestamp(100, unit="s", tz="UTC"), math.nan) == (100.0, 100.0)
    points = _points([("bench_x.A.track_y", "", "skipped")], now - 3600)      # no duration column
    assert skipped_points(points, {}, MachineState("m", None, "", {}), logs)[0].reason == UNKNOWN_SKIP


def test_an_entry_that_cannot_explain_how_asv_stored_the_point_is_passed_over(logs_here):
    skip_log.record("bench_x.A", "", skip_log.SKIPPED, "a skip in setup")
    skip_log.record("bench_x.A.track_y", "", skip_log.FAILED, "ValueError: later")
    logs = skip_log.read(MACHINE, logs_here)
    assert skip_log.why(logs, "bench_x.A.track_y", "", COMMIT, None, asv_failed=False).reason == "a skip in setup"
    assert skip_log.why(logs, "bench_x.A.track_y", "", COMMIT, None, asv_failed=True).reason == "ValueError: later"


def test_compare_keeps_failed_for_a_none_that_asv_stored_as_a_failure(logs_here):
    started = time.time() - 1
    base = _frame({(FINAL, POINT): 0.2}, started - 3600)
    head = _frame({(FINAL, POINT): math.nan}, started)
    head["status"] = "failed"
    skip_log.record(FINAL, POINT, skip_log.NO_VALUE, "the row holds null")
    result = compare.compare_runs(base, head, directions.declared_directions(), None, 0.1,
                                  logs=skip_log.read(MACHINE, logs_here))
    (line,) = [item.line() for item in result.lost]
    assert result.regressed and line.startswith("FAILED ")                   # old: "NO VALUE", yet exit 1
    assert line.endswith("(failed in the new run: no value: the row holds null)")


def test_undecodable_text_in_a_reason_is_escaped_not_fatal(logs_here):
    skip_log.record("bench_x.A", "", skip_log.FAILED, "OSError: bad name 'caf\udce9'")
    (entry,) = skip_log.read(MACHINE, logs_here)[COMMIT]
    assert entry.reason == "OSError: bad name 'caf\\udce9'"
    entry.reason.encode("utf-8")            # printable on a page and a terminal
    path = logs_here / MACHINE / COMMIT / "skips.jsonl"
    path.write_text(json.dumps({"benchmark": "b.A", "params": "", "outcome": "skipped", "reason": "x\udcff",
                                "at": 1.0}) + "\n")      # json.dumps escapes it; json.loads gives it back raw
    (entry,) = skip_log.read(MACHINE, logs_here)[COMMIT]
    assert entry.reason == "x\\udcff"


def test_a_backslash_before_a_pipe_does_not_end_a_markdown_cell():
    from impls.harness.report.markdown_page import cell
    assert cell("a | b") == "a \\| b"
    assert cell("C:\\| x") == "C:&#92;\\| x"


def test_slide_training_points_skip_when_the_sweep_was_skipped():
    from benchmarks.bench_slide import SlideTraining
    with pytest.raises(NotImplementedError, match="needs the moon"):
        SlideTraining().setup({"skipped": "needs the moon"}, 2, "batch")


def test_a_plain_not_implemented_in_a_tracks_body_is_logged_a_failure_as_asv_records_it(logs_here):
    """asv skips on NotImplementedError only in setup; in a benchmark's body only on
    SkipNotImplemented. A plain one there is asv's failure, so the log must say failed."""
    from asv_runner.benchmarks.mark import SkipNotImplemented

    from benchmarks.common import explain_skips

    class Toy:
        def track_plain(self):
            raise NotImplementedError("not here")

        def track_skip(self):
            raise SkipNotImplemented("skip here")

    Toy.__module__ = "benchmarks.bench_toy"
    explain_skips({"__name__": "benchmarks.bench_toy", "Toy": Toy})
    for method in (Toy().track_plain, Toy().track_skip):
        with pytest.raises(NotImplementedError):
            method()
    logs = skip_log.read(MACHINE, logs_here)
    plain = skip_log.why(logs, "bench_toy.Toy.track_plain", "", COMMIT, None)
    skip = skip_log.why(logs, "bench_toy.Toy.track_skip", "", COMMIT, None)
    assert plain.outcome == skip_log.FAILED and skip.outcome == skip_log.SKIPPED, (plain, skip)


def _classes_reading_an_experiment_run():
    """Every benchmark class whose ``setup_cache`` is an experiment run of
    ``benchmarks.runs`` (whose result can be ``run_and_store``'s skip marker)."""
    import importlib
    import inspect
    import pkgutil

    import benchmarks

    for info in pkgutil.iter_modules(benchmarks.__path__):
        if not info.name.startswith("bench_"):
            continue
        module = importlib.import_module(f"benchmarks.{info.name}")
        for cls in vars(module).values():
            cache = getattr(cls, "setup_cache", None)
            if inspect.isclass(cls) and cls.__module__ == module.__name__ \
                    and getattr(cache, "__module__", "").startswith("benchmarks.runs"):
                yield cls


def test_every_class_reading_an_experiment_run_skips_where_the_run_was_skipped():
    """asv skips only on NotImplementedError in ``setup``: a class with no setup of its own,
    whose tracks read a skipped run's marker, fails with a KeyError where it should skip."""
    classes = list(_classes_reading_an_experiment_run())
    assert len(classes) > 20, [c.__name__ for c in classes]
    for cls in classes:
        first = [values[0] for values in getattr(cls, "params", ())]
        assert hasattr(cls, "setup"), f"{cls.__module__}.{cls.__name__} has no setup"
        with pytest.raises(NotImplementedError, match="needs the moon"):
            cls().setup({"skipped": "needs the moon"}, *first)
