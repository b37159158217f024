"""A local stand-in for the OAuth usage endpoint: answers each token with a moving reading."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiohttp import web

__all__ = ["UsageServer", "start_usage_server"]

_RESET_FIVE_HOUR_S = 5 * 3600
_RESET_SEVEN_DAY_S = 7 * 24 * 3600


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")


@dataclass(slots=True)
class UsageServer:
    """A running usage server: its base URL, the calls it saw and a way to stop it."""

    base_url: str
    runner: web.AppRunner
    calls: list[str] = field(default_factory=list)

    async def close(self) -> None:
        """Stop serving."""
        await self.runner.cleanup()


async def start_usage_server(
    tokens: Mapping[str, float], *, clock: Callable[[], float] = time.time
) -> UsageServer:
    """Serve GET /api/oauth/usage on 127.0.0.1:0; `tokens` maps each access token to a base load."""
    server_holder: list[UsageServer] = []

    async def usage(request: web.Request) -> web.Response:
        auth = request.headers.get("authorization", "")
        token = auth.removeprefix("Bearer ")
        if token not in tokens:
            return web.json_response({"error": "invalid token"}, status=401)
        server_holder[0].calls.append(request.path)
        now = clock()
        base = tokens[token]
        # The readings drift with the clock so a watching page sees them move.
        five = round((base + (now / 7) % 30) % 100, 1)
        seven = round((base / 2 + (now / 60) % 10) % 100, 1)
        return web.json_response(
            {
                "five_hour": {
                    "utilization": five,
                    "resets_at": _iso(now - now % _RESET_FIVE_HOUR_S + _RESET_FIVE_HOUR_S),
                },
                "seven_day": {
                    "utilization": seven,
                    "resets_at": _iso(now - now % _RESET_SEVEN_DAY_S + _RESET_SEVEN_DAY_S),
                },
                "seven_day_opus": None,
                "extra_usage": {"is_enabled": False},
            }
        )

    app = web.Application()
    app.router.add_get("/api/oauth/usage", usage)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    server = UsageServer(base_url=f"http://127.0.0.1:{port}", runner=runner)
    server_holder.append(server)
    return server
