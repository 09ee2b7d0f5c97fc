"""Helpers shared by the asv benchmark classes (kept tiny: the work lives in impls/)."""
from __future__ import annotations

from impls.harness import capabilities


def skipped_unless(*needs: str) -> dict | None:
    """Return ``{"skipped": reason}`` when a capability is missing (for ``setup_cache``), else None."""
    reason = capabilities.missing_reason(*needs)
    return {"skipped": reason} if reason else None


def raise_if_skipped(cached: dict) -> None:
    """In ``setup``: turn a ``setup_cache`` skip marker into asv's skip (NotImplementedError)."""
    if isinstance(cached, dict) and "skipped" in cached:
        raise NotImplementedError(cached["skipped"])
