"""The report as markdown; figures are links to ``figures/*.png`` beside it."""
from __future__ import annotations

from impls.harness.report import formatting as fmt
from impls.harness.report.history import data_caption
from impls.harness.report.history_steps import step_lines
from impls.harness.report.model import Report, system_name
from impls.harness.report.paper_figures import DRAWN, ERROR
from impls.harness.report.verdicts import ClaimResult

FIGURES_DIR = "figures"


def plain(text: str) -> str:
    """Return ``text`` as literal markdown text: ``&`` and ``<`` escaped, so that no tag or
    entity in data (a claim note, a device name, an error) becomes HTML when rendered."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;")


def cell(text: str) -> str:
    """Return ``text`` safe inside a markdown table cell (:func:`plain`, pipes escaped, one line;
    a backslash before a pipe as an entity, so that it does not unescape the pipe's escape)."""
    return plain(text).replace("\\|", "&#92;|").replace("|", "\\|").replace("\n", " ")


def quote(text: str) -> str:
    """Return ``text`` as one markdown block quote (:func:`plain`), every line of it quoted,
    so that a line of it cannot start a heading or a list of the page."""
    return "".join(f"> {line}\n" for line in plain(text).splitlines() or [""])


def table(header: tuple[str, ...], rows: list[tuple[str, ...]] | list[list[str]]) -> str:
    """Return a markdown table (a header row is required; empty names stay empty)."""
    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _claims_table(results: list[ClaimResult]) -> str:
    """The claims with what the HTML page shows beside each: its note (how it is measured,
    on which data) under the statement, and where the value came from (source and commit);
    a verdict judged on its single value for want of noise thresholds carries
    :data:`formatting.NO_NOISE_MARK`, explained under the table."""
    rows = [(system_name(r.claim.system),
             f"{r.claim.statement} ({r.claim.id}; {fmt.where_in_paper(r.claim)})"
             + (f" — {r.claim.note}" if r.claim.note else ""),
             fmt.paper_value_and_band(r.claim), fmt.measured(r) + fmt.data_note(r), fmt.ratio(r),
             r.verdict + fmt.no_noise_mark(r), "; ".join(filter(None, (r.detail, fmt.interval_note(r)))))
            for r in results]
    count = sum(map(fmt.judged_without_noise, results))
    footnote = f"\n{count} verdict(s) marked. {fmt.NO_NOISE_FOOTNOTE}\n" if count else ""
    return table(("system", "claim", "paper value", "measured", "ratio", "verdict", "from"), rows) + footnote


def _figures(report: Report) -> list[str]:
    groups = report.figures_by_system()
    if not groups:
        return ["No figures are registered yet.\n"]
    out = []
    for system, figures in groups.items():
        out.append(f"### {system_name(system)}\n")
        for figure in figures:
            title = figure.title + (f" (paper {figure.paper_figure})" if figure.paper_figure else "")
            if figure.status == DRAWN:
                out.append(f"![{cell(title)}]({FIGURES_DIR}/{figure.file_name})\n\n*{cell(title)}* — "
                           f"{cell(figure.caption)}\n")
            elif figure.status == ERROR:
                out.append(f"**{cell(title)}**: error\n\n```\n{figure.caption}\n```\n")
            else:
                out.append(f"**{cell(title)}**: {cell(figure.caption)}\n")
    return out


def _history(report: Report) -> list[str]:
    if report.commits.empty:
        return ["No asv results yet.\n"]
    rows = [(c.commit[:12], f"{c.date:%Y-%m-%d %H:%M}", c.env_names, str(c.points))
            for c in report.commits.itertuples(index=False)]
    out = [table(("commit", "commit date", "environments", "points"), rows)]
    for figure in report.history:
        shown = (f" (showing {figure.shown} of {figure.series} parameter combinations)"
                 if figure.shown < figure.series else "")
        steps = "".join(f"\n- {cell(line)}" for line in step_lines(figure.steps))
        out.append(f"![{figure.benchmark}]({FIGURES_DIR}/{figure.file_name})\n\n"
                   f"*{figure.benchmark}*{f' ({figure.unit})' if figure.unit.strip() else ''}{shown}. "
                   f"{data_caption(figure.data)}.\n" + (f"{steps}\n" if steps else ""))
    return out


def render_markdown(report: Report) -> str:
    """Return the whole report as markdown text."""
    commits = report.commits
    span = (f" · {len(commits)} commit(s), {commits['commit'].iloc[0][:8]} … "
            f"{commits['commit'].iloc[-1][:8]}" if not commits.empty else "")
    out = [f"# dlsysbench report — {report.machine}\n",
           (f"machine **{report.machine}** · profile **{report.profile}** · rendered "
            f"{report.generated}{span}\n")]
    out += [quote(note) for note in report.notes]
    out.append("## Environment\n")
    if not report.environment:
        out.append("Nothing is known about this machine (no fingerprint, no asv machine file).\n")
    for t in report.environment:
        out.append(f"### {t.title}\n")
        out.append(table(t.header if any(t.header) else ("item", "value"), t.rows))
    out.append("## Paper claims\n")
    out.append(f"{fmt.verdict_summary(report.claims)}.\n")
    out.append(_claims_table(report.claims))
    out.append(f"\n{fmt.RATIO_NOTE}.\n")
    if report.peers:
        out.append("### Peer and follow-up numbers (context, not claims of the papers)\n")
        out.append(_claims_table(report.peers))
    out.append("## Figures\n")
    out += _figures(report)
    out.append("## History\n")
    out += _history(report)
    out.append("## Skipped benchmarks\n")
    if report.skipped:
        out.append(table(("benchmark", "params", "status", "commit", "reason"),
                         [(s.benchmark, s.params or "—", s.status, s.commit[:8], s.reason)
                          for s in report.skipped]))
    else:
        out.append("None: every benchmark point has a value in its newest run.\n")
    out.append("## Unreadable inputs\n")
    out.append(table(("file", "why"), report.unreadable) if report.unreadable
               else "None: every result and artifact file was read.\n")
    return "\n".join(out)
