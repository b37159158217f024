"""`Registry`: schema from signatures, argument validation, context and worker threads."""

from __future__ import annotations

import threading
from typing import Any, Literal

import pytest

from local_daemon import CommandError, Registry, UnknownCommandError


def make() -> Registry:
    registry = Registry()

    @registry.command
    def echo(text: str, times: int = 1, loud: bool = False) -> str:
        """Echo text back.

        More detail that is not the description.
        """
        return text * times if not loud else (text * times).upper()

    @registry.command(name="sum.all", description="Add numbers.")
    async def add(values: list[float], scale: float | None = None) -> float:
        return sum(values) * (scale if scale is not None else 1.0)

    @registry.command
    def pick(kind: Literal["a", "b", 1], tags: dict[str, int] | None = None) -> Any:
        return {"kind": kind, "tags": tags}

    @registry.command
    def whoami(context: Any) -> Any:
        return {"context": context, "thread": threading.current_thread() is threading.main_thread()}

    return registry


def test_schema_from_signature() -> None:
    infos = {info.name: info for info in make().commands()}
    assert list(infos) == ["echo", "sum.all", "pick", "whoami"]
    echo = infos["echo"]
    assert echo.description == "Echo text back."
    assert echo.input_schema == {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "times": {"type": "integer", "default": 1},
            "loud": {"type": "boolean", "default": False},
        },
        "required": ["text"],
        "additionalProperties": False,
    }
    add = infos["sum.all"]
    assert add.description == "Add numbers."
    assert add.input_schema["properties"] == {
        "values": {"type": "array", "items": {"type": "number"}},
        "scale": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
    }
    pick = infos["pick"].input_schema
    assert pick["properties"]["kind"] == {"enum": ["a", "b", 1], "type": ["integer", "string"]}
    assert pick["properties"]["tags"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert infos["whoami"].input_schema["properties"] == {}
    assert "required" not in infos["whoami"].input_schema


async def test_invoke_sync_async_and_context() -> None:
    registry = make()
    assert await registry.invoke_command("echo", {"text": "ab", "times": 2}, None) == "abab"
    assert await registry.invoke_command("sum.all", {"values": [1, 2.5]}, None) == 3.5
    who = await registry.invoke_command("whoami", {}, {"user": "x"})
    assert who == {"context": {"user": "x"}, "thread": False}


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [
        ("echo", [1], "arguments must be a JSON object"),
        ("echo", "text", "arguments must be a JSON object"),
        ("echo", {}, "missing required argument: text"),
        ("echo", {"text": "a", "extra": 1}, "unknown argument: extra"),
        ("echo", {"text": 1}, "argument text: expected a string"),
        ("echo", {"text": "a", "times": True}, "argument times: expected an integer"),
        ("echo", {"text": "a", "times": 1.5}, "argument times: expected an integer"),
        ("echo", {"text": "a", "loud": 1}, "argument loud: expected a boolean"),
        ("sum.all", {"values": [1, "x"]}, "argument values[1]: expected a number"),
        ("sum.all", {"values": {}}, "argument values: expected an array"),
        ("sum.all", {"values": [], "scale": "2"}, "argument scale: expected a number or null"),
        ("pick", {"kind": "c"}, "argument kind: expected one of"),
        ("pick", {"kind": True}, "argument kind: expected one of"),
        ("pick", {"kind": []}, "argument kind: expected one of"),
        ("pick", {"kind": "a", "tags": {"x": "y"}}, "argument tags: expected"),
    ],
)
async def test_bad_arguments_are_65_naming_the_field(name: str, args: Any, needle: str) -> None:
    with pytest.raises(CommandError) as caught:
        await make().invoke_command(name, args, None)
    assert caught.value.code == 65
    assert needle in caught.value.message


async def test_values_are_never_echoed_in_refusals() -> None:
    secret = "CANARY-registry-91ab"
    with pytest.raises(CommandError) as caught:
        await make().invoke_command("echo", {"text": "a", "times": secret}, None)
    assert secret not in str(caught.value)


async def test_unknown_command() -> None:
    with pytest.raises(UnknownCommandError):
        await make().invoke_command("nope", {}, None)


def test_registration_refusals() -> None:
    registry = Registry()

    @registry.command
    def one() -> None:
        return None

    with pytest.raises(ValueError, match="already registered"):
        registry.command(name="one")(lambda: None)
    with pytest.raises(ValueError, match="invalid command name"):
        registry.command(name="a/b")(lambda: None)

    def variadic(*values: int) -> None:
        return None

    with pytest.raises(TypeError):
        registry.command(variadic)

    def odd(value: set[int]) -> None:
        return None

    with pytest.raises(TypeError, match="unsupported"):
        registry.command(odd)

    def bad_keys(value: dict[int, int]) -> None:
        return None

    with pytest.raises(TypeError, match="str keys"):
        registry.command(bad_keys)


async def test_returns_the_function_unchanged() -> None:
    registry = Registry()

    def plain(x: int) -> int:
        return x + 1

    assert registry.command(plain) is plain
    assert plain(1) == 2
