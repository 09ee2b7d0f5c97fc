"""python -m impls.bandana.headline: the report's Bandana headline measured on a user's trace."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from impls.bandana import headline
from impls.bandana.experiments import simulation

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DLSYSBENCH_DASK_SCHEDULER": "serial", "DLSYSBENCH_GRID_RESULTS": str(tmp_path / "grid")}
    return subprocess.run([sys.executable, "-m", "impls.bandana.headline", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def _trace(tmp_path: Path, groups: np.ndarray | None, n: int = 6400, queries: int = 4000, seed: int = 0,
           vectors: bool = False) -> list[str]:
    """--offsets/--indices (and --vectors) files of ``queries`` queries of 8 lookups over ``n``
    vectors: each query draws its ids from one group of ``groups`` (rows: groups of ids) when
    given, else uniformly from the table."""
    rng = np.random.default_rng(seed)
    if groups is None:
        indices = rng.integers(0, n, size=(queries, 8))
    else:
        picked = rng.integers(0, len(groups), size=queries)
        indices = np.stack([rng.choice(groups[g], size=8) for g in picked])
    offsets = np.arange(queries + 1, dtype=np.int64) * 8
    np.save(tmp_path / "o.npy", offsets)
    np.save(tmp_path / "i.npy", indices.reshape(-1).astype(np.int64))
    args = ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy")]
    if vectors:
        np.save(tmp_path / "v.npy", rng.normal(size=(n, 8)).astype(np.float32))
        args += ["--vectors", str(tmp_path / "v.npy"), "--num-vectors", str(n)]
    return args


def _result(run: subprocess.CompletedProcess) -> dict:
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_a_registry_trace_gives_the_suites_own_headline(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    monkeypatch.setenv("DLSYSBENCH_GRID_RESULTS", str(tmp_path / "grid"))
    suite = simulation.layout_policy_experiment(dict(simulation.sizes("smoke"), tables=["bandana-user"]),
                                                progress=False)["tables"]["bandana-user"]["headline"]
    got = _result(_run("--dataset", "bandana-user", "--profile", "smoke", "--json", tmp_path=tmp_path))
    assert got["headline"]["ratio"] == pytest.approx(suite["ratio"], rel=1e-12)
    assert got["headline"]["best"] == suite["best"]
    assert got["notes"] == []
    assert got["verdict"] == headline.verdict(suite["ratio"])[0]


def test_planted_co_access_shows_a_gain_and_none_without_it(tmp_path):
    """Queries that each read one scattered group of 32 ids: SHP packs the groups and the
    gain is large; ids drawn uniformly: no layout can pack anything and the gain is ~1."""
    n = 6400
    groups = np.random.default_rng(1).permutation(n).reshape(-1, 32)   # scattered over the id space
    planted = _result(_run(*_trace(tmp_path, groups), "--profile", "smoke", "--json", tmp_path=tmp_path))
    uniform = _result(_run(*_trace(tmp_path, None), "--profile", "smoke", "--json", tmp_path=tmp_path))
    assert planted["headline"]["ratio"] > 3.0, planted["headline"]
    assert uniform["headline"]["ratio"] < 1.3, uniform["headline"]
    assert planted["headline"]["best"]["layout"] == "shp"
    for result in (planted, uniform):   # no vector values: no K-means layout, and the output says so
        assert not any(k.startswith("kmeans") for k in result["layouts"])
        assert any("no vector values" in note for note in result["notes"]), result["notes"]


def test_the_printed_lines_name_the_choice_the_ratio_and_the_paper(tmp_path):
    groups = np.random.default_rng(2).permutation(6400).reshape(-1, 32)
    run = _run(*_trace(tmp_path, groups), "--profile", "smoke", tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "identity/none" in out and "(baseline)" in out and "(chosen on the training trace)" in out
    assert "headline: shp/" in out and "over identity/none = " in out
    assert "paper: 2-3x (claim bandana-effective-bandwidth-gain): " in out
    assert "hold no lookup" not in out


def test_empty_queries_are_counted_apart(tmp_path):
    groups = np.random.default_rng(5).permutation(6400).reshape(-1, 32)
    _trace(tmp_path, groups)
    offsets = np.load(tmp_path / "o.npy")
    np.save(tmp_path / "o.npy", np.concatenate([offsets[:1], offsets[:1], offsets[1:]]))   # one empty query first
    run = _run("--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--profile", "smoke",
               tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "(1 of the queries hold no lookup)" in run.stdout


def test_two_level_kmeans_is_cut_to_a_small_tables_blocks(tmp_path):
    """640 vectors are 20 blocks: smoke's 16 clusters x 32 sub-clusters would make 512 groups."""
    groups = np.random.default_rng(3).permutation(640).reshape(-1, 32)
    got = _result(_run(*_trace(tmp_path, groups, n=640, queries=1000, vectors=True), "--profile", "smoke",
                       "--json", tmp_path=tmp_path))
    assert "kmeans-two-level" in got["layouts"]
    assert any(note.startswith("kmeans-two-level: 16 clusters x 1 sub-clusters for 20 blocks")
               for note in got["notes"]), got["notes"]
    # 8 float32 values a row, 32 B: the headline's 128-B geometry is said, with the flags for its own
    assert ("the vectors' rows are 32 B (8 x float32); the headline packs the suite's 128-B vectors, 32 to a 4 KB "
            "block, whatever their width: python -m impls.bandana.prepare --vector-bytes 32") in " ".join(got["notes"])


