"""Command line: the report's Salus JCT claim (FIFO's average JCT over SRTF's) on a job trace a user has.

    python -m impls.salus.jct (--trace FILE.csv [--time-unit s|ms|min|h] | --philly cluster_job_log
        [--vc VC]) [--gpus N] [--time-zone ZONE] [--skip K] [--first N] [--load L] [--iteration-ms MS]
        [--switch-ms MS] [--policies fifo,srtf[,fair]] [--json [FILE|-]]

The report's claim ``salus-jct-srtf-vs-fifo`` (the paper's 3.19×) is measured on the suite's
own Poisson trace, whose arrival rate and job lengths are assumed; FIFO's average JCT over
SRTF's moves with both (``scripts/salus_trace_sensitivity.py``). This command runs the suite's
discrete-event simulator of the executor (:func:`impls.salus.core.simulator.simulate`, the one
the report draws beside each real run) on a trace of arrivals and job lengths read by
:mod:`impls.salus.core.trace_files`: a CSV (the Salus repository's own trace form reads as it
is) or Microsoft's public Philly ``cluster_job_log``.

Every job runs on one device, one iteration at a time, as in the paper's setting, so only the
jobs on ``--gpus`` GPUs (default 1; 0: any, each then run on the one device for its full
length) are read, from Philly's attempts or a CSV's GPU column (``num_gpus``, ``gpu_num``,
``gpus``, ..., or ``plan_gpu``, percent of one GPU per instance, times ``inst_num``; a CSV
without one is read whole, and ``--gpus`` refused); the others are left out and counted. A job of
``d`` seconds is ``round(d / iteration)`` iterations (at least one) of equal length summing to
``d`` (a job shorter than one iteration is one iteration SRTF cannot preempt: it warns with
their count); an iteration after another job's, or a job's first, costs ``--switch-ms`` more
(default 0: the suite measures the in-process switch at a few ms, ``python -m
impls.salus.switching``). SRTF knows each job's length (Salus's SRTF was given each job's total
time): it ranks a job by the part of ``d`` it has not run, started or not; the switches a job
pays are paid as they happen and do not enter its rank (the suite's own experiments rank, as
the executor does, by the mean iteration so far). An iteration is at least
:data:`MIN_ITERATION_MS` (the clock counts whole picoseconds). Memory is not modelled (a trace
gives none), so PACK is not offered.
A decision costs the log of the jobs waiting (a heap), so a trace far above a load of 1, or one
whose arrivals come in bursts, takes about as long as one whose queue stays short.
FAIR steps every iteration, in a compiled kernel while the jobs' device time in picoseconds
fits an int64 (106.75 days; a real cluster's trace holds years) and in Python, 15-60x
slower, beyond: it refuses above :data:`FAIR_MAX_ITERATIONS` iterations and, where the
kernel cannot be used, warns before it starts with the time that takes and the ``--first``
that keeps it in the kernel.

It prints the trace's size, arrival span, offered load (arrival rate × mean job length; above
1, jobs arrive faster than one device serves them and FIFO's wait grows with the trace's
length), the job lengths' spread, each policy's average JCT and makespan, FIFO's average JCT
over SRTF's, and the verdict the report's rule gives that one value against the claim's band
in ``reports/claims.toml``; "not judged" where no job was ever ready while another was (one
job, or each arriving once the one before it, as FIFO runs them, has begun its last
iteration: the simulator's ``had_a_choice``), since every policy then runs one schedule. Dates that name
no zone are read in ``--time-zone`` (an IANA name; default UTC for a CSV, which warns where
its columns are named as in Philly's log, US Pacific time for Philly, whose utilisation files
write PDT / PST), so that a job across a daylight-saving change is not read an hour short or long; a
date the zone shows twice (clocks went back) or never leaves its job out, counted, in a CSV
as in a Philly trace (the first line of each reason a CSV leaves out is named). ``--load L`` scales the gaps between arrivals so that the offered
load is L (a cluster's trace put on one device is usually far above 1). Output on stdout;
``--json`` writes the whole result instead.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from impls.harness import cli
from impls.salus.core.trace_times import PHILLY_ZONE, ZONE_EXPECTED, zone_name
from impls.salus.core.traces import iterations_for
from impls.salus.paper import JCT_CLAIM as CLAIM

POLICIES = ("fifo", "srtf", "fair")
DEFAULT_ITERATION_MS = 100.0
MIN_ITERATION_MS = 1e-3     # 1 us: the clock's whole picoseconds hold an iteration to 5e-7 of its length
FAIR_MAX_ITERATIONS = 200_000_000   # FAIR steps every iteration: minutes beyond this, in its compiled kernel
FAIR_PYTHON_S = 1e-6    # s an iteration of FAIR outside its kernel, at least (1-3 us; the log of the queue)
NOT_JUDGED = "not judged"
NO_CHOICE = ("no job was ever ready while another was (under FIFO), so no policy had a choice: every policy "
             "runs one schedule and the ratio is 1 whatever the claim")


def _parser() -> argparse.ArgumentParser:
    parser = cli.parser(prog="python -m impls.salus.jct", description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", help="CSV with a header: an arrival column (submit_time, arrival_s, ...) and "
                                        "duration (or start_time and end_time; with both, duration is checked "
                                        "against end - start), seconds or dates")
    source.add_argument("--philly", help="Philly's cluster_job_log (JSON)")
    parser.add_argument("--time-unit", choices=("s", "ms", "min", "h"), default=None,
                        help="--trace only: the unit of its numbers (default s; dates are read as dates)")
    parser.add_argument("--vc", help="--philly only: jobs of this virtual cluster (default: all)")
    parser.add_argument("--gpus", type=int, default=None,
                        help="jobs on this many GPUs (default 1; 0: any, each run on the one device): --philly, "
                             "and --trace with a GPU column (num_gpus, gpu_num, gpus, ..., or plan_gpu in percent "
                             "of a GPU times inst_num); the others are left out and counted")
    parser.add_argument("--time-zone", default=None,
                        help="IANA zone of dates that name none (default: UTC for --trace, "
                             f"{PHILLY_ZONE} for --philly)")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first K jobs in arrival order")
    parser.add_argument("--first", type=int, default=None, help="simulate N jobs (after --skip; default: all)")
    parser.add_argument("--load", type=float, default=None,
                        help="scale the gaps between arrivals to this offered load (default: the trace's own)")
    parser.add_argument("--iteration-ms", type=float, default=DEFAULT_ITERATION_MS,
                        help="length of one iteration, ms (preemption happens between iterations; "
                             f"at least {MIN_ITERATION_MS:g})")
    parser.add_argument("--switch-ms", type=float, default=0.0,
                        help="extra cost of an iteration after another job's (or a job's first), ms; "
                             "SRTF ranks a job by its length not yet run, which switches do not enter")
    parser.add_argument("--policies", default="fifo,srtf",
                        help=f"comma-separated, of {', '.join(POLICIES)} (fifo and srtf give the ratio)")
    cli.add_json_option(parser, "the whole result")
    return parser


def _policies(text: str) -> list[str]:
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    if not names:
        raise cli.UsageError(f"got {text!r}", "--policies", f"expected names of {', '.join(POLICIES)}")
    for name in names:
        if name == "pack":
            raise cli.UsageError("got pack", "--policies", "expected fifo, srtf or fair: PACK needs each job's "
                                 "memory, which a trace of arrivals and lengths does not give")
        if name not in POLICIES:
            raise cli.UsageError(f"got {name!r}", "--policies", f"expected names of {', '.join(POLICIES)}")
    return list(dict.fromkeys(names))


def simulator_jobs(trace, iteration_ms: float, switch_ms: float = 0.0
                   ) -> tuple[list[dict], dict[str, float], dict[str, float] | None]:
    """The simulator's inputs for :class:`~impls.salus.core.trace_files.JobTrace` ``trace``:
    (jobs ``{job_id, workload, arrival_s, iterations}``, iteration ms per workload, warm
    iteration ms per workload or None). Each job is its own workload of
    ``max(1, round(duration / iteration_ms))`` iterations whose lengths sum to its duration
    exactly; one after another job's costs ``switch_ms`` more. With a switch cost each job
    also has its ``known_iteration_ms`` (its warm iteration), so that SRTF ranks it by the
    part of its duration not yet run (without one, the rank is that already)."""
    jobs, ms, warm = [], {}, {}
    for i, (arrival, seconds) in enumerate(zip(trace.arrival_s, trace.duration_s)):
        n = iterations_for(float(seconds), iteration_ms)
        name = f"job{i}"
        ms[name] = float(seconds) * 1e3 / n + switch_ms
        warm[name] = float(seconds) * 1e3 / n
        jobs.append({"job_id": i, "workload": name, "arrival_s": float(arrival), "iterations": n,
                     **({"known_iteration_ms": warm[name]} if switch_ms else {})})
    return jobs, ms, (warm if switch_ms else None)


def measure(trace, policies: Sequence[str], iteration_ms: float = DEFAULT_ITERATION_MS,
            switch_ms: float = 0.0) -> dict[str, Any]:
    """Simulate ``trace`` (a :class:`~impls.salus.core.trace_files.JobTrace`) under each of
    ``policies``. Returns ``{"jobs", "span_s", "offered_load", "durations" (s, see
    :meth:`JobTrace.duration_stats`), "iterations", "shorter_than_iteration" (jobs shorter
    than one ``iteration_ms``: each runs as one iteration that SRTF cannot preempt),
    "policies": {name: {"avg_jct_s", "makespan_s"}}, "fifo_over_srtf", "had_a_choice"}``:
    ``fifo_over_srtf`` is None without both fifo and srtf; ``had_a_choice`` (the simulator's:
    some decision found two jobs ready) is False when every policy runs one schedule (the
    ratio is then 1 by construction)."""
    from impls.salus.core.simulator import simulate

    jobs, ms, warm = simulator_jobs(trace, iteration_ms, switch_ms)
    iterations = sum(j["iterations"] for j in jobs)
    rows, choice = {}, False
    for name in policies:
        result = simulate(jobs, name, ms, warm_iteration_ms=warm)
        rows[name] = {"avg_jct_s": result["avg_jct_s"], "makespan_s": result["makespan_s"]}
        choice |= result["had_a_choice"]
    ratio = None
    if "fifo" in rows and "srtf" in rows and rows["srtf"]["avg_jct_s"]:
        ratio = rows["fifo"]["avg_jct_s"] / rows["srtf"]["avg_jct_s"]
    return {"jobs": len(trace), "span_s": float(trace.arrival_s[-1]), "offered_load": trace.offered_load(),
            "durations": trace.duration_stats(), "iterations": iterations, "iteration_ms": iteration_ms,
            "shorter_than_iteration": int((trace.duration_s * 1e3 < iteration_ms).sum()),
            "switch_ms": switch_ms, "policies": rows, "fifo_over_srtf": ratio,
            "had_a_choice": choice}


def short_jobs_message(short: int, jobs: int, iteration_ms: float, csv: bool) -> str:
    """The warning for ``short`` of ``jobs`` jobs shorter than one iteration of
    ``iteration_ms`` (ms), naming the flags that change it (``csv``: a --trace, whose unit
    may be wrong)."""
    return (f"{short} of {jobs} jobs are shorter than one iteration ({iteration_ms:g} ms): each runs as one "
            "iteration that SRTF cannot preempt, so SRTF acts as shortest-job-first for them and FIFO/SRTF "
            "comes out lower than with preemption; pass a smaller --iteration-ms"
            + (", or --time-unit if the trace's numbers are not seconds" if csv else ""))


def _read(args: argparse.Namespace):
    from impls.salus.core import philly_log, trace_files

    gpus = 1 if args.gpus is None else (args.gpus or None)
    if args.trace is not None:
        cli.check_file(args.trace, "--trace", "a CSV file of jobs", regular=True)
        return trace_files.read_csv(args.trace, args.time_unit or "s", zone=zone_of(args), gpus=gpus,
                                    gpu_column_needed=args.gpus is not None), args.trace
    cli.check_file(args.philly, "--philly", "Philly's cluster_job_log (JSON)", regular=True)
    return philly_log.read_philly(args.philly, vc=args.vc, gpus=gpus, zone=zone_of(args)), args.philly


def fair_kernel(trace, iteration_ms: float, switch_ms: float = 0.0) -> tuple[bool, float, int]:
    """Whether FAIR runs ``trace`` in its compiled kernel (the simulator's own test,
    :meth:`~impls.salus.core.simulator._FairRun.fits`: the jobs' device time in picoseconds
    fits an int64, 106.75 days; else it steps every iteration in Python, 15-60x slower), the
    device time in days, and how many of its first jobs would fit (``--first``)."""
    import itertools

    from impls.salus.core.simulator import _FairRun, sim_jobs

    jobs, ms, warm = simulator_jobs(trace, iteration_ms, switch_ms)
    sim = sim_jobs(jobs, ms, None, 0.0, "interleave", warm)       # as simulate() builds them
    ticks = list(itertools.accumulate(j.total_iterations * max(j.iteration_ticks, j.warm_ticks) for j in sim))
    fitting = sum(1 for t in ticks if t < _FairRun.INT64_MAX)       # the sums only grow
    return _FairRun.fits(sim), ticks[-1] / 1e12 / 86400, fitting


def _fair_check(trace, iterations: int, args: argparse.Namespace) -> None:
    """Refuse FAIR beyond :data:`FAIR_MAX_ITERATIONS`, and warn when it cannot use its kernel
    (:func:`fair_kernel`), with the Python path's time at :data:`FAIR_PYTHON_S` an iteration."""
    fits, days, fitting = fair_kernel(trace, args.iteration_ms, args.switch_ms)
    keep = (f"--first {fitting}" + (f" (after --skip {args.skip})" if args.skip else "") + " keeps it in the kernel"
            if fitting else "no window keeps it in the kernel (its first job alone holds more)")
    from impls.salus.core.simulator import _FairRun

    kernel_days = _FairRun.INT64_MAX / 1e12 / 86400     # its kernel counts picoseconds in an int64
    slow = (f"its {days:.4g} days of device time pass the {kernel_days:.5g} days its compiled kernel counts "
            "(int64 picoseconds), so FAIR steps every iteration in Python")
    if iterations > FAIR_MAX_ITERATIONS:
        raise cli.UsageError(f"{iterations} iterations with fair", "--policies",
                             f"expected at most {FAIR_MAX_ITERATIONS} for FAIR (it steps every iteration): "
                             + ("raise --iteration-ms or take fewer jobs with --first" if fits else
                                f"{slow}, 15-60x slower than the kernel, and a larger --iteration-ms cuts "
                                f"the iterations but not that; {keep}"))
    if not fits:
        cli.warn(f"FAIR on this trace: {slow}, {iterations} iterations at {FAIR_PYTHON_S * 1e6:g} us or more "
                 f"each (more with many jobs waiting): {_time_words(iterations * FAIR_PYTHON_S)} or more, where "
                 f"the kernel takes seconds; {keep}, a larger --iteration-ms shortens the Python run (fewer "
                 "iterations, the same device time), or leave fair out of --policies")


