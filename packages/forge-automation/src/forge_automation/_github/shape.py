"""Reading GitHub's JSON: a field of another type is "cannot read", never another exception.

Every parser of `_github` reads through these checks: each raises `Unmappable` on a missing
field, a wrong JSON type or a value outside its set, and `failures.parsed` turns that (and any
lookup or type error, `SHAPE_ERRORS`) into ForgeCliError (kind `malformed`). Imports nothing
of the package, so a reader can use them without loading the wire.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from typing import Any, TypeVar

    S = TypeVar("S", bound=str)

__all__ = [
    "SHAPE_ERRORS",
    "Unmappable",
    "app_id",
    "as_bool",
    "as_int",
    "as_list",
    "as_obj",
    "as_str",
    "login",
    "next_cursor",
    "oid",
    "one_of",
    "one_page",
    "opt_int",
    "opt_obj",
    "opt_one_of",
    "opt_str",
]


class Unmappable(Exception):
    """A field is missing, of the wrong JSON type or outside its set (see `failures.parsed`)."""


SHAPE_ERRORS = (Unmappable, LookupError, TypeError, ValueError, AttributeError)


def as_obj(value: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Unmappable
    return value


def opt_obj(value: object) -> Mapping[str, Any]:
    return {} if value is None else as_obj(value)


def as_list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise Unmappable
    return value


def as_str(value: object) -> str:
    if not isinstance(value, str):
        raise Unmappable
    return value


def opt_str(value: object) -> str | None:
    return None if value is None else as_str(value)


def one_of(value: object, allowed: Collection[S]) -> S:
    """Return `value` when it is one of `allowed` (a `Literal`'s values), else `Unmappable`."""
    if not isinstance(value, str) or value not in allowed:
        raise Unmappable
    return value  # type: ignore[return-value]


def opt_one_of(value: object, allowed: Collection[S]) -> S | None:
    return None if value is None else one_of(value, allowed)


def as_int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise Unmappable
    return value


def opt_int(value: object) -> int | None:
    return None if value is None else as_int(value)


def as_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise Unmappable
    return value


def login(account: object) -> str | None:
    """Return an account object's `login` (a string in every schema); None for no account (a
    deleted user reads as null). An account object without a login is `Unmappable`."""
    return None if account is None else as_str(as_obj(account)["login"])


def oid(commit: object) -> str | None:
    """Return a nullable commit object's `oid` (non-null in the schema), None for null."""
    return None if commit is None else as_str(as_obj(commit)["oid"])


def app_id(value: object) -> int | None:
    # -1 and null both mean "any source" on the forge.
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def one_page(connection: object) -> list[Any] | None:
    """Return a connection's `nodes` when `pageInfo` says it has no other page, else None.

    A list with another page is never read as the whole: the caller reads that part another way
    or calls the answer malformed.
    """
    page = as_obj(connection)
    if as_bool(as_obj(page["pageInfo"])["hasNextPage"]):
        return None
    return as_list(page["nodes"])


def next_cursor(info: Any) -> str | None:
    """Return a page's `endCursor` when it says there is more, else None.

    `hasNextPage: true` without a cursor (or with one of another shape) is malformed: the rest
    cannot be asked for, and reading the page as the last would judge on part of the list.
    """
    page = as_obj(info)
    if not as_bool(page["hasNextPage"]):
        return None
    cursor = as_str(page["endCursor"])
    if not cursor:
        raise Unmappable
    return cursor
