"""Command line of the replay: ``python -m impls.bandana.replay --trace T.npy --layout P.npy --capacity C
--policy P [--queue-depth Q] [--json [FILE|-]]`` builds a store in the layout, replays the trace
through the DRAM cache with O_DIRECT reads, runs fio on the same file, and removes the store
(the engine: :mod:`impls.bandana.nvm.replay`). ``p50_query_us``/``p99_query_us`` are over the
queries that look up at least one id; queries of no lookup (empty bags in ``--offsets``) are
counted in ``empty_queries`` and, when there are any, said on stderr."""
from __future__ import annotations

import mmap
import os
import sys
from pathlib import Path

import numpy as np

from impls.bandana.cache import (add_geometry_flags, check_prepared_geometry, check_prepared_pair, check_size_flags,
                                 load_ids, load_trace_and_layout, size_fields, warn_if_whole_table)
from impls.bandana.nvm import block_store, direct_io
from impls.bandana.nvm.replay import (ReplayError, cross_check, default_store_path, fio_iops_why, replay,
                                      store_location, sweep_stale_stores)
from impls.bandana.sim import cache
from impls.harness import cli, paths


def cli_command():
    return cli.command("python -m impls.bandana.replay",
                       (block_store.StoreError, block_store.DirectIOUnavailable, ReplayError))


MAX_QUEUE_DEPTH = 1024
MIN_TRUSTED_SECONDS = 1.0
WARM_UP_LOOKUPS = 16384


def _aio_room() -> int | None:
    """Events the kernel's AIO still allows (``aio-max-nr - aio-nr``), None when unknown."""
    try:
        total = int(Path("/proc/sys/fs/aio-max-nr").read_text())
        used = int(Path("/proc/sys/fs/aio-nr").read_text())
    except (OSError, ValueError):
        return None
    return total - used


def _check_offsets(offsets: np.ndarray, n_lookups: int, flag: str) -> np.ndarray:
    """Return ``offsets`` as int64 CSR query offsets (1-D, from 0 to ``n_lookups``, never
    decreasing); raises :class:`cli.UsageError` naming ``flag`` otherwise. An unsigned
    array is compared as signed values: its differences would wrap around, not go below 0."""
    signed = offsets.astype(np.int64) if offsets.ndim == 1 and offsets.size else offsets
    if offsets.ndim != 1 or offsets.size == 0 or offsets[0] != 0 or offsets[-1] != n_lookups \
            or np.any(np.diff(signed) < 0):
        raise cli.UsageError(f"offsets of shape {offsets.shape} are not CSR query offsets", flag,
                             f"expected a non-decreasing 1-D array from 0 to the trace length {n_lookups}")
    return signed


def _check_store_path(args) -> tuple[Path, str]:
    """``(store path, setting)``: the new file the store goes to, and what chose its folder
    (``--path``, ``DLSYSBENCH_CACHE`` or ``DLSYSBENCH_NVM_PATH``, as an error names it);
    raises :class:`cli.UsageError` when the folder is missing or not writable, or the file exists."""
    if args.path:
        path = Path(args.path)
        if not path.parent.is_dir():
            raise cli.UsageError(f"directory {path.parent} does not exist", "--path",
                                 "expected a new file in an existing directory")
    else:
        path = default_store_path()
        if path.parent == paths.cache_dir():
            cli.register_new_dir(path.parent)      # the suite's own directory
        if not path.parent.is_dir():
            raise cli.UsageError(f"directory {path.parent} does not exist",
                                 "the store's default directory (beside DLSYSBENCH_NVM_PATH)",
                                 "expected an existing directory, or give --path")
    setting = "--path" if args.path else f"{store_location()[1]} (or --path)"   # what chose the store's folder
    if path.exists():
        raise cli.UsageError(f"{path} exists", setting,
                             "expected a new file: the replay only creates (and then removes) its own store")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise cli.UsageError(f"directory {path.parent} is not writable", setting,
                             "expected a writable directory for the store")
    return path, setting



