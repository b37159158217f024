"""Reading forge JSON: a field of another type is "cannot read", never another exception.

The wire (its REST and GraphQL answers) and pr-status's snapshot read share these checks: each
raises `_Unmappable` on a missing field or a wrong JSON type, and `_mapped_data` turns that (and
any lookup or type error) into ForgeCliError (kind `malformed`). Imports only `_errors`, so a
reader can use them without loading the wire.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._errors import ForgeCliError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__: list[str] = []


class _Unmappable(Exception):
    """A field is missing or of the wrong JSON type (caught by `_mapped`, `_mapped_data`)."""


_SHAPE_ERRORS = (_Unmappable, LookupError, TypeError, ValueError, AttributeError)


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


def _app_id(value: object) -> int | None:
    # -1 and null both mean "any source" on the forge.
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


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


def _mapped_data(what: str, data: Any, parse: Callable[[Any], T]) -> T:
    """Return `parse(data)` for a GraphQL `data` object, or raise ForgeCliError (malformed)."""
    failed = False
    try:
        return parse(data)
    except _SHAPE_ERRORS:
        failed = True
    assert failed
    raise ForgeCliError(f"forge answered {what} the wire cannot read", kind="malformed")
