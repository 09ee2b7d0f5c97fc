"""XCData: one extreme-classification split as CSR features + CSR labels, and where it comes from.

Where: a registry dataset (synthetic recipe, or an [external] real set), an XC text file,
or a pair of real XC files whose headers must have the published shape of Amazon-670K
or Delicious-200K (:func:`real_pair`, :func:`read_real_pair`; ``info["real"]`` and the
files' sha256 label every figure drawn from them).

A split is the arrays ``indptr, indices, values`` (features, float32 values) and
``label_indptr, labels``, plus ``n_features`` / ``n_labels``. Registry datasets store
two splits in one dict with ``train_`` / ``test_`` prefixes and a ``shape`` array
``[n_features, n_labels]``.
"""
from __future__ import annotations

import dataclasses
import functools
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

    @functools.cached_property
    def repeats_labels(self) -> bool:
        """Whether some point lists one label more than once (computed once, by the CSR repeat
        count the parser's feature check uses)."""
        from impls.slide.data.xc_format import repeated_feature_points

        return repeated_feature_points(self.label_indptr, self.labels) > 0

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

    def labelled_rows(self) -> np.ndarray:
        """The rows (int64, ascending) of the points that have at least one label."""
        return np.flatnonzero(np.diff(self.label_indptr) > 0)

    def stats(self) -> dict:
        """Counts and means of the split as stored: ``nnz_per_point`` is stored feature entries
        per point (a feature repeated within a line counts each time, as the network sums
        them; ``xc_stats`` merges repeats, so its figure can be lower on such a file);
        ``median_row_norm``: :func:`~impls.slide.data.xc_format.median_row_norm`."""
        from impls.slide.data.xc_format import median_row_norm

        n = max(self.n_points, 1)
        counts = self.label_counts()
        return {
            "points": self.n_points, "features": self.n_features, "labels": self.n_labels,
            "nnz_per_point": self.indices.size / n,
            "labels_per_point": self.labels.size / n,
            "occurrences_per_label": self.labels.size / max(self.n_labels, 1),
            "labels_seen": int(np.count_nonzero(counts)),
            "unlabelled_points": int(self.n_points - self.labelled_rows().size),
            "median_row_norm": median_row_norm(self),
        }


def trainable_rows(train: XCData, test: XCData) -> np.ndarray | None:
    """The training rows to draw batches from: every labelled point, or None when that is all
    of them. A point without labels has no target (its softmax gradient only pushes every
    logit down, without bound), so it is left out of training, as XC training does; on the
    test side such a point stays and counts as a miss. Raises ValueError when the splits'
    shapes differ, no training point has a feature, or no training point, or no test point,
    has a label (P@k would be 0 by construction)."""
    if (train.n_features, train.n_labels) != (test.n_features, test.n_labels):
        raise ValueError(f"train and test splits have different shapes: train has {train.n_features} features "
                         f"and {train.n_labels} labels, test {test.n_features} and {test.n_labels}")
    rows = train.labelled_rows()
    if rows.size == 0:
        raise ValueError(f"no training point has a label ({train.n_points} points): nothing to train on")
    if train.indices.size == 0:
        raise ValueError(f"no training point has a feature ({train.n_points} points): every input is zero, so "
                         "a model can learn only the labels' popularity (were the features left out when the "
                         "file was written?)")
    if test.labelled_rows().size == 0:
        raise ValueError(f"no test point has a label ({test.n_points} points): nothing to evaluate on")
    return None if rows.size == train.n_points else rows


def batch_for(batch: int, train: XCData, rows: np.ndarray | None) -> int:
    """``batch``, cut to the number of trainable points (``rows`` from :func:`trainable_rows`;
    None: all of ``train``): a batch is at most every point once, and the trainers size
    their buffers by it."""
    return min(int(batch), train.n_points if rows is None else int(rows.size))


def xc_datasets() -> list[str]:
    """The names of the registry's extreme-classification sets: those whose generator or
    loader is this package's, sorted."""
    from impls.harness import registry

    return registry.made_by("impls.slide.data.")


