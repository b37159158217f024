"""`account-cli statusline-tee [--then CMD]`: keep the agent client's `rate_limits` as a reading.

The agent client runs its status-line command on every prompt with a JSON payload on stdin; for
subscribers that payload carries `rate_limits` (`five_hour`, `seven_day`: `used_percentage`,
`resets_at` in epoch seconds). The tee stores them as a session reading of the current profile
(`AGENT_CONFIG_DIR`, else `~/.agent`) in `status-cache/sessions/<session_id>.json`, then hands
the same bytes to CMD (run by `/bin/sh -c`, as the agent client runs a status line) or prints the
status line of `account-cli statusline` itself (the human line, or the pipe rows).

It runs on every prompt, so it imports only `json`, `os`, `sys`, `time` and the dataclass-free
readers and writer (no `subprocess`, `typing` or httpx). Bad input never stops the status
line: one fixed line on stderr, and CMD still runs (or the status line still prints).
"""

from __future__ import annotations

import math
import os
import sys
import time

TYPE_CHECKING = False  # not typing's: this runs on every prompt
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

    from agent_accounts import RateWindow

__all__ = ["STDIN_MAX_BYTES", "run_tee"]

STDIN_MAX_BYTES: Final = 256 * 1024
"""The most of stdin that is parsed (the usage file cap); CMD still gets every byte."""
_CHUNK: Final = 64 * 1024
_RESETS_MAX: Final = 1e11  # epoch seconds past year 5000 are no reset time
_BAD_INPUT: Final = "statusline-tee: input is not a status-line JSON object"
_NO_WINDOW: Final = "statusline-tee: rate_limits holds no usable window"
_NO_SESSION: Final = "statusline-tee: session_id missing or unusable"
_NO_DIR: Final = "statusline-tee: no config dir (AGENT_CONFIG_DIR or ~/.agent)"
_NOT_WRITTEN: Final = "statusline-tee: session reading not written"
_TOO_LARGE: Final = "statusline-tee: input over 256 KiB, not read"


def _read_stdin() -> tuple[bytes, bool]:
    """Read stdin up to the cap (plus one byte); True when there is more than the cap."""
    parts: list[bytes] = []
    size = 0
    try:
        while size <= STDIN_MAX_BYTES:
            chunk = os.read(0, _CHUNK)
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
    except OSError:  # no stdin at all (closed fd 0): nothing to record
        pass
    return b"".join(parts), size > STDIN_MAX_BYTES


def _resets_at(value: object) -> float | None:
    from agent_accounts._numbers import plain_number

    number = plain_number(value)
    if number is not None:
        return number if 0 < number < _RESETS_MAX else None
    if isinstance(value, str) and len(value) <= 64:
        # An ISO time: the documented payload has epoch seconds, but the endpoint's form costs
        # nothing to accept (its parser imports `datetime` only on this path).
        from agent_accounts._oauth import _epoch_seconds

        iso = _epoch_seconds(value)
        return iso if iso is not None and 0 < iso < _RESETS_MAX else None
    return None


def _windows(limits: dict[object, object]) -> dict[str, RateWindow]:
    from agent_accounts._numbers import plain_number
    from agent_accounts._usage import is_window_name

    windows: dict[str, RateWindow] = {}
    for name, raw in limits.items():
        if not is_window_name(name) or not isinstance(raw, dict):
            continue  # a null window (not started yet) or another shape: not a window
        used = plain_number(raw.get("used_percentage"))
        if used is None:
            continue
        # The agent client reports past 100 (105 was seen) once a limit is hit; 0..100 here.
        window: RateWindow = {"used_percentage": min(max(used, 0), 100)}
        resets = _resets_at(raw.get("resets_at"))
        if resets is not None:
            window["resets_at"] = resets
        windows[str(name)] = window
    return windows


def _session_field(session_id: str) -> str:
    """The reading's `session_id`: the id when plain, else `statusline.` and its plain start."""
    from agent_accounts.io._sessions import is_plain_text

    if is_plain_text(session_id):
        return session_id
    start = ""
    for char in session_id.lower()[:8]:
        if not is_plain_text(char):
            break
        start += char
    return f"statusline.{start}" if start else "statusline"


