"""app_installation_token: sign an RS256 app JWT and exchange it for an installation token.

The exchange is one POST with `Authorization: Bearer <JWT>`, made with the standard library rather
than through `gh`: GitHub accepts an app JWT only under the `Bearer` scheme, `gh` sends its token
as `Authorization: token <value>`, and the only way to give `gh` another header is `-H` on its
command line, which every local user can read in `/proc/<pid>/cmdline`. The JWT therefore never
leaves this process except in that one request's header. The installation token it buys goes to
`gh` as `GH_TOKEN` in one child's environment (see `gh_cli_wire(app_token=...)`), which GitHub
does accept under gh's `token` scheme.

Every message this module raises has the JWT, the PEM, the installation token and any token-shaped
string cut out, and chains no exception. `cryptography` and `urllib` are imported on first use so
that importing the package stays cheap for the command line tools.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, TypeAlias

from ._errors import ForgeCliError, ForgeError, ForgeInputError, failure_of_status
from ._redact import redact_forge_secrets

if TYPE_CHECKING:
    # Imported for real on first use: cryptography costs tens of ms to import.
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

__all__ = [
    "API_VERSION",
    "JWT_BACKDATE_SECONDS",
    "JWT_LIFETIME_SECONDS",
    "MAX_ANSWER_BYTES",
    "USER_AGENT",
    "InstallationToken",
    "TokenPost",
    "api_base_url",
    "app_installation_token",
    "app_jwt",
    "urllib_post",
]

# The forge allows `exp` at most 10 minutes ahead and `iat` back-dating for clock drift.
JWT_BACKDATE_SECONDS = 60
JWT_LIFETIME_SECONDS = 540
API_VERSION = "2022-11-28"
USER_AGENT = "forge-automation"
# A token answer is a few hundred bytes; anything past this is not read.
MAX_ANSWER_BYTES = 1 << 20

# (url, headers, timeout) -> (status, body). The real one is `urllib_post`.
TokenPost: TypeAlias = Callable[[str, Mapping[str, str], "float | None"], tuple[int, bytes]]

_UNSET = object()
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST = re.compile(rf"(?=[^:]{{1,253}}(?::|\Z)){_LABEL}(?:\.{_LABEL})*(?::[0-9]{{1,5}})?")


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallationToken:
    """An installation token and when it expires (epoch ms). Its repr never shows the token."""

    token: str = field(repr=False)
    expires_at_ms: int


def app_jwt(*, app_id: int | str, private_key_pem: str | bytes, now: float) -> str:
    """Return an RS256 JWT for the app: iss=app id, iat 60 s back, exp 9 minutes ahead."""
    issuer = _check_id("app_id", app_id)
    if not _is_number(now):
        raise ForgeInputError("now", "must be epoch seconds")
    key = _load_key(private_key_pem)
    issued = int(now)
    header = {"alg": "RS256", "typ": "JWT"}
    claims = {
        "iat": issued - JWT_BACKDATE_SECONDS,
        "exp": issued + JWT_LIFETIME_SECONDS,
        "iss": issuer,
    }
    signing_input = f"{_b64json(header)}.{_b64json(claims)}"
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    signature = key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64(signature)}"


def app_installation_token(
    *,
    app_id: int | str,
    installation_id: int | str,
    private_key_pem: str | bytes,
    now: float,
    host: str | None = None,
    timeout: float | None = 60.0,
    post: TokenPost | None = None,
) -> InstallationToken:
    """Exchange a freshly signed app JWT for an installation token.

    One HTTPS POST to `/app/installations/<id>/access_tokens` on the API of `host` (default: gh's
    own `GH_HOST`, else github.com) with `Authorization: Bearer <JWT>`, through the proxies of the
    environment and without following redirects. `post` replaces the HTTP call in tests.
    """
    installation = _check_id("installation_id", installation_id)
    base = api_base_url((os.environ.get("GH_HOST") or "github.com") if host is None else host)
    if timeout is not None and (not _is_number(timeout) or timeout <= 0):
        raise ForgeInputError("timeout", "must be a positive number of seconds or None")
    jwt = app_jwt(app_id=app_id, private_key_pem=private_key_pem, now=now)
    pem = private_key_pem
    if isinstance(pem, bytes):
        pem = pem.decode("latin-1")
    secrets = (jwt, pem)
    url = f"{base}/app/installations/{installation}/access_tokens"
    headers = {
        "Accept": "application/vnd.github+json",
        "Authorization": f"Bearer {jwt}",
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-GitHub-Api-Version": API_VERSION,
    }
    failure: str | None = None
    try:
        status, body = (post or urllib_post)(url, headers, timeout)
    except Exception as exc:
        # Only text leaves this block: raising here would chain `exc` (and what it holds) as
        # __context__ of the error the caller sees.
        failure = redact_forge_secrets(f"{type(exc).__name__}: {exc}", extra=secrets)[:500]
    if failure is not None:
        raise ForgeCliError(
            f"installation token exchange could not reach {base}: {failure}", kind="no-answer"
        )
    if not 200 <= status < 300:
        raise _exchange_failure(status, body, secrets)
    token, expires_at_ms = _parse_answer(body, secrets)
    if expires_at_ms <= now * 1000:
        raise ForgeError("the forge answered an installation token that has already expired")
    return InstallationToken(token=token, expires_at_ms=expires_at_ms)


def api_base_url(host: object) -> str:
    """Return the REST base URL gh uses for `host` (no trailing slash); refuse a bad host.

    github.com (and its subdomains) is `https://api.github.com`, `github.localhost` is gh's plain
    HTTP development host `http://api.github.localhost`, a `*.ghe.com` tenant is `https://api.<host>`
    and any other host is GitHub Enterprise Server at `https://<host>/api/v3`.
    """
    if not isinstance(host, str) or not _HOST.fullmatch(host.lower()):
        raise ForgeInputError("host", "must be a host name like github.com or ghe.example.com")
    name = host.lower()
    if name == "github.com" or name.endswith(".github.com"):
        return "https://api.github.com"
    if name == "github.localhost" or name.endswith(".github.localhost"):
        return "http://api.github.localhost"
    if name.endswith(".ghe.com"):
        return f"https://api.{name}"
    return f"https://{name}/api/v3"


def urllib_post(url: str, headers: Mapping[str, str], timeout: float | None) -> tuple[int, bytes]:
    """POST an empty JSON object with the standard library; return (status, body).

    Proxies come from the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`), as for gh. A
    redirect is answered as its own status, never followed, so the JWT is never re-sent to a
    host it was not meant for. The body is read up to `MAX_ANSWER_BYTES`.
    """
    import urllib.error
    import urllib.request

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    if not url.startswith(("https://", "http://")):
        raise ValueError("only http(s) URLs are posted to")
    opener = urllib.request.build_opener(_NoRedirect)
    # The scheme is checked just above: no file: or custom-scheme URL reaches the opener.
    request = urllib.request.Request(url, data=b"{}", headers=dict(headers), method="POST")  # noqa: S310
    try:
        with opener.open(request, timeout=timeout) as response:
            return int(response.status), response.read(MAX_ANSWER_BYTES)
    except urllib.error.HTTPError as exc:
        with exc:
            return int(exc.code), exc.read(MAX_ANSWER_BYTES)


def _exchange_failure(status: int, body: bytes, secrets: tuple[str, ...]) -> ForgeCliError:
    message = ""
    try:
        decoded = json.loads(body)
        if isinstance(decoded, dict):
            message = str(decoded.get("message", ""))
    except ValueError:
        message = body[:300].decode("utf-8", "replace").strip()
    text = f"installation token exchange failed with HTTP {status}"
    text += f": {message[:500]}" if message else ""
    return ForgeCliError(
        redact_forge_secrets(text, extra=secrets), status=status, kind=failure_of_status(status)
    )


def _parse_answer(body: bytes, secrets: tuple[str, ...]) -> tuple[str, int]:
    # No error is raised inside an `except`: the caught one would ride along as __context__, and a
    # JSONDecodeError carries the whole answer (token included) in its `doc`.
    data: object = _UNSET
    with contextlib.suppress(ValueError):
        data = json.loads(body)
    if data is _UNSET:
        raise ForgeCliError(
            "installation token exchange answered a non-JSON body", kind="malformed"
        )
    if not isinstance(data, dict):
        raise ForgeCliError("installation token exchange answered no object", kind="malformed")
    token = data.get("token")
    if not isinstance(token, str) or not token or not token.isprintable() or " " in token:
        raise ForgeCliError(
            "installation token exchange answered no usable token", kind="malformed"
        )
    expires_at = data.get("expires_at")
    moment = _aware_moment(expires_at)
    if moment is None:
        raise ForgeCliError(
            redact_forge_secrets(
                f"installation token exchange answered a bad expires_at: {expires_at!r:.80}",
                extra=(*secrets, token),
            ),
            kind="malformed",
        )
    return token, int(moment.timestamp() * 1000)


def _aware_moment(value: object) -> datetime | None:
    """Parse an ISO 8601 time with a zone (`Z` allowed); None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def _check_id(name: str, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ForgeInputError(name, "must be a positive integer")
    text = str(value) if isinstance(value, int) else value
    if not text.isascii() or not text.isdigit() or len(text) > 20 or int(text) < 1:
        raise ForgeInputError(name, "must be a positive integer")
    return str(int(text))


def _load_key(private_key_pem: str | bytes) -> RSAPrivateKey:
    # No error is raised inside an `except`: a UnicodeEncodeError holds the whole PEM in `object`,
    # and the caught error would ride along as __context__.
    if isinstance(private_key_pem, bytes):
        data = private_key_pem
    elif not isinstance(private_key_pem, str):
        raise ForgeInputError("private_key_pem", "must be a PEM string")
    elif not private_key_pem.isascii():
        raise ForgeInputError("private_key_pem", "is not a PEM private key")
    else:
        data = private_key_pem.encode("ascii")
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    key: object = _UNSET
    problem = "could not be loaded"
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        # cryptography's message can quote the input: say only what was wrong.
        problem = "is not an unencrypted PEM private key"
    except Exception:  # noqa: S110 - any other failure is reported below with fixed text
        pass
    if key is _UNSET:
        raise ForgeInputError("private_key_pem", problem)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ForgeInputError("private_key_pem", "must be an RSA key (the forge signs RS256)")
    if key.key_size < 2048:
        raise ForgeInputError("private_key_pem", "RSA key must be at least 2048 bits")
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64json(obj: object) -> str:
    return _b64(json.dumps(obj, separators=(",", ":")).encode("utf-8"))
