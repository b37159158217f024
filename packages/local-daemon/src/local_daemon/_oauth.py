"""MCP authorization: the remote listener is its own OAuth 2.1 authorization server for `/mcp`.

The `mcp` SDK's handlers (`mcp.server.auth.handlers`) parse and check the OAuth requests (PKCE
S256 only, redirect URIs, grant types, one code for one client); `OAuthProvider` is the SDK's
`OAuthAuthorizationServerProvider` over the daemon's own state:

- Clients register dynamically (RFC 7591) or name a client ID metadata document
  (`_oauth_clients`), and are public (PKCE, no secret: the daemon substitutes
  `token_endpoint_auth_method=none`, as RFC 7591 lets a server do).
- `/authorize` parks the request (in memory, `PENDING_LIFETIME_SECONDS`, at most
  `MAX_PENDING`) and sends the browser to the daemon's consent page (`_oauth_http`), which signs
  the browser in with a login code when it is not, and names the client and where it returns to.
- An approved request gets an authorization code: single use, `AUTHORIZATION_CODE_LIFETIME_SECONDS`,
  kept in memory only as its SHA-256. Its exchange starts a per-device session in the sessions
  file (`sessions list` shows it with the client's name, `sessions revoke` ends it).
- An access token `at1.<session id>.<expires>.<mac>` lives `ACCESS_TOKEN_LIFETIME_SECONDS`; its
  MAC (HKDF-derived key of the token file's secret, `DaemonAuth.access_mac`) covers the resource
  it was issued for (RFC 8707: `<scheme>://<host>/mcp`, the URL the client used), so it is good
  only for that `/mcp`, only while the session is listed, and never after the token file rotates.
- A refresh token `rt1.<session id>.<random>` rotates on every use; the sessions file keeps only
  the SHA-256 of the current one. Presenting an earlier one (a reuse: someone kept a copy) ends
  the session.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import re
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from ._auth import SESSION_LIFETIME_SECONDS, DaemonAuth, Verified
from ._errors import SessionFileError, TokenFileError
from ._oauth_clients import (
    OAuthClients,
    client_name,
    encode_client,
    redirect_uris_problem,
)
from ._sessions import (
    MAX_CLIENT_ID_CHARS,
    MAX_USER_AGENT_CHARS,
    SessionInfo,
    clean_text,
    new_session_id,
)

__all__ = [
    "ACCESS_TOKEN_LIFETIME_SECONDS",
    "AUTHORIZATION_CODE_LIFETIME_SECONDS",
    "MAX_PENDING",
    "PENDING_LIFETIME_SECONDS",
    "OAuthProvider",
    "OAuthState",
    "Pending",
]

ACCESS_TOKEN_LIFETIME_SECONDS = 15 * 60
AUTHORIZATION_CODE_LIFETIME_SECONDS = 2 * 60
PENDING_LIFETIME_SECONDS = 10 * 60
MAX_PENDING = 64
_ACCESS_RE = re.compile(r"at1\.([A-Za-z0-9_-]{22})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})", re.ASCII)
_REFRESH_RE = re.compile(r"rt1\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})", re.ASCII)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(slots=True, kw_only=True)
class Pending:
    """An authorization request waiting for the browser's consent."""

    client: OAuthClientInformationFull
    params: AuthorizationParams
    issuer: str
    expires: float


@dataclass(slots=True, kw_only=True)
class _Code:
    code: AuthorizationCode
    client_name: str | None


