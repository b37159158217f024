"""The daemon's figures: RPC through every guard vs a bare aiohttp echo, MCP `tools/call` on `/mcp`
vs the SDK's own `MCPServer` (stateless JSON, uvicorn) and vs the daemon's own `/rpc`, progress
notifications per second for one call (vs `MCPServer`'s `ctx.report_progress`), SSE fan-out
to 1,000 subscribers, `tools/call` through `mcp-stdio --attach` vs direct HTTP, start to first
healthy answer, `import local_daemon` (and `local_daemon.cli`), and RSS under a never-ending
chunked body.

Servers run in child processes (this script with `serve MODE`), so client and server never share
an event loop; everything is on 127.0.0.1. Prints one JSON line per figure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _procstat import cpu_seconds

REQUESTS = 4000
MCP_REQUESTS = int(os.environ.get("BENCH_MCP_REQUESTS", "1000"))
ATTACH_CALLS = int(os.environ.get("BENCH_ATTACH_CALLS", "500"))
CONCURRENCY = 8
ROUNDS = 5
# What a stock client sends on every post-initialize request of a stateless server.
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}
MCP_CALL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo_async", "arguments": {"text": "hello"}},
    }
)
# Progress reports one call makes; each figure counts the notifications that reached the client.
PROGRESS_REPORTS = int(os.environ.get("BENCH_PROGRESS_REPORTS", "5000"))
SUBSCRIBERS = 1000
PUSH_BYTES = 1024 * 1024 * 1024
HERE = Path(__file__).resolve()
REGISTRY_MODULE = "bench_daemon_registry"


def _emit(**row: Any) -> None:
    print(json.dumps(row), flush=True)


# ---------------------------------------------------------------------------- child servers


def _registry() -> Any:
    from local_daemon import Progress, Registry

    registry = Registry()

    @registry.command
    async def count(n: int, progress: Progress) -> int:
        for step in range(1, n + 1):
            progress.report(step, n)
            await asyncio.sleep(0)
        return n

    @registry.command
    def echo(text: str) -> dict[str, str]:
        return {"text": text}

    @registry.command
    async def echo_async(text: str) -> dict[str, str]:
        return {"text": text}

    return registry


async def _serve(mode: str, workdir: Path) -> None:
    from aiohttp import web

    if mode in ("mcp_sdk", "mcp_sdk_sse"):
        await _serve_mcp_sdk(json_response=mode == "mcp_sdk")  # uvicorn handles SIGTERM itself
        return
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    if mode == "bare":

        async def echo(request: web.Request) -> web.Response:
            body = await request.json()
            return web.json_response({"ok": True, "data": body})

        app = web.Application()
        app.router.add_post("/rpc/{name}", echo)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        print(port, flush=True)
        await stop.wait()
        await runner.cleanup()
        return
    from local_daemon import start_daemon

    hub_ref: dict[str, Any] = {}

    def mount(app: web.Application) -> None:
        async def broadcast(request: web.Request) -> web.Response:
            at = time.monotonic()
            hub_ref["hub"].broadcast("change", {"paths": ["bench"]})
            return web.json_response({"at": at})

        app.router.add_post("/bench/broadcast", broadcast)

    handle = await start_daemon(
        registry=_registry(),
        version="bench",
        state_dir=workdir / mode,
        mount_routes=mount,
        # `daemon_mcp` serves /mcp with tools named by command; `daemon` has no /mcp at all.
        tool_prefix="" if mode in ("daemon_mcp", "daemon_progress") else None,
    )
    hub_ref["hub"] = handle.hub
    print(handle.port, flush=True)
    await stop.wait()
    await handle.close()


async def _serve_mcp_sdk(*, json_response: bool) -> None:
    """The SDK's own high-level server on the same functions: stateless under uvicorn, answering
    JSON (or SSE, which progress needs)."""
    import socket

    import uvicorn
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("bench", log_level="WARNING")  # INFO logs a line per request

    @server.tool()
    async def echo_async(text: str) -> dict[str, str]:
        return {"text": text}

    async def count(n: int, ctx: Context) -> int:
        for step in range(1, n + 1):
            await ctx.report_progress(step, n)
        return n

    # The SDK resolves string annotations in the module's globals, where `Context` is not.
    count.__annotations__ = {"n": int, "ctx": Context, "return": int}
    server.tool()(count)

    app = server.streamable_http_app(json_response=json_response, stateless_http=True)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    print(sock.getsockname()[1], flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


class _Server:
    def __init__(self, mode: str, workdir: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HERE), "serve", mode, str(workdir)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())

    def cpu_seconds(self) -> float:
        """User plus system CPU time the server process has used so far."""
        return cpu_seconds(self.process.pid)

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def close(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()


# ---------------------------------------------------------------------------- measurements


async def _requests_per_second(port: int) -> float:
    from aiohttp import ClientSession, TCPConnector

    headers = {"x-local-client": "bench", "Content-Type": "application/json"}
    body = json.dumps({"text": "hello"})
    async with ClientSession(connector=TCPConnector(limit=CONCURRENCY)) as session:
        url = f"http://127.0.0.1:{port}/rpc/echo_async"
        remaining = REQUESTS

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                async with session.post(url, data=body, headers=headers) as response:
                    assert response.status == 200, response.status
                    await response.read()

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))  # warm up
        remaining = REQUESTS
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return REQUESTS / (time.perf_counter() - started)


async def _mcp_calls_per_second(port: int, path: str) -> float:
    """`tools/call` round trips (or the same command on `/rpc` when `path` is not `/mcp`)."""
    from aiohttp import ClientSession, TCPConnector

    if path == "/mcp":
        headers, body = MCP_HEADERS, MCP_CALL
    else:
        headers = {"x-local-client": "bench", "Content-Type": "application/json"}
        body = json.dumps({"text": "hello"})
    async with ClientSession(connector=TCPConnector(limit=CONCURRENCY)) as session:
        url = f"http://127.0.0.1:{port}{path}"
        remaining = MCP_REQUESTS

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                async with session.post(url, data=body, headers=headers) as response:
                    answer = await response.read()
                    assert response.status == 200, (response.status, answer[:200])
                    assert b'"hello"' in answer, answer
                    assert b'"isError":true' not in answer, answer

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))  # warm up
        remaining = MCP_REQUESTS
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return MCP_REQUESTS / (time.perf_counter() - started)


def _mcp_figures(workdir: Path) -> None:
    """/mcp on the daemon vs the SDK's MCPServer and vs the daemon's /rpc, in alternating rounds."""
    servers = {mode: _Server(mode, workdir) for mode in ("daemon_mcp", "mcp_sdk")}
    sides = {
        "daemon /mcp": (servers["daemon_mcp"], "/mcp"),
        "daemon /rpc": (servers["daemon_mcp"], "/rpc/echo_async"),
        "sdk /mcp": (servers["mcp_sdk"], "/mcp"),
    }
    rates: dict[str, list[float]] = {side: [] for side in sides}
    cpu: dict[str, float] = dict.fromkeys(sides, 0.0)
    try:
        for _ in range(ROUNDS):
            for side, (server, path) in sides.items():
                before = server.cpu_seconds()
                rates[side].append(asyncio.run(_mcp_calls_per_second(server.port, path)))
                cpu[side] += server.cpu_seconds() - before
    finally:
        for server in servers.values():
            server.close()

    def ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(rates[a], rates[b], strict=True))

    mcp = statistics.median(rates["daemon /mcp"])
    _emit(
        name="MCP tools/call round trips on the daemon's /mcp (no extra header)",
        value=round(mcp, 1),
        unit="calls/s",
        baseline="the SDK's MCPServer, stateless JSON under uvicorn, same function",
        baseline_value=round(statistics.median(rates["sdk /mcp"]), 1),
        ratio=round(ratio("daemon /mcp", "sdk /mcp"), 3),
        target=">= 1.5 x MCPServer",
    )
    _emit(
        name="MCP tools/call round trips on the daemon's /mcp vs its /rpc",
        value=round(mcp, 1),
        unit="calls/s",
        baseline="the daemon's own POST /rpc for the same command",
        baseline_value=round(statistics.median(rates["daemon /rpc"]), 1),
        ratio=round(ratio("daemon /mcp", "daemon /rpc"), 3),
        target=">= 0.6 x /rpc",
    )
    per_call = {side: cpu[side] / (ROUNDS * 2 * MCP_REQUESTS) for side in sides}
    _emit(
        name="server CPU per MCP tools/call on the daemon's /mcp",
        value=round(per_call["daemon /mcp"] * 1e6, 1),
        unit="us",
        baseline="MCPServer (us); the daemon's /rpc is "
        f"{round(per_call['daemon /rpc'] * 1e6, 1)} us",
        baseline_value=round(per_call["sdk /mcp"] * 1e6, 1),
        ratio=round(per_call["daemon /mcp"] / per_call["sdk /mcp"], 3),
        target="information: lower is better",
    )


async def _progress_per_second(port: int) -> tuple[float, int]:
    """One `tools/call` of `count` with a progress token: notifications received per second
    (request sent to the end of the answer's stream) and how many arrived."""
    from aiohttp import ClientSession

    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "count",
            "arguments": {"n": PROGRESS_REPORTS},
            "_meta": {"progressToken": "bench"},
        },
    }
    async with ClientSession() as session:
        started = time.perf_counter()
        async with session.post(
            f"http://127.0.0.1:{port}/mcp", data=json.dumps(call), headers=MCP_HEADERS
        ) as response:
            assert response.status == 200, response.status
            assert response.content_type == "text/event-stream", response.content_type
            received = 0
            last = b""
            async for line in response.content:
                if line.startswith(b"data:") and b"notifications/progress" in line:
                    received += 1
                    last = line
        elapsed = time.perf_counter() - started
    # The last report always arrives: a reporter that outruns the wire drops its oldest ones.
    assert f'"progress":{PROGRESS_REPORTS}'.encode() in last.replace(b".0", b""), last
    return received / elapsed, received


