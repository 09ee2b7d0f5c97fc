"""Fixtures shared by the regression-tracking tests (stored asv results in a temporary folder)."""
from compare_fixtures import results  # noqa: F401 - a fixture, found by name
