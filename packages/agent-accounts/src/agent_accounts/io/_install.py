"""Renewed credentials onto disk: space before spending, roll forward, never clobber.

- Space before spending: `prepare_temp` creates `.credentials.json.<pid>.<fp>.<hex>.tmp` and
  allocates room for the largest login the answer can make *before* the token request, so a full
  disk fails as `io` with the refresh token unspent. `<fp>` is the spent token's fingerprint.
- Roll forward, never sweep: a dead refresher's temp file whose fingerprint is the refresh token
  the credentials file still holds, and which holds a complete login, is that refresher's answer
  on disk; `dead_answer` hands its tokens to the next run, which installs them instead of spending
  the (already spent) token again. Anything else a dead refresher left is removed.
- No clobbering: `install` swaps the temp file and the credentials file with
  `renameat2(RENAME_EXCHANGE)`, compares what came out with what was read, and swaps back if
  another writer got in between (then decides again from what that writer left).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from agent_accounts._oauth import (
    TOKEN_MAX_CHARS,
    TokenAnswer,
    apply_tokens,
    refresh_token_of,
    token_answer_from_login,
    token_fingerprint,
)

from ._atomic import RenameUnsupported, create_exclusive, rename_exchange, sync_dir
from ._credentials import CREDENTIALS_FILE, CREDENTIALS_MAX_BYTES, read_credentials_raw
from ._gate import GateRefused, read_gated, zero
from ._layout import Layout, LayoutError, detect_layout, parse_json_object, serialize
from ._lock_dirs import pid_is_gone
from ._pause import pause
from ._refresh_results import (
    RefreshFailure,
    RefreshRefreshed,
    RefreshRefreshedElsewhere,
    RefreshResult,
    RefreshStop,
)

__all__ = [
    "CREDENTIALS_MAX_BYTES",
    "CREDENTIALS_NAME",
    "Base",
    "PreparedTemp",
    "answer_on_disk",
    "dead_answer",
    "install",
    "prepare_temp",
]

CREDENTIALS_NAME: Final = CREDENTIALS_FILE
WRITE_ATTEMPTS: Final = 4
UNREADABLE_WAIT_S: Final = 0.1
# Room for what an answer can add: two tokens of at most 4096 characters, two epoch-ms numbers
# and their keys, at any indentation.
_ANSWER_ROOM: Final = 2 * TOKEN_MAX_CHARS + 512
_TEMP: Final = re.compile(r"\.credentials\.json\.(\d+)\.(?:([0-9a-f]{32})\.)?[0-9a-f]+\.tmp")


@dataclass(slots=True, kw_only=True)
class Base:
    """The credentials as they stand on disk, which the new file is built from."""

    raw: bytearray
    document: dict[str, object]
    layout: Layout

    @classmethod
    def parse(cls, raw: bytearray) -> Base:
        """Parse `raw`; LayoutError when JSON.stringify cannot reproduce it."""
        document = parse_json_object(raw)
        return cls(raw=raw, document=document, layout=detect_layout(raw, document))


@dataclass(slots=True, kw_only=True)
class PreparedTemp:
    """A temp file beside the credentials, created and sized before the token is spent."""

    path: str
    fd: int | None

    def fill(self, data: bytes) -> None:
        """Write the whole new login at offset 0, cut it to length and sync it."""
        assert self.fd is not None
        view = memoryview(data)
        offset = 0
        while offset < len(data):
            offset += os.pwrite(self.fd, view[offset:], offset)
        os.ftruncate(self.fd, len(data))
        os.fsync(self.fd)

    def discard(self) -> None:
        """Close and remove the temp file, if still there."""
        self.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def close(self) -> None:
        """Close the descriptor (the file stays)."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def prepare_temp(config_dir: str, fingerprint: str, base_size: int) -> PreparedTemp:
    """Create and allocate the temp file for a login built from a `base_size`-byte file."""
    name = f"{CREDENTIALS_NAME}.{os.getpid()}.{fingerprint}.{os.urandom(6).hex()}.tmp"
    path = os.path.join(config_dir, name)
    fd = create_exclusive(path)
    temp = PreparedTemp(path=path, fd=fd)
    try:
        os.posix_fallocate(fd, 0, base_size + _ANSWER_ROOM)
    except BaseException:
        temp.discard()
        raise
    return temp


def _dead_temps(config_dir: str, uid: int) -> list[tuple[str, str | None]]:
    try:
        names = os.listdir(config_dir)
    except OSError:
        return []
    found = []
    for name in names:
        match = _TEMP.fullmatch(name)
        if match is None or not pid_is_gone(int(match.group(1))):
            continue
        path = os.path.join(config_dir, name)
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_uid == uid:
                found.append((path, match.group(2)))
    return found


def _complete_login(path: str, uid: int, spent: str) -> TokenAnswer | None:
    try:
        raw = read_gated(path, uid=uid, max_bytes=CREDENTIALS_MAX_BYTES, strict=True)
    except (GateRefused, OSError):
        return None
    if raw is None:
        return None
    # Allocated room not yet cut off: the login was written whole and the process died before
    # the ftruncate. NUL is never part of JSON, so the login is exactly what precedes it.
    end = len(raw)
    while end and raw[end - 1] == 0:
        end -= 1
    del raw[end:]
    try:
        document = parse_json_object(raw)
    except LayoutError:
        return None
    finally:
        zero(raw)
    return token_answer_from_login(document, spent)


