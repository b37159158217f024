"""The one transport to `gh api`: argv, the child, `-i` parsing, failure kinds, read retries.

The wire's REST and GraphQL calls, the backstop's GraphQL reads and forge-cli's own reads (job
logs, a check run by id) all go through `gh_call`. `-i` makes gh print the status line and headers
before the body: that is how a 304 reads as "not modified" (gh exits 1 on it) and how every
failure gets its HTTP status, its kind and its Retry-After.

A read (never a write) that fails with a secondary rate limit, an exhausted primary limit or a 5xx
is made again after the wait the forge asked for (Retry-After, the limit's reset, else 1 then 2 s),
but only while that wait ends before the call's deadline; each child's own timeout is what is left
of that deadline, so no call outlives its caller's bound.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._errors import ForgeCliError, ForgeFailure
from ._exec import ExecOptions, ExecResult, GhExec, run_child
from ._ghenv import API_VERSION, gh_child_env, rest_args

__all__ = [
    "API_VERSION",
    "DEFAULT_TIMEOUT",
    "GhResponse",
    "failure_of",
    "gh_call",
    "graphql_args",
    "parse_gh_response",
    "rest_args",
    "run_gh",
]

# Seconds one call may take, retries included, when the caller names no deadline.
DEFAULT_TIMEOUT = 60.0
# How often one read is made at most, and the waits between 5xx answers without Retry-After.
MAX_ATTEMPTS = 3
_SERVER_BACKOFF = (1.0, 2.0)
# A secondary rate limit without Retry-After: GitHub documents "wait at least one minute".
_SECONDARY_WAIT = 60.0

_STATUS_LINE = re.compile(rb"\AHTTP/[0-9.]+ (\d{3})[^\r\n]*\r?\n")
_LINK_NEXT = re.compile(r'<[^>]*>\s*;\s*rel="next"')
_FREE_PLAN = re.compile(
    r"upgrade to github pro|make this repository public to enable this feature", re.I
)
_RATE_LIMITED = re.compile(r"rate limit", re.I)
# gh 2.97 and later refuse to print a body holding terminal escape sequences (an ANSI-coloured
# Actions log) unless given this flag, which older gh does not know: it exits 1 after printing
# the headers, and says so on stderr. That answer is the detection; the flag is then passed to
# every later call of this process (`_ESCAPES`), so each gh is asked about it once at most.
_ALLOW_ESCAPES = "--allow-escape-sequences"
_ESCAPES: list[bool] = []
_NOT_JSON = object()


def run_gh(args: Sequence[str], options: ExecOptions) -> ExecResult:
    """Run `gh` with `args`; `options.env` is added to this child's environment only."""
    return run_child("gh", args, options, env=gh_child_env(options.env), error=_no_answer)


def _no_answer(message: str) -> ForgeCliError:
    kind: ForgeFailure = "timeout" if " timed out " in message else "no-answer"
    return ForgeCliError(message, kind=kind)


