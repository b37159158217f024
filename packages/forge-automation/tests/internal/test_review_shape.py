"""Invariant: a pull request object answers the whole review state or none at all.

White-box: `_github.reviews.review_state_from_pull`, which pr-status's one-document read uses; where
another page of reviews or threads exists, it answers None so the caller reads them whole.
"""

from __future__ import annotations

from typing import Any

from forge_automation import ReviewThread
from forge_automation._github.reviews import review_state_from_pull

HEAD = "a" * 40


def _pull() -> dict[str, Any]:
    return {
        "headRefOid": HEAD,
        "reviewDecision": None,
        "reviewRequests": {"pageInfo": {"hasNextPage": False}, "nodes": []},
        "reviews": {
            "pageInfo": {"hasNextPage": False, "endCursor": None},
            "nodes": [
                {
                    "author": {"login": "bob"},
                    "state": "APPROVED",
                    "submittedAt": None,
                    "authorCanPushToRepository": True,
                    "commit": {"oid": HEAD},
                }
            ],
        },
    }


def test_a_pull_request_object_answers_the_whole_state_or_none() -> None:
    pull = _pull()
    pull["reviewThreads"] = {
        "pageInfo": {"hasNextPage": False},
        "nodes": [
            {
                "id": "T1",
                "isResolved": False,
                "path": "a.py",
                "line": None,
                "comments": {"totalCount": 120, "nodes": [{"author": {"login": "bob"}}]},
            }
        ],
    }
    state = review_state_from_pull(pull, None)
    assert state is not None
    assert state.threads == (
        ReviewThread(id="T1", resolved=False, path="a.py", line=None, author="bob", comments=120),
    )
    assert [r.author for r in state.reviews] == ["bob"]
    # Another page of threads, or of reviews: the caller reads them whole elsewhere.
    pull["reviewThreads"]["pageInfo"]["hasNextPage"] = True
    assert review_state_from_pull(pull, None) is None
    pull["reviewThreads"]["pageInfo"]["hasNextPage"] = False
    pull["reviews"]["pageInfo"] = {"hasNextPage": True, "endCursor": "c1"}
    assert review_state_from_pull(pull, None) is None
