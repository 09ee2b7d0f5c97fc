"""Run the reference SLIDE code and the suite's engine side by side on the same XC files.

    python scripts/slide_reference_check.py REF OUT [--dataset slide-amazon670k] [--profile smoke|quick|full]
        [--train FILE --test FILE] [--points 300] [--lr 1e-2] [--batch 128] [--lsh dwta|simhash]
        [--K 6] [--L 50] [--at 20,49,51,...] [--threads 2] [--seed 0] [--padding batch|sample]
        [--only reference|engine]

REF is a checkout of keroro824/HashingDeepLearning (or its SLIDE folder), which this script
does not ship. It copies the C++ sources to OUT/build, adds ``scripts/slide_reference/probe.h``
and a stand-in for cnpy (the reference links cnpy only to load and save weights), and edits
them (``EDITS``): include the probe and call it after each batch, let it read a layer's
table count, and drop the test-set evaluations (~20 s a batch of 128 points at 670k labels)
and the saving of weights. It checks that ``Config.h`` has the values this check assumes
(``CONFIG_H``: sampling mode 4, FIFO buckets of 128, Adam, ...) and sets its hash family
(``--lsh``). It builds with g++ and OpenMP, then trains with ``Config_amz.csv``'s layout
(``config_text``): batch ``--batch``, rehash every 50 batches, new hash functions at batch 50
and every 1,000, the sampling mode's padding (to 1,000 neurons when fewer than 1,500 are
retrieved), dense Adam, points in file order.

The engine trains with the same choices through ``python -m
impls.slide.experiments.recall_probe`` (``engine_command``: fixed schedule, no upkeep, padding
to 1,000, dense Adam, the reference index, ReLU zeros read as values). The reference pads
from a window of a permutation (reshuffled every 6,946 batches) whose start it draws right
after ``srand(time(NULL))``, so the samples of one wall-clock second get the same window, or
one of a few (the draws share one ``rand`` state across OpenMP threads): about one window per
1-2 batches at its ~0.8 s a batch. ``--padding sample`` (default) draws each sample's own, as
the reference means to; ``batch`` is the engine's shared pool, nearer what it does. Measured, neither
tracks the reference better on every set (impls/slide/NOTES.md, "Cross-check against the reference code").

Both probe the same first ``--points`` test points after the batches in ``--at``: dense P@1,
the recall of the 10 best-scoring wrong labels in the union of the L buckets and its ratio to
a random set's, the union's size and the mean cosine between hidden vectors. Points without
labels are left out of both files. The two runs differ in their random draws (weights, hash
functions, padding; the reference seeds from ``std::random_device``) and the engine shuffles
the training points, so compare trajectories, not single values. Writes OUT/reference.jsonl,
OUT/engine.jsonl and OUT/summary.json, and prints the table. At 670k labels the reference
trains ~0.8 s a batch on 2 cores and holds ~14 GB; a probe costs a few seconds on each side.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIDE_FILES = HERE / "slide_reference"
DEFAULT_AT = "20,49,51,55,60,70,80,90,100,110,124,150,200,300,400,500"
REHASH_BATCHES, REBUILD_BATCHES = 50, 1000     # Config_amz.csv: Rehash 6400, Rebuild 128000 at batch 128
HASH_FUNCTION = {"dwta": 2, "simhash": 4}      # the reference's Config.h HashFunction values
NO_EVAL_STEPSIZE = 1 << 30                     # the reference evaluates when batch % Stepsize == 0

# (file, text the reference has, what replaces it): each must occur exactly once
EDITS = (
    ("main.cpp", '#include "Config.h"\n', '#include "Config.h"\n#include "probe.h"\n'),
    ("main.cpp", "        globalTime+= timeDiffInMiliseconds;\n",
     "        globalTime+= timeDiffInMiliseconds;\n"
     "        slide_probe(_mynet, testData, epoch * numBatches + i + 1);\n"),
    ("main.cpp", "            EvalDataSVM(20, _mynet, epoch*numBatches+i);\n",
     "            /* no evaluation during training: slide_probe measures */\n"),
    ("main.cpp", "            EvalDataSVM(numBatchesTest, _mynet, (e+1)*numBatches);\n",
     "            /* no evaluation at the end of an epoch */\n"),
    ("main.cpp", "            EvalDataSVM(50, _mynet, (e+1)*numBatches);\n", "            /* nor here */\n"),
    ("main.cpp", "        _mynet->saveWeights(savedWeights);\n", "        /* no weights saved */\n"),
    ("Layer.h", "\tint getNodeCount();\n", "\tint getNodeCount();\n\tint probe_tables() { return _L; }\n"),
)


# Config.h values this check assumes (the reference's own); another value means another code path
CONFIG_H = {"ADAM": "1", "BUCKETSIZE": "128", "binsize": "8", "Mode": "4", "THRESH": "2", "FIFO": "1",
            "LOADWEIGHT": "0", "Ratio": "3"}


class ReferenceError(RuntimeError):
    """The reference checkout cannot be used as this script expects."""


def source_dir(ref: Path) -> Path:
    """The folder of ``ref`` that holds the reference SLIDE sources (``main.cpp``, ``Layer.h``)."""
    for d in (ref, ref / "SLIDE"):
        if (d / "main.cpp").is_file() and (d / "Layer.h").is_file():
            return d
    raise ReferenceError(f"{ref}: no SLIDE sources (main.cpp, Layer.h) here or in {ref / 'SLIDE'}; "
                         "expected a checkout of keroro824/HashingDeepLearning")


def patch_sources(build: Path, lsh: str) -> None:
    """Apply :data:`EDITS` to the copied sources in ``build`` and set Config.h's hash family;
    raise :class:`ReferenceError` naming the file when the expected text is not there once."""
    for name, old, new in EDITS:
        path = build / name
        text = path.read_text()
        if text.count(old) != 1:
            raise ReferenceError(f"{path}: expected {old.strip()!r} once, found it {text.count(old)} times "
                                 "(another version of the reference code?)")
        path.write_text(text.replace(old, new))
    config = build / "Config.h"
    text = config.read_text()
    defines = {}
    for ln in text.splitlines():
        words = ln.split()
        if len(words) >= 3 and words[0] == "#define":
            defines.setdefault(words[1], []).append((ln, words[2]))
    for name, want in CONFIG_H.items():
        got = [value for _, value in defines.get(name, [])]
        if got != [want]:
            raise ReferenceError(f"{config}: expected '#define {name} {want}', found {got or 'none'} "
                                 "(another version of the reference code?)")
    lines = [ln for ln, _ in defines.get("HashFunction", [])]
    if len(lines) != 1:
        raise ReferenceError(f"{config}: expected one '#define HashFunction' line, found {len(lines)}")
    config.write_text(text.replace(lines[0], f"#define HashFunction {HASH_FUNCTION[lsh]}"))


def build_reference(ref: Path, out: Path, lsh: str) -> Path:
    """Copy, patch and compile the reference in ``out / 'build'``; return the binary's path."""
    src = source_dir(ref)
    build = out / "build"
    if build.exists():
        shutil.rmtree(build)
    build.mkdir(parents=True)
    for f in list(src.glob("*.cpp")) + list(src.glob("*.h")):
        shutil.copy2(f, build / f.name)
    for f in ("probe.h", "cnpy.h"):
        shutil.copy2(SIDE_FILES / f, build / f)
    patch_sources(build, lsh)
    compiler = shutil.which("g++")
    if compiler is None:
        raise ReferenceError("g++ not found: the reference code is C++ with OpenMP")
    binary = build / "runme"
    cmd = [compiler, "-O3", "-march=native", "-fopenmp", "-std=c++11", "-fno-strict-aliasing", "-w",
           "-I", str(build), "-o", str(binary), *sorted(str(p) for p in build.glob("*.cpp"))]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ReferenceError(f"building the reference failed:\n{done.stderr[-3000:]}")
    return binary


