"""forge_automation: an idempotent check-then-act port over the forge through `gh`.

`forge_port(gh_cli_wire())` validates every argument, reads before every write and reports what it
skipped; `fake_forge()` is the same wire in memory for tests.

Names load on first use (PEP 562), so `squash-message` and `forge-cli` import only the
modules they need; type checkers see the explicit imports below.
"""

from __future__ import annotations

import importlib

# Not `typing.TYPE_CHECKING`: importing typing costs the command line tools milliseconds they
# do not need; type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._app_token import InstallationToken, app_installation_token
    from ._backstop import (
        BackstopCheck,
        BackstopSnapshot,
        BackstopStatus,
        GraphqlApi,
        gh_graphql_api,
        graphql_points,
        read_backstop_snapshot,
        snapshot_requests,
    )
    from ._budget import RateBudget, shared_rate_budget
    from ._ci_wait import CiPoll, CiWaitResult, ci_wait, ci_wait_pr
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
        ProtectionHidden,
    )
    from ._exec import ExecOptions, ExecResult, GhExec, GitExec
    from ._fake import FakeCommit, FakeForge, ReadFaults, fake_forge
    from ._git import exec_git, ls_remote_pull_head
    from ._logs import JobLogSummary, job_log_tail, summarize_job_log
    from ._merge import MergeOutcome, guarded_merge
    from ._port import ForgePort, forge_port
    from ._premerge import PremergeResult, premerge
    from ._readiness import Actor, Blocker, Readiness, merge_readiness
    from ._records import (
        CheckRunConclusion,
        CheckStatus,
        MergeableState,
        PrState,
        ReviewDecision,
        ReviewStateName,
        StatusState,
    )
    from ._redact import redact_forge_secrets, redact_split
    from ._rules import (
        BranchRules,
        ClassicStatus,
        layer_rules,
        load_branch_rules,
        load_required_contexts,
        load_review_rules,
        load_review_state,
    )
    from ._squash import SquashCommit, SquashMessage, format_squash_message
    from ._train import TrainResult, run_train, train_marker
    from ._types import (
        Ancestry,
        AncestryStatus,
        CheckConclusion,
        CheckRun,
        CheckRunRequest,
        ClassicProtection,
        Commit,
        CommitStatus,
        CompareFiles,
        CompareStatus,
        CreatedCheckRun,
        DeleteRefResult,
        EnsureBranchResult,
        FileEntry,
        FileStatus,
        ForcePush,
        IssueComment,
        LabelledPr,
        MergeMethod,
        MergeResult,
        NotModified,
        OpenPrResult,
        OpenPrsList,
        Page,
        PrCommit,
        PullRequest,
        RemoveLabelResult,
        RequiredChecks,
        RequiredContext,
        Review,
        ReviewComment,
        ReviewRequest,
        ReviewRules,
        ReviewState,
        ReviewThread,
        SkipReason,
        UpdateBranchResult,
        UpsertCommentResult,
    )
    from ._verdict import CiProgress, CiVerdict, ci_verdict
    from ._walk import BaseMerge, HeadWalk, approved_head_walk
    from ._wire import AppTokenProvider, ForgeWire, gh_cli_wire, run_gh