def _time_words(seconds: float) -> str:
    if seconds < 90:
        return f"about {seconds:.2g} s"
    return f"about {seconds / 60:.2g} minutes" if seconds < 5400 else f"about {seconds / 3600:.2g} hours"


def zone_of(args: argparse.Namespace) -> str | None:
    """The IANA zone the trace's dates without a zone are read in: ``--time-zone``, else None
    for a CSV (the reader's default, UTC, which warns where the CSV names its columns as
    Philly's log does) and US Pacific time for Philly (the result's ``time_zone``: the zone as
    the time-zone database spells it, None for a trace without dates)."""
    if args.time_zone is not None:
        return args.time_zone
    return None if args.trace is not None else PHILLY_ZONE


def _check(args: argparse.Namespace) -> list[str]:
    if args.trace is not None:
        if args.vc is not None:
            raise cli.UsageError("got --vc with --trace", "--vc", "expected it only with --philly")
    elif args.time_unit is not None:
        raise cli.UsageError("got --time-unit with --philly", "--time-unit",
                             "expected it only with --trace (Philly's times are dates)")
    if args.time_zone is not None:
        try:
            zone_name(args.time_zone)
        except ValueError:
            raise cli.UsageError(f"got {args.time_zone!r}", "--time-zone", ZONE_EXPECTED) from None
    cli.number(args.gpus, "--gpus", minimum=0, integer=True)
    cli.number(args.skip, "--skip", minimum=0, integer=True)
    cli.number(args.first, "--first", minimum=1, integer=True)
    cli.number(args.load, "--load", minimum=0, exclusive_min=True)
    cli.number(args.iteration_ms, "--iteration-ms", minimum=0, exclusive_min=True, allow_none=False)
    if args.iteration_ms < MIN_ITERATION_MS:
        raise cli.UsageError(f"got {args.iteration_ms!r}", "--iteration-ms",
                             f"expected at least {MIN_ITERATION_MS:g} ms: the simulator's clock counts whole "
                             "picoseconds, and rounding a shorter iteration to them changes the jobs' lengths")
    cli.number(args.switch_ms, "--switch-ms", minimum=0, allow_none=False)
    policies = _policies(args.policies)
    if args.json not in (None, "", "-"):
        cli.check_output(args.json, "--json", inputs=[(args.trace, "--trace"), (args.philly, "--philly")])
    return policies


