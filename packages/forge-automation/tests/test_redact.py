"""redact_forge_secrets and redact_split: every shape, known values, split tokens, linear time."""

from __future__ import annotations

import pytest

from forge_automation import redact_forge_secrets, redact_split

# The spec: token, JWT and PEM values are replaced with `[redacted]`.
REDACTED = "[redacted]"

TOKENS = [
    "ghs_" + "A1b2C3d4" * 5,
    "ghu_" + "x" * 36,
    "gho_" + "Y9" * 18,
    "ghp_" + "0" * 36,
    "ghr_" + "abc_DEF_123_" * 3,
    "github_pat_11ABCDEFG0" + "z" * 60,
]
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJlLXBhcnQ"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAKC\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize("secret", [*TOKENS, JWT, PEM, PEM.replace("RSA ", "")])
def test_each_shape_is_cut(secret: str) -> None:
    text = f"before {secret} after"
    assert redact_forge_secrets(text) == f"before {REDACTED} after"


def test_shapes_inside_json_and_headers() -> None:
    text = f'{{"token":"{TOKENS[0]}"}} Authorization: Bearer {JWT}\nGH_TOKEN={TOKENS[3]}'
    out = redact_forge_secrets(text)
    assert all(t not in out for t in (TOKENS[0], TOKENS[3], JWT))
    assert out == (
        f'{{"token":"{REDACTED}"}} Authorization: Bearer {REDACTED}\nGH_TOKEN={REDACTED}'
    )


def test_an_unterminated_pem_is_cut_to_the_end() -> None:
    assert redact_forge_secrets("key: -----BEGIN PRIVATE KEY-----\nMIIE...") == f"key: {REDACTED}"


def test_escaped_pem_in_json_is_cut() -> None:
    escaped = PEM.replace("\n", "\\n")
    assert redact_forge_secrets(f'{{"pem": "{escaped}"}}') == f'{{"pem": "{REDACTED}"}}'


def test_ordinary_text_is_left_alone() -> None:
    text = "ghs_ is a prefix; eyJ alone; com.example.AppTest; a.b.c; -----BEGIN nothing"
    assert redact_forge_secrets(text) == text


def test_extra_values_whole_and_as_fragments() -> None:
    secret = "s3cr3t-value-0123456789"
    assert redact_forge_secrets(f"x {secret} y", extra=[secret]) == f"x {REDACTED} y"
    # Half of a known secret is still cut.
    assert secret[:12] not in redact_forge_secrets(f"x {secret[:12]} y", extra=[secret])
    assert secret[-12:] not in redact_forge_secrets(f"x {secret[-12:]}", extra=[secret])
    # Empty extras are ignored, short ones are cut whole.
    assert redact_forge_secrets("abc", extra=["", "b"]) == f"a{REDACTED}c"


def test_overlapping_spans_merge_into_one_marker() -> None:
    token = TOKENS[0]
    assert redact_forge_secrets(f"{token}{token}", extra=[token]) == REDACTED
    # The token's shape and an extra that is its prefix overlap: one marker, nothing left over.
    assert redact_forge_secrets("..." + token, extra=[token[:20]]) == "..." + REDACTED


@pytest.mark.parametrize("token", [*TOKENS, JWT])
@pytest.mark.parametrize("cut", [1, 4, 10, 20])
def test_a_shape_split_across_stdout_and_stderr_is_cut_from_both(token: str, cut: int) -> None:
    out, err = redact_split(f"partial {token[:cut]}", f"{token[cut:]} trailing")
    assert out == f"partial {REDACTED}"
    assert err == f"{REDACTED} trailing"
    # The streams may have been flushed in the other order.
    err2, out2 = redact_split(f"{token[cut:]} trailing", f"partial {token[:cut]}")
    assert (out2, err2) == (out, err)


def test_a_known_secret_split_anywhere_is_cut() -> None:
    secret = "opaque-Secret-Value-0123456789abcdef"
    out, err = redact_split(
        f"first {secret[:15]}\nmore", f"error: {secret[15:]} end", extra=[secret]
    )
    assert secret[:15] not in out
    assert secret[15:] not in err
    assert out.startswith("first ")
    assert out.endswith("\nmore")
    assert err.startswith("error: ")
    assert err.endswith(" end")


def test_split_with_nothing_secret_is_unchanged() -> None:
    assert redact_split("hello", "world") == ("hello", "world")


@pytest.mark.parametrize(
    "hostile",
    [
        "eyJ" * 200_000,
        "eyJa." * 200_000,
        "ghs_" * 200_000,
        "-----BEGIN " * 100_000,
        "-----BEGIN A-----" * 50_000,
        "x" * 1_000_000,
    ],
)
def test_hostile_input_is_handled_in_linear_time(hostile: str) -> None:
    # Not a timing assertion: a quadratic scan of these inputs would not finish within the
    # pytest session's patience; the output shape is what is checked.
    out = redact_forge_secrets(hostile, extra=["0123456789abcdef"])
    assert len(out) <= len(hostile) + len(REDACTED)


@pytest.mark.parametrize("before", ["_", "-", "x", "Z", "7", "\\n", "\\\\n", "token=", "Bearer%20"])
def test_a_jwt_is_cut_whatever_precedes_it(before: str) -> None:
    out = redact_forge_secrets(f"{before}{JWT} tail")
    assert JWT not in out
    assert "eyJpc3MiOiIxMjMifQ" not in out
    assert out == f"{before}{REDACTED} tail"


def test_a_jwt_inside_json_with_an_escaped_newline_is_cut() -> None:
    text = '{"message": "bad key:\\neyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2ln"}'
    assert "eyJpc3MiOiIxMjMifQ" not in redact_forge_secrets(text)


@pytest.mark.parametrize("before", ["_", "-", "x", "\\n"])
@pytest.mark.parametrize("cut", [2, 12, 30])
def test_a_jwt_after_a_word_character_split_across_streams(before: str, cut: int) -> None:
    token = before + JWT
    out, err = redact_split(f"a {token[:cut]}", f"{token[cut:]} b")
    assert "eyJpc3MiOiIxMjMifQ" not in out + err
    err2, out2 = redact_split(f"{token[cut:]} b", f"a {token[:cut]}")
    assert "eyJpc3MiOiIxMjMifQ" not in out2 + err2
    assert (out2, err2) == (out, err)
