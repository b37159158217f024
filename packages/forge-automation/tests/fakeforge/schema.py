"""GitHub's own published API descriptions, loaded once per test session.

- `graphql_schema()`: npm `@octokit/graphql-schema`'s `schema.graphql`, built with graphql-core.
  The published SDL has a few duplicate and deprecation conflicts that full schema validation
  rejects, so it is built with `assume_valid` (documents are still validated against it).
- `package_documents()`: every GraphQL document the package can send, collected from its modules.
- `openapi()`, `match_operation()`, `request_errors()`, `response_errors()`: npm `@octokit/openapi`'s
  description of api.github.com, and the checks the test forge runs on every REST request and
  answer.

Both npm packages live in tests/node (package.json + package-lock.json), installed by `make setup`
with `npm ci`. A missing install fails loudly instead of skipping.
"""

from __future__ import annotations

import functools
import importlib
import json
import pkgutil
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphql import GraphQLSchema, build_schema

import forge_automation as package

__all__ = [
    "ABSENT",
    "NODE_MODULES",
    "RestOperation",
    "bent",
    "graphql_schema",
    "match_operation",
    "non_null",
    "off_schema",
    "openapi",
    "package_documents",
    "request_errors",
    "response_errors",
    "schema_errors",
]

NODE_MODULES = Path(__file__).resolve().parents[1] / "node" / "node_modules"
_OPERATION = re.compile(r"\A\s*(?:query|mutation|subscription)\b")


def _published(relative: str) -> Path:
    path = NODE_MODULES / relative
    if not path.is_file():
        raise RuntimeError(f"{path} is missing: run `make setup` (npm ci in {path.parents[-1]})")
    return path


@functools.cache
def graphql_schema() -> GraphQLSchema:
    """Return GitHub's GraphQL schema (built once per process: it takes a few seconds)."""
    sdl = _published("@octokit/graphql-schema/schema.graphql").read_text(encoding="utf-8")
    return build_schema(sdl, assume_valid=True, assume_valid_sdl=True)


def non_null(type_name: str, field: str) -> bool:
    """Return whether GitHub's schema declares `type_name.field` non-null (`!`)."""
    from graphql import GraphQLInterfaceType, GraphQLObjectType, is_non_null_type

    declared = graphql_schema().get_type(type_name)
    assert isinstance(declared, GraphQLObjectType | GraphQLInterfaceType), type_name
    return is_non_null_type(declared.fields[field].type)


# A change to a field that leaves it out of the answer (`off_schema`, `bent`).
ABSENT = object()


def off_schema(type_name: str, field: str, wrong: object) -> list[object]:
    """Return the values of a field the document selects that GitHub never sends: left out
    (`ABSENT`), `wrong` (another JSON type), and null where the schema declares it non-null."""
    return [ABSENT, wrong, *([None] if non_null(type_name, field) else [])]


def bent(answer: Any, path: Sequence[str | int], field: str, change: object) -> Any:
    """Return a copy of `answer` with `field` of the object at `path` set to `change` (left out
    for `ABSENT`). A path key `CheckRun` or `StatusContext` picks a list's first node of that
    `__typename`."""
    copy = json.loads(json.dumps(answer))
    node = copy
    for key in path:
        if key in ("CheckRun", "StatusContext"):
            node = next(n for n in node if n["__typename"] == key)
        else:
            node = node[key]
    assert field in node, f"the document selects {field}: GitHub always sends it"
    if change is ABSENT:
        del node[field]
    else:
        node[field] = change
    return copy


def package_documents() -> dict[str, str]:
    """Return every module-level GraphQL document in forge_automation, by `module.NAME`.

    A document is any module-level string that starts with `query`, `mutation` or `subscription`,
    so one that does not even parse is collected too.
    """
    found: dict[str, str] = {}
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, str) and _OPERATION.match(value):
                found.setdefault(f"{info.name}.{name}", value)
    return found


# -- REST: npm @octokit/openapi (the OpenAPI 3.0 description of api.github.com) ----------------


