"""How the Salus JCT verdict (FIFO's average JCT over SRTF's) depends on the trace's assumptions.

The report's claim ``salus-jct-srtf-vs-fifo`` (the paper's 3.19×) is measured on one Poisson
trace drawn by :func:`impls.salus.core.traces.poisson_trace` at ``[salus_policies.<profile>]``:
its arrival rate, its job lengths (log-uniform between two bounds) and its seed are chosen
by the suite; the paper's own trace was not published. This script draws the same trace
with one assumption changed, simulates FIFO and SRTF on it with the suite's simulator (the
one the report draws beside each real run, with this machine's profiled iteration times, as
the experiment's ``paper_sized_sim``), and prints per value the ratio's median and its 5-95%
range over ``--seeds`` draws, with the draw at the profile's own seed. Parameters:

- ``load``: the offered load (arrival rate × mean job length); the mean gap between arrivals
  is set to the lengths' mean over ``load``;
- ``spread``: the ratio of the longest to the shortest job length, at the same mean length
  (so the load stays put);
- ``n_jobs``: the trace's length;
- ``none``: the profile's own values, over seeds only.

Other draws at the profile's own values: ``--param none --seeds N`` (the Bandana script's
counterpart is ``--param seed --values ...``).

``--trace real`` (default) varies the trace the real runs use (n_jobs, mean_interarrival_s,
duration_s); ``--trace sim`` the paper-sized simulated one (sim_*). ``--lengths A,B,...``
(seconds) draws each job's length from those values, each as likely, instead of the
log-uniform range (with ``load``, ``n_jobs`` or ``none``): e.g. ``60,300,600`` for jobs of
1, 5 and 10 minutes, the lengths the Salus repository's workload list gives each model.

Usage::

    python scripts/salus_trace_sensitivity.py --profile quick --param load --values 0.5 0.8 1 1.5 2 4

One line per value on stdout (``--json FILE`` also writes the rows; with ``--json -`` the rows
are standard output's one JSON document and the lines go to stderr). Light: seconds of
profiling, then simulation only.
"""
from __future__ import annotations

import math
import sys
from typing import TextIO

import numpy as np

from impls.harness import cli

PARAMS = ("load", "spread", "n_jobs", "none")
# the values each parameter may take, (lowest, highest): beyond them a trace is no cluster's
# (arrivals centuries apart, lengths spread past a float's resolution) or takes hours to draw
VALUE_RANGES = {"load": (1e-6, 1e6), "spread": (1.0, 1e9), "n_jobs": (2, 100_000)}
LONGEST_LENGTH_S = 1e9    # --lengths: about 30 years


def base_sizes(profile: str, trace: str) -> dict:
    """The trace's sizes at ``profile``: ``n_jobs``, ``mean_interarrival_s``, ``duration_s``
    (the real runs' keys, or the sim_* ones for ``trace == "sim"``), ``mix`` and ``seed``."""
    from impls.salus.experiments.scheduling import salus_sizes

    s = salus_sizes("salus_policies", profile)
    prefix = "sim_" if trace == "sim" else ""
    return {"n_jobs": s[f"{prefix}jobs" if prefix else "n_jobs"],
            "mean_interarrival_s": s[f"{prefix}mean_interarrival_s"],
            "duration_s": tuple(s[f"{prefix}duration_s"]), "mix": s["mix"], "seed": s.get("seed", 0),
            "profile_iterations": s.get("profile_iterations", 5), "threads": s.get("threads")}


def log_uniform_mean(lo: float, hi: float) -> float:
    """Mean of a log-uniform length between ``lo`` and ``hi`` (s)."""
    return lo if hi == lo else (hi - lo) / math.log(hi / lo)


def with_value(base: dict, param: str, value: float) -> dict:
    """``base`` with ``param`` set to ``value`` (see the module docstring)."""
    s = dict(base)
    lo, hi = base["duration_s"]
    mean = float(np.mean(base["lengths"])) if base.get("lengths") else log_uniform_mean(lo, hi)
    if param == "load":
        s["mean_interarrival_s"] = mean / value
    elif param == "spread":
        new_lo = mean if value == 1 else mean * math.log(value) / (value - 1)
        s["duration_s"] = (new_lo, new_lo * value)
    elif param == "n_jobs":
        s["n_jobs"] = int(value)
    return s


