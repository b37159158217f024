"""Session readings: one status-line session's reading in `status-cache/sessions/<session>.json`.

`write_session_reading` keeps `write_reading`'s rules (a valid reading, token-free JSON, only the
kept fields, one atomic write) for the readings the agent client hands to every status-line
command. `account-cli statusline-tee` calls it on every prompt, so this module imports neither
`typing` nor `dataclasses`; the JSON is `json.dumps`'s, and a reading made only of known window
names, plain short text and numbers of bounded size skips `redact_secrets` (it cannot hold
anything the redactor would change: `plainly_token_free`); any other goes through it.
"""

from __future__ import annotations

import json
import os

from agent_accounts._usage import KNOWN_WINDOWS, parse_usage_reading

from ._atomic import atomic_write, ensure_private_dir
from ._readings import USAGE_FILE, sessions_dir

TYPE_CHECKING = False  # not typing's: the status-line tee imports this module, never typing
if TYPE_CHECKING:
    from typing import Final

    from agent_accounts import UsageReading

__all__ = [
    "SESSION_ID_MAX",
    "STALE_SESSION_S",
    "is_plain_text",
    "plainly_token_free",
    "prune_stale_sessions",
    "session_file_name",
    "store_reading",
    "write_session_reading",
]

SESSION_ID_MAX: Final = 128
STALE_SESSION_S: Final = 8 * 86400
"""A session reading untouched this long holds no window that has not reset (the longest is 7 d)."""
_FILE_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_HASH_MARK: Final = "~"  # never in a plain id: a cleaned name cannot be a plain id's
_HASH_HEX: Final = 16
_STEM_CHARS: Final = _FILE_CHARS | {_HASH_MARK}
_PLAIN_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._")
# Under 1e12 a number prints as at most 17 digits in a row (float repr) or 12 (int): far from
# the 32-character run `redact_secrets` takes for an opaque token.
_NUMBER_BOUND: Final = 1e12
_UNUSABLE_SESSION: Final = "session id must be a non-empty string of at most 128 characters"
_TOKEN_SESSION: Final = "session id looks like a token"
_RESERVED_SESSION: Final = "session id names the poller's own reading"
_INVALID_READING: Final = "reading must be a valid usage reading"
_SECRET_READING: Final = "reading must not carry secret-shaped text"


def session_file_name(session_id: object) -> str:
    """Return `<session>.json` for a session id of `[A-Za-z0-9_-]`, else a cleaned, hashed name.

    An id with any other character has each such character as `_` and `~` plus 16 hex digits of
    the SHA-256 of the raw id appended (`a\nb` and `a\0b` name two files, and no cleaned name
    can equal a plain id's, which never holds `~`). No `.` or `/` survives, so the name stays
    inside the sessions dir and never hides as a dot file; the poller's own `usage-poll` is
    refused, and so is an id holding a key prefix (`sk-`) or a JWT start (`eyJ`), which would
    put a token in a file name. Raises TypeError with a fixed message.
    """
    if not isinstance(session_id, str) or not 0 < len(session_id) <= SESSION_ID_MAX:
        raise TypeError(_UNUSABLE_SESSION)
    if "sk-" in session_id.lower() or "eyJ" in session_id:
        raise TypeError(_TOKEN_SESSION)  # a key or JWT start: never a file name
    if _FILE_CHARS.issuperset(session_id):
        name = session_id + ".json"
    else:
        import hashlib  # only for an id that needs cleaning (the agent client's are UUIDs)

        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
        cleaned = "".join(c if c in _FILE_CHARS else "_" for c in session_id)
        name = f"{cleaned}{_HASH_MARK}{digest[:_HASH_HEX]}.json"
    if name == USAGE_FILE:
        raise TypeError(_RESERVED_SESSION)
    return name