def _print(result: dict[str, Any]) -> None:
    d = result["durations"]
    zone, first = result["time_zone"], result.get("left_out_first") or {}
    print(f"{result['source']}: {result['jobs']} job{'s' if result['jobs'] != 1 else ''} over {result['span_s']:.6g} s"
          + (f" (dates read in {zone})" if zone else "")
          + (f"; GPUs from {result['gpu_column']}" if result.get("gpu_column") else "")
          + "".join(f"; left out {n} {why}" + (f" (the first at {first[why]})" if why in first else "")
                    for why, n in result["left_out"].items()))
    own, load = result["trace_offered_load"], result["offered_load"]
    scaled = f" (the trace's own: {own:.3g}; gaps scaled by {result['gaps_scaled_by']:.4g})" \
        if result["gaps_scaled_by"] is not None else ""
    shown = "none (one arrival time)" if load is None else f"{load:.3g}"
    print(f"offered load {shown}{scaled}"       # the remark follows the value as printed
          + ("; above 1 jobs queue without end and the ratio grows with the trace's length"
             if load is not None and float(shown) > 1 else ""))
    print(f"job lengths (s): median {d['median']:.4g}, mean {d['mean']:.4g}, p90 {d['p90']:.4g}, "
          f"min {d['min']:.4g}, max {d['max']:.4g}; squared coefficient of variation {d['scv']:.3g}")
    short = result["shorter_than_iteration"]
    print(f"simulated: one device, iterations of {result['iteration_ms']:g} ms, switch "
          f"{result['switch_ms']:g} ms ({result['iterations']} iterations"
          + (f"; {short} job{'s' if short != 1 else ''} shorter, one iteration each" if short else "") + ")")
    for name, row in result["policies"].items():
        print(f"  {name:<5} average JCT {row['avg_jct_s']:.6g} s   makespan {row['makespan_s']:.6g} s")
    ratio = result["fifo_over_srtf"]
    if ratio is None:
        print("FIFO/SRTF: not computed (--policies needs fifo and srtf)")
        return
    print(f"FIFO's average JCT over SRTF's: {result['ratio_shown']}x")
    if result["not_judged"]:
        print(f"paper: {result['paper']} (claim {CLAIM}): {result['verdict']} on this trace: {result['not_judged']}")
        return
    print(f"paper: {result['paper']} (claim {CLAIM}): {result['verdict']} on this trace (one simulation; "
          "the report's value is a real run of the suite's trace)")