class OAuthState:
    """What the authorization server of one daemon process keeps in memory: parked requests and
    unspent codes (by their SHA-256), both short-lived and bounded."""

    __slots__ = ("_codes", "_pending", "_spent", "auth", "clients")

    def __init__(self, auth: DaemonAuth) -> None:
        self.auth = auth
        self.clients = OAuthClients()
        self._pending: OrderedDict[str, Pending] = OrderedDict()
        self._codes: dict[str, _Code] = {}
        # Spent code hashes -> the session each one started, for their lifetime: a code that
        # comes back was intercepted or replayed, and the session it started ends (OAuth 2.1).
        self._spent: dict[str, tuple[str, float]] = {}

    def _expire(self) -> None:
        now = time.time()
        for key in [k for k, p in self._pending.items() if p.expires <= now]:
            del self._pending[key]
        for key in [k for k, c in self._codes.items() if c.code.expires_at <= now]:
            del self._codes[key]
        for key in [k for k, (_, until) in self._spent.items() if until <= now]:
            del self._spent[key]

    def park(self, pending: Pending) -> str:
        """Keep an authorization request for the consent page; return its id."""
        self._expire()
        while len(self._pending) >= MAX_PENDING:
            self._pending.popitem(last=False)
        request_id = secrets.token_urlsafe(24)
        self._pending[request_id] = pending
        return request_id

    def pending(self, request_id: str) -> Pending | None:
        """Return the parked request `request_id` while it is fresh."""
        self._expire()
        return self._pending.get(request_id)

    def decide(self, request_id: str, *, allow: bool) -> str | None:
        """Answer a parked request once: the client's redirect URI carrying a new code (or
        `access_denied`), its `state` and this server's `iss` (RFC 9207); None when unknown."""
        self._expire()
        pending = self._pending.pop(request_id, None)
        if pending is None:
            return None
        params = pending.params
        base = str(params.redirect_uri)
        if not allow:
            return construct_redirect_uri(
                base, error="access_denied", state=params.state, iss=pending.issuer
            )
        code = secrets.token_urlsafe(32)
        self._codes[_sha256(code)] = _Code(
            code=AuthorizationCode(
                code=code,
                scopes=params.scopes or [],
                expires_at=time.time() + AUTHORIZATION_CODE_LIFETIME_SECONDS,
                client_id=pending.client.client_id,
                code_challenge=params.code_challenge,
                redirect_uri=params.redirect_uri,
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
                resource=params.resource,
            ),
            client_name=pending.client.client_name,
        )
        return construct_redirect_uri(base, code=code, state=params.state, iss=pending.issuer)

    async def take_code(self, code: str) -> _Code | None:
        """Spend a code: it is gone whatever the exchange then decides. A code spent before
        ends the session it started."""
        self._expire()
        key = _sha256(code)
        found = self._codes.pop(key, None)
        if found is None:
            spent = self._spent.pop(key, None)
            if spent is not None and spent[0]:
                with contextlib.suppress(SessionFileError):
                    # The refusal of the code stands even if the session cannot be ended.
                    await asyncio.to_thread(self.auth.sessions.remove, spent[0])
            return None
        # Until the exchange names its session, a replay ends nothing.
        self._spent[key] = ("", found.code.expires_at)
        return found

    def note_code_session(self, code: str, session_id: str, until: float) -> None:
        """Remember which session a spent code started (a replay of the code ends it)."""
        self._spent[_sha256(code)] = (session_id, until)

    def access_token(self, session_id: str, resource: str, now: float) -> tuple[str, int]:
        """Mint an access token for `session_id`, good for `resource`; with its lifetime."""
        expires = int(now) + ACCESS_TOKEN_LIFETIME_SECONDS
        body = f"at1.{session_id}.{expires}"
        mac = self.auth.access_mac(f"{body}\n{resource}")
        return f"{body}.{_b64(mac)}", ACCESS_TOKEN_LIFETIME_SECONDS

    def verify_access(self, token: str, resource: str) -> Verified | None:
        """Return the session an access token proves for `resource`, or None.

        Raise `TokenFileError` while the token file is bad (every request is 503 then).
        """
        match = _ACCESS_RE.fullmatch(token)
        if match is None:
            self.auth.check()
            return None
        session_id, expires_text, mac_text = match.groups()
        presented = base64.urlsafe_b64decode(mac_text + "=")
        expected = self.auth.access_mac(f"at1.{session_id}.{expires_text}\n{resource}")
        if not hmac.compare_digest(expected, presented):
            return None
        expires, now = int(expires_text), self.auth.now()
        # A token from the future (the clock stepped back) is refused as an expired one is.
        if not now < expires <= now + ACCESS_TOKEN_LIFETIME_SECONDS + 1:
            return None
        session = self.auth.sessions.active(session_id, self.auth.generation())
        if session is None or session.client_id is None:
            return None
        return Verified(credential="oauth", issued_at=session.issued_at, session_id=session_id)


