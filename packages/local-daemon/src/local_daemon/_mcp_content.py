"""The MCP projection of a registry's resources and prompts, and of every icon.

`resources/list`, `resources/templates/list` and `resources/read` serve a registry's
`resources()` and `read_resource`; `prompts/list` and `prompts/get` its `prompts()` and
`get_prompt`. `content_handlers` hands `create_mcp_server` only the handlers a registry has
something for, so the SDK's `Server` declares the `resources` and `prompts` capabilities exactly
then. Templated URIs are matched with the SDK's `UriTemplate`, and the variables it extracts pass
the SDK's default resource security policy (no `..` path segment, absolute path or NUL) before
anything runs. Every answer is built from the SDK's types; the protocol is never written here.

A read or a prompt that fails answers a JSON-RPC error: its envelope's message (a `CommandError`'s
own, or the fixed internal one, as `/rpc` would say it), code `-32602` (invalid params) for exit
codes 64 and 65 and `-32603` (internal) otherwise, and the exit code as `data.code`.
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver.resources.templates import DEFAULT_RESOURCE_SECURITY
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate
from pydantic import BaseModel, TypeAdapter

from ._errors import CommandError
from ._invoke import failure_outcome
from ._threads import run_in_command_thread
from ._types import ErrorFormatter, Icon, PromptInfo, ResourceInfo

__all__ = ["content_handlers", "mcp_icons"]

_CONTENT_BLOCK: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)
_INVALID_PARAMS_CODES = frozenset({64, 65})


def mcp_icons(icons: Iterable[Icon]) -> list[types.Icon] | None:
    """Return `icons` as the SDK's `Icon` list, or None when there are none (field left out)."""
    found = [
        types.Icon(
            src=icon.src,
            mime_type=icon.mime_type,
            sizes=list(icon.sizes) or None,
            theme=icon.theme,
        )
        for icon in icons
    ]
    return found or None


def _listing(registry: Any, method: str) -> list[Any]:
    """Call `registry.<method>()` (a plain function) and return its list, or [] if absent."""
    listing = getattr(registry, method, None)
    if not callable(listing) or inspect.iscoroutinefunction(listing):
        return []
    return list(listing())


def _resource(info: ResourceInfo) -> types.Resource:
    return types.Resource(
        name=info.name,
        uri=info.uri,
        title=info.title,
        description=info.description or None,
        mime_type=info.mime_type,
        icons=mcp_icons(info.icons),
    )


def _template(info: ResourceInfo) -> types.ResourceTemplate:
    return types.ResourceTemplate(
        name=info.name,
        uri_template=info.uri,
        title=info.title,
        description=info.description or None,
        mime_type=info.mime_type,
        icons=mcp_icons(info.icons),
    )


def _prompt(info: PromptInfo) -> types.Prompt:
    return types.Prompt(
        name=info.name,
        title=info.title,
        description=info.description or None,
        arguments=[
            types.PromptArgument(name=one.name, description=one.description, required=one.required)
            for one in info.arguments
        ],
        icons=mcp_icons(info.icons),
    )


def _contents(
    uri: str, info: ResourceInfo, value: Any
) -> list[types.TextResourceContents | types.BlobResourceContents]:
    """The read's answer: text for `str`, a base64 blob for bytes, JSON text for the rest."""
    if isinstance(value, bytes | bytearray | memoryview):
        blob = base64.b64encode(bytes(value)).decode("ascii")
        mime = info.mime_type or "application/octet-stream"
        return [types.BlobResourceContents(uri=uri, mime_type=mime, blob=blob)]
    if isinstance(value, str):
        text, mime = value, info.mime_type or "text/plain"
    else:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        mime = info.mime_type or "application/json"
    return [types.TextResourceContents(uri=uri, mime_type=mime, text=text)]


def _message(item: Any) -> types.PromptMessage:
    if isinstance(item, types.PromptMessage):
        return item
    if isinstance(item, str):
        return types.PromptMessage(role="user", content=types.TextContent(type="text", text=item))
    if isinstance(item, Mapping) and "role" in item:
        return types.PromptMessage.model_validate(item)
    # A content block on its own (an image, an embedded resource): a message from the user.
    return types.PromptMessage(role="user", content=_CONTENT_BLOCK.validate_python(item))


