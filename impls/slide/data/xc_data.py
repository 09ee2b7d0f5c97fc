"""Synthetic extreme-classification data shaped like the real XC sets: TF-IDF bag-of-words
rows, heavy-tailed label popularity, labels that co-occur.

The recipe (every knob a keyword of :func:`generate`, set per set in ``datasets/slide-*.toml``):

- **Labels.** Label popularity is Zipf over a random ranking, weight ``(rank + offset) ** -label_zipf``,
  so most labels have a handful of training points and a few have thousands. Labels are
  grouped into topics of ~``labels_per_topic``; a point's label count is log-normal with mean
  ``labels_per_point``; its first label follows the global popularity, each further one comes
  with probability ``p_same_topic`` from the first label's topic (so labels co-occur), else
  from the global popularity.
- **Words.** A point is a bag of word tokens drawn until it has a log-normal number of
  distinct words with mean ``nnz_per_point``: a fraction ``frac_label`` from one of its
  labels' ``words_per_label`` words, ``frac_topic`` from its topic's ``topic_pool`` words,
  the rest from a background vocabulary with Zipf frequencies (exponent ``word_zipf``, as
  in text). Label and topic words are fixed draws from a flatter Zipf (``content_zipf``), so
  feature document frequencies stay Zipf-like and two random points share few words.
- **Values.** TF-IDF: term count × ``log((1 + N) / (1 + df)) + 1`` with document frequencies
  ``df`` from the training split (the test split uses them too), each row scaled to unit L2
  norm, so rare words weigh more.

Only the counts and the per-point / per-label means are published for the real sets
(:data:`impls.slide.xc_stats.PUBLISHED`); the distribution shapes follow what is known of
them qualitatively and :mod:`impls.slide.xc_stats` checks both against stated tolerances.
Output: the registry's dict of arrays (``train_*``, ``test_*``, ``shape``; see
:mod:`impls.slide.data.dataset`), which :func:`impls.slide.data.xc_format.write_xc` writes in the XC
text format. Deterministic for ``seed`` whatever the thread count.
"""
from __future__ import annotations

import inspect

import numpy as np

from impls.slide.data import xc_gen_kernels as K
from impls.slide.data.dataset import XCData

GENERATOR_VERSION = 2  # the manifests' ``version``: a new recipe never reuses an old cache


def _zipf_cdf(n: int, exponent: float, offset: float = 1.0) -> np.ndarray:
    return np.cumsum((np.arange(n, dtype=np.float64) + offset) ** -exponent)


