"""format_squash_message: the subject and body of a squash merge, in the spec's exact shape."""

from __future__ import annotations

from dataclasses import dataclass

from ._errors import ForgeInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["SquashCommit", "SquashMessage", "format_squash_message"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SquashCommit:
    """One commit of the PR as the squash message lists it."""

    subject: str
    body: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SquashMessage:
    """A squash merge's commit title and message."""

    subject: str
    body: str

    def to_json(self) -> dict[str, str]:
        """Return the spec's `{subject, body}` JSON object."""
        return {"subject": self.subject, "body": self.body}


def format_squash_message(
    *,
    title: str,
    body: str,
    pr_number: int,
    task_ids: Sequence[str],
    commits: Sequence[SquashCommit],
) -> SquashMessage:
    """Return `<title> (<task ids>) (#<n>)` and the Summary, Changes and Refs body."""
    if not isinstance(title, str):
        raise ForgeInputError("title", "must be a string")
    if not isinstance(body, str):
        raise ForgeInputError("body", "must be a string")
    if not _positive_int(pr_number):
        raise ForgeInputError("pr_number", "must be a positive integer")
    if isinstance(task_ids, str) or not all(isinstance(t, str) for t in task_ids):
        raise ForgeInputError("task_ids", "must be a sequence of strings")
    for commit in commits:
        if not isinstance(commit, SquashCommit):
            raise ForgeInputError("commits", "must be a sequence of SquashCommit")
    ids = [fold(t) for t in task_ids if fold(t)]
    subject = fold(title)
    if ids:
        subject += f" ({', '.join(ids)})"
    subject += f" (#{pr_number})"
    bullets = "\n".join(_bullet(commit) for commit in commits)
    refs = "Refs: " + ", ".join([*ids, f"#{pr_number}"])
    summary = "\n".join(line.rstrip() for line in _lines(body)).strip("\n")
    parts = ["## Summary", summary, "## Changes", bullets, refs]
    return SquashMessage(subject=subject, body="\n\n".join(p for p in parts if p))


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def fold(text: str) -> str:
    """Fold line breaks (and the blank space around them) into single spaces."""
    return " ".join(line.strip() for line in _lines(text) if line.strip())


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _bullet(commit: SquashCommit) -> str:
    subject = fold(commit.subject)
    # The bullet adds the full stop; a subject that already ends with one would get two.
    if subject.endswith(".") and not subject.endswith(".."):
        subject = subject[:-1]
    line = f"- **{subject}.**"
    details = fold(commit.body)
    return f"{line} {details}" if details else line
