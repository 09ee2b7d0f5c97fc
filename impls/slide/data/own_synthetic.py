"""Whether an XC text file is the suite's own synthetic set: a registry set made by
:func:`impls.slide.data.xc_data.generate` (``datasets/slide-*.toml``), at any profile, written
out as text (``write_xc``; ``scripts/slide_reference_check.py`` exports the training split so).

Such a file can carry a real set's header (slide-amazon670k's training split at the quick and
full profiles, both its splits at full; slide-delicious200k's at full) and meets every
published mean and shape bound (:mod:`impls.slide.data.real_contents`), since the generator is
made to. It is known by its rows instead: the generator draws point i from the seed, i and the
recipe alone, so the first :data:`HEAD_POINTS` points of each split of each profile are redrawn
in milliseconds (:func:`impls.slide.data.xc_data.generate_rows`, no set made or read) and
compared with the file's first points. A file counts as the suite's own when at least
:data:`SAME_SHARE` of those rows list the generator's feature ids, and its labels where the row
lists any (values are not compared: they may be rescaled, and labels dropped, and it is still
the suite's data). Rows in another order than the generator's are not recognised. The
generator is only asked for the recipes whose feature and label counts the file's header has.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import numpy as np

from impls.slide.data.dataset import RealDataMismatch, XCData, read_header

GENERATOR = "impls.slide.data.xc_data:generate"
HEAD_POINTS = 64     # the file's first points, compared with each split's first points
SAME_SHARE = 0.5     # of those, the share that must be the generator's rows
LINE_BYTES = 1 << 20  # the most read of one line (a real set's point takes a few kB)


@dataclasses.dataclass(frozen=True)
class OwnSet:
    """Which of the suite's synthetic sets a file's rows are: registry set ``dataset``'s
    ``split`` ("train" / "test"), the same rows at each of ``profiles``."""
    dataset: str
    split: str
    profiles: tuple[str, ...]

    def describe(self, path: str | Path) -> str:
        """``path`` named as this set, e.g. "train.txt is the suite's own synthetic
        slide-amazon670k set (the training split of profile quick / full), not real data"."""
        split = "training" if self.split == "train" else "test"
        return (f"{path} is the suite's own synthetic {self.dataset} set (the {split} split of profile "
                f"{' / '.join(self.profiles)}), not real data")


def own_set_of(path: str | Path) -> OwnSet | None:
    """The suite's synthetic set whose rows the first points of XC file ``path`` are (see the
    module doc), or None: a file of other rows, or one whose first lines the parser does not
    read (its own parse says why). Reads the header, and :data:`HEAD_POINTS` lines where some
    synthetic set has the header's feature and label counts."""
    header = _header_of(Path(path))
    candidates = _candidates(*header[1:]) if header else []
    head = _head_of(Path(path), header) if candidates else None
    if head is None or head.n_points == 0:
        return None
    for dataset, split, profiles, seed, recipe, first in candidates:
        if _same_rows(head, _rows(seed, recipe, first, head.n_points)):
            return OwnSet(dataset, split, profiles)
    return None


def own_info(train_path: str | Path, test_path: str | Path) -> dict:
    """What a result records of a training and a test file that are the suite's own synthetic
    set (either of them): ``synthetic`` True and ``own_synthetic``, the files named as the sets
    they are (:meth:`OwnSet.describe`); {} when neither is."""
    said = [own.describe(path) for path in (train_path, test_path) if (own := own_set_of(path))]
    return {"synthetic": True, "own_synthetic": "; ".join(said)} if said else {}


def refuse_own(like: str, *paths: str | Path) -> None:
    """Raise :class:`RealDataMismatch` when one of ``paths``, given as published set ``like``'s
    real files, is the suite's own synthetic set; the message names the file and the set."""
    for path in paths:
        if own := own_set_of(path):
            raise RealDataMismatch(f"{own.describe(path)}; the real {like} files are the Extreme Classification "
                                   f"Repository's; to train on this synthetic set, name it: python -m "
                                   f"impls.slide.train --dataset {own.dataset} --profile {own.profiles[0]}")


def _header_of(path: Path) -> tuple[int, int, int] | None:
    """(N, D, L) of XC file ``path``'s first line (:func:`~impls.slide.data.dataset.read_header`),
    or None where it is no such header or cannot be read."""
    try:
        return read_header(path)
    except (OSError, RealDataMismatch):
        return None


def _head_of(path: Path, header: tuple[int, int, int]) -> XCData | None:
    """The first :data:`HEAD_POINTS` points of XC file ``path`` (whose first line is
    ``header``), or None where those lines do not parse."""
    from impls.slide.data.xc_format import _parse

    n, d, l = header
    try:
        with open(path, "rb") as handle:
            handle.readline(256)
            lines = [handle.readline(LINE_BYTES) for _ in range(min(n, HEAD_POINTS))]
        lines = [line if line.endswith(b"\n") else line + b"\n" for line in lines if line]
        text = b"%d %d %d\n" % (len(lines), d, l) + b"".join(lines)
        return XCData.from_arrays(_parse(text, path, allow_empty_labels=True)[0])
    except (OSError, ValueError):
        return None


def _candidates(n_features: int, n_labels: int) -> list[tuple[str, str, tuple[str, ...], int, str, int]]:
    """(dataset, split, profiles, seed, recipe as JSON, first point) of each split of the
    registry's synthetic XC sets, at each profile, with ``n_features`` features and
    ``n_labels`` labels; profiles whose split holds the same points are one entry."""
    from impls.harness import registry
    from impls.slide.data.dataset import xc_datasets

    found: dict[tuple, list[str]] = {}
    manifests = registry.manifests()
    for name in xc_datasets():
        manifest = manifests[name]
        if not manifest.synthetic or manifest.spec.get("generator") != GENERATOR:
            continue
        for profile in manifest.spec.get("profiles", {}):
            params = registry.recipe_params(manifest, profile)
            if (params.get("n_features"), params.get("n_labels")) != (n_features, n_labels):
                continue
            recipe = json.dumps({k: v for k, v in params.items() if k not in ("n_train", "n_test")}, sort_keys=True)
            for split, first in (("train", 0), ("test", int(params["n_train"]))):
                found.setdefault((name, split, manifest.spec["seed"], recipe, first), []).append(profile)
    return [(name, split, tuple(profiles), seed, recipe, first)
            for (name, split, seed, recipe, first), profiles in found.items()]


@functools.lru_cache(maxsize=32)
def _rows(seed: int, recipe: str, first: int, n: int) -> XCData:
    """Points ``first .. first + n - 1`` of the generator's set of ``recipe`` (JSON), as
    :func:`~impls.slide.data.xc_data.generate_rows` draws them (once a process)."""
    from impls.slide.data.xc_data import generate_rows

    return generate_rows(seed, first, n, **json.loads(recipe))


def _same_rows(head: XCData, own: XCData) -> bool:
    """Whether at least :data:`SAME_SHARE` of ``head``'s rows (and one) have ``own``'s row's
    feature ids and, where the row lists labels, its labels (order and repeats aside)."""
    def row(indptr, data, i):
        return np.unique(data[indptr[i]:indptr[i + 1]])

    same = 0
    for i in range(min(head.n_points, own.n_points)):
        labels = row(head.label_indptr, head.labels, i)
        same += bool(np.array_equal(row(head.indptr, head.indices, i), row(own.indptr, own.indices, i))
                     and (labels.size == 0 or np.array_equal(labels, row(own.label_indptr, own.labels, i))))
    return same >= max(1.0, SAME_SHARE * head.n_points)
