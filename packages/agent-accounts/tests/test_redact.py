from __future__ import annotations

import importlib
import json
import random
import re
import traceback
from typing import Any

import pytest

from agent_accounts import REDACTED, AccountsError, RedactedError, _redact, redact_secrets

# 31 characters of the run alphabet: only a pattern's own context can catch it, never the
# 32-character run rule, so each row below proves its own pattern.
CANARY = "CANARYcanary0123456789abcdefXYZ"
assert len(CANARY) == 31


# ---- one table row per pattern (spec: redactSecrets patterns) ------------------------------------

CATCHES = [
    # vendor secret-key prefix: sk-<tag>-..., any case, b64token tail
    (f"key sk-ant-oat01-{CANARY} end", f"sk-ant-oat01-{CANARY}"),
    (f"sk-ant-api03-{CANARY}", CANARY),
    (f"sk-ant-ort01-{CANARY}", CANARY),
    (f"SK-ANT-API03-{CANARY}", CANARY),
    (f"sk-proj-{CANARY}", CANARY),
    (f"(sk-ant-{CANARY}+/{CANARY}==)", f"{CANARY}+/{CANARY}"),
    ("x=sk-ant-", "sk-ant-"),
    (f"id_sk-ant-oat01-{CANARY}", CANARY),
    (f"--sk-ant-oat01-{CANARY}", CANARY),
    # JWT: eyJ segment, dot, segment, optional third
    ("t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "eyJzdWIiOiIxIn0"),
    ("t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "c2lnbmF0dXJl"),
    ("jwt eyJhbGc.eyJzdWI", "eyJzdWI"),
    (f"[eyJ{CANARY}.{CANARY}]", CANARY),
    # Bearer / Basic: quoted or not, any length, any case
    ("Authorization: Bearer abc", "abc"),
    ("bearer x", " x"),
    ("BEARER\tx1", "x1"),
    (f"Bearer {CANARY}.{CANARY}/{CANARY}+=", CANARY),
    ('"Bearer a.b/c+d="', "a.b/c+d="),
    ('Bearer "quoted value with spaces"', "quoted value"),
    ("Bearer 'single quoted'", "single"),
    ("Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ('basic "u p"', "u p"),
    ("Bearer " + "z" * 100_000, "zzz"),
    # named secret fields: any case, `_`/`-`/nothing between words, `:` `=` `=>`, quoted or not
    ('{"access_token": "a1"}', "a1"),
    ('{"access_token":"a1"}', "a1"),
    ("accessToken=a2&x=1", "a2"),
    ("ACCESS-TOKEN: a3", "a3"),
    ("accesstoken=a4", "a4"),
    ("REFRESH_TOKEN: 'r 1'", "r 1"),
    ("refreshToken=r2", "r2"),
    ("refresh-token=r3", "r3"),
    ("refreshtoken=r4", "r4"),
    ("id_token=i1", "i1"),
    ("idToken: i2", "i2"),
    ("token=t1", "t1"),
    ("TOKEN = t2", "t2"),
    ("x-access-token: t3", "t3"),
    ("token => t4", "t4"),
    ("client_secret=c1", "c1"),
    ("clientSecret: c2", "c2"),
    ("client-secret=c3", "c3"),
    ("password=p1", "p1"),
    ('"Password" : "p 2"', "p 2"),
    ("PASSWORD:p3", "p3"),
    ("authorization: z1", "z1"),
    ("Authorization=z2", "z2"),
    ("api_key=k1", "k1"),
    ("apiKey=k2", "k2"),
    ("api-key: k3", "k3"),
    ("x-api-key: k4", "k4"),
    ("X_API_KEY=k5", "k5"),
    ("xapikey=k6", "k6"),
    ("https://h/cb?access_token=q1&state=s", "q1"),
    ('{"password": "esc\\"aped"}', "aped"),
    ('password="never closed, rest of line', "rest of line"),
    ("password='never closed", "never"),
    ("token=" + "v" * 100_000, "vvv"),
    # real-log shapes (issue 14): a doubled scheme, other Authorization schemes
    ("Bearer Bearer tok1", "tok1"),
    ("Authorization: Bearer Bearer tok2", "tok2"),
    ("authorization: bearer\tBEARER  tok3", "tok3"),
    ("Authorization: Token tok4", "tok4"),
    ("Authorization: Bot b0t.tok5", "tok5"),
    ("Authorization: DPoP tok6", "tok6"),
    ("authorization: token tok7", "tok7"),
    ("Token tok8", "tok8"),
    ('Authorization: MAC id="h480", ts="1336363200", nonce="dj83", mac="tok9"', "tok9"),
    ('Authorization: Digest username="u", realm="r", response="tokA"', "tokA"),
    ("Digest username=u, response=tokB, algorithm=MD5", "tokB"),
    # JSON inside a JSON string, at two depths
    ('{"log":"{\\"access_token\\": \\"ab.cd\\"}"}', "ab.cd"),
    ('{"a":"{\\"b\\":\\"{\\\\\\"password\\\\\\": \\\\\\"p1x\\\\\\"}\\"}"}', "p1x"),
    # a token right after an escaped \n, \t or %0A
    ('{"log":"line\\nBearer tokC"}', "tokC"),
    ('{"log":"line\\nsk-ant-x1"}', "x1"),
    ('{"log":"line\\teyJa.tokD"}', "tokD"),
    ("line%0Ask-ant-x2", "x2"),
    # a newline between `:` and the value
    ('"access_token":\n  "tokE"', "tokE"),
    ("password:\r\n\ttokF", "tokF"),
    ('"token:\\ntokG"', "tokG"),
    # bare values holding ; ] } & '
    ("password=p@ss]w0rd", "w0rd"),
    ("password=a;tokH", "tokH"),
    ("password=a}tokI", "tokI"),
    ("password=a&tokJ", "tokJ"),
    ("password=it'stokK", "stokK"),
    ("password=a;]}tokL end", "tokL"),
    # URL-encoded and HTML-escaped field forms
    ("access_token%3DtokM", "tokM"),
    ("access_token%253DtokN", "tokN"),
    ("%22access_token%22%3A%20%22tokO%22", "tokO"),
    ("&quot;access_token&quot;: &quot;tokP&quot;", "tokP"),
    ("&#34;password&#34;:&#34;tokQ&#34;", "tokQ"),
    ("password&#61;tokR", "tokR"),
    ("token =&gt; tokS", "tokS"),
    ("&amp;quot;token&amp;quot;: &amp;quot;tokT&amp;quot;", "tokT"),
    # 32 or more base64url characters in a row
    ("sha 0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    ("id a-b_c" + "x" * 40, "x" * 40),
    ("-" * 32, "-" * 32),
]


@pytest.mark.parametrize(("text", "secret"), CATCHES)
def test_each_pattern_redacts(text: str, secret: str) -> None:
    out = redact_secrets(text)
    assert secret not in out
    assert REDACTED in out


# ---- exact output: names, quotes and surrounding text stay -------------------------------------


REPLACED_WHOLE = f"token={REDACTED}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("token=abc other", f"token={REDACTED} other"),
        ("Bearer abc other", f"Bearer {REDACTED} other"),
        ("Authorization: Bearer abc", f"Authorization: Bearer {REDACTED}"),
        ('{"access_token": "a1", "n": 1}', f'{{"access_token": "{REDACTED}", "n": 1}}'),
        ("password='p q' tail", f"password='{REDACTED}' tail"),
        ('token: ""', f'token: "{REDACTED}"'),
        ('password="open', f'password="{REDACTED}'),
        ("a=1&token=abc&b=2", f"a=1&token={REDACTED}&b=2"),
        ("token=abc,next", f"token={REDACTED},next"),
        ("token=abc; next", f"token={REDACTED}; next"),
        ("token=abc;path=/", f"token={REDACTED};path=/"),  # `;` before the next parameter
        ("token=abc;next", REPLACED_WHOLE),  # `;` inside a value: the value goes on
        ("{token=abc}", f"{{token={REDACTED}}}"),
        (f"key sk-ant-oat01-{CANARY}.", f"key {REDACTED}"),
        ("sk-ant-x and text", f"{REDACTED} and text"),
        ("a eyJx.y b", f"a {REDACTED} b"),
        ("x" * 32, REDACTED),
        ("line1 token=a\nline2 Bearer b", f"line1 token={REDACTED}\nline2 Bearer {REDACTED}"),
        ("Bearer Bearer x", f"Bearer Bearer {REDACTED}"),
        ("Authorization: Token x", f"Authorization: Token {REDACTED}"),
        ('Digest username="u", response="r" tail', f"Digest {REDACTED} tail"),
        ("TOKEN = t2", f"TOKEN = {REDACTED}"),
        ("Bearer token=abc", f"Bearer token={REDACTED}"),
        ("password=p@ss]w0rd]", f"password={REDACTED}]"),
        ("[password=x]]", f"[password={REDACTED}]]"),
        ("a=1&amp;token=abc&amp;b=2", f"a=1&amp;token={REDACTED}&amp;b=2"),
        ('{\\"token\\": \\"a\\"}', f'{{\\"token\\": \\"{REDACTED}\\"}}'),
        ("%22token%22%3A%22a%22&x=1", f"%22token%22%3A%22{REDACTED}%22&x=1"),
        ("%22token%22%3A%22a%22%2C%22x%22", f"%22token%22%3A%22{REDACTED}%22"),  # over-redacts
        ("&quot;token&quot;:&quot;a&quot;,", f"&quot;token&quot;:&quot;{REDACTED}&quot;,"),
        ('{"log":"a\\nBearer x"}', f'{{"log":"a\\nBearer {REDACTED}"}}'),
        ("token:\n  abc", f"token:\n  {REDACTED}"),
    ],
)
def test_exact_output(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected


# ---- documented non-matches and over-redaction -------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain words stay",
        "a short id abc123",
        "deadbeef",
        "0123456789abcdef0123456789abcde",  # 31 characters: under the run length
        # an opaque value split by +, / or . into runs under 32 is not caught (documented)
        "0123456789abcdef01234567+89abcdef0123456789abcdef/0123456789abcdef.0123456789",
        f"{CANARY}.{CANARY}/{CANARY}+{CANARY}",
        "task-force-one",  # `sk-` inside a word is not a key prefix
        "sk-a-x",  # a one-letter tag is not a vendor tag
        "risk-free-rate desk-top-app",
        "the token is fine",  # a field name with no `:` or `=` after it
        "tokens=5",
        "max_tokens: 100",
        "token_type=Bearer",
        "password:",
        "Bearer",
        "Bearer  ",
        "basically",
        "eyJ alone",
        "eyJabc",  # no dot, no JWT
        "naïve café ünïcode",
        "ſk-ant-x",  # the long s folds to `s` only under Unicode folding, which is off
        "the bot is fine, the mac address, a digest",  # lower case: no scheme outside a field
        "Token",
        "Bearer Bearer",
        "DPoP",
        "xBearer abc",  # a scheme glued to a word is no scheme
        "token%3A",
    ],
)
def test_documented_non_matches_stay(text: str) -> None:
    assert redact_secrets(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",  # a full commit hash
        "id 123e4567-e89b-12d3-a456-426614174000",  # a UUID is one hyphenated run
        "some-really-long-hyphenated-package-name",
        "this is a basic test",  # `Basic <word>` is redacted wherever it appears
        "Token expired",  # so is `Token <word>`, `Bot <word>`, `MAC <word>`, `Digest <word>`
        "MAC address 00:11:22",
        "password:\n\nNext paragraph",  # a newline may sit between `:` and the value
    ],
)
def test_documented_over_redaction(text: str) -> None:
    assert REDACTED in redact_secrets(text)