def _progress_figures(workdir: Path) -> None:
    """Progress notifications per second for one call: the daemon vs MCPServer, alternating."""
    servers = {mode: _Server(mode, workdir) for mode in ("daemon_progress", "mcp_sdk_sse")}
    rates: dict[str, list[float]] = {mode: [] for mode in servers}
    counts: dict[str, list[int]] = {mode: [] for mode in servers}
    try:
        for server in servers.values():
            asyncio.run(_progress_per_second(server.port))  # warm up
        for _ in range(ROUNDS):
            for mode, server in servers.items():
                rate, received = asyncio.run(_progress_per_second(server.port))
                rates[mode].append(rate)
                counts[mode].append(received)
    finally:
        for server in servers.values():
            server.close()
    pairs = zip(rates["daemon_progress"], rates["mcp_sdk_sse"], strict=True)
    _emit(
        name=f"MCP progress notifications per second, one tools/call reporting {PROGRESS_REPORTS}"
        f" times (median {statistics.median(counts['daemon_progress'])} arrived)",
        value=round(statistics.median(rates["daemon_progress"]), 1),
        unit="notifications/s",
        baseline="MCPServer, stateless SSE, awaiting ctx.report_progress per step",
        baseline_value=round(statistics.median(rates["mcp_sdk_sse"]), 1),
        ratio=round(statistics.median(d / b for d, b in pairs), 3),
        target="information: higher is better",
    )


