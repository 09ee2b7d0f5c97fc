"""Why the tables miss the best-scoring wrong labels: a diagnostic, not part of the suite.

    python -m impls.slide.experiments.recall_probe [--dataset slide-amazon670k] [--profile smoke|quick|full]
        [--train FILE --test FILE] [--batches 400] [--at 49,51,100,...] [--lr 1e-2]
        [--lsh dwta|simhash|wta] [--K 6] [--L 50] [--index reference|concat]
        [--dwta-zeros present|absent] [--batch 256] [--schedule exponential]
        [--upkeep rising|none] [--adam lazy|dense] [--min-active N] [--seed 0] ...

Trains SLIDE (batch padding, 2 threads) on a registry set (at ``--profile``'s size, default
``DLSYSBENCH_PROFILE``, else quick) or on two XC text files and, after
each batch listed in ``--at``, prints one JSON line per evaluation on ``--points`` test
points: the tables' recall of each point's 10 best-scoring wrong labels and its ratio to a
random set's (as the trainer records it), the recall those labels would have if their stored
codes were fresh (any table where the label's code from its current weights equals the
query's: the tables' staleness removed), the fraction of all stored codes (after the upkeep's
moves) still equal to a fresh hash, how many distinct labels make up the points' top-10
wrong labels, the mean bias and ``w·h`` of those labels, and the mean cosine between the
points' hidden vectors; ``p_at_1``: the fraction of the points whose highest logit is a true
label. ``hash_agreement``: the fraction of the K×L single hash functions on
which a point and its top wrong labels agree, the same for uniformly random labels, and the
cosine of the point's hidden vector with each kind's weights (a table collides only when
all K of its functions agree, so a mean agreement near chance, 1/binsize for (D)WTA, leaves
table collisions near chance too). The same with the labels ranked by ``w·h`` alone (no bias) is
under ``nobias``. ``buckets``: the mean number of neurons whose current code is the query's
in a table (``query_bucket_neurons``) and how often that exceeds the bucket capacity
(``over_capacity``); of the (top wrong label, table) pairs whose current codes equal the
query's (``colliding``), the fraction the bucket yields (``colliding_kept``): below 1, full
buckets drop labels that the hash found.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from impls.harness import atomic, cli, profiles


def probe_point(net, test, rows, iteration: int, k: int = 10) -> dict:
    """The diagnostics of the module docstring for network ``net`` on ``test`` rows ``rows``."""
    from impls.slide.core import evaluate as ev
    from impls.slide.core.retrieval import wrong_top

    h = net.hidden(test, rows)
    fresh = net.tables.lsh.hash_table_major(net.W2, net.n_chunks)      # (L, labels)
    query = net.tables.lsh.hash(np.ascontiguousarray(h), 1)             # (n, L)
    current = net.tables.current_codes()                                # (L, labels), a copy
    out = {"iteration": iteration, "rehashes": net.n_rehash, "rebuilds": net.n_rebuild,
           "hidden_cosine": ev.mean_cosine(h), "stored_codes_fresh": float((current == fresh).mean())}
    n_true = int(max(test.label_indptr[r + 1] - test.label_indptr[r] for r in rows))
    for name, bias in (("full", net.b2), ("nobias", np.zeros_like(net.b2))):
        ranked = ev.topk(h, net.W2, bias, min(k + n_true, net.n_labels))  # k wrong ones after any true
        stored, if_fresh, sizes, tops = [], [], [], []
        for i, r in enumerate(rows):
            truth = test.labels[test.label_indptr[r]:test.label_indptr[r + 1]]
            wrong = wrong_top(ranked[i], truth, k)
            got = net.tables.retrieve(query[i])
            sizes.append(got.size)
            tops.append(wrong)
            stored.append(np.isin(wrong, got).mean())
            if_fresh.append((fresh[:, wrong] == query[i][:, None]).any(axis=0).mean())
        rand = float(np.mean(sizes)) / net.n_labels
        top = np.concatenate(tops)
        out[name] = {"recall": float(np.mean(stored)), "over_random": float(np.mean(stored)) / rand,
                     "recall_if_fresh": float(np.mean(if_fresh)), "fresh_over_random": float(np.mean(if_fresh)) / rand,
                     "retrieved": float(np.mean(sizes)), "distinct_top_labels": int(np.unique(top).size),
                     "top_bias": float(net.b2[top].mean())}
        if name == "full":
            out["p_at_1"] = float(ev.precision_at_k(ranked[:, :5], test, rows)["p_at_1"])
            out["top_wh"] = float(np.mean(np.concatenate([h[i] @ net.W2[t].T for i, t in enumerate(tops)])))
            out["hash_agreement"] = hash_agreement(net, h, tops, np.random.default_rng(iteration))
            out["buckets"] = bucket_loss(net.tables, current, query, tops)
    return out


def bucket_loss(tables, current: np.ndarray, query: np.ndarray, tops: list[np.ndarray]) -> dict:
    """How full the query's buckets are and how many colliding labels they drop (module doc);
    ``current`` (L, labels): the tables' current codes, ``query`` (n, L): the points' codes,
    ``tops[i]``: point i's labels."""
    sizes = np.stack([np.bincount(c, minlength=tables.lsh.n_buckets) for c in current])
    per_query = np.take_along_axis(sizes, query.T.astype(np.int64), axis=1)    # (L, n)
    colliding = kept = 0
    for i, top in enumerate(tops):
        for t in np.flatnonzero((current[:, top] == query[i][:, None]).any(axis=1)):
            hit = top[current[t, top] == query[i, t]]
            colliding += hit.size
            kept += int(np.isin(hit, tables.bucket(t, int(query[i, t]))).sum())
    return {"query_bucket_neurons": float(per_query.mean()),
            "over_capacity": float((per_query > tables.capacity).mean()),
            "colliding": colliding, "colliding_kept": kept / colliding if colliding else float("nan")}


