"""Resources and prompts of a `Registry`: typed functions read once, at registration.

A resource is a function answering its content: `str` (text), `bytes` (a blob) or any JSON value
(sent as JSON text). Its URI is fixed (`config://app`, the function takes no argument) or an RFC
6570 template (`notes://{name}`, one `str` parameter per variable; `list[str]` for an exploded
one), which the MCP projection matches with the `mcp` SDK's `UriTemplate`. A prompt is a function
of `str` arguments (MCP prompt arguments are strings) answering a string (one user message) or a
list of messages. Either may take `context` (the per-request context); sync functions run in a
worker thread. Nothing here imports `mcp`: a registry is built before the daemon knows whether
MCP is served.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._errors import CommandError
from ._signature import (
    CONTEXT_PARAM,
    NAME,
    Param,
    arg_descriptions,
    check_arguments,
    describe,
    shown,
)
from ._threads import run_in_command_thread
from ._types import Icon, PromptArgumentInfo, PromptInfo, ResourceInfo

__all__ = [
    "ContentEntry",
    "build_prompt",
    "build_resource",
    "call_function",
    "checked_name",
    "icons_of",
    "keyword_parameters",
    "run_entry",
    "summary",
]

# What a resource template variable or a prompt argument may be annotated (its wire form).
_RESOURCE_ANNOTATIONS = (str, list[str])
_PROMPT_ANNOTATIONS = (str,)
_MAX_URI = 2048
_WIRE_TYPES: dict[Any, Any] = {"str": str, "list[str]": list[str]}


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentEntry:
    """One registered resource or prompt: what MCP lists, and the function behind it."""

    info: ResourceInfo | PromptInfo
    fn: Callable[..., Any]
    params: tuple[Param, ...]
    takes_context: bool
    is_async: bool


def icons_of(icons: typing.Iterable[Icon]) -> tuple[Icon, ...]:
    """Return `icons` as a tuple, refusing anything that is not an `Icon`."""
    found = tuple(icons)
    for icon in found:
        if not isinstance(icon, Icon):
            raise TypeError("icons must be local_daemon.Icon values")
    return found


def _read_params(
    fn: Callable[..., Any], kind: str, name: str, allowed: tuple[Any, ...]
) -> tuple[list[Param], list[PromptArgumentInfo], bool]:
    """Return a function's checked parameters, their listing and whether it takes `context`."""
    try:
        hints = typing.get_type_hints(fn)
    except NameError:
        # A `context` annotation naming a type imported elsewhere: the wire types still resolve.
        raw = inspect.get_annotations(fn)
        hints = {key: _WIRE_TYPES.get(value, value) for key, value in raw.items()}
    described = arg_descriptions(inspect.getdoc(fn) or "")
    params: list[Param] = []
    listed: list[PromptArgumentInfo] = []
    arguments, takes_context = keyword_parameters(fn, kind, name)
    for param in arguments:
        annotation = hints.get(param.name, str)
        if annotation not in allowed:
            wanted = " or ".join(getattr(one, "__name__", str(one)) for one in allowed)
            raise TypeError(f"{kind} {name}: parameter {param.name} must be annotated {wanted}")
        _, check, _ = describe(annotation)
        required = param.default is param.empty
        params.append(Param(name=param.name, check=check, required=required))
        listed.append(
            PromptArgumentInfo(
                name=param.name, description=described.get(param.name), required=required
            )
        )
    return params, listed, takes_context


def summary(fn: Callable[..., Any], description: str | None) -> str:
    """Return `description`, or else the first line of `fn`'s docstring (`""` without one)."""
    if description is not None:
        return description
    doc = (inspect.getdoc(fn) or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


def checked_name(kind: str, name: str) -> str:
    """Return `name` if it is a valid command, resource or prompt name; else raise ValueError."""
    if not NAME.fullmatch(name):
        raise ValueError(f"invalid {kind} name: {name!r}")
    return name


def keyword_parameters(
    fn: Callable[..., Any], kind: str, name: str
) -> tuple[list[inspect.Parameter], bool]:
    """Return `fn`'s parameters but `context`, and whether it takes `context`.

    Every parameter must be passable by keyword: a call's arguments arrive by name.
    """
    found: list[inspect.Parameter] = []
    takes_context = False
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"{kind} {name}: parameter {param.name} must be passable by keyword")
        if param.name == CONTEXT_PARAM:
            takes_context = True
        else:
            found.append(param)
    return found, takes_context


async def call_function(fn: Callable[..., Any], is_async: bool, values: dict[str, Any]) -> Any:
    """Run a registered function with `values`: awaited if async, else in a command thread."""
    if is_async:
        return await fn(**values)
    return await run_in_command_thread(fn, **values)


def build_resource(
    fn: Callable[..., Any],
    uri: str,
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    mime_type: str | None,
    icons: tuple[Icon, ...],
) -> ContentEntry:
    """Read `fn` as the resource at `uri` (fixed, or a template naming its parameters)."""
    resource_name = checked_name("resource", name if name is not None else fn.__name__)
    if not uri or len(uri) > _MAX_URI or "://" not in uri:
        raise ValueError(f"resource {resource_name}: uri must look like scheme://...")
    params, _, takes_context = _read_params(fn, "resource", resource_name, _RESOURCE_ANNOTATIONS)
    return ContentEntry(
        info=ResourceInfo(
            name=resource_name,
            uri=uri,
            title=title,
            description=summary(fn, description),
            mime_type=mime_type,
            icons=icons,
        ),
        fn=fn,
        params=tuple(params),
        takes_context=takes_context,
        is_async=inspect.iscoroutinefunction(fn),
    )


def build_prompt(
    fn: Callable[..., Any],
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    icons: tuple[Icon, ...],
) -> ContentEntry:
    """Read `fn` as a prompt: each `str` parameter is an argument (required without a default)."""
    prompt_name = checked_name("prompt", name if name is not None else fn.__name__)
    params, listed, takes_context = _read_params(fn, "prompt", prompt_name, _PROMPT_ANNOTATIONS)
    return ContentEntry(
        info=PromptInfo(
            name=prompt_name,
            title=title,
            description=summary(fn, description),
            arguments=tuple(listed),
            icons=icons,
        ),
        fn=fn,
        params=tuple(params),
        takes_context=takes_context,
        is_async=inspect.iscoroutinefunction(fn),
    )


async def run_entry(
    entries: Mapping[str, ContentEntry], kind: str, name: str, args: Any, context: Any
) -> Any:
    """Check `args` against the entry `name` and run its function (sync ones in a thread)."""
    entry = entries.get(name)
    if entry is None:
        raise CommandError(f"unknown {kind}: {shown(name)}", 64)
    values = check_arguments(entry.params, args)
    if entry.takes_context:
        values[CONTEXT_PARAM] = context
    return await call_function(entry.fn, entry.is_async, values)
