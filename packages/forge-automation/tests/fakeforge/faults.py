"""Faults the local forge answers in place of a review-related read, on the wire itself.

`ForgeState.part_faults[part] = fault` makes every read of `part` fail in that way until the
test removes it; gh receives the faulted HTTP answer, as it would from GitHub. Parts:

- `protection`: REST `GET .../branches/{branch}/protection` (and its required_status_checks);
- `rulesets`: REST `GET .../rules/branches/{branch}` (the rulesets' `pull_request` rule is a
  review rule; pr-status reads the rulesets in its GraphQL document instead);
- `reviews`: the GraphQL reviews selection (PullRequestSnapshot, PullRequestReviewState);
- `threads`: the GraphQL review threads (PullRequestSnapshot, PullRequestReviewThreads);
- `workflow`: REST `GET .../contents/.github/workflows/<file>` (a workflow file's read).

Faults: `rate-limit` (403, primary limit spent, resetting in an hour), `not-found` (404 `Not
Found`, GitHub's answer to a caller without admin rights; REST only), `502`, `empty` (200, no
body), `truncated` (200, JSON cut short), `errors` (GraphQL `errors` beside null data),
`missing-field` (a field the reader asked for left out), `no-cursor` (`hasNextPage: true` with
`endCursor: null`; GraphQL only). `fault_hits` counts the answers each part got faulted.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["GRAPHQL_FAULTS", "PARTS", "REST_FAULTS", "faulted_answer", "mutated"]

PARTS = ("protection", "rulesets", "reviews", "threads", "workflow")
REST_FAULTS = ("rate-limit", "not-found", "502", "empty", "truncated", "missing-field")
GRAPHQL_FAULTS = ("rate-limit", "502", "empty", "truncated", "errors", "missing-field", "no-cursor")

_REST_PART = {
    "protection": re.compile(r"/repos/[^/]+/[^/]+/branches/.+/protection(/.*)?"),
    "rulesets": re.compile(r"/repos/[^/]+/[^/]+/rules/branches/.+"),
    "workflow": re.compile(r"/repos/[^/]+/[^/]+/contents/\.github/workflows/.+"),
}
_GRAPHQL_PART = {
    "reviews": {"PullRequestSnapshot", "PullRequestReviewState"},
    "threads": {"PullRequestSnapshot", "PullRequestReviewThreads"},
}
_OPERATION = re.compile(r"\b(?:query|mutation)\s+(\w+)")
Answer = tuple[int, object, dict[str, str]]


def _part_of(state: Any, path: str, body: bytes) -> tuple[str, str, str | None] | None:
    """Return (part, fault, GraphQL operation) when a fault applies to this request."""
    faults: Mapping[str, str] = state.part_faults
    if not faults:
        return None
    if path == "/graphql":
        try:
            query = json.loads(body).get("query", "")
        except (ValueError, AttributeError):
            return None
        found = _OPERATION.search(query) if isinstance(query, str) else None
        operation = found.group(1) if found else None
        for part, fault in faults.items():
            if operation in _GRAPHQL_PART.get(part, ()):
                return part, fault, operation
        return None
    for part, fault in faults.items():
        pattern = _REST_PART.get(part)
        if pattern is not None and pattern.fullmatch(path):
            return part, fault, None
    return None


def faulted_answer(state: Any, path: str, body: bytes) -> tuple[Answer | None, str | None]:
    """Return the whole faulted answer for this request, or (None, fault to apply to the data).

    A fault that changes the data (`missing-field`, `no-cursor`) is returned as its name for
    `mutated`; the request is then answered as usual first.
    """
    found = _part_of(state, path, body)
    if found is None:
        return None, None
    part, fault, _ = found
    state.fault_hits[part] += 1
    if fault == "rate-limit":
        reset = str(int(time.time()) + 3600)
        headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}
        return (403, {"message": "API rate limit exceeded for user ID 1."}, headers), None
    if fault == "not-found":
        return (404, {"message": "Not Found"}, {}), None
    if fault == "502":
        return (502, {"message": "Server Error"}, {"Retry-After": "0"}), None
    if fault == "empty":
        return (200, b"", {}), None
    if fault == "truncated":
        return (200, b'{"data": {"repository": {"pullRequest": {"headRefOid": "ab', {}), None
    if fault == "errors":
        error = {"type": "FORBIDDEN", "message": "Resource not accessible by integration"}
        return (200, {"data": None, "errors": [error]}, {}), None
    return None, f"{part}:{fault}"


def mutated(payload: object, change: str) -> object:
    """Apply a data fault (`part:fault`) to an answer's payload, in place where it can."""
    part, _, fault = change.partition(":")
    if part == "rulesets":
        # Each rule's `parameters` (what the rule asks) left out; copies: the rules are the
        # forge state's own.
        if not isinstance(payload, list):
            return payload
        return [
            {k: v for k, v in rule.items() if k != "parameters"} if isinstance(rule, dict) else rule
            for rule in payload
        ]
    if part == "protection":
        # The required checks' `contexts` (required by GitHub's description) left out.
        if isinstance(payload, dict) and isinstance(payload.get("required_status_checks"), dict):
            payload["required_status_checks"].pop("contexts", None)
            payload["required_status_checks"].pop("checks", None)
        if isinstance(payload, dict) and isinstance(
            payload.get("required_pull_request_reviews"), dict
        ):
            payload["required_pull_request_reviews"].pop("dismiss_stale_reviews", None)
        return payload
    pull = _pull_of(payload)
    if pull is None:
        return payload
    if part == "reviews":
        if fault == "missing-field":
            pull.pop("reviewDecision", None)
        elif isinstance(pull.get("reviews"), dict):
            pull["reviews"]["pageInfo"] = {"hasNextPage": True, "endCursor": None}
    elif part == "threads" and isinstance(pull.get("reviewThreads"), dict):
        if fault == "missing-field":
            pull["reviewThreads"].pop("pageInfo", None)
        else:
            pull["reviewThreads"]["pageInfo"] = {"hasNextPage": True, "endCursor": None}
    return payload


def _pull_of(payload: object) -> dict[str, Any] | None:
    if not isinstance(payload, dict):
        return None
    data = payload.get("data")
    repository = data.get("repository") if isinstance(data, dict) else None
    pull = repository.get("pullRequest") if isinstance(repository, dict) else None
    return pull if isinstance(pull, dict) else None
