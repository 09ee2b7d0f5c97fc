"""``python -m impls``: list the registered experiments, or run one with a profile's sizes.

    python -m impls list [--json]
    python -m impls run <experiment> [--profile P] [--device D] [--json [FILE|-]] [--save-artifact]

Every check (name, profile, sizes, device, capabilities, output path) happens before any
work; a refused request is one line on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Sequence

from impls.harness import atomic, cli, experiments, grid, paths, profiles
from impls.harness.artifacts import artifact_path
from impls.harness.grid import GridError


def device_verdicts(missing=None, problems: dict[str, str | None] | None = None) -> dict[str, dict[str, str | None]]:
    """``{experiment: {device: reason}}`` for every registered experiment on each device it
    accepts: ``reason`` None where it can run here, else why ``run`` would refuse it: a broken
    catalog entry, a setting no run can use (:func:`check_settings`, without contacting a
    remote scheduler), or the first capability this machine lacks. ``missing(*names)`` gives
    that capability's reason (default :func:`capabilities.missing_reason`; ``make doctor``
    passes one that reads its fingerprint); ``problems``: each experiment's
    :func:`experiments.entry_problem`, where the caller has them already."""
    from impls.harness import capabilities

    missing = missing or capabilities.missing_reason
    try:
        check_settings()
        settings = None
    except (ValueError, OSError) as err:      # cli.UsageError is a ValueError
        settings = str(err)
    verdicts = {}
    for name, entry in experiments.discover().items():
        # a wrong sizes or run reference: not runnable anywhere
        broken = problems[name] if problems is not None else experiments.entry_problem(name)
        verdicts[name] = {device: "its catalog entry is broken" if broken else settings
                          or missing(*entry.requirements(device)) for device in entry.devices}
    return verdicts


def _rows() -> list[dict]:
    """Each registered experiment as a dict; ``runs_here`` maps each of its devices to "yes"
    or "no: <reason>" (:func:`device_verdicts`)."""
    problems = {name: experiments.entry_problem(name) for name in experiments.discover()}
    verdicts = device_verdicts(problems=problems)
    rows = []
    figures_of: dict[str, list[str]] = {}
    for figure in experiments.figure_declarations().values():
        figures_of.setdefault(figure.experiment, []).append(figure.name)
    for name, entry in experiments.discover().items():
        broken = problems[name]
        devices = {device: "yes" if reason is None else f"no: {reason}" for device, reason in verdicts[name].items()}
        rows.append({"name": name, "summary": entry.summary, "paper_figure": entry.paper_figure,
                     "sizes": entry.sizes, "artifact": entry.artifact,
                     "requires": list(entry.requires), "synthetic": entry.synthetic, "timed": entry.timed,
                     "figures": figures_of.get(name, []), "runs_here": devices, "broken": broken})
    return rows


def _list(args: argparse.Namespace) -> int:
    rows = _rows()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for row in rows:
        needs = ", ".join(row["requires"]) or "-"
        kind = ("synthetic data" if row["synthetic"] else "real data or hardware") + (", timed" if row["timed"] else
                                                                              ", deterministic")
        print(f"{row['name']}\n    {row['summary']}\n    reproduces: {row['paper_figure'] or '-'}; "
              f"sizes: [{row['sizes']}]; artifact: {row['artifact']}; needs: {needs}; {kind}")
        print(f"    figures: {', '.join(row['figures']) or '-'}")
        if row["broken"]:
            print(f"    broken, runs nowhere: {row['broken']}")
            continue
        for device, verdict in row["runs_here"].items():
            print(f"    runs here on {device}: {verdict}")
    return 0


def _with_run(data, entry: experiments.Experiment, profile: str, device: str):
    """``data`` with a ``run`` key saying what produced it (experiment, profile, device,
    synthetic or not, commit, and ``uncommitted``: the code files edited since that commit,
    as an artifact records them, when there are some; ``"uncommitted": None`` and ``"git":
    "absent"`` without usable git, :func:`paths.uncommitted_code`), so that a result file read
    later is not taken for another profile's or commit's, nor a run of unknown code for a clean
    one; data that is not a dict, or has its own ``run``, is returned as it is."""
    if not isinstance(data, dict) or "run" in data:
        return data
    run = {"experiment": entry.name, "profile": profile, "device": device, "synthetic": entry.synthetic,
           "commit": paths.git_commit()}
    edited = paths.uncommitted_code()
    if edited is None:
        run.update(uncommitted=None, git="absent")
    elif edited:
        run["uncommitted"] = edited
    return {**data, "run": run}


def _nearest_existing(path: Path, where: str, expected: str) -> Path:
    """``path`` or the nearest folder above it that exists (what a run would create folders
    under); raise :class:`cli.UsageError` at ``where`` when that is a file, or a symbolic link
    that leads nowhere (dangling, or a loop)."""
    existing = next(p for p in (path, *path.parents) if p.exists() or p.is_symlink())
    if existing.is_symlink() and not existing.exists():
        raise cli.UsageError(f"{existing} is a symbolic link that leads nowhere (dangling, or a loop)", where,
                             expected)
    if not existing.is_dir():
        raise cli.UsageError(f"{existing} is not a directory", where, expected)
    return existing


def _check_writable_dir(variable: str, holds: str) -> None:
    """Raise :class:`cli.UsageError` naming ``variable`` when the folder it names (or the
    nearest existing folder above it, where the run would create it) is a file, a dangling
    link, or not writable by this user: the run would fail there after minutes of work.
    ``holds``: what the folder is for, for the message. Nothing when the variable is unset."""
    folder = paths.env_path(variable)
    if folder is None:
        return
    where = f"{variable}={folder}"
    existing = _nearest_existing(folder, where, f"expected a directory for {holds} (created if missing)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise cli.UsageError(f"{existing} is not writable", where, "expected a directory this user can write")


def check_settings(*, reach_scheduler: bool = False) -> None:
    """Raise :class:`cli.UsageError` naming the variable when ``DLSYSBENCH_CACHE``,
    ``DLSYSBENCH_ARTIFACTS`` or ``DLSYSBENCH_GRID_RESULTS`` cannot hold what a run writes (:func:`_check_writable_dir`),
    or ``DLSYSBENCH_DASK_SCHEDULER`` is not a setting the grids take: each would otherwise
    stop the run at its first grid, after minutes of work. With ``reach_scheduler`` (the
    suite's runner before asv starts, and ``python -m impls run`` for an untimed experiment,
    the kind that runs grid points), a remote scheduler must also answer and its cluster
    run this code (:func:`grid.check_remote_cluster`: one connection, a few seconds at most
    when nothing answers); serial and local settings touch no network either way."""
    _check_writable_dir("DLSYSBENCH_CACHE", "generated data")
    _check_writable_dir("DLSYSBENCH_ARTIFACTS", "artifacts")
    _check_writable_dir(grid.ENV_RESULTS, "grid results")
    try:
        grid.scheduler_setting()
        if reach_scheduler:
            grid.check_remote_cluster()
    except grid.GridError as err:
        raise cli.UsageError(str(err)) from None


def no_commit_advice() -> str:
    """Why git gives no commit here and what to do, as a phrase (paths.git_absent_reason's
    reason, with the remedy that fits it)."""
    why = paths.git_absent_reason()
    if why is None:
        return "the checkout has no commit yet (commit first)"
    if "dubious ownership" in why:      # a checkout another user owns (a container's bind mount)
        return f"{why} (if it is yours: git config --global --add safe.directory {paths.repo_root()})"
    if why.startswith(("git refuses", "git did not run")):
        return why
    if why == "git is not installed":
        return f"{why} (install git; the suite files every run under its commit)"
    return f"{why}: run inside a git checkout with a commit"


def _run(args: argparse.Namespace) -> int:
    entry = experiments.get(args.experiment)
    args.device = args.device.strip().lower()   # spelled as the engines' own --device takes it
    if args.device == "cpu:0":      # torch's name of the one CPU device: filed as cpu
        args.device = "cpu"
    kind, colon, index = args.device.partition(":")
    if kind in ("cpu", "cuda") and colon and (kind == "cpu" or not index.isdigit()):
        raise cli.UsageError(f"got {args.device!r}", "--device", "expected cpu (or cpu:0), cuda or cuda:N "
                             "(N = 0, 1, ...)")
    profile = profiles.resolve(args.profile)
    experiments.sizes_for(entry.name, profile)  # validated before any work
    # an untimed experiment may run grid points: a remote scheduler must answer, on this code,
    # before its data are built (a timed one never uses the grid: no network for it)
    check_settings(reach_scheduler=not entry.timed)
    with experiments.using_profile(profile):     # the NVM target's check reads the profile's size
        reason = experiments.missing(entry.name, args.device)
        cpu_reason = experiments.missing(entry.name, "cpu")
    if reason:
        kind = experiments.device_kind(args.device)
        if kind not in entry.devices or (kind != "cpu" and "cpu" in entry.devices
                                         and not cpu_reason):  # the device is the cause
            raise cli.UsageError(f"{entry.name} cannot run here: {reason}", "--device",
                                 "a device this experiment runs on and this machine has")
        raise cli.UsageError(f"{entry.name} cannot run here: {reason}")
    cli.check_output(args.json, "--json")
    machine = None
    if args.save_artifact:
        from impls.harness.report.runs import machine_for_profile

        machine = machine_for_profile(paths.machine_name(), profile)  # as the suite files it
        target = artifact_path(entry.artifact_for(args.device), machine)
        where = "--save-artifact (the store: DLSYSBENCH_ARTIFACTS)"
        existing = _nearest_existing(target.parent, where, "expected a directory for the artifact store")
        if existing == target.parent:
            cli.check_output(target, where)
        elif not os.access(existing, os.W_OK | os.X_OK):     # the store creates the folders below it
            raise cli.UsageError(f"{existing} is not writable", where, "expected a directory this user can write")
    show = experiments.printer(entry.name)      # a wrong reference fails before the run, not after it
    grid_before = len(grid.runs())
    data = experiments.run(entry.name, profile=profile, device=args.device)
    result = _with_run(data, entry, profile, args.device)
    if args.json and args.json != "-":  # the result first: a failing artifact store must not lose it
        cli.emit_json(args.json, result)    # strict JSON: NaN and inf as null
        print(f"result: {args.json}", file=sys.stderr)
    if args.save_artifact:
        from impls.harness.artifacts import save_artifact

        with experiments.using_profile(profile):
            path = save_artifact(entry.artifact_for(args.device), data, experiment=entry.name,
                                 synthetic=entry.synthetic, machine=machine, grid=grid.runs()[grid_before:])
        print(f"artifact: {path}", file=sys.stderr)
        if path.parent.name == "unknown":      # the report ties it to no commit of the history
            cli.warn(f"filed under commit 'unknown': {no_commit_advice()}")
    if args.json == "-":
        cli.emit_json("-", result)
        return 0
    if show is not None:
        show(data)
    elif not args.json:
        print(json.dumps(data, indent=1, default=atomic.json_default))
    return 0


def parser() -> argparse.ArgumentParser:
    top = cli.parser(prog="python -m impls", description=__doc__.splitlines()[0].replace("``", ""))   # no reST
    sub = top.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="every experiment, what it needs, whether it runs here")
    listing.add_argument("--json", action="store_true", help="one JSON array instead of text")
    listing.set_defaults(func=_list)
    cli.add_debug(listing)        # the error line says "rerun with --debug": after the command too
    running = sub.add_parser("run", help="run one experiment with a profile's sizes")
    running.add_argument("experiment", help="a name from `python -m impls list`, e.g. bandana.layouts")
    cli.add_profile_option(running, "sizes to use (default: DLSYSBENCH_PROFILE, else quick)")
    running.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    cli.add_json_option(running, "the whole result")
    running.add_argument("--save-artifact", action="store_true",
                         help="also store the result as the report's artifact for this commit")
    running.set_defaults(func=_run)
    cli.add_debug(running)
    return top


@cli.command("python -m impls", user_errors=(experiments.ExperimentError, GridError))
def main(argv: Sequence[str] | None = None) -> int:
    """List or run experiments; 0 on success, 2 on a refused request (one line on stderr)."""
    args = parser().parse_args(argv)
    return args.func(args)
