"""The gh adapter: failure kinds, read retries within the deadline, Retry-After, writes never
retried, and the parse of `gh api -i` output (status line, headers, body).

White-box: `gh_call`, `failure_of` and `parse_gh_response` are the adapter's own seams.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence

import pytest

from fakeforge import ForgeServer
from forge_automation import ExecOptions, ExecResult, ForgeCliError
from forge_automation._gh import (
    GhResponse,
    failure_of,
    gh_call,
    graphql_args,
    parse_gh_response,
    request_args,
)
from forge_automation._github.headers import API_VERSION
from forge_automation._github.rest import get_repository, job_logs

APP_TOKEN = "ghs_canaryAppToken1234567890abcdefABCDEF"
OK = b"HTTP/2.0 200 OK\r\nContent-Type: application/json\r\n\r\n{}"
FREE = (
    b"HTTP/2.0 403 Forbidden\r\n\r\n"
    b'{"message": "Upgrade to GitHub Pro or make this repository public to enable this feature."}'
)
SECONDARY = (
    b"HTTP/2.0 403 Forbidden\r\nRetry-After: 7\r\n\r\n"
    b'{"message": "You have exceeded a secondary rate limit."}'
)
PRIMARY = (
    b"HTTP/2.0 403 Forbidden\r\nX-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 1\r\n\r\n"
    b'{"message": "API rate limit exceeded for user."}'
)
PERMISSION = b'HTTP/2.0 403 Forbidden\r\n\r\n{"message": "Resource not accessible by integration"}'
BAD_GATEWAY = b'HTTP/2.0 502 Bad Gateway\r\n\r\n{"message": "Server Error"}'


class Script:
    """A GhExec answering from a list of stdouts, recording each child's timeout."""

    def __init__(self, *answers: bytes) -> None:
        self.answers = list(answers)
        self.timeouts: list[float | None] = []

    def __call__(self, args: Sequence[str], options: ExecOptions) -> ExecResult:
        self.timeouts.append(options.timeout)
        out = self.answers.pop(0)
        return ExecResult(
            returncode=0 if out.startswith(b"HTTP/2.0 2") else 1, stdout=out, stderr=b""
        )


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def call(script: Script, clock: Clock, *, read: bool = True, deadline: float | None = None) -> int:
    response = gh_call(
        script,
        request_args(get_repository("a/b")),
        read=read,
        deadline=deadline,
        timeout=60.0,
        clock=clock,
        sleep=clock.sleep,
    )
    return response.status


@pytest.mark.parametrize(
    ("stdout", "kind"),
    [
        (FREE, "free-plan"),
        (SECONDARY, "rate-limited"),
        (PRIMARY, "rate-limited"),
        (PERMISSION, "forbidden"),
        (BAD_GATEWAY, "server"),
        (b'HTTP/2.0 404 Not Found\r\n\r\n{"message": "Not Found"}', "not-found"),
        (b'HTTP/2.0 422 Unprocessable\r\n\r\n{"message": "x"}', "http"),
        (b"", "no-answer"),
    ],
)
def test_each_failure_has_its_kind(stdout: bytes, kind: str) -> None:
    result = ExecResult(returncode=1, stdout=stdout, stderr=b"error connecting")
    error = failure_of(result, parse_gh_response(stdout))
    assert error.kind == kind
    assert error.transient == (kind in ("rate-limited", "server", "no-answer"))


def test_a_secondary_rate_limit_is_retried_after_retry_after() -> None:
    script, clock = Script(SECONDARY, OK), Clock()
    assert call(script, clock) == 200
    assert clock.sleeps == [7.0]


def test_a_5xx_is_retried_with_backoff_then_fails() -> None:
    script, clock = Script(BAD_GATEWAY, BAD_GATEWAY, BAD_GATEWAY), Clock()
    with pytest.raises(ForgeCliError) as caught:
        call(script, clock)
    assert (caught.value.status, caught.value.kind) == (502, "server")
    assert clock.sleeps == [1.0, 2.0]
    assert caught.value.__suppress_context__


def test_a_wait_past_the_deadline_fails_now() -> None:
    script, clock = Script(SECONDARY), Clock()
    with pytest.raises(ForgeCliError) as caught:
        call(script, clock, deadline=clock.now + 5)
    assert caught.value.retry_after == 7.0
    assert clock.sleeps == []


