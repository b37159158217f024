"""GitHub's own published API descriptions, loaded once per test session.

- `graphql_schema()`: npm `@octokit/graphql-schema`'s `schema.graphql`, built with graphql-core.
  The published SDL has a few duplicate and deprecation conflicts that full schema validation
  rejects, so it is built with `assume_valid` (documents are still validated against it).
- `package_documents()`: every GraphQL document the package can send, collected from its modules.

Both npm packages live in tests/node (package.json + package-lock.json), installed by `make setup`
with `npm ci`. A missing install fails loudly instead of skipping.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from pathlib import Path

from graphql import GraphQLSchema, build_schema

import forge_automation

__all__ = ["NODE_MODULES", "graphql_schema", "package_documents"]

NODE_MODULES = Path(__file__).resolve().parent / "node" / "node_modules"
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


def package_documents() -> dict[str, str]:
    """Return every module-level GraphQL document in forge_automation, by `module.NAME`.

    A document is any module-level string that starts with `query`, `mutation` or `subscription`,
    so one that does not even parse is collected too.
    """
    found: dict[str, str] = {}
    prefix = forge_automation.__name__ + "."
    for info in pkgutil.walk_packages(forge_automation.__path__, prefix):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, str) and _OPERATION.match(value):
                found.setdefault(f"{info.name}.{name}", value)
    return found
