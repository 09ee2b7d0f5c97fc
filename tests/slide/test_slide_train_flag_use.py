"""``python -m impls.slide.train`` says what a run will not use or cannot hold before it starts:
a flag the user gave that the chosen method or mode ignores is warned of, a method alias that
names another device than ``--device`` is refused, and a run larger than the memory this
process may allocate is refused before its weights or hash functions are drawn."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

PAIR = "4 20 3\n0 0:1 3:1\n1 1:1 4:1\n2 2:1 5:1\n0 6:1\n"


class Trained(ValueError):
    """Raised in place of training: the command exits 2 with it, nothing large built."""


@pytest.fixture
def run(tmp_path, monkeypatch, capsys):
    """``run(*flags)``: the command on a 4-point file, stopped where training would begin;
    returns (exit status, stderr)."""
    from impls.slide.experiments import sweeps
    from impls.slide.train import main

    def stopped(*args, **kw):
        raise Trained("stopped where training begins")

    monkeypatch.setattr(sweeps, "train_method", stopped)
    data = tmp_path / "train.txt"
    data.write_text(PAIR)

    def go(*flags: str) -> tuple[int, str]:
        status = main(["--train", str(data), "--test", str(data), "--threads", "1", "--max-iterations", "1",
                       "--quiet", "--json", str(tmp_path / "o.json"), *flags])
        return status, capsys.readouterr().err
    return go


def no_effect(err: str) -> list[str]:
    """The flags the warnings say have no effect, in order."""
    return [flag for line in err.splitlines() if "no effect in this run" in line
            for flag in re.findall(r"--[a-z-]+|--[KL]\b", line.split(" have ")[0].split(" has ")[0])]


@pytest.mark.parametrize("flags, ignored", [
    (["--method", "slide", "--warmup-steps", "1000", "--sample-fraction", "0.0001"],
     ["--warmup-steps", "--sample-fraction"]),
    (["--eval-growth", "2"], ["--eval-growth"]),
    (["--method", "dense", "--K", "4", "--lsh", "simhash", "--adam", "dense", "--sampler", "uniform"],
     ["--sampler", "--adam", "--K", "--lsh"]),
    (["--mode", "all", "--K", "40", "--topk", "3"], ["--K", "--topk"]),
    (["--lsh", "simhash", "--binsize", "4", "--padding-sampler", "log-uniform"], ["--binsize", "--padding-sampler"]),
    (["--sample-fraction", "0.2"], ["--sample-fraction"]),            # given, though equal to its default
])
def test_a_flag_the_run_ignores_is_warned_of(run, flags, ignored):
    status, err = run(*flags)
    assert status == 2 and "stopped where training begins" in err, err     # warned, then went on
    assert no_effect(err) == ignored, err
    assert all(line.startswith(("warning: ", "error: ")) for line in err.splitlines()), err


@pytest.mark.parametrize("flags", [
    [],                                                              # defaults never warn
    ["--eval-growth", "2", "--eval-first", "0.5"],
    ["--method", "sampled", "--sample-fraction", "0.1", "--sampler", "uniform", "--warmup-steps", "2"],
    ["--method", "dense-torch", "--warmup-steps", "0", "--device", "cpu"],
    ["--lsh", "dwta", "--binsize", "4", "--dwta-zeros", "absent", "--mode", "topk", "--topk", "3"],
    ["--mode", "threshold", "--threshold", "1", "--padding", "batch", "--padding-sampler", "log-uniform"],
    ["--mode", "all", "--hidden", "8", "--adam", "dense"],
])
def test_a_flag_the_run_uses_is_not_warned_of(run, flags):
    status, err = run(*flags)
    assert status == 2 and "stopped where training begins" in err, err
    assert no_effect(err) == [], err


def test_a_cuda_alias_with_device_cpu_is_refused(run):
    status, err = run("--method", "dense-torch-cuda", "--device", "cpu")
    assert status == 2, err
    assert err.startswith("error: --method dense-torch-cuda with --device cpu, --device"), err
    assert "stopped" not in err and len(err.strip().splitlines()) == 1, err


def test_given_flags_are_those_named_not_those_defaulted():
    from impls.slide.flag_scope import given_flags
    from impls.slide.train import _parser

    argv = ["--dataset", "x", "--json", "-", "--sample-f", "0.2", "--no-rebuild-at-first-rehash", "--K", "6"]
    parser = _parser()
    args = parser.parse_args(argv)
    assert given_flags(parser, argv, args) == {"dataset", "json", "sample_fraction", "rebuild_at_first_rehash", "K"}
    assert args.sample_fraction == 0.2 and args.rebuild_at_first_rehash is False and args.lr > 0   # values kept


@pytest.mark.parametrize("flags", [
    ["--hidden", "1000000", "--lsh", "simhash"],       # 300 x 1e6 random keys sorted: minutes, then GiBs
    ["--hidden", "1000000", "--lsh", "dwta", "--L", "100000"],
    ["--method", "dense", "--hidden", "100000000"],
    ["--mode", "all", "--hidden", "100000000"],
])
def test_a_run_too_large_for_memory_is_refused_before_anything_is_drawn(run, monkeypatch, flags):
    from impls.slide import footprint

    monkeypatch.setattr(footprint, "available_bytes", lambda: 2**30)
    status, err = run(*flags)
    assert status == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: not enough memory (this ") and "may allocate 1.0 GiB" in line, err
    assert "check --hidden, --K, --L" in line and "stopped" not in err, err


def test_a_header_far_above_the_ids_in_use_is_named_when_the_run_does_not_fit(run, monkeypatch, tmp_path):
    """A header D of 1e8 over rows with ids up to 6 ran out of memory blaming only the flags."""
    from impls.slide import footprint

    monkeypatch.setattr(footprint, "available_bytes", lambda: 2**30)
    (tmp_path / "train.txt").write_text(PAIR.replace("4 20 3", "4 100000000 3", 1))
    status, err = run()
    line = err.strip().splitlines()[-1]
    assert status == 2 and line.startswith(f"error: not enough memory ({tmp_path / 'train.txt'}'s header says "
                                           "D=100,000,000 but its rows use ids up to 6 (a typo"), err
    assert "L=" not in line.split(" (a typo")[0] and "100000000 features" in line, err
    assert footprint.header_note("f", 20, 3, (7, 3)) == ""                 # the ids fill the header's counts


def test_a_run_that_fits_is_not_refused(run, monkeypatch):
    from impls.slide import footprint

    monkeypatch.setattr(footprint, "available_bytes", lambda: 2**30)
    status, err = run("--hidden", "1024", "--lsh", "simhash")
    assert status == 2 and "stopped where training begins" in err, err


def test_available_memory_is_read_on_this_machine():
    from impls.slide.footprint import available_bytes

    have = available_bytes()
    assert have is None or (isinstance(have, int) and have > 0)
    if Path("/proc/meminfo").exists():
        assert have is not None


@pytest.mark.parametrize("family, K, L, dim, binsize", [
    ("simhash", 3, 10, 3000, 8), ("dwta", 6, 50, 256, 8), ("wta", 4, 20, 64, 16)])
def test_the_hash_draw_estimate_is_a_lower_bound_of_its_peak(family, K, L, dim, binsize):
    import tracemalloc

    from impls.slide.core.lsh import draw_bytes, make_lsh

    make_lsh(family, K, L, dim, seed=1, binsize=binsize)   # once untraced: what its first call imports or
    tracemalloc.start()                                    # caches is no part of a draw (a CI run: 96 KB)
    try:
        make_lsh(family, K, L, dim, seed=1, binsize=binsize)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    estimate = draw_bytes(family, K, L, dim, binsize)
    assert 0.5 * peak <= estimate <= peak, (estimate, peak)
