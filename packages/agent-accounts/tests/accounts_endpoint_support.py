"""The token endpoint of the refresh tests, public and white-box: a real aiohttp server or respx
answering scripted replies (the `endpoint` fixture runs each test on both), and the steps around it
(seed a login, run `refresh_if_needed` against it, check nothing is left behind)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from aiohttp import web

from accounts_refresh_support import canary_token, dump, leftovers, serve_loopback, write_file
from agent_accounts.io import Profile, RefreshFailureDeposit, RefreshResult, refresh_if_needed

__all__ = [
    "HOUR_MS",
    "MARGIN",
    "NOW",
    "Endpoint",
    "Reply",
    "assert_clean",
    "cred_path",
    "endpoint",
    "ok_body",
    "run",
    "seed",
]

NOW = 1_760_000_000_000  # epoch milliseconds: the `now_ms` `run` passes
HOUR_MS = 3_600_000
MARGIN = 10 * 60 * 1000


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def ok_body(*, rotate: bool = True, **extra: Any) -> Reply:
    payload: dict[str, Any] = {"access_token": canary_token("oat"), "expires_in": 28800}
    if rotate:
        payload["refresh_token"] = canary_token("ort")
    payload.update(extra)
    return Reply(
        body=json.dumps(payload).encode(),
        headers={"content-type": "application/json", "x-echo": payload["access_token"]},
    )


@dataclass
class Endpoint:
    """A token endpoint (real aiohttp server or respx) answering scripted replies."""

    kind: str
    url: str
    client: httpx.AsyncClient
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def next_reply(self, body: bytes, headers: dict[str, str]) -> Reply:
        self.requests.append(json.loads(body))
        self.headers.append({k.lower(): v for k, v in headers.items()})
        return self.replies.pop(0) if self.replies else Reply(status=500)


@pytest.fixture(params=["aiohttp", "respx"])
async def endpoint(request: pytest.FixtureRequest) -> AsyncIterator[Endpoint]:
    if request.param == "aiohttp":
        holder: list[Endpoint] = []

        async def handler(req: web.Request) -> web.StreamResponse:
            reply = holder[0].next_reply(await req.read(), dict(req.headers))
            if reply.delay:
                await asyncio.sleep(reply.delay)
            return web.Response(status=reply.status, body=reply.body, headers=reply.headers)

        app = web.Application()
        app.router.add_post("/v1/oauth/token", handler)
        runner, url = await serve_loopback(app)
        async with httpx.AsyncClient() as client:
            ep = Endpoint(kind="aiohttp", url=url, client=client)
            holder.append(ep)
            yield ep
        await runner.cleanup()
    else:
        url = "https://auth.test.invalid"
        async with httpx.AsyncClient() as client, respx.mock(assert_all_called=False) as router:
            ep = Endpoint(kind="respx", url=url, client=client)

            async def side_effect(req: httpx.Request) -> httpx.Response:
                reply = ep.next_reply(req.content, dict(req.headers))
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                return httpx.Response(reply.status, content=reply.body, headers=reply.headers)

            router.post(f"{url}/v1/oauth/token").mock(side_effect=side_effect)
            yield ep


def cred_path(profile: Profile) -> Path:
    return Path(profile.config_dir) / ".credentials.json"


def seed(profile: Profile, doc: dict[str, Any], indent: str | None = None) -> bytes:
    data = dump(doc, indent)
    write_file(cred_path(profile), data)
    return data


async def run(
    profile: Profile, ep: Endpoint, **kwargs: Any
) -> tuple[RefreshResult, list[RefreshFailureDeposit]]:
    deposits: list[RefreshFailureDeposit] = []
    kwargs.setdefault("margin_ms", MARGIN)
    kwargs.setdefault("now_ms", NOW)
    result = await refresh_if_needed(
        profile, client=ep.client, auth_url=ep.url, on_failure=deposits.append, **kwargs
    )
    return result, deposits


def assert_clean(profile: Profile) -> None:
    assert leftovers(Path(profile.config_dir)) == []
