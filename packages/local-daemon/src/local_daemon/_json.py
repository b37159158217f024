"""The package's one JSON parser, for request bodies and state files alike.

The standard `json` with hooks that refuse what no answer could carry back and no file of this
daemon holds: `NaN`/`Infinity` literals, numbers beyond a float however spelt (`1e400`,
`-1E+99999`), bytes that are not UTF-8 and lone surrogates (`"\\ud800"`). Light on purpose:
`import local_daemon` loads it (the state files), so it imports nothing but `json` and `math`.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["NonFiniteNumberError", "parse_json"]


class NonFiniteNumberError(ValueError):
    """A number in the body is not finite: a `NaN`/`Infinity` literal or beyond a float."""

    def __init__(self, spelling: str) -> None:
        # The spelling stays out of the message: it is the client's input, of any length.
        super().__init__("a number in the body is not finite")
        self.literal = spelling in ("NaN", "Infinity", "-Infinity")


def _no_constant(name: str) -> Any:
    raise NonFiniteNumberError(name)


def _finite_float(text: str) -> float:
    value = float(text)  # a JSON number never parses to NaN; past a float's range it is inf
    if math.isinf(value):
        raise NonFiniteNumberError(text)
    return value


def _check_text(value: Any) -> None:
    # Walked only when the body holds a `\u` escape: a lone surrogate (`"\ud800"`) parses into a
    # str that cannot be encoded again, so no answer could carry it back.
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, list):
        for item in value:
            _check_text(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            key.encode("utf-8")
            _check_text(item)


def parse_json(raw: bytes | bytearray) -> Any:
    """Parse a body as strict JSON.

    Raises `NonFiniteNumberError` for `NaN`, `Infinity` and numbers beyond a float however spelt
    (`1e400`, `-1E+99999`), UnicodeError for bytes that are not UTF-8 or a lone surrogate, other
    ValueErrors for anything that is not JSON, RecursionError for nesting too deep to parse.
    """
    value = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite_float)
    if b"\\u" in raw:
        _check_text(value)
    return value