@functools.cache
def openapi() -> dict[str, Any]:
    """Return GitHub's REST OpenAPI description (about 13 MB: loaded once per process)."""
    path = _published("@octokit/openapi/generated/api.github.com.json")
    with path.open("rb") as handle:
        document: dict[str, Any] = json.load(handle)
    return document


@dataclass(frozen=True)
class RestOperation:
    """One documented operation a request matched, with its path parameters."""

    method: str
    template: str
    operation: Mapping[str, Any]
    path_params: Mapping[str, str]

    @property
    def operation_id(self) -> str:
        return str(self.operation.get("operationId", f"{self.method} {self.template}"))


_MAY_SPAN = frozenset({"ref", "branch", "base", "head", "basehead", "path", "name", "tag"})
# Where GitHub's answers are known to be wider than its description: a PR whose head repository
# was deleted has `head.repo: null`.
_NULL_ALLOWED = (".head.repo",)


@functools.cache
def _routes() -> tuple[tuple[str, str, re.Pattern[str], re.Pattern[str], str, int], ...]:
    routes = []
    for template in openapi()["paths"]:
        pieces = re.split(r"(\{[^}]+\})", template)
        # The literal text before the first and after the last parameter: a cheap first sieve.
        prefix = pieces[0]
        suffix = pieces[-1] if len(pieces) > 1 else ""
        literal = sum(len(p) for p in pieces if not p.startswith("{"))

        def pattern(param: str, pieces: list[str] = pieces) -> re.Pattern[str]:
            out = []
            for p in pieces:
                if not p.startswith("{"):
                    out.append(re.escape(p))
                    continue
                name = p[1:-1].replace("-", "_")
                # Owners, repositories and ids are one segment; refs and branches may hold "/".
                spans = param if name in _MAY_SPAN else "[^/]+"
                out.append(f"(?P<{name}>{spans})")
            return re.compile("".join(out))

        routes.append((prefix, suffix, pattern("[^/]+"), pattern(".+"), template, literal))
    return tuple(routes)


@functools.lru_cache(maxsize=4096)
def match_operation(method: str, path: str) -> RestOperation | None:
    """Return the documented operation `method path` is, or None when GitHub documents none.

    A path parameter is one segment; a ref, branch or `base...head` that holds slashes may span
    several, as GitHub routes them. The most specific template (most literal text) wins.
    """
    paths = openapi()["paths"]
    for strict in (True, False):
        found: list[tuple[int, str, dict[str, str]]] = []
        for prefix, suffix, one, many, template, literal in _routes():
            if not (path.startswith(prefix) and path.endswith(suffix)):
                continue
            match = (one if strict else many).fullmatch(path)
            if match and method.lower() in paths[template]:
                found.append((literal, template, match.groupdict()))
        if found:
            _literal, template, params = max(found, key=lambda f: f[0])
            operation = paths[template][method.lower()]
            return RestOperation(method.upper(), template, operation, params)
    return None


def _resolve(schema: Any) -> Any:
    seen = 0
    while isinstance(schema, Mapping) and "$ref" in schema and seen < 50:
        node: Any = openapi()
        for part in str(schema["$ref"]).removeprefix("#/").split("/"):
            node = node[part]
        schema, seen = node, seen + 1
    return schema


def _parameters(op: RestOperation) -> list[Mapping[str, Any]]:
    shared = openapi()["paths"][op.template].get("parameters", [])
    return [_resolve(p) for p in [*shared, *op.operation.get("parameters", [])]]


