"""How numbers, paper values, ratios and verdicts read in the report (html and markdown alike)."""
from __future__ import annotations

import math
from typing import Any

from impls.harness.report.claims import Claim
from impls.harness.report.verdicts import (
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    ClaimResult,
    band_edges,
    band_open,
    edge_digits,
    tolerance_band,
)

DASH = "—"
RATIO_NOTE = ("ratio = measured / paper value; for a range, measured / the nearest end of "
              "the range (1.00 inside it)")


def number(value: float, digits: int = 4) -> str:
    """Return ``value`` with ``digits`` significant digits, no trailing zeros."""
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.{digits}g}"


def with_unit(text: str, unit: str) -> str:
    """Return ``text`` followed by ``unit`` ("x" becomes the × sign)."""
    if unit in ("x", "×"):
        return f"{text}×"
    return f"{text} {unit}" if unit else text


def paper_value(claim: Claim) -> str:
    """Return the paper's value as text: "2.7×", "2–3×", "≥ 1 s", "≤ 1 s", "> 1×" (the end is
    the baseline, which the claim excludes), plus " (approx.)" if approximate."""
    low, high = claim.paper_range
    if low == high:
        text = with_unit(number(low), claim.unit)
    elif math.isinf(high):   # "beats" (low is the baseline, which it excludes) or "at least"
        text = (">" if claim.baseline == low else "≥") + " " + with_unit(number(low), claim.unit)
    elif math.isinf(low):    # "at most" (or "below", the baseline excluded)
        text = ("<" if claim.baseline == high else "≤") + " " + with_unit(number(high), claim.unit)
    else:
        text = with_unit(f"{number(low)}–{number(high)}", claim.unit)
    return text + (" (approx.)" if claim.approx else "")


def band(claim: Claim) -> str:
    """Return the tolerance band, the measured values that reproduce ``claim``: "1.8–3.3×",
    "> 1×" (open at the baseline), "≥ 0.9×", "≤ 1.1 s", "(1–3.3]×" where an end is open."""
    lowest, highest = tolerance_band(claim)
    open_low, open_high = band_open(claim)
    if math.isinf(highest):
        return ("> " if open_low else "≥ ") + with_unit(number(lowest), claim.unit)
    if math.isinf(lowest):
        return ("< " if open_high else "≤ ") + with_unit(number(highest), claim.unit)
    if lowest == highest:
        return with_unit(number(lowest), claim.unit)
    if not (open_low or open_high):
        return with_unit(f"{number(lowest)}–{number(highest)}", claim.unit)
    return with_unit(f"{'(' if open_low else '['}{number(lowest)}–{number(highest)}{')' if open_high else ']'}",
                     claim.unit)


def paper_value_and_band(claim: Claim) -> str:
    """Return :func:`paper_value` and, where the tolerance widens it, the band that
    reproduces it: "2–3× (reproduced within 1.8–3.3×)"."""
    value = paper_value(claim)
    if tolerance_band(claim) == claim.paper_range:     # no tolerance widens it: the band is the value
        return value
    return f"{value} (reproduced within {band(claim)})"


def measured(result: ClaimResult) -> str:
    """Return the measured value with its unit and interval, and the part of the data it rests
    on when not all ("(3 of 5 points)"), or a dash.

    A bound's interval is the spread of the bound itself, and says so ("≥ 3× (bound
    2.9–3.1)"): the true value lies anywhere beyond the bound, so the interval is not the
    true value's; the verdict is judged on the bound and this spread."""
    if result.measured is None:
        return DASH
    bound = "≥ " if result.lower_bound else "≤ " if result.upper_bound else ""
    spread = ""
    if result.interval is not None and result.interval.unbounded:
        spread = f" [unbounded: {result.interval.why_unbounded}]"
    elif result.interval is not None:
        edges = band_edges(result.claim)
        low, high = (number(x, edge_digits(x, edges)) for x in (result.interval.low, result.interval.high))
        spread = f" (bound {low}–{high})" if bound else f" [{low}, {high}]"
    coverage = f" ({result.coverage})" if result.coverage else ""
    digits = edge_digits(result.measured, band_edges(result.claim))
    return bound + with_unit(number(result.measured, digits), result.claim.unit) + spread + coverage


def data_note(result: ClaimResult) -> str:
    """`` (synthetic data)`` beside a measured value drawn from synthetic data, `` (partly
    synthetic data)`` beside one drawn partly from it, `` (measured data)`` beside one that is
    not, "" without a value or when it is not known."""
    if result.measured is None or result.data is None:
        return ""
    return {"synthetic": " (synthetic data)", "partly synthetic": " (partly synthetic data)"}.get(
        result.data, " (measured data)")


def ratio(result: ClaimResult) -> str:
    """Return the ratio to the paper (see ``RATIO_NOTE``), or a dash."""
    if result.ratio is None:
        return DASH
    bound = "≥ " if result.lower_bound else "≤ " if result.upper_bound else ""
    return bound + f"{result.ratio:.2f}" + (" (in range)" if result.in_range else "")


def verdict_class(verdict: str) -> str:
    """Return a short style name for a verdict: ok, partly, bad or none."""
    if verdict == REPRODUCED:
        return "ok"
    if verdict in (PARTLY, INCONCLUSIVE):
        return "partly"
    if verdict == NOT_REPRODUCED:
        return "bad"
    assert verdict.startswith(NOT_MEASURED), verdict
    return "none"


def verdict_summary(results: list[ClaimResult]) -> str:
    """Return e.g. "2 reproduced, 1 partly, 0 not reproduced, 20 not measured" for ``results``."""
    counts = {REPRODUCED: 0, PARTLY: 0, NOT_REPRODUCED: 0, NOT_MEASURED: 0}
    for result in results:
        key = NOT_MEASURED if result.verdict.startswith(NOT_MEASURED) else result.verdict
        counts[key] = counts.get(key, 0) + 1  # "inconclusive" only when some claim is
    return ", ".join(f"{count} {verdict}" for verdict, count in counts.items())


def where_in_paper(claim: Claim) -> str:
    """Return "<figure> · <source>" (e.g. "Fig. 5 · text"), the peer paper first if any."""
    parts = [claim.peer] if claim.peer else []
    parts.append(claim.figure)
    if claim.source != claim.figure:
        parts.append(claim.source)
    return " · ".join(parts)


def size_bytes(value: Any) -> str:
    """Return a byte count in GiB/MiB/KiB, or the value as text if it is not a number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return DASH if value is None else str(value)
    for divisor, unit in ((2 ** 40, "TiB"), (2 ** 30, "GiB"), (2 ** 20, "MiB"), (2 ** 10, "KiB")):
        if abs(value) >= divisor:
            return f"{value / divisor:.1f} {unit}"
    return f"{value} B"


def text(value: Any) -> str:
    """Return a table cell for any fingerprint value (dash for missing)."""
    if value is None or value == "":
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value) or DASH
    return str(value)
