"""Secret redaction: the security boundary every message crosses before it leaves the library.

Patterns, in the order they run (each match becomes `[REDACTED]`):

| pattern | catches |
|---|---|
| `sk-<tag>-<rest>`, tag 2..16 letters or digits | vendor OAuth tokens and API keys |
| `eyJ<seg>.<seg>[.<seg>]` | JWTs |
| `Bearer <value>`, `Basic <value>` | Authorization values, quoted or not, any length |
| a secret field name, optional quote, `:`, `=` or `=>`, value | JSON, query, header fields |
| 32 or more base64url characters in a row | any other long opaque token |

Field names: access token, refresh token, id token, client secret, api key, x-api-key (each with
`_`, `-` or nothing between its words), `authorization`, `password` and `token`, in any case and
also as the tail of a longer name (`x-access-token`). A field or scheme keeps its name and its
quotes (`"token": "[REDACTED]"`), so redacted JSON stays JSON, and redaction is idempotent.

Documented non-matches: an opaque value that `+`, `/` or `.` splits into runs shorter than 32
characters, outside any field or scheme; a field name followed by anything but `:`/`=`/`=>`.

Linear time on any input, by construction: no quantified group contains a quantifier, every
unbounded repeat is possessive (`*+`, `++`, `{n,}+`) so the engine never backtracks into a run,
and the patterns over base64url runs only start at the first character of a run (a negative
look-behind), so no run is scanned again from inside itself. A cheap literal prefilter skips a
pattern whose literal is absent.
"""

from __future__ import annotations

import functools
import re

from ._errors import RedactedError

TYPE_CHECKING = False  # not typing's: the status line imports this module, never typing
if TYPE_CHECKING:
    from typing import Final, overload

__all__ = ["REDACTED", "redact_secrets"]

REDACTED: Final = "[REDACTED]"

_RUN = "A-Za-z0-9_-"  # the base64url alphabet
_START = f"(?<![{_RUN}])"
# RFC 6750 b64token characters: what may follow a vendor key prefix.
_B64TOKEN = "A-Za-z0-9._~+/=-"
_BARE_STOP = r"""\s"',;&}\]"""
# A value: quoted (backslash escapes allowed; up to the closing quote, or to the end of the line
# when the quote is never closed), or a bare word, possibly after an earlier `[REDACTED]`.
_VALUE = (
    r'(?:"(?:[^"\\\r\n]|\\.)*+"?+'
    r"|'(?:[^'\\\r\n]|\\.)*+'?+"
    r"|(?:\[REDACTED\])?+[^" + _BARE_STOP + r"]++"
    r"|\[REDACTED\])"
)

# re.ASCII: case folding stays within ASCII, so a match always contains its literal as
# `str.lower()` spells it and the prefilter below never skips a pattern that would match.
_I = re.IGNORECASE | re.ASCII
# Each pattern as (source, flags), in the order they run. They are compiled on first use, not at
# import: the status line imports this module on every prompt, and its labels rarely pass a
# prefilter, so most runs never need a pattern (compiling all five costs about 1 ms).
_SOURCES: Final[dict[str, tuple[str, int]]] = {
    # A key prefix starts after anything but a letter or digit (so `x_sk-ant-...` is caught and
    # `task-force-one` is not). A failed attempt reads at most the 20-character prefix, and the
    # tail may be empty, so the search stays linear without the run-boundary anchor the JWT needs.
    "_SK_KEY": (r"(?<![A-Za-z0-9])sk-[A-Za-z0-9]{2,16}-[" + _B64TOKEN + "]*+", _I),
    "_JWT": (
        _START + r"eyJ[" + _RUN + r"]*+\.[" + _RUN + r"]++(?:\.[" + _RUN + r"]++)?+",
        re.ASCII,
    ),
    "_AUTH_SCHEME": (r"\b(bearer|basic)([ \t]++)(" + _VALUE + ")", _I),
    "_FIELD": (
        r"(access[_-]?token|refresh[_-]?token|id[_-]?token|client[_-]?secret"
        r"|x[_-]?api[_-]?key|api[_-]?key|authorization|password|token)"
        r"""(["']?+[ \t]*+(?::|=>?)[ \t]*+(?:(?:bearer|basic)[ \t]++)?+)"""
        r"(" + _VALUE + ")",
        _I,
    ),
    "_LONG_RUN": (_START + f"[{_RUN}]{{32,}}+", re.ASCII),
}


@functools.cache
def _pattern(name: str) -> re.Pattern[str]:
    source, flags = _SOURCES[name]
    return re.compile(source, flags)


