"""The I/O layer of the account library: profile discovery, the file gate, usage files and polling.

Every file this layer reads that others could have planted goes through one gate (no symlinks, the
caller's own regular file, owner-only, one link, bounded size). Tokens never leave it.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing typing costs the status line milliseconds it does not
# need; type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._discovery import CONFIG_DIRS_ENV, PROFILE_ROOT_ENV
    from ._files import UsageFile, read_login_state, read_usage, write_reading
    from ._history import read_usage_history
    from ._poll import (
        EXPIRY_MARGIN_MS,
        PollEntry,
        PollFailed,
        PollOk,
        PollResult,
        poll_all,
        poll_usage,
    )
    from ._profiles import Profile, discover_profiles
    from ._refresh import (
        DEFAULT_AUTH_URL,
        DEFAULT_REFRESH_SCOPES,
        MAX_REFRESH_TIMEOUT_MS,
        OAUTH_CLIENT_ID,
        RefreshFailed,
        RefreshFailureDeposit,
        RefreshFresh,
        RefreshLocked,
        RefreshRefreshed,
        RefreshRefreshedElsewhere,
        RefreshResult,
        RefreshSkipped,
        refresh_if_needed,
    )
    from ._sessions import write_session_reading
    from ._urls import DEFAULT_API_BASE

# Every name loads on first use (PEP 562): `account-cli status --statusline` runs on every prompt
# and must pay only for the modules it touches (no asyncio, no URL parsing, no refresh machinery).
_LAZY = {
    **dict.fromkeys(("UsageFile", "read_login_state", "read_usage", "write_reading"), "._files"),
    **dict.fromkeys(("CONFIG_DIRS_ENV", "PROFILE_ROOT_ENV"), "._discovery"),
    **dict.fromkeys(("Profile", "discover_profiles"), "._profiles"),
    "DEFAULT_API_BASE": "._urls",
    "write_session_reading": "._sessions",
    "read_usage_history": "._history",
    **dict.fromkeys(
        (
            "EXPIRY_MARGIN_MS",
            "PollEntry",
            "PollFailed",
            "PollOk",
            "PollResult",
            "poll_all",
            "poll_usage",
        ),
        "._poll",
    ),
    **dict.fromkeys(
        (
            "DEFAULT_AUTH_URL",
            "DEFAULT_REFRESH_SCOPES",
            "MAX_REFRESH_TIMEOUT_MS",
            "OAUTH_CLIENT_ID",
            "RefreshFailed",
            "RefreshFailureDeposit",
            "RefreshFresh",
            "RefreshLocked",
            "RefreshRefreshed",
            "RefreshRefreshedElsewhere",
            "RefreshResult",
            "RefreshSkipped",
            "refresh_if_needed",
        ),
        "._refresh",
    ),
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "CONFIG_DIRS_ENV",
    "DEFAULT_API_BASE",
    "DEFAULT_AUTH_URL",
    "DEFAULT_REFRESH_SCOPES",
    "EXPIRY_MARGIN_MS",
    "MAX_REFRESH_TIMEOUT_MS",
    "OAUTH_CLIENT_ID",
    "PROFILE_ROOT_ENV",
    "PollEntry",
    "PollFailed",
    "PollOk",
    "PollResult",
    "Profile",
    "RefreshFailed",
    "RefreshFailureDeposit",
    "RefreshFresh",
    "RefreshLocked",
    "RefreshRefreshed",
    "RefreshRefreshedElsewhere",
    "RefreshResult",
    "RefreshSkipped",
    "UsageFile",
    "discover_profiles",
    "poll_all",
    "poll_usage",
    "read_login_state",
    "read_usage",
    "read_usage_history",
    "refresh_if_needed",
    "write_reading",
    "write_session_reading",
]
