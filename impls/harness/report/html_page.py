"""The report as one self-contained html page: inline CSS, figures as base64 PNG, no scripts."""
from __future__ import annotations

import base64
from html import escape

from impls.harness.report import directions
from impls.harness.report import formatting as fmt
from impls.harness.report.environment_table import Table
from impls.harness.report.history import HistoryFigure, data_caption
from impls.harness.report.history_steps import step_lines
from impls.harness.report.model import Report, system_name
from impls.harness.report.paper_figures import DRAWN, ERROR, FigureResult
from impls.harness.report.verdicts import ClaimResult

CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328;
       margin: 0; background: #fafafa; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5rem 2rem 4rem; background: #fff; }
h1 { margin-bottom: .2rem; } h2 { border-bottom: 1px solid #d0d7de; padding-bottom: .2rem;
     margin-top: 2.2rem; } h3 { margin-top: 1.6rem; }
.meta { color: #57606a; margin-top: 0; } .small { font-size: 12px; color: #57606a; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: 13.5px; }
th, td { border: 1px solid #d0d7de; padding: .3rem .55rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; white-space: nowrap; }
.verdict { display: inline-block; padding: .05rem .45rem; border-radius: .7rem; font-size: 12.5px;
           white-space: nowrap; }
.ok { background: #dafbe1; color: #116329; } .partly { background: #fff8c5; color: #7d4e00; }
.bad { background: #ffebe9; color: #a40e26; } .none { background: #eaeef2; color: #57606a; }
.note { background: #fff8c5; border-left: 4px solid #d4a72c; padding: .4rem .8rem; }
figure { margin: 1rem 0 1.8rem; } figure img { max-width: 100%; border: 1px solid #eaeef2; }
figcaption { font-size: 13px; color: #57606a; }
.synthetic { color: #a93226; font-weight: 600; }
.missing { border: 1px dashed #afb8c1; padding: .6rem .9rem; color: #57606a; margin: 1rem 0; }
pre.error { background: #ffebe9; color: #a40e26; padding: .6rem .9rem; white-space: pre-wrap; }
.env { display: flex; flex-wrap: wrap; gap: 0 1.5rem; } .env table { min-width: 280px; }
"""


def _table(header: tuple[str, ...], rows: list[list[str]], *, raw: bool = False) -> str:
    """Return an html table; cells are escaped unless ``raw`` (already html)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header) if any(header) else ""
    body = "".join(
        "<tr>" + "".join(f"<td>{cell if raw else escape(cell)}</td>" for cell in row) + "</tr>"
        for row in rows)
    return f"<table>{f'<thead><tr>{head}</tr></thead>' if head else ''}<tbody>{body}</tbody></table>"


def _environment(tables: list[Table]) -> str:
    if not tables:
        return "<p>No fingerprint and no asv machine file: nothing is known about this machine.</p>"
    parts = [f"<div><h3>{escape(t.title)}</h3>{_table(t.header, [list(r) for r in t.rows])}</div>"
             for t in tables]
    return f"<div class='env'>{''.join(parts)}</div>"


def _claim_rows(results: list[ClaimResult]) -> list[list[str]]:
    rows = []
    for result in results:
        claim = result.claim
        about = escape(f"{claim.id} · {fmt.where_in_paper(claim)}")
        note = f"<br><span class='small'>{escape(claim.note)}</span>" if claim.note else ""
        verdict = (f"<span class='verdict {fmt.verdict_class(result.verdict)}'>"
                   f"{escape(result.verdict)}</span>{fmt.no_noise_mark(result)}")
        rows.append([
            escape(system_name(claim.system)),
            f"{escape(claim.statement)}<br><span class='small'>{about}</span>{note}",
            escape(fmt.paper_value_and_band(claim)),
            f"<span title='{escape(result.detail)}'>{escape(fmt.measured(result))}</span>"
            + (f"<br><span class='small{' synthetic' if result.data == 'synthetic' else ''}'>"
               f"{escape(fmt.data_words(result))}</span>" if fmt.data_words(result) else "")
            + (f"<br><span class='small'>{escape(fmt.interval_note(result))}</span>"
               if fmt.interval_note(result) else ""),
            escape(fmt.ratio(result)),
            verdict,
        ])
    return rows


CLAIM_HEADER = ("system", "claim", "paper value", "measured", "ratio", "verdict")


def _no_noise_line(results: list[ClaimResult]) -> str:
    """The html footnote :data:`formatting.NO_NOISE_FOOTNOTE` with how many of ``results``
    carry the mark (:func:`formatting.judged_without_noise`); "" where none does."""
    count = sum(map(fmt.judged_without_noise, results))
    if not count:
        return ""
    return f"<p class='small'>{escape(f'{count} verdict(s) marked. {fmt.NO_NOISE_FOOTNOTE}')}</p>"


def _claims(report: Report) -> str:
    """The verdict counts, the claims table and the peers' table; a verdict judged on its
    single value for want of noise thresholds carries :data:`formatting.NO_NOISE_MARK`,
    explained under its table."""
    parts = [f"<p>{escape(fmt.verdict_summary(report.claims))}.</p>",
             _table(CLAIM_HEADER, _claim_rows(report.claims), raw=True),
             _no_noise_line(report.claims),
             f"<p class='small'>{escape(fmt.RATIO_NOTE)}. Hover a measured value for where it came from.</p>"]
    if report.peers:
        parts.append("<h3>Peer and follow-up numbers (context, not claims of the papers)</h3>")
        parts.append(_table(CLAIM_HEADER, _claim_rows(report.peers), raw=True))
        parts.append(_no_noise_line(report.peers))
    return "".join(parts)


def _png(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f"<img src='data:image/png;base64,{data}' alt='{escape(alt)}'>"


def _paper_figure(figure: FigureResult) -> str:
    title = escape(figure.title + (f" (paper {figure.paper_figure})" if figure.paper_figure else ""))
    if figure.status == DRAWN:
        kind = "" if figure.synthetic is False else "synthetic"     # not known: marked as synthetic is
        return (f"<figure>{_png(figure.png, figure.title)}<figcaption><b>{title}</b><br>"
                f"<span class='{kind}'>{escape(figure.caption)}</span></figcaption></figure>")
    if figure.status == ERROR:
        return f"<h4>{title}</h4><pre class='error'>{escape(figure.caption)}</pre>"
    return f"<div class='missing'><b>{title}</b>: {escape(figure.caption)}</div>"


def _figures(report: Report) -> str:
    groups = report.figures_by_system()
    if not groups:
        return "<p>No figures are registered yet.</p>"
    return "".join(
        f"<h3>{escape(system_name(system))}</h3>" + "".join(_paper_figure(f) for f in figures)
        for system, figures in groups.items())


_DIRECTION_TEXT = {**{d: directions.better(d) for d in directions.JUDGED}, directions.FLAG: "a flag",
                   directions.CONTEXT: "context, not judged"}


def _history_figure(figure: HistoryFigure) -> str:
    shown = (f" Showing {figure.shown} of {figure.series} parameter combinations."
             if figure.shown < figure.series else "")
    steps = "".join(f"<br>{escape(line)}" for line in step_lines(figure.steps))
    return (f"<figure>{_png(figure.png, figure.benchmark)}<figcaption>{escape(figure.benchmark)} "
            f"({escape(figure.unit)}; {escape(_DIRECTION_TEXT.get(figure.direction, 'direction not declared'))}). "
            f"<span class='{'synthetic' if figure.data == 'synthetic' else 'small'}'>"
            f"{escape(data_caption(figure.data))}.</span>"
            f"{escape(shown)}"
            f"{steps}</figcaption></figure>")


def _history(report: Report) -> str:
    if report.commits.empty:
        return "<p>No asv results yet.</p>"
    rows = [[c.commit[:12], f"{c.date:%Y-%m-%d %H:%M}", c.env_names, str(c.points)]
            for c in report.commits.itertuples(index=False)]
    table = _table(("commit", "commit date", "environments", "points"), rows)
    return table + "".join(_history_figure(h) for h in report.history)


def _skipped(report: Report) -> str:
    if not report.skipped:
        return "<p>None: every benchmark point has a value in its newest run.</p>"
    rows = [[s.benchmark, s.params or "—", s.status, s.commit[:8], s.reason] for s in report.skipped]
    return _table(("benchmark", "params", "status", "commit", "reason"), rows)


def _unreadable(report: Report) -> str:
    if not report.unreadable:
        return "<p>None: every result and artifact file was read.</p>"
    return _table(("file", "why"), [list(row) for row in report.unreadable])


def render_html(report: Report) -> str:
    """Return the whole page as a string."""
    title = f"dlsysbench report — {report.machine}"
    commits = report.commits
    span = (f" · {len(commits)} commit(s), {commits['commit'].iloc[0][:8]} … "
            f"{commits['commit'].iloc[-1][:8]}" if not commits.empty else "")
    notes = "".join(f"<p class='note'>{escape(n)}</p>" for n in report.notes)
    sections = [
        ("environment", "Environment", _environment(report.environment)),
        ("claims", "Paper claims", _claims(report)),
        ("figures", "Figures", _figures(report)),
        ("history", "History", _history(report)),
        ("skipped", "Skipped benchmarks", _skipped(report)),
        ("unreadable", "Unreadable inputs", _unreadable(report)),
    ]
    nav = "".join(f"<a href='#{key}'>{escape(name)}</a>" for key, name, _ in sections)
    body = "".join(f"<section id='{key}'><h2>{escape(name)}</h2>{html}</section>"
                   for key, name, html in sections)
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body><main>"
        f"<h1>{escape(title)}</h1>"
        f"<p class='meta'>machine <b>{escape(report.machine)}</b> · profile "
        f"<b>{escape(report.profile)}</b> · rendered {escape(report.generated)}{escape(span)}</p>"
        f"{notes}<nav>{nav}</nav>{body}</main></body></html>\n"
    )
