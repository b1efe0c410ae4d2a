"""Fixtures for the data-layer tests: a loopback HTTP server (no internet) and fast download policies."""

from __future__ import annotations

import pytest

from fedrepro.data.download import HttpPolicy, reset_down_hosts
from loopback import Behaviour, LoopbackServer


@pytest.fixture
def server():
    reset_down_hosts()
    srv = LoopbackServer(Behaviour()).start()
    yield srv
    srv.stop()
    reset_down_hosts()


@pytest.fixture
def fast_policy():
    return HttpPolicy(timeout_s=0.5, retries=2, backoff_s=0.05)
