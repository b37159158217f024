"""Reading pr-status's one GraphQL answer (`graphql.PR_SNAPSHOT_QUERY`): the PR, its head's
check runs, its base's rulesets and whether the head holds the base tip, and its review state.

What the document cannot answer whole is None in the `PrSnapshot` (a connection with another
page, a last commit that is not the PR's head): `_pr_snapshot` reads that part over REST. A
missing repository or PR is ForgeCliError kind `not-found` (status 404); a body of another shape
kind `malformed`. Module-level imports: none beyond `__future__`, so forge-cli can build and start
the read before the library loads.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from .._records import CheckRun, PullRequest, RequiredChecks, ReviewState

__all__ = [
    "NO_SUCH_PR",
    "PrSnapshot",
    "open_pr_base",
    "parse_pr_snapshot",
    "pr_snapshot_request",
    "review_state_from_snapshot",
]

NO_SUCH_PR = "GraphQL: no such repository or pull request"


def pr_snapshot_request(repo: str, number: int) -> bytes:
    """Return the GraphQL request body (stdin of `gh api graphql --input -`) for one PR."""
    import json

    from .graphql import PR_SNAPSHOT_QUERY

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
    from .._errors import ForgeCliError
    from . import shape
    from .failures import parsed

    if isinstance(body, dict) and body.get("errors"):
        if _not_found(body):
            raise ForgeCliError(NO_SUCH_PR, status=404, kind="not-found")
        return None
    data = parsed("a pull request snapshot", body, lambda d: shape.as_obj(shape.as_obj(d)["data"]))
    repository = data.get("repository")
    if repository is None:
        raise ForgeCliError(NO_SUCH_PR, status=404, kind="not-found")
    return parsed("a pull request snapshot", repository, _snapshot)


def open_pr_base(body: Any) -> str | None:
    """Return the base branch an answer to PR_SNAPSHOT_QUERY names for an open PR, else None.

    A hint, not a verdict: pr-status starts its classic-protection read with it before the answer
    is parsed (`parse_pr_snapshot` still reads the whole answer); any other shape gives None.
    """
    data = body.get("data") if isinstance(body, dict) else None
    repository = data.get("repository") if isinstance(data, dict) else None
    pull = repository.get("pullRequest") if isinstance(repository, dict) else None
    if not isinstance(pull, dict) or pull.get("state") != "OPEN":
        return None
    base = pull.get("baseRefName")
    return base if isinstance(base, str) and base else None


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
    from . import shape
    from .checks import rules_from_graphql, runs_from_graphql

    data = shape.as_obj(shape.as_obj(repository)["pullRequest"])
    pr = pull_from_graphql(data)
    head_sha = pr.head_sha
    # `baseRef` and its `target` may be null (a deleted base): then nothing is proven up to date
    # and the rules are read over REST. A key left out is malformed, never "no base".
    base = data["baseRef"]
    base_tip = None if base is None else shape.oid(shape.as_obj(base)["target"])
    head = _head_commit(data, head_sha)
    runs = None
    up_to_date = False
    if head is not None:
        runs = runs_from_graphql(head, head_sha)
        ancestors = {
            shape.as_str(shape.as_obj(c)["oid"])
            for c in shape.as_list(shape.as_obj(head["history"])["nodes"])
        }
        up_to_date = base_tip is not None and (base_tip == head_sha or base_tip in ancestors)
    rules = None if base is None else rules_from_graphql(shape.as_obj(base)["rules"])
    return PrSnapshot(pr=pr, runs=runs, rules=rules, up_to_date=up_to_date, data=data)


def _head_commit(data: Mapping[str, Any], head_sha: str) -> Mapping[str, Any] | None:
    """Return the PR's last commit when it is the head `head_sha`, else None."""
    from . import shape

    commits = shape.as_list(shape.as_obj(data["commits"])["nodes"])
    head = shape.as_obj(shape.as_obj(commits[-1])["commit"]) if commits else None
    if head is None or shape.as_str(head["oid"]) != head_sha:
        return None
    return head


def pull_from_graphql(data: Mapping[str, Any]) -> PullRequest:
    """Return the PR a GraphQL `PullRequest` (PR_SNAPSHOT_QUERY's fields) describes.

    Every field the document selects must be there: a non-null one (GitHub's schema) absent,
    null or of another JSON type, and a nullable one left out, raise `shape.Unmappable`. Only an
    explicit null of a nullable field reads as None (`headRepository`: a deleted fork).
    """
    from .._records import MERGEABLE_STATES, PullRequest
    from . import shape

    state = shape.as_str(data["state"])
    if state not in ("OPEN", "CLOSED", "MERGED"):
        raise shape.Unmappable
    head_repo = data["headRepository"]
    return PullRequest(
        number=shape.as_int(data["number"]),
        state="open" if state == "OPEN" else "closed",
        head_sha=shape.as_str(data["headRefOid"]),
        head_ref=shape.as_str(data["headRefName"]),
        head_repo=None
        if head_repo is None
        else shape.as_str(shape.as_obj(head_repo)["nameWithOwner"]),
        base_ref=shape.as_str(data["baseRefName"]),
        base_sha=shape.as_str(data["baseRefOid"]),
        mergeable_state=shape.one_of(
            shape.as_str(data["mergeStateStatus"]).lower(), MERGEABLE_STATES
        ),
        merged=shape.as_bool(data["merged"]),
        merge_sha=shape.oid(data["mergeCommit"]),
        merged_at=shape.opt_str(data["mergedAt"]),
        draft=shape.as_bool(data["isDraft"]),
        title=shape.as_str(data["title"]),
    )


def review_state_from_snapshot(data: Mapping[str, Any], head_sha: str) -> ReviewState | None:
    """Return the whole review state the snapshot's `pullRequest` object answers; None when a
    part has another page or its last commit is not `head_sha` (read it through the port)."""
    from .failures import parsed
    from .reviews import review_state_from_pull

    def read(pull: Any) -> ReviewState | None:
        head = _head_commit(pull, head_sha)
        if head is None:
            return None  # the head commit's users are not in the document
        return review_state_from_pull(pull, head)

    return parsed("a pull request snapshot", data, read)
