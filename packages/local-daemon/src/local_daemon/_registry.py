"""`Registry`: a ready command registry built from typed functions.

`@registry.command` reads the function's signature once, at registration: each parameter becomes a
JSON Schema property (its annotation gives the type, a default makes it optional, the docstring's
`Args:` section its description) and the same description validates the arguments of every call.
The return annotation, when it has a JSON form, becomes the command's output schema. A parameter
named `context` is not an argument: it receives the per-request context; nor is one annotated
`Progress` (the call's progress reporter) or `CancelFlag` (set when the caller gives up). Sync
functions run in a worker thread. `title`, `read_only`, `destructive` and `idempotent` describe
the command to MCP clients (tool annotations); they change nothing about how it runs.

`@registry.resource(uri)` and `@registry.prompt` register MCP resources and prompts the same way
(`_registry_content`); `icons` on each, and on the registry itself, are what clients show.
"""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from ._errors import UnknownCommandError
from ._progress import CallScope, CancelFlag, Progress, current_call
from ._registry_content import (
    ContentEntry,
    build_prompt,
    build_resource,
    call_function,
    checked_name,
    icons_of,
    keyword_parameters,
    run_entry,
    summary,
)
from ._signature import (
    CONTEXT_PARAM,
    Param,
    arg_descriptions,
    check_arguments,
    describe,
    json_default,
)
from ._types import CommandInfo, Icon, PromptInfo, ResourceInfo, envelope_schemas

__all__ = ["Registry"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True, kw_only=True)
class _Command:
    info: CommandInfo
    fn: Callable[..., Any]
    params: tuple[Param, ...]
    takes_context: bool
    is_async: bool
    progress_param: str | None = None
    cancel_param: str | None = None


