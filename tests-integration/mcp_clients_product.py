"""The registry the stock-MCP-client tests serve: `local-daemon serve mcp_clients_product:registry`.

`test_simple_text`, `test_error_handling` and `test_tool_with_progress` are the tools the official
conformance suite's `tools-call-simple-text`, `tools-call-error` and `tools-call-with-progress`
scenarios call by name; the `test://` resources and the `test_*` prompts are what its `resources-*`
and `prompts-*` scenarios read and get.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any, Literal

from local_daemon import CommandError, Icon, Progress, Registry

__all__ = ["PNG_BASE64", "SIMPLE_TEXT", "registry"]

SIMPLE_TEXT = "This is a simple text response for testing."

# A 1x1 PNG, for the binary resource and the image prompt.
PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
ICON = Icon(src="data:image/png;base64," + PNG_BASE64, mime_type="image/png", sizes=("1x1",))

registry = Registry(title="MCP clients product", icons=[ICON])


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


@registry.resource("test://static-text", title="Static text")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@registry.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG)."""
    return base64.b64decode(PNG_BASE64)


@registry.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> dict[str, str]:
    """Data for one id.

    Args:
        id: The id to fill in.
    """
    return {"id": id, "templateTest": "true", "data": f"Data for ID: {id}"}


@registry.prompt(title="Simple prompt")
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@registry.prompt(title="Prompt with arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@registry.prompt(title="Prompt with an embedded resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt embedding the resource it is given.

    Args:
        resourceUri: URI of the resource to embed.
    """
    resource = {
        "uri": resourceUri,
        "mimeType": "text/plain",
        "text": "Embedded resource content for testing.",
    }
    return [
        {"type": "resource", "resource": resource},
        "Please process the embedded resource above.",
    ]


@registry.prompt(title="Prompt with an image")
def test_prompt_with_image() -> list[Any]:
    """A prompt holding an image."""
    image = {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}
    return [image, "Please analyze the image above."]
