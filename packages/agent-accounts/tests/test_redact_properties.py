"""redact_secrets under hypothesis: a canary in every spec shape and every real-log shape, inside
random text, through JSON escaping (once and twice), URL encoding and HTML escaping, never
survives, and nothing raises.

The canary is short (under 32 characters) and made of letters and digits, so only the shape's own
context can catch it, never the 32-character run rule. A shape is joined to the random text by a
separator (whitespace or punctuation), as it is in a log line: a shape glued to a letter is not
the same shape (`xBearer abc` is no Authorization value). Runs are bounded (`max_examples`,
`deadline=None`) so the suite stays fast; the regex review in test_redact.py is what proves
linear time.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_accounts import REDACTED, redact_secrets

MARKER = "QzX"  # starts every canary; never produced by the random text (checked)

# REDACT_EXAMPLES=20000 for a deep run by hand; CI keeps the default.
BOUNDED = settings(
    max_examples=int(os.environ.get("REDACT_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,  # no .hypothesis directory in the tree
    derandomize=os.environ.get("CI") == "true",  # CI runs the same examples every time
)

canaries = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    min_size=4,
    max_size=24,
).map(lambda tail: MARKER + tail)

noise = st.text(
    alphabet=st.characters(exclude_categories=["Cs"]),
    max_size=24,
).filter(lambda text: MARKER.lower() not in text.lower())

separators = st.sampled_from([" ", "\n", "\r\n", "\t", " | ", "; ", ", ", " (", ") ", "\n\n  "])

FIELD_NAMES = [
    "access_token",
    "accessToken",
    "ACCESS-TOKEN",
    "accesstoken",
    "refresh_token",
    "refreshToken",
    "id_token",
    "idToken",
    "token",
    "Token",
    "client_secret",
    "clientSecret",
    "password",
    "Password",
    "authorization",
    "Authorization",
    "api_key",
    "apiKey",
    "x-api-key",
    "X_API_KEY",
    "x-access-token",
]
FIELD_SEPARATORS = ["=", ":", ": ", " = ", "=>", " => ", ":\n", ":\n    ", ": \r\n\t", "\t:\t"]
SCHEMES = ["Bearer", "bearer", "BEARER", "Basic", "Token", "Bot", "DPoP", "MAC", "Digest"]
BARE_SPECIALS = [";", "]", "}", "&", "'", ";]", "}'", "&&", "]]"]


def spec_shapes(c: str) -> list[str]:
    """Every pattern the spec lists, with the canary where the secret goes."""
    shapes = [
        # vendor key prefix
        f"sk-ant-oat01-{c}",
        f"sk-ant-ort01-{c}",
        f"sk-ant-api03-{c}",
        f"SK-ANT-API03-{c}",
        f"sk-proj-{c}",
        # JWT, two and three segments
        f"eyJ{c}.{c}",
        f"eyJhbGciOiJIUzI1NiJ9.eyJ{c}.{c}",
        # Authorization values, quoted or not, any case
        f"Bearer {c}",
        f"bearer {c}",
        f"BEARER\t{c}",
        f'Bearer "{c}"',
        f"Basic {c}",
        f"basic '{c} x'",
        # 32 or more base64url characters in a row
        f"{c}{'A' * 32}",
    ]
    for name in FIELD_NAMES:
        for sep in FIELD_SEPARATORS:
            shapes.append(f"{name}{sep}{c}")
        shapes += [
            f'"{name}": "{c}"',
            f'"{name}":"{c}"',
            f"'{name}': '{c}'",
            f'{name}="{c} with spaces"',
            f"{name}: Bearer {c}",
        ]
    return shapes


def real_log_shapes(c: str) -> list[str]:
    """The shapes real logs have that the spec's letter does not spell out."""
    shapes = [
        # a doubled scheme
        f"Bearer Bearer {c}",
        f"Authorization: Bearer Bearer {c}",
        f"authorization: bearer  Bearer {c}",
        f"Basic Basic {c}",
        # a newline between `:` and the value
        f'"access_token":\n  "{c}"',
        f"password:\r\n{c}",
        f"token:\n\n\t{c}",
        # JSON inside a JSON string
        json.dumps({"log": json.dumps({"access_token": c})}),
        json.dumps({"log": json.dumps({"msg": f"Bearer {c}"})}),
        json.dumps({"log": json.dumps({"log": json.dumps({"password": c})})}),
        # a token right after an escaped \n (and \t, \r)
        json.dumps({"log": f"line\nBearer {c}"}),
        json.dumps({"log": f"line\nsk-ant-oat01-{c}"}),
        json.dumps({"log": f"line\neyJ{c}.{c}"}),
        json.dumps({"log": f"line\ttoken={c}"}),
        json.dumps({"log": f"line\r\nDPoP {c}"}),
        # MAC and Digest: a whole auth-param list
        f'Authorization: MAC id="h480djs93hd8", ts="1336363200", nonce="dj83hs9s", mac="{c}"',
        f'Authorization: Digest username="u", realm="r", nonce="n", uri="/", response="{c}"',
        f"Authorization: Digest username=u, response={c}, algorithm=MD5",
        f'Digest username="u", response="{c}"',
        # URL-encoded and HTML-escaped field forms
        f"access_token%3D{c}",
        f"access_token%253D{c}",
        f"%22access_token%22%3A%22{c}%22",
        f"%22access_token%22%3A%20%22{c}%22",
        f"https://h/cb?state=s&access_token={c}&x=1",
        f"&quot;access_token&quot;: &quot;{c}&quot;",
        f"&#34;password&#34;:&#34;{c}&#34;",
        f"password&#61;{c}",
        f"token&#x3a; {c}",
    ]
    for scheme in SCHEMES:
        shapes += [
            f"Authorization: {scheme} {c}",
            f"authorization: {scheme.lower()} {c}",
            f'{{"Authorization": "{scheme} {c}"}}',
            f"{{'authorization': '{scheme} {c}'}}",
            f"Authorization: {scheme} {scheme} {c}",
        ]
    for scheme in ["Token", "Bot", "DPoP", "MAC", "Digest", "TOKEN", "dpop"]:
        shapes.append(f"{scheme} {c}")
    for special in BARE_SPECIALS:
        shapes += [
            f"password=p@ss{special}{c}",
            f"token=ab{special}{c}",
            f"password: x{special}{c}{special}y",
        ]
    shapes.append(f"password=p@ss]w0rd{c}")
    return shapes


