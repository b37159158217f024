"""A small registry for the MCP tests; `python -m daemon_mcp_fixture` serves it over stdio."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from local_daemon import AuthRecord, CommandError, CommandInfo, UnknownCommandError

__all__ = [
    "CANARY",
    "TOOL_PREFIX",
    "VERSION",
    "FixtureRegistry",
    "context_factory",
]

TOOL_PREFIX = "fx"
VERSION = "9.9.9-fixture"
# Carried by the crashing command's exception message; must never reach a client or a log.
CANARY = "CANARY-7d41c2-internal-detail"

_OBJECT = {"type": "object", "properties": {}, "additionalProperties": False}

_COMMANDS = (
    CommandInfo(
        name="echo",
        description="Echo the text back.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        },
    ),
    CommandInfo(
        name="add",
        description="Add two integers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    ),
    CommandInfo(
        name="whoami", description="Return the context the call ran with.", input_schema=_OBJECT
    ),
    CommandInfo(name="too_big", description="Refuse with code 64.", input_schema=_OBJECT),
    CommandInfo(name="bad_args", description="Refuse with code 65.", input_schema=_OBJECT),
    CommandInfo(name="limited", description="Refuse with code 75.", input_schema=_OBJECT),
    CommandInfo(name="forbidden", description="Refuse with code 77.", input_schema=_OBJECT),
    CommandInfo(name="crash", description="Raise an unexpected error.", input_schema=_OBJECT),
)

ERROR_COMMANDS = ("too_big", "bad_args", "limited", "forbidden", "crash")


class FixtureRegistry:
    """Implements the registry protocol by hand, so the MCP tests need no other module."""

    def commands(self) -> Sequence[CommandInfo]:
        return _COMMANDS

    async def invoke_command(self, name: str, args: Any, context: Any) -> Any:
        await asyncio.sleep(0)
        if name == "echo":
            if not isinstance(args, dict) or not isinstance(args.get("text"), str):
                raise CommandError("text must be a string", 65)
            return {"text": args["text"]}
        if name == "add":
            return args["a"] + args["b"]
        if name == "whoami":
            return {"context": context}
        if name == "too_big":
            raise CommandError("payload too big", 64)
        if name == "bad_args":
            raise CommandError("bad arguments", 65)
        if name == "limited":
            raise CommandError("slow down", 75)
        if name == "forbidden":
            raise CommandError("not for you", 77)
        if name == "crash":
            raise RuntimeError(CANARY)
        raise UnknownCommandError(name)


# What `local-daemon mcp-stdio daemon_mcp_fixture:registry` serves.
registry = FixtureRegistry()


def context_factory(surface: str, auth: AuthRecord | None) -> dict[str, Any]:
    """Build a context that shows which surface and auth it was built for."""
    return {"surface": surface, "auth": None if auth is None else auth.credential}


def main() -> None:
    from local_daemon import run_mcp_stdio

    asyncio.run(
        run_mcp_stdio(
            FixtureRegistry(),
            tool_prefix=TOOL_PREFIX,
            version=VERSION,
            create_context=context_factory,
        )
    )


if __name__ == "__main__":
    main()
