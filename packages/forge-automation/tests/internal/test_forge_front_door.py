"""The lazy front door: its one table, the typed imports and each module's `__all__` agree.

`forge_automation` names every public name once in its table `_PUBLIC` (name -> the private
module that defines it); `__all__` derives from it, and an `if TYPE_CHECKING:` block imports
each name (`X as X`, an explicit re-export) for mypy and IDEs. Nothing else keeps them in step:
a name missing from the imports is untyped for users, a name missing from the table fails only at
run time, and a name its module does not list in `__all__` is not that module's to give.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import forge_automation


def _type_checking_imports() -> dict[str, str]:
    """Each name the front door's `if TYPE_CHECKING:` block imports, and its module."""
    assert forge_automation.__file__ is not None
    tree = ast.parse(Path(forge_automation.__file__).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                assert statement.level == 1, ast.unparse(statement)
                for alias in statement.names:
                    assert alias.asname == alias.name, alias.name  # an explicit re-export
                    assert alias.name not in found, alias.name
                    found[alias.name] = "." + (statement.module or "")
    return found


def test_the_typed_imports_and_the_table_name_the_same_modules() -> None:
    table: dict[str, str] = forge_automation._PUBLIC
    assert _type_checking_imports() == table
    assert forge_automation.__all__ == list(table)


def test_each_name_is_in_its_modules_all_and_served_from_there() -> None:
    table: dict[str, str] = forge_automation._PUBLIC
    for module_name in sorted(set(table.values())):
        module = importlib.import_module(module_name, "forge_automation")
        listed = set(module.__all__)
        for name in (n for n, m in table.items() if m == module_name):
            assert name in listed, f"{name} is not in {module_name}.__all__"
            assert getattr(forge_automation, name) is getattr(module, name), name


def test_dir_lists_every_public_name() -> None:
    assert set(forge_automation.__all__) <= set(dir(forge_automation))
