"""Everything one report page shows, gathered before any html or markdown is written."""
from __future__ import annotations

import dataclasses

import pandas as pd

from impls.harness.report.environment_table import Table
from impls.harness.report.history import HistoryFigure
from impls.harness.report.paper_figures import FigureResult
from impls.harness.report.skipped import SkippedPoint
from impls.harness.report.verdicts import ClaimResult

SYSTEM_NAMES = {"bandana": "Bandana", "slide": "SLIDE", "salus": "Salus"}


def system_name(system: str) -> str:
    """Return the paper's spelling of a system ("slide" -> "SLIDE")."""
    return SYSTEM_NAMES.get(system, system)


@dataclasses.dataclass(frozen=True)
class Report:
    machine: str
    generated: str  # ISO time the report was rendered
    profile: str  # the artifacts', the fingerprint's or the results' profile; "unknown" when none says
    commits: pd.DataFrame  # results.commits(): every commit in the results, oldest first
    environment: list[Table]
    claims: list[ClaimResult]  # the papers' own claims
    peers: list[ClaimResult]  # numbers from peer and follow-up papers, for context
    figures: list[FigureResult]
    history: list[HistoryFigure]
    skipped: list[SkippedPoint]
    notes: list[str]  # what is missing from this report as a whole
    # (path, why) of every result or artifact file that could not be read
    unreadable: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    # cores, cpu, gpu (and usable, where it differs) as text (environment_table.hardware); empty: none recorded
    hardware: dict[str, str] = dataclasses.field(default_factory=dict)

    def figures_by_system(self) -> dict[str, list[FigureResult]]:
        """Return the paper figures grouped by system, in first-seen order."""
        groups: dict[str, list[FigureResult]] = {}
        for figure in self.figures:
            groups.setdefault(figure.system, []).append(figure)
        return groups

    def pngs(self) -> dict[str, bytes]:
        """Return ``{file name: PNG}`` for every drawn figure, paper figures and history alike."""
        files = {f.file_name: f.png for f in self.figures if f.png is not None}
        files.update({h.file_name: h.png for h in self.history})
        return files

    def svgs(self) -> dict[str, bytes]:
        """Return ``{file name: SVG}`` for every drawn figure (the PNG's name, .svg)."""
        files = {f.file_name[:-4] + ".svg": f.svg for f in self.figures if f.svg is not None}
        files.update({h.file_name[:-4] + ".svg": h.svg for h in self.history if h.svg is not None})
        return files