def _output_schema(hints: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the JSON Schema of a call's envelope for the return annotation, if it has one.

    A tool's structured result is the whole envelope (`{"ok": true, "data": ...}` or the error
    envelope), so the schema describes that, with `data` typed by the annotation.
    """
    if "return" not in hints:
        return None
    try:
        data, _, _ = describe(hints["return"])
    except TypeError:
        return None  # a return type with no JSON form (a class, a TypedDict): say nothing
    return {"type": "object", "anyOf": list(envelope_schemas(data))}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Hints:
    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    icons: tuple[Icon, ...] = ()


def _build(
    fn: Callable[..., Any], name: str, description: str | None, hints_in: _Hints = _Hints()
) -> _Command:
    try:
        hints = typing.get_type_hints(fn)
    except NameError:
        # String annotations naming a reporter or flag imported inside a function (a factory
        # building its registry) resolve against the types themselves.
        hints = typing.get_type_hints(fn, localns={"Progress": Progress, "CancelFlag": CancelFlag})
    properties: dict[str, Any] = {}
    required: list[str] = []
    params: list[Param] = []
    controls: dict[type, str] = {}
    described = arg_descriptions(inspect.getdoc(fn) or "")
    arguments, takes_context = keyword_parameters(fn, "command", name)
    for param in arguments:
        annotation = hints.get(param.name, Any)
        if annotation in (Progress, CancelFlag):
            # Handed in by the surface that runs the call; never an argument a client sends.
            if annotation in controls:
                raise TypeError(f"command {name}: more than one {annotation.__name__} parameter")
            controls[annotation] = param.name
            continue
        schema, check, _ = describe(annotation)
        is_required = param.default is param.empty
        if is_required:
            required.append(param.name)
        elif json_default(param.default):
            schema["default"] = param.default
        if param.name in described:
            schema["description"] = described[param.name]
        properties[param.name] = schema
        params.append(Param(name=param.name, check=check, required=is_required))
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        input_schema["required"] = required
    return _Command(
        info=CommandInfo(
            name=name,
            description=summary(fn, description),
            input_schema=input_schema,
            output_schema=_output_schema(hints),
            title=hints_in.title,
            read_only=hints_in.read_only,
            destructive=hints_in.destructive,
            idempotent=hints_in.idempotent,
            icons=hints_in.icons,
        ),
        fn=fn,
        params=tuple(params),
        takes_context=takes_context,
        is_async=inspect.iscoroutinefunction(fn),
        progress_param=controls.get(Progress),
        cancel_param=controls.get(CancelFlag),
    )


def _arguments(command: _Command, args: Any) -> dict[str, Any]:
    return check_arguments(command.params, args)


class Registry:
    """Commands, resources and prompts registered from typed functions; implements the daemon's
    registry protocol.

    `title` and `icons` describe the server itself to MCP clients (its `serverInfo`).
    """

    def __init__(self, *, title: str | None = None, icons: Sequence[Icon] = ()) -> None:
        self.title = title
        self.icons = icons_of(icons)
        self._commands: dict[str, _Command] = {}
        self._resources: dict[str, ContentEntry] = {}
        self._prompts: dict[str, ContentEntry] = {}

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
        icons: Sequence[Icon] = (),
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
        icons: Sequence[Icon] = (),
    ) -> Any:
        """Register a typed function as a command (`@registry.command` or with options).

        `title` is the display name MCP clients show and `icons` the tool's icons; `read_only`
        (changes nothing), `destructive` (may delete or overwrite) and `idempotent` (a repeat has
        no further effect) become the tool's `readOnlyHint`, `destructiveHint` and
        `idempotentHint`.
        """
        tool_hints = _Hints(
            title=title,
            read_only=read_only,
            destructive=destructive,
            idempotent=idempotent,
            icons=icons_of(icons),
        )

        def register(target: Callable[..., Any]) -> Callable[..., Any]:
            command_name = checked_name("command", name if name is not None else target.__name__)
            if command_name in self._commands:
                raise ValueError(f"command already registered: {command_name}")
            self._commands[command_name] = _build(target, command_name, description, tool_hints)
            return target

        if fn is not None:
            return register(fn)
        return register

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        icons: Sequence[Icon] = (),
    ) -> Callable[[F], F]:
        """Register a typed function as the MCP resource at `uri` (`@registry.resource(uri)`).

        A fixed URI (`config://app`) takes a function of no argument; an RFC 6570 template
        (`notes://{name}`) one `str` parameter per variable. The function answers `str` (text),
        `bytes` (a blob) or a JSON value (JSON text); `mime_type` is what clients are told
        (default: `text/plain`, `application/octet-stream` or `application/json` by value).
        """
        checked_icons = icons_of(icons)

        def register(target: F) -> F:
            entry = build_resource(
                target,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                icons=checked_icons,
            )
            if entry.info.name in self._resources:
                raise ValueError(f"resource already registered: {entry.info.name}")
            if uri in {getattr(one.info, "uri", None) for one in self._resources.values()}:
                raise ValueError(f"resource uri already registered: {uri}")
            self._resources[entry.info.name] = entry
            return target

        return register

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(
        self,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Icon] = (),
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Icon] = (),
    ) -> Any:
        """Register a typed function as an MCP prompt (`@registry.prompt` or with options).

        Each `str` parameter is an argument (required unless it has a default; the docstring's
        `Args:` section describes it). The function answers a string (one user message) or a
        list of messages: strings, `{"role": ..., "content": ...}` objects as MCP writes them,
        or content blocks (an image, an embedded resource), each a user message.
        """
        checked_icons = icons_of(icons)

        def register(target: Callable[..., Any]) -> Callable[..., Any]:
            entry = build_prompt(
                target, name=name, title=title, description=description, icons=checked_icons
            )
            if entry.info.name in self._prompts:
                raise ValueError(f"prompt already registered: {entry.info.name}")
            self._prompts[entry.info.name] = entry
            return target

        if fn is not None:
            return register(fn)
        return register

    def resources(self) -> list[ResourceInfo]:
        """Return every resource (fixed URIs and templates), in registration order."""
        return [
            entry.info for entry in self._resources.values() if isinstance(entry.info, ResourceInfo)
        ]

    async def read_resource(self, name: str, params: Mapping[str, Any], context: Any) -> Any:
        """Run the resource `name` with its template variables `params` (`{}` for a fixed URI)."""
        return await run_entry(self._resources, "resource", name, params, context)

    def prompts(self) -> list[PromptInfo]:
        """Return every prompt's name, description and arguments, in registration order."""
        return [
            entry.info for entry in self._prompts.values() if isinstance(entry.info, PromptInfo)
        ]

    async def get_prompt(self, name: str, arguments: Mapping[str, Any], context: Any) -> Any:
        """Check `arguments` and run the prompt `name` (sync ones in a worker thread)."""
        return await run_entry(self._prompts, "prompt", name, arguments, context)

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
            values[CONTEXT_PARAM] = context
        if command.progress_param is None and command.cancel_param is None:
            return await call_function(command.fn, command.is_async, values)
        # The surface's scope when it streams progress; else one of this call's own, whose
        # reporter goes nowhere.
        scope = current_call() or CallScope(None)
        if command.progress_param is not None:
            values[command.progress_param] = scope.progress
        if command.cancel_param is not None:
            values[command.cancel_param] = scope.cancel_flag
        try:
            return await call_function(command.fn, command.is_async, values)
        except asyncio.CancelledError:
            # The client went away or sent a cancel: a sync command still running in its thread
            # sees its flag.
            scope.cancel()
            raise
