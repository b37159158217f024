"""`account-cli explain`: a profile's refresh journal and its credentials file as they are now.

Reads only (the journal, the rotated journal and the credentials file, each through the gate)
and hands the pure `explain_journal` what it needs; the pids still running are looked up here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from agent_accounts._journal import Explanation, JournalEntry, LoginMarks, explain_journal

from ._credentials import CREDENTIALS_FILE, CREDENTIALS_MAX_BYTES
from ._gate import GateRefused, read_gated, zero
from ._journal import alive_pids, parse_credentials_marks, read_journal

__all__ = ["ProfileExplanation", "explain_profile"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileExplanation:
    """One profile's journal entries, the login its file holds now, and what they tell."""

    entries: tuple[JournalEntry, ...]
    current: LoginMarks | Literal["unreadable"] | None
    explanation: Explanation


def _current(config_dir: str, uid: int) -> LoginMarks | Literal["unreadable"] | None:
    try:
        raw = read_gated(
            os.path.join(config_dir, CREDENTIALS_FILE),
            uid=uid,
            max_bytes=CREDENTIALS_MAX_BYTES,
            strict=True,
        )
    except (GateRefused, OSError):
        return "unreadable"
    if raw is None:
        return None
    try:
        marks = parse_credentials_marks(raw)
    finally:
        zero(raw)
    return marks if marks is not None else "unreadable"


def explain_profile(config_dir: str, *, uid: int | None = None) -> ProfileExplanation:
    """Read a profile's journal and credentials (never writing) and explain its login."""
    owner = os.getuid() if uid is None else uid
    entries = read_journal(config_dir, uid=owner)
    current = _current(config_dir, owner)
    explanation = explain_journal(entries, current=current, alive=alive_pids(entries))
    return ProfileExplanation(entries=tuple(entries), current=current, explanation=explanation)
