"""An app built with a shared `Lifecycle` answers `/health` 503 until the daemon marks it ready:
the readiness every app of one daemon reads."""

from __future__ import annotations

from daemon_support import demo_registry, http
from local_daemon import build_http_app
from local_daemon._app import Lifecycle


async def test_build_http_app_starting_state() -> None:
    from daemon_raw_http import serve_app

    lifecycle = Lifecycle(ready=False)
    app = build_http_app(registry=demo_registry(), version="1", lifecycle=lifecycle)
    async with serve_app(app) as port:
        assert (await http(port, "GET", "/health"))[0] == 503
        lifecycle.ready = True
        assert (await http(port, "GET", "/health"))[0] == 200
