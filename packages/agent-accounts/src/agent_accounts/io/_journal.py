"""The refresh journal on disk: `.oauth_refresh.journal` in the config dir, capped and append-only.

Lines are whole JSON objects (`agent_accounts._journal`), appended with one `write` on an
`O_APPEND` descriptor, so concurrent refreshers interleave whole lines. Past
`JOURNAL_MAX_BYTES` the file is renamed to `.oauth_refresh.journal.1` (replacing the older
one) and a new one is started: a crash at any point leaves the old file or the rotated pair,
never a temp file. Nothing here ever raises into a refresh: a journal that cannot be written
(full disk, read-only mount, a planted file) is skipped and the refresh goes on unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from agent_accounts._journal import (
    JournalEntry,
    JournalEvent,
    LoginMarks,
    generation,
    journal_line,
    parse_journal_line,
    plain_process_name,
)
from agent_accounts._login_rules import CREDENTIALS_BLOCK
from agent_accounts._oauth import TokenAnswer

from ._credentials import read_credentials_raw
from ._gate import GateRefused, read_gated, zero
from ._linelog import append_line_data, read_line_data, rotated_name
from ._lock_dirs import pid_is_gone
from ._refresh_results import (
    RefreshFailed,
    RefreshRefreshed,
    RefreshRefreshedElsewhere,
    RefreshResult,
)

__all__ = [
    "JOURNAL_MAX_BYTES",
    "JOURNAL_NAME",
    "ROTATED_NAME",
    "RefreshNotes",
    "alive_pids",
    "append_entries",
    "install_intent",
    "journal_refusal",
    "marks_of",
    "observe",
    "parse_credentials_marks",
    "process_name",
    "read_journal",
    "record_install",
    "record_refresh",
    "record_spend",
]

JOURNAL_NAME: Final = ".oauth_refresh.journal"
ROTATED_NAME: Final = rotated_name(JOURNAL_NAME)
JOURNAL_MAX_BYTES: Final = 64 * 1024
_READ_MAX: Final = 2 * JOURNAL_MAX_BYTES  # another writer's lines may push it past the cap

_process_name: str | None = None


def process_name() -> str:
    """Return this process's name (the kernel's `comm`), plain characters only; cached."""
    global _process_name
    if _process_name is None:
        name = None
        with (
            contextlib.suppress(OSError, UnicodeDecodeError),
            open("/proc/self/comm", "rb") as handle,
        ):
            name = plain_process_name(handle.read(64).decode("ascii").strip())
        _process_name = name or "python"
    return _process_name


def marks_of(document: object) -> LoginMarks | None:
    """Return the generations of a parsed credentials document's tokens (None: no OAuth block)."""
    if not isinstance(document, dict):
        return None
    block = document.get(CREDENTIALS_BLOCK)
    if not isinstance(block, dict):
        return None
    refresh, access = block.get("refreshToken"), block.get("accessToken")
    return LoginMarks(
        gen=generation(refresh) if isinstance(refresh, str) and refresh else None,
        acc=generation(access) if isinstance(access, str) and access else None,
    )


def append_entries(config_dir: str, uid: int, entries: Sequence[JournalEntry]) -> None:
    """Append entries as whole lines in one write; never raises (it never fails a refresh)."""
    if not entries:
        return
    with contextlib.suppress(Exception):
        data = b"".join(journal_line(e) for e in entries)
        append_line_data(config_dir, JOURNAL_NAME, data, uid=uid, max_bytes=JOURNAL_MAX_BYTES)


def _lines(path: str, uid: int) -> list[JournalEntry]:
    try:
        lines = read_line_data(path, uid=uid, max_bytes=_READ_MAX)
    except OSError:
        return []
    return [e for line in lines if (e := parse_journal_line(line))]


