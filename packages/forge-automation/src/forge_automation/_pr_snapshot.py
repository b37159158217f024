"""One PR's merge snapshot in one GraphQL read: the PR, its head's check runs, its base's rules,
and its review state (reviews, pending review requests, review threads, the forge's review
decision, the head commit's users; `pr_review_state`).

`forge-cli pr-status` used to make four REST calls in two rounds (the PR first, then the base's
rules and the behind count, which need the PR's base). `_github.graphql.PR_SNAPSHOT_QUERY` asks
for all of it in one document: the PR's fields, its head commit (the last of its commits) with
every check run of every check suite, the base branch's ruleset rules, the base tip, and the
head's first 100 ancestors, which prove "not behind" when they hold the base tip.

The read never decides on less than the REST reads would: each part the document cannot answer
whole is read again over REST, exactly as before (`pr_snapshot`):
- classic protection, always for an open PR: GitHub layers it on the rulesets, and the document
  does not ask for it, as GraphQL's `Ref.branchProtectionRule` is null both for "no rule" and for
  a caller who may not see it (no admin rights, or a token without the administration permission),
  where REST's two 404 bodies tell them apart; the rules go through `_rules.load_branch_rules`
  (premerge's one loader), given the document's rulesets;
- a connection with another page (more than 100 check suites, runs per suite, or rules), or a
  last commit that is not the PR's head: the runs by sha, or the rulesets over REST;
- a strict base whose tip is not among the head's first 100 ancestors: the REST compare;
- a GraphQL `errors` entry (anything but "no such PR"): every part over REST;
- more than 100 reviews or review threads, or a last commit that is not the PR's head: the
  review state through `ForgePort.review_state` (every page).
A failed or malformed read raises ForgeCliError; "no such PR or repository" is its 404.

The answer is read by `_github.snapshot` (`parse_pr_snapshot`); readers that need more of the PR
add fields to the document and read them from `PrSnapshot.data` (the raw `pullRequest` object).
Module-level imports: none beyond `__future__`, so forge-cli can start the read before the
library loads.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._exec import GhExec
    from ._github.snapshot import PrSnapshot
    from ._port import ForgePort
    from ._records import CheckRun, ClassicProtection, ReviewState
    from ._rules import BranchRules

__all__ = [
    "complete_pr_snapshot",
    "pr_review_state",
    "pr_snapshot",
    "read_classic_protection",
    "read_pr_snapshot",
    "rest_port",
]


def pr_snapshot(
    exec: GhExec, repo: str, number: int, *, timeout: float | None = 60.0
) -> PrSnapshot:
    """Read one PR's whole snapshot: `read_pr_snapshot`, then `complete_pr_snapshot`."""
    snapshot = read_pr_snapshot(exec, repo, number, timeout=timeout)
    return complete_pr_snapshot(snapshot, exec, repo, timeout=timeout)


def read_pr_snapshot(
    exec: GhExec,
    repo: str,
    number: int,
    *,
    timeout: float | None = 60.0,
    request: bytes | None = None,
) -> PrSnapshot:
    """Make the GraphQL read (`request`, default `pr_snapshot_request`) through `exec`.

    An answer holding an `errors` entry other than "no such PR" reads the PR over REST instead
    and leaves every other part to `complete_pr_snapshot`. A missing repository or PR raises
    ForgeCliError with status 404 (kind `not-found`); any other failed or malformed read raises
    ForgeCliError too.
    """
    from ._gh import gh_call, graphql_args
    from ._github.snapshot import PrSnapshot, parse_pr_snapshot, pr_snapshot_request
    from ._validate import validate_number, validate_repo

    validate_repo(repo)
    validate_number(number)
    body = request if request is not None else pr_snapshot_request(repo, number)
    response = gh_call(exec, graphql_args(), input=body, read=True, timeout=timeout)
    snapshot = parse_pr_snapshot(response.json())
    if snapshot is not None:
        return snapshot
    pr = rest_port(exec, timeout).wire.get_pr(repo, number)
    return PrSnapshot(pr=pr, runs=None, rules=None, up_to_date=False, data={})


def read_classic_protection(
    exec: GhExec, repo: str, branch: str, *, timeout: float | None = 60.0
) -> ClassicProtection | None:
    """Read the branch's classic protection as the wire does, without loading the wire.

    None for GitHub's 404 `Branch not protected`; its 404 `Not Found` raises ProtectionHidden;
    any other failed or malformed read raises ForgeCliError.
    """
    from ._gh import send
    from ._github.protection import classic_protection_of
    from ._github.rest import get_branch_protection

    response = send(exec, get_branch_protection(repo, branch), timeout=timeout)
    return classic_protection_of(response.status, response.json(), repo, branch)


