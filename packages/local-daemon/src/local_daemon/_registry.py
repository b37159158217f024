"""`Registry`: a ready command registry built from typed functions.

`@registry.command` reads the function's signature once, at registration: each parameter becomes a
JSON Schema property (its annotation gives the type, a default makes it optional, the docstring's
`Args:` section its description) and the same description validates the arguments of every call.
The return annotation, when it has a JSON form, becomes the command's output schema. A parameter
named `context` is not an argument: it receives the per-request context; nor is one annotated
`Progress` (the call's progress reporter) or `CancelFlag` (set when the caller gives up). Sync
functions run in a worker thread. `title`, `read_only`, `destructive` and `idempotent` describe
the command to MCP clients (tool annotations); they change nothing about how it runs.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from ._errors import CommandError, UnknownCommandError
from ._progress import CallScope, CancelFlag, Progress, current_call
from ._threads import run_in_command_thread
from ._types import CommandInfo, envelope_schemas

__all__ = ["Registry"]

F = TypeVar("F", bound=Callable[..., Any])

# Command names travel in URLs (`/rpc/{name}`) and MCP tool names; keep them to safe characters.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_CONTEXT_PARAM = "context"
_MAX_NAME_IN_MESSAGE = 64

Check = Callable[[Any, str], Any]


def _shown(name: str) -> str:
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


def _describe(annotation: Any) -> tuple[dict[str, Any], Check, str]:
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
    parts = [_describe(arg) for arg in targs]
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
    item_schema, item_check, _ = _describe(item)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise _refuse(path, "an array")
        return [item_check(element, f"{path}[{index}]") for index, element in enumerate(value)]

    return {"type": "array", "items": item_schema}, check, "an array"


def _describe_dict(value_type: Any) -> tuple[dict[str, Any], Check, str]:
    value_schema, value_check, _ = _describe(value_type)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _refuse(path, "an object")
        return {
            key: value_check(element, f"{path}.{_shown(str(key))}")
            for key, element in value.items()
        }

    schema: dict[str, Any] = {"type": "object"}
    if value_schema:
        schema["additionalProperties"] = value_schema
    return schema, check, "an object"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Param:
    name: str
    check: Check
    required: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class _Command:
    info: CommandInfo
    fn: Callable[..., Any]
    params: tuple[_Param, ...]
    takes_context: bool
    is_async: bool
    progress_param: str | None = None
    cancel_param: str | None = None


def _json_default(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


_ARGS_HEADING = re.compile(r"(?:Args|Arguments|Parameters|Params):\s*")
_ARG_LINE = re.compile(r"\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)")


def _arg_descriptions(doc: str) -> dict[str, str]:
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


def _output_schema(hints: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the JSON Schema of a call's envelope for the return annotation, if it has one.

    A tool's structured result is the whole envelope (`{"ok": true, "data": ...}` or the error
    envelope), so the schema describes that, with `data` typed by the annotation.
    """
    if "return" not in hints:
        return None
    try:
        data, _, _ = _describe(hints["return"])
    except TypeError:
        return None  # a return type with no JSON form (a class, a TypedDict): say nothing
    return {"type": "object", "anyOf": list(envelope_schemas(data))}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Hints:
    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None


