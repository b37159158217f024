"""Every GraphQL document the package sends, and the fragments they share.

Each document is written out whole; the fragments it uses are appended by `_with` (GraphQL
allows a fragment only where a document spreads it, so each gets exactly the ones it names).
tests/test_graphql_documents.py validates every document of the package against GitHub's
published schema (@octokit/graphql-schema), deprecated fields refused.

Imports nothing: forge-cli pr-status builds its request before the library loads.
"""

from __future__ import annotations

__all__ = [
    "BACKSTOP_CONTEXTS_QUERY",
    "BACKSTOP_QUERY",
    "BACKSTOP_REVIEWS_QUERY",
    "CONTEXTS_PAGE",
    "DONE_PAGE",
    "FORCE_PUSH_QUERY",
    "MAIN_PAGE",
    "OPEN_PAGE",
    "PR_SNAPSHOT_QUERY",
    "REVIEWS_PAGE",
    "REVIEW_STATE_QUERY",
    "REVIEW_THREADS_QUERY",
    "THREAD_COMMENTS_QUERY",
    "VIEWER_QUERY",
]

# Who the token is. GraphQL, not REST `GET /user`: an App installation token (Actions'
# GITHUB_TOKEN among them) is refused `/user` ("Resource not accessible by integration") and
# answers `viewer` with its bot, `<app-slug>[bot]`, the login its comments carry.
VIEWER_QUERY = "query Viewer { viewer { login } }"

# -- fragments ---------------------------------------------------------------------------------

# The review selection, written once: the forge's decision, the pending requests (one page: a
# second one would be cut, so its parser refuses `hasNextPage`), and what each review says.
_REVIEW_REQUESTS = """fragment ReviewRequests on PullRequest {
  reviewDecision
  reviewRequests(first: 100) {
    pageInfo { hasNextPage }
    nodes {
      asCodeOwner
      requestedReviewer {
        __typename
        ... on User { login }
        ... on Team { combinedSlug }
        ... on Bot { login }
        ... on Mannequin { login }
      }
    }
  }
}"""
_REVIEW_FIELDS = """fragment ReviewFields on PullRequestReview {
  author { login } state submittedAt authorCanPushToRepository commit { oid }
}"""
# Who the head commit names: the stand-in for the last pusher, whom GitHub does not name.
_COMMIT_PUSHERS = """fragment CommitPushers on Commit {
  author { user { login } }
  committer { user { login } }
}"""
_REVIEW_COMMENT = """fragment ReviewCommentFields on PullRequestReviewComment {
  fullDatabaseId author { login } authorAssociation path line body
}"""

_FRAGMENTS = {
    "ReviewRequests": _REVIEW_REQUESTS,
    "ReviewFields": _REVIEW_FIELDS,
    "CommitPushers": _COMMIT_PUSHERS,
    "ReviewCommentFields": _REVIEW_COMMENT,
}


def _with(document: str) -> str:
    """Return `document` followed by every fragment it spreads (`...Name`)."""
    used = [text for name, text in _FRAGMENTS.items() if f"...{name}" in document]
    return "\n".join([document, *used])


# -- the wire's reads --------------------------------------------------------------------------

REVIEW_STATE_QUERY = _with(
    """query PullRequestReviewState($owner: String!, $name: String!,
  $number: Int!, $head: GitObjectID!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      headRefOid
      ...ReviewRequests
      reviews(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { ...ReviewFields }
      }
    }
    object(oid: $head) { ...CommitPushers }
  }
}"""
)

REVIEW_THREADS_QUERY = _with(
    """query PullRequestReviewThreads($owner: String!, $name: String!, $number: Int!,
  $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved
          comments(first: 100) {
            pageInfo { hasNextPage endCursor }
            nodes { ...ReviewCommentFields }
          }
        }
      }
    }
  }
}"""
)

# A thread with more than one page of comments is read on by its node id, never cut.
THREAD_COMMENTS_QUERY = _with(
    """query PullRequestReviewThreadComments($id: ID!, $after: String) {
  node(id: $id) {
    ... on PullRequestReviewThread {
      comments(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { ...ReviewCommentFields }
      }
    }
  }
}"""
)

FORCE_PUSH_QUERY = """query PullRequestForcePushes($owner: String!, $name: String!,
  $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      timelineItems(itemTypes: [HEAD_REF_FORCE_PUSHED_EVENT], first: 100) {
        pageInfo { hasNextPage endCursor }
        nodes { ... on HeadRefForcePushedEvent { beforeCommit { oid } afterCommit { oid } } }
      }
    }
  }
}"""

# -- pr-status's one read ----------------------------------------------------------------------

