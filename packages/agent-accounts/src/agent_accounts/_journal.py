"""The refresh journal's lines and what they tell: pure, values in, values out.

Every refresh appends one token-free line to `.oauth_refresh.journal` in the config dir (see
`agent_accounts.io._journal`), and a change of the credentials file that this library did not
make is recorded when it is next seen. A line names a login by its *generation*: the first 8 hex
digits of the SHA-256 of its refresh token (the refused-token file keeps 32 of the same digest).
32 bits of a digest of a token with hundreds of random bits cannot give the token back: each
fingerprint has astronomically many preimages among possible tokens, and confirming a guess
needs the token itself. They only tell two generations apart, which is all the journal needs.

Lines are read back as untrusted input: `parse_journal_line` never raises, and keeps only
fields of a fixed shape (hex fingerprints, an int pid, a short plain process name, a finite
time, known event and failure names), so nothing a hostile line holds reaches the story, the
JSON or a terminal.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, get_args

from ._oauth import token_fingerprint

__all__ = [
    "GENERATION_HEX",
    "JOURNAL_LINE_MAX_BYTES",
    "Explanation",
    "JournalEntry",
    "JournalEvent",
    "LoginMarks",
    "RefreshFailure",
    "Verdict",
    "explain_journal",
    "generation",
    "journal_line",
    "parse_journal_line",
    "plain_process_name",
]

GENERATION_HEX: Final = 8
JOURNAL_LINE_MAX_BYTES: Final = 512

JournalEvent: TypeAlias = Literal[
    "seen", "spend", "install", "refreshed", "elsewhere", "failed", "changed", "gone"
]
_EVENTS: Final[frozenset[str]] = frozenset(get_args(JournalEvent))
RefreshFailure: TypeAlias = Literal[
    "login-required",
    "unrecognized-format",
    "write-conflict",
    "write-failed",
    "http",
    "network",
    "malformed",
    "io",
]
"""A failed refresh's kind, as its journal line names it; an HTTP status rides beside it."""
_OUTCOMES: Final = frozenset({"refreshed", "failed", "elsewhere"})
_FAILURES: Final[frozenset[str]] = frozenset(get_args(RefreshFailure))
_HEX: Final = frozenset("0123456789abcdef")
_PROC_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_PROC_MAX: Final = 32
_T_MIN: Final = 1e9  # 2001: a line from before is no line of this library
_T_MAX: Final = 1e11


