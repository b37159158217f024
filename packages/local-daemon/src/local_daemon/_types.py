"""Shared types: the registry protocol, the gate's auth record and the hooks a product passes in.

These are the seams between the daemon's modules (HTTP app, MCP projection, gate); changes here must
stay additive.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from aiohttp import web

if TYPE_CHECKING:
    from ._auth import DaemonAuth

__all__ = [
    "AUTH_CONTEXT_KEY",
    "AUTH_RECORD_KEY",
    "STILL_AUTHORISED_KEY",
    "AuthRecord",
    "CommandInfo",
    "CommandRegistry",
    "ContextFactory",
    "ErrorFormatter",
    "FormattedError",
    "Gate",
    "HealthFn",
    "Icon",
    "IconTheme",
    "Middleware",
    "MountRoutes",
    "PromptArgumentInfo",
    "PromptInfo",
    "ResourceInfo",
    "Surface",
    "envelope_schemas",
]

Surface: TypeAlias = Literal["http", "mcp"]
IconTheme: TypeAlias = Literal["light", "dark"]

_ICON_SCHEMES = ("https:", "http:", "data:")


@dataclass(frozen=True, slots=True, kw_only=True)
class Icon:
    """An icon MCP clients may show beside a tool, resource, prompt or the server (MCP `Icon`).

    `src` is an `https:` (or `http:`) URL or a `data:` URI; `sizes` are `WxH` strings or `any`;
    `theme` says which background the icon is drawn for (`None`: any).
    """

    src: str
    mime_type: str | None = None
    sizes: tuple[str, ...] = ()
    theme: IconTheme | None = None

    def __post_init__(self) -> None:
        if not self.src.lower().startswith(_ICON_SCHEMES):
            raise ValueError("icon src must be an https:, http: or data: URI")
        if self.theme not in (None, "light", "dark"):
            raise ValueError("icon theme must be 'light', 'dark' or None")
        sizes: object = self.sizes
        if isinstance(sizes, str):
            raise TypeError("icon sizes must be a tuple of strings such as ('48x48',)")


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandInfo:
    """One command as MCP `tools/list` shows it: name, description and JSON Schema of its args.

    The optional rest is what a tool listing can say beyond that: `output_schema` describes the
    command's result (the `data` of a successful envelope), `title` is a display name, and
    `read_only`, `destructive`, `idempotent` become the tool's annotation hints (`None`: unsaid).
    """

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    output_schema: Mapping[str, Any] | None = None
    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    icons: tuple[Icon, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceInfo:
    """One resource as MCP lists it: a fixed `uri` (`resources/list`) or an RFC 6570 template
    such as `notes://{name}` (`resources/templates/list`), read by `name`."""

    name: str
    uri: str
    title: str | None = None
    description: str = ""
    mime_type: str | None = None
    icons: tuple[Icon, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptArgumentInfo:
    """One argument of a prompt as `prompts/list` shows it (MCP prompt arguments are strings)."""

    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptInfo:
    """One prompt as `prompts/list` shows it: name, display title, description, arguments."""

    name: str
    title: str | None = None
    description: str = ""
    arguments: tuple[PromptArgumentInfo, ...] = ()
    icons: tuple[Icon, ...] = ()


@runtime_checkable
class CommandRegistry(Protocol):
    """What the daemon serves: `invoke_command` (coroutine, or sync run in a worker thread).

    A registry may also serve MCP resources and prompts; the MCP projection looks for these
    methods and declares the capability only where they exist (each may be a coroutine or a
    plain function, run in a worker thread):
    `resources() -> Sequence[ResourceInfo]` with `read_resource(name, params, context)`
    (`params`: the template's variables, `{}` for a fixed URI) answering `str` (text), `bytes`
    (a blob) or a JSON value; `prompts() -> Sequence[PromptInfo]` with
    `get_prompt(name, arguments, context)` answering a string or a list of messages.
    A server-wide `title` and `icons` attribute, when present, describe the server itself.
    """

    def invoke_command(self, name: str, args: Any, context: Any) -> Any: ...

    def commands(self) -> Sequence[CommandInfo]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthRecord:
    """The gate's credential record handed to `create_context(surface, auth)`."""

    credential: Literal["session", "bearer", "oauth"]
    issued_at: int
    peer_local: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class FormattedError:
    """What `format_error` returns for a thrown value: the envelope's message and code."""

    message: str
    code: int


# Set by the gate on every request it lets through; read by /rpc to build the context.
AUTH_RECORD_KEY: web.RequestKey[AuthRecord] = web.RequestKey("local_daemon.auth", AuthRecord)

# Set by the gate beside the record: the request's authorization context, a name holding no
# secret (`_tasks.owner_context`); MCP tasks belong to it. Unset on loopback.
AUTH_CONTEXT_KEY: web.RequestKey[str] = web.RequestKey("local_daemon.auth_context", str)

# Set by the gate beside the record: true while the request's credential would still be let
# through (the session not revoked, the token not rotated); long-lived streams ask it again.
STILL_AUTHORISED_KEY: web.RequestKey[Callable[[], bool]] = web.RequestKey(
    "local_daemon.still_authorised"
)

ContextFactory: TypeAlias = Callable[[Surface, AuthRecord | None], Any]
ErrorFormatter: TypeAlias = Callable[[BaseException], FormattedError]
HealthFn: TypeAlias = Callable[[], Mapping[str, Any]]
MountRoutes: TypeAlias = Callable[[web.Application], None]
Middleware: TypeAlias = Callable[
    [web.Request, Callable[[web.Request], Awaitable[web.StreamResponse]]],
    Awaitable[web.StreamResponse],
]

# The gate as `build_http_app(gate=...)` takes it: a `DaemonAuth`, around which the app installs
# the gate middleware right after the guards. That middleware answers `/auth/login` and
# `/auth/logout` itself, refuses everything else without a credential (401, or 503 while the token
# file is bad) and sets `AUTH_RECORD_KEY`.
Gate: TypeAlias = "DaemonAuth"


def envelope_schemas(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the JSON Schemas of a call's RPC envelope: the success (its `data` of schema
    `data`) and the error, for `/openapi.json` and a command's MCP output schema alike."""
    success = {"properties": {"ok": {"const": True}, "data": data}, "required": ["ok", "data"]}
    error = {
        "properties": {
            "ok": {"const": False},
            "error": {
                "type": "object",
                "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
                "required": ["code", "message"],
            },
        },
        "required": ["ok", "error"],
    }
    return success, error
