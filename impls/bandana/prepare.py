"""Command line: turn a trace into the simulator's and the replay's inputs (``T.npy``, ``P.npy``).

Longer than 400 lines: reading and checking each kind of trace source, and writing the
outputs so that a rerun never leaves two runs' files side by side, are one command's
contract.

    python -m impls.bandana.prepare (--dataset NAME [--profile P] | --offsets O.npy --indices I.npy
        [--vectors V.npy] [--renumber] | --dlrm FILE --table K [--renumber]) --layout KIND [--layout KIND ...]
        [--vector-bytes B] [--block-bytes S] [--train-fraction F] --out DIR [--json [FILE|-]]

The trace is split in time as the suite does (the first ``F`` of the queries train the
layouts, the rest is the trace to simulate). ``DIR`` receives:

- ``trace.npy``: int64 vector ids of the later queries in lookup order (``--trace`` of
  ``python -m impls.bandana.cache`` and ``python -m impls.bandana.replay``),
- ``layout-<kind>.npy``: int64 storage-order permutation per layout (``--layout``),
- ``train_offsets.npy``, ``train_indices.npy``, ``test_offsets.npy``, ``test_indices.npy``: the
  split trace in the suite's CSR form, and ``vectors.npy`` when the input had values,
- ``original_ids.npy`` with ``--renumber``: the input id of each dense id 0..U-1 (the layouts
  and the trace are over dense ids),
- ``summary.json``: sizes, the source, the block geometry, and per layout its build time (s)
  and test fanout (distinct blocks per query; an empty query counts 0; where the test trace
  has empty queries, counted in ``empty_test_queries``, ``fanout_test_nonempty`` is the mean over
  the others), and a ``note`` for an
  shp layout that partitioned nothing (no training query of two distinct ids: it is then the
  training-frequency order, also printed).

Layouts pack ``--block-bytes // --vector-bytes`` vectors into a block: the row size of
``--vectors`` when given, else the suite's 128 B, in 4 KB blocks (a row size that does not
divide the block leaves slack at each block's end); give the same two values to
``python -m impls.bandana.cache`` and ``python -m impls.bandana.replay``. The layouts, vectors and
ids that the previous run's ``summary.json`` in ``DIR`` lists and this run does not write are
removed (they would pass for this trace's; found by name, so also after ``DIR`` was moved);
no other file is touched. Every output is written to a folder inside ``DIR`` first and moved
in at the end, so a run that fails or is interrupted leaves ``DIR`` as it was.

Layouts: identity, random, kmeans and kmeans-two-level (need vector values), shp, kahypar
(where the optional package is installed). Inputs are checked before any layout is built.
Flat ``kmeans`` (``N / V`` clusters) takes time growing as ``N²``: a warning gives its
estimate before it starts on a large table (:mod:`impls.bandana.layout.kmeans_cost`). A table
whose per-row arrays would not fit the memory this process may allocate is refused (exit 2,
the estimate beside the memory available) before any layout is built
(:mod:`impls.bandana.table_memory`); a ``--vectors`` dtype wider than 4 bytes (float64) gets a
note that the device row size is taken from it.
"""
from __future__ import annotations

import argparse
import io
import json
import mmap
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

LAYOUTS = ("identity", "random", "kmeans", "kmeans-two-level", "shp", "kahypar")
NEEDS_VECTORS = ("kmeans", "kmeans-two-level")
MAX_NUM_VECTORS = 2**40  # rows: more than any memory holds; near 2^63 numpy's sizes wrap silently


from impls.bandana.data.npy_header import claims_beyond_file
from impls.harness import cli, profiles


class PrepareError(cli.UsageError):
    """An input or option that cannot be used (the message says which and why)."""


