"""Command line of the DRAM-cache simulator: ``python -m impls.bandana.cache --trace T.npy --layout P.npy
--capacity C --policy P [--shadow S] [--json [FILE|-]]`` (the engine: :mod:`impls.bandana.sim.cache`)."""
from __future__ import annotations

import filecmp
import json
import os
import sys
from pathlib import Path

import numpy as np

from impls.bandana.data.npy_header import claims_beyond_file
from impls.bandana.layout.layouts import MAX_BLOCK_BYTES
from impls.bandana.sim.cache import POLICIES, CacheConfigError, CacheResult, simulate
from impls.harness import cli


def load_ids(path: str, what: str) -> np.ndarray:
    """The 1-D integer array in ``.npy`` file ``path`` (``what`` names it in errors)."""
    if os.path.isdir(path):
        raise CacheConfigError(f"{what} file {path}: is a directory, expected an .npy file")
    lie = claims_beyond_file(path)
    if lie:
        raise CacheConfigError(f"{what} file {path}: cannot read an .npy array ({lie}), "
                               f"expected a 1-D integer .npy array")
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        reason = " ".join(str(exc).split()) or "empty or truncated file"
        if "allow_pickle" in reason:  # numpy's advice to load unsafely does not apply here
            reason = "not an .npy array: a pickle, or a text file"
        raise CacheConfigError(f"{what} file {path}: cannot read an .npy array ({reason}), "
                               f"expected a 1-D integer .npy array") from None
    if not isinstance(arr, np.ndarray) and hasattr(arr, "files"):    # np.load of an .npz archive
        names = ", ".join(arr.files)
        arr.close()
        raise CacheConfigError(f"{what} file {path}: an .npz archive (arrays {names}), expected one 1-D "
                               f"integer .npy array")
    if not isinstance(arr, np.ndarray) or arr.ndim != 1 or not (
            arr.size == 0 or arr.dtype.kind in "iu"):     # numpy counts timedelta64 as an integer
        raise CacheConfigError(
            f"{what} file {path}: expected a 1-D integer array, got "
            f"{getattr(arr, 'dtype', type(arr))} of shape {getattr(arr, 'shape', '?')}")
    return arr


def warn_if_whole_table(capacity: int, num_vectors: int) -> None:
    """Warn when a cache of ``capacity`` vectors holds all ``num_vectors``: nothing is evicted,
    so only first reads miss (the headline calls such a size not judged)."""
    if capacity >= num_vectors:
        cli.warn(f"--capacity {capacity} holds the whole table ({num_vectors} vectors): nothing is ever evicted, "
                 "so only each vector's first read can miss")


def load_trace_and_layout(args) -> tuple[np.ndarray, np.ndarray]:
    """``--trace`` and ``--layout`` loaded and checked (a permutation; ids within it), as
    contiguous int64; a problem is a :class:`cli.UsageError` naming the flag and its file."""
    from impls.bandana.sim.cache import check_layout, check_trace

    trace, layout = load_ids(args.trace, "trace"), load_ids(args.layout, "layout")
    try:
        layout = check_layout(layout)
    except CacheConfigError as err:
        raise cli.UsageError(str(err), f"--layout {args.layout}",
                             "expected each vector id of the table once (the storage order)") from None
    if layout.size == 0:
        raise cli.UsageError("no vectors", f"--layout {args.layout}", "expected a table of at least one vector")
    try:
        trace = check_trace(trace, layout.shape[0])
    except CacheConfigError as err:
        raise cli.UsageError(str(err), f"--trace {args.trace}", "expected ids of the layout's vectors") from None
    if trace.size == 0:
        raise cli.UsageError("no lookups", f"--trace {args.trace}",
                             "expected at least one vector id (an empty trace has no effective bandwidth)")
    return trace, layout


def check_size_flags(args, block_multiple: int = 1, why: str = "") -> tuple[int, int, int]:
    """``(per_block, capacity, shadow)`` from ``--vector-bytes``, ``--block-bytes``,
    ``--capacity``, ``--policy`` and ``--shadow`` (shadow 0 unless the policy is shadow);
    raises :class:`cli.UsageError` naming the flag. ``--block-bytes`` must be a multiple of
    ``block_multiple`` (``why`` says what needs it). A vector that does not divide a block
    leaves slack at the block's end (``per_block = block // vector``)."""
    cli.number(args.block_bytes, "--block-bytes", minimum=1, integer=True)
    if args.block_bytes % block_multiple:       # with its reason: a block smaller than the multiple too
        raise cli.UsageError(f"got {args.block_bytes}", "--block-bytes",
                             f"expected a multiple of {block_multiple}{why}")
    cli.number(args.block_bytes, "--block-bytes", minimum=block_multiple, maximum=MAX_BLOCK_BYTES, integer=True)
    cli.number(args.vector_bytes, "--vector-bytes", minimum=1, maximum=args.block_bytes, integer=True)
    per_block = args.block_bytes // args.vector_bytes
    if args.capacity < per_block:
        raise cli.UsageError(f"got {args.capacity}", "--capacity",
                             f"expected at least one block's {per_block} vectors (--block-bytes // --vector-bytes)")
    if args.policy != "shadow":
        if args.shadow is not None:
            raise cli.UsageError(f"got {args.shadow} with --policy {args.policy}", "--shadow",
                                 "expected only with --policy shadow")
        return per_block, args.capacity, 0
    if args.shadow is None or args.shadow < args.capacity:
        got = "--policy shadow without it" if args.shadow is None else f"got {args.shadow}"
        raise cli.UsageError(got, "--shadow", f"expected the shadow set's size, at least --capacity {args.capacity}")
    return per_block, args.capacity, args.shadow


