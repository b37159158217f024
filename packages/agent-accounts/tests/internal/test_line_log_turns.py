"""White-box: appenders to a line log take turns, so one never reads another's write still under
way as a line cut short (that left an empty line: test_history's kill -9 appenders saw it under
load, a write spanning pages growing the file's size page by page)."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_accounts.io import _linelog

HALF = b'{"n":1,"half":"writ'
REST = b'ten"}\n'
NEW = b'{"n":2}\n'


def test_an_append_waits_for_a_write_under_way_and_starts_no_empty_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(HALF)  # another appender's line, half written: its size mid-write
    log.chmod(0o600)
    holder = os.open(log, os.O_WRONLY | os.O_APPEND)
    fcntl.flock(holder, fcntl.LOCK_EX)  # ... and that appender holds its turn
    asked = threading.Event()
    real_flock = fcntl.flock

    def flock(fd: Any, operation: int) -> None:
        if fd != holder:
            asked.set()
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    monkeypatch.setattr(_linelog, "_TURN_TRIES", 10**6)  # however slow this test thread is
    appended: list[bool] = []
    appender = threading.Thread(
        target=lambda: appended.append(
            _linelog.append_line_data(
                str(tmp_path), log.name, NEW, uid=os.getuid(), max_bytes=1 << 20
            )
        )
    )
    appender.start()
    try:
        assert asked.wait(30), "the appender never asked for its turn"
        os.write(holder, REST)  # the other appender's write completes ...
    finally:
        os.close(holder)  # ... and its turn ends
        appender.join(30)
    assert appended == [True]
    assert log.read_bytes() == HALF + REST + NEW  # no empty line, no line split


def test_a_line_cut_short_still_gets_its_own_line_after_it(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(HALF)  # cut short by a full disk: nobody holds a turn
    log.chmod(0o600)
    assert _linelog.append_line_data(str(tmp_path), log.name, NEW, uid=os.getuid(), max_bytes=4096)
    assert log.read_bytes() == HALF + b"\n" + NEW
