"""Fixtures for the forge package: the local forge API server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from forge_support import ForgeServer


@pytest.fixture
def forge_server() -> Iterator[ForgeServer]:
    """Serve a fresh local forge API on 127.0.0.1:0 for one test."""
    with ForgeServer() as server:
        yield server