def raise_if_broken(name: str) -> None:
    """Raise the manifest's own error (:class:`~impls.harness.registry.ManifestError`, file and
    line) when registry dataset ``name``'s manifest is broken; nothing otherwise (the broken
    one is no set :func:`xc_datasets` lists, so without this its name reads as unknown)."""
    from impls.harness import registry

    broken = registry.manifests().broken
    if name in broken:
        raise broken[name]


def from_registry(name: str, profile: str | None = None) -> tuple[XCData, XCData, dict]:
    """Return (train, test, info) for registry dataset ``name`` (``datasets/<name>.toml``);
    raises KeyError for a name that is not an extreme-classification set, before any data
    is made, and the manifest's own error (file and line) for one whose manifest is broken."""
    from impls.harness import registry

    raise_if_broken(name)
    known = xc_datasets()
    if name not in known:
        raise KeyError(f"{name!r} is not an extreme-classification dataset; expected one of {', '.join(known)}")
    ds = registry.load(name, profile)
    info = {"dataset": name, "synthetic": ds.synthetic, "real": not ds.synthetic, "sha256": ds.sha256,
            "params": ds.params, "cache": str(ds.cache_path)}
    if not ds.synthetic:  # checksums of the real files themselves, not of the parsed cache
        info["sha256"] = ds.params.get("source_sha256")
        info["like"] = REAL_SETS.get(name) or (claimed_real_set(ds.params["source"]) if ds.params.get("source") else None)
        if info["like"]:      # never the suite's own synthetic set (a parsed cache may predate that check)
            from impls.slide.data.own_synthetic import refuse_own
            refuse_own(info["like"], ds.params["source"])
        if "test_source_sha256" in ds.arrays:
            info["test_sha256"] = bytes(ds.arrays["test_source_sha256"]).decode()
    return XCData.from_arrays(ds.arrays, "train_"), XCData.from_arrays(ds.arrays, "test_"), info


def from_file(path: str | Path, **reader_kwargs) -> XCData:
    """Return the split in XC text file ``path`` (parsed once, then from its .npz cache)."""
    from impls.slide.data.xc_format import read_xc_cached

    return XCData.from_arrays(read_xc_cached(path, **reader_kwargs))


# ------------------------------------------------------------------ real data

class RealDataMismatch(ValueError):
    """A file offered as a real XC set does not have that set's published shape."""


def read_header(path: str | Path) -> tuple[int, int, int]:
    """``(N, D, L)`` from the first line of the XC text file ``path`` (reads only that line);
    RealDataMismatch, naming the file, where it is no such header or the file is empty."""
    path = Path(path)
    with open(path, "rb") as handle:
        line = handle.readline(256)
        second = handle.readline(256)
    parts = line.split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        from impls.slide.data.xc_format import bad_header_message, empty_file_message
        raise RealDataMismatch(bad_header_message(path, line.rstrip(b"\r\n"), second.rstrip(b"\r\n")) if line
                               else empty_file_message(path))
    n, d, l = (int(p) for p in parts)
    from impls.slide.data.xc_format import XCFormatError, check_header_sizes
    try:
        check_header_sizes(path, n, d, l)
    except XCFormatError as err:
        raise RealDataMismatch(str(err)) from None
    return n, d, l


class ShapeMismatch(ValueError):
    """A training and a test file whose headers give different feature or label counts."""


def check_same_shape(train_path: str | Path, test_path: str | Path) -> None:
    """Raise :class:`ShapeMismatch` naming both files when their headers give different feature
    or label counts (reads only the headers: before a parse that takes minutes for the real
    sets); a header that is not 'N D L' raises :class:`RealDataMismatch`."""
    (_, d_train, l_train), (_, d_test, l_test) = read_header(train_path), read_header(test_path)
    if (d_train, l_train) != (d_test, l_test):
        raise ShapeMismatch(f"{train_path}:1 has {d_train} features and {l_train} labels, {test_path}:1 has "
                         f"{d_test} and {l_test}")


