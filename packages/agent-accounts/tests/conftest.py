"""Shared fixtures: a local usage endpoint, and a HOME for `account-cli` runs against it whose tree
is checked afterwards (no file left that others could read)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from accounts_support import UsageServer, check_files
from test_cli import Home


@pytest.fixture
async def server() -> AsyncIterator[UsageServer]:
    """A local usage endpoint (tests set its `handler`)."""
    async with UsageServer() as running:
        yield running


@pytest.fixture
def home(tmp_path: Path, server: UsageServer) -> Iterator[Home]:
    """An empty HOME pointed at `server`; its files are checked when the test ends."""
    path = tmp_path / "home"
    path.mkdir()
    yield Home(path=path, url=server.url)
    check_files(tmp_path)
