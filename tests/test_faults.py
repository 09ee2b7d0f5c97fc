"""Fault injection: bad inputs, signals, damaged caches and artifacts (issue 22).

Each test asserts the exit status, the one-line message and that the directory is as
before. Bad inputs run ``main()`` in-process (fast); signals run the command line in a
subprocess stopped at a fault point (``DLSYSBENCH_FAULT_AT``, see
:func:`impls.harness.cli.fault_point`). The wider probe is ``python tests/fault_probe.py``.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fault_probe import make_inputs, make_report_inputs

pytestmark = pytest.mark.faults
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def files(tmp_path, monkeypatch):
    nvm = tmp_path / "nvm"
    nvm.mkdir()
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(nvm / "target.bin"))
    monkeypatch.delenv("DLSYSBENCH_DEBUG", raising=False)
    return make_inputs(tmp_path / "inputs")


def tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def one_line_error(capsys, pattern: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in "\n".join(err), err
    assert __import__("re").search(pattern, errors[0]), errors[0]
    return errors[0]


def _cache_args(f, **over):
    args = {"--trace": f["trace"], "--layout": f["layout"], "--capacity": 256, "--policy": "shadow",
            "--shadow": 512, **over}
    return [str(x) for kv in args.items() for x in kv if x is not None]


def _train_args(f, tmp_path, *extra):
    return ["--train", str(f["train"]), "--test", str(f["test"]), "--quiet", "--K", "2", "--L", "2",
            "--hidden", "16", "--batch", "16", "--eval-points", "20", "--json", str(tmp_path / "r.json"), *extra]


BAD_INPUTS = [  # (command, argv builder, message pattern)
    ("cache", lambda f, t: _cache_args(f, **{"--trace": f["zero_bytes"]}), r"zero\.npy: cannot read an \.npy"),
    ("cache", lambda f, t: _cache_args(f, **{"--trace": t}), r"is a directory"),
    ("cache", lambda f, t: _cache_args(f, **{"--vector-bytes": 0}), r"--vector-bytes, expected an integer in \[1, 4096\]"),
    ("replay", lambda f, t: _cache_args(f, **{"--block-bytes": 6144}), r"--block-bytes, expected (a multiple of|an integer in)"),
    ("replay", lambda f, t: _cache_args(f, **{"--queue-depth": 100000}), r"--queue-depth"),
    ("replay", lambda f, t: _cache_args(f, **{"--fio-runtime": "nan"}), r"--fio-runtime"),
    ("replay", lambda f, t: _cache_args(f, **{"--offsets": f["bad_offsets"]}), r"--offsets \S*bad_offsets.npy, expected"),
    ("replay", lambda f, t: _cache_args(f, **{"--path": t / "a" / "b" / "s.store"}), r"does not exist, --path"),
    ("train", lambda f, t: _train_args(f, t, "--threads", "0"), r"got 0, --threads"),
    ("train", lambda f, t: _train_args(f, t, "--lr", "nan"), r"got nan, --lr"),
    ("train", lambda f, t: _train_args(f, t, "--time-budget", "-5"), r"--time-budget, expected a number > 0"),
    ("train", lambda f, t: _train_args(f, t, "--batch", "0"), r"--batch"),
    ("train", lambda f, t: _train_args(f, t)[:-1] + [str(t)], r"is a directory, --json"),
    ("train", lambda f, t: ["--train", str(f["overflow"])] + _train_args(f, t)[2:],
     r"overflow\.txt:2: feature value inf is not a finite float32"),
    ("train", lambda f, t: ["--train", str(f["bad_syntax"])] + _train_args(f, t)[2:], r"bad_syntax\.txt:3:"),
    ("train", lambda f, t: ["--train", str(f["binary_txt"])] + _train_args(f, t)[2:], r"binary\.txt:1:"),
    ("lanes", lambda f, t: ["--jobs", str(f["jobs_nan"]), "--capacity", "10"], r"NaN is not a JSON number"),
    ("lanes", lambda f, t: ["--jobs", str(f["jobs_inf"]), "--capacity", "10"], r"Infinity is not a JSON number"),
    ("lanes", lambda f, t: ["--jobs", str(f["jobs_latin1"]), "--capacity", "10"], r"not UTF-8"),
    ("switching", lambda f, t: ["--workloads", ","], r"no workload named"),
    ("switching", lambda f, t: ["--device", "tpu", "--workloads", "mlp_b64"], r"device 'tpu'"),
    ("experiments", lambda f, t: ["overhead", "--json", str(t / "x" / "o.json")], r"does not exist, --json"),
]
MAINS = {"cache": "impls.bandana.cache", "replay": "impls.bandana.replay", "train": "impls.slide.train",
         "lanes": "impls.salus.lanes", "switching": "impls.salus.switching",
         "experiments": "impls.salus.experiments.scheduling", "lane_experiments": "impls.salus.experiments.lanes"}


def _main(name):
    import importlib

    return importlib.import_module(MAINS[name]).main


@pytest.mark.parametrize("command,argv,pattern", BAD_INPUTS,
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(BAD_INPUTS)])
def test_bad_input_is_a_one_line_error_and_leaves_nothing(command, argv, pattern, files, tmp_path, capsys):
    before = tree(tmp_path)
    assert _main(command)(argv(files, tmp_path)) == 2
    one_line_error(capsys, pattern)
    assert tree(tmp_path) == before


def test_unknown_profile_is_named(files, monkeypatch, capsys):
    monkeypatch.setenv("DLSYSBENCH_PROFILE", "huge")
    assert _main("lane_experiments")(["lanes"]) == 2
    one_line_error(capsys, r"unknown profile 'huge', in the environment variable DLSYSBENCH_PROFILE, "
                           r"expected one of smoke, quick, full")


def test_debug_shows_the_traceback(files, tmp_path, capsys, monkeypatch):
    argv = _cache_args(files, **{"--trace": files["zero_bytes"]})
    assert _main("cache")(argv + ["--debug"]) == 2
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    monkeypatch.setenv("DLSYSBENCH_DEBUG", "1")
    assert _main("cache")(argv) == 2
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_train_checks_its_output_before_training(files, tmp_path, capsys, monkeypatch):
    import impls.slide.experiments.sweeps as slide_experiments

    def never(*a, **k):
        raise AssertionError("trained before checking the arguments")

    monkeypatch.setattr(slide_experiments, "train_method", never)
    argv = _train_args(files, tmp_path)[:-1] + [str(tmp_path / "missing" / "r.json")]
    assert _main("train")(argv) == 2
    one_line_error(capsys, r"directory .*missing does not exist, --json")


def test_replay_checks_every_flag_before_writing_its_store(files, capsys, monkeypatch):
    from impls.bandana.nvm import block_store

    monkeypatch.setattr(block_store, "write_store", lambda *a, **k: pytest.fail("store written"))
    assert _main("replay")(_cache_args(files, **{"--fio-runtime": "0"})) == 2
    one_line_error(capsys, r"--fio-runtime")


def test_switching_checks_every_workload_before_measuring(files, capsys, monkeypatch):
    from impls.salus import switching
    from impls.salus.core import switching as engine     # main imports it when it runs

    monkeypatch.setattr(engine, "switching_latency", lambda *a, **k: pytest.fail("measured"))
    assert switching.main(["--workloads", "mlp_b64,nope", "--repeats", "1"]) == 2
    one_line_error(capsys, r"unknown workload\(s\) nope, --workloads")


def _sleep_in_steps(seconds: float) -> None:
    """Sleep in 10-ms steps. A signal that lands between CPython's last check and the start of
    a blocking call is seen only when the call returns; a single long sleep would test that
    race of CPython's, not when the suite sends a held signal."""
    for _ in range(int(seconds / 0.01)):
        time.sleep(0.01)