def journal_refusal(config_dir: str, *, uid: int | None = None) -> str | None:
    """Return `<file>: <gate reason>` for a journal file the gate refuses (never read nor
    written: a symlink, a FIFO, another owner's or a group-readable file); None when none is."""
    owner = os.getuid() if uid is None else uid
    for name in (JOURNAL_NAME, ROTATED_NAME):
        try:
            raw = read_gated(
                os.path.join(config_dir, name), uid=owner, max_bytes=_READ_MAX, strict=True
            )
        except GateRefused as refused:
            return f"{name}: {refused.reason}"
        except OSError:
            continue
        zero(raw)
    return None


def read_journal(config_dir: str, *, uid: int | None = None) -> list[JournalEntry]:
    """Return the journal's valid entries, the rotated file's first; never raises."""
    owner = os.getuid() if uid is None else uid
    try:
        return [
            *_lines(os.path.join(config_dir, ROTATED_NAME), owner),
            *_lines(os.path.join(config_dir, JOURNAL_NAME), owner),
        ]
    except Exception:
        return []


def _in_flight(entries: Sequence[JournalEntry], index: int) -> bool:
    """Tell whether the spend at `index` is a live process's that has recorded no outcome yet."""
    spend = entries[index]
    if any(
        e.pid == spend.pid and e.event in ("refreshed", "failed", "elsewhere")
        for e in entries[index + 1 :]
    ):
        return False
    return not pid_is_gone(spend.pid)


def install_intent(
    entries: Sequence[JournalEntry], seen: LoginMarks, after: int = -1
) -> JournalEntry | None:
    """Return the `install` line after index `after` that names `seen` as the login it was
    installing, with no outcome of its process after it: this library's own install, whose
    process died (or still runs) before it recorded the outcome."""
    for index in range(len(entries) - 1, after, -1):
        entry = entries[index]
        if entry.event != "install" or (entry.got, entry.acc) != (seen.gen, seen.acc):
            continue
        if not any(
            e.pid == entry.pid and e.event in ("refreshed", "failed", "elsewhere")
            for e in entries[index + 1 :]
        ):
            return entry
    return None


def _last_known(entries: Sequence[JournalEntry]) -> tuple[int, LoginMarks | None] | None:
    """Return the index of the last entry that says what the file held, and that login."""
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry.event == "gone":
            return index, None
        marks = entry.marks()
        if marks is not None:
            return index, marks
    return None


def observe(
    entries: Sequence[JournalEntry], seen: LoginMarks | None, *, t: float
) -> JournalEntry | None:
    """Compare the login the file holds with the last one the journal knows; return a record.

    A first sight is `seen`; a login the journal did not record is `changed` (or `gone` when the
    file holds none). A change while a live refresher's spend has no outcome yet is that
    refresher's own, which it records itself: nothing is returned then.
    """
    pid, proc = os.getpid(), process_name()
    last = _last_known(entries)
    if last is None:
        if seen is None:
            return None
        return JournalEntry(t=t, pid=pid, proc=proc, event="seen", gen=seen.gen, acc=seen.acc)
    index, known = last
    if known == seen:
        return None
    if seen is not None and install_intent(entries, seen, index) is not None:
        return None  # installed here by a refresher that died before its outcome line
    if entries[index].event == "spend" and _in_flight(entries, index):
        return None
    prev = known.gen if known is not None else None
    if seen is None:
        return JournalEntry(t=t, pid=pid, proc=proc, event="gone", prev=prev)
    return JournalEntry(
        t=t, pid=pid, proc=proc, event="changed", gen=seen.gen, acc=seen.acc, prev=prev
    )


@dataclass(slots=True)
class RefreshNotes:
    """What one refresh tells its journal, filled in as it goes (generations only, no token).

    `answer` is only kept (no digest is taken) between the token answer and the synced temp
    file: that stretch is the window a crash cannot close, and the journal adds nothing to it.
    """

    gen: str | None = None
    acc: str | None = None
    answer: TokenAnswer | None = None
    rolled: bool = False


def record_spend(config_dir: str, uid: int, notes: RefreshNotes) -> None:
    """Append the line saying this process is about to spend `notes.gen`; never raises."""
    with contextlib.suppress(Exception):
        entry = JournalEntry(
            t=round(time.time(), 3),
            pid=os.getpid(),
            proc=process_name(),
            event="spend",
            gen=notes.gen,
            acc=notes.acc,
        )
        append_entries(config_dir, uid, [entry])


