"""What flat K-means (:func:`impls.bandana.layout.layouts.kmeans_layout`) will cost, said before it starts.

Flat K-means makes ``k = ceil(N / V)`` clusters of ``N`` vectors (``V`` to a block). Each of its
``niter`` training passes, and the final assignment, compares every vector with every
centroid: ``(niter + 1) · N · k · dim`` multiply-adds (:func:`operations`), which grow as
``N² / V``. faiss trains on all ``N`` vectors (its cap of ``max(256, N / k)`` points a centroid
never samples), so nothing bounds that growth: doubling the table quadruples the time, and a
table of millions of rows takes hours where one of 50,000 takes seconds. Bandana's answer, and
the suite's, is ``kmeans-two-level``, whose cluster counts do not grow with ``N``.

:func:`estimate_seconds` times a small flat K-means of the same width, vectors per block and
``niter`` on this machine (about a second) and scales its rate by the operation count;
:func:`warn_if_slow` prints it before a build of more than :data:`WARN_OPERATIONS` (on the
suite's own tables flat K-means stays below it, so nothing is timed or said there).
"""
from __future__ import annotations

import math
import time

import numpy as np

#: Multiply-adds above which a flat K-means build is announced with its estimate (at a rate of
#: 10^10 a second, tens of seconds; the suite's smoke table, 20,000 vectors of 32 in blocks of
#: 32 with 10 iterations, is 4.4·10^9).
WARN_OPERATIONS = 1e11
_CALIBRATION_OPERATIONS = 2e9   # the timed sample's size: large enough that faiss's fixed costs are small
_CALIBRATION_NITER = 2


def clusters(num_vectors: int, vectors_per_block: int) -> int:
    """Flat K-means' cluster count, ``ceil(N / V)`` (at most ``N``)."""
    return min(int(num_vectors), -(-int(num_vectors) // int(vectors_per_block)))


def operations(num_vectors: int, dim: int, vectors_per_block: int, niter: int) -> float:
    """Multiply-adds of a flat K-means build: ``(niter + 1) · N · k · dim``."""
    return float(niter + 1) * num_vectors * clusters(num_vectors, vectors_per_block) * dim


def estimate_seconds(num_vectors: int, dim: int, vectors_per_block: int, niter: int, seed: int = 0
                     ) -> tuple[float, int]:
    """(estimated seconds of a flat K-means build of ``num_vectors`` vectors of ``dim`` values,
    the rows of the timed sample): the rate of a timed K-means of random vectors of the same
    shape, scaled by :func:`operations`."""
    from impls.bandana.layout import layouts

    per_pass = _CALIBRATION_OPERATIONS * vectors_per_block / ((_CALIBRATION_NITER + 1) * dim)
    rows = int(min(num_vectors, max(1024, math.sqrt(per_pass))))
    sample = np.random.default_rng(seed).standard_normal((rows, dim), dtype=np.float32)
    started = time.perf_counter()
    layouts.kmeans_layout(sample, vectors_per_block=vectors_per_block, niter=_CALIBRATION_NITER, seed=seed)
    rate = operations(rows, dim, vectors_per_block, _CALIBRATION_NITER) / max(time.perf_counter() - started, 1e-9)
    return operations(num_vectors, dim, vectors_per_block, niter) / rate, rows


def duration(seconds: float) -> str:
    """``seconds`` as a rounded duration: "40 s", "12 min", "2.1 h", "8.3 days"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.2g} h"
    return f"{seconds / 86400:.2g} days"


def warn_if_slow(num_vectors: int, dim: int, vectors_per_block: int, niter: int, where: str) -> float | None:
    """Print (:func:`impls.harness.cli.warn`) the estimate of a flat K-means build that would
    take more than :data:`WARN_OPERATIONS` multiply-adds, before it starts; return the
    estimated seconds, or None (nothing timed or said) below that."""
    from impls.harness import cli

    ops = operations(num_vectors, dim, vectors_per_block, niter)
    if ops <= WARN_OPERATIONS:
        return None
    seconds, rows = estimate_seconds(num_vectors, dim, vectors_per_block, niter)
    k = clusters(num_vectors, vectors_per_block)
    cli.warn(f"{where}: flat K-means of {num_vectors} vectors of {dim} values into {k} clusters (one a block "
             f"of {vectors_per_block}) with {niter} iterations is {ops:.2g} multiply-adds, growing as the "
             f"square of the table: estimated {duration(seconds)} here (the rate of a timed K-means of {rows} "
             "vectors; within a factor of a few); kmeans-two-level scales to large tables")
    return seconds