@cli.command("python -m impls.salus.jct", sizes="--first (jobs simulated) and --iteration-ms")
def main(argv: Sequence[str] | None = None) -> int:
    """Print (or ``--json``) the simulated policies on the given trace; 0 on success, 2 on bad input."""
    from impls.harness import registry
    from impls.harness.report import verdicts

    args = _parser().parse_args(argv)
    policies = _check(args)
    trace, path = _read(args)
    for note in trace.notes:
        cli.warn(note)
    trace = trace.window(args.skip, args.first)
    own = trace.offered_load()
    if args.load is not None:
        trace = trace.at_load(args.load)
    counts = [iterations_for(float(s), args.iteration_ms) for s in trace.duration_s]
    iterations = sum(counts)                                            # Python ints: no int64 wrap
    if "fair" in policies:
        _fair_check(trace, iterations, args)
    result = {"source": str(path), "sha256": registry.sha256_of(Path(path)), "time_zone": trace.zone,
              "gpu_column": trace.gpu_column, "left_out": trace.left_out, "left_out_first": trace.left_out_first,
              "trace_offered_load": own,
              "gaps_scaled_by": None if args.load is None else own / args.load,
              **measure(trace, policies, args.iteration_ms, args.switch_ms)}
    if result["shorter_than_iteration"]:
        cli.warn(short_jobs_message(result["shorter_than_iteration"], len(trace), args.iteration_ms,
                                    args.trace is not None))
    result["verdict"] = result["paper"] = result["ratio_shown"] = result["not_judged"] = None
    if result["fifo_over_srtf"] is not None:
        result["verdict"], result["paper"], result["ratio_shown"] = verdicts.judge_one(CLAIM, result["fifo_over_srtf"])
        if not result["had_a_choice"]:
            result["verdict"], result["not_judged"] = NOT_JUDGED, NO_CHOICE
    cli.emit(args.json, result, _print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