# ---- properties: idempotent, JSON stays JSON, never raises -------------------------------------

ALL_ROWS = [t for t, _ in CATCHES] + [
    "token=[REDACTED]",
    "Bearer [REDACTED]",
    'token="[REDACTED]',
    "token=[REDACTED]]tail",
    "token=abc]def",
]


@pytest.mark.parametrize("text", ALL_ROWS)
def test_idempotent(text: str) -> None:
    once = redact_secrets(text)
    assert redact_secrets(once) == once


@pytest.mark.parametrize(
    "field",
    ["access_token", "refreshToken", "id_token", "token", "client_secret", "password", "api_key"],
)
def test_redacted_json_is_still_json(field: str) -> None:
    doc = {field: f"sk-ant-oat01-{CANARY}", "nested": {field: 'q"uote\\d', "n": [1, 2]}}
    for indent in (None, 2):
        out = redact_secrets(json.dumps(doc, indent=indent))
        assert CANARY not in out
        assert json.loads(out) == {field: REDACTED, "nested": {field: REDACTED, "n": [1, 2]}}


FUZZ_PIECES = [
    "token",
    "Token",
    "=",
    ":",
    "=>",
    '"',
    "'",
    "\\",
    " ",
    "\t",
    "\n",
    "Bearer ",
    "basic ",
    "sk-",
    "ant-",
    "eyJ",
    ".",
    "a",
    "Z9",
    "-",
    "_",
    "+",
    "/",
    "[REDACTED]",
    "]",
    "}",
    ",",
    "&",
    "password",
    "x-api-key",
    "é",
    "İ",
    "ſ",
    "\u212a",
    "x" * 20,
]


