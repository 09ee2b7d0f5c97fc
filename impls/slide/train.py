"""Command line: train SLIDE or a torch baseline (dense / sampled softmax) and write a JSON result.

    python -m impls.slide.train --train F --test F --method slide [--threads N] [--batch 256]
        [--lr 1e-2] [--time-budget SECONDS] [--eval-every ITERS] [--seed S] --json OUT
    python -m impls.slide.train --dataset slide-amazon670k [--profile quick] ... --json OUT
    python -m impls.slide.train ... --method dense|sampled [--device cpu|cuda] ... --json OUT

``--method dense-torch`` / ``dense-torch-cuda`` (older names) still work.

``--train/--test`` take XC text files (parsed once, then cached as .npz); files whose header
has a published real set's shape (or ``--real NAME``) are checked as that set's real files
(both headers exactly; a mismatch is a one-line error) and the result's ``source`` says
``real`` with both files' sha256; files that are the suite's own synthetic set are labelled
synthetic instead (``own_synthetic`` in ``source``). ``--dataset`` takes a registry name
(``datasets/<name>.toml``). Data loading time is reported as ``load_seconds``, outside the
curve's ``seconds``.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from impls.harness import cli, profiles

MIN_TRUSTED_SECONDS = 1.0
DEFAULT_EVAL_POINTS = 1000


CONFIG_HELP = {   # one line each; core/config.py says why each default is what it is
    "hidden": "hidden-layer width, ReLU units (paper: 128)",
    "K": "hash codes per table",
    "L": "hash tables",
    "binsize": "WTA/DWTA bin size",
    "bucket_capacity": "labels a bucket holds",
    "min_active": "pad each sample's active set with random labels up to this (default: 0.5%% of the labels)",
    "topk": "--mode topk: keep the k labels found in most tables",
    "threshold": "--mode threshold: keep the labels found in at least this many tables",
    "rehash_every": "batches before the first rehash of the tables (--schedule exponential grows it x1.5)",
    "rebuild_every": "batches between new hash functions",
    "lsh": "hash family (paper: DWTA for Amazon-670K, SimHash for Delicious-200K)",
    "index": "how a table's code is formed from its K hashes",
    "dwta_zeros": "DWTA: whether a ReLU zero is hashed as a value",
    "mode": "how the retrieved labels form a sample's active set (all: no sampling)",
    "adam": "lazy: update only the rows a batch touched; dense: every parameter each batch",
    "bucket_policy": "a full bucket: fifo replaces the oldest label, reservoir samples",
    "schedule": "rehash intervals: fixed, or exponential",
    "padding": "random padding labels: per sample, or one pool shared by the batch",
    "padding_sampler": "--padding batch: how the shared pool is drawn",
    "upkeep": "table upkeep between refreshes",
}


def _parser() -> argparse.ArgumentParser:
    from impls.slide.core.choices import CHOICES
    from impls.slide.core.config import PAPER_LR, SlideConfig

    d = SlideConfig()
    p = cli.parser(prog="python -m impls.slide.train", description=__doc__.split("\n\n")[0],
                   formatter_class=cli.DefaultsHelpFormatter)
    src = p.add_argument_group("data (either --train/--test files or --dataset)")
    src.add_argument("--train", type=Path, help="XC text file of training points")
    src.add_argument("--test", type=Path, help="XC text file of test points")
    src.add_argument("--dataset", help="registry dataset name, e.g. slide-amazon670k")
    cli.add_profile_option(src, "dataset size (default: DLSYSBENCH_PROFILE, else quick)")
    src.add_argument("--allow-empty-labels", action="store_true", help="accept points with no labels in the files")
    src.add_argument("--real", default="auto", choices=["auto", "no", *_published()],
                     help="--train/--test are the real files of this published set: both headers must have its "
                          "shape (features, labels, the split's points) and the result is labelled real data "
                          "with the files' sha256; auto: when a header has a published set's features and "
                          "labels; no: read them as ordinary XC files")
    p.add_argument("--method", choices=["slide", "dense", "sampled", "dense-torch", "dense-torch-cuda"],
                   default="slide", help="slide, or a torch baseline: dense (full softmax) / sampled (sampled softmax)")
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="torch baselines: where to train (default cpu; dense-torch-cuda implies cuda)")
    p.add_argument("--sample-fraction", dest="sample_fraction", type=float, default=d.sample_fraction,
                   help="sampled: negatives per batch as a fraction of the labels")
    p.add_argument("--sampler", choices=CHOICES["sampler"], default=d.sampler,
                   help="sampled: candidate distribution (log-uniform over labels ranked by frequency)")
    p.add_argument("--eval-first", dest="eval_first_s", type=float, default=None,
                   help="also evaluate at log-spaced training seconds from this on (x --eval-growth)")
    p.add_argument("--eval-growth", dest="eval_growth", type=float, default=1.6,
                   help="ratio between successive --eval-first evaluation times")
    p.add_argument("--warmup-steps", dest="warmup_steps", type=int, default=None,
                   help="torch baselines: untimed steps before training, weights reset after (default 3)")
    p.add_argument("--threads", type=int, default=None, help="worker threads (default: every CPU this process may use)")
    p.add_argument("--batch", type=int, default=None, help=f"samples per batch (default {d.batch})")
    p.add_argument("--lr", type=float, default=d.lr, help=f"Adam learning rate (paper: {PAPER_LR})")
    p.add_argument("--time-budget", type=float, default=60.0, help="training seconds (evaluation excluded)")
    p.add_argument("--max-iterations", type=int, default=None)
    p.add_argument("--eval-every", type=int, default=50, help="evaluate every N batches (0: only at the end)")
    p.add_argument("--eval-points", type=int, default=None,
                   help=f"size of the fixed shuffled test subset (default {DEFAULT_EVAL_POINTS})")
    p.add_argument("--seed", type=int, default=d.seed,
                   help="seed of the initial weights, hash functions, batch order and evaluation points")
    for name in ("hidden", "K", "L", "binsize", "bucket_capacity", "min_active", "topk", "threshold",
                 "rehash_every", "rebuild_every"):
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=int, default=getattr(d, name),
                       help=CONFIG_HELP[name])
    p.add_argument("--rebuild-at-first-rehash", dest="rebuild_at_first_rehash",
                   action=argparse.BooleanOptionalAction, default=d.rebuild_at_first_rehash,
                   help="draw new hash functions at the first rehash, then every --rebuild-every (reference code)")
    for name in ("lsh", "index", "dwta_zeros", "mode", "adam", "bucket_policy", "schedule", "padding",
                 "padding_sampler", "upkeep"):
        p.add_argument("--" + name.replace("_", "-"), dest=name, choices=CHOICES[name], default=getattr(d, name),
                       help=CONFIG_HELP[name])
    p.add_argument("--json", required=True, metavar="FILE",
                   help="where to write the result as one JSON object ('-': standard output)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def _published() -> list[str]:
    from impls.slide.xc_stats import PUBLISHED

    return list(PUBLISHED)


def _real_set(args) -> str | None:
    """Which published set ``--train/--test`` are (None: ordinary XC files); raises
    ``RealDataMismatch`` (one line: file, line 1, the expected header) when they claim to be
    one but a header does not have its shape."""
    from impls.slide.data.dataset import check_real_header, claimed_real_set

    if not args.train or args.real == "no":
        return None
    like = claimed_real_set(args.train, args.test) if args.real == "auto" else args.real
    if like:
        check_real_header(args.train, "train", like)
        check_real_header(args.test, "test", like)
    return like


def _validate_hashes(args) -> None:
    """The hash functions' flags, checked as the engine will draw them (UsageError naming the
    flag), for a run that draws them: SLIDE outside ``--mode all``. The torch baselines and
    mode "all" hash nothing, so only the basic checks (whole numbers >= 1) apply to these
    flags there, as ``core/config.py`` says for mode "all"; they are recorded as given."""
    from impls.slide.experiments.sweeps import resolve_method
    from impls.slide.flag_scope import builds_tables

    if not builds_tables(resolve_method(args.method)[0], args.mode):
        return
    from impls.slide.core.config import SlideConfig
    from impls.slide.core.lsh import HashParamError, check_hash_params

    try:
        check_hash_params(args.lsh, args.K, args.hidden, args.binsize, SlideConfig.simhash_ratio, args.index)
    except HashParamError as err:
        if err.param == "binsize" and args.hidden < 2:      # no --binsize fits: it is --hidden that is wrong
            raise cli.UsageError(f"got {args.hidden} with --lsh {args.lsh}", "--hidden", "expected 2 or more")
        if err.param == "binsize":
            raise cli.UsageError(f"got {args.binsize} with --hidden {args.hidden}", "--binsize",
                                 f"expected a power of two from 2 to --hidden ({args.hidden}) for --lsh {args.lsh}"
                                 ) from None
        raise cli.UsageError(f"got {args.K}", "--K", f"expected fewer hashes a table: {args.K} make {err.bits}-bit "
                             f"codes with --lsh {args.lsh} --index {args.index}, at most 63 fit") from None
    if args.mode == "threshold" and args.threshold > args.L:
        cli.warn(f"--threshold {args.threshold} exceeds --L {args.L}: no label is found in that many tables, "
                 "so each sample's active set is its true labels and padding alone")


def _validate(args) -> None:
    """Check every flag and path before any data is loaded or trained on (UsageError); warn
    (one line) of an --eval-first that no training second reaches."""
    import os

    from impls.slide.core.config import SlideConfig

    if args.batch is None:
        args.batch = SlideConfig().batch
    if args.eval_points is None:
        args.eval_points = DEFAULT_EVAL_POINTS
    if args.profile is not None and not args.dataset:
        raise cli.UsageError(f"--profile {args.profile} with --train/--test", "--profile",
                             "expected --profile only with --dataset (a file is read whole)")
    if args.allow_empty_labels and args.dataset:
        raise cli.UsageError("--allow-empty-labels with --dataset", "--allow-empty-labels",
                             "expected it only with --train/--test files (a registry set is read as it is)")
    cli.number(args.threads, "--threads", minimum=1, maximum=max(1024, os.cpu_count() or 1), integer=True)
    cli.number(args.batch, "--batch", minimum=1, integer=True)
    cli.number(args.lr, "--lr", minimum=0, exclusive_min=True, maximum=1e3)
    cli.number(args.time_budget, "--time-budget", minimum=0, exclusive_min=True)
    cli.number(args.max_iterations, "--max-iterations", minimum=1, integer=True)
    cli.number(args.eval_every, "--eval-every", minimum=0, integer=True)
    cli.number(args.eval_points, "--eval-points", minimum=1, integer=True)
    cli.number(args.eval_first_s, "--eval-first", minimum=0, exclusive_min=True)
    cli.number(args.eval_growth, "--eval-growth", minimum=1, exclusive_min=True)
    cli.number(args.warmup_steps, "--warmup-steps", minimum=0, maximum=1000, integer=True)
    cli.number(args.sample_fraction, "--sample-fraction", minimum=0, exclusive_min=True, maximum=1)
    cli.number(args.seed, "--seed", minimum=0, maximum=2**32 - 1, integer=True)
    for name in ("hidden", "K", "L", "binsize", "bucket_capacity", "min_active", "topk",
                 "rehash_every", "rebuild_every"):
        cli.number(getattr(args, name), "--" + name.replace("_", "-"), minimum=1, integer=True)
    cli.number(args.threshold, "--threshold", minimum=0, integer=True)
    _validate_hashes(args)
    cli.check_file(args.train, "--train", "a readable XC text file", regular=True)
    cli.check_file(args.test, "--test", "a readable XC text file", regular=True)
    cli.check_output(args.json, "--json", inputs=((args.train, "--train"), (args.test, "--test")))
    if args.train and args.test:
        from impls.slide.data.dataset import ShapeMismatch, check_same_shape

        try:
            check_same_shape(args.train, args.test)
        except ShapeMismatch as err:
            raise cli.UsageError(str(err), "--test", "expected the same feature and label counts as --train") from None
    if args.dataset and args.real not in ("auto", "no"):
        raise cli.UsageError(f"--real {args.real} with --dataset", "--real",
                             "expected --train/--test files (a registry set says itself whether it is real)")
    args.real_set = _real_set(args)
    if args.dataset:
        from impls.slide.data.dataset import raise_if_broken, xc_datasets

        raise_if_broken(args.dataset)
        known = xc_datasets()
        if args.dataset not in known:
            raise cli.UsageError(f"unknown extreme-classification dataset {args.dataset!r}", "--dataset",
                                 f"expected one of {', '.join(known)}")
    if args.eval_first_s is not None and args.eval_first_s >= args.time_budget:
        cli.warn(f"--eval-first {args.eval_first_s:g} s is not below --time-budget {args.time_budget:g} s: no "
                 "log-spaced evaluation falls inside the run (only --eval-every's and the end's); give a smaller "
                 "--eval-first")


def _warn_clamped(args, train_points: int, test_points: int) -> None:
    """Warn where a flag the user gave asks for more than the machine or the data has (the run
    uses what there is, and its result records that); a default that does is used quietly."""
    import numba

    from impls.harness import cpus

    pool = numba.config.NUMBA_NUM_THREADS
    if args.threads is not None and args.threads > pool:
        why = (f"the cgroup CPU quota allows {pool} (impls set NUMBA_NUM_THREADS={pool}; set it yourself to "
               "run more threads on the quota)" if cpus.capped.get("NUMBA_NUM_THREADS") == str(pool)
               else f"numba's pool has {pool} (NUMBA_NUM_THREADS, else this machine's CPUs)")
        cli.warn(f"--threads {args.threads}: {why}; using {pool}")
    running = None if args.threads is None else min(args.threads, numba.config.NUMBA_NUM_THREADS)
    if running is not None and (crowded := cpus.crowded_threads(running)):
        cli.warn(f"{crowded}: the threads share them, and the samples/s show it")
    if "batch" in args.given and args.batch > train_points:
        cli.warn(f"--batch {args.batch} is more than the {train_points} labelled training points: "
                 f"each batch is all of them")
    if "eval_points" in args.given and args.eval_points > test_points:
        cli.warn(f"--eval-points {args.eval_points} is more than the {test_points} test points: "
                 f"evaluating on all of them")


@cli.command("python -m impls.slide.train",
             sizes="--hidden, --K, --L, --batch and the data's features and labels (the model holds "
                   "(features + labels) x --hidden floats, its tables --L x labels ids, its hash "
                   "functions --K x --L x --hidden)")
def main(argv: list[str] | None = None) -> int:
    """Train once and write the result to ``--json``; every flag and path is checked before
    the data are loaded. Exit 0, or 2 with a one-line error (see :mod:`impls.harness.cli`)."""
    from impls.slide.flag_scope import given_flags, warn_unused

    parser = _parser()
    args = parser.parse_args(argv)
    args.given = given_flags(parser, argv, args)      # the flags named, not left at their defaults
    if args.dataset and (args.train or args.test):
        _parser().error("give either --dataset or --train/--test, not both")
    if not args.dataset and not (args.train and args.test):
        _parser().error("give --dataset NAME, or both --train FILE and --test FILE")
    _validate(args)
    from impls.slide.core.config import SlideConfig
    from impls.slide.experiments.sweeps import resolve_method, train_method

    method, device = resolve_method(args.method, args.device)
    if method == "slide" and device != "cpu":
        _parser().error("--method slide runs on the CPU only (--device cpu)")
    if args.method == "dense-torch-cuda" and device != "cuda":
        raise cli.UsageError(f"--method dense-torch-cuda with --device {device}", "--device", "expected cuda or "
                             "no --device (the method names its device; --method dense --device cpu trains on the CPU)")
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise cli.UsageError("CUDA is not available on this machine", "--device cuda",
                                 "expected --device cpu here")
    warn_unused(method, args)
    fields = {f.name for f in dataclasses.fields(SlideConfig)}
    config = SlideConfig(**{k: v for k, v in vars(args).items() if k in fields})
    from impls.slide.data.dataset import files_info, from_file, from_registry, real_pair, trainable_rows
    from impls.slide.footprint import check_fits, ids_in_use

    t0 = time.perf_counter()
    if args.dataset:
        train_data, test_data, info = from_registry(args.dataset, args.profile)
    elif args.real_set:
        train_data, test_data, info = real_pair(args.train, args.test, args.real_set)
    else:
        train_data = from_file(args.train, allow_empty_labels=args.allow_empty_labels)
        test_data = from_file(args.test, allow_empty_labels=args.allow_empty_labels)
        info = files_info(args.train, args.test)
    load_s = time.perf_counter() - t0
    if info.get("own_synthetic"):        # given as real files or not: say what they are before training
        cli.warn(f"{info['own_synthetic']}: the result is labelled synthetic")
    try:
        rows = trainable_rows(train_data, test_data)
    except ValueError as err:
        sources = (f"train {args.train}, test {args.test}" if not args.dataset
                   else f"dataset {args.dataset}, profile {profiles.resolve(args.profile)}")
        raise ValueError(f"{err} ({sources})") from None
    trainable = train_data.n_points if rows is None else rows.size
    check_fits(config, train_data.n_features, train_data.n_labels, method, device,   # before anything large
               ids_in_use(train_data, test_data), args.train or f"dataset {args.dataset}")
    _warn_clamped(args, trainable, test_data.n_points)
    from impls.slide.input_warnings import warn_about_inputs

    warn_about_inputs(args, train_data, test_data)
    common = dict(time_budget_s=args.time_budget, eval_every=args.eval_every or None,
                  progress=not args.quiet, max_iterations=args.max_iterations, eval_points=args.eval_points,
                  eval_first_s=args.eval_first_s, eval_growth=args.eval_growth)
    if method != "slide":
        common["warmup_steps"] = args.warmup_steps
    cli.fault_point("train")
    result = train_method(method, config, train_data, test_data, device, **common)
    result["load_seconds"] = load_s
    result["source"] = info
    cli.emit_json(args.json, result)
    real = (f" on real data ({info.get('like') or info.get('dataset')}, train sha256 {str(info.get('sha256'))[:12]}…, "
            f"test {str(info.get('test_sha256'))[:12]}…)" if info.get("real") else "")
    print(f"{result['method']}: {result['samples_per_second']:.0f} samples/s, P@1 {result['final_p_at_1']:.4f} "
          f"after {result['train_seconds']:.1f} s ({result['iterations']} batches){real}"
          + ("" if args.json == "-" else f"; wrote {args.json}"), file=sys.stderr)
    from impls.slide.input_warnings import sparsity_note

    if note := sparsity_note(result):
        cli.warn(note)
    base = result.get("baseline_p_at_1")
    longer = _longer_run(args, result)
    if base is not None and result["final_p_at_1"] <= base:
        cli.warn(f"the final P@1 {result['final_p_at_1']:.4f} is no better than always predicting the most "
                 f"popular training label ({base:.4f}): nothing was learned that ranks labels; try {longer} "
                 "or another --lr (and rows of unit L2 norm)")
    if not result["train_seconds"] >= MIN_TRUSTED_SECONDS:
        cli.warn(f"training lasted {result['train_seconds']:.3f} s (< {MIN_TRUSTED_SECONDS:g} s): samples/s "
                 f"still carries first-batch costs and is not to be trusted; give {longer}")
    return 0


def _longer_run(args, result: dict) -> str:
    """The advice that lengthens this run: a larger ``--max-iterations`` where that limit
    ended it (``result["iterations"]`` reached it), else a longer ``--time-budget``."""
    if args.max_iterations is not None and result["iterations"] >= args.max_iterations:
        return f"a larger --max-iterations (it ended the run at {args.max_iterations})"
    return "a longer --time-budget"


if __name__ == "__main__":
    sys.exit(main())
