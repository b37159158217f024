"""Usage alerts on disk and on the desktop: `account-cli poll --write --alert-at 80,95`.

After a poll, each profile's windows, each as the newest reading carrying it has it (a status-line
session's included; a reading dated ahead counts as `counted_time` says), go through the
pure `alert_crossings` with the marks kept in `status-cache/usage-alerts.state`, beside the
backoff file (compact JSON `{"windows": {"<name>": {"level": 95, "resets_at": <epoch s>}}}`,
read through the strict gate, written atomically). The new marks are written *before* anything
fires, so a crash or the next timer tick never repeats an alert; marks that cannot be written
hold their alerts back (reported), rather than fire them on every tick. The marks are read and
written under an flock on the status-cache dir, so two polls at once never both fire one alert.

Each alert then fires three ways:
- a line on stderr, `account-cli: <label>: <window> at 96% (crossed 95%), resets <ISO time>`,
  prefixed `<4>` (warning priority) when stderr is the journal (`JOURNAL_STREAM` names it, as
  systemd sets it for a service), so journald files it as a warning;
- `notify-send` when it is on PATH (best effort: missing, failing or slow, it is skipped; all
  notifications of a run share one `NOTIFY_TIMEOUT_S` deadline);
- the hook (`--alert-exec CMD`, run by `/bin/sh -c`) with `AGENT_ALERT_LABEL`,
  `AGENT_ALERT_WINDOW`, `AGENT_ALERT_PERCENTAGE`, `AGENT_ALERT_THRESHOLD`,
  `AGENT_ALERT_RESETS_AT` (ISO, empty when unknown) and `AGENT_ALERT_RESETS_AT_EPOCH` in its
  environment, never a token: variables whose name says token, secret, password, key, credential
  or cookie, or whose value starts like a token, are left out of it. Hooks run at once, with
  stdin, stdout and stderr on /dev/null, in their own process group, killed after
  `ALERT_HOOK_TIMEOUT_S`; a failed or killed hook is reported and makes the poll exit 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Final

from agent_accounts._alerts import Alert, AlertMark, alert_crossings
from agent_accounts._numbers import plain_number
from agent_accounts._redact import redact_secrets

from ._atomic import atomic_write, ensure_private_dir
from ._dirlock import dir_locked
from ._gate import GateRefused, read_gated, zero
from ._profiles import Profile
from ._readings import newest_windows, status_cache_dir

__all__ = [
    "ALERT_HOOK_TIMEOUT_S",
    "ALERT_STATE_FILE",
    "MARKS_LOCK_WAIT_S",
    "NOTIFY_TIMEOUT_S",
    "alert_environment",
    "alert_state_path",
    "read_alert_marks",
    "run_alerts",
    "write_alert_marks",
]

ALERT_STATE_FILE: Final = "usage-alerts.state"
ALERT_STATE_MAX_BYTES: Final = 16 * 1024
ALERT_HOOK_TIMEOUT_S: Final = 10.0
NOTIFY_TIMEOUT_S: Final = 5.0
MARKS_LOCK_WAIT_S: Final = 2.0
_SECRET_NAME_PARTS: Final = (
    "TOKEN",
    "SECRET",
    "PASSW",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
    "COOKIE",
)
_TOKEN_STARTS: Final = ("sk-", "eyJ", "Bearer ", "Basic ")


def alert_state_path(config_dir: str) -> str:
    """Return `<config_dir>/status-cache/usage-alerts.state`."""
    return os.path.join(status_cache_dir(config_dir), ALERT_STATE_FILE)


def _marks_from(data: object) -> dict[str, AlertMark]:
    windows = data.get("windows") if isinstance(data, dict) else None
    marks: dict[str, AlertMark] = {}
    if not isinstance(windows, dict):
        return marks
    for name, raw in windows.items():
        if not isinstance(raw, dict):
            continue
        level = plain_number(raw.get("level"))
        resets = raw.get("resets_at")
        resets_at = None if resets is None else plain_number(resets)
        if level is None or (resets is not None and resets_at is None):
            continue
        marks[str(name)] = AlertMark(level=float(level), resets_at=resets_at)
    return marks


def read_alert_marks(config_dir: str, *, uid: int | None = None) -> dict[str, AlertMark]:
    """Read the alert marks through the strict gate; empty when absent, refused or invalid."""
    try:
        raw = read_gated(alert_state_path(config_dir), uid=uid, max_bytes=ALERT_STATE_MAX_BYTES)
    except (GateRefused, OSError):
        return {}
    if raw is None:
        return {}
    try:
        return _marks_from(json.loads(raw))
    except (ValueError, RecursionError):
        return {}
    finally:
        zero(raw)


def write_alert_marks(config_dir: str, marks: Mapping[str, AlertMark]) -> bool:
    """Write the alert marks atomically; False (nothing raised) when they cannot be written."""
    doc = {
        "windows": {
            name: {"level": mark.level, "resets_at": mark.resets_at}
            for name, mark in sorted(marks.items())
        }
    }
    try:
        directory = status_cache_dir(config_dir)
        ensure_private_dir(directory)
        atomic_write(directory, ALERT_STATE_FILE, json.dumps(doc, separators=(",", ":")).encode())
    except OSError:
        return False
    return True


@contextlib.contextmanager
def _marks_locked(config_dir: str) -> Iterator[bool]:
    """Hold the status-cache dir's flock (`dir_locked`) while marks are read and written.

    Two polls at once (the timer and one by hand) would otherwise both read the old marks and
    both fire. It is tried for at most `MARKS_LOCK_WAIT_S` and yields False when another process
    keeps it (or the dir cannot be opened), so that profile's alerts wait for the next run,
    never repeat; with no status-cache yet it yields True (writing will make it).
    """
    with dir_locked(status_cache_dir(config_dir), wait_s=MARKS_LOCK_WAIT_S) as locked:
        yield locked


def _iso(epoch_s: float) -> str:
    return (
        datetime.fromtimestamp(epoch_s, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


def _percent(value: float) -> str:
    return f"{value:g}"


def alert_environment(label: str, alert: Alert, base: Mapping[str, str]) -> dict[str, str]:
    """Return the hook's environment: `base` without secret-looking variables, plus the alert's."""
    env = {
        name: value
        for name, value in base.items()
        if not any(part in name.upper() for part in _SECRET_NAME_PARTS)
        and not value.startswith(_TOKEN_STARTS)
    }
    env.update(
        {
            "AGENT_ALERT_LABEL": label,
            "AGENT_ALERT_WINDOW": alert.window,
            "AGENT_ALERT_PERCENTAGE": _percent(alert.used_percentage),
            "AGENT_ALERT_THRESHOLD": _percent(alert.threshold),
            "AGENT_ALERT_RESETS_AT": "" if alert.resets_at is None else _iso(alert.resets_at),
            "AGENT_ALERT_RESETS_AT_EPOCH": ""
            if alert.resets_at is None
            else str(int(alert.resets_at)),
        }
    )
    return env


def _to_journal() -> bool:
    """Tell whether stderr is the journal stream systemd connected (`JOURNAL_STREAM`)."""
    stream = os.environ.get("JOURNAL_STREAM", "")
    device, _, inode = stream.partition(":")
    try:
        st = os.fstat(sys.stderr.fileno())
    except (OSError, ValueError):
        return False
    return f"{st.st_dev}" == device and f"{st.st_ino}" == inode


def _alert_text(label: str, alert: Alert) -> str:
    resets = "resets unknown" if alert.resets_at is None else f"resets {_iso(alert.resets_at)}"
    return (
        f"{label}: {alert.window} at {_percent(alert.used_percentage)}% "
        f"(crossed {_percent(alert.threshold)}%), {resets}"
    )


def _notify(program: str, label: str, alert: Alert, timeout: float) -> None:
    """Show a desktop notification through `program`; never fail, never wait past `timeout`."""
    title = f"{label}: {alert.window} at {_percent(alert.used_percentage)}%"
    body = _alert_text(label, alert)
    with contextlib.suppress(Exception):
        subprocess.run(
            [program, "--app-name=account-cli", "--urgency=normal", title, body],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
            env=alert_environment(label, alert, os.environ),
        )


def _err(line: str) -> None:
    sys.stderr.write(f"account-cli: {line}\n")


def _run_hooks(command: str, fired: Sequence[tuple[str, Alert]], timeout: float) -> int:
    """Run the hook once per alert, all at once, each bounded by one deadline; 1 on any failure."""
    started: list[tuple[str, subprocess.Popen[bytes]]] = []
    code = 0
    for label, alert in fired:
        try:
            child = subprocess.Popen(
                ["/bin/sh", "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=alert_environment(label, alert, os.environ),
                start_new_session=True,  # its own group: a timeout kills what it started too
                close_fds=True,
            )
        except OSError:
            _err(f"{label}: alert hook could not start")
            code = 1
            continue
        started.append((label, child))
    deadline = time.monotonic() + timeout
    for label, child in started:
        try:
            status = child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            _err(f"{label}: alert hook timed out after {timeout:g}s")
            code = 1
            continue
        if status != 0:
            _err(f"{label}: alert hook failed: exit {status}")
            code = 1
    return code


def run_alerts(
    profiles: Sequence[Profile],
    thresholds: Sequence[float],
    hook: str | None,
    *,
    now: float | None = None,
    hook_timeout: float = ALERT_HOOK_TIMEOUT_S,
) -> int:
    """Fire each profile's new threshold crossings once; return the exit code (0, or 1)."""
    current = time.time() if now is None else now
    fired: list[tuple[str, Alert]] = []
    code = 0
    for profile in profiles:
        config_dir = str(profile.config_dir)
        try:
            # Each window as the newest reading carrying it has it: a session reading newer
            # than the poller's must not hide the per-model windows only the poller's carries.
            newest = newest_windows(config_dir, now=current)
        except (OSError, ValueError):
            continue  # `poll` and `status` report an unreadable sessions dir
        if newest is None:
            continue
        label = redact_secrets(profile.label)
        with _marks_locked(config_dir) as locked:
            if not locked:
                continue  # another poll is deciding this profile's alerts: they are its to fire
            marks = read_alert_marks(config_dir)
            new_marks, alerts = alert_crossings(newest, marks, thresholds, current)
            if new_marks == marks:
                continue
            if not write_alert_marks(config_dir, new_marks):
                _err(f"{label}: alert state write failed; alerts held back")
                code = 1
                continue
        fired.extend((label, alert) for alert in alerts)
    prefix = "<4>" if fired and _to_journal() else ""
    for label, alert in fired:
        sys.stderr.write(f"{prefix}account-cli: {_alert_text(label, alert)}\n")
    sys.stderr.flush()
    notifier = shutil.which("notify-send") if fired else None
    if notifier is not None:
        # One deadline for them all: a session bus that never answers costs NOTIFY_TIMEOUT_S once.
        deadline = time.monotonic() + NOTIFY_TIMEOUT_S
        for label, alert in fired:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _notify(notifier, label, alert, left)
    if hook and fired:
        code = max(code, _run_hooks(hook, fired, hook_timeout))
    return code