def test_fuzz_never_raises_is_idempotent_and_prefilter_is_exact() -> None:
    rng = random.Random(1234)
    for _ in range(3000):
        text = "".join(rng.choice(FUZZ_PIECES) for _ in range(rng.randrange(1, 40)))
        once = redact_secrets(text)
        assert isinstance(once, str)
        assert redact_secrets(once) == once, text
        assert once == _without_prefilter(text), text


def _without_prefilter(text: str) -> str:
    """Run every pattern unconditionally: the prefilter may only skip passes that change nothing."""
    text = _redact._SK_KEY.sub(REDACTED, text)
    text = _redact._JWT.sub(REDACTED, text)
    text = _redact._substitute("_AUTH_SCHEME", text)
    text = _redact._substitute("_FIELD", text)
    return _redact._LONG_RUN.sub(REDACTED, text)


def test_canary_in_any_field_position_never_survives() -> None:
    rng = random.Random(99)
    names = ["access_token", "refreshToken", "TOKEN", "password", "x-api-key", "Authorization"]
    seps = [":", "=", " : ", '": "', "=>", "= "]
    for _ in range(500):
        name, sep = rng.choice(names), rng.choice(seps)
        value = rng.choice([CANARY, f"'{CANARY}'", f'"{CANARY} x"', f"Bearer {CANARY}"])
        if sep.endswith('"'):
            value = rng.choice([f'{CANARY}"', f'Bearer {CANARY}"', f'a {CANARY}"'])
        before, after = rng.choice(["", "x ", '{"']), rng.choice(["", " y", ",z"])
        text = f"{before}{name}{sep}{value}{after}"
        assert CANARY not in redact_secrets(text), text


