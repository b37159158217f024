"""Where the remote listener's authorization server answers (`_gate` routes these paths to
`_oauth_http`, the guards let stock OAuth clients post to the client ones). Imports nothing."""

from __future__ import annotations

__all__ = [
    "ACCESS_TOKEN_PREFIX",
    "AUTHORIZATION_SERVER_METADATA_PATH",
    "AUTHORIZE_PATH",
    "CONSENT_PATH",
    "OAUTH_CLIENT_PATHS",
    "OAUTH_PATHS",
    "PROTECTED_RESOURCE_METADATA_PATH",
    "REGISTER_PATH",
    "TOKEN_PATH",
    "mcp_resource_url",
    "resource_metadata_url",
]

PROTECTED_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
AUTHORIZATION_SERVER_METADATA_PATH = "/.well-known/oauth-authorization-server"
# The SDK's own paths (`mcp.server.auth.routes`): a client that restarted without the server's
# metadata falls back to exactly these at the origin (its refresh goes to `/token`).
AUTHORIZE_PATH = "/authorize"
TOKEN_PATH = "/token"
REGISTER_PATH = "/register"
CONSENT_PATH = "/auth/consent"
OAUTH_PATHS = frozenset(
    {
        PROTECTED_RESOURCE_METADATA_PATH,
        PROTECTED_RESOURCE_METADATA_PATH + "/mcp",
        AUTHORIZATION_SERVER_METADATA_PATH,
        AUTHORIZE_PATH,
        TOKEN_PATH,
        REGISTER_PATH,
        CONSENT_PATH,
    }
)
# Posted to by stock OAuth clients, which send no x-local-client; the token endpoint takes the
# form encoding RFC 6749 prescribes. The Host and Origin guards still apply.
OAUTH_CLIENT_PATHS = frozenset({TOKEN_PATH, REGISTER_PATH})
# An MCP client's access token starts so; the token file's secret (base64url) never has a dot.
ACCESS_TOKEN_PREFIX = "at1."


def mcp_resource_url(scheme: str, host: str) -> str:
    """Return the resource a client reaches as `<scheme>://<host>/mcp` (RFC 8707, RFC 9728)."""
    return f"{scheme}://{host.lower()}/mcp"


def resource_metadata_url(scheme: str, host: str) -> str:
    """Return where the RFC 9728 metadata of `<scheme>://<host>/mcp` lives."""
    return f"{scheme}://{host.lower()}{PROTECTED_RESOURCE_METADATA_PATH}/mcp"
