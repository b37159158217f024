"""The test forge's GraphQL endpoint: documents executed against GitHub's published schema.

Every document is parsed and validated against npm `@octokit/graphql-schema` (graphql-core), its
connections are checked the way GitHub checks them before running anything (`first` or `last` is
required, at most 100), its cost is computed with GitHub's documented formula, and it is answered
by executing it with resolvers over the forge's state. A document GitHub would refuse gets GitHub's
kind of answer (HTTP 200, `errors` and no `data`) and is recorded as a violation, which fails the
test that sent it (see ForgeServer.__exit__). A field this fake does not model is a violation too.

State stays REST-shaped (RepoState); the GraphQL objects are built per request (graphql_objects).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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

from fakeforge.graphql_objects import CONNECTION_LIMIT, UNMODELED, Graph, cursor
from fakeforge.schema import graphql_schema
from fakeforge.state import ForgeState

__all__ = ["GraphqlAnswer", "answer_graphql", "cursor", "query_requests"]


@dataclass
class GraphqlAnswer:
    """One answer: the JSON body, the points it cost, and the violations it recorded."""

    body: dict[str, Any]
    cost: int
    operation: str | None
    violations: list[str] = field(default_factory=list)


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


def _field_resolver(source: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    """Read a field from a dict; a missing key is a field this fake does not model."""
    key = info.field_name
    if not isinstance(source, Mapping) or key not in source:
        raise GraphQLError(
            f"the test forge does not model {info.parent_type.name}.{key}",
            extensions={"type": UNMODELED},
        )
    value = source[key]
    return value(info, **args) if callable(value) else value


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


def answer_graphql(state: ForgeState, payload: object, viewer: str) -> GraphqlAnswer:
    """Answer one POST /graphql body as GitHub would for the token of `viewer` (a login),
    charging the graphql budget of `state`."""
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
    graph = Graph(state, cost, viewer)
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