def _record(data: bytes) -> str | None:
    """Store the payload's `rate_limits` as a session reading; return the problem, or None."""
    import json

    try:
        payload = json.loads(data)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return _BAD_INPUT
    if not isinstance(payload, dict):
        return _BAD_INPUT
    limits = payload.get("rate_limits")
    if limits is None:
        return None  # before the session's first answer, or not a subscriber: nothing to keep
    if not isinstance(limits, dict):
        return _BAD_INPUT
    windows = _windows(limits)
    if not windows:
        return _NO_WINDOW if limits else None
    session_id = payload.get("session_id")
    from agent_accounts.io._discovery import default_config_dir
    from agent_accounts.io._sessions import session_file_name, write_session_reading

    try:
        session_file_name(session_id)
    except TypeError:
        return _NO_SESSION
    assert isinstance(session_id, str)  # session_file_name checked it
    config_dir = os.environ.get("AGENT_CONFIG_DIR") or default_config_dir()
    if not os.path.isdir(config_dir):
        return _NO_DIR  # never create a profile the agent client has not
    from agent_accounts._labels import account_label
    from agent_accounts.io._sessions import is_plain_text

    reading: dict[str, object] = {
        "session_id": _session_field(session_id),
        "written_at": math.floor(time.time() * 1000) / 1000,
        "rate_limits": windows,
        "source": "statusline",
    }
    label = account_label(config_dir)
    if is_plain_text(label):
        reading["account"] = label
    from agent_accounts.io._readings import sessions_dir
    from agent_accounts.io._sessions import prune_stale_sessions

    directory = sessions_dir(config_dir)
    first = not os.path.lexists(os.path.join(directory, session_file_name(session_id)))
    try:
        write_session_reading(config_dir, session_id, reading)
    except Exception:  # TypeError (refused) or the filesystem error, already redacted: dropped
        return _NOT_WRITTEN
    if first:
        # Once per session, not per prompt: every reader lists this dir on every status line.
        prune_stale_sessions(directory, now=time.time())
    return None


def _run_then(command: str, data: bytes, more: bool) -> int:
    """Run `/bin/sh -c command` with `data` (and the rest of stdin) on its stdin; its exit code."""
    # `_signal`, not `signal`: the same numbers without importing `enum` on every prompt.
    import _signal  # type: ignore[import-not-found]  # no stub: the C half of `signal`

    read_end, write_end = os.pipe()
    try:
        pid = os.posix_spawn(
            "/bin/sh",
            ["sh", "-c", command],
            os.environ,
            # Python ignores SIGPIPE and SIGXFSZ for itself; CMD starts as the agent client would
            # start it, with both at their defaults (`yes | head -1` ends quietly).
            setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read_end, 0),
                (os.POSIX_SPAWN_CLOSE, read_end),
                (os.POSIX_SPAWN_CLOSE, write_end),
            ],
        )
    except OSError:
        os.close(read_end)
        os.close(write_end)
        sys.stderr.write("account-cli: statusline-tee: --then command could not start\n")
        return 127
    os.close(read_end)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view) :]
        while more:
            chunk = os.read(0, _CHUNK)
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(write_end, view) :]
    except OSError:  # the command stopped reading (EPIPE) or stdin failed: it has what it took
        pass
    finally:
        os.close(write_end)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:  # pragma: no cover - retried by Python itself since PEP 475
            continue
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def run_tee(then: str | None, print_statusline: Callable[[], int]) -> int:
    """Record stdin's `rate_limits`, then run `then` on the same stdin or print the status line."""
    data, more = _read_stdin()
    try:
        problem = _TOO_LARGE if more else _record(data)
    except Exception:  # never a traceback on a prompt: one fixed line
        problem = _NOT_WRITTEN
    if problem is not None:
        try:
            sys.stderr.write(f"account-cli: {problem}\n")
            sys.stderr.flush()
        except Exception:  # noqa: S110 - a closed stderr is the agent client's business
            pass
    if then is None:
        return print_statusline()
    sys.stdout.flush()
    return _run_then(then, data, more)
