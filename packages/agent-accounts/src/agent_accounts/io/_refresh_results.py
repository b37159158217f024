"""What `refresh_if_needed` answers: one frozen dataclass per result, failure kinds as Literals."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from agent_accounts import RefusalReason, redact_secrets
from agent_accounts._journal import RefreshFailure

__all__ = [
    "RELOGIN_FAILURES",
    "RefreshFailed",
    "RefreshFailure",
    "RefreshFailureDeposit",
    "RefreshFailureName",
    "RefreshFresh",
    "RefreshLocked",
    "RefreshRefreshed",
    "RefreshRefreshedElsewhere",
    "RefreshResult",
    "RefreshSkipped",
    "RefreshStop",
    "SkipReason",
    "failure_text",
]

RefreshFailureName: TypeAlias = RefreshFailure | str
"""`RefreshFailed.failure`: a kind, or `http-<status>` in the spec's form (as poll's failure)."""

SkipReason: TypeAlias = RefusalReason | Literal["missing", "not-refreshable"]
"""Why no refresh is possible: no file, a gate refusal, or a login the agent client would not
refresh (neither the `user:inference` scope nor a subscription)."""

RELOGIN_FAILURES: Final = frozenset(
    {"login-required", "unrecognized-format", "write-conflict", "write-failed"}
)
_RELOGIN_STATUSES: Final = frozenset({400, 401, 403})
_PLAIN_LABEL: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_CONTEXT_LINE: Final = (
    "The account library could not renew this profile's OAuth token; "
    "if it keeps failing, log in again with the agent client for that profile."
)
UNLABELLED: Final = "unlabelled"


def failure_text(failure: RefreshFailure, http_status: int | None = None) -> str:
    """Return the spec's name of a failure: the kind, or `http-<status>`."""
    return f"http-{http_status}" if failure == "http" and http_status is not None else failure


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshFresh:
    """The access token is not due: nothing was done."""

    status: Literal["fresh"] = "fresh"


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshRefreshed:
    """New credentials were written; the access token now expires at `expires_at_ms`.

    `rolled_forward` tells that they came from a refresher that died after its answer reached
    the disk, whose work this call finished without a request.
    """

    status: Literal["refreshed"] = "refreshed"
    expires_at_ms: int
    rolled_forward: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshRefreshedElsewhere:
    """The file changed before the request, or another login or a logout replaced it after."""

    status: Literal["refreshed-elsewhere"] = "refreshed-elsewhere"


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshLocked:
    """A fresh refresh lock is held by a live holder; the next poll tries again.

    `age_seconds` is how long ago the holder last touched it (None when unknown).
    """

    status: Literal["locked"] = "locked"
    age_seconds: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshSkipped:
    """No refresh is possible here: `reason` is `missing`, a gate refusal or `not-refreshable`."""

    status: Literal["skipped"] = "skipped"
    reason: SkipReason


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshFailed:
    """The refresh failed with `failure`; `deposited` tells whether `on_failure` took a deposit.

    `failure` is the spec's name, as poll's is: a `RefreshFailure` kind, or `http-<status>` for
    an HTTP failure, whose status also rides in `http_status`. Build one with `failed`.
    """

    status: Literal["failed"] = "failed"
    failure: RefreshFailureName
    deposited: bool
    http_status: int | None = None

    @classmethod
    def failed(
        cls, kind: RefreshFailure, *, deposited: bool, http_status: int | None = None
    ) -> RefreshFailed:
        """Return the result for a failure of `kind` (`http` with its status)."""
        return cls(
            failure=failure_text(kind, http_status), deposited=deposited, http_status=http_status
        )

    @property
    def kind(self) -> RefreshFailure:
        """Return the failure's kind: `http` for `http-<status>`, else `failure` itself."""
        if self.failure.startswith("http-"):
            return "http"
        return self.failure  # type: ignore[return-value]

    @property
    def failure_text(self) -> str:
        """Return the spec's name of the failure (`failure` itself, kept for older callers)."""
        return self.failure


RefreshResult: TypeAlias = (
    RefreshFresh
    | RefreshRefreshed
    | RefreshRefreshedElsewhere
    | RefreshLocked
    | RefreshSkipped
    | RefreshFailed
)


class RefreshStop(Exception):
    """Internal: end the refresh with `result`, or with a failure of `failure` kind."""

    def __init__(
        self,
        result: RefreshResult | None = None,
        *,
        failure: RefreshFailure = "io",
        http_status: int | None = None,
    ) -> None:
        super().__init__(failure if result is None else result.status)
        self.result = result
        self.failure: RefreshFailure = failure
        self.http_status = http_status


def _deposit_label(label: object) -> str:
    if not isinstance(label, str) or _PLAIN_LABEL.fullmatch(label) is None:
        return UNLABELLED
    try:
        if redact_secrets(label) != label:
            return UNLABELLED
    except Exception:
        return UNLABELLED
    return label


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshFailureDeposit:
    """An owner-queue item filed once per failed refresh through `on_failure`."""

    asker: Literal["account"] = "account"
    kind: Literal["do"] = "do"
    summary: str
    context: str
    deposit_id: str

    @classmethod
    def for_failure(
        cls,
        label: str,
        failure: RefreshFailure,
        now_ms: float,
        *,
        http_status: int | None = None,
    ) -> RefreshFailureDeposit:
        """Build the deposit for `failure` of the profile `label` on the UTC day of `now_ms`."""
        plain = _deposit_label(label)
        day = dt.datetime.fromtimestamp(now_ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d")
        relogin = failure in RELOGIN_FAILURES or (
            failure == "http" and http_status in _RELOGIN_STATUSES
        )
        name = f"account {plain}" if plain != UNLABELLED else "an unlabelled account"
        return cls(
            summary=f"Token refresh failed for {name}: {failure_text(failure, http_status)}",
            context=_CONTEXT_LINE,
            deposit_id=f"token-refresh-{plain}-{'relogin-' if relogin else ''}{day}",
        )