class Sneaky(str):
    def lower(self) -> str:
        raise RuntimeError("no")

    def __str__(self) -> str:
        return "token=leak"


@pytest.mark.parametrize("value", [None, 1, 2.5, b"token=abc", ["token=abc"], {"a": 1}, object()])
def test_non_text_becomes_the_marker(value: object) -> None:
    assert redact_secrets(value) == REDACTED


def test_str_subclass_comes_back_as_plain_str_of_its_own_characters() -> None:
    out = redact_secrets(Sneaky("Bearer abc"))
    assert type(out) is str
    assert out == f"Bearer {REDACTED}"


# ---- exceptions ----------------------------------------------------------------------------------


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


class StrReturnsInt(Exception):
    def __str__(self) -> Any:
        return 5  # noqa: PLE0307  # the case under test


class NeedsTwoArgs(Exception):
    def __init__(self, a: str, b: int) -> None:
        super().__init__(a, b)


class RendersExtra(Exception):
    def __str__(self) -> str:
        return f"{self.args[0]} (extra context)"


class ExplodingInit(Exception):
    def __init__(self, *args: object) -> None:
        if args and REDACTED in str(args[0]):
            raise RuntimeError("cannot rebuild")  # only the rebuild with a redacted message fails
        super().__init__(*args)


