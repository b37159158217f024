"""premerge: the last gate before the merge button, failing closed on anything it cannot prove.

It fails on a closed, merged or draft PR; a head other than the one the caller means to merge; a
required check that `ci_verdict` does not call green; a strict base the head is behind; a conflict;
an approved head that `approved_head_walk` cannot reach through merges of the base; and any review
blocker of `merge_readiness` (the base's review rules against the PR's reviews, threads and
requests, read at the head), or review state it cannot read.

With a clone, `git merge-tree --write-tree` runs twice: once to prove the walk's tree (the approved
head merged with the newest base commit the branch took in gives exactly the head's tree), once to
merge the head into the base tip sha the forge reports now (never a local `origin/<base>` ref,
which may be stale). Without a clone, an approved head other than the PR head fails, and conflicts
rest on the forge's lazy `mergeable_state`: `dirty` fails, `unknown` is re-read after 1, 2 and 4 s.
This is the package's only place that runs git against a working clone.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ._errors import ForgeError, ForgeInputError
from ._exec import ExecOptions, GitExec
from ._port import ForgePort
from ._readiness import Blocker, describe_blocker, review_blockers
from ._redact import exception_reason
from ._rules import BranchRules, load_branch_rules, load_review_state
from ._types import PullRequest, RequiredChecks
from ._validate import validate_number, validate_repo
from ._verdict import ci_verdict
from ._walk import approved_head_walk

__all__ = ["UNKNOWN_REREAD_DELAYS", "PremergeResult", "premerge"]

# Seconds to wait before each re-read of an `unknown` mergeable state (spec: 1, 2 and 4 s).
UNKNOWN_REREAD_DELAYS = (1.0, 2.0, 4.0)
# The first-parent chain a walk may follow; a PR lists at most 250 commits anyway.
_WALK_LIMIT = 1000
_FULL_SHA = re.compile(r"\A[0-9a-f]{40}\Z")
_GIT_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True, kw_only=True)
class PremergeResult:
    """OK or FAIL with every reason; `to_json` gives the spec's `--json` keys and `blockers`.

    `blockers` are the review blockers (each with its actor); their text is in `reasons` too.
    """

    repo: str
    number: int
    ok: bool
    reasons: tuple[str, ...]
    head: str | None
    base: str | None
    required: tuple[str, ...]
    strict: bool
    behind_by: int
    blockers: tuple[Blocker, ...] = ()

    def to_json(self) -> dict[str, object]:
        """Return `{repo, number, ok, reasons, head, base, required, strict, behindBy,
        blockers}`."""
        return {
            "repo": self.repo,
            "number": self.number,
            "ok": self.ok,
            "reasons": list(self.reasons),
            "head": self.head,
            "base": self.base,
            "required": list(self.required),
            "strict": self.strict,
            "behindBy": self.behind_by,
            "blockers": [b.to_json() for b in self.blockers],
        }


def validate_full_sha(value: object, field: str) -> str:
    """Return a 40-character lower-case hex sha, or raise ForgeInputError naming `field`."""
    if not isinstance(value, str) or not _FULL_SHA.fullmatch(value):
        raise ForgeInputError(field, "must be 40 lower-case hex characters")
    return value


def premerge(
    port: ForgePort,
    repo: str,
    number: int,
    head_sha: str,
    *,
    approved_head: str,
    clone: str | None = None,
    git: GitExec | None = None,
    sleep: Callable[[float], None] = time.sleep,
    delays: Sequence[float] = UNKNOWN_REREAD_DELAYS,
) -> PremergeResult:
    """Decide whether PR `number` may merge at `head_sha`; any doubt is a FAIL with its reason."""
    validate_repo(repo)
    validate_number(number)
    validate_full_sha(head_sha, "head_sha")
    validate_full_sha(approved_head, "approved_head")
    reasons: list[str] = []
    try:
        pr = port.get_pr(repo, number)
    except ForgeError as exc:
        return _failed(repo, number, [f"cannot read the PR: {exception_reason(exc)}"])
    rules = RequiredChecks()
    branch: BranchRules | None = None
    try:
        branch = load_branch_rules(port, repo, pr.base_ref)
        rules = branch.required_checks()
        runs = port.check_runs(repo, pr.head_sha)
        statuses = port.commit_statuses(repo, pr.head_sha)
    except ForgeError as exc:
        reasons.append(f"cannot read CI: {exception_reason(exc)}")
    else:
        verdict = ci_verdict(rules=rules, runs=runs, statuses=statuses)
        if not rules.contexts:
            # As merge_readiness: with nothing required, nothing proves this head is the one CI
            # was meant to pass.
            reasons.append(f"no-required-checks: {pr.base_ref} requires no check")
        elif verdict.verdict != "green":
            reasons.append(f"CI is {verdict.verdict}: {', '.join(verdict.reasons)}")
    reasons.extend(_state_reasons(pr, head_sha))
    blockers: list[Blocker] = []
    if pr.state == "open" and not pr.merged:
        try:
            state = load_review_state(port, repo, pr, branch)
        except ForgeError as exc:
            reasons.append(f"cannot read reviews: {exception_reason(exc)}")
        else:
            blockers = review_blockers(pr, state)
            reasons.extend(describe_blocker(b) for b in blockers)
    if rules.strict and pr.behind:
        reasons.append(f"strict base {pr.base_ref}: head is behind by {pr.behind_by}")
    if clone is not None:
        reasons.extend(
            _clone_reasons(port, repo, pr, approved_head=approved_head, clone=clone, git=git)
        )
    else:
        if approved_head != pr.head_sha:
            reasons.append(
                f"approved head {approved_head} is not the PR head and no --clone was given "
                "to prove the walk"
            )
        pr, mergeable = _settled_mergeable(port, repo, pr, sleep, delays, quick=bool(reasons))
        if mergeable == "dirty":
            reasons.append("the forge reports a conflict (mergeable_state dirty)")
        elif mergeable == "unknown" and not reasons:
            waited = " ".join(f"{d:g}" for d in delays)
            reasons.append(f"mergeable_state still unknown after re-reads at {waited} s")
        elif mergeable is None:
            reasons.append("cannot re-read the PR's mergeable state")
        if pr.head_sha != head_sha and not any(r.startswith("head moved") for r in reasons):
            reasons.append(f"head moved to {pr.head_sha} while waiting, expected {head_sha}")
    return PremergeResult(
        repo=repo,
        number=number,
        ok=not reasons,
        reasons=tuple(dict.fromkeys(reasons)),
        head=pr.head_sha,
        base=pr.base_ref,
        required=tuple(c.context for c in rules.contexts),
        strict=rules.strict,
        behind_by=pr.behind_by,
        blockers=tuple(blockers),
    )


def _failed(repo: str, number: int, reasons: list[str]) -> PremergeResult:
    return PremergeResult(
        repo=repo,
        number=number,
        ok=False,
        reasons=tuple(reasons),
        head=None,
        base=None,
        required=(),
        strict=False,
        behind_by=0,
    )


def _state_reasons(pr: PullRequest, head_sha: str) -> list[str]:
    reasons = []
    if pr.merged:
        reasons.append("the PR is already merged")
    elif pr.state != "open":
        reasons.append(f"the PR is {pr.state}")
    if pr.draft:
        reasons.append("the PR is a draft")
    if pr.head_sha != head_sha:
        reasons.append(f"head moved: the PR head is {pr.head_sha}, expected {head_sha}")
    return reasons


def _settled_mergeable(
    port: ForgePort,
    repo: str,
    pr: PullRequest,
    sleep: Callable[[float], None],
    delays: Sequence[float],
    *,
    quick: bool,
) -> tuple[PullRequest, str | None]:
    """Re-read an `unknown` mergeable state after each delay; skip waiting when already failing."""
    state = pr.mergeable_state
    if state != "unknown" or quick:
        return pr, state
    for delay in delays:
        sleep(delay)
        try:
            fresh = port.wire.get_pr(repo, pr.number)
        except ForgeError:
            return pr, None
        # Keep behind/behind_by from the full read; only the lazy fields are new.
        pr = replace(pr, head_sha=fresh.head_sha, mergeable_state=fresh.mergeable_state)
        if pr.mergeable_state != "unknown":
            return pr, pr.mergeable_state
    return pr, "unknown"


class _GitFailed(Exception):
    pass


def _clone_reasons(
    port: ForgePort,
    repo: str,
    pr: PullRequest,
    *,
    approved_head: str,
    clone: str,
    git: GitExec | None,
) -> list[str]:
    if git is None:
        from ._git import exec_git

        git = exec_git

    def run(*args: str) -> tuple[int, str]:
        try:
            done = git(list(args), ExecOptions(cwd=clone, timeout=_GIT_TIMEOUT))
        except ForgeError as exc:
            raise _GitFailed(exception_reason(exc)) from None
        except OSError as exc:
            raise _GitFailed(f"cannot run git in {clone}: {exc.strerror}") from None
        return done.returncode, done.stdout.decode("utf-8", "replace").strip()

    def must(*args: str) -> str:
        code, out = run(*args)
        if code != 0:
            raise _GitFailed(f"git {args[0]} failed (exit {code})")
        return out

    try:
        base_tip = port.get_head_sha(repo, pr.base_ref)
    except ForgeError as exc:
        return [f"cannot read the base tip of {pr.base_ref}: {exception_reason(exc)}"]
    if base_tip is None:
        return [f"the base branch {pr.base_ref} has no tip on the forge"]
    reasons: list[str] = []
    head = pr.head_sha
    try:
        wanted = ((head, "PR head"), (approved_head, "approved head"), (base_tip, "base tip"))
        for sha, what in wanted:
            code, _ = run("cat-file", "-e", f"{sha}^{{commit}}")
            if code != 0:
                raise _GitFailed(f"the clone lacks the {what} commit {sha}: fetch it first")
        reasons.extend(_walk_reasons(run, must, head, approved_head, base_tip))
        code, _ = run("merge-tree", "--write-tree", "--no-messages", base_tip, head)
        if code == 1:
            reasons.append(f"the head conflicts with the base tip {base_tip} (git merge-tree)")
        elif code != 0:
            raise _GitFailed(f"git merge-tree failed (exit {code})")
    except _GitFailed as exc:
        reasons.append(str(exc))
    return reasons


def _walk_reasons(
    run: Callable[..., tuple[int, str]],
    must: Callable[..., str],
    head: str,
    approved_head: str,
    base_tip: str,
) -> list[str]:
    listing = must("rev-list", "--first-parent", "--parents", f"--max-count={_WALK_LIMIT}", head)
    parents: dict[str, tuple[str, ...]] = {}
    for line in listing.splitlines():
        sha, *rest = line.split()
        parents[sha] = tuple(rest)
    cache: dict[str, bool] = {}

    def on_base(sha: str) -> bool:
        if sha not in cache:
            code, _ = run("merge-base", "--is-ancestor", sha, base_tip)
            if code not in (0, 1):
                raise _GitFailed(f"git merge-base failed (exit {code})")
            cache[sha] = code == 0
        return cache[sha]

    walk = approved_head_walk(
        head=head, approved_head=approved_head, parents=parents, on_base=on_base
    )
    if not walk.reachable:
        return [f"approved head {approved_head} is unreachable from the head: {walk.detail}"]
    # The tree proof: approved head + newest merged base commit must be exactly the head's tree.
    other = walk.proof_base or head
    code, tree = run("merge-tree", "--write-tree", "--no-messages", approved_head, other)
    if code == 1:
        return [f"tree proof failed: approved head {approved_head} conflicts with {other}"]
    if code != 0:
        raise _GitFailed(f"git merge-tree failed (exit {code})")
    head_tree = must("rev-parse", f"{head}^{{tree}}")
    if tree.split()[0] != head_tree:
        return [
            f"tree proof failed: the head's tree differs from approved head {approved_head} "
            f"merged with {other}"
        ]
    return []
