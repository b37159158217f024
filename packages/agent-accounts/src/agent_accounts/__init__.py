"""Pure core of the account library: usage readings, login state, labels and redaction.

Importing this package and calling its functions opens no file, socket or process and reads no
environment; `agent_accounts.io` holds every file and network access.
"""

from __future__ import annotations

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
from ._redact import REDACTED, redact_secrets
from ._types import RateWindow, UsageReading
from ._usage import KNOWN_WINDOWS, parse_usage_reading, usage_from_oauth_response

__all__ = [
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
]