def test_a_dlrm_file_table_reads_as_the_same_trace_in_arrays(tmp_path):
    torch = pytest.importorskip("torch")
    batch = 2000
    lengths = torch.stack([torch.ones(batch, dtype=torch.int64), torch.full((batch,), 4, dtype=torch.int64)])
    offsets = torch.zeros(2 * batch + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths.reshape(-1), 0)
    rng = np.random.default_rng(4)
    groups = rng.permutation(3200).reshape(-1, 32) * 1000 + 7            # sparse ids: --renumber
    ids = np.stack([rng.choice(groups[g], size=4) for g in rng.integers(0, len(groups), size=batch)])
    indices = torch.cat([torch.arange(batch) % 5, torch.as_tensor(ids.reshape(-1))])
    buffer = io.BytesIO()
    torch.save((indices, offsets, lengths), buffer)
    (tmp_path / "t.pt").write_bytes(buffer.getvalue())
    got = _result(_run("--dlrm", str(tmp_path / "t.pt"), "--table", "1", "--renumber", "--profile", "smoke",
                       "--json", tmp_path=tmp_path))
    assert got["source"] == f"dlrm_datasets file {tmp_path / 't.pt'}, table 1"
    assert got["test_queries"] == batch // 2 and got["test_lookups"] == 4 * batch // 2
    np.save(tmp_path / "o.npy", np.arange(batch + 1, dtype=np.int64) * 4)
    np.save(tmp_path / "i.npy", ids.reshape(-1))
    same = _result(_run("--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--renumber",
                        "--profile", "smoke", "--json", tmp_path=tmp_path))
    assert got["headline"] == same["headline"] and got["verdict"] == same["verdict"]
    assert got["headline"]["ratio"] > 1.1       # groups of 32 read 4 at a time: some locality to find


def test_a_trace_whose_later_half_is_empty_is_one_line(tmp_path):
    np.save(tmp_path / "o.npy", np.array([0, 5, 10, 10, 10], dtype=np.int64))
    np.save(tmp_path / "i.npy", np.arange(10, dtype=np.int64))
    run = _run("--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--profile", "smoke",
               tmp_path=tmp_path)
    assert run.returncode == 2
    assert "the later 50% of the 4 queries hold no lookup: nothing to measure on" in run.stderr
    assert "Traceback" not in run.stderr


def test_two_traces_are_refused_as_prepare_refuses_them(tmp_path):
    run = _run("--dataset", "bandana-user", "--dlrm", str(tmp_path / "t.pt"), tmp_path=tmp_path)
    assert run.returncode == 2
    assert "give exactly one trace" in run.stderr


def test_a_table_the_cache_holds_whole_is_said(tmp_path):
    """10 vectors: the cache's floor of one block (32 vectors) holds them all."""
    np.save(tmp_path / "o.npy", np.arange(201, dtype=np.int64) * 3)
    np.save(tmp_path / "i.npy", np.arange(600, dtype=np.int64) % 10)
    got = _result(_run("--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--profile",
                       "smoke", "--json", tmp_path=tmp_path))
    assert any(note.startswith("the cache (32 vectors, at least one block) holds the whole table of 10")
               for note in got["notes"]), got["notes"]


def test_only_prepare_promises_the_renumbered_ids_file():
    """headline shares prepare's trace flags but writes no original_ids.npy: its --help must
    not say it does."""
    from impls.bandana import headline, prepare

    assert "original_ids.npy" in prepare._parser().format_help()
    assert "original_ids.npy" not in headline._parser().format_help()