def ratio_of(sizes: dict, seed: int, ms: dict, warm: dict) -> tuple[float, float]:
    """(FIFO's average JCT over SRTF's, the offered load) of the trace ``sizes`` draws at ``seed``,
    simulated as the policy experiment simulates its draws (no memory budget: NaN where a job
    failed)."""
    from impls.salus.core.traces import iterations_for, offered_load, poisson_trace
    from impls.salus.experiments.scheduling import simulated_fifo_over_srtf

    trace = poisson_trace(sizes["n_jobs"], sizes["mean_interarrival_s"], sizes["mix"], ms,
                          tuple(sizes["duration_s"]), seed=seed)
    if sizes.get("lengths"):        # the same arrivals and workloads, lengths from the list
        picks = np.random.default_rng([seed, 7]).choice(np.asarray(sizes["lengths"], dtype=float), len(trace))
        for job, length in zip(trace, picks):
            job["iterations"] = iterations_for(float(length), ms[job["workload"]])
    ratio = simulated_fifo_over_srtf(trace, ms, warm)
    return (math.nan if ratio is None else ratio), offered_load(trace, ms) or math.nan


def rows(base: dict, param: str, values: list[float], seeds: int, ms: dict, warm: dict,
         stream: TextIO | None = None) -> list[dict]:
    """One row per value: the ratio at the base seed, its median and 5-95% range over seeds
    ``base["seed"] .. + seeds - 1``, and the median offered load of those draws; each row is
    also printed as a line to ``stream`` (default standard output)."""
    out = []
    for value in values:
        sizes = with_value(base, param, value)
        drawn = [ratio_of(sizes, base["seed"] + k, ms, warm) for k in range(seeds)]
        ratios = np.array([r for r, _ in drawn])
        loads = np.array([load for _, load in drawn])
        row = {"param": param, "value": value, "n_jobs": sizes["n_jobs"],
               "mean_interarrival_s": sizes["mean_interarrival_s"], "duration_s": list(sizes["duration_s"]),
               "ratio_at_seed": float(ratios[0]), "ratio_median": float(np.median(ratios)),
               "ratio_p5": float(np.quantile(ratios, 0.05)), "ratio_p95": float(np.quantile(ratios, 0.95)),
               "offered_load_median": _median(loads), "seeds": seeds}
        out.append(row)
        lengths = (",".join(f"{x:g}" for x in sizes["lengths"]) if sizes.get("lengths")
                   else f"{sizes['duration_s'][0]:.3g}-{sizes['duration_s'][1]:.3g}")
        row["lengths"] = sizes.get("lengths")
        print(f"{param} {value:<6g} FIFO/SRTF median {row['ratio_median']:.2f}x "
              f"(5-95% over {seeds} seeds {row['ratio_p5']:.2f}-{row['ratio_p95']:.2f}x; seed {base['seed']}: "
              f"{row['ratio_at_seed']:.2f}x)  offered load {row['offered_load_median']:.2f}  "
              f"jobs {sizes['n_jobs']}, lengths {lengths} s", file=stream or sys.stdout, flush=True)
    return out


def _median(values: np.ndarray) -> float:
    """The median of the finite ``values``; NaN (without numpy's warning) when none is."""
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else math.nan


def profiled_ms(base: dict) -> tuple[dict, dict]:
    """This machine's iteration times of the mix (ms; after another job's, after its own),
    profiled as the experiment profiles them."""
    from impls.salus.core.devices import torch_threads
    from impls.salus.experiments.scheduling import profile_workloads

    with torch_threads(base.get("threads")):
        profile = profile_workloads(base["mix"], "cpu", base["profile_iterations"], seed=base["seed"])
    return ({w: p["iteration_ms_p50"] for w, p in profile.items()},
            {w: p["iteration_ms_warm_p50"] for w, p in profile.items()})


