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
    UNMEASURED_LACKS,
    UNMEASURED_OTHER,
    UNMEASURED_SETTING,
    UNMEASURED_YET,
    ClaimResult,
    band_edges,
    band_open,
    edge_digits,
    ratio_to_paper,
    tolerance_band,
    with_unit,
)

DASH = "—"
RATIO_NOTE = ("ratio = measured / paper value; for a range, measured / the nearest end of "
              "the range (1.00 inside it)")

# A verdict judged on a single value for want of run-to-run noise (ClaimResult.no_noise) carries this mark
NO_NOISE_MARK = "†"
NO_NOISE_WHY = ("no usable noise thresholds for this number (absent, damaged, another machine's or another "
                "benchmark version's, or none for it in the file: see the machine's notes; or it is read from "
                "an experiment's artifact, which make noise does not measure)")
NO_NOISE_FOOTNOTE = (f"{NO_NOISE_MARK} {NO_NOISE_WHY}: no run-to-run interval, so the verdict is judged on the "
                     "single value (it cannot be inconclusive for noise; for a benchmark's number, a machine with "
                     "thresholds for it may call the same value inconclusive).")


def judged_without_noise(result: ClaimResult) -> bool:
    """Whether ``result``'s verdict was judged on its single value for want of noise
    thresholds: a measured value without a run-to-run interval (``no_noise``: read from
    benchmarks without thresholds, or from an artifact); never one that is not measured."""
    return result.no_noise and result.measured is not None and not result.verdict.startswith(NOT_MEASURED)


def no_noise_mark(result: ClaimResult) -> str:
    """:data:`NO_NOISE_MARK` where :func:`judged_without_noise`, else ""."""
    return NO_NOISE_MARK if judged_without_noise(result) else ""


def number(value: float, digits: int = 4) -> str:
    """Return ``value`` with ``digits`` significant digits, no trailing zeros."""
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.{digits}g}"


