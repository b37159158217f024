"""write_reading and read_usage on real files: validation, modes, atomicity, skips and redaction."""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accounts_support import (
    CANARY,
    NOW,
    canary_token,
    exception_text,
    reading,
    tree_of,
)
from agent_accounts import parse_usage_reading
from agent_accounts.io import UsageFile, read_usage, write_reading, write_session_reading

INVALID = "reading must be a valid usage-poll reading"
SECRET = "reading must not carry secret-shaped text"

# conftest's check: no log record, output or file but credentials holds the canary.
pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / ".agent-profiles" / "work"
    path.mkdir(parents=True, mode=0o700)
    return path


def sessions(config: Path) -> Path:
    return config / "status-cache" / "sessions"


def put(config: Path, name: str, doc: Any) -> Path:
    """Plant a session file the way a status-line writer would (not through the library)."""
    directory = sessions(config)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    return path


# --- write_reading ----------------------------------------------------------------------------


def test_write_creates_private_dir_and_file_and_returns_the_path(config: Path) -> None:
    doc = reading(NOW, source="oauth-usage", account="work")
    path = write_reading(config, doc)
    assert path == str(sessions(config) / "usage-poll.json")
    assert stat.S_IMODE(os.stat(sessions(config)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(Path(path).read_bytes()) == doc
    assert os.listdir(sessions(config)) == ["usage-poll.json"]


@pytest.fixture(params=[0o022, 0o277], ids=["umask022", "umask277"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_dirs_the_writers_create_are_0700_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    root = tmp_path / ".agent-profiles"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    config = root / "new"  # missing, like status-cache and sessions below it
    write_reading(config, reading(NOW))
    for made in (config, config / "status-cache", sessions(config)):
        assert mode(made) == 0o700, made
    assert mode(root) == 0o755  # existed: not the package's to chmod
    # The other writers of status-cache share the helper.
    other = root / "other"
    write_session_reading(other, "s1", reading(NOW))
    assert (mode(other), mode(other / "status-cache"), mode(sessions(other))) == (0o700,) * 3


def test_an_existing_status_cache_keeps_its_mode(config: Path, umask: int) -> None:
    (config / "status-cache").mkdir(mode=0o755)
    os.chmod(config / "status-cache", 0o755)
    os.chmod(config, 0o750)
    write_reading(config, reading(NOW))
    assert (mode(config), mode(config / "status-cache"), mode(sessions(config))) == (
        0o750,
        0o755,
        0o700,
    )


def test_write_keeps_only_the_fields_parse_keeps(config: Path) -> None:
    doc = reading(NOW, source="oauth-usage", unknown_key="dropped", cost=3)
    doc["rate_limits"]["five_hour"]["note"] = "dropped too"
    path = write_reading(config, doc)
    written = json.loads(Path(path).read_bytes())
    assert written == parse_usage_reading(doc)
    assert "unknown_key" not in written
    assert "cost" not in written
    assert "note" not in written["rate_limits"]["five_hour"]


def test_write_replaces_the_previous_reading(config: Path) -> None:
    write_reading(config, reading(NOW))
    path = write_reading(config, reading(NOW + 60))
    assert json.loads(Path(path).read_bytes())["written_at"] == NOW + 60
    assert os.listdir(sessions(config)) == ["usage-poll.json"]


BAD_READINGS: list[tuple[str, Any, str]] = [
    ("none", None, INVALID),
    ("string", "usage-poll", INVALID),
    ("no-rate-limits", {"session_id": "usage-poll", "written_at": NOW}, INVALID),
    ("percent-over-100", reading(NOW) | {"rate_limits": {"x": {"used_percentage": 101}}}, INVALID),
    ("wrong-session", reading(NOW, session_id="status-line-123"), INVALID),
    ("secret-account", reading(NOW, account=canary_token("oat")), SECRET),
    ("secret-source", reading(NOW, source="Bearer " + canary_token("oat")), SECRET),
    ("secret-window-name", reading(NOW, windows=("window_" + "a1b2" * 10,)), SECRET),
    ("secret-auth-account", reading(NOW) | {"written_at": NOW, "account": "Bearer x"}, SECRET),
]


@pytest.mark.parametrize(
    ("doc", "message"), [r[1:] for r in BAD_READINGS], ids=[r[0] for r in BAD_READINGS]
)
def test_invalid_readings_raise_a_fixed_type_error_and_write_nothing(
    config: Path, doc: Any, message: str
) -> None:
    before = tree_of(config)
    with pytest.raises(TypeError) as caught:
        write_reading(config, doc)
    assert str(caught.value) == message
    assert CANARY not in exception_text(caught.value)
    assert tree_of(config) == before


def test_failed_write_removes_its_temp_file_and_raises_redacted(tmp_path: Path) -> None:
    # The target name is taken by a directory, so the rename fails after the temp was written;
    # the config dir's own name is token-shaped, so the original message would leak it.
    config = tmp_path / canary_token("oat")
    (sessions(config) / "usage-poll.json").mkdir(parents=True)
    with pytest.raises(OSError) as caught:
        write_reading(config, reading(NOW))
    exc = caught.value
    assert exc.__cause__ is None
    assert exc.__context__ is None
    assert CANARY not in exception_text(exc)
    assert os.listdir(sessions(config)) == ["usage-poll.json"]  # no temp file left


def test_readers_see_the_old_reading_or_the_new_one_never_a_part(config: Path) -> None:
    # Big readings (many windows) make a torn write likely to be seen if the write were in place.
    def big(written_at: float) -> dict[str, Any]:
        names = [f"window_{i:04d}" for i in range(1500)]
        return reading(written_at, windows=names)

    versions = {NOW + i: big(NOW + i) for i in range(2)}
    target = Path(write_reading(config, versions[NOW]))
    stop = threading.Event()
    seen: list[float] = []
    torn: list[bytes] = []

    def reader() -> None:
        for _ in range(100_000):  # bounded: the writer stops it long before
            if stop.is_set():
                return
            data = target.read_bytes()
            try:
                seen.append(json.loads(data)["written_at"])
            except ValueError:
                torn.append(data[:80])

    worker = threading.Thread(target=reader)
    worker.start()
    try:
        for i in range(60):
            write_reading(config, versions[NOW + i % 2])
    finally:
        stop.set()
        worker.join(30)
    assert not worker.is_alive()
    assert torn == []
    assert seen
    assert set(seen) <= set(versions)
    assert os.listdir(sessions(config)) == ["usage-poll.json"]


# --- read_usage -------------------------------------------------------------------------------


def test_no_sessions_dir_gives_none(config: Path) -> None:
    assert read_usage(config, now=NOW) is None


def test_newest_written_at_wins_across_every_json_file(config: Path) -> None:
    put(config, "status-a.json", reading(NOW - 30, session_id="status-a"))
    newest = put(config, "status-b.json", reading(NOW - 10, session_id="status-b"))
    write_reading(config, reading(NOW - 20))
    result = read_usage(config, now=NOW)
    assert isinstance(result, UsageFile)
    assert result.file == str(newest)
    assert result.reading["session_id"] == "status-b"
    assert result.age_seconds == 10


def test_windows_fall_back_past_a_newer_reading_lacking_one(config: Path) -> None:
    put(config, "old.json", reading(NOW - 100, windows=("five_hour", "seven_day")))
    put(config, "new.json", reading(NOW - 5, windows=("five_hour",)))
    assert read_usage(config, now=NOW) is not None
    assert read_usage(config, now=NOW).file.endswith("new.json")  # type: ignore[union-attr]
    both = read_usage(config, now=NOW, windows=["five_hour", "seven_day"])
    assert both is not None
    assert both.file.endswith("old.json")
    assert both.age_seconds == 100
    assert read_usage(config, now=NOW, windows=["seven_day_opus"]) is None


def test_files_that_are_not_readings_are_skipped(config: Path, tmp_path: Path) -> None:
    good = put(config, "good.json", reading(NOW - 50))
    directory = sessions(config)
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps(reading(NOW)))
    (directory / "symlink.json").symlink_to(planted)
    os.mkfifo(directory / "fifo.json")  # must be skipped, not block the reader
    (directory / "dir.json").mkdir()
    padding = b" " * (256 * 1024 + 1 - len(json.dumps(reading(NOW)).encode()))
    put(config, "oversize.json", json.dumps(reading(NOW)).encode() + padding)
    put(config, "invalid.json", b"{not json")
    put(config, "no-window.json", reading(NOW) | {"rate_limits": {}})
    put(config, "wrong-shape.json", reading(NOW) | {"written_at": "now"})
    put(config, "newer.txt", reading(NOW))  # not .json: never taken
    put(config, ".usage-poll.json.1.ab.tmp", reading(NOW))
    assert os.path.getsize(directory / "oversize.json") == 256 * 1024 + 1

    result: list[UsageFile | None] = []
    worker = threading.Thread(target=lambda: result.append(read_usage(config, now=NOW)))
    worker.daemon = True
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "a FIFO blocked read_usage"
    assert result[0] is not None
    assert result[0].file == str(good)


def test_exactly_256_kib_is_read(config: Path) -> None:
    data = json.dumps(reading(NOW - 1)).encode()
    put(config, "big.json", data + b" " * (256 * 1024 - len(data)))
    assert read_usage(config, now=NOW) is not None


def test_usage_files_need_no_owner_mode_or_link_rules(config: Path, tmp_path: Path) -> None:
    path = put(config, "shared.json", reading(NOW - 3))
    os.chmod(path, 0o644)
    os.link(path, tmp_path / "second-name.json")
    result = read_usage(config, now=NOW)
    assert result is not None
    assert result.age_seconds == 3


def test_identity_fields_are_redacted(config: Path) -> None:
    token = canary_token("oat")
    put(
        config,
        "leaky.json",
        reading(NOW, session_id=f"s-{token}", source=f"token={token}", account=token),
    )
    result = read_usage(config, now=NOW)
    assert result is not None
    text = json.dumps(dict(result.reading)) + repr(result)
    assert CANARY not in text
    assert "[REDACTED]" in result.reading["session_id"]
    assert result.reading["account"] == "[REDACTED]"
    assert result.reading["source"].startswith("token=")
    os.unlink(result.file)  # the planted file holds the canary on purpose


@pytest.mark.parametrize(
    ("written", "age"), [(NOW + 3600, 0), (NOW, 0), (NOW - 0.5, 0), (NOW - 61.9, 61)]
)
def test_age_is_whole_seconds_and_never_negative(config: Path, written: float, age: int) -> None:
    put(config, "r.json", reading(written))
    result = read_usage(config, now=NOW)
    assert result is not None
    assert result.age_seconds == age


def test_now_defaults_to_the_clock(config: Path) -> None:
    import time

    put(config, "r.json", reading(time.time() - 120))
    result = read_usage(config)
    assert result is not None
    assert 119 <= result.age_seconds <= 180


def test_unexpected_filesystem_error_is_raised_redacted_without_chain(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(config, "r.json", reading(NOW))
    token = canary_token("oat")

    def failing_listdir(path: object) -> list[str]:
        raise OSError(errno.EIO, f"I/O error near {token}")

    monkeypatch.setattr(os, "listdir", failing_listdir)
    with pytest.raises(OSError) as caught:
        read_usage(config, now=NOW)
    exc = caught.value
    assert exc.__cause__ is None
    assert exc.__context__ is None
    assert CANARY not in exception_text(exc)


@pytest.mark.parametrize("now", [float("nan"), float("inf"), "now", True])
def test_bad_now_raises_value_error(config: Path, now: Any) -> None:
    put(config, "r.json", reading(NOW))
    with pytest.raises(ValueError, match="now"):
        read_usage(config, now=now)
