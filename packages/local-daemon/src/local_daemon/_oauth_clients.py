"""Who an MCP client is: a dynamically registered client id, or a client ID metadata document.

- Dynamic registration (RFC 7591): the client id is the registration itself,
  `dcr1.<base64url JSON of the redirect URIs and name>`, so registering stores nothing.
- Client ID metadata documents (the MCP authorization spec's CIMD): a client id that is an HTTPS
  URL with a path names a JSON document there, fetched by the daemon (no redirects, at most
  `MAX_DOCUMENT_BYTES`, within `FETCH_TIMEOUT_SECONDS`, the system's CAs or `SSL_CERT_FILE`),
  whose `client_id` must be that URL and whose redirect URIs follow the same rule. Documents
  are cached (`DOCUMENT_CACHE_SECONDS`, failures `FAILURE_CACHE_SECONDS`, at most
  `MAX_CACHED_DOCUMENTS`) and at most `MAX_FETCHES_PER_MINUTE` are fetched in a minute, so an
  unauthenticated `/authorize` flood cannot turn the daemon into a stream of outbound requests.

Every client is public (`token_endpoint_auth_method=none`): PKCE protects its code. A redirect
URI is HTTPS, or plain HTTP to this machine's loopback (a native client's callback).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

from mcp.client.auth.utils import is_valid_client_metadata_url
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from ._json import parse_json
from ._sessions import MAX_CLIENT_ID_CHARS, clean_text
from ._throttle import SignInThrottle

__all__ = [
    "DOCUMENT_CACHE_SECONDS",
    "FAILURE_CACHE_SECONDS",
    "FETCH_TIMEOUT_SECONDS",
    "MAX_CACHED_DOCUMENTS",
    "MAX_DOCUMENT_BYTES",
    "MAX_FETCHES_PER_MINUTE",
    "OAuthClients",
    "client_name",
    "encode_client",
    "redirect_uris_problem",
]

_CLIENT_PREFIX = "dcr1."
_MAX_CLIENT_NAME = 128
_MAX_REDIRECT_URIS = 8
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
MAX_DOCUMENT_BYTES = 8 * 1024
FETCH_TIMEOUT_SECONDS = 5.0
DOCUMENT_CACHE_SECONDS = 300.0
FAILURE_CACHE_SECONDS = 60.0
MAX_CACHED_DOCUMENTS = 64
MAX_FETCHES_PER_MINUTE = 30
_log = logging.getLogger("local_daemon")


def _redirect_uri_allowed(uri: object) -> bool:
    if not isinstance(uri, str):
        return False
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return False
    if parts.fragment or not host:
        return False
    if parts.scheme == "https":
        return True
    return parts.scheme == "http" and host in _LOOPBACK_HOSTS


def redirect_uris_problem(uris: object) -> str | None:
    """Say what is wrong with a client's redirect URIs, or None when they are fine."""
    if not isinstance(uris, list) or not 0 < len(uris) <= _MAX_REDIRECT_URIS:
        return "give 1 to 8 redirect URIs"
    if not all(_redirect_uri_allowed(uri) for uri in uris):
        return "a redirect URI must be HTTPS or HTTP to loopback"
    return None


def client_name(name: object) -> str | None:
    """Return a client's name as the consent page and `sessions list` show it (untrusted)."""
    return clean_text(name, _MAX_CLIENT_NAME) or None if isinstance(name, str) else None


def _public_client(client_id: str, uris: Any, name: str | None) -> OAuthClientInformationFull:
    return OAuthClientInformationFull(
        client_id=client_id,
        redirect_uris=uris,
        client_name=name,
        token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )


def encode_client(redirect_uris: list[str], name: str | None) -> str:
    """Return the client id of a dynamic registration: the registration itself."""
    document = {"r": redirect_uris, "n": name}
    raw = json.dumps(document, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    return _CLIENT_PREFIX + base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode_client(client_id: str) -> OAuthClientInformationFull | None:
    if not client_id.startswith(_CLIENT_PREFIX) or len(client_id) > MAX_CLIENT_ID_CHARS:
        return None
    text = client_id[len(_CLIENT_PREFIX) :]
    try:
        document = parse_json(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, RecursionError):
        return None
    if not isinstance(document, dict):
        return None
    uris, name = document.get("r"), document.get("n")
    if redirect_uris_problem(uris) is not None or not (name is None or isinstance(name, str)):
        return None
    try:
        return _public_client(client_id, uris, client_name(name))
    except ValidationError:
        return None


def _from_document(url: str, raw: bytes) -> OAuthClientInformationFull | None:
    try:
        document = parse_json(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or document.get("client_id") != url:
        return None
    uris = document.get("redirect_uris")
    if redirect_uris_problem(uris) is not None:
        return None
    # No secret and no key: a document client authenticates with nothing but PKCE.
    if document.get("token_endpoint_auth_method", "none") != "none":
        return None
    try:
        return _public_client(url, uris, client_name(document.get("client_name")))
    except ValidationError:
        return None


class OAuthClients:
    """Looks clients up by id: registrations decoded, metadata documents fetched and cached."""

    __slots__ = ("_cache", "_clock", "_fetches")

    def __init__(self) -> None:
        self._cache: OrderedDict[str, tuple[OAuthClientInformationFull | None, float]] = (
            OrderedDict()
        )
        self._clock = time.monotonic
        self._fetches = SignInThrottle(
            per_peer=MAX_FETCHES_PER_MINUTE, overall=MAX_FETCHES_PER_MINUTE, window=60.0
        )

    async def get(self, client_id: str) -> OAuthClientInformationFull | None:
        """Return the client `client_id` names, or None."""
        if client_id.startswith(_CLIENT_PREFIX):
            return _decode_client(client_id)
        if len(client_id) > MAX_CLIENT_ID_CHARS or not is_valid_client_metadata_url(client_id):
            return None
        now = self._clock()
        cached = self._cache.get(client_id)
        if cached is not None and cached[1] > now:
            return cached[0]
        if self._fetches.retry_after(None) is not None:
            return None
        self._fetches.failed(None)  # every fetch counts
        client = await self._fetch(client_id)
        keep = DOCUMENT_CACHE_SECONDS if client is not None else FAILURE_CACHE_SECONDS
        self._cache.pop(client_id, None)
        while len(self._cache) >= MAX_CACHED_DOCUMENTS:
            self._cache.popitem(last=False)
        self._cache[client_id] = (client, now + keep)
        return client

    async def _fetch(self, url: str) -> OAuthClientInformationFull | None:
        import ssl

        import aiohttp

        timeout = aiohttp.ClientTimeout(total=FETCH_TIMEOUT_SECONDS)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(
                    url,
                    allow_redirects=False,
                    ssl=ssl.create_default_context(),
                    headers={"Accept": "application/json"},
                ) as answer,
            ):
                if answer.status != 200:
                    _log.info("oauth: client metadata document answered %d", answer.status)
                    return None
                raw = await answer.content.read(MAX_DOCUMENT_BYTES + 1)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            _log.info("oauth: client metadata document not fetched: %s", type(exc).__name__)
            return None
        if len(raw) > MAX_DOCUMENT_BYTES:
            return None
        client = _from_document(url, raw)
        if client is None:
            _log.info("oauth: a client metadata document failed its checks")
        return client
