"""render_report: one machine's results, artifacts and claims -> reports/out/<machine>/."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from impls.harness import paths
from impls.harness.figures import FigureSpec
from impls.harness.report.build import build_report, choose_machine
from impls.harness.report.html_page import render_html
from impls.harness.report.markdown_page import FIGURES_DIR, render_markdown
from impls.harness.report.output import write_report_dir
from impls.harness.report.paper_figures import ERROR
from impls.harness.profiles import current_profile
from impls.harness.report.runs import machine_for_profile
from impls.harness.report.report_json import report_json
from impls.harness.report.side_by_side import default_dir, render_side_by_side

INDEX = "index.html"
MARKDOWN = "report.md"
REPORT_JSON = "report.json"  # checked against reports/report.schema.json


def default_claims_path() -> Path:
    return paths.reports_dir() / "claims.toml"


def default_out_dir(machine: str) -> Path:
    return paths.reports_dir() / "out" / machine


def _default_machine() -> str:
    """This machine's name as run_suite files its results: ``<host>-<profile>`` for the current
    profile. Raises ValueError (one line) for a bad DLSYSBENCH_PROFILE or DLSYSBENCH_MACHINE,
    so it is asked only where no machine is named."""
    return machine_for_profile(paths.machine_name(), current_profile())


def render_report(machine: str | None = None, out_dir: Path | None = None, results_dir=None,
                  artifacts_root=None, claims_path=None, *,
                  figure_specs: Mapping[str, FigureSpec] | None = None,
                  unreadable: list[tuple[str, str]] | None = None,
                  failed: list[tuple[str, str]] | None = None, noise_path: Path | None = None) -> Path:
    """Write index.html, report.md, report.json and figures/*.{png,svg} for ``machine``; return the directory.

    Defaults: this machine (:func:`_default_machine`, asked only when ``machine`` is not
    given; or the only one with data), ``.asv/results``, the artifact
    store, ``reports/claims.toml``, ``reports/out/<machine>/`` and the thresholds file
    ``reports/noise/<machine>.json`` (``noise_path``). ``figure_specs``
    replaces the discovered figure registry (tests). Raises build.NoResultsError when
    the machine has no results and no artifacts, claims.ClaimsError for a bad claims
    file, output.ReportOutputError when ``out_dir`` holds something else. The input files
    left out of the report (``Report.unreadable``: ``(path, why)``) are appended to
    ``unreadable`` when it is a list, and the paper figures whose draw function failed
    (:func:`failed_figures`) to ``failed``.
    """
    results_dir = Path(results_dir) if results_dir is not None else paths.results_dir()
    artifacts_root = Path(artifacts_root) if artifacts_root is not None else paths.artifacts_root()
    machine = choose_machine(machine, results_dir, artifacts_root, "" if machine else _default_machine())
    claims_path = Path(claims_path) if claims_path is not None else default_claims_path()
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir(machine)

    report = build_report(machine, results_dir, artifacts_root, claims_path, figure_specs, noise_path)
    if unreadable is not None:
        unreadable.extend(report.unreadable)
    if failed is not None:
        failed.extend(failed_figures(report))
    return _write(report, out_dir)


def failed_figures(report) -> list[tuple[str, str]]:
    """Return ``(figure name, caption)`` of each paper figure of ``report`` whose draw
    function raised (status ERROR; the caption says what and where). A figure not measured,
    or one with no data, did not fail."""
    return [(f.name, f.caption) for f in report.figures if f.status == ERROR]


def _write(report, out_dir: Path) -> Path:
    """Write ``report`` (a :class:`model.Report`) as directory ``out_dir``; return it."""
    files = {INDEX: render_html(report).encode("utf-8"),
             MARKDOWN: render_markdown(report).encode("utf-8")}
    files.update({f"{FIGURES_DIR}/{name}": png for name, png in report.pngs().items()})
    files.update({f"{FIGURES_DIR}/{name}": svg for name, svg in report.svgs().items()})
    files[REPORT_JSON] = report_json(report)
    write_report_dir(out_dir, files)
    return out_dir


def render_machines(machines: list[str], results_dir=None, artifacts_root=None, claims_path=None,
                    out_root: Path | None = None, *,
                    figure_specs: Mapping[str, FigureSpec] | None = None,
                    unreadable: list[tuple[str, str]] | None = None,
                    failed: list[tuple[str, str]] | None = None) -> list[Path]:
    """Render each machine's report and one side-by-side page of them all; return the directories.

    The side-by-side page goes to ``<out_root>/side-by-side-<a>+<b>/`` (default out_root:
    reports/out); each machine's report to ``<out_root>/<machine>/``. Each report's left-out
    input files are appended to ``unreadable`` and its failed figures to ``failed`` when
    they are lists (as :func:`render_report`).
    """
    results_dir = Path(results_dir) if results_dir is not None else paths.results_dir()
    artifacts_root = Path(artifacts_root) if artifacts_root is not None else paths.artifacts_root()
    claims_path = Path(claims_path) if claims_path is not None else default_claims_path()
    out_root = Path(out_root) if out_root is not None else paths.reports_dir() / "out"
    reports = [build_report(m, results_dir, artifacts_root, claims_path, figure_specs) for m in machines]
    if unreadable is not None:
        unreadable.extend(entry for report in reports for entry in report.unreadable)
    if failed is not None:
        failed.extend(entry for report in reports for entry in failed_figures(report))
    written = []
    for report in reports:
        written.append(_write(report, out_root / report.machine))
    side = default_dir(out_root, machines)
    write_report_dir(side, render_side_by_side(reports))
    return [side, *written]
