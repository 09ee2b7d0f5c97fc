"""Several machines side by side: one page with the claims table and the paper figures of each.

``make report MACHINES="a b"`` after copying each machine's results folder into
``.asv/results/`` (and its artifacts into ``.asv/artifacts/``), as asv users do. Each
machine also gets its own full report; the side-by-side page
(``reports/out/side-by-side-<a>+<b>/``) has one column per machine, in the order given,
and its own report.json listing each machine's document.
"""
from __future__ import annotations

import hashlib

import json
from html import escape
from pathlib import Path

from impls.harness.report import formatting as fmt
from impls.harness.report.build import KEPT_UNDER_THEIR_MACHINE, other_machines
from impls.harness.report.environment_table import NOT_RECORDED
from impls.harness.report.html_page import CSS, _png, _table
from impls.harness.report.model import Report, system_name
from impls.harness.report.paper_figures import CUDA_SUFFIX, DRAWN, FigureResult
from impls.harness.report.report_json import report_document
from impls.harness.report.verdicts import ClaimResult


NAME_MAX = 200  # characters of a page's folder name: the writer's ".<name>.new-XXXXXXXX" must fit in 255


def side_by_side_name(machines: list[str]) -> str:
    """The folder name of the page comparing ``machines``: ``side-by-side-a+b+c``; where that
    is longer than :data:`NAME_MAX` (five cloud host names are), the first machines that fit,
    how many more, and a hash of the whole list, so that two lists never share a name."""
    whole = "side-by-side-" + "+".join(machines)
    if len(whole) <= NAME_MAX:
        return whole
    digest = hashlib.sha256("\n".join(machines).encode()).hexdigest()[:12]
    kept: list[str] = []
    for machine in machines:
        name = "side-by-side-" + "+".join([*kept, machine]) + f"+{len(machines) - len(kept) - 1}-more-{digest}"
        if len(name) > NAME_MAX:
            break
        kept.append(machine)
    short = "+".join(kept) if kept else machines[0][:NAME_MAX - 60]
    return f"side-by-side-{short}+{len(machines) - max(len(kept), 1)}-more-{digest}"


# the mark, its reasons and footnote, and the test of a verdict judged without noise (formatting.py)
NO_NOISE_MARK, NO_NOISE_WHY, NO_NOISE_FOOTNOTE = fmt.NO_NOISE_MARK, fmt.NO_NOISE_WHY, fmt.NO_NOISE_FOOTNOTE
_judged_without_noise = fmt.judged_without_noise


def _cell(result: ClaimResult | None) -> str:
    """The html of one machine's claim cell; its verdict carries :data:`NO_NOISE_MARK` when
    it was judged without noise thresholds (:func:`_judged_without_noise`)."""
    if result is None:
        return "—"
    mark = NO_NOISE_MARK if _judged_without_noise(result) else ""
    verdict = (f"<span class='verdict {fmt.verdict_class(result.verdict)}'>{escape(result.verdict)}</span>"
               f"{mark}")
    return (f"<span title='{escape(result.detail)}'>{escape(fmt.measured(result) + fmt.data_note(result))}</span>"
            f"<br>{verdict}")


def _claims_table(reports: list[Report]) -> str:
    """The verdict counts of each machine and the claims table, a column per machine; each
    verdict judged without noise thresholds has :data:`NO_NOISE_MARK`, and so do the name
    and counts of a machine with any such verdict, which say how many; the footnote says why."""
    by_machine = [{r.claim.id: r for r in [*report.claims, *report.peers]} for report in reports]
    bare = [sum(map(_judged_without_noise, results.values())) for results in by_machine]
    ids = list(dict.fromkeys(cid for results in by_machine for cid in results))
    rows = []
    for cid in ids:
        claim = next(results[cid].claim for results in by_machine if cid in results)
        about = f"{escape(claim.statement)}<br><span class='small'>{escape(cid)}</span>"
        rows.append([escape(system_name(claim.system)), about, escape(fmt.paper_value(claim)),
                     *(_cell(results.get(cid)) for results in by_machine)])
    mark = [NO_NOISE_MARK if n else "" for n in bare]
    header = ("system", "claim", "paper value",
              *(f"{r.machine} (profile {r.profile}){m}" for r, m in zip(reports, mark)))
    summaries = "".join(
        f"<li><b>{escape(r.machine)}{m}</b>: {escape(fmt.verdict_summary(r.claims))}"
        + (f" ({n} of its verdicts below judged on single values: no usable noise thresholds for their numbers, "
           f"see {NO_NOISE_MARK} under the table; none of them can be inconclusive for noise)" if n else "")
        + "</li>" for r, m, n in zip(reports, mark, bare))
    footnote = f"<p class='small'>{escape(NO_NOISE_FOOTNOTE)}</p>" if any(bare) else ""
    return f"<ul>{summaries}</ul>" + _table(header, rows, raw=True) + footnote


