"""How the Bandana verdicts depend on a synthetic trace parameter, each an assumption.

Bandana released no trace and published no statistic of its tables that would fix the
generator's parameters (see ``datasets/README.md``), so the report's Bandana verdicts hold
for the manifests' values only. ``noise``, for one, sets how far a vector's value lies from
its community's centroid, and so how well value similarity (what K-means sees) predicts
co-access. This script regenerates a table at each value of ``--param`` (every other
parameter from its manifest at ``--profile``), runs the suite's own sub-cluster sweep and
layout × policy experiment on it, and prints per value:

- ``kmeans2L position``: where two-level K-means (the largest sub-cluster count) lands on the
  test trace's fanout between a random layout (0) and packing the generator's true
  communities (1);
- ``subcluster rho``: Spearman's rho of effective bandwidth against the sub-cluster count
  (claim ``bandana-subclusters-raise-effective-bandwidth``);
- ``headline``: the headline ratio and the configuration chosen on the training trace
  (claim ``bandana-effective-bandwidth-gain``).

``--param seed`` keeps every assumption the manifest's and draws the trace again with each
seed given: how far one draw moves the verdicts (the report measures one; the Salus
script's counterpart is ``--param none --seeds N``).

Usage::

    python scripts/bandana_trace_sensitivity.py --table bandana-user --profile smoke \\
        --param noise --values 0.25 0.5 0.75 1.0 1.25 1.5

Output: one line per value on stdout (``--json FILE`` also writes the rows, as strict JSON; with
``--json -`` the rows are standard output's one JSON document and the lines go to stderr).
Every value (by the generator's own check, and prepare's of the vectors) and the ``--json``
path are checked before any work. Runs
in this process (``DLSYSBENCH_DASK_SCHEDULER=serial`` unless set), so it is deterministic and light on a small machine.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


def regenerate(table: str, profile: str, param: str, value: float, **sizes) -> dict[str, np.ndarray]:
    """The arrays of registry trace ``table`` at ``profile``'s sizes (or ``sizes``' overrides)
    with ``param`` set to ``value`` (every other parameter and the seed the manifest's);
    ``param == "seed"``: every parameter the manifest's, drawn with seed ``value``."""
    from impls.bandana.data import traces
    from impls.harness import registry

    manifest = registry.manifests()[table]
    base = {**registry.recipe_params(manifest, profile), **sizes}
    if param == "seed":
        return traces.generate_trace(int(value), **base)
    return traces.generate_trace(manifest.spec["seed"], **{**base, param: value})


def check_value(table: str, profile: str, param: str, value: float) -> None:
    """Raise ValueError (the generator's own message, or prepare's check of vectors K-means
    can cluster) when ``param`` set to ``value`` would not give a usable trace: the generator
    is run at one vector and one lookup, so the check costs next to nothing."""
    from impls.bandana import prepare

    with np.errstate(over="ignore"):            # a value beyond float32 is prepare's to name
        arrays = regenerate(table, profile, param, value, num_vectors=1, num_lookups=1, with_vectors=True)
    prepare.check_vectors(arrays["vectors"], "the trace's vectors")


def _rows(table: str, profile: str, param: str, values: list[float], stream=None) -> list[dict]:
    from impls.bandana.experiments import simulation
    from impls.bandana.geometry import BLOCK_BYTES, VECTOR_BYTES
    from impls.bandana.layout import layouts
    from impls.harness import registry
    from impls.harness.report.measure import spearman

    s = dict(simulation.sizes(profile), tables=[table], subcluster_tables=[table])
    per_block = BLOCK_BYTES // VECTOR_BYTES
    rows = []
    for value in values:
        arrays = regenerate(table, profile, param, value)
        data = simulation.table_from_trace(table, arrays, s["train_fraction"], synthetic=True)
        sweep = simulation.subcluster_sweep(s, progress=False, table_of=lambda _: data)["tables"][table]
        policy = simulation.layout_policy_experiment(s, progress=False, table_of=lambda _: data)
        headline = policy["tables"][table]["headline"]
        test = data["test"]
        random_fanout = layouts.fanout(layouts.random_layout(data["num_vectors"], seed=0), *test, per_block)
        packed = np.argsort(arrays["community"], kind="stable")       # the true communities, packed
        packed_fanout = layouts.fanout(packed, *test, per_block)
        kmeans_fanout = sweep[-1]["fanout_test"]
        bandwidth = [p["effective_bandwidth"] for p in sweep]
        rho = spearman([p["subclusters"] for p in sweep], bandwidth)   # as the report measures the claim
        rows.append({
            "table": table, "profile": profile, "param": param, "value": value,
            "kmeans2L_position": (random_fanout - kmeans_fanout) / (random_fanout - packed_fanout),
            "subcluster_rho": float(rho), "subcluster_bandwidth": bandwidth,
            "headline_ratio": headline["ratio"],
            "headline_chosen": f"{headline['best']['layout']}/{headline['best']['policy']}",
        })
        r = rows[-1]
        shown = value if isinstance(value, int) else format(value, "g")
        print(f"{table} {profile} {param} {shown:<5} kmeans2L position {r['kmeans2L_position']:.2f}  "
              f"subcluster rho {r['subcluster_rho']:+.2f}  headline {r['headline_ratio']:.2f}x "
              f"({r['headline_chosen']})", file=stream or sys.stdout, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", default="bandana-user", help="a bandana-* dataset (default bandana-user)")
    from impls.harness import cli, profiles, registry

    cli.add_profile_option(parser, "the trace's sizes (default: DLSYSBENCH_PROFILE, else quick)")
    parser.add_argument("--param", default="noise",
                        help="a numeric generator parameter of the table's [synthetic.params], or seed (the "
                             "trace drawn again with each seed) (default noise)")
    parser.add_argument("--values", type=float, nargs="+", default=[0.25, 0.5, 0.75, 1.0, 1.25, 1.5],
                        help="values of --param, one row each: finite and >= 0, whole numbers for a whole-number "
                             "parameter, within the generator's own limits (default 0.25 0.5 0.75 1 1.25 1.5, "
                             "for noise)")
    parser.add_argument("--json", help="also write the rows to this file (checked before any work)")
    args = parser.parse_args(argv)
    try:
        args.profile = profiles.resolve(args.profile)
    except profiles.ProfileError as err:
        parser.error(str(err))
    if not args.table.startswith("bandana-") or args.table not in registry.manifests():
        parser.error(f"--table {args.table!r} is no bandana-* dataset")
    shape = registry.manifests()[args.table].spec.get("params", {})    # the assumptions, not the sizes
    numeric = sorted(k for k, v in shape.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
    if args.param == "seed":                  # the draw itself: every assumption the manifest's
        shape = {**shape, "seed": 0}
        numeric.append("seed")
    if args.param not in numeric:
        parser.error(f"--param {args.param!r} is no numeric shape parameter of {args.table} ([synthetic.params]); "
                     f"expected one of {', '.join(numeric)}, or seed (another draw)")
    if any(not (np.isfinite(v) and v >= 0) for v in args.values):
        parser.error("--values must be finite and >= 0")
    if isinstance(shape[args.param], int) and any(v != int(v) for v in args.values):
        parser.error(f"--param {args.param} takes whole numbers; got {', '.join(f'{v:g}' for v in args.values)}")
    values = [type(shape[args.param])(v) for v in args.values]
    for value in values:                        # every value before any work
        try:
            check_value(args.table, args.profile, args.param, value)
        except ValueError as err:
            parser.error(f"--param {args.param} --values {value:g}: {err}")
    try:
        cli.check_output(args.json, "--json")
    except cli.UsageError as err:
        parser.error(str(err))
    import os

    from impls.harness import grid

    os.environ.setdefault(grid.ENV_SCHEDULER, "serial")
    rows = _rows(args.table, args.profile, args.param, values, cli.lines_to(args.json))
    try:
        cli.emit_json(args.json, rows)
    except cli.UsageError as err:
        parser.error(str(err))
    return 0


if __name__ == "__main__":
    sys.exit(main())
