"""The front door: `__all__` is the public surface, sorted, and every name in it resolves."""

from __future__ import annotations

import pytest

import forge_automation as package


def test_all_is_sorted_and_resolvable() -> None:
    assert list(package.__all__) == sorted(package.__all__)
    for name in package.__all__:
        assert hasattr(package, name), name


def test_all_is_exactly_the_public_surface() -> None:
    # What the front door serves beyond `__all__` is its own machinery, never a library name.
    extra = {name for name in dir(package) if not name.startswith("_")} - set(package.__all__)
    assert extra <= {"TYPE_CHECKING", "annotations", "importlib", "cli", "squash_cli"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = package.no_such_name
