"""`local-daemon token ensure|rotate|login-code PATH`: the token file from the command line.

It imports only the token file and auth modules, so it starts without aiohttp.
"""

from __future__ import annotations

from pathlib import Path

from ._cli_exits import EX_CONFIG, CliExit, UsageProblem, fail
from ._errors import DaemonError

__all__ = ["EXIT_TOKEN_FILE", "ensure", "login_code", "rotate"]

# sysexits EX_CONFIG: the token file is configuration the operator must fix.
EXIT_TOKEN_FILE = EX_CONFIG


def _refused(exc: Exception, path: Path) -> CliExit:
    """The one fixed line for a token command that failed: the check and its problem."""
    from ._errors import TokenFileError

    if isinstance(exc, TokenFileError):
        return fail(EXIT_TOKEN_FILE, f"{exc} (problem: {exc.problem})")
    # Not expected (the library converts OS errors), but never a traceback either.
    strerror = exc.strerror if isinstance(exc, OSError) else type(exc).__name__
    return fail(
        EXIT_TOKEN_FILE, f"token file {path} cannot be used ({strerror}) (problem: unusable)"
    )


def ensure(path: Path) -> str:
    """Create the token file with a fresh secret unless it exists; check it either way."""
    from ._tokenfile import ensure_token_file

    try:
        return str(ensure_token_file(path))
    except (DaemonError, OSError) as exc:
        raise _refused(exc, path) from None


def rotate(path: Path) -> str:
    """Replace the secret: every session, every login code and the old bearer stop working."""
    from ._tokenfile import rotate_token_file

    try:
        return str(rotate_token_file(path))
    except (DaemonError, OSError) as exc:
        raise _refused(exc, path) from None


def login_code(path: Path, url: str | None) -> str:
    """Return a one-time login code (valid 10 minutes), or with `url` the sign-in link."""
    from ._auth import mint_login_code

    if url is not None and not url.startswith("https://"):
        raise UsageProblem("--url must start with https://")
    try:
        code = mint_login_code(path)
    except (DaemonError, OSError) as exc:
        raise _refused(exc, path) from None
    return code if url is None else f"{url.rstrip('/')}/auth/login?code={code}"