def schema_errors(schema: Any, value: Any, where: str, *, request: bool) -> list[str]:
    """Return where `value` breaks `schema` (an OpenAPI 3.0 schema subset).

    Every property present must be declared (unless additionalProperties allows it) and typed as
    documented. `required` is enforced for requests only: a fake may leave fields out of an
    answer, but never add fields the operation does not have or give one the wrong shape.
    """
    schema = _resolve(schema)
    if not isinstance(schema, Mapping) or not schema:
        return []
    if value is None:
        if schema.get("nullable") or schema.get("type") == "null" or where.endswith(_NULL_ALLOWED):
            return []
        return [f"{where}: null"]
    for key in ("oneOf", "anyOf"):
        if key in schema:
            branches = [schema_errors(b, value, where, request=request) for b in schema[key]]
            if all(branches):
                return min(branches, key=len) or [f"{where}: matches no {key} branch"]
    if "allOf" in schema:
        merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        for branch in schema["allOf"]:
            part = _resolve(branch)
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += part.get("required", [])
            if "additionalProperties" in part:
                merged["additionalProperties"] = part["additionalProperties"]
            if part.get("type") not in (None, "object"):
                merged = dict(part)
                break
        return schema_errors(merged, value, where, request=request)
    errors: list[str] = []
    kind = schema.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    if kind in checks and not checks[kind](value):
        return [f"{where}: {type(value).__name__} where the description has {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where}: {value} > maximum {schema['maximum']}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += schema_errors(schema["items"], item, f"{where}[{i}]", request=request)
    if isinstance(value, dict) and (kind == "object" or "properties" in schema):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", not properties)
        for key, item in value.items():
            if key in properties:
                errors += schema_errors(properties[key], item, f"{where}.{key}", request=request)
            elif extra is False:
                errors.append(f"{where}.{key}: not a documented field")
            elif isinstance(extra, Mapping):
                errors += schema_errors(extra, item, f"{where}.{key}", request=request)
        if request:
            errors += [
                f"{where}.{k}: required" for k in schema.get("required", []) if k not in value
            ]
    return errors


def _coerce(schema: Mapping[str, Any], raw: str) -> Any:
    kind = _resolve(schema).get("type")
    if kind == "integer":
        return int(raw) if re.fullmatch(r"-?\d+", raw) else raw
    if kind == "boolean":
        return {"true": True, "false": False}.get(raw, raw)
    return raw


def request_errors(
    op: RestOperation, query: Mapping[str, Sequence[str]], body: object
) -> list[str]:
    """Return how a request breaks its operation: unknown or invalid query fields, path
    parameters and body fields."""
    errors: list[str] = []
    params = _parameters(op)
    by_place: dict[str, dict[str, Mapping[str, Any]]] = {}
    for p in params:
        by_place.setdefault(str(p.get("in")), {})[str(p["name"])] = p
    declared_path = by_place.get("path", {})
    for name, raw in op.path_params.items():
        spec = declared_path.get(name) or declared_path.get(name.replace("_", "-"))
        if spec is not None:
            value = _coerce(spec.get("schema", {}), raw)
            errors += schema_errors(spec.get("schema"), value, f"path {{{name}}}", request=True)
    declared_query = by_place.get("query", {})
    for name, values in query.items():
        spec = declared_query.get(name)
        if spec is None:
            errors.append(f"query {name}: not a parameter of {op.operation_id}")
            continue
        for raw in values:
            value = _coerce(spec.get("schema", {}), raw)
            errors += schema_errors(spec.get("schema"), value, f"query {name}", request=True)
    for name, spec in declared_query.items():
        if spec.get("required") and name not in query:
            errors.append(f"query {name}: required")
    content = (_resolve(op.operation.get("requestBody")) or {}).get("content", {})
    schema = (content.get("application/json") or {}).get("schema")
    if body is not None and schema is None:
        errors.append(f"body: {op.operation_id} takes no JSON body")
    elif schema is not None:
        if body is None:
            if (_resolve(op.operation.get("requestBody")) or {}).get("required"):
                errors.append("body: required")
        else:
            errors += schema_errors(schema, body, "body", request=True)
    return errors


def response_errors(op: RestOperation, status: int, body: object) -> list[str]:
    """Return how an answer breaks the documented shape of `status` for the operation."""
    responses = op.operation.get("responses", {})
    answer = _resolve(responses.get(str(status)))
    if answer is None or body is None or isinstance(body, bytes):
        return []
    schema = (answer.get("content", {}).get("application/json") or {}).get("schema")
    if schema is None:
        return []
    return schema_errors(schema, body, f"{status} answer", request=False)
