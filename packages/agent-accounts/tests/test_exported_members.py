from __future__ import annotations

import agent_accounts

EXPECTED = {
    "KNOWN_WINDOWS",
    "REDACTED",
    "AccountsError",
    "LoginExpired",
    "LoginMissing",
    "LoginPresent",
    "LoginRefused",
    "LoginState",
    "RateWindow",
    "RedactedError",
    "RefusalReason",
    "UsageReading",
    "account_label",
    "login_state_from_credentials",
    "needs_refresh",
    "parse_usage_reading",
    "redact_secrets",
    "usage_from_oauth_response",
}


def test_all_is_exactly_the_public_surface() -> None:
    assert set(agent_accounts.__all__) == EXPECTED
    assert len(agent_accounts.__all__) == len(EXPECTED)
    for name in agent_accounts.__all__:
        assert hasattr(agent_accounts, name), name


def test_no_other_public_names_leak_from_the_front_door() -> None:
    public = {n for n in vars(agent_accounts) if not n.startswith("_")}
    assert public - EXPECTED <= {"annotations", "io", "cli"}
