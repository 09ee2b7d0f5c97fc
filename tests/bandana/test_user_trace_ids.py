"""Ids of a user's own trace that would silently change a result: a base offset, float ids
past their type's exact range, -1 (a pruned row or padding), bag lengths given as offsets."""
from __future__ import annotations

import io

import numpy as np
import pytest

from impls.bandana import headline, prepare
from impls.bandana.data import dlrm_loader, traces


def _files(tmp_path, indices, queries: int | None = None):
    indices = np.asarray(indices)
    queries = queries or indices.size // 4
    np.save(tmp_path / "o.npy", np.arange(queries + 1, dtype=np.int64) * (indices.size // queries))
    np.save(tmp_path / "i.npy", indices)
    return ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy")]


def _prepare(tmp_path, args, capsys):
    code = prepare.main([*args, "--layout", "identity", "--out", str(tmp_path / "out")])
    return code, capsys.readouterr().err


def test_ids_with_a_base_offset_are_warned_of_and_ids_from_0_are_not(tmp_path, capsys):
    ids = np.random.default_rng(0).integers(0, 1000, size=4000)
    code, err = _prepare(tmp_path, _files(tmp_path, ids), capsys)
    assert code == 0 and "smallest id" not in err
    code, err = _prepare(tmp_path, _files(tmp_path, ids + 3000), capsys)
    assert code == 0
    low = int(ids.min()) + 3000
    assert f"the smallest id is {low}, so rows 0..{low - 1}" in err and "--renumber" in err, err


def test_a_headline_cache_near_the_working_set_gets_a_note(tmp_path, monkeypatch):
    """The same 1,000 ids over a table 4x larger (a base offset of 3,000): the cache, a fraction
    of the table, then has room for most of the ids the trace reads, and the notes say so."""
    monkeypatch.setenv("DLSYSBENCH_DASK_SCHEDULER", "serial")
    monkeypatch.setenv("DLSYSBENCH_GRID_RESULTS", str(tmp_path / "grid"))
    rng = np.random.default_rng(1)
    ids = rng.permutation(1000).reshape(-1, 8)[rng.integers(0, 125, size=4000)].reshape(-1)
    offsets = np.arange(4001, dtype=np.int64) * 8

    def notes(shift: int, n: int) -> list[str]:
        source = {"offsets": offsets, "indices": ids + shift, "vectors": None, "num_vectors": n, "source": "t"}
        return headline.measure(source, "smoke", progress=False)["notes"]

    assert not any("working set" in note for note in notes(0, 1000))
    fraction = headline.experiment_sizes("smoke", 40_000, False)[0]["headline_cache_fraction"]
    n = int(1000 / fraction * 0.6)               # a cache of 0.6 x 1,000 slots: judged, yet near the working set
    shifted = notes(n - 1000, n)
    assert any("a cache near the trace's working set" in note for note in shifted), shifted


def test_float_ids_past_the_exact_range_are_not_called_safe_to_cast():
    past = np.array([2 ** 25, 2 ** 25 + 2], dtype=np.float32)
    with pytest.raises(traces.TraceError) as err:
        traces.validate_trace(np.array([0, 2]), past)
    assert "beyond 2^24 = 16777216" in str(err.value) and ".astype(np.int64)" not in str(err.value)
    with pytest.raises(traces.TraceError) as err:
        traces.validate_trace(np.array([0, 2]), np.array([3.0, 5.0], dtype=np.float32))
    assert ".astype(np.int64) them" in str(err.value)


def test_minus_one_ids_are_named_as_pruned_rows_not_sent_to_renumber(tmp_path, capsys):
    ids = np.arange(400, dtype=np.int64) % 50
    ids[7] = ids[90] = -1
    code, err = _prepare(tmp_path, _files(tmp_path, ids), capsys)
    assert code == 2
    assert "2 lookups of id -1, the usual id of a pruned row or of padding" in err, err
    code, err = _prepare(tmp_path, [*_files(tmp_path, ids), "--renumber"], capsys)
    assert code == 0
    assert "--renumber made id -1 a row of its own, read by 2 of the 400 lookups" in err, err
    ids[7] = -5                                   # other negative ids: signed hashes, --renumber is the advice
    code, err = _prepare(tmp_path, _files(tmp_path, ids), capsys)
    assert code == 2 and "--renumber numbers hashed or signed ids densely" in err and "pruned" not in err


def test_a_dlrm_table_with_minus_one_says_what_it_is(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    batch = 100
    lengths = torch.full((1, batch), 2, dtype=torch.int64)
    offsets = torch.arange(batch + 1, dtype=torch.int64) * 2
    indices = torch.arange(2 * batch, dtype=torch.int64) % 40
    indices[3] = -1
    buffer = io.BytesIO()
    torch.save((indices, offsets, lengths), buffer)
    (tmp_path / "t.pt").write_bytes(buffer.getvalue())
    with pytest.raises(dlrm_loader.DlrmFormatError, match="1 lookups of id -1, the usual id of a pruned row"):
        dlrm_loader.load_dlrm_table(tmp_path / "t.pt", 0)
    code = prepare.main(["--dlrm", str(tmp_path / "t.pt"), "--table", "0", "--renumber", "--layout", "identity",
                         "--out", str(tmp_path / "out")])
    assert code == 0
    assert "--renumber made id -1 a row of its own, read by 1 of the 200 lookups" in capsys.readouterr().err


def test_bag_lengths_given_as_offsets_get_the_hint_when_the_first_bag_is_empty():
    lengths = np.array([0, 3, 2, 1])
    with pytest.raises(traces.TraceError, match="bag lengths"):
        traces.validate_trace(lengths, np.arange(6))


def test_the_replay_warm_up_reads_lookups_even_after_empty_queries():
    from impls.bandana import replay

    assert replay.warm_up_queries(np.array([0, 0, 20000])) == 2          # the probe's trace: one empty query first
    assert replay.warm_up_queries(np.array([0, 0, 0, 5])) == 3
    big = np.arange(0, 40001, 8)
    q = replay.warm_up_queries(big)
    assert big[q] == replay.WARM_UP_LOOKUPS and big[q - 1] < replay.WARM_UP_LOOKUPS
    assert replay.warm_up_queries(np.array([0, 0])) == 1                 # no lookup anywhere: one (empty) query
