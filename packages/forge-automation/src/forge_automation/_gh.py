"""The one transport to `gh`, the thin adapter under `_github`: it runs `gh api -i` and hands back
status, headers and body (`GhResponse`).

Every gh child of the package starts here (`start_gh`; `run_gh` is start-and-finish): the wire's
REST and GraphQL calls, the backstop's GraphQL reads, forge-cli's own reads (job logs, a check run
by id) and pr-status's read started before the library is imported. The calls go through
`gh_call` (`send` for a `_github.rest.RestRequest`). `-i` makes gh print the status line and
headers before the body: that is how a 304 reads as "not modified" (gh exits 1 on it) and how
every failure gets its HTTP status; `_github.failures` maps it to its kind and Retry-After.

A read (never a write) that fails with a secondary rate limit, an exhausted primary limit or a 5xx
is made again after the wait the forge asked for (Retry-After, the limit's reset, else 1 then 2 s),
but only while that wait ends before the call's deadline; each child's own timeout is what is left
of that deadline, so no call outlives its caller's bound.

Module-level imports stay light (`re`, `subprocess`, `time`, `_errors`, `_ghenv`): forge-cli
pr-status imports this module to start its read before anything else is loaded.
"""

from __future__ import annotations

import re
import subprocess
import time

from ._errors import ForgeCliError
from ._ghenv import gh_child_env

# Not `typing.TYPE_CHECKING`: importing typing would delay pr-status's first read.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from ._exec import ExecOptions, ExecResult, GhExec
    from ._github.rest import RestRequest

__all__ = [
    "DEFAULT_TIMEOUT",
    "GhChild",
    "GhResponse",
    "failure_of",
    "gh_call",
    "graphql_args",
    "parse_gh_response",
    "request_args",
    "run_gh",
    "send",
    "start_gh",
]

# Seconds one call may take, retries included, when the caller names no deadline.
DEFAULT_TIMEOUT = 60.0
# How often one read is made at most, and the waits between 5xx answers without Retry-After.
MAX_ATTEMPTS = 3
_SERVER_BACKOFF = (1.0, 2.0)

_STATUS_LINE = re.compile(rb"\AHTTP/[0-9.]+ (\d{3})[^\r\n]*\r?\n")
_LINK_NEXT = re.compile(r'<[^>]*>\s*;\s*rel="next"')
# gh 2.97 and later refuse to print a body holding terminal escape sequences (an ANSI-coloured
# Actions log) unless given this flag, which older gh does not know: it exits 1 after printing
# the headers, and says so on stderr. That answer is the detection; the flag is then passed to
# every later call of this process (`_ESCAPES`), so each gh is asked about it once at most.
_ALLOW_ESCAPES = "--allow-escape-sequences"
_ESCAPES: list[bool] = []
_NOT_JSON = object()
# Linux's default pipe capacity: a stdin body up to this size is written without blocking.
_PIPE_CAPACITY = 65536


def run_gh(args: Sequence[str], options: ExecOptions) -> ExecResult:
    """Run `gh` with `args`; `options.env` is added to this child's environment only."""
    return start_gh(args, input=options.input, env=options.env, cwd=options.cwd).finish(
        options.timeout
    )