@dataclass(frozen=True, slots=True, kw_only=True)
class GhResponse:
    """One parsed `gh api -i` answer: HTTP status, lower-cased headers, raw body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """Decode the body as JSON (None when empty), or raise ForgeCliError."""
        if not self.body.strip():
            return None
        decoded: Any = _NOT_JSON
        # Raised outside the handler: a JSONDecodeError holds the whole body in `doc`.
        with contextlib.suppress(ValueError):
            decoded = json.loads(self.body)
        if decoded is _NOT_JSON:
            raise ForgeCliError(
                "forge answered a body that is not JSON", status=self.status, kind="malformed"
            )
        return decoded

    @property
    def has_next(self) -> bool:
        """Return whether the Link header names a next page."""
        return bool(_LINK_NEXT.search(self.headers.get("link", "")))


def parse_gh_response(stdout: bytes) -> GhResponse | None:
    """Parse `gh api -i` stdout into status, headers and body; None when no status line came."""
    match = _STATUS_LINE.match(stdout)
    if match is None:
        return None
    rest = stdout[match.end() :]
    head, sep, body = rest.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = rest.partition(b"\n\n")
    if not sep and rest.strip() and b":" not in rest.splitlines()[0]:
        head, body = b"", rest
    headers: dict[str, str] = {}
    for line in head.splitlines():
        name, colon, value = line.decode("latin-1").partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    return GhResponse(status=int(match.group(1)), headers=headers, body=body)


def graphql_args() -> list[str]:
    """Return the argv of one GraphQL call; the document and variables go on stdin as JSON."""
    return ["api", "graphql", "-i", "--input", "-", "-H", f"X-GitHub-Api-Version: {API_VERSION}"]


def failure_of(
    result: ExecResult, response: GhResponse | None, secrets: Sequence[str] = ()
) -> ForgeCliError:
    """Return the ForgeCliError for a call that did not succeed, its kind and wait included."""
    # Imported here: a call that succeeds (pr-status's every call, mostly) never needs it.
    from ._redact import redact_forge_secrets, redact_split

    if response is None:
        out, err = redact_split(
            result.stdout.decode("utf-8", "replace"),
            result.stderr.decode("utf-8", "replace"),
            extra=secrets,
        )
        joined = f"{out.strip()}\n{err.strip()}".strip()[:2000]
        return ForgeCliError(
            f"gh exited {result.returncode}: {joined or 'no output'}", kind="no-answer"
        )
    message = _message_of(response.body)
    kind, wait = _classify(response.status, response.headers, message)
    text = f"gh api failed with HTTP {response.status}: {message or 'no message'}"
    return ForgeCliError(
        redact_forge_secrets(text, extra=secrets)[:2000],
        status=response.status,
        kind=kind,
        retry_after=wait,
    )


def _message_of(body: bytes) -> str:
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
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        seconds = float(value)
        if 0 <= seconds < 1e9:
            return seconds
    return None


def _classify(
    status: int, headers: Mapping[str, str], message: str
) -> tuple[ForgeFailure, float | None]:
    if status >= 500:
        return "server", _seconds(headers.get("retry-after"))
    if status not in (403, 429):
        return ("not-found" if status == 404 else "http"), None
    retry_after = _seconds(headers.get("retry-after"))
    if retry_after is not None:
        return "rate-limited", retry_after
    if headers.get("x-ratelimit-remaining") == "0":
        reset = _seconds(headers.get("x-ratelimit-reset"))
        return "rate-limited", None if reset is None else max(reset - time.time(), 0.0)
    if status == 429 or _RATE_LIMITED.search(message):
        return "rate-limited", _SECONDARY_WAIT
    if _FREE_PLAN.search(message):
        return "free-plan", None
    return "forbidden", None


def _refused_escapes(result: ExecResult) -> bool:
    return result.returncode != 0 and _ALLOW_ESCAPES.encode() in result.stderr


def _with_escapes(args: Sequence[str]) -> list[str]:
    if list(args[:1]) != ["api"] or _ALLOW_ESCAPES in args:
        return list(args)
    return ["api", _ALLOW_ESCAPES, *args[1:]]


def _retry_wait(error: ForgeCliError, attempt: int) -> float | None:
    if error.kind == "rate-limited":
        return error.retry_after
    if error.kind == "server":
        if error.retry_after is not None:
            return error.retry_after
        return _SERVER_BACKOFF[min(attempt, len(_SERVER_BACKOFF) - 1)]
    return None


def gh_call(
    exec: GhExec,
    args: Sequence[str],
    *,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    read: bool,
    deadline: float | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    ok: frozenset[int] = frozenset(),
    secrets: Sequence[str] = (),
    observe: Callable[[Mapping[str, str]], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> GhResponse:
    """Make one gh api call and return its 2xx (or `ok`) answer, or raise ForgeCliError.

    `deadline` (a `clock()` value) bounds the whole call, retries and children included; without
    one the call ends within `timeout` seconds. Only a `read` is ever retried.
    """
    if deadline is None and timeout is not None:
        deadline = clock() + timeout
    error: ForgeCliError | None = None
    for attempt in range(MAX_ATTEMPTS):
        left = None if deadline is None else deadline - clock()
        if left is not None and left <= 0:
            break
        argv = _with_escapes(args) if _ESCAPES else list(args)
        result = exec(argv, ExecOptions(input=input, env=env, timeout=left))
        if _ALLOW_ESCAPES not in argv and _refused_escapes(result):
            _ESCAPES.append(True)
            argv = _with_escapes(args)
            left = None if deadline is None else deadline - clock()
            result = exec(argv, ExecOptions(input=input, env=env, timeout=left))
        response = parse_gh_response(result.stdout)
        if response is not None and observe is not None:
            observe(response.headers)
        if response is not None and (200 <= response.status < 300 or response.status in ok):
            return response
        error = failure_of(result, response, secrets)
        wait = _retry_wait(error, attempt) if read else None
        if wait is None or attempt + 1 == MAX_ATTEMPTS:
            raise error from None
        if deadline is not None and clock() + wait >= deadline:
            raise error from None
        sleep(wait)
    if error is not None:
        raise error from None
    raise ForgeCliError("gh call not made: its deadline had passed", kind="timeout")
