"""How often measured noise thresholds flag an unchanged number, checked on the runs they
come from, each held out in turn.

The thresholds (:mod:`noise`) are set for a per-number false-alarm rate under normal noise
of the logarithms. A machine's noise need not be normal: a disk stall or a drift between two
sittings gives heavier tails, and the rate a user meets is then higher. :func:`held_out`
measures it: each run of a commit with at least three runs is left out, the thresholds are
measured again from every other run, and the left-out run is compared, as ``make compare``
compares, with the newest other run of its commit (asv's start stamp). A flag is a judged
number (a declared direction, a finite non-zero measured threshold) called a regression or
an improvement. Numbers with threshold 0 (deterministic) are not counted: any change of
theirs is real.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from impls.harness.report import compare, directions, noise

MIN_RUNS = 3  # a held-out run needs two others of its commit: one to compare with, a pair for its noise


@dataclasses.dataclass(frozen=True)
class HeldOut:
    """``flags`` of ``judged`` numbers over ``compares`` held-out compares, ``flagging`` of
    which flagged at least one; ``examples``: (benchmark, params) of the first flags."""

    flags: int
    judged: int
    compares: int
    flagging: int
    examples: tuple[tuple[str, str], ...] = ()

    @property
    def per_thousand(self) -> float:
        """Flags per 1000 judged numbers (nan where none was judged)."""
        return 1000 * self.flags / self.judged if self.judged else math.nan


def _started(frame: pd.DataFrame) -> float:
    stamps = pd.to_numeric(frame.get("started_at", pd.Series(dtype=float)), errors="coerce").dropna()
    return float(stamps.max()) if len(stamps) else -math.inf


def held_out(frames: Mapping[Any, Sequence[pd.DataFrame]], declared: Mapping[str, str],
             scales: Mapping[str, str] | None = None, **judging: Any) -> HeldOut | None:
    """Return the :class:`HeldOut` check of the runs ``frames`` (runs grouped by commit and
    environment, as :func:`noise.measure_noise` takes them), or None where no group has
    :data:`MIN_RUNS` runs. ``declared`` are the benchmarks' directions; ``scales`` and
    ``judging`` (``bounds``, ``missing``, ``worst_missing``) go to :func:`compare.compare_runs`
    as ``make compare`` passes them."""
    flags = judged = compares = flagging = 0
    examples: list[tuple[str, str]] = []
    for key, group in frames.items():
        if len(group) < MIN_RUNS:
            continue
        for h, head in enumerate(group):
            rest = [f for i, f in enumerate(group) if i != h]
            others = {**{k: v for k, v in frames.items() if k != key}, key: rest}
            measured = noise.measure_noise("held-out", others, scales=dict(scales or {}))
            base = max(rest, key=_started)
            found = compare.compare_runs(base, head, dict(declared), measured, scales=dict(scales or {}), **judging)
            counted = [c for c in found.changes
                       if c.direction in directions.JUDGED and c.threshold is not None and 0 < c.threshold < math.inf
                       and c.kind in (compare.REGRESSION, compare.IMPROVEMENT, "same", compare.NOISY)]
            moved = [c for c in counted if c.kind in (compare.REGRESSION, compare.IMPROVEMENT)]
            flags, judged, compares = flags + len(moved), judged + len(counted), compares + 1
            flagging += bool(moved)
            examples += [(c.benchmark, c.params) for c in moved][:max(0, 3 - len(examples))]
    return HeldOut(flags, judged, compares, flagging, tuple(examples)) if compares else None


def held_out_line(check: HeldOut, false_alarm: float | None) -> str:
    """The check in words, for ``make noise`` to print."""
    if not check.judged:
        return (f"held out: each of {check.compares} runs compared with the newest other run of its commit: no "
                "number there has a finite non-zero threshold to judge by")
    stated = f", where the thresholds are set for {1000 * false_alarm:.2g}" if false_alarm else ""
    line = (f"held out: each of {check.compares} runs compared with the newest other run of its commit, thresholds "
            f"measured from the rest: {check.flags} of {check.judged} judged numbers flagged "
            f"({check.per_thousand:.1f} in 1000{stated}); {check.flagging} of the {check.compares} compares flagged "
            "something")
    if false_alarm and check.judged and check.per_thousand > 2 * 1000 * false_alarm:
        line += ("; this machine's noise has heavier tails than the thresholds assume (stalls, drift between "
                 "sittings): read a flag's size against its threshold and rerun before believing it")
    if check.examples:
        line += "; e.g. " + ", ".join(f"{b} [{p}]" for b, p in check.examples)
    return line
