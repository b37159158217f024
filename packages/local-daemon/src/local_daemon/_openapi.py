"""`openapi_document`: an OpenAPI 3.1 description of every `POST /rpc/<name>`.

Each operation's request body is the command's `input_schema`, exactly as MCP `tools/list` shows
it, and its 200 answer is the `{ok, data}` envelope narrowed by the command's `output_schema` when
the registry gives one (the schema an MCP tool lists as `outputSchema`): nothing is derived a
second time. The 200 answer also offers the progress stream (`text/event-stream`: `progress`
events, then the envelope as one `result` event) a client gets with `Accept: text/event-stream`.
Every status `/rpc` can answer is listed, in the spec's order: the guards' 403 and 415, 503 when
the body budget is spent, 413 over the body cap, 408 for a late body, 404 unknown command, 400
bad JSON or arguments, 403 and 429 from the command, 500 for any other failure; a gated (remote)
app adds 401 and a 503 of its own. Every non-200 answer is the error envelope.

Served as `GET /openapi.json` when a daemon opts in (`start_daemon(openapi=True)`,
`local-daemon serve --openapi`), behind the same Host guard, and on the remote listener the same
gate, as `/rpc`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._guards import CLIENT_HEADER
from ._types import CommandInfo, CommandRegistry, envelope_schemas

__all__ = ["OPENAPI_PATH", "openapi_document"]

OPENAPI_PATH = "/openapi.json"

_ENVELOPE_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}

# Each failure status `/rpc` answers and what it means, in the order the checks apply.
_LOOPBACK_FAILURES: tuple[tuple[str, str], ...] = (
    (
        "403",
        "refused: Host or Origin not allowed, no Origin and no x-local-client header "
        "(code 77), or the command refuses its caller (code 77)",
    ),
    ("415", "Content-Type is not application/json (code 65)"),
    (
        "503",
        "too many request bodies are being received at once (code 75): retry after the "
        "Retry-After seconds; the body is not read and the connection closes",
    ),
    ("413", "request body over the cap (code 64); the connection closes"),
    (
        "408",
        "the request body did not arrive within its deadline (code 75); the connection closes",
    ),
    ("404", "no command of this name (code 64)"),
    ("400", "body is not valid JSON, or bad arguments (code 64 or 65)"),
    ("429", "the command refuses a caller over its limit (code 75)"),
    ("500", "any other failure (code 70, fixed message)"),
)
_GATED_FAILURES: tuple[tuple[str, str], ...] = (
    ("401", "no valid credential: send a session cookie or a bearer token (code 77)"),
    ("503", "the daemon's token file failed a check (code 75)"),
)


_EVENT_STREAM = "text/event-stream"
_SUCCESS_DESCRIPTION = (
    "the command's result: {ok: true, data}. A request that sends `Accept: text/event-stream` "
    "is answered as a server-sent event stream once the command reports progress (before "
    "that, and for a command that reports nothing, the answer is the JSON one): `event: "
    "progress` events whose data is a ProgressEvent, then one `event: result` whose data is "
    "the envelope of any status (SuccessEnvelope or ErrorEnvelope), then the stream ends"
)
# The stream's text, as OpenAPI 3.1 can say it: each event's data is a JSON document of the
# schema the success description names.
_STREAM_SCHEMA = {
    "type": "string",
    "description": "`event: progress` events (data: ProgressEvent), then one `event: result` "
    "(data: SuccessEnvelope or ErrorEnvelope)",
    "examples": [
        'event: progress\ndata: {"progress":1,"total":2,"message":"halfway"}\n\n'
        'event: result\ndata: {"ok":true,"data":"done"}\n\n'
    ],
}


def _components() -> dict[str, Any]:
    success, error = envelope_schemas({})
    progress = {
        "type": "object",
        "properties": {
            "progress": {"type": "number"},
            "total": {"type": "number"},
            "message": {"type": "string"},
        },
        "required": ["progress"],
    }
    schemas = {
        "ErrorEnvelope": {"type": "object", **error},
        "SuccessEnvelope": {"type": "object", **success},
        "ProgressEvent": progress,
    }
    return {"schemas": schemas}


def _json(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _operation(info: CommandInfo, failures: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    # The same input schema MCP lists (`_mcp._tool` copies it and defaults `type` the same way).
    input_schema = dict(info.input_schema)
    input_schema.setdefault("type", "object")
    success: dict[str, Any] = {"$ref": "#/components/schemas/SuccessEnvelope"}
    # `getattr`: a hand-written registry may hand over an older or a look-alike CommandInfo.
    output_schema = getattr(info, "output_schema", None)
    if output_schema is not None:
        success = {"allOf": [success, dict(output_schema)]}
    responses: dict[str, Any] = {
        "200": {"description": _SUCCESS_DESCRIPTION, "content": _json(success)}
    }
    responses["200"]["content"][_EVENT_STREAM] = {"schema": _STREAM_SCHEMA}
    for status, why in failures:
        # The gate's 503 joins the body budget's.
        earlier = responses[status]["description"] + "; or " if status in responses else ""
        responses[status] = {"description": earlier + why, "content": _json(_ENVELOPE_REF)}
    operation: dict[str, Any] = {
        "operationId": info.name,
        "parameters": [
            {
                "name": CLIENT_HEADER,
                "in": "header",
                "required": False,
                "description": "the caller's name; required when no Origin header is sent",
                "schema": {"type": "string", "minLength": 1},
            }
        ],
        "requestBody": {"required": True, "content": _json(input_schema)},
        "responses": responses,
    }
    title = getattr(info, "title", None)
    if title:
        operation["summary"] = title
    if info.description:
        operation["description"] = info.description
    return operation


def openapi_document(
    registry: CommandRegistry, *, version: str, title: str = "local-daemon", gated: bool = False
) -> dict[str, Any]:
    """Return the OpenAPI 3.1 document of `registry`'s `/rpc/<name>` routes.

    `gated=True` describes a remote listener's app, which also answers 401 and 503.
    """
    failures = _LOOPBACK_FAILURES + (_GATED_FAILURES if gated else ())
    paths = {
        f"/rpc/{info.name}": {"post": _operation(info, failures)} for info in registry.commands()
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": _components(),
    }
