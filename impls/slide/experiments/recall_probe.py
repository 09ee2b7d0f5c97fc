"""Why the tables miss the best-scoring wrong labels: a diagnostic, not part of the suite.

    python -m impls.slide.experiments.recall_probe [--dataset slide-amazon670k] [--profile quick]
        [--batches 400] [--at 49,51,100,...] [--lr 1e-2] [--K 8] [--schedule exponential]
        [--upkeep rising|none] ...

Trains SLIDE (batch padding, 2 threads) and, after each batch listed in ``--at``, prints one
JSON line per evaluation on ``--points`` test points: the tables' recall of each point's 10
best-scoring wrong labels and its ratio to a random set's (as the trainer records it), the
recall those labels would have if their stored codes were fresh (any table where the label's
code from its current weights equals the query's: the tables' staleness removed), the
fraction of all stored codes (after the upkeep's moves) still equal to a fresh hash, how
many distinct labels make up the points' top-10 wrong labels, the mean bias and ``w·h`` of
those labels, and the mean cosine between the points' hidden vectors. The same with the
labels ranked by ``w·h`` alone (no bias) is under ``nobias``.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from impls.harness import cli


def probe_point(net, test, rows, iteration: int, k: int = 10) -> dict:
    """The diagnostics of the module docstring for network ``net`` on ``test`` rows ``rows``."""
    from impls.slide.core import evaluate as ev

    h = net.hidden(test, rows)
    fresh = net.tables.lsh.hash_table_major(net.W2, net.n_chunks)      # (L, labels)
    query = net.tables.lsh.hash(np.ascontiguousarray(h), 1)             # (n, L)
    out = {"iteration": iteration, "rehashes": net.n_rehash, "rebuilds": net.n_rebuild,
           "hidden_cosine": ev.mean_cosine(h), "stored_codes_fresh": float((net.tables.current_codes() == fresh).mean())}
    for name, bias in (("full", net.b2), ("nobias", np.zeros_like(net.b2))):
        ranked = ev.topk(h, net.W2, bias, k + 32)
        stored, if_fresh, sizes, tops = [], [], [], []
        for i, r in enumerate(rows):
            truth = test.labels[test.label_indptr[r]:test.label_indptr[r + 1]]
            wrong = np.array([j for j in ranked[i] if j >= 0 and j not in truth][:k])
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
            out["top_wh"] = float(np.mean([h[i] @ net.W2[t].T for i, t in enumerate(tops)]))
    return out


@cli.command("python -m impls.slide.experiments.recall_probe")
def main(argv: list[str] | None = None) -> int:
    from impls.slide.core import evaluate as ev
    from impls.slide.core.config import SlideConfig
    from impls.slide.core.network import SlideNetwork
    from impls.slide.data.dataset import from_registry
    from impls.slide.training.trainer import set_threads

    p = cli.parser(prog="python -m impls.slide.experiments.recall_probe", description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="slide-amazon670k")
    p.add_argument("--profile", default="quick", choices=["smoke", "quick", "full"])
    p.add_argument("--batches", type=int, default=400)
    p.add_argument("--at", default="20,49,51,100,124,126,236,238,400", help="batches after which to probe")
    p.add_argument("--points", type=int, default=300)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--lr", type=float, default=SlideConfig.lr)
    p.add_argument("--K", type=int, default=SlideConfig.K)
    p.add_argument("--schedule", default=SlideConfig.schedule, choices=["exponential", "fixed"])
    p.add_argument("--rehash-every", dest="rehash_every", type=int, default=SlideConfig.rehash_every)
    p.add_argument("--padding", default="batch", choices=["batch", "sample"])
    p.add_argument("--upkeep", default=SlideConfig.upkeep, choices=["rising", "none"])
    args = p.parse_args(argv)
    at = {int(x) for x in args.at.split(",") if x}
    cli.number(args.batches, "--batches", minimum=1, integer=True)
    cli.number(args.lr, "--lr", minimum=0, exclusive_min=True)
    set_threads(args.threads)
    train, test, _ = from_registry(args.dataset, args.profile)
    cfg = SlideConfig(padding=args.padding, threads=args.threads, lr=args.lr, K=args.K, schedule=args.schedule,
                      rehash_every=args.rehash_every, upkeep=args.upkeep)
    net = SlideNetwork(cfg, train.n_features, train.n_labels, int(np.diff(train.label_indptr).max()),
                       label_counts=train.label_counts())
    rows = ev.eval_rows(test, args.points, cfg.seed)
    rng = np.random.default_rng(cfg.seed + 1)
    order, cursor = rng.permutation(train.n_points), 0
    for it in range(1, args.batches + 1):
        if cursor + cfg.batch > order.size:
            order, cursor = rng.permutation(train.n_points), 0
        net.step(train, order[cursor:cursor + cfg.batch])
        cursor += cfg.batch
        if it in at:
            print(json.dumps(probe_point(net, test, rows, it)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
