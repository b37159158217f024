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
# need; type checkers treat any name TYPE_CHECKING as true. `X as X`: an explicit re-export, as
# `__all__` is derived at run time (tests/internal/test_front_doors.py keeps these in step).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ._alerts import Alert as Alert
    from ._alerts import AlertMark as AlertMark
    from ._alerts import alert_crossings as alert_crossings
    from ._alerts import parse_alert_thresholds as parse_alert_thresholds
    from ._errors import AccountsError as AccountsError
    from ._errors import RedactedError as RedactedError
    from ._labels import account_label as account_label
    from ._login import LoginExpired as LoginExpired
    from ._login import LoginMissing as LoginMissing
    from ._login import LoginPresent as LoginPresent
    from ._login import LoginRefused as LoginRefused
    from ._login import LoginState as LoginState
    from ._login import RefusalReason as RefusalReason
    from ._login import login_state_from_credentials as login_state_from_credentials
    from ._login import needs_refresh as needs_refresh
    from ._oauth import usage_from_oauth_response as usage_from_oauth_response
    from ._pace import DEFAULT_BEST_WINDOWS as DEFAULT_BEST_WINDOWS
    from ._pace import FRESH_READING_S as FRESH_READING_S
    from ._pace import WINDOW_SECONDS as WINDOW_SECONDS
    from ._pace import BestCandidate as BestCandidate
    from ._pace import BestChoice as BestChoice
    from ._pace import NoBest as NoBest
    from ._pace import RejectReason as RejectReason
    from ._pace import WindowForecast as WindowForecast
    from ._pace import WindowPace as WindowPace
    from ._pace import choose_best as choose_best
    from ._pace import reading_pace as reading_pace
    from ._pace import window_forecast as window_forecast
    from ._pace import window_pace as window_pace
    from ._redact import REDACTED as REDACTED
    from ._redact import redact_secrets as redact_secrets
    from ._schedule import MIN_POLL_GAP_S as MIN_POLL_GAP_S
    from ._schedule import poll_phases as poll_phases
    from ._schedule import poll_times as poll_times
    from ._types import RateWindow as RateWindow
    from ._types import UsageReading as UsageReading
    from ._usage import KNOWN_WINDOWS as KNOWN_WINDOWS
    from ._usage import parse_usage_reading as parse_usage_reading

_PUBLIC: dict[str, str] = {
    "DEFAULT_BEST_WINDOWS": "._pace",
    "FRESH_READING_S": "._pace",
    "KNOWN_WINDOWS": "._usage",
    "MIN_POLL_GAP_S": "._schedule",
    "REDACTED": "._redact",
    "WINDOW_SECONDS": "._pace",
    "AccountsError": "._errors",
    "Alert": "._alerts",
    "AlertMark": "._alerts",
    "BestCandidate": "._pace",
    "BestChoice": "._pace",
    "LoginExpired": "._login",
    "LoginMissing": "._login",
    "LoginPresent": "._login",
    "LoginRefused": "._login",
    "LoginState": "._login",
    "NoBest": "._pace",
    "RateWindow": "._types",
    "RedactedError": "._errors",
    "RefusalReason": "._login",
    "RejectReason": "._pace",
    "UsageReading": "._types",
    "WindowForecast": "._pace",
    "WindowPace": "._pace",
    "account_label": "._labels",
    "alert_crossings": "._alerts",
    "choose_best": "._pace",
    "login_state_from_credentials": "._login",
    "needs_refresh": "._login",
    "parse_alert_thresholds": "._alerts",
    "parse_usage_reading": "._usage",
    "poll_phases": "._schedule",
    "poll_times": "._schedule",
    "reading_pace": "._pace",
    "redact_secrets": "._redact",
    "usage_from_oauth_response": "._oauth",
    "window_forecast": "._pace",
    "window_pace": "._pace",
}
"""The front door's one table: each public name (in `__all__`'s order) and the private module
that defines it."""


def _lazy_getattr(
    package: str, table: dict[str, str], namespace: dict[str, object]
) -> Callable[[str], object]:
    """Return a PEP 562 `__getattr__` that loads each name of `table` from its module once.

    Each front door of the package (this one and `agent_accounts.io`) loads its names so.
    """

    def load(name: str) -> object:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # cached: the next lookup finds it without this function
        return value

    return load


__getattr__ = _lazy_getattr(__name__, _PUBLIC, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = list(_PUBLIC)
