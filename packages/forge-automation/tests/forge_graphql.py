"""The test forge's GraphQL endpoint: documents executed against GitHub's published schema.

Every document is parsed and validated against npm `@octokit/graphql-schema` (graphql-core), its
connections are checked the way GitHub checks them before running anything (`first` or `last` is
required, at most 100), its cost is computed with GitHub's documented formula, and it is answered
by executing it with resolvers over the forge's state. A document GitHub would refuse gets GitHub's
kind of answer (HTTP 200, `errors` and no `data`) and is recorded as a violation, which fails the
test that sent it (see ForgeServer.__exit__). A field this fake does not model is a violation too.

State stays REST-shaped (RepoState); the GraphQL objects are built per request.
"""

from __future__ import annotations

import base64
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLNamedType,
    GraphQLResolveInfo,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    execute_sync,
    get_named_type,
    parse,
    validate,
)
from graphql.utilities import value_from_ast_untyped

from github_api import graphql_schema

if TYPE_CHECKING:
    from forge_support import ForgeState, RepoState

__all__ = ["CONNECTION_LIMIT", "GraphqlAnswer", "answer_graphql", "cursor", "query_requests"]

CONNECTION_LIMIT = 100
_UNMODELED = "FORGE_UNMODELED"


def cursor(offset: int) -> str:
    """Return the opaque cursor of the row before `offset` (like GitHub's `Y3Vyc29yOnYyOpH...`)."""
    return base64.b64encode(f"cursor:v2:{offset}".encode()).decode()


def _offset(value: str | None) -> int:
    if value is None:
        return 0
    try:
        text = base64.b64decode(value.encode(), validate=True).decode()
        return int(text.removeprefix("cursor:v2:"))
    except ValueError:
        raise GraphQLError(f"`{value}` does not appear to be a valid cursor.") from None


@dataclass
class GraphqlAnswer:
    """One answer: the JSON body, the points it cost, and the violations it recorded."""

    body: dict[str, Any]
    cost: int
    operation: str | None
    violations: list[str] = field(default_factory=list)


# -- cost and connection limits (before execution, as GitHub does) -----------------------------


def _argument(node: FieldNode, name: str, variables: Mapping[str, Any]) -> Any:
    for argument in node.arguments or ():
        if argument.name.value == name:
            return value_from_ast_untyped(argument.value, dict(variables))
    return None


def _included(
    node: FieldNode | InlineFragmentNode | FragmentSpreadNode, vs: Mapping[str, Any]
) -> bool:
    for directive in node.directives or ():
        name = directive.name.value
        condition = next((a for a in directive.arguments or () if a.name.value == "if"), None)
        if condition is None:
            continue
        value = value_from_ast_untyped(condition.value, dict(vs))
        if (name == "include" and not value) or (name == "skip" and value):
            return False
    return True


def query_requests(
    document: DocumentNode, operation: OperationDefinitionNode, variables: Mapping[str, Any]
) -> int:
    """Return the document's request count by GitHub's formula; raise GraphQLError on a bad page.

    Each connection costs one request per node its parent connections may return (their `first`
    or `last`); a connection without `first`/`last`, or asking for more than 100, is refused.
    """
    schema = graphql_schema()
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    total = 0

    def walk(selections: SelectionSetNode, parent: GraphQLNamedType, multiplier: int) -> None:
        nonlocal total
        for selection in selections.selections:
            if not _included(selection, variables):  # type: ignore[arg-type]
                continue
            if isinstance(selection, InlineFragmentNode):
                target = (
                    schema.get_type(selection.type_condition.name.value)
                    if selection.type_condition
                    else parent
                )
                assert target is not None
                walk(selection.selection_set, target, multiplier)
            elif isinstance(selection, FragmentSpreadNode):
                fragment = fragments[selection.name.value]
                target = schema.get_type(fragment.type_condition.name.value)
                assert target is not None
                walk(fragment.selection_set, target, multiplier)
            elif isinstance(selection, FieldNode):
                name = selection.name.value
                fields = getattr(parent, "fields", {})
                if name.startswith("__") or name not in fields:
                    continue
                returned = get_named_type(fields[name].type)
                inner = multiplier
                if returned.name.endswith("Connection"):
                    first = _argument(selection, "first", variables)
                    last = _argument(selection, "last", variables)
                    size = first if first is not None else last
                    if size is None:
                        raise GraphQLError(
                            f"You must provide a `first` or `last` value to properly paginate "
                            f"the `{name}` connection.",
                            selection,
                        )
                    if not 0 <= int(size) <= CONNECTION_LIMIT:
                        which = "first" if first is not None else "last"
                        raise GraphQLError(
                            f"Requesting {size} records on the `{name}` connection exceeds the "
                            f"`{which}` limit of {CONNECTION_LIMIT} records.",
                            selection,
                        )
                    total += multiplier
                    inner = multiplier * max(int(size), 1)
                if selection.selection_set is not None:
                    walk(selection.selection_set, returned, inner)

    root = schema.query_type if operation.operation.value == "query" else schema.mutation_type
    assert root is not None
    walk(operation.selection_set, root, 1)
    return total