def test_ids_numbered_so_a_query_reads_neighbours_are_not_the_layouts_gain(tmp_path):
    """Each query reads ids within 64 consecutive ones (items numbered by catalogue): prefetch
    on the ids as numbered reads at least as well as any trained layout, so the ratio over
    identity/none is not the layout's gain and is not judged; scattering the same groups over
    the id space (a random numbering) makes the trained layout's gain its own again."""
    rng = np.random.default_rng(2)
    n, queries = 6400, 4000
    starts = rng.integers(0, n - 64, size=queries)
    indices = (starts[:, None] + rng.integers(0, 64, size=(queries, 8))).astype(np.int64)
    np.save(tmp_path / "o.npy", np.arange(queries + 1, dtype=np.int64) * 8)
    np.save(tmp_path / "i.npy", indices.reshape(-1))
    args = ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy"), "--profile", "smoke"]
    got = _result(_run(*args, "--json", tmp_path=tmp_path))
    head = got["headline"]
    order = next(p for p in head["points"] if (p["layout"], p["policy"]) == ("identity", head["best"]["policy"]))
    assert head["input_order"]["effective_bandwidth"] == order["effective_bandwidth"]
    assert head["gain_over_input_order"] == pytest.approx(head["best"]["effective_bandwidth"]
                                                          / order["effective_bandwidth"], rel=1e-12)
    assert head["gain_over_input_order"] <= 1 < head["ratio"], head
    assert got["verdict"] == headline.NOT_JUDGED and got["not_judged"].startswith("the ids' own order")
    printed = _run(*args, tmp_path=tmp_path).stdout
    assert "the layout's own gain: " in printed and "(the ids as numbered, same policy)" in printed
    assert f": {headline.NOT_JUDGED} on this trace (the ids as numbered read at least as well" in printed

    relabel = rng.permutation(n)               # the same co-access, ids numbered at random
    np.save(tmp_path / "i.npy", relabel[indices.reshape(-1)])
    scattered = _result(_run(*args, "--json", tmp_path=tmp_path))
    assert scattered["headline"]["gain_over_input_order"] > 1.5, scattered["headline"]
    assert scattered["not_judged"] is None and scattered["verdict"] != headline.NOT_JUDGED


def _point(layout, policy, bandwidth):
    return {"layout": layout, "policy": policy, "effective_bandwidth": bandwidth}


@pytest.mark.parametrize("policy", ["prefetch", "lowpri", "shadow"])
def test_the_own_order_rule_reads_the_chosen_policy_and_needs_locality_over_a_random_order(policy):
    """Not judged only where the ids as numbered, read with the chosen policy, read at least
    as well as the chosen layout and clearly better than a random order read the same way: a
    trace without locality reads alike in every order (chance decides which is ahead), and
    its low ratio is the verdict's to judge."""
    other = "prefetch" if policy != "prefetch" else "shadow"

    def reason(chosen, identity, random, distractor=0.5):
        points = [_point("identity", policy, identity), _point("random", policy, random),
                  _point("identity", other, distractor), _point("random", other, 0.01)]
        head = {"best": _point("shp", policy, chosen), "input_order": _point("identity", policy, identity)}
        return headline.input_order_reason(head, points)

    said = reason(chosen=0.099, identity=0.193, random=0.033)
    assert said.startswith("the ids' own order (identity/" + policy) and "5.85x a random order" in said
    assert reason(chosen=0.0329, identity=0.0329, random=0.0328) is None      # no locality anywhere
    assert reason(chosen=0.0330, identity=0.0329, random=0.0200) is None      # the layout adds to the order
    assert reason(chosen=0.0329, identity=0.0329, random=0.0300) is None      # within 1.1x of random


def test_the_input_order_is_identity_with_the_policy_chosen_not_always_prefetch(monkeypatch):
    """``input_order`` is the identity point with the chosen configuration's policy, whichever
    policy the training trace chose."""
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    chosen = {}
    real = simulation._chosen_on_train

    def choose_shadow(table, built, candidates, s, name, progress):
        pick, scores = real(table, built, candidates, s, name, progress)
        chosen["it"] = next(c for c in candidates if c["policy"] == "shadow")
        return chosen["it"], scores

    monkeypatch.setattr(simulation, "_chosen_on_train", choose_shadow)
    head = simulation.layout_policy_experiment(dict(simulation.sizes("smoke"), tables=["bandana-user"]),
                                               progress=False, side_studies=False)["tables"]["bandana-user"]
    at = [p for p in head["points"] if p["cache_fraction"] == head["headline"]["cache_fraction"]]
    identity_shadow = next(p for p in at if (p["layout"], p["policy"]) == ("identity", "shadow"))
    assert head["headline"]["input_order"] == {"layout": "identity", "policy": "shadow",
                                               "effective_bandwidth": identity_shadow["effective_bandwidth"]}
    assert head["headline"]["gain_over_input_order"] == pytest.approx(
        chosen["it"]["effective_bandwidth"] / identity_shadow["effective_bandwidth"], rel=1e-12)
