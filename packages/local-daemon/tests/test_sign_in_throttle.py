"""Failed sign-ins are throttled per peer (and overall) before anything is checked.

A gated app on a real loopback socket takes 1,000 wrong login codes from one peer while an
ungated loopback app on the same event loop keeps answering `/health`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from daemon_raw_http import serve_app
from local_daemon import (
    Registry,
    build_http_app,
    create_daemon_auth,
    ensure_token_file,
    mint_login_code,
)

_TIMEOUT = 30.0
_WRONG = "v1.1.AAAAAAAAAAAAAAAAAAAAAA." + "A" * 43


@pytest.fixture
async def gated(tmp_path: Path) -> AsyncIterator[tuple[str, Any, Path]]:
    token_file = ensure_token_file(tmp_path / "token")
    auth = create_daemon_auth(token_file, sessions_file=tmp_path / "sessions.json")
    app = build_http_app(registry=Registry(), version="1", tool_prefix="t", gate=auth)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}", auth, token_file


def _login_headers(origin: str) -> dict[str, str]:
    return {"Origin": origin, "Content-Type": "application/json"}


async def test_a_thousand_wrong_codes_are_throttled_and_health_keeps_answering(
    gated: tuple[str, Any, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    origin, auth, token_file = gated
    checked: list[str] = []
    spend = type(auth).spend_login_code

    def counting_spend(self: Any, code: str) -> bool:
        checked.append(code)
        return bool(spend(self, code))

    monkeypatch.setattr(type(auth), "spend_login_code", counting_spend)
    loopback = build_http_app(registry=Registry(), version="1")
    statuses: list[int] = []
    health: list[int] = []
    flood_done = asyncio.Event()
    async with serve_app(loopback) as health_port, httpx2.AsyncClient(timeout=_TIMEOUT) as http:

        async def wrong_codes(count: int) -> None:
            for _ in range(count):
                answer = await http.post(
                    origin + "/auth/login", json={"code": _WRONG}, headers=_login_headers(origin)
                )
                statuses.append(answer.status_code)
                if answer.status_code == 429:
                    assert 0 < int(answer.headers["retry-after"]) <= 60
                    assert "try again in" in answer.json()["error"]["message"]

        async def poll_health() -> None:
            while not flood_done.is_set():
                answer = await http.get(f"http://127.0.0.1:{health_port}/health")
                health.append(answer.status_code)
                await asyncio.sleep(0)

        poller = asyncio.create_task(poll_health())
        await asyncio.gather(*(wrong_codes(50) for _ in range(20)))
        flood_done.set()
        await poller
        # A good code from the same peer waits too: the refusal comes before any check.
        late = await http.post(
            origin + "/auth/login",
            json={"code": mint_login_code(token_file)},
            headers=_login_headers(origin),
        )
    assert len(statuses) == 1000
    assert statuses.count(401) == 10
    assert statuses.count(429) == 990
    assert len(checked) == 10
    assert late.status_code == 429
    assert health
    assert set(health) == {200}


async def test_failed_token_requests_are_throttled(gated: tuple[str, Any, Path]) -> None:
    origin = gated[0]
    async with httpx2.AsyncClient(timeout=_TIMEOUT) as http:
        answers = [
            await http.post(
                origin + "/token",
                data={"grant_type": "refresh_token", "refresh_token": "x", "client_id": "nope"},
            )
            for _ in range(12)
        ]
    assert [a.status_code for a in answers[:10]] == [401] * 10
    assert [a.status_code for a in answers[10:]] == [429, 429]
    assert answers[-1].json()["error"] == "temporarily_unavailable"
    assert int(answers[-1].headers["retry-after"]) > 0


async def test_the_login_page_says_when_to_try_again(gated: tuple[str, Any, Path]) -> None:
    async with httpx2.AsyncClient(timeout=_TIMEOUT) as http:
        page = await http.get(gated[0] + "/auth/login?code=x", headers={"Accept": "text/html"})
    assert "response.status === 429" in page.text
    assert "answer.error.message" in page.text
