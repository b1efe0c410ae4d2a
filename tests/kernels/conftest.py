"""The tests here check the kernels' bits on small inputs, which the size threshold (fedrepro.kernels.MIN_WORK)
would otherwise route to the library path: every call takes the kernel unless a test sets the threshold."""

import pytest

from fedrepro import kernels


@pytest.fixture(autouse=True)
def every_call_compiled(monkeypatch):
    monkeypatch.setattr(kernels, "MIN_WORK", 0)
