"""Fixtures shared by the regression-tracking tests (stored asv results in a temporary folder)."""
import pytest

from compare_fixtures import results  # noqa: F401 - a fixture, found by name


@pytest.fixture
def fresh_checks():
    """Capabilities and the fingerprint (each cached once a process) checked anew in the test,
    and again after it."""
    from impls.harness import capabilities, fingerprint

    capabilities._cached.cache_clear()
    capabilities._CUDA_WARNING.clear()
    fingerprint.fingerprint.cache_clear()
    yield
    capabilities._cached.cache_clear()
    capabilities._CUDA_WARNING.clear()
    fingerprint.fingerprint.cache_clear()
