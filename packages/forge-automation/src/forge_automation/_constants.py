"""The spec's constants: app ids, listing caps and the backstop's page caps."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ACTIONS_APP_ID",
    "BACKSTOP_CAPS",
    "COMPARE_COMMITS_CAP",
    "COMPARE_FILES_CAP",
    "DONE_OVERLAP_MS",
    "FAKE_APP_ID",
    "FORCE_PUSHES_CAP",
    "PR_COMMITS_CAP",
    "PR_FILES_CAP",
    "BackstopCaps",
]

# The forge's built-in CI app; unpinned required contexts count only from it (or from a status).
ACTIONS_APP_ID = 15368
# The app id the fake records created check runs under unless told otherwise.
FAKE_APP_ID = 900001
# The forge lists the first 250 commits of a PR and says nothing about the rest.
PR_COMMITS_CAP = 250
# One GraphQL page of force-push timeline items; more than this raises ForcePushesTruncated.
FORCE_PUSHES_CAP = 100
# The forge silently caps a PR's file listing here; list_pr_files detects it via changed_files.
PR_FILES_CAP = 3000
# A compare answer lists at most this many files and commits.
COMPARE_FILES_CAP = 300
COMPARE_COMMITS_CAP = 250
# The backstop re-reads closed PRs updated this long before its last `done_since`.
DONE_OVERLAP_MS = 10 * 60 * 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class BackstopCaps:
    """Page caps per backstop range; a range needing more raises BackstopTruncated."""

    main: int = 20
    done: int = 10
    open: int = 20
    contexts: int = 10
    reviews: int = 10


BACKSTOP_CAPS = BackstopCaps()
