"""The status line and `best` print a plain short label without `re`: only one redaction leaves alone."""

from __future__ import annotations

import pytest

# --- labels: the status line skips `re` only for labels redaction never changes -----------------


def _plain_labels() -> list[str]:
    import itertools
    import random

    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789._"
    short = ["".join(p) for n in (1, 2) for p in itertools.product(alphabet, repeat=n)]
    rng = random.Random(14)
    sampled = ["".join(rng.choices(alphabet, k=rng.randint(3, 24))) for _ in range(4000)]
    shaped = [
        "sk.ant.api03",
        "skant",
        "eyj.eyj.eyj",
        "token",
        "password",
        "bearer",
        "basic",
        "authorization",
        "a" * 24,
        "0123456789abcdef01234567",
        "refresh_token",
        "x_api_key",
        "dpop",
        "digest",
    ]
    return short + sampled + shaped


def test_a_label_the_status_line_shows_without_re_is_one_redaction_leaves_alone() -> None:
    from agent_accounts import redact_secrets
    from agent_accounts.cli._output import plain_label

    for label in _plain_labels():
        assert redact_secrets(label) == label, label
        assert plain_label(label) == label


@pytest.mark.parametrize(
    "label",
    ["sk-ant-api03-" + "x" * 40, "a" * 40, "token=abc", "Bearer abcdef", "has space"],
)
def test_any_other_label_still_goes_through_redaction(label: str) -> None:
    from agent_accounts import redact_secrets
    from agent_accounts.cli._output import plain_label

    assert plain_label(label) == redact_secrets(label)