def _json_string(text: str) -> str:
    return json.dumps(text)


def _json_string_ascii_off(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


ENCODINGS: dict[str, Callable[[str], str]] = {
    "raw": lambda t: t,
    "json": _json_string,
    "json-utf8": _json_string_ascii_off,
    "json-in-json": lambda t: json.dumps({"log": json.dumps({"msg": t})}),
    "url": lambda t: quote(t, safe=""),
    "url-plus": quote_plus,
    "url-twice": lambda t: quote(quote(t, safe=""), safe=""),
    "html": html.escape,
    "json-then-url": lambda t: quote(json.dumps(t), safe=""),
    "json-then-html": lambda t: html.escape(json.dumps(t)),
    "url-then-html": lambda t: html.escape(quote(t, safe="=:")),
}


def _check(text: str, canary: str) -> None:
    out = redact_secrets(text)
    assert isinstance(out, str)
    assert canary not in out, (text, out)
    assert REDACTED in out


def _embedded(shape: str, before: str, after: str, sep1: str, sep2: str) -> str:
    return f"{before}{sep1}{shape}{sep2}{after}"


@BOUNDED
@given(
    canary=canaries,
    index=st.integers(min_value=0),
    encoding=st.sampled_from(sorted(ENCODINGS)),
    before=noise,
    after=noise,
    sep1=separators,
    sep2=separators,
)
def test_spec_shapes_never_survive(
    canary: str, index: int, encoding: str, before: str, after: str, sep1: str, sep2: str
) -> None:
    shapes = spec_shapes(canary)
    shape = shapes[index % len(shapes)]
    _check(ENCODINGS[encoding](_embedded(shape, before, after, sep1, sep2)), canary)


@BOUNDED
@given(
    canary=canaries,
    index=st.integers(min_value=0),
    encoding=st.sampled_from(sorted(ENCODINGS)),
    before=noise,
    after=noise,
    sep1=separators,
    sep2=separators,
)
def test_real_log_shapes_never_survive(
    canary: str, index: int, encoding: str, before: str, after: str, sep1: str, sep2: str
) -> None:
    shapes = real_log_shapes(canary)
    shape = shapes[index % len(shapes)]
    _check(ENCODINGS[encoding](_embedded(shape, before, after, sep1, sep2)), canary)


def test_every_shape_in_every_encoding_once() -> None:
    """The whole table, deterministically: every shape under every encoding, no noise."""
    canary = MARKER + "k9Zt3Qa"
    for shape in spec_shapes(canary) + real_log_shapes(canary):
        for name, encode in ENCODINGS.items():
            text = encode(f"log: {shape} end")
            out = redact_secrets(text)
            assert canary not in out, (name, text, out)


@BOUNDED
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=200))
def test_any_text_never_raises_and_is_idempotent(text: str) -> None:
    once = redact_secrets(text)
    assert isinstance(once, str)
    assert redact_secrets(once) == once


# Pieces that exercise every alternative of every pattern, for the structured fuzz below.
PIECES = [
    "token",
    "password",
    "Authorization",
    "access_token",
    "Bearer",
    "Digest",
    "Token",
    "DPoP",
    " ",
    "\n",
    "\\n",
    "\t",
    "=",
    ":",
    "=>",
    '"',
    "'",
    "\\",
    '\\"',
    '\\\\\\"',
    "&quot;",
    "&#34;",
    "&amp;",
    "%22",
    "%3D",
    "%3A",
    "%20",
    "%0A",
    "%5C",
    "+",
    ";",
    "&",
    "]",
    "}",
    ",",
    "[REDACTED]",
    "a=",
    "abc",
    "Z9",
    "sk-ant-",
    "eyJ",
    ".",
    "-",
    "x" * 20,
]


@BOUNDED
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_structured_pieces_never_raise_and_are_idempotent(text: str) -> None:
    once = redact_secrets(text)
    assert isinstance(once, str)
    assert redact_secrets(once) == once, text


@pytest.mark.parametrize(
    "text",
    ["token=&quot;&#34;token", "token=&#34;&quot;abc", "token=&quot;QzXsecret&#34;x"],
)
def test_a_value_closed_by_another_spelling_of_its_quote_keeps_the_closer(text: str) -> None:
    once = redact_secrets(text)
    assert "QzX" not in once
    assert once.count(REDACTED) == 1
    assert redact_secrets(once) == once
