"""Fault probe: the README's command lines and the loaders, fed bad inputs and faults.

    python tests/fault_probe.py [--root CHECKOUT] [--only WORD] [--json OUT]

Each case runs in a subprocess (``--root``: the checkout whose ``impls`` is probed,
default this one) in a scratch directory whose caches, NVM target and outputs are its
own, and is classified as one of

- ``clear error``: exit 2, a one-line ``error: ...`` message, no traceback, nothing left;
- ``correct``: a valid input handled as documented;
- ``traceback or misleading``: a Python traceback, another exit status, or a message
  that points the wrong way (a valid input refused);
- ``silently wrong``: bad input accepted (exit 0), files left behind, a cache served
  stale, a run that reports success after an interrupt.

The defect classes are those of issue 22 (1 files left by faults, 2 checks after the
work, 3 nonsense accepted, 4 tracebacks, 5 caches, 6 wrong values, 7 report, 8 device
setup, 9 timings; 0 other bad inputs). ``make_inputs`` is shared with tests/test_faults.py.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
OUTCOMES = ("clear error", "correct", "traceback or misleading", "silently wrong")
CLASSES = {0: "other bad inputs", 1: "faults leave files", 2: "checks after the work",
           3: "nonsense accepted", 4: "tracebacks", 5: "caches", 6: "wrong values",
           7: "report hides damage", 8: "device setup", 9: "timings"}


def make_inputs(d: Path) -> dict[str, Path]:
    """Write every input file the cases use into ``d``; return them by short name."""
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    f = {}

    def npy(name, arr):
        f[name] = d / f"{name}.npy"
        np.save(f[name], arr)

    npy("trace", rng.integers(0, 4096, 20000).astype(np.int64))
    npy("layout", rng.permutation(4096).astype(np.int64))
    npy("offsets", np.arange(0, 20001, 4, dtype=np.int64))
    npy("bad_offsets", np.array([0, 5, 3, 20000], dtype=np.int64))
    npy("float_trace", rng.random(100).astype(np.float32))
    npy("trace_2d", np.zeros((10, 2), np.int64))
    npy("out_of_range", np.array([1, 10 ** 9], np.int64))
    npy("dup_layout", np.zeros(4096, np.int64))
    npy("empty_array", np.zeros(0, np.int64))
    npy("big_trace", rng.integers(0, 65536, 400000).astype(np.int64))
    npy("big_layout", rng.permutation(65536).astype(np.int64))
    f["zero_bytes"] = d / "zero.npy"
    f["zero_bytes"].write_bytes(b"")
    f["truncated"] = d / "truncated.npy"
    f["truncated"].write_bytes(f["trace"].read_bytes()[:300])
    f["text_npy"] = d / "text.npy"
    f["text_npy"].write_text("1 2 3\n")
    f["pickled"] = d / "pickled.npy"
    np.save(f["pickled"], np.array([{"a": 1}], dtype=object), allow_pickle=True)
    # XC text: 120 points, D = 40 features, L = 12 labels
    lines = [f"{i % 12},{(i * 7) % 12} " + " ".join(f"{(i + j) % 40}:{0.5 + j}" for j in range(3))
             for i in range(120)]
    texts = {"train": "120 40 12\n" + "\n".join(lines) + "\n",
             "test": "40 40 12\n" + "\n".join(lines[:40]) + "\n",
             "overflow": "2 40 12\n0 0:1e999\n1 1:1\n",
             "overflow_f32": "2 40 12\n0 0:4e38\n1 1:1\n",
             "bad_syntax": "2 40 12\n0 0:1\n1 1x1\n",
             "bad_header": "two 40 12\n0 0:1\n",
             "label_range": "2 40 12\n0 0:1\n99 1:1\n",
             "too_few": "5 40 12\n0 0:1\n",
             "empty_labels": "3 40 12\n0 0:1\n 1:1\n2 2:1\n",
             "empty_txt": ""}
    f["binary_txt"] = d / "binary.txt"
    f["binary_txt"].write_bytes(bytes(rng.integers(0, 256, 500, dtype=np.uint8)))
    jobs = {"jobs_ok": '[{"name": "a", "persistent": 100, "ephemeral": 50}]',
            "jobs_nan": '[{"name": "a", "persistent": NaN, "ephemeral": 50}]',
            "jobs_inf": '[{"name": "a", "persistent": 1, "ephemeral": Infinity}]',
            "jobs_syntax": '[{"name": "a", ',
            "jobs_notlist": '{"name": "a"}',
            "jobs_negative": '[{"name": "a", "persistent": -1, "ephemeral": 0}]',
            "jobs_empty": ""}
    for suffix, table in ((".txt", texts), (".json", jobs)):
        for name, text in table.items():
            f[name] = d / f"{name}{suffix}"
            f[name].write_text(text)
    f["jobs_latin1"] = d / "jobs_latin1.json"
    f["jobs_latin1"].write_bytes('[{"name": "caf\u00e9", "persistent": 1, "ephemeral": 1}]'.encode("latin-1"))
    return f


@dataclasses.dataclass
class Case:
    id: str
    cls: int
    module: str                       # python -m MODULE, or "-c" for a code snippet
    args: list[str]
    expect: str = "error"             # "error" | "ok"
    env: dict = dataclasses.field(default_factory=dict)
    fault: tuple[str, int, float] | None = None   # (fault point, signal, delay after it)
    check: Callable | None = None     # (ctx, proc, stderr) -> outcome or None
    timeout: float = 120


def _snapshot(ctx) -> set[str]:
    out = set()
    for top in (ctx["work"], ctx["cache"], ctx["nvm"]):
        for p in top.rglob("*"):
            if "__pycache__" not in p.parts:
                out.add(str(p))
    return out


def run_case(case: Case, ctx: dict, python: str, root: Path) -> tuple[str, str]:
    """Run one case; return (outcome, detail)."""
    env = {**os.environ, "PYTHONPATH": str(root), "DLSYSBENCH_CACHE": str(ctx["cache"]),
           "DLSYSBENCH_NVM_PATH": str(ctx["nvm"] / "target.bin"), "DLSYSBENCH_PROFILE": "smoke",
           "DLSYSBENCH_ARTIFACTS": str(ctx["work"] / "artifacts"), **case.env}
    env.pop("DLSYSBENCH_DEBUG", None)
    before = _snapshot(ctx)
    cmd = [python, "-c", case.args[0], *case.args[1:]] if case.module == "-c" else \
        [python, "-m", case.module, *case.args]
    start = time.perf_counter()
    if case.fault:
        point, signum, delay = case.fault
        env.update({"DLSYSBENCH_FAULT_AT": point, "DLSYSBENCH_FAULT_SLEEP": "0" if delay > 0 else "30"})
        proc = subprocess.Popen(cmd, cwd=ctx["work"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
        reader.start()
        # wait for the fault point; a checkout without fault points: for what the point makes
        while proc.poll() is None and time.perf_counter() - start < case.timeout:
            if any(ln.startswith("fault-point:") for ln in list(lines)) or (
                    not ctx["new_cli"] and _fallback_reached(point, ctx)):
                break
            time.sleep(0.01)
        time.sleep(max(delay, 0.05))
        if proc.poll() is None:
            proc.send_signal(signum)
        try:
            out = proc.communicate(timeout=case.timeout)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            out = proc.communicate()[0]
        reader.join(5)
        err, rc = "".join(lines), proc.returncode
    else:
        try:
            proc = subprocess.run(cmd, cwd=ctx["work"], env=env, capture_output=True, text=True,
                                  timeout=case.timeout)
        except subprocess.TimeoutExpired:
            return "traceback or misleading", f"no answer in {case.timeout} s"
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    seconds = time.perf_counter() - start
    result = dataclasses.make_dataclass("R", ["rc", "out", "err", "seconds"])(rc, out, err, seconds)
    left = sorted(_snapshot(ctx) - before)
    if case.check is not None:
        verdict = case.check(ctx, result, left)
        if verdict:
            return verdict
    if "Traceback (most recent call last)" in err:
        return "traceback or misleading", _last(err)
    if case.expect == "error":
        if rc == 0:
            return "silently wrong", "exit 0: " + _last(out or err)
        if left:
            return "silently wrong", f"exit {rc}, left {', '.join(Path(p).name for p in left[:3])}"
        errors = [ln for ln in err.splitlines() if ln.startswith("error:") or ": error:" in ln]
        if rc == 2 and errors:
            return "clear error", errors[-1][:160]
        return "traceback or misleading", f"exit {rc}: {_last(err)}"
    if rc == 0:
        return "correct", _last(err) or "exit 0"
    return "traceback or misleading", f"valid input refused, exit {rc}: {_last(err)}"


def _fallback_reached(point: str, ctx: dict) -> bool:
    globs = {"store-write": (ctx["nvm"], ".*.tmp"), "replay": (ctx["nvm"], "bandana-replay-*.store"),
             "switching": (ctx["cache"] / "salus", "switch-*"), "train": (ctx["cache"], "xc-parsed/*.npz")}
    base, pattern = globs[point]
    return any(base.glob(pattern))


def _last(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:160] if lines else ""


# ------------------------------------------------------------------------- custom checks

def _complete_caches(paths: list[str], cache_root: Path) -> set[str]:
    """Those of ``paths`` that are checked caches under ``cache_root`` (an ``.npz`` whose
    ``.sha256`` file holds its digest, both written before the fault: the parse cache a run
    keeps on purpose), with their checksum files and the folders that hold nothing else."""
    import hashlib

    kept: set[str] = set()
    for name in paths:
        npz = Path(name)
        sidecar = npz.with_suffix(".sha256")
        if npz.suffix == ".npz" and cache_root in npz.parents and sidecar.is_file() and npz.is_file() \
                and hashlib.sha256(npz.read_bytes()).hexdigest() == sidecar.read_text().strip():
            kept |= {str(npz), str(sidecar)}
    for name in paths:
        folder = Path(name)
        if folder.is_dir() and cache_root in folder.parents and all(
                str(q) in kept for q in folder.rglob("*") if q.is_file()):
            kept.add(name)
    return kept


def _nothing_left_after_signal(ctx, r, left):
    """A signalled run: non-zero exit, no store, temp file or checkpoint folder left (a
    complete parse cache written before the signal is kept on purpose and not counted)."""
    kept = _complete_caches(left, Path(ctx["cache"]))
    left = [p for p in left if p not in kept]
    if r.rc == 0:
        return "silently wrong", "interrupted run exited 0"
    if left:
        return "silently wrong", f"left {', '.join(Path(p).name for p in left[:3])}"
    if "Traceback (most recent call last)" in r.err:
        return "traceback or misleading", _last(r.err)
    return "clear error", f"exit {r.rc}, nothing left"


def _killed_then_swept(next_case: "Case"):
    def check(ctx, r, left):
        if not left:
            return "correct", "SIGKILL left nothing"
        outcome, _ = run_case(next_case, ctx, ctx["python"], ctx["root"])
        still = [p for p in left if Path(p).exists()]
        if still:
            return "silently wrong", f"the next run left {', '.join(Path(p).name for p in still[:3])}"
        return "correct", f"the next run removed {len(left)} stale file(s)"
    return check


def _warns_short(ctx, r, left):
    """A rate over a timed part under a second must come with a warning."""
    if r.rc != 0:
        return None
    try:
        timed = json.loads(r.out)["seconds"] if r.out.strip() else \
            json.loads((ctx["work"] / "r.json").read_text())["train_seconds"]
    except (ValueError, KeyError, OSError):
        timed = 0.0
    warned = "not to be trusted" in r.err
    if timed >= 1.0 or warned:
        return "correct", f"timed part {timed:.2f} s, {'warned' if warned else 'long enough'}"
    return "silently wrong", f"a {timed:.2f} s timed part reported without a word"


def _store_not_in_dev(ctx, r, left):
    if "Traceback" in r.err:
        return None
    if r.rc == 0:
        return "correct", "store beside the cache, device untouched"
    return "traceback or misleading", _last(r.err)


CACHE_SNIPPET_CORRUPT = """
import sys, logging, pathlib
from impls.slide.data.xc_format import read_xc_cached, read_xc
src, cache = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
a = read_xc_cached(src, cache_dir=cache)
for npz in cache.glob('*.npz'):
    npz.write_bytes(npz.read_bytes()[:100])