def generation(token: str) -> str:
    """Name a login by its refresh token: 8 hex digits of its SHA-256, never the token."""
    return token_fingerprint(token)[:GENERATION_HEX]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoginMarks:
    """A login as the journal knows it: the generations of its refresh and access tokens."""

    gen: str | None
    acc: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalEntry:
    """One journal line, validated: every field is of a fixed, printable shape.

    `gen` is the generation the line is about (the file's refresh token when it was read);
    `got` the one a refresh received (an `install` line names it before the file is replaced);
    `acc` the access token's (the file's after the event); `prev` the generation a change
    replaced. `rolled` marks an answer installed from a dead refresher's temp file.
    """

    t: float
    pid: int
    proc: str
    event: JournalEvent
    gen: str | None = None
    got: str | None = None
    acc: str | None = None
    prev: str | None = None
    failure: str | None = None
    http_status: int | None = None
    rolled: bool = False

    def marks(self) -> LoginMarks | None:
        """Return the login the file held after this event, when the line says; else None."""
        if self.event in ("seen", "spend", "changed"):
            return LoginMarks(gen=self.gen, acc=self.acc)
        if self.event == "refreshed":
            return LoginMarks(gen=self.got, acc=self.acc)
        return None

    def to_json(self) -> dict[str, object]:
        """Return the line's JSON form (the keys written to the journal)."""
        out: dict[str, object] = {"t": self.t, "pid": self.pid, "proc": self.proc}
        out["event"] = self.event
        for key in ("gen", "got", "acc", "prev", "failure"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.http_status is not None:
            out["status"] = self.http_status
        if self.rolled:
            out["rolled"] = True
        return out


def journal_line(entry: JournalEntry) -> bytes:
    """Serialise one entry as a whole line (compact JSON, ASCII, newline-terminated)."""
    return (json.dumps(entry.to_json(), separators=(",", ":")) + "\n").encode("ascii")


def _hex(value: object) -> str | None:
    if type(value) is str and len(value) == GENERATION_HEX and _HEX.issuperset(value):
        return value
    return None


def _int(value: object, low: int, high: int) -> int | None:
    if type(value) is int and low <= value <= high:
        return value
    return None


def plain_process_name(value: object) -> str | None:
    """Return a process name of plain characters (at most 32), else None."""
    if type(value) is str and 0 < len(value) <= _PROC_MAX and _PROC_CHARS.issuperset(value):
        return value
    return None


def _entry(doc: Mapping[str, object]) -> JournalEntry | None:
    event = doc.get("event")
    t = doc.get("t")
    pid = _int(doc.get("pid"), 1, 2**31)
    if event not in _EVENTS or pid is None:
        return None
    if type(t) not in (int, float) or not _T_MIN <= t <= _T_MAX:  # type: ignore[operator]
        return None
    failure = doc.get("failure")
    rolled = doc.get("rolled", False)
    entry = JournalEntry(
        t=float(t),  # type: ignore[arg-type]
        pid=pid,
        proc=plain_process_name(doc.get("proc")) or "a process",
        event=event,  # type: ignore[arg-type]
        gen=_hex(doc.get("gen")),
        got=_hex(doc.get("got")),
        acc=_hex(doc.get("acc")),
        prev=_hex(doc.get("prev")),
        failure=failure if failure in _FAILURES else None,
        http_status=_int(doc.get("status"), 100, 599),
        rolled=rolled is True,
    )
    if entry.event in ("spend", "install", "refreshed") and entry.gen is None:
        return None
    if entry.event == "failed" and entry.failure is None:
        return None
    return entry


def parse_journal_line(line: bytes | str) -> JournalEntry | None:
    """Return the validated entry a journal line holds, or None for anything else; never raises."""
    try:
        if len(line) > JOURNAL_LINE_MAX_BYTES:
            return None
        text = line.decode("utf-8") if isinstance(line, bytes) else line
        doc = json.loads(text)
        return _entry(doc) if isinstance(doc, dict) else None
    except Exception:  # malformed, too deep, or any other hostile shape
        return None


# ---- the story ----------------------------------------------------------------------------------

Verdict: TypeAlias = Literal["logged-out", "intact", "changed-elsewhere", "no-login", "unknown"]
_REFUSED: Final = frozenset({400, 401})
_FAILURE_WORDS: Final = {
    "login-required": "did not send it again: the token endpoint had refused it before",
    "unrecognized-format": "left the file alone: its layout could not be reproduced",
    "write-conflict": "could not write its answer: another writer kept changing the file",
    "write-failed": "got an answer it could not write: that new login is lost",
    "network": "got no answer from the token endpoint (it may have spent the token)",
    "malformed": "got an answer without a usable access token",
    "io": "hit a file error",
    "http": "got an HTTP error from the token endpoint",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    """What happened to a login: a verdict, a one-sentence summary and the story, in order."""

    verdict: Verdict
    summary: str
    story: tuple[str, ...]


def _at(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _who(entry: JournalEntry) -> str:
    return f"{entry.proc} pid {entry.pid}"


def _answered(entries: Sequence[JournalEntry], index: int) -> bool:
    """Tell whether the process of the line at `index` recorded an outcome after it."""
    line = entries[index]
    return any(e.pid == line.pid and e.event in _OUTCOMES for e in entries[index + 1 :])


def _intent_after(entries: Sequence[JournalEntry], index: int) -> JournalEntry | None:
    """The `install` line the process of the spend at `index` wrote after it, if any."""
    spend = entries[index]
    for e in entries[index + 1 :]:
        if e.pid == spend.pid and e.event in _OUTCOMES:
            return None
        if e.pid == spend.pid and e.event == "install" and e.gen == spend.gen:
            return e
    return None


def _sentence(
    entries: Sequence[JournalEntry], index: int, alive: frozenset[int], pending: frozenset[str]
) -> str:
    e = entries[index]
    at, who = _at(e.t), _who(e)
    if e.event == "seen":
        return f"{at}: first seen: the file held generation {e.gen}."
    if e.event == "spend":
        text = f"{at}: generation {e.gen} was spent by {who} (sent to the token endpoint)."
        if not _answered(entries, index):
            if e.pid in alive:
                return text + " It has recorded no answer yet (the process is still running)."
            if _intent_after(entries, index) is not None:
                return text + " The process died after its answer was on disk."
            if e.gen in pending:
                return text + (
                    " The process died after its answer was on disk (in a temp file, which the"
                    " next refresh installs without a request)."
                )
            return text + " It recorded no answer: the process ended before its answer was on disk."
        return text
    if e.event == "install":
        text = (
            f"{at}: {who} had generation {e.got} for {e.gen} synced in a temp file and began "
            "installing it."
        )
        if _answered(entries, index):
            return text
        if e.pid in alive:
            return text + " It has recorded no outcome yet (the process is still running)."
        return text + " The process died before recording the outcome."
    if e.event == "refreshed":
        if e.rolled:
            return (
                f"{at}: {who} found on disk the answer a killed refresher got for generation "
                f"{e.gen} and installed generation {e.got} without a request."
            )
        if e.got == e.gen:
            return f"{at}: {who} got a new access token for generation {e.gen} (not rotated)."
        return f"{at}: {who} got generation {e.got} for {e.gen} and wrote it to the file."
    if e.event == "elsewhere":
        return f"{at}: {who} left the file alone: another writer had changed it meanwhile."
    if e.event == "failed":
        if e.failure == "http" and e.http_status in _REFUSED:
            spent_before = any(
                x.event == "spend" and x.gen == e.gen and x.pid != e.pid for x in entries[:index]
            )
            held = "still held" if spent_before else "held"
            return (
                f"{at}: the file {held} generation {e.gen}; {who} sent it and the token "
                f"endpoint refused it (HTTP {e.http_status}, invalid_grant)."
            )
        if e.failure == "http":
            return (
                f"{at}: {who} sent generation {e.gen}: the token endpoint answered "
                f"HTTP {e.http_status}."
            )
        words = _FAILURE_WORDS.get(e.failure or "", "failed")
        which = f"generation {e.gen}" if e.gen is not None else "the login"
        return f"{at}: {who} tried {which} and {words}."
    if e.event == "changed":
        if e.prev is None:
            return f"{at}: a login appeared, written elsewhere: generation {e.gen}."
        if e.prev == e.gen:
            return (
                f"{at}: the access token changed elsewhere (not by this library); "
                f"the refresh token is still generation {e.gen}."
            )
        return (
            f"{at}: the file changed elsewhere (not by this library): generation {e.prev} "
            f"was replaced by {e.gen}."
        )
    return f"{at}: the credentials file was removed elsewhere (a logout, or a rewrite)."


def _logged_out(entries: Sequence[JournalEntry], refusal: JournalEntry) -> str:
    spends = [
        e
        for e in entries
        if e.event == "spend" and e.gen == refusal.gen and e.t <= refusal.t and e is not refusal
    ]
    first = next((e for e in spends if e.pid != refusal.pid), None)
    refused = (
        f"at {_at(refusal.t)} the file still held {refusal.gen} and the token endpoint answered "
        f"invalid_grant (HTTP {refusal.http_status})"
    )
    if first is not None:
        return (
            f"Logged out: generation {refusal.gen} was spent by {_who(first)} at {_at(first.t)} "
            f"and its answer never reached the file; {refused}. Log in again."
        )
    return (
        f"Logged out: generation {refusal.gen} was spent where this journal cannot see (another "
        f"program, or the login was revoked); {refused}. Log in again."
    )


def _died_here(
    entries: Sequence[JournalEntry],
    current: LoginMarks,
    alive: frozenset[int],
    pending: frozenset[str],
) -> tuple[Verdict, str] | None:
    """The summary when this library's last refresh of `current` ended without an outcome."""
    for index in range(len(entries) - 1, -1, -1):
        e = entries[index]
        if e.event not in _OUTCOMES and e.event not in ("spend", "install"):
            continue
        if e.event in _OUTCOMES or _answered(entries, index):
            return None  # the last refresh here recorded how it ended
        if e.event == "install" and (e.got, e.acc) == (current.gen, current.acc):
            running = e.pid in alive
            end = (
                "the process is still running and has not recorded the outcome yet"
                if running
                else "the process died before recording the outcome"
            )
            return "intact", (
                f"The login is intact: generation {e.got} was refreshed here by {_who(e)} at "
                f"{_at(e.t)} (replacing {e.gen}); {end}."
            )
        if e.event == "spend" and e.gen == current.gen and e.pid not in alive:
            where = f"by {_who(e)} at {_at(e.t)}"
            if _intent_after(entries, index) is not None or e.gen in pending:
                return "intact", (
                    f"The login is intact: generation {e.gen} was refreshed here {where} and "
                    "its answer is on disk in a temp file; the process died before installing "
                    "it, and the next refresh installs it without a request."
                )
            return "unknown", (
                f"Generation {e.gen} was sent to the token endpoint here {where} and the process "
                "died before its answer was on disk: if the endpoint took it, the next refresh "
                "is refused (log in again then); if the request never left, it succeeds."
            )
        if e.event == "spend":
            return None  # a refresh of another login: what followed is told by the rest
    return None


def explain_journal(
    entries: Iterable[JournalEntry],
    *,
    current: LoginMarks | Literal["unreadable"] | None,
    alive: Iterable[int] = (),
    pending: Iterable[str] = (),
    refused: str | None = None,
) -> Explanation:
    """Tell in plain words what happened to a login, from its journal and the file as it is now.

    `current` is the login the credentials file holds now (None: no file). `alive` lists the
    pids of the journal that are still running, `pending` the generations whose answer a dead
    refresher left whole in a temp file, `refused` the journal file the file gate refuses and
    why (`<file>: <reason>`); the caller looks, the core opens nothing.
    """
    ordered = sorted(entries, key=lambda e: e.t)
    live = frozenset(alive)
    waiting = frozenset(pending)
    story = tuple(_sentence(ordered, i, live, waiting) for i in range(len(ordered)))
    if refused is not None:
        story += (
            f"The journal is refused by the file gate ({refused}): this library neither reads "
            "nor writes it, so what it did since is not recorded.",
        )
    if current is None:
        return Explanation(
            verdict="no-login", summary="No login: there is no credentials file.", story=story
        )
    if not ordered:
        if refused is not None:
            return Explanation(
                verdict="unknown",
                summary=f"The journal cannot be read: the file gate refuses it ({refused}).",
                story=story,
            )
        return Explanation(
            verdict="unknown",
            summary="No journal yet: no refresh through this library has touched this login.",
            story=story,
        )
    known = next((m for e in reversed(ordered) if (m := e.marks()) is not None), None)
    refusal = next(
        (
            e
            for e in reversed(ordered)
            if e.event == "failed" and e.failure == "http" and e.http_status in _REFUSED
        ),
        None,
    )
    if current == "unreadable":
        return Explanation(
            verdict="unknown", summary="The credentials file cannot be read now.", story=story
        )
    if refusal is not None and current.gen == refusal.gen:
        later = [e for e in ordered if e.t > refusal.t and e.marks() is not None]
        if not any(m.gen != refusal.gen for e in later if (m := e.marks()) is not None):
            return Explanation(
                verdict="logged-out", summary=_logged_out(ordered, refusal), story=story
            )
    told = _died_here(ordered, current, live, waiting)
    if told is not None:
        return Explanation(verdict=told[0], summary=told[1], story=story)
    if known is not None and known != current:
        since = _at(ordered[-1].t)
        return Explanation(
            verdict="changed-elsewhere",
            summary=(
                f"The file now holds generation {current.gen}, which this library has not "
                f"recorded: it changed elsewhere after {since}."
            ),
            story=story,
        )
    return Explanation(
        verdict="intact",
        summary=f"The login is intact: the file holds generation {current.gen}, as last recorded.",
        story=story,
    )