def _points(requests: int) -> int:
    return max(1, (requests + 50) // 100)


# -- resolvers -----------------------------------------------------------------------------------


def _field_resolver(source: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    """Read a field from a dict; a missing key is a field this fake does not model."""
    key = info.field_name
    if not isinstance(source, Mapping) or key not in source:
        raise GraphQLError(
            f"the test forge does not model {info.parent_type.name}.{key}",
            extensions={"type": _UNMODELED},
        )
    value = source[key]
    return value(info, **args) if callable(value) else value


def _connection(
    rows: Sequence[Any],
    build: Callable[[Any], Any] = lambda row: row,
    *,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    **_: Any,
) -> dict[str, Any]:
    # Only the page's rows are built into objects. `last` takes the final rows (of those after
    # `after`); `before` is not used by the package. The pre-execution check bounded the size.
    start = _offset(after)
    if first is None and last is not None:
        start = max(start, len(rows) - last)
    size = first if first is not None else last if last is not None else CONNECTION_LIMIT
    page = [build(row) for row in rows[start : start + size]]
    end = start + len(page)
    more = end < len(rows)
    return {
        "totalCount": len(rows),
        "pageInfo": {
            "hasNextPage": more,
            "hasPreviousPage": start > 0,
            "startCursor": cursor(start + 1) if page else None,
            "endCursor": cursor(end) if page else None,
        },
        "nodes": page,
        "edges": [{"cursor": cursor(start + i + 1), "node": n} for i, n in enumerate(page)],
    }


def _connect(
    rows: Callable[[], Sequence[Any]], build: Callable[[Any], Any] = lambda row: row
) -> Callable[..., dict[str, Any]]:
    return lambda info, **args: _connection(rows(), build, **args)


def _user(login: str | None) -> dict[str, Any] | None:
    return None if login is None else {"__typename": "User", "login": login}


def _upper(value: object) -> str | None:
    return str(value).upper() if value else None


class _Graph:
    """Builds the GraphQL objects of one request over one ForgeState."""

    def __init__(self, state: ForgeState, cost: int) -> None:
        self.state = state
        self.cost = cost

    def root(self) -> dict[str, Any]:
        return {
            "rateLimit": self.rate_limit,
            "repository": self.repository,
            "node": self.node,
        }

    def rate_limit(self, info: GraphQLResolveInfo[Any], dryRun: bool = False) -> dict[str, Any]:
        from forge_support import RATE_LIMIT

        reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.state.reset_at))
        return {
            "cost": self.cost,
            "limit": RATE_LIMIT,
            "remaining": self.state.graphql_remaining,
            "used": RATE_LIMIT - self.state.graphql_remaining,
            "resetAt": reset,
            "nodeCount": 0,
        }

    def repository(self, info: GraphQLResolveInfo[Any], owner: str, name: str, **_: Any) -> Any:
        repo = self.state.repos.get(f"{owner}/{name}")
        if repo is None:
            raise GraphQLError(
                f"Could not resolve to a Repository with the name '{owner}/{name}'.",
                extensions={"type": "NOT_FOUND"},
            )
        return self.repo_object(repo)

    def node(self, info: GraphQLResolveInfo[Any], id: str) -> Any:
        kind, _, rest = id.partition("_")
        if kind == "PRRT":
            try:
                full_name, number, index = base64.urlsafe_b64decode(rest).decode().split("#")
                repo = self.state.repos[full_name]
                thread = repo.review_threads[int(number)][int(index)]
            except (ValueError, KeyError, IndexError):
                thread = None
            if thread is not None:
                return self.thread(repo, int(number), int(index), thread)
        raise GraphQLError(
            f"Could not resolve to a node with the global id of '{id}'",
            extensions={"type": "NOT_FOUND"},
        )

    # -- repository --------------------------------------------------------------------------

    def repo_object(self, repo: RepoState) -> dict[str, Any]:
        return {
            "__typename": "Repository",
            "nameWithOwner": repo.full_name,
            "pullRequests": lambda info, **args: self.pull_requests(repo, **args),
            "pullRequest": lambda info, number: self.pull_request(repo, number),
            "ref": lambda info, qualifiedName: self.ref(repo, qualifiedName),
            "object": lambda info, oid=None, expression=None: self.object(repo, oid),
        }

    def pull_requests(
        self,
        repo: RepoState,
        *,
        states: Sequence[str] | None = None,
        orderBy: Mapping[str, str] | None = None,
        headRefName: str | None = None,
        baseRefName: str | None = None,
        labels: Any = None,
        **page: Any,
    ) -> dict[str, Any]:
        rows = [pr for _, pr in sorted(repo.prs.items())]
        if states:
            rows = [pr for pr in rows if _pr_state(pr) in states]
        if headRefName is not None:
            rows = [pr for pr in rows if pr["head"]["ref"] == headRefName]
        if baseRefName is not None:
            rows = [pr for pr in rows if pr["base"]["ref"] == baseRefName]
        order = orderBy or {"field": "CREATED_AT", "direction": "ASC"}
        descending = order["direction"] == "DESC"
        if order["field"] == "UPDATED_AT":
            # Stable: ties keep creation order, as the forge's answers were seen to.
            rows.sort(key=lambda pr: str(pr.get("updated_at")), reverse=descending)
        elif descending:
            rows.reverse()
        return _connection(rows, lambda pr: self.pull_object(repo, pr), **page)

    def pull_request(self, repo: RepoState, number: int) -> dict[str, Any]:
        pr = repo.prs.get(number)
        if pr is None:
            raise GraphQLError(
                f"Could not resolve to a PullRequest with the number of {number}.",
                extensions={"type": "NOT_FOUND"},
            )
        return self.pull_object(repo, pr)

    def pull_object(self, repo: RepoState, pr: dict[str, Any]) -> dict[str, Any]:
        number = int(pr["number"])
        head_sha = str(pr["head"]["sha"])
        merged = bool(pr.get("merged"))
        state = _pr_state(pr)
        head_ref = None
        if pr["head"].get("repo") is not None:
            head_ref = {
                "__typename": "Ref",
                "name": pr["head"]["ref"],
                "prefix": "refs/heads/",
                "target": self.commit(repo, head_sha),
            }
        return {
            "__typename": "PullRequest",
            "number": number,
            "title": pr.get("title", ""),
            "state": state,
            "isDraft": bool(pr.get("draft")),
            "headRefName": pr["head"]["ref"],
            "headRefOid": head_sha,
            "baseRefName": pr["base"]["ref"],
            "updatedAt": pr.get("updated_at"),
            "merged": merged,
            "mergedAt": pr.get("merged_at"),
            "closedAt": pr.get("closed_at", pr.get("updated_at")) if state != "OPEN" else None,
            "mergeCommit": self.commit(repo, pr["merge_commit_sha"]) if merged else None,
            "mergedBy": _user(pr.get("_merged_by")) if merged else None,
            "headRef": head_ref,
            "headRepository": (
                {"__typename": "Repository", "nameWithOwner": pr["head"]["repo"]["full_name"]}
                if pr["head"].get("repo") is not None
                else None
            ),
            "baseRefOid": repo.branches.get(pr["base"]["ref"], pr["base"].get("sha")),
            "baseRef": lambda info: self.ref(repo, str(pr["base"]["ref"])),
            "mergeStateStatus": lambda info: _merge_state(pr),
            "commits": lambda info, **args: _connection(
                _pr_commits(repo, pr),
                lambda sha: {"__typename": "PullRequestCommit", "commit": self.commit(repo, sha)},
                **args,
            ),
            "reviews": _connect(lambda: pr.get("_reviews", []), lambda r: self.review(repo, r)),
            "reviewDecision": pr.get("_review_decision"),
            "reviewRequests": _connect(lambda: pr.get("_review_requests", []), self.review_request),
            "reviewThreads": _connect(
                lambda: list(enumerate(repo.review_threads.get(number, []))),
                lambda it: self.thread(repo, number, it[0], it[1]),
            ),
            "timelineItems": lambda info, itemTypes=None, **args: _connection(
                self.timeline(repo, number, itemTypes), **args
            ),
        }

    def review(self, repo: RepoState, review: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "__typename": "PullRequestReview",
            "fullDatabaseId": str(review["id"]),
            "databaseId": review["id"],
            "author": _user(review.get("user")),
            "state": review["state"],
            "submittedAt": review.get("submitted_at"),
            "authorCanPushToRepository": bool(review.get("can_push", True)),
            "commit": self.commit(repo, review["commit_id"]) if review.get("commit_id") else None,
        }

    def review_request(self, request: Mapping[str, Any]) -> dict[str, Any]:
        reviewer: dict[str, Any] | None
        if "team" in request:
            org, _, slug = str(request["team"]).partition("/")
            reviewer = {
                "__typename": "Team",
                "slug": slug,
                "name": slug,
                "combinedSlug": f"{org}/{slug}",
            }
        elif request.get("login") is not None:
            reviewer = _user(str(request["login"]))
        else:
            reviewer = None
        return {
            "__typename": "ReviewRequest",
            "asCodeOwner": bool(request.get("as_code_owner")),
            "requestedReviewer": reviewer,
        }

    def thread(
        self, repo: RepoState, number: int, index: int, thread: Mapping[str, Any]
    ) -> dict[str, Any]:
        key = f"{repo.full_name}#{number}#{index}".encode()
        comments = [
            {
                "__typename": "PullRequestReviewComment",
                "fullDatabaseId": str(c["id"]),
                "databaseId": c["id"],
                "author": _user(c.get("user")),
                "authorAssociation": c.get("author_association", "NONE"),
                "path": c.get("path", ""),
                "line": c.get("line"),
                "body": c.get("body", ""),
            }
            for c in thread.get("comments", [])
        ]
        first = thread.get("comments") or [{}]
        return {
            "__typename": "PullRequestReviewThread",
            "id": "PRRT_" + base64.urlsafe_b64encode(key).decode(),
            "isResolved": bool(thread.get("resolved")),
            "path": first[0].get("path", ""),
            "line": first[0].get("line"),
            "comments": _connect(lambda: comments),
        }

    def timeline(
        self, repo: RepoState, number: int, item_types: Sequence[str] | None
    ) -> list[dict[str, Any]]:
        if item_types is not None and "HEAD_REF_FORCE_PUSHED_EVENT" not in item_types:
            return []
        return [
            {
                "__typename": "HeadRefForcePushedEvent",
                "beforeCommit": self.commit(repo, before) if before else None,
                "afterCommit": self.commit(repo, after),
            }
            for before, after in repo.force_pushes.get(number, [])
        ]

    # -- git objects -------------------------------------------------------------------------

    def ref(self, repo: RepoState, qualified: str) -> dict[str, Any] | None:
        branch = qualified.removeprefix("refs/heads/")
        tip = repo.branches.get(branch)
        if tip is None:
            return None
        return {
            "__typename": "Ref",
            "name": branch,
            "prefix": "refs/heads/",
            "target": self.commit(repo, tip),
            "rules": _connect(lambda: repo.rulesets.get(branch, []), _rule),
        }

    def object(self, repo: RepoState, oid: str | None) -> dict[str, Any] | None:
        if oid is None:
            return None
        known = (
            oid in repo.commits
            or any(pr["head"]["sha"] == oid for pr in repo.prs.values())
            or any(run["head_sha"] == oid for run in repo.check_runs)
        )
        return self.commit(repo, oid) if known else None

    def commit(self, repo: RepoState, sha: str) -> dict[str, Any]:
        _parents, message, date = repo.commits.get(sha, ((), "", "2024-01-01T00:00:00Z"))
        author, committer = repo.commit_users.get(sha, (None, None))
        return {
            "__typename": "Commit",
            "oid": sha,
            "author": {"__typename": "GitActor", "user": _user(author), "date": date},
            "committer": {"__typename": "GitActor", "user": _user(committer), "date": date},
            "message": message,
            "messageHeadline": message.splitlines()[0] if message else "",
            "committedDate": date,
            "statusCheckRollup": lambda info: self.rollup(repo, sha),
            "checkSuites": _connect(lambda: self.suites(repo, sha)),
            "history": lambda info, since=None, **args: _connection(
                self.history(repo, sha, since), lambda s: self.commit(repo, s), **args
            ),
        }

    def history(self, repo: RepoState, tip: str, since: str | None) -> list[str]:
        from forge_support import _ancestors

        ancestry = _ancestors(repo, tip)
        known = [s for s in ancestry if s in repo.commits]
        if since:
            known = [s for s in known if repo.commits[s][2] >= since]
        known.sort(key=lambda s: (repo.commits[s][2], -ancestry[s]), reverse=True)
        return known

    def suites(self, repo: RepoState, sha: str) -> list[dict[str, Any]]:
        """One check suite per app that ran checks on `sha` (the forge's app-per-suite shape)."""
        by_app: dict[int, list[dict[str, Any]]] = {}
        for run in repo.check_runs:
            if run["head_sha"] == sha:
                by_app.setdefault(int(run["app"]["id"]), []).append(run)
        return [
            {
                "__typename": "CheckSuite",
                "app": {"__typename": "App", "databaseId": app_id},
                "checkRuns": lambda info, filterBy=None, runs=runs, **args: _connection(
                    _filter_runs(runs, filterBy), _check_run, **args
                ),
            }
            for app_id, runs in by_app.items()
        ]

    def rollup(self, repo: RepoState, sha: str) -> dict[str, Any] | None:
        from forge_support import latest_statuses

        latest: dict[tuple[str, int], dict[str, Any]] = {}
        for run in repo.check_runs:
            if run["head_sha"] == sha:
                latest[(run["name"], run["app"]["id"])] = run
        nodes: list[dict[str, Any]] = [
            {
                "__typename": "CheckRun",
                "databaseId": run["id"],
                "name": run["name"],
                "status": _upper(run["status"]),
                "conclusion": _upper(run.get("conclusion")),
                "completedAt": run.get("completed_at"),
            }
            for run in latest.values()
        ]
        nodes += [
            {
                "__typename": "StatusContext",
                "context": status["context"],
                "state": _upper(status["state"]),
                "createdAt": status.get("created_at") or "2024-01-01T00:00:00Z",
            }
            for status in latest_statuses(repo.statuses.get(sha, []))
        ]
        if not nodes:
            return None
        return {"__typename": "StatusCheckRollup", "contexts": _connect(lambda: nodes)}