def test_each_child_gets_what_is_left_of_the_deadline() -> None:
    script, clock = Script(BAD_GATEWAY, OK), Clock()
    assert call(script, clock, deadline=clock.now + 10) == 200
    assert script.timeouts == [10.0, 9.0]


def test_a_write_is_never_retried() -> None:
    script, clock = Script(BAD_GATEWAY, OK), Clock()
    with pytest.raises(ForgeCliError):
        call(script, clock, read=False)
    assert clock.sleeps == []
    assert len(script.answers) == 1


def test_a_passed_deadline_starts_no_child() -> None:
    script, clock = Script(OK), Clock()
    with pytest.raises(ForgeCliError) as caught:
        call(script, clock, deadline=clock.now - 1)
    assert caught.value.kind == "timeout"
    assert script.timeouts == []


def test_every_call_pins_the_api_version() -> None:
    assert f"X-GitHub-Api-Version: {API_VERSION}" in request_args(get_repository("acme/widgets"))
    assert f"X-GitHub-Api-Version: {API_VERSION}" in graphql_args()


@pytest.mark.gh
def test_the_server_sees_the_pinned_version_on_every_call(forge_server: ForgeServer) -> None:
    from forge_automation import gh_cli_wire

    wire = gh_cli_wire(forge_server.exec())
    assert wire.get_authenticated_user() == "forge-bot"
    with pytest.raises(ForgeCliError):
        wire.get_pr("acme/missing", 1)
    seen = forge_server.requests()
    assert len(seen) == 2
    assert all(
        {k.lower(): v for k, v in r.headers.items()}.get("x-github-api-version") == API_VERSION
        for r in seen
    )


def test_a_refused_escape_sequence_body_is_read_again_with_the_flag_from_then_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from forge_automation import _gh

    monkeypatch.setattr(_gh, "_ESCAPES", [])
    calls: list[list[str]] = []
    headers = b"HTTP/2.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"

    def gh(args: Sequence[str], options: ExecOptions) -> ExecResult:
        calls.append(list(args))
        if "--allow-escape-sequences" in args:
            return ExecResult(
                returncode=0, stdout=headers + b"\x1b[31mFAILED\x1b[0m x\n", stderr=b""
            )
        refusal = b"the response contains terminal escape sequences; pass --allow-escape-sequences"
        return ExecResult(returncode=1, stdout=headers, stderr=refusal)

    clock = Clock()
    args = request_args(job_logs("a/b", 1))
    first = gh_call(gh, args, read=True, clock=clock, sleep=clock.sleep)
    assert first.body == b"\x1b[31mFAILED\x1b[0m x\n"
    second = gh_call(gh, args, read=True, clock=clock, sleep=clock.sleep)
    assert second.body == first.body
    assert [c[1] == "--allow-escape-sequences" for c in calls] == [False, True, True]
    assert clock.sleeps == []


def test_parse_status_headers_and_body() -> None:
    raw = b'HTTP/1.1 200 OK\r\nEtag: "e1"\r\nLink: <x?page=2>; rel="next"\r\n\r\n{"a": 1}'
    response = parse_gh_response(raw)
    assert response is not None
    assert (response.status, response.headers["etag"], response.json()) == (200, '"e1"', {"a": 1})
    assert response.has_next


def test_parse_304_without_body_and_no_status_line() -> None:
    response = parse_gh_response(b"HTTP/1.1 304 Not Modified\r\nEtag: x\r\n\r\n")
    assert response is not None
    assert response.status == 304
    assert response.body == b""
    assert parse_gh_response(b"gh: could not connect") is None


def test_a_body_that_is_not_json_fails_without_chaining_the_body() -> None:
    response = GhResponse(status=200, headers={}, body=f"oops {APP_TOKEN} {{".encode())
    with pytest.raises(ForgeCliError, match="not JSON") as caught:
        response.json()
    assert caught.value.status == 200
    # A JSONDecodeError keeps the whole body in `doc`: it must not ride along as __context__.
    assert caught.value.__context__ is None
    assert APP_TOKEN not in "".join(traceback.format_exception(caught.value))