async def _direct_seconds_per_call(port: int, calls: int) -> float:
    """`tools/call` on `/mcp` one at a time over one kept-alive connection: seconds per call."""
    from aiohttp import ClientSession, TCPConnector

    async with ClientSession(connector=TCPConnector(limit=1)) as session:
        url = f"http://127.0.0.1:{port}/mcp"

        async def one() -> None:
            async with session.post(url, data=MCP_CALL, headers=MCP_HEADERS) as response:
                answer = await response.read()
                assert response.status == 200, (response.status, answer[:200])
                assert b'"hello"' in answer, answer

        for _ in range(min(calls, 50)):  # warm up
            await one()
        started = time.perf_counter()
        for _ in range(calls):
            await one()
        return (time.perf_counter() - started) / calls


class _Relay:
    """`local-daemon mcp-stdio --attach DIR` as an agent host runs it: JSON-RPC lines on a pipe."""

    def __init__(self, state_dir: Path, *, argv: list[str] | None = None) -> None:
        command = ["mcp-stdio", "--attach", str(state_dir)] if argv is None else argv
        self.process = subprocess.Popen(
            [sys.executable, "-m", "local_daemon.cli", *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(state_dir.parent)},
            cwd=state_dir.parent,
        )
        initialize = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
        self._send(json.dumps(initialize))
        assert '"protocolVersion"' in self._receive()
        self._send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def _send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def _receive(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline()

    def seconds_per_call(self, calls: int) -> float:
        """`tools/call` through the relay, one at a time: seconds per call."""

        def one() -> None:
            self._send(MCP_CALL)
            answer = self._receive()
            assert '"hello"' in answer, answer
            assert '"isError":false' in answer, answer

        for _ in range(min(calls, 50)):  # warm up
            one()
        started = time.perf_counter()
        for _ in range(calls):
            one()
        return (time.perf_counter() - started) / calls

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.process.pid)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # the relay ends once stdin closes
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _attach_figures(workdir: Path) -> None:
    """`tools/call` through `mcp-stdio --attach` vs direct HTTP to the same daemon's `/mcp`."""
    server = _Server("daemon_mcp", workdir)
    relay: _Relay | None = None
    relayed: list[float] = []
    direct: list[float] = []
    relay_cpu = 0.0
    try:
        relay = _Relay(workdir / "daemon_mcp")
        for _ in range(ROUNDS):  # alternating rounds: drift on a shared machine hits both alike
            before = relay.cpu_seconds()
            relayed.append(relay.seconds_per_call(ATTACH_CALLS))
            relay_cpu += relay.cpu_seconds() - before
            direct.append(asyncio.run(_direct_seconds_per_call(server.port, ATTACH_CALLS)))
    finally:
        if relay is not None:
            relay.close()
        server.close()
    via, bare = statistics.median(relayed), statistics.median(direct)
    _emit(
        name="MCP tools/call through `mcp-stdio --attach` (stdio relay), one at a time",
        value=round(via * 1e6, 1),
        unit="us per call",
        baseline="direct HTTP POST /mcp to the same daemon, one at a time (us); the relay adds "
        f"{round((via - bare) * 1e6, 1)} us per call",
        baseline_value=round(bare * 1e6, 1),
        ratio=round(statistics.median(r / d for r, d in zip(relayed, direct, strict=True)), 3),
        target="information: the relay's overhead per call",
    )
    # Each round makes up to 50 warm-up calls, then ATTACH_CALLS timed ones.
    per_call = relay_cpu / (ROUNDS * (ATTACH_CALLS + min(ATTACH_CALLS, 50)))
    _emit(
        name="relay (`mcp-stdio --attach`) CPU per tools/call",
        value=round(per_call * 1e6, 1),
        unit="us",
        baseline=None,
        baseline_value=None,
        ratio=None,
        target="information: lower is better",
    )
    # A session's start: spawn to the answer of `initialize`, attached vs a server of its own.
    (workdir / "bench_attach_registry.py").write_text(
        "from local_daemon import Registry\nregistry = Registry()\n"
        "@registry.command\nasync def echo_async(text: str) -> dict[str, str]:\n"
        "    return {'text': text}\n"
    )
    server = _Server("daemon_mcp", workdir)
    starts: dict[str, list[float]] = {"attach": [], "own": []}
    own = ["mcp-stdio", "bench_attach_registry:registry", "--tool-prefix", ""]
    try:
        for _ in range(ROUNDS):
            for side, argv in (("attach", None), ("own", own)):
                started = time.perf_counter()
                session = _Relay(workdir / "daemon_mcp", argv=argv)
                starts[side].append(time.perf_counter() - started)
                session.close()
    finally:
        server.close()
    attach_start, own_start = statistics.median(starts["attach"]), statistics.median(starts["own"])
    _emit(
        name="MCP session start: `mcp-stdio --attach` spawn to its initialize answer",
        value=round(attach_start * 1000, 1),
        unit="ms",
        baseline="`mcp-stdio MODULE:ATTR` (a server of its own per session), same measure",
        baseline_value=round(own_start * 1000, 1),
        ratio=round(attach_start / own_start, 3),
        target="information: lower is better",
    )
    bare_python = _python_seconds("pass")
    imported = _python_seconds("import local_daemon.cli")
    _emit(
        name="python -c 'import local_daemon.cli' (every `local-daemon` command pays it)",
        value=round(imported * 1000, 1),
        unit="ms",
        baseline="python -c pass",
        baseline_value=round(bare_python * 1000, 1),
        ratio=round(imported / bare_python, 2),
        target="no aiohttp or mcp until a command needs them",
    )


