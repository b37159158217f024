"""forge_automation: an idempotent check-then-act port over the forge through `gh`.

`forge_port(gh_cli_wire())` validates every argument, reads before every write and reports what it
skipped; `fake_forge()` is the same wire in memory for tests.

Names load on first use (PEP 562), so `squash-message` and `forge-cli` import only the
modules they need; type checkers see the explicit imports below.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing typing costs the command line tools milliseconds they
# do not need; type checkers treat any name TYPE_CHECKING as true. `X as X`: an explicit
# re-export, as `__all__` is derived at run time (tests/internal/test_front_door.py keeps these
# imports, the table and each module's `__all__` in step).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._app_token import InstallationToken as InstallationToken
    from ._app_token import app_installation_token as app_installation_token
    from ._backstop import BackstopCheck as BackstopCheck
    from ._backstop import BackstopSnapshot as BackstopSnapshot
    from ._backstop import BackstopStatus as BackstopStatus
    from ._backstop import GraphqlApi as GraphqlApi
    from ._backstop import gh_graphql_api as gh_graphql_api
    from ._backstop import graphql_points as graphql_points
    from ._backstop import read_backstop_snapshot as read_backstop_snapshot
    from ._backstop import snapshot_requests as snapshot_requests
    from ._budget import RateBudget as RateBudget
    from ._budget import shared_rate_budget as shared_rate_budget
    from ._ci_wait import CiPoll as CiPoll
    from ._ci_wait import CiWaitResult as CiWaitResult
    from ._ci_wait import ci_wait as ci_wait
    from ._ci_wait import ci_wait_pr as ci_wait_pr
    from ._constants import ACTIONS_APP_ID as ACTIONS_APP_ID
    from ._constants import BACKSTOP_CAPS as BACKSTOP_CAPS
    from ._constants import DONE_OVERLAP_MS as DONE_OVERLAP_MS
    from ._constants import FAKE_APP_ID as FAKE_APP_ID
    from ._constants import FORCE_PUSHES_CAP as FORCE_PUSHES_CAP
    from ._constants import PR_COMMITS_CAP as PR_COMMITS_CAP
    from ._constants import PR_FILES_CAP as PR_FILES_CAP
    from ._constants import BackstopCaps as BackstopCaps
    from ._errors import BackstopTruncated as BackstopTruncated
    from ._errors import FileListTruncatedError as FileListTruncatedError
    from ._errors import ForcePushesTruncated as ForcePushesTruncated
    from ._errors import ForgeCliError as ForgeCliError
    from ._errors import ForgeConflictError as ForgeConflictError
    from ._errors import ForgeError as ForgeError
    from ._errors import ForgeInputError as ForgeInputError
    from ._errors import LsRemoteError as LsRemoteError
    from ._errors import ProtectionHidden as ProtectionHidden
    from ._exec import ExecOptions as ExecOptions
    from ._exec import ExecResult as ExecResult
    from ._exec import GhExec as GhExec
    from ._exec import GitExec as GitExec
    from ._fake import FakeCommit as FakeCommit
    from ._fake import FakeForge as FakeForge
    from ._fake import ReadFaults as ReadFaults
    from ._fake import fake_forge as fake_forge
    from ._git import exec_git as exec_git
    from ._git import ls_remote_pull_head as ls_remote_pull_head
    from ._logs import JobLogSummary as JobLogSummary
    from ._logs import job_log_tail as job_log_tail
    from ._logs import summarize_job_log as summarize_job_log
    from ._merge import MergeOutcome as MergeOutcome
    from ._merge import guarded_merge as guarded_merge
    from ._port import ForgePort as ForgePort
    from ._port import forge_port as forge_port
    from ._premerge import PremergeResult as PremergeResult
    from ._premerge import premerge as premerge
    from ._readiness import Actor as Actor
    from ._readiness import Blocker as Blocker
    from ._readiness import Readiness as Readiness
    from ._readiness import merge_readiness as merge_readiness
    from ._records import CheckRunConclusion as CheckRunConclusion
    from ._records import CheckStatus as CheckStatus
    from ._records import MergeableState as MergeableState
    from ._records import PrState as PrState
    from ._records import ReviewDecision as ReviewDecision
    from ._records import ReviewStateName as ReviewStateName
    from ._records import StatusState as StatusState
    from ._redact import redact_forge_secrets as redact_forge_secrets
    from ._redact import redact_split as redact_split
    from ._rules import BranchRules as BranchRules
    from ._rules import ClassicStatus as ClassicStatus
    from ._rules import layer_rules as layer_rules
    from ._rules import load_branch_rules as load_branch_rules
    from ._rules import load_required_contexts as load_required_contexts
    from ._rules import load_review_rules as load_review_rules
    from ._rules import load_review_state as load_review_state
    from ._squash import SquashCommit as SquashCommit
    from ._squash import SquashMessage as SquashMessage
    from ._squash import format_squash_message as format_squash_message
    from ._train import TrainResult as TrainResult
    from ._train import run_train as run_train
    from ._train import train_marker as train_marker
    from ._types import Ancestry as Ancestry
    from ._types import AncestryStatus as AncestryStatus
    from ._types import CheckConclusion as CheckConclusion
    from ._types import CheckRun as CheckRun
    from ._types import CheckRunRequest as CheckRunRequest
    from ._types import ClassicProtection as ClassicProtection
    from ._types import Commit as Commit
    from ._types import CommitStatus as CommitStatus
    from ._types import CompareFiles as CompareFiles
    from ._types import CompareStatus as CompareStatus
    from ._types import CreatedCheckRun as CreatedCheckRun
    from ._types import DeleteRefResult as DeleteRefResult
    from ._types import EnsureBranchResult as EnsureBranchResult
    from ._types import FileEntry as FileEntry
    from ._types import FileStatus as FileStatus
    from ._types import ForcePush as ForcePush
    from ._types import IssueComment as IssueComment
    from ._types import LabelledIssue as LabelledIssue
    from ._types import LabelledPr as LabelledPr
    from ._types import MergeMethod as MergeMethod
    from ._types import MergeResult as MergeResult
    from ._types import NotModified as NotModified
    from ._types import OpenPrResult as OpenPrResult
    from ._types import OpenPrsList as OpenPrsList
    from ._types import Page as Page
    from ._types import PrCommit as PrCommit
    from ._types import PullRequest as PullRequest
    from ._types import RemoveLabelResult as RemoveLabelResult
    from ._types import RequiredChecks as RequiredChecks
    from ._types import RequiredContext as RequiredContext
    from ._types import Review as Review
    from ._types import ReviewComment as ReviewComment
    from ._types import ReviewRequest as ReviewRequest
    from ._types import ReviewRules as ReviewRules
    from ._types import ReviewState as ReviewState
    from ._types import ReviewThread as ReviewThread
    from ._types import SkipReason as SkipReason
    from ._types import UpdateBranchResult as UpdateBranchResult
    from ._types import UpsertCommentResult as UpsertCommentResult
    from ._verdict import CiProgress as CiProgress
    from ._verdict import CiVerdict as CiVerdict
    from ._verdict import ci_verdict as ci_verdict
    from ._walk import BaseMerge as BaseMerge
    from ._walk import HeadWalk as HeadWalk
    from ._walk import approved_head_walk as approved_head_walk
    from ._wire import AppTokenProvider as AppTokenProvider
    from ._wire import ForgeWire as ForgeWire
    from ._wire import gh_cli_wire as gh_cli_wire
    from ._wire import run_gh as run_gh

_PUBLIC: dict[str, str] = {
    "ACTIONS_APP_ID": "._constants",
    "Actor": "._readiness",
    "Ancestry": "._types",
    "AncestryStatus": "._types",
    "AppTokenProvider": "._wire",
    "BACKSTOP_CAPS": "._constants",
    "BackstopCaps": "._constants",
    "BackstopCheck": "._backstop",
    "BackstopSnapshot": "._backstop",
    "BackstopStatus": "._backstop",
    "BackstopTruncated": "._errors",
    "BaseMerge": "._walk",
    "Blocker": "._readiness",
    "BranchRules": "._rules",
    "CheckConclusion": "._types",
    "CheckRun": "._types",
    "CheckRunConclusion": "._records",
    "CheckRunRequest": "._types",
    "CheckStatus": "._records",
    "CiPoll": "._ci_wait",
    "CiProgress": "._verdict",
    "CiVerdict": "._verdict",
    "CiWaitResult": "._ci_wait",
    "ClassicProtection": "._types",
    "ClassicStatus": "._rules",
    "Commit": "._types",
    "CommitStatus": "._types",
    "CompareFiles": "._types",
    "CompareStatus": "._types",
    "CreatedCheckRun": "._types",
    "DONE_OVERLAP_MS": "._constants",
    "DeleteRefResult": "._types",
    "EnsureBranchResult": "._types",
    "ExecOptions": "._exec",
    "ExecResult": "._exec",
    "FAKE_APP_ID": "._constants",
    "FORCE_PUSHES_CAP": "._constants",
    "FakeCommit": "._fake",
    "FakeForge": "._fake",
    "FileEntry": "._types",
    "FileListTruncatedError": "._errors",
    "FileStatus": "._types",
    "ForcePush": "._types",
    "ForcePushesTruncated": "._errors",
    "ForgeCliError": "._errors",
    "ForgeConflictError": "._errors",
    "ForgeError": "._errors",
    "ForgeInputError": "._errors",
    "ForgePort": "._port",
    "ForgeWire": "._wire",
    "GhExec": "._exec",
    "GitExec": "._exec",
    "GraphqlApi": "._backstop",
    "HeadWalk": "._walk",
    "InstallationToken": "._app_token",
    "IssueComment": "._types",
    "JobLogSummary": "._logs",
    "LabelledIssue": "._types",
    "LabelledPr": "._types",
    "LsRemoteError": "._errors",
    "MergeMethod": "._types",
    "MergeOutcome": "._merge",
    "MergeResult": "._types",
    "MergeableState": "._records",
    "NotModified": "._types",
    "OpenPrResult": "._types",
    "OpenPrsList": "._types",
    "PR_COMMITS_CAP": "._constants",
    "PR_FILES_CAP": "._constants",
    "Page": "._types",
    "PrCommit": "._types",
    "PrState": "._records",
    "PremergeResult": "._premerge",
    "ProtectionHidden": "._errors",
    "PullRequest": "._types",
    "RateBudget": "._budget",
    "ReadFaults": "._fake",
    "Readiness": "._readiness",
    "RemoveLabelResult": "._types",
    "RequiredChecks": "._types",
    "RequiredContext": "._types",
    "Review": "._types",
    "ReviewComment": "._types",
    "ReviewDecision": "._records",
    "ReviewRequest": "._types",
    "ReviewRules": "._types",
    "ReviewState": "._types",
    "ReviewStateName": "._records",
    "ReviewThread": "._types",
    "SkipReason": "._types",
    "SquashCommit": "._squash",
    "SquashMessage": "._squash",
    "StatusState": "._records",
    "TrainResult": "._train",
    "UpdateBranchResult": "._types",
    "UpsertCommentResult": "._types",
    "app_installation_token": "._app_token",
    "approved_head_walk": "._walk",
    "ci_verdict": "._verdict",
    "ci_wait": "._ci_wait",
    "ci_wait_pr": "._ci_wait",
    "exec_git": "._git",
    "fake_forge": "._fake",
    "forge_port": "._port",
    "format_squash_message": "._squash",
    "gh_cli_wire": "._wire",
    "gh_graphql_api": "._backstop",
    "graphql_points": "._backstop",
    "guarded_merge": "._merge",
    "job_log_tail": "._logs",
    "layer_rules": "._rules",
    "load_branch_rules": "._rules",
    "load_required_contexts": "._rules",
    "load_review_rules": "._rules",
    "load_review_state": "._rules",
    "ls_remote_pull_head": "._git",
    "merge_readiness": "._readiness",
    "premerge": "._premerge",
    "read_backstop_snapshot": "._backstop",
    "redact_forge_secrets": "._redact",
    "redact_split": "._redact",
    "run_gh": "._wire",
    "run_train": "._train",
    "shared_rate_budget": "._budget",
    "snapshot_requests": "._backstop",
    "summarize_job_log": "._logs",
    "train_marker": "._train",
}
"""The front door's one table: each public name (in `__all__`'s order, plain `sorted()`) and the
private module that defines it."""

__all__ = list(_PUBLIC)


def __getattr__(name: str) -> object:
    """Import the module that defines `name` on first access and cache the value."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # cached: the next lookup finds it without this function
    return value


def __dir__() -> list[str]:
    """List the public names next to the module's own attributes."""
    return sorted({*globals(), *__all__})
