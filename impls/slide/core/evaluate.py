"""Exact dense evaluation: P@1 and P@5 over every output neuron, on a fixed shuffled subset."""
from __future__ import annotations

import numpy as np

from impls.slide.core.eval_kernels import merge_topk, merge_topk_wrong, sort_topk, topk_hits
from impls.slide.data.dataset import XCData


def eval_rows(data: XCData, n_points: int | None, seed: int) -> np.ndarray:
    """The fixed evaluation subset: the first ``n_points`` of a seeded shuffle of ``data``."""
    order = np.random.default_rng(seed + 104729).permutation(data.n_points)
    return np.sort(order[: n_points or data.n_points])


def precision_at_k(scores_topk: np.ndarray, data: XCData, rows: np.ndarray) -> dict:
    """P@1 and P@5 (0-1) of top-5 predictions ``scores_topk`` (n, up to 5, best first; -1: no
    prediction) for ``rows``, and ``hits_at_1``: per row, whether its top prediction is one of
    its labels (bool array in the order of ``rows``; its mean is P@1). P@5 always divides a
    row's hits by 5, however few predictions it has (fewer than 5 labels in all)."""
    rows = np.ascontiguousarray(rows, np.int64).reshape(-1)
    pred = np.ascontiguousarray(np.atleast_2d(np.asarray(scores_topk, np.int64)))
    if pred.shape[0] < rows.size:
        raise ValueError(f"{rows.size} rows need as many rows of predictions, got {pred.shape[0]}")
    if rows.size and (rows.min() < 0 or rows.max() >= data.n_points):
        raise IndexError(f"rows must lie in 0..{data.n_points - 1}, got {rows.min()}..{rows.max()}")
    first = np.zeros(rows.size, bool)
    p5 = float(topk_hits(pred, rows, data.label_indptr, data.labels, first)) if pred.shape[1] else 0.0
    n = max(1, len(rows))
    return {"p_at_1": float(first.sum()) / n, "p_at_5": p5 / n, "hits_at_1": first}


def pack_hits(hits: np.ndarray) -> str:
    """``hits`` (bool array) as a hex string of its bits, first row in the highest bit of the
    first byte (what an artifact stores; :func:`unpack_hits` reverses it)."""
    return np.packbits(np.asarray(hits, bool)).tobytes().hex()


def unpack_hits(packed: str, n: int) -> np.ndarray:
    """The ``n`` bools :func:`pack_hits` packed into ``packed``; ValueError when it does not
    hold exactly ``ceil(n / 8)`` bytes."""
    raw = bytes.fromhex(packed)
    if len(raw) != (n + 7) // 8:
        raise ValueError(f"packed hits hold {len(raw)} bytes, {n} rows need {(n + 7) // 8}")
    return np.unpackbits(np.frombuffer(raw, np.uint8))[:n].astype(bool)


def rows_digest(rows: np.ndarray) -> str:
    """A short digest (16 hex digits) of the evaluation rows: two runs whose digests match
    were scored on the same points, in the same order."""
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(rows, np.int64).tobytes()).hexdigest()[:16]


def top5(hidden: np.ndarray, W2: np.ndarray, b2: np.ndarray, chunk: int = 16384) -> np.ndarray:
    """Top-5 label ids of ``hidden @ W2.T + b2`` for every row (see :func:`topk`)."""
    return topk(hidden, W2, b2, 5, chunk)


def topk(hidden: np.ndarray, W2: np.ndarray, b2: np.ndarray, k: int, chunk: int = 16384,
         row_chunk: int = 2048) -> np.ndarray:
    """Top-``k`` label ids (n, k; best first, -1 past the label count) of ``hidden @ W2.T + b2``
    for every row: exact (a higher score first, a tie to the lower id), over label chunks so
    that ``W2`` is read once per ``row_chunk`` rows and the score block stays at most
    ``row_chunk`` x ``chunk`` floats."""
    if k < 1:
        raise ValueError(f"k={k}: expected at least 1")
    top_v, top_i = _heaps(hidden.shape[0], min(k, W2.shape[0]))
    for rows, lo, s in _score_blocks(hidden, W2, b2, chunk, row_chunk):
        merge_topk(s, lo, top_v[rows], top_i[rows])
    return _sorted(top_v, top_i, k)