def _messages(value: Any) -> list[types.PromptMessage]:
    """A prompt's answer as messages: a string, one message or block, or a list of them."""
    if isinstance(value, str | Mapping | BaseModel) or not isinstance(value, Sequence):
        value = [value]
    return [_message(item) for item in value]


async def _call(method: Callable[..., Any], *args: Any) -> Any:
    if inspect.iscoroutinefunction(method):
        return await method(*args)
    result = await run_in_command_thread(method, *args)
    if inspect.isawaitable(result):
        return await result
    return result


def content_handlers(
    registry: Any,
    *,
    make_context: Callable[[], Any],
    format_error: ErrorFormatter | None,
    logger: logging.Logger,
) -> dict[str, Any]:
    """Return `Server(...)` keyword handlers for the resources and prompts `registry` has.

    `make_context()` builds the per-request context (`create_context("mcp", auth)`). Templates
    are parsed here, so a malformed one fails at start-up (`InvalidUriTemplate`, a ValueError).
    """
    handlers: dict[str, Any] = {}
    resources = [info for info in _listing(registry, "resources") if isinstance(info, ResourceInfo)]
    prompts = [info for info in _listing(registry, "prompts") if isinstance(info, PromptInfo)]

    def refusal(exc: Exception) -> MCPError:
        # Anything but a `CommandError` (an answer the SDK's types refuse included) is logged by
        # its type only and answered with the fixed internal message.
        error = failure_outcome(exc, format_error=format_error, logger=logger).envelope["error"]
        code = (
            types.INVALID_PARAMS
            if error["code"] in _INVALID_PARAMS_CODES
            else (types.INTERNAL_ERROR)
        )
        return MCPError(code, error["message"], data={"code": error["code"]})

    if resources and callable(getattr(registry, "read_resource", None)):
        fixed = {info.uri: info for info in resources if not UriTemplate.is_template(info.uri)}
        templates = [
            (UriTemplate.parse(info.uri), info)
            for info in resources
            if UriTemplate.is_template(info.uri)
        ]

        async def on_list_resources(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=[_resource(one) for one in fixed.values()])

        async def on_list_resource_templates(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListResourceTemplatesResult:
            listed = [_template(info) for _, info in templates]
            return types.ListResourceTemplatesResult(resource_templates=listed)

        def resolve(uri: str) -> tuple[ResourceInfo, dict[str, Any]]:
            if uri in fixed:
                return fixed[uri], {}
            for template, info in templates:
                variables = template.match(uri)
                if variables is None:
                    continue
                if DEFAULT_RESOURCE_SECURITY.validate(variables) is not None:
                    # The first template that matches decides; a refusal never falls through.
                    raise CommandError("resource uri refused: a path-like variable", 65)
                return info, variables
            raise CommandError("resource not found", 65)

        async def on_read_resource(
            ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
        ) -> types.ReadResourceResult:
            uri = str(params.uri)
            try:
                info, variables = resolve(uri)
                value = await _call(registry.read_resource, info.name, variables, make_context())
                return types.ReadResourceResult(contents=_contents(uri, info, value))
            except Exception as exc:
                raise refusal(exc) from None

        handlers.update(
            on_list_resources=on_list_resources,
            on_list_resource_templates=on_list_resource_templates,
            on_read_resource=on_read_resource,
        )

    if prompts and callable(getattr(registry, "get_prompt", None)):
        by_name = {info.name: info for info in prompts}

        async def on_list_prompts(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListPromptsResult:
            return types.ListPromptsResult(prompts=[_prompt(info) for info in prompts])

        async def on_get_prompt(
            ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
        ) -> types.GetPromptResult:
            info = by_name.get(params.name)
            try:
                value = await _call(
                    registry.get_prompt, params.name, dict(params.arguments or {}), make_context()
                )
                return types.GetPromptResult(
                    description=info.description or None if info is not None else None,
                    messages=_messages(value),
                )
            except Exception as exc:
                raise refusal(exc) from None

        handlers.update(on_list_prompts=on_list_prompts, on_get_prompt=on_get_prompt)
    return handlers
