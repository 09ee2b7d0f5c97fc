"""The paper's values that Salus figures and command lines quote, read by claim id (the ids
are named here, once) from the claims file a report is rendered with
(:func:`impls.harness.report.verdicts.claims_in_use`), else from ``reports/claims.toml``.

:func:`paper_value` is a claim's single paper value, or None; :func:`paper_note` is the
part of a title that quotes it, or "" where :func:`paper_value` is None, so that a figure
draws without its paper part rather than fail. The values are read when a figure is drawn,
never stored in an artifact: an artifact's ``paper`` field, where an old one has it, is
not read.
"""
from __future__ import annotations

import math

JCT_CLAIM = "salus-jct-srtf-vs-fifo"                   # FIFO / SRTF average JCT
HYPERPARAM_CLAIM = "salus-hyperparameter-utilization"  # serial / packed makespan
ON_A_GPU = "on a GPU"                                  # the paper's device, for every Salus claim drawn


def paper_value(claim_id: str) -> float | None:
    """The paper value of claim ``claim_id`` of the claims file in use
    (:func:`~impls.harness.report.verdicts.suite_claim`); None when the file has no such
    claim, cannot be read or breaks its schema, or the value is a range or not finite (no
    single number to quote)."""
    from impls.harness.report import verdicts
    from impls.harness.report.claims import ClaimsError

    try:
        claim = verdicts.suite_claim(claim_id)
    except (KeyError, ClaimsError):
        return None
    low, high = claim.paper_range
    return float(low) if low == high and math.isfinite(low) else None


def paper_note(claim_id: str, setting: str = ON_A_GPU) -> str:
    """``" (paper: <value>× <setting>)"`` for claim ``claim_id`` (e.g. " (paper: 3.19× on a
    GPU)"), or "" when it has no single paper value (see :func:`paper_value`)."""
    value = paper_value(claim_id)
    return "" if value is None else f" (paper: {value:g}× {setting})"


def device_of(data: dict) -> str | None:
    """The device an artifact's runs used, as its figures name it: ``device_name`` (e.g.
    "cpu", "cuda:0 NVIDIA H100"), else ``device`` (the kind), else None."""
    return data.get("device_name") or data.get("device") or None
