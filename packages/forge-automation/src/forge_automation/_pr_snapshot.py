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
  cannot ask for it; the rules go through `_rules.load_branch_rules` (premerge's one loader),
  given the document's rulesets;
- a connection with another page (more than 100 check suites, runs per suite, or rules), or a
  last commit that is not the PR's head: the runs by sha, or the rulesets over REST;
- a strict base whose tip is not among the head's first 100 ancestors: the REST compare;
- a GraphQL `errors` entry (anything but "no such PR"): every part over REST;
- more than 100 reviews or review threads, or a last commit that is not the PR's head: the
  review state through `ForgePort.review_state` (every page).
A failed or malformed read raises ForgeCliError; "no such PR or repository" is its 404.

Readers that need more of the PR add fields to `PR_SNAPSHOT_QUERY` and read them from
`PrSnapshot.data` (the raw `pullRequest` object). Module-level imports: none beyond `__future__`,
so forge-cli can start the read before the library loads.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ._exec import GhExec
    from ._port import ForgePort
    from ._records import CheckRun, ClassicProtection, PullRequest, RequiredChecks, ReviewState
    from ._rules import BranchRules

__all__ = [
    "PrSnapshot",
    "complete_pr_snapshot",
    "parse_pr_snapshot",
    "pr_review_state",
    "pr_snapshot",
    "pr_snapshot_request",
    "read_classic_protection",
    "read_pr_snapshot",
    "rest_port",
]

NO_SUCH_PR = "GraphQL: no such repository or pull request"


def pr_snapshot_request(repo: str, number: int) -> bytes:
    """Return the GraphQL request body (stdin of `gh api graphql --input -`) for one PR."""
    import json

    from ._github.graphql import PR_SNAPSHOT_QUERY

    owner, _, name = repo.partition("/")
    variables = {"owner": owner, "name": name, "number": number}
    return json.dumps({"query": PR_SNAPSHOT_QUERY, "variables": variables}).encode()


class PrSnapshot:
    """What the GraphQL read answered whole; None where a part must be read over REST.

    `pr` carries `behind`/`behind_by` only once `pr_snapshot` has settled them. `runs` is every
    run of the head (superseded ones included), `rules` the rulesets' required checks with at
    least one context, `up_to_date` True when the base tip is among the head's ancestors read.
    `data` is the raw `pullRequest` object.
    """

    __slots__ = ("data", "pr", "rules", "runs", "up_to_date")

    def __init__(
        self,
        *,
        pr: PullRequest,
        runs: tuple[CheckRun, ...] | None,
        rules: RequiredChecks | None,
        up_to_date: bool,
        data: Mapping[str, Any],
    ) -> None:
        self.pr = pr
        self.runs = runs
        self.rules = rules
        self.up_to_date = up_to_date
        self.data = data


def parse_pr_snapshot(body: Any) -> PrSnapshot | None:
    """Read a GraphQL answer to PR_SNAPSHOT_QUERY; None when it holds an `errors` entry.

    A missing repository or PR raises ForgeCliError with status 404; an answer of another
    shape raises ForgeCliError (kind `malformed`).
    """
    from ._errors import ForgeCliError
    from ._shape import _mapped_data, _obj

    if isinstance(body, dict) and body.get("errors"):
        if _not_found(body):
            raise ForgeCliError(NO_SUCH_PR, status=404, kind="not-found")
        return None
    data = _mapped_data("a pull request snapshot", body, lambda d: _obj(_obj(d)["data"]))
    repository = data.get("repository")
    if repository is None:
        raise ForgeCliError(NO_SUCH_PR, status=404, kind="not-found")
    return _mapped_data("a pull request snapshot", repository, _snapshot)


def _not_found(body: Mapping[str, Any]) -> bool:
    errors = body.get("errors")
    if not isinstance(errors, list):
        return False
    for error in errors:
        if not isinstance(error, dict) or error.get("type") != "NOT_FOUND":
            return False
        if error.get("path") not in (["repository"], ["repository", "pullRequest"]):
            return False
    return True


def _snapshot(repository: Any) -> PrSnapshot:
    from ._records import PullRequest
    from ._shape import _bool, _int, _list, _obj, _opt_obj, _opt_str, _str, _Unmappable

    data = _obj(_obj(repository)["pullRequest"])
    state = _str(data["state"])
    if state not in ("OPEN", "CLOSED", "MERGED"):
        raise _Unmappable
    merged = _bool(data["merged"])
    head_sha = _str(data["headRefOid"])
    head_repo = _opt_obj(data.get("headRepository"))
    pr = PullRequest(
        number=_int(data["number"]),
        state="open" if state == "OPEN" else "closed",
        head_sha=head_sha,
        head_ref=_str(data["headRefName"]),
        head_repo=_str(head_repo["nameWithOwner"]) if head_repo else None,
        base_ref=_str(data["baseRefName"]),
        base_sha=_opt_str(data.get("baseRefOid")),
        mergeable_state=_str(data["mergeStateStatus"]).lower(),
        merged=merged,
        merge_sha=_opt_str(_opt_obj(data.get("mergeCommit")).get("oid")),
        merged_at=_opt_str(data.get("mergedAt")),
        draft=_bool(data["isDraft"]),
        title=_opt_str(data.get("title")) or "",
    )
    base = _opt_obj(data.get("baseRef"))
    base_tip = _opt_str(_opt_obj(base.get("target")).get("oid"))
    commits = _list(_obj(data["commits"])["nodes"])
    head = _obj(_obj(commits[-1])["commit"]) if commits else None
    runs = None
    up_to_date = False
    if head is not None and _str(head["oid"]) == head_sha:
        runs = _runs(head, head_sha)
        ancestors = {_str(_obj(c)["oid"]) for c in _list(_obj(head["history"])["nodes"])}
        up_to_date = base_tip is not None and (base_tip == head_sha or base_tip in ancestors)
    return PrSnapshot(
        pr=pr, runs=runs, rules=_rules(base.get("rules")), up_to_date=up_to_date, data=data
    )


def _runs(commit: Mapping[str, Any], head_sha: str) -> tuple[CheckRun, ...] | None:
    from ._records import CheckRun
    from ._shape import _app_id, _bool, _int, _list, _obj, _opt_obj, _opt_str, _str

    suites = _obj(commit["checkSuites"])
    if _bool(_obj(suites["pageInfo"])["hasNextPage"]):
        return None
    runs: list[CheckRun] = []
    for suite in _list(suites["nodes"]):
        app_id = _app_id(_opt_obj(_obj(suite).get("app")).get("databaseId"))
        connection = _obj(_obj(suite)["checkRuns"])
        if _bool(_obj(connection["pageInfo"])["hasNextPage"]):
            return None
        for node in _list(connection["nodes"]):
            run = _obj(node)
            conclusion = _opt_str(run.get("conclusion"))
            runs.append(
                CheckRun(
                    id=_int(run["databaseId"]),
                    name=_str(run["name"]),
                    status=_str(run["status"]).lower(),
                    conclusion=conclusion.lower() if conclusion is not None else None,
                    app_id=app_id,
                    head_sha=head_sha,
                    completed_at=_opt_str(run.get("completedAt")),
                    started_at=_opt_str(run.get("startedAt")),
                    details_url=_opt_str(run.get("detailsUrl")),
                    external_id=_opt_str(run.get("externalId")) or None,
                )
            )
    # REST lists a commit's runs newest first; the order only matters to readers of ids.
    return tuple(sorted(runs, key=lambda r: r.id, reverse=True))


def _rules(value: object) -> RequiredChecks | None:
    """Return the rulesets' required checks, or None when they must be read over REST."""
    from ._records import RequiredChecks, RequiredContext, ReviewRules
    from ._shape import _app_id, _bool, _int, _list, _obj, _str
    from ._verdict import merge_required_checks

    if value is None:
        return None  # no rules connection (no base ref, or not readable): REST decides
    connection = _obj(value)
    if _bool(_obj(connection["pageInfo"])["hasNextPage"]):
        return None
    found: list[RequiredChecks] = []
    for node in _list(connection["nodes"]):
        rule = _obj(node)
        if _str(rule["type"]) == "PULL_REQUEST":
            params = _obj(rule["parameters"])
            reviews = ReviewRules(
                required_approving_review_count=_int(params["requiredApprovingReviewCount"]),
                require_code_owner_review=_bool(params["requireCodeOwnerReview"]),
                require_last_push_approval=_bool(params["requireLastPushApproval"]),
                dismiss_stale_reviews_on_push=_bool(params["dismissStaleReviewsOnPush"]),
                required_review_thread_resolution=_bool(params["requiredReviewThreadResolution"]),
                source="ruleset",
            )
            found.append(RequiredChecks(reviews=reviews))
            continue
        if _str(rule["type"]) != "REQUIRED_STATUS_CHECKS":
            continue
        params = _obj(rule["parameters"])
        checks = [_obj(c) for c in _list(params["requiredStatusChecks"])]
        contexts = tuple(
            RequiredContext(context=_str(c["context"]), app_id=_app_id(c.get("integrationId")))
            for c in checks
        )
        strict = _bool(params["strictRequiredStatusChecksPolicy"])
        found.append(RequiredChecks(contexts=contexts, strict=strict))
    return merge_required_checks(found)


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
    from ._gh import gh_call
    from ._ghenv import protection_path, rest_args
    from ._protection_shape import classic_protection_of

    args = rest_args("GET", protection_path(repo, branch))
    response = gh_call(exec, args, read=True, timeout=timeout, ok=frozenset({404}))
    return classic_protection_of(response, repo, branch)


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
    if known_runs is not None and not (is_open and got_rules.strict and not proven):
        # The usual case: the one read answered everything else.
        return PrSnapshot(
            pr=pr, runs=known_runs, rules=got_rules, up_to_date=proven, data=snapshot.data
        )

    def runs() -> tuple[CheckRun, ...]:
        return known_runs if known_runs is not None else rest().check_runs(repo, pr.head_sha)

    def behind_by() -> int | None:
        # The compare counts only on a strict base (readiness ignores "behind" elsewhere) that
        # the head's ancestors did not prove reached.
        if not (is_open and got_rules.strict and not proven):
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

    from ._review_shape import review_state_from_pull
    from ._rules import load_branch_rules
    from ._shape import _list, _mapped_data, _obj, _str

    pr = snapshot.pr

    def from_document(data: Any) -> ReviewState | None:
        commits = _list(_obj(data["commits"])["nodes"])
        head = _obj(_obj(commits[-1])["commit"]) if commits else None
        if head is None or _str(head["oid"]) != pr.head_sha:
            return None  # the head commit's users are not in the document
        return review_state_from_pull(data, head)

    state = None
    if snapshot.data:
        state = _mapped_data("a pull request snapshot", snapshot.data, from_document)
    port = None
    if state is None or state.head_sha != pr.head_sha:
        port = rest_port(exec, timeout)
        state = port.review_state(repo, pr.number, pr.head_sha)
    if rules is None:
        port = port or rest_port(exec, timeout)
        rules = load_branch_rules(port, repo, pr.base_ref, rulesets=snapshot.rules)
    return replace(state, rules=rules.review_rules())