def edge(value: float) -> str:
    """Return a band edge with the fewest significant digits, at least 4, that give it back
    exactly ("2.7115", not "2.712"): a measured value printed on one side of the edge
    (:func:`verdicts.edge_digits`) then reads on that side of the printed edge too."""
    if not math.isfinite(value):
        return number(value)
    for digits in range(4, 18):
        if float(f"{value:.{digits}g}") == value:
            return f"{value:.{digits}g}"
    return repr(value)


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
    "> 1×" (open at the baseline), "≥ 0.9×", "≤ 1.1 s", "(1–3.3]×" where an end is open.
    Each end is printed exactly (:func:`edge`), so no value outside the band prints inside it."""
    lowest, highest = tolerance_band(claim)
    open_low, open_high = band_open(claim)
    if math.isinf(highest):
        return ("> " if open_low else "≥ ") + with_unit(edge(lowest), claim.unit)
    if math.isinf(lowest):
        return ("< " if open_high else "≤ ") + with_unit(edge(highest), claim.unit)
    if lowest == highest:
        return with_unit(edge(lowest), claim.unit)
    if not (open_low or open_high):
        return with_unit(f"{edge(lowest)}–{edge(highest)}", claim.unit)
    return with_unit(f"{'(' if open_low else '['}{edge(lowest)}–{edge(highest)}{')' if open_high else ']'}",
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


def interval_note(result: ClaimResult) -> str:
    """How the interval beside the value was found ("interval: run-to-run spread (...)"), or ""
    without one: the pair alone cannot say whether it is run-to-run noise, a bootstrap over
    test points or the spread over draws of a synthetic trace."""
    if result.measured is None or result.interval is None or result.interval.unbounded:
        return ""      # an unbounded one says why beside the value
    return f"interval: {result.interval.method}"     # the detail says what it leaves out (``lacks``)


REAL_DIGITS = 12  # hex digits of a real data file's sha256 shown beside the value (the detail has all)


def data_words(result: ClaimResult) -> str:
    """What the data behind a measured value were: "real data, sha256 <first 12 hex>" where its
    run's artifact records its real input file's checksum (``ClaimResult.real_data``; several
    digests joined by ", "), else "synthetic data", "partly synthetic data" or "measured data";
    then the hardware it was measured on after a "; " where that shapes it
    (``ClaimResult.setting``); "" without a value or when neither is known."""
    if result.measured is None:
        return ""
    if result.real_data:
        kind = f"real data, sha256 {', '.join(d[:REAL_DIGITS] for d in result.real_data)}"
    else:
        kind = {None: "", "synthetic": "synthetic data", "partly synthetic": "partly synthetic data"}.get(
            result.data, "measured data")
    return "; ".join(filter(None, (kind, result.setting)))


def data_note(result: ClaimResult) -> str:
    """:func:`data_words` in parentheses after a space, to follow the value; "" where they are."""
    said = data_words(result)
    return f" ({said})" if said else ""


def ratio_edges(claim: Claim) -> tuple[float, ...]:
    """The ratios to the paper (:func:`verdicts.ratio_to_paper`) of ``claim``'s finite band
    edges and baseline, and 1 for a range (inside it or not): a printed ratio must not be
    rounded across one."""
    found = [ratio_to_paper(claim, x)[0] for x in band_edges(claim) if math.isfinite(x)]
    low, high = claim.paper_range
    return tuple(r for r in found if r is not None) + ((1.0,) if low != high else ())


def ratio(result: ClaimResult) -> str:
    """Return the ratio to the paper (see ``RATIO_NOTE``) with 2 decimals, more where fewer
    would print it on or across the ratio of a band edge (:func:`ratio_edges`) it does not
    lie on ("0.849997", not "0.85", below a band starting at 0.85), or a dash."""
    if result.ratio is None:
        return DASH
    value, edges = result.ratio, ratio_edges(result.claim)

    def side(x: float, at: float) -> int:
        return (x > at) - (x < at)

    decimals = next((d for d in range(2, 17)
                     if all(side(float(f"{value:.{d}f}"), e) == side(value, e) for e in edges)), 17)
    bound = "≥ " if result.lower_bound else "≤ " if result.upper_bound else ""
    return bound + f"{value:.{decimals}f}" + (" (in range)" if result.in_range else "")


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


# how the summary says why claims are not measured (:func:`verdicts.unmeasured_kind`), in its order
_UNMEASURED_WORDS = {UNMEASURED_YET: "with no experiment yet",
                     UNMEASURED_LACKS: "needing hardware or data this machine lacks",
                     UNMEASURED_SETTING: "of another setting than this profile runs",
                     UNMEASURED_OTHER: "for other reasons their rows give"}


def verdict_summary(results: list[ClaimResult]) -> str:
    """Return e.g. "2 reproduced, 1 partly, 0 not reproduced, 20 not measured (4 with no
    experiment yet, 16 needing hardware or data this machine lacks)" for ``results``: the "not
    measured" split by why (each result's ``unmeasured``; "for other reasons" where it has
    none), so that count is not read as work left undone; "inconclusive" only when some claim is."""
    counts = {REPRODUCED: 0, PARTLY: 0, NOT_REPRODUCED: 0, NOT_MEASURED: 0}
    why = dict.fromkeys(_UNMEASURED_WORDS, 0)
    for result in results:
        key = NOT_MEASURED if result.verdict.startswith(NOT_MEASURED) else result.verdict
        counts[key] = counts.get(key, 0) + 1
        if key == NOT_MEASURED:
            why[result.unmeasured if result.unmeasured in why else UNMEASURED_OTHER] += 1
    split = ", ".join(f"{count} {_UNMEASURED_WORDS[kind]}" for kind, count in why.items() if count)
    return ", ".join(f"{count} {verdict}" + (f" ({split})" if verdict == NOT_MEASURED and split else "")
                     for verdict, count in counts.items())


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