def start_gh(
    args: Sequence[str],
    *,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> GhChild:
    """Start `gh <args>` now; `env` is added to this child's environment only.

    stdin is `input` (empty unless given), so a child never waits on a terminal. A gh that
    cannot start raises ForgeCliError (kind `no-answer`) with a fixed message.
    """
    import contextlib

    failure = ""
    try:
        child = subprocess.Popen(
            ["gh", *args],
            stdin=subprocess.PIPE if input else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=gh_child_env(env),
            cwd=cwd,
        )
    except FileNotFoundError:
        failure = "gh is not installed or not on PATH"
    except OSError as exc:
        failure = f"gh could not start: {exc.strerror}"
    if failure:
        raise ForgeCliError(failure, kind="no-answer")
    if input and len(input) <= _PIPE_CAPACITY and child.stdin is not None:
        # Sent now, so that gh makes its request while the caller does other work; a body
        # this size fits the pipe, so the write cannot block. A larger one goes at `finish`.
        stdin, child.stdin = child.stdin, None  # communicate() must not touch it again
        # gh exiting without reading is reported by `finish` from what it said.
        with contextlib.suppress(BrokenPipeError):
            try:
                stdin.write(input)
                stdin.flush()
            finally:
                stdin.close()  # closes the pipe even when its flush fails again
        input = None
    return GhChild(child, input)


class GhChild:
    """One running gh child: `finish` waits for its answer (once), `stop` kills it unanswered."""

    __slots__ = ("_answer", "_child", "_input")

    def __init__(self, child: subprocess.Popen[bytes], input: bytes | None) -> None:
        self._child = child
        self._input = input or None
        self._answer: ExecResult | None = None

    def finish(self, timeout: float | None) -> ExecResult:
        """Wait at most `timeout` seconds for the child and return (and keep) what it left.

        A child still running then is killed and ForgeCliError (kind `timeout`) is raised,
        outside the handler: TimeoutExpired carries argv and partial output, and would otherwise
        ride along as `__context__`.
        """
        from ._exec import ExecResult

        if self._answer is not None:
            return self._answer
        timed_out = False
        try:
            stdout, stderr = self._child.communicate(self._input, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        if timed_out:
            self.stop()
            raise ForgeCliError(f"gh timed out after {timeout} s", kind="timeout")
        self._answer = ExecResult(returncode=self._child.returncode, stdout=stdout, stderr=stderr)
        return self._answer

    def stop(self) -> None:
        """Kill the child unless it has answered, and reap it."""
        from ._exec import ExecResult

        if self._answer is None:
            self._child.kill()
            self._child.communicate()
            self._answer = ExecResult(returncode=self._child.returncode, stdout=b"", stderr=b"")


class GhResponse:
    """One parsed `gh api -i` answer: HTTP status, lower-cased headers, raw body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, *, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def __repr__(self) -> str:
        return f"GhResponse(status={self.status}, headers={self.headers!r}, body={self.body!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GhResponse):
            return NotImplemented
        return (self.status, self.headers, self.body) == (other.status, other.headers, other.body)

    __hash__ = None  # type: ignore[assignment]

    def json(self) -> Any:
        """Decode the body as JSON (None when empty), or raise ForgeCliError."""
        import contextlib
        import json

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


def _header_args(headers: Sequence[tuple[str, str]]) -> list[str]:
    return [arg for name, value in headers for arg in ("-H", f"{name}: {value}")]


def graphql_args() -> list[str]:
    """Return the argv of one GraphQL call; the document and variables go on stdin as JSON."""
    from ._github.headers import graphql_headers

    return ["api", "graphql", "-i", "--input", "-", *_header_args(graphql_headers())]


def request_args(request: RestRequest) -> list[str]:
    """Return the argv of one REST call (`gh api -i`); a body goes on stdin (`--input -`)."""
    args = ["api", "-i", "--method", request.method, request.path]
    args += _header_args(request.all_headers())
    if request.body is not None:
        args += ["--input", "-"]
    return args


def failure_of(
    result: ExecResult, response: GhResponse | None, secrets: Sequence[str] = ()
) -> ForgeCliError:
    """Return the ForgeCliError for a call that did not succeed, its kind and wait included.

    An HTTP answer is mapped by `_github.failures.response_failure`; gh exiting without one is
    kind `no-answer`.
    """
    # Imported here: a call that succeeds (pr-status's every call, mostly) never needs it.
    from ._github.failures import response_failure
    from ._redact import redact_split

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
    return response_failure(
        response.status, response.headers, response.body, secrets=secrets, now=time.time()
    )


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
    from ._exec import ExecOptions

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


def send(
    exec: GhExec,
    request: RestRequest,
    *,
    env: Mapping[str, str] | None = None,
    deadline: float | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    secrets: Sequence[str] = (),
    observe: Callable[[Mapping[str, str]], None] | None = None,
) -> GhResponse:
    """Make one REST `request` through `gh_call` and return its 2xx (or `request.ok`) answer."""
    import json

    body = None if request.body is None else json.dumps(request.body).encode()
    return gh_call(
        exec,
        request_args(request),
        input=body,
        env=env,
        read=request.read,
        deadline=deadline,
        timeout=timeout,
        ok=request.ok,
        secrets=secrets,
        observe=observe,
    )