def check_real_header(path: str | Path, split: str, like: str | None = None) -> str:
    """Return the published set (see :data:`impls.slide.xc_stats.PUBLISHED`) whose shape the
    header of ``path`` matches for ``split`` ("train" / "test"): features, labels and the
    split's point count exactly. With ``like`` only that set is accepted. Raises
    :class:`RealDataMismatch` naming the file, line 1 and the expected header otherwise, and
    when the file is too small to hold the points its header says (a cut file: the error gives
    both counts; :func:`impls.slide.data.real_contents.check_whole_file`, which counts the
    file's lines once per version of the file)."""
    from impls.slide.xc_stats import PUBLISHED

    if split not in ("train", "test"):
        raise ValueError(f"split={split!r}; expected 'train' or 'test'")
    n, d, l = read_header(path)
    candidates = [like] if like else list(PUBLISHED)
    from impls.slide.data.real_contents import check_whole_file, published_header, refuse_header

    for name in candidates:
        if (n, d, l) == published_header(name, split):
            check_whole_file(path, n, name, split)
            return name
    refuse_header(path, (n, d, l), split, candidates)


def claimed_real_set(*paths: str | Path) -> str | None:
    """The published set (:data:`impls.slide.xc_stats.PUBLISHED`) whose feature and label
    counts the header of any of ``paths`` has, i.e. which real set the files claim to be
    (their point counts are then checked by :func:`check_real_header`); None when no header
    has a published set's shape or a header is not an XC header."""
    from impls.slide.xc_stats import PUBLISHED

    for path in paths:
        try:
            _, d, l = read_header(path)
        except RealDataMismatch:
            continue
        for name, pub in PUBLISHED.items():
            if (d, l) == (pub["features"], pub["labels"]):
                return name
    return None


def split_beside(train_path: str | Path) -> Path:
    """The test split beside a training file: its name with its last 'train', in any case,
    replaced by 'test' in the same case (train.txt -> test.txt, amazon_train.txt ->
    amazon_test.txt, Amazon_Train.txt -> Amazon_Test.txt, TRAIN.TXT -> TEST.TXT)."""
    train_path = Path(train_path)
    name = train_path.name
    at = name.lower().rfind("train")
    if at < 0:
        raise RealDataMismatch(f"{train_path}: cannot find the test split beside it: the file name has no 'train' "
                               "(in any case) to replace by 'test'; give the training file, named with 'train', "
                               "and its test split beside it, named the same with 'test'")
    word = name[at:at + 5]
    test = "TEST" if word.isupper() else "Test" if word[0].isupper() else "test"
    return train_path.with_name(f"{name[:at]}{test}{name[at + 5:]}")


def __getattr__(name: str):
    """``CACHE_VERSION``: the XC parser's, by which the registry keys its cache of
    :func:`read_real_pair`'s arrays (read lazily: the parser imports numba)."""
    if name == "CACHE_VERSION":
        from impls.slide.data.xc_format import CACHE_VERSION
        return CACHE_VERSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The registry's real sets and the published set each must be (:data:`impls.slide.xc_stats.PUBLISHED`):
# a manifest names one set, so files of the other are refused, not filed under its claims.
REAL_SETS = {"slide-amazon670k-real": "amazon-670k", "slide-delicious200k-real": "delicious-200k"}


def check_real_pair_headers(train_path: str | Path, like: str | None = None) -> tuple[str, Path]:
    """``(like, test_path)``: the published set whose train shape the header of ``train_path``
    has (only ``like`` when given) and the test file beside it (:func:`split_beside`), whose
    header must have that set's test shape, neither file the suite's own synthetic set
    (:func:`~impls.slide.data.own_synthetic.refuse_own`). Reads the headers and first lines;
    raises :class:`RealDataMismatch` naming the file (a missing test file included)."""
    from impls.slide.data.own_synthetic import refuse_own

    train_path = Path(train_path)
    test_path = split_beside(train_path)
    like = check_real_header(train_path, "train", like)
    if not test_path.is_file():
        raise RealDataMismatch(f"{test_path}: no test file beside {train_path.name} (the test split must lie "
                               "beside the training file, named with 'train' replaced by 'test')")
    check_real_header(test_path, "test", like)
    refuse_own(like, train_path, test_path)
    return like, test_path


