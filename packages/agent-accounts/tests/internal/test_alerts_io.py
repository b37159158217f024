"""The alerts' I/O (`io._alerts`), in process: the marks file beside the backoff file, the hook's
environment, bounded hooks and notifications, the journal prefix, one poll deciding a profile at a
time. White-box: `poll --write --alert-at` in test_alerts.py runs the same through the CLI."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from accounts_alerts_support import HOUR, NOW, T, mark, reading
from accounts_support import CANARY, check_files
from agent_accounts import Alert
from agent_accounts.io import Profile
from agent_accounts.io import _alerts as alerts_io
from agent_accounts.io._alerts import (
    alert_environment,
    alert_state_path,
    read_alert_marks,
    run_alerts,
    write_alert_marks,
)

# ---- marks on disk ----------------------------------------------------------------------------------


def test_marks_round_trip_beside_the_backoff_file(tmp_path: Path) -> None:
    marks = {"five_hour": mark(95), "seven_day": mark(80, None)}
    assert write_alert_marks(str(tmp_path), marks)
    path = Path(alert_state_path(str(tmp_path)))
    assert path.parent == tmp_path / "status-cache"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_alert_marks(str(tmp_path)) == marks
    assert [p.name for p in path.parent.iterdir()] == ["usage-alerts.state"]  # no temp left


@pytest.mark.parametrize(
    "content", [b"", b"{", b"[]", b'{"windows": 5}', b'{"windows": {"a": {"level": "x"}}}']
)
def test_unreadable_marks_count_as_none(tmp_path: Path, content: bytes) -> None:
    path = Path(alert_state_path(str(tmp_path)))
    path.parent.mkdir()
    path.write_bytes(content)
    path.chmod(0o600)
    assert read_alert_marks(str(tmp_path)) == {}


def test_marks_that_others_can_write_are_not_trusted(tmp_path: Path) -> None:
    assert write_alert_marks(str(tmp_path), {"five_hour": mark(95)})
    os.chmod(alert_state_path(str(tmp_path)), 0o666)
    assert read_alert_marks(str(tmp_path)) == {}


def test_the_hook_environment_holds_the_alert_and_no_secret() -> None:
    alert = Alert(window="five_hour", used_percentage=96.5, threshold=95, resets_at=1_893_456_000)
    base = {
        "PATH": "/usr/bin",
        "MY_API_TOKEN": CANARY,
        "GITHUB_TOKEN": CANARY,
        "DB_PASSWORD": CANARY,
        "ANTHROPIC_API_KEY": CANARY,
        "OPAQUE": f"sk-ant-oat01-{CANARY}",
        "JWT_ISH": f"eyJ{CANARY}",
        "HEADER": f"Bearer {CANARY}",
    }
    env = alert_environment("work", alert, base)
    assert CANARY not in json.dumps(env)
    assert env == {
        "PATH": "/usr/bin",
        "AGENT_ALERT_LABEL": "work",
        "AGENT_ALERT_WINDOW": "five_hour",
        "AGENT_ALERT_PERCENTAGE": "96.5",
        "AGENT_ALERT_THRESHOLD": "95",
        "AGENT_ALERT_RESETS_AT": "2030-01-01T00:00:00Z",
        "AGENT_ALERT_RESETS_AT_EPOCH": "1893456000",
    }


# ---- run_alerts in-process: bounded hooks and the journal prefix --------------------------------


@pytest.fixture
def profile(tmp_path: Path) -> Iterator[Profile]:
    config = tmp_path / "work"
    sessions = config / "status-cache" / "sessions"
    sessions.mkdir(parents=True)
    doc = reading(five_hour=(97, NOW + HOUR))
    (sessions / "usage-poll.json").write_text(json.dumps(doc))
    yield Profile(label="work", config_dir=str(config))
    check_files(tmp_path)


def test_a_hook_that_hangs_is_killed_and_reported(
    profile: Profile, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    started = tmp_path / "started"
    code = run_alerts([profile], T, f"touch {started}; exec sleep 600", now=NOW, hook_timeout=0.5)
    assert code == 1
    assert started.exists()
    err = capfd.readouterr().err.splitlines()
    assert err[-1] == "account-cli: work: alert hook timed out after 0.5s"
    # Once marked, a second run fires nothing and starts no hook.
    started.unlink()
    assert run_alerts([profile], T, f"touch {started}", now=NOW) == 0
    assert not started.exists()
    assert capfd.readouterr().err == ""


def test_a_hook_that_cannot_start_a_shell_never_crashes_the_poll(
    profile: Profile, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(2, "no shell")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    assert run_alerts([profile], T, "true", now=NOW) == 1
    assert (
        capfd.readouterr().err.splitlines()[-1] == "account-cli: work: alert hook could not start"
    )


def test_marks_that_cannot_be_written_hold_the_alert_back(
    profile: Profile, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    Path(alert_state_path(profile.config_dir)).mkdir()  # a dir where the file goes
    hooked = tmp_path / "hooked"
    assert run_alerts([profile], T, f"touch {hooked}", now=NOW) == 1
    assert capfd.readouterr().err == (
        "account-cli: work: alert state write failed; alerts held back\n"
    )
    assert not hooked.exists()


def test_warning_priority_prefix_only_when_stderr_is_the_journal(
    profile: Profile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = tmp_path / "journal"
    with journal.open("w+") as stream:
        st = os.fstat(stream.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
        monkeypatch.setattr(sys, "stderr", stream)
        monkeypatch.setenv("PATH", str(tmp_path))  # no notify-send
        assert run_alerts([profile], T, None, now=NOW) == 0
    assert journal.read_text() == (
        "<4>account-cli: work: five_hour at 97% (crossed 95%), resets 2027-01-15T09:00:00Z\n"
    )
    other = io.StringIO()
    monkeypatch.setattr(sys, "stderr", other)
    Path(alert_state_path(profile.config_dir)).unlink()
    assert run_alerts([profile], T, None, now=NOW) == 0
    assert other.getvalue().startswith("account-cli: work: five_hour at 97%")


def test_notifications_that_hang_share_one_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:

    profiles = []
    for name in ("a", "b", "c"):
        sessions = tmp_path / name / "status-cache" / "sessions"
        sessions.mkdir(parents=True)
        doc = reading(five_hour=(97, NOW + HOUR), seven_day=(99, NOW + HOUR))
        (sessions / "usage-poll.json").write_text(json.dumps(doc))
        profiles.append(Profile(label=name, config_dir=str(tmp_path / name)))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    tool = bin_dir / "notify-send"
    tool.write_text(f"#!/bin/sh\necho x >> {calls}\nexec /bin/sleep 600\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(alerts_io, "NOTIFY_TIMEOUT_S", 0.5)
    assert run_alerts(profiles, T, None, now=NOW) == 0
    assert len(capfd.readouterr().err.splitlines()) == 6  # every alert still has its line
    assert len(calls.read_text().splitlines()) == 1  # the first hung: the rest were skipped


def test_a_poll_deciding_the_same_profile_keeps_the_other_from_firing_it(
    profile: Profile, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    import fcntl

    monkeypatch.setattr(alerts_io, "MARKS_LOCK_WAIT_S", 0.1)
    cache = os.open(Path(profile.config_dir) / "status-cache", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(cache, fcntl.LOCK_EX)  # another process's flock, as far as the lock can tell
        assert run_alerts([profile], T, None, now=NOW) == 0
        assert capfd.readouterr().err == ""
        assert read_alert_marks(profile.config_dir) == {}
    finally:
        os.close(cache)
    assert run_alerts([profile], T, None, now=NOW) == 0
    assert capfd.readouterr().err.startswith("account-cli: work: five_hour at 97% (crossed 95%)")
