"""Branch rules as GitHub enforces them: every active ruleset and classic protection, layered.

The one rule loader of the package: premerge, pr-status, ci-wait `--required` and the train all
read a branch's rules here, so they judge the same forge state alike. Policy:

- Rulesets (`GET .../rules/branches/{branch}`, or what pr-status's document already read): the
  free-plan 403 means none; any other failed or malformed read raises.
- Classic protection (`GET .../branches/{branch}/protection`, one read for checks and reviews):
  GitHub's 404 `Branch not protected` and the free-plan 403 mean none. Its 404 `Not Found` is
  its answer to every caller without admin rights: the protection is *hidden*, never none
  (`ProtectionHidden`). Any other failed or malformed read raises.
- Layering: GitHub enforces both sources at once, so the required contexts are the union of
  both, strict when either is, and each review parameter takes the strictest value of any
  source (most approvals; stale dismissal, code owners, last-push approval and conversation
  resolution when any source asks).
- Hidden protection: the required checks are unknown, so reading them raises
  ProtectionHidden (a failed read: never "no required checks"); the review part keeps what the
  rulesets ask and is marked `protection_hidden`, so that `merge_readiness` lets the forge's
  own `reviewDecision` decide it and blocks on every unresolved thread.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ._errors import ForgeCliError, ProtectionHidden
from ._records import ClassicProtection, PullRequest, RequiredChecks, ReviewRules, ReviewState
from ._verdict import merge_required_checks

# Not `typing.TYPE_CHECKING`: pr-status loads this module on its usual path, and neither typing
# nor the port (every record of the package) is needed to run it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal, TypeAlias

    from ._port import ForgePort

__all__ = [
    "BranchRules",
    "ClassicStatus",
    "layer_rules",
    "load_branch_rules",
    "load_required_contexts",
    "load_review_rules",
    "load_review_state",
    "rules_with_classic",
]

# What the classic-protection read found: rules, GitHub's "Branch not protected", the free-plan
# answer, or its 404 `Not Found` to a caller without admin rights.
if TYPE_CHECKING:
    ClassicStatus: TypeAlias = Literal["protected", "unprotected", "free-plan", "hidden"]
else:
    ClassicStatus = str


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchRules:
    """What the branch's rulesets and classic protection ask, read once; see the module.

    `rulesets` is what the active rulesets ask (their review rule in `rulesets.reviews`),
    `classic` classic protection when `classic_status` is `protected`.
    """

    repo: str
    branch: str
    rulesets: RequiredChecks
    classic: ClassicProtection | None = None
    classic_status: ClassicStatus = "unprotected"

    @property
    def hidden(self) -> bool:
        """Return whether GitHub hid the classic protection from this caller."""
        return self.classic_status == "hidden"

    def required_checks(self) -> RequiredChecks:
        """Return the layered required checks (`reviews` the layered review rules).

        Raises ProtectionHidden when the classic protection was hidden: its checks are unknown.
        """
        if self.hidden:
            raise _hidden(self.repo, self.branch)
        return layer_rules(self.rulesets, self.classic)

    def review_rules(self) -> ReviewRules:
        """Return the layered review rules; with hidden protection, the rulesets' rules marked
        `protection_hidden` (the forge's reviewDecision then decides the review part)."""
        rules = layer_rules(self.rulesets, self.classic).reviews or ReviewRules()
        return replace(rules, protection_hidden=True) if self.hidden else rules


def layer_rules(rulesets: RequiredChecks, classic: ClassicProtection | None) -> RequiredChecks:
    """Return what `rulesets` and `classic` ask together: every context, strict if either is,
    each review parameter at its strictest (`reviews` None when neither source has a rule)."""
    if classic is None:
        return rulesets
    parts = [rulesets, replace(classic.checks, reviews=classic.reviews)]
    layered = merge_required_checks(parts)
    sources = [r.source for r in (rulesets.reviews, classic.reviews) if r is not None]
    source = " and ".join(dict.fromkeys(sources)) or "none"
    reviews = layered.reviews
    return replace(layered, reviews=None if reviews is None else replace(reviews, source=source))


def load_branch_rules(
    port: ForgePort, repo: str, branch: str, *, rulesets: RequiredChecks | None = None
) -> BranchRules:
    """Read the branch's rulesets (unless `rulesets` already holds them) and its classic
    protection; raise ForgeCliError on any failed read the module does not name as "none"."""
    if rulesets is None:
        try:
            rulesets = port.required_checks(repo, branch)
        except ForgeCliError as exc:
            if exc.kind != "free-plan":
                raise
            rulesets = RequiredChecks()
    return rules_with_classic(repo, branch, rulesets, lambda: port.classic_protection(repo, branch))


def rules_with_classic(
    repo: str,
    branch: str,
    rulesets: RequiredChecks,
    read_classic: Callable[[], ClassicProtection | None],
) -> BranchRules:
    """Return the branch's rules from `rulesets` and what `read_classic()` answers, under the
    module's policy (hidden, free-plan, unprotected); any other failed read raises.

    `load_branch_rules` reads classic protection through the port; pr-status through its own
    light read (`_pr_snapshot.read_classic_protection`), which needs no wire.
    """
    try:
        classic = read_classic()
    except ProtectionHidden:
        return BranchRules(repo=repo, branch=branch, rulesets=rulesets, classic_status="hidden")
    except ForgeCliError as exc:
        if exc.kind != "free-plan":
            raise
        return BranchRules(repo=repo, branch=branch, rulesets=rulesets, classic_status="free-plan")
    return BranchRules(
        repo=repo,
        branch=branch,
        rulesets=rulesets,
        classic=classic,
        classic_status="unprotected" if classic is None else "protected",
    )


def load_required_contexts(port: ForgePort, repo: str, branch: str) -> RequiredChecks:
    """Return the branch's required checks, rulesets and classic protection layered.

    Only the free-plan 403 and GitHub's 404 `Branch not protected` read as "nothing required"
    from a source; any other failed or malformed read raises ForgeCliError, hidden classic
    protection (no admin rights) ProtectionHidden: it can never pass for "no required checks".
    """
    return load_branch_rules(port, repo, branch).required_checks()


def load_review_rules(
    port: ForgePort, repo: str, branch: str, rules: BranchRules | None = None
) -> ReviewRules:
    """Return the branch's review rules, rulesets and classic protection layered.

    `rules` is what `load_branch_rules` already read for the branch, so nothing is read twice.
    Hidden classic protection gives the rulesets' rules marked `protection_hidden`.
    """
    if rules is None:
        rules = load_branch_rules(port, repo, branch)
    return rules.review_rules()


def load_review_state(
    port: ForgePort, repo: str, pr: PullRequest, rules: BranchRules | None = None
) -> ReviewState:
    """Return the review state `merge_readiness(reviews=...)` judges, for `pr` at its head.

    Reads the base branch's review rules (`load_review_rules`) and the PR's reviews, threads
    and requests (`ForgePort.review_state`). Raises on any failed or malformed read, and
    ForgeConflictError when the head moved: never a partial state.
    """
    review_rules = load_review_rules(port, repo, pr.base_ref, rules)
    return replace(port.review_state(repo, pr.number, pr.head_sha), rules=review_rules)


def _hidden(repo: str, branch: str) -> ProtectionHidden:
    from ._github.protection import protection_hidden

    return protection_hidden(repo, branch)