def is_plain_text(text: str) -> bool:
    """Tell whether `text` is at most 24 lower-case letters, digits, `.` and `_` (never redacted).

    No `-` (no `sk-...` key prefix), no `:`, `=`, `%`, `&` or space (no field, scheme or encoded
    form), far shorter than a 32-character opaque run: `redact_secrets` returns it unchanged.
    """
    return 0 < len(text) <= 24 and _PLAIN_CHARS.issuperset(text)


def plainly_token_free(reading: UsageReading) -> bool:
    """Tell whether a reading's JSON plainly holds nothing `redact_secrets` would change.

    Known window names, plain short text (`is_plain_text`) and numbers below 1e12 (at most 17
    digits in a row) cannot form a key prefix, a field or a 32-character opaque run; a property
    test holds this to `redact_secrets`. Such a reading skips the redactor (and its `re`
    patterns) on every prompt; any other is checked by it.
    """
    texts = [reading["session_id"], reading.get("source", "x"), reading.get("account", "x")]
    if not all(is_plain_text(t) for t in texts):
        return False
    numbers: list[object] = [reading["written_at"]]
    for name, window in reading["rate_limits"].items():
        if name not in KNOWN_WINDOWS:
            return False
        numbers.append(window["used_percentage"])
        numbers.append(window.get("resets_at", 0))
    return all(isinstance(n, int | float) and -_NUMBER_BOUND < n < _NUMBER_BOUND for n in numbers)


def _reading_json(reading: UsageReading) -> str:
    """Serialise a valid reading as `write_reading` does; TypeError when redaction changes it."""
    text = json.dumps(reading, separators=(",", ":"), allow_nan=False)
    if not plainly_token_free(reading):
        from agent_accounts._redact import redact_secrets

        if redact_secrets(text) != text:
            raise TypeError(_SECRET_READING)
    return text


def write_session_reading(
    config_dir: str | os.PathLike[str], session_id: str, reading: object
) -> str:
    """Write one status-line session's reading to `sessions/<session>.json` atomically.

    The file name is `session_file_name(session_id)`. The reading must pass `parse_usage_reading`
    and its JSON must be unchanged by `redact_secrets`; only the fields it keeps are written.
    Raises TypeError with a fixed message (nothing written), or the filesystem error redacted.
    """
    name = session_file_name(session_id)
    parsed = parse_usage_reading(reading)
    if parsed is None:
        raise TypeError(_INVALID_READING)
    return store_reading(config_dir, name, parsed)


def store_reading(config_dir: str | os.PathLike[str], name: str, parsed: UsageReading) -> str:
    """Write a parsed reading to `sessions/<name>` atomically, then append it to the history.

    The one writer of readings (`write_reading` and `write_session_reading`): TypeError with a
    fixed message when its JSON is not token-free (nothing written), or the filesystem error
    redacted; a history that cannot be appended to never fails the write.
    """
    text = _reading_json(parsed)
    directory = sessions_dir(os.fspath(config_dir))
    try:
        ensure_private_dir(directory)
        written = atomic_write(directory, name, text.encode())
    except OSError as exc:
        from agent_accounts._redact import redact_secrets

        failure = redact_secrets(exc)
    else:
        from ._history import append_history

        append_history(config_dir, parsed)  # never raises: a full disk keeps the reading
        return written
    raise failure  # outside the handler, so no __context__ links the original


def prune_stale_sessions(directory: str, *, now: float) -> int:
    """Remove session readings untouched for `STALE_SESSION_S`; return how many went.

    Only regular `*.json` files with a session file name are taken (never `usage-poll.json`,
    never a symlink, a dir or a dot file); any file that cannot be examined or removed is left.
    Every reader lists the sessions dir on every status line, and each session of the agent
    client adds a file, so without this the dir only grows.
    """
    import stat

    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        stem = name[:-5]
        if (
            not name.endswith(".json")
            or name == USAGE_FILE
            or not stem
            or not _STEM_CHARS.issuperset(stem)
        ):
            continue
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or now - info.st_mtime < STALE_SESSION_S:
                continue
            os.unlink(path)
        except OSError:
            continue
        removed += 1
    return removed