def _figure_cell(figure: FigureResult | None) -> str:
    if figure is None:
        return "—"
    if figure.status == DRAWN and figure.png is not None:
        return f"{_png(figure.png, figure.title)}<br><span class='small'>{escape(figure.caption)}</span>"
    return f"<div class='missing'>{escape(figure.caption)}</div>"


def _figures(reports: list[Report]) -> str:
    by_machine = [{f.name: f for f in report.figures} for report in reports]
    names = list(dict.fromkeys(name for figures in by_machine for name in figures))
    # a CUDA run's figure beside its CPU run's, though only another machine drew it
    base = {n: n.removesuffix(CUDA_SUFFIX) if n.removesuffix(CUDA_SUFFIX) in names else n for n in names}
    place = {n: i for i, n in enumerate(names)}
    names = sorted(names, key=lambda n: (place[base[n]], n != base[n]))
    parts = []
    width = f"{100 / max(1, len(reports)):.0f}%"
    for name in names:
        first = next(figures[name] for figures in by_machine if name in figures)
        cells = "".join(f"<td style='width:{width}'>{_figure_cell(figures.get(name))}</td>"
                        for figures in by_machine)
        parts.append(f"<h3>{escape(system_name(first.system))}: {escape(first.title)}</h3>"
                     f"<table class='side'><tr>{''.join(f'<th>{escape(r.machine)}</th>' for r in reports)}"
                     f"</tr><tr>{cells}</tr></table>")
    return "".join(parts) or "<p>No figures are registered yet.</p>"


def _newest_commit(report: Report) -> str | None:
    commits = report.commits["commit"] if "commit" in report.commits else []
    return str(list(commits)[-1]) if len(commits) else None


def _hardware(report: Report) -> dict[str, str]:
    """The report's ``cores``, ``cpu`` and ``gpu`` (:func:`environment_table.hardware`), each
    :data:`NOT_RECORDED` where it has none, and ``usable``, the number of usable CPUs (the
    logical cores' where none is recorded apart: a fingerprint records it only where they
    differ or a quota is set)."""
    found = {key: report.hardware.get(key, NOT_RECORDED) for key in ("cores", "cpu", "gpu")}
    usable = report.hardware.get("usable") or found["cores"].removesuffix(" logical")
    # the number: a quota that changes nothing is no difference
    found["usable"] = usable.split(" ", 1)[0] if found["cores"] != NOT_RECORDED or "usable" in report.hardware \
        else NOT_RECORDED
    return found


def _hardware_line(report: Report) -> str:
    """Return e.g. "8 logical cores, CPU AMD EPYC, no GPU" from the machine's environment tables."""
    found = _hardware(report)
    if set(found.values()) == {NOT_RECORDED}:
        return "hardware not recorded (no fingerprint in its artifacts, none in asv's machine.json)"
    cores = f"{found['cores']} cores" if found["cores"] != NOT_RECORDED else f"cores {NOT_RECORDED}"
    if "usable" in report.hardware:
        cores += f" ({report.hardware['usable']} usable)"
    gpu = found["gpu"] if found["gpu"] == "no GPU" else f"GPU {found['gpu']}"
    return f"{cores}, CPU {found['cpu']}, {gpu}"


