"""The local forge API on 127.0.0.1:0 that the real `gh` talks to through HTTP_PROXY."""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any

from aiohttp import web

from fakeforge.answers import Answer, error
from fakeforge.faults import faulted_answer, mutated
from fakeforge.rest import RestApi
from fakeforge.schema import RestOperation, match_operation, request_errors, response_errors
from fakeforge.state import (
    API_HOST,
    RATE_LIMIT,
    USER_TOKEN,
    ForgeState,
    LoggedRequest,
    bot_login,
)
from forge_automation import ExecOptions, ExecResult, GhExec, run_gh

__all__ = ["GH_MARK", "ForgeEndpoint", "ForgeServer", "gh_env", "gh_exec"]


class ForgeEndpoint(RestApi):
    """The HTTP framing: the request log, schema checks, faults and rate-limit headers."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        with self.lock:
            self.state.log.append(
                LoggedRequest(
                    method=request.method,
                    url=str(request.url),
                    path=request.path,
                    headers=dict(request.headers),
                    body=body,
                )
            )
            GH_MARK.saw(request.headers.get("User-Agent", ""))
            self.land_updates()
            self.tick_git()
            if self.state.on_request is not None:
                self.state.on_request(request.method, request.path)
            change: str | None = None
            try:
                if request.host != API_HOST:
                    raise error(421, f"unexpected host {request.host}")
                operation = None
                if request.path.startswith("/_blobs/"):
                    # Like the forge's signed log URLs: the redirect target needs no token.
                    status, payload, headers = self.blob(request)
                else:
                    if request.path != "/graphql":
                        operation = self._check_request(request, body)
                    login = self._authenticate(request)
                    whole, change = faulted_answer(self.state, request.path, body)
                    if whole is not None:
                        operation = None  # a fault answers in place of the forge
                        raise Answer(whole[0], whole[1], whole[2])
                    status, payload, headers = self.route(request, body, login)
            except Answer as answer:
                status, payload, headers = answer.status, answer.body, answer.headers
            if change is not None and status == 200:
                payload = mutated(payload, change)
                operation = None  # a fault's answer is held to no description
            if operation is not None:
                # The fake may leave documented fields out, never add or mis-shape one.
                for problem in response_errors(operation, status, payload):
                    self.state.violations.append(f"{operation.operation_id}: {problem}")
            # GitHub keeps REST (`core`) and GraphQL (`graphql`, charged in points by the
            # executor) apart, and names the one a response counts against.
            if request.path == "/graphql":
                resource, remaining = "graphql", self.state.graphql_remaining
            else:
                if status != 304:
                    self.state.remaining = max(self.state.remaining - 1, 0)
                resource, remaining = "core", self.state.remaining
            headers = {
                "X-RateLimit-Limit": str(RATE_LIMIT),
                "X-RateLimit-Remaining": str(remaining),
                "X-RateLimit-Reset": str(self.state.reset_at),
                "X-RateLimit-Used": str(RATE_LIMIT - remaining),
                "X-RateLimit-Resource": resource,
                **headers,
            }
        if status in (204, 304):
            return web.Response(status=status, headers=headers)
        if isinstance(payload, bytes):
            return web.Response(
                status=status, body=payload, content_type="text/plain", headers=headers
            )
        return web.Response(
            status=status,
            body=json.dumps(payload).encode(),
            content_type="application/json",
            headers=headers,
        )

    def _check_request(self, request: web.Request, body: bytes) -> RestOperation:
        """Hold the request to GitHub's OpenAPI description; refuse what GitHub would refuse."""
        operation = match_operation(request.method, request.path)
        if operation is None:
            self.state.violations.append(f"{request.method} {request.path}: not a GitHub operation")
            raise error(404, "Not Found")
        query: dict[str, list[str]] = {}
        for key, value in request.query.items():
            query.setdefault(key, []).append(value)
        data: object = None
        if body.strip():
            try:
                data = json.loads(body)
            except ValueError:
                self.state.violations.append(f"{operation.operation_id}: body is not JSON")
                raise error(400, "Problems parsing JSON") from None
        problems = request_errors(operation, query, data)
        self.state.violations.extend(f"{operation.operation_id}: {p}" for p in problems)
        if any(p.startswith("body") for p in problems):
            raise error(422, "Invalid request.", errors=[{"message": problems[0]}])
        return operation

    def _authenticate(self, request: web.Request) -> str | None:
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("token ").removeprefix("Bearer ").strip()
        if token in self.state.users:
            return self.state.users[token]
        if token in self.state.app_tokens:
            return bot_login(self.state.app_tokens[token])
        raise error(401, "Bad credentials")