def _merge_state(pr: dict[str, Any]) -> str:
    # GraphQL's mergeStateStatus is REST's mergeable_state in capitals; a scripted sequence
    # (`_mergeable_states`) moves on with every read, as the REST PR read does.
    states = pr.get("_mergeable_states")
    if states:
        pr["mergeable_state"] = states.pop(0) if len(states) > 1 else states[0]
    return str(pr["mergeable_state"]).upper()


def _pr_commits(repo: RepoState, pr: Mapping[str, Any]) -> list[str]:
    """The PR's commits oldest first, ending at its head (as the forge lists them)."""
    head = str(pr["head"]["sha"])
    listed = [c for c in repo.pr_commits.get(int(pr["number"]), []) if c != head]
    return [*listed, head]


def _rule(rule: Mapping[str, Any]) -> dict[str, Any]:
    """A REST branch rule as GraphQL's RepositoryRule (status checks and pull_request modelled)."""
    params = rule.get("parameters") or {}
    parameters = None
    if rule["type"] == "pull_request":
        parameters = {
            "__typename": "PullRequestParameters",
            "requiredApprovingReviewCount": params["required_approving_review_count"],
            "requireCodeOwnerReview": params["require_code_owner_review"],
            "requireLastPushApproval": params["require_last_push_approval"],
            "dismissStaleReviewsOnPush": params["dismiss_stale_reviews_on_push"],
            "requiredReviewThreadResolution": params["required_review_thread_resolution"],
            "allowedMergeMethods": params.get("allowed_merge_methods"),
        }
    elif rule["type"] == "required_status_checks":
        parameters = {
            "__typename": "RequiredStatusChecksParameters",
            "strictRequiredStatusChecksPolicy": bool(
                params.get("strict_required_status_checks_policy", False)
            ),
            "doNotEnforceOnCreate": bool(params.get("do_not_enforce_on_create", False)),
            "requiredStatusChecks": [
                {"context": c["context"], "integrationId": c.get("integration_id")}
                for c in params.get("required_status_checks", [])
            ],
        }
    return {
        "__typename": "RepositoryRule",
        "type": str(rule["type"]).upper(),
        "parameters": parameters,
    }


