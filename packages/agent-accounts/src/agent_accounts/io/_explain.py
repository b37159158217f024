"""`account-cli explain`: a profile's refresh journal and its credentials file as they are now.

Reads only (the journal, the rotated journal and the credentials file, each through the gate,
and a dead refresher's temp file holding a whole answer for the login the file holds) and hands
the pure `explain_journal` what it needs; the pids still running and a journal the gate refuses
are looked up here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from agent_accounts._journal import Explanation, JournalEntry, LoginMarks, explain_journal
from agent_accounts._oauth import refresh_token_of

from ._credentials import read_credentials_raw
from ._gate import GateRefused, zero
from ._install import answer_on_disk
from ._journal import alive_pids, journal_refusal, marks_of, read_journal
from ._layout import LayoutError, parse_json_object

__all__ = ["ProfileExplanation", "explain_profile"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileExplanation:
    """One profile's journal entries, the login its file holds now, and what they tell."""

    entries: tuple[JournalEntry, ...]
    current: LoginMarks | Literal["unreadable"] | None
    explanation: Explanation


def _current(config_dir: str, uid: int) -> tuple[LoginMarks | Literal["unreadable"] | None, bool]:
    """The login the file holds now, and whether a dead refresher's answer for it is on disk."""
    try:
        raw = read_credentials_raw(config_dir, uid=uid)
    except (GateRefused, OSError):
        return "unreadable", False
    if raw is None:
        return None, False
    try:
        document = parse_json_object(raw)
    except LayoutError:
        return "unreadable", False
    finally:
        zero(raw)
    marks = marks_of(document)
    if marks is None:
        return "unreadable", False
    spent = refresh_token_of(document)
    waiting = spent is not None and answer_on_disk(config_dir, uid, spent)
    return marks, waiting


def explain_profile(config_dir: str, *, uid: int | None = None) -> ProfileExplanation:
    """Read a profile's journal and credentials (never writing) and explain its login."""
    owner = os.getuid() if uid is None else uid
    entries = read_journal(config_dir, uid=owner)
    current, waiting = _current(config_dir, owner)
    pending = (current.gen,) if waiting and isinstance(current, LoginMarks) and current.gen else ()
    explanation = explain_journal(
        entries,
        current=current,
        alive=alive_pids(entries),
        pending=pending,
        refused=journal_refusal(config_dir, uid=owner),
    )
    return ProfileExplanation(entries=tuple(entries), current=current, explanation=explanation)
