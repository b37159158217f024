"""The one failure mapper: an answer GitHub gave (status, headers, body, GraphQL `errors`) or a
body the package cannot read, to ForgeCliError with an explicit kind.

- A REST answer outside 2xx (and outside what its reader handles): 5xx `server`; 403 and 429
  `rate-limited` (Retry-After, an exhausted primary limit, or GitHub's rate-limit message;
  with the wait it asked for), `free-plan` (GitHub's "upgrade to GitHub Pro" answer), else
  `forbidden`; 404 `not-found`; any other status `http` (`response_failure`).
- A GraphQL answer holding `errors` is `http` with GitHub's first message (`graphql_failure`);
  one that is no JSON object, or has no `data` object, is `malformed`.
- A body of another shape than its parser reads is `malformed` (`parsed`); a listing that still
  has pages past the package's cap is `page-cap` (`page_cap`). Neither is ever transient: the
  same read gives the same answer, so a wait only delays the failure.

Pure: messages are redacted here (`_redact`), nothing is run or read.
"""

from __future__ import annotations

import re

from .._errors import ForgeCliError, failure_of_status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, TypeVar

    from .._errors import ForgeFailure

    T = TypeVar("T")

__all__ = [
    "graphql_data",
    "graphql_failure",
    "page_cap",
    "parsed",
    "response_failure",
]

_FREE_PLAN = re.compile(
    r"upgrade to github pro|make this repository public to enable this feature", re.I
)
_RATE_LIMITED = re.compile(r"rate limit", re.I)
# A secondary rate limit without Retry-After: GitHub documents "wait at least one minute".
_SECONDARY_WAIT = 60.0


def response_failure(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    secrets: Sequence[str] = (),
    now: float,
) -> ForgeCliError:
    """Return the ForgeCliError of a REST answer that failed, its kind and wait included.

    `now` (epoch seconds) turns a rate limit's reset time into a wait.
    """
    from .._redact import redact_forge_secrets

    message = _message_of(body)
    kind, wait = _classify(status, headers, message, now)
    text = f"gh api failed with HTTP {status}: {message or 'no message'}"
    return ForgeCliError(
        redact_forge_secrets(text, extra=secrets)[:2000],
        status=status,
        kind=kind,
        retry_after=wait,
    )


def _message_of(body: bytes) -> str:
    import contextlib
    import json
    from collections.abc import Mapping

    decoded: object = None
    with contextlib.suppress(ValueError):
        decoded = json.loads(body)
    if not isinstance(decoded, Mapping):
        return body[:500].decode("utf-8", "replace").strip()
    message = str(decoded.get("message") or "")
    errors = decoded.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], Mapping):
        detail = errors[0].get("message") or errors[0].get("code")
        if detail:
            message = f"{message}: {detail}" if message else str(detail)
    return message


def _seconds(value: str | None) -> float | None:
    import contextlib

    if value is None:
        return None
    with contextlib.suppress(ValueError):
        seconds = float(value)
        if 0 <= seconds < 1e9:
            return seconds
    return None


def _classify(
    status: int, headers: Mapping[str, str], message: str, now: float
) -> tuple[ForgeFailure, float | None]:
    if status >= 500:
        return "server", _seconds(headers.get("retry-after"))
    if status not in (403, 429):
        return failure_of_status(status), None
    retry_after = _seconds(headers.get("retry-after"))
    if retry_after is not None:
        return "rate-limited", retry_after
    if headers.get("x-ratelimit-remaining") == "0":
        reset = _seconds(headers.get("x-ratelimit-reset"))
        return "rate-limited", None if reset is None else max(reset - now, 0.0)
    if status == 429 or _RATE_LIMITED.search(message):
        return "rate-limited", _SECONDARY_WAIT
    if _FREE_PLAN.search(message):
        return "free-plan", None
    return "forbidden", None


def graphql_failure(answer: object, status: int | None = None) -> ForgeCliError | None:
    """Return the failure a whole GraphQL answer holds (no object, or `errors`), else None."""
    from collections.abc import Mapping

    if not isinstance(answer, Mapping):
        return ForgeCliError("GraphQL answered no object", status=status, kind="malformed")
    errors = answer.get("errors")
    if not errors:
        return None
    from .._redact import redact_forge_secrets

    first = errors[0] if isinstance(errors, list) and errors else errors
    message = first.get("message") if isinstance(first, Mapping) else str(first)
    return ForgeCliError(
        redact_forge_secrets(f"GraphQL error: {str(message)[:300]}"), status=status, kind="http"
    )


def graphql_data(what: str, answer: object, status: int | None = None) -> Mapping[str, Any]:
    """Return a GraphQL answer's `data` object, or raise its failure (`graphql_failure`)."""
    from . import shape

    failure = graphql_failure(answer, status)
    if failure is not None:
        raise failure
    return parsed(what, answer, lambda d: shape.as_obj(d["data"]), status=status)


def parsed(what: str, data: Any, parse: Callable[[Any], T], *, status: int | None = None) -> T:
    """Return `parse(data)`, or raise ForgeCliError (kind `malformed`) naming `what`.

    Any missing field, wrong JSON type or value outside its set (`shape.SHAPE_ERRORS`) is
    "cannot read", never another exception, and never a guess.
    """
    from . import shape

    failed = False
    try:
        return parse(data)
    except shape.SHAPE_ERRORS:
        failed = True
    # Raised outside the handler: the original error may quote a value from the body.
    assert failed
    where = "" if status is None else f" (HTTP {status})"
    raise ForgeCliError(
        f"forge answered {what} the wire cannot read{where}", status=status, kind="malformed"
    )


def page_cap(what: str, pages: int) -> ForgeCliError:
    """Return the failure of a listing that still had pages after `pages` (kind `page-cap`)."""
    return ForgeCliError(
        f"{what} still had pages after {pages}; refusing to read on", kind="page-cap"
    )
