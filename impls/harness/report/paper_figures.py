"""Draw the registered paper figures from their artifacts, each stamped with its provenance.

Every drawn figure carries a caption line on the image itself: "Synthetic data" or
"Measured data" (from the artifact's ``synthetic`` field; where it has none, from its
experiment's registry entry, else "Data: not known"), then machine, commit, profile and
date. A figure whose artifact is missing says why; one whose draw function raises shows
the error instead and the report goes on. One that draws no finite data point (every value
missing, NaN or infinite) is not shown as drawn: it says "no data" with the notes the figure
wrote on its axes; a legend names no series without a finite point, unless the entry says so.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from impls.harness.figures import FigureSpec
from impls.harness.report import plotting, verdicts
from impls.harness.report.machine_state import MachineState

DRAWN = "drawn"
NOT_MEASURED = "not measured"
ERROR = "error"
NO_DATA = "no data"
SYNTHETIC_LABEL = "Synthetic data"
MEASURED_LABEL = "Measured data"
NOT_KNOWN_LABEL = "Data: not known"


@dataclasses.dataclass(frozen=True)
class FigureResult:
    """One paper figure as the report shows it: a PNG, or the reason there is none."""

    name: str
    title: str
    system: str
    paper_figure: str
    status: str  # DRAWN, NOT_MEASURED, NO_DATA or ERROR
    caption: str  # DRAWN: the provenance line on the image; otherwise what to show instead
    png: bytes | None = None
    synthetic: bool | None = None  # None: not known (:func:`synthetic_of`)
    svg: bytes | None = None  # the same figure as SVG

    @property
    def file_name(self) -> str:
        return f"{safe_file_stem(self.name)}.png"


def safe_file_stem(name: str) -> str:
    """Return ``name`` with anything but letters, digits, '.', '_' and '-' replaced by '_'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "figure"


def readable_time(iso: Any) -> str:
    """Return an ISO timestamp as "YYYY-MM-DD HH:MM UTC" (as given if it does not parse)."""
    try:
        moment = dt.datetime.fromisoformat(str(iso))
    except ValueError:
        return str(iso or "?")
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M") + (" UTC" if moment.tzinfo else "")


def synthetic_of(record: Mapping[str, Any]) -> tuple[bool | None, str]:
    """Whether an artifact's data are synthetic, and where that was read: its ``synthetic``
    field (a bool) -> (that, "record"); without one, the ``synthetic`` flag of the experiment
    it names in this checkout's registry -> (that, "registry"); else (None, "") — not known,
    never taken as measured."""
    value = record.get("synthetic")
    if isinstance(value, bool):
        return value, "record"
    try:
        from impls.harness import experiments

        return bool(experiments.get(str(record.get("experiment"))).synthetic), "registry"
    except Exception:  # noqa: BLE001 - no experiment, or one this checkout does not have
        return None, ""


def data_label(record: Mapping[str, Any]) -> str:
    """The caption's first part: :data:`SYNTHETIC_LABEL` or :data:`MEASURED_LABEL` (with
    " (registry)" when read from the experiment's registry entry, the record having no
    ``synthetic`` field), or "Data: not known (...)" when neither tells."""
    synthetic, where = synthetic_of(record)
    if synthetic is None:
        return f"{NOT_KNOWN_LABEL} (the artifact records no 'synthetic' field and names no experiment here)"
    return (SYNTHETIC_LABEL if synthetic else MEASURED_LABEL) + (" (registry)" if where == "registry" else "")


def provenance_caption(record: Mapping[str, Any]) -> str:
    """Return the caption line for an artifact: data kind (:func:`data_label`), machine,
    commit, profile, date."""
    kind = data_label(record)
    commit = str(record.get("commit") or "?")[:8]
    created = readable_time(record.get("created"))
    return (f"{kind} · machine {record.get('machine') or '?'} · commit {commit} · "
            f"profile {record.get('profile') or '?'} · {created}")


def stamp_caption(figure: Figure, caption: str, synthetic: bool) -> None:
    """Write ``caption`` under the figure's drawing area, on the image itself; in bold red
    where ``synthetic`` (also given for data not known to be measured)."""
    figure.text(0.5, -0.01, caption, ha="center", va="top", fontsize=8,
                color="#a93226" if synthetic else "#444444",
                fontweight="bold" if synthetic else "normal")


def captioned_figure(spec: FigureSpec, record: Mapping[str, Any]) -> Figure:
    """Return the figure ``spec`` draws from ``record["data"]``, with its provenance caption
    and no legend entry for a series without a finite point (:func:`plotting.drop_empty_legend_entries`).

    Raises whatever the draw function raises, or TypeError if it returns no Figure.
    """
    figure = spec.draw(record["data"])
    if not isinstance(figure, Figure):
        plotting.close(figure)
        raise TypeError(f"draw function of figure {spec.name!r} returned "
                        f"{type(figure).__name__}, expected a matplotlib Figure")
    plotting.drop_empty_legend_entries(figure)
    stamp_caption(figure, provenance_caption(record), synthetic_of(record)[0] is not False)
    return figure