class ForgeServer:
    """The local forge API on 127.0.0.1:0, served from its own loop in a background thread."""

    def __init__(self, state: ForgeState | None = None) -> None:
        self.state = state or ForgeState()
        self.lock = threading.Lock()
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._config = tempfile.TemporaryDirectory(prefix="gh-config-")

    def __enter__(self) -> ForgeServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None:
            violations = self.take_violations()
            assert not violations, (
                f"requests GitHub would refuse (or answers it would not give): {violations}"
            )

    def take_violations(self) -> list[str]:
        """Return and forget the requests GitHub would have refused so far."""
        with self.lock:
            taken = list(self.state.violations)
            self.state.violations.clear()
            return taken

    def graphql(self, query: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        """Answer a GraphQL document in-process, exactly as the endpoint would (no gh, no HTTP)."""
        body = {"query": query, "variables": dict(variables)}
        with self.lock:
            answer = ForgeEndpoint(self.state, self.lock).graphql(json.loads(json.dumps(body)))
        decoded: dict[str, Any] = json.loads(json.dumps(answer))
        return decoded

    @property
    def config_dir(self) -> str:
        """Return a private, empty GH_CONFIG_DIR for `gh` children."""
        return self._config.name

    def start(self) -> None:
        """Start serving; returns once the port is bound."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        api = ForgeEndpoint(self.state, self.lock)

        async def boot() -> None:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", api.handle)
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            server = site._server
            assert server is not None
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(boot())
            ready.set()
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="forge-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("forge server did not start")

    def stop(self) -> None:
        """Stop serving and close the loop."""
        loop, runner = self._loop, self._runner
        if loop is None:
            return
        if runner is not None:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        loop.close()
        self._loop = None
        self._config.cleanup()

    def env(self, token: str = USER_TOKEN) -> dict[str, str]:
        """Return the environment a `gh` child needs to reach this server as `token`."""
        return gh_env(self.port, token, self.config_dir)

    def exec(self, token: str = USER_TOKEN) -> GhExec:
        """Return a GhExec running the real `gh` against this server."""
        return gh_exec(self.env(token))

    def requests(self, method: str | None = None) -> list[LoggedRequest]:
        """Return a copy of the request log, optionally only one method."""
        with self.lock:
            return [r for r in self.state.log if method is None or r.method == method]

    def clear_log(self) -> None:
        """Forget the requests seen so far."""
        with self.lock:
            self.state.log.clear()


class GhMark:
    """Counts the requests gh makes to any local forge, so that the forge suite's conftest can
    fail a test that runs the real gh without `@pytest.mark.gh`.

    `make test-gh-newest` runs only the tests marked `gh` again under the newest gh; an unmarked
    one would silently miss that run. gh names itself in its User-Agent (`GitHub CLI 2.23.0`),
    also when forge-cli runs it in a child process.
    """

    def __init__(self) -> None:
        self.requests = 0

    def saw(self, user_agent: str) -> None:
        if user_agent.startswith("GitHub CLI"):
            self.requests += 1


GH_MARK = GhMark()


def gh_env(port: int, token: str, config_dir: str) -> dict[str, str]:
    """Return GH_HOST, GH_TOKEN, HTTP_PROXY and friends for a `gh` child aimed at the server."""
    proxy = f"http://127.0.0.1:{port}"
    return {
        "GH_HOST": "github.localhost",
        "GH_TOKEN": token,
        "GH_CONFIG_DIR": config_dir,
        "HTTP_PROXY": proxy,
        "http_proxy": proxy,
        "NO_PROXY": "",
        "no_proxy": "",
        "GH_PROMPT_DISABLED": "1",
        "GH_NO_UPDATE_NOTIFIER": "1",
    }


def gh_exec(env: Mapping[str, str]) -> GhExec:
    """Return a GhExec that runs the real `gh` with `env` under the call's own env."""

    def exec_with_env(args: Sequence[str], options: ExecOptions) -> ExecResult:
        merged = {**env, **(options.env or {})}
        return run_gh(args, replace(options, env=merged))

    return exec_with_env