def config_text(*, train: Path, test: Path, n_train: int, n_test: int, n_features: int, n_labels: int,
                batch: int, lr: float, K: int, L: int, batches: int, log: Path) -> str:
    """The reference's config file (Config_amz.csv's layout and values but for the given sizes,
    ``batch``, ``lr``, ``K`` and ``L``), with enough epochs for ``batches`` batches."""
    per_epoch = n_train // batch
    if per_epoch < 1:
        raise ReferenceError(f"{n_train} training points make no batch of {batch}")
    return "\n".join([
        "RangePow = 6,18", f"K = 2,{K}", f"L = 20,{L}", "Sparsity = 1,0.005,1,1", "",
        f"Batchsize={batch}", f"Rehash={REHASH_BATCHES * batch}", f"Rebuild={REBUILD_BATCHES * batch}",
        f"InputDim={n_features}", f"totRecords={n_train}", f"totRecordsTest={n_test}", "",
        f"Lr={lr!r}", f"Epoch={math.ceil(batches / per_epoch)}", f"Stepsize={NO_EVAL_STEPSIZE}", "",
        f"sizesOfLayers=128,{n_labels}", "numLayer=2", "",
        f"trainData={train}", f"testData={test}", "",
        f"weight={log.parent / 'unused.npz'}", f"savedweight={log.parent / 'unused.npz'}", f"logFile={log}", ""])


