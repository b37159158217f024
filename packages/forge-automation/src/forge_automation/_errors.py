"""Errors raised by the forge library. No error carries a token: messages are redacted first.

ForgeError
├── ForgeInputError          a bad argument, named by `field`, refused before any CLI call
├── ForgeConflictError       a write whose precondition changed under it
├── ForgeCliError            a failed `gh` call or an answer the wire cannot map; `status` is the
│   │                        HTTP status when gh reported one, `kind` (always given by the raiser,
│   │                        never guessed) says which failure it was
│   └── ProtectionHidden     GitHub answered a branch-protection read 404 `Not Found`, its answer
│                            to every caller without admin rights (kind `forbidden`)
├── FileListTruncatedError   list_pr_files came back short (`expected`, `received`)
├── ForcePushesTruncated     more than FORCE_PUSHES_CAP force-pushes exist
├── BackstopTruncated        a backstop range needs a page past its cap (`range`, `cap`)
└── LsRemoteError            git failed or printed no object id
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: forge-cli pr-status imports this module before its first gh read,
# and importing typing would delay that read; type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False

__all__ = [
    "TRANSIENT_FAILURES",
    "BackstopTruncated",
    "FileListTruncatedError",
    "ForcePushesTruncated",
    "ForgeCliError",
    "ForgeConflictError",
    "ForgeError",
    "ForgeFailure",
    "ForgeInputError",
    "LsRemoteError",
    "ProtectionHidden",
    "failure_of_status",
]


# What went wrong with one forge read or write. `free-plan`: a 403 that says the plan lacks the
# feature (branch rules, protection); `rate-limited`: a primary or secondary rate limit (403/429);
# `forbidden`: any other 403 (permission); `not-found`: a 404; `server`: a 5xx; `http`: any other
# status; `malformed`: an answer the wire cannot map (a body of another shape, a page that says
# there is more without a cursor); `page-cap`: a listing that still had pages past the package's
# cap; `timeout`: gh ran past its deadline; `no-answer`: gh exited or could not start without
# printing an HTTP status; `unavailable`: a call the package could not make at all (no app token).
if TYPE_CHECKING:
    from typing import Literal, TypeAlias

    ForgeFailure: TypeAlias = Literal[
        "free-plan",
        "rate-limited",
        "forbidden",
        "not-found",
        "server",
        "http",
        "malformed",
        "page-cap",
        "timeout",
        "no-answer",
        "unavailable",
    ]
else:
    ForgeFailure = str
# Failures that may pass if the same read is made again later. A malformed answer or a page cap
# is not one of them: the same read gives the same answer, so a wait only delays the failure.
TRANSIENT_FAILURES: frozenset[ForgeFailure] = frozenset(
    {"rate-limited", "server", "timeout", "no-answer"}
)


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
    """A `gh` call failed; `status` is the HTTP status when gh reported one, `kind` what failed.

    `kind` is required: whoever raises knows what failed (`failure_of_status` maps a bare
    status), and a guess would make a permanent failure look transient or the other way round.
    `retry_after` is the wait in seconds the forge asked for (Retry-After, or the rate-limit
    reset), when it asked for one.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ForgeFailure,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind: ForgeFailure = kind
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        """Return whether the same call may pass when made again later."""
        return self.kind in TRANSIENT_FAILURES


def failure_of_status(status: int) -> ForgeFailure:
    """Return the failure kind of an HTTP status whose headers say nothing more."""
    if status == 404:
        return "not-found"
    if status == 403:
        return "forbidden"
    if status == 429:
        return "rate-limited"
    if status >= 500:
        return "server"
    return "http"


class ProtectionHidden(ForgeCliError):
    """GitHub hid a branch's classic protection (404 `Not Found`, not `Branch not protected`).

    GitHub answers so to every caller without admin rights: the rules are unknown, never none.
    `repo` and `branch` name the branch.
    """

    def __init__(self, message: str, *, repo: str, branch: str) -> None:
        super().__init__(message, kind="forbidden")
        self.repo = repo
        self.branch = branch


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
