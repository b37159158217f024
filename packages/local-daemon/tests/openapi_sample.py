"""A sample registry for the OpenAPI tests: every parameter form the registry describes, and
commands that answer each status a command can choose (400, 403, 429) on well-formed input."""

from __future__ import annotations

from typing import Any, Literal

from local_daemon import CommandError, Registry

__all__ = ["registry"]

registry = Registry()


@registry.command(title="Echo", read_only=True, idempotent=True)
def echo(text: str, times: int = 1) -> dict[str, str]:
    """Echo the text.

    Args:
        text: what to echo back.
        times: how many copies, 0 to 5.
    """
    if not 0 <= times <= 5:
        raise CommandError("times must be 0 to 5", 65)
    return {"text": text * times}


@registry.command
def add(a: float, b: float | None = None) -> float:
    """Add two numbers (b defaults to 0)."""
    total = a + (b or 0.0)
    if total != total or total in (float("inf"), float("-inf")):
        raise CommandError("the sum is not a finite number", 65)
    return total


@registry.command
async def pick(
    color: Literal["red", "green"],
    tags: list[str] | None = None,
    meta: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Pick a color, with tags and numeric metadata."""
    return {"color": color, "tags": tags or [], "meta": meta or {}}


@registry.command
def guard(level: Literal["ok", "forbidden", "limited", "bad"]) -> str:
    """Refuse by level: 403 forbidden, 429 limited, 400 bad, else ok."""
    codes = {"forbidden": 77, "limited": 75, "bad": 65}
    if level in codes:
        raise CommandError(f"refused: {level}", codes[level])
    return level


@registry.command
def flags(on: bool, note: Any = None) -> list[Any]:
    """Return the flag and an arbitrary JSON note."""
    return [on, note]
