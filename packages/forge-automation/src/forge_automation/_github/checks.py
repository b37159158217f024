"""Reading check runs, commit statuses and branch rulesets from GitHub's REST and GraphQL answers.

One parser per wire format: REST's `check-run` and `status` objects, and the GraphQL
`checkSuites { checkRuns }` and `Ref.rules` connections `PR_SNAPSHOT_QUERY` asks for. A connection
with another page is None (the caller reads that part over REST), never a short list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._records import (
    CHECK_CONCLUSIONS,
    CHECK_STATUSES,
    STATUS_STATES,
    CheckRun,
    CommitStatus,
    RequiredChecks,
    RequiredContext,
    ReviewRules,
)
from . import shape

__all__ = [
    "check_run_from_rest",
    "check_runs_from_rest",
    "commit_statuses_from_rest",
    "rules_from_graphql",
    "rules_from_rest",
    "runs_from_graphql",
]


def check_run_from_rest(value: object) -> CheckRun:
    """Return the check run a REST `check-run` object describes."""
    data = shape.as_obj(value)
    app = shape.opt_obj(data.get("app"))
    return CheckRun(
        id=shape.as_int(data["id"]),
        name=shape.as_str(data["name"]),
        status=shape.one_of(data["status"], CHECK_STATUSES),
        conclusion=shape.opt_one_of(data.get("conclusion"), CHECK_CONCLUSIONS),
        app_id=shape.opt_int(app.get("id")),
        head_sha=shape.as_str(data["head_sha"]),
        completed_at=shape.opt_str(data.get("completed_at")),
        started_at=shape.opt_str(data.get("started_at")),
        details_url=shape.opt_str(data.get("details_url")),
        external_id=shape.opt_str(data.get("external_id")) or None,
    )


def check_runs_from_rest(value: object) -> tuple[CheckRun, ...]:
    """Return the runs of one page of `GET .../commits/{ref}/check-runs`."""
    return tuple(check_run_from_rest(r) for r in shape.as_list(shape.as_obj(value)["check_runs"]))


def commit_statuses_from_rest(value: object) -> tuple[CommitStatus, ...]:
    """Return the statuses of one page of `GET .../commits/{ref}/status`."""
    return tuple(
        CommitStatus(
            context=shape.as_str(shape.as_obj(s)["context"]),
            state=shape.one_of(shape.as_obj(s)["state"], STATUS_STATES),
            created_at=shape.opt_str(shape.as_obj(s).get("created_at")),
            target_url=shape.opt_str(shape.as_obj(s).get("target_url")),
        )
        for s in shape.as_list(shape.as_obj(value)["statuses"])
    )


def runs_from_graphql(commit: Mapping[str, Any], head_sha: str) -> tuple[CheckRun, ...] | None:
    """Return every run of every check suite of a GraphQL `Commit`, newest first; None when a
    connection has another page (read the runs over REST)."""
    suites = shape.one_page(commit["checkSuites"])
    if suites is None:
        return None
    runs: list[CheckRun] = []
    for suite in suites:
        app = shape.as_obj(suite)["app"]  # nullable, its key is not; so is the app's databaseId
        app_id = (
            None if app is None else shape.app_id(shape.opt_int(shape.as_obj(app)["databaseId"]))
        )
        nodes = shape.one_page(shape.as_obj(suite)["checkRuns"])
        if nodes is None:
            return None
        for node in nodes:
            run = shape.as_obj(node)
            conclusion = shape.opt_str(run["conclusion"])
            lower = None if conclusion is None else conclusion.lower()
            runs.append(
                CheckRun(
                    id=shape.as_int(run["databaseId"]),
                    name=shape.as_str(run["name"]),
                    status=shape.one_of(shape.as_str(run["status"]).lower(), CHECK_STATUSES),
                    conclusion=shape.opt_one_of(lower, CHECK_CONCLUSIONS),
                    app_id=app_id,
                    head_sha=head_sha,
                    completed_at=shape.opt_str(run["completedAt"]),
                    started_at=shape.opt_str(run["startedAt"]),
                    details_url=shape.opt_str(run["detailsUrl"]),
                    external_id=shape.opt_str(run["externalId"]) or None,
                )
            )
    # REST lists a commit's runs newest first; the order only matters to readers of ids.
    return tuple(sorted(runs, key=lambda r: r.id, reverse=True))


# A ruleset rule's parameter names in each wire format (REST snake_case, GraphQL camelCase).
_REST_NAMES = (
    "required_approving_review_count",
    "require_code_owner_review",
    "require_last_push_approval",
    "dismiss_stale_reviews_on_push",
    "required_review_thread_resolution",
    "required_status_checks",
    "context",
    "integration_id",
    "strict_required_status_checks_policy",
)
_GRAPHQL_NAMES = (
    "requiredApprovingReviewCount",
    "requireCodeOwnerReview",
    "requireLastPushApproval",
    "dismissStaleReviewsOnPush",
    "requiredReviewThreadResolution",
    "requiredStatusChecks",
    "context",
    "integrationId",
    "strictRequiredStatusChecksPolicy",
)


def _rules(nodes: object, names: tuple[str, ...], *, strict_default: bool) -> list[RequiredChecks]:
    approvals, owners, last_push, stale, threads, checks, context, app, strict = names
    found: list[RequiredChecks] = []
    for entry in shape.as_list(nodes):
        rule = shape.as_obj(entry)
        kind = shape.as_str(rule["type"]).lower()
        if kind == "pull_request":
            # Every parameter is required by the forge's description: a missing one is malformed.
            params = shape.as_obj(rule["parameters"])
            reviews = ReviewRules(
                required_approving_review_count=shape.as_int(params[approvals]),
                require_code_owner_review=shape.as_bool(params[owners]),
                require_last_push_approval=shape.as_bool(params[last_push]),
                dismiss_stale_reviews_on_push=shape.as_bool(params[stale]),
                required_review_thread_resolution=shape.as_bool(params[threads]),
                source="ruleset",
            )
            found.append(RequiredChecks(reviews=reviews))
        elif kind == "required_status_checks":
            params = shape.as_obj(rule["parameters"])
            contexts = tuple(
                RequiredContext(
                    context=shape.as_str(shape.as_obj(c)[context]),
                    app_id=shape.app_id(shape.as_obj(c).get(app)),
                )
                for c in shape.as_list(params[checks])
            )
            policy = params.get(strict, False) if strict_default else params[strict]
            found.append(RequiredChecks(contexts=contexts, strict=shape.as_bool(policy)))
    return found


def rules_from_rest(value: object) -> tuple[RequiredChecks, ...]:
    """Return the rules of one page of `GET .../rules/branches/{branch}` GitHub enforces here:
    each `pull_request` and `required_status_checks` rule (others are not about merging)."""
    return tuple(_rules(value, _REST_NAMES, strict_default=True))


def rules_from_graphql(value: object) -> RequiredChecks | None:
    """Return what a GraphQL `Ref.rules` connection requires, merged; None when it is absent
    (no base ref, or not readable) or has another page: then REST decides."""
    from .._verdict import merge_required_checks

    if value is None:
        return None
    nodes = shape.one_page(value)
    if nodes is None:
        return None
    return merge_required_checks(_rules(nodes, _GRAPHQL_NAMES, strict_default=False))
