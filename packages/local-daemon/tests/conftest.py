"""Shared fixtures: a network namespace for the remote listener, and Debian's Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest

from chromium_flags import CHROMIUM, CHROMIUM_ARGS
from netns_support import inside_namespace

if TYPE_CHECKING:
    from playwright.async_api import Browser


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
        launched = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()