def no_data_caption(artifact: str, figure: Figure) -> str:
    """What a figure without a finite data point shows instead: "no data: ..." naming the
    artifact, with the notes the figure wrote across its axes (its own reason), if any."""
    notes = [" ".join(t.get_text().split()) for ax in figure.axes for t in ax.texts
             if t.get_transform() == ax.transAxes and t.get_text().strip()]
    said = f" (the figure says: {'; '.join(dict.fromkeys(notes))})" if notes else ""
    return (f"no data: artifact {artifact!r} holds no finite value for this figure "
            f"(every value it would draw is missing, NaN or infinite){said}")


def describe_error(err: BaseException) -> str:
    """Return "<Type>: <message> (<file>:<line> in <function>)" for the innermost frame."""
    where = ""
    frames = traceback.extract_tb(err.__traceback__)
    if frames:
        last = frames[-1]
        where = f" ({last.filename}:{last.lineno} in {last.name})"
    return f"{type(err).__name__}: {err}{where}"


def render_figure(spec: FigureSpec, artifacts: Mapping[str, Mapping[str, Any]],
                  state: MachineState, claims_path: Path | None = None) -> FigureResult:
    """Return the :class:`FigureResult` of ``spec``: DRAWN with PNG and SVG, NO_DATA when it
    draws no finite point (:func:`plotting.finite_count`), NOT_MEASURED without its artifact,
    ERROR when its draw function fails (never raises for that). A paper value the figure
    quotes is read from ``claims_path`` (default: the suite's claims file)."""
    base = {"name": spec.name, "title": spec.title, "system": spec.system,
            "paper_figure": spec.paper_figure}
    record = artifacts.get(spec.artifact)
    if record is None:
        reason = state.missing_reason(spec.requires)
        caption = (f"not measured: {reason}" if reason
                   else f"not measured: no artifact {spec.artifact!r} for this machine")
        return FigureResult(**base, status=NOT_MEASURED, caption=caption)
    figure = None
    try:
        with verdicts.claims_in_use(claims_path):
            figure = captioned_figure(spec, record)
        empty = no_data_caption(spec.artifact, figure) if not plotting.finite_count(figure) else None
        png, svg = (None, None) if empty else (plotting.to_png(figure), plotting.to_svg(figure))
    except Exception as err:  # noqa: BLE001 - one broken figure must not stop the report
        return FigureResult(**base, status=ERROR, caption=f"figure failed to draw: {describe_error(err)}",
                            synthetic=synthetic_of(record)[0])
    finally:
        if figure is not None:
            plotting.close(figure)
    if empty:
        return FigureResult(**base, status=NO_DATA, caption=empty, synthetic=synthetic_of(record)[0])
    return FigureResult(**base, status=DRAWN, caption=provenance_caption(record), png=png,
                        synthetic=synthetic_of(record)[0], svg=svg)


CUDA_SUFFIX = "_cuda"   # an experiment's artifact of a run on a CUDA device (Experiment.artifact_for)


def with_cuda_runs(specs: Mapping[str, FigureSpec], artifacts: Mapping[str, Mapping[str, Any]]) -> list[FigureSpec]:
    """``specs``' figures, and after each whose experiment also ran on a CUDA device here (its
    artifact ``<artifact>_cuda`` is in ``artifacts``) the same drawing of that run: named
    ``<name>_cuda``, titled "... (CUDA run)". Without that artifact no such figure is added:
    the claims table says what the CUDA runs did not measure."""
    out = []
    for spec in specs.values():
        out.append(spec)
        cuda = spec.artifact + CUDA_SUFFIX
        if cuda in artifacts and spec.name + CUDA_SUFFIX not in specs:
            out.append(dataclasses.replace(spec, name=spec.name + CUDA_SUFFIX, artifact=cuda,
                                           title=f"{spec.title} (CUDA run)",
                                           requires=tuple(dict.fromkeys((*spec.requires, "cuda")))))
    return out


def render_paper_figures(specs: Mapping[str, FigureSpec], artifacts: Mapping[str, Mapping[str, Any]],
                         state: MachineState, workers: int | None = None,
                         claims_path: Path | None = None) -> list[FigureResult]:
    """Return every figure's result (:func:`with_cuda_runs`: a CUDA run's beside its CPU run's),
    ordered by system, then paper figure, then name; drawn in ``workers`` processes where there
    are enough figures (:func:`plotting.draw_all`), quoting paper values from ``claims_path``
    (:func:`render_figure`)."""
    ordered = sorted(with_cuda_runs(specs, artifacts), key=lambda s: (s.system, s.paper_figure, s.name))
    calls = [(spec, {spec.artifact: artifacts[spec.artifact]} if spec.artifact in artifacts else {}, state,
              claims_path) for spec in ordered]
    return plotting.draw_all(render_figure, calls, workers)
