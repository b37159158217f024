from __future__ import annotations

import re
import traceback

import pytest

from agent_accounts import REDACTED, RedactedError, _redact, redact_secrets

CANARY = "CANARYcanary0123456789abcdefXYZ"  # 31 chars: only the patterns themselves can catch it


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # vendor secret-key prefix
        (f"key sk-ant-oat01-{CANARY} end", f"sk-ant-oat01-{CANARY}"),
        (f"key SK-ANT-api03-{CANARY}", CANARY),
        ("sk-ant-x", "sk-ant-x"),
        # JWTs, two and three segments
        ("t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "eyJzdWIiOiIxIn0"),
        ("jwt eyJhbGc.eyJzdWI", "eyJzdWI"),
        # authorization schemes, quoted or not, any length
        ("Authorization: Bearer abc", "abc"),
        ('"Bearer a.b/c+d="', "a.b/c+d="),
        ("bearer x", " x"),
        ("Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ('basic "u p"', "u p"),
        # secret field names, any case, underscore optional, quoted or not
        ('{"access_token": "a1"}', "a1"),
        ("accessToken=a2&x=1", "a2"),
        ("REFRESH_TOKEN: 'r 1'", "r 1"),
        ("refreshtoken=r2", "r2"),
        ("id_token=i1", "i1"),
        ("idToken: i2", "i2"),
        ("token=t1", "t1"),
        ("client_secret=c1", "c1"),
        ("clientSecret: c2", "c2"),
        ("password=p1", "p1"),
        ('"Password" : "p 2"', "p 2"),
        ("authorization: z1", "z1"),
        ("api_key=k1", "k1"),
        ("apiKey=k2", "k2"),
        ("x-api-key: k3", "k3"),
        ("X_API_KEY=k4", "k4"),
        ("xapikey=k5", "k5"),
        # 32+ base64url characters in a row
        ("sha 0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
        ("id a-b_c" + "x" * 40, "x" * 40),
    ],
)
def test_each_pattern_redacts(text: str, secret: str) -> None:
    out = redact_secrets(text)
    assert secret not in out
    assert REDACTED in out


@pytest.mark.parametrize(
    "text",
    [
        "plain words stay",
        "a short id abc123",
        "0123456789abcdef0123456789abcde",  # 31 characters: under the run length
        # an opaque value split by +, / or . into runs under 32 is not caught (documented)
        "0123456789abcdef01234567+89abcdef0123456789abcdef/0123456789abcdef.0123456789",
        "task-force-one",  # `sk-` inside a word is not a key prefix
        "the token is fine",  # a field name with no `:` or `=` after it
        "basically",
        "eyJ alone",
    ],
)
def test_documented_non_matches_stay(text: str) -> None:
    assert redact_secrets(text) == text


def test_field_value_is_redacted_not_the_name() -> None:
    assert redact_secrets("token=abc other") == f"token={REDACTED} other"
    assert redact_secrets("Bearer abc other") == f"Bearer {REDACTED} other"


@pytest.mark.parametrize("value", [None, 1, b"token=abc", ["token=abc"], object()])
def test_non_text_becomes_redacted_marker(value: object) -> None:
    assert redact_secrets(value) == REDACTED


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


class NeedsTwoArgs(Exception):
    def __init__(self, a: str, b: int) -> None:
        super().__init__(a, b)


def _raise_chained() -> BaseException:
    secret_local = f"sk-ant-oat01-{CANARY}"  # a traceback frame holds this local
    try:
        try:
            raise KeyError(secret_local)
        except KeyError:
            raise ValueError(f"refresh failed token={secret_local}") from None
    except ValueError as exc:
        exc.add_note(f"note password={CANARY}")
        try:
            raise RuntimeError("outer") from exc
        except RuntimeError as outer:
            return outer.__cause__ or outer


class TestExceptions:
    def test_new_exception_is_unchained_and_clean(self) -> None:
        original = _raise_chained()
        assert original.__traceback__ is not None
        red = redact_secrets(original)
        assert red is not original
        assert isinstance(red, ValueError)
        assert red.__cause__ is None
        assert red.__context__ is None
        assert red.__traceback__ is None
        assert red.__suppress_context__ is True
        text = "".join(traceback.format_exception(red))
        assert CANARY not in text
        assert "refresh failed" in text
        assert REDACTED in str(red)
        # the original is untouched
        assert CANARY in str(original)

    def test_implicit_context_is_dropped(self) -> None:
        try:
            try:
                raise OSError(f"token={CANARY}")
            except OSError:
                raise ValueError("second") from None
        except ValueError as exc:
            exc.__context__ = OSError(f"token={CANARY}")
            red = redact_secrets(exc)
        assert CANARY not in "".join(traceback.format_exception(red))

    def test_unreadable_message(self) -> None:
        red = redact_secrets(Unprintable())
        assert str(red) == REDACTED

    def test_type_that_cannot_be_rebuilt(self) -> None:
        red = redact_secrets(NeedsTwoArgs(f"token={CANARY}", 1))
        assert isinstance(red, RedactedError)
        assert red.original_type == "NeedsTwoArgs"
        assert CANARY not in str(red)

    def test_notes_are_redacted(self) -> None:
        exc = ValueError("x")
        exc.add_note(f"Bearer {CANARY}")
        red = redact_secrets(exc)
        assert red.__notes__ == [f"Bearer {REDACTED}"]


class TestLinearByConstruction:
    """Timing belongs to benchmarks/bench_redact.py; here the regexes' shape is checked."""

    PATTERNS = [
        _redact._SK_KEY,
        _redact._JWT,
        _redact._AUTH_SCHEME,
        _redact._FIELD,
        _redact._LONG_RUN,
    ]

    def test_no_nested_quantifier(self) -> None:
        for pattern in self.PATTERNS:
            # a quantified group that itself contains a quantifier is the backtracking hazard
            assert not re.search(r"\((?:[^()]*[*+}])[^()]*\)[*+{]", pattern.pattern), (
                pattern.pattern
            )

    def test_run_patterns_start_only_at_a_run_boundary(self) -> None:
        for pattern in (_redact._SK_KEY, _redact._JWT, _redact._LONG_RUN):
            assert pattern.pattern.startswith("(?<![A-Za-z0-9_-])")

    def test_unbounded_repeats_are_possessive(self) -> None:
        for pattern in self.PATTERNS:
            body = re.sub(r"\\.", "", pattern.pattern)  # drop escapes
            body = re.sub(r"\[[^\]]*\]", "C", body)  # a character class is one atom
            body = re.sub(r"\(\?<?[!=:]", "(", body)  # group openers are not quantifiers
            unbounded = re.sub(r"(?:[*+?]|\{\d+,\})\+", "", body)  # possessive forms are fine
            assert "*" not in unbounded, pattern.pattern
            assert "+" not in unbounded, pattern.pattern
            assert not re.search(r"\{\d+,\}", unbounded), pattern.pattern

    @pytest.mark.parametrize(
        "unit", ["a", "Bearer ", "token=", "eyJ", "eyJa.", "sk-ant-", 'token="', "a-"]
    )
    def test_hostile_inputs_complete_and_stay_bounded(self, unit: str) -> None:
        text = unit * (200_000 // len(unit))
        out = redact_secrets(text)
        assert isinstance(out, str)
        assert len(out) <= len(text) + len(REDACTED) * (len(text) // 2 + 1)
