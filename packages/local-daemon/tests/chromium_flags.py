"""How the tests launch Debian's Chromium: headless, on a machine without a display, a sandbox or
network beyond what the test made (TESTING.md's flags; Playwright adds a fresh profile)."""

from __future__ import annotations

__all__ = ["CHROMIUM", "CHROMIUM_ARGS"]

CHROMIUM = "/usr/bin/chromium"
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
