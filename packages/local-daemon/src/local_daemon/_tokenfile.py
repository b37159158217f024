"""The gate's token file: create, rotate, and read it with every check the spec lists.

The file holds one secret of at least 32 random bytes as base64url text. Whoever can read it can
mint login codes and send the bearer, so it must be a regular file of ours that nobody else reads.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from local_daemon._errors import TokenFileError
from local_daemon._statefile import (
    ReReadOnChange,
    SafeFileProblem,
    Signature,
    UnsafeFileError,
    make_private_dir,
    path_signature,
    read_safe_file,
    write_atomic,
)

__all__ = [
    "MAX_TOKEN_FILE_BYTES",
    "SECRET_BYTES",
    "TokenFileReader",
    "TokenSecret",
    "ensure_token_file",
    "read_token_file",
    "rotate_token_file",
]

SECRET_BYTES = 32
# A secret of 32 bytes is 43 characters; anything this large is not a token file.
MAX_TOKEN_FILE_BYTES = 4096
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+={0,2}")


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenSecret:
    """One good read of the token file: the secret in both forms and when it was written."""

    text: str
    key_material: bytes
    written_at: int

    def __repr__(self) -> str:
        return f"TokenSecret(written_at={self.written_at})"


def _refuse(path: Path, what: str, problem: str) -> TokenFileError:
    return TokenFileError(f"token file {path} {what}", problem=problem)


def _parse_secret(path: Path, raw: bytes, written_at: int) -> TokenSecret:
    # A trailing newline is what `echo` and editors add; everything else must be base64url.
    text_bytes = raw.rstrip(b"\r\n")
    if not text_bytes.strip():
        raise _refuse(path, "is empty", "empty")
    # No decode error is ever caught and re-raised: a UnicodeDecodeError holds the file's bytes
    # (the secret) in `object`, and Python would chain it as __context__ even with `from None`.
    if not text_bytes.isascii():
        raise _refuse(path, "is not base64url text", "not_base64url")
    text = text_bytes.decode("ascii")
    if not _BASE64URL.fullmatch(text) or (text.endswith("=") and len(text) % 4):
        raise _refuse(path, "is not base64url text", "not_base64url")
    key_material: bytes | None = None
    with contextlib.suppress(binascii.Error, ValueError):
        key_material = base64.urlsafe_b64decode(
            text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4)
        )
    if key_material is None:
        raise _refuse(path, "is not base64url text", "not_base64url")
    if len(key_material) < SECRET_BYTES:
        raise _refuse(path, f"holds fewer than {SECRET_BYTES} bytes of secret", "too_short")
    return TokenSecret(text=text, key_material=key_material, written_at=written_at)


# What to do, after what is wrong. Group or other access (mode) would let someone else read the
# secret or plant one they know.
_WAY_OUT: dict[SafeFileProblem, str] = {
    "missing": "; create it with `local-daemon token ensure`",
    "symlink": "; point the daemon at the file itself",
    "mode": "; chmod 600 it",
}


def _read_checked(path: Path) -> TokenSecret:
    read = read_safe_file(path, max_bytes=MAX_TOKEN_FILE_BYTES, forbidden_mode=0o077)
    if isinstance(read, UnsafeFileError):
        raise _refuse(path, read.what + _WAY_OUT.get(read.problem, ""), read.problem)
    if not read.data:
        raise _refuse(path, "is empty", "empty")
    return _parse_secret(path, read.data, int(read.stat.st_mtime))


def read_token_file(path: str | os.PathLike[str]) -> TokenSecret:
    """Read the token file, refusing it with `TokenFileError` when any check fails."""
    return _read_checked(Path(path))


def _new_secret_text() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(SECRET_BYTES)).rstrip(b"=").decode("ascii")


def _new_secret_file() -> bytes:
    return (_new_secret_text() + "\n").encode("ascii")


def ensure_token_file(path: str | os.PathLike[str]) -> Path:
    """Create the token file with a fresh secret unless it exists; check it and return its path.

    The secret is written whole to a temp file first and then hard-linked into place, which never
    replaces an existing file: a full disk or a crash leaves no file or a complete one, never a
    partial one.
    """
    return _put_secret(Path(path), replace=False)


def rotate_token_file(path: str | os.PathLike[str]) -> Path:
    """Replace the secret atomically (0600 temp file, then rename); voids every session and code."""
    return _put_secret(Path(path), replace=True)


def _put_secret(target: Path, *, replace: bool) -> Path:
    """Write a fresh secret (unless one is there and `replace` is false), then check the file."""
    failed: OSError | None = None
    try:
        # A fresh directory for the secret is private, its fresh parents too; an existing one
        # is left as the user made it.
        make_private_dir(target.parent)
        if replace or not os.path.lexists(target):
            # Without `replace`, linked, not renamed, into place: a file made meanwhile wins.
            write_atomic(target, _new_secret_file(), replace=replace)
    except OSError as exc:  # full disk, read-only mount, no permission: one fixed refusal
        failed = exc
    if failed is not None:
        # Raised outside the handler, so the OSError is not chained as __context__.
        raise _refuse(target, f"cannot be written ({failed.strerror})", "unwritable")
    read_token_file(target)
    return target


def _load(path: Path) -> tuple[TokenSecret | TokenFileError, Signature | None]:
    """Read the token file for the cache: a refusal is cached too, keyed (as a good read is) by
    the stat taken before the read, so a change during the read is seen at the next look."""
    before = path_signature(path)
    failed: TokenFileError | None = None
    try:
        secret = _read_checked(path)
    except TokenFileError as exc:
        failed = exc
    if failed is not None:
        return failed, before
    return secret, before


class TokenFileReader:
    """The token file as the gate sees it: re-read and re-checked whenever its stat changes."""

    __slots__ = ("_file",)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = ReReadOnChange(Path(path), _load)

    @property
    def path(self) -> Path:
        """Return the path this reader watches."""
        return self._file.path

    def current(self) -> TokenSecret:
        """Return the current secret, or raise the `TokenFileError` the file now fails with."""
        reading = self._file.current()
        if isinstance(reading, TokenFileError):
            # A fresh error each time, so no traceback or __context__ rides along.
            raise TokenFileError(str(reading), problem=reading.problem) from None
        return reading
