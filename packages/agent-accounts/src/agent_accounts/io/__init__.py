"""The I/O layer of the account library: profile discovery, the file gate, usage files and polling.

Every file this layer reads that others could have planted goes through one gate (no symlinks, the
caller's own regular file, owner-only, one link, bounded size). Tokens never leave it.
"""

from __future__ import annotations

from agent_accounts import _lazy_getattr

# As in `agent_accounts`: no `typing` import, `X as X` re-exports, one table, `__all__` from it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._discovery import CONFIG_DIRS_ENV as CONFIG_DIRS_ENV
    from ._discovery import PROFILE_ROOT_ENV as PROFILE_ROOT_ENV
    from ._files import UsageFile as UsageFile
    from ._files import read_login_state as read_login_state
    from ._files import read_usage as read_usage
    from ._files import write_reading as write_reading
    from ._history import read_usage_history as read_usage_history
    from ._poll import EXPIRY_MARGIN_MS as EXPIRY_MARGIN_MS
    from ._poll import PollEntry as PollEntry
    from ._poll import PollFailed as PollFailed
    from ._poll import PollOk as PollOk
    from ._poll import PollResult as PollResult
    from ._poll import poll_all as poll_all
    from ._poll import poll_usage as poll_usage
    from ._profiles import Profile as Profile
    from ._profiles import discover_profiles as discover_profiles
    from ._refresh import DEFAULT_AUTH_URL as DEFAULT_AUTH_URL
    from ._refresh import DEFAULT_REFRESH_SCOPES as DEFAULT_REFRESH_SCOPES
    from ._refresh import MAX_REFRESH_TIMEOUT_MS as MAX_REFRESH_TIMEOUT_MS
    from ._refresh import OAUTH_CLIENT_ID as OAUTH_CLIENT_ID
    from ._refresh import refresh_if_needed as refresh_if_needed
    from ._refresh_results import RefreshFailed as RefreshFailed
    from ._refresh_results import RefreshFailureDeposit as RefreshFailureDeposit
    from ._refresh_results import RefreshFresh as RefreshFresh
    from ._refresh_results import RefreshLocked as RefreshLocked
    from ._refresh_results import RefreshRefreshed as RefreshRefreshed
    from ._refresh_results import RefreshRefreshedElsewhere as RefreshRefreshedElsewhere
    from ._refresh_results import RefreshResult as RefreshResult
    from ._refresh_results import RefreshSkipped as RefreshSkipped
    from ._sessions import write_session_reading as write_session_reading
    from ._urls import DEFAULT_API_BASE as DEFAULT_API_BASE

# Every name loads on first use: `account-cli status --statusline` runs on every prompt and must
# pay only for the modules it touches (no asyncio, no URL parsing, no refresh machinery).
_PUBLIC: dict[str, str] = {
    "CONFIG_DIRS_ENV": "._discovery",
    "DEFAULT_API_BASE": "._urls",
    "DEFAULT_AUTH_URL": "._refresh",
    "DEFAULT_REFRESH_SCOPES": "._refresh",
    "EXPIRY_MARGIN_MS": "._poll",
    "MAX_REFRESH_TIMEOUT_MS": "._refresh",
    "OAUTH_CLIENT_ID": "._refresh",
    "PROFILE_ROOT_ENV": "._discovery",
    "PollEntry": "._poll",
    "PollFailed": "._poll",
    "PollOk": "._poll",
    "PollResult": "._poll",
    "Profile": "._profiles",
    "RefreshFailed": "._refresh_results",
    "RefreshFailureDeposit": "._refresh_results",
    "RefreshFresh": "._refresh_results",
    "RefreshLocked": "._refresh_results",
    "RefreshRefreshed": "._refresh_results",
    "RefreshRefreshedElsewhere": "._refresh_results",
    "RefreshResult": "._refresh_results",
    "RefreshSkipped": "._refresh_results",
    "UsageFile": "._files",
    "discover_profiles": "._profiles",
    "poll_all": "._poll",
    "poll_usage": "._poll",
    "read_login_state": "._files",
    "read_usage": "._files",
    "read_usage_history": "._history",
    "refresh_if_needed": "._refresh",
    "write_reading": "._files",
    "write_session_reading": "._sessions",
}
"""The front door's one table: each public name (in `__all__`'s order) and the module that
defines it."""


__getattr__ = _lazy_getattr(__name__, _PUBLIC, globals())


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = list(_PUBLIC)
