"""A registry with resources, prompts and icons beside a tool, for the MCP content tests;
`local-daemon mcp-stdio content_registry:registry` serves it over stdio."""

from __future__ import annotations

import base64
from typing import Any

from local_daemon import CommandError, Icon, Registry

__all__ = ["CANARY", "ICON", "PNG", "registry", "runs"]

# Carried by the failing resource's exception; must never reach a client.
CANARY = "CANARY-52e9a1-resource-detail"
ICON = Icon(src="https://example.com/icon.png", mime_type="image/png", sizes=("48x48",))
# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
# Every function call, so a test can see what ran (and what never did).
runs: list[tuple[str, Any]] = []

registry = Registry(title="Content fixture", icons=[ICON])


@registry.command(
    title="Ping", icons=[ICON, Icon(src="data:image/svg+xml;base64,PHN2Zy8+", theme="dark")]
)
def ping() -> str:
    """Answer pong."""
    return "pong"


@registry.resource("fixture://readme", title="Read me", icons=[ICON])
def readme() -> str:
    """The fixture's read-me."""
    runs.append(("readme", None))
    return "Read me first."


@registry.resource("fixture://logo", mime_type="image/png")
def logo() -> bytes:
    """A tiny PNG."""
    return PNG


@registry.resource("fixture://settings")
async def settings(context: Any) -> dict[str, Any]:
    """The settings, as JSON, with the context the read ran with."""
    return {"theme": "dark", "context": context}


@registry.resource("notes://{name}", mime_type="text/markdown")
def note(name: str) -> str:
    """One note by name.

    Args:
        name: The note's name.
    """
    runs.append(("note", name))
    if name == "secret":
        raise RuntimeError(CANARY)
    if name == "missing":
        raise CommandError("no such note", 65)
    return f"# {name}"


@registry.prompt(title="Greeting", icons=[ICON])
def greet(who: str, tone: str = "warm") -> str:
    """Greet someone.

    Args:
        who: Whom to greet.
        tone: How to sound.
    """
    return f"Write a {tone} greeting for {who}."


@registry.prompt
def review_image() -> list[Any]:
    """Ask for a review of an image."""
    return [
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
        {"role": "assistant", "content": {"type": "text", "text": "I see a pixel."}},
        "Please describe it.",
    ]