def hash_agreement(net, h: np.ndarray, tops: list[np.ndarray], rng: np.random.Generator) -> dict:
    """Mean fraction of the K×L hash functions whose value a point's hidden vector (rows of
    ``h``) shares with its labels ``tops[i]`` (``top``) and with as many uniformly random
    labels (``random``); ``cos_top`` / ``cos_random``: mean cosine between the hidden vector
    and those labels' weight rows. For (D)WTA also where each function's winner (the
    largest weight of its bin) lies, over the bins where the hidden vector has a non-zero:
    ``winner_on_zero_*``, on a coordinate where the hidden vector is 0; ``winner_rank_*``,
    the winner's rank among the bin's non-zero coordinates by hidden value (0: the hidden
    vector's own winner, 1: its smallest non-zero; a winner on a zero left out)."""
    lsh = net.tables.lsh
    q = lsh.hash_values(np.ascontiguousarray(h, np.float32))
    agree, cos = {"top": [], "random": []}, {"top": [], "random": []}
    where: dict[str, list] = {"top": [], "random": []}
    for i, top in enumerate(tops):
        for kind, labels in (("top", top), ("random", rng.integers(0, net.n_labels, len(top)))):
            if len(labels) == 0:
                continue
            w = np.ascontiguousarray(net.W2[labels], np.float32)
            agree[kind].append(float((lsh.hash_values(w) == q[i]).mean()))
            norms = np.linalg.norm(w, axis=1) * np.linalg.norm(h[i]) + 1e-30
            cos[kind].append(float(np.mean(w @ h[i] / norms)))
            if lsh.family != "simhash":
                where[kind].append(_winners(h[i], w, lsh.idx.astype(np.int64)))
    out = {"top": float(np.mean(agree["top"])), "random": float(np.mean(agree["random"])),
           "cos_top": float(np.mean(cos["top"])), "cos_random": float(np.mean(cos["random"]))}
    for kind, found in where.items():
        for j, name in enumerate(("winner_on_zero", "winner_rank") if found else ()):
            values = [f[j] for f in found if not np.isnan(f[j])]
            out[f"{name}_{kind}"] = float(np.mean(values)) if values else float("nan")
    return out


def _winners(h: np.ndarray, w: np.ndarray, idx: np.ndarray) -> tuple[float, float]:
    """For weight rows ``w`` against hidden vector ``h`` over the bins ``idx`` (functions x
    bin size): the share of winners on a zero of ``h`` and their mean rank among the bin's
    non-zero coordinates by ``h`` (see :func:`hash_agreement`); NaN where none counts."""
    hb = h[idx]                                            # (F, m)
    active = hb > 0
    rank = np.argsort(np.argsort(np.where(active, -hb, np.inf), axis=1), axis=1)   # 0: h's largest
    n_active = active.sum(axis=1)
    counted = n_active > 0
    winners = w[:, idx].argmax(axis=2)                     # (labels, F)
    functions = np.arange(idx.shape[0])[None]
    on_zero, r = ~active[functions, winners], rank[functions, winners]
    scaled = np.where(n_active > 1, r / np.maximum(n_active - 1, 1), 0.0)
    keep = counted[None] & ~on_zero
    share = on_zero[:, counted].mean() if counted.any() else np.nan
    return float(share), float(scaled[keep].mean()) if keep.any() else float("nan")


