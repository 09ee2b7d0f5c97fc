"""The SLIDE experiment: train for a time budget, evaluate on a fixed schedule, return plain data.

``seconds`` in the curve counts training only (table refreshes included); evaluation,
data loading, network set-up and numba compilation are excluded and reported separately.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numba
import numpy as np

from impls.slide.core import evaluate as ev
from impls.slide.core.config import SlideConfig
from impls.slide.data.dataset import XCData, batch_for, trainable_rows
from impls.slide.core.network import SlideNetwork
from impls.slide.core.retrieval import wrong_top_recall
from impls.slide.training import loop
from impls.slide.training.loop import EvalSchedule

RECALL_K = 10  # how many of the best-scoring wrong labels the retrieval recall looks for


def set_threads(threads: int | None) -> int:
    """Set numba's and torch's thread counts to ``threads`` (None: every CPU this process may
    use, its affinity capped by a cgroup quota), at most numba's pool; return the count set."""
    from impls.harness.capabilities import effective_cpus

    most = numba.config.NUMBA_NUM_THREADS
    n = min(effective_cpus(), most) if threads is None else max(1, min(int(threads), most))
    numba.set_num_threads(n)
    import torch  # the shared-pool GEMMs run in torch's thread pool
    torch.set_num_threads(n)
    return n


def warm_up(config: SlideConfig) -> float:
    """Compile (or load from numba's cache) every kernel on a tiny problem; return seconds."""
    from impls.slide.data import xc_data

    t0 = time.perf_counter()
    arrays = xc_data.generate(seed=0, n_train=max(4, min(config.batch, 256)), n_test=2, n_features=64, n_labels=64,
                              labels_per_point=2.0, nnz_per_point=8, labels_per_topic=8,
                              topic_pool=8, words_per_label=4)
    data = XCData.from_arrays(arrays, "train_")
    tiny = SlideNetwork(_replace(config, min_active=4, max_active=None, topk=8, range_pow=None),
                        64, 64, int(np.diff(data.label_indptr).max()), label_counts=data.label_counts())
    tiny.page_in()
    tiny.step(data, np.arange(min(config.batch, data.n_points)))
    tiny.tables.warm_up()  # the fold kernel: one tiny step never fills the upkeep's delta
    rows = np.arange(min(4, data.n_points))
    top, _ = ev.topk_and_wrong(tiny.hidden(data, rows), tiny.W2, tiny.b2, 5, RECALL_K, *ev.row_labels(data, rows))
    ev.precision_at_k(top, data, rows)
    return time.perf_counter() - t0


def _replace(config: SlideConfig, **kw) -> SlideConfig:
    import dataclasses
    return dataclasses.replace(config, **kw)


