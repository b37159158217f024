"""Refresh tokens the token endpoint refused, remembered token-free so none is sent again.

After an `invalid_grant` (a 400 or 401) the same refresh token would be refused again on every
poll, and an endpoint that detects reuse may take it as an attack. Its fingerprint (SHA-256,
never the token) goes to `.oauth_refresh.refused` in the config dir; while the credentials file
still holds that token the refresh answers `login-required` without a request. A new login
brings a new token, whose fingerprint is not on the list.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Final

from ._atomic import atomic_write
from ._gate import GateRefused, read_gated, zero

__all__ = ["REFUSED_NAME", "is_refused", "remember_refused"]

REFUSED_NAME: Final = ".oauth_refresh.refused"
_MAX_BYTES: Final = 4096
_KEEP: Final = 8
_FINGERPRINT: Final = re.compile(r"[0-9a-f]{32}")


def _read(config_dir: str, uid: int) -> list[str]:
    try:
        raw = read_gated(os.path.join(config_dir, REFUSED_NAME), uid=uid, max_bytes=_MAX_BYTES)
    except (GateRefused, OSError):
        return []
    if raw is None:
        return []
    try:
        lines = bytes(raw).decode("ascii", "replace").split()
    finally:
        zero(raw)
    return [line for line in lines if _FINGERPRINT.fullmatch(line)]


def is_refused(config_dir: str, fingerprint: str, uid: int) -> bool:
    """Tell whether the refresh token with this fingerprint was refused before."""
    return fingerprint in _read(config_dir, uid)


def remember_refused(config_dir: str, fingerprint: str, uid: int) -> None:
    """Add a refused token's fingerprint (the last few are kept); best effort."""
    kept = [f for f in _read(config_dir, uid) if f != fingerprint][-(_KEEP - 1) :]
    with contextlib.suppress(OSError):
        atomic_write(config_dir, REFUSED_NAME, ("\n".join([*kept, fingerprint]) + "\n").encode())
