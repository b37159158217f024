"""The lazy front doors: the imports type checkers read and the run-time table name the same.

Each front door (`agent_accounts`, `agent_accounts.io`) names every public name once in its
table `_PUBLIC`, `__all__` derives from it, and a `TYPE_CHECKING` block imports each name
(`X as X`, an explicit re-export) for type checkers. Nothing but this test keeps the two apart
from drifting: a name missing from the imports is untyped for users, a name missing from the
table fails only at run time.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest


def _type_checking_imports(path: Path) -> dict[str, str]:
    """Each name the `if TYPE_CHECKING:` block imports from the package, and its module."""
    found: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                if not statement.level:  # a type the front door itself uses
                    continue
                for alias in statement.names:
                    assert alias.asname == alias.name, alias.name  # an explicit re-export
                    found[alias.name] = "." + (statement.module or "")
    return found


@pytest.mark.parametrize("package", ["agent_accounts", "agent_accounts.io"])
def test_the_typed_imports_and_the_table_name_the_same_modules(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__file__ is not None
    imported = _type_checking_imports(Path(module.__file__))
    table: dict[str, str] = module._PUBLIC
    assert imported == table
    assert module.__all__ == list(table)