def engine_command(a: argparse.Namespace, train: Path, test: Path, at: list[int]) -> list[str]:
    """The recall_probe command that trains the engine with the reference's choices, probing
    after the batches ``at`` (sorted) and padding as ``a.padding`` says."""
    batches = at[-1]
    return [sys.executable, "-m", "impls.slide.experiments.recall_probe", "--train", str(train), "--test", str(test),
            "--points", str(a.points), "--batches", str(batches), "--at", ",".join(map(str, at)), "--lr", repr(a.lr),
            "--batch", str(a.batch), "--lsh", a.lsh, "--K", str(a.K), "--L", str(a.L), "--index", "reference",
            "--dwta-zeros", "present", "--schedule", "fixed", "--rehash-every", str(REHASH_BATCHES),
            "--padding", a.padding, "--upkeep", "none", "--adam", "dense", "--min-active", "1000",
            "--threads", str(a.threads), "--seed", str(a.seed)]


def export(a: argparse.Namespace, out: Path) -> tuple[Path, Path]:
    """The XC train file both sides train on and a file of the ``--points`` test points both
    probe. Points without labels are left out of both (the reference's reader would take such
    a line's first feature for a label); a user's train file is used as it is when it has none."""
    from impls.slide.core.evaluate import eval_rows
    from impls.slide.data.dataset import check_same_shape, from_file, from_registry
    from impls.slide.data.xc_format import write_xc

    if a.train:
        check_same_shape(a.train, a.test)
        train, test = from_file(a.train, allow_empty_labels=True), from_file(a.test, allow_empty_labels=True)
        train_path = Path(a.train)
    else:
        train, test, _ = from_registry(a.dataset, a.profile)
        train_path = None
    labelled = train.labelled_rows()
    if labelled.size < train.n_points or train_path is None:
        train_path = write_xc(out / "train.txt", train.subset(labelled).to_arrays())
    test = test.subset(test.labelled_rows())
    if test.n_points == 0:
        raise ValueError("the test set has no point with a label")
    rows = eval_rows(test, a.points, a.seed)
    return train_path, write_xc(out / "test_points.txt", test.subset(rows).to_arrays())