if TYPE_CHECKING:  # what __getattr__ gives, typed
    _SK_KEY: re.Pattern[str]
    _JWT: re.Pattern[str]
    _AUTH_SCHEME: re.Pattern[str]
    _FIELD: re.Pattern[str]
    _LONG_RUN: re.Pattern[str]
    PATTERNS: tuple[re.Pattern[str], ...]


def __getattr__(name: str) -> object:
    # The compiled patterns by name (`_SK_KEY`, ...), and all of them in order as `PATTERNS`.
    if name == "PATTERNS":
        return tuple(_pattern(n) for n in _SOURCES)
    if name in _SOURCES:
        return _pattern(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_FIELD_LITERALS: Final = ("token", "secret", "key", "authorization", "password")
_SCALARS: Final = (str, bytes, int, float, bool, type(None))


def _masked_value(value: str) -> str:
    # Keep the quotes around a quoted value, so JSON stays JSON and a second pass changes nothing.
    quote = value[0]
    if quote in "\"'":
        # Only a quoted alternative can end in its quote; a bare one never holds a quote.
        if len(value) >= 2 and value[-1] == quote:
            return quote + REDACTED + quote
        return quote + REDACTED
    return REDACTED


def _keep_name(match: re.Match[str]) -> str:
    return match.group(1) + match.group(2) + _masked_value(match.group(3))


def _redact_text(text: str) -> str:
    lowered = text.lower()
    if "sk-" in lowered:
        text = _pattern("_SK_KEY").sub(REDACTED, text)
    if "eyJ" in text:
        text = _pattern("_JWT").sub(REDACTED, text)
    if "bearer" in lowered or "basic" in lowered:
        text = _pattern("_AUTH_SCHEME").sub(_keep_name, text)
    if any(literal in lowered for literal in _FIELD_LITERALS):
        text = _pattern("_FIELD").sub(_keep_name, text)
    if len(text) >= 32:
        text = _pattern("_LONG_RUN").sub(REDACTED, text)
    return text


def _message(exc: BaseException) -> str:
    # An argument that is not a plain scalar renders through its own repr, which no pattern
    # can vouch for (a credentials object printing a short raw token): it says nothing.
    args: object = exc.args  # a property on a hostile type may return anything
    if not isinstance(args, tuple) or not all(type(a) in _SCALARS for a in args):
        return REDACTED
    text = str(exc)
    if type(text) is not str:
        return REDACTED
    return _redact_text(text)


def _redact_exception(exc: BaseException) -> BaseException:
    try:
        message = _message(exc)
    except Exception:  # an unreadable message (a throwing __str__ or args) says nothing
        message = REDACTED
    try:
        notes: object = exc.__notes__ if hasattr(exc, "__notes__") else []
        if not isinstance(notes, list | tuple):
            # traceback prints a non-sequence whole; iterating a str would leak it per character
            notes = [REDACTED]
        clean_notes = [
            _redact_text(str.__str__(n)) if isinstance(n, str) else REDACTED for n in notes
        ]
    except Exception:  # unreadable notes are dropped, never copied
        clean_notes = [REDACTED]
    new: BaseException
    try:
        new = type(exc)(message)
        # A type that renders more than its one message (extra fields, a custom __str__) could
        # show what was not redacted; it is replaced by the library's own error.
        if new.args != (message,) or str(new) not in (message, repr(message)):
            raise TypeError("type renders more than its message")
    except Exception:
        new = RedactedError(message, original_type=_redact_text(type(exc).__name__))
    for note in clean_notes:
        new.add_note(note)
    new.__cause__ = None
    new.__context__ = None
    new.__suppress_context__ = True
    new.__traceback__ = None
    return new


if TYPE_CHECKING:  # the overloads are for type checkers; at run time only the function exists

    @overload
    def redact_secrets(text_or_exception: str) -> str: ...
    @overload
    def redact_secrets(text_or_exception: BaseException) -> BaseException: ...
    @overload
    def redact_secrets(text_or_exception: object) -> str | BaseException: ...


def redact_secrets(text_or_exception: object) -> str | BaseException:
    """Replace token-shaped text with `[REDACTED]`; an exception comes back as a new, unchained one.

    Never raises. A value that is neither a string nor an exception becomes `[REDACTED]`; a `str`
    subclass comes back as a plain `str`. The new exception has the original's type when that
    type can be rebuilt from its one redacted message, else it is a `RedactedError`.
    """
    value = text_or_exception
    try:
        if isinstance(value, str):
            # str.__str__ copies a subclass to a plain str without calling its overrides.
            return _redact_text(str.__str__(value))
        if isinstance(value, BaseException):
            return _redact_exception(value)
    except Exception:  # a secret-safe answer beats an escape from the boundary itself
        if isinstance(value, BaseException):
            return RedactedError(REDACTED)
    return REDACTED