async def _open_sse(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    await writer.drain()
    await reader.readuntil(b"event: ready")
    return reader, writer


async def _broadcast_time_to_all(port: int) -> float:
    streams = []
    for start in range(0, SUBSCRIBERS, 100):
        streams += await asyncio.gather(*(_open_sse(port) for _ in range(start, start + 100)))
    received: list[float] = []

    async def wait_change(reader: asyncio.StreamReader) -> None:
        await asyncio.wait_for(reader.readuntil(b"event: change"), 30)
        received.append(time.monotonic())

    waiters = [asyncio.ensure_future(wait_change(reader)) for reader, _ in streams]
    await asyncio.sleep(0.2)  # every waiter is parked on its socket
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"POST /bench/broadcast HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-local-client: b\r\n"
        "Content-Type: application/json\r\nContent-Length: 2\r\n"
        "Connection: close\r\n\r\n{}".encode()
    )
    await writer.drain()
    answer = await reader.read()
    writer.close()
    at = float(json.loads(answer.partition(b"\r\n\r\n")[2])["at"])
    await asyncio.gather(*waiters)
    for _, stream_writer in streams:
        stream_writer.close()
    # CLOCK_MONOTONIC is system-wide on Linux, so the server's stamp compares with ours.
    return (max(received) - at) * 1000


