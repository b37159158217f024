"""The gate's cost: requests/s with a session cookie vs the same app ungated; TLS handshakes/s.

The server runs in a child process (this script with `serve ...`) so client and server do not share
one event loop; everything is on 127.0.0.1. Both apps get the same requests, cookie included (the
ungated one ignores it), so the client's own work is equal and the difference is the gate's. Gated
and ungated rounds alternate and the ratio is the median of the per-round ratios, so drift on a
shared machine hits both sides alike. Prints one JSON line per figure.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

from aiohttp import ClientSession, TCPConnector, web
from aiohttp.typedefs import Middleware

from _procstat import cpu_seconds

REQUESTS = 4000
CONCURRENCY = 8
ROUNDS = 5
HANDSHAKE_SECONDS = 3.0


def _app(gated: bool, token_file: Path) -> web.Application:
    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    middlewares: list[Middleware] = []
    if gated:
        from local_daemon._auth import create_daemon_auth
        from local_daemon._gate import gate_middleware

        middlewares.append(cast(Middleware, gate_middleware(create_daemon_auth(token_file))))
    app = web.Application(middlewares=middlewares)
    app.router.add_get("/health", health)
    return app


async def _serve(mode: str, workdir: Path) -> None:
    token_file = workdir / "token"
    if mode == "tls":
        import trustme

        from local_daemon._remote import RemoteOptions, TlsFiles, open_remote_listener

        ca = trustme.CA()
        leaf = ca.issue_cert("127.0.0.1")
        (workdir / "ca.pem").write_bytes(ca.cert_pem.bytes())
        cert, key = workdir / "tls.crt", workdir / "tls.key"
        cert.write_bytes(b"".join(b.bytes() for b in leaf.cert_chain_pems))
        key.write_bytes(leaf.private_key_pem.bytes())
        key.chmod(0o600)
        remote = RemoteOptions(
            host="127.0.0.1", token_file=token_file, tls=TlsFiles(cert_file=cert, key_file=key)
        )
        listener = await open_remote_listener(
            remote=remote, port=0, build_app=lambda gate, hosts, origins: _app(True, token_file)
        )
        port = listener.port
        closer = listener.close
    else:
        runner = web.AppRunner(_app(mode == "gated", token_file), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        closer = runner.cleanup
    print(port, flush=True)
    await asyncio.to_thread(sys.stdin.read)
    await closer()


class _Server:
    def __init__(self, mode: str, workdir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "serve", mode, str(workdir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def cpu_seconds(self) -> float:
        """User plus system CPU time the server process has used so far."""
        return cpu_seconds(self.proc.pid)

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


async def _requests_per_second(port: int, cookie: str | None) -> float:
    headers = {"Host": f"127.0.0.1:{port}"}
    if cookie:
        headers["Cookie"] = f"local_session={cookie}"
    url = f"http://127.0.0.1:{port}/health"
    async with ClientSession(connector=TCPConnector(limit=CONCURRENCY)) as session:
        for _ in range(200):  # warm up connections
            async with session.get(url, headers=headers) as resp:
                assert resp.status == 200, resp.status
        remaining = REQUESTS

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                async with session.get(url, headers=headers) as resp:
                    await resp.read()
                    assert resp.status == 200

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return REQUESTS / (time.perf_counter() - start)


async def _handshakes_per_second(port: int, ctx: ssl.SSLContext | None) -> float:
    count = 0
    deadline = time.perf_counter() + HANDSHAKE_SECONDS

    async def worker() -> None:
        nonlocal count
        while time.perf_counter() < deadline:
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
            writer.close()
            await writer.wait_closed()
            count += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(4)))
    return count / (time.perf_counter() - start)


def main() -> None:
    """Measure and print the figures."""
    from local_daemon._auth import create_daemon_auth
    from local_daemon._tokenfile import ensure_token_file

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        token_file = ensure_token_file(workdir / "token")
        cookie = create_daemon_auth(token_file).issue_session_cookie()
        rates: dict[str, list[float]] = {"ungated": [], "gated": []}
        cpu: dict[str, float] = {"ungated": 0.0, "gated": 0.0}
        servers = {mode: _Server(mode, workdir) for mode in rates}
        try:
            for _ in range(ROUNDS):
                for mode, server in servers.items():
                    before = server.cpu_seconds()
                    rates[mode].append(asyncio.run(_requests_per_second(server.port, cookie)))
                    cpu[mode] += server.cpu_seconds() - before
        finally:
            for server in servers.values():
                server.close()
        gated, ungated = statistics.median(rates["gated"]), statistics.median(rates["ungated"])
        pairs = zip(rates["gated"], rates["ungated"], strict=True)
        ratio = statistics.median(g / u for g, u in pairs)
        print(
            json.dumps(
                {
                    "name": "requests through the gate with a session cookie",
                    "value": round(gated, 1),
                    "unit": "requests/s",
                    "baseline": "same aiohttp app, ungated (loopback)",
                    "baseline_value": round(ungated, 1),
                    "ratio": round(ratio, 3),
                    "target": ">= 0.85 x ungated",
                }
            ),
            flush=True,
        )
        # Server CPU per request (warm-up requests included on both sides alike): steadier than
        # throughput on a shared 2-core machine, where the client competes for the same cores.
        per_request = {mode: cpu[mode] / (ROUNDS * (REQUESTS + 200)) * 1e6 for mode in cpu}
        print(
            json.dumps(
                {
                    "name": "server CPU per request with the gate (session cookie)",
                    "value": round(per_request["gated"], 1),
                    "unit": "us",
                    "baseline": "same app ungated, same requests (us)",
                    "baseline_value": round(per_request["ungated"], 1),
                    "ratio": round(per_request["gated"] / per_request["ungated"], 3),
                    "target": "information: the gate's own cost is the difference",
                }
            ),
            flush=True,
        )

        tls_server = _Server("tls", workdir)
        plain_server = _Server("ungated", workdir)
        try:
            ctx = ssl.create_default_context(cadata=(workdir / "ca.pem").read_text())
            tls_rate = asyncio.run(_handshakes_per_second(tls_server.port, ctx))
            tcp_rate = asyncio.run(_handshakes_per_second(plain_server.port, None))
        finally:
            tls_server.close()
            plain_server.close()
        print(
            json.dumps(
                {
                    "name": "TLS handshakes on the remote listener",
                    "value": round(tls_rate, 1),
                    "unit": "handshakes/s",
                    "baseline": "plain TCP connects to the loopback app",
                    "baseline_value": round(tcp_rate, 1),
                    "ratio": round(tls_rate / tcp_rate, 3),
                    "target": ">= 200 handshakes/s",
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        asyncio.run(_serve(sys.argv[2], Path(sys.argv[3])))
    else:
        main()