def topk_and_wrong(hidden: np.ndarray, W2: np.ndarray, b2: np.ndarray, k: int, wrong_k: int,
                   truth_indptr: np.ndarray, truth: np.ndarray, chunk: int = 16384,
                   row_chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """``(top, wrong)``: :func:`topk` of every row, and its ``wrong_k`` best-scoring labels that
    are not its own (n, wrong_k; best first, the same tie rule, -1 past those there are), row
    ``i``'s own labels being ``truth[truth_indptr[i]:truth_indptr[i + 1]]`` in ascending order
    (:func:`row_labels`). ``wrong`` is the first ``wrong_k`` non-own labels of a top list wide
    enough to hold them, read off in one pass whatever the number of labels a row has."""
    if k < 1 or wrong_k < 1:
        raise ValueError(f"k={k}, wrong_k={wrong_k}: expected each at least 1")
    n = hidden.shape[0]
    top_v, top_i = _heaps(n, min(k, W2.shape[0]))
    wrong_v, wrong_i = _heaps(n, min(wrong_k, W2.shape[0]))
    indptr = np.ascontiguousarray(truth_indptr, np.int64)
    truth = np.ascontiguousarray(truth, np.int64)
    for rows, lo, s in _score_blocks(hidden, W2, b2, chunk, row_chunk):
        merge_topk_wrong(s, lo, top_v[rows], top_i[rows], wrong_v[rows], wrong_i[rows],
                         indptr[rows.start:rows.stop + 1] - indptr[rows.start], truth[indptr[rows.start]:])
    return _sorted(top_v, top_i, k), _sorted(wrong_v, wrong_i, wrong_k)


def row_labels(data: XCData, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, labels)``: the labels of ``data``'s ``rows``, in their order, as a CSR whose
    row ``i`` (``labels[indptr[i]:indptr[i + 1]]``) holds row ``rows[i]``'s in ascending order."""
    rows = np.asarray(rows, np.int64).reshape(-1)
    starts, ends = data.label_indptr[rows], data.label_indptr[rows + 1]
    indptr = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64)
    labels = np.empty(int(indptr[-1]), np.int64)
    for i, (a, b) in enumerate(zip(starts, ends)):
        labels[indptr[i]:indptr[i + 1]] = np.sort(data.labels[a:b])
    return indptr, labels


def _heaps(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((n, k), -np.inf, np.float32), np.full((n, k), -1, np.int64)


def _score_blocks(hidden, W2, b2, chunk: int, row_chunk: int):
    """Yield ``(rows, lo, scores)``: a slice of ``hidden``'s rows, the first label of a chunk
    and the (rows, chunk) float32 block ``hidden[rows] @ W2[lo:lo + chunk].T + b2[lo:lo + chunk]``,
    valid until the next is yielded (its memory is reused)."""
    import torch  # GEMM in torch's thread pool (numpy's BLAS threads cannot be set)

    tH = torch.from_numpy(np.ascontiguousarray(hidden, np.float32))
    tW2 = torch.from_numpy(np.ascontiguousarray(W2, np.float32))
    tb2 = torch.from_numpy(np.ascontiguousarray(b2, np.float32))
    labels = W2.shape[0]
    for r0 in range(0, hidden.shape[0], max(1, row_chunk)):
        rows = slice(r0, min(r0 + max(1, row_chunk), hidden.shape[0]))
        block = torch.empty((rows.stop - rows.start, min(chunk, labels)), dtype=torch.float32)
        for lo in range(0, labels, chunk):      # one block reused: a fresh one a chunk page-faults anew
            width = min(chunk, labels - lo)
            out = block if width == block.shape[1] else torch.empty((block.shape[0], width), dtype=torch.float32)
            yield rows, lo, torch.addmm(tb2[lo:lo + width], tH[rows], tW2[lo:lo + width].T, out=out).numpy()


def _sorted(heap_v: np.ndarray, heap_i: np.ndarray, width: int) -> np.ndarray:
    """The heaps' label ids best first, as (n, ``width``) with -1 past the heap's width."""
    sort_topk(heap_v, heap_i)
    out = np.full((heap_i.shape[0], width), -1, np.int64)
    out[:, :heap_i.shape[1]] = heap_i
    return out


def evaluate(hidden_fn, W2: np.ndarray, b2: np.ndarray, data: XCData, rows: np.ndarray) -> dict[str, float]:
    """P@1/P@5 of a model given as ``hidden_fn(data, rows) -> (n, hidden)`` plus output W2, b2."""
    return precision_at_k(top5(hidden_fn(data, rows), W2, b2), data, rows)


def most_popular_baseline(train: XCData, test: XCData, rows: np.ndarray) -> dict[str, float]:
    """P@1 and P@5 (as :func:`precision_at_k`) of always predicting the training set's five
    most frequent labels (padded with -1, as :func:`topk`, when there are fewer than 5)."""
    top = np.full(5, -1, np.int64)
    ranked = np.argsort(-train.label_counts(), kind="stable")[:5]
    top[:ranked.size] = ranked
    return precision_at_k(np.tile(top, (len(rows), 1)), test, rows)


def mean_cosine(hidden: np.ndarray) -> float:
    """Mean cosine similarity between the hidden vectors of distinct points (rows of
    ``hidden``; a zero row counts as cosine 0 with every other). 1 means every point maps to
    one direction (no hash function can tell them apart); NaN with fewer than two rows."""
    n = hidden.shape[0]
    if n < 2:
        return float("nan")
    h = np.asarray(hidden, np.float64)
    norms = np.linalg.norm(h, axis=1)
    unit = h / np.where(norms > 0, norms, 1.0)[:, None]
    s = unit.sum(axis=0)
    total = float(s @ s) - float((unit * unit).sum())  # sum over ordered pairs i != j
    return total / (n * (n - 1))


def sample_record(rows: np.ndarray, baseline: dict) -> dict:
    """What a training result keeps to resample its test points later: the evaluation rows'
    digest (``eval_rows_digest``) and the most-popular-label prediction's per-row hits
    (``baseline_hits_at_1``, packed; every curve point packs its own as ``hits_at_1``)."""
    return {"eval_rows_digest": rows_digest(rows), "baseline_hits_at_1": pack_hits(baseline["hits_at_1"])}
