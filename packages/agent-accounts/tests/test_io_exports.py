"""agent_accounts.io: `__all__` is exactly the public surface, and every lazy name resolves."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

import agent_accounts.io as io_layer

# The names API.md fixes for the I/O layer.
API_NAMES = {
    "Profile",
    "discover_profiles",
    "read_login_state",
    "read_usage",
    "write_reading",
    "poll_usage",
    "poll_all",
    "refresh_if_needed",
    "PROFILE_ROOT_ENV",
    "CONFIG_DIRS_ENV",
    "EXPIRY_MARGIN_MS",
    "MAX_REFRESH_TIMEOUT_MS",
    "OAUTH_CLIENT_ID",
    "DEFAULT_REFRESH_SCOPES",
    "RefreshFailureDeposit",
}

# Plus the result types and default endpoints a caller needs to type and configure them.
EXPECTED = API_NAMES | {
    "DEFAULT_API_BASE",
    "DEFAULT_AUTH_URL",
    "PollEntry",
    "PollFailed",
    "PollOk",
    "PollResult",
    "RefreshFailed",
    "RefreshFresh",
    "RefreshLocked",
    "RefreshRefreshed",
    "RefreshRefreshedElsewhere",
    "RefreshResult",
    "RefreshSkipped",
    "UsageFile",
    # issue 17: the status-line tee's writer, for other tools that receive status-line payloads
    "write_session_reading",
    # issue 28: each profile's usage history
    "read_usage_history",
}


def test_all_is_exactly_the_public_surface_and_sorted() -> None:
    assert set(io_layer.__all__) == EXPECTED
    assert len(io_layer.__all__) == len(EXPECTED)
    assert list(io_layer.__all__) == sorted(io_layer.__all__)
    assert sorted(dir(io_layer)) == sorted(EXPECTED)


def test_every_name_resolves_including_the_lazy_ones() -> None:
    for name in io_layer.__all__:
        value = getattr(io_layer, name)
        assert value is not None, name
        assert getattr(io_layer, name) is value  # cached after the first lookup


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(io_layer, "no_such_name")  # noqa: B009


def test_no_other_public_names_leak() -> None:
    public = {n for n in vars(io_layer) if not n.startswith("_")}
    assert public - EXPECTED <= {"annotations", "TYPE_CHECKING", "Any"}


def test_constants_have_the_spec_values() -> None:
    assert io_layer.PROFILE_ROOT_ENV == "AGENT_PROFILE_ROOT"
    assert io_layer.CONFIG_DIRS_ENV == "AGENT_CONFIG_DIRS"
    assert io_layer.EXPIRY_MARGIN_MS == 60_000
    assert io_layer.MAX_REFRESH_TIMEOUT_MS == 30_000
    assert io_layer.DEFAULT_API_BASE.startswith("https://")
    assert io_layer.DEFAULT_AUTH_URL.startswith("https://")


def test_public_records_are_frozen_slotted_keyword_only() -> None:
    for cls in (io_layer.Profile, io_layer.UsageFile, io_layer.PollOk, io_layer.PollFailed):
        params = getattr(cls, "__dataclass_params__")  # noqa: B009
        assert params.frozen, cls
        assert "__slots__" in vars(cls), cls
        assert all(f.kw_only for f in dataclasses.fields(cls)), cls
    assert io_layer.PollEntry.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_importing_the_io_layer_loads_neither_polling_nor_httpx() -> None:
    # The status line imports the file functions; polling and refresh must stay unloaded.
    code = (
        "import sys, json, agent_accounts.io as io\n"
        "io.read_usage, io.read_login_state, io.discover_profiles\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'httpx', 'httpcore', 'asyncio', 'typer', 'click'} "
        "or m in {'agent_accounts.io._poll', 'agent_accounts.io._refresh'})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == []
