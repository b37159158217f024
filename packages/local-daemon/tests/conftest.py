"""Shared fixtures: a network namespace for the remote listener, and Debian's Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest

from netns_support import inside_namespace

if TYPE_CHECKING:
    from playwright.async_api import Browser

# Launch flags for headless Chromium on a machine without a display, sandbox or network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def netns() -> Iterator[str]:
    """Run this test in a fresh network namespace with 192.0.2.10 on lo; yield that address."""
    with inside_namespace() as address:
        yield address


@pytest.fixture
async def browser(netns: str) -> AsyncIterator[Browser]:
    """Debian's headless Chromium through Playwright (never a downloaded browser), started inside
    the test's namespace so that it reaches the remote listener there and nothing outside."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        # Playwright makes a fresh temporary profile (user data dir) for every launch.
        launched = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()