def _parser():
    parser = cli.parser(prog="python scripts/salus_trace_sensitivity.py", description=__doc__.split("\n\n")[0])
    cli.add_profile_option(parser, "sizes of the suite's trace (default: DLSYSBENCH_PROFILE, else quick)")
    parser.add_argument("--trace", default="real", choices=("real", "sim"),
                        help="which trace of [salus_policies.<profile>] to vary: real, the one the real runs "
                             "use (n_jobs, mean_interarrival_s, duration_s), or sim, the paper-sized simulated "
                             "one (sim_*) (default real)")
    parser.add_argument("--param", default="load", choices=PARAMS,
                        help="the assumption to change: load, the offered load (arrival rate x mean job "
                             "length); spread, the longest job length over the shortest at the same mean; "
                             "n_jobs, the trace's length; none, the profile's own values over seeds only "
                             "(default load)")
    parser.add_argument("--values", type=float, nargs="+", default=None,
                        help="values of --param, one row each: " + "; ".join(
                            f"{p} in [{lo:g}, {hi:g}]" for p, (lo, hi) in VALUE_RANGES.items())
                        + " (no default: needed except with --param none, which takes none)")
    parser.add_argument("--seeds", type=int, default=20, help="draws per value (default 20)")
    parser.add_argument("--lengths", help="comma-separated job lengths (s), each as likely, instead of the "
                                          "profile's log-uniform range (the default); with --param load, "
                                          "n_jobs or none")
    parser.add_argument("--json", help="also write the rows to this file ('-': to stdout, the lines to stderr)")
    return parser


def checked_values(param: str, values: list[float] | None) -> list[float]:
    """``values`` of ``param`` after checking each lies in its :data:`VALUE_RANGES` (whole
    numbers for n_jobs); ``[0.0]`` (no value: the profile's own) for ``none``, which takes
    none. Raises :class:`cli.UsageError`."""
    if param == "none":
        if values:
            raise cli.UsageError("got --values with --param none", "--values",
                                 "expected none: --param none draws the profile's own trace (--seeds sets how often)")
        return [0.0]
    if not values:
        raise cli.UsageError("got no --values", f"--param {param}", "expected the values to try")
    lo, hi = VALUE_RANGES[param]
    for value in values:
        cli.number(value, f"--values (--param {param})", minimum=lo, maximum=hi, integer=param == "n_jobs")
    return values


def checked_lengths(text: str | None) -> list[float] | None:
    """``--lengths`` as seconds, each finite, > 0 and at most :data:`LONGEST_LENGTH_S`
    (None when not given). Raises :class:`cli.UsageError`."""
    if text is None:
        return None
    try:
        lengths = [float(x) for x in text.split(",")]
    except ValueError:
        raise cli.UsageError(f"got {text!r}", "--lengths", "expected comma-separated seconds") from None
    if not all(math.isfinite(x) and 0 < x <= LONGEST_LENGTH_S for x in lengths):
        raise cli.UsageError(f"got {text!r}", "--lengths", f"expected seconds > 0 and <= {LONGEST_LENGTH_S:g}")
    return lengths


@cli.command("python scripts/salus_trace_sensitivity.py", sizes="--profile, --values and --seeds")
def main(argv: list[str] | None = None) -> int:
    """Print one row per value (and write them to ``--json``); 0 on success, 2 on bad input."""
    from impls.harness import profiles

    args = _parser().parse_args(argv)
    cli.number(args.seeds, "--seeds", minimum=1, integer=True)
    values = checked_values(args.param, args.values)
    lengths = checked_lengths(args.lengths)
    if lengths and args.param == "spread":
        raise cli.UsageError("got --lengths with --param spread", "--lengths",
                             "expected one of them: --lengths sets the lengths, so spread has nothing to vary")
    cli.check_output(args.json, "--json")
    base = base_sizes(profiles.resolve(args.profile), args.trace)
    if lengths:
        base["lengths"] = lengths
    ms, warm = profiled_ms(base)
    found = rows(base, args.param, values, args.seeds, ms, warm, cli.lines_to(args.json))
    cli.emit_json(args.json, found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
