"""Salus's report figures; importing the package registers them all (scheduling, lanes)."""
from impls.salus.figures import lanes, scheduling  # noqa: F401  (registration)
