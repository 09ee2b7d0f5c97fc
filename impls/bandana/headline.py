"""Command line: the report's Bandana headline, effective-bandwidth gain, measured on any trace.

    python -m impls.bandana.headline (--dataset NAME | --offsets O.npy --indices I.npy [--vectors V.npy]
        [--num-vectors N] [--renumber] | --dlrm FILE [--table K] [--renumber]) [--profile P]
        [--json [FILE|-]]

The report's claim ``bandana-effective-bandwidth-gain`` (the paper's 2–3×) is measured on
the suite's synthetic traces, whose locality is assumed. This command measures the same
number on a trace a user has (their own ``.npy`` arrays, or a table of Meta's public FBGEMM
``dlrm_datasets`` files), with the suite's own experiment
(:func:`impls.bandana.experiments.simulation.layout_policy_experiment`): the trace is split in
time (the earlier half builds the layouts), every layout × policy × cache size of
``[bandana_sim.<profile>]`` is simulated on the later half, the Bandana configuration (a
trained layout with prefetch, low-priority or shadow admission) is chosen on the training
trace, and its effective bandwidth on the test trace is divided by the baseline's (identity
layout, no prefetch: one useful vector per block read), all at the headline cache fraction.

It prints the effective bandwidth of every configuration at that fraction, the chosen one, the
ratio with the NVM blocks read over the baseline's, and the verdict the report's rule gives
this one value against the claim's band in ``reports/claims.toml``. That verdict is of one
run, without the run-to-run noise the report also weighs. It is "not judged", with a note,
when the cache (the headline fraction of the table's max id + 1 rows, at least one block) holds
the whole table or has room for every distinct id the later half reads (then, but for what
prefetched neighbours evict, only first reads miss):
the ratio then says how many of the ids read a block brings in (sparse or hashed ids, which
``--renumber`` numbers densely, or a trace too short for its table), not a layout's gain. So it
is where the ids as numbered (the identity layout), read with the chosen policy, read at
least as well as the chosen trained layout and :data:`ORDER_MARGIN` times a random order read
the same way (a trace without any locality reads alike in every order, and is judged): a trace
whose numbering already puts the ids one
query reads together (items numbered by catalogue, or by popularity) gets the ratio from the
policy reading that order's blocks, and a second line gives the layout's own gain over that
order (the suite's synthetic traces number their ids at random, where it is the ratio less
what the policy does alone). It is
also "not judged" when the one-block floor makes the cache more than :data:`SHARE_LIMIT` (2)
times the headline fraction of the table (with the suite's 5% and 32-vector blocks: a table of
fewer than 320 rows, whose cache is over 10% of it): the claim is about a cache of that
fraction, and a cache of a third of a small table is another regime. Up to twice the fraction
only the floor's rounding moves it (a note says so); the suite's own tables (20,000 rows and
up) have caches of exactly the fraction.

Geometry: the suite's, 32 vectors of 128 B to a 4 KB block, whatever the trace's vectors'
width (it sets how many vectors share a block; ``python -m impls.bandana.prepare`` and
``cache`` take other geometries, and a note names them where ``--vectors`` rows are another
width). ``--profile`` (default ``DLSYSBENCH_PROFILE``, else quick)
picks the sizes table and, with ``--dataset``, the trace's size. A trace without vector
values (a ``--dlrm`` file, or ``--indices`` without ``--vectors``) leaves out the K-means
layouts, which cluster vector values, and says so; two-level K-means makes no more groups
than the table has blocks. Flat ``kmeans`` (in the smoke profile's layouts) takes time growing
as the square of the table (hours at millions of rows): a warning gives its estimate before it
starts on a large table. Output on stdout; ``--json`` writes the whole result instead.

Disk: the run hands the test trace and each layout to the grid's workers as files under the
dataset cache (``$DLSYSBENCH_CACHE/grid/arrays/``, by content: a rerun on the same trace
reuses them), about 8 bytes a row per layout plus 8 a test lookup, and the points' results
under ``$DLSYSBENCH_GRID_RESULTS`` (default ``grid/results`` there). Nothing removes them; deleting either folder costs only the time to
write or compute them again. Memory: a table whose layouts would not fit what this process may
allocate is refused (exit 2, with the estimate) before any is built
(:mod:`impls.bandana.table_memory`).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from impls.harness import cli, profiles

CLAIM = "bandana-effective-bandwidth-gain"
NOT_JUDGED = "not judged"
#: The verdict is "not judged" when the cache the run could use (at least one block) exceeds
#: this many times the headline fraction of the table: a factor of 2 lets the one-block floor
#: round a cache up to twice the claim's share (10% for its 5%) and no further.
SHARE_LIMIT = 2
_SHARE_REASON = "the cache is "
_ORDER_REASON = "the ids' own order "
#: The ids as numbered have locality of their own where, read with the chosen policy, they read
#: at least this many times what a random order does (on a trace without any, the two differ by
#: chance: by 0.3% on uniform traces of 6,400 rows and 32,000 lookups).
ORDER_MARGIN = 1.1


def _parser() -> argparse.ArgumentParser:
    from impls.bandana import prepare

    parser = cli.parser(prog="python -m impls.bandana.headline", description=__doc__.splitlines()[0])
    prepare.add_trace_arguments(parser, "the sizes table [bandana_sim.P] and a --dataset's size "
                                        "(default: DLSYSBENCH_PROFILE, else quick)")
    cli.add_json_option(parser, "the whole result")
    return parser


def experiment_sizes(profile: str, num_vectors: int, has_vectors: bool) -> tuple[dict[str, Any], list[str]]:
    """``[bandana_sim.<profile>]`` for one table: its layouts less the K-means ones when the
    trace has no vector values, and two-level K-means cut to at most the table's blocks
    (clusters first); and a note per change made."""
    from impls.bandana.experiments import simulation
    from impls.bandana.prepare import NEEDS_VECTORS

    s = dict(simulation.sizes(profile))
    notes = []
    if not has_vectors:
        dropped = [k for k in s["layouts"] if k in NEEDS_VECTORS]
        s["layouts"] = [k for k in s["layouts"] if k not in NEEDS_VECTORS]
        if dropped:
            notes.append(f"no vector values: layouts {', '.join(dropped)} (K-means clusters values) left out")
    blocks = max(1, -(-num_vectors // (simulation.BLOCK_BYTES // simulation.VECTOR_BYTES)))
    asked = (s["kmeans_clusters"], max(s["subclusters"]))
    clusters = min(asked[0], blocks)
    shape = (clusters, max(1, min(asked[1], blocks // clusters)))
    if "kmeans-two-level" in s["layouts"] and shape != asked:
        notes.append(f"kmeans-two-level: {shape[0]} clusters x {shape[1]} sub-clusters for {blocks} blocks "
                     f"(the profile asks {asked[0]} x {asked[1]})")
    s["kmeans_clusters"], s["subclusters"] = shape[0], [shape[1]]
    return s, notes


# a judged cache with room for at least this share of the ids the measured half reads gets a note
WORKING_SET_SHARE = 0.5


def _smallest_judged(fraction: float) -> int:
    """The fewest rows whose cache at ``fraction`` is at most :data:`SHARE_LIMIT` times that
    share: the one-block floor over the limit's share, up to float rounding."""
    import math

    from impls.bandana.experiments import simulation

    n = max(1, math.ceil((simulation.BLOCK_BYTES // simulation.VECTOR_BYTES) / (SHARE_LIMIT * fraction)) - 1)
    while simulation.capacity_of(n, fraction) > SHARE_LIMIT * fraction * n:
        n += 1
    return n


def measure(source: dict[str, Any], profile: str, progress: bool | None = None) -> dict[str, Any]:
    """The headline on trace ``source`` (:func:`impls.bandana.prepare.load_source`'s dict) at
    ``[bandana_sim.<profile>]``: ``{"source", "profile", "notes", "num_vectors", "train_queries",
    "test_queries", "empty_queries" (queries of no lookup, both halves), "test_lookups",
    "test_distinct_ids" (distinct ids the test half reads), "not_judged", "layouts", "headline"}``
    where ``not_judged`` is None, or why the ratio is not the claim's: the cache holds the whole
    table, or has room for every distinct id the test half reads, or (its one-block floor) is
    more than :data:`SHARE_LIMIT` times the headline fraction of the table, or the ids as
    numbered, read with the chosen policy, read at least as well as the chosen configuration
    and clearly better than a random order (:func:`input_order_reason`: the trace's own order,
    not the trained layout, gives the gain); each also a note, and another note says when SHP
    partitioned nothing, so that its layout is the training-frequency order. ``headline`` is
    :func:`~impls.bandana.experiments.simulation.layout_policy_experiment`'s for the table
    plus ``points`` (every configuration at the headline cache fraction). Raises
    :class:`impls.bandana.prepare.PrepareError` when the trace, or either half of the split
    trace, holds no lookup; ``MemoryError`` before any layout is built when the table's per-row
    arrays (:func:`impls.bandana.table_memory.table_bytes`, all layouts held; the simulations
    add more) would not fit the memory this process may allocate."""
    import numpy as np

    from impls.bandana import table_memory
    from impls.bandana.data import traces
    from impls.bandana.experiments import simulation
    from impls.bandana.prepare import PrepareError, check_has_lookups, smaller_table_hint, unpartitioned_note

    check_has_lookups(source)
    n = int(source["num_vectors"])
    s, notes = experiment_sizes(profile, n, source["vectors"] is not None)
    need = table_memory.table_bytes(n, s["layouts"], simulation.BLOCK_BYTES // simulation.VECTOR_BYTES,
                                    keep_all=True, vectors=source["vectors"])
    table_memory.check_fits(need, n, f"building [bandana_sim.{profile}]'s layouts ({', '.join(s['layouts'])})",
                            lambda: smaller_table_hint(source))
    name = "trace"
    s["tables"], s["subcluster_tables"] = [name], []
    table = simulation.table_from_trace(name, source, s["train_fraction"], synthetic=None, num_vectors=n)
    train, test = table["train"], table["test"]
    share = {"earlier": s["train_fraction"], "later": 1 - s["train_fraction"]}
    for part, (_, ids), purpose in (("earlier", train, "build the layouts from"), ("later", test, "measure on")):
        if ids.size == 0:
            count = traces.num_queries(source["offsets"])
            raise PrepareError(f"the {part} {share[part]:.0%} of the {count} queries hold no lookup: nothing to "
                               f"{purpose} (every query there is an empty bag: trim them, or give a trace whose "
                               f"{part} {share[part]:.0%} looks ids up)")
    fraction = s["headline_cache_fraction"]
    capacity = simulation.capacity_of(n, fraction)
    used = int(np.unique(test[1]).size)        # distinct ids the measured half reads
    if capacity >= n:
        not_judged = (f"the cache ({capacity} vectors, at least one block) holds the whole table of {n}: only "
                      "first reads miss, so the ratio says how many vectors a block brings in, not how well a "
                      "cache of this fraction does (a larger table)")
    elif capacity >= used:
        not_judged = (f"the cache ({capacity} vectors, {capacity / n:.3g} of a table of {n} rows) has room for all "
                      f"the {used} distinct ids the measured half reads: but for what prefetched neighbours "
                      "evict, only first reads miss, so the ratio says how many of them a block brings in, not "
                      "how well a small cache does (--renumber if the ids are hashed or sparse, else a longer trace)")
    elif capacity > SHARE_LIMIT * fraction * n:
        smallest = _smallest_judged(fraction)
        not_judged = (f"{_SHARE_REASON}{capacity} vectors (at least one block), {capacity / n:.1%} of the table of "
                      f"{n} rows, not the claim's {fraction * 100:.3g}%: more than {SHARE_LIMIT} x {fraction:.3g} "
                      f"of the table, so the ratio is of a larger cache than the one the claim is about (a table "
                      f"of at least {smallest} rows)")
    else:
        not_judged = None
    if not_judged:
        notes.append(f"{not_judged}; verdict {NOT_JUDGED}")
    elif capacity > round(fraction * n):
        notes.append(f"the cache is one block's {capacity} vectors, more than {fraction:.3g} of the table")
    if not not_judged and capacity >= WORKING_SET_SHARE * used:
        notes.append(f"the cache's {capacity} vectors are {capacity / used:.0%} of the {used} distinct ids the "
                     "measured half reads: a cache near the trace's working set, where few reads miss whatever "
                     "the layout (--renumber if the ids are hashed, sparse or offset)")
    vectors = source.get("vectors")
    if vectors is not None and np.ndim(vectors) == 2:
        dtype = np.asarray(vectors[:0]).dtype
        row = int(np.shape(vectors)[1]) * dtype.itemsize
        if row != simulation.VECTOR_BYTES:
            block = -(-row // simulation.BLOCK_BYTES) * simulation.BLOCK_BYTES   # a row fits a block
            flags = f"--vector-bytes {row}" + (f" --block-bytes {block}" if block != simulation.BLOCK_BYTES else "")
            notes.append(f"the vectors' rows are {row} B ({np.shape(vectors)[1]} x {dtype}); "
                         f"the headline packs the suite's {simulation.VECTOR_BYTES}-B vectors, "
                         f"{simulation.BLOCK_BYTES // simulation.VECTOR_BYTES} to a {simulation.BLOCK_BYTES // 1024} KB "
                         f"block, whatever their width: python -m impls.bandana.prepare {flags} and "
                         "python -m impls.bandana.cache simulate this table's own geometry")
    if "kmeans" in s["layouts"]:           # flat K-means is quadratic: say how long before it starts
        from impls.bandana.layout import kmeans_cost

        kmeans_cost.warn_if_slow(len(source["vectors"]), int(np.shape(source["vectors"])[1]),
                                 simulation.BLOCK_BYTES // simulation.VECTOR_BYTES, s["kmeans_niter"],
                                 f"the kmeans layout of [bandana_sim.{profile}]")
    result = simulation.layout_policy_experiment(s, progress=progress, table_of=lambda _: table,
                                                 side_studies=False)["tables"][name]
    for kind, report in result["layouts"].items():
        note = unpartitioned_note(kind, report["params"])
        if note:
            notes.append(note)
    at = [{k: p[k] for k in ("layout", "policy", "effective_bandwidth", "hit_rate", "blocks_read")}
          for p in result["points"] if p["cache_fraction"] == fraction]
    order_reason = input_order_reason(result["headline"], at)
    if not not_judged and order_reason:
        not_judged = order_reason
        notes.append(f"{not_judged}; verdict {NOT_JUDGED}")
    return {"source": source["source"], "profile": profile, "notes": notes, "num_vectors": n,
            "train_queries": traces.num_queries(train[0]), "test_queries": traces.num_queries(test[0]),
            "empty_queries": int((traces.query_sizes(source["offsets"]) == 0).sum()),
            "test_lookups": result["test_lookups"], "test_distinct_ids": used, "not_judged": not_judged,
            "layouts": s["layouts"],
            "headline": {**result["headline"], "points": at}}


def input_order_reason(head: dict[str, Any], points: list[dict[str, Any]]) -> str | None:
    """Why the headline ``head`` is no gain of the trained layout, or None: the ids as numbered
    (identity), read with the chosen policy, read at least as well as the chosen configuration
    and at least :data:`ORDER_MARGIN` times as well as a random order read the same way (so the
    numbering itself has locality: on a trace without any, identity, random and the trained
    layouts read alike within noise, and the low ratio is the verdict's to judge). ``points``:
    every configuration at the headline's cache fraction; None also where they hold no random
    layout with that policy."""
    chosen, order = head["best"], head["input_order"]
    random = next((p["effective_bandwidth"] for p in points
                   if (p["layout"], p["policy"]) == ("random", chosen["policy"])), None)
    if not random or order["effective_bandwidth"] < chosen["effective_bandwidth"] \
            or order["effective_bandwidth"] < ORDER_MARGIN * random:
        return None
    return (f"{_ORDER_REASON}(identity/{order['policy']}: the ids as numbered, read with the chosen policy) reads "
            f"{order['effective_bandwidth']:.4f}, at least the chosen {chosen['layout']}/{chosen['policy']}'s "
            f"{chosen['effective_bandwidth']:.4f} and {order['effective_bandwidth'] / random:.2f}x a random order "
            f"read the same way ({random:.4f}): the ratio over identity/none is what the trace's own numbering "
            "gives with that policy, not a gain of the trained layout")


def verdict(ratio: float) -> tuple[str, str, str]:
    """(the report's verdict word for ``ratio`` on claim :data:`CLAIM`, the claim's paper value
    as text, ``ratio`` as text on its side of every band edge), judged as the report judges
    one value (:func:`impls.harness.report.verdicts.judge_one`)."""
    from impls.harness.report import verdicts

    return verdicts.judge_one(CLAIM, ratio)


def _not_judged_words(not_judged: str | None) -> str:
    """Why the ratio is not judged, in a few words for the headline's line; "" when it is."""
    if not not_judged:
        return ""
    if not_judged.startswith(_SHARE_REASON):
        return "a cache over the claim's share of this small table"
    if not_judged.startswith(_ORDER_REASON):
        return "the ids as numbered read at least as well with the same policy: no gain of the layout"
    return "no layout gain: the cache holds the ids the trace reads"


def _print(result: dict[str, Any]) -> None:
    head = result["headline"]
    empty = f" ({result['empty_queries']} of the queries hold no lookup)" if result["empty_queries"] else ""
    print(f"{result['source']}: {result['num_vectors']} vectors; {result['train_queries']} queries build the "
          f"layouts, {result['test_queries']} ({result['test_lookups']} lookups) are measured{empty}; "
          f"sizes [bandana_sim.{result['profile']}]")
    for note in result["notes"]:
        print(f"  note: {note}")
    print(f"effective bandwidth (useful bytes over bytes read) at a cache of {head['cache_fraction']:.3g} of the "
          "table, 128-B vectors in 4 KB blocks:")
    tag = {("identity", "none"): "  (baseline)",
           (head["best"]["layout"], head["best"]["policy"]): "  (chosen on the training trace)"}
    for p in sorted(head["points"], key=lambda p: -p["effective_bandwidth"]):
        print(f"  {p['layout'] + '/' + p['policy']:<26} {p['effective_bandwidth']:.4f}   hit rate "
              f"{p['hit_rate']:.3f}{tag.get((p['layout'], p['policy']), '')}")
    over = head["best_blocks_read_over_baseline"]
    word, paper = result["verdict"], result["paper"]
    why = _not_judged_words(result["not_judged"])
    print(f"headline: {head['best']['layout']}/{head['best']['policy']} over identity/none = {result['ratio_shown']}x"
          + (f"; NVM blocks read {over:.2f}x the baseline's" if over is not None else "")
          + (f"  ({why}, see the note)" if why else ""))
    order, over_order = head["input_order"], head["gain_over_input_order"]
    print(f"the layout's own gain: {head['best']['layout']}/{head['best']['policy']} over {order['layout']}/"
          f"{order['policy']} (the ids as numbered, same policy) = "
          + (f"{over_order:.2f}x" if over_order is not None else "- (the ids as numbered read nothing useful)"))
    if result["not_judged"]:
        print(f"paper: {paper} (claim {CLAIM}): {word} on this trace ({why}, see the note)")
        return
    print(f"paper: {paper} (claim {CLAIM}): {word} on this trace (one run; the report also weighs run-to-run "
          "noise)")


@cli.command("python -m impls.bandana.headline",
             sizes="the trace (the layouts hold one int64 per vector; the simulation reads the test trace)")
def main(argv: Sequence[str] | None = None) -> int:
    """Print (or ``--json``) the headline on the given trace; 0 on success, 2 on bad input."""
    from impls.bandana import prepare

    args = _parser().parse_args(argv)
    prepare.check_trace_arguments(args, profile_sizes_dataset_only=False)
    if args.json not in (None, "", "-"):
        cli.check_output(args.json, "--json", inputs=prepare.trace_inputs(args))
    profile = profiles.resolve(args.profile)
    source = prepare.load_source(args)
    result = measure(source, profile)
    result["verdict"], result["paper"], result["ratio_shown"] = verdict(result["headline"]["ratio"])
    if result["not_judged"]:
        result["verdict"] = NOT_JUDGED
    cli.emit(args.json, result, _print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