def _importable(tmp_path, monkeypatch, name: str, source: str) -> None:
    """Write module ``name`` with ``source`` where this test imports it afresh (its code runs
    again on import)."""
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_swallowed_interrupt_is_not_a_success(capsys):
    from impls.harness import cli

    @cli.command("probe")
    def main(argv=None):
        try:                                   # what a ctypes callback does with an exception
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except BaseException:
            pass
        return 0

    assert main([]) == cli.EXIT_SIGINT
    assert "interrupted by SIGINT" in capsys.readouterr().err


def test_running_out_of_memory_is_reported_as_the_inputs_size_not_an_internal_error(capsys):
    from impls.harness import cli

    @cli.command("probe")
    def main(argv=None):
        raise MemoryError("Unable to allocate 7.28 TiB for an array")

    assert main([]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "not enough memory (Unable to allocate 7.28 TiB" in err and "internal error" not in err
    assert "check the input's sizes" in err


def test_a_command_out_of_memory_names_the_flags_that_size_its_work(tmp_path):
    import subprocess
    import sys

    for name in ("train", "test"):
        (tmp_path / f"{name}.txt").write_text("3 20 3\n0 0:1\n1 1:1\n2 2:1\n")
    run = subprocess.run([sys.executable, "-m", "impls.slide.train", "--train", str(tmp_path / "train.txt"),
                          "--test", str(tmp_path / "test.txt"), "--hidden", str(10**12), "--max-iterations", "1",
                          "--quiet", "--json", str(tmp_path / "o.json")],
                         cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "not enough memory" in run.stderr and "check --hidden, --K, --L, --batch" in run.stderr


@pytest.mark.parametrize("where", ["import", "llvmlite"])
def test_a_signal_in_native_code_is_held_until_it_returns(where, tmp_path, monkeypatch, capsys):
    # an exception raised where native code called Python cannot unwind: torch's pybind11
    # initialisation aborts (SIGABRT), numba's llvmlite cache callback then crashes (SIGSEGV)
    import importlib.util

    from impls.harness import cli, interrupts

    done = tmp_path / "returned"
    body = ("import os, signal, time\n"
            "def run():\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    time.sleep(0.3)\n"
            f"    open({str(done)!r}, 'w').close()\n")
    if where == "import":
        _importable(tmp_path, monkeypatch, "held_signal_probe", body + "run()\n")
        enter = lambda: importlib.import_module("held_signal_probe")      # noqa: E731
    else:
        (tmp_path / "native").mkdir()
        path = tmp_path / "native" / "callback.py"      # as if in llvmlite's package directory
        path.write_text(body)
        monkeypatch.setattr(interrupts, "NATIVE_CALLERS", (*interrupts.NATIVE_CALLERS, str(path.parent) + os.sep))
        spec = importlib.util.spec_from_file_location("held_signal_callback", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        enter = module.run

    @cli.command("probe")
    def main(argv=None):
        enter()
        _sleep_in_steps(20)                     # the held signal must wake this
        return 0

    start = time.monotonic()
    assert main([]) == cli.EXIT_SIGTERM
    assert done.exists()                        # the native code's call ran to its end
    assert time.monotonic() - start < 10
    assert "interrupted by SIGTERM" in capsys.readouterr().err


@pytest.mark.parametrize("slow_cleanup", [True, False])
def test_a_held_signal_is_honoured_once_and_not_sent_after_main(slow_cleanup, tmp_path, monkeypatch, capsys):
    # main returns while the signal is held: the command's own clean-up honours it, and the
    # waiting thread sends nothing into that clean-up (slow), after the handlers are restored,
    # or into the next command (fast: the clean-up ends before the thread looks again)
    from impls.harness import cli

    _importable(tmp_path, monkeypatch, "held_then_return", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    remove = cli._remove
    if slow_cleanup:
        monkeypatch.setattr(cli, "_remove", lambda p: (time.sleep(0.1), remove(p))[1])
    made = tmp_path / "made"
    after = []
    old = signal.signal(signal.SIGTERM, lambda *a: after.append(a))
    try:
        @cli.command("probe")
        def main(argv=None):
            cli.register(made).mkdir()
            import held_then_return  # noqa: F401
            return 0

        @cli.command("next")
        def then(argv=None):                    # a later command in the same process
            time.sleep(0.3)
            return 0

        assert main([]) == cli.EXIT_SIGTERM
        assert then([]) == 0                    # the held signal is not carried into it
        time.sleep(0.1)
        assert after == [] and not made.exists()
    finally:
        signal.signal(signal.SIGTERM, old)
    assert "interrupted by SIGTERM" in capsys.readouterr().err


def test_a_held_signal_survives_main_going_back_into_held_code(tmp_path, monkeypatch, capsys):
    # the resending thread looks, then takes the lock and looks again; if main went back into
    # held code in between (numba's compiler switches in and out of llvmlite), the signal
    # stays held and is sent later, not dropped until main returns
    import threading

    from impls.harness import cli, interrupts

    real, seen = interrupts.state, iter([interrupts.RAISE, interrupts.HOLD])   # the thread's first looks

    def state(frame):
        if threading.current_thread() is not threading.main_thread():
            return next(seen, None) or real(frame)
        return real(frame)

    monkeypatch.setattr(interrupts, "state", state)
    _importable(tmp_path, monkeypatch, "held_then_back", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")

    @cli.command("probe")
    def main(argv=None):
        import held_then_back  # noqa: F401
        _sleep_in_steps(20)                     # the held signal must wake this
        return 0

    start = time.monotonic()
    assert main([]) == cli.EXIT_SIGTERM
    assert time.monotonic() - start < 10
    capsys.readouterr()


def test_a_second_signal_while_one_is_held_exits_at_once(tmp_path):
    # and a third, arriving while the files are removed, does not cut the removal short
    made = [tmp_path / f"made{i}" for i in range(3)]
    (tmp_path / "held_twice.py").write_text(
        "import os, signal, time\n"
        "os.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(0.2)\n"
        "os.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(20)\n")
    script = ("import os, signal, sys\nfrom impls.harness import cli\n"
              "remove = cli._remove\n"
              "cli._remove = lambda p: (os.kill(os.getpid(), signal.SIGTERM), remove(p))[1]\n"
              "@cli.command('probe')\n"
              "def main(argv=None):\n"
              f"    for path in {[str(m) for m in made]!r}:\n"
              "        cli.register(path).mkdir()\n"
              "    import held_twice\n"
              "    return 0\n"
              "sys.exit(main([]))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 143, done.stderr
    assert time.monotonic() - start < 15
    assert "SIGTERM twice" in done.stderr and not any(m.exists() for m in made)


def test_a_nested_command_finishes_its_clean_up_and_the_signal_reaches_the_caller(tmp_path, monkeypatch,
                                                                                  capsys):
    from impls.harness import cli

    remove = cli._remove
    monkeypatch.setattr(cli, "_remove", lambda p: (os.kill(os.getpid(), signal.SIGTERM), remove(p))[1])
    made = [tmp_path / "a", tmp_path / "b"]

    @cli.command("inner")
    def inner(argv=None):
        for path in made:
            cli.register(path).mkdir()
        raise ValueError("bad input")           # the clean-up of this error takes the signal

    @cli.command("outer")
    def outer(argv=None):
        assert inner([]) == cli.EXIT_USAGE
        return 0

    assert outer([]) == cli.EXIT_SIGTERM
    assert not any(m.exists() for m in made)
    capsys.readouterr()


def test_a_nested_command_keeps_its_callers_recorded_signal(capsys):
    from impls.harness import cli, interrupts

    @cli.command("inner")
    def inner(argv=None):
        return 0

    @cli.command("outer")
    def outer(argv=None):
        interrupts.pending.append(signal.SIGTERM)     # what a callback that swallowed it leaves
        inner([])
        return 0

    assert outer([]) == cli.EXIT_SIGTERM
    capsys.readouterr()


def test_an_interrupted_nested_command_interrupts_its_caller_at_once(capsys):
    from impls.harness import cli

    @cli.command("inner")
    def inner(argv=None):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(20)
        return 0

    @cli.command("outer")
    def outer(argv=None):
        assert inner([]) == cli.EXIT_SIGTERM
        _sleep_in_steps(20)                     # the caller is stopped too, not after this
        return 0

    start = time.monotonic()
    assert outer([]) == cli.EXIT_SIGTERM
    assert time.monotonic() - start < 10
    capsys.readouterr()


def test_a_command_run_by_an_import_is_interrupted_at_once(tmp_path, monkeypatch, capsys):
    # only the frames between the signal and the innermost main decide: the import that
    # called the command does not hold its signals
    import importlib

    _importable(tmp_path, monkeypatch, "runs_a_command",
                "import os, signal, time\nfrom impls.harness import cli\n"
                "@cli.command('probe')\n"
                "def main(argv=None):\n"
                "    os.kill(os.getpid(), signal.SIGTERM)\n"
                "    time.sleep(20)\n"
                "    return 0\n"
                "STATUS = main([])\n")
    start = time.monotonic()
    assert importlib.import_module("runs_a_command").STATUS == 143
    assert time.monotonic() - start < 10
    assert "interrupted by SIGTERM" in capsys.readouterr().err


def test_cleanup_registry_runs_on_signals(tmp_path, capsys):
    from impls.harness import cli

    made = tmp_path / "partial"

    @cli.command("probe")
    def main(argv=None):
        cli.register(made).mkdir()
        (made / "half").write_text("x")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
        return 0

    assert main([]) == cli.EXIT_SIGTERM
    assert not made.exists()
    capsys.readouterr()


def test_stale_files_of_dead_pids_are_swept_live_ones_kept(tmp_path):
    from impls.harness import cli

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    (tmp_path / f"bandana-replay-pid{dead}.store").write_bytes(b"x")
    (tmp_path / f"bandana-replay-pid{os.getpid()}.store").write_bytes(b"x")
    removed = cli.sweep_stale(tmp_path, "bandana-*-pid*.store")
    assert [p.name for p in removed] == [f"bandana-replay-pid{dead}.store"]
    assert (tmp_path / f"bandana-replay-pid{os.getpid()}.store").exists()


# ------------------------------------------------------------------- caches and loaders

def test_xc_cache_heals_and_is_keyed_by_content_and_options(files, tmp_path, caplog):
    from impls.slide.data.xc_format import XCFormatError, read_xc, read_xc_cached

    cache = tmp_path / "xc"
    first = read_xc_cached(files["train"], cache_dir=cache)
    for npz in cache.glob("*.npz"):
        npz.write_bytes(npz.read_bytes()[:100])
    with caplog.at_level(logging.WARNING):
        again = read_xc_cached(files["train"], cache_dir=cache)
    assert "rebuilding" in caplog.text
    assert np.array_equal(first["values"], again["values"])
    # same size and mtime, other content: never served stale
    edited = tmp_path / "edited.txt"
    edited.write_text(files["train"].read_text())
    st = edited.stat()
    read_xc_cached(edited, cache_dir=cache)
    edited.write_text(files["train"].read_text().replace("0:0.5", "0:9.5"))
    os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert np.array_equal(read_xc_cached(edited, cache_dir=cache)["values"], read_xc(edited)["values"])
    # a lenient parse never lets a strict one through
    read_xc_cached(files["empty_labels"], allow_empty_labels=True, cache_dir=cache)
    with pytest.raises(XCFormatError, match=r"empty_labels\.txt:3: empty label list"):
        read_xc_cached(files["empty_labels"], cache_dir=cache)


def test_manifest_with_an_unknown_key_is_refused(tmp_path):
    from impls.harness.registry import ManifestError, parse_manifest

    path = tmp_path / "typo.toml"
    path.write_text('name = "typo"\n[synthetic]\ngenerator = "a.b:c"\nseed = 1\nsede = 2\n')
    with pytest.raises(ManifestError, match=r"typo\.toml:5: unknown key\(s\) sede in \[synthetic\]"):
        parse_manifest(path)


def test_report_lists_what_it_could_not_read(tmp_path):
    from impls.harness.report.build import build_report

    given = make_report_inputs(tmp_path)
    report = build_report("toybox", given["results"], given["artifacts"], given["claims"], figure_specs={})
    why = {Path(p).name: w for p, w in report.unreadable}
    assert "not valid JSON" in why["ffffffff-truncated-py.json"]
    assert "not UTF-8" in why["eeeeeeee-latin-py.json"]
    assert any("the report uses the copy of commit aaaaaaaa" in w for _, w in report.unreadable)
    assert not report.commits.empty                        # the readable results are still reported


# ------------------------------------------------------------------- signals (subprocesses)

def _run_until(point: str, sig: int, argv: list[str], tmp_path: Path, delay: float = 0.0,
               timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DLSYSBENCH_FAULT_AT": point,
           "DLSYSBENCH_FAULT_SLEEP": "0" if delay else "30"}
    proc = subprocess.Popen([sys.executable, *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        seen += line
        if not line or line.startswith("fault-point:"):
            break
    assert "fault-point:" in seen, seen
    time.sleep(delay or 0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(argv, proc.returncode, out, seen + err)


REPLAY = ["-m", "impls.bandana.replay", "--capacity", "256", "--policy", "shadow", "--shadow", "512",
          "--no-fio", "--json", "--mechanism", "threads"]     # threads: no AIO loop to compile


@pytest.mark.parametrize("point,sig,code", [("store-write", signal.SIGTERM, 143),
                                            ("replay", signal.SIGINT, 130)])
def test_replay_interrupted_leaves_no_store(point, sig, code, files, tmp_path):
    nvm = tmp_path / "nvm"
    argv = REPLAY + ["--trace", str(files["trace"]), "--layout", str(files["layout"])]
    done = _run_until(point, sig, argv, tmp_path)
    assert done.returncode == code, done.stderr
    assert f"error: interrupted by {signal.Signals(sig).name}" in done.stderr
    assert "Traceback" not in done.stderr and list(nvm.iterdir()) == []


def test_replay_killed_leaves_a_temp_file_the_next_run_removes(files, tmp_path, capsys, monkeypatch):
    import errno

    from impls.bandana.nvm import block_store

    nvm = tmp_path / "nvm"
    argv = REPLAY + ["--trace", str(files["trace"]), "--layout", str(files["layout"])]
    assert _run_until("store-write", signal.SIGKILL, argv, tmp_path).returncode == -signal.SIGKILL
    left = list(nvm.iterdir())
    assert left and all(".pid" in p.name for p in left)
    # the next run sweeps them before its own write, which here finds the disk full
    def full(path, *a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(block_store, "write_store", full)
    assert _main("replay")(_cache_args(files) + ["--no-fio"]) == 2
    err = capsys.readouterr().err
    assert "left in" in err and "error: No space left on device" in err
    assert list(nvm.iterdir()) == []


def test_training_interrupted_writes_nothing(files, tmp_path):
    argv = ["-m", "impls.slide.train", *_train_args(files, tmp_path, "--time-budget", "20")]
    done = _run_until("train", signal.SIGTERM, argv, tmp_path, delay=0.5)
    assert done.returncode == 143, done.stderr
    assert not (tmp_path / "r.json").exists()
    assert not [p for p in tmp_path.glob(".r.json*")]


def test_switching_interrupted_removes_its_checkpoints(files, tmp_path, monkeypatch, capsys):
    from impls.harness import paths
    from impls.salus import switching
    from impls.salus.core import switching as engine

    def interrupted(*a, **k):
        assert list((paths.cache_dir() / "salus").glob("switch-pid*"))   # the checkpoint folder exists
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)

    monkeypatch.setattr(engine, "measure_to_disk", interrupted)
    monkeypatch.setattr(engine, "measure_to_host", lambda *a, **k: [1.0])
    monkeypatch.setattr(engine, "measure_inprocess", lambda *a, **k: {})
    assert switching.main(["--workloads", "mlp_b64", "--repeats", "1", "--restart-repeats", "0"]) == 143
    assert not (paths.cache_dir() / "salus").exists()      # nor the folder it created for them
    assert "interrupted by SIGTERM" in capsys.readouterr().err


def test_the_probe_keeps_only_complete_caches(tmp_path):
    # a parse cache finished before the signal is not a file the fault left; a damaged or
    # half-written one is
    import hashlib

    from fault_probe import _complete_caches

    good, bad = tmp_path / "xc-parsed" / "a.npz", tmp_path / "xc-parsed" / "b.npz"
    good.parent.mkdir()
    for npz, digest_of in ((good, b"a"), (bad, b"other")):
        npz.write_bytes(npz.stem.encode())
        npz.with_suffix(".sha256").write_text(hashlib.sha256(digest_of).hexdigest())
    temp = tmp_path / "xc-parsed" / ".a.npz.pid1.tmp"
    temp.write_bytes(b"half")
    paths = [str(p) for p in tmp_path.rglob("*")]
    kept = _complete_caches(paths, tmp_path)
    assert kept == {str(good), str(good.with_suffix(".sha256"))}
    temp.unlink()
    bad.unlink()
    bad.with_suffix(".sha256").unlink()
    assert str(good.parent) in _complete_caches([str(p) for p in tmp_path.rglob("*")], tmp_path)


def test_wrapper_code_is_kept_by_identity():
    # the frame walk compares code by identity, so equal code compiled twice (a module
    # loaded again) must be two entries, not one a set would fold them into
    from impls.harness import interrupts

    source = "def wrapper():\n    return 1\n"
    first, second = (compile(source, "same.py", "exec").co_consts[0] for _ in range(2))
    assert first == second and first is not second
    interrupts.mark_wrapper(first)
    interrupts.mark_wrapper(second)
    interrupts.mark_wrapper(first)
    assert sum(w is first for w in interrupts._wrappers) == 1
    assert sum(w is second for w in interrupts._wrappers) == 1


def _start_as_python_m(tmp_path, module_text: str, after: str = "", **popen) -> subprocess.CompletedProcess:
    """Run a process that imports ``impls`` the way ``python -m impls...`` does (argv[0] is
    "-m" then), and then ``module_text`` as a module, then ``after``."""
    (tmp_path / "slow_start.py").write_text(module_text)
    script = ("import sys\nsys.argv = ['-m']\nimport impls\nsys.argv = ['probe']\n"
              "import slow_start\n" + after)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=60, **popen)


def test_a_sigint_while_a_python_m_command_imports_is_one_line(tmp_path):
    start = time.monotonic()
    done = _start_as_python_m(tmp_path, "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
                                        "time.sleep(20)\n")
    assert done.returncode == 130, done.stderr
    assert time.monotonic() - start < 15
    assert done.stderr.strip().splitlines() == [
        "error: interrupted by SIGINT while the command was starting; nothing was created"]


def test_a_sigint_after_the_imports_is_a_keyboard_interrupt_as_usual(tmp_path):
    after = ("import os, signal, time\ntry:\n    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(20)\n"
             "except KeyboardInterrupt:\n    sys.exit(3)\n")
    assert _start_as_python_m(tmp_path, "", after).returncode == 3


def test_an_ignored_sigint_stays_ignored_while_starting(tmp_path):
    done = _start_as_python_m(tmp_path, "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
                                        "time.sleep(0.2)\n", "print('finished')\n",
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert done.returncode == 0 and done.stdout == "finished\n", done.stderr


def test_a_sigint_in_an_import_that_main_began_is_a_keyboard_interrupt(tmp_path):
    # past the start (main runs, made a file, imports lazily): its own clean-up must run
    (tmp_path / "lazy.py").write_text("import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
                                      "time.sleep(20)\n")
    after = ("import os\n"
             "def main():\n"
             f"    made = {str(tmp_path / 'made')!r}\n"
             "    open(made, 'w').close()\n"
             "    try:\n"
             "        import lazy\n"
             "    except KeyboardInterrupt:\n"
             "        os.remove(made)\n"
             "        sys.exit(3)\n"
             "main()\n")
    done = _start_as_python_m(tmp_path, "", after)
    assert done.returncode == 3, done.stderr
    assert not (tmp_path / "made").exists()


def test_a_signal_in_a_gc_callback_or_a_finaliser_is_held_not_dropped(monkeypatch):
    """Python prints and drops an exception raised in a garbage-collector callback or a
    __del__ (Dask registers such a callback): a signal landing there must be held and sent
    again once the main code runs, or Ctrl-C would do nothing until the run ended."""
    import gc

    from impls.harness import interrupts

    seen = []

    def callback(phase, info):
        if phase == "start":
            seen.append(interrupts.state(sys._getframe()))

    class Finalised:
        def __del__(self):
            seen.append(interrupts.state(sys._getframe()))

    def main(argv):
        seen.append(interrupts.state(sys._getframe()))     # plain code of the command: raise
        gc.callbacks.append(callback)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(callback)
        Finalised()
        return 0

    monkeypatch.setattr(interrupts, "pending", [])        # no signal of an earlier test's command
    assert interrupts.run_main(main, []) == 0
    assert seen[0] == interrupts.RAISE and seen[1:] and set(seen[1:]) == {interrupts.HOLD}, seen


def test_an_interrupt_says_which_partial_files_it_removed_and_keeps_finished_ones(tmp_path, capsys):
    """A result the command had finished (unregistered, as --json is once written) stays, and
    the message does not claim it was removed; a partial file is removed and named."""
    from impls.harness import cli

    done, partial = tmp_path / "result.json", tmp_path / "store.bin"

    @cli.command("probe")
    def finished(argv=None):
        cli.register(done).write_text("{}")
        cli.unregister(done)
        raise KeyboardInterrupt

    assert finished([]) == cli.EXIT_SIGINT
    err = capsys.readouterr().err
    assert done.exists() and "no partial output was left (outputs it had finished are kept)" in err
    assert "removed" not in err

    @cli.command("probe")
    def half(argv=None):
        cli.register(partial).write_text("half")
        raise KeyboardInterrupt

    assert half([]) == cli.EXIT_SIGINT
    err = capsys.readouterr().err.strip()
    assert not partial.exists()
    assert err == f"error: interrupted by SIGINT, in probe; removed 1 partial output(s) it had created: {partial}"


@pytest.mark.parametrize("var", ["DLSYSBENCH_CACHE", "DLSYSBENCH_GRID_RESULTS", "DLSYSBENCH_ARTIFACTS"])
def test_an_os_error_under_a_path_variable_names_the_variable(tmp_path, monkeypatch, capsys, var):
    """The user typed the variable, not the path the error is at: the one line names it."""
    from impls.harness import cli

    blocker = tmp_path / "jobs.json"
    blocker.write_text("x")
    monkeypatch.setenv(var, str(blocker / "c"))

    @cli.command("probe")
    def main(argv=None):
        (blocker / "c" / "inner").mkdir(parents=True)
        return 0

    assert main([]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: Not a directory, {blocker / 'c' / 'inner'}, under {var}={blocker / 'c'}, "
                   f"expected {var} to name a usable folder")


def test_an_os_error_elsewhere_names_no_variable(tmp_path, monkeypatch, capsys):
    from impls.harness import cli

    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(tmp_path / "nvm.bin"))

    @cli.command("probe")
    def main(argv=None):
        open(tmp_path / "missing" / "x")
        return 0

    assert main([]) == 2
    assert capsys.readouterr().err.strip() == f"error: No such file or directory, {tmp_path / 'missing' / 'x'}"


def test_an_error_a_call_raised_is_not_passed_off_as_bad_input(tmp_path, monkeypatch, capsys):
    """A ValueError the suite's own check raises reads as bad input, with nothing added; one a
    call raised (numpy's C code here: a shape the engine got wrong) still exits 2 but says
    where it was raised and that, if the input is right, it is a defect; a standard-library
    parser's error (json) is the input's, with nothing added."""
    import json

    import numpy as np

    from impls.harness import cli, nvm_file

    monkeypatch.setenv("DLSYSBENCH_NVM_PATH", str(tmp_path))       # a folder: the suite refuses it

    @cli.command("own")
    def own(argv=None):
        nvm_file.nvm_target()
        return 0

    @cli.command("call")
    def call(argv=None):
        np.zeros(3).reshape(4)
        return 0

    @cli.command("parser")
    def parser(argv=None):
        json.loads("{x")
        return 0

    assert own([]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "is a directory" in err and "defect" not in err
    assert call([]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "cannot reshape" in err and "if the input is right, this is a defect" in err
    assert f"raised in {__name__}, line" in err
    assert parser([]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "Expecting property name" in err and "defect" not in err


def test_a_package_installed_under_the_standard_librarys_folder_is_not_the_standard_library(
        tmp_path, monkeypatch, capsys):
    """Without a virtualenv (a system or Docker Python) site-packages lies inside the standard
    library's folder: an error numpy's Python code raised there still gets the defect clause."""
    import numpy as np

    from impls.harness import cli

    monkeypatch.setattr(cli, "_STDLIB", Path(np.__file__).resolve().parents[2])   # .../lib/python3.X
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"\x93NUMPY\x01\x00" + b"\x10\x00" + b"{'descr': 1}    \n")

    @cli.command("probe")
    def main(argv=None):
        np.load(bad)
        return 0

    assert main([]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "raised in numpy" in err and "if the input is right, this is a defect" in err, err
