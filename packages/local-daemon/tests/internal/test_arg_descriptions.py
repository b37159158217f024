"""The `Args:` section reader behind a `Registry` tool's parameter descriptions: the docstring
shapes it takes apart (Google and NumPy-ish sections, continuation lines, stray lines)."""

from __future__ import annotations

import pytest

from local_daemon._signature import arg_descriptions as _arg_descriptions


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("Summary.", {}),
        ("Summary.\n\nArgs:\n    a: one\n    b: two", {"a": "one", "b": "two"}),
        (
            "Args:\n  a (int, optional): one\n      more\n  *rest: r\nReturns:\n  x: no",
            {"a": "one more", "rest": "r"},
        ),
        (
            "Parameters:\n    a: one\n\n    b: two\n\nRaises:\n    E: never",
            {"a": "one", "b": "two"},
        ),
        ("Args:\n    a:\n        on the next line", {"a": "on the next line"}),
        ("Args:\n    not a parameter line\n    a: one", {"a": "one"}),
        ("Args:\nflush: not indented", {}),
    ],
)
def test_arg_descriptions_parser(doc: str, expected: dict[str, str]) -> None:
    assert _arg_descriptions(doc) == expected
