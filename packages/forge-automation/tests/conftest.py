"""Fixtures for the forge package: the local forge API server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from forge_support import ForgeServer

# Every gh child of every test, subprocesses of forge-cli included, inherits these: recent gh
# builds a telemetry payload per call and checks for updates; nothing may leave loopback.
GH_QUIET = {"GH_TELEMETRY": "false", "DO_NOT_TRACK": "1", "GH_NO_UPDATE_NOTIFIER": "1"}
os.environ.update(GH_QUIET)


@pytest.fixture
def forge_server() -> Iterator[ForgeServer]:
    """Serve a fresh local forge API on 127.0.0.1:0 for one test."""
    with ForgeServer() as server:
        yield server