def train(config: SlideConfig, train_data: XCData, test_data: XCData, time_budget_s: float | None = 60.0,
          eval_every: int | None = 50, progress: bool | Callable[[dict], None] = False,
          max_iterations: int | None = None, eval_points: int | None = 1000,
          eval_at_start: bool = True, eval_first_s: float | None = None,
          eval_growth: float = 1.6) -> dict[str, Any]:
    """Train SLIDE on ``train_data``; return curve, throughput, accuracy and parameters.

    Stops when the training time reaches ``time_budget_s`` or after ``max_iterations``
    batches (whichever first; at least one must be set). Evaluates exact P@1/P@5 on a
    fixed shuffled subset of ``eval_points`` test points every ``eval_every`` batches and
    at the end (and at log-spaced seconds from ``eval_first_s`` on, see :class:`EvalSchedule`);
    unless ``mode`` is "all", each evaluation also records how many of the points' 10
    best-scoring wrong labels the hash tables retrieve (``lsh_recall`` with its 95% interval
    ``lsh_recall_ci``, ``lsh_recall_labels`` distinct labels among the trials and
    ``lsh_recall_effective_trials``, see :mod:`impls.slide.core.retrieval`; ``refreshes``: table rehashes +
    rebuilds so far; ``rebuilds``: rebuilds so far, i.e. new hash functions); every
    evaluation records the mean cosine between the evaluation points' hidden vectors
    (``hidden_cosine``, see :func:`evaluate.mean_cosine`). ``lsh_recall_min_ratio``: the
    smallest ``lsh_recall / lsh_random_recall`` over the evaluations after the first table
    *rebuild* (None without one), ``lsh_recall_min_ratio_ci`` its 95% interval;
    ``lsh_recall_min_ratio_after_rehash``: the same over the evaluations after the first
    refresh of either kind; ``lsh_recall_no_value`` and ``lsh_recall_after_rehash_no_value``
    say in words why either is None (:func:`recall_gap`). ``table_seconds``: seconds in refreshes and upkeep during training,
    ``upkeep_seconds`` the upkeep's share; ``upkeep_moves``: neurons re-bucketed by the upkeep
    (counted once per batch that moved them), ``upkeep_folds``: builds a full delta forced.
    ``progress``: True for a line per evaluation on stderr and, between evaluations, one every
    15 s of wall time (:func:`loop.print_tick`), or a callable that receives each curve point.
    A batch larger than the trainable points is cut to them (:func:`batch_for`).
    """
    if time_budget_s is None and max_iterations is None:
        raise ValueError("set time_budget_s or max_iterations")
    train_rows = trainable_rows(train_data, test_data)
    threads = set_threads(config.threads)
    config = _replace(config, threads=threads, batch=batch_for(config.batch, train_data, train_rows))
    compile_s = warm_up(config)
    t0 = time.perf_counter()
    max_labels = int(max(np.diff(train_data.label_indptr).max(initial=1), 1))
    net = SlideNetwork(config, train_data.n_features, train_data.n_labels, max_labels,
                       label_counts=train_data.label_counts())
    net.page_in()
    setup_s = time.perf_counter() - t0
    setup_table_s = net.table_seconds
    rehash0, rebuild0 = net.n_rehash, net.n_rebuild
    eval_rows = ev.eval_rows(test_data, eval_points, config.seed)
    eval_truth = ev.row_labels(test_data, eval_rows)
    baseline = ev.most_popular_baseline(train_data, test_data, eval_rows)
    report = progress if callable(progress) else (loop.print_point if progress else None)

    def evaluate(iteration: int, seconds: float, loss: float) -> dict:
        hidden = net.hidden(test_data, eval_rows)
        ranked, wrong = ev.topk_and_wrong(hidden, net.W2, net.b2, 5, RECALL_K, *eval_truth)
        score = ev.precision_at_k(ranked, test_data, eval_rows)
        point = {"seconds": seconds, "iteration": iteration,
                 "p_at_1": score["p_at_1"], "p_at_5": score["p_at_5"], "loss": loss,
                 "hidden_cosine": ev.mean_cosine(hidden), "hits_at_1": ev.pack_hits(score["hits_at_1"])}
        if net.config.mode != "all":
            found = wrong_top_recall(net.tables, hidden, wrong, test_data, eval_rows, RECALL_K)
            point.update(lsh_recall=found["recall"], lsh_retrieved=found["retrieved"],
                         lsh_random_recall=found["random_recall"],
                         lsh_recall_ci=[found["ci_low"], found["ci_high"]],
                         lsh_recall_hits=found["hits"], lsh_recall_trials=found["trials"],
                         lsh_recall_labels=found["labels"], lsh_recall_effective_trials=found["effective_trials"],
                         refreshes=net.n_rehash + net.n_rebuild - rehash0 - rebuild0,
                         rebuilds=net.n_rebuild - rebuild0)
        return point

    table_s0 = net.table_seconds
    run = loop.run(lambda rows: net.step(train_data, rows), evaluate, n_points=train_data.n_points,
                   batch=config.batch, seed=config.seed, timer=loop.WallTimer(),
                   schedule=EvalSchedule(eval_every, eval_first_s, eval_growth), time_budget_s=time_budget_s,
                   max_iterations=max_iterations, eval_at_start=eval_at_start, report=report,
                   train_rows=train_rows, tick=loop.print_tick if progress is True else None)
    final = run.curve[-1]
    after_rebuild = recall_ratios(run.curve, "rebuilds")
    after_refresh = recall_ratios(run.curve, "refreshes")
    worst = min(after_rebuild, key=lambda r: r[0]) if after_rebuild else None
    return {
        **loop.result("slide", run, baseline_p_at_1=baseline["p_at_1"], eval_points=int(eval_rows.size),
                      threads=threads, setup_seconds=setup_s, active_fraction=net.active_fraction,
                      n_labels=train_data.n_labels,
                      params={**net.config.as_dict(),     # mode "all" hashes nothing: no range
                              "range_pow": None if net.config.mode == "all" else net.tables.lsh.range_pow},
                      data={"train": train_data.stats(), "test": test_data.stats()}),
        **ev.sample_record(eval_rows, baseline),
        "compile_seconds": compile_s,
        "table_seconds": net.table_seconds - table_s0,
        "initial_table_seconds": setup_table_s,
        "rehashes": net.n_rehash - rehash0,
        "rebuilds": net.n_rebuild - rebuild0,
        "upkeep_seconds": net.upkeep_seconds,
        "upkeep_moves": net.tables.moves,
        "upkeep_folds": net.tables.folds,
        "final_lsh_recall": final.get("lsh_recall"),
        "final_lsh_retrieved": final.get("lsh_retrieved"),
        "final_lsh_random_recall": final.get("lsh_random_recall"),
        "final_hidden_cosine": final.get("hidden_cosine"),
        "lsh_recall_min_ratio": worst[0] if worst else None,
        "lsh_recall_min_ratio_ci": list(worst[1]) if worst else None,
        "lsh_recall_min_ratio_after_rehash": min(r[0] for r in after_refresh) if after_refresh else None,
        "lsh_recall_no_value": None if after_rebuild else recall_gap(
            "rebuild", net.n_rebuild - rebuild0, run.iterations, net.config.mode),
        "lsh_recall_after_rehash_no_value": None if after_refresh else recall_gap(
            "refresh", net.n_rehash + net.n_rebuild - rehash0 - rebuild0, run.iterations, net.config.mode),
        "lsh_recall_k": RECALL_K,
        "table_bytes": net.tables.nbytes,
    }