def read_real_pair(train_path: str | Path, like: str | None = None) -> dict[str, np.ndarray]:
    """The registry loader of a real XC set: the training file ``train_path`` and the test file
    beside it, both headers checked against the published shape (of ``like`` only, when given;
    :func:`check_real_pair_headers`), parsed into the registry's dict of arrays; the test file's
    sha256 is kept as ``test_source_sha256`` (hex, as uint8 bytes)."""
    from impls.harness.registry import sha256_of
    from impls.slide.data.real_contents import check_real_contents
    from impls.slide.data.xc_format import read_xc

    train_path = Path(train_path)
    like, test_path = check_real_pair_headers(train_path, like)
    train = XCData.from_arrays(read_xc(train_path, allow_empty_labels=True))
    check_real_contents(train, train_path, like)
    test = XCData.from_arrays(read_xc(test_path, allow_empty_labels=True))
    check_real_contents(test, test_path, like, "test")
    return {**train.to_arrays("train_"), **test.to_arrays("test_"),
            "shape": np.array([train.n_features, train.n_labels], np.int64),
            "test_source_sha256": np.frombuffer(sha256_of(test_path).encode(), np.uint8).copy()}


def read_real_amazon670k(train_path: str | Path) -> dict[str, np.ndarray]:
    """:func:`read_real_pair` accepting only Amazon-670K's files (manifest slide-amazon670k-real)."""
    return read_real_pair(train_path, REAL_SETS["slide-amazon670k-real"])


def read_real_delicious200k(train_path: str | Path) -> dict[str, np.ndarray]:
    """:func:`read_real_pair` accepting only Delicious-200K's files (manifest slide-delicious200k-real)."""
    return read_real_pair(train_path, REAL_SETS["slide-delicious200k-real"])


def real_pair(train_path: str | Path, test_path: str | Path, like: str | None = None
              ) -> tuple[XCData, XCData, dict]:
    """(train, test, info) from real XC files given by path (``--train/--test``): headers
    checked as in :func:`check_real_header` and the training split's means as in
    :func:`~impls.slide.data.real_contents.check_real_contents`, both files' sha256 in ``info``
    (``real`` True, ``like`` the published set); files that are the suite's own synthetic set
    are read as :func:`files_info` labels them (``synthetic`` True, ``own_synthetic``), not real."""
    from impls.slide.data.real_contents import check_real_contents

    like = check_real_header(train_path, "train", like)
    check_real_header(test_path, "test", like)
    if (info := files_info(train_path, test_path))["synthetic"]:
        return from_file(train_path, allow_empty_labels=True), from_file(test_path, allow_empty_labels=True), info
    train = from_file(train_path, allow_empty_labels=True)
    check_real_contents(train, train_path, like)
    test = from_file(test_path, allow_empty_labels=True)
    check_real_contents(test, test_path, like, "test")
    return train, test, {**info, "dataset": like, "synthetic": False, "real": True, "like": like}


def files_info(train_path: str | Path, test_path: str | Path) -> dict:
    """What a result records of the XC files it was trained on: their absolute paths and sha256,
    ``real`` False and ``synthetic`` None (whether a user's own files are synthetic is not known
    here), or True with ``own_synthetic`` where they are the suite's own synthetic set
    (:func:`~impls.slide.data.own_synthetic.own_info`); :func:`real_pair` overrides the last
    two for a real set."""
    from impls.harness.registry import sha256_of
    from impls.slide.data.own_synthetic import own_info

    train_path, test_path = Path(train_path).absolute(), Path(test_path).absolute()
    return {"source": str(train_path), "sha256": sha256_of(train_path), "test_source": str(test_path),
            "test_sha256": sha256_of(test_path), "train": str(train_path), "test": str(test_path),
            "real": False, "synthetic": None, **own_info(train_path, test_path)}


def _env_of(name: str) -> str:
    """The variable registry dataset ``name`` reads its file's path from (its manifest's env)."""
    from impls.harness import registry

    return registry.manifests()[name].spec.get("env", "its manifest's path")


def real_data_reason(name: str) -> str | None:
    """Why registry dataset ``name`` (one of :data:`REAL_SETS`) cannot be used here, or None
    when its training file and the test file beside it exist and their headers have that
    set's published shape (no checksum)."""
    from impls.harness import registry

    manifest = registry.manifests()[name]
    try:
        source = registry._external_source(manifest)
        check_real_pair_headers(source, REAL_SETS[name])
    except (registry.DatasetUnavailable, RealDataMismatch, OSError) as err:
        return f"needs the real {manifest.description.split(':')[0]} ({err})"
    return None
