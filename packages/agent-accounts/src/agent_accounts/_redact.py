r"""Secret redaction: the security boundary every message crosses before it leaves the library.

Patterns, in the order they run (each match becomes `[REDACTED]`):

1. `sk-<tag>-<rest>`, tag 2..16 letters or digits: vendor OAuth tokens and API keys.
2. `eyJ<seg>.<seg>[.<seg>]`: JWTs.
3. An Authorization scheme and its value: `Bearer`, `Basic`, `DPoP` (any case), `Token`, `Bot`,
   `MAC`, `Digest` (capitalised or upper case), also doubled (`Bearer Bearer x`), quoted or
   not, any length; after any scheme, a `name=value, ...` list (`Digest`, `MAC`) goes whole.
4. A secret field name, optional quote, `:`, `=` or `=>`, then the value: JSON, query and
   header fields, also escaped (`\"token\": \"x\"`, JSON in a JSON string, at any depth),
   URL-encoded (`token%3Dx`, `%22token%22%3A%22x%22`) and HTML-escaped
   (`&quot;token&quot;: &quot;x&quot;`), with any whitespace around the separator (a newline
   too, raw or as `\n`) and any schemes before the value.
5. 32 or more base64url characters in a row: any other long opaque token.

Field names: access token, refresh token, id token, client secret, api key, x-api-key (each with
`_`, `-` or nothing between its words), `authorization`, `password` and `token`, in any case and
also as the tail of a longer name (`x-access-token`). A field or scheme keeps its name and its
quotes (`"token": "[REDACTED]"`, `\"token\": \"[REDACTED]\"`, `%22[REDACTED]%22`), so redacted
JSON stays JSON, and redaction is idempotent. A key prefix, a JWT or a scheme also starts right
after an escape: `\n`, `\r`, `\t`, `\b`, `\f` (`"line\nBearer x"` in a JSON string), or a
URL-encoded byte (`%0Ask-...`, `%22eyJ...`), also escaped or encoded again.

A value is quoted (`"..."`, `'...'`, an escaped `\"...\"` at any depth, an HTML-escaped
`&quot;...&quot;`; up to the matching close, or the end of the line) or bare. A bare value ends
at whitespace, `"`, `,`, a backslash escape of a quote or of whitespace, and at `;`, `&`, `]`,
`}` or `'` only where that is structure: a run of them followed by the end, by whitespace or by
another stop, or followed by the next `name=` parameter (`a=1&token=x&b=2`). So
`password=p@ss]w0rd` and `token=a;b&c` are redacted whole.

Documented non-matches: an opaque value that `+`, `/` or `.` splits into runs shorter than 32
characters, outside any field or scheme; a field name followed by anything but `:`/`=`/`=>` (in
one of the forms above); a lower-case `token`, `bot`, `mac` or `digest` outside a field; a
scheme glued to a word (`xBearer y`). Over-redaction on purpose: the word after `Basic`,
`Token`, `Bot`, `MAC` or `Digest` (`Token expired`), and a URL-encoded value runs on to the
next `&` or whitespace.

Linear time on any input, by construction: every unbounded repeat is possessive (`*+`, `++`,
`{n,}+`) so the engine never backtracks into a run, and no unbounded repeat sits inside another
unbounded repeat (a bounded one may: it costs a constant per step). The patterns over base64url
runs only start at the first character of a run, or right after an escape (fixed-width
look-behinds); an escape's `\` or `%` is no run character, so each allows at most a few
starts in the run after it, and no run is scanned again from inside itself. Every scheme and
field match succeeds or fails within its own name, gap and value, and
the text a match covers is never searched again; a `MAC`/`Digest` list is extended one
parameter at a time, each consumed once. A cheap literal prefilter skips a pattern whose
literal is absent.
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
_PCT = r"%(?:25){0,3}+"  # a percent sign, URL-encoded up to three more times
# A backslash, raw or URL-encoded; a run of them escapes at any JSON depth.
_BACKSLASH = r"(?:\\|" + _PCT + r"5[Cc])"
# The start of a run: after no run character, or right after an escape such as `\n`, `%5Cn`,
# `%0A` or `%250A` (whose letter or digits would otherwise glue the token to a run it is not part
# of). Each backslash or `%` allows a few such starts in the run after it, never more.
_ESCAPES = (
    r"\\[nrtbf]",
    r"%5[Cc][nrtbf]",
    r"%255[Cc][nrtbf]",
    r"%[0-9A-Fa-f]{2}",
    r"%25[0-9A-Fa-f]{2}",
    r"%2525[0-9A-Fa-f]{2}",
)
_ESCAPED = "|".join(f"(?<={escape})" for escape in _ESCAPES)


def _starts_after(literal: str, before: str) -> str:
    """Return `literal` where it starts a token: after no `before` character, or an escape.

    The literal comes first, so the search skips ahead to it (the look-behinds, which check the
    text before it, run only where it is).
    """
    alternatives = [f"(?<!{before}{literal})"] + [f"(?<={e}{literal})" for e in _ESCAPES]
    return literal + "(?:" + "|".join(alternatives) + ")"


# RFC 6750 b64token characters: what may follow a vendor key prefix.
_B64TOKEN = "A-Za-z0-9._~+/=-"

# --- values ---------------------------------------------------------------------------------------
# HTML escapes, also escaped again (`&amp;quot;`) and URL-encoded (`%26quot%3B`).
_AMP = r"(?:&|" + _PCT + r"26)(?:amp(?:;|" + _PCT + r"3[Bb])){0,3}+"
_HASH = r"(?:#|" + _PCT + r"23)"
_SEMI = r"(?:;|" + _PCT + r"3[Bb])"
_HTML_DQUOTE = _AMP + "(?:quot|" + _HASH + "0{0,8}+34|" + _HASH + "[xX]0{0,8}+22)" + _SEMI
_HTML_QUOTE = (
    _AMP + "(?:quot|apos|" + _HASH + "0{0,8}+(?:34|39)|" + _HASH + "[xX]0{0,8}+2[27])" + _SEMI
)
# An encoded quote: `"`, `'`, behind any backslashes (an escaped quote, at any JSON depth), and
# their URL-encoded (`%22`, `%2522`, `%5C%22`) and HTML-escaped (`&quot;`, `&#34;`) forms.
_QUOTE = r"(?:" + _BACKSLASH + r"{0,16}+(?:[\"']|" + _PCT + r"2[27]|" + _HTML_QUOTE + "))"
# Whitespace around a field's separator: raw (a newline too), escaped at any depth, URL-encoded
# or `+`.
_WS = r"(?:[ \t\r\n+]{1,64}+|" + _BACKSLASH + r"{1,16}+[nrt]|" + _PCT + r"(?:20|0[9AaDd]))"
# Whitespace between a scheme and its value: a space or a tab, in the same forms.
_GAP = r"(?:[ \t+]{1,64}+|" + _BACKSLASH + r"{1,16}+t|" + _PCT + r"(?:20|09))"
_SEPARATOR = (
    r"(?::|=(?:>|" + _AMP + "gt" + _SEMI + ")?+|" + _PCT + r"3[AaDd](?:" + _PCT + "3[Ee])?+"
    "|"
    + _AMP
    + "(?:"
    + _HASH
    + "0{0,8}+(?:58|61)|"
    + _HASH
    + "[xX]0{0,8}+3[AaDd]|colon|equals)"
    + _SEMI
    + ")"
)
# A bare value's characters, and its soft stops: `;`, `&` (not an HTML-escaped double quote),
# `]`, `}`, `'` continue the value when what follows is more of it, not the next parameter.
_ORDINARY = r"""[^\s"',;&}\]\\]"""
# The same, in runs (fast), without `[`: an earlier `[REDACTED]` is matched as one unit.
_ORDINARY_RUN = r"""[^\s"',;&}\]\\\[]{1,64}+"""
_SOFT = r"(?:[;}\]']|(?!" + _HTML_DQUOTE + ")&)"
_NEXT_PARAM = r"(?:amp;){0,3}+[A-Za-z0-9_.-]{1,64}+="
_BARE = (
    # an earlier `[REDACTED]` is one unit, so a second pass stops where the first one did
    r"(?:"
    + _ORDINARY_RUN
    + r"|\[REDACTED\]|\["
    + r"|\\{1,16}+(?![\\\"'nrt])"
    + "|"
    + _SOFT
    + "{1,8}+(?="
    + _ORDINARY
    + ")(?!"
    + _NEXT_PARAM
    + "))++"
)


def _quoted_values(tag: str) -> str:
    """Return the quoted alternatives of a value; `tag` keeps the back-reference names unique."""
    return (
        # "..." and '...', backslash escapes allowed, to the close or the end of the line
        r'"(?:[^"\\\r\n]{1,64}+|\\.)*+"?+'
        r"|'(?:[^'\\\r\n]{1,64}+|\\.)*+'?+"
        # \"...\" at any depth (also HTML-escaped, \&quot;): closed by the same number of
        # backslashes and a quote; a longer run before a quote is a deeper quote inside it, a
        # shorter one ends it unclosed
        rf"|(?P<bs{tag}>\\{{1,16}}+)(?P<q{tag}>\"|&quot;)"
        r'(?:[^"&\\\r\n]{1,64}+|&(?!quot;)|\\{1,64}+(?!"|&quot;)'
        r"|(?=(?P=bs" + tag + r")\\)\\{1,64}+(?:\"|&quot;))*+"
        rf"(?:(?P=bs{tag})(?P=q{tag}))?+"
        # &quot;...&quot; (any HTML-escaped double quote), to the next one or the end of the line
        "|" + _HTML_DQUOTE + r"(?:[^&%\r\n]{1,64}+|(?!" + _HTML_DQUOTE + ")[&%])*+"
        "(?:" + _HTML_DQUOTE + ")?+"
    )


# An auth-param list item (`username="u"`, `response=\"r\"`): only after a scheme.
_PARAM_NAME = r"[A-Za-z0-9_-]{1,64}+[ \t]{0,16}+=[ \t]{0,16}+"
_VALUE = (
    "(?:"
    + _quoted_values("v")
    + "|"
    + _PARAM_NAME
    + "(?:"
    + _quoted_values("p")
    + ")"
    + "|"
    + _BARE
    + r"|\[REDACTED\])"
)
_FIELD_NAMES = (
    r"access[_-]?token|refresh[_-]?token|id[_-]?token|client[_-]?secret"
    r"|x[_-]?api[_-]?key|api[_-]?key|authorization|password|token"
)
_SCHEMES_ANY_CASE = "bearer|basic|dpop|token|bot|mac|digest"
_SCHEMES = "(?i:bearer|basic|dpop)|Token|TOKEN|Bot|BOT|MAC|Digest|DIGEST"

# re.ASCII: case folding stays within ASCII, so a match always contains its literal as
# `str.lower()` spells it and the prefilter below never skips a pattern that would match.
_I = re.IGNORECASE | re.ASCII
# Each pattern as (source, flags), in the order they run. They are compiled on first use, not at
# import: the status line imports this module on every prompt, and its labels rarely pass a
# prefilter, so most runs never need a pattern (compiling them all costs a few ms).
_SOURCES: Final[dict[str, tuple[str, int]]] = {
    # A key prefix starts after anything but a letter or digit (so `x_sk-ant-...` is caught and
    # `task-force-one` is not). A failed attempt reads at most the 20-character prefix, and the
    # tail may be empty, so the search stays linear without the run-boundary anchor the JWT needs.
    "_SK_KEY": (
        _starts_after("sk-", "[A-Za-z0-9]") + "[A-Za-z0-9]{2,16}-[" + _B64TOKEN + "]*+",
        _I,
    ),
    "_JWT": (
        _starts_after("eyJ", f"[{_RUN}]") + f"[{_RUN}]*+\\.[{_RUN}]++(?:\\.[{_RUN}]++)?+",
        re.ASCII,
    ),
    "_AUTH_SCHEME": (
        # (a scheme's first letter first: a cheap test that most positions fail)
        r"(?P<name>(?=[BbDdTtMm])(?:(?<![A-Za-z0-9_])|" + _ESCAPED + ")(?:" + _SCHEMES + "))"
        # a doubled (or tripled) scheme: the value is what follows the last one
        r"(?P<gap>(?:" + _GAP + "++(?:" + _SCHEMES + r")(?![A-Za-z0-9_])){0,4}+" + _GAP + "++)"
        # `TOKEN = x` is a field, and so is `Basic password: x`: the next pass takes them
        "(?![:=])(?!(?i:" + _FIELD_NAMES + ")" + _QUOTE + "?+" + _WS + "*+" + _SEPARATOR + ")"
        "(?P<value>" + _VALUE + ")",
        re.ASCII,
    ),
    "_FIELD": (
        "(?P<name>" + _FIELD_NAMES + ")"
        "(?P<gap>" + _QUOTE + "?+" + _WS + "*+" + _SEPARATOR + _WS + "*+"
        "(?P<scheme>(?:(?:" + _SCHEMES_ANY_CASE + ")" + _GAP + "++){0,4}+))"
        "(?P<value>" + _VALUE + ")",
        _I,
    ),
    # After an escape, the run starts at the escape's letter or digits: only longer, so the
    # plain run boundary is enough.
    "_LONG_RUN": (f"(?<![{_RUN}])[{_RUN}]{{32,}}+", re.ASCII),
    # The next item of an auth-param list, after a scheme whose value was an item.
    "_NEXT_ITEM": (r"[ \t]{0,16}+,[ \t]{0,16}+" + _PARAM_NAME + "(?:" + _VALUE + ")", re.ASCII),
    # What a value opens with, to keep: a quote in any encoding.
    "_OPENER": (_QUOTE, re.ASCII),
    # What a quoted value closes with, to keep: the closing quote may be spelt another way than
    # the opening one (`&quot;...&#34;`), and dropping it would leave a second pass a new value.
    "_CLOSER": (_QUOTE + r"\Z", re.ASCII),
    "_ITEM": (_PARAM_NAME, re.ASCII),
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
    # The compiled patterns by name (`_SK_KEY`, ...), and all of them as `PATTERNS`.
    if name == "PATTERNS":
        return tuple(_pattern(n) for n in _SOURCES)
    if name in _SOURCES:
        return _pattern(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_SCHEME_LITERALS: Final = ("bearer", "basic", "dpop", "token", "bot", "mac", "digest")
_FIELD_LITERALS: Final = ("token", "secret", "key", "authorization", "password")
_SCALARS: Final = (str, bytes, int, float, bool, type(None))


def _masked_value(value: str) -> str:
    # Keep the quotes around a quoted value, in whatever encoding, so JSON stays JSON and a
    # second pass changes nothing.
    if value[0] not in "\"'\\%&":  # no quote in any encoding starts otherwise
        return REDACTED
    opener = _pattern("_OPENER").match(value)
    if opener is None:
        return REDACTED
    quote = opener.group()
    if len(value) >= 2 * len(quote) and value.endswith(quote):
        return quote + REDACTED + quote
    # A quote's longest spelling is well under 80 characters; search only the tail (linear).
    closer = _pattern("_CLOSER").search(value, max(len(quote), len(value) - 80))
    if closer is not None:
        return quote + REDACTED + closer.group()
    return quote + REDACTED


def _substitute(name: str, text: str) -> str:
    """Mask every value `name` finds; an auth-param list after a scheme is masked whole."""
    pattern, item_start = _pattern(name), _pattern("_ITEM")
    parts: list[str] = []
    position = 0
    match = pattern.search(text)
    while match is not None:
        value = match.group("value")
        end = match.end()
        after_scheme = name == "_AUTH_SCHEME" or bool(match.group("scheme"))
        if after_scheme and item_start.match(value):
            # `Digest username="u", response="r"`: every later item goes too, one at a time.
            item = _pattern("_NEXT_ITEM")
            while (more := item.match(text, end)) is not None:
                end = more.end()
            masked = REDACTED
        else:
            masked = _masked_value(value)
        parts += (text[position : match.start()], match.group("name"), match.group("gap"), masked)
        position = end
        match = pattern.search(text, end)
    if not parts:
        return text
    parts.append(text[position:])
    return "".join(parts)


def _redact_text(text: str) -> str:
    lowered = text.lower()
    if "sk-" in lowered:
        text = _pattern("_SK_KEY").sub(REDACTED, text)
    if "eyJ" in text:
        text = _pattern("_JWT").sub(REDACTED, text)
    if any(literal in lowered for literal in _SCHEME_LITERALS):
        text = _substitute("_AUTH_SCHEME", text)
    if any(literal in lowered for literal in _FIELD_LITERALS):
        text = _substitute("_FIELD", text)
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
