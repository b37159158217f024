"""The header a non-browser local client sends in place of an Origin (no aiohttp needed here)."""

from __future__ import annotations

from typing import Final

__all__ = ["CLIENT_HEADER"]

# No secret and no authentication: it shows a state-changing request does not come from a page.
CLIENT_HEADER: Final = "x-local-client"