def _installed(notes: RefreshNotes, event: JournalEvent, t: float) -> JournalEntry | None:
    """The line naming the login an answer makes (`install` before, `refreshed` after)."""
    answer = notes.answer
    if answer is None:
        return None
    # Not rotated: the file keeps the spent token. Rotated to nothing usable: it keeps none.
    got = notes.gen if answer.refresh is None else generation(answer.refresh)
    if answer.drop_refresh:
        got = None
    return JournalEntry(
        t=t,
        pid=os.getpid(),
        proc=process_name(),
        event=event,
        gen=notes.gen,
        got=got,
        acc=generation(answer.access),
        rolled=notes.rolled,
    )


def record_install(config_dir: str, uid: int, notes: RefreshNotes) -> None:
    """Append the intent line: the answer is synced in the temp file and about to be installed.

    It names the new login before the exchange, so a crash at any later point leaves a journal
    that tells this library's own install from a change made elsewhere. Never raises.
    """
    with contextlib.suppress(Exception):
        entry = _installed(notes, "install", round(time.time(), 3))
        if entry is not None:
            append_entries(config_dir, uid, [entry])


def _outcome(notes: RefreshNotes, result: RefreshResult, t: float) -> JournalEntry | None:
    pid, proc = os.getpid(), process_name()
    if isinstance(result, RefreshRefreshed):
        return _installed(notes, "refreshed", t)
    if isinstance(result, RefreshRefreshedElsewhere):
        return JournalEntry(t=t, pid=pid, proc=proc, event="elsewhere", gen=notes.gen)
    if isinstance(result, RefreshFailed):
        return JournalEntry(
            t=t,
            pid=pid,
            proc=proc,
            event="failed",
            gen=notes.gen,
            failure=result.kind,
            http_status=result.http_status,
        )
    return None  # fresh, locked, skipped: nothing happened to the login


def _repeats(entries: Sequence[JournalEntry], entry: JournalEntry) -> bool:
    """Tell whether `entry` is a failure the journal's last line already says (every tick)."""
    if entry.event != "failed" or not entries:
        return False
    last = entries[-1]
    return (last.event, last.gen, last.failure, last.http_status) == (
        "failed",
        entry.gen,
        entry.failure,
        entry.http_status,
    )


def record_refresh(config_dir: str, uid: int, notes: RefreshNotes, result: RefreshResult) -> None:
    """After a refresh (locks released): append its outcome and any change made elsewhere.

    The journal is read before the credentials file, so a change another refresher of this
    library made is either in the journal already or belongs to its spend in flight. Never
    raises: a journal that cannot be read or written changes nothing about the refresh.
    """
    with contextlib.suppress(Exception):
        t = round(time.time(), 3)
        entries = read_journal(config_dir, uid=uid)
        new: list[JournalEntry] = []
        outcome = _outcome(notes, result, t)
        if outcome is not None and not _repeats(entries, outcome):
            new.append(outcome)
        try:
            raw = read_credentials_raw(config_dir, uid=uid)
        except (GateRefused, OSError):
            raw, readable = None, False
        else:
            readable = True
        if readable:
            try:
                seen = None if raw is None else parse_credentials_marks(raw)
            finally:
                zero(raw)
            known = [*entries, *([outcome] if outcome is not None else [])]
            observed = observe(known, seen, t=t)
            if observed is not None:
                new.append(observed)
        append_entries(config_dir, uid, new)


def alive_pids(entries: Iterable[JournalEntry]) -> list[int]:
    """Return the journal's pids that still run."""
    return sorted({e.pid for e in entries if not pid_is_gone(e.pid)})


def parse_credentials_marks(raw: bytes | bytearray) -> LoginMarks | None:
    """Return the marks of raw credentials bytes (None when they are no JSON object)."""
    try:
        return marks_of(json.loads(raw))
    except (ValueError, RecursionError):
        return None
