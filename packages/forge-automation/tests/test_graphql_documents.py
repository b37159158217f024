"""Every GraphQL document the package can send validates against GitHub's published schema."""

from __future__ import annotations

import pytest
from graphql import GraphQLError, parse, validate
from graphql.validation import NoDeprecatedCustomRule

from fakeforge.schema import graphql_schema, package_documents

DOCUMENTS = package_documents()


def test_the_collector_finds_the_package_documents() -> None:
    # The backstop's three documents and the wire's review-thread and force-push reads at least:
    # a collector that silently found nothing would make the test below prove nothing.
    names = {name.rsplit(".", 1)[1] for name in DOCUMENTS}
    assert {"BACKSTOP_QUERY", "BACKSTOP_CONTEXTS_QUERY", "BACKSTOP_REVIEWS_QUERY"} <= names
    assert {"PR_SNAPSHOT_QUERY", "REVIEW_STATE_QUERY", "REVIEW_THREADS_QUERY"} <= names
    assert len(DOCUMENTS) >= 5


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_document_validates_against_githubs_schema(name: str) -> None:
    document = parse(DOCUMENTS[name])
    errors = validate(graphql_schema(), document)
    assert [e.message for e in errors] == []


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_document_uses_no_deprecated_field(name: str) -> None:
    document = parse(DOCUMENTS[name])
    errors = validate(graphql_schema(), document, [NoDeprecatedCustomRule])
    assert [e.message for e in errors] == []


def test_a_misplaced_brace_is_refused_as_github_would() -> None:
    # The shape of the bug SNAPSHOT_QUERY had: `done:` parsed inside `open:`.
    bad = (
        "query($o:String!,$n:String!){repository(owner:$o,name:$n){"
        "open:pullRequests(first:1){nodes{number} done:pullRequests(first:1){nodes{number}}}}}"
    )
    errors = validate(graphql_schema(), parse(bad))
    assert [e.message for e in errors] == [
        "Cannot query field 'pullRequests' on type 'PullRequestConnection'."
    ]
    with pytest.raises(GraphQLError, match="Expected Name, found <EOF>"):
        parse("query { viewer { login ")
