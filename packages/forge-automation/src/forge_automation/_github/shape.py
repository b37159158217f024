"""Reading GitHub's JSON: a field of another type is "cannot read", never another exception.

Every parser of `_github` reads through these checks: each raises `_Unmappable` on a missing
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

__all__ = ["SHAPE_ERRORS"]


class _Unmappable(Exception):
    """A field is missing, of the wrong JSON type or outside its set (see `failures.parsed`)."""


SHAPE_ERRORS = (_Unmappable, LookupError, TypeError, ValueError, AttributeError)


def _obj(value: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Unmappable
    return value


def _opt_obj(value: object) -> Mapping[str, Any]:
    return {} if value is None else _obj(value)


def _list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise _Unmappable
    return value


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise _Unmappable
    return value


def _opt_str(value: object) -> str | None:
    return None if value is None else _str(value)


def _one_of(value: object, allowed: Collection[S]) -> S:
    """Return `value` when it is one of `allowed` (a `Literal`'s values), else `_Unmappable`."""
    if not isinstance(value, str) or value not in allowed:
        raise _Unmappable
    return value  # type: ignore[return-value]


def _opt_one_of(value: object, allowed: Collection[S]) -> S | None:
    return None if value is None else _one_of(value, allowed)


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Unmappable
    return value


def _opt_int(value: object) -> int | None:
    return None if value is None else _int(value)


def _bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Unmappable
    return value


def _login(account: object) -> str | None:
    """Return an account object's `login` (a string in every schema); None for no account (a
    deleted user reads as null). An account object without a login is `_Unmappable`."""
    return None if account is None else _str(_obj(account)["login"])


def _oid(commit: object) -> str | None:
    """Return a nullable commit object's `oid` (non-null in the schema), None for null."""
    return None if commit is None else _str(_obj(commit)["oid"])


def _app_id(value: object) -> int | None:
    # -1 and null both mean "any source" on the forge.
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _one_page(connection: object) -> list[Any] | None:
    """Return a connection's `nodes` when `pageInfo` says it has no other page, else None.

    A list with another page is never read as the whole: the caller reads that part another way
    or calls the answer malformed.
    """
    page = _obj(connection)
    if _bool(_obj(page["pageInfo"])["hasNextPage"]):
        return None
    return _list(page["nodes"])


def _next_cursor(info: Any) -> str | None:
    """Return a page's `endCursor` when it says there is more, else None.

    `hasNextPage: true` without a cursor (or with one of another shape) is malformed: the rest
    cannot be asked for, and reading the page as the last would judge on part of the list.
    """
    page = _obj(info)
    if not _bool(page["hasNextPage"]):
        return None
    cursor = _str(page["endCursor"])
    if not cursor:
        raise _Unmappable
    return cursor
