"""Fixtures for the forge package: the local forge API server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from forge_support import ForgeServer, RepoState

# Every gh child of every test, subprocesses of forge-cli included, inherits these: recent gh
# builds a telemetry payload per call and checks for updates; nothing may leave loopback.
GH_QUIET = {"GH_TELEMETRY": "false", "DO_NOT_TRACK": "1", "GH_NO_UPDATE_NOTIFIER": "1"}
os.environ.update(GH_QUIET)


REPO = "acme/widgets"


@pytest.fixture
def server() -> Iterator[ForgeServer]:
    """Serve a fresh local forge API on 127.0.0.1:0 for one test."""
    with ForgeServer() as forge:
        yield forge


@pytest.fixture
def forge_server(server: ForgeServer) -> ForgeServer:
    """The same local forge as `server`, under the name some tests give it."""
    return server


@pytest.fixture
def repo(server: ForgeServer) -> RepoState:
    """`acme/widgets` on the local forge, its `main` at one root commit."""
    state = server.state.repo(REPO)
    state.branches["main"] = state.add_commit("root")
    return state


# A forge-cli command run against a local forge: its completed process (stdout, stderr as text).
ForgeCli = Callable[..., subprocess.CompletedProcess[str]]
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


@pytest.fixture
def forge_cli() -> ForgeCli:
    """Return `run(server, *args)`: forge-cli run as a subprocess, its gh talking to `server`."""

    def run(server: ForgeServer, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [FORGE_CLI, *args],
            capture_output=True,
            text=True,
            env={**os.environ, **server.env()},
            timeout=180,
            check=False,
        )

    return run
