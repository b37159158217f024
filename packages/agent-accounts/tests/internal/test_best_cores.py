"""`account-cli best`'s dataclass-free cores agree with the public functions they stand in for.

`best` runs before an agent starts (`AGENT_CONFIG_DIR=$(account-cli best --path) agent`), over
every profile, so it ranks with `login_facts` and `rank_rows` and prints a plain path without
`re`; these tests hold each to the full path: `read_login_state` + `choose_best`, and
`redact_secrets`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounts_support import CANARY, credentials, make_profile
from agent_accounts import (
    BestCandidate,
    BestChoice,
    NoBest,
    choose_best,
    login_state_from_credentials,
    redact_secrets,
)
from agent_accounts._best import rank_rows
from agent_accounts._login_rules import login_facts
from agent_accounts.cli._output import plain_path
from agent_accounts.io import read_login_state
from agent_accounts.io._credentials import read_login_facts

BOUNDED = settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=os.environ.get("CI") == "true",
)

# --- the ranking and the login facts ----------------------------------------------------------

NOW = 1_767_225_600.0
windows_st = st.fixed_dictionaries(
    {},
    optional={
        "five_hour": st.fixed_dictionaries(
            {"used_percentage": st.floats(0, 100)},
            optional={"resets_at": st.floats(NOW - 3600, NOW + 18000)},
        ),
        "seven_day": st.fixed_dictionaries(
            {"used_percentage": st.sampled_from([0, 10, 50, 99.5, 100])},
            optional={"resets_at": st.sampled_from([NOW - 10, NOW + 3600, NOW + 86400])},
        ),
    },
)
candidate_st = st.builds(
    lambda label, expires, refresh, block, reading, age: (
        label,
        None
        if block == "unreadable"
        else credentials(
            expires_at_ms=int(NOW * 1000 + expires),
            extra_block={} if refresh else {"refreshTokenExpiresAt": int(NOW * 1000) - 1},
        )
        if block == "ok"
        else {"agentOauth": None}
        if block == "missing"
        else {"agentOauth": {"accessToken": 1}},
        None if reading is None else {"written_at": NOW - age, "rate_limits": reading},
    ),
    st.sampled_from(["a", "b", "c", "d"]),
    st.sampled_from([-1000, 1000, 86_400_000]),
    st.booleans(),
    st.sampled_from(["ok", "ok", "ok", "missing", "malformed", "unreadable"]),
    st.none() | windows_st,
    st.sampled_from([0, 30, 599, 601, 7200]),
)


@BOUNDED
@given(
    st.lists(candidate_st, max_size=6),
    st.sampled_from([("five_hour", "seven_day"), ("five_hour",), ("seven_day",)]),
    st.sampled_from([100.0, 99.5, 90.0, 10.0]),
)
def test_rank_rows_picks_what_choose_best_picks(
    rows: list[tuple[str, Any, Any]], windows: tuple[str, ...], full_at: float
) -> None:
    now_ms = NOW * 1000
    candidates = []
    plain = []
    for label, creds, reading in rows:
        login = None if creds is None else login_state_from_credentials(creds, now_ms)
        facts = None if creds is None else login_facts(creds, now_ms)
        candidates.append(
            BestCandidate(label=label, config_dir=f"/p/{label}", login=login, reading=reading)
        )
        plain.append(
            (
                label,
                None if facts is None else facts.status,
                facts is not None and facts.can_refresh,
                reading,
            )
        )
    full = choose_best(candidates, NOW, windows=windows, full_at=full_at)
    ranked = rank_rows(plain, NOW, windows, 600, full_at)
    if isinstance(full, NoBest):
        assert isinstance(ranked, list)
        assert [(label, reason) for label, reason, _ in ranked] == list(full.rejected)
        free = [at for _, _, at in ranked if at is not None and at != math.inf]
        assert full.free_at == min(free, default=None)
    else:
        assert isinstance(full, BestChoice)
        assert not isinstance(ranked, list)
        index, headroom, _ = ranked
        assert (candidates[index].label, headroom) == (full.label, full.headroom_percentage)


@pytest.mark.parametrize(
    "data",
    [
        None,
        b"{",
        b"[]",
        b'{"agentOauth": null}',
        "\ufeff".encode() + json.dumps(credentials(expires_at_ms=2_000_000_000_000)).encode(),
        json.dumps(credentials(expires_at_ms=2_000_000_000_000)).encode("utf-16"),
        json.dumps(credentials(expires_at_ms=1_000_000_000_000)).encode("utf-32-le"),
    ],
)
def test_login_facts_from_a_file_match_read_login_state(tmp_path: Path, data: bytes | None) -> None:
    profile, _ = make_profile(tmp_path, "p", data, seed=data is not None)
    state = read_login_state(profile.config_dir, now=NOW)
    facts = read_login_facts(profile.config_dir, now_ms=NOW * 1000)
    assert facts.status == state.status
    assert facts.can_refresh == getattr(state, "can_refresh", False)
    assert CANARY not in repr([getattr(facts, name) for name in facts.__slots__])


# --- printing a config dir ------------------------------------------------------------------


path_st = st.lists(
    st.sampled_from(
        [
            "home",
            "me",
            ".agent-profiles",
            "work",
            "sk-",
            "sk",
            "-ant-",
            "oat01",
            "a" * 24,
            "b" * 25,
            "Upper",
            "token=",
            "x",
            "0123456789",
            ".",
            "-",
            "_",
        ]
    ),
    max_size=12,
).map(lambda parts: "/" + "/".join(parts))


@BOUNDED
@given(path_st)
def test_a_config_dir_is_printed_as_redaction_would_print_it(path: str) -> None:
    assert plain_path(path) == redact_secrets(path)


def test_a_path_that_looks_like_a_key_is_still_redacted() -> None:
    path = "/home/me/.agent-profiles/sk-ant-oat01-" + "A" * 40
    assert plain_path(path) == redact_secrets(path) != path
