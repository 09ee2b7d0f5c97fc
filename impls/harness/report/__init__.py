"""The report: asv results and artifacts -> claims table, figures, history (html + markdown).

Modules, one idea each: ``asv_files`` (benchmarks.json, machine.json, what every asv file
reader shares), ``results`` (asv result files -> DataFrame), ``claims`` (claims.toml
schema), ``measure`` and ``verdicts`` (claim vs. measurement), ``machine_state``
(fingerprint, capabilities), ``paper_figures``, ``history``, ``skipped``,
``environment_table``, ``build`` (-> :class:`model.Report`), ``html_page``,
``markdown_page``, ``output`` (atomic directory write) and ``render``.
"""
from impls.harness.report.build import NoResultsError, build_report
from impls.harness.report.claims import Claim, ClaimsError, load_claims
from impls.harness.report.output import ReportOutputError
from impls.harness.report.render import render_report
from impls.harness.report.results import latest_points, read_results
from impls.harness.report.verdicts import ClaimResult, evaluate_claims

__all__ = [
    "Claim", "ClaimResult", "ClaimsError", "NoResultsError", "ReportOutputError", "build_report",
    "evaluate_claims", "latest_points", "load_claims", "read_results", "render_report",
]
