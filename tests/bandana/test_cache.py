"""Bandana DRAM-cache simulator: exact semantics, numba == plain-Python reference, CLI."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impls.bandana.sim import cache
from impls.bandana.sim import cache_kernels as K
from impls.bandana.sim.cache import CacheConfigError, CacheState, simulate
from impls.bandana.sim.cache_reference import (
    ordered_dict_lru,
    ordered_dict_lru_lookups_per_second,
    simulate_reference,
)

REPO = Path(__file__).resolve().parents[2]
COUNTERS = ("lookups", "hits", "misses", "blocks_read", "prefetched", "prefetch_used",
            "effective_bandwidth", "bytes_read")


def counters(result) -> dict:
    d = result if isinstance(result, dict) else result.to_dict()
    return {k: d[k] for k in COUNTERS}


# --------------------------------------------------------------------------- hand-worked examples
# Derived by hand from the spec (cache LRU end first; * = prefetched, not yet requested).

def test_none_by_hand():
    # V = 2: blocks {3,1} {0,2} {7,5} {4,6}; C = 2.
    layout = [3, 1, 0, 2, 7, 5, 4, 6]
    trace = [3, 1, 3, 0, 1, 3]
    # 3 miss [3]; 1 miss [3,1]; 3 hit [1,3]; 0 miss evicts 1 [3,0];
    # 1 miss evicts 3 [0,1]; 3 miss evicts 0 [1,3]
    r = simulate(trace, layout, 2, "none", vector_bytes=64, block_bytes=128)
    assert r.to_dict() == {"lookups": 6, "hits": 1, "misses": 5, "blocks_read": 5,
                           "prefetched": 0, "prefetch_used": 0,
                           "effective_bandwidth": 5 * 64 / (5 * 128), "bytes_read": 640}
    state = CacheState(layout, 2, "none", vector_bytes=64, block_bytes=128)
    state.process(trace)
    assert state.cached_ids().tolist() == [1, 3]


def test_prefetch_by_hand_v2():
    # V = 2: blocks {3,1} {0,2} {7,5} {4,6}; C = 4.
    layout = [3, 1, 0, 2, 7, 5, 4, 6]
    trace = [3, 1, 0, 7, 2, 1, 5]
    # 3: miss, candidate 1, nothing evicted          [1*,3]
    # 1: hit on a prefetched vector: used 1         [3,1]
    # 0: miss, candidate 2, room: nothing evicted    [3,1,2*,0]
    # 7: miss, candidate 5, evict 3 and 1            [2*,0,5*,7]
    # 2: hit, used 2                                 [0,5*,7,2]
    # 1: miss, candidate 3 (evicted earlier: a candidate again), evict 0 and the
    #    unrequested 5 (it just disappears)          [7,2,3*,1]
    # 5: miss, 7 cached: no candidate, evict 7       [2,3*,1,5]
    r = simulate(trace, layout, 4, "prefetch", vector_bytes=64, block_bytes=128)
    assert r.to_dict() == {"lookups": 7, "hits": 2, "misses": 5, "blocks_read": 5,
                           "prefetched": 4, "prefetch_used": 2,
                           "effective_bandwidth": 7 * 64 / (5 * 128), "bytes_read": 640}
    state = CacheState(layout, 4, "prefetch", vector_bytes=64, block_bytes=128)
    state.process(trace)
    assert state.cached_ids().tolist() == [2, 3, 1, 5]
    assert state.requested_flags().tolist() == [True, False, True, True]


def test_prefetch_by_hand_v4():
    # identity layout, V = 4: blocks {0..3} {4..7}; C = 6.
    layout = list(range(8))
    trace = [1, 5, 0, 3]
    # 1: miss, candidates 0,2,3 at MRU in storage order, then 1   [0*,2*,3*,1]
    # 5: miss, candidates 4,6,7: evict 0,2 (size 4 + 4 > 6)        [3*,1,4*,6*,7*,5]
    # 0: miss, candidates: 2 only (1, 3 cached): evict 3, 1        [4*,6*,7*,5,2*,0]
    # 3: miss, candidates: 1 only: evict 4, 6                      [7*,5,2*,0,1*,3]
    r = simulate(trace, layout, 6, "prefetch", vector_bytes=32, block_bytes=128)
    assert counters(r) == {"lookups": 4, "hits": 0, "misses": 4, "blocks_read": 4,
                           "prefetched": 8, "prefetch_used": 0,
                           "effective_bandwidth": 4 * 32 / (4 * 128), "bytes_read": 512}
    state = CacheState(layout, 6, "prefetch", vector_bytes=32, block_bytes=128)
    state.process(trace)
    assert state.cached_ids().tolist() == [7, 5, 2, 0, 1, 3]
    assert state.requested_flags().tolist() == [False, True, False, True, False, True]


def test_lowpri_by_hand():
    # identity layout, V = 4; C = 6.
    layout = list(range(8))
    trace = [1, 5, 0, 3]
    # 1: miss: 1 at MRU, candidates 0,2,3 at the LRU end, 0 next to go   [0*,2*,3*,1]
    # 5: miss, candidates 4,6,7: evict 0, 2; 5 at MRU                      [4*,6*,7*,3*,1,5]
    # 0: miss, candidate 2: evict 4, 6                                     [2*,7*,3*,1,5,0]
    # 3: hit on a prefetched vector                                        [2*,7*,1,5,0,3]
    r = simulate(trace, layout, 6, "lowpri", vector_bytes=32, block_bytes=128)
    assert counters(r) == {"lookups": 4, "hits": 1, "misses": 3, "blocks_read": 3,
                           "prefetched": 7, "prefetch_used": 1,
                           "effective_bandwidth": 4 * 32 / (3 * 128), "bytes_read": 384}
    state = CacheState(layout, 6, "lowpri", vector_bytes=32, block_bytes=128)
    state.process(trace)
    assert state.cached_ids().tolist() == [2, 7, 1, 5, 0, 3]
    assert state.requested_flags().tolist() == [False, False, True, True, True, True]


def test_lowpri_by_hand_v2():
    layout = [3, 1, 0, 2, 7, 5, 4, 6]
    trace = [3, 1, 0, 7, 2, 1, 5]
    # 3 [1*,3]; 1 hit used 1 [3,1]; 0 [2*,3,1,0]; 7: evict 2*, 3 -> [5*,1,0,7];
    # 2: miss (0 cached: no candidate), evict 5* [1,0,7,2]; 1 hit [0,7,2,1];
    # 5: miss (7 cached), evict 0 [7,2,1,5]
    r = simulate(trace, layout, 4, "lowpri", vector_bytes=64, block_bytes=128)
    assert counters(r) == {"lookups": 7, "hits": 2, "misses": 5, "blocks_read": 5,
                           "prefetched": 3, "prefetch_used": 1,
                           "effective_bandwidth": 6 * 64 / (5 * 128), "bytes_read": 640}


def test_shadow_by_hand():
    # identity layout, V = 4: blocks {0..3} {4..7} {8..11}; C = 4, S = 6.
    layout = list(range(12))
    trace = [1, 4, 8, 9, 5, 0, 1, 4, 8, 10, 2, 9]
    # shadow set after each lookup on the right
    # 1  miss, shadow empty: no candidate   cache [1]           shadow [1]
    # 4  miss                                [1,4]               [1,4]
    # 8  miss                                [1,4,8]             [1,4,8]
    # 9  miss (8 cached, 10/11 unseen)       [1,4,8,9]           [1,4,8,9]
    # 5  miss, evict 1                       [4,8,9,5]           [1,4,8,9,5]
    # 0  miss, candidate 1 (in the shadow, not cached); evict 4, 8
    #                                        [9,5,1*,0]          [1,4,8,9,5,0]
    # 1  hit on a prefetched vector: used 1  [9,5,0,1]           [4,8,9,5,0,1]
    # 4  miss (5 cached), evict 9            [5,0,1,4]           [8,9,5,0,1,4]
    # 8  miss, candidate 9; evict 5, 0       [1,4,9*,8]          [9,5,0,1,4,8]
    # 10 miss (8, 9 cached), evict 1; shadow full: drops 9
    #                                        [4,9*,8,10]         [5,0,1,4,8,10]
    # 2  miss, candidates 0, 1; evict 4, 9*, 8 (size + 3 <= 4)
    #                                        [10,0*,1*,2]        [0,1,4,8,10,2]
    # 9  miss, candidate 8 (9 left the shadow, 8 is in it); evict 10, 0*
    #                                        [1*,2,8*,9]         [1,4,8,10,2,9]
    r = simulate(trace, layout, 4, "shadow", shadow=6, vector_bytes=32, block_bytes=128)
    assert counters(r) == {"lookups": 12, "hits": 1, "misses": 11, "blocks_read": 11,
                           "prefetched": 5, "prefetch_used": 1,
                           "effective_bandwidth": 12 * 32 / (11 * 128), "bytes_read": 1408}
    state = CacheState(layout, 4, "shadow", 6, vector_bytes=32, block_bytes=128)
    state.process(trace)
    assert state.cached_ids().tolist() == [1, 2, 8, 9]
    assert state.requested_flags().tolist() == [False, True, False, True]
    assert state.shadow_ids().tolist() == [1, 4, 8, 10, 2, 9]


def test_partial_last_block_and_empty_trace():
    # N = 5, V = 2: blocks {0,1} {2,3} {4}: a miss on 4 has no candidates.
    r = simulate([4, 4, 3], list(range(5)), 2, "prefetch", vector_bytes=1, block_bytes=2)
    assert counters(r) == {"lookups": 3, "hits": 1, "misses": 2, "blocks_read": 2,
                           "prefetched": 1, "prefetch_used": 0,
                           "effective_bandwidth": 2 / 4, "bytes_read": 4}
    r = simulate([], list(range(5)), 2, "shadow", shadow=2, vector_bytes=1, block_bytes=2)
    assert r.to_dict() == dict.fromkeys(COUNTERS, 0) | {"effective_bandwidth": 0.0}


def test_capacity_larger_than_table_never_evicts():
    trace = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    r = simulate(trace, np.arange(4), 1000, "none", vector_bytes=1, block_bytes=1)
    assert (r.hits, r.misses) == (4, 4)


def test_result_names_and_types():
    r = simulate([0, 1, 0], [1, 0], 2, "prefetch", vector_bytes=64, block_bytes=128)
    d = r.to_dict()
    assert tuple(d) == COUNTERS == cache.RESULT_KEYS
    assert all(isinstance(d[k], int) for k in COUNTERS if k != "effective_bandwidth")
    assert isinstance(d["effective_bandwidth"], float)
    assert r.hit_rate == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- randomized vs reference

@st.composite
def cases(draw, max_n=200):
    n = draw(st.integers(1, max_n))
    per_block = draw(st.integers(1, 16))
    vector_bytes = draw(st.sampled_from([1, 8, 128]))
    capacity = draw(st.integers(per_block, n + per_block))
    shadow = draw(st.integers(capacity, 3 * capacity + 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    layout = draw(st.sampled_from(["random", "identity"]))
    layout = rng.permutation(n) if layout == "random" else np.arange(n)
    length = draw(st.integers(0, 400))
    kind = draw(st.sampled_from(["uniform", "zipf", "zipf-steep", "runs", "blocks"]))
    if kind == "uniform":
        trace = rng.integers(0, n, length)
    elif kind in ("zipf", "zipf-steep"):
        weights = np.arange(1, n + 1, dtype=float) ** -(0.9 if kind == "zipf" else 1.6)
        trace = rng.permutation(n)[rng.choice(n, size=length, p=weights / weights.sum())]
    elif kind == "runs":    # repeated ids
        trace = np.repeat(rng.integers(0, n, max(1, length // 3)), 3)[:length]
    else:                   # whole blocks read in storage order, from a few hot spots
        starts = rng.integers(0, n, max(1, length // 4))
        trace = layout[np.minimum(starts[:, None] + np.arange(4)[None, :], n - 1)].ravel()[:length]
    return dict(trace=np.asarray(trace, dtype=np.int64), layout=layout, capacity=capacity,
                shadow=shadow, vector_bytes=vector_bytes, block_bytes=vector_bytes * per_block)


@settings(max_examples=500, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=cases())
def test_matches_reference_exactly(case):
    for policy in cache.POLICIES:
        ref = simulate_reference(policy=policy, **case)
        got = simulate(policy=policy, **case)
        assert counters(got) == counters(ref), policy
        state = CacheState(case["layout"], case["capacity"], policy, case["shadow"],
                           case["vector_bytes"], case["block_bytes"])
        state.process(case["trace"])
        assert state.cached_ids().tolist() == ref["cache_order"], policy
        assert state.requested_flags().tolist() == ref["cache_requested"], policy
        if policy == "shadow":
            assert state.shadow_ids().tolist() == ref["shadow_order"]


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=cases(max_n=120), cuts=st.lists(st.integers(0, 400), max_size=6),
       record=st.sampled_from([None, "outcomes", "inserted"]))
def test_chunked_equals_one_shot(case, cuts, record):
    """Chunks through one CacheState give the one-shot counters, state and outcomes."""
    trace = case["trace"]
    bounds = [0] + sorted(min(c, len(trace)) for c in cuts) + [len(trace)]
    for policy in cache.POLICIES:
        ref = simulate_reference(policy=policy, **case)
        state = CacheState(case["layout"], case["capacity"], policy, case["shadow"],
                           case["vector_bytes"], case["block_bytes"])
        outs = [state.process(trace[lo:hi], record=record) for lo, hi in itertools.pairwise(bounds)]
        assert counters(state.result()) == counters(simulate(policy=policy, **case))
        assert state.cached_ids().tolist() == ref["cache_order"]
        if record is None:
            assert all(o is None for o in outs)
            continue
        hit = np.concatenate([o.hit for o in outs])
        block = np.concatenate([o.block for o in outs])
        assert hit.tolist() == [o[0] for o in ref["outcomes"]]
        assert block.tolist() == [o[1] for o in ref["outcomes"]]
        if record == "inserted":
            inserted = [o.inserted_ids[o.inserted_ptr[i]:o.inserted_ptr[i + 1]].tolist()
                        for o in outs for i in range(len(o.hit))]
            assert inserted == [o[2] for o in ref["outcomes"]]
        else:
            assert all(o.inserted_ptr is None for o in outs)


@pytest.mark.parametrize("per_block", [63, 64, 65, 100, 128])
def test_blocks_wider_than_one_bitmap_word(per_block):
    """The shadow policy keeps a bitmap per block in 64-bit words: cover several words."""
    rng = np.random.default_rng(per_block)
    for _ in range(5):
        n = int(rng.integers(per_block, 4 * per_block))
        layout = rng.permutation(n)
        trace = rng.integers(0, n, 600)
        capacity = int(rng.integers(per_block, 2 * per_block))
        for policy in cache.POLICIES:
            ref = simulate_reference(trace, layout, capacity, policy, 2 * capacity, 1, per_block)
            got = simulate(trace, layout, capacity, policy, 2 * capacity, 1, per_block)
            assert counters(got) == counters(ref), policy


def test_inserted_split_into_sub_chunks(monkeypatch):
    """record="inserted" bounds its buffer by splitting a chunk; the pieces join up."""
    monkeypatch.setattr(cache, "_MAX_INSERTED_BUFFER", 8)
    rng = np.random.default_rng(3)
    layout = rng.permutation(40)
    trace = rng.integers(0, 40, 200)
    ref = simulate_reference(trace, layout, 8, "prefetch", None, 1, 4)
    out = CacheState(layout, 8, "prefetch", None, 1, 4).process(trace, record="inserted")
    assert out.inserted_ptr[-1] == len(out.inserted_ids)
    got = [out.inserted_ids[out.inserted_ptr[i]:out.inserted_ptr[i + 1]].tolist()
           for i in range(len(trace))]
    assert got == [o[2] for o in ref["outcomes"]]


def test_int64_ids_of_other_dtypes_accepted():
    trace = np.array([0, 1, 2, 1], dtype=np.uint16)
    layout = np.array([2, 0, 1], dtype=np.int32)
    a = simulate(trace, layout, 2, "prefetch", vector_bytes=1, block_bytes=2)
    b = simulate(trace.astype(np.int64), layout.astype(np.int64), 2, "prefetch",
                 vector_bytes=1, block_bytes=2)
    assert a == b


# --------------------------------------------------------------------------- validation

@pytest.mark.parametrize("kwargs, match", [
    (dict(trace=[0, 5]), r"trace\[1\] = 5 .*\[0, 4\)"),
    (dict(trace=[-1]), r"trace\[0\] = -1"),
    (dict(trace=[0.5]), "must hold integers"),
    (dict(trace=[[0]]), "1-D"),
    (dict(layout=[0, 1, 2, 2]), r"not a permutation of 0..3: layout\[3\] = 2 repeats layout\[2\]"),
    (dict(layout=[0, 1, 2, 4]), r"layout\[3\] = 4 is outside \[0, 4\)"),
    (dict(block_bytes=64, vector_bytes=100), "vector_bytes=100 is larger than block_bytes=64"),
    (dict(block_bytes=0), "block_bytes must be a positive integer"),
    (dict(vector_bytes=-8), "vector_bytes must be a positive integer"),
    (dict(capacity=1), "capacity=1 vectors is less than one block's 2 vectors"),
    (dict(capacity=2.5), "capacity must be an integer"),
    (dict(policy="shadow", shadow=1), "shadow=1 is less than capacity=2"),
    (dict(policy="shadow", shadow=None), "needs a shadow size"),
    (dict(policy="lru"), "unknown policy 'lru'; known policies: none, prefetch, lowpri, shadow"),
])
def test_validation_errors(kwargs, match):
    args = dict(trace=[0, 1, 2, 3], layout=[3, 2, 1, 0], capacity=2, policy="prefetch",
                shadow=None, vector_bytes=64, block_bytes=128) | kwargs
    with pytest.raises(CacheConfigError, match=match):
        simulate(**args)


def test_validation_happens_before_any_work():
    # a bad trace id is reported even when the policy would be fine and work is big
    with pytest.raises(CacheConfigError, match=r"trace\[2\] = 10"):
        simulate([1, 2, 10], np.arange(10), 4, "none", vector_bytes=1, block_bytes=1)
    state = CacheState(np.arange(4), 2, "none", vector_bytes=1, block_bytes=1)
    with pytest.raises(CacheConfigError, match=r"ids\[1\] = 4"):
        state.process([0, 4])
    assert state.result().lookups == 0
    with pytest.raises(CacheConfigError, match="record must be"):
        state.process([0], record="everything")


def test_shadow_size_ignored_by_other_policies():
    a = simulate([0, 1, 0], [0, 1], 2, "prefetch", shadow=1, vector_bytes=1, block_bytes=2)
    b = simulate([0, 1, 0], [0, 1], 2, "prefetch", vector_bytes=1, block_bytes=2)
    assert a == b


# --------------------------------------------------------------------------- OrderedDict baseline

def test_ordered_dict_lru_matches_policy_none():
    rng = np.random.default_rng(0)
    trace = rng.integers(0, 300, 3000)
    layout = rng.permutation(300)
    r = simulate(trace, layout, 50, "none", vector_bytes=1, block_bytes=1)
    assert ordered_dict_lru(trace.tolist(), 50) == r.hits
    out = ordered_dict_lru_lookups_per_second(trace, 50, max_lookups=1000)
    assert out["lookups"] == 1000 and out["lookups_per_second"] > 0


def test_measure_throughput_small():
    out = cache.measure_throughput(n_vectors=5000, n_lookups=20000, repeats=1,
                                   baseline_max_lookups=5000)
    assert set(out["policies"]) == set(cache.POLICIES)
    assert out["capacity"] == 250 and out["shadow"] == 500
    assert out["ratio_none_vs_ordered_dict"] > 0
    for p in out["policies"].values():     # a rate per wall second, and its CPU-time twin: never mixed
        assert p["lookups_per_second"] == pytest.approx(20000 / p["seconds"])
        assert p["lookups_per_cpu_second"] == pytest.approx(20000 / p["cpu_seconds"])
    assert out["ratio_none_vs_ordered_dict"] == pytest.approx(
        out["policies"]["none"]["lookups_per_second"] / out["ordered_dict_lru"]["lookups_per_second"])


def test_zipf_trace_deterministic_and_skewed():
    a = cache.zipf_trace(1000, 5000, 0.9, seed=1)
    assert np.array_equal(a, cache.zipf_trace(1000, 5000, 0.9, seed=1))
    assert a.min() >= 0 and a.max() < 1000
    counts = np.sort(np.bincount(a, minlength=1000))[::-1]
    assert counts[0] > 10 * np.median(counts)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40), st.integers(1, 64),
       st.lists(st.floats(0.0, 1.0, exclude_max=True), min_size=1, max_size=60))
def test_bucketed_searchsorted_equals_numpy(cdf_points, n_buckets, queries):
    cdf = np.sort(np.array(cdf_points))
    u = np.concatenate([np.array(queries), cdf[cdf < 1.0]])   # values equal to cdf entries too
    assert np.array_equal(K.searchsorted_right(cdf, u, n_buckets), np.searchsorted(cdf, u, side="right"))


# --------------------------------------------------------------------------- CLI

def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "impls.bandana.cache", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)


def test_cli_json(tmp_path):
    rng = np.random.default_rng(7)
    layout = rng.permutation(64).astype(np.int64)
    trace = rng.integers(0, 64, 500).astype(np.int64)
    np.save(tmp_path / "t.npy", trace)
    np.save(tmp_path / "p.npy", layout)
    for policy, extra in [("prefetch", []), ("shadow", ["--shadow", 24])]:
        proc = run_cli("--trace", tmp_path / "t.npy", "--layout", tmp_path / "p.npy",
                       "--capacity", 16, "--policy", policy, *extra,
                       "--vector-bytes", 64, "--block-bytes", 256, "--json")
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        sizes = {"policy": policy, "capacity": 16, **({"shadow": 24} if policy == "shadow" else {}),
                 "vector_bytes": 64, "block_bytes": 256}
        assert list(out) == [*sizes, *COUNTERS, "hit_rate"]   # the sizes it ran with, then the counters
        result = simulate(trace, layout, 16, policy, 24, 64, 256)
        assert out == {**sizes, **result.to_dict(), "hit_rate": result.hits / 500}


def test_cli_table_and_defaults(tmp_path):
    np.save(tmp_path / "t.npy", np.arange(100, dtype=np.int64))
    np.save(tmp_path / "p.npy", np.arange(100, dtype=np.int64))
    proc = run_cli("--trace", tmp_path / "t.npy", "--layout", tmp_path / "p.npy",
                   "--capacity", 32, "--policy", "prefetch")
    assert proc.returncode == 0, proc.stderr
    assert "effective_bandwidth" in proc.stdout and "hit_rate" in proc.stdout
    rows = dict(line.split(None, 1) for line in proc.stdout.splitlines())
    assert rows["blocks_read"] == "4"          # 100 vectors in 32-vector blocks, read once each
    assert rows["policy"] == "prefetch"


@pytest.mark.parametrize("case, message", [
    ("bad_id", "trace[1] = 99 is not a vector id: ids must be in [0, 8) (the layout has 8 vectors), --trace "),
    ("not_permutation", "repeats layout[0], --layout "),
    ("missing_file", "cannot read"),
    ("float_trace", "expected a 1-D integer array"),
    ("no_shadow", "--policy shadow without it, --shadow, expected the shadow set's size, at least --capacity 32"),
    ("small_shadow", "got 8, --shadow, expected the shadow set's size, at least --capacity 32"),
    ("stray_shadow", "got 64 with --policy prefetch, --shadow, expected only with --policy shadow"),
    ("small_cache", "got 4, --capacity, expected at least one block's 32 vectors (--block-bytes // --vector-bytes)"),
    ("vector_over_block", "got 8192, --vector-bytes, expected an integer in [1, 4096]"),
    ("huge_block", "got 4294967296, --block-bytes, expected an integer in [1, 67108864]"),
    ("full_json", "cannot write /dev/full (No space left on device), --json"),
    ("empty_trace", "no lookups, --trace "),
    ("empty_layout", "no vectors, --layout "),
])
def test_cli_errors_exit_2(tmp_path, case, message):
    t, p = tmp_path / "t.npy", tmp_path / "p.npy"
    np.save(t, np.array([0, 1, 2], dtype=np.int64))
    np.save(p, np.arange(8, dtype=np.int64))
    args = ["--trace", t, "--layout", p, "--capacity", 32, "--policy", "prefetch", "--json"]
    if case == "bad_id":
        np.save(t, np.array([0, 99], dtype=np.int64))
    elif case == "not_permutation":
        np.save(p, np.zeros(8, dtype=np.int64))
    elif case == "missing_file":
        args[1] = tmp_path / "nope.npy"
    elif case == "float_trace":
        np.save(t, np.array([0.5]))
    elif case == "no_shadow":
        args[7] = "shadow"
    elif case == "small_shadow":
        args[7] = "shadow"
        args += ["--shadow", 8]
    elif case == "stray_shadow":
        args += ["--shadow", 64]
    elif case == "small_cache":
        args[5] = 4
    elif case == "vector_over_block":
        args += ["--vector-bytes", 8192]
    elif case == "huge_block":
        args += ["--block-bytes", 2**32]
    elif case == "empty_trace":
        np.save(t, np.zeros(0, dtype=np.int64))
    elif case == "empty_layout":
        np.save(p, np.zeros(0, dtype=np.int64))
        np.save(t, np.zeros(0, dtype=np.int64))
    elif case == "full_json":
        if not Path("/dev/full").exists():
            pytest.skip("no /dev/full here")
        args += ["/dev/full"]
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == ""


def test_a_layout_no_summary_vouches_for_says_which_geometry_it_assumes(tmp_path):
    np.save(tmp_path / "t.npy", np.arange(100, dtype=np.int64))
    np.save(tmp_path / "p.npy", np.arange(100, dtype=np.int64))
    base = ["--trace", tmp_path / "t.npy", "--layout", tmp_path / "p.npy", "--capacity", 32, "--policy", "prefetch"]
    proc = run_cli(*base, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "no summary.json beside it records the geometry" in proc.stderr
    assert "default --vector-bytes 128 and --block-bytes 4096 are assumed" in proc.stderr
    assert json.loads(proc.stdout)["vector_bytes"] == 128
    given = run_cli(*base, "--vector-bytes", 128, "--block-bytes", 4096, "--json")   # typed: no warning
    assert given.returncode == 0 and given.stderr == "" and given.stdout == proc.stdout
    missing = run_cli("--trace", tmp_path / "t.npy", "--layout", tmp_path / "nope.npy", "--capacity", 32,
                      "--policy", "prefetch")
    assert missing.returncode == 2 and "warning" not in missing.stderr       # the error alone


def test_a_vector_that_does_not_divide_a_block_leaves_slack_at_its_end():
    """400-byte vectors (dim 100, float32) in 4 KB blocks: 10 a block, 96 bytes unused; the
    counters are those of 10-vector blocks, and the effective bandwidth counts the slack as read."""
    rng = np.random.default_rng(3)
    layout = rng.permutation(500)
    trace = rng.integers(0, 500, 3000)
    for policy in cache.POLICIES:
        odd = simulate(trace, layout, 40, policy, 120, 400, 4096)
        even = simulate(trace, layout, 40, policy, 120, 1, 10)
        assert (odd.hits, odd.blocks_read, odd.prefetched, odd.prefetch_used) == \
            (even.hits, even.blocks_read, even.prefetched, even.prefetch_used)
        assert odd.bytes_read == 4096 * odd.blocks_read
        assert odd.effective_bandwidth == pytest.approx(even.effective_bandwidth * 4000 / 4096)


def test_cli_unknown_policy_exit_2(tmp_path):
    proc = run_cli("--trace", "x", "--layout", "y", "--capacity", 1, "--policy", "lru")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


@pytest.mark.parametrize("policy", cache.POLICIES)
def test_log_compaction_keeps_lru_order(policy):
    """Long, hit-heavy traces fill the LRU logs with holes many times over."""
    from impls.bandana.sim import cache_kernels as K
    rng = np.random.default_rng(11)
    layout = rng.permutation(96)
    weights = np.arange(1, 97, dtype=float) ** -2.0
    trace = rng.choice(96, size=20000, p=weights / weights.sum())
    state = CacheState(layout, 12, policy, 20, 1, 4)
    state.process(trace)
    assert state.counters[K.C_COMPACTIONS] >= 5
    ref = simulate_reference(trace, layout, 12, policy, 20, 1, 4)
    assert counters(state.result()) == counters(ref)
    assert state.cached_ids().tolist() == ref["cache_order"]
    assert state.shadow_ids().tolist() == (ref["shadow_order"] if policy == "shadow" else [])
