"""forge_automation: an idempotent check-then-act port over the forge through `gh`.

`forge_port(gh_cli_wire())` validates every argument, reads before every write and reports what it
skipped; `fake_forge()` is the same wire in memory for tests.
"""

from __future__ import annotations

from ._app_token import InstallationToken, app_installation_token
from ._backstop import (
    BackstopSnapshot,
    GraphqlApi,
    gh_graphql_api,
    graphql_points,
    read_backstop_snapshot,
    snapshot_requests,
)
from ._budget import RateBudget, shared_rate_budget
from ._constants import (
    ACTIONS_APP_ID,
    BACKSTOP_CAPS,
    DONE_OVERLAP_MS,
    FAKE_APP_ID,
    FORCE_PUSHES_CAP,
    PR_COMMITS_CAP,
    PR_FILES_CAP,
    BackstopCaps,
)
from ._errors import (
    BackstopTruncated,
    FileListTruncatedError,
    ForcePushesTruncated,
    ForgeCliError,
    ForgeConflictError,
    ForgeError,
    ForgeInputError,
    LsRemoteError,
)
from ._exec import ExecOptions, ExecResult, GhExec, GitExec
from ._fake import FakeCommit, FakeForge, ReadFaults, fake_forge
from ._git import exec_git, ls_remote_pull_head
from ._logs import JobLogSummary, job_log_tail, summarize_job_log
from ._port import ForgePort, forge_port, load_required_contexts
from ._readiness import Blocker, Readiness, merge_readiness
from ._redact import redact_forge_secrets, redact_split
from ._squash import SquashCommit, SquashMessage, format_squash_message
from ._types import (
    Ancestry,
    AncestryStatus,
    CheckConclusion,
    CheckRun,
    CheckRunRequest,
    Commit,
    CommitStatus,
    CompareFiles,
    CreatedCheckRun,
    DeleteRefResult,
    EnsureBranchResult,
    FileEntry,
    ForcePush,
    IssueComment,
    NotModified,
    OpenPrResult,
    OpenPrsList,
    Page,
    PullRequest,
    RequiredChecks,
    RequiredContext,
    ReviewComment,
    SkipReason,
    UpsertCommentResult,
)
from ._verdict import CiVerdict, ci_verdict
from ._walk import BaseMerge, HeadWalk, approved_head_walk
from ._wire import AppTokenProvider, ForgeWire, gh_cli_wire, run_gh

# Plain `sorted()` order, which test_exported_members pins (isort-style would differ).
__all__ = [  # noqa: RUF022
    "ACTIONS_APP_ID",
    "Ancestry",
    "AncestryStatus",
    "AppTokenProvider",
    "BACKSTOP_CAPS",
    "BackstopCaps",
    "BackstopSnapshot",
    "BackstopTruncated",
    "BaseMerge",
    "Blocker",
    "CheckConclusion",
    "CheckRun",
    "CheckRunRequest",
    "CiVerdict",
    "Commit",
    "CommitStatus",
    "CompareFiles",
    "CreatedCheckRun",
    "DONE_OVERLAP_MS",
    "DeleteRefResult",
    "EnsureBranchResult",
    "ExecOptions",
    "ExecResult",
    "FAKE_APP_ID",
    "FORCE_PUSHES_CAP",
    "FakeCommit",
    "FakeForge",
    "FileEntry",
    "FileListTruncatedError",
    "ForcePush",
    "ForcePushesTruncated",
    "ForgeCliError",
    "ForgeConflictError",
    "ForgeError",
    "ForgeInputError",
    "ForgePort",
    "ForgeWire",
    "GhExec",
    "GitExec",
    "GraphqlApi",
    "HeadWalk",
    "InstallationToken",
    "IssueComment",
    "JobLogSummary",
    "LsRemoteError",
    "NotModified",
    "OpenPrResult",
    "OpenPrsList",
    "PR_COMMITS_CAP",
    "PR_FILES_CAP",
    "Page",
    "PullRequest",
    "RateBudget",
    "ReadFaults",
    "Readiness",
    "RequiredChecks",
    "RequiredContext",
    "ReviewComment",
    "SkipReason",
    "SquashCommit",
    "SquashMessage",
    "UpsertCommentResult",
    "app_installation_token",
    "approved_head_walk",
    "ci_verdict",
    "exec_git",
    "fake_forge",
    "forge_port",
    "format_squash_message",
    "gh_cli_wire",
    "gh_graphql_api",
    "graphql_points",
    "job_log_tail",
    "load_required_contexts",
    "ls_remote_pull_head",
    "merge_readiness",
    "read_backstop_snapshot",
    "redact_forge_secrets",
    "redact_split",
    "run_gh",
    "shared_rate_budget",
    "snapshot_requests",
    "summarize_job_log",
]