def read_jsonl(path: Path) -> dict[int, dict]:
    """JSON lines of ``path`` that are objects, by their ``iteration``."""
    if not path.is_file():
        return {}
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{")]
    return {int(x["iteration"]): x for x in lines}


def side_by_side(reference: dict[int, dict], engine: dict[int, dict]) -> list[dict]:
    """One row per probed batch: each side's P@1, recall over random, retrieved and cosine
    (None where a side has no probe at that batch)."""
    rows = []
    for it in sorted(set(reference) | set(engine)):
        r, e = reference.get(it), engine.get(it)
        full = (e or {}).get("full", {})
        rows.append({"iteration": it,
                     "reference": None if r is None else {k: r[k] for k in
                                                          ("p_at_1", "over_random", "retrieved", "hidden_cosine")},
                     "engine": None if e is None else {"p_at_1": e.get("p_at_1"), "over_random": full.get("over_random"),
                                                       "retrieved": full.get("retrieved"),
                                                       "hidden_cosine": e.get("hidden_cosine")}})
    return rows


def table(rows: list[dict]) -> str:
    """``rows`` of :func:`side_by_side` as a Markdown table."""
    def cell(side, key, fmt):
        v = None if side is None else side.get(key)
        return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)
    out = ["| batch | P@1 ref / engine | recall / random ref / engine | retrieved ref / engine | hidden cosine ref / engine |",
           "|---|---|---|---|---|"]
    for x in rows:
        r, e = x["reference"], x["engine"]
        out.append(f"| {x['iteration']} | {cell(r, 'p_at_1', '.3f')} / {cell(e, 'p_at_1', '.3f')} "
                   f"| {cell(r, 'over_random', '.1f')}× / {cell(e, 'over_random', '.1f')}× "
                   f"| {cell(r, 'retrieved', ',.0f')} / {cell(e, 'retrieved', ',.0f')} "
                   f"| {cell(r, 'hidden_cosine', '.3f')} / {cell(e, 'hidden_cosine', '.3f')} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from impls.harness import cli, profiles

    p = argparse.ArgumentParser(prog="python scripts/slide_reference_check.py", description=__doc__.split("\n\n")[1])
    p.add_argument("ref", type=Path, help="checkout of keroro824/HashingDeepLearning (or its SLIDE folder)")
    p.add_argument("out", type=Path, help="directory for the build, the exported files, the two runs' JSON lines "
                                          "and summary.json (made when missing)")
    p.add_argument("--dataset", default="slide-amazon670k", help="registry set to train on (default slide-amazon670k)")
    cli.add_profile_option(p, "size of --dataset (default: DLSYSBENCH_PROFILE, else quick)")
    p.add_argument("--train", help="an XC text file instead of --dataset (with --test)")
    p.add_argument("--test", help="the XC text file whose points both sides probe (with --train)")
    p.add_argument("--points", type=int, default=300, help="test points both sides probe (default 300)")
    p.add_argument("--lr", type=float, default=1e-2, help="Adam learning rate of both sides (default 0.01)")
    p.add_argument("--batch", type=int, default=128, help="samples a batch, both sides (default 128, Config_amz.csv's)")
    p.add_argument("--lsh", default="dwta", choices=sorted(HASH_FUNCTION),
                   help="hash family of both sides (the reference's Config.h HashFunction; default dwta)")
    p.add_argument("--K", type=int, default=6, help="hash codes per table (default 6)")
    p.add_argument("--L", type=int, default=50, help="hash tables (default 50)")
    p.add_argument("--at", default=DEFAULT_AT,
                   help=f"comma-separated batches after which both sides probe (default {DEFAULT_AT})")
    p.add_argument("--threads", type=int, default=2,
                   help="threads of each side (the reference's OMP_NUM_THREADS; default 2)")
    p.add_argument("--seed", type=int, default=0, help="the engine's seed and which test points are probed (default 0)")
    p.add_argument("--padding", default="sample", choices=["sample", "batch"],
                   help="the engine's padding: sample (default; each sample's own draw) or batch (one pool a "
                        "batch, nearer the reference's clock-seeded window)")
    p.add_argument("--only", choices=["reference", "engine"], help="run one side (the other's file is kept)")
    a = p.parse_args(argv)
    if bool(a.train) != bool(a.test):
        p.error("--train and --test go together")
    if not a.train:     # a bad DLSYSBENCH_PROFILE: before any work
        try:
            a.profile = profiles.resolve(a.profile)
        except profiles.ProfileError as err:
            p.error(str(err))
    for name in ("points", "batch", "K", "L", "threads"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    if not a.lr > 0:
        p.error("--lr must be positive")
    try:
        at = sorted({int(x) for x in a.at.split(",") if x.strip()})
    except ValueError:
        p.error(f"--at: expected comma-separated batch counts, got {a.at!r}")
    if not at or at[0] < 1:
        p.error("--at: expected batch counts of at least 1")
    a.out.mkdir(parents=True, exist_ok=True)
    try:
        # build first: a wrong checkout or a missing g++ fails before minutes of export
        binary = build_reference(a.ref, a.out, a.lsh) if a.only != "engine" else None
        train, test = export(a, a.out)
        from impls.slide.data.dataset import read_header
        n_train, n_features, n_labels = read_header(train)
        n_test = read_header(test)[0]
        env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
        if binary is not None:
            cfg = a.out / "reference.cfg"
            cfg.write_text(config_text(train=train.resolve(), test=test.resolve(), n_train=n_train, n_test=n_test,
                                       n_features=n_features, n_labels=n_labels, batch=a.batch, lr=a.lr, K=a.K,
                                       L=a.L, batches=at[-1], log=(a.out / "reference.log").resolve()))
            print(f"reference: training to batch {at[-1]} ({binary})", file=sys.stderr, flush=True)
            with open(a.out / "reference.stdout", "w") as log:
                done = subprocess.run([str(binary), str(cfg)], stdout=log, stderr=subprocess.STDOUT,
                                      env=dict(env, PROBE_AT=",".join(map(str, at)), PROBE_POINTS=str(a.points),
                                               PROBE_OUT=str(a.out / "reference.jsonl")))
            if done.returncode != 0:
                raise ReferenceError(f"the reference exited with {done.returncode}; see {a.out / 'reference.stdout'}")
        if a.only != "reference":
            print(f"engine: training to batch {at[-1]}", file=sys.stderr, flush=True)
            with open(a.out / "engine.jsonl", "w") as log:
                done = subprocess.run(engine_command(a, train, test, at), stdout=log, env=env)
            if done.returncode != 0:
                raise ReferenceError(f"the engine's recall_probe exited with {done.returncode}")
    except (ReferenceError, OSError, ValueError) as err:      # ValueError: an XC file the reader rejects
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        rows = side_by_side(read_jsonl(a.out / "reference.jsonl"), read_jsonl(a.out / "engine.jsonl"))
    except (json.JSONDecodeError, KeyError) as err:
        print(f"error: a probe file in {a.out} is not as expected: {err}", file=sys.stderr)
        return 1
    (a.out / "summary.json").write_text(json.dumps({"args": {k: str(v) for k, v in vars(a).items()}, "rows": rows},
                                                   indent=1))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