def _start_to_healthy_in_process() -> float:
    async def run() -> float:
        from local_daemon import Registry, start_daemon
        from local_daemon._health import probe_health

        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            handle = await start_daemon(registry=Registry(), version="b", state_dir=tmp)
            document = await asyncio.to_thread(probe_health, handle.port)
            elapsed = time.perf_counter() - started
            await handle.close()
            assert document is not None
            return elapsed

    return asyncio.run(run())


def _start_to_healthy_cli(workdir: Path) -> float:
    from local_daemon._pidfile import daemon_paths, read_meta_file, read_pid_file

    state = workdir / "cli-state"
    env = {**os.environ, "PYTHONPATH": str(workdir)}
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "local_daemon.cli",
            "serve",
            f"{REGISTRY_MODULE}:registry",
            "--state-dir",
            str(state),
        ],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        paths = daemon_paths(state)
        from local_daemon._health import probe_health

        for _ in range(100_000):
            if read_pid_file(paths) == process.pid:
                meta = read_meta_file(paths)
                if meta is not None and probe_health(int(meta["port"])) is not None:
                    return time.perf_counter() - started
            time.sleep(0.002)
        raise RuntimeError("never healthy")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def _python_seconds(code: str) -> float:
    times = []
    for _ in range(7):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def _push_chunked(port: int, total: int) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"POST /rpc/echo HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-local-client: b\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    )
    chunk = 256 * 1024
    piece = f"{chunk:x}\r\n".encode() + b" " * chunk + b"\r\n"
    drained = asyncio.ensure_future(reader.read())
    sent = 0
    try:
        while sent < total and not drained.done():
            writer.write(piece)
            sent += chunk
            await asyncio.wait_for(writer.drain(), 30)
    except (ConnectionError, OSError):
        pass
    with contextlib.suppress(ConnectionError, OSError):
        await asyncio.wait_for(drained, 30)
    writer.close()
    return sent


async def _push_gib(port: int) -> None:
    await _push_chunked(port, 8 * 1024 * 1024)  # warm-up
    pushed = 0
    for _ in range(10_000):
        if pushed >= PUSH_BYTES:
            return
        pushed += await _push_chunked(port, PUSH_BYTES - pushed)


