"""Bandana on a real block device: replay vs. the fio ceiling, layouts, and the simulator cross-check.

Longer than 400 lines: the sweep, the layout comparison, the I/O mechanisms and the raw read
loop share one store, one trace cursor and one fio bracketing; they are one experiment.

:func:`replay_experiment` builds each layout of the profile's table (identity,
two-level K-means, SHP; trained on the early trace), writes the table's vectors in
that layout to an O_DIRECT store beside ``DLSYSBENCH_NVM_PATH`` (in ``DLSYSBENCH_CACHE`` when
that is a block device, which is only read: ``store`` in the result says where; the stores
killed runs left there are removed first), and replays the
first ``replay_lookups`` lookups of the later trace through a fresh DRAM cache:

* ``sweep``: for every layout, with its best policy (the one the simulator gives
  the highest effective bandwidth on those lookups), at every queue depth, the
  replay's lookups/s, reads/s and useful bytes/s next to fio's 4 KB random-read
  IOPS on the same store file at the same queue depth, measured right after it;
* ``cross_check``: at queue depth 1 the replay's reads and hits against
  :func:`impls.bandana.sim.cache.simulate` on the same lookups (they must be equal), and
  simulated effective bandwidth × fio's measured 4 KB bandwidth next to the replay's
  measured useful bytes/s;
* ``comparison``: the configurations named in ``comparison`` (SHP + shadow against
  identity + plain LRU) at ``comparison_queue_depth``, same cache size, taking
  ``comparison_rounds`` turns so the drive's drift affects them alike;
* ``mechanisms``: each I/O mechanism of :mod:`impls.bandana.nvm.direct_io` at
  ``mechanism_queue_depths`` on the first layout's store, taking ``mechanism_rounds``
  turns with fio (fio, replay, fio, replay, ...) so the drive's drift hits both alike:
  the headline replay/fio ratios, with each turn's ratio to the fio runs around it
  (``round_ratios``; their spread shows the drift within the measurement);
* ``raw_loop``: at the same queue depths, the default mechanism's read loop alone (fio's
  uniform random blocks, no cache decisions, no copies) taking turns with fio the same way:
  the part of the replay's gap to fio that is the loop itself.

Sizes come from ``[bandana_replay.<profile>]`` in ``impls/profiles.toml``. The trace
and table values are synthetic (``datasets/bandana-*.toml``); the device is real.
"""
from __future__ import annotations

import contextlib
import time
from typing import Any

import numpy as np

from impls.bandana.nvm import block_store, direct_io, replay
from impls.bandana.sim import cache
from impls.bandana.experiments import simulation as experiments
from impls.harness import cli, profiles
from impls.harness.progress import progress_bar

VECTOR_BYTES = experiments.VECTOR_BYTES
BLOCK_BYTES = experiments.BLOCK_BYTES


def sizes(profile: str | None = None) -> dict[str, Any]:
    """Return the ``[bandana_replay.<profile>]`` table of ``impls/profiles.toml``."""
    return profiles.sizes("bandana_replay", profile)