class BadArgs(Exception):
    @property
    def args(self) -> Any:  # type: ignore[override]
        raise RuntimeError("no args")


class Credentials:
    def __repr__(self) -> str:
        return "Credentials(shorttok)"


def _raise_chained() -> BaseException:
    secret_local = f"sk-ant-oat01-{CANARY}"  # a traceback frame holds this local
    try:
        try:
            raise KeyError(secret_local)
        except KeyError:
            raise ValueError(f"refresh failed token={secret_local}")  # noqa: B904  # implicit context
    except ValueError as exc:
        exc.add_note(f"note password={CANARY}")
        exc.__cause__ = OSError(f"Bearer {CANARY}")
        return exc


class TestExceptions:
    def test_new_exception_is_unchained_and_clean(self) -> None:
        original = _raise_chained()
        assert original.__traceback__ is not None
        assert isinstance(original.__context__, KeyError)
        before = (original.args, original.__cause__, original.__context__, original.__notes__)
        tb_before = original.__traceback__
        red = redact_secrets(original)
        assert red is not original
        assert type(red) is ValueError
        assert red.__cause__ is None
        assert red.__context__ is None
        assert red.__traceback__ is None
        assert red.__suppress_context__ is True
        assert red.args == (f"refresh failed token={REDACTED}",)
        assert red.__notes__ == [f"note password={REDACTED}"]
        text = "".join(traceback.format_exception(red))
        assert CANARY not in text
        assert "refresh failed" in text
        te = traceback.TracebackException.from_exception(red, capture_locals=True)
        assert CANARY not in "".join(te.format())
        # the original is untouched
        assert (original.args, original.__cause__, original.__context__) == before[:3]
        assert original.__notes__ == before[3]
        assert original.__traceback__ is tb_before
        assert CANARY in "".join(traceback.format_exception(original))

    def test_raising_the_redacted_copy_from_none_carries_nothing(self) -> None:
        original = _raise_chained()
        try:
            try:
                raise original
            except ValueError as exc:
                raise redact_secrets(exc) from None
        except ValueError as final:
            text = "".join(traceback.format_exception(final))
        assert CANARY not in text
        assert "refresh failed" in text

    @pytest.mark.parametrize(
        ("exc", "kind"),
        [
            (ValueError(f"token={CANARY}"), ValueError),
            (RuntimeError(f"Bearer {CANARY}"), RuntimeError),
            (KeyError(f"password={CANARY}"), KeyError),
            (OSError(2, f"No such file token={CANARY}"), FileNotFoundError),
            (TimeoutError(f"api_key={CANARY}"), TimeoutError),
            (AccountsError(f"token={CANARY}"), AccountsError),
            (KeyboardInterrupt(f"token={CANARY}"), KeyboardInterrupt),
        ],
    )
    def test_same_type_when_it_rebuilds_from_one_message(
        self, exc: BaseException, kind: type[BaseException]
    ) -> None:
        red = redact_secrets(exc)
        assert type(red) is kind
        assert CANARY not in str(red)
        assert CANARY not in repr(red)
        assert REDACTED in str(red)

    @pytest.mark.parametrize(
        "exc",
        [
            NeedsTwoArgs(f"token={CANARY}", 1),
            RendersExtra(f"token={CANARY}"),
            ExplodingInit(f"token={CANARY}"),
            ExceptionGroup(f"token={CANARY}", [ValueError(CANARY)]),
            UnicodeDecodeError("utf-8", CANARY.encode() + b"\xff", 31, 32, "bad"),
        ],
    )
    def test_type_that_cannot_be_rebuilt_becomes_redacted_error(self, exc: BaseException) -> None:
        red = redact_secrets(exc)
        assert isinstance(red, RedactedError)
        assert isinstance(red, AccountsError)
        assert red.original_type == type(exc).__name__
        assert CANARY not in "".join(traceback.format_exception(red))

    def test_type_name_is_redacted_too(self) -> None:
        def two_args(self: Exception, a: str, b: int) -> None:
            Exception.__init__(self, a, b)

        odd = type(f"sk-ant-oat01-{CANARY}", (Exception,), {"__init__": two_args})
        red = redact_secrets(odd("x", 1))
        assert isinstance(red, RedactedError)
        assert CANARY not in red.original_type

    @pytest.mark.parametrize(
        "exc",
        [
            Unprintable(f"token={CANARY}"),
            StrReturnsInt(),
            BadArgs(),
            ValueError(Credentials()),  # a non-scalar argument renders through a foreign repr
            ValueError(f"token={CANARY}", Credentials()),
        ],
    )
    def test_unreadable_or_non_string_message_is_the_marker(self, exc: BaseException) -> None:
        red = redact_secrets(exc)
        assert str(red) in (REDACTED, repr(REDACTED))
        assert "shorttok" not in "".join(traceback.format_exception(red))

    def test_scalar_arguments_keep_their_text(self) -> None:
        assert str(redact_secrets(ValueError("bad value", 3))) == "('bad value', 3)"
        assert str(redact_secrets(ValueError(b"token=abc"))) == f"b'token={REDACTED}'"

    def test_notes_are_redacted(self) -> None:
        exc = ValueError("x")
        exc.add_note(f"Bearer {CANARY}")
        exc.add_note("plain note")
        red = redact_secrets(exc)
        assert red.__notes__ == [f"Bearer {REDACTED}", "plain note"]
        assert not hasattr(redact_secrets(ValueError("y")), "__notes__")

    @pytest.mark.parametrize(
        ("notes", "expected"),
        [
            (f"token={CANARY}", [REDACTED]),  # a str, not a list: never iterated per character
            ([f"token={CANARY}", 5], [f"token={REDACTED}", REDACTED]),
            ((f"Bearer {CANARY}",), [f"Bearer {REDACTED}"]),
        ],
    )
    def test_odd_notes(self, notes: object, expected: list[str]) -> None:
        exc = ValueError("x")
        exc.__notes__ = notes  # type: ignore[assignment]
        assert redact_secrets(exc).__notes__ == expected

    def test_never_raises_on_exceptions(self) -> None:
        for exc in (Unprintable(), BadArgs(), StrReturnsInt(), ExplodingInit(f"token={CANARY}")):
            red = redact_secrets(exc)
            assert isinstance(red, BaseException)


