"""Synthetic extreme-classification data with learnable structure.

Each label has a *prototype* (a few features with fixed weights) and belongs to a
*topic* (a pool of features shared by its labels). Label popularity is Zipf-like.
A point draws ~``labels_per_point`` labels (the first from the global popularity, the
rest mostly from the first label's topic), then ~``nnz_per_point`` features: most from
its labels' prototypes, some from the topic pool, the rest uniform noise; values are
L2-normalised. Output: the registry's dict of arrays (``train_*``, ``test_*``, ``shape``;
see :mod:`impls.slide.dataset`), which :func:`impls.slide.xc_format.write_xc` writes
in the XC text format.

The real sets' ratios, kept by the recipes in ``datasets/slide-*.toml``:
Amazon-670K ≈ 5.45 labels/point, 75.7 features/point, 3.99 training occurrences per
label; Delicious-200K ≈ 75.5 labels/point, 301 features/point, 72.3 occurrences/label.
"""
from __future__ import annotations


import numpy as np

from impls.slide import _xc_gen_kernels as K
from impls.slide.dataset import XCData


def _popularity(rng: np.random.Generator, n_labels: int, zipf: float, offset: float) -> np.ndarray:
    ranks = rng.permutation(n_labels)  # label id -> popularity rank
    return (1.0 / (ranks + 1.0 + offset) ** zipf)


def _split(seed, first, n, n_features, tables, p) -> XCData:
    max_labels = int(max(4, np.ceil(4 * p["labels_per_point"])))
    max_nnz = int(np.ceil(p["nnz_per_point"] + 6 * np.sqrt(p["nnz_per_point"]) + 8))
    lab = np.empty((n, max_labels), np.int32)
    nlab = np.empty(n, np.int64)
    feat = np.empty((n, max_nnz), np.int32)
    val = np.empty((n, max_nnz), np.float32)
    nnz = np.empty(n, np.int64)
    K.generate_points(np.uint64(seed), first, n, n_features, *tables,
                      float(p["labels_per_point"]), max_labels, float(p["nnz_per_point"]), max_nnz,
                      float(p["p_same_topic"]), int(p["topic_pool"]), int(p["prototype_size"]),
                      float(p["frac_label"]), float(p["frac_topic"]), lab, nlab, feat, val, nnz)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(nnz, out=indptr[1:])
    label_indptr = np.zeros(n + 1, np.int64)
    np.cumsum(nlab, out=label_indptr[1:])
    indices = np.empty(indptr[-1], np.int32)
    values = np.empty(indptr[-1], np.float32)
    labels = np.empty(label_indptr[-1], np.int32)
    K.compact_rows(feat, nnz, indptr, indices)
    K.compact_rows(val, nnz, indptr, values)
    K.compact_rows(lab, nlab, label_indptr, labels)
    return XCData(indptr, indices, values, label_indptr, labels, n_features, tables[0].shape[0])


def generate(seed: int, n_train: int, n_test: int, n_features: int, n_labels: int,
             labels_per_point: float = 5.45, nnz_per_point: float = 75.7, zipf: float = 1.0,
             zipf_offset: float = 2.0, labels_per_topic: int = 64, p_same_topic: float = 0.8,
             topic_pool: int = 128, prototype_size: int = 32, frac_label: float = 0.6,
             frac_topic: float = 0.25, draw_factor: float = 1.13) -> dict[str, np.ndarray]:
    """Return a synthetic train/test pair as the registry's dict of arrays.

    ``draw_factor`` inflates the number of feature draws so that, after merging
    duplicate features, a point has ~``nnz_per_point`` non-zeros.
    Deterministic for ``seed`` whatever the thread count. ~1 s per million points'
    worth of work on one core; the label tables cost O(n_labels).
    """
    if n_labels < 2 or n_features < 2:
        raise ValueError("need at least 2 labels and 2 features")
    rng = np.random.default_rng(seed)
    weights = _popularity(rng, n_labels, zipf, zipf_offset)
    label_cdf = np.cumsum(weights)
    n_topics = max(1, n_labels // max(1, labels_per_topic))
    # every topic gets at least one label, the rest are spread uniformly
    topic_of = np.concatenate([np.arange(n_topics), rng.integers(0, n_topics, n_labels - n_topics)])
    topic_of = rng.permutation(topic_of).astype(np.int32)
    order = np.argsort(topic_of, kind="stable").astype(np.int32)
    topic_ptr = np.zeros(n_topics + 1, np.int64)
    np.cumsum(np.bincount(topic_of, minlength=n_topics), out=topic_ptr[1:])
    topic_cdf = np.cumsum(weights[order])  # global cumsum; per-topic segments are differences
    return _finish(seed, n_train, n_test, n_features, weights, label_cdf, topic_of, order,
                   topic_ptr, topic_cdf, dict(
                       labels_per_point=labels_per_point, nnz_per_point=nnz_per_point * draw_factor,
                       p_same_topic=p_same_topic, topic_pool=topic_pool,
                       prototype_size=prototype_size, frac_label=frac_label, frac_topic=frac_topic))


def _finish(seed, n_train, n_test, n_features, weights, label_cdf, topic_of, order, topic_ptr,
            topic_cdf, p) -> dict[str, np.ndarray]:
    tables = (label_cdf, topic_of, topic_ptr, order, topic_cdf)
    train = _split(seed, 0, n_train, n_features, tables, p)
    test = _split(seed, n_train, n_test, n_features, tables, p)
    return {**train.to_arrays("train_"), **test.to_arrays("test_"),
            "shape": np.array([n_features, weights.size], np.int64)}