def _filter_runs(
    runs: Sequence[Mapping[str, Any]], filter_by: Mapping[str, Any] | None
) -> list[Mapping[str, Any]]:
    # GitHub's default (and LATEST) keeps the latest run per name; ALL keeps superseded ones too.
    rows = sorted(runs, key=lambda r: int(r["id"]))
    if (filter_by or {}).get("checkType") == "ALL":
        return rows
    latest: dict[str, Mapping[str, Any]] = {}
    for run in rows:
        latest[str(run["name"])] = run
    return list(latest.values())


def _check_run(run: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "__typename": "CheckRun",
        "databaseId": run["id"],
        "name": run["name"],
        "status": _upper(run["status"]),
        "conclusion": _upper(run.get("conclusion")),
        "startedAt": run.get("started_at"),
        "completedAt": run.get("completed_at"),
        "detailsUrl": run.get("details_url"),
        "externalId": run.get("external_id"),
    }


def _pr_state(pr: Mapping[str, Any]) -> str:
    if pr.get("merged"):
        return "MERGED"
    return "OPEN" if pr["state"] == "open" else "CLOSED"


# -- the endpoint --------------------------------------------------------------------------------


def _formatted(error: GraphQLError) -> dict[str, Any]:
    entry: dict[str, Any] = dict(error.formatted)
    extensions = entry.pop("extensions", None) or {}
    if "type" in extensions:
        entry = {"type": extensions["type"], **entry}
    return entry