# ---- linear time by construction (timing lives in benchmarks/bench_redact.py) -------------------

_parser: Any = importlib.import_module("re._parser")
_constants: Any = importlib.import_module("re._constants")
REPEATS = {_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.POSSESSIVE_REPEAT}


def _walk(items: Any, inside_unbounded: bool, found: list[str]) -> None:
    """Record every hazard: an unbounded repeat that can backtrack, or one inside another.

    A bounded repeat may sit anywhere: inside an unbounded one it costs a constant per step.
    """
    for op, av in items:
        if op in REPEATS:
            _low, high, body = av
            unbounded = high is _constants.MAXREPEAT
            if unbounded and op is not _constants.POSSESSIVE_REPEAT:
                found.append(f"backtracking unbounded repeat {op}")
            if inside_unbounded and unbounded:
                found.append("unbounded repeat inside an unbounded repeat")
            _walk(body, inside_unbounded or unbounded, found)
        elif op is _constants.SUBPATTERN:
            _walk(av[-1], inside_unbounded, found)
        elif op is _constants.BRANCH:
            for branch in av[1]:
                _walk(branch, inside_unbounded, found)
        elif op in (_constants.ASSERT, _constants.ASSERT_NOT, _constants.ATOMIC_GROUP):
            _walk(av[-1] if op is not _constants.ATOMIC_GROUP else av, inside_unbounded, found)


