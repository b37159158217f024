"""`account-cli best` without argparse, dataclasses or `re`: the fast path agrees with the full one.

`best` runs before an agent starts (`AGENT_CONFIG_DIR=$(account-cli best --path) agent`), over
every profile. A well-formed line is parsed by hand (`_best_args`) and ranked by the
dataclass-free cores (`login_facts`, `rank_rows`); these tests hold each of those to the full
path it stands in for: argparse, `read_login_state` + `choose_best`, and `redact_secrets`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounts_support import CANARY, credentials, env_without_profiles, make_profile
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
from agent_accounts.cli import UsageError, _best_args, _parse, _plain_path
from agent_accounts.io import read_login_state
from agent_accounts.io._credentials import read_login_facts

BOUNDED = settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=os.environ.get("CI") == "true",
)

# --- the command line ---------------------------------------------------------------------------

WORDS = [
    "best",
    "--json",
    "--path",
    "--window",
    "--window=five_hour",
    "--window=",
    "--window=Five",
    "five_hour",
    "seven_day",
    "seven_day_opus",
    "Five-Hour",
    "-h",
    "--",
    "--jso",
    "x",
]


@BOUNDED
@given(st.lists(st.sampled_from(WORDS), max_size=6))
def test_every_line_the_fast_parser_takes_argparse_reads_the_same(tail: list[str]) -> None:
    args = ["best", *tail]
    fast = _best_args(args)
    if fast is None:
        return  # argparse decides (help, errors): the full path runs
    ns = _parse(args)
    assert (ns.window, ns.json, ns.path) == fast


@pytest.mark.parametrize(
    ("args", "parsed"),
    [
        (["best"], (("five_hour", "seven_day"), False, False)),
        (["best", "--path"], (("five_hour", "seven_day"), False, True)),
        (["best", "--json", "--window", "seven_day"], (("seven_day",), True, False)),
        (["best", "--window=five_hour", "--window", "five_hour"], (("five_hour",), False, False)),
    ],
)
def test_the_common_lines_take_the_fast_path(
    args: list[str], parsed: tuple[tuple[str, ...], bool, bool]
) -> None:
    assert _best_args(args) == parsed
    ns = _parse(args)
    assert (ns.window, ns.json, ns.path) == parsed


@pytest.mark.parametrize(
    "args",
    [
        ["best", "-h"],
        ["best", "--json", "--json"],
        ["best", "--json", "--path"],
        ["best", "--window"],
        ["best", "--window", "--json"],
        ["best", "--window="],
        ["best", "--path=x"],
        ["best", "extra"],
        ["status"],
        [],
    ],
)
def test_anything_else_goes_to_argparse(args: list[str]) -> None:
    assert _best_args(args) is None
    if args not in (["best", "-h"], ["status"]):
        with pytest.raises((UsageError, SystemExit)):
            _parse(args)


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
)
def test_rank_rows_picks_what_choose_best_picks(
    rows: list[tuple[str, Any, Any]], windows: tuple[str, ...]
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
    full = choose_best(candidates, NOW, windows=windows)
    ranked = rank_rows(plain, NOW, windows, 600)
    if isinstance(full, NoBest):
        assert ranked == list(full.rejected)
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
    assert _plain_path(path) == redact_secrets(path)


def test_a_path_that_looks_like_a_key_is_still_redacted() -> None:
    path = "/home/me/.agent-profiles/sk-ant-oat01-" + "A" * 40
    assert _plain_path(path) == redact_secrets(path) != path


# --- what the command loads ---------------------------------------------------------------------

PROBE = textwrap.dedent(
    """
    import sys
    sys.argv = ["account-cli", *sys.argv[1:]]
    from agent_accounts.cli import main
    try:
        main()
    except SystemExit as done:
        code = done.code
    loaded = sorted(sys.modules)
    import json
    sys.stderr.write(json.dumps({"code": code, "modules": loaded}))
    """
)
HEAVY = {"argparse", "typing", "dataclasses", "inspect", "re", "json", "enum", "collections"}


def test_best_loads_neither_argparse_nor_dataclasses_nor_re() -> None:
    # A short home of plain segments (pytest's tmp_path has a long one): printed without `re`.
    with tempfile.TemporaryDirectory(prefix="best", dir="/tmp") as tmp:
        _probe_best(Path(tmp))


def _probe_best(tmp_path: Path) -> None:
    now = time.time()
    for name, used in (("a", 50.0), ("b", 10.0)):
        profile, _ = make_profile(tmp_path / ".agent-profiles", name, now=now)
        sessions = Path(profile.config_dir) / "status-cache" / "sessions"
        sessions.mkdir(parents=True, mode=0o700)
        doc = {
            "session_id": "usage-poll",
            "written_at": now - 5,
            "rate_limits": {
                "five_hour": {"used_percentage": used, "resets_at": now + 3600},
                "seven_day": {"used_percentage": used, "resets_at": now + 86400},
            },
        }
        (sessions / "usage-poll.json").write_text(json.dumps(doc))
    env = env_without_profiles(tmp_path)
    env = {k: v for k, v in env.items() if not k.startswith(("COV", "PYTHON"))}
    for args, out in ((["best"], "b\n"), (["best", "--path"], f"{tmp_path}/.agent-profiles/b\n")):
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        result = json.loads(done.stderr)
        assert (result["code"], done.stdout) == (0, out)
        assert set(result["modules"]) & HEAVY == set()


def test_the_probe_sees_a_heavy_import(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "best", "--window", "nope!"],
        env=env_without_profiles(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0  # the probe's own exit; the CLI's code is in the JSON
    assert '"argparse"' in done.stderr  # a usage error goes through argparse