@functools.lru_cache(maxsize=64)
def _checked(query: str) -> tuple[DocumentNode, tuple[GraphQLError, ...]]:
    # A reader re-sends the same few documents page after page: parse and validate each once.
    document = parse(query)
    return document, tuple(validate(graphql_schema(), document))


def answer_graphql(state: ForgeState, payload: object) -> GraphqlAnswer:
    """Answer one POST /graphql body as GitHub would, charging the graphql budget of `state`."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("query"), str):
        message = "A query attribute must be specified and must be a string."
        return GraphqlAnswer({"errors": [{"message": message}]}, 0, None, [message])
    variables = payload.get("variables") or {}
    if not isinstance(variables, Mapping):
        message = "Variables are invalid JSON."
        return GraphqlAnswer({"errors": [{"message": message}]}, 0, None, [message])
    operation_name = payload.get("operationName")
    try:
        document, errors = _checked(payload["query"])
    except GraphQLError as error:
        return _refused([error], None)
    if errors:
        return _refused(errors, None)
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    operation = next(
        (
            o
            for o in operations
            if operation_name is None or (o.name and o.name.value == operation_name)
        ),
        None,
    )
    if operation is None or (operation_name is None and len(operations) > 1):
        return _refused([GraphQLError("An operation name is required")], None)
    name = operation.name.value if operation.name else None
    try:
        cost = _points(query_requests(document, operation, dict(variables)))
    except GraphQLError as error:
        return _refused([error], name)
    state.graphql_remaining = max(state.graphql_remaining - cost, 0)
    graph = _Graph(state, cost)
    result = execute_sync(
        graphql_schema(),
        document,
        root_value=graph.root(),
        variable_values=dict(variables),
        operation_name=operation_name,
        field_resolver=_field_resolver,
    )
    body: dict[str, Any] = {}
    violations = []
    if result.errors:
        body["errors"] = [_formatted(e) for e in result.errors]
        for problem in result.errors:
            if (problem.extensions or {}).get("type") != "NOT_FOUND":
                violations.append(problem.message)
    body["data"] = result.data
    return GraphqlAnswer(body, cost, name, violations)


def _refused(errors: Sequence[GraphQLError], name: str | None) -> GraphqlAnswer:
    body = {"errors": [_formatted(e) for e in errors]}
    return GraphqlAnswer(body, 0, name, [e.message for e in errors])
