"""The 429 backoff's pure transitions and its file (`io._backoff`): white-box."""

from __future__ import annotations

import email.utils
import os
from pathlib import Path

import pytest

from accounts_support import NOW
from agent_accounts.io._backoff import (
    BACKOFF_FIRST_S,
    BACKOFF_MAX_S,
    Backoff,
    backoff_after_429,
    backoff_from_bytes,
    read_backoff,
    retry_after_seconds,
    write_backoff,
)


@pytest.mark.parametrize(
    ("previous", "wait"),
    [
        (None, 300.0),
        (Backoff(until=NOW - 1, wait=300.0), 600.0),
        (Backoff(until=NOW - 1, wait=600.0), 1200.0),
        (Backoff(until=NOW - 1, wait=1200.0), 2400.0),
        (Backoff(until=NOW - 1, wait=2400.0), 3600.0),
        (Backoff(until=NOW - 1, wait=3600.0), 3600.0),
    ],
)
def test_each_429_doubles_the_wait_up_to_an_hour(previous: Backoff | None, wait: float) -> None:
    after = backoff_after_429(previous, now=NOW)
    assert after == Backoff(until=NOW + wait, wait=wait)
    assert after.waiting(NOW)
    assert after.waiting(NOW + wait - 0.001)
    assert not after.waiting(NOW + wait)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"until": 1760000300, "wait": 300}', Backoff(until=NOW + 300, wait=300.0)),
        (b'{"until": 1760003600, "wait": 3600}', Backoff(until=NOW + 3600, wait=3600.0)),
        (b'{"until": 1759990000, "wait": 600}', Backoff(until=NOW - 10_000, wait=600.0)),
        # a wait outside 300..3600 is brought back within it
        (b'{"until": 1760000010, "wait": 5}', Backoff(until=NOW + 10, wait=BACKOFF_FIRST_S)),
        (b'{"until": 1760000010, "wait": 1e9}', Backoff(until=NOW + 10, wait=BACKOFF_MAX_S)),
        # waiting more than an hour from now counts as none
        (b'{"until": 1760003601, "wait": 3600}', None),
        (b'{"until": 1e300, "wait": 300}', None),
        (b'{"until": NaN, "wait": 300}', None),
        (b'{"until": "soon", "wait": 300}', None),
        (b'{"until": true, "wait": 300}', None),
        (b'{"until": 1760000300}', None),
        (b"[1760000300, 300]", None),
        (b"[" * 5000, None),
        (b"", None),
        (b"\xff", None),
    ],
)
def test_backoff_file_parsing(raw: bytes, expected: Backoff | None) -> None:
    assert backoff_from_bytes(raw, now=NOW) == expected


def test_backoff_file_round_trips_owner_only(tmp_path: Path) -> None:
    state = backoff_after_429(None, now=NOW)
    assert write_backoff(str(tmp_path), state) is True
    path = tmp_path / "status-cache" / "usage-poll.backoff"
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_backoff(str(tmp_path), uid=None, now=NOW) == state
    assert [p.name for p in (tmp_path / "status-cache").iterdir()] == ["usage-poll.backoff"]


def test_a_backoff_file_the_gate_refuses_counts_as_none(tmp_path: Path) -> None:
    state = backoff_after_429(None, now=NOW)
    write_backoff(str(tmp_path), state)
    path = tmp_path / "status-cache" / "usage-poll.backoff"
    os.chmod(path, 0o644)
    assert read_backoff(str(tmp_path), uid=None, now=NOW) is None
    os.chmod(path, 0o600)
    assert read_backoff(str(tmp_path), uid=os.getuid() + 1, now=NOW) is None


def test_an_unwritable_backoff_file_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "status-cache").write_text("a file where the dir should be")
    assert write_backoff(str(tmp_path), backoff_after_429(None, now=NOW)) is False


# ---- Retry-After (from test_poll_freshness) -------------------------------------------------


def http_date(epoch: float) -> str:
    return email.utils.formatdate(epoch, usegmt=True)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, None),
        ("1200", 1200.0),
        (" 60 ", 60.0),
        ("0", None),
        ("-5", None),
        ("1.5", None),
        ("junk", None),
        ("", None),
        ("9" * 17, None),
        ("٣٠٠", None),  # digits, but not ASCII ones
        (http_date(NOW + 900), 900.0),
        (http_date(NOW - 900), None),
        ("Mon, 99 Foo 2026 99:99:99 GMT", None),
        ("x" * 65, None),
    ],
)
def test_retry_after_seconds(header: str | None, seconds: float | None) -> None:
    assert retry_after_seconds(header, now=NOW) == seconds


@pytest.mark.parametrize(
    ("previous", "retry_after", "wait"),
    [
        (None, None, BACKOFF_FIRST_S),
        (None, 120.0, BACKOFF_FIRST_S),  # shorter than the backoff: the backoff stands
        (None, 1200.0, 1200.0),
        (None, 7200.0, 3600.0),  # capped at the spec's hour
        (Backoff(until=NOW, wait=600.0), 900.0, 1200.0),  # doubling already asks for more
        (Backoff(until=NOW, wait=600.0), 3000.0, 3000.0),
        (Backoff(until=NOW, wait=3600.0), 3000.0, 3600.0),
    ],
)
def test_backoff_after_429_honours_a_longer_retry_after(
    previous: Backoff | None, retry_after: float | None, wait: float
) -> None:
    state = backoff_after_429(previous, now=NOW, retry_after=retry_after)
    assert (state.wait, state.until) == (wait, NOW + wait)


def test_the_backoff_file_makes_its_missing_dirs_private(tmp_path: Path) -> None:
    # The usage files' helper: a missing config dir and status-cache are made 0700 (under a
    # permissive umask too), as write_reading makes them.
    other = tmp_path / "other"
    old = os.umask(0o022)
    try:
        assert write_backoff(str(other), Backoff(until=NOW + 60, wait=60))
    finally:
        os.umask(old)
    for made in (other, other / "status-cache"):
        assert made.stat().st_mode & 0o777 == 0o700, made