# The PR, its head commit (the last of its commits) with every check run of every check suite,
# the base branch's ruleset rules and tip, the head's first 100 ancestors (which prove "not
# behind" when they hold the base tip) and the review state; see `_pr_snapshot`.
PR_SNAPSHOT_QUERY = _with(
    """query PullRequestSnapshot($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      number state isDraft merged mergedAt mergeStateStatus title
      headRefName headRefOid baseRefName baseRefOid
      headRepository { nameWithOwner }
      mergeCommit { oid }
      ...ReviewRequests
      reviews(first: 100) {
        pageInfo { hasNextPage endCursor }
        nodes { ...ReviewFields }
      }
      reviewThreads(first: 100) { pageInfo { hasNextPage } nodes { id isResolved path line } }
      baseRef {
        target { oid }
        rules(first: 100) {
          pageInfo { hasNextPage }
          nodes {
            type
            parameters {
              ... on RequiredStatusChecksParameters {
                strictRequiredStatusChecksPolicy
                requiredStatusChecks { context integrationId }
              }
              ... on PullRequestParameters {
                requiredApprovingReviewCount requireCodeOwnerReview requireLastPushApproval
                dismissStaleReviewsOnPush requiredReviewThreadResolution
              }
            }
          }
        }
      }
      commits(last: 1) {
        nodes {
          commit {
            oid
            ...CommitPushers
            history(first: 100) { nodes { oid } }
            checkSuites(first: 100) {
              pageInfo { hasNextPage }
              nodes {
                app { databaseId }
                checkRuns(first: 100, filterBy: {checkType: ALL}) {
                  pageInfo { hasNextPage }
                  nodes {
                    databaseId name status conclusion startedAt completedAt detailsUrl externalId
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}"""
)

# -- the backstop's reads ----------------------------------------------------------------------

OPEN_PAGE = 100
DONE_PAGE = 20
MAIN_PAGE = 50
CONTEXTS_PAGE = 100
REVIEWS_PAGE = 100

# The page sizes and repeated pieces are spliced in by name (no brace-counting f-strings).
_PAGE_INFO = "pageInfo { hasNextPage endCursor }"
_CONTEXT_NODES = """nodes {
        __typename
        ... on CheckRun { databaseId name status conclusion completedAt }
        ... on StatusContext { context state createdAt }
      }"""
_BACKSTOP_REVIEW_NODES = (
    "nodes { fullDatabaseId author { login } state submittedAt commit { oid } }"
)


def _backstop(text: str) -> str:
    pieces = {
        "OPEN_PAGE": OPEN_PAGE,
        "DONE_PAGE": DONE_PAGE,
        "MAIN_PAGE": MAIN_PAGE,
        "CONTEXTS_PAGE": CONTEXTS_PAGE,
        "REVIEWS_PAGE": REVIEWS_PAGE,
        "PAGE_INFO": _PAGE_INFO,
        "CONTEXT_NODES": _CONTEXT_NODES,
        "REVIEW_NODES": _BACKSTOP_REVIEW_NODES,
    }
    for key, value in pieces.items():
        text = text.replace(f"<{key}>", str(value))
    return text


# One document, three ranges: the open PRs (each head's rollup contexts, each PR's reviews), the
# recently done PRs, and the branch history; a later page re-sends it with only the ranges that
# still have pages (`@include` flags) and their cursors.
BACKSTOP_QUERY = _backstop(
    """query Backstop($owner: String!, $name: String!, $branch: String!, $since: GitTimestamp!,
  $withOpen: Boolean!, $openAfter: String, $withDone: Boolean!, $doneAfter: String,
  $withMain: Boolean!, $mainAfter: String) {
  rateLimit { cost remaining resetAt }
  repository(owner: $owner, name: $name) {
    open: pullRequests(states: [OPEN], first: <OPEN_PAGE>, after: $openAfter,
        orderBy: {field: CREATED_AT, direction: ASC}) @include(if: $withOpen) {
      <PAGE_INFO>
      nodes {
        number isDraft headRefName headRefOid baseRefName updatedAt
        reviews(first: <REVIEWS_PAGE>) { <PAGE_INFO> <REVIEW_NODES> }
        headRef {
          target {
            ... on Commit {
              oid
              statusCheckRollup { contexts(first: <CONTEXTS_PAGE>) { <PAGE_INFO> <CONTEXT_NODES> } }
            }
          }
        }
      }
    }
    done: pullRequests(states: [MERGED, CLOSED], first: <DONE_PAGE>, after: $doneAfter,
        orderBy: {field: UPDATED_AT, direction: DESC}) @include(if: $withDone) {
      <PAGE_INFO>
      nodes {
        number state merged mergedAt closedAt updatedAt headRefOid
        mergeCommit { oid }
        mergedBy { login }
      }
    }
    main: ref(qualifiedName: $branch) @include(if: $withMain) {
      target {
        ... on Commit {
          oid
          history(first: <MAIN_PAGE>, after: $mainAfter, since: $since) {
            <PAGE_INFO>
            nodes { oid messageHeadline committedDate }
          }
        }
      }
    }
  }
}"""
)

# A head's rollup contexts past the inline page, re-read for that commit.
BACKSTOP_CONTEXTS_QUERY = _backstop(
    """query BackstopContexts($owner: String!, $name: String!, $oid: GitObjectID!, $after: String) {
  rateLimit { cost remaining resetAt }
  repository(owner: $owner, name: $name) {
    object(oid: $oid) {
      ... on Commit {
        statusCheckRollup {
          contexts(first: <CONTEXTS_PAGE>, after: $after) { <PAGE_INFO> <CONTEXT_NODES> }
        }
      }
    }
  }
}"""
)

# A PR's reviews past the inline page, re-read for that PR.
BACKSTOP_REVIEWS_QUERY = _backstop(
    """query BackstopReviews($owner: String!, $name: String!, $number: Int!, $after: String) {
  rateLimit { cost remaining resetAt }
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviews(first: <REVIEWS_PAGE>, after: $after) { <PAGE_INFO> <REVIEW_NODES> }
    }
  }
}"""
)
