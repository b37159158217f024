"""`write_session_reading` skips the redactor only for a reading redaction leaves alone."""

from __future__ import annotations

import json
import random
from typing import Any

from agent_accounts import redact_secrets
from agent_accounts.io._sessions import plainly_token_free


def _plain_values(rng: random.Random) -> list[str]:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789._"
    shaped = [
        "token",
        "password",
        "bearer",
        "basic",
        "authorization",
        "refresh_token",
        "x_api_key",
        "a" * 24,
        "0123456789abcdef01234567",
        "statusline.3f2a9c1e",
        "sk.ant.api03",
    ]
    return shaped + ["".join(rng.choices(alphabet, k=rng.randint(1, 24))) for _ in range(1500)]


def _numbers(rng: random.Random) -> list[float]:
    fixed: list[float] = [
        0,
        100,
        99.99999999999999,
        1e-300,
        5e-324,
        999_999_999_999,
        1e11 + 0.1,
        1_800_000_000.123456,
        33.333333333333336,
        -999_999_999_999.9,
    ]
    return (
        fixed
        + [rng.uniform(0, 100) for _ in range(300)]
        + [rng.uniform(0, 1e12) for _ in range(300)]
    )


def test_a_reading_plainly_token_free_is_one_redaction_leaves_alone() -> None:
    """The tee skips the redactor only for readings whose JSON it would leave unchanged."""
    rng = random.Random(17)
    texts = _plain_values(rng)
    numbers = _numbers(rng)
    checked = 0
    for text in texts:
        used = rng.choice(numbers[:310]) if rng.random() < 0.5 else rng.uniform(0, 100)
        used = min(max(used, 0), 100)
        doc: dict[str, Any] = {
            "session_id": text,
            "written_at": rng.choice(numbers),
            "rate_limits": {
                "five_hour": {"used_percentage": used, "resets_at": rng.choice(numbers)},
                "seven_day": {"used_percentage": used},
            },
            "source": "statusline",
            "account": rng.choice(texts),
        }
        assert plainly_token_free(doc), doc  # type: ignore[arg-type]
        text_json = json.dumps(doc, separators=(",", ":"), allow_nan=False)
        assert redact_secrets(text_json) == text_json, text_json
        checked += 1
    assert checked == len(texts)


def test_other_windows_long_numbers_and_odd_text_are_not_plainly_token_free() -> None:
    base: dict[str, Any] = {
        "session_id": "s1",
        "written_at": 1_800_000_000.25,
        "rate_limits": {"five_hour": {"used_percentage": 12.5, "resets_at": 1_800_003_600}},
        "source": "statusline",
    }
    assert plainly_token_free(base)  # type: ignore[arg-type]
    for odd in (
        {**base, "session_id": "Has Space"},
        {**base, "written_at": 10**13},
        {**base, "rate_limits": {"new_window": {"used_percentage": 1}}},
        {**base, "account": "sk-ant"},
    ):
        assert not plainly_token_free(odd)  # type: ignore[arg-type]
