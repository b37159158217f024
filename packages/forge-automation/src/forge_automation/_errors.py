"""Errors raised by the forge library. No error carries a token: messages are redacted first.

ForgeError
├── ForgeInputError          a bad argument, named by `field`, refused before any CLI call
├── ForgeConflictError       a write whose precondition changed under it
├── ForgeCliError            a failed `gh` call; `status` is the HTTP status when gh reported one
├── FileListTruncatedError   list_pr_files came back short (`expected`, `received`)
├── ForcePushesTruncated     more than FORCE_PUSHES_CAP force-pushes exist
├── BackstopTruncated        a backstop range needs a page past its cap (`range`, `cap`)
└── LsRemoteError            git failed or printed no object id
"""

from __future__ import annotations

__all__ = [
    "BackstopTruncated",
    "FileListTruncatedError",
    "ForcePushesTruncated",
    "ForgeCliError",
    "ForgeConflictError",
    "ForgeError",
    "ForgeInputError",
    "LsRemoteError",
]


class ForgeError(Exception):
    """Root of every error the forge package raises."""


class ForgeInputError(ForgeError, ValueError):
    """An argument is refused before any call; `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class ForgeConflictError(ForgeError):
    """A write's precondition changed under it."""


class ForgeCliError(ForgeError):
    """A `gh` call failed; `status` is the HTTP status when gh reported one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class FileListTruncatedError(ForgeError):
    """The PR's file listing came back shorter than its `changed_files`: cannot decide."""

    def __init__(self, *, expected: int, received: int) -> None:
        super().__init__(f"file list truncated: expected {expected}, received {received}")
        self.expected = expected
        self.received = received


class ForcePushesTruncated(ForgeError):
    """More force-pushes exist than one page of FORCE_PUSHES_CAP."""


class BackstopTruncated(ForgeError):
    """A backstop range needs a page past its cap; do not move the cursor."""

    def __init__(self, *, range: str, cap: int) -> None:
        super().__init__(f"backstop range {range} needs more than {cap} pages")
        self.range = range
        self.cap = cap


class LsRemoteError(ForgeError):
    """`git ls-remote` failed or printed no object id; never read as a sha."""
