"""Secret redaction: the security boundary every message crosses before it leaves the library.

Each pattern runs in linear time on any input. Patterns over base64url runs are anchored at the
start of a run (a negative look-behind on the run alphabet) and use possessive quantifiers, so
the engine never re-scans a run from inside it and never backtracks into one; literal-led
patterns (`Bearer`, field names) scan at most to the end of their own value. A cheap literal
prefilter skips the patterns whose literal is absent.
"""

from __future__ import annotations

import re
from typing import TypeVar, overload

from ._errors import RedactedError

__all__ = ["REDACTED", "redact_secrets"]

REDACTED = "[REDACTED]"

_RUN = "A-Za-z0-9_-"
_START = f"(?<![{_RUN}])"
# A value after `:`/`=` or an auth scheme: quoted (to the closing quote on the line) or a bare word.
_VALUE = r"""(?:"[^"\r\n]*+"|'[^'\r\n]*+'|[^\s"',;&}\]]++)"""

_SK_KEY = re.compile(_START + r"sk-[A-Za-z0-9]{2,16}-[" + _RUN + "]*+", re.IGNORECASE)
_JWT = re.compile(_START + r"eyJ[" + _RUN + r"]*+\.[" + _RUN + r"]++(?:\.[" + _RUN + r"]++)?+")
_AUTH_SCHEME = re.compile(r"\b(bearer|basic)([ \t]++)" + _VALUE, re.IGNORECASE)
_FIELD = re.compile(
    r"(access_?token|refresh_?token|id_?token|client_?secret|x-?api-?key|api_?key"
    r"|authorization|password|token)"
    r"""(["']?+[ \t]*+[:=][ \t]*+)""" + _VALUE,
    re.IGNORECASE,
)
_LONG_RUN = re.compile(_START + f"[{_RUN}]{{32,}}+")

_FIELD_LITERALS = ("token", "secret", "key", "authorization", "password")


def _keep_prefix(match: re.Match[str]) -> str:
    return match.group(1) + match.group(2) + REDACTED


def _redact_text(text: str) -> str:
    lowered = text.lower()
    if "sk-" in lowered:
        text = _SK_KEY.sub(REDACTED, text)
    if "eyJ" in text:
        text = _JWT.sub(REDACTED, text)
    if "bearer" in lowered or "basic" in lowered:
        text = _AUTH_SCHEME.sub(_keep_prefix, text)
    if any(literal in lowered for literal in _FIELD_LITERALS):
        text = _FIELD.sub(_keep_prefix, text)
    if len(text) >= 32:
        text = _LONG_RUN.sub(REDACTED, text)
    return text


def _redact_exception(exc: BaseException) -> BaseException:
    try:
        message = _redact_text(str(exc))
    except Exception:  # an unreadable message (a throwing or non-str __str__) says nothing
        message = REDACTED
    notes = getattr(exc, "__notes__", None)
    redacted_notes = (
        [_redact_text(n) if isinstance(n, str) else REDACTED for n in notes]
        if isinstance(notes, list)
        else []
    )
    new: BaseException
    try:
        new = type(exc)(message)
        if str(new) not in (message, repr(message)):
            raise TypeError("type renders its message differently")
    except Exception:
        new = RedactedError(message, original_type=type(exc).__name__)
    for note in redacted_notes:
        new.add_note(note)
    new.__cause__ = None
    new.__context__ = None
    new.__suppress_context__ = True
    new.__traceback__ = None
    return new


_E = TypeVar("_E", bound=BaseException)


@overload
def redact_secrets(value: str) -> str: ...
@overload
def redact_secrets(value: BaseException) -> BaseException: ...
@overload
def redact_secrets(value: object) -> str | BaseException: ...
def redact_secrets(value: object) -> str | BaseException:
    """Replace token-shaped text with `[REDACTED]`; an exception comes back as a new, unchained one.

    Never raises. A value that is neither a string nor an exception becomes `[REDACTED]`.
    """
    try:
        if isinstance(value, str):
            return _redact_text(value)
        if isinstance(value, BaseException):
            return _redact_exception(value)
    except Exception:  # a secret-safe answer beats an escape from the boundary itself
        if isinstance(value, BaseException):
            return RedactedError(REDACTED)
    return REDACTED
