"""The credentials file read through the gate: its parsed document, or the facts of its login.

`read_login_state` wraps these in the login dataclasses; `account-cli best` reads every profile's
login through `read_login_facts` directly, so this module imports neither `typing`,
`dataclasses` nor `json` (the C scanner of `_readings` parses the same way).
"""

from __future__ import annotations

import json
import os

from agent_accounts._login_rules import LoginFacts, login_facts

from ._gate import GateRefused, read_gated, zero

TYPE_CHECKING = False  # not typing's: see the module docstring
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = [
    "CREDENTIALS_FILE",
    "CREDENTIALS_MAX_BYTES",
    "read_credentials",
    "read_credentials_raw",
    "read_login_facts",
]

CREDENTIALS_FILE: Final = ".credentials.json"
CREDENTIALS_MAX_BYTES: Final = 64 * 1024


def read_credentials(config_dir: str, *, uid: int | None) -> Any:
    """Read and parse `.credentials.json` through the gate; None when absent.

    Raises GateRefused (invalid JSON is `malformed`) and OSError. The raw bytes are zeroed.
    """
    raw = read_gated(
        os.path.join(config_dir, CREDENTIALS_FILE), uid=uid, max_bytes=CREDENTIALS_MAX_BYTES
    )
    if raw is None:
        return None
    malformed = False
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        malformed = True
    finally:
        zero(raw)
    # Raised outside the handler: a JSONDecodeError keeps the whole file (tokens) in `doc`, and
    # inside the handler Python would link it as __context__ even with `from None`.
    if malformed:
        raise GateRefused("malformed")
    return parsed


def read_credentials_raw(config_dir: str, *, uid: int | None) -> bytearray | None:
    """Read the bytes of `.credentials.json` through the strict gate; None when absent.

    Raises GateRefused and OSError. The caller zeroes the bytes once it is done with them.
    """
    return read_gated(
        os.path.join(config_dir, CREDENTIALS_FILE),
        uid=uid,
        max_bytes=CREDENTIALS_MAX_BYTES,
        strict=True,
    )


def read_login_facts(config_dir: str, *, now_ms: float, uid: int | None = None) -> LoginFacts:
    """Return the facts of a config dir's login at a finite `now_ms`; OSError passes through.

    A file the gate refuses is `refused` with the gate's reason. An OSError is raised as the
    filesystem gave it: callers print no message of it.
    """
    try:
        credentials = read_credentials(config_dir, uid=uid)
    except GateRefused as refused:
        return LoginFacts("refused", reason=refused.reason)
    return login_facts(credentials, now_ms)