def _summary_beside(path: str, vouches) -> tuple[Path, dict] | None:
    """``(path, content)`` of the ``summary.json`` in ``path``'s folder when it is a prepare
    summary (a JSON object) and ``vouches(summary, file name)`` holds; None otherwise."""
    summary_path = Path(path).parent / "summary.json"
    try:
        summary = json.loads(summary_path.read_text())
        if isinstance(summary, dict) and vouches(summary, Path(path).name):
            return summary_path, summary
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def _lists_layout(summary: dict, name: str) -> bool:
    """Whether a prepare summary lists a layout file called ``name`` (by name: its absolute
    paths still name the old place after the folder is moved)."""
    return name in {Path(str(entry["file"])).name for entry in summary["layouts"].values()}


def _names_trace(summary: dict, name: str) -> bool:
    return Path(str(summary["trace"])).name == name


# the summary fields that follow from the input data and its split (not the layouts, the
# seed or the geometry, which the trace does not depend on); ``source`` names input paths
_SPLIT_FIELDS = ("num_vectors", "renumbered", "train_fraction", "train_queries", "test_queries", "test_lookups")
# the files of a split that prepare writes beside its trace, by name
_SPLIT_FILES = ("train_offsets.npy", "train_indices.npy", "test_offsets.npy")


def _split_difference(trace: Path, trace_summary_path: Path, trace_summary: dict,
                      layout_summary_path: Path, layout_summary: dict) -> str | None:
    """How the prepare run whose summary vouches for ``trace`` and the one whose summary lists the
    layout split other data, as one clause; None when they split the same data the same way.
    Compared: the :data:`_SPLIT_FIELDS` both summaries hold, then the bytes of ``trace`` against
    the trace in the layout's folder and of each :data:`_SPLIT_FILES` in both folders (by name,
    where both are readable files: a file that is gone leaves the fields to decide). Paths the
    summaries record are not compared: two ``--out`` folders of one command are one pair."""
    for key in _SPLIT_FIELDS:
        ours, theirs = trace_summary.get(key), layout_summary.get(key)
        if ours is not None and theirs is not None and ours != theirs:
            return f"{trace_summary_path} says {key} {ours} but {layout_summary_path} says {theirs}"
    layout_dir = layout_summary_path.parent
    pairs = [(trace, layout_dir / Path(str(layout_summary.get("trace", "trace.npy"))).name)]
    pairs += [(trace.parent / name, layout_dir / name) for name in _SPLIT_FILES]
    for ours, theirs in pairs:
        try:
            if ours.is_file() and theirs.is_file() and not filecmp.cmp(ours, theirs, shallow=False):
                return f"{ours} differs from {theirs}, which --layout was prepared with"
        except OSError:
            continue                                  # unreadable: the fields decided
    return None


def check_prepared_geometry(args) -> None:
    """Refuse ``--vector-bytes`` / ``--block-bytes`` other than those ``prepare`` built the
    ``--layout`` file for, when the ``summary.json`` beside it lists that file: a layout packs
    ``block // vector`` vectors a block, and another geometry simulates another layout. Raises
    :class:`cli.UsageError` naming the flag. Run before :func:`check_size_flags`, whose least
    ``--capacity`` (one block's vectors) depends on the geometry. A layout without such a
    summary is not checked here (:func:`check_prepared_pair` warns about it)."""
    found = _summary_beside(args.layout, _lists_layout)
    if found is None:
        return
    summary_path, summary = found
    for flag, key in (("--vector-bytes", "vector_bytes"), ("--block-bytes", "block_bytes")):
        built, given = summary.get(key), getattr(args, key)
        if isinstance(built, int) and built != given:
            got = f"{given} (the default: {flag} not given)" if isinstance(given, _Default) else given
            raise cli.UsageError(f"got {got}", flag, f"expected {built}: {summary_path} says "
                                 f"{Path(args.layout).name} was built for {key.replace('_', ' ')} {built} "
                                 f"(pass {flag} {built})")