def _hardware_differs(reports: list[Report]) -> str | None:
    """The warning naming what of logical cores, usable CPUs, CPU model and GPU differs between the
    machines that record it; None when nothing recorded differs."""
    found = [_hardware(r) for r in reports]
    apart = any("usable" in r.hardware for r in reports)     # else usable is the logical cores, said once
    differ = [what for key, what in (("cores", "logical cores"), ("usable", "usable CPUs"), ("cpu", "CPU model"),
                                     ("gpu", "GPU"))
              if (key != "usable" or apart) and len({f[key] for f in found if f[key] != NOT_RECORDED}) > 1]
    if not differ:
        return None
    return (f"The machines differ in {', '.join(differ)} (see each one's line below): a difference between "
            "columns may be the hardware's, and claims about cores, threads or GPUs are measured on "
            "different hardware.")


def _nothing_of_its_own(report: Report) -> bool:
    """Whether the page shows nothing of ``report``'s machine's own: no asv results (no
    commit), no measured claim and no drawn figure, so its columns are empty."""
    return (not len(report.commits)
            and all(c.measured is None for c in [*report.claims, *report.peers])
            and not any(f.status == DRAWN for f in report.figures))


def _machines(reports: list[Report]) -> str:
    """Each machine's profile, newest commit, logical cores, CPU and GPU, and notes; a
    warning where the columns are not of one profile, one commit or one hardware, and the
    note of a machine whose files record another machine where it has nothing of its own."""
    items = []
    warnings = []
    for r in reports:
        commit = _newest_commit(r)
        # the one note on them goes up top where nothing of the machine's own is on the page
        elsewhere = [n for n in r.notes if KEPT_UNDER_THEIR_MACHINE in n] if _nothing_of_its_own(r) else []
        warnings += elsewhere
        notes = "".join(f"<br><span class='small'>{escape(n)}</span>" for n in r.notes if n not in elsewhere)
        newest = f"newest results of commit {escape(commit[:8])}" if commit else "no asv results"
        items.append(f"<li><b>{escape(r.machine)}</b>: profile {escape(r.profile)}, {newest}; "
                     f"{escape(_hardware_line(r))}{notes}</li>")
    profiles = {r.profile for r in reports if r.profile != "unknown"}   # no artifact to tell: not a difference
    if len(profiles) > 1:
        warnings.append(f"The machines ran different profiles ({', '.join(sorted(profiles))}): their numbers come "
                        "from experiments of different sizes and are not comparable one to one.")
    unknown = [r.machine for r in reports      # one whose artifacts record another machine: said in its note
               if r.profile == "unknown" and not any(n for _, n in other_machines(r.unreadable).values())]
    if unknown:
        warnings.append(f"No artifact tells the profile of {', '.join(unknown)} (copy its artifacts with its results): "
                        "whether the columns ran experiments of one size is not known.")
    commits = {c[:8] for c in map(_newest_commit, reports) if c}
    if len(commits) > 1:
        warnings.append(f"The machines' newest results are of different commits ({', '.join(sorted(commits))}): "
                        "a difference between columns may be the code's, not the machine's.")
    differs = _hardware_differs(reports)
    if differs:
        warnings.append(differs)
    return ("".join(f"<p class='warning'><b>{escape(w)}</b></p>" for w in warnings)
            + f"<ul>{''.join(items)}</ul>")


def render_side_by_side(reports: list[Report]) -> dict[str, bytes]:
    """Return ``{file name: content}`` of the side-by-side page of ``reports`` (index.html, report.json)."""
    machines = [r.machine for r in reports]
    title = "dlsysbench — " + " | ".join(machines)
    css = CSS + ".side img { max-width: 100%; } table.side { width: 100%; table-layout: fixed; }"
    html = (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{css}</style></head><body><main>"
        f"<h1>{escape(title)}</h1><p class='meta'>"
        + " · ".join(f"<a href='../{escape(m)}/index.html'>{escape(m)}</a> (full report)" for m in machines)
        + "</p><section id='machines'><h2>Machines</h2>" + _machines(reports)
        + "</section><section id='claims'><h2>Paper claims</h2>" + _claims_table(reports)
        + "</section><section id='figures'><h2>Figures</h2>" + _figures(reports)
        + "</section></main></body></html>\n")
    document = {"machines": machines, "reports": [report_document(r) for r in reports]}
    return {"index.html": html.encode("utf-8"),
            "report.json": json.dumps(document, indent=1, sort_keys=True).encode()}


def default_dir(out_root: Path, machines: list[str]) -> Path:
    return Path(out_root) / side_by_side_name(machines)