def main() -> None:
    """Measure and print the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / f"{REGISTRY_MODULE}.py").write_text(
            "from local_daemon import Registry\nregistry = Registry()\n"
        )
        rates: dict[str, list[float]] = {"bare": [], "daemon": []}
        cpu: dict[str, float] = {"bare": 0.0, "daemon": 0.0}
        servers = {mode: _Server(mode, workdir) for mode in rates}
        try:
            # Rounds alternate and the ratio is the median of per-round ratios, so drift on a
            # shared machine hits both sides alike.
            for _ in range(ROUNDS):
                for mode, server in servers.items():
                    before = server.cpu_seconds()
                    rates[mode].append(asyncio.run(_requests_per_second(server.port)))
                    cpu[mode] += server.cpu_seconds() - before
        finally:
            for server in servers.values():
                server.close()
        guarded, bare = statistics.median(rates["daemon"]), statistics.median(rates["bare"])
        pairs = zip(rates["daemon"], rates["bare"], strict=True)
        ratio = statistics.median(d / b for d, b in pairs)
        _emit(
            name="RPC through every guard (async command)",
            value=round(guarded, 1),
            unit="requests/s",
            baseline="bare aiohttp JSON echo (loopback)",
            baseline_value=round(bare, 1),
            ratio=round(ratio, 3),
            target=">= 0.95 x bare",
        )
        # Server CPU per request is steadier than throughput when the client shares the cores.
        # Each round sends REQUESTS twice: a warm-up pass, then the timed one.
        per_request = {mode: cpu[mode] / (len(rates[mode]) * 2 * REQUESTS) for mode in cpu}
        _emit(
            name="server CPU per RPC request through every guard",
            value=round(per_request["daemon"] * 1e6, 1),
            unit="us",
            baseline="bare aiohttp JSON echo, same requests (us)",
            baseline_value=round(per_request["bare"] * 1e6, 1),
            ratio=round(per_request["daemon"] / per_request["bare"], 3),
            target="information: the daemon's own cost is the difference",
        )

        _mcp_figures(workdir)
        _progress_figures(workdir)
        _attach_figures(workdir)

        server = _Server("daemon", workdir)
        try:
            fanout = asyncio.run(_broadcast_time_to_all(server.port))
        finally:
            server.close()
        _emit(
            name=f"broadcast to {SUBSCRIBERS} SSE subscribers, time until all have it",
            value=round(fanout, 2),
            unit="ms",
            baseline=None,
            baseline_value=None,
            ratio=None,
            target="< 100 ms",
        )

        in_process = statistics.median(_start_to_healthy_in_process() for _ in range(5))
        _emit(
            name="start_daemon to first /health 200, no MCP (in process)",
            value=round(in_process * 1000, 2),
            unit="ms",
            baseline=None,
            baseline_value=None,
            ratio=None,
            target="< 500 ms",
        )
        bare_python = _python_seconds("pass")
        cli = statistics.median(_start_to_healthy_cli(workdir) for _ in range(5))
        _emit(
            name="`local-daemon serve` spawn to first /health 200, no MCP",
            value=round(cli * 1000, 1),
            unit="ms",
            baseline="python -c pass",
            baseline_value=round(bare_python * 1000, 1),
            ratio=round(cli / bare_python, 2),
            target="< 500 ms",
        )
        imported = _python_seconds("import local_daemon")
        _emit(
            name="python -c 'import local_daemon'",
            value=round(imported * 1000, 1),
            unit="ms",
            baseline="python -c pass",
            baseline_value=round(bare_python * 1000, 1),
            ratio=round(imported / bare_python, 2),
            target="no mcp, watchfiles, typer or cryptography at import",
        )

        server = _Server("daemon", workdir)
        try:
            asyncio.run(_push_chunked(server.port, 4 * 1024 * 1024))
            before = server.rss_kib()
            asyncio.run(_push_gib(server.port))
            after = server.rss_kib()
        finally:
            server.close()
        _emit(
            name="daemon RSS growth while 1 GiB of never-ending chunked bodies is pushed",
            value=round((after - before) / 1024, 2),
            unit="MiB",
            baseline="RSS before",
            baseline_value=round(before / 1024, 1),
            ratio=None,
            target="< 5 MiB",
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        asyncio.run(_serve(sys.argv[2], Path(sys.argv[3])))
    elif sys.argv[1:2] == ["mcp"]:  # the MCP figures alone
        with tempfile.TemporaryDirectory() as tmp:
            _mcp_figures(Path(tmp))
    elif sys.argv[1:2] == ["progress"]:  # the progress figure alone
        with tempfile.TemporaryDirectory() as tmp:
            _progress_figures(Path(tmp))
    elif sys.argv[1:2] == ["attach"]:  # the `mcp-stdio --attach` figures alone
        with tempfile.TemporaryDirectory() as tmp:
            _attach_figures(Path(tmp))
    else:
        main()
