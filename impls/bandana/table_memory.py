"""The memory a Bandana table's per-row arrays hold at once, checked before any is allocated.

A table of N rows (``--num-vectors``, the ``--vectors`` rows, or the largest id + 1) costs memory
in proportion to N whatever the trace's length: every layout is an int64 permutation of the N
rows, and building or measuring one holds several N-long arrays at once. ``--num-vectors``
accepts up to 2^40 rows, so a table of 10^9 rows asks for tens of GB; where the machine has
less, the kernel's out-of-memory killer would end the run without a message. :func:`check_fits`
raises ``MemoryError`` first, which :func:`impls.harness.cli.command` reports as "not enough
memory" (exit 2) with the flags that size the work.

The bytes a row are read off the code: numpy's allocations (what ``tracemalloc`` sees; the
test of this module measures them) plus those of numba's kernels and faiss, which it does not
see. Arrays as long as the trace (its ids, the hypergraph SHP builds) are not counted.
"""
from __future__ import annotations

from collections.abc import Callable

from typing import Sequence

from impls.harness.memory_limit import available_bytes

INT64 = 8
FLOAT32 = 4

#: Bytes a row held while each layout is built, the finished layout included.
#: identity: ``np.arange`` (8). random: ``Generator.permutation`` and ``astype``'s copy (16).
#: shp and kahypar place the rows training never read (``shp.shp_partition``,
#: ``layouts.kahypar_layout``): ``np.bincount`` of the ids to N (8), the ``rest`` mask (1), its
#: ``flatnonzero`` (8), their frequency key (8) and ``lexsort``'s order (8), 33, and 1 for the
#: hypergraph of the training trace beside them (a trace of a few lookups a row measured 0.3-1.5).
#: kmeans: faiss's assignment of every row while it trains (id int64 and distance float32, 12),
#: then ``search``'s (12) and ``astype`` (8), or the cluster ids, ``argsort`` and ``astype`` (24).
#: kmeans-two-level: the cluster ids, their ``argsort`` and the sub-cluster ids (24), the
#: layout (8), then ``unique``'s key and its sorted copy (16) and mask (1).
BUILD = {"identity": 8, "random": 16, "shp": 34, "kahypar": 34, "kmeans": 24, "kmeans-two-level": 49}

#: Bytes a row held while a layout is written and its fanout measured, the layout included:
#: the layout (8) and :func:`~impls.bandana.layout.layouts.block_of_vector`'s blocks (8),
#: ``arange`` (8) and its quotient (8; numpy divides in place only where it elides the
#: temporary, which it did in one process and not in another), more than the layout's ``.npy``
#: image (:func:`npy_image`: 16 a row at most, beside the layout).
REPORT = 32


def fanout_scratch(per_block: int, threads: int) -> float:
    """Bytes a row of the fanout kernel's scratch (``fanout_kernels.fanout_per_query``): one int64
    stamp a block in each of ``threads`` running chunks, ``threads * 8 / per_block``."""
    return threads * INT64 / max(1, per_block)


def vector_copy(kinds: Sequence[str], vectors, per_block: int) -> float:
    """Bytes a row K-means adds to the ``vectors`` (an array, or None) already held: their float32
    copy (``layouts._as_float32``, none for float32 input) and, for flat kmeans, faiss's
    centroids (one float32 row a block, ``4 * dim / per_block``); 0 unless ``kinds`` holds a
    K-means layout."""
    if vectors is None or not any(k.startswith("kmeans") for k in kinds):
        return 0.0
    dim = int(vectors.shape[1]) if getattr(vectors, "ndim", 0) == 2 else 0
    copy = 0 if vectors.dtype == "float32" else FLOAT32 * dim
    return copy + (FLOAT32 * dim / max(1, per_block) if "kmeans" in kinds else 0.0)


#: ``np.save`` writes an array to memory (``prepare``'s outputs are staged so) in pieces of at
#: most this many bytes, each a copy held beside the growing image (numpy's ``write_array``).
NPY_CHUNK = 16 * 2**20


def npy_image(nbytes: int) -> int:
    """Bytes held at once while ``np.save`` writes an array of ``nbytes`` to memory: the
    image and the piece being copied into it (:data:`NPY_CHUNK` at most)."""
    return int(nbytes) + min(int(nbytes), NPY_CHUNK)


def table_bytes(num_vectors: int, kinds: Sequence[str], per_block: int, *, keep_all: bool = False,
                vectors=None, threads: int | None = None, writes_vectors: bool = False) -> int:
    """The bytes a table of ``num_vectors`` rows holds at once while the layouts ``kinds``
    (packing ``per_block`` rows a block) are built (:data:`BUILD`) and written and measured
    (:data:`REPORT`) one after another: with the previous layout still held while the next is
    built (``prepare``), or with ``keep_all`` every layout built so far, and while they are
    measured all of them and an identity permutation (``headline``'s
    :func:`~impls.bandana.layout.layouts.layout_report`); plus the fanout kernel's scratch on
    ``threads`` (default: numba's) and K-means' copy of ``vectors`` (:func:`vector_copy`); or,
    with ``writes_vectors``, the ``.npy`` image of ``vectors`` (:func:`npy_image`) where that
    is more. An estimate of the peak, in bytes, beyond the arrays already held (the vectors,
    the trace); unknown kinds count as shp."""
    if threads is None:
        import numba

        threads = numba.get_num_threads()
    held = [INT64 * (i if keep_all else min(i, 1)) for i in range(len(kinds))]
    build = max([h + BUILD.get(kind, BUILD["shp"]) for h, kind in zip(held, kinds)] or [0])
    report = REPORT + (INT64 * len(kinds) if keep_all else 0)
    per_row = max(build, report) + fanout_scratch(per_block, threads) + vector_copy(kinds, vectors, per_block)
    image = npy_image(vectors.nbytes) if writes_vectors and vectors is not None else 0
    return max(int(per_row * int(num_vectors)), image)


def size_text(size: float) -> str:
    """``size`` bytes as text: in TiB from 1 TiB (``"42.5 TiB"``), in GiB from 1 GiB
    (``"7.5 GiB"``), else in MiB (``"45 MiB"``)."""
    if size >= 2**40:
        return f"{size / 2**40:.1f} TiB"
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"


def check_fits(need: int, num_vectors: int, what: str, fix: Callable[[], str]) -> None:
    """Raise ``MemoryError`` (one line: ``what``, the ``need`` bytes it takes at once for a table
    of ``num_vectors`` rows, the bytes this process may allocate, and ``fix()``, called only
    then: a hint may cost a pass over the trace) where ``need`` exceeds
    :func:`~impls.harness.memory_limit.available_bytes`; return quietly otherwise, or where
    that cannot be read."""
    available = available_bytes()
    if available is not None and need > available:
        raise MemoryError(f"{what} takes about {size_text(need)} at once for a table of {num_vectors:,} rows "
                          f"(about {need / max(1, num_vectors):.0f} bytes a row); this process may allocate "
                          f"{size_text(available)}: {fix()}")