def _split(test: tuple[np.ndarray, np.ndarray], warm_lookups: int
           ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The warm-up ids (the first whole queries holding about ``warm_lookups`` lookups) and
    the rest of the trace as CSR ``(offsets, indices)``."""
    offsets, indices = test
    cut = int(np.searchsorted(offsets, warm_lookups, side="left"))
    if cut >= offsets.shape[0] - 1:
        raise ValueError(f"the test trace ({int(offsets[-1])} lookups) is too short for "
                         f"{warm_lookups} warm-up lookups")
    warm = np.ascontiguousarray(indices[:int(offsets[cut])], dtype=np.int64)
    rest = (offsets[cut:] - offsets[cut], np.ascontiguousarray(indices[int(offsets[cut]):], dtype=np.int64))
    return warm, rest


class _Cursor:
    """Walks the post-warm-up trace in order (wrapping around), remembering what was replayed."""

    def __init__(self, trace: tuple[np.ndarray, np.ndarray]):
        self.offsets, self.indices = trace
        self.q = 0
        self.history: list[np.ndarray] = []

    def at_end(self) -> bool:
        """Whether every query has been replayed since the last wrap."""
        return self.q >= self.offsets.shape[0] - 1

    def remaining(self) -> tuple[np.ndarray, np.ndarray]:
        """The queries from the cursor to the trace's end, as CSR (from the start after the end)."""
        if self.at_end():
            self.q = 0
        lo = int(self.offsets[self.q])
        return self.offsets[self.q:] - lo, self.indices[lo:]

    def advance(self, queries: int) -> np.ndarray:
        lo, hi = int(self.offsets[self.q]), int(self.offsets[self.q + queries])
        self.q += queries
        self.history.append(self.indices[lo:hi])
        return self.indices[lo:hi]


def _simulated_segment(warm, segment_ids, layout, capacity, policy, shadow) -> dict[str, Any]:
    """Simulator counters of ``segment_ids`` after ``warm``: a fresh CacheState, the differences."""
    state = cache.CacheState(layout, capacity, policy, shadow if policy == "shadow" else None,
                             VECTOR_BYTES, BLOCK_BYTES)
    state.process(warm)
    a = state.result()
    state.process(segment_ids)
    b = state.result()
    diff = {k: getattr(b, k) - getattr(a, k)
            for k in ("lookups", "hits", "misses", "blocks_read", "prefetched", "prefetch_used", "bytes_read")}
    diff["effective_bandwidth"] = ((diff["misses"] + diff["prefetch_used"]) * VECTOR_BYTES / diff["bytes_read"]
                                   if diff["bytes_read"] else 0.0)
    return diff


def _choose_shadow(warm, layout, capacity, factors) -> tuple[int, dict[str, float]]:
    """The shadow size (vector ids) among ``factors`` x ``capacity`` with the highest simulated
    effective bandwidth on the second half of ``warm`` after its first half (ties: the
    smaller); and each candidate's effective bandwidth, keyed by factor."""
    half = warm.size // 2
    scores: dict[str, float] = {}
    best, best_score = None, -1.0
    for factor in factors:
        shadow = int(factor * capacity)
        if shadow < capacity:
            raise ValueError(f"shadow factor {factor} < 1: the shadow set must be at least as large as the cache")
        score = _simulated_segment(warm[:half], warm[half:], layout, capacity, "shadow", shadow)["effective_bandwidth"]
        scores[f"{factor:g}"] = score
        if score > best_score:
            best, best_score = shadow, score
    if best is None:
        raise ValueError("shadow_factors is empty")
    return best, scores


class _FioRuns:
    """fio's 4 KB random-read runs on one store's file at one queue depth, in the order run:
    ``runs`` (FioPoint dicts; None for a run fio could not make) and ``why`` (the first
    such run's reason, as :func:`replay.fio_iops_why` gives it; ``""`` while every run ran)."""

    def __init__(self, store, qd: int, s: dict[str, Any]):
        self.store, self.qd, self.s = store, qd, s
        self.runs: list[dict[str, Any] | None] = []
        self.why = ""

    def run(self) -> dict[str, Any] | None:
        """Run fio once more; return its FioPoint dict (None where it could not run)."""
        point, why = replay.fio_iops_why(self.store.path, self.qd, self.s["fio_runtime_s"], self.s["fio_ramp_s"],
                                         self.store.header.file_bytes, BLOCK_BYTES)
        self.runs.append(point)
        self.why = self.why or why
        return point


def _against_fio(reads_per_second: float, fio_runs: list) -> tuple[list, float | None, float | None]:
    """(the fio runs, their mean IOPS, reads_per_second over it); ([], None, None) when any
    fio run is missing."""
    if not fio_runs or not all(fio_runs):
        return [], None, None
    iops = float(np.mean([f["iops"] for f in fio_runs]))
    return fio_runs, iops, reads_per_second / iops


def _round_ratios(rates: list[float], fio_runs: list) -> list[float]:
    """Each turn's reads/s over the mean IOPS of the fio runs just before and after it
    (``fio_runs`` has one more entry than ``rates``); [] when any fio run is missing. Their
    spread is the drive's drift within one measurement."""
    if not fio_runs or not all(fio_runs) or len(fio_runs) != len(rates) + 1:
        return []
    return [rate / ((before["iops"] + after["iops"]) / 2)
            for rate, before, after in zip(rates, fio_runs[:-1], fio_runs[1:])]


def _replay_for(session, cursor: _Cursor, qd: int, verify, seconds: float
                ) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Replay from ``cursor`` at queue depth ``qd`` for about ``seconds`` (to the end of the
    chunk in which they pass), going on from the trace's start when its end comes first, so
    that no measurement is a short tail of the trace; the cache's state carries over and the
    cursor's history records the ids in the order replayed. Returns (the result, merged over
    the passes as :func:`replay.merge_results` does; its per-query latencies, ns; the ids
    replayed)."""
    parts, latencies, ids, spent = [], [], [], 0.0
    while True:
        part = session.run(*cursor.remaining(), queue_depth=qd, verify=verify, max_seconds=seconds - spent)
        parts.append(part)
        latencies.append(session.last_latencies_ns)
        ids.append(cursor.advance(part["queries"]))
        spent += part["seconds"]
        if not cursor.at_end() or spent >= seconds:
            break
    result = replay.merge_results(parts, latencies) if len(parts) > 1 else parts[0]
    return result, np.concatenate(latencies), np.concatenate(ids)


def _measure(session, cursor: _Cursor, qd, s, store, seconds, rounds: int = 1
             ) -> tuple[dict[str, Any], np.ndarray]:
    """fio and the replay taking turns on the same store file at the same queue depth:
    fio, then ``rounds`` times (replay from the cursor for about ``seconds / rounds``,
    fio). The drive's throughput drifts from second to second, so the replay is
    bracketed by fio runs and compared with their mean.

    Returns the point (the merged replay result plus ``fio_runs`` (FioPoint dicts),
    ``fio_iops`` (their mean IOPS), ``fio`` (the last run), ``replay_over_fio``
    (reads/s over fio_iops), ``fio_no_value`` (why there is no ratio: the reason of the
    first fio run that could not run; None with a ratio), ``round_ratios`` (:func:`_round_ratios`))
    and the ids it replayed.
    """
    fio = _FioRuns(store, qd, s)
    fio.run()
    parts, latencies, ids = [], [], []
    for _ in range(rounds):
        part, part_latencies, part_ids = _replay_for(session, cursor, qd, s["verify_per_chunk"],
                                                     seconds / rounds)
        parts.append(part)
        latencies.append(part_latencies)
        ids.append(part_ids)
        fio.run()
    result = replay.merge_results(parts, latencies)
    result["rounds"] = rounds
    result["fio"] = fio.runs[-1]
    result["fio_runs"], result["fio_iops"], result["replay_over_fio"] = _against_fio(
        result["blocks_per_second"], fio.runs)
    result["fio_no_value"] = fio.why or None
    result["round_ratios"] = _round_ratios([p["blocks_per_second"] for p in parts], fio.runs)
    return result, np.concatenate(ids)


def _measure_raw_loop(store, qd: int, s: dict[str, Any], seconds: float, rounds: int, mechanism: str
                      ) -> dict[str, Any]:
    """The read loop alone (:func:`direct_io.raw_read_rate`: fio's uniform random blocks, no
    cache) taking turns with fio on the same store, as :func:`_measure` does for the replay:
    how much of the replay's gap to fio is the loop itself. Returns ``{"mechanism",
    "queue_depth", "blocks_per_second", "fio_runs", "fio_iops", "raw_over_fio", "fio_no_value",
    "round_ratios"}`` (``fio_no_value`` as :func:`_measure` gives it)."""
    rng = np.random.default_rng(s["seed"] + qd)
    buffers = block_store.AlignedBuffers(2 * qd, BLOCK_BYTES)
    context = direct_io.AioContext(qd) if mechanism == "libaio" else None
    try:
        direct_io.warm_up(mechanism)
        fio, reads, elapsed, rates = _FioRuns(store, qd, s), 0, 0.0, []
        fio.run()
        for _ in range(rounds):
            part = direct_io.raw_read_rate(mechanism, store.fd, store.header.n_blocks, qd, buffers,
                                           seconds / rounds, rng, context=context)
            reads, elapsed = reads + part["reads"], elapsed + part["seconds"]
            rates.append(part["blocks_per_second"])
            fio.run()
    finally:
        if context is not None:
            context.close()
        buffers.close()
    rate = reads / elapsed
    fio_runs, fio_iops, ratio = _against_fio(rate, fio.runs)
    return {"mechanism": mechanism, "queue_depth": qd, "blocks_per_second": rate,
            "fio_runs": fio_runs, "fio_iops": fio_iops, "raw_over_fio": ratio, "fio_no_value": fio.why or None,
            "round_ratios": _round_ratios(rates, fio.runs)}


def _cross_check(point, warm, ids, layout, capacity, shadow) -> dict[str, Any]:
    sim = _simulated_segment(warm, ids, layout, capacity, point["policy"], shadow)
    keys = ("blocks_read", "hits", "misses", "prefetched", "prefetch_used")
    # the mean of the fio runs that bracket the replay, as replay_over_fio divides by
    fio_bw = (float(np.mean([f["bandwidth_bytes_per_s"] for f in point["fio_runs"]]))
              if point.get("fio_runs") else None)
    return {"layout": point["layout"], "policy": point["policy"], "queue_depth": point["queue_depth"],
            "match": all(point[k] == sim[k] for k in keys),
            "replay_blocks_read": point["blocks_read"], "simulated_blocks_read": sim["blocks_read"],
            "replay_hits": point["hits"], "simulated_hits": sim["hits"],
            "simulated_effective_bandwidth": sim["effective_bandwidth"],
            "replay_effective_bandwidth": point["effective_bandwidth"],
            "fio_bandwidth_bytes_per_s": fio_bw,
            "predicted_useful_bytes_per_second": sim["effective_bandwidth"] * fio_bw if fio_bw else None,
            "replay_useful_bytes_per_second": point["useful_bytes_per_second"]}


def replay_experiment(s: dict[str, Any] | None = None, progress: bool | None = None) -> dict[str, Any]:
    """Run the experiment (see the module docstring); plain data.

    Every configuration (layout, policy) gets a fresh cache, warmed with the first
    ``warmup_lookups`` lookups of the later trace (decisions simulated, then the
    blocks holding the cached vectors read once to fill DRAM), then replays the
    trace on from there for about ``point_seconds`` per queue depth, in order
    (the cache carries over). The best policy of a layout is the one the simulator
    gives the highest effective bandwidth over the ``policy_choice_lookups`` lookups
    after the warm-up.

    The shadow set of each layout is sized by :func:`_choose_shadow` on the warm-up lookups
    (``shadow``: ids per layout; ``shadow_choice``: each candidate factor's simulated
    effective bandwidth).

    Returns ``{"sizes", "table", "num_vectors", "store"`` (where the stores lay:
    :func:`replay.store_record`; its note, when there is one, is also printed as a warning),
    ``"capacity", "shadow", "shadow_choice", "mechanism",
    "warmup_lookups", "segment_lookups", "policies": {layout: {policy: simulated
    counters of the first segment}}, "best_policy": {layout: policy}, "sweep": [point],
    "comparison": {"queue_depth", "points": [point]}, "mechanisms": [point], "raw_loop": [row],
    "cross_check": [row], "headline": {...}}``. A point is
    :meth:`replay.ReplaySession.run`'s result plus ``layout``, ``policy``, ``warm_up``,
    ``fio_runs`` (FioPoint dicts; [] where one is missing), ``fio`` (the last, or None),
    ``fio_iops`` (their mean IOPS), ``replay_over_fio`` (replay reads/s over fio_iops) and
    ``fio_no_value`` (why there is no ratio, as :func:`_measure` gives it).
    Raises :class:`block_store.DirectIOUnavailable` where O_DIRECT reads cannot reach a drive.
    """
    s = s or sizes()
    table = experiments.load_table(s["table"], s["train_fraction"], streamed=s.get("streamed_traces", False))
    if table["vectors"] is None:
        raise ValueError(f"{s['table']}: the dataset has no vector values to store")
    # in memory, also when the trace is streamed: the replay checks the bytes it serves against
    # these inside its timed loop, and a file-backed copy could be read from the drive under test
    vectors = np.array(table["vectors"], dtype=np.float32, order="C",
                       copy=True if isinstance(table["vectors"], np.memmap) else None)
    if vectors.shape[1] * 4 != VECTOR_BYTES:
        raise ValueError(f"{s['table']}: vectors of {vectors.shape[1] * 4} bytes, expected {VECTOR_BYTES}")
    qds = list(s["queue_depths"])
    warm, rest = _split(table["test"], s["warmup_lookups"])
    first_segment = _Cursor(rest).remaining()[1][:s["policy_choice_lookups"]]
    per_block = BLOCK_BYTES // VECTOR_BYTES
    n = table["num_vectors"]
    capacity = max(per_block, int(round(s["cache_fraction"] * n)))
    mechanism = direct_io.default_mechanism()
    store_directory, store_setting = replay.store_location()
    replay.sweep_stale_stores(store_directory)    # stores of killed runs (dead pids), as the CLI does
    where = replay.store_record(store_directory, store_setting)
    if where["note"]:
        cli.warn(where["note"])
    max_qd = max(qds + [s["comparison_queue_depth"]] + list(s["mechanism_queue_depths"]))
    out: dict[str, Any] = {
        "sizes": s, "table": s["table"], "num_vectors": n, "store": where,
        "capacity": capacity, "shadow": {}, "shadow_choice": {},
        "mechanism": mechanism, "warmup_lookups": int(warm.size), "point_seconds": s["point_seconds"],
        "policies": {}, "best_policy": {},
        "sweep": [], "cross_check": [], "mechanisms": [], "raw_loop": [],
        "comparison": {"queue_depth": s["comparison_queue_depth"], "points": []},
    }
    kinds = list(dict.fromkeys(list(s["layouts"]) + [layout for layout, _ in s["comparison"]]))
    mechanisms = [m for m in s["mechanisms"]
                  if m != "libaio" or direct_io.libaio_unavailable_reason() is None]
    steps = len(s["layouts"]) * len(qds) + (len(mechanisms) + 1) * len(s["mechanism_queue_depths"]) + 1
    timing = out["phase_seconds"] = {"layouts": 0.0, "replay_and_fio": 0.0, "cross_check": 0.0,
                                     "comparison": 0.0}

    def session_for(store, layout, policy, mech, shadow):
        return replay.ReplaySession(store, layout, capacity, policy, shadow if policy == "shadow" else None,
                                    mechanism=mech, table=vectors, seed=s["seed"], max_queue_depth=max_qd)

    kept: dict[str, tuple[np.ndarray, Any]] = {}      # comparison layouts: permutation, open store
    with contextlib.ExitStack() as cleanup, progress_bar(steps, "bandana replay", "point", progress) as bar:
        for index, kind in enumerate(kinds):
            started = time.perf_counter()
            layout = experiments.build_layout(kind, table, s).permutation
            shadow, out["shadow_choice"][kind] = _choose_shadow(warm, layout, capacity, s["shadow_factors"])
            out["shadow"][kind] = shadow
            sims = {p: _simulated_segment(warm, first_segment, layout, capacity, p, shadow)
                    for p in s["policies"]}
            out["policies"][kind] = sims
            best = max(s["policies"], key=lambda p: sims[p]["effective_bandwidth"])
            out["best_policy"][kind] = best
            path = replay.default_store_path(f"replay-{kind}")
            cleanup.callback(path.unlink, missing_ok=True)
            block_store.write_store(path, vectors, layout, BLOCK_BYTES, store_setting)
            store = cleanup.enter_context(block_store.open_store(path, layout))
            timing["layouts"] += time.perf_counter() - started
            if any(k == kind for k, _ in s["comparison"]):
                kept[kind] = (layout, store)
            runs = []   # (role, policy, mechanism, queue depths in order)
            if kind in s["layouts"]:
                runs.append(("sweep", best, mechanism, qds))
            if index == 0:
                runs += [("mechanism", best, m, list(s["mechanism_queue_depths"])) for m in mechanisms]
            for role, policy, mech, plan in runs:
                with session_for(store, layout, policy, mech, shadow) as session:
                    warmed = session.warm(warm, queue_depth=max_qd)
                    cursor = _Cursor(rest)
                    for qd in plan:
                        started = time.perf_counter()
                        before = np.concatenate([warm] + cursor.history)
                        rounds = s["mechanism_rounds"] if role == "mechanism" else 1
                        point, ids = _measure(session, cursor, qd, s, store, s["point_seconds"], rounds)
                        point.update(layout=kind, policy=policy, warm_up=warmed)
                        (out["sweep"] if role == "sweep" else out["mechanisms"]).append(point)
                        timing["replay_and_fio"] += time.perf_counter() - started
                        if role == "sweep":
                            started = time.perf_counter()
                            out["cross_check"].append(_cross_check(point, before, ids, layout, capacity, shadow))
                            timing["cross_check"] += time.perf_counter() - started
                        bar.update()
            if index == 0:
                for qd in s["mechanism_queue_depths"]:
                    started = time.perf_counter()
                    out["raw_loop"].append(_measure_raw_loop(store, qd, s, s["point_seconds"],
                                                             s["mechanism_rounds"], mechanism))
                    timing["replay_and_fio"] += time.perf_counter() - started
                    bar.update()
            if kind not in kept:
                store.close()
                path.unlink(missing_ok=True)
        started = time.perf_counter()
        out["comparison"]["points"] = _compare(kept, s, warm, rest, max_qd, session_for, out["cross_check"],
                                               capacity, out["shadow"])
        timing["comparison"] += time.perf_counter() - started
        bar.update()
    out["headline"] = _headline(out, s)
    return out


def _compare(kept, s, warm, rest, max_qd, session_for, cross_checks, capacity, shadows) -> list[dict[str, Any]]:
    """Replay the ``comparison`` configurations taking turns (``comparison_rounds`` slices
    each, same queue depth, same trace from the same warm-up), so the drive's drift
    affects them alike; then fio once on each store. ``shadows``: shadow size per layout.
    Returns one point per configuration."""
    qd, rounds = s["comparison_queue_depth"], s["comparison_rounds"]
    configs = []
    with contextlib.ExitStack() as stack:
        for kind, policy in s["comparison"]:
            layout, store = kept[kind]
            session = stack.enter_context(session_for(store, layout, policy, None, shadows[kind]))
            configs.append({"kind": kind, "policy": policy, "layout": layout, "store": store,
                            "session": session, "warm": session.warm(warm, queue_depth=max_qd),
                            "cursor": _Cursor(rest), "parts": [], "latencies": []})
        for _ in range(rounds):
            for c in configs:
                part, part_latencies, _ = _replay_for(c["session"], c["cursor"], qd, s["verify_per_chunk"],
                                                      s["point_seconds"] / rounds)
                c["parts"].append(part)
                c["latencies"].append(part_latencies)
    points = []
    for c in configs:
        point = replay.merge_results(c["parts"], c["latencies"])
        fio = _FioRuns(c["store"], qd, s)
        fio_runs, fio_iops, ratio = _against_fio(point["blocks_per_second"], [fio.run()])
        point.update(layout=c["kind"], policy=c["policy"], warm_up=c["warm"], rounds=rounds, fio=fio.runs[0],
                     fio_runs=fio_runs, fio_iops=fio_iops, replay_over_fio=ratio, fio_no_value=fio.why or None)
        points.append(point)
        cross_checks.append(_cross_check(point, warm, np.concatenate(c["cursor"].history), c["layout"],
                                         capacity, shadows[c["kind"]]))
    return points


def _spread(ratios: list[float]) -> dict[str, float] | None:
    """min, median and max of one point's per-turn ratios (None without them)."""
    if not ratios:
        return None
    return {"min": float(np.min(ratios)), "median": float(np.median(ratios)), "max": float(np.max(ratios)),
            "turns": len(ratios)}


