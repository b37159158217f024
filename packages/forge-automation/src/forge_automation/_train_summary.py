"""The batched train's one marker comment: its live summary, on one issue of the label.

What a rerun needs to converge is on the forge already and is never read from here: the label
says a PR is not finished, a car branch and the check runs on its commit say which trees CI has
seen and how they ended (a car is a function of the base tip and the heads, so a rerun finds the
car it pushed and does not test it again), and a dropped PR's own marker comment says it was
dropped. What nothing of that keeps is the history of a train that was killed: which PRs earlier
runs merged and dropped, and the flakes they saw (a car branch is deleted once its PRs are dealt
with, and its runs with it as far as the train can tell). That is the summary, so a rerun after
a kill reads it and the train's account of itself survives the kill.

Where: one issue per label, opened by the train (`forge-cli train: <label>`, carrying the label,
found again by label, author and title: the way a dependency dashboard works), holding ONE
comment of ours with the marker `<!-- forge-cli train summary: <label> -->`. The comment is
upserted (created once, then edited in place) when the run starts, after each step that merged,
dropped or saw a flake, and when the run ends; a run that finds the last one DONE and does
nothing leaves it as it is. Its last line holds the state as JSON in an HTML
comment; a rerun carries merged, dropped and flaky over unless the last run ended DONE. A state
that does not read (edited by hand) is started afresh with a NOTE: it only ever feeds the
account, never a decision to merge, drop or skip a test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeGuard, TypeVar
from urllib.parse import quote, unquote

from ._port import ForgePort
from ._train import TrainResult

__all__ = ["TrainSummary", "summary_marker", "summary_title"]

_STATE = "<!-- forge-cli train state: "
_END = " -->"
# The most rows of each list the summary keeps (a longer train keeps the newest).
_ROWS = 500
T = TypeVar("T")


def summary_marker(label: str) -> str:
    """Return the marker of the train's summary comment for `label`."""
    return f"<!-- forge-cli train summary: {label} -->"


def summary_title(label: str) -> str:
    """Return the title of the issue holding the train's summary for `label`."""
    return f"forge-cli train: {label}"


@dataclass(slots=True)
class TrainSummary:
    """The summary comment of one run: what earlier runs left (unless DONE) plus this run."""

    port: ForgePort
    repo: str
    label: str
    emit: Callable[[str], None]
    issue: int = 0
    merged: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    # How the last run's summary ended (None: there was none, or it did not read).
    previous: str | None = None
    _written: tuple[int, int, int] = (0, 0, 0)

    def open(self) -> None:
        """Find (or open) the label's issue and read what the last run left there."""
        intro = (
            f"forge-cli train keeps the summary of the `{self.label}` merge train here: what "
            "it merged and dropped, and the flakes it saw. Closing this issue is harmless; the "
            "next run opens a new one."
        )
        self.issue = self.port.ensure_issue(
            self.repo, label=self.label, title=summary_title(self.label), body=intro
        )
        found = self.port.find_comment(self.repo, self.issue, summary_marker(self.label))
        if found is None:
            return
        state = _read_state(found.body)
        if state is None:
            self.emit(
                f"NOTE {self.repo}#{self.issue}: the train's summary does not read; it starts "
                "afresh"
            )
            return
        self.previous = state.status
        if state.status != "done":
            self.merged, self.dropped, self.flaky = state.merged, state.dropped, state.flaky

    def write(self, result: TrainResult, status: str, *, force: bool = False) -> None:
        """Upsert the comment with this run's `result` folded in; `status` is running, done or
        stopped. Without `force` nothing is written unless the result grew since the last write.
        """
        counts = (len(result.merged), len(result.dropped), len(result.flaky))
        if not force and counts == self._written:
            return
        if self.previous == "done" and counts == (0, 0, 0):
            return  # a finished train's account stays until a new one does something
        merged = _union(self.merged, result.merged)
        dropped = _union(self.dropped, result.dropped)
        flaky = _union(self.flaky, result.flaky)
        state = {"status": status, "merged": merged, "dropped": dropped, "flaky": flaky}
        head = {
            "running": "running",
            "done": "DONE: the queue is empty",
            "stopped": f"STOPPED at {_ref(result.stopped)}: rerun the train to go on",
        }[status]
        lines = [
            summary_marker(self.label),
            f"**forge-cli train** `{self.label}` on {self.repo}: {head}",
            "",
            f"- merged: {_numbers(merged)}",
            f"- dropped: {_numbers(dropped)}",
            f"- flaky (never held against a PR): {', '.join(flaky) or 'none'}",
            "",
            f"{_STATE}{_comment_safe(json.dumps(state, separators=(',', ':')))}{_END}",
        ]
        self.port.upsert_comment(
            self.repo, self.issue, summary_marker(self.label), "\n".join(lines), update=True
        )
        self._written = counts


def _comment_safe(text: str) -> str:
    # Percent-encoded past the JSON punctuation: a check name holding `-->` (or `--!>`) would end
    # the HTML comment early and show the rest, and a JSON escape does not survive gh 2.23, which
    # rewrites every `\u003e` of a body it prints to `>`, even one whose backslash is escaped.
    return quote(text, safe=' {}[]":,')


def _ref(number: int | None) -> str:
    return f"#{number}" if number else "the listing"


def _numbers(numbers: list[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers) or "none"


def _union(earlier: list[T], now: list[T]) -> list[T]:
    out = list(earlier)
    out.extend(x for x in now if x not in out)
    return out[-_ROWS:]


@dataclass(frozen=True, slots=True)
class _State:
    status: str
    merged: list[int]
    dropped: list[int]
    flaky: list[str]


def _read_state(body: str) -> _State | None:
    """The state line of a summary body; None unless every field reads as written."""
    line = next((x for x in body.splitlines() if x.startswith(_STATE) and x.endswith(_END)), None)
    if line is None:
        return None
    try:
        state = json.loads(unquote(line[len(_STATE) : -len(_END)]))
    except ValueError:
        return None
    if not isinstance(state, dict) or state.get("status") not in ("running", "done", "stopped"):
        return None
    merged, dropped, flaky = state.get("merged"), state.get("dropped"), state.get("flaky")
    if not (_ints(merged) and _ints(dropped) and isinstance(flaky, list)):
        return None
    if not all(isinstance(x, str) for x in flaky):
        return None
    return _State(state["status"], merged, dropped, flaky)


def _ints(value: object) -> TypeGuard[list[int]]:
    return isinstance(value, list) and all(type(n) is int for n in value)
