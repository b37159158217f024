"""Byte-exact JSON layout of the credentials file, as the agent client's `JSON.stringify` writes it.

The refresher may change only four keys of the OAuth block and must leave every other byte where it
was. It therefore accepts a file only when re-serialising the parsed document reproduces the
file's bytes exactly, in one of the four layouts `JSON.stringify` produces for the agent client
(compact, or indented by 2 spaces, 4 spaces or a tab), and writes the new document in that layout.

The serialiser mirrors ECMAScript `JSON.stringify` rather than Python's `json.dumps`: integer-like
keys come first in ascending order (JS property order), numbers print as JS `Number#toString` does
(`1e+21`, `1e-7`, `100` for `1e2`, every number a double), and lone surrogates are escaped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

__all__ = [
    "LAYOUTS",
    "Layout",
    "LayoutError",
    "detect_layout",
    "parse_json_object",
    "serialize",
]

_ARRAY_INDEX_MAX: Final = 2**32 - 2
_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


class LayoutError(Exception):
    """The document cannot be written the way `JSON.stringify` would write it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """One of the layouts `JSON.stringify` produces; `indent` is the per-level indent string."""

    name: str
    indent: str


LAYOUTS: Final[tuple[Layout, ...]] = (
    Layout(name="compact", indent=""),
    Layout(name="indent-2", indent="  "),
    Layout(name="indent-4", indent="    "),
    Layout(name="indent-tab", indent="\t"),
)


def _reject_constant(name: str) -> object:
    # JSON.parse rejects NaN and Infinity; Python's parser would accept them.
    raise LayoutError("not JSON")


def parse_json_object(raw: bytes | bytearray) -> dict[str, object]:
    """Parse UTF-8 JSON text whose top level is an object, as `JSON.parse` would accept it."""
    value: object = None
    malformed = False
    try:
        text = bytes(raw).decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError, LayoutError):
        malformed = True
    # Raised outside the handler: the parser's error holds the document (a token) in `doc` or
    # `object`, and inside the handler it would be linked as __context__ even with `from None`.
    if malformed:
        raise LayoutError("not JSON")
    if not isinstance(value, dict):
        raise LayoutError("not an object")
    return value


def _js_number(value: float) -> str:
    """Format a double the way ECMAScript `Number::toString` does (radix 10)."""
    if math.isnan(value) or math.isinf(value):
        # JSON.stringify writes null here; such a file never round-trips.
        raise LayoutError("not finite")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest round-tripping digits, which is what ECMAScript asks for too.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(str(d) for d in digit_tuple).rstrip("0")
    assert isinstance(exponent, int)
    trailing = len(digit_tuple) - len(digits)
    exponent += trailing
    k = len(digits)
    n = exponent + k  # the decimal point sits after n digits
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


def _number(value: int | float) -> str:
    if isinstance(value, int):
        try:
            as_double = float(value)
        except OverflowError:
            raise LayoutError("not finite") from None
        return _js_number(as_double)
    return _js_number(value)


def _string(value: str) -> str:
    out = ['"']
    for ch in value:
        code = ord(ch)
        escaped = _ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _is_array_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and str(int(key)) == key and int(key) <= _ARRAY_INDEX_MAX


def _js_key_order(keys: Sequence[str]) -> list[str]:
    # ECMAScript OrdinaryOwnPropertyKeys: array indices ascending, then strings in insertion order.
    indices = sorted((k for k in keys if _is_array_index(k)), key=int)
    return indices + [k for k in keys if not _is_array_index(k)]


def _write(value: object, indent: str, depth: int, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int | float):
        out.append(_number(value))
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, Mapping):
        keys = _js_key_order([str(k) for k in value])
        if not keys:
            out.append("{}")
            return
        inner = "\n" + indent * (depth + 1) if indent else ""
        colon = ": " if indent else ":"
        out.append("{")
        for i, key in enumerate(keys):
            if i:
                out.append(",")
            out.append(inner)
            out.append(_string(key))
            out.append(colon)
            _write(value[key], indent, depth + 1, out)
        out.append("\n" + indent * depth + "}" if indent else "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        inner = "\n" + indent * (depth + 1) if indent else ""
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            out.append(inner)
            _write(item, indent, depth + 1, out)
        out.append("\n" + indent * depth + "]" if indent else "]")
    else:
        raise LayoutError("not a JSON value")


def serialize(document: Mapping[str, object], layout: Layout) -> bytes:
    """Serialise `document` exactly as `JSON.stringify(document, null, indent)` would, as UTF-8."""
    out: list[str] = []
    try:
        _write(document, layout.indent, 0, out)
    except RecursionError:
        raise LayoutError("too deep") from None
    return "".join(out).encode("utf-8")


def detect_layout(raw: bytes | bytearray, document: Mapping[str, object]) -> Layout:
    """Return the layout whose serialisation of `document` reproduces `raw` byte for byte."""
    for layout in LAYOUTS:
        if serialize(document, layout) == raw:
            return layout
    raise LayoutError("layout not reproduced")