def _run_starts(pattern: re.Pattern[str]) -> list[tuple[Any, int]]:
    """Return the (kind, direction) of the assertions that decide where a run pattern starts.

    That is the pattern's first item, or, when it opens with its literal (`eyJ`), the branch of
    look-behinds right after the literal.
    """
    items = list(_parser.parse(pattern.pattern, pattern.flags))
    while items and items[0][0] is _constants.LITERAL:
        items.pop(0)
    first_op, first_av = items[0]
    if first_op is _constants.BRANCH:
        return [(branch[0][0], branch[0][1][0]) for branch in first_av[1]]
    return [(first_op, first_av[0])]


class TestLinearByConstruction:
    @pytest.mark.parametrize("pattern", _redact.PATTERNS, ids=lambda p: p.pattern[:30])
    def test_no_nested_or_backtracking_quantifier(self, pattern: re.Pattern[str]) -> None:
        found: list[str] = []
        _walk(_parser.parse(pattern.pattern, pattern.flags), False, found)
        assert found == []

    @pytest.mark.parametrize("hazard", [r"(a+)+", r"(?:ab*)*+", r"a*b", r"x{2,}", r"(?:a[bc]++)*+"])
    def test_the_walker_sees_hazards(self, hazard: str) -> None:
        found: list[str] = []
        _walk(_parser.parse(hazard), False, found)
        assert found, hazard

    @pytest.mark.parametrize("safe", [r"(?:a{1,8}+)*+", r"(?:a++b){0,4}+", r"(?:(?=\w{1,9}+)a)*+"])
    def test_the_walker_allows_bounded_nesting(self, safe: str) -> None:
        found: list[str] = []
        _walk(_parser.parse(safe), False, found)
        assert found == [], safe

    @pytest.mark.parametrize("pattern", [_redact._SK_KEY, _redact._JWT, _redact._LONG_RUN])
    def test_run_patterns_start_only_at_a_run_boundary(self, pattern: re.Pattern[str]) -> None:
        # a negative look-behind for a run character, or a look-behind for an escape (`\n`):
        # both look back (direction -1), and an escape's backslash is never a run character
        starts = _run_starts(pattern)
        assert starts[0] == (_constants.ASSERT_NOT, -1)
        assert all(direction == -1 for _, direction in starts)
        assert all(kind is _constants.ASSERT for kind, _ in starts[1:])

    @pytest.mark.parametrize(
        "unit",
        [
            "a",
            "Bearer ",
            "token=",
            "eyJ",
            "eyJa.",
            "sk-ant-",
            'token="',
            "a-",
            "'",
            "\\",
            "b" * 31 + ".",
        ],
    )
    def test_hostile_inputs_complete_and_stay_bounded(self, unit: str) -> None:
        text = unit * (200_000 // len(unit))
        out = redact_secrets(text)
        assert isinstance(out, str)
        assert len(out) <= len(text) + len(REDACTED) * (len(text) // 2 + 1)
