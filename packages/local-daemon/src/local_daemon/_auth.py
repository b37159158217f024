"""The gate's credentials: login codes, session cookies and the bearer, all from the token file.

The secret is never an HMAC key itself. HKDF derives one key per credential kind, so a MAC made for
one kind can never be replayed as another, and every check compares two HMAC-SHA256 digests of equal
length in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from local_daemon._errors import SessionFileError
from local_daemon._sessions import (
    MAX_USER_AGENT_CHARS,
    SessionInfo,
    SessionStore,
    clean_text,
    new_session_id,
    sessions_file_beside,
)
from local_daemon._throttle import SignInThrottle
from local_daemon._tokenfile import TokenFileReader, TokenSecret, read_token_file

__all__ = [
    "CODE_LIFETIME_SECONDS",
    "DEFAULT_SIGN_IN_HINT",
    "SESSION_COOKIE",
    "SESSION_LIFETIME_SECONDS",
    "DaemonAuth",
    "Verified",
    "create_daemon_auth",
    "mint_login_code",
]

CODE_LIFETIME_SECONDS = 10 * 60
SESSION_LIFETIME_SECONDS = 30 * 24 * 60 * 60
SESSION_COOKIE = "local_session"
DEFAULT_SIGN_IN_HINT = "Ask the operator of this daemon for a fresh sign-in link."

_COOKIE_INFO = b"local-daemon v1 session cookie"
_CODE_INFO = b"local-daemon v1 login code"
_BEARER_INFO = b"local-daemon v1 bearer"
_ACCESS_INFO = b"local-daemon v1 oauth access token"
# issuedAt is in nanoseconds: whole seconds could not tell a code minted just before this
# process started (perhaps spent by the previous one) from one minted just after.
_CODE_RE = re.compile(r"v1\.([0-9]{1,20})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})")
_NS = 1_000_000_000
# v2 carries the session id (v1 cookies had none and are refused: sign in again once).
_COOKIE_RE = re.compile(r"v2\.([0-9]{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})")
_GENERATION = b"local-daemon v2 sessions generation"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


_MAC_BYTES = 32  # HMAC-SHA256
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def _unb64_mac(text: str) -> bytes | None:
    # What `base64.urlsafe_b64decode(text + "=")` does, minus its per-call argument handling.
    try:
        raw = binascii.a2b_base64(text.encode("ascii").translate(_FROM_URLSAFE) + b"=")
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == _MAC_BYTES else None


def _derive(key_material: bytes, info: bytes) -> bytes:
    # Imported here so that importing the package does not pay for cryptography.
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(key_material)


@dataclass(frozen=True, slots=True)
class _Keys:
    # Each key keyed into an HMAC once per secret; a MAC copies it (cheaper than keying anew).
    cookie: hmac.HMAC
    code: hmac.HMAC
    bearer: hmac.HMAC
    access: hmac.HMAC
    bearer_digest: bytes
    written_at: int
    # Names this secret in the sessions file without revealing anything of it.
    generation: str

    def __repr__(self) -> str:
        return "_Keys(...)"


def _keys_for(secret: TokenSecret) -> _Keys:
    bearer = hmac.new(_derive(secret.key_material, _BEARER_INFO), digestmod=hashlib.sha256)
    cookie = hmac.new(_derive(secret.key_material, _COOKIE_INFO), digestmod=hashlib.sha256)
    return _Keys(
        cookie=cookie,
        code=hmac.new(_derive(secret.key_material, _CODE_INFO), digestmod=hashlib.sha256),
        bearer=bearer,
        access=hmac.new(_derive(secret.key_material, _ACCESS_INFO), digestmod=hashlib.sha256),
        bearer_digest=_mac_bytes(bearer, secret.text.encode("ascii")),
        written_at=secret.written_at,
        generation=_mac_bytes(cookie, _GENERATION)[:16].hex(),
    )


def _mac_bytes(keyed: hmac.HMAC, message: bytes) -> bytes:
    mac = keyed.copy()
    mac.update(message)
    return mac.digest()


def _mac(keyed: hmac.HMAC, message: str) -> bytes:
    return _mac_bytes(keyed, message.encode("ascii"))


def _ns(seconds: float) -> int:
    return int(seconds * _NS)


def mint_login_code(token_file: str | os.PathLike[str], *, now: float | None = None) -> str:
    """Mint a one-time login code `v1.<issuedAt>.<nonce>.<mac>` from the token file, offline."""
    keys = _keys_for(read_token_file(token_file))
    issued_ns = time.time_ns() if now is None else _ns(now)
    body = f"v1.{issued_ns}.{_b64(secrets.token_bytes(16))}"
    return f"{body}.{_b64(_mac(keys.code, body))}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verified:
    """A credential that passed every check: its kind, when it was issued (epoch seconds) and,
    for a session cookie or an MCP client's access token (`oauth`), the session's id."""

    credential: Literal["session", "bearer", "oauth"]
    issued_at: int
    session_id: str | None = None


class DaemonAuth:
    """The gate's state for one daemon process: token file reader, keys and the spent codes.

    Pass it as `gate=` to `build_http_app`, which installs the gate middleware (`_gate`) around
    it; the remote listener makes its own. This module never imports `_gate`.
    """

    __slots__ = (
        "_clock",
        "_keys",
        "_keys_for_secret",
        "_reader",
        "_sessions",
        "_spent",
        "_started_ns",
        "sign_in_hint",
        "started_at",
        "throttle",
    )

    def __init__(
        self,
        token_file: str | os.PathLike[str],
        *,
        sign_in_hint: str | None = None,
        clock: Callable[[], float] = time.time,
        started_at: float | None = None,
        sessions_file: str | os.PathLike[str] | None = None,
    ) -> None:
        self._reader = TokenFileReader(token_file)
        self._clock = clock
        self._sessions = SessionStore(
            sessions_file if sessions_file is not None else sessions_file_beside(token_file),
            clock=clock,
        )
        self.sign_in_hint = sign_in_hint if sign_in_hint else DEFAULT_SIGN_IN_HINT
        # Codes minted before this point may have been spent in an earlier process, whose spent set
        # is gone. Nanoseconds, as codes carry: a code that process spent was minted before it
        # ended, so strictly before this one started, even within the same second.
        if started_at is not None:
            self._started_ns = _ns(started_at)
        elif clock is time.time:
            self._started_ns = time.time_ns()
        else:
            self._started_ns = _ns(clock())
        self.started_at = self._started_ns // _NS
        self._spent: dict[str, int] = {}
        # Failed login codes and token requests, per peer and overall (`_throttle`).
        self.throttle = SignInThrottle()
        self._keys: _Keys | None = None
        self._keys_for_secret: TokenSecret | None = None

    def __repr__(self) -> str:
        return f"DaemonAuth(token_file={str(self._reader.path)!r})"

    @property
    def token_file(self) -> str:
        """Return the token file's path."""
        return str(self._reader.path)

    @property
    def sessions_file(self) -> str:
        """Return the sessions file's path (what `local-daemon sessions` reads)."""
        return str(self._sessions.path)

    def now(self) -> float:
        """Return the current time in epoch seconds from this auth's clock."""
        return self._clock()

    def check(self) -> None:
        """Raise `TokenFileError` unless the token file passes every check now."""
        self._current_keys()

    def _current_keys(self) -> _Keys:
        secret = self._reader.current()
        if self._keys is None or secret is not self._keys_for_secret:
            self._keys, self._keys_for_secret = _keys_for(secret), secret
            # A rotated secret ended every session: clear them from the file too, so that
            # `sessions list` stops showing them.
            self._sessions.forget_other_generations(self._keys.generation)
        return self._keys

    def spend_login_code(self, code: str) -> bool:
        """Spend a login code: true once per process for a good code minted within 10 minutes."""
        keys = self._current_keys()
        match = _CODE_RE.fullmatch(code)
        if match is None:
            return False
        issued_ns = int(match.group(1))
        presented = _unb64_mac(match.group(3))
        if presented is None:
            return False
        expected = _mac(keys.code, f"v1.{match.group(1)}.{match.group(2)}")
        if not hmac.compare_digest(expected, presented):
            return False
        now = self._clock()
        now_ns = time.time_ns() if self._clock is time.time else _ns(now)
        if (
            issued_ns < self._started_ns
            or issued_ns > now_ns
            or now_ns - issued_ns > CODE_LIFETIME_SECONDS * _NS
        ):
            return False
        # Drop codes too old to pass the age check anyway, so the set stays small.
        for nonce, at in list(self._spent.items()):
            if now - at > CODE_LIFETIME_SECONDS:
                del self._spent[nonce]
        nonce = match.group(2)
        if nonce in self._spent:
            return False
        self._spent[nonce] = issued_ns // _NS
        return True

    def sign_in(self, code: str, *, user_agent: str = "", peer: str | None = None) -> str | None:
        """Spend a login code and start a session; return its cookie value, None for a bad code.

        Raise `SessionFileError` when the session cannot be recorded; the code is then unspent.
        """
        if not self.spend_login_code(code):
            return None
        try:
            return self.issue_session_cookie(user_agent=user_agent, peer=peer)
        except SessionFileError:
            match = _CODE_RE.fullmatch(code)
            if match is not None:
                self._spent.pop(match.group(2), None)
            raise

    async def sign_in_async(
        self, code: str, *, user_agent: str = "", peer: str | None = None
    ) -> str | None:
        """`sign_in` for the event loop: the code is spent here, the sessions file is written in
        a worker thread (its lock may be held by another process) while the loop serves on."""
        import asyncio

        if not self.spend_login_code(code):
            return None
        keys, info = self._new_session(user_agent, peer)
        try:
            await asyncio.to_thread(
                self._sessions.add, info, keys.generation, lifetime=SESSION_LIFETIME_SECONDS
            )
        except SessionFileError:
            match = _CODE_RE.fullmatch(code)
            if match is not None:
                self._spent.pop(match.group(2), None)
            raise
        return _session_cookie(keys, info)

    def _new_session(self, user_agent: str, peer: str | None) -> tuple[_Keys, SessionInfo]:
        keys = self._current_keys()
        issued_at = int(self._clock())
        info = SessionInfo(
            id=new_session_id(),
            issued_at=issued_at,
            first_seen=issued_at,
            last_seen=issued_at,
            user_agent=clean_text(user_agent, MAX_USER_AGENT_CHARS),
            peer=peer,
        )
        return keys, info

    def issue_session_cookie(self, *, user_agent: str = "", peer: str | None = None) -> str:
        """Record a new session (raising `SessionFileError` when it cannot be written) and
        return its cookie value `v2.<issuedAt>.<id>.<mac>`."""
        keys, info = self._new_session(user_agent, peer)
        self._sessions.add(info, keys.generation, lifetime=SESSION_LIFETIME_SECONDS)
        return _session_cookie(keys, info)

    def _cookie_session(self, keys: _Keys, value: str) -> tuple[int, str] | None:
        match = _COOKIE_RE.fullmatch(value)
        if match is None:
            return None
        presented = _unb64_mac(match.group(3))
        if presented is None:
            return None
        body = f"v2.{match.group(1)}.{match.group(2)}"
        if not hmac.compare_digest(_mac(keys.cookie, body), presented):
            return None
        issued_at = int(match.group(1))
        now = self._clock()
        if issued_at > now or now - issued_at >= SESSION_LIFETIME_SECONDS:
            return None
        return issued_at, match.group(2)

    def verify_session_cookie(self, value: str) -> Verified | None:
        """Return the session a cookie value proves, or None when it fails any check: its MAC,
        its age, or the sessions file no longer listing it (revoked, signed out, rotated)."""
        keys = self._current_keys()
        found = self._cookie_session(keys, value)
        if found is None or not self._sessions.is_active(found[1], keys.generation):
            return None
        return Verified(credential="session", issued_at=found[0], session_id=found[1])

    def end_session(self, session_id: str) -> bool:
        """Sign out one session (logout); true when the sessions file listed it.

        Raise `SessionFileError` when the file cannot be written.
        """
        return self._sessions.remove(session_id)

    def generation(self) -> str:
        """Return the current secret's generation (raise `TokenFileError` when the file is bad):
        what names it in the sessions file."""
        return self._current_keys().generation

    def access_mac(self, message: str) -> bytes:
        """Return the MAC of an OAuth access token's body under this secret's access key."""
        return _mac_bytes(self._current_keys().access, message.encode("utf-8"))

    @property
    def sessions(self) -> SessionStore:
        """Return the sessions store (browser and MCP client sign-ins alike)."""
        return self._sessions

    def verify_bearer(self, token: str) -> Verified | None:
        """Return the bearer credential when `token` is the token file's secret, else None."""
        keys = self._current_keys()
        presented = _mac_bytes(keys.bearer, token.encode("utf-8", "replace"))
        if not hmac.compare_digest(keys.bearer_digest, presented):
            return None
        return Verified(credential="bearer", issued_at=keys.written_at)


def _session_cookie(keys: _Keys, info: SessionInfo) -> str:
    body = f"v2.{info.issued_at}.{info.id}"
    return f"{body}.{_b64(_mac(keys.cookie, body))}"


def create_daemon_auth(
    token_file: str | os.PathLike[str],
    *,
    sign_in_hint: str | None = None,
    clock: Callable[[], float] | None = None,
    started_at: float | None = None,
    sessions_file: str | os.PathLike[str] | None = None,
) -> DaemonAuth:
    """Create the gate for one daemon process from a token file; it checks the file at once.

    Sessions are recorded in `sessions_file`, by default `<token file>.sessions.json` beside it
    (`start_daemon` uses `sessions.json` in its state dir).
    """
    auth = DaemonAuth(
        token_file,
        sign_in_hint=sign_in_hint,
        clock=clock or time.time,
        started_at=started_at,
        sessions_file=sessions_file,
    )
    auth.check()
    return auth