def _load_array(path: str, what: str) -> np.ndarray:
    file = Path(path)
    if file.is_dir():
        raise PrepareError(f"{what} {path}: is a directory, expected an .npy file")
    if not file.is_file():
        raise PrepareError(f"{what} {path}: no such file")
    lie = claims_beyond_file(file)
    if lie:
        raise PrepareError(f"{what} {path}: not a readable .npy file ({lie})")
    try:
        found = np.load(file, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        reason = " ".join(str(err).split()) or "empty or truncated file"
        if "allow_pickle" in reason:  # numpy's advice to load unsafely does not apply here
            reason = "not an .npy array: a pickle, or a text file"
        raise PrepareError(f"{what} {path}: not a readable .npy file ({reason})") from None
    if not isinstance(found, np.ndarray):  # an .npz archive
        keys = ", ".join(found.files)
        found.close()
        raise PrepareError(f"{what} {path}: an .npz archive (arrays {keys}); expected one .npy array per flag")
    return found


def _check_int64(array: np.ndarray, name: str, what: str, hint: str) -> None:
    """Unsigned values above int64's range cannot be stored as the suite's int64 arrays:
    raise :class:`PrepareError` naming the first, ``what[i] = v``, with ``hint``."""
    if array.size and np.issubdtype(array.dtype, np.unsignedinteger) and array.max() > np.iinfo(np.int64).max:
        at = int(np.argmax(array > np.iinfo(np.int64).max))
        raise PrepareError(f"{name}: {what}[{at}] = {array[at]} does not fit int64; {hint}")


# ids whose max id + 1 is more than SPARSE_SPAN times their distinct count are hashed or
# sparse (a table of max id + 1 rows would be mostly empty): refused beyond SPARSE_MIN_ROWS
# rows (the layouts hold one int64 per row), warned of below
SPARSE_SPAN, SPARSE_MIN_ROWS = 16, 10_000_000


def _refuse_sparse(indices: np.ndarray, num_vectors: int, name: str, count_flag: bool = True) -> None:
    """Check ids whose table would have ``num_vectors`` (max id + 1) rows for hashed or sparse
    ids (see ``SPARSE_SPAN``): raise :class:`PrepareError` when the table would have more than
    ``SPARSE_MIN_ROWS`` rows, else warn (the table is kept as it is, most of its rows never read)."""
    distinct = np.unique(indices).size
    if num_vectors <= SPARSE_SPAN * distinct:
        return
    count = "pass --num-vectors N if the table really has N rows, or " if count_flag else ""
    said = f"{name}: ids reach {num_vectors - 1} but only {distinct} are distinct, so the table "
    if num_vectors > SPARSE_MIN_ROWS:
        raise PrepareError(f"{said}would have {num_vectors} rows: {count}--renumber if the ids are hashed or sparse")
    cli.warn(f"{said}has {num_vectors} rows, most never read ({count}--renumber if the ids are hashed or sparse)")


# a smallest id at or above this share of a table of max id + 1 rows looks like a base offset
OFFSET_SHARE = 0.25


def _warn_unread_prefix(indices: np.ndarray, num_vectors: int, name: str, count_flag: bool = True) -> None:
    """Warn when the ids of a table of ``num_vectors`` (max id + 1) rows all lie at or above
    ``OFFSET_SHARE`` of it: rows 0..min id - 1 are never read yet are counted in the table,
    whose size sets every cache the simulations size as a fraction of it (a base offset,
    as one table's ids in a concatenated id space, changes the results). Returns None."""
    if not indices.size or not num_vectors:
        return
    low = int(indices.min())
    if low <= 0 or low < OFFSET_SHARE * num_vectors:
        return
    count = "; --num-vectors N if the table really has N rows" if count_flag else ""
    cli.warn(f"{name}: the smallest id is {low}, so rows 0..{low - 1} ({low / num_vectors:.0%} of the table of "
             f"{num_vectors} rows, max id + 1) are never read, yet caches sized as a fraction of the table count "
             f"them (--renumber if the ids carry a base offset, as one table's ids in a concatenated id space"
             f"{count})")


def _warn_minus_one(original_ids: np.ndarray, dense: np.ndarray, name: str) -> None:
    """Warn when renumbered ids (``original_ids``, ascending; ``dense`` their lookups) hold -1,
    which --renumber makes a row of its own (``traces.negative_id_hint`` says why). Returns None."""
    if not np.issubdtype(original_ids.dtype, np.signedinteger):
        return
    k = int(np.searchsorted(original_ids, -1))
    if k < original_ids.size and original_ids[k] == -1:
        lookups = int(np.count_nonzero(dense == k))
        cli.warn(f"{name}: --renumber made id -1 a row of its own, read by {lookups} of the {dense.size} "
                 "lookups; -1 is the usual id of a pruned row or of padding (a lookup that reads nothing): "
                 "if so, drop those lookups before preparing")


def check_vectors(vectors: np.ndarray, name: str) -> None:
    """Raise :class:`PrepareError`, naming ``name`` (the flag and file), unless ``vectors`` is
    what K-means can cluster: a 2-D array of real numbers, one row per vector, of at least one
    column, every value finite in float32 (the type K-means reads)."""
    if vectors.ndim != 2 or not np.issubdtype(vectors.dtype, np.number) or np.iscomplexobj(vectors):
        raise PrepareError(f"{name}: shape {vectors.shape} dtype {vectors.dtype}; expected "
                           "a 2-D array of real numbers, one row per vector")
    if vectors.shape[1] < 1:                # faiss divides by the width: a crash, not an error
        raise PrepareError(f"{name}: shape {vectors.shape}, rows of 0 columns; expected at least one value "
                           "per vector")
    with np.errstate(over="ignore"):    # K-means reads float32: one pass over what it will read
        bad = np.flatnonzero(~np.isfinite(vectors.astype(np.float32, copy=False)).all(axis=1))
    if bad.size:                        # NaN or Inf in the input itself, else beyond float32's range
        nan_inf = bad[~np.isfinite(vectors[bad]).all(axis=1)]
        if nan_inf.size:
            raise PrepareError(f"{name}: row {int(nan_inf[0])} holds NaN or Inf ({nan_inf.size} rows do)")
        raise PrepareError(f"{name}: row {int(bad[0])} holds a value beyond "
                           f"float32's range (±{float(np.finfo(np.float32).max):.3g}), which K-means reads "
                           f"({bad.size} rows do); expected vectors in float32's range")


def wide_rows_note(vectors: np.ndarray, block_bytes: int) -> str | None:
    """A note when the device row size is taken from ``vectors``' dtype and that dtype is wider
    than 4 bytes (float64, numpy's default, or int64): the rows are then ``dim x itemsize``
    bytes on the device (float64: twice float32's, half as many to a block). The note names
    the ``--vector-bytes`` of float32 and of float16 rows; None for 4 bytes or fewer."""
    if vectors.itemsize <= 4:
        return None
    dim = int(vectors.shape[1])
    size = dim * vectors.itemsize
    return (f"the device row size is taken from the vectors' dtype, {vectors.dtype}: {dim} x {vectors.itemsize} = "
            f"{size} B, {block_bytes // size} to a {block_bytes}-B block; if the device holds float32 or float16 "
            f"rows, give --vector-bytes {4 * dim} or --vector-bytes {2 * dim}")


def load_source(args: argparse.Namespace) -> dict[str, Any]:
    """The whole trace: ``{"offsets", "indices", "num_vectors", "vectors" or None, "source"}``."""
    from impls.bandana.data import dense_ids, traces

    if args.dataset:
        from impls.harness import registry

        trace_sets = registry.made_by("impls.bandana.")
        if args.dataset in registry.manifests() and args.dataset not in trace_sets:
            raise cli.UsageError(f"{args.dataset} is not a trace dataset", "--dataset",
                                 f"one of {', '.join(trace_sets)}")
        try:
            data = registry.load(args.dataset, args.profile)
        except KeyError as err:
            raise PrepareError(str(err.args[0])) from err
        vectors = data.arrays.get("vectors")
        return {"offsets": data["offsets"], "indices": data["indices"], "vectors": vectors,
                "num_vectors": int(data["community"].shape[0]),
                "source": f"dataset {args.dataset} ({profiles.resolve(args.profile)} profile, "
                          f"{'synthetic' if data.synthetic else 'real'})"}
    if args.dlrm:
        from impls.bandana.data import dlrm_loader

        try:
            table = dlrm_loader.load_dlrm_table(args.dlrm, args.table, renumber=args.renumber)
        except (OSError, ValueError, IndexError) as err:
            raise PrepareError(f"--dlrm: {err}") from err  # the message names the file
        what = f"--dlrm {args.dlrm} table {args.table}"
        if args.renumber:
            _warn_minus_one(table["original_ids"], table["indices"], what)
        else:
            _refuse_sparse(table["indices"], table["num_vectors"], what, count_flag=False)
            _warn_unread_prefix(table["indices"], table["num_vectors"], what, count_flag=False)
        return {**table, "vectors": None, "renumbered": args.renumber,
                "source": f"dlrm_datasets file {args.dlrm}, table {args.table}"}
    name = f"{args.offsets} + {args.indices}"
    offsets = _load_array(args.offsets, "--offsets")
    indices = _load_array(args.indices, "--indices")
    vectors = _load_array(args.vectors, "--vectors") if args.vectors else None
    try:                                               # before any check of the ids' values
        traces.check_one_dimensional(offsets, indices, name=name)
    except traces.TraceError as err:
        raise PrepareError(str(err)) from err
    original_ids = None
    if args.renumber:
        if vectors is not None or args.num_vectors is not None:
            raise PrepareError("--renumber numbers the ids densely: it does not go with --vectors or --num-vectors "
                               "(their rows are numbered by the input ids)")
        if not np.issubdtype(indices.dtype, np.integer):     # (1-D: checked above)
            raise PrepareError(f"{name}: indices must be a 1-D integer array, got shape {indices.shape} "
                               f"dtype {indices.dtype}")
        indices, original_ids = dense_ids.renumber(indices)
        _warn_minus_one(original_ids, indices, name)
    _check_int64(indices, name, "indices", "pass --renumber to number the ids densely")
    _check_int64(offsets, f"--offsets {args.offsets}", "offsets", "expected positions into --indices")
    if indices.size and np.issubdtype(indices.dtype, np.signedinteger) and indices.min() < 0:
        at = int(np.argmax(indices < 0))
        hint = traces.negative_id_hint(indices) or " (--renumber numbers hashed or signed ids densely)"
        raise PrepareError(f"{name}: indices[{at}] = {indices[at]} is negative; ids are table rows 0..N-1{hint}")
    if vectors is not None:
        check_vectors(vectors, f"--vectors {args.vectors}")
    num_vectors = args.num_vectors
    if num_vectors is None and vectors is not None:
        num_vectors = int(vectors.shape[0])
        if indices.size and np.issubdtype(indices.dtype, np.integer) and int(indices.max()) >= num_vectors:
            raise PrepareError(f"--vectors {args.vectors} has {num_vectors} rows but {name} uses ids up to "
                               f"{int(indices.max())}; expected a row for every id")
    if num_vectors is None:
        num_vectors = int(indices.max()) + 1 if indices.size and np.issubdtype(indices.dtype, np.integer) else 0
        _refuse_sparse(indices, num_vectors, name)
        _warn_unread_prefix(indices, num_vectors, name)
    if (args.num_vectors is not None and indices.size and np.issubdtype(indices.dtype, np.integer)
            and int(indices.max()) >= num_vectors):
        raise PrepareError(f"--num-vectors {num_vectors}: {name} uses ids up to {int(indices.max())}; expected "
                           "a table with a row for every id (at least the largest id + 1)")
    try:
        traces.validate_trace(offsets, indices, num_vectors, name=name)
    except ValueError as err:
        raise PrepareError(str(err)) from err
    if vectors is not None and vectors.shape[0] != num_vectors:
        raise PrepareError(f"--vectors {args.vectors}: shape {vectors.shape}; expected ({num_vectors}, dim)")
    found = {"offsets": offsets, "indices": indices, "vectors": vectors, "num_vectors": num_vectors,
             "renumbered": args.renumber, "source": f"files {args.offsets}, {args.indices}",
             "inputs": [p for p in (args.offsets, args.indices, args.vectors) if p]}
    if original_ids is not None:
        found["original_ids"] = original_ids
    return found


def _save(path: Path, array: np.ndarray) -> None:
    from impls.harness import atomic

    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    atomic.write_bytes(path, buffer.getvalue())


LEARNS_FROM_TRACE = ("shp", "kahypar")


_OUTPUT_NAME = re.compile(r"layout-[a-z0-9-]+\.npy|vectors\.npy|original_ids\.npy")


def _previous_outputs(out: Path) -> list[Path]:
    """The layouts, vectors and ids the ``summary.json`` a previous run left in ``out`` lists
    (inside ``out``; none when there is no readable summary)."""
    try:
        previous = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(previous, dict):
        return []
    layouts = previous.get("layouts") if isinstance(previous.get("layouts"), dict) else {}
    named = [row.get("file") for row in layouts.values() if isinstance(row, dict)]
    named += [previous.get("vectors"), previous.get("original_ids")]
    inputs = previous.get("inputs") if isinstance(previous.get("inputs"), list) else []
    kept = {Path(p).resolve() for p in inputs if isinstance(p, str)}  # its inputs were never its outputs
    # by name in ``out``: the summary's absolute paths still name the old place after a move
    found = [out / Path(p).name for p in named if isinstance(p, str) and _OUTPUT_NAME.fullmatch(Path(p).name)]
    return [p for p in found if p.resolve() not in kept]


def check_has_lookups(source: dict[str, Any]) -> None:
    """Raise :class:`PrepareError` when no query of ``source`` (:func:`load_source`'s dict)
    looks up an id: then no split gives either half a lookup, whatever ``--train-fraction``."""
    if len(source["indices"]) == 0:
        from impls.bandana.data import traces

        queries = traces.num_queries(source["offsets"])
        raise PrepareError(f"the trace has no lookup at all (every one of its {queries} queries is empty)",
                           source["source"], "expected a trace of at least one looked-up id (no split of it in "
                           "time, whatever the fraction, can give either half one)")


def unpartitioned_note(kind: str, params: dict[str, Any]) -> str | None:
    """A note when layout ``kind`` is SHP and it partitioned no vector (``params["partitioned"]``
    is 0: no training query reads two distinct ids, as in one-id-per-query traces), saying what
    the layout then is; None otherwise."""
    if kind != "shp" or params.get("partitioned") != 0:
        return None
    return ("shp partitioned nothing: no training query reads two or more distinct ids, so there is no "
            "co-access to learn and the shp layout is the training-frequency order (ids by decreasing training "
            "count, then ids never seen, in id order), not a partition")


def smaller_table_hint(source: dict[str, Any], fewer: str | None = None) -> str:
    """How to make ``source``'s table (:func:`load_source`'s dict) take less memory: for a trace
    whose ids are not renumbered and read fewer distinct ids than the table has rows,
    ``--renumber`` with that count (that many rows); for a registry dataset a smaller
    ``--profile``; else ``fewer`` (e.g. "fewer --layout at once", where the command has such a
    flag) or more memory. Counting the ids sorts a copy of the trace: where that itself runs
    out of memory, ``--renumber`` is named without the count."""
    rest = f"{fewer}, or a machine with more memory" if fewer else "a machine with more memory"
    if "renumbered" not in source:           # a registry dataset: its rows are its own
        return f"a smaller --profile, or {rest}"
    if source["renumbered"]:
        return f"the ids are renumbered already: {rest}"
    try:
        distinct = int(np.unique(source["indices"]).size)
    except MemoryError:                      # asked because memory is short: the count is a nicety
        return f"--renumber numbers the distinct ids the trace reads densely (with no --num-vectors); else {rest}"
    if distinct >= int(source["num_vectors"]):   # every row is read: renumbering leaves as many
        return rest
    return (f"--renumber numbers the {distinct:,} distinct ids the trace reads densely, a table of that many rows "
            f"(with no --num-vectors); else {rest}")


def two_level_shape(blocks: int, clusters: int | None = None, subclusters: int | None = None) -> tuple[int, int]:
    """(clusters, sub-clusters) for ``kmeans-two-level`` on a table of ``blocks`` blocks: each
    given value as it is, else at most 64 clusters and 16 sub-clusters, cut so that they make
    no more groups than blocks (beyond that, groups smaller than a block are packed in
    cluster order and a block's neighbours are unrelated; each value is at least 1)."""
    blocks = max(1, int(blocks))
    clusters = clusters if clusters is not None else min(64, blocks)
    subclusters = subclusters if subclusters is not None else max(1, min(16, blocks // max(1, clusters)))
    return clusters, subclusters


def prepare(source: dict[str, Any], kinds: Sequence[str], out: Path, *, train_fraction: float = 0.5,
            seed: int = 0, kmeans_niter: int = 10, kmeans_clusters: int | None = None,
            subclusters: int | None = None, shp_iterations: int = 8, vector_bytes: int = 128,
            block_bytes: int = 4096) -> dict[str, Any]:
    """Split ``source`` in time, build each layout of ``kinds`` on the earlier part, write ``out``.

    ``kmeans_clusters`` and ``subclusters`` shape ``kmeans-two-level``; by default
    :func:`two_level_shape` of the table's block count (more groups than blocks are warned of).

    Returns the summary that ``summary.json`` holds. Raises :class:`PrepareError` when the trace
    has no lookup, or the split leaves nothing to simulate, or nothing to learn a trace-trained
    layout (shp, kahypar) from; ``MemoryError`` before any layout is built when the table's
    per-row arrays (:func:`impls.bandana.table_memory.table_bytes`) would not fit the memory
    this process may allocate.
    Every output is written to a folder inside ``out`` and moved in at the end (then the
    previous run's outputs this one does not replace are removed, and ``summary.json`` is
    written last): a run that fails or is interrupted leaves ``out`` as it was.
    """
    from impls.bandana import table_memory
    from impls.bandana.data import traces
    from impls.bandana.experiments import simulation as experiments
    from impls.bandana.layout import kmeans_cost, layouts
    from impls.harness import atomic

    out = Path(out).absolute()  # the summary names absolute paths: a rerun from elsewhere finds them
    check_has_lookups(source)
    train, test = traces.split_in_time(source["offsets"], source["indices"], train_fraction)
    queries = traces.num_queries(source["offsets"])
    split = queries > 1            # one query goes whole to one side, whatever the fraction
    if test[1].size == 0:
        raise PrepareError(f"the later {1 - train_fraction:.0%} of the {queries} queries hold no lookup: nothing "
                           f"to simulate (a longer trace{', or a smaller --train-fraction' if split else ''})")
    learning = [k for k in kinds if k in LEARNS_FROM_TRACE]
    if learning and train[1].size == 0:
        larger = ", or a larger --train-fraction" if split else ""
        raise PrepareError(f"--layout {learning[0]} learns from the earlier {100 * train_fraction:.3g}% of the "
                           f"queries, which hold no lookup (a longer trace{larger})")
    n = int(source["num_vectors"])
    table = {"num_vectors": n, "vectors": source["vectors"], "train": train}
    per_block = layouts.vectors_per_block(vector_bytes, block_bytes)
    blocks = -(-n // per_block)
    need = table_memory.table_bytes(n, kinds, per_block, vectors=source["vectors"], writes_vectors=True)
    table_memory.check_fits(need, n, f"building the layouts {', '.join(kinds)}",
                            lambda: smaller_table_hint(source, "fewer --layout at once"))
    kmeans_clusters, subclusters = two_level_shape(blocks, kmeans_clusters, subclusters)
    if "kmeans-two-level" in kinds and kmeans_clusters * subclusters > blocks:
        cli.warn(f"kmeans-two-level: {kmeans_clusters} clusters x {subclusters} sub-clusters make up to "
                 f"{kmeans_clusters * subclusters} groups for {blocks} blocks; groups smaller than a block are "
                 "packed in cluster order, so a block's vectors are neighbours only within a cluster "
                 f"(at most {blocks} groups keep each block to one group)")
    if "kmeans" in kinds and source["vectors"] is not None:   # quadratic: say how long before it starts
        kmeans_cost.warn_if_slow(len(source["vectors"]), int(np.shape(source["vectors"])[1]), per_block,
                                 kmeans_niter, "--layout kmeans")
    sizes = {"seed": seed, "kmeans_niter": kmeans_niter, "kmeans_clusters": kmeans_clusters,
             "subclusters": [subclusters], "shp_iterations": shp_iterations}
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise PrepareError(f"--out {out}: cannot create the directory ({err.strerror or err}); expected a "
                           "directory, or a new one in a writable place") from err
    cli.sweep_stale(out, ".prepare-pid*")
    stage = cli.register(out / f".prepare-{cli.pid_tag()}")
    stage.mkdir()
    try:
        written = []
        for name, array in (("train_offsets", train[0]), ("train_indices", train[1]), ("test_offsets", test[0]),
                            ("test_indices", test[1])):
            _save(stage / f"{name}.npy", np.asarray(array, dtype=np.int64))
        _save(stage / "trace.npy", traces.flatten(*test, n))
        inputs = [Path(p).resolve() for p in source.get("inputs", ())]
        if source["vectors"] is not None:
            if (out / "vectors.npy").resolve() not in inputs:  # never overwrite the input itself
                _save(stage / "vectors.npy", source["vectors"])
            written.append("vectors.npy")
        if source.get("original_ids") is not None:
            _save(stage / "original_ids.npy", np.asarray(source["original_ids"]))
            written.append("original_ids.npy")
        summary: dict[str, Any] = {
            "source": source["source"], "num_vectors": n, "renumbered": bool(source.get("renumbered")),
            "vector_bytes": vector_bytes, "block_bytes": block_bytes, "vectors_per_block": per_block,
            "slack_bytes_per_block": block_bytes - per_block * vector_bytes,   # read with every block
            "train_fraction": train_fraction, "seed": seed,
            "train_queries": traces.num_queries(train[0]), "test_queries": traces.num_queries(test[0]),
            "test_lookups": int(test[1].size), "trace": str(out / "trace.npy"),
            "inputs": [str(p) for p in inputs], "layouts": {}}
        looked_up = np.diff(np.asarray(test[0])) > 0          # the test queries with a lookup
        summary["empty_test_queries"] = int(looked_up.size - np.count_nonzero(looked_up))
        if summary["renumbered"]:
            summary["original_ids"] = str(out / "original_ids.npy")
        if source["vectors"] is not None:
            summary["vectors"] = str(out / "vectors.npy")
        for kind in kinds:
            layout = experiments.build_layout(kind, table, sizes, per_block)
            file = out / f"layout-{kind}.npy"
            _save(stage / file.name, layout.permutation)
            written.append(file.name)
            per_query = layouts.query_fanouts(layout, *test, per_block)
            summary["layouts"][kind] = {"file": str(file), "build_seconds": layout.build_seconds,
                                        "fanout_test": float(per_query.mean()) if per_query.size else 0.0}
            if summary["empty_test_queries"] and looked_up.any():
                summary["layouts"][kind]["fanout_test_nonempty"] = float(per_query[looked_up].mean())
            note = unpartitioned_note(kind, layout.params)
            if note:
                summary["layouts"][kind]["note"] = note
        previous = _previous_outputs(out)
        (out / "summary.json").unlink(missing_ok=True)   # from here on, no summary vouches for a mix
        for staged in sorted(stage.iterdir()):
            os.replace(staged, out / staged.name)
        for path in previous:  # a previous run's outputs: they would pass for this trace's
            if path.name not in written and path.resolve() not in inputs and path.is_file():
                path.unlink()
                summary.setdefault("removed", []).append(str(path))
        atomic.write_json(out / "summary.json", summary)
        return summary
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        cli.unregister(stage)


def add_trace_arguments(parser: argparse.ArgumentParser, profile_help: str, renumbered: str = "") -> None:
    """Add the trace-source flags (one of ``--dataset``, ``--offsets``/``--indices``, ``--dlrm``,
    with ``--profile``, ``--vectors``, ``--num-vectors``, ``--table``, ``--renumber``) as a group
    of ``parser``, ``--renumber``'s help ending with ``renumbered`` (where the command writes the
    input ids); :func:`check_trace_arguments` checks them and :func:`load_source` reads them."""
    source = parser.add_argument_group("trace (one of)")
    source.add_argument("--dataset", help="a registry trace, e.g. bandana-user (datasets/*.toml)")
    cli.add_profile_option(source, profile_help)
    source.add_argument("--offsets", help=".npy int64 query offsets (CSR, starts at 0)")
    source.add_argument("--indices", help=".npy int64 vector ids of every lookup")
    source.add_argument("--vectors", help=".npy float vector values, one row per vector (K-means layouts; "
                                          "flat kmeans takes time growing as the square of the rows, hours at "
                                          "millions: its estimate is printed before it starts on a large table)")
    source.add_argument("--num-vectors", type=int, default=None, help="table size (default: from the data)")
    source.add_argument("--dlrm", help="an FBGEMM dlrm_datasets file (.pt)")
    source.add_argument("--table", type=int, default=None, help="table of the --dlrm file (default 0)")
    source.add_argument("--renumber", action="store_true",
                        help="number the ids densely 0..U-1 (hashed or sparse ids)" + renumbered)


def _parser() -> argparse.ArgumentParser:
    parser = cli.parser(prog="python -m impls.bandana.prepare", description=__doc__.splitlines()[0])
    add_trace_arguments(parser, "the dataset's size (default: DLSYSBENCH_PROFILE, else quick)",
                        "; the input ids go to original_ids.npy")
    parser.add_argument("--vector-bytes", type=int, default=None,
                        help="bytes of one vector on the device (default: the --vectors row size, else 128)")
    parser.add_argument("--block-bytes", type=int, default=4096, help="bytes of one device block (default 4096)")
    parser.add_argument("--layout", action="append", choices=LAYOUTS, required=True,
                        help="a layout to build (repeatable). kmeans (flat, one cluster a block) costs "
                             "(iterations + 1) x N x N/V x dim multiply-adds, growing as the square of the "
                             "table (seconds at 50,000 rows, hours at millions): above 1e11 its estimate is "
                             "printed before it starts; kmeans-two-level scales")
    parser.add_argument("--train-fraction", type=float, default=0.5,
                        help="share of the queries that train the layouts (default 0.5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the layout's K-means and SHP")
    parser.add_argument("--kmeans-clusters", type=int, default=None, metavar="K",
                        help="kmeans-two-level: first-level clusters (default: 64, or the table's blocks if fewer)")
    parser.add_argument("--subclusters", type=int, default=None, metavar="S",
                        help="kmeans-two-level: sub-clusters per cluster (default: 16, cut so that "
                             "clusters x sub-clusters is at most the table's blocks)")
    parser.add_argument("--out", required=True, help="directory to write the .npy files and summary.json to")
    parser.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                        help="print the summary as JSON (to FILE, or standard output with no FILE or '-')")
    return parser


def _output_names(kinds: Sequence[str]) -> list[str]:
    """The file names :func:`prepare` may write into its ``out`` directory for these layouts."""
    return ["train_offsets.npy", "train_indices.npy", "test_offsets.npy", "test_indices.npy", "trace.npy",
            "vectors.npy", "original_ids.npy", "summary.json", *(f"layout-{kind}.npy" for kind in kinds)]


TRACE_FILES = ("offsets", "indices", "vectors", "dlrm")   # the trace flags that name input files


def trace_inputs(args: argparse.Namespace) -> list[tuple[str | None, str]]:
    """``(path, flag)`` of each input file flag (:data:`TRACE_FILES`), for
    :func:`impls.harness.cli.check_output`'s ``inputs``: an output must not overwrite them."""
    return [(getattr(args, flag), "--" + flag) for flag in TRACE_FILES]


def check_trace_arguments(args: argparse.Namespace, profile_sizes_dataset_only: bool = True) -> None:
    """Raise :class:`PrepareError` unless :func:`add_trace_arguments`' flags name exactly one
    trace with only the flags that apply to it (``--profile`` only with ``--dataset`` when
    ``profile_sizes_dataset_only``); sets ``args.table`` to 0 when not given."""
    chosen = [flag for flag, on in (("--dataset", args.dataset), ("--offsets/--indices", args.offsets or args.indices),
                                    ("--dlrm", args.dlrm)) if on]
    if len(chosen) != 1:
        raise PrepareError(f"give exactly one trace: --dataset, --offsets with --indices, or --dlrm "
                           f"(got {', '.join(chosen) or 'none'})")
    if (args.offsets is None) != (args.indices is None):
        raise PrepareError("--offsets and --indices go together")
    if args.table is not None and not args.dlrm:
        raise PrepareError("--table picks a table of a --dlrm file; it does not apply to other traces")
    if args.renumber and args.dataset:
        raise PrepareError("--renumber applies to --offsets/--indices or --dlrm, not to a registry --dataset")
    for flag, given in (("--vectors", args.vectors is not None), ("--num-vectors", args.num_vectors is not None)):
        if given and not args.offsets:
            raise PrepareError(f"{flag} goes with --offsets/--indices, not with {chosen[0]} "
                               "(a registry trace or a --dlrm file brings its own table)")
    if profile_sizes_dataset_only and args.profile is not None and not args.dataset:
        raise PrepareError(f"--profile sizes a registry --dataset; it does not apply to {chosen[0]}")
    args.table = 0 if args.table is None else args.table
    if args.num_vectors is not None and not 0 < args.num_vectors <= MAX_NUM_VECTORS:
        raise PrepareError(f"--num-vectors {args.num_vectors}: expected a positive count of at most 2^40 rows")


def _check(args: argparse.Namespace) -> None:
    from impls.bandana.layout.layouts import MAX_BLOCK_BYTES

    check_trace_arguments(args)
    cli.number(args.block_bytes, "--block-bytes", minimum=512, maximum=MAX_BLOCK_BYTES, integer=True)
    if args.block_bytes % 512:
        raise cli.UsageError(f"got {args.block_bytes}", "--block-bytes", "expected a multiple of 512 (a device block)")
    if args.vector_bytes is not None:
        cli.number(args.vector_bytes, "--vector-bytes", minimum=1, maximum=args.block_bytes, integer=True)
    cli.number(args.seed, "--seed", minimum=0, maximum=2**32 - 1, integer=True)
    for value, flag in ((args.kmeans_clusters, "--kmeans-clusters"), (args.subclusters, "--subclusters")):
        if value is not None and "kmeans-two-level" not in args.layout:
            raise PrepareError(f"{flag} shapes the kmeans-two-level layout; it does not apply to --layout "
                               f"{', '.join(args.layout)} (add --layout kmeans-two-level, or drop {flag})")
        if value is not None:
            cli.number(value, flag, minimum=1, maximum=2**31 - 1, integer=True)
    if not 0.0 < args.train_fraction < 1.0:
        raise PrepareError(f"--train-fraction {args.train_fraction}: expected a number in (0, 1)")
    if "kahypar" in args.layout:
        from impls.harness import capabilities

        reason = capabilities.missing_reason("kahypar")  # the same check the registry makes
        if reason:
            raise PrepareError(f"--layout kahypar: {reason}")
    if not str(args.out).strip():
        raise cli.UsageError("got an empty path", "--out", "expected a directory to write to")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise PrepareError(f"--out {args.out}: exists and is not a directory")
    outputs = {(out / name).resolve(): name for name in _output_names(args.layout)}
    for flag in TRACE_FILES:
        path = getattr(args, flag)
        name = outputs.get(Path(path).resolve()) if path else None
        if name and not (flag == "vectors" and name == "vectors.npy"):  # prepare keeps an input vectors.npy
            raise cli.UsageError(f"{path} is {name}, which this run writes into --out", "--" + flag,
                                 "an input outside --out, or another --out")
    parent = out if out.exists() else next((p for p in out.parents if p.exists()), Path("."))
    if not os.access(parent, os.W_OK):
        raise PrepareError(f"--out {args.out}: {parent} is not writable")
    if args.json not in (None, "", "-"):
        name = outputs.get(Path(args.json).resolve())
        if name and name != "summary.json":
            raise cli.UsageError(f"{args.json} is {name}, which this run writes into --out", "--json",
                                 "another path (summary.json in --out holds the same summary)")
        target = Path(args.json).absolute()
        made_here = not target.parent.exists() and out.absolute() in (target.parent, *target.parent.parents)
        if not made_here:       # a directory under --out is made by the run itself
            cli.check_output(args.json, "--json", inputs=trace_inputs(args))


@cli.command("python -m impls.bandana.prepare",
             sizes="--num-vectors and the trace's size (a layout holds one int64 per vector)")
def main(argv: Sequence[str] | None = None) -> int:
    """Write the trace and layouts; 0 on success, 2 on bad input (checked before any work)."""
    args = _parser().parse_args(argv)
    _check(args)
    source = load_source(args)
    missing = [k for k in args.layout if k in NEEDS_VECTORS and source["vectors"] is None]
    if missing:
        raise PrepareError(f"--layout {missing[0]} needs vector values: give --vectors "
                           "(or a dataset that has them)")
    out = Path(args.out)
    created = next((p for p in reversed([out, *out.parents]) if not p.exists()), None)
    if created is not None:
        cli.register(created)  # a run that fails or is interrupted leaves no directory behind
    vector_bytes = args.vector_bytes
    if vector_bytes is None:
        vectors = source["vectors"]
        vector_bytes = int(vectors.shape[1] * vectors.itemsize) if vectors is not None else 128
        if vector_bytes > args.block_bytes:
            raise PrepareError(f"--vectors rows of {vector_bytes} bytes do not fit a {args.block_bytes}-byte block: "
                               "give --vector-bytes (the size on the device) or a larger --block-bytes")
        note = wide_rows_note(vectors, args.block_bytes) if vectors is not None else None
        if note:
            print(f"note: {note}", file=sys.stderr)
    summary = prepare(source, args.layout, out, train_fraction=args.train_fraction, seed=args.seed,
                      kmeans_clusters=args.kmeans_clusters, subclusters=args.subclusters,
                      vector_bytes=vector_bytes, block_bytes=args.block_bytes)
    if created is not None:
        cli.unregister(created)
    if args.json is not None:
        cli.emit_json(args.json or "-", summary)
    else:
        renumbered = f" (renumbered; input ids in {summary['original_ids']})" if summary["renumbered"] else ""
        print(f"{summary['source']}: {summary['num_vectors']} vector{'s' if summary['num_vectors'] != 1 else ''}{renumbered}, {summary['test_lookups']} "
              f"lookups to simulate -> {summary['trace']}; {summary['vectors_per_block']} vectors per block"
              + (f" ({summary['slack_bytes_per_block']} B of each block unused, and read)"
                 if summary["slack_bytes_per_block"] else "")
              + f": simulate with --vector-bytes {summary['vector_bytes']} --block-bytes {summary['block_bytes']}"
              + f" (replay: also --offsets {Path(summary['trace']).parent / 'test_offsets.npy'} for per-query "
                f"latencies" + ("" if summary["block_bytes"] % mmap.PAGESIZE == 0 else
                               f"; it needs --block-bytes a multiple of the page size, {mmap.PAGESIZE}") + ")")
        for kind, row in summary["layouts"].items():
            nonempty = (f" ({row['fanout_test_nonempty']:.2f} over the queries with a lookup; "
                        f"{summary['empty_test_queries']} empty ones count 0)" if "fanout_test_nonempty" in row else "")
            print(f"  {kind:<17} {row['file']}  built in {row['build_seconds']:.2f} s, "
                  f"test fanout {row['fanout_test']:.2f} blocks/query{nonempty}")
            if row.get("note"):
                print(f"    note: {row['note']}")
        for path in summary.get("removed", []):
            print(f"  removed {path} (the previous run's; not written by this one)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
