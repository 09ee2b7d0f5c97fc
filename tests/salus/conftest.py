"""Fixtures shared by the Salus tests."""
import pytest
import torch


@pytest.fixture
def one_thread():
    """torch on one thread for the test (restored after): its timings and results do not
    depend on how many cores the machine lends it."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
