"""How a typed function's signature becomes a JSON Schema and an argument check.

One description per annotation (`str`, `int`, `float`, `bool`, `None`, `Any`, `Literal`, unions,
`list[...]`, `dict[str, ...]`): its JSON Schema, the checker that validates a call's value against
it, and a short name for messages. `Registry` uses it for commands, resource templates and prompts
alike; the docstring's Google-style `Args:` section gives each parameter's description.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._errors import CommandError

__all__ = [
    "CONTEXT_PARAM",
    "NAME",
    "Check",
    "Param",
    "arg_descriptions",
    "check_arguments",
    "describe",
    "json_default",
    "shown",
]

# Command names travel in URLs (`/rpc/{name}`) and MCP tool names; keep them to safe characters.
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
CONTEXT_PARAM = "context"
_MAX_NAME_IN_MESSAGE = 64

Check = Callable[[Any, str], Any]


def shown(name: str) -> str:
    # A client-chosen key goes into the message; keep it short and printable.
    text = name if len(name) <= _MAX_NAME_IN_MESSAGE else name[:_MAX_NAME_IN_MESSAGE] + "…"
    return text.encode("unicode_escape").decode("ascii")


def _refuse(path: str, expected: str) -> CommandError:
    # The value itself is never echoed: it may be a secret the caller mistyped.
    return CommandError(f"argument {path}: expected {expected}", 65)


def _check_str(value: Any, path: str) -> Any:
    if not isinstance(value, str):
        raise _refuse(path, "a string")
    return value


def _check_bool(value: Any, path: str) -> Any:
    if not isinstance(value, bool):
        raise _refuse(path, "a boolean")
    return value


def _check_int(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refuse(path, "an integer")
    return value


def _check_float(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _refuse(path, "a number")
    return float(value)


def _check_none(value: Any, path: str) -> Any:
    if value is not None:
        raise _refuse(path, "null")
    return value


def _check_any(value: Any, path: str) -> Any:
    return value


_SCALARS: dict[Any, tuple[dict[str, Any], Check, str]] = {
    str: ({"type": "string"}, _check_str, "a string"),
    bool: ({"type": "boolean"}, _check_bool, "a boolean"),
    int: ({"type": "integer"}, _check_int, "an integer"),
    float: ({"type": "number"}, _check_float, "a number"),
    type(None): ({"type": "null"}, _check_none, "null"),
    None: ({"type": "null"}, _check_none, "null"),
    Any: ({}, _check_any, "any value"),
}


def describe(annotation: Any) -> tuple[dict[str, Any], Check, str]:
    """Return the JSON Schema, the checker and a short type name for one annotation."""
    if annotation in _SCALARS:
        schema, check, label = _SCALARS[annotation]
        return dict(schema), check, label
    origin = typing.get_origin(annotation)
    targs = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return _describe_union(targs)
    if origin is Literal:
        return _describe_literal(targs)
    if annotation is list or origin is list:
        item = targs[0] if targs else Any
        return _describe_list(item)
    if annotation is dict or origin is dict:
        key, value = targs if targs else (str, Any)
        if key is not str:
            raise TypeError("dict parameters must have str keys")
        return _describe_dict(value)
    raise TypeError(f"unsupported parameter annotation: {annotation!r}")


def _describe_union(targs: tuple[Any, ...]) -> tuple[dict[str, Any], Check, str]:
    parts = [describe(arg) for arg in targs]
    schema = {"anyOf": [part[0] for part in parts]}
    checks = [part[1] for part in parts]
    label = " or ".join(part[2] for part in parts)

    def check(value: Any, path: str) -> Any:
        for one in checks:
            try:
                return one(value, path)
            except CommandError:
                continue
        raise _refuse(path, label)

    return schema, check, label


def _describe_literal(values: tuple[Any, ...]) -> tuple[dict[str, Any], Check, str]:
    for value in values:
        if not isinstance(value, (str, int, bool)) and value is not None:
            raise TypeError("Literal parameters take str, int, bool or None values")
    label = "one of " + ", ".join(repr(value) for value in values)
    # `True == 1` in Python; compare the type too so `true` never passes for `1`.
    allowed = {(type(value), value) for value in values}

    def check(value: Any, path: str) -> Any:
        try:
            ok = (type(value), value) in allowed
        except TypeError:  # unhashable (a list or an object)
            ok = False
        if not ok:
            raise _refuse(path, label)
        return value

    schema: dict[str, Any] = {"enum": list(values)}
    kinds = sorted({_JSON_TYPE[type(value)] for value in values})
    schema["type"] = kinds[0] if len(kinds) == 1 else kinds
    return schema, check, label


_JSON_TYPE = {str: "string", int: "integer", bool: "boolean", type(None): "null"}


def _describe_list(item: Any) -> tuple[dict[str, Any], Check, str]:
    item_schema, item_check, _ = describe(item)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise _refuse(path, "an array")
        return [item_check(element, f"{path}[{index}]") for index, element in enumerate(value)]

    return {"type": "array", "items": item_schema}, check, "an array"


def _describe_dict(value_type: Any) -> tuple[dict[str, Any], Check, str]:
    value_schema, value_check, _ = describe(value_type)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _refuse(path, "an object")
        return {
            key: value_check(element, f"{path}.{shown(str(key))}") for key, element in value.items()
        }

    schema: dict[str, Any] = {"type": "object"}
    if value_schema:
        schema["additionalProperties"] = value_schema
    return schema, check, "an object"


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    name: str
    check: Check
    required: bool


def json_default(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


_ARGS_HEADING = re.compile(r"(?:Args|Arguments|Parameters|Params):\s*")
_ARG_LINE = re.compile(r"\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)")


def arg_descriptions(doc: str) -> dict[str, str]:
    """Return each parameter's description from a Google-style `Args:` section of `doc`."""
    found: dict[str, list[str]] = {}
    lines = doc.splitlines()
    start = next(
        (at for at, line in enumerate(lines) if _ARGS_HEADING.fullmatch(line.strip())), None
    )
    if start is None:
        return {}
    heading_indent = len(lines[start]) - len(lines[start].lstrip())
    entry_indent: int | None = None
    current: list[str] | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= heading_indent:
            break  # the next section (`Returns:`, `Raises:`) or the body's text
        match = _ARG_LINE.fullmatch(line.strip())
        if match is not None and (entry_indent is None or indent == entry_indent):
            entry_indent = indent
            current = found.setdefault(match.group(1), [])
            if match.group(2):
                current.append(match.group(2).strip())
        elif current is not None and entry_indent is not None and indent > entry_indent:
            current.append(line.strip())
    return {name: " ".join(words) for name, words in found.items() if words}


def check_arguments(params: tuple[Param, ...], args: Any) -> dict[str, Any]:
    """Return the checked keyword arguments of a call, or raise `CommandError` (code 65)."""
    if not isinstance(args, Mapping):
        raise CommandError("arguments must be a JSON object", 65)
    known = {param.name for param in params}
    for key in args:
        if not isinstance(key, str) or key not in known:
            raise CommandError(f"unknown argument: {shown(str(key))}", 65)
    values: dict[str, Any] = {}
    for param in params:
        if param.name in args:
            values[param.name] = param.check(args[param.name], param.name)
        elif param.required:
            raise CommandError(f"missing required argument: {param.name}", 65)
    return values
