"""A table's size on the device: the row size a ``--vectors`` dtype wider than float32 gives."""
from __future__ import annotations

import json

import numpy as np

from impls.bandana import prepare


def _trace(tmp_path, ids=5000, queries=400):
    rng = np.random.default_rng(0)
    offsets = np.arange(queries + 1, dtype=np.int64) * 5
    np.save(tmp_path / "o.npy", offsets)
    np.save(tmp_path / "i.npy", rng.integers(0, ids, int(offsets[-1])).astype(np.int64))
    return ["--offsets", str(tmp_path / "o.npy"), "--indices", str(tmp_path / "i.npy")]


def test_float64_vectors_get_a_note_naming_the_vector_bytes_of_float32_and_float16(tmp_path, capsys):
    args = _trace(tmp_path)
    vectors = np.random.default_rng(1).normal(size=(5000, 8))          # numpy's default float64
    np.save(tmp_path / "v64.npy", vectors)
    code = prepare.main([*args, "--vectors", str(tmp_path / "v64.npy"), "--layout", "identity",
                         "--out", str(tmp_path / "out"), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["vectors_per_block"] == 64                 # stdout stays the JSON alone
    assert ("note: the device row size is taken from the vectors' dtype, float64: 8 x 8 = 64 B, 64 to a "
            "4096-B block; if the device holds float32 or float16 rows, give --vector-bytes 32 or "
            "--vector-bytes 16") in err, err
    np.save(tmp_path / "v32.npy", vectors.astype(np.float32))
    for extra in (["--vectors", str(tmp_path / "v32.npy")],                       # the row size is float32's
                  ["--vectors", str(tmp_path / "v64.npy"), "--vector-bytes", "32"]):  # or given
        assert prepare.main([*args, *extra, "--layout", "identity", "--out", str(tmp_path / "out")]) == 0
        assert "note:" not in capsys.readouterr().err