def _label_tables(rng: np.random.Generator, n_labels: int, zipf: float, offset: float,
                  labels_per_topic: int):
    ranks = rng.permutation(n_labels)  # label id -> popularity rank
    weights = (ranks + offset) ** -zipf
    n_topics = max(1, n_labels // max(1, labels_per_topic))
    topic_of = np.concatenate([np.arange(n_topics), rng.integers(0, n_topics, n_labels - n_topics)])
    topic_of = rng.permutation(topic_of).astype(np.int32)
    order = np.argsort(topic_of, kind="stable").astype(np.int32)
    topic_ptr = np.zeros(n_topics + 1, np.int64)
    np.cumsum(np.bincount(topic_of, minlength=n_topics), out=topic_ptr[1:])
    topic_cdf = np.cumsum(weights[order])  # global cumsum; per-topic segments are differences
    return np.cumsum(weights), topic_of, topic_ptr, order, topic_cdf


def _split(seed: int, first: int, n: int, tables: tuple, p: dict, max_labels: int, max_nnz: int,
           chunk: int) -> tuple[XCData, np.ndarray]:
    """One split with raw term counts as values (TF-IDF is applied by the caller)."""
    parts = []
    for lo in range(0, n, chunk):
        m = min(chunk, n - lo)
        lab = np.empty((m, max_labels), np.int32)
        nlab = np.empty(m, np.int64)
        feat = np.empty((m, max_nnz), np.int32)
        tf = np.empty((m, max_nnz), np.float32)
        nnz = np.empty(m, np.int64)
        K.generate_points(np.uint64(seed), first + lo, m, *tables, p["labels_per_point"], p["labels_sigma"],
                          p["nnz_per_point"], p["nnz_sigma"], p["p_same_topic"], p["words_per_label"],
                          p["topic_pool"], p["frac_label"], p["frac_topic"], lab, nlab, feat, tf, nnz)
        parts.append(tuple(_pack(rows, counts) for rows, counts in ((feat, nnz), (tf, nnz), (lab, nlab))))
    indices = np.concatenate([q[0][1] for q in parts]) if parts else np.empty(0, np.int32)
    tf = np.concatenate([q[1][1] for q in parts]) if parts else np.empty(0, np.float32)
    labels = np.concatenate([q[2][1] for q in parts]) if parts else np.empty(0, np.int32)
    indptr = _join_ptrs([q[0][0] for q in parts])
    label_indptr = _join_ptrs([q[2][0] for q in parts])
    return XCData(indptr, indices, tf, label_indptr, labels, p["n_features"], p["n_labels"]), tf


def _pack(rows: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(rows.shape[0] + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    out = np.empty(ptr[-1], rows.dtype)
    K.compact_rows(rows, counts, ptr, out)
    return ptr, out


def _join_ptrs(ptrs: list[np.ndarray]) -> np.ndarray:
    out, base = [np.zeros(1, np.int64)], 0
    for ptr in ptrs:
        out.append(ptr[1:] + base)
        base += int(ptr[-1])
    return np.concatenate(out)


def idf_of(indices: np.ndarray, n_points: int, n_features: int) -> np.ndarray:
    """Smoothed inverse document frequency ``log((1 + N) / (1 + df)) + 1`` per feature (float32)."""
    df = np.bincount(indices, minlength=n_features).astype(np.float64)
    return (np.log((1.0 + n_points) / (1.0 + df)) + 1.0).astype(np.float32)


def generate(seed: int, n_train: int, n_test: int, n_features: int, n_labels: int,
             labels_per_point: float = 5.45, nnz_per_point: float = 74.75, label_zipf: float = 0.8,
             label_zipf_offset: float = 2.0, labels_sigma: float = 0.5, nnz_sigma: float = 0.5,
             labels_per_topic: int = 64, p_same_topic: float = 0.7, words_per_label: int = 20,
             topic_pool: int = 200, frac_label: float = 0.5, frac_topic: float = 0.2,
             word_zipf: float = 1.0, content_zipf: float = 0.7, version: int = GENERATOR_VERSION,
             chunk_entries: int = 1 << 24) -> dict[str, np.ndarray]:
    """Return a synthetic train/test pair as the registry's dict of arrays (see module doc).

    ``version`` must be :data:`GENERATOR_VERSION` (a manifest written for another recipe
    fails instead of silently meaning something else). Labels per point and non-zeros per
    point have the given means (log-normal spread ``labels_sigma`` / ``nnz_sigma``, capped at
    4x / 5x the mean). Work is O(points × tokens) in numba, in chunks of ``chunk_entries``
    buffer cells.
    """
    tables, p, max_labels, max_nnz = _recipe(**locals())
    chunk = max(256, chunk_entries // max_nnz)
    train, train_tf = _split(seed, 0, n_train, tables, p, max_labels, max_nnz, chunk)
    test, test_tf = _split(seed, n_train, n_test, tables, p, max_labels, max_nnz, chunk)
    idf = idf_of(train.indices, n_train, n_features)
    out = {}
    for prefix, split, tf in (("train_", train, train_tf), ("test_", test, test_tf)):
        values = np.empty_like(tf)
        K.tfidf_rows(split.indptr, split.indices, tf, idf, values)
        out.update(XCData(split.indptr, split.indices, values, split.label_indptr, split.labels,
                          n_features, n_labels).to_arrays(prefix))
    out["shape"] = np.array([n_features, n_labels], np.int64)
    return out


def generate_rows(seed: int, first: int, n: int, **params) -> XCData:
    """Points ``first .. first + n - 1`` of the set ``generate(seed, **params)`` makes (its
    training split is points 0 .. n_train - 1, its test split the next n_test; ``params`` as
    :func:`generate` takes them, the sizes n_train / n_test aside), with raw term counts as
    values: feature ids, term counts and labels are :func:`generate`'s exactly, since a
    point depends only on the seed, its index and the recipe; the TF-IDF values, which need
    the whole training split's document frequencies, are not made. Costs the recipe's label
    and feature tables, O(n_labels + n_features), and O(n × tokens)."""
    args = inspect.signature(generate).bind(seed, **{"n_train": 0, "n_test": 0, **params})
    args.apply_defaults()
    tables, p, max_labels, max_nnz = _recipe(**args.arguments)
    chunk = max(256, args.arguments["chunk_entries"] // max_nnz)
    return _split(seed, first, n, tables, p, max_labels, max_nnz, chunk)[0]


def _recipe(seed, n_features, n_labels, labels_per_point, nnz_per_point, label_zipf, label_zipf_offset,
            labels_sigma, nnz_sigma, labels_per_topic, p_same_topic, words_per_label, topic_pool, frac_label,
            frac_topic, word_zipf, content_zipf, version, **sizes):
    """(tables, p, max_labels, max_nnz): what every point of :func:`generate`'s set is drawn from
    (``generate_points``' tables and scalars, and its rows' widths), made from :func:`generate`'s
    arguments; ``sizes`` (n_train, n_test, chunk_entries) do not change them. Raises ValueError
    for a version or parameters :func:`generate` refuses."""
    if version != GENERATOR_VERSION:
        raise ValueError(f"version={version}: this generator is version {GENERATOR_VERSION}")
    if n_labels < 2 or n_features < 2:
        raise ValueError("need at least 2 labels and 2 features")
    if not 0 <= frac_label + frac_topic <= 1:
        raise ValueError("frac_label + frac_topic must lie in [0, 1]")
    rng = np.random.default_rng(seed)
    label_tables = _label_tables(rng, n_labels, label_zipf, label_zipf_offset, labels_per_topic)
    feature_of_rank = rng.permutation(n_features).astype(np.int32)
    tables = (*label_tables, _zipf_cdf(n_features, word_zipf), _zipf_cdf(n_features, content_zipf),
              feature_of_rank)
    max_labels = int(min(n_labels, max(4, np.ceil(4 * labels_per_point))))
    max_nnz = int(min(n_features, max(8, np.ceil(5 * nnz_per_point))))
    p = dict(labels_per_point=float(labels_per_point), labels_sigma=float(labels_sigma),
             nnz_per_point=float(nnz_per_point), nnz_sigma=float(nnz_sigma),
             p_same_topic=float(p_same_topic), words_per_label=int(words_per_label),
             topic_pool=int(topic_pool), frac_label=float(frac_label), frac_topic=float(frac_topic),
             n_features=n_features, n_labels=n_labels)
    return tables, p, max_labels, max_nnz
