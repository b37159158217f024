"""Shared fixtures: a local usage endpoint, a HOME for `account-cli` runs against it and a `work`
profile in it, each checked afterwards (no file left under the test's temp dir holds the canary,
credentials files aside); and the refresh tests' token endpoint (`endpoint`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from accounts_cli_support import Home
from accounts_endpoint_support import endpoint  # noqa: F401 (fixture: the refresh tests' token endpoint)
from accounts_support import (
    CANARY,
    UsageServer,
    check_files,
    check_logs,
    make_profile,
    quiet_logs,
)
from agent_accounts.io import Profile


@pytest.fixture
def no_canary_in_files(tmp_path: Path) -> Iterator[None]:
    """Check, when the test ends, that no file under `tmp_path` but credentials holds the canary."""
    yield
    check_files(tmp_path)


@pytest.fixture
def no_leaks(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], no_canary_in_files: None
) -> Iterator[None]:
    """Capture every logger at DEBUG; when the test ends, check that no log record, nothing on
    stdout or stderr and no file but credentials holds the canary."""
    quiet_logs(caplog)
    yield
    check_logs(caplog)
    out, err = capfd.readouterr()
    assert CANARY not in out
    assert CANARY not in err


@pytest.fixture
async def server() -> AsyncIterator[UsageServer]:
    """A local usage endpoint (tests set its `handler`)."""
    async with UsageServer() as running:
        yield running


@pytest.fixture
def home_dir(tmp_path: Path, no_canary_in_files: None) -> Path:
    """An empty HOME directory, `tmp_path/home`; its files are checked when the test ends."""
    path = tmp_path / "home"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def home(home_dir: Path, server: UsageServer) -> Home:
    """An empty HOME pointed at `server`; its files are checked when the test ends."""
    return Home(path=home_dir, url=server.url)


@pytest.fixture
def profile(tmp_path: Path) -> Profile:
    """Profile `work` under `tmp_path/home/.agent-profiles`, 0700 and without a login yet (its
    files are not checked: some tests plant the canary outside it on purpose)."""
    return make_profile(tmp_path / "home" / ".agent-profiles", "work", seed=False)[0]


@pytest.fixture
def work(tmp_path: Path) -> tuple[Profile, str]:
    """Profile `work` as `profile` places it, signed in with canary credentials valid for a day
    after NOW, and its access token."""
    return make_profile(tmp_path / "home" / ".agent-profiles", "work")