class OAuthProvider:
    """The SDK's `OAuthAuthorizationServerProvider` for one request: the shared `OAuthState`
    plus what the request decides (the resource and issuer its Host names, its peer)."""

    def __init__(
        self,
        state: OAuthState,
        *,
        resource: str,
        issuer: str,
        consent_path: str,
        user_agent: str = "",
        peer: str | None = None,
    ) -> None:
        self._state = state
        self._resource = resource
        self._issuer = issuer
        self._consent_path = consent_path
        self._user_agent = user_agent
        self._peer = peer

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """Return the client a `dcr1.` client id describes, or the one a client ID metadata
        document at an HTTPS client id describes (fetched, checked, cached), or None."""
        return await self._state.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Make `client_info` (the SDK's registration answer) a public client whose id is its
        own registration; refuse redirect URIs that are neither HTTPS nor loopback HTTP."""
        uris = [str(uri) for uri in client_info.redirect_uris or ()]
        problem = redirect_uris_problem(uris)
        if problem is not None:
            raise RegistrationError("invalid_redirect_uri", problem)
        name = client_name(client_info.client_name)
        client_id = encode_client(uris, name)
        if len(client_id) > MAX_CLIENT_ID_CHARS:
            raise RegistrationError("invalid_client_metadata", "the registration is too large")
        # RFC 7591 §3.2.1: the server may replace requested metadata; the SDK answers with
        # this same object.
        client_info.client_id = client_id
        client_info.client_name = name
        client_info.client_secret = None
        client_info.client_secret_expires_at = None
        client_info.token_endpoint_auth_method = "none"

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Park the request and send the browser to the consent page."""
        if params.resource is not None and params.resource != self._resource:
            raise AuthorizeError("invalid_target", "this server is the resource " + self._resource)
        if params.resource is None:
            params.resource = self._resource
        pending = Pending(
            client=client,
            params=params,
            issuer=self._issuer,
            expires=time.time() + PENDING_LIFETIME_SECONDS,
        )
        request_id = self._state.park(pending)
        return f"{self._consent_path}?request={request_id}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        """Spend the code (single use, whatever follows)."""
        found = await self._state.take_code(authorization_code)
        return None if found is None else found.code

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        """Start the device's session and answer its first access and refresh tokens."""
        if authorization_code.resource != self._resource:
            raise TokenError("invalid_target", "the code was issued for another resource")
        auth = self._state.auth
        now = auth.now()
        session_id = new_session_id()
        refresh = f"rt1.{session_id}.{_b64(secrets.token_bytes(32))}"
        info = SessionInfo(
            id=session_id,
            issued_at=int(now),
            first_seen=int(now),
            last_seen=int(now),
            user_agent=clean_text(self._user_agent, MAX_USER_AGENT_CHARS),
            peer=self._peer,
            client_id=client.client_id,
            client_name=client_name(client.client_name),
            refresh_sha256=_sha256(refresh),
        )
        try:
            generation = auth.generation()
            await asyncio.to_thread(
                auth.sessions.add, info, generation, lifetime=SESSION_LIFETIME_SECONDS
            )
        except (SessionFileError, TokenFileError):
            raise TokenError("invalid_grant", "the daemon could not record the sign-in") from None
        self._state.note_code_session(
            authorization_code.code, session_id, now + AUTHORIZATION_CODE_LIFETIME_SECONDS
        )
        access, lifetime = self._state.access_token(session_id, self._resource, now)
        return OAuthToken(access_token=access, expires_in=lifetime, refresh_token=refresh)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        """Return the refresh token's grant while its session is listed; whether it is the
        current one is settled by the exchange (a reuse ends the session)."""
        match = _REFRESH_RE.fullmatch(refresh_token)
        if match is None:
            return None
        auth = self._state.auth
        try:
            session = auth.sessions.active(match.group(1), auth.generation())
        except TokenFileError:
            return None
        if session is None or session.client_id is None or session.refresh_sha256 is None:
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=session.client_id,
            scopes=[],
            expires_at=session.issued_at + SESSION_LIFETIME_SECONDS,
            resource=self._resource,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        """Rotate the refresh token and answer a new access token; a reused one ends the
        session."""
        match = _REFRESH_RE.fullmatch(refresh_token.token)
        if match is None:  # load_refresh_token checked it
            raise TokenError("invalid_grant", "refresh token does not exist")
        session_id = match.group(1)
        auth = self._state.auth
        new = f"rt1.{session_id}.{_b64(secrets.token_bytes(32))}"
        try:
            swapped = await asyncio.to_thread(
                auth.sessions.swap_refresh,
                session_id,
                auth.generation(),
                _sha256(refresh_token.token),
                _sha256(new),
            )
        except (SessionFileError, TokenFileError):
            raise TokenError("invalid_grant", "the daemon could not record the refresh") from None
        if swapped is None:
            raise TokenError("invalid_grant", "refresh token does not exist")
        access, lifetime = self._state.access_token(session_id, self._resource, auth.now())
        return OAuthToken(access_token=access, expires_in=lifetime, refresh_token=new)

    async def load_access_token(self, token: str) -> AccessToken | None:
        """Return the access token's grant for this resource, or None."""
        try:
            verified = self._state.verify_access(token, self._resource)
        except TokenFileError:
            return None
        if verified is None:
            return None
        return AccessToken(token=token, client_id="", scopes=[], resource=self._resource)

    async def exchange_identity_assertion(self, client: Any, params: Any) -> OAuthToken:
        """Refuse the identity-assertion grant (not advertised)."""
        raise TokenError("unsupported_grant_type", "this server takes no identity assertions")

    async def revoke_token(self, token: Any) -> None:
        """Revocation is `sessions revoke` (no revocation endpoint is advertised)."""

    def __repr__(self) -> str:
        return f"OAuthProvider(resource={self._resource!r})"