def _build(
    fn: Callable[..., Any], name: str, description: str | None, hints_in: _Hints = _Hints()
) -> _Command:
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except NameError:
        # String annotations naming a reporter or flag imported inside a function (a factory
        # building its registry) resolve against the types themselves.
        hints = typing.get_type_hints(fn, localns={"Progress": Progress, "CancelFlag": CancelFlag})
    properties: dict[str, Any] = {}
    required: list[str] = []
    params: list[_Param] = []
    takes_context = False
    controls: dict[type, str] = {}
    doc = inspect.getdoc(fn) or ""
    described = _arg_descriptions(doc)
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"command {name}: parameter {param.name} must be passable by keyword")
        if param.name == _CONTEXT_PARAM:
            takes_context = True
            continue
        annotation = hints.get(param.name, Any)
        if annotation in (Progress, CancelFlag):
            # Handed in by the surface that runs the call; never an argument a client sends.
            if annotation in controls:
                raise TypeError(f"command {name}: more than one {annotation.__name__} parameter")
            controls[annotation] = param.name
            continue
        schema, check, _ = _describe(annotation)
        is_required = param.default is param.empty
        if is_required:
            required.append(param.name)
        elif _json_default(param.default):
            schema["default"] = param.default
        if param.name in described:
            schema["description"] = described[param.name]
        properties[param.name] = schema
        params.append(_Param(name=param.name, check=check, required=is_required))
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        input_schema["required"] = required
    if description is None:
        description = doc.strip().splitlines()[0].strip() if doc.strip() else ""
    return _Command(
        info=CommandInfo(
            name=name,
            description=description,
            input_schema=input_schema,
            output_schema=_output_schema(hints),
            title=hints_in.title,
            read_only=hints_in.read_only,
            destructive=hints_in.destructive,
            idempotent=hints_in.idempotent,
        ),
        fn=fn,
        params=tuple(params),
        takes_context=takes_context,
        is_async=inspect.iscoroutinefunction(fn),
        progress_param=controls.get(Progress),
        cancel_param=controls.get(CancelFlag),
    )


def _arguments(command: _Command, args: Any) -> dict[str, Any]:
    if not isinstance(args, Mapping):
        raise CommandError("arguments must be a JSON object", 65)
    known = {param.name for param in command.params}
    for key in args:
        if not isinstance(key, str) or key not in known:
            raise CommandError(f"unknown argument: {_shown(str(key))}", 65)
    values: dict[str, Any] = {}
    for param in command.params:
        if param.name in args:
            values[param.name] = param.check(args[param.name], param.name)
        elif param.required:
            raise CommandError(f"missing required argument: {param.name}", 65)
    return values


class Registry:
    """Commands registered from typed functions; implements the daemon's registry protocol."""

    def __init__(self) -> None:
        self._commands: dict[str, _Command] = {}

    @overload
    def command(self, fn: F, /) -> F: ...

    @overload
    def command(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
    ) -> Callable[[F], F]: ...

    def command(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
    ) -> Any:
        """Register a typed function as a command (`@registry.command` or with options).

        `title` is the display name MCP clients show; `read_only` (changes nothing),
        `destructive` (may delete or overwrite) and `idempotent` (a repeat has no further effect)
        become the tool's `readOnlyHint`, `destructiveHint` and `idempotentHint`.
        """
        tool_hints = _Hints(
            title=title, read_only=read_only, destructive=destructive, idempotent=idempotent
        )

        def register(target: Callable[..., Any]) -> Callable[..., Any]:
            command_name = name if name is not None else target.__name__
            if not _NAME.fullmatch(command_name):
                raise ValueError(f"invalid command name: {command_name!r}")
            if command_name in self._commands:
                raise ValueError(f"command already registered: {command_name}")
            self._commands[command_name] = _build(target, command_name, description, tool_hints)
            return target

        if fn is not None:
            return register(fn)
        return register

    def commands(self) -> list[CommandInfo]:
        """Return every command's name, description and JSON Schema, in registration order."""
        return [command.info for command in self._commands.values()]

    async def invoke_command(self, name: str, args: Any, context: Any) -> Any:
        """Validate `args` and run the command `name` (sync ones in a worker thread)."""
        command = self._commands.get(name)
        if command is None:
            raise UnknownCommandError(name)
        values = _arguments(command, args)
        if command.takes_context:
            values[_CONTEXT_PARAM] = context
        if command.progress_param is None and command.cancel_param is None:
            if command.is_async:
                return await command.fn(**values)
            return await run_in_command_thread(command.fn, **values)
        # The surface's scope when it streams progress; else one of this call's own, whose
        # reporter goes nowhere.
        scope = current_call() or CallScope(None)
        if command.progress_param is not None:
            values[command.progress_param] = scope.progress
        if command.cancel_param is not None:
            values[command.cancel_param] = scope.cancel_flag
        try:
            if command.is_async:
                return await command.fn(**values)
            return await run_in_command_thread(command.fn, **values)
        except asyncio.CancelledError:
            # The client went away or sent a cancel: a sync command still running in its thread
            # sees its flag.
            scope.cancel()
            raise