DEFAULT_AT = "20,49,51,100,124,126,236,238,400"


@cli.command("python -m impls.slide.experiments.recall_probe")
def main(argv: list[str] | None = None) -> int:
    from impls.slide.core import evaluate as ev
    from impls.slide.core.choices import CHOICES
    from impls.slide.core.config import PAPER_LR, SlideConfig
    from impls.slide.core.network import SlideNetwork
    from impls.slide.data.dataset import ShapeMismatch, check_same_shape, from_file, from_registry, trainable_rows
    from impls.slide.train import CONFIG_HELP
    from impls.slide.training.trainer import set_threads

    p = cli.parser(prog="python -m impls.slide.experiments.recall_probe", description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default=None, help="registry set (default slide-amazon670k)")
    p.add_argument("--train", help="an XC text file to train on instead of --dataset (needs --test)")
    p.add_argument("--test", help="the XC text file to evaluate on (with --train)")
    cli.add_profile_option(p, "size of the registry set (default: DLSYSBENCH_PROFILE, else quick; not with --train)")
    p.add_argument("--batches", type=int, default=400, help="batches to train")
    p.add_argument("--batch", type=int, default=SlideConfig.batch, help="samples a batch")
    p.add_argument("--at", default=None,
                   help=f"batches after which to probe (default: those of {DEFAULT_AT} within --batches, "
                        "else --batches)")
    p.add_argument("--points", type=int, default=300, help="test points each probe evaluates (the same each time)")
    p.add_argument("--threads", type=int, default=2, help="worker threads (at most 1024)")
    p.add_argument("--lr", type=float, default=SlideConfig.lr, help=f"Adam learning rate (paper: {PAPER_LR})")
    p.add_argument("--lsh", default=SlideConfig.lsh, choices=CHOICES["lsh"], help=CONFIG_HELP["lsh"])
    p.add_argument("--K", type=int, default=SlideConfig.K, help=CONFIG_HELP["K"])
    p.add_argument("--L", type=int, default=SlideConfig.L, help=CONFIG_HELP["L"])
    p.add_argument("--index", default=SlideConfig.index, choices=CHOICES["index"], help=CONFIG_HELP["index"])
    p.add_argument("--dwta-zeros", dest="dwta_zeros", default=SlideConfig.dwta_zeros, choices=CHOICES["dwta_zeros"],
                   help=CONFIG_HELP["dwta_zeros"])
    p.add_argument("--schedule", default=SlideConfig.schedule, choices=CHOICES["schedule"],
                   help=CONFIG_HELP["schedule"])
    p.add_argument("--rehash-every", dest="rehash_every", type=int, default=SlideConfig.rehash_every,
                   help=CONFIG_HELP["rehash_every"])
    p.add_argument("--padding", default="batch", choices=CHOICES["padding"], help=CONFIG_HELP["padding"])
    p.add_argument("--upkeep", default=SlideConfig.upkeep, choices=CHOICES["upkeep"], help=CONFIG_HELP["upkeep"])
    p.add_argument("--adam", default=SlideConfig.adam, choices=CHOICES["adam"],
                   help="lazy: step only the rows a batch touched; dense: every parameter (the reference code)")
    p.add_argument("--eps", type=float, default=SlideConfig.eps,
                   help="Adam's epsilon (default %(default)g; from float32's smallest normal, ~1.2e-38, to 1000: "
                        "the engine steps in float32, where a smaller one is 0 or subnormal); one far above the "
                        "gradients' size (1) makes the step lr * momentum: SGD with momentum, a diagnostic, not the "
                        "paper's optimiser")
    p.add_argument("--min-active", dest="min_active", type=int, default=None,
                   help="pad a sample's active set to this many neurons (default: 0.5%% of the labels; "
                        "1000 is the reference code's sampling mode)")
    p.add_argument("--allow-empty-labels", action="store_true",
                   help="accept points without labels in --train/--test (left out of training)")
    p.add_argument("--seed", type=int, default=SlideConfig.seed,
                   help="the network's initialisation, hash functions, padding, batch order and which "
                        "test points are probed")
    args = p.parse_args(argv)
    try:
        at = {int(x) for x in (DEFAULT_AT if args.at is None else args.at).split(",") if x.strip()}
    except ValueError:
        raise cli.UsageError(f"got {args.at!r}", "--at", "comma-separated batch counts") from None
    for value, flag in ((args.batches, "--batches"), (args.points, "--points"), (args.threads, "--threads"),
                        (args.batch, "--batch"), (args.K, "--K"), (args.L, "--L"),
                        (args.rehash_every, "--rehash-every"),
                        *(((args.min_active, "--min-active"),) if args.min_active is not None else ())):
        cli.number(value, flag, minimum=1, integer=True)
    cli.number(args.threads, "--threads", maximum=1024)
    cli.number(args.lr, "--lr", minimum=0, exclusive_min=True, maximum=1e3)
    # the engine's Adam runs in float32: a smaller eps is subnormal or 0 there, and 0 makes a row without gradient 0/0
    cli.number(args.eps, "--eps", minimum=float(np.finfo(np.float32).tiny), maximum=1e3)
    cli.number(args.seed, "--seed", minimum=0, maximum=2**32 - 1, integer=True)
    if args.at is None:     # the defaults within --batches, else the last batch
        at = {b for b in at if b <= args.batches} or {args.batches}
    set_threads(args.threads)
    if args.dataset and (args.train or args.test):
        raise cli.UsageError("give --dataset or --train/--test, not both")
    if bool(args.train) != bool(args.test):
        raise cli.UsageError("--train and --test go together")
    if args.train and args.profile:
        raise cli.UsageError("--profile sizes a registry set; files are read whole")
    profile = None if args.train else profiles.resolve(args.profile)   # a bad DLSYSBENCH_PROFILE: before any work
    outside = sorted(b for b in at if not 1 <= b <= args.batches)
    if not at or outside:
        raise cli.UsageError(f"--at {args.at!r}" + (f": {outside} not within 1..{args.batches}"
                                                                 if outside else ": no batch count given"),
                             "--at", f"expected batch counts from 1 to --batches ({args.batches})")
    if args.train:
        cli.check_file(args.train, "--train", "a readable XC text file", regular=True)
        cli.check_file(args.test, "--test", "a readable XC text file", regular=True)
        try:
            check_same_shape(args.train, args.test)
        except ShapeMismatch as err:
            raise cli.UsageError(str(err), "--test", "expected the same feature and label counts as --train") from None
        train = from_file(args.train, allow_empty_labels=args.allow_empty_labels)
        test = from_file(args.test, allow_empty_labels=args.allow_empty_labels)
    else:
        train, test, _ = from_registry(args.dataset or "slide-amazon670k", profile)
    try:
        kept = trainable_rows(train, test)
    except ValueError as err:
        sources = (f"train {args.train}, test {args.test}" if args.train
                   else f"dataset {args.dataset or 'slide-amazon670k'}")
        raise ValueError(f"{err} ({sources})") from None
    pool_size = train.n_points if kept is None else kept.size
    cfg = SlideConfig(padding=args.padding, threads=args.threads, batch=min(args.batch, pool_size), lr=args.lr, lsh=args.lsh,
                      K=args.K, L=args.L,
                      index=args.index, dwta_zeros=args.dwta_zeros,
                      schedule=args.schedule, rehash_every=args.rehash_every, upkeep=args.upkeep,
                      adam=args.adam, eps=args.eps, min_active=args.min_active, seed=args.seed)
    net = SlideNetwork(cfg, train.n_features, train.n_labels, int(np.diff(train.label_indptr).max()),
                       label_counts=train.label_counts())
    rows = ev.eval_rows(test, args.points, cfg.seed)
    rng = np.random.default_rng(cfg.seed + 1)
    pool = np.arange(train.n_points) if kept is None else kept  # a point without labels has nothing to train on
    order, cursor = pool[rng.permutation(pool.size)], 0
    for it in range(1, args.batches + 1):
        if cursor + cfg.batch > order.size:
            order, cursor = pool[rng.permutation(pool.size)], 0
        net.step(train, order[cursor:cursor + cfg.batch])
        cursor += cfg.batch
        if it in at:
            print(json.dumps(atomic.strict_json(probe_point(net, test, rows, it))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
