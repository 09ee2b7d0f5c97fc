"""XCData: one extreme-classification split as CSR features + CSR labels, and where it comes from.

A split is the arrays ``indptr, indices, values`` (features, float32 values) and
``label_indptr, labels``, plus ``n_features`` / ``n_labels``. Registry datasets store
two splits in one dict with ``train_`` / ``test_`` prefixes and a ``shape`` array
``[n_features, n_labels]``.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

FIELDS = ("indptr", "indices", "values", "label_indptr", "labels")


@dataclasses.dataclass(frozen=True)
class XCData:
    indptr: np.ndarray        # int64 (n+1)
    indices: np.ndarray       # int32 (nnz)
    values: np.ndarray        # float32 (nnz)
    label_indptr: np.ndarray  # int64 (n+1)
    labels: np.ndarray        # int32 (n_label_entries)
    n_features: int
    n_labels: int

    def __post_init__(self):
        for name, dtype in (("indptr", np.int64), ("indices", np.int32), ("values", np.float32),
                            ("label_indptr", np.int64), ("labels", np.int32)):
            object.__setattr__(self, name, np.ascontiguousarray(getattr(self, name), dtype=dtype))
        if self.indptr.shape != self.label_indptr.shape:
            raise ValueError(f"features have {self.indptr.size - 1} rows, labels {self.label_indptr.size - 1}")

    @property
    def n_points(self) -> int:
        return self.indptr.shape[0] - 1

    def to_arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        out = {prefix + f: getattr(self, f) for f in FIELDS}
        out[prefix + "shape"] = np.array([self.n_features, self.n_labels], np.int64)
        return out

    @classmethod
    def from_arrays(cls, arrays, prefix: str = "") -> "XCData":
        shape = np.asarray(arrays.get(prefix + "shape", arrays.get("shape")))
        return cls(*(arrays[prefix + f] for f in FIELDS), int(shape[0]), int(shape[1]))

    def subset(self, rows: np.ndarray) -> "XCData":
        """Return the points ``rows`` (in that order) as a new split."""
        rows = np.asarray(rows, np.int64)
        def take(indptr, data):
            lengths = indptr[rows + 1] - indptr[rows]
            new_ptr = np.zeros(rows.size + 1, np.int64)
            np.cumsum(lengths, out=new_ptr[1:])
            starts = np.repeat(indptr[rows] - new_ptr[:-1], lengths)
            return new_ptr, data[starts + np.arange(new_ptr[-1])]
        ip, ix = take(self.indptr, self.indices)
        _, vals = take(self.indptr, self.values)
        lp, lab = take(self.label_indptr, self.labels)
        return XCData(ip, ix, vals, lp, lab, self.n_features, self.n_labels)

    def label_counts(self) -> np.ndarray:
        return np.bincount(self.labels, minlength=self.n_labels)

    def stats(self) -> dict:
        n = max(self.n_points, 1)
        counts = self.label_counts()
        return {
            "points": self.n_points, "features": self.n_features, "labels": self.n_labels,
            "nnz_per_point": self.indices.size / n,
            "labels_per_point": self.labels.size / n,
            "occurrences_per_label": self.labels.size / max(self.n_labels, 1),
            "labels_seen": int(np.count_nonzero(counts)),
        }


def from_registry(name: str, profile: str | None = None) -> tuple[XCData, XCData, dict]:
    """Return (train, test, info) for registry dataset ``name`` (``datasets/<name>.toml``)."""
    from impls.harness import registry

    ds = registry.load(name, profile)
    info = {"dataset": name, "synthetic": ds.synthetic, "sha256": ds.sha256,
            "params": ds.params, "cache": str(ds.cache_path)}
    return XCData.from_arrays(ds.arrays, "train_"), XCData.from_arrays(ds.arrays, "test_"), info


def from_file(path: str | Path, **reader_kwargs) -> XCData:
    """Return the split in XC text file ``path`` (parsed once, then from its .npz cache)."""
    from impls.slide.xc_format import read_xc_cached

    return XCData.from_arrays(read_xc_cached(path, **reader_kwargs))
