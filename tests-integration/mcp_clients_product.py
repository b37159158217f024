"""The registry the stock-MCP-client tests serve: `local-daemon serve mcp_clients_product:registry`.

`test_simple_text`, `test_error_handling` and `test_tool_with_progress` are the tools the official
conformance suite's `tools-call-simple-text`, `tools-call-error` and `tools-call-with-progress`
scenarios call by name.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from local_daemon import CommandError, Progress, Registry

__all__ = ["SIMPLE_TEXT", "registry"]

SIMPLE_TEXT = "This is a simple text response for testing."

registry = Registry()


@registry.command(title="Simple text", read_only=True, idempotent=True)
def test_simple_text() -> str:
    """Return a simple text response for testing."""
    return SIMPLE_TEXT


@registry.command(title="Error handling", read_only=True)
def test_error_handling() -> str:
    """Fail on purpose with a refusal the client sees as a tool error."""
    raise CommandError("This tool intentionally returns an error for testing", 65)


@registry.command(title="Progress", read_only=True, idempotent=True)
async def test_tool_with_progress(progress: Progress) -> str:
    """Report 0, 50 and 100 of 100, about 50 ms apart, as the conformance suite asks."""
    for done in (0, 50):
        progress.report(done, 100)
        await asyncio.sleep(0.05)
    progress.report(100, 100)
    return "progress reported"


@registry.command(title="Echo", read_only=True, idempotent=True)
def echo(text: str, mode: Literal["plain", "upper"] = "plain") -> dict[str, str]:
    """Echo the text back.

    Args:
        text: The text to send back.
        mode: `upper` sends it back in capitals.
    """
    return {"text": text.upper() if mode == "upper" else text}
