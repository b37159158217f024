"""Shared helpers for the daemon tests: a demo registry, a running daemon and raw HTTP."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from local_daemon import CommandError, DaemonHandle, Registry, start_daemon

__all__ = [
    "CANARY",
    "CLIENT",
    "LOG",
    "TESTS_DIR",
    "DaemonProcess",
    "demo_registry",
    "http",
    "push_chunked",
    "rpc",
    "running",
    "serve_argv",
]

CANARY = "CANARY-daemon-0b7e-secret"
CLIENT = {"x-local-client": "tests", "Content-Type": "application/json"}
LOG = logging.getLogger("local_daemon")
_TIMEOUT = 10.0


def demo_registry(
    gate: threading.Event | None = None, entered: threading.Event | None = None
) -> Registry:
    """Return a registry with echo, refusals, a crash and a blocking sync command."""
    registry = Registry()

    @registry.command
    def echo(text: str) -> dict[str, str]:
        """Echo the text."""
        return {"text": text}

    @registry.command
    async def whoami(context: Any) -> Any:
        return context

    @registry.command
    def refuse(code: int) -> None:
        raise CommandError("refused", code)

    @registry.command
    def crash() -> None:
        raise RuntimeError(CANARY)

    @registry.command
    def block() -> str:
        if entered is not None:
            entered.set()
        if gate is not None:
            assert gate.wait(_TIMEOUT)
        return "unblocked"

    return registry


@asynccontextmanager
async def running(tmp: Path, **options: Any) -> AsyncIterator[DaemonHandle]:
    """Start a daemon on 127.0.0.1:0 with state in `tmp` and close it afterwards."""
    options.setdefault("registry", demo_registry())
    options.setdefault("version", "1.2.3")
    handle = await start_daemon(state_dir=tmp / "state", **options)
    try:
        yield handle
    finally:
        await handle.close()


async def http(
    port: int,
    method: str,
    path: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    host: str | None = None,
    address: str = "127.0.0.1",
) -> tuple[int, dict[str, str], bytes]:
    """Send one HTTP/1.1 request with exactly these headers; return status, headers, body."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), _TIMEOUT)
    try:
        lines = [f"{method} {path} HTTP/1.1"]
        all_headers = {"Host": host if host is not None else f"127.0.0.1:{port}"}
        all_headers["Connection"] = "close"
        if body is not None:
            all_headers["Content-Length"] = str(len(body))
        all_headers.update(headers or {})
        lines += [f"{name}: {value}" for name, value in all_headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), _TIMEOUT)
    finally:
        writer.close()
        await writer.wait_closed()
    head, _, payload = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    if parsed.get("transfer-encoding", "").lower() == "chunked":
        payload = _dechunk(payload)
    return int(status_line.split(" ")[1]), parsed, payload


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    for _ in range(100_000):
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += data[:size]
        data = data[size + 2 :]
    raise AssertionError("too many chunks")


async def rpc(port: int, name: str, args: Any, **kw: Any) -> tuple[int, Any]:
    """POST /rpc/<name> with the client header; return status and parsed JSON body."""
    headers = {**CLIENT, **kw.pop("headers", {})}
    status, _, body = await http(
        port, "POST", f"/rpc/{name}", headers=headers, body=json.dumps(args).encode(), **kw
    )
    return status, json.loads(body)


TESTS_DIR = Path(__file__).resolve().parent


def serve_argv(target: str, state_dir: Path, *extra: str) -> list[str]:
    """The argv of `local-daemon serve TARGET --state-dir STATE_DIR EXTRA...` on this Python."""
    import sys

    return [
        sys.executable,
        "-m",
        "local_daemon.cli",
        "serve",
        target,
        "--state-dir",
        str(state_dir),
        *extra,
    ]


class DaemonProcess:
    """`local-daemon serve` as a real subprocess; `port` once its pid file exists."""

    def __init__(
        self, state_dir: Path, *extra: str, target: str = "daemon_support:demo_registry"
    ) -> None:
        import os
        import subprocess

        self.state_dir = state_dir
        env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
        self.process = subprocess.Popen(
            serve_argv(target, state_dir, *extra),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.port = 0

    def wait_ready(self, timeout: float = 30.0) -> int:
        """Wait (bounded) for the pid file naming this process; return the bound port."""
        import time

        from local_daemon import daemon_paths, read_pid_file

        paths = daemon_paths(self.state_dir)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"daemon exited {self.process.returncode}")
            if read_pid_file(paths) == self.process.pid:
                # Written before the pid file: its `port` is the bound one (spec, daemon.meta.json).
                self.port = int(json.loads(paths.meta_file.read_text())["port"])
                return self.port
            time.sleep(0.02)
        raise AssertionError("daemon did not become ready")

    def rss_kib(self) -> int:
        """Return the daemon's resident set size in KiB (VmRSS)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def stop(self) -> str:
        """SIGTERM the daemon, wait for it and return its stderr."""
        import signal

        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        _, err = self.process.communicate(timeout=30)
        return err.decode("utf-8", "replace")


async def push_chunked(
    port: int, path: str, total: int, *, chunk: int = 256 * 1024
) -> tuple[int, int]:
    """POST a chunked body to `path` until the server closes or `total` bytes went; return
    (status, bytes sent). Status 0 when no response arrived."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), _TIMEOUT)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-local-client: t\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    piece = f"{chunk:x}\r\n".encode() + b" " * chunk + b"\r\n"
    received = bytearray()

    async def read_answer() -> None:
        # Read while writing: the server's close with unread input sends a reset, which would
        # destroy an answer still waiting in our receive buffer.
        try:
            while chunk_in := await reader.read(65536):
                received.extend(chunk_in)
        except (ConnectionError, OSError):
            pass

    answer = asyncio.ensure_future(read_answer())
    sent = 0
    try:
        writer.write(head)
        while sent < total and not answer.done():
            writer.write(piece)
            sent += chunk
            await asyncio.wait_for(writer.drain(), _TIMEOUT)
    except (ConnectionError, OSError):
        pass
    try:
        await asyncio.wait_for(answer, _TIMEOUT)
    finally:
        writer.close()
        with suppress(ConnectionError, OSError):
            await writer.wait_closed()
    data = bytes(received)
    status = int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.1 ") else 0
    return status, sent
