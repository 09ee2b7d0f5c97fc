"""What ``make compare`` says on stderr beside its verdicts: the numbers a comparison could
not judge, and why, where the verdict lines alone would let them pass in silence.

Each function returns the text of one line (no ``compare:`` prefix, no final period), or
None (or no lines) where there is nothing to say; none of them changes a verdict or the
exit status.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from impls.harness import cli, skip_log
from impls.harness.report import compare, noise


def stale_thresholds(measured: noise.Noise, head: pd.DataFrame) -> list[str]:
    """The thresholds of ``measured`` that name no number of the result frame ``head`` (a
    benchmark it lacks, or a point its benchmark no longer has), as ``<benchmark> [<params>]``
    (``[*]``: every point) in the file's order, named as :meth:`noise.Noise.get` finds them."""
    points: dict[str, list[str]] = {}
    for benchmark, params in zip(head["benchmark"], head["param_label"]):
        points.setdefault(benchmark, []).append(params)
    stale = []
    for key, threshold in measured.thresholds.items():
        alone = dataclasses.replace(measured, thresholds={key: threshold})
        if not any(alone.get(threshold.benchmark, params) for params in points.get(threshold.benchmark, ())):
            stale.append(f"{threshold.benchmark} [{threshold.params.replace(', ', ',')}]")
    return stale


def warnings(result: compare.Comparison, measured: noise.Noise | None, noise_path: Path,
             base: pd.DataFrame, head: pd.DataFrame, default_threshold: float | None) -> list[str]:
    """The warnings of comparison ``result`` (of result frames ``base`` and ``head``, judged
    with the thresholds ``measured`` read from ``noise_path`` and ``default_threshold``), in
    this order: numbers of the base run without a value in the new one
    (:func:`lost_values`), thresholded numbers the new run lacks (GONE), thresholds neither
    run has (a stale file), changed numbers no threshold judges (:func:`unjudged`)."""
    lines = [line for line in (lost_values(result),) if line]
    unmeasured = stale_thresholds(measured, head) if measured is not None else []
    in_base = set(unmeasured) - set(stale_thresholds(measured, base)) if unmeasured else set()
    gone = [name for name in unmeasured if name in in_base]           # the new run lacks what the base has
    stale = [name for name in unmeasured if name not in in_base]      # neither run has it
    if gone:
        lines.append(f"the new run lacks {len(gone)} thresholded number(s) the base run has (GONE above, not "
                     f"judged: a partial run, a benchmark that did not run, or one removed): {cli.first_few(gone, 5)}")
    if stale:
        lines.append(f"{len(stale)} threshold(s) in {noise_path} name a benchmark or point neither run has (a stale "
                     f"thresholds file: `make noise` again): {cli.first_few(stale, 5)}")
    return lines + [line for line in (unjudged(result, default_threshold),) if line]


def lost_values(result: compare.Comparison) -> str | None:
    """How many numbers measured in the base run have no value in the new one (SKIPPED or NO
    VALUE: not failures, so a setup that now skips everywhere passes), and in which
    benchmarks; None where none has (those that count as regressions, or are listed under a
    new version, aside)."""
    lost = [item for item in result.lost_of_kind(compare.SKIPPED) if not item.worst and not item.new_version]
    if not lost:
        return None
    benchmarks = sorted({item.benchmark for item in lost})
    return (f"{len(lost)} of the {len(result.changes) + len(result.lost)} numbers measured in the base run have no "
            f"value in the new run (SKIPPED or NO VALUE above), in {len(benchmarks)} benchmark(s): "
            f"{cli.first_few(benchmarks, 5)}; not compared, and not counted as failures: a setup that now skips "
            "everywhere passes")


def skip_log_note(result: compare.Comparison, logs: dict[str, list[skip_log.Entry]], commit: str,
                  where: Path) -> str | None:
    """Where numbers lost their value and the new run's ``commit`` has no skip log in
    ``logs`` (read under ``where``, the machine's folder): that a skip and a failed job then
    read alike; else None."""
    without_value = result.lost_of_kind(compare.SKIPPED)
    if not without_value or logs.get(commit):
        return None
    return (f"no skip log of the new run's commit {commit[:8]} under {where} (<commit>/{skip_log.FILE_NAME}, beside "
            f"its artifacts): a skip and a NaN its benchmark returned (a job that failed) read alike for the "
            f"{len(without_value)} number(s) without a value (one declared the worst outcome is a regression only "
            "where a sibling track kept a value); pass --artifacts <the run's artifacts root>")


def unjudged(result: compare.Comparison, default_threshold: float | None) -> str | None:
    """How many changed numbers no threshold judges (NO THRESHOLD), with the advice that can
    help: ``--default-threshold`` only for relative-scale ones and only where none was given
    (an absolute-scale number needs a measured threshold); None where there are none."""
    unthresholded = result.of_kind(compare.NO_THRESHOLD)
    if not unthresholded:
        return None
    relative = [c for c in unthresholded if c.scale != noise.ABSOLUTE]
    how = ("`make noise` again, or pass --default-threshold (make compare THRESHOLD=5%) for the "
           f"{len(relative)} relative-scale one(s)" if relative and default_threshold is None
           else "`make noise` again" if relative
           else "`make noise` measures their thresholds: they are absolute-scale (a change in their unit), which a "
                "relative --default-threshold cannot judge"
                + (" (the one given applies to relative-scale numbers only)" if default_threshold is not None else ""))
    return f"{len(unthresholded)} changed number(s) not judged: no threshold applies to them (NO THRESHOLD above): {how}"