def warm_up_queries(offsets: np.ndarray) -> int:
    """How many leading queries of CSR ``offsets`` (at least two entries) the untimed warm-up
    replays: the fewest that hold ``WARM_UP_LOOKUPS`` lookups, or all of the trace's (at least
    one query; leading empty queries never leave it without a lookup where the trace has one)."""
    target = min(WARM_UP_LOOKUPS, int(offsets[-1]))
    return max(1, min(int(np.searchsorted(offsets, target, side="left")), offsets.shape[0] - 1))

@cli_command()
def main(argv: list[str] | None = None) -> int:
    """Command line: build a random store in the layout, replay, fio, print; exit 2 on bad input.

    Everything is validated before the store is written; the store is removed on every
    exit (exceptions, SIGINT, SIGTERM) and a store left by a killed run (its pid is in
    the name) is removed by the next run. An untimed replay of the trace's first
    ``WARM_UP_LOOKUPS`` lookups on a cold cache runs first, so first-call costs are not
    timed; a timed part shorter than ``MIN_TRUSTED_SECONDS`` is reported as such.
    """
    parser = cli.parser(
        prog="python -m impls.bandana.replay",
        description="Replay a trace of vector ids through Bandana's DRAM cache against an O_DIRECT "
                    "block store, next to fio's random-read IOPS (blocks of --block-bytes) on the same file.")
    parser.add_argument("--trace", required=True, help=".npy int64 array of vector ids in lookup order")
    parser.add_argument("--offsets", default=None,
                        help=".npy CSR query offsets into the trace (prepare writes test_offsets.npy); "
                             "default: one lookup per query, so a query the DRAM cache serves takes 0 us. "
                             "p50/p99_query_us are over the queries that look up at least one id: queries "
                             "of no lookup (empty bags) are counted in empty_queries, said on stderr, and "
                             "left out")
    parser.add_argument("--layout", required=True,
                        help=".npy int64 storage-order permutation (position i holds vector layout[i])")
    parser.add_argument("--capacity", required=True, type=int, help="cache size in vectors")
    parser.add_argument("--policy", required=True, choices=cache.POLICIES)
    parser.add_argument("--shadow", type=int, default=None, help="shadow-set size (policy shadow)")
    add_geometry_flags(parser)
    parser.add_argument("--queue-depth", type=int, default=1,
                        help=f"block reads in flight (1..{MAX_QUEUE_DEPTH})")
    parser.add_argument("--mechanism", choices=direct_io.MECHANISMS, default=None,
                        help="I/O mechanism (default: libaio where it works, else threads)")
    parser.add_argument("--path", default=None,
                        help="store file to create (must not exist; its directory must). Default: "
                             "beside DLSYSBENCH_NVM_PATH when that is a file; in DLSYSBENCH_CACHE "
                             "(datasets/cache/) when it is a block device, which is never written")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random table")
    parser.add_argument("--fio-runtime", type=float, default=2.0, help="seconds fio measures")
    parser.add_argument("--no-fio", action="store_true", help="skip fio (fio_iops is null)")
    cli.add_json_option(parser, "the counters and rates (effective_bandwidth: useful bytes over bytes read, "
                                "0..1; capacity and shadow in vectors)")
    args = parser.parse_args(argv)
    # everything is checked before the store is written
    check_prepared_geometry(args)          # first: the least --capacity depends on the geometry
    _, capacity, shadow = check_size_flags(args, mmap.PAGESIZE, " (the page size: O_DIRECT reads into page-aligned "
                                                               "buffers of one block each)")
    cli.number(args.queue_depth, "--queue-depth", minimum=1, maximum=MAX_QUEUE_DEPTH, integer=True)
    room = _aio_room()
    if (args.mechanism or direct_io.default_mechanism()) == "libaio" and room is not None \
            and args.queue_depth > room:
        raise cli.UsageError(f"--queue-depth {args.queue_depth} exceeds the {room} AIO events the kernel "
                             f"still allows (/proc/sys/fs/aio-max-nr)", "--queue-depth",
                             "expected a smaller queue depth, or --mechanism threads")
    cli.number(args.seed, "--seed", minimum=0, maximum=2**32 - 1, integer=True)
    if not args.no_fio:
        cli.number(args.fio_runtime, "--fio-runtime", minimum=0, exclusive_min=True, maximum=3600)
    cli.check_output(args.json, "--json", inputs=((args.trace, "--trace"), (args.layout, "--layout"),
                                                  (args.offsets, "--offsets")))
    trace, layout = load_trace_and_layout(args)
    check_prepared_pair(args, layout)      # after the files are read: no warning before their error
    offsets = (_check_offsets(load_ids(args.offsets, "offsets"), trace.shape[0], f"--offsets {args.offsets}")
               if args.offsets else np.arange(trace.shape[0] + 1, dtype=np.int64))
    path, setting = _check_store_path(args)
    target = block_store.check_target(path, setting)     # refused: nothing touched
    # before the table is built: it takes as much memory as the store takes disk
    block_store.check_free_space(target, block_store.store_file_bytes(layout.shape[0], args.vector_bytes,
                                                                      args.block_bytes))
    warn_if_whole_table(args.capacity, layout.shape[0])  # after every refusal
    sweep_stale_stores(path.parent, path.name if args.path else None)
    table = block_store.random_table(layout.shape[0], args.vector_bytes, args.seed)
    cli.register(path)
    try:
        block_store.write_store(path, table, layout, args.block_bytes, setting)
        kwargs = dict(queue_depth=args.queue_depth, mechanism=args.mechanism, table=table)
        policy_shadow = shadow if args.policy == "shadow" else None
        with block_store.open_store(path, layout) as store:
            # untimed warm-up on a cold cache of its own: first-call costs stay out of the rates
            if offsets.shape[0] > 1:
                q_warm = warm_up_queries(offsets)
                replay(store, offsets[:q_warm + 1], trace[:offsets[q_warm]], layout, capacity,
                       args.policy, policy_shadow, verify="none", **{k: v for k, v in kwargs.items() if k != "table"})
            cli.fault_point("replay")
            result = replay(store, offsets, trace, layout, capacity, args.policy, policy_shadow, **kwargs)
        check = cross_check(result, trace, layout, capacity, args.policy, shadow,
                            args.vector_bytes, args.block_bytes)
        result["simulator_match"] = check["match"]
        point, why = (None, "--no-fio") if args.no_fio else fio_iops_why(
            path, args.queue_depth, args.fio_runtime, min(0.5, args.fio_runtime / 4), path.stat().st_size,
            args.block_bytes)
        result["fio_iops"] = point["iops"] if point else None
        result["fio_engine"] = point["engine"] if point else None
        result["fio_no_value"] = why or None
    finally:
        path.unlink(missing_ok=True)
        cli.unregister(path)
    if result["seconds"] < MIN_TRUSTED_SECONDS:
        cli.warn(f"the timed replay lasted {result['seconds']:.3f} s (< {MIN_TRUSTED_SECONDS:g} s): its rates "
                 f"still carry fixed per-run costs and are not to be trusted; replay a longer trace")
    if result["empty_queries"]:
        cli.warn(f"{result['empty_queries']} of the {result['queries']} queries in --offsets {args.offsets} look "
                 f"up no id (empty_queries): p50_query_us and p99_query_us are over the other "
                 f"{result['queries'] - result['empty_queries']}")
    result = {**size_fields(args), **result, "store_directory": str(path.parent)}  # the drive measured
    if not cli.emit_json(args.json, result):
        width = max(len(k) for k in result)
        for key, value in result.items():
            print(f"{key:<{width}}  {value:.4f}" if isinstance(value, float) else f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