def check_prepared_pair(args, layout: np.ndarray) -> None:
    """Refuse a ``--trace`` and a loaded ``--layout`` that two ``prepare`` runs wrote: when the
    ``summary.json`` beside the trace names it, its ``num_vectors`` must be the layout's length,
    and when the layout's own summary is another file, both runs must have split the same data
    the same way (:func:`_split_difference`; two folders of one command are one pair).
    Raises :class:`cli.UsageError` naming ``--trace``. Then warns when no summary vouches for
    the layout's geometry and a geometry flag was left at its default (a layout moved away
    from its summary would otherwise be simulated with another geometry, silently). Run after
    the files are read (no warning before their error); leaves both flags as plain ints."""
    defaulted = [f"{flag} {getattr(args, key)}" for flag, key in (("--vector-bytes", "vector_bytes"),
                                                                   ("--block-bytes", "block_bytes"))
                 if isinstance(getattr(args, key), _Default)]
    args.vector_bytes, args.block_bytes = int(args.vector_bytes), int(args.block_bytes)   # plain ints from here
    of_layout = _summary_beside(args.layout, _lists_layout)
    of_trace = _summary_beside(args.trace, _names_trace)
    if of_trace is not None:
        trace_summary_path, trace_summary = of_trace
        fix = "pass the trace and a layout of one prepare run (its --out folder)"
        count = trace_summary.get("num_vectors")
        if isinstance(count, int) and count != layout.shape[0]:
            raise cli.UsageError(f"{trace_summary_path} says the trace is over {count} vectors but --layout "
                                 f"{args.layout} orders {layout.shape[0]}", f"--trace {args.trace}", fix)
        if of_layout is not None and of_layout[0].resolve() != trace_summary_path.resolve():
            differs = _split_difference(Path(args.trace), trace_summary_path, trace_summary, *of_layout)
            if differs:
                raise cli.UsageError(f"{differs}: the trace and --layout {args.layout} come from two prepare "
                                     "runs of other data", f"--trace {args.trace}", fix)
    if of_layout is None and defaulted:             # nothing vouches for a geometry
        cli.warn(f"--layout {args.layout}: no summary.json beside it records the geometry it was built for, "
                 f"so the default {' and '.join(defaulted)} {'are' if len(defaulted) > 1 else 'is'} assumed; "
                 "pass the values prepare printed for it if they differ (a layout packs block // vector "
                 "vectors a block)")


def size_fields(args) -> dict:
    """The sizes a result was run with, as its JSON records them."""
    out = {"policy": args.policy, "capacity": args.capacity}
    if args.policy == "shadow":
        out["shadow"] = args.shadow
    return {**out, "vector_bytes": args.vector_bytes, "block_bytes": args.block_bytes}


class _Default(int):
    """A flag's default value, told apart from the same number typed by the user."""


def add_geometry_flags(parser) -> None:
    """``--vector-bytes`` and ``--block-bytes``, with their units and defaults."""
    parser.add_argument("--vector-bytes", type=int, default=_Default(128),
                        help="bytes of one embedding vector (default 128; what prepare printed for its layouts)")
    parser.add_argument("--block-bytes", type=int, default=_Default(4096),
                        help="bytes the NVM reads at a time (default 4096; a layout packs "
                             "block // vector vectors a block)")


def _format_table(result: CacheResult, args) -> str:
    rows = [*size_fields(args).items(), *result.to_dict().items()]
    rows.insert(rows.index(("misses", result.misses)), ("hit_rate", f"{result.hit_rate:.4f}"))
    width = max(len(k) for k, _ in rows)
    lines = []
    for key, value in rows:
        if isinstance(value, float):
            value = f"{value:.4f}"
        lines.append(f"{key:<{width}}  {value}")
    return "\n".join(lines)


@cli.command("python -m impls.bandana.cache")
def main(argv: list[str] | None = None) -> int:
    """Command line: simulate one trace through one cache; exit 2 on bad input."""
    parser = cli.parser(
        prog="python -m impls.bandana.cache",
        description="Simulate Bandana's DRAM cache over block NVM on a trace of vector ids.")
    parser.add_argument("--trace", required=True, help=".npy int64 array of vector ids in lookup order")
    parser.add_argument("--layout", required=True,
                        help=".npy int64 storage-order permutation (position i holds vector layout[i])")
    parser.add_argument("--capacity", required=True, type=int, help="cache size in vectors")
    parser.add_argument("--policy", required=True, choices=POLICIES)
    parser.add_argument("--shadow", type=int, default=None, help="shadow-set size (policy shadow)")
    add_geometry_flags(parser)
    cli.add_json_option(parser, "the counters (effective_bandwidth: useful bytes over bytes read, 0..1; "
                                "capacity and shadow in vectors)")
    args = parser.parse_args(argv)
    check_prepared_geometry(args)          # first: the least --capacity depends on the geometry
    check_size_flags(args)
    cli.check_output(args.json, "--json", inputs=((args.trace, "--trace"), (args.layout, "--layout")))
    trace, layout = load_trace_and_layout(args)
    check_prepared_pair(args, layout)      # after the files are read: no warning before their error
    warn_if_whole_table(args.capacity, layout.shape[0])
    result = simulate(trace, layout, args.capacity, args.policy, args.shadow,
                      args.vector_bytes, args.block_bytes)
    if not cli.emit_json(args.json, {**size_fields(args), **result.to_dict(), "hit_rate": result.hit_rate}):
        print(_format_table(result, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