# Which private module defines each public name; keep in step with the imports above.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "_app_token": ("InstallationToken", "app_installation_token"),
    "_backstop": (
        "BackstopCheck",
        "BackstopSnapshot",
        "BackstopStatus",
        "GraphqlApi",
        "gh_graphql_api",
        "graphql_points",
        "read_backstop_snapshot",
        "snapshot_requests",
    ),
    "_budget": ("RateBudget", "shared_rate_budget"),
    "_ci_wait": ("CiPoll", "CiWaitResult", "ci_wait", "ci_wait_pr"),
    "_constants": (
        "ACTIONS_APP_ID",
        "BACKSTOP_CAPS",
        "DONE_OVERLAP_MS",
        "FAKE_APP_ID",
        "FORCE_PUSHES_CAP",
        "PR_COMMITS_CAP",
        "PR_FILES_CAP",
        "BackstopCaps",
    ),
    "_errors": (
        "BackstopTruncated",
        "FileListTruncatedError",
        "ForcePushesTruncated",
        "ForgeCliError",
        "ForgeConflictError",
        "ForgeError",
        "ForgeInputError",
        "LsRemoteError",
        "ProtectionHidden",
    ),
    "_exec": ("ExecOptions", "ExecResult", "GhExec", "GitExec"),
    "_fake": ("FakeCommit", "FakeForge", "ReadFaults", "fake_forge"),
    "_git": ("exec_git", "ls_remote_pull_head"),
    "_logs": ("JobLogSummary", "job_log_tail", "summarize_job_log"),
    "_merge": ("MergeOutcome", "guarded_merge"),
    "_port": ("ForgePort", "forge_port"),
    "_premerge": ("PremergeResult", "premerge"),
    "_readiness": ("Actor", "Blocker", "Readiness", "merge_readiness"),
    "_records": (
        "CheckRunConclusion",
        "CheckStatus",
        "MergeableState",
        "PrState",
        "ReviewDecision",
        "ReviewStateName",
        "StatusState",
    ),
    "_redact": ("redact_forge_secrets", "redact_split"),
    "_rules": (
        "BranchRules",
        "ClassicStatus",
        "layer_rules",
        "load_branch_rules",
        "load_required_contexts",
        "load_review_rules",
        "load_review_state",
    ),
    "_squash": ("SquashCommit", "SquashMessage", "format_squash_message"),
    "_train": ("TrainResult", "run_train", "train_marker"),
    "_types": (
        "Ancestry",
        "AncestryStatus",
        "CheckConclusion",
        "CheckRun",
        "CheckRunRequest",
        "ClassicProtection",
        "Commit",
        "CommitStatus",
        "CompareFiles",
        "CompareStatus",
        "CreatedCheckRun",
        "DeleteRefResult",
        "EnsureBranchResult",
        "FileEntry",
        "FileStatus",
        "ForcePush",
        "IssueComment",
        "LabelledPr",
        "MergeMethod",
        "MergeResult",
        "NotModified",
        "OpenPrResult",
        "OpenPrsList",
        "Page",
        "PrCommit",
        "PullRequest",
        "RemoveLabelResult",
        "RequiredChecks",
        "RequiredContext",
        "Review",
        "ReviewComment",
        "ReviewRequest",
        "ReviewRules",
        "ReviewState",
        "ReviewThread",
        "SkipReason",
        "UpdateBranchResult",
        "UpsertCommentResult",
    ),
    "_verdict": ("CiProgress", "CiVerdict", "ci_verdict"),
    "_walk": ("BaseMerge", "HeadWalk", "approved_head_walk"),
    "_wire": ("AppTokenProvider", "ForgeWire", "gh_cli_wire", "run_gh"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

# Plain `sorted()` order, which test_exported_members pins (isort-style would differ).
__all__ = [  # noqa: RUF022
    "ACTIONS_APP_ID",
    "Actor",
    "Ancestry",
    "AncestryStatus",
    "AppTokenProvider",
    "BACKSTOP_CAPS",
    "BackstopCaps",
    "BackstopCheck",
    "BackstopSnapshot",
    "BackstopStatus",
    "BackstopTruncated",
    "BaseMerge",
    "Blocker",
    "BranchRules",
    "CheckConclusion",
    "CheckRun",
    "CheckRunConclusion",
    "CheckRunRequest",
    "CheckStatus",
    "CiPoll",
    "CiProgress",
    "CiVerdict",
    "CiWaitResult",
    "ClassicProtection",
    "ClassicStatus",
    "Commit",
    "CommitStatus",
    "CompareFiles",
    "CompareStatus",
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
    "FileStatus",
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
    "LabelledPr",
    "LsRemoteError",
    "MergeMethod",
    "MergeOutcome",
    "MergeResult",
    "MergeableState",
    "NotModified",
    "OpenPrResult",
    "OpenPrsList",
    "PR_COMMITS_CAP",
    "PR_FILES_CAP",
    "Page",
    "PrCommit",
    "PrState",
    "PremergeResult",
    "ProtectionHidden",
    "PullRequest",
    "RateBudget",
    "ReadFaults",
    "Readiness",
    "RemoveLabelResult",
    "RequiredChecks",
    "RequiredContext",
    "Review",
    "ReviewComment",
    "ReviewDecision",
    "ReviewRequest",
    "ReviewRules",
    "ReviewState",
    "ReviewStateName",
    "ReviewThread",
    "SkipReason",
    "SquashCommit",
    "SquashMessage",
    "StatusState",
    "TrainResult",
    "UpdateBranchResult",
    "UpsertCommentResult",
    "app_installation_token",
    "approved_head_walk",
    "ci_verdict",
    "ci_wait",
    "ci_wait_pr",
    "exec_git",
    "fake_forge",
    "forge_port",
    "format_squash_message",
    "gh_cli_wire",
    "gh_graphql_api",
    "graphql_points",
    "guarded_merge",
    "job_log_tail",
    "layer_rules",
    "load_branch_rules",
    "load_required_contexts",
    "load_review_rules",
    "load_review_state",
    "ls_remote_pull_head",
    "merge_readiness",
    "premerge",
    "read_backstop_snapshot",
    "redact_forge_secrets",
    "redact_split",
    "run_gh",
    "run_train",
    "shared_rate_budget",
    "snapshot_requests",
    "summarize_job_log",
    "train_marker",
]


def __getattr__(name: str) -> object:
    """Import the module that defines `name` on first access and cache the value."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """List the public names next to the module's own attributes."""
    return sorted({*globals(), *__all__})
