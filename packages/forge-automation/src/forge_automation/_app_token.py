"""app_installation_token: sign an RS256 app JWT and exchange it for an installation token via gh.

The JWT reaches `gh` as `GH_TOKEN` in that one child's environment (`ExecOptions.env`), never in
argv and never in `os.environ`. Every message this module raises has the JWT, the PEM, the
installation token and any token-shaped string cut out. `cryptography` is imported on first use so
that importing the package stays cheap for the command line tools.
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ._errors import ForgeCliError, ForgeError, ForgeInputError
from ._exec import ExecOptions, GhExec
from ._redact import redact_forge_secrets, redact_split

if TYPE_CHECKING:
    # Imported for real on first use: cryptography costs tens of ms to import.
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

__all__ = [
    "JWT_BACKDATE_SECONDS",
    "JWT_LIFETIME_SECONDS",
    "InstallationToken",
    "app_installation_token",
    "app_jwt",
]

# The forge allows `exp` at most 10 minutes ahead and `iat` back-dating for clock drift.
JWT_BACKDATE_SECONDS = 60
JWT_LIFETIME_SECONDS = 540


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
    exec: GhExec | None = None,
    timeout: float | None = 60.0,
) -> InstallationToken:
    """Exchange a freshly signed app JWT for an installation token through `gh api`."""
    installation = _check_id("installation_id", installation_id)
    jwt = app_jwt(app_id=app_id, private_key_pem=private_key_pem, now=now)
    pem = private_key_pem
    if isinstance(pem, bytes):
        pem = pem.decode("latin-1")
    secrets = (jwt, pem)
    if exec is None:
        from ._wire import run_gh

        exec = run_gh
    args = [
        "api",
        "-i",
        "--method",
        "POST",
        f"/app/installations/{installation}/access_tokens",
        "-H",
        "Accept: application/vnd.github+json",
    ]
    # gh reads GH_TOKEN for github.com and github.localhost, GH_ENTERPRISE_TOKEN for other hosts.
    options = ExecOptions(env={"GH_TOKEN": jwt, "GH_ENTERPRISE_TOKEN": jwt}, timeout=timeout)
    try:
        result = exec(args, options)
    except ForgeError as exc:
        raise type(exc)(redact_forge_secrets(str(exc), extra=secrets)) from None
    except Exception as exc:
        text = redact_forge_secrets(f"{type(exc).__name__}: {exc}", extra=secrets)
        raise ForgeCliError(f"gh could not run: {text}") from None
    from ._wire import parse_gh_response

    response = parse_gh_response(result.stdout)
    if response is None or not 200 <= response.status < 300:
        raise _exchange_failure(result.returncode, result.stdout, result.stderr, secrets)
    token, expires_at_ms = _parse_answer(response.body, secrets)
    if expires_at_ms <= now * 1000:
        raise ForgeError("the forge answered an installation token that has already expired")
    return InstallationToken(token=token, expires_at_ms=expires_at_ms)


def _exchange_failure(
    returncode: int, stdout: bytes, stderr: bytes, secrets: tuple[str, ...]
) -> ForgeCliError:
    from ._wire import parse_gh_response

    out, err = redact_split(
        stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"), extra=secrets
    )
    response = parse_gh_response(out.encode("utf-8"))
    if response is not None:
        message = ""
        try:
            decoded = json.loads(response.body)
            if isinstance(decoded, dict):
                message = str(decoded.get("message", ""))
        except ValueError:
            message = response.body[:300].decode("utf-8", "replace").strip()
        text = f"installation token exchange failed with HTTP {response.status}"
        text += f": {message}" if message else ""
        return ForgeCliError(redact_forge_secrets(text, extra=secrets), status=response.status)
    joined = f"{out.strip()}\n{err.strip()}".strip()[:2000]
    return ForgeCliError(f"installation token exchange: gh exited {returncode}: {joined}")


def _parse_answer(body: bytes, secrets: tuple[str, ...]) -> tuple[str, int]:
    try:
        data = json.loads(body)
    except ValueError:
        raise ForgeCliError("installation token exchange answered a non-JSON body") from None
    if not isinstance(data, dict):
        raise ForgeCliError("installation token exchange answered no object")
    token = data.get("token")
    if not isinstance(token, str) or not token or not token.isprintable() or " " in token:
        raise ForgeCliError("installation token exchange answered no usable token")
    expires_at = data.get("expires_at")
    try:
        if not isinstance(expires_at, str):
            raise ValueError
        moment = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
        if moment.tzinfo is None:
            raise ValueError
    except ValueError:
        raise ForgeCliError(
            redact_forge_secrets(
                f"installation token exchange answered a bad expires_at: {expires_at!r:.80}",
                extra=(*secrets, token),
            )
        ) from None
    return token, int(moment.timestamp() * 1000)


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
    if isinstance(private_key_pem, str):
        try:
            data = private_key_pem.encode("ascii")
        except UnicodeEncodeError:
            raise ForgeInputError("private_key_pem", "is not a PEM private key") from None
    elif isinstance(private_key_pem, bytes):
        data = private_key_pem
    else:
        raise ForgeInputError("private_key_pem", "must be a PEM string")
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        # cryptography's message can quote the input: say only what was wrong.
        raise ForgeInputError("private_key_pem", "is not an unencrypted PEM private key") from None
    except Exception:
        raise ForgeInputError("private_key_pem", "could not be loaded") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ForgeInputError("private_key_pem", "must be an RSA key (the forge signs RS256)")
    if key.key_size < 2048:
        raise ForgeInputError("private_key_pem", "RSA key must be at least 2048 bits")
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64json(obj: object) -> str:
    return _b64(json.dumps(obj, separators=(",", ":")).encode("utf-8"))
