"""report.json: the report as data, checked against ``reports/report.schema.json``.

Every claim carries its paper value, measured value, interval, verdict, the benchmarks
it came from, the commit, machine and profile. The ``jsonschema`` package is not among
the suite's dependencies, so :func:`validate` checks the subset of JSON Schema the
schema file uses (type, enum, required, properties, additionalProperties, items,
minItems, maxItems, minimum); a keyword outside that subset is an error, never skipped.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from impls.harness import paths
from impls.harness.report import formatting as fmt
from impls.harness.report.model import Report
from impls.harness.report.paper_figures import FigureResult
from impls.harness.report.verdicts import ClaimResult, band_open, tolerance_band

SCHEMA_VERSION = 5  # 2: tolerance_band_open and note; 3: data (synthetic or not); 4: "partly synthetic",
                    # null interval ends (unbounded) and a null paper low end (at most); 5: a claim's
                    # setting (the hardware it was measured on), a figure's data and caption
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
_KNOWN = {"$schema", "$id", "title", "description", "type", "enum", "required", "properties",
          "additionalProperties", "items", "minItems", "maxItems", "minimum"}


class ReportSchemaError(ValueError):
    """report.json does not match its schema."""


def schema_path() -> Path:
    return paths.reports_dir() / "report.schema.json"


def _number(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def claim_document(result: ClaimResult, machine: str, profile: str) -> dict[str, Any]:
    claim = result.claim
    low, high = claim.paper_range
    band = tolerance_band(claim)
    interval = result.interval
    return {
        "id": claim.id, "system": claim.system, "figure": claim.figure, "statement": claim.statement,
        "peer": claim.peer,
        "paper_value": {"low": _number(low), "high": _number(high), "approx": claim.approx},
        "unit": claim.unit, "tolerance": claim.tolerance,
        "tolerance_band": [_number(band[0]), _number(band[1])],
        "tolerance_band_open": list(band_open(claim)), "note": claim.note, "data": result.data,
        "measured": _number(result.measured),
        "interval": None if interval is None else {"low": _number(interval.low), "high": _number(interval.high),
                                                   "method": interval.described},
        "ratio": _number(result.ratio), "verdict": result.verdict, "detail": result.detail,
        "lower_bound": result.lower_bound, "upper_bound": result.upper_bound,
        "setting": result.setting or None,
        "no_noise": fmt.judged_without_noise(result),
        "real_data": list(result.real_data),   # sha256 of the real files the value was measured on; [] else
        "benchmarks": list(result.benchmarks), "commit": result.commit,
        "machine": machine, "profile": profile,
    }


def figure_document(figure: FigureResult) -> dict[str, Any]:
    """One paper figure as report.json lists it: its status, whether it shows synthetic data
    (null: not known), its caption (the provenance line, or why it was not drawn), its files."""
    return {"name": figure.name, "system": figure.system, "status": figure.status,
            "data": None if figure.synthetic is None else "synthetic" if figure.synthetic else "not synthetic",
            "caption": figure.caption,
            "files": [figure.file_name, figure.file_name[:-4] + ".svg"] if figure.png is not None else []}


def report_document(report: Report) -> dict[str, Any]:
    """Return report.json's content for ``report``."""
    commits = [{"commit": str(c), "date": None if d is None or d != d else str(d)}
               for c, d in zip(report.commits["commit"], report.commits["date"])]
    return {
        "schema_version": SCHEMA_VERSION,
        "machine": report.machine, "profile": report.profile, "generated": report.generated,
        "commits": commits,
        "claims": [claim_document(r, report.machine, report.profile)
                   for r in [*report.claims, *report.peers]],
        "figures": [figure_document(f) for f in report.figures],
        "history": [{"benchmark": h.benchmark, "unit": h.unit, "direction": h.direction, "data": h.data,
                     "files": [h.file_name, h.file_name[:-4] + ".svg"],
                     "steps": [{"params": s.params, "commit": s.commit, "before": s.before,
                                "after": s.after, "kind": s.kind} for s in h.steps]}
                    for h in report.history],
    }


def _is(value: Any, kind: str) -> bool:
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def validate(document: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Return every way ``document`` breaks ``schema`` (empty when it conforms)."""
    unknown = set(schema) - _KNOWN
    if unknown:
        return [f"{where}: schema keyword(s) {', '.join(sorted(unknown))} not supported by this validator"]
    problems: list[str] = []
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(document, k) for k in kinds):
            return [f"{where}: expected {' or '.join(kinds)}, got {type(document).__name__} {document!r:.60}"]
    if "enum" in schema and document not in schema["enum"]:
        problems.append(f"{where}: {document!r} is not one of {schema['enum']}")
    if "minimum" in schema and _is(document, "number") and document < schema["minimum"]:
        problems.append(f"{where}: {document} is below the minimum {schema['minimum']}")
    if isinstance(document, dict):
        problems += [f"{where}: missing {key!r}" for key in schema.get("required", []) if key not in document]
        properties = schema.get("properties", {})
        for key, value in document.items():
            if key in properties:
                problems += validate(value, properties[key], f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                problems.append(f"{where}: unexpected key {key!r}")
    if isinstance(document, list):
        if len(document) < schema.get("minItems", 0):
            problems.append(f"{where}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(document) > schema["maxItems"]:
            problems.append(f"{where}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(document):
                problems += validate(item, schema["items"], f"{where}[{i}]")
    return problems


def report_json(report: Report, schema_file: Path | None = None) -> bytes:
    """Return report.json's bytes; raise ReportSchemaError if it breaks the schema."""
    document = report_document(report)
    schema = json.loads(Path(schema_file or schema_path()).read_text())
    problems = validate(document, schema)
    if problems:
        raise ReportSchemaError("report.json breaks reports/report.schema.json:\n  " + "\n  ".join(problems[:20]))
    return json.dumps(document, indent=1, sort_keys=True).encode()