def rest_port(exec: GhExec, timeout: float | None) -> ForgePort:
    """Return a port over `exec` for the REST reads the document could not answer."""
    from ._port import forge_port
    from ._wire import gh_cli_wire

    return forge_port(gh_cli_wire(exec, timeout=timeout))


def complete_pr_snapshot(
    snapshot: PrSnapshot,
    exec: GhExec,
    repo: str,
    *,
    timeout: float | None = 60.0,
    rules: BranchRules | None = None,
) -> PrSnapshot:
    """Read over REST every part `snapshot` lacks; return it with `runs` and `rules` set.

    `rules` is the base branch's rules `load_branch_rules` read (given the document's rulesets);
    without it they are read here, except for a PR that is no longer open, whose rulesets the
    document answered (it merges nothing: classic protection is not read for it).
    `pr.behind`/`behind_by` are settled for an open PR on a strict base (readiness reads them
    only there). Every failed or malformed read raises ForgeCliError (hidden classic protection
    ProtectionHidden): none becomes "nothing required", "no runs" or "up to date".
    """
    from dataclasses import replace

    from ._errors import ForgeCliError
    from ._github.snapshot import PrSnapshot
    from ._parallel import parallel
    from ._rules import load_branch_rules

    pr = snapshot.pr
    is_open = pr.state == "open" and not pr.merged
    known = snapshot.rules
    known_runs = snapshot.runs
    proven = snapshot.up_to_date
    port = None

    def rest() -> ForgePort:
        nonlocal port
        if port is None:
            port = rest_port(exec, timeout)
        return port

    if rules is not None:
        got_rules = rules.required_checks()
    elif not is_open and known is not None:
        got_rules = known
    else:
        got_rules = load_branch_rules(rest(), repo, pr.base_ref, rulesets=known).required_checks()
    # The compare counts only on a strict base (readiness ignores "behind" elsewhere) that the
    # head's ancestors did not prove reached.
    compare = is_open and got_rules.strict and not proven
    if known_runs is not None and not compare:
        # The usual case: the one read answered everything else.
        return PrSnapshot(
            pr=pr, runs=known_runs, rules=got_rules, up_to_date=proven, data=snapshot.data
        )

    def runs() -> tuple[CheckRun, ...]:
        return known_runs if known_runs is not None else rest().check_runs(repo, pr.head_sha)

    def behind_by() -> int | None:
        if not compare:
            return None
        ancestry = rest().wire.compare_ancestry(repo, pr.base_ref, pr.head_sha)
        if ancestry is None:
            raise ForgeCliError(
                f"cannot tell whether #{pr.number} is behind its base", status=404, kind="http"
            )
        return ancestry.behind_by

    rest()  # built once, before the threads share it
    got_runs, behind = parallel(runs, behind_by)
    if behind:
        pr = replace(pr, behind=True, behind_by=behind)
    return PrSnapshot(
        pr=pr, runs=got_runs, rules=got_rules, up_to_date=not behind, data=snapshot.data
    )


def pr_review_state(
    snapshot: PrSnapshot,
    exec: GhExec,
    repo: str,
    *,
    timeout: float | None = 60.0,
    rules: BranchRules | None = None,
) -> ReviewState:
    """Return the PR's whole review state, its base's review rules included.

    The snapshot's document answers the reviews, requests, threads and decision in the usual
    case; what it cannot answer whole (more than 100 reviews or review threads, or a head
    commit the document did not reach) is read through `ForgePort.review_state`. The review
    rules are `rules` (what `load_branch_rules` read), else read as premerge reads them
    (`load_review_rules`, rulesets and classic protection layered): one rule loader for both.
    Every failed or malformed read raises ForgeCliError, a head that moved ForgeConflictError.
    """
    from dataclasses import replace

    from ._github.snapshot import review_state_from_snapshot
    from ._rules import load_branch_rules

    pr = snapshot.pr
    state = None
    if snapshot.data:
        state = review_state_from_snapshot(snapshot.data, pr.head_sha)
    port = None
    if state is None or state.head_sha != pr.head_sha:
        port = rest_port(exec, timeout)
        state = port.review_state(repo, pr.number, pr.head_sha)
    if rules is None:
        port = port or rest_port(exec, timeout)
        rules = load_branch_rules(port, repo, pr.base_ref, rulesets=snapshot.rules)
    return replace(state, rules=rules.review_rules())