def _headline(out: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    """Replay/fio at each queue depth (the lowest over layouts) and the useful-bytes ratio."""
    ratios: dict[str, Any] = {}
    for qd in s["queue_depths"]:
        values = [p["replay_over_fio"] for p in out["sweep"] if p["queue_depth"] == qd
                  and p["replay_over_fio"] is not None]
        ratios[str(qd)] = min(values) if values else None
    interleaved = {f"{p['mechanism']}@{p['queue_depth']}": p["replay_over_fio"] for p in out["mechanisms"]}
    spread = {f"{p['mechanism']}@{p['queue_depth']}": _spread(p["round_ratios"]) for p in out["mechanisms"]}
    raw = {str(p["queue_depth"]): p["raw_over_fio"] for p in out.get("raw_loop", [])}
    points = {(p["layout"], p["policy"]): p for p in out["comparison"]["points"]}
    (num_layout, num_policy), (den_layout, den_policy) = s["comparison"][:2]
    num, den = points.get((num_layout, num_policy)), points.get((den_layout, den_policy))
    return {
        "replay_over_fio_by_queue_depth": ratios,
        "replay_over_fio_interleaved": interleaved,
        "replay_over_fio_interleaved_turns": spread,
        "raw_loop_over_fio_by_queue_depth": raw,
        "useful_bytes_ratio": (num["useful_bytes_per_second"] / den["useful_bytes_per_second"]
                               if num and den and den["useful_bytes_per_second"] else None),
        "useful_bytes_ratio_configs": [f"{num_layout}+{num_policy}", f"{den_layout}+{den_policy}"],
        "simulated_effective_bandwidth_ratio": (num["effective_bandwidth"] / den["effective_bandwidth"]
                                                if num and den and den["effective_bandwidth"] else None),
        "cross_check_all_match": all(c["match"] for c in out["cross_check"]) if out["cross_check"] else None,
    }


def print_table(data: dict[str, Any]) -> None:
    """One line per measured point (sweep, comparison, mechanism, raw loop), then the headline."""
    import json

    print(f"{'role':<11}{'layout':<17}{'policy':<9}{'mech':<8}{'QD':>3}{'reads':>8}{'reads/s':>9}"
          f"{'fio IOPS':>10}{'ratio':>7}{'useful MB/s':>12}{'hit rate':>9}")
    for role, points in (("sweep", data["sweep"]), ("comparison", data["comparison"]["points"]),
                         ("mechanism", data["mechanisms"])):
        for p in points:
            ratio = f"{p['replay_over_fio']:.3f}" if p["replay_over_fio"] is not None else "-"
            fio_iops = f"{p['fio_iops']:.0f}" if p["fio_iops"] is not None else "-"
            print(f"{role:<11}{p['layout']:<17}{p['policy']:<9}{p['mechanism']:<8}{p['queue_depth']:>3}"
                  f"{p['blocks_read']:>8}{p['blocks_per_second']:>9.0f}{fio_iops:>10}{ratio:>7}"
                  f"{p['useful_bytes_per_second'] / 1e6:>12.3f}{p['hit_rate']:>9.3f}")
    for p in data["raw_loop"]:
        ratio = f"{p['raw_over_fio']:.3f}" if p["raw_over_fio"] is not None else "-"
        fio_iops = f"{p['fio_iops']:.0f}" if p["fio_iops"] is not None else "-"
        print(f"{'raw loop':<11}{'(uniform)':<17}{'-':<9}{p['mechanism']:<8}{p['queue_depth']:>3}{'':>8}"
              f"{p['blocks_per_second']:>9.0f}{fio_iops:>10}{ratio:>7}")
    print(json.dumps(data["headline"], indent=1))


def main(argv: list[str] | None = None) -> int:
    """``python -m impls.bandana.experiments.replay [--profile P] [--out FILE]`` is
    ``python -m impls run bandana.replay [--profile P] [--json FILE]`` (kept for older scripts)."""
    import sys

    from impls.harness import commands

    args = ["--json" if a == "--out" else a for a in (sys.argv[1:] if argv is None else argv)]
    return commands.main(["run", "bandana.replay", *args])


if __name__ == "__main__":
    raise SystemExit(main())
