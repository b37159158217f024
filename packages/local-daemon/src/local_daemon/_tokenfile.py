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
import stat
from dataclasses import dataclass
from pathlib import Path

from local_daemon._errors import TokenFileError

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


FileSignature = tuple[int, int, int, int, int, int, int, int]


def _signature(st: os.stat_result) -> FileSignature:
    return (
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_mode,
        st.st_uid,
        st.st_gid,
    )


def _refuse(path: Path, what: str, problem: str) -> TokenFileError:
    return TokenFileError(f"token file {path} {what}", problem=problem)


def _check_stat(path: Path, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, "is a symlink; point the daemon at the file itself", "symlink")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, "is not a regular file", "not_regular")
    if st.st_uid != os.geteuid():
        raise _refuse(path, f"is owned by uid {st.st_uid}, not by this user", "owner")
    # Group or other write access would let someone else plant a secret they know.
    if st.st_mode & 0o077:
        mode = stat.S_IMODE(st.st_mode)
        raise _refuse(path, f"is open to group or others (mode {mode:04o}); chmod 600 it", "mode")
    if st.st_size == 0:
        raise _refuse(path, "is empty", "empty")
    if st.st_size > MAX_TOKEN_FILE_BYTES:
        raise _refuse(path, f"is larger than {MAX_TOKEN_FILE_BYTES} bytes", "too_large")


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


def _read_checked(path: Path) -> tuple[TokenSecret, FileSignature]:
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        raise _refuse(
            path, "does not exist; create it with `local-daemon token ensure`", "missing"
        ) from None
    except OSError as exc:
        raise _refuse(path, f"cannot be read ({exc.strerror})", "unreadable") from None
    _check_stat(path, before)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: swapped for a symlink after the lstat
            raise _refuse(
                path, "is a symlink; point the daemon at the file itself", "symlink"
            ) from None
        raise _refuse(path, f"cannot be read ({exc.strerror})", "unreadable") from None
    try:
        st = os.fstat(fd)
        # Re-check what we opened: the name may have been swapped since the lstat.
        _check_stat(path, st)
        raw = os.read(fd, MAX_TOKEN_FILE_BYTES + 1)
    except OSError as exc:
        raise _refuse(path, f"cannot be read ({exc.strerror})", "unreadable") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_TOKEN_FILE_BYTES:
        raise _refuse(path, f"is larger than {MAX_TOKEN_FILE_BYTES} bytes", "too_large")
    if not raw:
        raise _refuse(path, "is empty", "empty")
    return _parse_secret(path, raw, int(st.st_mtime)), _signature(st)


def read_token_file(path: str | os.PathLike[str]) -> TokenSecret:
    """Read the token file, refusing it with `TokenFileError` when any check fails."""
    return _read_checked(Path(path))[0]


def _new_secret_text() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(SECRET_BYTES)).rstrip(b"=").decode("ascii")


def _ensure_parent(path: Path) -> None:
    # A fresh directory for the secret is private; an existing one is left as the user made it.
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)


def ensure_token_file(path: str | os.PathLike[str]) -> Path:
    """Create the token file with a fresh secret unless it exists; check it and return its path."""
    target = Path(path)
    _ensure_parent(target)
    try:
        fd = os.open(
            target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
    except FileExistsError:
        read_token_file(target)
        return target
    try:
        os.write(fd, (_new_secret_text() + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    read_token_file(target)
    return target


def rotate_token_file(path: str | os.PathLike[str]) -> Path:
    """Replace the secret atomically (0600 temp file, then rename); voids every session and code."""
    target = Path(path)
    _ensure_parent(target)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            os.write(fd, (_new_secret_text() + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    read_token_file(target)
    return target


class TokenFileReader:
    """The token file as the gate sees it: re-read and re-checked whenever its stat changes."""

    __slots__ = ("_error", "_path", "_secret", "_signature")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        self._signature: FileSignature | None = None
        self._secret: TokenSecret | None = None
        self._error: TokenFileError | None = None

    @property
    def path(self) -> Path:
        """Return the path this reader watches."""
        return self._path

    def current(self) -> TokenSecret:
        """Return the current secret, or raise the `TokenFileError` the file now fails with."""
        try:
            # lstat, not stat: a symlink swapped in must change the signature too.
            sig: FileSignature | None = _signature(os.lstat(self._path))
        except OSError:
            sig = None
        if sig is None or sig != self._signature:
            failed: TokenFileError | None = None
            try:
                secret, read_sig = _read_checked(self._path)
            except TokenFileError as exc:
                failed = exc
            if failed is not None:
                # A fresh error raised outside the handler, so nothing rides along as __context__.
                self._signature, self._secret, self._error = sig, None, failed
                raise TokenFileError(str(failed), problem=failed.problem)
            # Key the cache by what was read, so a write between lstat and read is seen next time.
            self._signature, self._secret, self._error = read_sig, secret, None
            return secret
        if self._secret is None:
            assert self._error is not None
            raise TokenFileError(str(self._error), problem=self._error.problem) from None
        return self._secret
