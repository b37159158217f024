"""Pure core of the account library: usage readings, login state, labels and redaction.

Importing this package and calling its functions opens no file, socket or process and reads no
environment; `agent_accounts.io` holds every file and network access.

Names load on first use (PEP 562): `account-cli status --statusline` runs on every prompt and
imports only the modules it touches (neither `typing` nor `dataclasses`). Loading a name is an
import; the functions themselves never import, open or read anything. Type checkers see the
explicit imports below.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing typing costs the status line milliseconds it does not
# need; type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._alerts import Alert, AlertMark, alert_crossings, parse_alert_thresholds
    from ._errors import AccountsError, RedactedError
    from ._labels import account_label
    from ._login import (
        LoginExpired,
        LoginMissing,
        LoginPresent,
        LoginRefused,
        LoginState,
        RefusalReason,
        login_state_from_credentials,
        needs_refresh,
    )
    from ._oauth import usage_from_oauth_response
    from ._pace import (
        DEFAULT_BEST_WINDOWS,
        FRESH_READING_S,
        WINDOW_SECONDS,
        BestCandidate,
        BestChoice,
        NoBest,
        RejectReason,
        WindowForecast,
        WindowPace,
        choose_best,
        reading_pace,
        window_forecast,
        window_pace,
    )
    from ._redact import REDACTED, redact_secrets
    from ._schedule import MIN_POLL_GAP_S, poll_phases, poll_times
    from ._types import RateWindow, UsageReading
    from ._usage import KNOWN_WINDOWS, parse_usage_reading

# Which private module defines each public name; keep in step with the imports above.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "_alerts": ("Alert", "AlertMark", "alert_crossings", "parse_alert_thresholds"),
    "_errors": ("AccountsError", "RedactedError"),
    "_labels": ("account_label",),
    "_login": (
        "LoginExpired",
        "LoginMissing",
        "LoginPresent",
        "LoginRefused",
        "LoginState",
        "RefusalReason",
        "login_state_from_credentials",
        "needs_refresh",
    ),
    "_oauth": ("usage_from_oauth_response",),
    "_pace": (
        "DEFAULT_BEST_WINDOWS",
        "FRESH_READING_S",
        "WINDOW_SECONDS",
        "BestCandidate",
        "BestChoice",
        "NoBest",
        "RejectReason",
        "WindowForecast",
        "WindowPace",
        "choose_best",
        "reading_pace",
        "window_forecast",
        "window_pace",
    ),
    "_redact": ("REDACTED", "redact_secrets"),
    "_schedule": ("MIN_POLL_GAP_S", "poll_phases", "poll_times"),
    "_types": ("RateWindow", "UsageReading"),
    "_usage": ("KNOWN_WINDOWS", "parse_usage_reading"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "DEFAULT_BEST_WINDOWS",
    "FRESH_READING_S",
    "KNOWN_WINDOWS",
    "MIN_POLL_GAP_S",
    "REDACTED",
    "WINDOW_SECONDS",
    "AccountsError",
    "Alert",
    "AlertMark",
    "BestCandidate",
    "BestChoice",
    "LoginExpired",
    "LoginMissing",
    "LoginPresent",
    "LoginRefused",
    "LoginState",
    "NoBest",
    "RateWindow",
    "RedactedError",
    "RefusalReason",
    "RejectReason",
    "UsageReading",
    "WindowForecast",
    "WindowPace",
    "account_label",
    "alert_crossings",
    "choose_best",
    "login_state_from_credentials",
    "needs_refresh",
    "parse_alert_thresholds",
    "parse_usage_reading",
    "poll_phases",
    "poll_times",
    "reading_pace",
    "redact_secrets",
    "usage_from_oauth_response",
    "window_forecast",
    "window_pace",
]