b = read_xc_cached(src, cache_dir=cache)
assert (a['labels'] == b['labels']).all()
print('ok')
"""
CACHE_SNIPPET_STALE = """
import sys, os, pathlib
from impls.slide.data.xc_format import read_xc_cached
src, cache = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
target = cache / 'edited.txt'
target.write_text(src.read_text())
st = os.stat(target)
a = read_xc_cached(target, cache_dir=cache)
target.write_text(src.read_text().replace('0:0.5', '0:9.5'))
os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
b = read_xc_cached(target, cache_dir=cache)
print('stale' if (a['values'] == b['values']).all() else 'fresh')
"""
CACHE_SNIPPET_OPTIONS = """
import sys, pathlib
from impls.slide.data.xc_format import read_xc_cached
src, cache = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
read_xc_cached(src, allow_empty_labels=True, cache_dir=cache)
try:
    read_xc_cached(src, allow_empty_labels=False, cache_dir=cache)
    print('accepted')
except ValueError:
    print('rejected')
"""


def _printed(word_ok: str):
    def check(ctx, r, left):
        if "Traceback" in r.err:
            return "traceback or misleading", _last(r.err)
        return ("correct", word_ok) if r.out.strip().endswith(word_ok) else ("silently wrong", _last(r.out))
    return check


def _report_lists_damage(ctx, r, left):
    md = ctx["work"] / "report-out" / "report.md"
    # exit 1 with the report written is the left-out files' status (0 in checkouts before it)
    if r.rc not in (0, 1) or not md.is_file() or (r.rc == 1 and "left out of the report" not in r.err):
        return "traceback or misleading", f"no report (exit {r.rc}): {_last(r.err)}"
    text = md.read_text()
    if "truncated" in text and "the report uses the copy of commit" in text and "latin" in text:
        return "correct", "report lists the unreadable files and the substitution"
    return "silently wrong", "report rendered without naming the unreadable inputs"


def make_report_inputs(d: Path) -> dict[str, Path]:
    """asv results with a truncated and a non-UTF-8 file; artifacts whose newest is truncated."""
    import shutil

    fixtures = HERE / "fixtures" / "report"
    results = d / "results"
    shutil.copytree(fixtures / "asv_results", results, dirs_exist_ok=True)
    machine = results / "toybox"
    good = sorted(machine.glob("*-existing-py.json"))[0]
    (machine / "ffffffff-truncated-py.json").write_text(good.read_text()[:200])
    (machine / "eeeeeeee-latin-py.json").write_bytes(b'{"version": 2, "x": "\xe9"}')
    arts = d / "artifacts" / "toybox"
    record = {"schema": 1, "name": "demo", "experiment": "demo", "synthetic": True, "profile": "smoke",
              "created": "2026-01-01T00:00:00+00:00", "machine": "toybox", "commit": "aaaaaaaa",
              "fingerprint": {}, "data": {}}
    (arts / "aaaaaaaa").mkdir(parents=True)
    (arts / "aaaaaaaa" / "demo.json").write_text(json.dumps(record))
    (arts / "bbbbbbbb").mkdir(parents=True)
    (arts / "bbbbbbbb" / "demo.json").write_text(json.dumps({**record, "commit": "bbbbbbbb"})[:50])
    return {"results": results, "artifacts": d / "artifacts", "claims": fixtures / "claims.toml"}


# ------------------------------------------------------------------------- the cases

def cases(f: dict[str, Path], ctx: dict) -> list[Case]:
    s = {k: str(v) for k, v in f.items()}
    out: list[Case] = []
    cache_base = ["--trace", s["trace"], "--layout", s["layout"], "--capacity", "256", "--policy", "shadow",
                  "--shadow", "512"]
    C = "impls.bandana.cache"
    out += [Case("cache valid", 0, C, cache_base + ["--json"], "ok"),
            Case("cache empty trace array", 0, C, ["--trace", s["empty_array"], *cache_base[2:]], "ok")]
    for name, key in [("missing trace", None), ("trace is a directory", "dir"), ("0-byte .npy", "zero_bytes"),
                      ("truncated .npy", "truncated"), ("text file as .npy", "text_npy"),
                      ("float trace", "float_trace"), ("2-D trace", "trace_2d"), ("pickled .npy", "pickled"),
                      ("ids out of range", "out_of_range")]:
        path = str(ctx["work"] / "nope.npy") if key is None else str(ctx["inputs"]) if key == "dir" else s[key]
        out.append(Case(f"cache {name}", 4 if key in ("zero_bytes", "truncated") else 0, C,
                        ["--trace", path, *cache_base[2:]]))
    out += [Case("cache layout not a permutation", 0, C, ["--trace", s["trace"], "--layout", s["dup_layout"],
                                                            *cache_base[4:]]),
            Case("cache capacity 0", 3, C, cache_base[:5] + ["0"] + cache_base[6:]),
            Case("cache capacity -5", 3, C, cache_base[:5] + ["-5"] + cache_base[6:]),
            Case("cache capacity not a number", 0, C, cache_base[:5] + ["lots"] + cache_base[6:]),
            Case("cache shadow < capacity", 3, C, cache_base[:-1] + ["10"]),
            Case("cache vector-bytes 0", 3, C, cache_base + ["--vector-bytes", "0"]),
            Case("cache vector-bytes above block-bytes", 3, C, cache_base + ["--vector-bytes", "8192"]),
            Case("cache block-bytes -1", 3, C, cache_base + ["--block-bytes", "-1"]),
            Case("cache unknown policy", 0, C, cache_base[:7] + ["lru"])]

    R = "impls.bandana.replay"
    rbase = cache_base + ["--no-fio"]
    big = ["--trace", s["big_trace"], "--layout", s["big_layout"], "--capacity", "4096", "--policy", "shadow",
           "--shadow", "8192", "--no-fio", "--json"]
    out += [Case("replay valid (short: must warn)", 9, R, rbase + ["--json"], "ok", check=_warns_short),
            Case("replay missing trace", 0, R, ["--trace", str(ctx["work"] / "no.npy"), *rbase[2:]]),
            Case("replay 0-byte trace", 4, R, ["--trace", s["zero_bytes"], *rbase[2:]]),
            Case("replay block-bytes 1000", 2, R, rbase + ["--block-bytes", "1000"]),
            Case("replay block-bytes 0", 2, R, rbase + ["--block-bytes", "0"]),
            Case("replay vector-bytes 0", 3, R, rbase + ["--vector-bytes", "0"]),
            Case("replay queue-depth 0", 3, R, rbase + ["--queue-depth", "0"]),
            Case("replay queue-depth 100000", 4, R, rbase + ["--queue-depth", "100000"]),
            Case("replay fio-runtime 0", 2, R, cache_base + ["--fio-runtime", "0"]),
            Case("replay fio-runtime nan", 2, R, cache_base + ["--fio-runtime", "nan"]),
            Case("replay offsets not CSR", 2, R, rbase + ["--offsets", s["bad_offsets"]]),
            Case("replay offsets float", 2, R, rbase + ["--offsets", s["float_trace"]]),
            Case("replay seed -1", 3, R, rbase + ["--seed", "-1"]),
            Case("replay --path exists", 0, R, rbase + ["--path", s["trace"]]),
            Case("replay --path in a missing dir", 1, R, rbase + ["--path", str(ctx["work"] / "a" / "b" / "s")]),
            Case("replay --path is a directory", 0, R, rbase + ["--path", str(ctx["work"])]),
            Case("replay --path read-only dir", 0, R, rbase + ["--path", str(ctx["readonly"] / "s.store")],
                 ctx["readonly_expect"]),
            Case("replay NVM path is a block device", 8, R, rbase, "ok",
                 env={"DLSYSBENCH_NVM_PATH": ctx["block_device"]}, check=_store_not_in_dev),
            Case("replay offsets valid", 0, R, rbase + ["--offsets", s["offsets"], "--json"], "ok")]
    for point, sig, delay in [("store-write", signal.SIGTERM, 0), ("store-write", signal.SIGINT, 0),
                              ("replay", signal.SIGTERM, 0), ("replay", signal.SIGINT, 0),
                              ("replay", signal.SIGINT, 0.3), ("replay", signal.SIGINT, 0.6)]:
        out.append(Case(f"replay {signal.Signals(sig).name} at {point}+{delay}s", 1, R, big,
                        fault=(point, sig, delay), check=_nothing_left_after_signal))
    out.append(Case("replay SIGKILL at store-write, then a run", 1, R, big,
                    fault=("store-write", signal.SIGKILL, 0),
                    check=_killed_then_swept(Case("next replay", 1, R, rbase, "ok"))))

    T = "impls.slide.train"
    tbase = ["--train", s["train"], "--test", s["test"], "--quiet", "--K", "2", "--L", "2", "--hidden", "16",
             "--batch", "16", "--eval-points", "20", "--json", str(ctx["work"] / "r.json")]
    out += [Case("train valid (short: must warn)", 9, T, tbase + ["--time-budget", "0.5"], "ok",
                 check=_warns_short)]
    for flags, cls in [(["--threads", "0"], 3), (["--threads", "-1"], 3), (["--lr", "-1"], 3), (["--lr", "nan"], 3),
                       (["--lr", "0"], 3), (["--time-budget", "-5"], 3), (["--time-budget", "nan"], 3),
                       (["--batch", "0"], 3), (["--eval-points", "0"], 3), (["--max-iterations", "0"], 3),
                       (["--K", "0"], 3), (["--eval-growth", "0.5", "--eval-first", "0.1"], 3),
                       (["--device", "cuda", "--method", "dense"], 4)]:
        out.append(Case(f"train {' '.join(flags)}", cls, T, tbase + ["--time-budget", "3"] + flags))
    out += [Case("train --json is a directory", 2, T, tbase[:-1] + [str(ctx["work"]), "--time-budget", "3"]),
            Case("train --json in a missing dir", 2, T, tbase[:-1] + [str(ctx["work"] / "x" / "r.json"),
                                                                     "--time-budget", "3"]),
            Case("train --json read-only dir", 2, T, tbase[:-1] + [str(ctx["readonly"] / "r.json"),
                                                                   "--time-budget", "3"], ctx["readonly_expect"]),
            Case("train --train missing", 0, T, ["--train", str(ctx["work"] / "no.txt")] + tbase[2:]),
            Case("train --train a directory", 0, T, ["--train", str(ctx["inputs"])] + tbase[2:]),
            Case("train --dataset unknown", 0, T, ["--dataset", "nope", "--json", str(ctx["work"] / "r.json")]),
            Case("train unknown DLSYSBENCH_PROFILE", 4, T, ["--dataset", "slide-amazon670k", "--json",
                                                            str(ctx["work"] / "r.json")],
                 env={"DLSYSBENCH_PROFILE": "huge"})]
    for key, cls in [("empty_txt", 4), ("bad_syntax", 4), ("bad_header", 4), ("label_range", 4), ("too_few", 4),
                     ("binary_txt", 4), ("empty_labels", 4), ("overflow", 6), ("overflow_f32", 6)]:
        out.append(Case(f"train XC {key}", cls, T, ["--train", s[key]] + tbase[2:] + ["--time-budget", "3"]))
    out.append(Case("train XC empty labels allowed", 0, T, ["--train", s["empty_labels"]] + tbase[2:]
                    + ["--allow-empty-labels", "--max-iterations", "3"], "ok"))
    for sig in (signal.SIGINT, signal.SIGTERM):
        out.append(Case(f"train {signal.Signals(sig).name} while training", 1, T,
                        tbase + ["--time-budget", "20"], fault=("train", sig, 0.5),
                        check=_nothing_left_after_signal))
    cache_dir = str(ctx["work"] / "xc-cache")
    out += [Case("XC cache truncated then read", 5, "-c", [CACHE_SNIPPET_CORRUPT, s["train"], cache_dir], "ok",
                 check=_printed("ok")),
            Case("XC cache edited source, same size and mtime", 5, "-c",
                 [CACHE_SNIPPET_STALE, s["train"], cache_dir], "ok", check=_printed("fresh")),
            Case("XC cache strict after lenient", 5, "-c", [CACHE_SNIPPET_OPTIONS, s["empty_labels"], cache_dir],
                 "ok", check=_printed("rejected"))]

    S = "impls.salus.switching"
    sw = ["--repeats", "1", "--restart-repeats", "0", "--json"]
    out += [Case("switching --workloads ,", 3, S, ["--workloads", ","] + sw),
            Case("switching unknown second workload", 2, S, ["--workloads", "mlp_b64,nope"] + sw),
            Case("switching --device tpu", 4, S, ["--device", "tpu", "--workloads", "mlp_b64"] + sw),
            Case("switching --repeats 0", 3, S, ["--workloads", "mlp_b64", "--repeats", "0"]),
            Case("switching --threads 0", 3, S, ["--workloads", "mlp_b64", "--threads", "0"] + sw),
            Case("switching --threads -1", 4, S, ["--workloads", "mlp_b64", "--threads", "-1"] + sw),
            Case("switching SIGTERM while measuring", 1, S, ["--workloads", "mlp_b64"] + sw,
                 fault=("switching", signal.SIGTERM, 0), check=_nothing_left_after_signal),
            Case("switching SIGINT while measuring", 1, S, ["--workloads", "mlp_b64"] + sw,
                 fault=("switching", signal.SIGINT, 0), check=_nothing_left_after_signal)]

    L = "impls.salus.lanes"
    out += [Case("lanes valid", 0, L, ["--jobs", s["jobs_ok"], "--capacity", "1000"], "ok")]
    for key, cls in [("jobs_nan", 4), ("jobs_inf", 4), ("jobs_latin1", 4), ("jobs_syntax", 0),
                     ("jobs_notlist", 0), ("jobs_negative", 0), ("jobs_empty", 0)]:
        out.append(Case(f"lanes {key}", cls, L, ["--jobs", s[key], "--capacity", "1000"]))
    out += [Case("lanes --jobs missing", 0, L, ["--jobs", str(ctx["work"] / "no.json"), "--capacity", "1"]),
            Case("lanes --jobs a directory", 0, L, ["--jobs", str(ctx["inputs"]), "--capacity", "1"]),
            Case("lanes --capacity abc", 0, L, ["--jobs", s["jobs_ok"], "--capacity", "abc"]),
            Case("lanes --capacity -1", 3, L, ["--jobs", s["jobs_ok"], "--capacity", "-1"]),
            Case("lanes --partitions 0", 3, L, ["--jobs", s["jobs_ok"], "--capacity", "1000", "--rule", "static",
                                                "--partitions", "0"])]

    E = "impls.salus.experiments.scheduling"
    out += [Case("experiments unknown DLSYSBENCH_PROFILE", 4, E, ["policies"], env={"DLSYSBENCH_PROFILE": "huge"}),
            Case("experiments --device tpu", 4, E, ["policies", "--device", "tpu"]),
            Case("experiments --json in a missing dir", 2, E, ["overhead", "--json",
                                                               str(ctx["work"] / "x" / "o.json")]),
            Case("lane_experiments unknown DLSYSBENCH_PROFILE", 4, "impls.salus.experiments.lanes", ["lanes"],
                 env={"DLSYSBENCH_PROFILE": "huge"}),
            Case("lane_experiments --device tpu", 4, "impls.salus.experiments.lanes", ["lanes", "--device", "tpu"])]

    G = "impls.salus.gpu_check"
    out += [Case("gpu_check --repeats 0", 3, G, ["--repeats", "0"]),
            Case("gpu_check --out in a missing dir", 2, G, ["--out", str(ctx["work"] / "x" / "g.json")])]

    rep = make_report_inputs(ctx["work"] / "report-in")
    out.append(Case("report with unreadable results and artifacts", 7, "-c",
                    ["import runpy, sys; sys.argv[0] = 'render_report'; "
                     f"runpy.run_path({str(ctx['root'] / 'scripts' / 'render_report.py')!r}, run_name='__main__')",
                     "--machine", "toybox", "--results", str(rep["results"]), "--artifacts", str(rep["artifacts"]),
                     "--claims", str(rep["claims"]), "--out", str(ctx["work"] / "report-out")], "ok",
                    check=_report_lists_damage))
    manifest = ctx["work"] / "manifests"
    manifest.mkdir(exist_ok=True)
    (manifest / "typo.toml").write_text('name = "typo"\n[synthetic]\ngenerator = "a.b:c"\nseed = 1\nsede = 2\n')
    out += [Case("manifest with an unknown key", 3, "-c",
                 ["import sys; from impls.harness import registry, cli\n"
                  "@cli.command('probe')\ndef main(argv=None):\n    registry.parse_manifest(sys.argv[1]); return 0\n"
                  "sys.exit(main())" if ctx["new_cli"] else
                  "import sys; from impls.harness import registry; registry.parse_manifest(sys.argv[1])",
                  str(manifest / "typo.toml")]),
            Case("dlrm loader on a 0-byte file", 4, "-c",
                 ["import sys\nfrom impls.bandana.data.dlrm_loader import read_dlrm_file, DlrmFormatError\n"
                  "try:\n    read_dlrm_file(sys.argv[1])\nexcept DlrmFormatError as e:\n"
                  "    print('error:', e, file=sys.stderr); sys.exit(2)", s["zero_bytes"]])]
    return out


def probe(root: Path, python: str, only: str | None = None) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="fault-probe-") as tmp:
        tmp = Path(tmp)
        ctx = {"inputs": tmp / "inputs", "work": tmp / "work", "cache": tmp / "cache", "nvm": tmp / "nvm",
               "readonly": tmp / "readonly", "root": root, "python": python,
               "new_cli": (root / "impls" / "harness" / "cli.py").is_file(),
               "block_device": next((str(p) for p in (Path("/dev/vda"), Path("/dev/sda"), Path("/dev/nvme0n1"),
                                                      Path("/dev/loop0")) if p.exists()), "/dev/loop0")}
        for key in ("work", "cache", "nvm", "readonly"):
            ctx[key].mkdir(parents=True)
        ctx["readonly"].chmod(0o555)
        # root writes anywhere: there a read-only directory is a valid output
        ctx["readonly_expect"] = "ok" if os.access(ctx["readonly"], os.W_OK) else "error"
        files = make_inputs(ctx["inputs"])
        rows = []
        for case in cases(files, ctx):
            if only and only not in case.id:
                continue
            t0 = time.perf_counter()
            outcome, detail = run_case(case, ctx, python, root)
            rows.append({"case": case.id, "class": case.cls, "outcome": outcome, "detail": detail,
                         "seconds": round(time.perf_counter() - t0, 2)})
            print(f"{outcome:26s} [{case.cls}] {case.id}: {detail}", flush=True)
        ctx["readonly"].chmod(0o755)
    return rows


def summary(rows: list[dict]) -> str:
    """A markdown table: cases per defect class and outcome."""
    lines = ["| class | " + " | ".join(OUTCOMES) + " | cases |", "|---|" + "---|" * (len(OUTCOMES) + 1)]
    for cls, name in CLASSES.items():
        mine = [r for r in rows if r["class"] == cls]
        if mine:
            counts = [sum(r["outcome"] == o for r in mine) for o in OUTCOMES]
            lines.append(f"| {cls} {name} | " + " | ".join(map(str, counts)) + f" | {len(mine)} |")
    totals = [sum(r["outcome"] == o for r in rows) for o in OUTCOMES]
    lines.append("| all | " + " | ".join(map(str, totals)) + f" | {len(rows)} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=HERE.parent, help="checkout whose impls is probed")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--only", help="run the cases whose name contains this")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    args = parser.parse_args()
    rows = probe(args.root.resolve(), args.python, args.only)
    print(summary(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
