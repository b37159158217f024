"""The journal's own rules, below `account-cli explain`: a line's shape and what a hostile one
becomes (`_journal.journal_line`, `parse_journal_line`), the story told from lines
(`explain_journal`), and the file's cap and rotation (`io._journal`). White-box: test_journal.py
runs refreshes and `explain` as users do."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounts_refresh_support import CANARY, canary_token
from agent_accounts._journal import (
    JournalEntry,
    LoginMarks,
    explain_journal,
    generation,
    journal_line,
    parse_journal_line,
)
from agent_accounts.io._journal import (
    JOURNAL_MAX_BYTES,
    JOURNAL_NAME,
    ROTATED_NAME,
    append_entries,
    read_journal,
)

BOUNDED = settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=os.environ.get("CI") == "true",
)


def _no_control(text: str) -> None:
    assert all(ch == "\n" or 32 <= ord(ch) < 127 for ch in text), repr(text)


# --- the pure core ------------------------------------------------------------------------------


def test_a_generation_is_8_hex_digits_of_the_tokens_sha256() -> None:
    token = canary_token("ort")
    assert generation(token) == hashlib.sha256(token.encode()).hexdigest()[:8]
    assert CANARY not in generation(token)


def test_a_line_is_whole_ascii_json_and_reads_back_equal() -> None:
    entry = JournalEntry(
        t=1_767_225_600.5,
        pid=4242,
        proc="account-cli",
        event="failed",
        gen="a1b2c3d4",
        failure="http",
        http_status=400,
    )
    line = journal_line(entry)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert parse_journal_line(line.rstrip(b"\n")) == entry


hostile_values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\x1b[31m", "\x1b]0;pwned\x07", "a1b2c3d4", "A1B2C3D4", "spend", "http"]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
)
hostile_docs = st.dictionaries(
    st.sampled_from(
        ["t", "pid", "proc", "event", "gen", "got", "acc", "prev", "failure", "status", "rolled"]
    ),
    hostile_values,
)


@BOUNDED
@given(st.one_of(hostile_docs.map(lambda d: json.dumps(d).encode()), st.binary(max_size=600)))
def test_a_hostile_line_never_raises_and_nothing_unplain_gets_through(line: bytes) -> None:
    entry = parse_journal_line(line)
    if entry is None:
        return
    _no_control(json.dumps(entry.to_json()))
    for value in (entry.proc, entry.gen, entry.got, entry.acc, entry.prev, entry.failure):
        assert value is None or (value.isascii() and value.isprintable())
    story = explain_journal([entry], current=LoginMarks(gen="a1b2c3d4", acc=None))
    for text in (story.summary, *story.story):
        _no_control(text)


@pytest.mark.parametrize(
    "line",
    [
        b"[" * 100_000,
        b'{"t": 1767225600, "pid": 1, "event": "spend", "gen": "' + b"a" * 600 + b'"}',
        b'{"t": "1767225600", "pid": 1, "event": "spend", "gen": "a1b2c3d4"}',
        b'{"t": 1767225600, "pid": true, "event": "spend", "gen": "a1b2c3d4"}',
        b'{"t": 1e400, "pid": 1, "event": "spend", "gen": "a1b2c3d4"}',
        b'{"t": 1767225600, "pid": 1, "event": "spend", "gen": "a1b2c3d"}',
        b'{"t": 1767225600, "pid": 1, "event": "failed", "gen": "a1b2c3d4", "failure": "oops"}',
        b"\xff\xfe{}",
    ],
)
def test_lines_of_the_wrong_shape_are_dropped(line: bytes) -> None:
    assert parse_journal_line(line) is None


def test_a_process_name_that_is_not_plain_is_not_shown() -> None:
    line = b'{"t":1767225600,"pid":7,"proc":"\\u001b[2Jevil","event":"spend","gen":"a1b2c3d4"}'
    entry = parse_journal_line(line)
    assert entry is not None
    assert entry.proc == "a process"


def _at(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def test_a_staged_logout_is_told_in_plain_words() -> None:
    t0 = 1_767_225_600.0
    entries = [
        JournalEntry(t=t0, pid=4242, proc="account-cli", event="spend", gen="a1b2c3d4", acc="1"),
        JournalEntry(t=t0 + 60, pid=4243, proc="account-cli", event="spend", gen="a1b2c3d4"),
        JournalEntry(
            t=t0 + 61,
            pid=4243,
            proc="account-cli",
            event="failed",
            gen="a1b2c3d4",
            failure="http",
            http_status=400,
        ),
    ]
    told = explain_journal(entries, current=LoginMarks(gen="a1b2c3d4", acc=None), alive=[])
    assert told.verdict == "logged-out"
    assert told.summary == (
        f"Logged out: generation a1b2c3d4 was spent by account-cli pid 4242 at {_at(t0)} and its "
        f"answer never reached the file; at {_at(t0 + 61)} the file still held a1b2c3d4 and the "
        "token endpoint answered invalid_grant (HTTP 400). Log in again."
    )
    assert "It recorded no answer: the process ended" in told.story[0]
    assert "the file still held generation a1b2c3d4" in told.story[2]
    # The same, but the first spender still runs: no claim that it ended.
    alive = explain_journal(entries, current=LoginMarks(gen="a1b2c3d4", acc=None), alive=[4242])
    assert "still running" in alive.story[0]


@pytest.mark.parametrize(
    ("current", "verdict"),
    [
        (LoginMarks(gen="e5f6a7b8", acc="2"), "intact"),
        (LoginMarks(gen="99999999", acc="3"), "changed-elsewhere"),
        (None, "no-login"),
        ("unreadable", "unknown"),
    ],
)
def test_the_verdict_follows_the_file_as_it_is_now(current: Any, verdict: str) -> None:
    t0 = 1_767_225_600.0
    entries = [
        JournalEntry(t=t0, pid=1, proc="x", event="spend", gen="a1b2c3d4", acc="1"),
        JournalEntry(
            t=t0 + 1, pid=1, proc="x", event="refreshed", gen="a1b2c3d4", got="e5f6a7b8", acc="2"
        ),
    ]
    assert explain_journal(entries, current=current).verdict == verdict
    assert explain_journal([], current=LoginMarks(gen="a", acc=None)).verdict == "unknown"


# --- the cap ------------------------------------------------------------------------------------


def test_the_journal_is_capped_by_rotation_and_keeps_whole_lines(tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    config.mkdir(mode=0o700)
    entry = JournalEntry(t=1_767_225_600.0, pid=1, proc="x", event="spend", gen="a1b2c3d4")
    size = len(journal_line(entry))
    for _ in range(3 * JOURNAL_MAX_BYTES // size + 10):
        append_entries(str(config), os.getuid(), [entry])
    current = (config / JOURNAL_NAME).stat().st_size
    rotated = (config / ROTATED_NAME).stat().st_size
    assert 0 < current <= JOURNAL_MAX_BYTES
    assert JOURNAL_MAX_BYTES - size < rotated <= JOURNAL_MAX_BYTES
    assert {os.listdir(config).count(n) for n in (JOURNAL_NAME, ROTATED_NAME)} == {1}
    assert len(os.listdir(config)) == 2  # no temp file, ever
    assert len(read_journal(str(config))) == (current + rotated) // size


def test_a_line_cut_short_stays_one_bad_line(tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    config.mkdir(mode=0o700)
    (config / JOURNAL_NAME).write_bytes(b'{"t":1767225600,"pid":1,"proc":"x","ev')
    (config / JOURNAL_NAME).chmod(0o600)
    entry = JournalEntry(t=1_767_225_601.0, pid=2, proc="x", event="spend", gen="a1b2c3d4")
    append_entries(str(config), os.getuid(), [entry])
    assert read_journal(str(config)) == [entry]


def test_an_install_with_no_outcome_is_told_as_refreshed_here() -> None:
    dead = 2**31 - 1  # no such pid is alive (the caller says which are)
    spend = JournalEntry(
        t=1_767_225_600, pid=dead, proc="account-cli", event="spend", gen="aaaa0000"
    )
    intent = JournalEntry(
        t=1_767_225_601,
        pid=dead,
        proc="account-cli",
        event="install",
        gen="aaaa0000",
        got="bbbb1111",
        acc="cccc2222",
    )
    installed = LoginMarks(gen="bbbb1111", acc="cccc2222")
    told = explain_journal([spend, intent], current=installed)
    assert told.verdict == "intact"
    assert "generation bbbb1111 was refreshed here by account-cli pid" in told.summary
    assert "the process died before recording the outcome" in told.summary
    # Killed before the exchange: the answer waits in the temp file for the next run.
    before = LoginMarks(gen="aaaa0000", acc="dddd3333")
    told = explain_journal([spend, intent], current=before)
    assert told.verdict == "intact"
    assert "its answer is on disk in a temp file" in told.summary
    assert "The process died after its answer was on disk." in told.story[0]
    # Killed after the spend, nothing on disk: said as it is, never blamed on another program.
    told = explain_journal([spend], current=before)
    assert told.verdict == "unknown"
    assert "died before its answer was on disk" in told.summary
    told = explain_journal([spend], current=before, pending=["aaaa0000"])
    assert told.verdict == "intact"