def recall_ratios(curve: list[dict], after: str) -> list[tuple[float, tuple[float, float]]]:
    """``(lsh_recall / lsh_random_recall, (low, high))`` of every evaluation with ``point[after]``
    > 0 (``after``: "rebuilds" or "refreshes"), the interval being ``lsh_recall_ci`` over the
    random recall; evaluations without a random recall or with a NaN recall are skipped."""
    out = []
    for p in curve:
        rand = p.get("lsh_random_recall")
        if p.get(after) and rand and p["lsh_recall"] == p["lsh_recall"]:
            low, high = p.get("lsh_recall_ci", (float("nan"), float("nan")))
            out.append((p["lsh_recall"] / rand, (low / rand, high / rand)))
    return out


def recall_gap(after: str, events: int, batches: int, mode: str) -> str:
    """Why a run has no recall ratio after its first table ``after`` ("rebuild" or "refresh"),
    ``events`` being how many it had in its ``batches`` training batches: its ``mode`` hashes
    nothing, none came, or no evaluation after one has a ratio (none probed the tables, or
    the random set's recall was 0, which :func:`recall_ratios` skips)."""
    if mode == "all":
        return "the run computes every output (mode all): it has no hash tables to probe"
    if events == 0:
        return (f"the run's tables had no {after} in its {batches} batches (it stopped before the first, or "
                "its schedule has none)")
    return (f"no evaluation after the run's first table {after} gave a recall ratio (none probed the tables, "
            "or a random set's recall there was 0)")
