"""Progress of a CI wait on stderr, as `gh pr checks --watch` shows it.

`CiReport` takes each `CiPoll` of a wait (`ci-wait`, each CI wait of `train`). On a terminal it
redraws one table of the checks (a mark, the check, its state) under a heading with the elapsed
time; otherwise it prints one line per change (`ci-wait acme/widgets@0a1b2c3: build in_progress
(12s)`), so a log or a pipe reads as a history. A transient failed read is one line either
way. Nothing is printed for a poll that changed nothing, except the redrawn elapsed time.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

    from .._ci_wait import CiPoll

__all__ = ["CiReport", "elapsed_text"]

# Cursor to the start of the line N lines up, then clear to the end of the screen.
_UP = "\x1b[{}F\x1b[J"


def elapsed_text(seconds: float) -> str:
    """`12s`, `1m05s`, `1h02m`: how long a wait has run."""
    whole = max(0, math.floor(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _split(label: str) -> tuple[str, str]:
    """(check, state) of a verdict label `name=state`; a label without one is all check."""
    name, sep, state = label.rpartition("=")
    return (name, state) if sep and name else (label, "")


class CiReport:
    """Report a CI wait's polls on `stream`: a redrawn table (`tty`) or a line per change."""

    def __init__(self, stream: TextIO, *, tty: bool, command: str) -> None:
        self.stream = stream
        self.tty = tty
        self.command = command
        self._states: dict[tuple[str, str], dict[str, str]] = {}
        self._drawn = 0

    def __call__(self, poll: CiPoll) -> None:
        """Report one poll."""
        where = f"{poll.repo}#{poll.pr}" if poll.pr is not None else poll.repo
        heading = f"{self.command} {where}@{poll.sha[:7]}"
        if poll.progress is None:
            self._write(f"{heading}: poll failed, polling again: {poll.failure}\n", redraw=False)
            return
        failed, waiting = set(poll.progress.failed), set(poll.progress.waiting)
        rows: dict[str, str] = {}
        marks: dict[str, str] = {}
        for label in poll.progress.passed:  # every label judged, in the verdict's order
            name, state = _split(label)
            rows[name] = state
            marks[name] = "X" if label in failed else "*" if label in waiting else "✓"
        before = self._states.setdefault((poll.repo, poll.sha), {})
        changed = [name for name, state in rows.items() if before.get(name) != state]
        self._states[(poll.repo, poll.sha)] = rows
        when = elapsed_text(poll.elapsed)
        if self.tty:
            width = max((len(name) for name in rows), default=0)
            lines = [f"{heading} · {when}"]
            lines += [f"  {marks[n]} {n.ljust(width)}  {s}".rstrip() for n, s in rows.items()]
            self._write("\n".join(lines) + "\n", redraw=True)
        else:
            text = "".join(
                f"{heading}: {name}{' ' + rows[name] if rows[name] else ''} ({when})\n"
                for name in changed
            )
            if text:
                self._write(text, redraw=False)

    def detach(self) -> None:
        """Leave the table where it is: other output follows it (a train's step line)."""
        self._drawn = 0

    def _write(self, text: str, *, redraw: bool) -> None:
        try:
            if redraw and self._drawn:
                self.stream.write(_UP.format(self._drawn))
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed stderr never stops the wait
            return
        self._drawn = text.count("\n") if redraw else 0