def dead_answer(
    config_dir: str, uid: int, spent: str, fingerprint: str
) -> tuple[TokenAnswer, str] | None:
    """Return the login a dead refresher wrote for `spent`, if one is whole on disk, and its file.

    Every other temp file a dead refresher left is removed; the one rolled forward stays until
    the caller has installed its tokens (a crash meanwhile leaves it for the next run).
    """
    found: tuple[TokenAnswer, str] | None = None
    for path, temp_fingerprint in _dead_temps(config_dir, uid):
        if found is None and temp_fingerprint == fingerprint:
            answer = _complete_login(path, uid, spent)
            if answer is not None:
                found = (answer, path)
                continue
        with contextlib.suppress(OSError):
            os.unlink(path)
    return found


def answer_on_disk(config_dir: str, uid: int, spent: str) -> bool:
    """Tell whether a dead refresher's complete answer for `spent` is in a temp file (read only)."""
    fingerprint = token_fingerprint(spent)
    return any(
        temp_fingerprint == fingerprint and _complete_login(path, uid, spent) is not None
        for path, temp_fingerprint in _dead_temps(config_dir, uid)
    )


def _exchange_in(temp: str, path: str, expected: bytearray, uid: int) -> bool:
    """Swap `temp` in; tell whether what came out was `expected` (else it is swapped back)."""
    try:
        rename_exchange(temp, path)
    except RenameUnsupported:
        os.rename(temp, path)  # no exchange on this filesystem: the re-read above is all we have
        return True
    try:
        out = read_gated(temp, uid=uid, max_bytes=CREDENTIALS_MAX_BYTES, strict=True)
    except (GateRefused, OSError):
        out = None
    same = out is not None and out == expected
    zero(out)
    if same:
        with contextlib.suppress(OSError):
            os.unlink(temp)  # the old login, its refresh token now spent
        return True
    rename_exchange(temp, path)  # another writer's login came out: it goes back in place
    return False


async def install(
    config_dir: str,
    base: Base,
    *,
    answer: TokenAnswer,
    spent: str,
    uid: int,
    temp: PreparedTemp,
    rolled_forward: bool = False,
    on_filled: Callable[[], None] | None = None,
) -> RefreshResult:
    """Steps 5 to 7: fill the temp file, check for other writers, exchange it into place.

    `on_filled` runs once, after the first fill is synced and before any exchange: the journal's
    intent line, so a crash from then on leaves a story that names the new login.
    """
    path = os.path.join(config_dir, CREDENTIALS_NAME)
    rotated = answer.refresh is not None and answer.refresh != spent
    write_failure: RefreshFailure = "write-failed" if rotated else "io"
    filled = False
    try:
        for _ in range(WRITE_ATTEMPTS):
            if not filled:
                document = apply_tokens(base.document, answer, spent)
                if document is None:
                    raise RefreshStop(failure="write-conflict")
                try:
                    temp.fill(serialize(document, base.layout))
                except OSError:
                    raise RefreshStop(failure=write_failure) from None
                filled = True
                if on_filled is not None:
                    on_filled()
                    on_filled = None
                await pause("temp-written")
            try:
                current = read_credentials_raw(config_dir, uid=uid)
            except (GateRefused, OSError):
                await asyncio.sleep(UNREADABLE_WAIT_S)  # (b) unreadable
                continue
            if current is None:
                return RefreshRefreshedElsewhere()  # (c) gone: a logout stands
            if current == base.raw:
                zero(current)
                await pause("before-replace")
                temp.close()
                try:
                    installed = _exchange_in(temp.path, path, base.raw, uid)
                except OSError:
                    raise RefreshStop(failure=write_failure) from None
                if installed:
                    sync_dir(config_dir)
                    await pause("renamed")
                    return RefreshRefreshed(
                        expires_at_ms=answer.expires_at_ms, rolled_forward=rolled_forward
                    )
                temp.fd = os.open(temp.path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                continue  # the other writer's file is back in place: decide again from it
            action = _other_writer(current, spent)
            if action == "wait":
                zero(current)
                await asyncio.sleep(UNREADABLE_WAIT_S)  # (b) half-written
                continue
            if action == "stands":
                zero(current)
                return RefreshRefreshedElsewhere()  # (c) another login stands
            # (a) The writer kept the spent token: apply the new tokens to its file instead.
            try:
                new_base = Base.parse(current)
            except LayoutError:
                raise RefreshStop(failure="unrecognized-format") from None
            zero(base.raw)
            base = new_base
            filled = False
        raise RefreshStop(failure="write-conflict")
    finally:
        zero(base.raw)
        temp.discard()


def _other_writer(current: bytearray, spent: str) -> Literal["wait", "stands", "apply"]:
    try:
        document = parse_json_object(current)
    except LayoutError:
        return "wait"
    holder = refresh_token_of(document)
    if holder is None:
        return "wait"
    return "apply" if holder == spent else "stands"
